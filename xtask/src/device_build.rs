//! Building the device crates into one code object per gfx target.
//!
//! For each (target, crate) this runs:
//!
//! ```text
//! cargo rustc -p <crate> --target amdgcn-amd-amdhsa -Zbuild-std=core
//!       --crate-type cdylib --profile device[-dev]   (CARGO_ENCODED_RUSTFLAGS=-Ctarget-cpu=<gfx>)
//!       -- --emit=llvm-bc=<bc>,link                  -> the crate's LTO'd bitcode
//! llvm-link <bc> <shared/llvm/*.ll device/*/llvm/*.ll> <crate's IR>
//!                                                    -> + IR shims and the crate's IR (what Rust cannot declare)
//! [llvm-dis; launch bounds]                          -> kernels' real workgroup sizes (DeviceCrate::launch_bounds)
//! opt -O3 ; llc -mcpu=<gfx> -filetype=obj            -> object
//! rust-lld -flavor gnu -shared                       -> target/amdgpu/<gfx>/<crate>.hsaco
//! ```
//!
//! rustc's own `.elf` is not used: it lacks the IR shims. Going through
//! bitcode is also how kernels get per-kernel attributes Rust cannot
//! express: a crate's `launch_bounds` set `amdgpu-flat-work-group-size` to
//! the kernel's real workgroup size (rustc's 1,1024 caps gfx9 kernels at 128
//! VGPRs and no AGPRs), and the built code object is checked to carry it. The LLVM tools are the pinned
//! toolchain's `llvm-tools` component, so they match rustc's LLVM.
//!
//! Cargo decides what to recompile; the link steps rerun only when the
//! bitcode, the shims, the crate's IR, the target or the profile changed
//! (a stamp beside the code object records a hash of them). Every code object is then read back
//! with the shared reader and refused if it is not for the requested target,
//! or if a kernel spills or uses a dynamic stack without being allowed to.

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsStr;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use aqueduct_abi::code_object::CodeObject;

use crate::targets::GfxTarget;

/// A crate's launch bounds on one gfx target: (kernel, workgroup size).
pub type LaunchBoundsOf = fn(&str) -> Vec<(&'static str, u32)>;

/// LLVM IR a crate's code object links on one gfx target besides the
/// shims: what the crate's own tables say Rust cannot declare.
pub type IrOf = fn(&str) -> String;

/// A device crate and what its kernels may do that others may not.
#[derive(Clone, Copy, Debug)]
pub struct DeviceCrate {
    /// Cargo package name; also the code object's file stem.
    pub package: &'static str,
    /// Directory, relative to the workspace root.
    pub dir: &'static str,
    /// Kernels allowed to spill registers to scratch.
    pub allow_spills: &'static [&'static str],
    /// Kernels allowed to use a dynamic stack (recursion, indirect calls).
    pub allow_dynamic_stack: &'static [&'static str],
    /// The only gfx targets this crate is built for; empty means every
    /// requested target (test kernels that use CDNA-only instructions
    /// are built for the targets the simulator runs).
    pub only_for: &'static [&'static str],
    /// Kernels' real launch bounds: the most work-items a workgroup of the
    /// kernel has. rustc gives every kernel `amdgpu-flat-work-group-size`
    /// 1,1024, which on gfx9 caps it at 128 VGPRs and no AGPRs; a kernel
    /// named here gets `1,<bound>` instead ([`set_launch_bounds`]).
    pub launch_bounds: &'static [(&'static str, u32)],
    /// More launch bounds, per target: a crate whose kernels differ by
    /// target lists them here (the GEMM kernels: [`gemm_launch_bounds`]).
    pub launch_bounds_on_target: Option<LaunchBoundsOf>,
    /// IR written for the target and linked with the shims into this
    /// crate's code object only (the GEMM kernels' LDS: [`gemm_lds_ir`]).
    pub ir_on_target: Option<IrOf>,
    /// Every kernel must use no scratch (private segment 0): the GEMM
    /// kernels, where scratch means an array the compiler could not keep
    /// in registers.
    pub no_scratch: bool,
}

