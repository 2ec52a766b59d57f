//! User-mode AQL queues and their packet processors (hsa_queue_*).
//!
//! A queue is what ROCr makes it, in simulator memory so device code can
//! reach every part of it:
//!
//! ```text
//!   hsa_queue_t* ──► amd_queue_t (256 B, 64-aligned)      ring (size × 64 B)
//!                     hsa_queue.base_address ───────────► [slot 0][slot 1]…
//!                     hsa_queue.doorbell_signal ──┐        headers INVALID
//!                     write_dispatch_id           │        until published
//!                     read_dispatch_id            ▼
//!                                        amd_signal_t (kind USER): the
//!                                        value at offset 8 is the doorbell
//! ```
//!
//! One packet-processor thread per queue plays the command processor,
//! following the AQL rules (HSA Platform System Architecture Specification
//! 1.2, §2.9 "Architected Queuing Language"):
//!
//! - packets are processed one at a time, in order, from
//!   `read_dispatch_id`; a slot is consumed only once its header type is not
//!   INVALID, so a doorbell rung before the header store is harmless;
//! - the processor does not trust the doorbell: device code may write
//!   packets and ring it with plain stores that wake nobody. When the next
//!   slot is INVALID it parks on the runtime's signal condition variable
//!   ([`super::signal::State::park`]) with a short timeout that backs off
//!   from [`IDLE_PARK_MIN`] to [`IDLE_PARK_MAX`], then re-reads the header:
//!   host doorbell stores (which notify) are seen at once, device-written
//!   packets within the timeout, and an idle queue costs a few hundred
//!   wake-ups a second, not a core;
//! - the barrier bit asks that earlier packets be complete; processing is
//!   sequential, so it always holds. Acquire and release fence scopes are
//!   functional no-ops: every simulated agent shares the host's coherent
//!   memory, and the processor's own accesses are acquire (header) and
//!   release (header reset, read index, completion signal);
//! - after a packet, the header goes back to INVALID, `read_dispatch_id`
//!   advances (release) and then the completion signal, if any, is
//!   decremented, so a waiter that sees completion also sees the slot free.
//!
//! Packet types, as ROCr's GPU queues treat them:
//!
//! | type                       | processing                                  |
//! |----------------------------|---------------------------------------------|
//! | KERNEL_DISPATCH            | `dispatch::run` on the kernel at `kernel_object` |
//! | BARRIER_AND / BARRIER_OR   | wait for all / any non-null dependency = 0   |
//! | VENDOR_SPECIFIC, AMD BARRIER_VALUE | wait for `(value & mask) cond value` |
//! | AGENT_DISPATCH             | the handler of [`State::set_agent_dispatch_handler`] |
//! | anything else              | queue error INVALID_PACKET_FORMAT            |
//!
//! Queue errors: the processor calls the error callback given to
//! `hsa_queue_create` (on its own thread, as ROCr calls it from its
//! exception-handler thread), prints what happened to stderr once (the
//! status alone cannot carry a pc or a kernel name), and stops: the faulting
//! packet is never consumed and its completion signal never decremented, as
//! on hardware, where ROCr suspends the queue. [`error_status`] maps faults
//! to the statuses ROCr reports.
//!
//! Limits: a kernel cannot be interrupted, so destroying a queue (or the
//! last `hsa_shut_down`) while a kernel runs waits for that kernel to end.
//! `queue_inactive_signal` and the scratch fields stay zero: the simulator
//! manages scratch itself and nothing in aqueduct reads them.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::amd_signal::AmdSignal;
use aqueduct_abi::aql::{
    AgentDispatchPacket, AmdBarrierValuePacket, AqlPacket, BarrierAndPacket, BarrierOrPacket,
    KernelDispatchPacket, PACKET_SIZE, PacketHeader, PacketType,
};
use aqueduct_abi::aql_ring::{consumed, is_published, is_ring_size, slot_offset};
use aqueduct_abi::hsa::{HsaQueue, QueueFeatures, QueueType, SignalHandle};
use zerocopy::{FromBytes, IntoBytes};

use super::system::{QUEUE_MAX_PACKETS, QUEUE_MIN_PACKETS};
use aqueduct_abi::hsa_api::*;

use super::{AgentKind, Runtime, runtime};
use crate::dispatch::{self, DispatchError, Launch, MAX_LDS};
use crate::exec::Event;
use crate::fault::Fault;
use crate::wave::{PRIVATE_APERTURE_HI, SHARED_APERTURE_HI};

/// The first sleep of an idle processor (see the module docs for why it
/// polls at all).
pub const IDLE_PARK_MIN: Duration = Duration::from_micros(20);
/// Its longest sleep: the latency of a device-written packet, and of a
/// destroy noticing that it should stop.
pub const IDLE_PARK_MAX: Duration = Duration::from_millis(2);

/// Work-items a workgroup may have (`HSA_AGENT_INFO_WORKGROUP_MAX_SIZE` of
/// every simulated GPU, system.rs).
const WORKGROUP_MAX_SIZE: u64 = 1024;

/// Host threads a dispatch's workgroups run on: every core, so that
/// workgroups waiting on each other (a grid-wide barrier) make progress.
static DISPATCH_THREADS: LazyLock<usize> =
    LazyLock::new(|| std::thread::available_parallelism().map_or(1, usize::from));

/// Waves a compute unit holds (`HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU`,
/// system.rs); ROCr sets `max_wave_id` to that minus one.
const MAX_WAVES_PER_CU: u32 = 32;

/// `hsa_queue_create`'s error callback: `(status, queue, data)`.
pub type ErrorCallback = unsafe extern "C" fn(Status, *mut HsaQueue, *mut c_void);

/// An AGENT_DISPATCH packet handed to the host-service handler.
#[derive(Clone, Copy, Debug)]
pub struct AgentCall {
    /// The `hsa_queue_t*` the packet came from.
    pub queue: u64,
    /// The packet's id in that queue.
    pub dispatch_id: u64,
    /// The packet as read from the ring (its header is the one published).
    pub packet: AgentDispatchPacket,
}

/// Serves AGENT_DISPATCH packets on the processor thread. `Ok` completes
/// the packet (the processor then decrements its completion signal);
/// `Err(status)` is a queue error with that status. The handler may block,
/// which holds up its queue as a long kernel would.
pub type AgentDispatchHandler = dyn Fn(&AgentCall) -> Result<(), Status> + Send + Sync;

/// Unique over the process's lifetime, as `hsa_queue_t::id` must be.
static NEXT_QUEUE_ID: AtomicU64 = AtomicU64::new(0);
/// Tells runtimes apart in [`LIVE`] (tests build several).
static NEXT_OWNER: AtomicU64 = AtomicU64::new(0);

/// Every live queue by the address of its `amd_queue_t`. Process-wide
/// rather than per runtime because the index functions take only the
/// queue pointer; an entry's `owner` says which runtime made it.
static LIVE: Mutex<BTreeMap<u64, Arc<Entry>>> = Mutex::new(BTreeMap::new());

/// Bumped, with [`LIVE`]'s lock held, after every change to it.
static LIVE_GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The queue this thread used last, with the [`LIVE_GENERATION`] it
    /// was looked up in: producers call the index functions per packet,
    /// and the global lock plus a reference count would cost more than the
    /// rest of the packet. A stale entry is dropped at the thread's next
    /// index call (or exit), so a destroyed queue's memory may outlive
    /// `hsa_queue_destroy` until then, but is never used.
    static LAST_QUEUE: RefCell<Option<(u64, u64, Arc<Entry>)>> = const { RefCell::new(None) };
}

/// Drops this thread's cached queue if `which` says so: a queue destroyed
/// by the thread that used it is freed at once.
fn forget_cached(which: impl FnOnce(&Entry) -> bool) {
    let _ = LAST_QUEUE.try_with(|c| {
        if let Ok(mut slot) = c.try_borrow_mut()
            && slot.as_ref().is_some_and(|(_, _, e)| which(e))
        {
            *slot = None;
        }
    });
}

fn live_changed() {
    LIVE_GENERATION.fetch_add(1, Ordering::Release);
}

