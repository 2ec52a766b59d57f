//! User-mode AQL queues: a ring of 64-byte packets the agent's packet
//! processor consumes in order (HSA Platform System Architecture
//! Specification, "Architected Queuing Language").
//!
//! Submitting follows the AQL rules and the arithmetic of
//! [`aqueduct_abi::aql_ring`], which device code and the simulator's packet
//! processor share: reserve slots once they have room, write bytes 4..64,
//! publish the header last with release semantics, store the last packet id
//! in the doorbell signal.
//!
//! Reserving with a compare-and-swap after checking for room (instead of an
//! unconditional add) means a full ring makes the producer wait — bounded by
//! a timeout — without ever owning slots it cannot fill: a reserved slot left
//! `INVALID` would stall the processor forever. For the same reason an
//! abandoned [`Reservation`] fills its unwritten slots with no-op barrier
//! packets before it rings the doorbell.
//!
//! Faults: ROCr reports a queue error (memory violation, illegal
//! instruction, ...) through the callback given at creation, on its own
//! thread, and the queue stops processing. aqueduct's callback records the
//! first status; every wait through the queue ([`Queue::wait`]) checks it at
//! least every few milliseconds and fails with [`Error::QueueFault`]. (With
//! no callback ROCr would abort the process.)

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering as MemOrdering};
use std::time::{Duration, Instant};

use aqueduct_abi::aql::{PACKET_SIZE, Packet};
use aqueduct_abi::aql_ring::{doorbell_value, has_room, is_ring_size, slot_offset};
use aqueduct_abi::hsa::{HsaQueue, QueueType, SignalCondition, SignalHandle};
use aqueduct_abi::packet::{self, BarrierKind, BarrierPacket, DispatchLimits, Ordering, Prepared};

use crate::agent::{Agent, AgentInfo};
use crate::error::{Error, Result};
use crate::hsa::System;
use crate::hsa::ffi::{self, Status};
use crate::memory::{HostBuffer, MemoryPool, PoolKind};
use crate::signal::{LoadOrder, Signal, StoreOrder, WaitOrder};

/// How long a producer waits for room in a full ring before giving up.
pub const DEFAULT_SPACE_TIMEOUT: Duration = Duration::from_secs(10);

/// An AQL queue on a GPU agent. Clones share the queue; it is destroyed
/// when the last clone (and every [`crate::Dispatch`] of it) is gone.
#[derive(Clone)]
pub struct Queue {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    agent: Agent,
    raw: NonNull<HsaQueue>,
    ring: NonNull<u8>,
    size: u32,
    doorbell: SignalHandle,
    id: u64,
    fault: Box<FaultSlot>,
    limits: DispatchLimits,
    kernarg_pool: MemoryPool,
    /// The highest read index loaded so far. The index only grows, so room
    /// this shows is room, and a reservation that finds it needs no
    /// runtime call to read the index (ordering: see [`Queue::reserve`]).
    read_seen: AtomicU64,
    /// The write index after this process's last reservation: the expected
    /// value of the next compare-and-swap. It is right unless another
    /// producer (host or device) reserved since, and then the failed swap
    /// returns the real index; never above it, as the index only grows.
    write_guess: AtomicU64,
    /// Kernel-argument allocations of dispatches whose `Dispatch` value was
    /// dropped before completion: freed once their signal says done.
    pub(crate) retired: Mutex<Vec<Retired>>,
}

/// What a finished-or-not dispatch still owns.
pub(crate) struct Retired {
    pub(crate) signal: Signal,
    pub(crate) below: i64,
    pub(crate) kernargs: Option<HostBuffer<u8>>,
    /// Keeps the executable (and so the kernel's code) loaded.
    pub(crate) kernel: crate::executable::Kernel,
}

/// Written by ROCr's error callback, read by waits.
#[derive(Default)]
struct FaultSlot {
    /// 0 while healthy, else the first error status.
    status: AtomicU32,
}