impl DeviceCrate {
    /// The launch bounds of this crate's kernels on `target`.
    pub fn launch_bounds_on(&self, target: &GfxTarget) -> Vec<(&'static str, u32)> {
        let mut all = self.launch_bounds.to_vec();
        if let Some(more) = self.launch_bounds_on_target {
            all.extend(more(target.name));
        }
        all
    }

    /// Whether this crate is built for `gfx`.
    pub fn builds_for(&self, gfx: &str) -> bool {
        self.only_for.is_empty() || self.only_for.contains(&gfx)
    }
}

/// The crate of the GEMM kernels, whose catalogs the build writes
/// ([`crate::gemm_catalog`]).
pub const GEMM_PACKAGE: &str = "aqueduct-gemm";

/// The GEMM kernels built for `gfx` (`aqueduct_gemm`'s lists, the one
/// definition of them) with their workgroup sizes.
pub fn gemm_launch_bounds(gfx: &str) -> Vec<(&'static str, u32)> {
    aqueduct_gemm::fma::KERNELS
        .iter()
        .chain(aqueduct_gemm::mfma::KERNELS)
        .chain(aqueduct_gemm::wmma::KERNELS)
        .filter(|k| k.built_for(gfx))
        .map(|k| (k.name, k.threads))
        .collect()
}

/// The directory whose `llvm/` holds the IR behind `aqueduct-abi`'s
/// device-side primitives ([`shim_files`]).
const SHARED_SHIMS: &str = "shared";

/// The LDS arrays of the GEMM kernels built for `gfx`, sized from
/// `aqueduct_gemm`'s tables of MFMA and WMMA kernels (Rust cannot declare
/// them).
pub fn gemm_lds_ir(gfx: &str) -> String {
    let mut ir = String::new();
    aqueduct_gemm::mfma::write_lds_ir(&mut ir, gfx).expect("a String takes any text");
    ir
}

/// Every device crate, in build order.
pub const DEVICE_CRATES: &[DeviceCrate] = &[
    DeviceCrate {
        package: "aqueduct-device",
        dir: "device/runtime",
        // cmd_block_issue spills 2 SGPRs (to VGPR lanes, not memory): every
        // lane may hold a different kind of command, so its body is one
        // divergent region after another, each saving EXEC in SGPRs. The
        // serial issue (cmd_block_issue_serial, and cmd_branch, which may
        // issue a block serially) runs that body in a loop, which keeps
        // the issue state's SGPRs live across it: about 25 and 50 SGPRs
        // spill, to VGPR lanes too (`cargo xtask report`: the 256 bytes of
        // scratch each has are the generic path's copy of a command, as in
        // cmd_block_issue, not spills). The scheduler's tick spills SGPRs
        // to VGPR lanes: many in the device-dev profile (overflow checks
        // keep its loops' state live), 13 on gfx942 and none on gfx90a in
        // release (the code objects' .sgpr_spill_count).
        allow_spills: &[
            "cmd_block_issue",
            "cmd_block_issue_serial",
            "cmd_branch",
            "sched_tick",
        ],
        // The scheduler's tick in the device-dev profile only: there LLVM
        // keeps some of its callees outlined and counts the kernel as
        // possibly recursive (`.has_recursion` 1; apparently the overflow
        // checks' panic calls, not verified). Its call graph has no cycle,
        // and the release build has no dynamic stack and no scratch
        // (`cargo xtask report --release`).
        allow_dynamic_stack: &["sched_tick"],
        only_for: &[],
        // The block-issue kernel runs in workgroups of one wave
        // (`aqueduct_device::command::ISSUE_WORKGROUP`): the bound lets it
        // use every VGPR of a wave. The serial issue, the branch (which
        // may issue a block serially) and the scheduler's tick run one
        // work-item.
        launch_bounds: &[
            ("cmd_block_issue", 64),
            ("cmd_block_issue_serial", 64),
            ("cmd_branch", 64),
            ("sched_tick", 64),
        ],
        launch_bounds_on_target: None,
        ir_on_target: None,
        no_scratch: false,
    },
    DeviceCrate {
        package: GEMM_PACKAGE,
        dir: "device/gemm",
        allow_spills: &[],
        allow_dynamic_stack: &[],
        only_for: &[],
        launch_bounds: &[],
        launch_bounds_on_target: Some(gemm_launch_bounds),
        ir_on_target: Some(gemm_lds_ir),
        no_scratch: true,
    },
    DeviceCrate {
        package: "aqueduct-test-kernels",
        dir: "tests/kernels",
        // enqueue_barriers spills 15 SGPRs (to VGPR lanes) in the
        // device-dev profile only, where debug assertions add live values.
        allow_spills: &["enqueue_barriers"],
        allow_dynamic_stack: &["call_hash", "call_indirect"],
        only_for: &[],
        // The tests launch copy_u32 in workgroups of 64 only; its bound
        // shows the launch-bound step end to end (sim_system).
        launch_bounds: &[("copy_u32", 64)],
        launch_bounds_on_target: None,
        ir_on_target: None,
        no_scratch: false,
    },
    DeviceCrate {
        package: "aqueduct-probes",
        dir: "tests/probes",
        allow_spills: &[],
        allow_dynamic_stack: &[],
        only_for: &[],
        launch_bounds: &[],
        launch_bounds_on_target: None,
        ir_on_target: None,
        no_scratch: false,
    },
];

