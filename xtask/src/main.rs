//! `cargo xtask`: aqueduct's build and inspection commands.

mod cmdbuf_bench;
mod hsa_bench;
mod sched_bench;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use xtask::device_build::{self, BuildOptions, DEVICE_CRATES, Event, Profile};
use xtask::targets::{self, DEFAULT_TARGETS, GfxTarget};
use xtask::{report, sim_bench, sim_coverage, workspace_root};

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  build     compile every device crate for each gfx target into
            target/amdgpu/<gfx>/<crate>.hsaco
  report    build, then print one row per kernel: registers, LDS, scratch,
            spills, dynamic stack and occupancy
  run       the main job: build all targets and print the report
  test      the whole test suite: rustfmt check, clippy, cargo test
  isa-tables  regenerate sim/src/decode/opcodes.rs from llvm-objdump
  atomics-ir  regenerate device/runtime/llvm/atomics.ll (the device
            library's scoped atomics as LLVM IR)
  sim-coverage  build for gfx90a and gfx942 (profiles device-dev and device)
            and list each code object's instructions and whether the
            simulator implements them; fails naming any it does not
  sim-bench   build (profile device) and time fill, copy and a 1 Mi-element
            saxpy on the simulator on one thread, AMD's f16 GEMM kernel at
            512³ on one and two, and ours on one, checked against the CPU;
            runs itself as a release build (the numbers mean nothing in debug)
  hsa-bench   issue 6's benchmarks through the host shim on the simulator's
            HSA runtime (agents gfx942,gfx90a unless AQUEDUCT_SIM_AGENTS
            says otherwise): round trip of an empty kernel, batch
            throughput, host-side ns per packet (target ≤ 100) and body
            build ns; runs itself and the simulator as release builds
  cmdbuf-bench  issue 19's command-buffer benchmarks through the host shim
            on the simulator's HSA runtime: host ns per recorded dispatch,
            fill and copy (10k of each; goals ≤ 50 and ≤ 20 ns), the device
            issue's wave-instructions per command for 1,000-command blocks
            grouped by kind and in recording order (goal ≤ 2), host round
            trips per block; runs itself and the simulator as release builds
  sched-bench  issue 20's device-scheduler benchmarks through the host shim
            on the simulator's HSA runtime: ticks for chains of 10, 100 and
            1,000 dependent entries (goal ≤ N + 1) and for as many entries
            released together (goal ≤ N/8 + 2), host calls, wave-instructions
            per tick, host ns per submitted entry; runs itself and the
            simulator as release builds

  gemm-report  build (profile device) for gfx90a and gfx942 and compare our
            MFMA kernels' main loops with AMD's rocBLAS kernels of the same
            types and macro-tiles (gfx90a; fetched from Debian and cached):
            instructions, MFMA share, load and LDS widths, waits per
            iteration, registers, LDS, occupancy, scratch

  catalog <description.yaml> --out <dir>
            write Tensile-layout catalogs (lazy or eager, MessagePack or
            YAML) from a description file (format: xtask/src/catalog_write.rs)
  catalog-bench [--catalog <path>] [--queries <n>]
            issue 8's catalog benchmarks on rocBLAS's 117 MB catalog
            (fetched from Debian trixie and cached; see
            xtask/src/rocblas_catalog.rs): eager load time and peak memory
            against Python's msgpack, selection with and without the result
            cache, lazy loading; runs itself as a release build

options (hsa-bench, cmdbuf-bench, sched-bench):
  --lib <path>   the HSA runtime to load (default: a release build of
                 libaqueduct_sim.so, built first)

options (sim-coverage):
  --release      only the `device` profile (the one the tests run)

options (build, report, run):
  --gfx <list>   comma-separated gfx targets (default: gfx90a,gfx942,gfx950,gfx1100,gfx1201)
  --release      build device code without debug assertions (profile `device`);
                 the default `device-dev` profile is optimised too, with
                 debug assertions and overflow checks";

struct Options {
    targets: Vec<&'static GfxTarget>,
    profile: Profile,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut targets = None;
    let mut profile = Profile::Dev;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--release" => profile = Profile::Release,
            "--gfx" => {
                let list = it
                    .next()
                    .ok_or("--gfx needs a comma-separated list of targets")?;
                targets = Some(targets::parse_list(list)?);
            }
            other => match other.strip_prefix("--gfx=") {
                Some(list) => targets = Some(targets::parse_list(list)?),
                None => return Err(format!("unknown option `{other}`\n\n{USAGE}")),
            },
        }
    }
    let targets = match targets {
        Some(t) => t,
        None => DEFAULT_TARGETS.iter().collect(),
    };
    Ok(Options { targets, profile })
}