fn live() -> MutexGuard<'static, BTreeMap<u64, Arc<Entry>>> {
    // Each critical section is one map operation, which a panic cannot
    // leave half done.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The queues of one runtime and its agent-dispatch handler.
pub struct State {
    owner: u64,
    agent_dispatch: RwLock<Option<Arc<AgentDispatchHandler>>>,
}

impl Default for State {
    fn default() -> Self {
        Self {
            owner: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
            agent_dispatch: RwLock::new(None),
        }
    }
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queues = live().values().filter(|e| e.owner == self.owner).count();
        f.debug_struct("queue::State")
            .field("queues", &queues)
            .finish_non_exhaustive()
    }
}

impl State {
    /// Registers the host-service handler for AGENT_DISPATCH packets on
    /// every queue of this runtime (`None` removes it). Without one, an
    /// AGENT_DISPATCH packet is a queue error INVALID_PACKET_FORMAT, which
    /// is what a GPU queue's command processor reports for a packet type it
    /// does not support (ROCr `AqlQueue::ExceptionHandler`,
    /// EC_QUEUE_PACKET_UNSUPPORTED). This is the simulator's extension: ROCr
    /// GPU queues have no way to serve agent dispatches on the host.
    pub fn set_agent_dispatch_handler(&self, handler: Option<Arc<AgentDispatchHandler>>) {
        *self
            .agent_dispatch
            .write()
            .unwrap_or_else(|e| e.into_inner()) = handler;
    }

    fn agent_dispatch_handler(&self) -> Option<Arc<AgentDispatchHandler>> {
        self.agent_dispatch
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops and joins every processor of this runtime and frees its
    /// queues (the last `hsa_shut_down`).
    pub fn shut_down(&self) {
        let mine: Vec<Arc<Entry>> = {
            let mut all = live();
            let keys: Vec<u64> = all
                .iter()
                .filter(|(_, e)| e.owner == self.owner)
                .map(|(&k, _)| k)
                .collect();
            live_changed();
            keys.iter().filter_map(|k| all.remove(k)).collect()
        };
        forget_cached(|e| e.owner == self.owner);
        for e in mine {
            e.stop_and_join();
        }
    }
}

// ===========================================================================
// A queue
// ===========================================================================

/// One live queue: its memory (owned, freed when the last reference goes)
/// and its processor.
struct Entry {
    owner: u64,
    memory: Arc<crate::Memory>,
    /// `amd_queue_t` address, which is also the `hsa_queue_t*`.
    address: u64,
    ring: u64,
    /// Ring size in packets (a power of two).
    size: u32,
    doorbell: u64,
    id: u64,
    agent: u64,
    callback: Option<ErrorCallback>,
    /// The callback's `data`, an opaque pointer kept as an integer.
    data: usize,
    /// Set by destroy, shut-down and `hsa_queue_inactivate`.
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Entry {
    /// The 64-bit field at `offset` in the `amd_queue_t`.
    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset % 8 == 0 && offset + 8 <= size_of::<AmdQueue>());
        // SAFETY: the `amd_queue_t` is a 64-aligned allocation this entry
        // owns and frees only in `Drop`, so it outlives `&self`; the
        // offsets used are of 8-aligned u64 fields, which every party
        // (host, device, processor) accesses atomically.
        unsafe { AtomicU64::from_ptr((self.address + offset as u64) as *mut u64) }
    }

    fn read_dispatch_id(&self) -> &AtomicU64 {
        self.word(core::mem::offset_of!(AmdQueue, read_dispatch_id))
    }

    fn write_dispatch_id(&self) -> &AtomicU64 {
        self.word(core::mem::offset_of!(AmdQueue, write_dispatch_id))
    }

    /// The value word of the doorbell signal.
    fn doorbell_value(&self) -> &AtomicU64 {
        // SAFETY: the doorbell is a 64-aligned `amd_signal_t` this entry
        // owns and frees only in `Drop`; its value word is 8-aligned and
        // accessed atomically by every party.
        unsafe { AtomicU64::from_ptr((self.doorbell + super::signal::VALUE_OFFSET) as *mut u64) }
    }

    /// Address of packet `id`'s slot.
    fn slot(&self, id: u64) -> u64 {
        self.ring + slot_offset(id, u64::from(self.size))
    }

    /// The first dword of a slot: header and the 16 bits after it, which
    /// producers publish with one 32-bit release store.
    fn first_dword(&self, slot: u64) -> &AtomicU32 {
        // SAFETY: `slot` is a 64-aligned slot of the ring this entry owns
        // and frees only in `Drop`; producers and the processor access the
        // first dword atomically.
        unsafe { AtomicU32::from_ptr(slot as *mut u32) }
    }

