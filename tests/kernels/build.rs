//! Tells the crate which gfx target it is being compiled for
//! (`cfg(aqueduct_gfx = ...)`, device/build/gfx_cfg.rs).

#[path = "../../device/build/gfx_cfg.rs"]
mod gfx_cfg;

fn main() {
    // The targets xtask builds this crate for (`only_for` in
    // xtask/src/device_build.rs).
    gfx_cfg::emit(
        "aqueduct-test-kernels",
        &["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"],
    );
}
