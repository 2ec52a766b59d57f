//! `aqueduct`: command-line access to the host layer.
//!
//! `aqueduct info [--lib PATH] [--device STRING]` prints the system's agents
//! the way rocminfo does, or exits with status 1 and the reason (for example
//! that the machine has no AMD GPU).

use std::process::ExitCode;

use aqueduct::agent::{Agent, AgentKind};
use aqueduct::{LoadOptions, System};

const USAGE: &str = "usage: aqueduct info [--lib PATH] [--device STRING]\n\
  --lib PATH        load this HSA runtime (default: $AQUEDUCT_HSA_LIB, $ROCM_PATH/lib, the system path)\n\
  --device STRING   only the GPUs it names: amdgpu, amdgpu:N, amdgpu://GPU-<uuid>[,N...]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("aqueduct: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let (command, rest) = args.split_first().ok_or_else(|| USAGE.to_string())?;
    if command != "info" {
        return Err(format!("unknown command {command:?}\n{USAGE}"));
    }
    let mut options = LoadOptions::default();
    let mut device = None;
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--lib" => options = LoadOptions::library(value("--lib")?),
            "--device" => device = Some(value("--device")?),
            other => return Err(format!("unknown option {other:?}\n{USAGE}")),
        }
    }
    let system = System::open(&options).map_err(|e| e.to_string())?;
    let agents = match &device {
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