/// LLVM fails to compile compiler_builtins for gfx1100 with debug assertions
/// ("Cannot scavenge register in FI elimination"). The assertions are for our
/// code, so the standard library's crates build without them. Given on the
/// command line because the workspace's own builds would warn that these
/// packages are not in their graph.
const STD_WITHOUT_ASSERTIONS: &[&str] = &[
    "profile.device-dev.package.core.debug-assertions=false",
    "profile.device-dev.package.core.overflow-checks=false",
    "profile.device-dev.package.compiler_builtins.debug-assertions=false",
    "profile.device-dev.package.compiler_builtins.overflow-checks=false",
];

/// Bumped whenever the link pipeline changes, so old stamps go stale.
const PIPELINE_VERSION: u32 = 4;

pub const DEVICE_TRIPLE: &str = "amdgcn-amd-amdhsa";

/// Optimised-with-assertions (`device-dev`) or release (`device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    Dev,
    Release,
}

impl Profile {
    pub fn cargo_name(self) -> &'static str {
        match self {
            Self::Dev => "device-dev",
            Self::Release => "device",
        }
    }
}

/// What a build is asked to do.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub workspace: PathBuf,
    pub targets: Vec<&'static GfxTarget>,
    pub profile: Profile,
}

/// Progress of a build, for a display.
#[derive(Clone, Debug)]
pub enum Event<'a> {
    Started {
        gfx: &'a str,
        package: &'a str,
    },
    Finished {
        gfx: &'a str,
        package: &'a str,
        fresh: bool,
    },
}

/// One code object the build produced or found fresh.
#[derive(Clone, Debug)]
pub struct Artifact {
    pub gfx: &'static str,
    pub package: &'static str,
    pub path: PathBuf,
    /// The link steps were skipped: nothing they read had changed.
    pub fresh: bool,
}

/// A failed build, naming the target and crate.
#[derive(Debug)]
pub struct BuildError {
    pub gfx: String,
    pub package: String,
    pub message: String,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "device build failed for {} ({}): {}",
            self.gfx, self.package, self.message
        )
    }
}

impl std::error::Error for BuildError {}

/// `target/amdgpu`: where code objects go.
pub fn artifact_dir(workspace: &Path) -> PathBuf {
    workspace.join("target").join("amdgpu")
}

/// Path of one code object.
pub fn artifact_path(workspace: &Path, gfx: &str, package: &str) -> PathBuf {
    artifact_dir(workspace)
        .join(gfx)
        .join(format!("{package}.hsaco"))
}

