//! `cargo xtask`: aqueduct's build and inspection commands.

mod cmdbuf_bench;
mod hsa_bench;
mod main_job;
mod sched_bench;

use std::fmt;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use aqueduct::cli::GemmArgs;
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use xtask::device_build::{self, BuildOptions, DEVICE_CRATES, Event, Profile};
use xtask::targets::{self, DEFAULT_TARGETS, GfxTarget};
use xtask::{report, sim_bench, sim_coverage, workspace_root};

/// aqueduct's build and inspection commands.
#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile every device crate for each gfx target
    ///
    /// Writes target/amdgpu/<gfx>/<crate>.hsaco, and the GEMM kernels'
    /// catalogs beside aqueduct-gemm's.
    #[command(verbatim_doc_comment)]
    Build(BuildArgs),
    /// Build, then print one row per kernel: registers, LDS, scratch,
    /// spills, dynamic stack and occupancy
    Report(BuildArgs),
    /// The main job: one GEMM on a GPU agent, checked against the CPU
    ///
    /// One GEMM through the device scheduler on one GPU agent, verified
    /// against an f64 CPU reference, reported (xtask/src/main_job.rs).
    #[command(verbatim_doc_comment)]
    Run(RunArgs),
    /// The whole test suite: rustfmt check, clippy, rustdoc, sim-coverage,
    /// cargo test
    ///
    /// cargo fmt --all --check; cargo clippy --workspace --all-targets
    /// -D warnings; cargo doc --no-deps --workspace with RUSTDOCFLAGS
    /// "-D warnings" (a doc warning fails the suite); cargo xtask
    /// sim-coverage (the device crates built in both device profiles for
    /// gfx90a and gfx942, every instruction one the simulator runs);
    /// cargo test --workspace.
    #[command(verbatim_doc_comment)]
    Test,
    /// Regenerate sim/src/decode/opcodes.rs from llvm-objdump
    IsaTables,
    /// Regenerate shared/llvm/atomics.ll (the device library's
    /// scoped atomics as LLVM IR)
    AtomicsIr,
    /// List each built instruction kind and whether the simulator runs it
    ///
    /// Builds for gfx90a and gfx942 (profiles device-dev and device) and
    /// lists each code object's instructions and whether the simulator
    /// implements them; fails naming any it does not.
    #[command(verbatim_doc_comment)]
    SimCoverage(SimCoverageArgs),
    /// Time the device library's kernels and the GEMMs on the simulator
    ///
    /// Builds (profile device) and times fill, copy and a 1 Mi-element saxpy
    /// on the simulator on one thread for every target, AMD's f16 GEMM
    /// kernel at 512³ on gfx90a on one and two threads and its WMMA
    /// counterparts on gfx1100 and gfx1201 on one (on gfx1201 also the
    /// kernel hipBLASLt selects for 512³), and ours on one, checked
    /// against the CPU; runs itself as a release build (the numbers mean
    /// nothing in debug).
    #[command(verbatim_doc_comment)]
    SimBench,
    /// Time dispatches and packet submission through the host shim
    ///
    /// On the simulator's HSA runtime (agents gfx942,gfx90a unless
    /// AQUEDUCT_SIM_AGENTS says otherwise): round trip of an empty kernel,
    /// batch throughput, host-side ns per packet (target ≤ 100) and body
    /// build ns; runs itself and the simulator as release builds.
    #[command(verbatim_doc_comment)]
    HsaBench(ShimBenchArgs),
    /// Time recording and issuing command buffers through the host shim
    ///
    /// On the simulator's HSA runtime: host ns per recorded dispatch, fill
    /// and copy (10k of each; goals ≤ 50 and ≤ 20 ns), the device issue's
    /// wave-instructions per command for 1,000-command blocks grouped by
    /// kind and in recording order (goal ≤ 2), host round trips per block;
    /// runs itself and the simulator as release builds.
    #[command(verbatim_doc_comment)]
    CmdbufBench(ShimBenchArgs),
    /// Count the device scheduler's ticks and costs through the host shim
    ///
    /// On the simulator's HSA runtime: ticks for chains of 10, 100 and 1,000
    /// dependent entries (goal ≤ N + 1) and for as many entries released
    /// together (goal ≤ N/8 + 2), host calls, wave-instructions per tick,
    /// host ns per submitted entry; runs itself and the simulator as
    /// release builds.
    #[command(verbatim_doc_comment)]
    SchedBench(ShimBenchArgs),
    /// Compare our MFMA kernels' main loops with rocBLAS's
    ///
    /// Builds (profile device) for the five targets and compares our MFMA
    /// kernels' main loops with AMD's rocBLAS kernels of the same types and
    /// macro-tiles (gfx90a; fetched from Debian and cached): instructions,
    /// matrix-instruction share, load and LDS widths, waits per iteration,
    /// registers, LDS, occupancy, scratch. On gfx1100 and gfx1201 it reports
    /// AMD's RDNA kernels the tests run (rocBLAS and hipBLASLt; WMMA).
    ///
    /// With --model: the throughput model's table (xtask/src/gemm_model.rs):
    /// each matrix kernel's modelled TFLOP/s and share of peak at 4096³ and
    /// 8192³ on MI210, MI300X, MI355X, RX 7900 XTX and RX 9070 XT (the RDNA
    /// rows are AMD's WMMA kernels). Modelled figures, not measurements: no
    /// GPU is here.
    #[command(verbatim_doc_comment)]
    GemmReport(GemmReportArgs),
    /// Write Tensile-layout catalogs from a description file
    ///
    /// Lazy or eager, MessagePack or YAML, as the description says (its
    /// format: xtask/src/catalog_write.rs); prints each file written.
    #[command(verbatim_doc_comment)]
    Catalog(CatalogArgs),
    /// Catalog benchmarks: rocBLAS's 117 MB catalog and hipBLASLt's TensileLite catalogs
    ///
    /// rocBLAS's catalog is fetched from Debian trixie and cached (see
    /// xtask/src/rocblas_catalog.rs): eager load time and peak memory against
    /// Python's msgpack, selection with and without the result cache, lazy
    /// loading. hipBLASLt 7.1.1's catalogs come from Debian sid
    /// (xtask/src/hipblaslt_catalog.rs): opening the mapping and a lazy root,
    /// the first query of each problem type, selection without the result
    /// cache on each processor's catalog. Times and memory are judged
    /// against targets (xtask/src/catalog_bench.rs). Runs itself as a
    /// release build.
    #[command(verbatim_doc_comment)]
    CatalogBench(CatalogBenchArgs),
}

