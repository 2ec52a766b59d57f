//! The host service's queue: device code's requests to the host arrive as
//! AGENT_DISPATCH packets on a soft queue, which a host thread consumes.
//!
//! HSA's model for an agent that is not a kernel agent (HSA Runtime
//! Programmer's Reference Manual, "Queues": `hsa_soft_queue_create`; the
//! AQL agent dispatch packet of the HSA Platform System Architecture
//! Specification 1.2, §2.9): the application makes a queue in host memory
//! with a doorbell signal of its own, producers (here: device kernels of
//! the scheduler) reserve a slot, write the packet, publish its header and
//! store the packet id to the doorbell; the consumer waits on the doorbell
//! with the runtime's own wait, serves each published packet in order,
//! marks its slot INVALID, advances the read index and decrements the
//! packet's completion signal, if any.
//!
//! The queue's memory comes from the CPU agent's fine-grained region that
//! allows runtime allocation (ROCr's kernarg system memory), which every
//! agent reaches.

use std::ptr::NonNull;
use std::sync::Mutex;
use std::time::Duration;

use aqueduct_abi::aql::{AgentDispatchPacket, PACKET_SIZE, PacketHeader, PacketType};
use aqueduct_abi::aql_ring::{consumed, is_published};
use aqueduct_abi::atomic::{self, Acquire, Relaxed};
use aqueduct_abi::hsa::{
    HsaQueue, PacketSlot, QueueFeatures, QueueType, SignalCondition, SignalHandle,
};
use aqueduct_abi::view::List;
use zerocopy::{FromBytes, IntoBytes};

use crate::error::{Error, Result};
use crate::hsa::System;
use crate::hsa::ffi;
use crate::signal::{RmwOrder, Signal, WaitOrder};

/// A soft AQL queue the host consumes.
pub(crate) struct HostQueue {
    system: System,
    /// The `hsa_queue_t*`, as an address (it is only passed back to HSA).
    raw: u64,
    ring: u64,
    size: u32,
    doorbell: Signal,
    ticks_per_second: u64,
    /// The consumer's position: the next packet id, and the doorbell value
    /// seen last. One consumer at a time.
    consumer: Mutex<(u64, i64)>,
}

/// What one [`HostQueue::serve`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Served {
    /// AGENT_DISPATCH packets handed to the handler.
    pub(crate) handled: u64,
    /// Packets of another type: consumed, not served (no producer of
    /// aqueduct's writes them).
    pub(crate) rejected: u64,
}

impl HostQueue {
    /// A soft queue of `size` packets (a power of two) in the first CPU
    /// agent's fine-grained region that allows runtime allocation.
    pub(crate) fn new(system: &System, size: u32) -> Result<Self> {
        let region = host_region(system)?;
        // The doorbell starts below every packet id, so the first store
        // (id 0) changes it.
        let doorbell = Signal::new(system, -1)?;
        let raw = system.soft_queue_create(
            region,
            size,
            QueueType::MULTI.0,
            QueueFeatures::AGENT_DISPATCH.bits(),
            doorbell.handle(),
        )?;
        let Some(raw) = NonNull::new(raw) else {
            return Err(Error::Hsa {
                call: "hsa_soft_queue_create",
                status: ffi::HSA_STATUS_ERROR,
                message: "returned success and a null queue".into(),
            });
        };
        // SAFETY: HSA returned a live hsa_queue_t; its fields are fixed for
        // the queue's life.
        let header = unsafe { raw.as_ptr().read() };
        let queue = Self {
            system: system.clone(),
            raw: raw.as_ptr() as u64,
            ring: header.base_address,
            size: header.size,
            doorbell,
            ticks_per_second: system.ticks_per_second()?,
            consumer: Mutex::new((0, -1)),
        };
        if header.size != size || header.base_address == 0 {
            return Err(Error::Hsa {
                call: "hsa_soft_queue_create",
                status: ffi::HSA_STATUS_ERROR,
                message: format!(
                    "returned a queue with ring {:#x} of {} packets for a request of {size}",
                    header.base_address, header.size
                ),
            });
        }
        Ok(queue)
    }

    /// The `hsa_queue_t*` producers write to.
    pub(crate) fn address(&self) -> u64 {
        self.raw
    }

