//! Shared helpers of aqueduct's integration tests.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use xtask::device_build::{DEVICE_CRATES, artifact_path, llvm_bin_dir};
use xtask::targets::DEFAULT_TARGETS;

/// One built code object.
pub struct Built {
    pub gfx: &'static str,
    pub package: &'static str,
    pub path: PathBuf,
}

/// Every code object the build script produced: each device crate for each
/// default target.
pub fn built_code_objects() -> Vec<Built> {
    let workspace = xtask::workspace_root();
    let mut out = Vec::new();
    for gfx in DEFAULT_TARGETS {
        for krate in DEVICE_CRATES.iter().filter(|k| k.builds_for(gfx)) {
            // Found the way host code finds them; xtask must agree.
            let path = aqueduct::device_code::path(gfx, krate.package);
            assert_eq!(
                path.canonicalize().ok(),
                artifact_path(&workspace, gfx, krate.package)
                    .canonicalize()
                    .ok()
            );
            assert!(
                path.exists(),
                "{} missing: the build script should have built it",
                path.display()
            );
            out.push(Built {
                gfx,
                package: krate.package,
                path,
            });
        }
    }
    out
}

/// Path of one of the toolchain's LLVM tools.
pub fn llvm_tool(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        llvm_bin_dir(&xtask::workspace_root()).unwrap_or_else(|e| panic!("llvm-tools: {e}"))
    })
    .join(name)
}

/// Runs an LLVM tool and returns its standard output; panics with its error
/// output if it fails.
pub fn run_llvm_tool(name: &str, args: &[&str]) -> String {
    let out = Command::new(llvm_tool(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {name}: {e}"));
    assert!(
        out.status.success(),
        "{name} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("LLVM tools print UTF-8")
}

/// A small deterministic generator (xorshift64*), so failures of tests on
/// random inputs reproduce from their seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in [-1000, 1000) with full significands.
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2000.0 - 1000.0
    }

    /// An f32 with a random sign and significand and an exponent in
    /// `[lo, hi)` (unbiased).
    pub fn f32_exp(&mut self, lo: i32, hi: i32) -> f32 {
        let e = lo + self.below((hi - lo) as u64) as i32;
        let bits = (self.u32() & 0x807F_FFFF) | ((e + 127) as u32) << 23;
        f32::from_bits(bits)
    }
}

/// `package`'s code objects for the simulated targets (gfx90a, gfx942),
/// each loaded on a fresh simulated device of its target.
pub fn simulated(package: &str) -> Vec<(aqueduct_sim::Device, aqueduct_sim::Program)> {
    let out: Vec<_> = built_code_objects()
        .into_iter()
        .filter(|b| b.package == package)
        .filter_map(|b| {
            let target = aqueduct_sim::Target::from_name(b.gfx)?;
            let bytes = std::fs::read(&b.path).expect("read code object");
            let device = aqueduct_sim::Device::new(target);
            let program = device.load(&bytes).expect("load code object");
            Some((device, program))
        })
        .collect();
    assert_eq!(out.len(), 2, "expected {package} for gfx90a and gfx942");
    out
}

/// Copies `bytes` into a new simulator allocation.
pub fn upload(device: &aqueduct_sim::Device, bytes: &[u8]) -> u64 {
    let a = device
        .memory()
        .alloc(bytes.len().max(1) as u64, 256)
        .expect("alloc");
    device.memory().write_bytes(a, bytes).expect("write");
    a
}