/// A list of gfx targets: `--gfx gfx90a,gfx942`.
#[derive(Clone)]
struct Targets(Vec<&'static GfxTarget>);

impl Default for Targets {
    fn default() -> Self {
        Targets(DEFAULT_TARGETS.iter().collect())
    }
}

impl fmt::Display for Targets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|t| t.name).collect();
        f.write_str(&names.join(","))
    }
}

fn parse_targets(list: &str) -> Result<Targets, String> {
    targets::parse_list(list).map(Targets)
}

#[derive(Args)]
struct BuildArgs {
    /// Comma-separated gfx targets
    #[arg(long, value_name = "LIST", default_value_t, value_parser = parse_targets)]
    gfx: Targets,
    /// Build device code without debug assertions (profile `device`); the
    /// default `device-dev` profile is optimised too, with debug assertions
    /// and overflow checks
    #[arg(long)]
    release: bool,
}

impl BuildArgs {
    fn options(&self) -> Options {
        Options {
            targets: self.gfx.0.clone(),
            profile: if self.release {
                Profile::Release
            } else {
                Profile::Dev
            },
        }
    }
}

#[derive(Args)]
struct RunArgs {
    /// An explicit HSA runtime to load instead of looking for ROCr
    #[arg(long, value_name = "PATH")]
    lib: Option<PathBuf>,
    #[command(flatten)]
    gemm: GemmArgs,
}

#[derive(Args)]
struct GemmReportArgs {
    /// Print the throughput model's table as well
    #[arg(long)]
    model: bool,
}

#[derive(Args)]
struct SimCoverageArgs {
    /// Only the `device` profile (the one the tests run)
    #[arg(long)]
    release: bool,
}

#[derive(Args)]
struct ShimBenchArgs {
    /// The HSA runtime to load (default: a release build of
    /// libaqueduct_sim.so, built first)
    #[arg(long, value_name = "PATH")]
    lib: Option<PathBuf>,
}