/// The directory of the pinned toolchain's LLVM tools (`llvm-tools`
/// component): llc, llvm-link, opt, rust-lld, llvm-objdump, llvm-readobj.
pub fn llvm_bin_dir(workspace: &Path) -> Result<PathBuf, String> {
    Toolchain::discover(workspace).map(|t| t.bin)
}

/// The pinned toolchain's LLVM tools and cargo.
struct Toolchain {
    cargo: PathBuf,
    bin: PathBuf,
    data_layout: String,
}

/// Environment a parent cargo (a build script's, or `cargo clippy`'s) sets
/// that must not leak into the device build. Build scripts in particular see
/// the *host's* `CARGO_CFG_*`: inherited by the nested cargo, they reach the
/// standard library's build scripts (compiler_builtins would enable `f128`
/// for amdgcn and LLVM would abort with "unsupported library call").
const SCRUBBED_ENV: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_MAKEFLAGS",
    "MAKEFLAGS",
    "MFLAGS",
    "CLIPPY_ARGS",
    "TARGET",
    "HOST",
    "OUT_DIR",
    "OPT_LEVEL",
    "PROFILE",
    "DEBUG",
    "NUM_JOBS",
    "RUSTDOC",
    "RUSTC_LINKER",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_CRATE_NAME",
    "CARGO_TARGET_TMPDIR",
];

/// Prefixes of build-script variables scrubbed the same way.
const SCRUBBED_PREFIXES: &[&str] = &["CARGO_CFG_", "CARGO_FEATURE_", "DEP_"];

