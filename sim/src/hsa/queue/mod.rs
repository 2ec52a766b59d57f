//! User-mode AQL queues (hsa_queue_*): the registry of live queues. Three
//! rooms: this one makes, finds and frees queues; [`processor`] is the
//! command processor that consumes their packets; [`exports`] is the C
//! interface.
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
//! Every live queue is in one process-wide table (`LIVE`) keyed by the
//! address of its `amd_queue_t`, because the index functions get nothing
//! but that pointer; each thread caches the queue it used last, so the
//! per-packet calls of a producer take no lock. A queue's memory is freed
//! when its last reference goes: the table's, its processor thread's, or a
//! thread's cache.
//!
//! Limits: a kernel cannot be interrupted, so destroying a queue (or the
//! last `hsa_shut_down`) while a kernel runs waits for that kernel to end.
//! `queue_inactive_signal` and the scratch fields stay zero: the simulator
//! manages scratch itself and nothing in aqueduct reads them.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::amd_signal::AmdSignal;
use aqueduct_abi::aql::{PACKET_SIZE, PacketHeader};
use aqueduct_abi::aql_ring::{is_ring_size, slot_offset};
use aqueduct_abi::hsa::{HsaQueue, PacketSlot, QueueFeatures, QueueType, SignalHandle};
use aqueduct_abi::hsa_api::*;
use aqueduct_abi::view::{List, View};
use zerocopy::IntoBytes;

use super::system::{QUEUE_MAX_PACKETS, QUEUE_MIN_PACKETS};
use super::{AgentKind, Runtime};
use crate::wave::{PRIVATE_APERTURE_HI, SHARED_APERTURE_HI};

pub mod exports;
pub mod processor;
#[cfg(test)]
mod tests;

pub use exports::*;
pub use processor::{AgentCall, AgentDispatchHandler, IDLE_PARK_MAX, IDLE_PARK_MIN, error_status};

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
    /// What consumes the packets.
    consumer: Consumer,
    callback: Option<QueueErrorCallback>,
    /// The callback's `data`, an opaque pointer kept as an integer.
    data: usize,
    /// Set by destroy, shut-down and `hsa_queue_inactivate`.
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// Who consumes a queue's packets.
#[derive(Clone, Copy)]
enum Consumer {
    /// The simulated command processor of a GPU, with the GPU's facts (its
    /// dispatch limits); the queue owns its doorbell.
    Gpu(&'static aqueduct_abi::gfx::Gfx),
    /// The application that made the queue with `hsa_soft_queue_create`:
    /// no processor thread, and the doorbell is the application's signal.
    Application,
}

impl Entry {
    /// The GPU's facts, for a queue a command processor consumes.
    fn gfx(&self) -> Option<&'static aqueduct_abi::gfx::Gfx> {
        match self.consumer {
            Consumer::Gpu(g) => Some(g),
            Consumer::Application => None,
        }
    }

