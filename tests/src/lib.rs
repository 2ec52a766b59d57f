//! Shared helpers of aqueduct's integration tests, each defined once: the
//! built code objects and the LLVM tools that inspect them, a seeded
//! generator, simulated devices driven directly ([`Sim`]), the HSA runtime
//! the end-to-end suites go through, and kernel arguments.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

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
    for gfx in DEFAULT_TARGETS.iter().map(|t| t.name) {
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

/// The deterministic generator of test inputs (xorshift64*), shared with
/// the benchmarks.
pub use xtask::rng::Rng;

// ---------------------------------------------------------------------------
// Simulated devices, driven directly
// ---------------------------------------------------------------------------

/// The device crate of kernels that exist to test the simulator
/// (`tests/kernels`).
pub const TEST_KERNELS: &str = "aqueduct-test-kernels";

/// An element type of device buffers, with the pattern poisoned buffers
/// hold: a value no kernel under test writes, so a skipped element or a
/// write past the end shows.
pub trait Word: Copy + PartialEq + std::fmt::Debug {
    const SIZE: usize;
    const POISON: Self;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! word {
    ($($t:ty = $poison:expr),*) => {$(
        impl Word for $t {
            const SIZE: usize = size_of::<$t>();
            const POISON: Self = $poison;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("element size"))
            }
        }
    )*};
}

word!(
    u8 = 0xA5,
    u16 = 0xDEAD,
    u32 = 0xDEAD_BEEF,
    u64 = 0xDEAD_BEEF_DEAD_BEEF
);

/// The little-endian bytes of `values`.
fn words_to_bytes<T: Word>(values: &[T]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(values.len() * T::SIZE);
    for &v in values {
        v.put(&mut bytes);
    }
    bytes
}

/// Copies `bytes` into a new simulator allocation.
pub fn upload(device: &aqueduct_sim::Gpu, bytes: &[u8]) -> u64 {
    device.memory().alloc_bytes(bytes).expect("alloc and write")
}

/// `len` elements at `a` of `device`'s memory.
pub fn read<T: Word>(device: &aqueduct_sim::Gpu, a: u64, len: usize) -> Vec<T> {
    let bytes = device.memory().read_vec(a, len * T::SIZE).expect("read");
    bytes.chunks_exact(T::SIZE).map(T::get).collect()
}

/// One simulated device (`d`) with a code object (`p`) loaded on it.
pub struct Sim {
    pub d: aqueduct_sim::Gpu,
    pub p: aqueduct_sim::Program,
}

/// `package`'s code objects for the simulated targets (every
/// `aqueduct_sim::Target` the package builds for), each loaded on a fresh
/// simulated device of its target.
pub fn simulated(package: &str) -> Vec<Sim> {
    let out: Vec<_> = built_code_objects()
        .into_iter()
        .filter(|b| b.package == package)
        .filter_map(|b| {
            let target = aqueduct_sim::Target::from_name(b.gfx)?;
            let bytes = std::fs::read(&b.path).expect("read code object");
            let d = aqueduct_sim::Gpu::new(target);
            let p = d.load(&bytes).expect("load code object");
            Some(Sim { d, p })
        })
        .collect();
    let expected: Vec<&str> = aqueduct_sim::Target::ALL
        .iter()
        .map(|t| t.name())
        .filter(|gfx| {
            DEVICE_CRATES
                .iter()
                .any(|k| k.package == package && k.builds_for(gfx))
        })
        .collect();
    assert_eq!(
        out.iter().map(|s| s.d.target.name()).collect::<Vec<_>>(),
        expected,
        "{package}: a code object for each simulated target it builds for"
    );
    out
}