fn command(program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    for (name, _) in std::env::vars_os() {
        let scrub = name
            .to_str()
            .is_some_and(|n| SCRUBBED_PREFIXES.iter().any(|p| n.starts_with(p)));
        if scrub {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// Runs `cmd`: its standard output, or an error with everything it
/// printed. A successful run's warnings (the device crates' compiler
/// warnings, which `cargo clippy` on the host never sees) are printed.
fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        let output = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return Err(format!(
            "{what} failed ({}):\n{}",
            out.status,
            shorten_lines(&output)
        ));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("warning") {
        eprintln!("{what}:\n{stderr}");
    }
    String::from_utf8(out.stdout).map_err(|_| format!("{what} printed non-UTF-8 output"))
}

/// Cuts lines longer than [`MAX_LINE`] (cargo repeats whole rustc command
/// lines in its errors), keeping rustc's diagnostics readable.
fn shorten_lines(output: &str) -> String {
    output
        .lines()
        .map(|l| match l.char_indices().nth(MAX_LINE) {
            Some((cut, _)) => format!("{} […]", &l[..cut]),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const MAX_LINE: usize = 300;

/// The path of one of the pinned toolchain's LLVM tools (`llvm-objdump`,
/// ...).
pub fn llvm_tool(workspace: &Path, name: &str) -> Result<PathBuf, String> {
    Ok(Toolchain::discover(workspace)?.tool(name))
}

impl Toolchain {
    fn discover(workspace: &Path) -> Result<Self, String> {
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let rustc_cmd =
            |args: &[&str]| run(command(&rustc).current_dir(workspace).args(args), "rustc");
        let sysroot = rustc_cmd(&["--print", "sysroot"])?.trim().to_owned();
        let version = rustc_cmd(&["-vV"])?;
        let host = version
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .ok_or("rustc -vV did not name the host")?
            .to_owned();
        let bin = Path::new(&sysroot)
            .join("lib/rustlib")
            .join(host)
            .join("bin");
        if !bin.join("llc").exists() {
            return Err(format!(
                "llc not found in {}: install the toolchain's llvm-tools (`rustup toolchain install` in the workspace reads rust-toolchain.toml)",
                bin.display()
            ));
        }
        let spec = rustc_cmd(&[
            "-Zunstable-options",
            "--print",
            "target-spec-json",
            "--target",
            DEVICE_TRIPLE,
        ])?;
        let data_layout = json_string_field(&spec, "data-layout")
            .ok_or("rustc's amdgcn target spec has no data-layout")?;
        Ok(Self {
            cargo: cargo.into(),
            bin,
            data_layout,
        })
    }

    fn tool(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }
}

/// The string value of `"key": "..."` in a flat JSON document (the target
/// spec; its data layout has no escapes).
fn json_string_field(json: &str, key: &str) -> Option<String> {
    let at = json.find(&format!("\"{key}\""))?;
    let rest = &json[at + key.len() + 2..];
    let rest = rest
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_owned())
}

/// The LLVM IR shims every code object links, sorted: `shared/llvm/*.ll`
/// (the scoped atomics and global-memory accesses `aqueduct-abi` declares
/// for its views) and `device/*/llvm/*.ll`.
fn shim_files(workspace: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let dirs = std::iter::once(SHARED_SHIMS).chain(DEVICE_CRATES.iter().map(|k| k.dir));
    for dir in dirs {
        let dir = workspace.join(dir).join("llvm");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            if path.extension().is_some_and(|e| e == "ll") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Builds every device crate for every requested target.
pub fn build(
    opts: &BuildOptions,
    progress: impl FnMut(Event<'_>),
) -> Result<Vec<Artifact>, BuildError> {
    build_packages(opts, &[], progress)
}

/// Builds the device crates named in `packages` (every one when empty)
/// for every requested target.
pub fn build_packages(
    opts: &BuildOptions,
    packages: &[&str],
    mut progress: impl FnMut(Event<'_>),
) -> Result<Vec<Artifact>, BuildError> {
    let fail = |gfx: &str, package: &str, message: String| BuildError {
        gfx: gfx.to_owned(),
        package: package.to_owned(),
        message,
    };
    let toolchain = Toolchain::discover(&opts.workspace).map_err(|m| fail("*", "*", m))?;
    let shims = shim_files(&opts.workspace).map_err(|m| fail("*", "*", m))?;
    let mut artifacts = Vec::new();
    for target in &opts.targets {
        let wanted = DEVICE_CRATES.iter().filter(|k| {
            k.builds_for(target.name) && (packages.is_empty() || packages.contains(&k.package))
        });
        for krate in wanted {
            progress(Event::Started {
                gfx: target.name,
                package: krate.package,
            });
            let artifact = build_one(opts, &toolchain, &shims, target, krate)
                .map_err(|m| fail(target.name, krate.package, m))?;
            // The GEMM kernels' catalog, next to their code object.
            if krate.package == GEMM_PACKAGE {
                let dir = artifact.path.parent().unwrap_or(Path::new("."));
                crate::gemm_catalog::write(
                    target,
                    dir,
                    &artifact.path,
                    &toolchain.tool("llvm-objdump"),
                )
                .map_err(|m| fail(target.name, krate.package, m))?;
            }
            progress(Event::Finished {
                gfx: target.name,
                package: krate.package,
                fresh: artifact.fresh,
            });
            artifacts.push(artifact);
        }
    }
    Ok(artifacts)
}

fn build_one(
    opts: &BuildOptions,
    toolchain: &Toolchain,
    shims: &[PathBuf],
    target: &'static GfxTarget,
    krate: &'static DeviceCrate,
) -> Result<Artifact, String> {
    let gfx = target.name;
    let profile = opts.profile.cargo_name();
    let build_dir = opts.workspace.join("target").join("amdgpu-build").join(gfx);
    let work = build_dir.join(profile);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let stem = krate.package.replace('-', "_");
    let bc = work.join(format!("{stem}.bc"));

    run(
        command(&toolchain.cargo)
            .current_dir(&opts.workspace)
            .env("CARGO_ENCODED_RUSTFLAGS", format!("-Ctarget-cpu={gfx}"))
            .args([
                "rustc",
                "--quiet",
                "-p",
                krate.package,
                "--profile",
                profile,
            ])
            .args(STD_WITHOUT_ASSERTIONS.iter().flat_map(|c| ["--config", *c]))
            .args([
                "--target",
                DEVICE_TRIPLE,
                "-Zbuild-std=core",
                "--crate-type",
                "cdylib",
            ])
            .arg("--target-dir")
            .arg(&build_dir)
            .arg("--")
            .arg(format!("--emit=llvm-bc={},link", bc.display())),
        "cargo rustc",
    )?;

    let out = artifact_path(&opts.workspace, gfx, krate.package);
    let stamp_path = out.with_extension("hsaco.stamp");
    let bounds = krate.launch_bounds_on(target);
    let ir = krate
        .ir_on_target
        .map_or_else(String::new, |ir_of| ir_of(gfx));
    let stamp = stamp_of(&bc, shims, &ir, gfx, profile, &bounds)?;
    let fresh =
        out.exists() && std::fs::read_to_string(&stamp_path).is_ok_and(|old| old.trim() == stamp);
    if fresh {
        check(&out, target, krate)?;
    } else {
        // Checked under a temporary name, so a refused code object never
        // replaces the last good one.
        let tmp = link(toolchain, &work, &bc, shims, &ir, &bounds, gfx, &stem, &out)?;
        check(&tmp, target, krate)?;
        std::fs::rename(&tmp, &out).map_err(|e| format!("{}: {e}", out.display()))?;
        std::fs::write(&stamp_path, &stamp)
            .map_err(|e| format!("{}: {e}", stamp_path.display()))?;
    }
    Ok(Artifact {
        gfx,
        package: krate.package,
        path: out,
        fresh,
    })
}

fn stamp_of(
    bc: &Path,
    shims: &[PathBuf],
    ir: &str,
    gfx: &str,
    profile: &str,
    launch_bounds: &[(&str, u32)],
) -> Result<String, String> {
    let mut hasher = DefaultHasher::new();
    (PIPELINE_VERSION, gfx, profile, launch_bounds, ir).hash(&mut hasher);
    for file in std::iter::once(bc).chain(shims.iter().map(PathBuf::as_path)) {
        std::fs::read(file)
            .map_err(|e| format!("{}: {e}", file.display()))?
            .hash(&mut hasher);
    }
    Ok(format!("{:016x}", hasher.finish()))
}

#[allow(clippy::too_many_arguments)]
fn link(
    toolchain: &Toolchain,
    work: &Path,
    bc: &Path,
    shims: &[PathBuf],
    ir: &str,
    launch_bounds: &[(&str, u32)],
    gfx: &str,
    stem: &str,
    out: &Path,
) -> Result<PathBuf, String> {
    // The shims, then the crate's own IR, are written without a data
    // layout; give them rustc's so llvm-link sees one module shape.
    let shim = work.join("shims.ll");
    let mut text = format!("target datalayout = \"{}\"\n", toolchain.data_layout);
    text.push_str(&format!("target triple = \"{DEVICE_TRIPLE}\"\n"));
    let mut groups = std::collections::BTreeMap::new();
    for file in shims {
        let body = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        check_attribute_groups(&mut groups, file, &body)?;
        text.push_str(&body);
        text.push('\n');
    }
    text.push_str(ir);
    std::fs::write(&shim, text).map_err(|e| format!("{}: {e}", shim.display()))?;

    let linked = work.join(format!("{stem}.linked.bc"));
    let optimized = work.join(format!("{stem}.opt.bc"));
    let object = work.join(format!("{stem}.o"));
    run(
        command(toolchain.tool("llvm-link"))
            .arg(bc)
            .arg(&shim)
            .arg("-o")
            .arg(&linked),
        "llvm-link",
    )?;
    // Launch bounds: through text IR, where a kernel's attribute group can
    // be swapped for one with its bound.
    let to_optimize = if launch_bounds.is_empty() {
        linked
    } else {
        let text = work.join(format!("{stem}.linked.ll"));
        run(
            command(toolchain.tool("llvm-dis"))
                .arg(&linked)
                .arg("-o")
                .arg(&text),
            "llvm-dis",
        )?;
        let ir = std::fs::read_to_string(&text).map_err(|e| format!("{}: {e}", text.display()))?;
        let bounded = work.join(format!("{stem}.bounded.ll"));
        std::fs::write(&bounded, set_launch_bounds(&ir, launch_bounds)?)
            .map_err(|e| format!("{}: {e}", bounded.display()))?;
        bounded
    };
    run(
        command(toolchain.tool("opt"))
            .arg("-O3")
            .arg(&to_optimize)
            .arg("-o")
            .arg(&optimized),
        "opt",
    )?;
    run(
        command(toolchain.tool("llc"))
            .args(["-O3", "-filetype=obj"])
            .arg(format!("-mtriple={DEVICE_TRIPLE}"))
            .arg(format!("-mcpu={gfx}"))
            .arg(&optimized)
            .arg("-o")
            .arg(&object),
        "llc",
    )?;
    let dir = out.parent().ok_or("artifact path has no parent")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = out.with_extension("hsaco.tmp");
    run(
        command(toolchain.tool("rust-lld"))
            .args(["-flavor", "gnu", "-shared"])
            .arg(&object)
            .arg("-o")
            .arg(&tmp),
        "rust-lld",
    )?;
    Ok(tmp)
}

/// The shims are linked as one file, where `attributes #N` of two files
/// name one group: LLVM keeps one definition and silently applies it to
/// both files' functions (a `memory(none)` group from one file would let
/// the optimiser delete another file's atomics). Numbers may repeat only
/// with the same attributes.
fn check_attribute_groups(
    seen: &mut std::collections::BTreeMap<String, (PathBuf, String)>,
    file: &Path,
    body: &str,
) -> Result<(), String> {
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("attributes ") else {
            continue;
        };
        let Some((group, attrs)) = rest.split_once('=') else {
            continue;
        };
        let (group, attrs) = (group.trim().to_owned(), attrs.trim().to_owned());
        if let Some((other, before)) = seen.get(&group)
            && *before != attrs
        {
            return Err(format!(
                "LLVM IR shims {} and {} both define attribute group {group} differently; \
                 renumber one, or write the attributes inline",
                other.display(),
                file.display()
            ));
        }
        seen.insert(group, (file.to_path_buf(), attrs));
    }
    Ok(())
}

/// Reads a built code object back and applies the build's rules.
fn check(path: &Path, target: &GfxTarget, krate: &DeviceCrate) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let co = CodeObject::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    if co.target.processor != target.name {
        return Err(format!(
            "{} is for {}, not {}",
            path.display(),
            co.target.processor,
            target.name
        ));
    }
    let mut problems = Vec::new();
    for (name, bound) in krate.launch_bounds_on(target) {
        match co.kernels.iter().find(|k| k.metadata.name == name) {
            None => problems.push(format!(
                "launch bound for {name}, which {} does not have",
                krate.package
            )),
            Some(k) if k.metadata.max_flat_workgroup_size != u64::from(bound) => {
                problems.push(format!(
                    "kernel {name} was built for workgroups of {}, not its launch bound {bound}",
                    k.metadata.max_flat_workgroup_size
                ))
            }
            Some(_) => {}
        }
    }
    for k in &co.kernels {
        let md = &k.metadata;
        if (md.sgpr_spill_count > 0 || md.vgpr_spill_count > 0)
            && !krate.allow_spills.contains(&md.name.as_str())
        {
            problems.push(format!(
                "kernel {} spills ({} SGPRs, {} VGPRs); reduce register pressure or add it to allow_spills in xtask/src/device_build.rs",
                md.name, md.sgpr_spill_count, md.vgpr_spill_count
            ));
        }
        if krate.no_scratch && md.private_segment_fixed_size > 0 {
            problems.push(format!(
                "kernel {} uses {} bytes of scratch; {} kernels may use none (keep arrays indexed by constants)",
                md.name, md.private_segment_fixed_size, krate.package
            ));
        }
        if md.uses_dynamic_stack && !krate.allow_dynamic_stack.contains(&md.name.as_str()) {
            problems.push(format!(
                "kernel {} uses a dynamic stack (recursion or an indirect call); remove it or add the kernel to allow_dynamic_stack in xtask/src/device_build.rs",
                md.name
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// `ir` (LLVM text IR) with each kernel of `bounds` given
/// `"amdgpu-flat-work-group-size"="1,<bound>"`: a copy of the kernel's
/// attribute group with the bound, under a new group number, so functions
/// that shared the group keep theirs.
pub fn set_launch_bounds(ir: &str, bounds: &[(&str, u32)]) -> Result<String, String> {
    let mut lines: Vec<String> = ir.lines().map(str::to_string).collect();
    let group_of = |line: &str| -> Option<u32> {
        line.split_whitespace()
            .filter_map(|t| t.strip_prefix('#')?.parse().ok())
            .next_back()
    };
    let first_new = lines
        .iter()
        .filter_map(|l| l.strip_prefix("attributes #"))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u32>().ok())
        .max()
        .map_or(0, |n| n + 1);
    let mut added = Vec::new();
    for (next, &(name, bound)) in (first_new..).zip(bounds) {
        let needle = format!("@{name}(");
        let at = lines
            .iter()
            .position(|l| l.starts_with("define ") && l.contains(&needle))
            .ok_or_else(|| format!("launch bound for {name}: no such function in the IR"))?;
        let group = group_of(&lines[at]).ok_or_else(|| {
            format!("launch bound for {name}: its definition has no attribute group")
        })?;
        let prefix = format!("attributes #{group} = {{");
        let body = lines
            .iter()
            .find_map(|l| l.strip_prefix(&prefix))
            .ok_or_else(|| format!("launch bound for {name}: attribute group #{group} not found"))?
            .trim_end_matches('}')
            .trim();
        // The group without its old bound (a quoted value may hold
        // anything but a quote), then the new one.
        let key = "\"amdgpu-flat-work-group-size\"=\"";
        let mut body = body.to_string();
        if let Some(start) = body.find(key) {
            let value = start + key.len();
            let end = body[value..]
                .find('"')
                .map(|e| value + e + 1)
                .ok_or_else(|| format!("launch bound for {name}: unterminated attribute"))?;
            body.replace_range(start..end, "");
        }
        let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
        added.push(format!(
            "attributes #{next} = {{ {body} \"amdgpu-flat-work-group-size\"=\"1,{bound}\" }}"
        ));
        lines[at] = lines[at].replacen(&format!("#{group} "), &format!("#{next} "), 1);
    }
    lines.extend(added);
    let mut out = lines.join("\n");
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod launch_bound_tests {
    use super::set_launch_bounds;

    const IR: &str = r#"define amdgpu_kernel void @a(ptr %p) unnamed_addr #1 {
  ret void
}
define amdgpu_kernel void @b(ptr %p) unnamed_addr #1 {
  ret void
}
attributes #0 = { nounwind }
attributes #1 = { nounwind "amdgpu-flat-work-group-size"="1,1024" "target-cpu"="gfx90a" }
"#;

    #[test]
    fn a_bound_kernel_gets_its_own_group_and_the_others_keep_theirs() {
        let out = set_launch_bounds(IR, &[("b", 256)]).unwrap();
        assert!(out.contains("define amdgpu_kernel void @a(ptr %p) unnamed_addr #1 {"));
        assert!(out.contains("define amdgpu_kernel void @b(ptr %p) unnamed_addr #2 {"));
        assert!(out.contains(
            "attributes #2 = { nounwind \"target-cpu\"=\"gfx90a\" \"amdgpu-flat-work-group-size\"=\"1,256\" }"
        ));
        assert!(out.contains("\"amdgpu-flat-work-group-size\"=\"1,1024\" \"target-cpu\""));
    }

    #[test]
    fn an_unknown_kernel_is_an_error() {
        let e = set_launch_bounds(IR, &[("c", 64)]).unwrap_err();
        assert!(e.contains("no such function"), "{e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_data_layout_from_a_target_spec() {
        let spec =
            r#"{ "arch": "amdgpu", "data-layout": "e-m:e-p:64:64-S32", "llvm-target": "x" }"#;
        assert_eq!(
            json_string_field(spec, "data-layout").as_deref(),
            Some("e-m:e-p:64:64-S32")
        );
        assert_eq!(json_string_field(spec, "missing"), None);
    }
}
