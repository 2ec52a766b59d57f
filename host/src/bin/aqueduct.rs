//! `aqueduct`: command-line access to the host layer.
//!
//! - `aqueduct info` prints the system's agents the way rocminfo does;
//! - `aqueduct gemm` runs the main job (`aqueduct::job`): one GEMM on a GPU
//!   agent, checked against the CPU, and prints its report;
//! - `aqueduct select` asks a solution catalog which kernel it picks for a
//!   GEMM on hardware described by flags (no runtime, no GPU), and why.
//!
//! Usage errors exit with status 2 and clap's message; a failure of the run
//! (no AMD GPU, no runtime, a result that differs from the CPU's, no
//! solution) with status 1 and `aqueduct: <reason>`.

use std::path::PathBuf;
use std::process::ExitCode;

use aqueduct::agent::{Agent, AgentKind};
use aqueduct::catalog::{Catalog, DataType, Hardware};
use aqueduct::cli::{GemmArgs, OperandArgs, dimension};
use aqueduct::{LoadOptions, System};
use clap::{Args, Parser, Subcommand};

/// Command-line access to aqueduct's host layer.
#[derive(Parser)]
#[command(name = "aqueduct", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the system's agents the way rocminfo does
    ///
    /// Name, ISA, chip ID, PCI address, UUID, CUs, SIMDs, waves, LDS,
    /// workgroup, grid and queue limits, memory pools. Without an AMD GPU
    /// (ROCr loads but hsa_init fails) it exits with status 1 and says so.
    #[command(verbatim_doc_comment)]
    Info {
        #[command(flatten)]
        runtime: RuntimeArgs,
        /// Only the GPUs it names: amdgpu, amdgpu:N, amdgpu://GPU-<uuid>[,N...]
        #[arg(long, value_name = "STRING")]
        device: Option<String>,
    },
    /// Run one GEMM on a GPU agent, check it against the CPU, report
    ///
    /// The main job (aqueduct::job): the kernel the agent's catalog selects,
    /// issued through the device scheduler, D compared with an f64 CPU
    /// reference. A D that differs beyond the tolerance exits with status 1,
    /// naming the worst element.
    #[command(verbatim_doc_comment)]
    Gemm {
        #[command(flatten)]
        runtime: RuntimeArgs,
        #[command(flatten)]
        gemm: GemmArgs,
    },
    /// Show which solution a catalog selects for a GEMM, and why
    ///
    /// The hardware is described by the flags, not asked of a runtime, so
    /// any GPU's choice can be seen on any machine. Prints the solution's
    /// name and properties, then the catalog's trace (what
    /// AQUEDUCT_CATALOG_DEBUG=1 prints): every predicate evaluated, the
    /// hardware row and the table entry that chose it. No solution: status 1.
    #[command(verbatim_doc_comment)]
    Select(SelectArgs),
}

/// Where the HSA runtime comes from.
#[derive(Args)]
struct RuntimeArgs {
    /// Load this HSA runtime (default: $AQUEDUCT_HSA_LIB, $ROCM_PATH/lib,
    /// the system path)
    #[arg(long, value_name = "PATH")]
    lib: Option<PathBuf>,
}

impl RuntimeArgs {
    fn open(&self) -> Result<System, String> {
        let options = match &self.lib {
            Some(path) => LoadOptions::library(path),
            None => LoadOptions::default(),
        };
        System::open(&options).map_err(|e| e.to_string())
    }
}