impl Sim {
    /// The program's kernels whose names start with `prefix`, sorted: what
    /// a suite compares with its list of cases, so a kernel added to the
    /// crate is not left unchecked.
    pub fn kernels_named(&self, prefix: &str) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .p
            .code_object
            .kernels
            .iter()
            .map(|k| k.name())
            .filter(|k| k.starts_with(prefix))
            .collect();
        names.sort_unstable();
        names
    }

    /// A new allocation holding `values`.
    pub fn upload<T: Word>(&self, values: &[T]) -> u64 {
        upload(&self.d, &words_to_bytes(values))
    }

    /// A buffer of `len` poisoned elements and a poisoned guard after them.
    pub fn poisoned<T: Word>(&self, len: usize) -> u64 {
        self.upload(&vec![T::POISON; len + 1])
    }

    /// Refills a [`Sim::poisoned`] buffer with poison.
    pub fn repoison<T: Word>(&self, a: u64, len: usize) {
        let bytes = words_to_bytes(&vec![T::POISON; len + 1]);
        self.d.memory().write_bytes(a, &bytes).expect("write");
    }

    pub fn read<T: Word>(&self, a: u64, len: usize) -> Vec<T> {
        read(&self.d, a, len)
    }

    /// The `len` elements of a [`Sim::poisoned`] buffer, after checking
    /// that the guard past them is still poison.
    pub fn output<T: Word>(&self, a: u64, len: usize, what: &str) -> Vec<T> {
        let mut v = self.read::<T>(a, len + 1);
        assert_eq!(
            v.pop(),
            Some(T::POISON),
            "{}: wrote past the end",
            self.at(what)
        );
        v
    }

    /// Runs `kernel` on a one-dimensional `(grid, workgroup)` launch.
    pub fn try_run(
        &self,
        kernel: &str,
        (grid, wg): (u32, u16),
        args: &Args,
    ) -> Result<aqueduct_sim::Stats, aqueduct_sim::DispatchError> {
        self.d
            .run(&self.p, kernel, [grid, 1, 1], [wg, 1, 1], &args.0)
    }

    /// [`Sim::try_run`] of a dispatch that must complete.
    pub fn run(&self, kernel: &str, launch: (u32, u16), args: &Args) -> aqueduct_sim::Stats {
        self.try_run(kernel, launch, args).unwrap_or_else(|e| {
            let (grid, wg) = launch;
            panic!(
                "{}: {e}",
                self.at(&format!("{kernel} grid {grid} workgroup {wg}"))
            )
        })
    }

    /// Runs a dispatch that must fault, and returns the report after
    /// checking the parts every fault shares: the kernel's name, and a pc
    /// that holds an instruction of the program with GFX9 mnemonic `at`
    /// (or its GFX11+ name, `global_load_b32` for `global_load_dword`:
    /// `aqueduct_sim::exec::names`).
    pub fn fault(
        &self,
        kernel: &str,
        launch: (u32, u16),
        args: &Args,
        at: &str,
    ) -> aqueduct_sim::FaultReport {
        let report = match self.try_run(kernel, launch, args) {
            Err(aqueduct_sim::DispatchError::Fault(report)) => *report,
            Err(e) => panic!("{}: {e}, want a fault", self.at(kernel)),
            Ok(_) => panic!("{}: completed, want a fault", self.at(kernel)),
        };
        assert_eq!(report.kernel, kernel, "{}", self.at(kernel));
        assert!(
            report.pc > self.p.base,
            "{}: pc {:#x}",
            self.at(kernel),
            report.pc
        );
        let mnemonic = self
            .p
            .instructions()
            .find(|&(offset, _)| self.p.base + offset == report.pc)
            .and_then(|(_, inst)| inst.ok())
            .map(|inst| {
                aqueduct_sim::exec::names::gfx9_equivalent(inst.mnemonic)
                    .unwrap_or_else(|| inst.mnemonic.to_string())
            });
        assert_eq!(
            mnemonic.as_deref(),
            Some(at),
            "{}: {report}",
            self.at(kernel)
        );
        report
    }

    /// `what`, prefixed with the device's target: how every message of a
    /// test running on both targets says which failed.
    pub fn at(&self, what: &str) -> String {
        format!("{:?} {what}", self.d.target)
    }

    pub fn free(&self, addresses: &[u64]) {
        for &a in addresses {
            self.d.memory().free(a).expect("free");
        }
    }
}

