//! The `aqueduct_gfx` cfg of device crates: which gfx target a crate is
//! being compiled for, as `cfg(aqueduct_gfx = "gfx90a")`, and so on. Build
//! scripts include this file (`#[path]`) and call [`emit`].
//!
//! rustc exposes no target-feature cfgs for amdgcn, so without this a crate
//! is one source for every target and can hold only the instructions they
//! all have (LLVM cannot select an intrinsic the processor lacks).
//! `cargo xtask build` passes the processor as `-Ctarget-cpu=<gfx>` in
//! `CARGO_ENCODED_RUSTFLAGS`, which cargo hands to build scripts as the
//! target's flags (0x1f-separated); a change of flags reruns the script
//! (cargo fingerprints the build-script run by the target's rustflags). The
//! host build has no target CPU and gets no `aqueduct_gfx`; the check-cfg
//! line is emitted on every build so the workspace's `unexpected_cfgs` lint
//! knows the name there too.

/// Emits the check-cfg for `targets` and, on an amdgcn build for one of
/// them, `aqueduct_gfx = "<gfx>"`; an amdgcn build for another processor
/// gets a warning naming `package`, and no cfg.
pub fn emit(package: &str, targets: &[&str]) {
    let values: Vec<String> = targets.iter().map(|t| format!("{t:?}")).collect();
    println!(
        "cargo::rustc-check-cfg=cfg(aqueduct_gfx, values({}))",
        values.join(", ")
    );

    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let cpu = target_cpu(flags.split('\x1f'));
    // Only an amdgcn build has a gfx target; the host may have
    // -Ctarget-cpu=native and must not get the cfg.
    let amdgpu = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("amdgpu");
    match cpu {
        Some(gfx) if amdgpu && targets.contains(&gfx.as_str()) => {
            println!("cargo::rustc-cfg=aqueduct_gfx={gfx:?}");
        }
        Some(gfx) if amdgpu => {
            println!("cargo::warning={package} has no {gfx}-specific code");
        }
        _ => {}
    }
}

/// The last `-Ctarget-cpu` of the flags (rustc lets a later flag override
/// an earlier one), in any of rustc's spellings: `-Ctarget-cpu=X`,
/// `-C target-cpu=X`, `--codegen target-cpu=X`.
fn target_cpu<'a>(flags: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut cpu = None;
    let mut after_c = false;
    for flag in flags {
        let option = if after_c {
            Some(flag)
        } else {
            flag.strip_prefix("-C")
                .filter(|rest| !rest.is_empty())
                .or_else(|| flag.strip_prefix("--codegen="))
        };
        after_c = matches!(flag, "-C" | "--codegen");
        if let Some(value) = option.and_then(|o| o.strip_prefix("target-cpu=")) {
            cpu = Some(value.to_owned());
        }
    }
    cpu
}
