//! A command buffer on the first GPU agent: recorded once with binding-table
//! references, replayed on two sets of buffers, each run one submission and
//! one wait.
//!
//! ```sh
//! cargo xtask build --release                              # the device library
//! cargo run -p aqueduct --example command_buffer           # ROCr, with an AMD GPU
//! cargo build -p aqueduct-sim                              # or the simulator's runtime:
//! AQUEDUCT_HSA_LIB=target/debug/libaqueduct_sim.so cargo run -p aqueduct --example command_buffer
//! ```

use std::time::Duration;

use aqueduct::command_buffer::{BindingTableEntry, BufferRef, Ordering};
use aqueduct::device_code::load_device_library;
use aqueduct::{CommandBufferBuilder, CommandQueue, LoadOptions, PoolKind, System, Workgroups};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let system = System::open(&LoadOptions::default())?;
    let gpu = system.gpus()?.into_iter().next().ok_or("no GPU agent")?;
    let (bytes, _) = load_device_library(&gpu.info().name)?;
    let library = gpu.load_code_object(&bytes)?;
    let queue = gpu.create_queue(1024)?;

    // Record: fill slot 0 with 1.0f32, saxpy slot 1 += 3 · slot 0 after a
    // barrier, then copy slot 1 into slot 2. At most 8 commands.
    const N: u64 = 1000;
    let saxpy = library.kernel("saxpy_f32")?;
    let mut recording = CommandBufferBuilder::new(&queue, 8)?;
    recording.fill(BufferRef::binding(0, 0, 4 * N), &1.0f32.to_le_bytes())?;
    recording.set_ordering(Ordering::AGENT.with_barrier());
    let mut args = saxpy.kernargs()?;
    args.set(0, N)?.set(1, 3.0f32)?;
    args.bind(2, BufferRef::binding(0, 0, 4 * N))?; // x
    args.bind(3, BufferRef::binding(1, 0, 4 * N))?; // y
    recording.dispatch(
        &saxpy,
        Workgroups::linear(N.div_ceil(256) as u32, 256),
        &args,
    )?;
    recording.copy(
        BufferRef::binding(1, 0, 4 * N),
        BufferRef::binding(2, 0, 4 * N),
    )?;
    let commands = recording.finish()?;
    println!("{commands:?}");

    // Replay on two sets of buffers in host-visible memory.
    let host = system
        .agents()?
        .into_iter()
        .find(|a| !a.is_gpu())
        .ok_or("no CPU agent")?
        .memory_pool(PoolKind::FineGrained)?;
    let mut runner = CommandQueue::new(&queue, &library, 1 << 16)?;
    for start in [10.0f32, -2.0] {
        let x = host.alloc_host::<f32>(N as usize)?;
        let mut y = host.alloc_host::<f32>(N as usize)?;
        let out = host.alloc_host::<f32>(N as usize)?;
        y.fill(start);
        let table: Vec<BindingTableEntry> = [x.address(), y.address(), out.address()]
            .into_iter()
            .map(|address| BindingTableEntry {
                address,
                length: 4 * N,
            })
            .collect();
        runner
            .submit(&commands, &table)?
            .wait(Duration::from_secs(60))?;
        let want = start + 3.0;
        let wrong = out.iter().filter(|&&v| v != want).count();
        println!(
            "y = {start} + 3 · 1: {} of {N} elements are {want}",
            N as usize - wrong
        );
        if wrong != 0 {
            return Err(format!("{wrong} elements differ from {want}").into());
        }
    }
    Ok(())
}