/// Asserts two slices are equal, naming the first differing element (in
/// hex: device buffers hold bit patterns).
pub fn assert_same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: element {i} is {:#x?}, want {:#x?}",
            got[i], want[i]
        );
    }
}

// ---------------------------------------------------------------------------
// The HSA runtime the end-to-end tests run on
// ---------------------------------------------------------------------------
//
// End-to-end tests (`hsa_e2e.rs`, `hsa_api.rs` and every suite that goes
// through the host shim) open the runtime like any aqueduct program. Which
// runtime:
//
//   AQUEDUCT_HSA_LIB set ──────────────► that library (named by its file)
//   else ROCr loads, hsa_init succeeds,
//        and it reports a GPU agent ──► ROCr
//   else ───────────────────────────────► the simulator's cdylib, found next
//                                         to the test binary
//
// The choice is made once per process and the runtime stays initialised
// (one `System`, never dropped) for every test of the binary: the
// simulator reads `AQUEDUCT_SIM_AGENTS` only at its first `hsa_init`.

/// `AQUEDUCT_SIM_AGENTS` for the end-to-end tests: an MI300X, an MI210 and
/// an MI355X, so every test runs on each simulated target.
pub const SIM_AGENTS: &str = "gfx942,gfx90a,gfx950,gfx1100,gfx1201";

/// Longest an end-to-end test waits for one dispatch or copy: the
/// simulator interprets every instruction (in a debug build, for
/// `cargo test`).
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// How long a test lets a blocked packet or copy sit before checking it
/// has not run.
pub const HOLD: Duration = Duration::from_millis(200);

/// Packets per queue of the end-to-end tests: room for a few dispatches
/// and barriers.
pub const QUEUE_SIZE: u32 = 64;

/// The HSA runtime the end-to-end tests use.
#[derive(Clone, Debug)]
pub struct Backend {
    /// `"rocr"` or `"simulator"`.
    pub name: &'static str,
    /// The library the host shim loads (a path, or a name for the system
    /// loader).
    pub library: PathBuf,
    /// Why this one was chosen (and what was tried before).
    pub reason: String,
}

impl Backend {
    pub fn is_simulator(&self) -> bool {
        self.name == "simulator"
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}; {})",
            self.name,
            self.library.display(),
            self.reason
        )
    }
}

/// The runtime the end-to-end tests use, chosen on first call (see the
/// section comment above).
pub fn hsa_backend() -> &'static Backend {
    hsa_runtime().0
}

/// The process's `System` on [`hsa_backend`]'s library: opened once, shared
/// by every test (clones hold the same `hsa_init` reference).
pub fn hsa_system() -> aqueduct::System {
    hsa_runtime().1.clone()
}

/// [`hsa_system`], after printing which backend runs (every end-to-end
/// test says so).
pub fn announced_system() -> aqueduct::System {
    eprintln!("backend: {}", hsa_backend());
    hsa_system()
}

/// Every GPU agent of `system` (at least one), printed by name; on the
/// simulator with the agents of [`SIM_AGENTS`], exactly those.
pub fn hsa_gpus(system: &aqueduct::System) -> Vec<aqueduct::agent::Agent> {
    let gpus = system.gpus().expect("enumerate GPU agents");
    assert!(!gpus.is_empty(), "the runtime reports no GPU agent");
    let names: Vec<&str> = gpus.iter().map(|g| g.info().name.as_str()).collect();
    eprintln!("GPU agents: {names:?}");
    let agents = std::env::var(aqueduct_sim::hsa::profile::AGENTS_ENV);
    if hsa_backend().is_simulator() && agents.as_deref() == Ok(SIM_AGENTS) {
        assert_eq!(names.join(","), SIM_AGENTS, "simulated agents");
    }
    gpus
}