    fn stop_and_join(&self) {
        self.stop.store(true, Ordering::Release);
        let handle = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = handle {
            if h.thread().id() == std::thread::current().id() {
                // Destroyed from its own error callback: the processor
                // returns right after the callback, ending the thread.
                return;
            }
            // A parked processor sees `stop` within IDLE_PARK_MAX; one in a
            // kernel, when the kernel ends.
            let _ = h.join();
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // The processor has ended (it holds an `Arc<Entry>`), so nothing of
        // the runtime's touches the queue any more.
        for a in [self.address, self.ring, self.doorbell] {
            let _ = self.memory.free(a);
        }
    }
}

/// Creates a queue on GPU `agent` of `rt` and starts its processor;
/// returns the `hsa_queue_t*` as an address. Checks in ROCr's order
/// (`hsa.cpp` `hsa_queue_create`, `GpuAgent::QueueCreate`,
/// `CpuAgent::QueueCreate`):
///
/// | condition                                  | status                 |
/// |--------------------------------------------|------------------------|
/// | size 0 or not a power of two               | INVALID_ARGUMENT       |
/// | type not SINGLE, MULTI or COOPERATIVE       | INVALID_ARGUMENT       |
/// | unknown agent                              | INVALID_AGENT          |
/// | the CPU agent (no packet processor)        | ERROR                  |
/// | size > QUEUE_MAX_PACKETS                   | OUT_OF_RESOURCES       |
/// | size < QUEUE_MIN_PACKETS                   | INVALID_ARGUMENT       |
///
/// COOPERATIVE queues are accepted, as ROCr does on gfx90a/gfx942 (which
/// have GWS); they behave like MULTI ones.
pub fn create(
    rt: &Arc<Runtime>,
    agent: u64,
    size: u32,
    queue_type: u32,
    callback: Option<ErrorCallback>,
    data: *mut c_void,
) -> Result<u64, Status> {
    if !is_ring_size(size) || queue_type > QueueType::COOPERATIVE.0 {
        return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    let a = rt.agent(agent).ok_or(HSA_STATUS_ERROR_INVALID_AGENT)?;
    let AgentKind::Gpu(profile) = a.kind else {
        return Err(HSA_STATUS_ERROR);
    };
    if size > QUEUE_MAX_PACKETS {
        return Err(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
    }
    if size < QUEUE_MIN_PACKETS {
        return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }

    let mem = &rt.memory;
    let oom = |_| HSA_STATUS_ERROR_OUT_OF_RESOURCES;
    let ring_bytes = u64::from(size) * PACKET_SIZE as u64;
    // The ring is aligned to its size, as ROCr's is.
    let ring = mem.alloc(ring_bytes, ring_bytes).map_err(oom)?;
    let doorbell = match mem.alloc(size_of::<AmdSignal>() as u64, 64) {
        Ok(d) => d,
        Err(_) => {
            let _ = mem.free(ring);
            return Err(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        }
    };
    let address = match mem.alloc(size_of::<AmdQueue>() as u64, 64) {
        Ok(q) => q,
        Err(_) => {
            let _ = mem.free(ring);
            let _ = mem.free(doorbell);
            return Err(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        }
    };
    let id = NEXT_QUEUE_ID.fetch_add(1, Ordering::Relaxed);
    let entry = Arc::new(Entry {
        owner: rt.queues.owner,
        memory: Arc::clone(mem),
        address,
        ring,
        size,
        doorbell,
        id,
        agent,
        callback,
        data: data as usize,
        stop: AtomicBool::new(false),
        thread: Mutex::new(None),
    });

    // From here on dropping `entry` frees the three allocations.
    let invalid = PacketHeader::INVALID.0.to_le_bytes();
    for i in 0..u64::from(size) {
        mem.write_bytes(entry.slot(i), &invalid).map_err(oom)?;
    }
    // A USER signal, not DOORBELL: in ROCr a DOORBELL signal's word at
    // offset 8 is the address of a hardware register, and device code
    // (ockl's `__ockl_hsa_signal_store`) stores through it. Here the word
    // is the doorbell itself, which host and device both store to.
    let mut bell = AmdSignal::user(0);
    bell.queue_ptr = address;
    mem.write_bytes(doorbell, bell.as_bytes()).map_err(oom)?;
    let mut q = AmdQueue::new(HsaQueue {
        queue_type: QueueType(queue_type),
        features: QueueFeatures::KERNEL_DISPATCH,
        base_address: ring,
        doorbell_signal: SignalHandle(doorbell),
        size,
        reserved1: 0,
        id,
    });
    q.group_segment_aperture_base_hi = SHARED_APERTURE_HI;
    q.private_segment_aperture_base_hi = PRIVATE_APERTURE_HI;
    q.max_cu_id = profile.compute_units.saturating_sub(1);
    q.max_wave_id = MAX_WAVES_PER_CU - 1;
    mem.write_bytes(address, q.as_bytes()).map_err(oom)?;

    let (rt2, e2) = (Arc::clone(rt), Arc::clone(&entry));
    let thread = std::thread::Builder::new()
        .name(format!("aqueduct-sim queue {id}"))
        .spawn(move || process(&rt2, &e2))
        .map_err(|_| HSA_STATUS_ERROR_OUT_OF_RESOURCES)?;
    *entry.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread);
    let mut all = live();
    all.insert(address, entry);
    live_changed();
    drop(all);
    Ok(address)
}

/// Stops and joins the processor of the queue at `queue` and frees the
/// queue; INVALID_QUEUE if it is not a live queue (ROCr `hsa.cpp`
/// `hsa_queue_destroy`). The memory goes at once unless another thread
/// has the queue cached ([`LAST_QUEUE`]); then at that thread's next
/// index call or exit.
pub fn destroy(queue: u64) -> Result<(), Status> {
    let entry = {
        let mut all = live();
        let entry = all.remove(&queue).ok_or(HSA_STATUS_ERROR_INVALID_QUEUE)?;
        live_changed();
        entry
    };
    forget_cached(|e| e.address == queue);
    entry.stop_and_join();
    Ok(())
}

/// Whether `queue` is the `hsa_queue_t*` of a live queue (of any runtime
/// of this process).
pub fn is_live(queue: u64) -> bool {
    live().contains_key(&queue)
}

/// Whether `signal` is the doorbell signal of a live queue.
pub fn is_doorbell(signal: u64) -> bool {
    live().values().any(|q| q.doorbell == signal)
}

/// Runs `f` on the live queue at `queue`; `R::default()` if there is none.
/// Takes neither the lock nor a reference when this thread's last queue
/// is the one asked for and no queue was made or destroyed since.
fn with_queue<R: Default>(queue: *const HsaQueue, f: impl FnOnce(&Entry) -> R) -> R {
    let address = queue as u64;
    let now = LIVE_GENERATION.load(Ordering::Acquire);
    let mut f = Some(f);
    let fast = LAST_QUEUE.try_with(|c| {
        // Held while `f` runs; `f` does not call back in, and if it did it
        // would take the slow path.
        let mut slot = c.try_borrow_mut().ok()?;
        if slot
            .as_ref()
            .is_none_or(|(g, a, _)| (*g, *a) != (now, address))
        {
            // A stale entry may be a destroyed queue's last reference:
            // freed here, not under the lock.
            *slot = None;
            let all = live();
            *slot = all.get(&address).map(|e| {
                let generation = LIVE_GENERATION.load(Ordering::Relaxed);
                (generation, address, e.clone())
            });
        }
        let f = f.take()?;
        Some(slot.as_ref().map(|(_, _, e)| f(e)).unwrap_or_default())
    });
    if let Ok(Some(r)) = fast {
        return r;
    }
    let entry = live().get(&address).cloned();
    match (entry, f.take()) {
        (Some(e), Some(f)) => f(&e),
        _ => R::default(),
    }
}

/// A producer's doorbell store, without the valid-range table: if the
/// signal `handle` is the doorbell of this thread's last queue (the one
/// whose write index it just moved), stores `value` to it and returns true.
/// The queue's reference in [`LAST_QUEUE`] keeps the doorbell allocated.
pub(super) fn store_own_doorbell(handle: u64, value: i64, order: Ordering) -> bool {
    let now = LIVE_GENERATION.load(Ordering::Acquire);
    LAST_QUEUE
        .try_with(|c| {
            let Ok(slot) = c.try_borrow() else {
                return false;
            };
            match slot.as_ref() {
                Some((g, _, e)) if *g == now && e.doorbell == SignalHandle(handle).address() => {
                    e.doorbell_value().store(value as u64, order);
                    true
                }
                _ => false,
            }
        })
        .unwrap_or(false)
}

// ===========================================================================
// The packet processor
// ===========================================================================

/// Why processing stopped.
enum Halt {
    /// The queue was destroyed, inactivated or shut down.
    Asked,
    /// A queue error: the status for the callback and the text for stderr.
    Error(Status, String),
}

fn error(s: Status, why: impl Into<String>) -> Halt {
    Halt::Error(s, why.into())
}

/// Sleeps of an idle processor: doubling from [`IDLE_PARK_MIN`] to
/// [`IDLE_PARK_MAX`], back to the minimum after each packet.
struct Backoff(Duration);

impl Backoff {
    fn new() -> Self {
        Self(IDLE_PARK_MIN)
    }

    /// Sleeps until a notification after `seen` of a watched signal, or
    /// the backoff's timeout.
    fn park(&mut self, rt: &Runtime, seen: u64) {
        rt.signals.park_since(seen, self.0);
        self.0 = (self.0 * 2).min(IDLE_PARK_MAX);
    }
}

fn process(rt: &Runtime, q: &Entry) {
    let mut idle = Backoff::new();
    while !q.stop.load(Ordering::Acquire) {
        // Only this thread writes `read_dispatch_id` (producers never do).
        let id = q.read_dispatch_id().load(Ordering::Relaxed);
        let slot = q.slot(id);
        // Watch the doorbell before looking at the slot, so a ring between
        // the look and the sleep still wakes this thread.
        let watch = rt.signals.watch([q.doorbell]);
        let seen = rt.signals.seen();
        let first = q.first_dword(slot).load(Ordering::Acquire);
        if !is_published(first) {
            idle.park(rt, seen);
            continue;
        }
        drop(watch);
        idle = Backoff::new();
        let mut bytes = [0u8; PACKET_SIZE];
        if rt.memory.read_bytes(slot, &mut bytes).is_err() {
            // The ring lives as long as `q`: not reachable.
            return;
        }
        let Ok(packet) = AqlPacket::read_from_bytes(&bytes) else {
            return;
        };
        let completion = match execute(rt, q, id, slot, &packet) {
            Ok(c) => c,
            Err(Halt::Asked) => return,
            Err(Halt::Error(s, why)) => {
                report(q, id, s, &why);
                return;
            }
        };
        // Free the slot, then publish the new read index, then complete.
        q.first_dword(slot)
            .store(consumed(first), Ordering::Release);
        q.read_dispatch_id()
            .store(id.wrapping_add(1), Ordering::Release);
        if !completion.is_null() && !super::signal::subtract(rt, completion.address(), 1) {
            let why = format!(
                "completion signal {:#x} is not a signal in device memory",
                completion.0
            );
            report(q, id, HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, &why);
            return;
        }
    }
}

/// Prints what stopped the queue and calls its error callback.
fn report(q: &Entry, id: u64, s: Status, why: &str) {
    eprintln!(
        "aqueduct-sim: queue {} (hsa_queue_t {:#x}), packet {id}: {why}; \
         queue error {s:#x}, the queue stops processing",
        q.id, q.address
    );
    if let Some(cb) = q.callback {
        // SAFETY: the callback and its data are what the application gave
        // hsa_queue_create for this queue, called as ROCr calls them.
        unsafe { cb(s, q.address as *mut HsaQueue, q.data as *mut c_void) };
    }
}

/// Processes one published packet; returns its completion signal.
fn execute(
    rt: &Runtime,
    q: &Entry,
    id: u64,
    slot: u64,
    packet: &AqlPacket,
) -> Result<SignalHandle, Halt> {
    let kind = packet.header.packet_type();
    match kind {
        PacketType::KERNEL_DISPATCH => {
            let p = read::<KernelDispatchPacket>(packet);
            kernel_dispatch(rt, q, id, slot, &p)?;
            Ok(p.completion_signal)
        }
        PacketType::BARRIER_AND => {
            let p = read::<BarrierAndPacket>(packet);
            wait_until(rt, q, &p.dep_signal, || {
                Ok(deps(rt, &p.dep_signal)?.iter().all(|&v| v == 0))
            })?;
            Ok(p.completion_signal)
        }
        PacketType::BARRIER_OR => {
            let p = read::<BarrierOrPacket>(packet);
            wait_until(rt, q, &p.dep_signal, || {
                let values = deps(rt, &p.dep_signal)?;
                // With no dependencies at all there is nothing to wait for.
                Ok(values.is_empty() || values.contains(&0))
            })?;
            Ok(p.completion_signal)
        }
        PacketType::VENDOR_SPECIFIC => {
            let Some(p) = packet.as_typed::<AmdBarrierValuePacket>() else {
                // ROCr: EC_QUEUE_PACKET_VENDOR_UNSUPPORTED.
                return Err(error(
                    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                    format!(
                        "vendor-specific packet of AMD format {} is not supported",
                        packet.body[0]
                    ),
                ));
            };
            if p.cond.holds(0, 0).is_none() {
                return Err(error(
                    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                    format!(
                        "barrier-value condition {} is not one of EQ/NE/LT/GTE",
                        p.cond.0
                    ),
                ));
            }
            wait_until(rt, q, &[p.signal], || {
                let v = signal_value(rt, p.signal)?;
                Ok(p.cond.holds(v & p.mask, p.value) == Some(true))
            })?;
            Ok(p.completion_signal)
        }
        PacketType::AGENT_DISPATCH => {
            let p = read::<AgentDispatchPacket>(packet);
            let Some(handler) = rt.queues.agent_dispatch_handler() else {
                return Err(error(
                    HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
                    "agent-dispatch packet and no agent-dispatch handler is registered",
                ));
            };
            let call = AgentCall {
                queue: q.address,
                dispatch_id: id,
                packet: p,
            };
            handler(&call)
                .map_err(|s| error(s, format!("agent-dispatch function {} failed", p.function)))?;
            Ok(p.completion_signal)
        }
        _ => Err(error(
            HSA_STATUS_ERROR_INVALID_PACKET_FORMAT,
            format!("packet type {} is not an AQL packet type", kind.0),
        )),
    }
}

/// `packet` as the layout its header selected (every layout is 64 bytes of
/// plain integers, so this cannot fail).
fn read<P: FromBytes>(packet: &AqlPacket) -> P {
    P::read_from_bytes(packet.as_bytes()).unwrap_or_else(|_| P::new_zeroed())
}

/// The value of signal `h`: a handle that is not a signal in device memory
/// is a fault, as the command processor's read of it would be.
fn signal_value(rt: &Runtime, h: SignalHandle) -> Result<i64, Halt> {
    super::signal::value(rt, h.address()).ok_or_else(|| {
        error(
            HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION,
            format!("signal {:#x} is not a signal in device memory", h.0),
        )
    })
}

/// The values of a barrier's non-null dependency signals.
fn deps(rt: &Runtime, signals: &[SignalHandle]) -> Result<Vec<i64>, Halt> {
    signals
        .iter()
        .filter(|h| !h.is_null())
        .map(|&h| signal_value(rt, h))
        .collect()
}

/// Parks until `ready` holds (signal writes through the runtime notify;
/// device stores are seen within the backoff's timeout), or the queue is
/// asked to stop.
fn wait_until(
    rt: &Runtime,
    q: &Entry,
    watch: &[SignalHandle],
    mut ready: impl FnMut() -> Result<bool, Halt>,
) -> Result<(), Halt> {
    let mut idle = Backoff::new();
    let _watch = rt.signals.watch(watch.iter().map(|h| h.0));
    loop {
        let seen = rt.signals.seen();
        if ready()? {
            return Ok(());
        }
        if q.stop.load(Ordering::Acquire) {
            return Err(Halt::Asked);
        }
        idle.park(rt, seen);
    }
}

fn kernel_dispatch(
    rt: &Runtime,
    q: &Entry,
    id: u64,
    slot: u64,
    p: &KernelDispatchPacket,
) -> Result<(), Halt> {
    // The command processor's packet checks, with the statuses of ROCr's
    // `AqlQueue::ExceptionHandler` for each EC_QUEUE_PACKET_* code.
    let dims = p.dimensions();
    if !(1..=3).contains(&dims) {
        return Err(error(
            HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
            format!("dispatch packet with {dims} grid dimensions"),
        ));
    }
    let wg = [p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z].map(u64::from);
    let items: u64 = wg.iter().product();
    if items == 0 || items > WORKGROUP_MAX_SIZE {
        return Err(error(
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            format!("workgroup {wg:?} is empty or larger than {WORKGROUP_MAX_SIZE} work-items"),
        ));
    }
    if p.group_segment_size > MAX_LDS {
        return Err(error(
            HSA_STATUS_ERROR_INVALID_ALLOCATION,
            format!(
                "group segment of {} bytes exceeds the {MAX_LDS} of LDS",
                p.group_segment_size
            ),
        ));
    }
    let Some((program, k)) = rt.executables.kernel_at(q.agent, p.kernel_object) else {
        return Err(error(
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
            format!(
                "kernel_object {:#x} is not a kernel loaded for this agent",
                p.kernel_object
            ),
        ));
    };
    let kernel = &program.code_object.kernels[k];
    let mut launch = Launch::from_packet(p, slot);
    launch.queue_address = q.address;
    launch.dispatch_id = id;
    // A device interrupt (s_sendmsg) wakes host signal waiters while the
    // kernel still runs, as the hardware's interrupt does.
    let wake = |e: Event| {
        if matches!(e, Event::Message { .. }) {
            super::signal::on_interrupt(rt);
        }
    };
    match dispatch::run_observed(&program, kernel, &launch, *DISPATCH_THREADS, &wake) {
        Ok(_) => Ok(()),
        Err(e) => Err(error(
            error_status(&e),
            format!("kernel {}: {e}", kernel.name()),
        )),
    }
}

/// The status ROCr's queue error callback reports for what stopped a
/// dispatch. Sources: ROCr `AqlQueue::ExceptionHandler`'s table of KFD
/// exception codes (newest rocm-systems), and the older
/// `DynamicScratchHandler` error bits for the same events:
///
/// | simulator                                   | hardware event                   | status |
/// |---------------------------------------------|----------------------------------|--------|
/// | access outside device memory, misaligned atomic | EC_DEVICE_MEMORY_VIOLATION / EC_QUEUE_WAVE_APERTURE_VIOLATION (bit 0x20000000) | MEMORY_APERTURE_VIOLATION (41) |
/// | undecodable, unimplemented or invalid instruction, bad branch, running off the code | EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION (0x40000000) | ILLEGAL_INSTRUCTION (42) |
/// | `s_trap`, `s_sethalt`                        | EC_QUEUE_WAVE_TRAP (0x80000000)  | EXCEPTION |
/// | invalid launch                              | EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID | INVALID_ARGUMENT |
/// | no memory for scratch                       | out of scratch                   | OUT_OF_RESOURCES |
///
/// MEMORY_FAULT (43) is not used: newest ROCr maps a wave's page fault
/// (EC_QUEUE_WAVE_MEMORY_VIOLATION) to it but then suppresses it from the
/// queue callback, reporting the fault through the system event handler
/// (and by default aborting the process); the simulator reports it on the
/// queue, so it uses the status ROCr's callback gives a memory violation.
pub fn error_status(e: &DispatchError) -> Status {
    match e {
        DispatchError::Fault(r) => match r.fault {
            Fault::Memory { .. } | Fault::Misaligned { .. } => {
                HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
            }
            Fault::Decode(_)
            | Fault::Unimplemented { .. }
            | Fault::Register { .. }
            | Fault::Operand { .. }
            | Fault::BranchTarget { .. }
            | Fault::RanOffEnd => HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
            Fault::Trap { .. } | Fault::Halt => HSA_STATUS_ERROR_EXCEPTION,
        },
        DispatchError::BadLaunch(_) => HSA_STATUS_ERROR_INVALID_ARGUMENT,
        DispatchError::Memory(_) => HSA_STATUS_ERROR_OUT_OF_RESOURCES,
    }
}

// ===========================================================================
// Exports
// ===========================================================================

/// `hsa_queue_create`: see [`create`] for the checks. The segment-size
/// hints are ignored (the simulator sizes scratch and LDS per dispatch).
///
/// # Safety
/// `queue` is null or valid for a pointer write; `callback`/`data` follow
/// hsa.h's contract.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn hsa_queue_create(
    agent: Agent,
    size: u32,
    queue_type: u32,
    callback: Option<ErrorCallback>,
    data: *mut c_void,
    _private_segment_size: u32,
    _group_segment_size: u32,
    queue: *mut *mut HsaQueue,
) -> Status {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    if queue.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    match create(&rt, agent.0, size, queue_type, callback, data) {
        // SAFETY: `queue` is non-null and valid for a write (caller).
        Ok(q) => unsafe { super::put(queue, q as *mut HsaQueue) },
        Err(s) => s,
    }
}

/// `hsa_queue_destroy`: null is INVALID_ARGUMENT, an unknown queue
/// INVALID_QUEUE (ROCr `hsa.cpp`).
///
/// # Safety
/// None beyond the C ABI: the pointer is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_destroy(queue: *mut HsaQueue) -> Status {
    if let Err(s) = runtime() {
        return s;
    }
    if queue.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    super::done(destroy(queue as u64))
}

/// `hsa_queue_inactivate`: the processor stops taking packets (ROCr
/// destroys the hardware queue); the queue must still be destroyed.
///
/// # Safety
/// None beyond the C ABI: the pointer is only looked up.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsa_queue_inactivate(queue: *mut HsaQueue) -> Status {
    if let Err(s) = runtime() {
        return s;
    }
    if queue.is_null() {
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    }
    let found = with_queue(queue, |e| {
        e.stop.store(true, Ordering::Release);
        true
    });
    if found {
        HSA_STATUS_SUCCESS
    } else {
        HSA_STATUS_ERROR_INVALID_QUEUE
    }
}

// The index functions return no status and ROCr does not check their
// argument. Here an unknown queue is ignored (loads return 0), since a
// panic must not cross the C boundary. hsa.h's deprecated spellings
// (`_acquire`, `_release`, `_acq_rel`) are exported too, as ROCr does.

/// Which dispatch id of an `amd_queue_t`.
#[derive(Clone, Copy)]
enum Index {
    Read,
    Write,
}

fn with_index<R: Default>(
    queue: *const HsaQueue,
    index: Index,
    op: impl FnOnce(&AtomicU64) -> R,
) -> R {
    with_queue(queue, |e| match index {
        Index::Read => op(e.read_dispatch_id()),
        Index::Write => op(e.write_dispatch_id()),
    })
}

/// The load ordering a `_scacquire`/`_relaxed` suffix names.
const ACQUIRE: Ordering = Ordering::Acquire;
const RELAXED: Ordering = Ordering::Relaxed;
const RELEASE: Ordering = Ordering::Release;
const ACQ_REL: Ordering = Ordering::AcqRel;

/// The failure ordering of a compare-and-swap with `success` ordering.
const fn failure(success: Ordering) -> Ordering {
    match success {
        Ordering::Acquire | Ordering::AcqRel | Ordering::SeqCst => Ordering::Acquire,
        _ => Ordering::Relaxed,
    }
}

macro_rules! load_index {
    ($($name:ident: $index:ident, $order:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// None beyond the C ABI: the pointer is looked up first.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue) -> u64 {
            with_index(queue, Index::$index, |i| i.load($order))
        }
    )*};
}