    /// The queue's `amd_queue_t`, as producers, this processor and device
    /// code see it.
    fn queue(&self) -> View<'_, AmdQueue> {
        // SAFETY: the `amd_queue_t` is a 64-aligned allocation this entry
        // owns and frees only in `Drop`, so it outlives `&self`; every
        // party (host, device, processor) accesses its indices atomically,
        // as the layout declares.
        unsafe { View::from_ptr(NonNull::new_unchecked(self.address as *mut AmdQueue)) }
    }

    /// The queue's ring of packet slots.
    fn ring(&self) -> List<'_, PacketSlot> {
        // SAFETY: `size` 64-byte slots at `ring`, an allocation this entry
        // owns and frees only in `Drop`; producers and the processor keep
        // the AQL protocol on them (a slot's first word atomically).
        unsafe { List::from_raw(self.ring, u64::from(self.size)) }
    }

    fn read_dispatch_id(&self) -> &AtomicU64 {
        self.queue().read_dispatch_id().core()
    }

    fn write_dispatch_id(&self) -> &AtomicU64 {
        self.queue().write_dispatch_id().core()
    }

    /// The value word of the doorbell signal.
    fn doorbell_value(&self) -> &AtomicI64 {
        // SAFETY: the doorbell is a 64-aligned `amd_signal_t` that lives
        // as long as this entry (its own, freed only in `Drop`, or the
        // application's, which must outlive the queue); its value word is
        // accessed atomically by every party.
        let bell = unsafe {
            View::<AmdSignal>::from_ptr(NonNull::new_unchecked(self.doorbell as *mut AmdSignal))
        };
        bell.value().core()
    }

    /// Address of packet `id`'s slot.
    fn slot(&self, id: u64) -> u64 {
        self.ring
            .wrapping_add(slot_offset(id, u64::from(self.size)))
    }

    /// The first dword of packet `id`'s slot: header and the 16 bits after
    /// it, which producers publish with one 32-bit release store.
    fn first_dword(&self, id: u64) -> &AtomicU32 {
        self.ring().slot(id).first_word().core()
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
        // the runtime's touches the queue any more. A soft queue's doorbell
        // is the application's signal.
        let _ = self.memory.free(self.address);
        let _ = self.memory.free(self.ring);
        if let Consumer::Gpu(_) = self.consumer {
            let _ = self.memory.free(self.doorbell);
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
    callback: Option<QueueErrorCallback>,
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

    let entry = new_entry(
        rt,
        size,
        agent,
        Consumer::Gpu(profile.facts()),
        None,
        callback,
        data as usize,
    )?;
    let (mem, oom) = (&rt.memory, |_| HSA_STATUS_ERROR_OUT_OF_RESOURCES);
    let (address, ring, doorbell, id) = (entry.address, entry.ring, entry.doorbell, entry.id);
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
    // ROCr sets `max_wave_id` to the waves a CU holds minus one.
    q.max_wave_id = profile.facts().max_waves_per_cu() - 1;
    mem.write_bytes(address, q.as_bytes()).map_err(oom)?;

    super::signal::set_fast_store(store_own_doorbell);
    let (rt2, e2) = (Arc::clone(rt), Arc::clone(&entry));
    let thread = std::thread::Builder::new()
        .name(format!("aqueduct-sim queue {id}"))
        .spawn(move || processor::process(&rt2, &e2))
        .map_err(|_| HSA_STATUS_ERROR_OUT_OF_RESOURCES)?;
    *entry.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread);
    Ok(register(entry))
}

/// A queue's memory and its [`Entry`], not registered yet: a ring of
/// `size` packets aligned to its size (as ROCr's is) with every header
/// INVALID, room for the `amd_queue_t` (the caller writes it), and the
/// doorbell signal `doorbell`, or one of its own (freed with the queue)
/// when that is `None`.
fn new_entry(
    rt: &Arc<Runtime>,
    size: u32,
    agent: u64,
    consumer: Consumer,
    doorbell: Option<SignalHandle>,
    callback: Option<QueueErrorCallback>,
    data: usize,
) -> Result<Arc<Entry>, Status> {
    let mem = &rt.memory;
    let ring_bytes = u64::from(size) * PACKET_SIZE as u64;
    let mut taken = Vec::new();
    let mut alloc = |bytes: u64, align: u64| match mem.alloc(bytes, align) {
        Ok(a) => {
            taken.push(a);
            Ok(a)
        }
        Err(_) => {
            for &a in &taken {
                let _ = mem.free(a);
            }
            Err(HSA_STATUS_ERROR_OUT_OF_RESOURCES)
        }
    };
    let ring = alloc(ring_bytes, ring_bytes)?;
    let doorbell = match doorbell {
        Some(d) => d.address(),
        None => alloc(size_of::<AmdSignal>() as u64, 64)?,
    };
    let address = alloc(size_of::<AmdQueue>() as u64, 64)?;
    let entry = Arc::new(Entry {
        owner: rt.queues.owner,
        memory: Arc::clone(mem),
        address,
        ring,
        size,
        doorbell,
        id: NEXT_QUEUE_ID.fetch_add(1, Ordering::Relaxed),
        agent,
        consumer,
        callback,
        data,
        stop: AtomicBool::new(false),
        thread: Mutex::new(None),
    });
    // From here on dropping `entry` frees what it allocated.
    let invalid = PacketHeader::INVALID.0.to_le_bytes();
    for i in 0..u64::from(size) {
        mem.write_bytes(entry.slot(i), &invalid)
            .map_err(|_| HSA_STATUS_ERROR_OUT_OF_RESOURCES)?;
    }
    Ok(entry)
}