// SAFETY: HSA queues of type MULTI accept packets from any number of
// threads; every shared mutation goes through HSA's atomic index functions,
// atomic header stores, or the mutex.
unsafe impl Send for Inner {}
// SAFETY: as above.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // Give retired dispatches a bounded chance to finish; whatever is
        // still running keeps its kernel arguments (leaked rather than freed
        // under a running kernel).
        let retired = std::mem::take(self.retired.get_mut().unwrap_or_else(|p| p.into_inner()));
        for r in retired {
            let done = self.fault.status.load(MemOrdering::Acquire) == 0
                && r.signal
                    .wait(
                        SignalCondition::LT,
                        r.below,
                        Duration::from_secs(5),
                        WaitOrder::Acquire,
                    )
                    .is_ok();
            if !done {
                std::mem::forget(r.kernargs);
                std::mem::forget(r.kernel);
            }
        }
        // SAFETY: `raw` came from queue_create; this is the last owner.
        let _ = unsafe { self.agent.system().queue_destroy(self.raw.as_ptr()) };
    }
}

/// ROCr's queue error callback: records the first fault.
unsafe extern "C" fn on_queue_error(status: Status, _queue: *mut HsaQueue, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: `data` is the FaultSlot boxed in the queue's Inner, which
    // outlives the HSA queue (destroyed first in Inner::drop).
    let slot = unsafe { &*data.cast::<FaultSlot>() };
    let _ =
        slot.status
            .compare_exchange(0, status.max(1), MemOrdering::AcqRel, MemOrdering::Acquire);
}

/// The dispatch limits of a GPU agent, for the packet builders.
pub fn dispatch_limits(info: &AgentInfo) -> DispatchLimits {
    DispatchLimits {
        max_workgroup_dim: info.workgroup_max_dim.map(u32::from),
        max_workgroup_size: info.workgroup_max_size,
        max_grid_dim: info.grid_max_dim,
        max_grid_size: u64::from(info.grid_max_size),
        max_group_segment_size: info
            .gpu
            .as_ref()
            .map_or(0, |g| u32::try_from(g.lds_size).unwrap_or(u32::MAX)),
    }
}

/// Why `size` is not a queue size the agent accepts.
pub(crate) fn check_queue_size(info: &AgentInfo, size: u32) -> Result<()> {
    let refuse = |problem: String| Error::InvalidArgument {
        what: "queue size",
        problem,
    };
    if info.gpu.is_none() {
        return Err(refuse(format!(
            "agent {} is not a GPU; AQL queues are created on GPU agents",
            info.name
        )));
    }
    if !is_ring_size(size) {
        return Err(refuse(format!("{size} is not a power of two")));
    }
    if size < info.queue_min_size || size > info.queue_max_size {
        return Err(refuse(format!(
            "{size} packets is outside agent {}'s range {}..={}",
            info.name, info.queue_min_size, info.queue_max_size
        )));
    }
    Ok(())
}

impl Agent {
    /// Creates a multi-producer AQL queue of `size` packets (a power of two
    /// within the agent's `queue_min_size..=queue_max_size`).
    pub fn create_queue(&self, size: u32) -> Result<Queue> {
        check_queue_size(self.info(), size)?;
        // Kernel arguments live in the kernarg pool of a CPU agent.
        let system = self.system();
        let kernarg_pool = system
            .agents()?
            .into_iter()
            .filter(|a| !a.is_gpu())
            .find_map(|a| a.memory_pool(PoolKind::Kernarg).ok())
            .ok_or_else(|| Error::InvalidArgument {
                what: "queue",
                problem: "the system has no CPU agent with a kernarg memory pool".into(),
            })?;
        let fault = Box::<FaultSlot>::default();
        // SAFETY: the FaultSlot is boxed (stable address) and owned by the
        // Inner that destroys the queue before dropping it.
        let raw = unsafe {
            system.queue_create(
                self.handle(),
                size,
                QueueType::MULTI.0,
                on_queue_error,
                (&raw const *fault).cast_mut().cast(),
            )?
        };
        let raw = NonNull::new(raw).ok_or_else(|| Error::Hsa {
            call: "hsa_queue_create",
            status: ffi::HSA_STATUS_ERROR,
            message: "returned success and a null queue".into(),
        })?;
        // SAFETY: HSA returned a live hsa_queue_t; its fields are fixed for
        // the queue's life.
        let header = unsafe { raw.as_ptr().read() };
        let ring = NonNull::new(header.base_address as *mut u8);
        let inner = |ring| Inner {
            agent: self.clone(),
            raw,
            ring,
            size: header.size,
            doorbell: header.doorbell_signal,
            id: header.id,
            fault,
            limits: dispatch_limits(self.info()),
            kernarg_pool,
            read_seen: AtomicU64::new(0),
            write_guess: AtomicU64::new(0),
            retired: Mutex::new(Vec::new()),
        };
        match ring {
            Some(ring) if header.size == size => Ok(Queue {
                inner: Arc::new(inner(ring)),
            }),
            _ => {
                // SAFETY: just created, never used.
                let _ = unsafe { system.queue_destroy(raw.as_ptr()) };
                Err(Error::Hsa {
                    call: "hsa_queue_create",
                    status: ffi::HSA_STATUS_ERROR,
                    message: format!(
                        "returned a queue with ring {:#x} of {} packets for a request of {size}",
                        header.base_address, header.size
                    ),
                })
            }
        }
    }
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("id", &self.inner.id)
            .field("agent", &self.inner.agent.info().name)
            .field("size", &self.inner.size)
            .finish()
    }
}