#[derive(Args)]
struct SelectArgs {
    /// The catalog (a lazy catalog's children are read beside it)
    #[arg(long, value_name = "FILE")]
    catalog: PathBuf,
    /// The processor, target features allowed: gfx942, gfx90a:xnack-
    #[arg(long, value_name = "GFX")]
    gfx: String,
    /// Compute units (default: unknown, which only rows that name no CU
    /// count match)
    #[arg(long, value_name = "N")]
    cu: Option<u32>,
    /// PCI chip ID: hexadecimal with 0x (0x74a1), or decimal
    #[arg(long, value_name = "ID", value_parser = parse_chip)]
    chip: Option<u32>,
    #[command(flatten)]
    operands: OperandArgs,
    /// C and D's element type (default: the input type; f32 for fp8)
    #[arg(long, value_name = "TYPE", value_parser = aqueduct::job::parse_type)]
    out: Option<DataType>,
    /// Ask for a block-scaled GEMM (MXFP8: fp8 inputs with an E8M0 scale
    /// per 32 elements of K of each row of A and column of B)
    #[arg(long)]
    block_scales: bool,
    /// Rows of D
    #[arg(value_parser = dimension())]
    m: u32,
    /// Columns of D
    #[arg(value_parser = dimension())]
    n: u32,
    /// The inner dimension
    #[arg(value_parser = dimension())]
    k: u32,
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Info { runtime, device } => info(&runtime, device.as_deref()),
        Command::Gemm { runtime, gemm } => run_gemm(&runtime, &gemm),
        Command::Select(args) => select(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("aqueduct: {message}");
            ExitCode::FAILURE
        }
    }
}

fn info(runtime: &RuntimeArgs, device: Option<&str>) -> Result<(), String> {
    let system = runtime.open()?;
    let agents = match device {
        Some(d) => system.select(d),
        None => system.agents(),
    }
    .map_err(|e| e.to_string())?;
    println!("HSA runtime: {}", system.runtime().path());
    for (i, agent) in agents.iter().enumerate() {
        print_agent(i, agent);
    }
    Ok(())
}

fn run_gemm(runtime: &RuntimeArgs, gemm: &GemmArgs) -> Result<(), String> {
    let system = runtime.open()?;
    let report = aqueduct::job::run(&system, &gemm.job()).map_err(|e| e.to_string())?;
    println!("{report}");
    Ok(())
}

/// `0x74a1` (hexadecimal, as rocminfo and the catalogs write chip IDs) or
/// `29857`.
fn parse_chip(text: &str) -> Result<u32, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|e| format!("{e}: a PCI chip ID is hexadecimal with 0x (0x74a1) or decimal"))
}

fn select(args: &SelectArgs) -> Result<(), String> {
    // The catalog's errors name the file (and the place in it).
    let catalog = Catalog::open(&args.catalog).map_err(|e| e.to_string())?;
    let hardware = Hardware::new(&args.gfx, args.cu.unwrap_or(0), args.chip);
    // The problem exactly as the main job poses it (types, scalars), so the
    // answer is the kernel `aqueduct gemm` would run.
    let mut gemm = args.operands.job(args.m, args.n, args.k).gemm();
    if let Some(output) = args.out {
        gemm.output = output;
    }
    if args.block_scales {
        gemm = gemm.with_block_scales();
    }
    // What no kernel could run (block scales on other inputs than FP8, ...)
    // is refused before the catalog is asked.
    gemm.validate().map_err(|e| e.to_string())?;
    let (selected, trace) = gemm.select_traced(&catalog, &hardware);
    let selected = selected.map_err(|e| e.to_string())?;
    let Some(s) = selected else {
        print!("{trace}");
        return Err(aqueduct::Error::NoGemmSolution {
            problem: gemm.to_string(),
            hardware: format!(
                "{} ({}, chip {})",
                hardware.arch_name,
                args.cu
                    .map_or("CU count unknown".into(), |n| format!("{n} CUs")),
                args.chip.map_or("unknown".into(), |c| format!("{c:#x}"))
            ),
            catalog: args.catalog.clone(),
        }
        .to_string());
    };
    let sm = &s.solution.size_mapping;
    println!("solution: {}", s.solution.name);
    if s.solution.kernel() != &*s.solution.name {
        println!("  kernel:       {}", s.solution.kernel());
    }
    println!("  index:        {}", s.solution.index);
    println!(
        "  macro tile:   {} × {}",
        sm.macro_tile[0], sm.macro_tile[1]
    );
    println!(
        "  workgroup:    {} × {} × {}",
        sm.work_group[0], sm.work_group[1], sm.work_group[2]
    );
    println!("  depth U:      {}", sm.depth_u);
    println!("  fitness:      {}", s.fitness);
    if let Some(file) = &s.file.path {
        println!("  catalog file: {}", file.display());
    }
    if let Some(code_object) = s.code_object(&hardware) {
        println!("  code object:  {}", code_object.display());
    }
    println!();
    print!("{trace}");
    Ok(())
}

