//! `cargo xtask`: aqueduct's build and inspection commands.

use std::io::IsTerminal;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use xtask::device_build::{self, BuildOptions, DEVICE_CRATES, Event, Profile};
use xtask::targets::{self, DEFAULT_TARGETS, GfxTarget};
use xtask::{report, workspace_root};

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
        None => targets::parse_list(&DEFAULT_TARGETS.join(","))?,
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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("build") => parse_options(&args[1..]).and_then(|o| build(&o).map(drop)),
        Some("report" | "run") => parse_options(&args[1..])
            .and_then(|o| build(&o))
            .and_then(|a| print_report(&a)),
        Some("test") if args.len() == 1 => test(),
        Some("isa-tables") if args.len() == 1 => isa_tables(),
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