#[derive(Args)]
struct CatalogArgs {
    /// The description file
    #[arg(value_name = "DESCRIPTION.yaml")]
    description: PathBuf,
    /// The directory to write the catalogs in
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

#[derive(Args)]
struct CatalogBenchArgs {
    /// The catalog to measure (default: rocBLAS's, fetched and cached)
    #[arg(long, value_name = "PATH")]
    catalog: Option<PathBuf>,
    /// Selection queries per pass
    #[arg(long, value_name = "N", default_value_t = 2000)]
    queries: usize,
    /// Load the catalog once and print `seconds peak_kb base_kb solutions`:
    /// the child process of the eager-load measurement
    /// (xtask/src/catalog_bench.rs runs this binary so)
    #[arg(long, value_name = "PATH", hide = true, conflicts_with_all = ["catalog", "queries"])]
    load_only: Option<PathBuf>,
}

struct Options {
    targets: Vec<&'static GfxTarget>,
    profile: Profile,
}

fn build(opts: &Options) -> Result<Vec<device_build::Artifact>, String> {
    build_only(opts, &[])
}

/// Builds the device crates named in `packages` (every one when empty),
/// with a progress bar.
fn build_only(opts: &Options, packages: &[&str]) -> Result<Vec<device_build::Artifact>, String> {
    let total = opts
        .targets
        .iter()
        .map(|t| {
            DEVICE_CRATES
                .iter()
                .filter(|k| k.builds_for(t.name))
                .filter(|k| packages.is_empty() || packages.contains(&k.package))
                .count() as u64
        })
        .sum();
    let interactive = std::io::stderr().is_terminal();
    let bar = if interactive {
        ProgressBar::new(total)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{pos}/{len}] {wide_msg} {elapsed}")
            .map_err(|e| e.to_string())?,
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let started = std::time::Instant::now();
    let options = BuildOptions {
        workspace: workspace_root(),
        targets: opts.targets.clone(),
        profile: opts.profile,
    };
    let result = device_build::build_packages(&options, packages, |event| match event {
        Event::Started { gfx, package } => {
            bar.set_message(format!("{gfx} × {package}"));
            if !interactive {
                eprintln!("building {gfx} × {package}");
            }
        }
        Event::Finished {
            gfx,
            package,
            fresh,
        } => {
            bar.inc(1);
            let state = if fresh { "fresh" } else { "built" };
            bar.println(format!("  {state:>5} {gfx} × {package}"));
        }
    });
    bar.finish_and_clear();
    let artifacts = result.map_err(|e| e.to_string())?;
    let built = artifacts.iter().filter(|a| !a.fresh).count();
    eprintln!(
        "{} code objects ({built} rebuilt) for {} in {:.1}s, profile {}, under {}",
        artifacts.len(),
        opts.targets
            .iter()
            .map(|t| t.name)
            .collect::<Vec<_>>()
            .join(","),
        started.elapsed().as_secs_f64(),
        opts.profile.cargo_name(),
        device_build::artifact_dir(&workspace_root()).display()
    );
    Ok(artifacts)
}

fn print_report(artifacts: &[device_build::Artifact]) -> Result<(), String> {
    let mut rows = Vec::new();
    for a in artifacts {
        let target = targets::target(a.gfx).ok_or_else(|| format!("unknown target {}", a.gfx))?;
        rows.extend(report::rows_for_file(&a.path, a.package, target)?);
    }
    print!("{}", report::format_table(&rows));
    println!(
        "occupancy: waves per SIMD from registers and LDS (LDS assumes workgroups of the kernel's max flat workgroup size)"
    );
    Ok(())
}

fn cargo(args: &[&str]) -> Result<(), String> {
    cargo_with_env(&[], args)
}

/// `cargo <args>` with the variables `env` set for it alone.
fn cargo_with_env(env: &[(&str, &str)], args: &[&str]) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let shown: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v:?} ")).collect();
    eprintln!("$ {}cargo {}", shown.concat(), args.join(" "));
    let status = std::process::Command::new(cargo)
        .current_dir(workspace_root())
        .envs(env.iter().copied())
        .args(args)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed ({status})", args.join(" ")))
    }
}