fn print_agent(index: usize, agent: &Agent) {
    let info = agent.info();
    let kind = match info.kind {
        AgentKind::Cpu => "CPU".to_string(),
        AgentKind::Gpu => "GPU".to_string(),
        AgentKind::Dsp => "DSP".to_string(),
        AgentKind::Other(n) => format!("type {n}"),
    };
    println!("*******\nAgent {}\n*******", index + 1);
    println!("  Name:                    {}", info.name);
    println!("  Vendor Name:             {}", info.vendor);
    println!("  Device Type:             {kind}");
    println!("  Node:                    {}", info.node);
    print_pools(agent);
    let Some(gpu) = &info.gpu else { return };
    println!("  Marketing Name:          {}", gpu.product_name);
    println!("  Uuid:                    {}", gpu.uuid);
    println!("  ISA:                     {}", gpu.isa);
    println!("  Chip ID:                 {:#06x}", gpu.chip_id);
    println!("  PCI Address:             {}", gpu.pci);
    println!("  Compute Units:           {}", gpu.compute_units);
    println!("  SIMDs per CU:            {}", gpu.simds_per_cu);
    println!("  Max Waves per CU:        {}", gpu.max_waves_per_cu);
    println!("  Wavefront Size:          {}", info.wavefront_size);
    println!("  Max Clock (MHz):         {}", gpu.max_clock_mhz);
    println!("  Cacheline Size:          {}", gpu.cacheline_size);
    println!("  LDS per Workgroup:       {} bytes", gpu.lds_size);
    println!(
        "  Workgroup Max Size:      {} (per dim {} x {} x {})",
        info.workgroup_max_size,
        info.workgroup_max_dim[0],
        info.workgroup_max_dim[1],
        info.workgroup_max_dim[2]
    );
    println!(
        "  Grid Max Size:           {} (per dim {} x {} x {})",
        info.grid_max_size, info.grid_max_dim[0], info.grid_max_dim[1], info.grid_max_dim[2]
    );
    println!("  Queues Max:              {}", info.queues_max);
    println!(
        "  Queue Size:              {}..={} packets",
        info.queue_min_size, info.queue_max_size
    );
}

fn print_pools(agent: &Agent) {
    let pools = match agent.memory_pools() {
        Ok(p) => p,
        Err(e) => {
            println!("  Memory Pools:            (unavailable: {e})");
            return;
        }
    };
    println!("  Memory Pools:");
    for (i, pool) in pools.iter().enumerate() {
        let p = pool.info();
        let mut flags = Vec::new();
        for (set, name) in [
            (p.coarse_grained, "COARSE GRAINED"),
            (p.fine_grained, "FINE GRAINED"),
            (p.kernarg, "KERNARG"),
        ] {
            if set {
                flags.push(name);
            }
        }
        println!(
            "    Pool {}: {:?} {} {} KB, alloc {}, granule {} B, alignment {} B, accessible by all: {}",
            i + 1,
            p.segment,
            flags.join(", "),
            p.size / 1024,
            if p.alloc_allowed {
                "allowed"
            } else {
                "not allowed"
            },
            p.granule,
            p.alignment,
            p.accessible_by_all
        );
    }
}
