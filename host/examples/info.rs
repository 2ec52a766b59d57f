//! The agents an HSA runtime reports, read through aqueduct's host API: for
//! each GPU its processor, ISA, compute units, PCI chip ID and whether the
//! device library is built for it; for every agent its memory pools. (The
//! `aqueduct info` binary prints the full rocminfo-like list.)
//!
//! ```sh
//! cargo run -p aqueduct --example info           # ROCr, on a machine with an AMD GPU
//! cargo build -p aqueduct-sim                    # or the simulator's runtime:
//! AQUEDUCT_HSA_LIB=target/debug/libaqueduct_sim.so AQUEDUCT_SIM_AGENTS=mi300x,mi210 \
//!   cargo run -p aqueduct --example info
//! ```

use aqueduct::agent::Agent;
use aqueduct::device_code;
use aqueduct::{LoadOptions, System};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `$AQUEDUCT_HSA_LIB`, else ROCr from `$ROCM_PATH/lib` or the system.
    let system = System::open(&LoadOptions::default())?;
    println!("HSA runtime: {}", system.runtime().path());
    for agent in system.agents()? {
        let info = agent.info();
        match &info.gpu {
            Some(gpu) => {
                println!(
                    "GPU {} ({}): {}, {} CUs, chip ID {:#06x}, wave{}, PCI {}",
                    info.name,
                    gpu.product_name,
                    gpu.isa,
                    gpu.compute_units,
                    gpu.chip_id,
                    info.wavefront_size,
                    gpu.pci
                );
                // Where `device_code::load_device_library` looks for it.
                let library = device_code::path(&info.name, device_code::DEVICE_LIBRARY);
                let built = if library.exists() { "" } else { " (not built)" };
                println!("  device library: {}{built}", library.display());
            }
            None => println!("{:?} agent {}", info.kind, info.name),
        }
        print_pools(&agent)?;
    }
    Ok(())
}

/// One line per memory pool: segment, granularity, size, and whether
/// kernel arguments may live there.
fn print_pools(agent: &Agent) -> Result<(), aqueduct::Error> {
    for pool in agent.memory_pools()? {
        let p = pool.info();
        let grain = match (p.coarse_grained, p.fine_grained) {
            (true, _) => " coarse-grained",
            (_, true) => " fine-grained",
            _ => "",
        };
        let kernarg = if p.kernarg { ", kernarg" } else { "" };
        println!("  pool: {:?}{grain}, {}{kernarg}", p.segment, size(p.size));
    }
    Ok(())
}

/// `bytes` in the largest binary unit that keeps it at least 1.
fn size(bytes: u64) -> String {
    let (scale, unit) = [(30, "GiB"), (20, "MiB"), (10, "KiB")]
        .into_iter()
        .find(|&(shift, _)| bytes >> shift > 0)
        .unwrap_or((0, "bytes"));
    format!("{} {unit}", bytes >> scale)
}
