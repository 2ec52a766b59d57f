//! The everyday memory path on the first GPU agent, through the device
//! scheduler: upload to device memory, fill on the device, copy device to
//! device and device to host, each step waiting for the one before on a
//! timeline semaphore; one host wait, then every element checked.
//!
//! ```sh
//! cargo xtask build --release                              # the device library
//! cargo run -p aqueduct --example fill_and_copy            # ROCr, with an AMD GPU
//! cargo build -p aqueduct-sim                              # or the simulator's runtime:
//! AQUEDUCT_HSA_LIB=target/debug/libaqueduct_sim.so cargo run -p aqueduct --example fill_and_copy
//! ```

use std::time::Duration;

use aqueduct::command_buffer::BufferRef;
use aqueduct::device_code::load_device_library;
use aqueduct::scheduler::PhysicalDeviceOptions;
use aqueduct::{LoadOptions, PhysicalDevice, PoolKind, System};

/// Elements of each buffer; the first `COPIED` come from the upload.
const N: usize = 4096;
const COPIED: usize = N / 2;
/// What the device fill writes.
const FILLED: u32 = 0x600D_F111;
/// What the destinations hold before: a value no step writes, so an
/// element no step reached shows.
const POISON: u32 = 0xDEAD_BEEF;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let system = System::open(&LoadOptions::default())?;
    let gpu = system.gpus()?.into_iter().next().ok_or("no GPU agent")?;
    let (bytes, _) = load_device_library(&gpu.info().name)?;
    let library = gpu.load_code_object(&bytes)?;
    let device = PhysicalDevice::new(&gpu, &library, PhysicalDeviceOptions::default())?;
    let queue = device.queue();

    // Device memory (`src`, `dst`) and host memory the GPU reaches (`out`).
    let vram = gpu.memory_pool(PoolKind::CoarseGrained)?;
    let mut src = vram.alloc_device::<u32>(N)?;
    let mut dst = vram.alloc_device::<u32>(N)?;
    let mut out = system
        .agents()?
        .into_iter()
        .find(|a| !a.is_gpu())
        .ok_or("no CPU agent")?
        .memory_pool(PoolKind::FineGrained)?
        .alloc_host::<u32>(N)?;
    out.allow_access(&[&gpu])?; // a CPU pool need not be open to every agent
    let upload: Vec<u32> = (0..N as u32).map(|i| i * 3 + 1).collect();
    src.write(0, &upload)?; // host to device (`hsa_memory_copy`)
    dst.write(0, &[POISON; N])?;
    out.fill(POISON);

    // dst = FILLED, then dst[..COPIED] = src[..COPIED], then out = dst:
    // three queue entries, each waiting for the value the one before
    // signals, so the copy lands after the fill and the read-back after both.
    let size = |elements: usize| (elements * size_of::<u32>()) as u64;
    let step = device.semaphore(0)?;
    let dst_all = BufferRef::direct(dst.address(), size(N));
    queue.fill(&[], dst_all, &FILLED.to_le_bytes(), &[(&step, 1)])?;
    queue.copy(
        &[(&step, 1)],
        BufferRef::direct(src.address(), size(COPIED)),
        BufferRef::direct(dst.address(), size(COPIED)),
        &[(&step, 2)],
    )?;
    queue.copy(
        &[(&step, 2)],
        dst_all,
        BufferRef::direct(out.address(), size(N)),
        &[(&step, 3)],
    )?;
    step.wait(3, Duration::from_secs(60))?;

    // Check the device-to-host copy, and `dst` itself read back through the
    // runtime (`hsa_memory_copy`).
    let want = |i: usize| if i < COPIED { upload[i] } else { FILLED };
    for (what, got) in [("host copy", out[..].to_vec()), ("dst", dst.to_vec()?)] {
        if let Some(i) = (0..N).find(|&i| got[i] != want(i)) {
            return Err(format!("{what}[{i}] = {:#x}, expected {:#x}", got[i], want(i)).into());
        }
    }
    println!(
        "filled {} elements on the device, copied {COPIED} over them, copied all to the host: \
         checked {N} elements twice",
        N - COPIED
    );
    Ok(())
}