fn test() -> Result<(), String> {
    cargo(&["fmt", "--all", "--", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    // Broken intra-doc links and malformed doc comments fail the suite too.
    cargo_with_env(
        &[("RUSTDOCFLAGS", "-D warnings")],
        &["doc", "--no-deps", "--workspace"],
    )?;
    // The device crates in the device-dev profile too (debug assertions
    // and overflow checks on the GPU), checked as `cargo xtask build`
    // checks them and covered by the simulator; the tests run the
    // `device` profile, which this leaves built.
    sim_coverage_command(&SimCoverageArgs { release: false })?;
    cargo(&["test", "--workspace"])
}

fn isa_tables() -> Result<(), String> {
    let root = workspace_root();
    let src = xtask::isa_tables::generate(&root)?;
    let path = xtask::isa_tables::output_path(&root);
    std::fs::write(&path, src).map_err(|e| format!("{}: {e}", path.display()))?;
    // Formatted as `cargo fmt` would, so the check stays clean.
    let status = std::process::Command::new("rustfmt")
        .args(["--edition", "2024"])
        .arg(&path)
        .status()
        .map_err(|e| format!("rustfmt: {e}"))?;
    if !status.success() {
        return Err(format!("rustfmt {} failed ({status})", path.display()));
    }
    println!("wrote {}", path.display());
    Ok(())
}

/// The simulated targets, for `sim-coverage` and `sim-bench`.
fn gemm_report(args: &GemmReportArgs) -> Result<(), String> {
    use xtask::gemm_report;
    let targets = simulated_targets()?;
    build(&Options {
        targets: targets.clone(),
        profile: Profile::Release,
    })?;
    let workspace = workspace_root();
    let objdump = xtask::device_build::llvm_tool(&workspace, "llvm-objdump")?;
    let mut rows = Vec::new();
    for target in &targets {
        let ours = gemm_report::our_code_object(&workspace, target.name);
        rows.extend(gemm_report::rows(
            "ours",
            &ours,
            &objdump,
            target,
            &gemm_report::ours(target.name),
        )?);
        if target.name == "gfx90a" {
            let amd = xtask::rocblas_catalog::fetch_report_kernels()?;
            rows.extend(gemm_report::amd_rows(&amd, &objdump, target, true)?);
        }
        // AMD's RDNA kernels the tests run: rocBLAS's and hipBLASLt's
        // gfx1100 ones, hipBLASLt's gfx1201 ones.
        let rdna = match target.name {
            "gfx1100" => vec![
                xtask::rocblas_catalog::fetch_gfx1100_gemm_kernels()?,
                xtask::hipblaslt_catalog::fetch_gemm_kernels("gfx1100")?,
            ],
            "gfx1201" => vec![xtask::hipblaslt_catalog::fetch_gemm_kernels("gfx1201")?],
            _ => Vec::new(),
        };
        for amd in rdna {
            rows.extend(gemm_report::amd_rows(&amd, &objdump, target, false)?);
        }
    }
    print!("{}", gemm_report::format(&rows));
    if args.model {
        print!("\n{}", xtask::gemm_model::table(&rows));
        print!("\n{}", xtask::gemm_model::choices(&rows));
    }
    Ok(())
}

fn simulated_targets() -> Result<Vec<&'static GfxTarget>, String> {
    targets::parse_list(&sim_coverage::SIMULATED_TARGETS.join(","))
}

fn sim_coverage_command(args: &SimCoverageArgs) -> Result<(), String> {
    let profiles = if args.release {
        vec![Profile::Release]
    } else {
        vec![Profile::Dev, Profile::Release]
    };
    let mut all = Vec::new();
    let mut problems = Vec::new();
    // Both profiles write the same paths, so each is read right after its
    // build; `device` goes last and stays, as the tests' build leaves it.
    for profile in profiles {
        let artifacts = build(&Options {
            targets: simulated_targets()?,
            profile,
        })?;
        for a in &artifacts {
            let bytes = std::fs::read(&a.path).map_err(|e| format!("{}: {e}", a.path.display()))?;
            let name = format!("{} ({})", a.package, profile.cargo_name());
            let c = sim_coverage::coverage(a.gfx, &name, &bytes)?;
            print!("{}", sim_coverage::format_table(&c));
            problems.extend(c.problems());
            all.push(c);
        }
    }
    println!();
    for (gfx, implemented, kinds, percent) in sim_coverage::totals(&all) {
        println!("{gfx}: {implemented}/{kinds} instruction kinds implemented ({percent:.1} %)");
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the simulator cannot run {} of the instructions aqueduct builds:\n  {}",
            problems.len(),
            problems.join("\n  ")
        ))
    }
}