impl Queue {
    /// The agent whose packet processor serves the queue.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// Capacity in packets.
    pub fn size(&self) -> u32 {
        self.inner.size
    }

    /// `hsa_queue_t::id`.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Address of the `hsa_queue_t` (what device code and the
    /// `hidden_queue_ptr` argument receive).
    pub fn address(&self) -> u64 {
        self.inner.raw.as_ptr() as u64
    }

    /// The agent's dispatch limits the packet builders check against.
    pub fn limits(&self) -> &DispatchLimits {
        &self.inner.limits
    }

    pub(crate) fn kernarg_pool(&self) -> &MemoryPool {
        &self.inner.kernarg_pool
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// The fault the runtime reported for this queue, if any.
    pub fn fault(&self) -> Option<Error> {
        let status = self.inner.fault.status.load(MemOrdering::Acquire);
        (status != 0).then(|| Error::QueueFault {
            queue_id: self.inner.id,
            agent: self.inner.agent.info().name.clone(),
            status,
            message: self.inner.agent.system().runtime().status_message(status),
        })
    }

    fn check_fault(&self) -> Result<()> {
        self.fault().map_or(Ok(()), Err)
    }

    fn system(&self) -> &System {
        self.inner.agent.system()
    }

    pub(crate) fn read_index(&self) -> u64 {
        // SAFETY: `raw` is live while `self` is.
        unsafe { self.system().queue_read_index(self.inner.raw.as_ptr()) }
    }

    pub(crate) fn write_index(&self) -> u64 {
        // SAFETY: as above.
        unsafe { self.system().queue_write_index(self.inner.raw.as_ptr()) }
    }

    /// Reserves `count` consecutive packet slots, waiting up to `timeout`
    /// for the packet processor to make room.
    pub fn reserve(&self, count: u32, timeout: Duration) -> Result<Reservation<'_>> {
        if count == 0 || count > self.inner.size {
            return Err(Error::InvalidArgument {
                what: "queue reservation",
                problem: format!("{count} slots requested from a ring of {}", self.inner.size),
            });
        }
        let n = u64::from(count);
        let size = u64::from(self.inner.size);
        let room = |write: u64, read: u64| has_room(write, read, n, size);
        let mut wait = RoomWait::new(timeout);
        // First try the guessed write index against the read index seen
        // last, without a runtime call. The acquire load pairs with the
        // release `fetch_max` below, which follows the runtime's acquire
        // load of the read index: the packet processor's reads of the slots
        // before it happen before this producer overwrites them, as if this
        // thread had loaded the index itself.
        let mut write = self.inner.write_guess.load(MemOrdering::Relaxed);
        loop {
            self.check_fault()?;
            let mut read = self.inner.read_seen.load(MemOrdering::Acquire);
            if !room(write, read) {
                // Either guess may be stale: decide on the runtime's indices.
                write = self.write_index();
                read = self.read_index();
                self.inner.read_seen.fetch_max(read, MemOrdering::Release);
            }
            if room(write, read) {
                // SAFETY: `raw` is live while `self` is.
                let seen = unsafe {
                    self.system().queue_cas_write_index(
                        self.inner.raw.as_ptr(),
                        write,
                        write.wrapping_add(n),
                    )
                };
                if seen == write {
                    self.inner
                        .write_guess
                        .store(write.wrapping_add(n), MemOrdering::Relaxed);
                    return Ok(Reservation {
                        queue: self,
                        first: write,
                        count: n,
                        written: 0,
                    });
                }
                // Another producer got there first; `seen` is the index now.
                write = seen;
                continue;
            }
            wait.check(|waited| Error::Timeout {
                what: format!(
                    "room for {count} packets in queue {} (ring of {}, write index {write})",
                    self.inner.id, self.inner.size
                ),
                condition: ">=",
                expected: write.wrapping_add(n).saturating_sub(size) as i64,
                observed: read as i64,
                waited,
            })?;
            wait.pause();
        }
    }