macro_rules! store_index {
    ($($name:ident: $index:ident, $order:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// None beyond the C ABI: the pointer is looked up first.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue, value: u64) {
            with_index(queue, Index::$index, |i| i.store(value, $order))
        }
    )*};
}

macro_rules! add_write_index {
    ($($name:ident: $order:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: returns the previous write index.")]
        ///
        /// # Safety
        /// None beyond the C ABI: the pointer is looked up first.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue, value: u64) -> u64 {
            with_index(queue, Index::Write, |i| i.fetch_add(value, $order))
        }
    )*};
}

macro_rules! cas_write_index {
    ($($name:ident: $order:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: returns the write index before the operation.")]
        ///
        /// # Safety
        /// None beyond the C ABI: the pointer is looked up first.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(queue: *const HsaQueue, expected: u64, value: u64) -> u64 {
            with_index(queue, Index::Write, |i| {
                i.compare_exchange(expected, value, $order, failure($order))
                    .unwrap_or_else(|current| current)
            })
        }
    )*};
}

load_index! {
    hsa_queue_load_read_index_scacquire: Read, ACQUIRE;
    hsa_queue_load_read_index_acquire: Read, ACQUIRE;
    hsa_queue_load_read_index_relaxed: Read, RELAXED;
    hsa_queue_load_write_index_scacquire: Write, ACQUIRE;
    hsa_queue_load_write_index_acquire: Write, ACQUIRE;
    hsa_queue_load_write_index_relaxed: Write, RELAXED;
}