fn sim_bench_command() -> Result<(), String> {
    if cfg!(debug_assertions) {
        // `cargo xtask` is a debug build, and so is the simulator in it:
        // an unoptimised interpreter is ~17× slower and its numbers say
        // nothing. A profile override for aqueduct-sim would change every
        // debug build of the workspace; running ourselves in release does not.
        return rerun_in_release("sim-bench");
    }
    let artifacts = build(&Options {
        targets: simulated_targets()?,
        profile: Profile::Release,
    })?;
    let mut samples = Vec::new();
    for a in artifacts.iter().filter(|a| a.package == "aqueduct-device") {
        let target = aqueduct_sim::Target::from_name(a.gfx)
            .ok_or_else(|| format!("the simulator does not run {}", a.gfx))?;
        let bytes = std::fs::read(&a.path).map_err(|e| format!("{}: {e}", a.path.display()))?;
        samples.extend(sim_bench::run(target, &bytes)?);
    }
    samples.extend(sim_bench::run_gemm(2)?);
    samples.extend(sim_bench::run_rdna_gemms()?);
    for gemm in sim_bench::OUR_GEMMS {
        let gfx = gemm.0.name();
        let ours = artifacts
            .iter()
            .find(|a| a.package == "aqueduct-gemm" && a.gfx == gfx)
            .ok_or_else(|| format!("no aqueduct-gemm code object for {gfx}"))?;
        let bytes =
            std::fs::read(&ours.path).map_err(|e| format!("{}: {e}", ours.path.display()))?;
        samples.push(sim_bench::run_our_gemm(&bytes, gemm)?);
    }
    print!("{}", sim_bench::format_table(&samples));
    Ok(())
}