/// The system's CPU agent.
pub fn cpu_agent(system: &aqueduct::System) -> aqueduct::agent::Agent {
    system
        .agents()
        .expect("agents")
        .into_iter()
        .find(|a| !a.is_gpu())
        .expect("a CPU agent")
}

/// `gpu`'s device memory.
pub fn device_pool(gpu: &aqueduct::agent::Agent) -> aqueduct::MemoryPool {
    gpu.memory_pool(aqueduct::PoolKind::CoarseGrained)
        .expect("coarse-grained pool")
}

/// The device library built for `gpu`'s processor, read the way a program
/// reads it (`device_code::load_device_library`, which checks its ABI
/// version) and loaded on `gpu` from memory.
pub fn device_library(gpu: &aqueduct::agent::Agent) -> aqueduct::Executable {
    let gfx = &gpu.info().name;
    let (bytes, _) = aqueduct::device_code::load_device_library(gfx)
        .unwrap_or_else(|e| panic!("device library for {gfx}: {e}"));
    gpu.load_code_object(&bytes)
        .unwrap_or_else(|e| panic!("load the device library on {gfx}: {e}"))
}

/// The code object of device crate `package` built for `gpu`'s processor,
/// loaded on it.
pub fn load_device_crate(gpu: &aqueduct::agent::Agent, package: &str) -> aqueduct::Executable {
    let path = aqueduct::device_code::path(&gpu.info().name, package);
    gpu.load_code_object_file(&path)
        .unwrap_or_else(|e| panic!("load {} on {}: {e}", path.display(), gpu.info().name))
}

/// Fine-grained memory of the system's CPU agent: every agent reaches it,
/// and the host reads and writes it while kernels run.
pub fn host_pool(system: &aqueduct::System) -> aqueduct::MemoryPool {
    cpu_agent(system)
        .memory_pool(aqueduct::PoolKind::FineGrained)
        .expect("fine-grained host pool")
}

fn hsa_runtime() -> (&'static Backend, &'static aqueduct::System) {
    static RUNTIME: OnceLock<(Backend, aqueduct::System)> = OnceLock::new();
    let (backend, system) = RUNTIME.get_or_init(|| {
        let (backend, probed) = discover_backend();
        let system = match probed {
            Some(system) => system,
            None => aqueduct::System::open(&aqueduct::LoadOptions::library(&backend.library))
                .unwrap_or_else(|e| panic!("cannot open the {backend} runtime: {e}")),
        };
        (backend, system)
    });
    (backend, system)
}