    /// Submits one packet (reserve, write, publish, doorbell); returns its
    /// packet id.
    pub fn submit<P: Packet>(&self, packet: &Prepared<P>) -> Result<u64> {
        let mut r = self.reserve(1, DEFAULT_SPACE_TIMEOUT)?;
        let id = r.emplace(packet)?;
        r.commit();
        Ok(id)
    }

    /// Submits a barrier-AND/OR packet.
    pub fn submit_barrier(&self, packet: &BarrierPacket) -> Result<u64> {
        let mut r = self.reserve(1, DEFAULT_SPACE_TIMEOUT)?;
        let id = r.emplace_barrier(packet)?;
        r.commit();
        Ok(id)
    }

    /// Waits on `signal` like [`Signal::wait`], but fails with
    /// [`Error::QueueFault`] as soon as this queue has faulted (its packets
    /// will never complete).
    pub fn wait(
        &self,
        signal: &Signal,
        condition: SignalCondition,
        compare: i64,
        timeout: Duration,
    ) -> Result<i64> {
        signal.wait_checked(
            condition,
            compare,
            timeout,
            WaitOrder::Acquire,
            &format!("signal of queue {}", self.inner.id),
            || self.check_fault(),
        )
    }

    /// Frees the kernel arguments of dropped dispatches that have finished.
    pub(crate) fn reclaim(&self) {
        let mut retired = self.inner.retired.lock().unwrap_or_else(|p| p.into_inner());
        retired.retain(|r| r.signal.load(LoadOrder::Acquire) >= r.below);
    }

    /// Writes `bytes` (a whole packet whose header is INVALID) into the
    /// slot of packet `id` and publishes it with `first_word`.
    fn emplace_bytes(&self, id: u64, bytes: &[u8; PACKET_SIZE], first_word: u32) {
        let slot = slot_offset(id, u64::from(self.inner.size)) as usize;
        // SAFETY: `slot` is inside the ring (size * 64 bytes). The slot was
        // reserved by this producer and its previous packet consumed (the
        // reservation checked the read index), so the processor does not
        // read it until the header below says so. Bytes 4..64 go first;
        // the 4-byte aligned first word is then stored atomically with
        // release ordering, making the body visible before the header.
        unsafe {
            let base = self.inner.ring.as_ptr().add(slot);
            std::ptr::copy_nonoverlapping(bytes[4..].as_ptr(), base.add(4), PACKET_SIZE - 4);
            AtomicU32::from_ptr(base.cast::<u32>()).store(first_word, MemOrdering::Release);
        }
    }

    fn ring_doorbell(&self, id: u64) {
        // SAFETY: the doorbell signal lives as long as the queue.
        unsafe {
            self.system()
                .signal_store(self.inner.doorbell, doorbell_value(id), StoreOrder::Release)
        };
    }
}

/// Reserved packet slots, filled in order. Dropping it (or [`commit`])
/// fills any slot left unwritten with a no-op barrier packet and rings the
/// doorbell, so the processor never stalls on a hole.
///
/// [`commit`]: Reservation::commit
#[must_use = "reserved slots must be filled"]
pub struct Reservation<'q> {
    queue: &'q Queue,
    first: u64,
    count: u64,
    written: u64,
}

