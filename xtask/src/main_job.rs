//! `cargo xtask run`: the main job on a fresh machine.
//!
//! 1. The HSA runtime: `--lib` if given; else ROCr where the host shim
//!    finds it and it reports a GPU; else — saying so in one line — the
//!    simulator's runtime (`libaqueduct_sim.so`, built in release as
//!    needed) with one simulated MI300X unless `AQUEDUCT_SIM_AGENTS` says
//!    otherwise. From there on the path is the same.
//! 2. The device code the chosen agent needs (its gfx, the device library
//!    and the GEMM kernels with their catalog, release profile), with a
//!    progress bar per crate and target; nothing is rebuilt when nothing
//!    changed.
//! 3. `aqueduct gemm` in release (an optimised host for the f64 reference)
//!    with the same options and the chosen runtime: the job itself
//!    (`aqueduct::job`), which verifies D and exits non-zero on a
//!    mismatch.

use std::path::PathBuf;

use aqueduct::job::{GemmJob, trans_name, type_name};
use aqueduct::{LoadOptions, System};
use xtask::device_build::{GEMM_PACKAGE, Profile};
use xtask::targets;

/// `cargo xtask run`'s options.
pub struct RunArgs {
    /// The GEMM and the device string.
    pub job: GemmJob,
    /// An explicit HSA runtime to load instead of looking for ROCr.
    pub lib: Option<PathBuf>,
}

/// Runs the main job.
pub fn run(args: &RunArgs) -> Result<(), String> {
    let library = match &args.lib {
        Some(path) => path.clone(),
        None => match real_gpu() {
            Ok(path) => path,
            Err(why) => {
                eprintln!("no AMD GPU here ({why}): running on aqueduct's simulator instead");
                // One simulated MI300X unless AQUEDUCT_SIM_AGENTS says
                // otherwise (aqueduct_sim::hsa::profile::DEFAULT_AGENTS).
                crate::release_simulator()?
            }
        },
    };
    let gfx = agent_gfx(&library, &args.job.device)?;
    let target = targets::target(&gfx).ok_or_else(|| {
        format!(
            "{} is a {gfx}, which aqueduct does not build for (it builds {})",
            args.job.device,
            targets::supported_names()
        )
    })?;
    crate::build_only(
        &crate::Options {
            targets: vec![target],
            profile: Profile::Release,
        },
        &[aqueduct::device_code::DEVICE_LIBRARY, GEMM_PACKAGE],
    )?;
    let job = &args.job;
    let (m, n, k, batch) = (
        job.m.to_string(),
        job.n.to_string(),
        job.k.to_string(),
        job.batch.to_string(),
    );
    let lib = library.display().to_string();
    let mut gemm = vec![
        "run",
        "--quiet",
        "--release",
        "-p",
        "aqueduct",
        "--bin",
        "aqueduct",
        "--",
        "gemm",
        "--lib",
        &lib,
        "--device",
        &job.device,
        "--m",
        &m,
        "--n",
        &n,
        "--k",
        &k,
        "--type",
        type_name(job.input),
        "--trans",
        trans_name(job.trans_a, job.trans_b),
        "--batch",
        &batch,
    ];
    let trace = job.trace.as_ref().map(|p| p.display().to_string());
    if let Some(trace) = &trace {
        gemm.extend(["--trace", trace]);
    }
    if job.wrong_reference {
        gemm.push("--wrong-reference");
    }
    // The job's own exit status is the command's: 1 on a mismatch, whose
    // message the job printed (not repeated as a failed cargo command).
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("$ cargo {}", gemm.join(" "));
    let status = std::process::Command::new(cargo)
        .current_dir(xtask::workspace_root())
        .args(&gemm)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => std::process::exit(code),
        None => Err(format!("aqueduct gemm ended by a signal ({status})")),
    }
}

/// ROCr's library when the host shim finds it and it reports a GPU agent;
/// else why not.
fn real_gpu() -> Result<PathBuf, String> {
    let system = System::open(&LoadOptions::default()).map_err(|e| match e {
        // The one line: the full text names hsa_init's status too.
        aqueduct::Error::NoGpu { path, kfd, .. } => {
            format!("{kfd} is missing; {path} has no GPU to offer")
        }
        e => e
            .to_string()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    })?;
    let gpus = system.gpus().map_err(|e| e.to_string())?;
    if gpus.is_empty() {
        return Err(format!("{} reports no GPU agent", system.runtime().path()));
    }
    if system.runtime().simulator_kernel_stats().is_some() {
        // AQUEDUCT_HSA_LIB points at the simulator: use it as it is.
        eprintln!("{} is aqueduct's simulator", system.runtime().path());
    }
    Ok(PathBuf::from(system.runtime().path()))
}

/// The gfx of the first GPU `device` names on the runtime at `library`.
fn agent_gfx(library: &std::path::Path, device: &str) -> Result<String, String> {
    let system = System::open(&LoadOptions::library(library))
        .map_err(|e| format!("cannot open {}: {e}", library.display()))?;
    let agents = system.select(device).map_err(|e| e.to_string())?;
    let gpu = agents
        .iter()
        .find(|a| a.is_gpu())
        .ok_or_else(|| format!("{device} names no GPU agent on {}", library.display()))?;
    let info = gpu.info();
    let product = info.gpu.as_ref().map_or("", |g| g.product_name.as_str());
    eprintln!("agent: {product} ({})", info.name);
    Ok(info.name.clone())
}