/// Enters a made queue in [`LIVE`]; returns its `hsa_queue_t*`.
fn register(entry: Arc<Entry>) -> u64 {
    let address = entry.address;
    let mut all = live();
    all.insert(address, entry);
    live_changed();
    address
}

/// Creates a soft queue (`hsa_soft_queue_create`): a ring and an
/// `amd_queue_t` in `region`'s memory, with the caller's `doorbell`, that no
/// processor consumes: the application serves its packets (AGENT_DISPATCH
/// ones, usually, from device code). Checks and statuses as ROCr's
/// `hsa.cpp` `hsa_soft_queue_create` and `HostQueue`:
///
/// | condition                                            | status            |
/// |------------------------------------------------------|-------------------|
/// | region or doorbell handle 0, size 0 or not a power of two, type not MULTI or SINGLE, no features | INVALID_ARGUMENT |
/// | unknown region                                       | INVALID_REGION    |
/// | doorbell not a live signal                           | INVALID_SIGNAL    |
/// | a region the runtime does not allocate in (LDS)      | INVALID_ALLOCATION |
///
/// ROCr allocates the ring and the queue structure with
/// `hsa_memory_allocate` from the region; here they come from simulator
/// memory directly, as a GPU queue's do (every pool is the same memory).
/// The ring is aligned to its size and its headers are INVALID.
pub fn create_soft(
    rt: &Arc<Runtime>,
    region: u64,
    size: u32,
    queue_type: u32,
    features: u32,
    doorbell: SignalHandle,
) -> Result<u64, Status> {
    if region == 0
        || doorbell.is_null()
        || !size.is_power_of_two()
        || (queue_type != QueueType::MULTI.0 && queue_type != QueueType::SINGLE.0)
        || features == 0
    {
        return Err(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    }
    let pool = rt
        .pools
        .pool(region)
        .ok_or(HSA_STATUS_ERROR_INVALID_REGION)?;
    super::signal::check(rt, doorbell)?;
    if !pool.alloc_allowed {
        return Err(HSA_STATUS_ERROR_INVALID_ALLOCATION);
    }
    let entry = new_entry(
        rt,
        size,
        pool.owner,
        Consumer::Application,
        Some(doorbell),
        None,
        0,
    )?;
    let q = AmdQueue::new(HsaQueue {
        queue_type: QueueType(queue_type),
        features: QueueFeatures::from_bits_retain(features),
        base_address: entry.ring,
        doorbell_signal: doorbell,
        size,
        reserved1: 0,
        id: entry.id,
    });
    rt.memory
        .write_bytes(entry.address, q.as_bytes())
        .map_err(|_| HSA_STATUS_ERROR_OUT_OF_RESOURCES)?;
    Ok(register(entry))
}

/// Stops and joins the processor of the queue at `queue` and frees the
/// queue; INVALID_QUEUE if it is not a live queue (ROCr `hsa.cpp`
/// `hsa_queue_destroy`). The memory goes at once unless another thread
/// has the queue cached (`LAST_QUEUE`); then at that thread's next
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
fn store_own_doorbell(handle: u64, value: i64, order: Ordering) -> bool {
    let now = LIVE_GENERATION.load(Ordering::Acquire);
    LAST_QUEUE
        .try_with(|c| {
            let Ok(slot) = c.try_borrow() else {
                return false;
            };
            match slot.as_ref() {
                Some((g, _, e)) if *g == now && e.doorbell == SignalHandle(handle).address() => {
                    e.doorbell_value().store(value, order);
                    true
                }
                _ => false,
            }
        })
        .unwrap_or(false)
}