impl Reservation<'_> {
    /// Packet id of the first reserved slot.
    pub fn first_id(&self) -> u64 {
        self.first
    }

    /// Slots not yet written.
    pub fn remaining(&self) -> u64 {
        self.count - self.written
    }

    fn next_id(&mut self) -> Result<u64> {
        if self.written == self.count {
            return Err(Error::InvalidArgument {
                what: "reservation",
                problem: format!("all {} reserved slots are already written", self.count),
            });
        }
        let id = self.first + self.written;
        self.written += 1;
        Ok(id)
    }

    /// Writes the next slot; returns its packet id.
    pub fn emplace<P: Packet>(&mut self, packet: &Prepared<P>) -> Result<u64> {
        let id = self.next_id()?;
        let mut bytes = [0u8; PACKET_SIZE];
        bytes.copy_from_slice(packet.body.as_bytes());
        self.queue.emplace_bytes(id, &bytes, packet.first_word());
        Ok(id)
    }

    /// Writes a barrier packet into the next slot.
    pub fn emplace_barrier(&mut self, packet: &BarrierPacket) -> Result<u64> {
        let id = self.next_id()?;
        self.queue
            .emplace_bytes(id, &packet.body_bytes(), packet.first_word());
        Ok(id)
    }

    /// Rings the doorbell for every reserved slot (filling unwritten ones
    /// with no-op barriers first).
    pub fn commit(self) {}

    /// Rings the doorbell for every reserved slot, leaving the unwritten
    /// ones to device code that an earlier packet of this reservation runs
    /// (the block-issue kernel): the processor waits at each until its
    /// header turns valid. Everything the device will not write must be
    /// written first.
    pub(crate) fn leave_to_device(mut self) {
        self.written = self.count;
    }

    fn finish(&mut self) {
        while self.written < self.count {
            // A barrier-AND with no dependencies completes at once.
            if let Ok(nop) =
                packet::barrier(BarrierKind::And, &[], SignalHandle::NULL, Ordering::AGENT)
            {
                let _ = self.emplace_barrier(&nop);
            } else {
                break;
            }
        }
        if self.count > 0 {
            self.queue.ring_doorbell(self.first + self.count - 1);
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Waiting for room in a ring, as every producer of aqueduct's host does
/// when a ring is full: an AQL queue's packet slots ([`Queue::reserve`]),
/// a command queue's kernarg ring, a device scheduler's mailbox and
/// kernarg ring. The clock starts at the first full look (a clock read
/// costs as much as a reservation with room); past the timeout the wait
/// is an error that names what it waited for.
pub(crate) struct RoomWait {
    timeout: Duration,
    start: Option<Instant>,
    spins: u32,
}

impl RoomWait {
    /// A wait of at most `timeout`.
    pub(crate) fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            start: None,
            spins: 0,
        }
    }

    /// After a look that found no room: `Err(timeout(waited))` once the
    /// wait has lasted its timeout.
    pub(crate) fn check(&mut self, timeout: impl FnOnce(Duration) -> Error) -> Result<()> {
        let waited = self.start.get_or_insert_with(Instant::now).elapsed();
        if waited >= self.timeout {
            return Err(timeout(waited));
        }
        Ok(())
    }

    /// Between two looks: a few spins (the consumer is usually a moment
    /// away), then 50 µs sleeps, which leave the core to the consumer.
    pub(crate) fn pause(&mut self) {
        self.spins += 1;
        if self.spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::AgentKind;

    use crate::agent::test_gpu_info as gpu_info;

    #[test]
    fn queue_sizes_must_be_powers_of_two_within_the_agent_range() {
        let info = gpu_info();
        for ok in [64, 128, 4096, 131072] {
            check_queue_size(&info, ok).unwrap();
        }
        for (size, message) in [
            (0, "0 is not a power of two"),
            (100, "100 is not a power of two"),
            (32, "outside agent gfx942's range 64..=131072"),
            (262144, "outside agent gfx942's range"),
        ] {
            let err = check_queue_size(&info, size).unwrap_err();
            assert!(err.to_string().contains(message), "{size}: {err}");
        }
        let mut cpu = gpu_info();
        cpu.gpu = None;
        cpu.kind = AgentKind::Cpu;
        let err = check_queue_size(&cpu, 64).unwrap_err();
        assert!(err.to_string().contains("is not a GPU"), "{err}");
    }

    #[test]
    fn dispatch_limits_come_from_the_agent() {
        let limits = dispatch_limits(&gpu_info());
        assert_eq!(limits.max_workgroup_dim, [1024; 3]);
        assert_eq!(limits.max_grid_size, u64::from(u32::MAX));
        assert_eq!(limits.max_group_segment_size, 65536);
    }
}