store_index! {
    hsa_queue_store_write_index_relaxed: Write, RELAXED;
    hsa_queue_store_write_index_screlease: Write, RELEASE;
    hsa_queue_store_write_index_release: Write, RELEASE;
    hsa_queue_store_read_index_relaxed: Read, RELAXED;
    hsa_queue_store_read_index_screlease: Read, RELEASE;
    hsa_queue_store_read_index_release: Read, RELEASE;
}

add_write_index! {
    hsa_queue_add_write_index_scacq_screl: ACQ_REL;
    hsa_queue_add_write_index_acq_rel: ACQ_REL;
    hsa_queue_add_write_index_scacquire: ACQUIRE;
    hsa_queue_add_write_index_acquire: ACQUIRE;
    hsa_queue_add_write_index_relaxed: RELAXED;
    hsa_queue_add_write_index_screlease: RELEASE;
    hsa_queue_add_write_index_release: RELEASE;
}

cas_write_index! {
    hsa_queue_cas_write_index_scacq_screl: ACQ_REL;
    hsa_queue_cas_write_index_acq_rel: ACQ_REL;
    hsa_queue_cas_write_index_scacquire: ACQUIRE;
    hsa_queue_cas_write_index_acquire: ACQUIRE;
    hsa_queue_cas_write_index_relaxed: RELAXED;
    hsa_queue_cas_write_index_screlease: RELEASE;
    hsa_queue_cas_write_index_release: RELEASE;
}

/// A host service as C code registers it with
/// [`aqueduct_sim_set_agent_dispatch_handler`]: called on the queue's
/// processor thread with the packet, its queue and its id; SUCCESS
/// completes the packet, any other status is the queue's error.
pub type AgentDispatchCallback =
    unsafe extern "C" fn(*const AgentDispatchPacket, *mut HsaQueue, u64, *mut c_void) -> Status;

/// The registrant's `data` pointer, carried to the processor threads.
struct CallbackData(*mut c_void);

// SAFETY: the registrant of a C callback promises that `data` may be used
// from the queues' processor threads (the contract of
// `aqueduct_sim_set_agent_dispatch_handler`); the simulator only passes it
// back to the callback.
unsafe impl Send for CallbackData {}
// SAFETY: as above; the pointer is never dereferenced here.
unsafe impl Sync for CallbackData {}