fn build(opts: &Options) -> Result<Vec<device_build::Artifact>, String> {
    let total = opts
        .targets
        .iter()
        .map(|t| {
            DEVICE_CRATES
                .iter()
                .filter(|k| k.builds_for(t.name))
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
    let result = device_build::build(&options, |event| match event {
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
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("$ cargo {}", args.join(" "));
    let status = std::process::Command::new(cargo)
        .current_dir(workspace_root())
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
fn gemm_report() -> Result<(), String> {
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
            let bytes = std::fs::read(&amd).map_err(|e| format!("{}: {e}", amd.display()))?;
            let co = aqueduct_abi::code_object::CodeObject::parse(&bytes)
                .map_err(|e| format!("{}: {e}", amd.display()))?;
            let amd_kernels =
                gemm_report::with_tiles(co.kernels.iter().map(|k| k.metadata.name.as_str()));
            rows.extend(gemm_report::rows(
                "amd",
                &amd,
                &objdump,
                target,
                &amd_kernels,
            )?);
        }
    }
    print!("{}", gemm_report::format(&rows));
    Ok(())
}

fn simulated_targets() -> Result<Vec<&'static GfxTarget>, String> {
    targets::parse_list(&sim_coverage::SIMULATED_TARGETS.join(","))
}

fn sim_coverage_command(args: &[String]) -> Result<(), String> {
    let profiles = match args {
        [] => vec![Profile::Dev, Profile::Release],
        [r] if r == "--release" => vec![Profile::Release],
        _ => return Err(format!("sim-coverage takes only --release\n\n{USAGE}")),
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

fn sim_bench_command(args: &[String]) -> Result<(), String> {
    if !args.is_empty() {
        return Err(format!("sim-bench takes no options\n\n{USAGE}"));
    }
    if cfg!(debug_assertions) {
        // `cargo xtask` is a debug build, and so is the simulator in it:
        // an unoptimised interpreter is ~17× slower and its numbers say
        // nothing. A profile override for aqueduct-sim would change every
        // debug build of the workspace; running ourselves in release does not.
        return rerun_in_release("sim-bench", &[]);
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
    let ours = artifacts
        .iter()
        .find(|a| a.package == "aqueduct-gemm" && a.gfx == "gfx90a")
        .ok_or("no aqueduct-gemm code object for gfx90a")?;
    let bytes = std::fs::read(&ours.path).map_err(|e| format!("{}: {e}", ours.path.display()))?;
    for gemm in sim_bench::OUR_GEMMS {
        samples.push(sim_bench::run_our_gemm(&bytes, gemm)?);
    }
    print!("{}", sim_bench::format_table(&samples));
    Ok(())
}

/// Runs `cargo xtask <command> <args>` again as a release build: the
/// benchmarks' numbers mean nothing for debug builds of the code they time.
fn rerun_in_release(command: &str, args: &[String]) -> Result<(), String> {
    eprintln!(
        "{command}: this xtask is a debug build; running `cargo run --release -p xtask -- {command}`"
    );
    let mut run = vec!["run", "--quiet", "--release", "-p", "xtask", "--", command];
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
    args: &[String],
) -> Result<Option<(PathBuf, Vec<xtask::device_build::Artifact>)>, String> {
    let library = match args {
        [] => None,
        [flag, path] if flag == "--lib" => Some(PathBuf::from(path)),
        _ => return Err(format!("{command} takes only --lib <path>\n\n{USAGE}")),
    };
    const AGENTS: &str = aqueduct_sim::hsa::profile::AGENTS_ENV;
    if std::env::var_os(AGENTS).is_none_or(|v| v.is_empty()) {
        // SAFETY: the first thing the command does, on the main thread,
        // before it starts a thread (progress bars, cargo) or loads the
        // runtime that reads the variable; the release re-run inherits it.
        unsafe { std::env::set_var(AGENTS, "gfx942,gfx90a") };
    }
    if cfg!(debug_assertions) {
        // As for sim-bench: a debug shim and simulator time themselves.
        rerun_in_release(command, args)?;
        return Ok(None);
    }
    let library = match library {
        Some(path) => path,
        None => {
            // `cargo build -p` puts the cdylib beside this release binary:
            // <target>/release/, whatever the target directory.
            cargo(&["build", "--quiet", "--release", "-p", "aqueduct-sim"])?;
            let exe = std::env::current_exe().map_err(|e| format!("cannot find xtask: {e}"))?;
            exe.with_file_name(format!(
                "{}aqueduct_sim{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ))
        }
    };
    let artifacts = build(&Options {
        targets: simulated_targets()?,
        profile: Profile::Release,
    })?;
    Ok(Some((library, artifacts)))
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

fn hsa_bench_command(args: &[String]) -> Result<(), String> {
    let Some((library, artifacts)) = shim_bench_setup("hsa-bench", args)? else {
        return Ok(());
    };
    let results = hsa_bench::run(&library, |gfx| {
        artifact_bytes(&artifacts, gfx, hsa_bench::KERNEL_PACKAGE)
    })?;
    print!("{}", hsa_bench::format_report(&library, &results));
    Ok(())
}

fn cmdbuf_bench_command(args: &[String]) -> Result<(), String> {
    let Some((library, artifacts)) = shim_bench_setup("cmdbuf-bench", args)? else {
        return Ok(());
    };
    let results = cmdbuf_bench::run(&library, |gfx| {
        artifact_bytes(&artifacts, gfx, "aqueduct-device")
    })?;
    print!("{}", cmdbuf_bench::format_report(&library, &results));
    Ok(())
}

fn sched_bench_command(args: &[String]) -> Result<(), String> {
    let Some((library, artifacts)) = shim_bench_setup("sched-bench", args)? else {
        return Ok(());
    };
    let results = sched_bench::run(&library, |gfx| {
        artifact_bytes(&artifacts, gfx, "aqueduct-device")
    })?;
    print!("{}", sched_bench::format_report(&library, &results));
    Ok(())
}

fn catalog_command(args: &[String]) -> Result<(), String> {
    let (desc, out) = match args {
        [desc, flag, out] if flag == "--out" => (PathBuf::from(desc), PathBuf::from(out)),
        _ => {
            return Err(format!(
                "catalog takes <description.yaml> --out <dir>\n\n{USAGE}"
            ));
        }
    };
    for path in xtask::catalog_write::from_description(&desc, &out)? {
        println!("{}", path.display());
    }
    Ok(())
}

fn catalog_bench_command(args: &[String]) -> Result<(), String> {
    if let [flag, path] = args
        && flag == "--load-only"
    {
        return xtask::catalog_bench::load_only(std::path::Path::new(path));
    }
    let mut catalog = None;
    let mut queries = 2000;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--catalog" => {
                catalog = Some(PathBuf::from(it.next().ok_or("--catalog needs a path")?))
            }
            "--queries" => {
                queries = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--queries needs a number")?
            }
            other => return Err(format!("unknown option `{other}`\n\n{USAGE}")),
        }
    }
    if cfg!(debug_assertions) {
        return rerun_in_release("catalog-bench", args);
    }
    let path = match catalog {
        Some(p) => p,
        None => xtask::rocblas_catalog::fetch()?,
    };
    xtask::catalog_bench::run(&path, queries)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") => parse_options(&args[1..]).and_then(|o| build(&o).map(drop)),
        Some("report" | "run") => parse_options(&args[1..])
            .and_then(|o| build(&o))
            .and_then(|a| print_report(&a)),
        Some("test") if args.len() == 1 => test(),
        Some("isa-tables") if args.len() == 1 => isa_tables(),
        Some("atomics-ir") if args.len() == 1 => {
            let path = workspace_root().join(xtask::atomics_ir::PATH);
            std::fs::write(&path, xtask::atomics_ir::generate())
                .map_err(|e| format!("{}: {e}", path.display()))
        }
        Some("sim-coverage") => sim_coverage_command(&args[1..]),
        Some("sim-bench") => sim_bench_command(&args[1..]),
        Some("hsa-bench") => hsa_bench_command(&args[1..]),
        Some("cmdbuf-bench") => cmdbuf_bench_command(&args[1..]),
        Some("sched-bench") => sched_bench_command(&args[1..]),
        Some("catalog") => catalog_command(&args[1..]),
        Some("gemm-report") if args.len() == 1 => gemm_report(),
        Some("catalog-bench") => catalog_bench_command(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
        None => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
