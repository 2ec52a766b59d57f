//! The device scheduler on the first GPU agent: three runs of one command
//! buffer, each waiting for the semaphore value the one before signals,
//! the first held back until the host signals; one submit burst, one
//! host wait, no host round trip in between.
//!
//! ```sh
//! cargo xtask build --release                              # the device library
//! cargo run -p aqueduct --example scheduler                # ROCr, with an AMD GPU
//! cargo build -p aqueduct-sim                              # or the simulator's runtime:
//! AQUEDUCT_HSA_LIB=target/debug/libaqueduct_sim.so cargo run -p aqueduct --example scheduler
//! ```

use std::time::Duration;

use aqueduct::command_buffer::{BindingTableEntry, BufferRef};
use aqueduct::device_code::load_device_library;
use aqueduct::scheduler::PhysicalDeviceOptions;
use aqueduct::{LoadOptions, PhysicalDevice, PoolKind, System, Workgroups};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let system = System::open(&LoadOptions::default())?;
    let gpu = system.gpus()?.into_iter().next().ok_or("no GPU agent")?;
    let (bytes, _) = load_device_library(&gpu.info().name)?;
    let library = gpu.load_code_object(&bytes)?;

    // One GPU with its scheduler: control queue, execution queue, mailbox.
    let device = PhysicalDevice::new(&gpu, &library, PhysicalDeviceOptions::default())?;
    let queue = device.queue();

    // Record once: y (slot 1) += 3 · x (slot 0).
    const N: u64 = 1000;
    let saxpy = library.kernel("saxpy_f32")?;
    let mut recording = device.command_buffer(2)?;
    let mut args = saxpy.kernargs()?;
    args.set(0, N)?.set(1, 3.0f32)?;
    args.bind(2, BufferRef::binding(0, 0, 4 * N))?;
    args.bind(3, BufferRef::binding(1, 0, 4 * N))?;
    let workgroups = Workgroups::linear(N.div_ceil(256) as u32, 256);
    recording.dispatch(&saxpy, workgroups, &args)?;
    let saxpy_y = recording.finish()?;

    let host = system
        .agents()?
        .into_iter()
        .find(|a| !a.is_gpu())
        .ok_or("no CPU agent")?
        .memory_pool(PoolKind::FineGrained)?;
    let mut x = host.alloc_host::<f32>(N as usize)?;
    let mut y = host.alloc_host::<f32>(N as usize)?;
    for (k, (x, y)) in x.iter_mut().zip(y.iter_mut()).enumerate() {
        *x = k as f32;
        *y = 1.0;
    }
    let table = [
        BindingTableEntry {
            address: x.address(),
            length: 4 * N,
        },
        BindingTableEntry {
            address: y.address(),
            length: 4 * N,
        },
    ];

    // Three runs in a chain on one timeline semaphore, all held back until
    // the host signals 1; announced to the scheduler as one batch.
    let timeline = device.semaphore(0)?;
    let mut batch = queue.batch();
    for run in 1..=3 {
        batch.execute(
            &[(&timeline, run)],
            &saxpy_y,
            &table,
            &[(&timeline, run + 1)],
        )?;
    }
    batch.submit()?;
    timeline.signal(1)?; // the host releases the chain
    timeline.wait(4, Duration::from_secs(60))?; // one wait for all three

    for (k, &v) in y.iter().enumerate() {
        let want = 1.0 + 9.0 * k as f32;
        if v != want {
            return Err(format!("y[{k}] = {v}, expected {want}").into());
        }
    }
    println!(
        "y = 1 + 9x over {N} elements after three chained runs; {:?}",
        device.stats()
    );
    Ok(())
}