    /// The queue's ring, as its producers write it.
    fn ring(&self) -> List<'_, PacketSlot> {
        // SAFETY: the ring of the live soft queue `self` made (`size`
        // 64-byte slots, checked non-null in `new`), which producers and
        // this consumer access by the AQL protocol (a slot's first word
        // atomically).
        unsafe { List::from_raw(self.ring, u64::from(self.size)) }
    }

    /// Waits up to `timeout` (zero: not at all) for the doorbell to move,
    /// then serves every
    /// packet published by now, in order: `handle` gets each AGENT_DISPATCH
    /// packet, then its slot is freed and its completion signal, if any,
    /// decremented.
    pub(crate) fn serve(
        &self,
        timeout: Duration,
        mut handle: impl FnMut(&AgentDispatchPacket),
    ) -> Served {
        let mut consumer = self.consumer.lock().unwrap_or_else(|p| p.into_inner());
        let (ref mut next, ref mut seen) = *consumer;
        let hint = (timeout.as_secs_f64() * self.ticks_per_second as f64) as u64;
        if !timeout.is_zero() {
            // SAFETY: the doorbell is live while `self` is; NE is one of
            // the four conditions HSA defines.
            *seen = unsafe {
                self.system.signal_wait(
                    self.doorbell.handle(),
                    SignalCondition::NE.0,
                    *seen,
                    hint,
                    WaitOrder::Acquire,
                )
            };
        }
        let mut served = Served::default();
        let ring = self.ring();
        loop {
            let slot = ring.slot(*next);
            // Producers publish a slot's first word with a release store.
            let first = slot.first_word();
            let word = first.load(Acquire, atomic::System);
            if !is_published(word) {
                break;
            }
            // The slot's 64 bytes, published (acquire above) and not
            // rewritten until the read index below frees it.
            let mut bytes = [0u8; PACKET_SIZE];
            bytes.copy_from_slice(slot.get().as_bytes());
            bytes[..4].copy_from_slice(&word.to_le_bytes());
            let Ok(packet) = AgentDispatchPacket::read_from_bytes(&bytes) else {
                break; // 64 bytes always read; unreachable
            };
            if PacketHeader(word as u16).packet_type() == PacketType::AGENT_DISPATCH {
                handle(&packet);
                served.handled += 1;
            } else {
                served.rejected += 1;
            }
            first.store(consumed(word), Relaxed, atomic::System);
            *next += 1;
            // SAFETY: the live soft queue this value made.
            unsafe {
                self.system
                    .queue_store_read_index(self.raw as *const HsaQueue, *next)
            };
            if packet.completion_signal != SignalHandle::NULL {
                // SAFETY: the producer's completion signal, live until the
                // packet completes (the AQL contract).
                unsafe {
                    self.system
                        .signal_add(packet.completion_signal, -1, RmwOrder::Release)
                };
            }
        }
        served
    }
}

impl Drop for HostQueue {
    fn drop(&mut self) {
        // SAFETY: made by `new`, used by nobody any more (`&mut self`).
        let _ = unsafe { self.system.queue_destroy(self.raw as *mut HsaQueue) };
    }
}

/// The region of the first CPU agent that is global, fine-grained and
/// allows runtime allocation.
fn host_region(system: &System) -> Result<ffi::Region> {
    for agent in system.agents()?.iter().filter(|a| !a.is_gpu()) {
        for region in system.region_handles(agent.handle())? {
            let segment: u32 = system.region_info(region, ffi::HSA_REGION_INFO_SEGMENT)?;
            if segment != ffi::HSA_REGION_SEGMENT_GLOBAL {
                continue;
            }
            let flags: u32 = system.region_info(region, ffi::HSA_REGION_INFO_GLOBAL_FLAGS)?;
            let allowed: bool =
                system.region_info(region, ffi::HSA_REGION_INFO_RUNTIME_ALLOC_ALLOWED)?;
            if flags & ffi::HSA_REGION_GLOBAL_FLAG_FINE_GRAINED != 0 && allowed {
                return Ok(region);
            }
        }
    }
    Err(Error::InvalidArgument {
        what: "host service",
        problem: "no CPU agent has a fine-grained region the runtime allocates in".into(),
    })
}