/// Runs this `cargo xtask` command line again as a release build: the
/// benchmarks' numbers mean nothing for debug builds of the code they time.
fn rerun_in_release(command: &str) -> Result<(), String> {
    let args = std::env::args_os()
        .skip(1)
        .map(|a| {
            a.into_string()
                .map_err(|a| format!("{command}: argument {a:?} is not UTF-8"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    eprintln!(
        "{command}: this xtask is a debug build; running `cargo run --release -p xtask -- {}`",
        args.join(" ")
    );
    let mut run = vec!["run", "--quiet", "--release", "-p", "xtask", "--"];
    run.extend(args.iter().map(String::as_str));
    cargo(&run)
}

/// What the benchmarks through the host shim share: the runtime library
/// (`--lib`, else a release build of the simulator's, with agents
/// gfx942,gfx90a unless AQUEDUCT_SIM_AGENTS says otherwise) and release
/// code objects for the simulated targets. `None`: the command re-ran
/// itself as a release build.
fn shim_bench_setup(
    command: &str,
    args: &ShimBenchArgs,
) -> Result<Option<(PathBuf, Vec<xtask::device_build::Artifact>)>, String> {
    const AGENTS: &str = aqueduct_sim::hsa::profile::AGENTS_ENV;
    if std::env::var_os(AGENTS).is_none_or(|v| v.is_empty()) {
        // SAFETY: the first thing the command does, on the main thread,
        // before it starts a thread (progress bars, cargo) or loads the
        // runtime that reads the variable; the release re-run inherits it.
        unsafe { std::env::set_var(AGENTS, "gfx942,gfx90a") };
    }
    if cfg!(debug_assertions) {
        // As for sim-bench: a debug shim and simulator time themselves.
        rerun_in_release(command)?;
        return Ok(None);
    }
    let library = match &args.lib {
        Some(path) => path.clone(),
        None => {
            // `cargo build -p` puts the cdylib beside this release binary:
            // <target>/release/, whatever the target directory.
            release_simulator()?
        }
    };
    let artifacts = build(&Options {
        targets: simulated_targets()?,
        profile: Profile::Release,
    })?;
    Ok(Some((library, artifacts)))
}

/// Builds the simulator's HSA runtime in release and returns its path:
/// `<target>/release/libaqueduct_sim.so`, in the target directory this
/// xtask was built in (`<target>/<profile>/xtask`), whatever its profile.
fn release_simulator() -> Result<PathBuf, String> {
    cargo(&["build", "--quiet", "--release", "-p", "aqueduct-sim"])?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find xtask: {e}"))?;
    let target = exe
        .parent()
        .and_then(std::path::Path::parent)
        .ok_or_else(|| format!("{} is not in a target directory", exe.display()))?;
    let path = target.join("release").join(format!(
        "{}aqueduct_sim{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "cargo built aqueduct-sim but {} is not there: pass --lib",
            path.display()
        ))
    }
}

/// The bytes of `package`'s code object for `gfx` among `artifacts`.
fn artifact_bytes(
    artifacts: &[xtask::device_build::Artifact],
    gfx: &str,
    package: &str,
) -> Result<Vec<u8>, String> {
    let a = artifacts
        .iter()
        .find(|a| a.gfx == gfx && a.package == package)
        .ok_or_else(|| format!("no {package} built for {gfx}"))?;
    std::fs::read(&a.path).map_err(|e| format!("{}: {e}", a.path.display()))
}

fn hsa_bench_command(args: &ShimBenchArgs) -> Result<(), String> {
    let Some((library, artifacts)) = shim_bench_setup("hsa-bench", args)? else {
        return Ok(());
    };
    let results = hsa_bench::run(&library, |gfx| {
        artifact_bytes(&artifacts, gfx, hsa_bench::KERNEL_PACKAGE)
    })?;
    print!("{}", hsa_bench::format_report(&library, &results));
    Ok(())
}

fn cmdbuf_bench_command(args: &ShimBenchArgs) -> Result<(), String> {
    let Some((library, artifacts)) = shim_bench_setup("cmdbuf-bench", args)? else {
        return Ok(());
    };
    let results = cmdbuf_bench::run(&library, |gfx, package| {
        artifact_bytes(&artifacts, gfx, package)
    })?;
    print!("{}", cmdbuf_bench::format_report(&library, &results));
    Ok(())
}

fn sched_bench_command(args: &ShimBenchArgs) -> Result<(), String> {
    let Some((library, artifacts)) = shim_bench_setup("sched-bench", args)? else {
        return Ok(());
    };
    let results = sched_bench::run(&library, |gfx| {
        artifact_bytes(&artifacts, gfx, "aqueduct-device")
    })?;
    print!("{}", sched_bench::format_report(&library, &results));
    Ok(())
}

fn catalog_command(args: &CatalogArgs) -> Result<(), String> {
    for path in xtask::catalog_write::from_description(&args.description, &args.out)? {
        println!("{}", path.display());
    }
    Ok(())
}

fn catalog_bench_command(args: &CatalogBenchArgs) -> Result<(), String> {
    if let Some(path) = &args.load_only {
        return xtask::catalog_bench::load_only(path);
    }
    if cfg!(debug_assertions) {
        return rerun_in_release("catalog-bench");
    }
    let path = match &args.catalog {
        Some(p) => p.clone(),
        None => xtask::rocblas_catalog::fetch()?,
    };
    xtask::catalog_bench::run(&path, args.queries)?;
    let (dir, version) = xtask::hipblaslt_catalog::fetch()?;
    xtask::catalog_bench::run_tensilelite(&dir, &version, args.queries)
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Build(args) => build(&args.options()).map(drop),
        Command::Report(args) => build(&args.options()).and_then(|a| print_report(&a)),
        Command::Run(args) => main_job::run(&main_job::RunArgs {
            job: args.gemm.job(),
            lib: args.lib,
        }),
        Command::Test => test(),
        Command::IsaTables => isa_tables(),
        Command::AtomicsIr => {
            let path = workspace_root().join(xtask::atomics_ir::PATH);
            std::fs::write(&path, xtask::atomics_ir::generate())
                .map_err(|e| format!("{}: {e}", path.display()))
        }
        Command::SimCoverage(args) => sim_coverage_command(&args),
        Command::SimBench => sim_bench_command(),
        Command::HsaBench(args) => hsa_bench_command(&args),
        Command::CmdbufBench(args) => cmdbuf_bench_command(&args),
        Command::SchedBench(args) => sched_bench_command(&args),
        Command::GemmReport(args) => gemm_report(&args),
        Command::Catalog(args) => catalog_command(&args),
        Command::CatalogBench(args) => catalog_bench_command(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