/// Picks the runtime; returns ROCr's `System` when the probe opened it.
fn discover_backend() -> (Backend, Option<aqueduct::System>) {
    if let Some(path) = std::env::var_os("AQUEDUCT_HSA_LIB").filter(|p| !p.is_empty()) {
        let library = PathBuf::from(path);
        let simulator = is_simulator_library(&library);
        if simulator {
            set_sim_agents();
        }
        let backend = Backend {
            name: if simulator { "simulator" } else { "rocr" },
            library,
            reason: "AQUEDUCT_HSA_LIB".into(),
        };
        return (backend, None);
    }
    // The shim's own search ($ROCM_PATH/lib, then the system loader path);
    // AQUEDUCT_HSA_LIB is unset here, so it cannot pick the simulator.
    let why_not_rocr = match aqueduct::System::open(&aqueduct::LoadOptions::default()) {
        Ok(system) => match system.gpus() {
            Ok(gpus) if !gpus.is_empty() => {
                let backend = Backend {
                    name: "rocr",
                    library: PathBuf::from(system.runtime().path()),
                    reason: format!(
                        "ROCr reports {}",
                        gpus.iter()
                            .map(|g| g.info().name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                return (backend, Some(system));
            }
            Ok(_) => format!("ROCr at {} reports no GPU agent", system.runtime().path()),
            Err(e) => format!("ROCr at {}: {e}", system.runtime().path()),
        },
        Err(aqueduct::Error::NoGpu { path, kfd, .. }) => {
            format!("ROCr at {path}: hsa_init failed and {kfd} does not exist")
        }
        Err(aqueduct::Error::RuntimeNotFound { .. }) => "ROCr is not installed".into(),
        Err(e) => format!("ROCr unusable: {e}"),
    };
    set_sim_agents();
    let library = simulator_library().unwrap_or_else(|e| panic!("{why_not_rocr}, and {e}"));
    (
        Backend {
            name: "simulator",
            library,
            reason: why_not_rocr,
        },
        None,
    )
}

/// Whether `library` is aqueduct's simulator (by file name).
fn is_simulator_library(library: &std::path::Path) -> bool {
    library
        .file_name()
        .is_some_and(|n| n.to_string_lossy().contains("aqueduct_sim"))
}

/// Sets `AQUEDUCT_SIM_AGENTS` to [`SIM_AGENTS`] unless the user chose agents.
fn set_sim_agents() {
    const VAR: &str = aqueduct_sim::hsa::profile::AGENTS_ENV;
    if std::env::var_os(VAR).is_none_or(|v| v.is_empty()) {
        // SAFETY: called once, from `hsa_runtime`'s `OnceLock` initialiser,
        // before this process loads any HSA library through these helpers.
        // The other threads of a test binary that uses them are blocked on
        // that `OnceLock` or run Rust code, whose environment accesses take
        // std's environment lock; no C code of ours reads the environment
        // concurrently.
        unsafe { std::env::set_var(VAR, SIM_AGENTS) };
    }
}

/// The simulator's cdylib as cargo built it for this test binary. Cargo
/// builds every crate type of a dependency, so `aqueduct-sim`'s
/// `libaqueduct_sim.so` sits in the same target directory as the test
/// binary: in `<profile>/deps/` (classic layout) or in
/// `<profile>/build/aqueduct-sim/<hash>/out/` (the build-dir layout this
/// toolchain uses, with test binaries in
/// `<profile>/build/aqueduct-tests/<hash>/out/`). The nearest directory up
/// from the test binary that has one wins; among several hashes, the newest.
pub fn simulator_library() -> Result<PathBuf, String> {
    let file = format!(
        "{}aqueduct_sim{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    nearest_built(|dir| {
        let mut candidates = vec![dir.join(&file), dir.join("deps").join(&file)];
        if let Ok(entries) = std::fs::read_dir(dir.join("build").join("aqueduct-sim")) {
            candidates.extend(entries.filter_map(|e| Some(e.ok()?.path().join("out").join(&file))));
        }
        candidates
    })
    .map_err(|exe| format!("no {file} near {exe} (build aqueduct-sim, or set AQUEDUCT_HSA_LIB)"))
}

/// A binary of the host crate (`aqueduct`).
#[derive(Clone, Copy, Debug)]
pub enum HostBinary<'a> {
    /// `host/examples/<name>.rs`: `<target>/<profile>/examples/<name>`.
    Example(&'a str),
    /// `[[bin]] <name>`: `<target>/<profile>/<name>`.
    Bin(&'a str),
}

/// The host crate's binary `which` as cargo built it beside the test
/// binary, built first if it is missing or older than a source its
/// dep-info file lists. `cargo test --workspace` builds the examples and
/// the `aqueduct` binary before it runs any test; `cargo test -p
/// aqueduct-tests` does not (they belong to `aqueduct`), so then this runs
/// `cargo build -p aqueduct --bins --examples` once per process: cargo
/// lets go of the build directory before it runs tests, so the nested
/// build does not wait for the outer one.
pub fn host_binary(which: HostBinary<'_>) -> Result<PathBuf, String> {
    if let Ok(binary) = fresh_host_binary(which) {
        return Ok(binary);
    }
    static BUILD: OnceLock<Result<(), String>> = OnceLock::new();
    BUILD.get_or_init(build_host_binaries).clone()?;
    fresh_host_binary(which).map_err(|why| {
        format!(
            "{why}\nrun `cargo build -p aqueduct --bins --examples` \
             (`cargo test --workspace` builds them itself)"
        )
    })
}

/// `which`'s binary unless it is missing or older than one of the sources
/// cargo's dep-info file beside it lists.
fn fresh_host_binary(which: HostBinary<'_>) -> Result<PathBuf, String> {
    let (dir, name) = match which {
        HostBinary::Example(name) => (Some("examples"), name),
        HostBinary::Bin(name) => (None, name),
    };
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    // Files only: the build directory holds a directory per package too.
    let binary = nearest_built(|d| {
        let path = dir.map_or_else(|| d.join(&file), |sub| d.join(sub).join(&file));
        Some(path).filter(|p| p.is_file()).into_iter().collect()
    })
    .map_err(|exe| format!("no binary {name} near {exe}"))?;
    let modified = |path: &std::path::Path| path.metadata().and_then(|m| m.modified()).ok();
    let built = modified(&binary);
    let dep_info = std::fs::read_to_string(binary.with_extension("d"))
        .map_err(|e| format!("{}.d: {e}", binary.display()))?;
    // `<binary>: <source> <source> ...`, spaces in a path escaped.
    let (_, sources) = dep_info.split_once(": ").unwrap_or_default();
    let sources = sources.replace("\\ ", "\0");
    match sources
        .split_whitespace()
        .map(|s| PathBuf::from(s.replace('\0', " ")))
        .find(|source| modified(source) > built)
    {
        Some(source) => Err(format!(
            "{} is older than {}",
            binary.display(),
            source.display()
        )),
        None => Ok(binary),
    }
}

/// `cargo build -p aqueduct --bins --examples` with the cargo running this
/// test, for this test's profile.
fn build_host_binaries() -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["build", "-p", "aqueduct", "--bins", "--examples"])
        .current_dir(xtask::workspace_root());
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    eprintln!("building the host binaries: {command:?}");
    let out = command
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo build -p aqueduct --bins --examples` failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Of the files `candidates(dir)` names, the newest in the nearest
/// directory `dir` up from the test binary that holds any: cargo may have
/// left older copies (another profile, an earlier build of the one
/// package) beside the current one. The error is the test binary's path.
fn nearest_built(candidates: impl Fn(&std::path::Path) -> Vec<PathBuf>) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("(cannot find the test binary: {e})"))?;
    for dir in exe.ancestors().skip(1) {
        let newest = candidates(dir)
            .into_iter()
            .filter_map(|path| Some((path.metadata().ok()?.modified().ok()?, path)))
            .max();
        if let Some((_, path)) = newest {
            return Ok(path);
        }
    }
    Err(exe.display().to_string())
}

/// A value a kernel argument can hold: written little-endian at its
/// natural alignment.
pub trait KernargValue: Copy {
    fn bytes(self) -> Vec<u8>;
}

macro_rules! kernarg_values {
    ($($t:ty),*) => {$(
        impl KernargValue for $t {
            fn bytes(self) -> Vec<u8> {
                self.to_le_bytes().to_vec()
            }
        }
    )*};
}

kernarg_values!(u16, u32, u64, i32, i64, f32, f64);

/// Kernel arguments built in order, each at its natural alignment (the
/// AMDGPU kernarg layout the `gpu-kernel` ABI uses for scalars and
/// pointers).
#[derive(Clone, Debug, Default)]
pub struct Args(pub Vec<u8>);

impl Args {
    pub fn arg<T: KernargValue>(mut self, v: T) -> Self {
        let b = v.bytes();
        self.0.resize(self.0.len().next_multiple_of(b.len()), 0);
        self.0.extend_from_slice(&b);
        self
    }

    pub fn u32(self, v: u32) -> Self {
        self.arg(v)
    }

    pub fn u64(self, v: u64) -> Self {
        self.arg(v)
    }
}
