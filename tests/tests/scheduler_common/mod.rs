//! What the scheduler's test binaries share: a scheduler with a
//! one-copy command buffer, and chains of links for it to copy.

#![allow(dead_code)] // each binary uses its own part

use std::time::Duration;

use aqueduct::command_buffer::{BindingTableEntry, BufferRef};
use aqueduct::scheduler::PhysicalDeviceOptions;
use aqueduct::{CommandBuffer, DeviceQueue, HostBuffer, PhysicalDevice};
use aqueduct_tests::device_library;

pub const TIMEOUT: Duration = Duration::from_secs(300);
/// Bytes of one link of a chain (a binding slot's alignment).
pub const LINK: u64 = 16;
pub const POISON: u8 = 0xA5;

/// A `PhysicalDevice` on `gpu` with the device library and `options`.
pub fn device_with(gpu: &aqueduct::agent::Agent, options: PhysicalDeviceOptions) -> PhysicalDevice {
    PhysicalDevice::new(gpu, &device_library(gpu), options).expect("device")
}

/// A scheduler on `gpu`, its queue, and a command buffer that copies
/// binding slot 0 to slot 1 (16 bytes).
pub fn scheduler_on(gpu: &aqueduct::agent::Agent) -> (PhysicalDevice, DeviceQueue, CommandBuffer) {
    let device = device_with(gpu, PhysicalDeviceOptions::default());
    let mut b = device.command_buffer(2).expect("builder");
    b.copy(
        BufferRef::binding(0, 0, LINK),
        BufferRef::binding(1, 0, LINK),
    )
    .expect("copy");
    let queue = device.queue();
    (device, queue, b.finish().expect("finish"))
}

/// Links `from` → `to` of `buffer`.
pub fn link(buffer: &HostBuffer<u8>, from: u64, to: u64) -> [BindingTableEntry; 2] {
    [
        BindingTableEntry {
            address: buffer.address() + LINK * from,
            length: LINK,
        },
        BindingTableEntry {
            address: buffer.address() + LINK * to,
            length: LINK,
        },
    ]
}

/// `links + 1` links, the first holding a pattern, the rest poisoned.
pub fn chain_buffer(host: &aqueduct::MemoryPool, links: u64) -> (HostBuffer<u8>, Vec<u8>) {
    let mut buffer = host
        .alloc_host::<u8>((LINK * (links + 1)) as usize)
        .expect("alloc");
    buffer.fill(POISON);
    let pattern: Vec<u8> = (0..LINK as u8).map(|k| k.wrapping_mul(37) ^ 0x5C).collect();
    buffer[..LINK as usize].copy_from_slice(&pattern);
    (buffer, pattern)
}
