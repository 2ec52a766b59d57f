//! Builds the device crates for every default gfx target before the tests
//! compile, so the tests always run on code objects that match the device
//! sources: cargo reruns this script whenever a device source, the shared
//! crate, the toolchain pin or xtask (a build dependency) changes, and the
//! device build itself recompiles only what changed. The code objects land
//! where `cargo xtask build --release` puts them (`target/amdgpu/<gfx>/`), so
//! tests and host code find them without being told a path.

use xtask::device_build::{BuildOptions, Profile, build};
use xtask::targets::DEFAULT_TARGETS;

fn main() {
    let workspace = xtask::workspace_root();
    for input in [
        "device",
        "tests/kernels",
        "tests/probes",
        "shared/src",
        "shared/llvm",
        "Cargo.toml",
        "Cargo.lock",
        "rust-toolchain.toml",
    ] {
        println!(
            "cargo::rerun-if-changed={}",
            workspace.join(input).display()
        );
    }
    let targets = DEFAULT_TARGETS.iter().collect();
    let options = BuildOptions {
        workspace,
        targets,
        profile: Profile::Release,
    };
    if let Err(e) = build(&options, |_| {}) {
        fail(&e.to_string());
    }
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(1);
}
