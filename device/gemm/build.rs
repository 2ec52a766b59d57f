//! Tells the crate which gfx target it is being compiled for
//! (`cfg(aqueduct_gfx = ...)`, device/build/gfx_cfg.rs), for every target
//! of the per-gfx table: the MFMA kernels exist only on CDNA.

#[path = "../build/gfx_cfg.rs"]
mod gfx_cfg;

fn main() {
    let targets: Vec<&str> = aqueduct_abi::gfx::TARGETS.iter().map(|g| g.name).collect();
    gfx_cfg::emit("aqueduct-gemm", &targets);
}