/// The simulator's C-ABI registration of a host service for AGENT_DISPATCH
/// packets, so a program that loaded the library (the host shim's tests,
/// a C embedder) can serve them: the Rust API
/// [`State::set_agent_dispatch_handler`] lives in whichever copy of the
/// simulator one links, while packets go to the runtime in the loaded
/// library. `handler` null removes the service. NOT_INITIALIZED before
/// `hsa_init`.
///
/// # Safety
/// `handler` must be safe to call from any thread with the packets the
/// processors pass and with `data`, until it is replaced or the runtime is
/// shut down.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aqueduct_sim_set_agent_dispatch_handler(
    handler: Option<AgentDispatchCallback>,
    data: *mut c_void,
) -> Status {
    let rt = match super::runtime() {
        Ok(rt) => rt,
        Err(s) => return s,
    };
    let Some(handler) = handler else {
        rt.queues.set_agent_dispatch_handler(None);
        return HSA_STATUS_SUCCESS;
    };
    let data = CallbackData(data);
    let service = move |call: &AgentCall| {
        let data = &data;
        // SAFETY: the registrant's contract: `handler` accepts these
        // arguments from this thread; the packet outlives the call.
        let s = unsafe {
            handler(
                &call.packet,
                call.queue as *mut HsaQueue,
                call.dispatch_id,
                data.0,
            )
        };
        if s == HSA_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(s)
        }
    };
    rt.queues
        .set_agent_dispatch_handler(Some(Arc::new(service)));
    HSA_STATUS_SUCCESS
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use aqueduct_abi::aql::{FenceScope, Packet};
    use aqueduct_abi::aql_ring::doorbell_value;
    use aqueduct_abi::hsa::SignalCondition;
    use zerocopy::FromZeros;

    use super::super::{AgentSpec, signal};
    use super::*;

    /// A private runtime (the process-global one is shared with other
    /// tests running in parallel).
    fn runtime() -> Arc<Runtime> {
        Arc::new(Runtime::new(&AgentSpec::parse_list("gfx942").unwrap()))
    }

    fn gpu(rt: &Runtime) -> u64 {
        rt.agents.iter().find(|a| a.node == 1).unwrap().handle
    }

    fn queue(rt: &Arc<Runtime>, seen: Option<&Seen>) -> u64 {
        let data = seen.map_or(std::ptr::null_mut(), |s| {
            (s as *const Seen).cast_mut().cast()
        });
        create(rt, gpu(rt), 64, QueueType::MULTI.0, Some(record), data).unwrap()
    }

    /// A user signal in device memory, as hsa_signal_create makes them.
    fn new_signal(rt: &Runtime, value: i64) -> SignalHandle {
        let a = rt.memory.alloc(64, 64).unwrap();
        rt.memory
            .write_bytes(a, AmdSignal::user(value).as_bytes())
            .unwrap();
        SignalHandle(a)
    }

    /// A host store to a signal: release, then wake waiters.
    fn store(rt: &Runtime, h: SignalHandle, value: i64) {
        signal::value_word(rt, h.0)
            .unwrap()
            .store(value, Ordering::Release);
        rt.signals.notify();
    }

    fn load(rt: &Runtime, h: SignalHandle) -> i64 {
        signal::value(rt, h.0).unwrap()
    }

    fn amd_queue(rt: &Runtime, q: u64) -> AmdQueue {
        let mut b = [0u8; size_of::<AmdQueue>()];
        rt.memory.read_bytes(q, &mut b).unwrap();
        AmdQueue::read_from_bytes(&b).unwrap()
    }

    fn read_index(q: u64) -> u64 {
        // SAFETY: the index functions only look the pointer up.
        unsafe { hsa_queue_load_read_index_scacquire(q as *const HsaQueue) }
    }

    fn header_at(rt: &Runtime, q: u64, id: u64) -> PacketType {
        let slot = amd_queue(rt, q).hsa_queue.base_address + slot_offset(id, 64);
        let mut b = [0u8; 2];
        rt.memory.read_bytes(slot, &mut b).unwrap();
        PacketHeader(u16::from_le_bytes(b)).packet_type()
    }

    /// Reserves the next packet id.
    fn reserve(q: u64) -> u64 {
        // SAFETY: the index functions only look the pointer up.
        unsafe { hsa_queue_add_write_index_scacq_screl(q as *const HsaQueue, 1) }
    }

    /// Writes `packet` into slot `id` the way a producer must: body first,
    /// then the first dword (header and setup) with one release store. A
    /// plain store wakes nobody, as a device store would not.
    fn publish<P: Packet>(rt: &Runtime, q: u64, id: u64, packet: &P) {
        let slot = amd_queue(rt, q).hsa_queue.base_address + slot_offset(id, 64);
        let bytes = packet.as_bytes();
        rt.memory.write_bytes(slot + 4, &bytes[4..]).unwrap();
        let first = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        let mut m = rt.memory.access();
        m.check(slot, 4).unwrap();
        m.atomic_u32(slot).unwrap().store(first, Ordering::Release);
    }

    /// The host's doorbell: a release store of the packet id, which wakes.
    fn ring(rt: &Runtime, q: u64, id: u64) {
        let bell = amd_queue(rt, q).hsa_queue.doorbell_signal;
        store(rt, bell, doorbell_value(id));
    }

    fn submit<P: Packet>(rt: &Runtime, q: u64, packet: &P) -> u64 {
        let id = reserve(q);
        publish(rt, q, id, packet);
        ring(rt, q, id);
        id
    }

    fn header(kind: PacketType) -> PacketHeader {
        PacketHeader::new(kind, true, FenceScope::SYSTEM, FenceScope::SYSTEM)
    }

    fn barrier_and(deps: &[SignalHandle], completion: SignalHandle) -> BarrierAndPacket {
        let mut p = BarrierAndPacket::new_zeroed();
        p.header = header(PacketType::BARRIER_AND);
        p.dep_signal[..deps.len()].copy_from_slice(deps);
        p.completion_signal = completion;
        p
    }

    fn barrier_or(deps: &[SignalHandle], completion: SignalHandle) -> BarrierOrPacket {
        let mut p = BarrierOrPacket::new_zeroed();
        p.header = header(PacketType::BARRIER_OR);
        p.dep_signal[..deps.len()].copy_from_slice(deps);
        p.completion_signal = completion;
        p
    }

    /// Long enough for an idle processor to have looked several times.
    const SETTLE: Duration = Duration::from_millis(30);

    fn eventually(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// What the error callback saw.
    #[derive(Default)]
    struct Seen(Mutex<Vec<(Status, u64)>>);

    impl Seen {
        fn errors(&self) -> Vec<(Status, u64)> {
            self.0.lock().unwrap().clone()
        }
    }

    unsafe extern "C" fn record(s: Status, q: *mut HsaQueue, data: *mut c_void) {
        if data.is_null() {
            return;
        }
        // SAFETY: tests pass a `Seen` that outlives the queue.
        let seen = unsafe { &*data.cast::<Seen>() };
        seen.0.lock().unwrap().push((s, q as u64));
    }

    #[test]
    fn create_checks_arguments_in_rocrs_order() {
        let rt = runtime();
        let (g, cpu) = (gpu(&rt), rt.agents[0].handle);
        let multi = QueueType::MULTI.0;
        let nul = std::ptr::null_mut();
        let try_create = |agent, size, ty| create(&rt, agent, size, ty, None, nul).err();
        assert_eq!(
            try_create(g, 100, multi),
            Some(HSA_STATUS_ERROR_INVALID_ARGUMENT)
        );
        assert_eq!(
            try_create(g, 0, multi),
            Some(HSA_STATUS_ERROR_INVALID_ARGUMENT)
        );
        assert_eq!(
            try_create(g, 64, 3),
            Some(HSA_STATUS_ERROR_INVALID_ARGUMENT)
        );
        assert_eq!(
            try_create(0x1234, 64, multi),
            Some(HSA_STATUS_ERROR_INVALID_AGENT)
        );
        assert_eq!(try_create(cpu, 64, multi), Some(HSA_STATUS_ERROR));
        assert_eq!(
            try_create(g, QUEUE_MAX_PACKETS * 2, multi),
            Some(HSA_STATUS_ERROR_OUT_OF_RESOURCES)
        );
        assert_eq!(
            try_create(g, QUEUE_MIN_PACKETS / 2, multi),
            Some(HSA_STATUS_ERROR_INVALID_ARGUMENT)
        );
        let q = create(
            &rt,
            g,
            QUEUE_MIN_PACKETS,
            QueueType::COOPERATIVE.0,
            None,
            nul,
        )
        .unwrap();
        destroy(q).unwrap();
        rt.queues.shut_down();
    }

    #[test]
    fn a_new_queue_is_laid_out_like_rocrs() {
        let rt = runtime();
        let q = queue(&rt, None);
        let a = amd_queue(&rt, q);
        assert_eq!(q % 64, 0);
        assert_eq!(a.hsa_queue.size, 64);
        assert_eq!(a.hsa_queue.queue_type, QueueType::MULTI);
        assert_eq!(a.hsa_queue.features, QueueFeatures::KERNEL_DISPATCH);
        assert_eq!(a.hsa_queue.base_address % (64 * PACKET_SIZE as u64), 0);
        assert_eq!((a.read_dispatch_id, a.write_dispatch_id), (0, 0));
        assert_eq!(a.read_dispatch_id_field_base_byte_offset, 128);
        assert_eq!(a.group_segment_aperture_base_hi, SHARED_APERTURE_HI);
        assert_eq!(a.private_segment_aperture_base_hi, PRIVATE_APERTURE_HI);
        assert!((0..64).all(|i| header_at(&rt, q, i) == PacketType::INVALID));
        // The doorbell is a signal in device memory whose value is the word
        // the host and device store to.
        let bell = a.hsa_queue.doorbell_signal;
        let mut b = [0u8; 64];
        rt.memory.read_bytes(bell.0, &mut b).unwrap();
        let s = AmdSignal::read_from_bytes(&b).unwrap();
        assert_eq!(s.kind, aqueduct_abi::amd_signal::AmdSignalKind::USER);
        assert_eq!(s.queue_ptr, q);
        store(&rt, bell, 7);
        assert_eq!(load(&rt, bell), 7);
        // Ids are unique.
        let q2 = queue(&rt, None);
        assert_ne!(amd_queue(&rt, q2).hsa_queue.id, a.hsa_queue.id);
        rt.queues.shut_down();
    }

    #[test]
    fn barrier_and_waits_for_every_dependency_and_packets_complete_in_order() {
        let rt = runtime();
        let q = queue(&rt, None);
        let (a, b) = (new_signal(&rt, 1), new_signal(&rt, 1));
        let (c0, c1) = (new_signal(&rt, 1), new_signal(&rt, 1));
        submit(&rt, q, &barrier_and(&[a, SignalHandle::NULL, b], c0));
        // No dependencies: ready at once, but behind the first.
        submit(&rt, q, &barrier_and(&[], c1));
        std::thread::sleep(SETTLE);
        store(&rt, a, 0);
        std::thread::sleep(SETTLE);
        assert_eq!((load(&rt, c0), load(&rt, c1), read_index(q)), (1, 1, 0));
        store(&rt, b, 0);
        eventually("the second barrier completes", || load(&rt, c1) == 0);
        assert_eq!(load(&rt, c0), 0);
        assert_eq!(read_index(q), 2);
        assert_eq!(header_at(&rt, q, 0), PacketType::INVALID);
        assert_eq!(header_at(&rt, q, 1), PacketType::INVALID);
        rt.queues.shut_down();
    }

    #[test]
    fn barrier_or_completes_once_any_dependency_is_zero() {
        let rt = runtime();
        let q = queue(&rt, None);
        let (a, b, c) = (new_signal(&rt, 1), new_signal(&rt, 1), new_signal(&rt, 1));
        submit(&rt, q, &barrier_or(&[a, b], c));
        std::thread::sleep(SETTLE);
        assert_eq!(load(&rt, c), 1);
        store(&rt, b, 0);
        eventually("the barrier completes", || load(&rt, c) == 0);
        assert_eq!(load(&rt, a), 1);
        rt.queues.shut_down();
    }

    #[test]
    fn a_header_stored_after_the_doorbell_is_still_picked_up() {
        let rt = runtime();
        let q = queue(&rt, None);
        let c = new_signal(&rt, 1);
        let id = reserve(q);
        ring(&rt, q, id);
        std::thread::sleep(SETTLE);
        assert_eq!(read_index(q), 0);
        // Published with a plain store, as device code would: no wake-up,
        // so the processor must find it by itself.
        publish(&rt, q, id, &barrier_and(&[], c));
        eventually("the late packet completes", || load(&rt, c) == 0);
        assert_eq!(read_index(q), 1);
        rt.queues.shut_down();
    }

    #[test]
    fn the_ring_wraps_around() {
        let rt = runtime();
        let q = queue(&rt, None);
        let c = new_signal(&rt, 150);
        for _ in 0..150 {
            let id = reserve(q);
            eventually("a slot is free", || id - read_index(q) < 64);
            publish(&rt, q, id, &barrier_and(&[], c));
            ring(&rt, q, id);
        }
        eventually("every packet completes", || load(&rt, c) == 0);
        assert_eq!(read_index(q), 150);
        rt.queues.shut_down();
    }

    #[test]
    fn an_invalid_packet_type_stops_the_queue_with_invalid_packet_format() {
        let rt = runtime();
        let seen = Seen::default();
        let q = queue(&rt, Some(&seen));
        let (c0, c1) = (new_signal(&rt, 1), new_signal(&rt, 1));
        let mut bad = barrier_and(&[], c0);
        bad.header = PacketHeader(7);
        submit(&rt, q, &bad);
        submit(&rt, q, &barrier_and(&[], c1));
        eventually("the error callback runs", || !seen.errors().is_empty());
        std::thread::sleep(SETTLE);
        assert_eq!(
            seen.errors(),
            vec![(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, q)]
        );
        // Nothing after the bad packet runs, and it is not consumed.
        assert_eq!((load(&rt, c0), load(&rt, c1), read_index(q)), (1, 1, 0));
        rt.queues.shut_down();
    }

    #[test]
    fn agent_dispatch_goes_to_the_registered_handler() {
        let rt = runtime();
        let seen = Seen::default();
        let q = queue(&rt, Some(&seen));
        let mut p = AgentDispatchPacket::new_zeroed();
        p.header = header(PacketType::AGENT_DISPATCH);
        p.function = 9;
        p.arg = [1, 2, 3, 4];
        // No handler yet: the packet type is unsupported.
        p.completion_signal = new_signal(&rt, 1);
        submit(&rt, q, &p);
        eventually("the error callback runs", || !seen.errors().is_empty());
        assert_eq!(
            seen.errors(),
            vec![(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, q)]
        );

        let calls = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&calls);
        rt.queues
            .set_agent_dispatch_handler(Some(Arc::new(move |call: &AgentCall| {
                log.lock().unwrap().push(*call);
                Ok(())
            })));
        let q2 = queue(&rt, None);
        p.completion_signal = new_signal(&rt, 1);
        let id = submit(&rt, q2, &p);
        eventually("the agent dispatch completes", || {
            load(&rt, p.completion_signal) == 0
        });
        let calls = calls.lock().unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!((calls[0].queue, calls[0].dispatch_id), (q2, id));
        assert_eq!(
            (calls[0].packet.function, calls[0].packet.arg),
            (9, [1, 2, 3, 4])
        );
        rt.queues.shut_down();
    }

    #[test]
    fn amd_barrier_value_waits_for_its_condition() {
        let rt = runtime();
        let q = queue(&rt, None);
        let (s, c) = (new_signal(&rt, 0x13), new_signal(&rt, 1));
        let mut p = AmdBarrierValuePacket::new_zeroed();
        p.header.header = header(PacketType::VENDOR_SPECIFIC);
        p.header.amd_format = aqueduct_abi::aql::AmdPacketType::BARRIER_VALUE;
        p.signal = s;
        p.value = 0x20;
        p.mask = 0xf0;
        p.cond = SignalCondition::EQ;
        p.completion_signal = c;
        submit(&rt, q, &p);
        std::thread::sleep(SETTLE);
        assert_eq!(load(&rt, c), 1);
        store(&rt, s, 0x2f);
        eventually("the barrier-value packet completes", || load(&rt, c) == 0);
        rt.queues.shut_down();
    }

    #[test]
    fn a_dispatch_of_an_unknown_kernel_object_is_invalid_code_object() {
        let rt = runtime();
        let seen = Seen::default();
        let q = queue(&rt, Some(&seen));
        let mut p = KernelDispatchPacket::new_zeroed();
        p.header = header(PacketType::KERNEL_DISPATCH);
        p.setup = 1;
        (p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z) = (64, 1, 1);
        (p.grid_size_x, p.grid_size_y, p.grid_size_z) = (64, 1, 1);
        p.kernel_object = 0xdead_0000;
        p.completion_signal = new_signal(&rt, 1);
        submit(&rt, q, &p);
        eventually("the error callback runs", || !seen.errors().is_empty());
        assert_eq!(
            seen.errors(),
            vec![(HSA_STATUS_ERROR_INVALID_CODE_OBJECT, q)]
        );
        assert_eq!(load(&rt, p.completion_signal), 1);

        // Packet checks come first, with the statuses of their CP errors.
        let seen2 = Seen::default();
        let q2 = queue(&rt, Some(&seen2));
        p.setup = 0;
        submit(&rt, q2, &p);
        eventually("the error callback runs", || !seen2.errors().is_empty());
        assert_eq!(
            seen2.errors(),
            vec![(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS, q2)]
        );
        rt.queues.shut_down();
    }

    #[test]
    fn faults_map_to_rocrs_queue_error_statuses() {
        let fault = |f| {
            DispatchError::Fault(Box::new(crate::FaultReport {
                fault: f,
                pc: 0,
                word: 0,
                kernel: "k".into(),
                workgroup: [0; 3],
                wave: 0,
            }))
        };
        let mem = Fault::Memory {
            space: crate::Space::Global,
            address: 0,
            size: 4,
            write: true,
        };
        assert_eq!(
            error_status(&fault(mem)),
            HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION
        );
        assert_eq!(
            error_status(&fault(Fault::RanOffEnd)),
            HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
        );
        assert_eq!(
            error_status(&fault(Fault::Trap { id: 2 })),
            HSA_STATUS_ERROR_EXCEPTION
        );
    }

    #[test]
    fn index_functions_operate_on_the_queue_in_device_memory() {
        let rt = runtime();
        let q = queue(&rt, None) as *const HsaQueue;
        // SAFETY: the index functions only look the pointer up.
        unsafe {
            assert_eq!(hsa_queue_add_write_index_scacq_screl(q, 3), 0);
            assert_eq!(hsa_queue_cas_write_index_scacq_screl(q, 2, 9), 3);
            assert_eq!(hsa_queue_cas_write_index_scacq_screl(q, 3, 9), 3);
            assert_eq!(hsa_queue_load_write_index_relaxed(q), 9);
            hsa_queue_store_write_index_screlease(q, 11);
            assert_eq!(hsa_queue_load_write_index_scacquire(q), 11);
            assert_eq!(hsa_queue_load_read_index_relaxed(q), 0);
        }
        assert_eq!(amd_queue(&rt, q as u64).write_dispatch_id, 11);
        rt.queues.shut_down();
        // A queue that is gone reads as 0 rather than crashing.
        // SAFETY: as above.
        assert_eq!(unsafe { hsa_queue_load_write_index_relaxed(q) }, 0);
    }

    #[test]
    fn destroy_joins_the_processor_and_frees_the_queue() {
        let rt = runtime();
        let q = queue(&rt, None);
        let ring = amd_queue(&rt, q).hsa_queue.base_address;
        // This thread's use caches the queue; destroying it still frees it.
        assert_eq!(read_index(q), 0);
        // The processor holds the runtime.
        assert_eq!(Arc::strong_count(&rt), 2);
        destroy(q).unwrap();
        assert_eq!(Arc::strong_count(&rt), 1);
        assert_eq!(rt.memory.kind_of(q), None);
        assert_eq!(rt.memory.kind_of(ring), None);
        assert_eq!(destroy(q), Err(HSA_STATUS_ERROR_INVALID_QUEUE));

        // A processor waiting on a barrier stops too.
        let q = queue(&rt, None);
        submit(
            &rt,
            q,
            &barrier_and(&[new_signal(&rt, 1)], SignalHandle::NULL),
        );
        std::thread::sleep(SETTLE);
        destroy(q).unwrap();
        assert_eq!(Arc::strong_count(&rt), 1);
    }

    #[test]
    fn only_the_doorbell_of_the_current_cached_queue_skips_the_table() {
        let rt = runtime();
        let (a, b) = (queue(&rt, None), queue(&rt, None));
        let bell = |q| amd_queue(&rt, q).hsa_queue.doorbell_signal.0;
        // Caches `a`, as a producer's reservation does. (Tests running in
        // parallel make queues too, which may make the cache stale before
        // the store: then it is cached again.)
        let cached_store = (0..1000).any(|_| {
            assert_eq!(read_index(a), 0);
            store_own_doorbell(bell(a), 5, Ordering::Release)
        });
        assert!(cached_store);
        assert_eq!(signal::value(&rt, bell(a)), Some(5));
        assert!(!store_own_doorbell(bell(b), 6, Ordering::Release));
        assert_eq!(signal::value(&rt, bell(b)), Some(0));
        // A queue made or destroyed anywhere makes the cache stale, and
        // stores go through the table (which still reaches `a`'s doorbell).
        let c = queue(&rt, None);
        assert!(!store_own_doorbell(bell(a), 7, Ordering::Release));
        store(&rt, SignalHandle(bell(a)), 8);
        assert_eq!(signal::value(&rt, bell(a)), Some(8));
        // A destroyed queue's stale cache never takes a store.
        assert_eq!(read_index(c), 0);
        destroy(c).unwrap();
        assert!(!store_own_doorbell(bell(a), 9, Ordering::Release));
        assert_eq!(read_index(c), 0);
        rt.queues.shut_down();
    }

    #[test]
    fn shut_down_joins_every_processor_of_its_runtime_only() {
        let (rt, other) = (runtime(), runtime());
        let _ = (queue(&rt, None), queue(&rt, None));
        let kept = queue(&other, None);
        assert_eq!(Arc::strong_count(&rt), 3);
        rt.queues.shut_down();
        assert_eq!(Arc::strong_count(&rt), 1);
        assert_eq!(read_index(kept), 0);
        assert_eq!(Arc::strong_count(&other), 2);
        other.queues.shut_down();
    }

    #[test]
    fn the_exports_create_and_destroy_on_the_process_runtime() {
        // SAFETY: plain C calls with valid out-pointers.
        unsafe {
            assert_eq!(super::super::system::hsa_init(), HSA_STATUS_SUCCESS);
            let rt = super::super::runtime().unwrap();
            let agent = Agent(gpu(&rt));
            let mut q: *mut HsaQueue = std::ptr::null_mut();
            let create = |out| {
                hsa_queue_create(
                    agent,
                    64,
                    0,
                    None,
                    std::ptr::null_mut(),
                    u32::MAX,
                    u32::MAX,
                    out,
                )
            };
            assert_eq!(
                create(std::ptr::null_mut()),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(create(&mut q), HSA_STATUS_SUCCESS);
            assert_eq!((*q).size, 64);
            assert_eq!(hsa_queue_destroy(q), HSA_STATUS_SUCCESS);
            assert_eq!(hsa_queue_destroy(q), HSA_STATUS_ERROR_INVALID_QUEUE);
            assert_eq!(
                hsa_queue_destroy(std::ptr::null_mut()),
                HSA_STATUS_ERROR_INVALID_ARGUMENT
            );
            drop(rt);
            assert_eq!(super::super::system::hsa_shut_down(), HSA_STATUS_SUCCESS);
        }
    }
}
