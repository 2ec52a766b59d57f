//! The device scheduler from the host: a [`Device`] (one GPU with its
//! scheduler), its [`DeviceQueue`], and timeline [`Semaphore`]s.
//!
//! Submitting writes one queue entry into the scheduler's mailbox ring in
//! device memory ([`aqueduct_abi::scheduler::QueueEntry`]: its kind, its
//! wait and signal lists, and for a command buffer the whole issue state,
//! in the scheduler's kernarg ring) and requests a tick
//! ([`aqueduct_device::scheduler::request`]): the one request that finds
//! no other pending enqueues the tick on the control queue. Everything
//! after that happens on the device: the tick (`sched_tick`) accepts the
//! entry, waits for its semaphores, issues it; the command buffer's RETURN
//! retires it and signals its semaphores, which wakes the entries waiting
//! for them. A chain of dependent entries needs one submit burst and one
//! host wait.
//!
//! A [`Semaphore`] lives in device memory and mirrors its payload into an
//! HSA signal, so [`Semaphore::wait`] blocks in the runtime's own
//! `hsa_signal_wait_scacquire`. Signalling from the host runs the very
//! function the device runs ([`aqueduct_device::scheduler::signal`]), with
//! the host's way to enqueue a tick and store a signal.
//!
//! Back-pressure: a full mailbox or kernarg ring makes the submitter wait
//! (up to [`DEFAULT_SPACE_TIMEOUT`]) until the tick reclaims retired
//! entries, polling the ring's read side every 50 µs.
//!
//! A service thread per device serves the device's requests to the host
//! ([`HostRequest`]): device code posts them as AGENT_DISPATCH packets to
//! a soft queue the thread waits on with the runtime's signal wait
//! (`crate::service`). A retiring entry asks the host to release what it
//! kept alive for the device (the command buffer, the semaphores), at
//! once rather than at the next submit; a trace ring that filled another
//! half asks to be drained, which the thread also does every few
//! milliseconds ([`DeviceOptions::trace_records`], [`Device::trace`],
//! [`Device::write_trace`]). The thread also watches the execution
//! queues: when a kernel faults, the entries issued on its queue fail (and
//! with them their semaphores and everything waiting on those), and a new
//! queue takes its place.
//!
//! Queue-ordered allocations ([`DeviceQueue::alloca`], `dealloca`) come
//! from a device block pool of two buckets of fixed-size blocks that the
//! tick serves (`aqueduct_device::scheduler`); an empty bucket asks the
//! host service to grow it ([`HostRequest::GROW`]), and
//! [`Device::trim`] gives the free blocks back.
//!
//! [`DeviceOptions::execution_queues`] gives a device up to four execution
//! queues; the tick deals the entries out to them in turn, and a queue
//! that faults is replaced alone.
//!
//! Not yet: a COMMAND entry kind (fill, copy and update record a
//! one-command buffer per call).

use std::sync::atomic::{AtomicU64, Ordering as MemOrdering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use aqueduct_abi::command::{AllocationHandle, BindingTableEntry, BufferRef};
use aqueduct_abi::hsa::{SignalCondition, SignalHandle};
use aqueduct_abi::packet::{KernelDispatch, Ordering};
use aqueduct_abi::scheduler::{
    BlockPool, HostRequest, PoolBucket, QueueEntry, QueueEntryKind, QueueEntryState,
    SchedulerActions, SchedulerState, Semaphore as SemaphoreLayout, SemaphoreRef, TraceKind,
    TraceRecord, TraceRing,
};
use aqueduct_device::scheduler as shared_logic;
use zerocopy::{FromZeros, IntoBytes};

use crate::agent::Agent;
use crate::command_buffer::{
    CommandBuffer, IssueKernels, IssueMode, KernargRing, SharedBytes, SubmissionLayout,
    SubmissionTarget, blame, check_submission,
};
use crate::error::{Error, Result};
use crate::executable::{Executable, Kernel};
use crate::memory::HostBuffer;
use crate::queue::{DEFAULT_SPACE_TIMEOUT, Queue};
use crate::service::HostQueue;
use crate::signal::{Signal, StoreOrder, WaitOrder};

/// Sizes of a [`Device`]'s scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Slots of the mailbox ring (a power of two): entries submitted and
    /// not yet reclaimed.
    pub entries: u32,
    /// Bytes of the kernarg ring: the entries' wait and signal lists and
    /// command-buffer issue state.
    pub kernarg_bytes: usize,
    /// Packets of each execution queue (a power of two).
    pub queue_size: u32,
    /// Execution queues (1 to 4): the tick deals the entries out to them
    /// in turn, so independent entries run side by side.
    pub execution_queues: u32,
    /// How command buffers' blocks are issued.
    pub issue_mode: IssueMode,
    /// Records of the device trace ring (a power of two; 0: no tracing):
    /// ticks, entries issued, started and retired, blocks, with device
    /// timestamps, drained by the service thread when the device asks and
    /// every few milliseconds ([`Device::write_trace`]).
    pub trace_records: u32,
    /// Block sizes of the device block pool's small and large buckets
    /// (bytes, small < large): an [`DeviceQueue::alloca`] takes a block of
    /// the smaller one that holds it; more than the large size is refused.
    pub pool_block_sizes: [u64; 2],
    /// Most blocks each bucket holds: the pool grows (the device asks the
    /// host service) up to this, then allocations that find no free block
    /// fail with `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
    pub pool_blocks: u32,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        Self {
            entries: 1024,
            kernarg_bytes: 1 << 20,
            queue_size: 1024,
            execution_queues: 1,
            issue_mode: IssueMode::Auto,
            trace_records: 0,
            pool_block_sizes: [64 << 10, 16 << 20],
            pool_blocks: 256,
        }
    }
}

/// The host's side of submitting: the write position of the kernarg ring.
struct Producer {
    ring: KernargRing,
}

/// What an entry keeps alive while the device may read it: its command
/// buffer and its semaphores. Released when the entry retires (the
/// device's [`HostRequest::RELEASE`]) or its slot is reclaimed.
struct Held {
    buffer: Option<CommandBuffer>,
    _semaphores: Vec<Semaphore>,
    _allocation: Option<Allocation>,
}

/// Blocks the pool's growth adds at a time, small and large bucket.
const GROW_BLOCKS: [u32; 2] = [16, 1];

/// The device block pool's memory on the host's side: the [`BlockPool`]
/// and its buckets' free arrays, and every block the host allocated.
struct PoolMemory {
    /// The [`BlockPool`], then each bucket's `[u64; capacity]`.
    layout: HostBuffer<u8>,
    /// Where blocks come from: the GPU's coarse-grained memory.
    source: crate::memory::MemoryPool,
    /// Every block the host allocated, by address, with its bucket.
    blocks: Mutex<std::collections::HashMap<u64, (usize, crate::memory::DeviceBuffer<u8>)>>,
}

impl PoolMemory {
    /// The device address of bucket `b`.
    fn bucket(&self, b: usize) -> u64 {
        shared_logic::bucket_at(self.layout.address(), b as u64)
    }

    /// Bucket `b`'s u64 field at `offset`, as an atomic.
    fn word(&self, b: usize, offset: usize) -> &AtomicU64 {
        assert!(b < 2 && offset % 8 == 0 && offset + 8 <= size_of::<PoolBucket>());
        // SAFETY: inside the pool layout (asserted), 8-aligned; the host
        // reads only what the device writes under the lock or atomically.
        unsafe { AtomicU64::from_ptr((self.bucket(b) + offset as u64) as *mut u64) }
    }

    /// Bucket `b`'s growth word, as an atomic.
    fn growth(&self, b: usize) -> &std::sync::atomic::AtomicU32 {
        let at = self.bucket(b) + std::mem::offset_of!(PoolBucket, growth) as u64;
        // SAFETY: inside the pool layout, 4-aligned, accessed atomically by
        // the tick and the host.
        unsafe { std::sync::atomic::AtomicU32::from_ptr(at as *mut u32) }
    }
}

struct DeviceInner {
    agent: Agent,
    control: Queue,
    /// The execution queue; replaced by the service thread when it faults
    /// (the old one stays in `faulted` until the device goes).
    execution: Mutex<Vec<Queue>>,
    faulted: Mutex<Vec<Queue>>,
    /// What made entries fail, by entry id: the command and kernel a
    /// faulted queue stopped at.
    failures: Mutex<std::collections::HashMap<u64, String>>,
    kernels: IssueKernels,
    _tick_kernel: Kernel,
    mode: IssueMode,
    /// The [`SchedulerState`], then the mailbox ring of entries, then the
    /// tick's kernel argument.
    state: HostBuffer<u8>,
    tick: aqueduct_abi::packet::Prepared<aqueduct_abi::aql::KernelDispatchPacket>,
    producer: Mutex<Producer>,
    /// By entry id: what the entries not yet released keep alive.
    held: Mutex<std::collections::BTreeMap<u64, Held>>,
    /// The device block pool behind ALLOCA entries.
    pool: PoolMemory,
    /// The host service's queue (its address is in the state).
    _service: Arc<HostQueue>,
    /// Requests served: RELEASE, TRACE_FLUSH, packets of no kind the
    /// service knows, GROW.
    served: [AtomicU64; 4],
    capacity: u64,
    trace: Option<Trace>,
}

/// A device's trace ring and what the host drained from it.
struct Trace {
    /// The [`TraceRing`], then its records.
    memory: HostBuffer<u8>,
    capacity: u64,
    records: Mutex<Vec<TraceRecord>>,
    /// A host instant and the device timestamp at the same moment (the
    /// middle of the first tick, taken against the host's clock around
    /// it), and half the window that bounds the error.
    epoch: std::sync::OnceLock<(Instant, u64, Duration)>,
}

impl Trace {
    /// The ring's u64 field at `offset`, as an atomic.
    fn word(&self, offset: usize) -> &AtomicU64 {
        assert!(offset + 8 <= size_of::<TraceRing>() && offset % 8 == 0);
        // SAFETY: inside the ring header (asserted), 8-aligned in a
        // 64-aligned buffer; the device updates it atomically.
        unsafe { AtomicU64::from_ptr((self.memory.address() as *mut u8).add(offset).cast()) }
    }

    /// Moves the published records out of the ring, in order.
    fn drain(&self) {
        let mut out = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let read_at = std::mem::offset_of!(TraceRing, read_index);
        let mut read = self.word(read_at).load(MemOrdering::Relaxed);
        let write = self
            .word(std::mem::offset_of!(TraceRing, write_index))
            .load(MemOrdering::Acquire);
        while read < write {
            let at =
                size_of::<TraceRing>() + size_of::<TraceRecord>() * (read % self.capacity) as usize;
            // SAFETY: a record slot inside the buffer, 32-byte aligned;
            // its first word is published with release by the writer.
            let first = unsafe {
                std::sync::atomic::AtomicU32::from_ptr(
                    (self.memory.address() as *mut u8).add(at).cast(),
                )
            };
            if first.load(MemOrdering::Acquire) & 0xffff == 0 {
                break; // reserved, not written yet
            }
            let mut record = TraceRecord::new_zeroed();
            record
                .as_mut_bytes()
                .copy_from_slice(&self.memory[at..at + size_of::<TraceRecord>()]);
            out.push(record);
            first.store(0, MemOrdering::Relaxed);
            read += 1;
        }
        self.word(read_at).store(read, MemOrdering::Release);
    }
}

/// Every live scheduler by its state's device address, for host requests
/// that wake another device's entries.
static SCHEDULERS: Mutex<Vec<(u64, Weak<DeviceInner>)>> = Mutex::new(Vec::new());

/// How long a submitter short of room waits for progress before it asks
/// for another reclaiming tick.
const RETIRE_NUDGE: Duration = Duration::from_millis(1);

impl DeviceInner {
    fn sched(&self) -> u64 {
        self.state.address()
    }

    /// The first execution queue of now (they share an agent, limits and
    /// kernarg pool: what recordings and submissions ask of a queue).
    fn execution(&self) -> Queue {
        self.executions()[0].clone()
    }

    /// The execution queues of now.
    fn executions(&self) -> Vec<Queue> {
        self.execution
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces a faulted execution queue: entries issued on it fail (with
    /// the queue's status; their signal semaphores fail, and so everything
    /// waiting on them), later ones go to a new queue.
    /// `patient`: wait as long as the ticks take to settle (the service
    /// thread), else at most [`DEFAULT_SPACE_TIMEOUT`] (a device going
    /// away).
    fn recover(&self, old: &Queue, fault: Error, patient: bool) -> Result<()> {
        let status = match &fault {
            Error::QueueFault { status, .. } => *status,
            _ => shared_logic::STATUS_ERROR,
        };
        let new = self.agent.create_queue(old.size())?;
        {
            let mut queues = self.execution.lock().unwrap_or_else(|p| p.into_inner());
            let Some(k) = queues.iter().position(|q| q.address() == old.address()) else {
                return Ok(()); // replaced already
            };
            self.word(std::mem::offset_of!(SchedulerState, execution_queues) + 8 * k)
                .store(new.address(), MemOrdering::Release);
            queues[k] = new;
        }
        // Nothing issues to the old queue once the ticks enqueued before
        // have run. A tick may wait for room in another full queue (a
        // long kernel): wait for it as long as it takes, saying so once.
        let mut said = false;
        while let Err(e) = self.settle_ticks(DEFAULT_SPACE_TIMEOUT) {
            if !patient || !matches!(e, Error::Timeout { .. }) {
                return Err(e);
            }
            if !said {
                eprintln!(
                    "aqueduct: recovering from a queue fault waits for the scheduler's tick ({e})"
                );
                said = true;
            }
        }
        let at = old.read_index();
        // The fault again, for each entry that gets it (errors are not
        // Clone; the queue keeps reporting it).
        let text = fault.to_string();
        let again = || {
            old.fault().unwrap_or_else(|| Error::InvalidArgument {
                what: "execution queue",
                problem: text.clone(),
            })
        };
        let (retired, written) = self.live_entries();
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let mut r = HostRequester {
            system: self.agent.system(),
            device: Some(self),
            error: None,
        };
        for id in retired..written {
            let entry = self.entry_address(id);
            // SAFETY: an entry of this scheduler's mailbox (not reclaimed:
            // at or above the retire index).
            let (state, execution) = unsafe {
                (
                    shared_logic::state(entry),
                    (*(entry as *const QueueEntry)).execution,
                )
            };
            if state != QueueEntryState::ISSUED
                // SAFETY: an issued entry's execution is live until it is
                // reclaimed.
                || unsafe { (*(execution as *const aqueduct_abi::command::Execution)).queue }
                    != old.address()
                // SAFETY: as above. A retire that claimed it first (a
                // wave of the faulted queue still ran its RETURN) ends it.
                || !unsafe { shared_logic::claim_end(entry) }
            {
                continue;
            }
            let why = held
                .get(&id)
                .and_then(|h| h.buffer.as_ref())
                .map(|buffer| {
                    // SAFETY: as above.
                    let issues =
                        unsafe { (*(execution as *const aqueduct_abi::command::Execution)).issues };
                    blame(buffer, issues, at, again())
                })
                .unwrap_or_else(again);
            self.failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, why.to_string());
            // SAFETY: the entry and its semaphores are live (kept by
            // `held`: an issued entry has not retired); nothing else
            // touches an issued entry.
            unsafe {
                shared_logic::fail_entry(
                    entry,
                    status,
                    shared_logic::Origin::of_entry(entry),
                    &mut r,
                )
            };
            let in_flight_at = std::mem::offset_of!(SchedulerState, in_flight);
            // SAFETY: inside the state, 4-aligned, updated atomically.
            unsafe {
                std::sync::atomic::AtomicU32::from_ptr(
                    (self.state.address() as *mut u8).add(in_flight_at).cast(),
                )
            }
            .fetch_sub(1, MemOrdering::AcqRel);
        }
        drop(held);
        self.faulted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(old.clone());
        // Reclaim the failed entries.
        self.request(SchedulerActions::RETIRE)?;
        r.error.map_or(Ok(()), Err)
    }

    /// Ties the device's clock to the host's: one tick of an idle
    /// scheduler, timed on the host; the middle of its trace record is
    /// taken as the middle of the host's window around it.
    fn calibrate(&self) -> Result<()> {
        let Some(trace) = &self.trace else {
            return Ok(());
        };
        let before = Instant::now();
        self.request(SchedulerActions::RETIRE)?;
        let ticks_at = std::mem::offset_of!(SchedulerState, ticks);
        while self.word(ticks_at).load(MemOrdering::Acquire) == 0 {
            self.check_control()?;
            if before.elapsed() > DEFAULT_SPACE_TIMEOUT {
                return Err(Error::Timeout {
                    what: "the scheduler's first tick".into(),
                    condition: ">=",
                    expected: 1,
                    observed: 0,
                    waited: before.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        let after = Instant::now();
        // The tick counts itself before it records: wait for its record.
        let deadline = after + DEFAULT_SPACE_TIMEOUT;
        loop {
            trace.drain();
            let records = trace.records.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(r) = records.iter().find(|r| r.kind == TraceKind::SCHEDULER_TICK) {
                let half = (after - before) / 2;
                let mid = r.start_ts / 2 + r.end_ts / 2;
                let _ = trace.epoch.set((before + half, mid, half));
                return Ok(());
            }
            drop(records);
            if Instant::now() > deadline {
                return Err(Error::InvalidArgument {
                    what: "trace",
                    problem: "the first tick left no trace record".into(),
                });
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }

    fn check_control(&self) -> Result<()> {
        self.control.fault().map_or(Ok(()), Err)
    }

    /// The scheduler's state in a few words, for errors.
    fn describe(&self) -> String {
        let w = |f: usize| self.word(f).load(MemOrdering::Acquire);
        let first = w(0);
        format!(
            "entries submitted {}, accepted {}, reclaimed {}; actions {:#x}, in flight {}, ticks {}; control queue read {} write {}; execution queues{}",
            w(std::mem::offset_of!(SchedulerState, write_index)),
            w(std::mem::offset_of!(SchedulerState, accept_index)),
            w(std::mem::offset_of!(SchedulerState, retire_index)),
            first as u32,
            first >> 32,
            w(std::mem::offset_of!(SchedulerState, ticks)),
            self.control.read_index(),
            self.control.write_index(),
            self.executions()
                .iter()
                .map(|q| format!(
                    " read {} write {}{}",
                    q.read_index(),
                    q.write_index(),
                    q.fault().map_or(String::new(), |e| format!(" ({e})"))
                ))
                .collect::<Vec<_>>()
                .join(";")
        )
    }

    /// Closes the scheduler: no request enqueues a tick any more. A tick
    /// already in the control queue clears the set when it runs, so this
    /// closes again after each has run, until the queue is idle with the
    /// set closed.
    fn close(&self) {
        let actions = self.actions();
        for _ in 0..100 {
            actions.fetch_or(SchedulerActions::CLOSED.bits(), MemOrdering::AcqRel);
            if self.control.fault().is_some() {
                break;
            }
            if self.settle_ticks(DEFAULT_SPACE_TIMEOUT).is_err() {
                break;
            }
            let idle = self.control.read_index() == self.control.write_index();
            let closed = actions.load(MemOrdering::Acquire) & SchedulerActions::CLOSED.bits() != 0;
            if idle && closed {
                break;
            }
        }
    }

    /// Takes this scheduler's waiting entries off their semaphores'
    /// waiter lists (the device is going away; call [`Self::close`]
    /// first).
    fn forget_waiters(&self) {
        let (retired, written) = self.live_entries();
        let mut r = HostRequester {
            system: self.agent.system(),
            device: None,
            error: None,
        };
        for id in retired..written {
            let entry = self.entry_address(id);
            // SAFETY: an entry of this scheduler's mailbox, not reclaimed;
            // no tick runs (closed), and its semaphores are alive (kept by
            // `held` until the entry retires or is reclaimed).
            unsafe {
                if shared_logic::state(entry) != QueueEntryState::WAITING {
                    continue;
                }
                let e = &*(entry as *const QueueEntry);
                if e.wait_cursor < u32::from(e.wait_count) {
                    let w = &*((e.waits + 16 * u64::from(e.wait_cursor)) as *const SemaphoreRef);
                    shared_logic::remove_waiter(w.semaphore, entry, &mut r);
                }
            }
        }
    }

    /// Waits until every tick enqueued so far has run: a barrier packet
    /// behind them on the control queue (ticks carry the barrier bit).
    ///
    /// Serves the device's requests meanwhile: a tick may be posting one
    /// to a full host queue, and this may run on the service thread.
    fn settle_ticks(&self, timeout: Duration) -> Result<()> {
        let done = Signal::new(self.agent.system(), 1)?;
        let barrier = aqueduct_abi::packet::barrier(
            aqueduct_abi::packet::BarrierKind::And,
            &[],
            done.handle(),
            Ordering::SYSTEM.with_barrier(),
        )?;
        self.control.submit_barrier(&barrier)?;
        let start = Instant::now();
        loop {
            self.serve_pending();
            let slice = timeout.saturating_sub(start.elapsed()).min(SERVICE_PERIOD);
            match self.control.wait(&done, SignalCondition::LT, 1, slice) {
                Ok(_) => return Ok(()),
                Err(Error::Timeout { .. }) if start.elapsed() < timeout => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Serves the requests in the host queue now, without waiting.
    fn serve_pending(&self) {
        self._service.serve(Duration::ZERO, |p| {
            self.serve_request(HostRequest(p.function), p.arg[1])
        });
    }

    /// The ids of the entries not reclaimed yet: from the retire index to
    /// the write index.
    fn live_entries(&self) -> (u64, u64) {
        let w = |f: usize| self.word(f).load(MemOrdering::Acquire);
        (
            w(std::mem::offset_of!(SchedulerState, retire_index)),
            w(std::mem::offset_of!(SchedulerState, write_index)),
        )
    }

    /// The device address of the mailbox slot of entry `id`.
    fn entry_address(&self, id: u64) -> u64 {
        self.sched()
            + size_of::<SchedulerState>() as u64
            + size_of::<QueueEntry>() as u64 * (id % self.capacity)
    }

    /// The action set, as an atomic.
    fn actions(&self) -> &std::sync::atomic::AtomicU32 {
        // SAFETY: the state's first field, 4-aligned (the buffer is
        // 64-aligned); the device updates it atomically.
        unsafe { std::sync::atomic::AtomicU32::from_ptr(self.state.address() as *mut u32) }
    }

    /// Requests a tick of this scheduler for `actions`.
    fn request(&self, actions: SchedulerActions) -> Result<()> {
        let mut r = HostRequester {
            system: self.agent.system(),
            device: Some(self),
            error: None,
        };
        // SAFETY: this device's live scheduler.
        unsafe { shared_logic::request(self.sched(), actions, &mut r) };
        r.error.map_or(Ok(()), Err)
    }

    /// Serves one request of the device's (or of the host's own
    /// [`HostRequester`]).
    fn serve_request(&self, request: HostRequest, arg: u64) {
        let kind = match request {
            HostRequest::RELEASE => {
                // Dropped outside the lock.
                let gone = self
                    .held
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&arg);
                drop(gone);
                0
            }
            HostRequest::TRACE_FLUSH => {
                if let Some(t) = &self.trace {
                    t.drain();
                }
                1
            }
            HostRequest::GROW if arg < 2 => {
                self.grow(arg as usize);
                3
            }
            _ => 2,
        };
        self.served[kind].fetch_add(1, MemOrdering::Relaxed);
    }

    /// Grows bucket `b` of the block pool by [`GROW_BLOCKS`] (up to its
    /// capacity), or marks it exhausted when it cannot, then requests the
    /// tick that serves the allocations waiting on it.
    fn grow(&self, b: usize) {
        let pool = &self.pool;
        let size = pool.word(b, std::mem::offset_of!(PoolBucket, block_size));
        let size = size.load(MemOrdering::Relaxed);
        let capacity = pool.word(b, std::mem::offset_of!(PoolBucket, capacity));
        let capacity = capacity.load(MemOrdering::Relaxed);
        let mut blocks = pool.blocks.lock().unwrap_or_else(|p| p.into_inner());
        let owned = blocks.values().filter(|(bucket, _)| *bucket == b).count() as u64;
        let mut r = HostRequester {
            system: self.agent.system(),
            device: Some(self),
            error: None,
        };
        let mut added = 0;
        for _ in 0..u64::from(GROW_BLOCKS[b]).min(capacity - owned) {
            let Ok(block) = pool.source.alloc_device::<u8>(size as usize) else {
                break;
            };
            // SAFETY: this device's pool; `owned + added` stays below the
            // capacity, so the stack has room.
            if !unsafe { shared_logic::give_block(pool.bucket(b), block.address(), &mut r) } {
                break;
            }
            blocks.insert(block.address(), (b, block));
            added += 1;
        }
        drop(blocks);
        let growth = if added == 0 { PoolBucket::EXHAUSTED } else { 0 };
        pool.growth(b).store(growth, MemOrdering::Release);
        // The tick that serves the allocations waiting on the bucket (a
        // failure to enqueue it is the control queue's: `check` says so).
        let _ = self.request(SchedulerActions::WAKE);
    }

    /// Releases what the entries below the retire index kept alive: their
    /// slots are reclaimed, so the device reads none of it (entries that
    /// completed in a tick or failed post no RELEASE).
    fn release_reclaimed(&self) {
        let retired = self
            .word(std::mem::offset_of!(SchedulerState, retire_index))
            .load(MemOrdering::Acquire);
        let gone = {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            let live = held.split_off(&retired);
            std::mem::replace(&mut *held, live)
        };
        drop(gone);
    }

    /// The scheduler state's u64 field at `offset`, as an atomic.
    fn word(&self, offset: usize) -> &AtomicU64 {
        assert!(offset + 8 <= size_of::<SchedulerState>() && offset % 8 == 0);
        // SAFETY: inside the state (asserted), 8-aligned (the buffer is
        // 64-aligned), host-accessible; the device accesses these words
        // atomically too.
        unsafe { AtomicU64::from_ptr((self.state.address() as *mut u8).add(offset).cast()) }
    }
}

impl Drop for DeviceInner {
    /// Waits (up to [`DEFAULT_SPACE_TIMEOUT`]) for the entries issued and
    /// not yet retired: the queues and rings they use go with the device.
    /// Entries still waiting for a semaphore are dropped with it: taken
    /// off the semaphores' waiter lists, once no tick runs any more, so
    /// that a later signal never reaches them.
    fn drop(&mut self) {
        let start = Instant::now();
        let in_flight_at = std::mem::offset_of!(SchedulerState, in_flight);
        // SAFETY: inside the state, 4-aligned; the device updates it
        // atomically.
        let in_flight = unsafe {
            std::sync::atomic::AtomicU32::from_ptr(
                (self.state.address() as *mut u8).add(in_flight_at).cast(),
            )
        };
        // Closed first (no new tick; the ones already enqueued run, and
        // may issue entries; once closed, a retire's wake finds the set
        // non-empty and enqueues nothing), then the entries in flight
        // finish, then the waiting entries come off their semaphores.
        self.close();
        let waiting = Instant::now();
        loop {
            // A retire posts its RELEASE before it counts itself out, and
            // waits for room in the host queue: serve it here (the service
            // thread may be the one dropping the device).
            self.serve_pending();
            // The entries of a queue that faulted never retire: fail them
            // (the other queues' entries run on).
            for queue in self.executions() {
                if let Some(fault) = queue.fault()
                    && self.recover(&queue, fault, false).is_err()
                {
                    break;
                }
            }
            if in_flight.load(MemOrdering::Acquire) == 0
                || self.control.fault().is_some()
                || waiting.elapsed() > DEFAULT_SPACE_TIMEOUT
            {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        self.forget_waiters();
        // A signaller that took entries of this scheduler off a waiter
        // list before `forget_waiters` took that list's lock is still
        // pushing them (its `waking` count says so): wait for it, as it
        // writes into this memory.
        let waking = self.word(std::mem::offset_of!(SchedulerState, waking));
        while waking.load(MemOrdering::Acquire) != 0 && start.elapsed() < DEFAULT_SPACE_TIMEOUT {
            std::thread::sleep(Duration::from_micros(50));
        }
        let mut all = SCHEDULERS.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|(at, w)| *at != self.state.address() && w.strong_count() > 0);
    }
}

/// The host's [`shared_logic::Requester`]: ticks go through the HSA queue
/// API, mirrors through `hsa_signal_store_screlease`.
struct HostRequester<'a> {
    /// The runtime that stores mirrors.
    system: &'a crate::System,
    /// The device submitting, if any (saves the registry look-up).
    device: Option<&'a DeviceInner>,
    /// A tick that could not be enqueued.
    error: Option<Error>,
}

impl shared_logic::Requester for HostRequester<'_> {
    fn pause(&mut self) {
        std::hint::spin_loop();
    }

    fn enqueue_tick(&mut self, scheduler: u64) {
        self.with_device(scheduler, |device, error| {
            if let Err(e) = device.control.submit(&device.tick) {
                // No tick is coming: empty the set again, or every later
                // request would find it non-empty and wait for this one.
                device.actions().store(0, MemOrdering::Release);
                error.get_or_insert(e);
            }
        });
    }

    /// The host serves its own requests on the spot (the functions it
    /// runs post none today: they come from retires and trace records).
    fn post(&mut self, scheduler: u64, request: HostRequest, arg: u64) {
        self.with_device(scheduler, |device, _| device.serve_request(request, arg));
    }

    fn mirror(&mut self, signal: SignalHandle, value: i64) {
        // SAFETY: a semaphore's mirror, live while the semaphore is (the
        // caller's semaphore, or one an entry names: kept by `held`).
        unsafe { self.system.signal_store(signal, value, StoreOrder::Release) };
    }

    /// The host records no trace events (only the device's tick and
    /// retire do): no device clock to read.
    fn timestamp(&mut self) -> u64 {
        0
    }
}

impl HostRequester<'_> {
    /// Runs `f` on the live device whose scheduler is at `scheduler` (this
    /// requester's own, or one from the registry), with this requester's
    /// error slot.
    fn with_device(&mut self, scheduler: u64, f: impl FnOnce(&DeviceInner, &mut Option<Error>)) {
        match self.device {
            Some(d) if d.sched() == scheduler => f(d, &mut self.error),
            _ => {
                let weak = {
                    let all = SCHEDULERS.lock().unwrap_or_else(|p| p.into_inner());
                    all.iter()
                        .find(|(at, _)| *at == scheduler)
                        .map(|(_, w)| w.clone())
                };
                if let Some(d) = weak.and_then(|w| w.upgrade()) {
                    f(&d, &mut self.error);
                }
            }
        }
    }
}

/// The scheduler's host service: serves the device's requests from the
/// host queue ([`DeviceInner::serve_request`]), releases what reclaimed
/// entries kept alive, and watches the execution queue: when it faults,
/// fails the entries on it and replaces it ([`DeviceInner::recover`]).
/// Ends with the device.
fn serve(device: &Weak<DeviceInner>, queue: &HostQueue) {
    let mut requests = Vec::new();
    loop {
        // Waits on the doorbell, at most a period (faults are polled).
        queue.serve(SERVICE_PERIOD, |p| {
            requests.push((HostRequest(p.function), p.arg[0], p.arg[1]))
        });
        let Some(d) = device.upgrade() else { return };
        for (request, scheduler, arg) in requests.drain(..) {
            if scheduler == d.sched() {
                d.serve_request(request, arg);
            } else {
                d.served[2].fetch_add(1, MemOrdering::Relaxed);
            }
        }
        d.release_reclaimed();
        // Also drained here: a drain stops at a record reserved and not
        // yet written, and the request for the next half may never come if
        // that writer is slow.
        if let Some(t) = &d.trace {
            t.drain();
        }
        for queue in d.executions() {
            if let Some(fault) = queue.fault()
                && let Err(e) = d.recover(&queue, fault, true)
            {
                // Nothing to return it to: the entries' waits report their
                // timeouts. The service goes on (requests, other queues).
                eprintln!("aqueduct: cannot recover from a queue fault: {e}");
            }
        }
    }
}

/// The block pool of a new device: its layout in host-visible memory (the
/// buckets' sizes and empty free arrays of `options.pool_blocks`) and no
/// block yet; the device asks for blocks as allocations need them.
fn pool_memory(agent: &Agent, execution: &Queue, options: &DeviceOptions) -> Result<PoolMemory> {
    let [small, large] = options.pool_block_sizes;
    if small == 0 || small >= large || options.pool_blocks == 0 {
        return Err(Error::InvalidArgument {
            what: "device options",
            problem: format!(
                "pool block sizes {small} and {large} bytes (0 < small < large), {} blocks \
                 per bucket (at least 1)",
                options.pool_blocks
            ),
        });
    }
    let capacity = u64::from(options.pool_blocks);
    let arrays_at = size_of::<BlockPool>();
    let bytes = arrays_at + 2 * 8 * capacity as usize;
    let mut layout = execution.kernarg_pool().alloc_host::<u8>(bytes)?;
    layout.fill(0);
    let mut p = BlockPool::new_zeroed();
    for (b, size) in [small, large].into_iter().enumerate() {
        p.buckets[b].block_size = size;
        p.buckets[b].capacity = capacity;
        p.buckets[b].free = layout.address() + (arrays_at + 8 * capacity as usize * b) as u64;
    }
    layout[..size_of::<BlockPool>()].copy_from_slice(p.as_bytes());
    Ok(PoolMemory {
        layout,
        source: agent.memory_pool(crate::memory::PoolKind::CoarseGrained)?,
        blocks: Mutex::new(std::collections::HashMap::new()),
    })
}

/// Packets of the host service's queue: device requests waiting to be
/// served (a full queue makes the posting kernel wait).
const SERVICE_QUEUE_SIZE: u32 = 256;

/// How often the service thread looks at the execution queue (it wakes at
/// once for a request).
const SERVICE_PERIOD: Duration = Duration::from_millis(2);

/// One GPU with its device scheduler: the device library, a control queue
/// for the scheduler's ticks, an execution queue, the scheduler's state,
/// mailbox and kernarg ring. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Device {
    inner: Arc<DeviceInner>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("agent", &self.inner.agent.info().name)
            .field("scheduler", &format_args!("{:#x}", self.inner.sched()))
            .finish()
    }
}

/// One bucket of a device's block pool ([`Device::pool_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes per block.
    pub block_size: u64,
    /// Blocks the host allocated for it (grown, not trimmed).
    pub blocks: u64,
    /// Of those, the ones free.
    pub free: u64,
}

/// Counters of a scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    /// Ticks run.
    pub ticks: u64,
    /// Entries submitted.
    pub submitted: u64,
    /// Entries reclaimed (done, and their slots free): reclaiming happens
    /// in the next tick after an entry is done, so this lags.
    pub reclaimed: u64,
    /// Device → host requests served: entries released as they retired.
    pub released: u64,
    /// Device → host requests served: trace drains asked for.
    pub trace_flushes: u64,
    /// Device → host requests served: block pool buckets to grow.
    pub pool_grows: u64,
    /// Entries whose command buffer and semaphores the host still keeps
    /// alive for the device.
    pub held: usize,
}

impl Device {
    /// Starts a scheduler on `agent` with the device library `library`
    /// (loaded on it).
    pub fn new(agent: &Agent, library: &Executable, options: DeviceOptions) -> Result<Self> {
        let capacity = u64::from(options.entries);
        if !capacity.is_power_of_two() {
            return Err(Error::InvalidArgument {
                what: "device options",
                problem: format!("{} mailbox entries is not a power of two", options.entries),
            });
        }
        let count = options.execution_queues as usize;
        if !(1..=aqueduct_abi::scheduler::MAX_EXECUTION_QUEUES).contains(&count) {
            return Err(Error::InvalidArgument {
                what: "device options",
                problem: format!(
                    "{count} execution queues (1 to {})",
                    aqueduct_abi::scheduler::MAX_EXECUTION_QUEUES
                ),
            });
        }
        let control = agent.create_queue(64)?;
        let executions = (0..count)
            .map(|_| agent.create_queue(options.queue_size))
            .collect::<Result<Vec<_>>>()?;
        let execution = &executions[0];
        let kernels = IssueKernels::new(execution, library)?;
        let tick_kernel = library.kernel("sched_tick")?;
        let pool = execution.kernarg_pool().clone();
        let entries_at = size_of::<SchedulerState>();
        let args_at = entries_at + size_of::<QueueEntry>() * capacity as usize;
        let mut state = pool.alloc_host::<u8>(args_at + 64)?;
        state.fill(0);
        let base = state.address();
        state[args_at..args_at + 8].copy_from_slice(&base.to_le_bytes());
        let tick = KernelDispatch {
            ordering: Ordering::SYSTEM.with_barrier(),
            private_segment_size: tick_kernel.private_segment_size(),
            group_segment_size: tick_kernel.group_segment_size(),
            ..KernelDispatch::linear(tick_kernel.object(), base + args_at as u64, 1, 1)
        }
        .build(control.limits())?;
        let storage =
            pool.alloc_host::<u8>(options.kernarg_bytes.next_multiple_of(64).max(4096))?;
        let trace = match options.trace_records {
            0 => None,
            n if !n.is_power_of_two() => {
                return Err(Error::InvalidArgument {
                    what: "device options",
                    problem: format!("{n} trace records is not a power of two"),
                });
            }
            n => {
                let bytes = size_of::<TraceRing>() + size_of::<TraceRecord>() * n as usize;
                let mut memory = pool.alloc_host::<u8>(bytes)?;
                memory.fill(0);
                let mut ring = TraceRing::new_zeroed();
                ring.base = memory.address() + size_of::<TraceRing>() as u64;
                ring.capacity = u64::from(n);
                ring.timestamp_frequency = aqueduct_abi::gfx::REALTIME_HZ;
                memory[..size_of::<TraceRing>()].copy_from_slice(ring.as_bytes());
                Some(Trace {
                    memory,
                    capacity: u64::from(n),
                    records: Mutex::new(Vec::new()),
                    epoch: std::sync::OnceLock::new(),
                })
            }
        };
        let service = Arc::new(HostQueue::new(agent.system(), SERVICE_QUEUE_SIZE)?);
        let pool = pool_memory(agent, execution, &options)?;
        let mut s = SchedulerState::new_zeroed();
        s.host_queue = service.address();
        s.pool = pool.layout.address();
        s.entries = base + entries_at as u64;
        s.capacity = capacity;
        let mut words = [0u8; 64];
        words.copy_from_slice(tick.body.as_bytes());
        words[..4].copy_from_slice(&tick.first_word().to_le_bytes());
        for (k, w) in words.as_chunks::<8>().0.iter().enumerate() {
            s.tick_packet[k] = u64::from_le_bytes(*w);
        }
        s.control_queue = control.address();
        s.execution_count = count as u64;
        for (slot, q) in s.execution_queues.iter_mut().zip(&executions) {
            *slot = q.address();
        }
        s.trace = trace.as_ref().map_or(0, |t| t.memory.address());
        s.kernarg.base = storage.address();
        s.kernarg.capacity = storage.len() as u64;
        state[..size_of::<SchedulerState>()].copy_from_slice(s.as_bytes());
        let inner = Arc::new(DeviceInner {
            agent: agent.clone(),
            control,
            execution: Mutex::new(executions),
            faulted: Mutex::new(Vec::new()),
            failures: Mutex::new(std::collections::HashMap::new()),
            kernels,
            _tick_kernel: tick_kernel,
            mode: options.issue_mode,
            state,
            tick,
            producer: Mutex::new(Producer {
                ring: KernargRing {
                    storage: Arc::new(SharedBytes(storage)),
                    write: 0,
                    read: 0,
                },
            }),
            held: Mutex::new(std::collections::BTreeMap::new()),
            pool,
            _service: Arc::clone(&service),
            served: Default::default(),
            capacity,
            trace,
        });
        SCHEDULERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((inner.sched(), Arc::downgrade(&inner)));
        if inner.trace.is_some() {
            inner.calibrate()?;
        }
        let device = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("aqueduct-scheduler".into())
            .spawn(move || serve(&device, &service))
            .map_err(|e| Error::InvalidArgument {
                what: "device",
                problem: format!("cannot start the scheduler's service thread: {e}"),
            })?;
        Ok(Self { inner })
    }

    /// The GPU.
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// The execution queue's submission API.
    pub fn queue(&self) -> DeviceQueue {
        DeviceQueue {
            device: self.clone(),
        }
    }

    /// A recording of at most `capacity` commands for this device
    /// ([`crate::CommandBufferBuilder::new`] on its execution queue).
    pub fn command_buffer(&self, capacity: u32) -> Result<crate::CommandBufferBuilder> {
        crate::CommandBufferBuilder::new(&self.inner.execution(), capacity)
    }

    /// A new semaphore at `initial`, usable by this device's entries and
    /// the host.
    pub fn semaphore(&self, initial: u64) -> Result<Semaphore> {
        Semaphore::new(self, initial)
    }

    /// The scheduler's counters.
    pub fn stats(&self) -> SchedulerStats {
        let off = |f: usize| self.inner.word(f).load(MemOrdering::Acquire);
        SchedulerStats {
            ticks: off(std::mem::offset_of!(SchedulerState, ticks)),
            submitted: off(std::mem::offset_of!(SchedulerState, write_index)),
            reclaimed: off(std::mem::offset_of!(SchedulerState, retire_index)),
            released: self.inner.served[0].load(MemOrdering::Relaxed),
            trace_flushes: self.inner.served[1].load(MemOrdering::Relaxed),
            pool_grows: self.inner.served[3].load(MemOrdering::Relaxed),
            held: self
                .inner
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .len(),
        }
    }

    /// A fault of the control queue, if any: the scheduler stops after
    /// one. (A fault of the execution queue fails the entries on it and
    /// the queue is replaced.)
    pub fn check(&self) -> Result<()> {
        self.inner.check_control()
    }

    /// The trace so far (tracing on: [`DeviceOptions::trace_records`]),
    /// drained from the device's ring: each record with its time on the
    /// host's clock, and the records the ring had no room for.
    pub fn trace(&self) -> Option<DeviceTrace> {
        let t = self.inner.trace.as_ref()?;
        t.drain();
        let &(epoch, at, error) = t.epoch.get()?;
        let hz = aqueduct_abi::gfx::REALTIME_HZ as f64;
        let to_host = |ts: u64| (ts as f64 - at as f64) / hz;
        let records = t.records.lock().unwrap_or_else(|p| p.into_inner());
        Some(DeviceTrace {
            epoch,
            error,
            dropped: t
                .word(std::mem::offset_of!(TraceRing, dropped))
                .load(MemOrdering::Acquire),
            events: records
                .iter()
                .map(|r| TraceEvent {
                    kind: r.kind,
                    id: r.id,
                    flags: r.flags,
                    start: to_host(r.start_ts),
                    end: to_host(r.end_ts),
                })
                .collect(),
        })
    }

    /// Writes the trace so far as a Chrome/Perfetto JSON trace (open it in
    /// `ui.perfetto.dev` or `chrome://tracing`): the ticks on one track,
    /// each entry from its issue to its retire on another, with an instant
    /// where each of its blocks began. Returns the
    /// events written; `None` without tracing.
    pub fn write_trace(&self, path: &std::path::Path) -> Result<Option<usize>> {
        let Some(trace) = self.trace() else {
            return Ok(None);
        };
        let json = trace.chrome_json(&self.inner.agent.info().name);
        std::fs::write(path, json).map_err(|source| Error::Io {
            action: "write",
            path: path.to_owned(),
            source,
        })?;
        Ok(Some(trace.events.len()))
    }

    /// What the device block pool holds, small bucket then large.
    pub fn pool_stats(&self) -> [PoolStats; 2] {
        let pool = &self.inner.pool;
        let blocks = pool.blocks.lock().unwrap_or_else(|p| p.into_inner());
        [0, 1].map(|b| {
            let field = |offset| pool.word(b, offset).load(MemOrdering::Acquire);
            PoolStats {
                block_size: field(std::mem::offset_of!(PoolBucket, block_size)),
                blocks: blocks.values().filter(|(bucket, _)| *bucket == b).count() as u64,
                // Read without the bucket's lock: a moment's count.
                free: field(std::mem::offset_of!(PoolBucket, count)),
            }
        })
    }

    /// Gives the pool's free blocks back to the runtime and returns the
    /// bytes freed; blocks in use stay. A bucket that could not grow
    /// before may grow again.
    pub fn trim(&self) -> u64 {
        let d = &*self.inner;
        let mut r = HostRequester {
            system: d.agent.system(),
            device: Some(d),
            error: None,
        };
        let mut freed = Vec::new();
        for b in 0..2 {
            // SAFETY: this device's pool; under the bucket's lock, the
            // array's first `count` words are the free blocks.
            let taken: Vec<u64> = unsafe {
                shared_logic::with_bucket(d.pool.bucket(b), &mut r, |free, count, _| {
                    let all = (0..*count)
                        .map(|k| *((free + 8 * k) as *const u64))
                        .collect();
                    *count = 0;
                    all
                })
            };
            let mut blocks = d.pool.blocks.lock().unwrap_or_else(|p| p.into_inner());
            freed.extend(taken.iter().filter_map(|a| blocks.remove(a)));
            drop(blocks);
            let _ = d.pool.growth(b).compare_exchange(
                PoolBucket::EXHAUSTED,
                0,
                MemOrdering::AcqRel,
                MemOrdering::Relaxed,
            );
        }
        freed.iter().map(|(_, block)| block.len() as u64).sum()
    }

    /// Why entry `id` failed, when a queue fault made it fail: the command
    /// and kernel the queue stopped at.
    pub fn failure(&self, id: u64) -> Option<String> {
        let failures = self
            .inner
            .failures
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        failures.get(&id).cloned()
    }
}

/// Several GPUs as one: a [`Device`] (device library, scheduler, queues)
/// on each GPU a device string selects (`amdgpu://0,1`, `amdgpu`, …: the
/// forms of [`crate::device`]). Their entries wait for each other's
/// semaphores like a single device's do: a semaphore is device memory every
/// agent reaches, and a signal on one GPU wakes entries on another through
/// that scheduler's own control queue.
#[derive(Clone, Debug)]
pub struct LogicalDevice {
    devices: Vec<Device>,
}

impl LogicalDevice {
    /// A scheduler on every GPU of `system` that `device` selects, each
    /// with the device library `library` gives for its agent (its gfx's
    /// code object, loaded on it).
    pub fn open(
        system: &crate::System,
        device: &str,
        options: DeviceOptions,
        mut library: impl FnMut(&Agent) -> Result<Executable>,
    ) -> Result<Self> {
        let devices = system
            .select(device)?
            .iter()
            .map(|agent| Device::new(agent, &library(agent)?, options))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { devices })
    }

    /// The devices, in the device string's order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }
}

/// A semaphore and a payload: "wait until it reaches the value" in a wait
/// list, "advance it to the value" in a signal list.
pub type SemaphoreValue<'a> = (&'a Semaphore, u64);

/// Submits to a [`Device`]'s execution queue: every call adds one entry
/// that runs once its waits are reached and signals its semaphores when
/// done.
#[derive(Clone, Debug)]
pub struct DeviceQueue {
    device: Device,
}

impl DeviceQueue {
    /// Runs `buffer` with `bindings` once every wait is reached; then
    /// advances every signal. Returns the entry's id.
    pub fn execute(
        &self,
        waits: &[SemaphoreValue<'_>],
        buffer: &CommandBuffer,
        bindings: &[BindingTableEntry],
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        let id = self.add_execute(waits, buffer, bindings, signals)?;
        self.device.inner.request(SchedulerActions::INCOMING)?;
        Ok(id)
    }

    /// Completes once every wait is reached, then advances every signal:
    /// no work of its own (a pure dependency).
    pub fn barrier(
        &self,
        waits: &[SemaphoreValue<'_>],
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        let id = self.add(waits, signals, None, None)?;
        self.device.inner.request(SchedulerActions::INCOMING)?;
        Ok(id)
    }

    /// Fills `target` with `pattern` (1, 2, 4, 8 or 16 bytes, repeated;
    /// the length a multiple of it) once every wait is reached, then
    /// advances every signal: a one-command recording (the device
    /// library's blit fill), kept until the entry is reclaimed.
    pub fn fill(
        &self,
        waits: &[SemaphoreValue<'_>],
        target: BufferRef,
        pattern: &[u8],
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        self.one_command(waits, signals, |b| b.fill(target, pattern))
    }

    /// Copies `source` to `target` (the same length, not overlapping), as
    /// [`DeviceQueue::fill`] does a fill.
    pub fn copy(
        &self,
        waits: &[SemaphoreValue<'_>],
        source: BufferRef,
        target: BufferRef,
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        self.one_command(waits, signals, |b| b.copy(source, target))
    }

    /// Writes `data` (copied now) to `target`, as [`DeviceQueue::fill`]
    /// does a fill.
    pub fn update(
        &self,
        waits: &[SemaphoreValue<'_>],
        data: &[u8],
        target: BufferRef,
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        self.one_command(waits, signals, |b| b.update(target, data))
    }

    /// A queue-ordered allocation of `length` bytes: once every wait is
    /// reached, the device takes a block of its pool (the bucket of the
    /// smallest block size that holds `length`; the pool grows through
    /// the host service when the bucket is empty), commits it to the
    /// returned [`Allocation`], then advances every signal. Commands
    /// reference it with [`Allocation::buffer`] and run only after (their
    /// entries wait for these signals). Refused here when `length` is 0 or
    /// more than the large blocks; the entry fails (its signals with
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`) when the pool cannot grow.
    pub fn alloca(
        &self,
        waits: &[SemaphoreValue<'_>],
        length: u64,
        signals: &[SemaphoreValue<'_>],
    ) -> Result<Allocation> {
        let d = &*self.device.inner;
        let large = d
            .pool
            .word(1, std::mem::offset_of!(PoolBucket, block_size))
            .load(MemOrdering::Relaxed);
        if length == 0 || length > large {
            return Err(Error::InvalidArgument {
                what: "alloca",
                problem: format!(
                    "{length} bytes: the device pool's blocks hold 1 to {large} bytes \
                     (DeviceOptions::pool_block_sizes)"
                ),
            });
        }
        let allocation = Allocation::new(d.execution().kernarg_pool(), length)?;
        self.add(
            waits,
            signals,
            None,
            Some((QueueEntryKind::ALLOCA, &allocation)),
        )?;
        d.request(SchedulerActions::INCOMING)?;
        Ok(allocation)
    }

    /// Gives `allocation`'s block back to the device pool once every wait
    /// is reached (commands using it must be among what the waits wait
    /// for), then advances every signal. The entry fails with
    /// `HSA_STATUS_ERROR_INVALID_ARGUMENT` if the allocation holds no block
    /// by then (never committed, or deallocated already).
    pub fn dealloca(
        &self,
        waits: &[SemaphoreValue<'_>],
        allocation: &Allocation,
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        let id = self.add(
            waits,
            signals,
            None,
            Some((QueueEntryKind::DEALLOCA, allocation)),
        )?;
        self.device.inner.request(SchedulerActions::INCOMING)?;
        Ok(id)
    }

    /// Records the one command `record` adds and executes it with `waits`
    /// and `signals` (the recording lives until the entry is reclaimed).
    fn one_command(
        &self,
        waits: &[SemaphoreValue<'_>],
        signals: &[SemaphoreValue<'_>],
        record: impl FnOnce(&mut crate::CommandBufferBuilder) -> Result<u32>,
    ) -> Result<u64> {
        let mut b = self.device.command_buffer(2)?;
        record(&mut b)?;
        self.execute(waits, &b.finish()?, &[], signals)
    }

    /// A burst of entries that the scheduler is told about once, when the
    /// batch is submitted (or dropped): one tick accepts them all, where
    /// entries submitted one by one may each meet a tick that has just
    /// begun and need another.
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            queue: self,
            added: 0,
        }
    }

    fn add_execute(
        &self,
        waits: &[SemaphoreValue<'_>],
        buffer: &CommandBuffer,
        bindings: &[BindingTableEntry],
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        check_submission(buffer, bindings, &self.device.inner.execution())?;
        self.add(waits, signals, Some((buffer, bindings)), None)
    }

    /// Writes one entry into the mailbox: an EXECUTE of `work`, an ALLOCA
    /// or DEALLOCA of `allocation`, else a BARRIER. The caller requests the
    /// tick.
    fn add(
        &self,
        waits: &[SemaphoreValue<'_>],
        signals: &[SemaphoreValue<'_>],
        work: Option<(&CommandBuffer, &[BindingTableEntry])>,
        allocation: Option<(QueueEntryKind, &Allocation)>,
    ) -> Result<u64> {
        let d = &*self.device.inner;
        if waits.len() > usize::from(u16::MAX) || signals.len() > usize::from(u16::MAX) {
            return Err(Error::InvalidArgument {
                what: "queue entry",
                problem: format!(
                    "{} waits and {} signals (at most 65535 each)",
                    waits.len(),
                    signals.len()
                ),
            });
        }
        let lists = 16 * (waits.len() + signals.len()) as u64;
        let layout = work.map(|(b, t)| SubmissionLayout::of(b, t));
        let state_at = lists.next_multiple_of(64);
        let size = state_at + layout.as_ref().map_or(0, |l| l.size);
        let mut p = d.producer.lock().unwrap_or_else(|e| e.into_inner());
        if size.next_multiple_of(64) > p.ring.capacity() {
            return Err(Error::InvalidArgument {
                what: "queue entry",
                problem: format!(
                    "the entry needs {size} bytes of kernarg ring, the ring holds {}",
                    p.ring.capacity()
                ),
            });
        }
        let id = d
            .word(std::mem::offset_of!(SchedulerState, write_index))
            .load(MemOrdering::Relaxed);
        // Room: a mailbox slot and kernarg space, both freed by ticks. A
        // retire asks for no tick, so ask for one (again after a
        // millisecond without progress).
        let start = Instant::now();
        let mut asked: Option<(Instant, u64)> = None;
        let (offset, ring_end) = loop {
            let retired = d
                .word(std::mem::offset_of!(SchedulerState, retire_index))
                .load(MemOrdering::Acquire);
            let read = d
                .word(
                    std::mem::offset_of!(SchedulerState, kernarg)
                        + std::mem::offset_of!(aqueduct_abi::scheduler::KernargRing, read_offset),
                )
                .load(MemOrdering::Acquire);
            p.ring.read = read;
            if id - retired < d.capacity
                && let Some(r) = p.ring.reserve(size)
            {
                break r;
            }
            self.device.check()?;
            if asked.is_none_or(|(at, seen)| seen == retired && at.elapsed() > RETIRE_NUDGE) {
                asked = Some((Instant::now(), retired));
                d.request(SchedulerActions::RETIRE)?;
            }
            if start.elapsed() > DEFAULT_SPACE_TIMEOUT {
                return Err(Error::Timeout {
                    what: format!(
                        "room in the scheduler's mailbox and kernarg ring ({})",
                        d.describe()
                    ),
                    condition: ">=",
                    expected: size as i64,
                    observed: (p.ring.capacity() - (p.ring.write - p.ring.read)) as i64,
                    waited: start.elapsed(),
                });
            }
            std::thread::sleep(Duration::from_micros(50));
        };
        let ring = p.ring.storage.clone();
        let o = offset as usize;
        let base = ring.address() + offset;
        let refs: Vec<SemaphoreRef> = waits
            .iter()
            .chain(signals)
            .map(|(s, v)| SemaphoreRef {
                semaphore: s.address(),
                value: *v,
            })
            .collect();
        ring.write(o, refs.as_bytes());
        let entry_at = d.entry_address(id);
        let mut e = QueueEntry::new_zeroed();
        e.kind = QueueEntryKind::BARRIER;
        if let (Some((buffer, bindings)), Some(layout)) = (work, &layout) {
            e.kind = QueueEntryKind::EXECUTE;
            e.execution = base + state_at;
            layout.write(
                &ring,
                o + state_at as usize,
                buffer,
                bindings,
                &SubmissionTarget {
                    kernels: &d.kernels,
                    queue: &d.execution(),
                    mode: d.mode,
                    signal: SignalHandle::NULL,
                    entry_packets: 0,
                    entry: entry_at,
                },
            );
        }
        if let Some((kind, a)) = allocation {
            e.kind = kind;
            e.handle = a.handle();
        }
        e.wait_count = waits.len() as u16;
        e.signal_count = signals.len() as u16;
        e.state = QueueEntryState::SUBMITTED;
        e.id = id;
        e.waits = base;
        e.signals = base + 16 * waits.len() as u64;
        e.scheduler = d.sched();
        e.kernarg_end = ring_end;
        let slot = (entry_at - d.state.address()) as usize;
        // SAFETY: the slot is free (its previous entry was reclaimed: the
        // loop above checked the retire index) and inside the state
        // buffer; nothing reads it until the write index below says so.
        unsafe {
            std::ptr::copy_nonoverlapping(
                e.as_bytes().as_ptr(),
                (d.state.address() as *mut u8).add(slot),
                size_of::<QueueEntry>(),
            )
        };
        p.ring.write = ring_end;
        let keep = waits
            .iter()
            .chain(signals)
            .map(|(s, _)| (*s).clone())
            .collect();
        d.held.lock().unwrap_or_else(|p| p.into_inner()).insert(
            id,
            Held {
                buffer: work.map(|(b, _)| b.clone()),
                _semaphores: keep,
                _allocation: allocation.map(|(_, a)| a.clone()),
            },
        );
        d.word(std::mem::offset_of!(SchedulerState, write_index))
            .store(id + 1, MemOrdering::Release);
        Ok(id)
    }
}

/// A queue-ordered allocation ([`DeviceQueue::alloca`]): a handle in
/// device memory whose address the device commits when the allocation
/// runs and clears when it is deallocated. Cheap to clone. Dropping it
/// without a [`DeviceQueue::dealloca`] leaves its block taken until the
/// device goes (nothing else knows the block is free).
#[derive(Clone)]
pub struct Allocation {
    inner: Arc<AllocationInner>,
}

struct AllocationInner {
    /// The [`aqueduct_abi::command::AllocationHandle`].
    handle: HostBuffer<u8>,
    length: u64,
}

impl std::fmt::Debug for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Allocation")
            .field("handle", &format_args!("{:#x}", self.handle()))
            .field("length", &self.inner.length)
            .field("address", &self.address())
            .finish()
    }
}

impl Allocation {
    fn new(pool: &crate::memory::MemoryPool, length: u64) -> Result<Self> {
        let mut handle = pool.alloc_host::<u8>(size_of::<AllocationHandle>())?;
        handle.copy_from_slice(AllocationHandle { address: 0, length }.as_bytes());
        Ok(Self {
            inner: Arc::new(AllocationInner { handle, length }),
        })
    }

    /// Bytes asked for.
    pub fn length(&self) -> u64 {
        self.inner.length
    }

    /// The device address of the handle (what
    /// [`BufferRef::allocation`] takes).
    pub fn handle(&self) -> u64 {
        self.inner.handle.address()
    }

    /// The device address of the block, once the allocation has run and
    /// until it is deallocated.
    pub fn address(&self) -> Option<u64> {
        // SAFETY: the handle's first word, 8-aligned in a live buffer; the
        // device writes it before it signals the allocation's semaphores.
        let word = unsafe { AtomicU64::from_ptr(self.handle() as *mut u64) };
        Some(word.load(MemOrdering::Acquire)).filter(|&a| a != 0)
    }

    /// A reference to `length` bytes at `offset` of the allocation, for
    /// commands of a recording (resolved when the command is issued: keep
    /// the `Allocation` alive while entries that run such commands may
    /// run, as their recordings name its handle).
    pub fn buffer(&self, offset: u64, length: u64) -> BufferRef {
        BufferRef::allocation(self.handle(), offset, length)
    }
}

/// Entries written to a [`DeviceQueue`]'s mailbox and announced to the
/// scheduler together, by [`Batch::submit`] or when dropped.
#[must_use = "the entries run once the batch is submitted (or dropped)"]
pub struct Batch<'q> {
    queue: &'q DeviceQueue,
    added: u64,
}

impl Batch<'_> {
    /// [`DeviceQueue::execute`], announced with the batch.
    pub fn execute(
        &mut self,
        waits: &[SemaphoreValue<'_>],
        buffer: &CommandBuffer,
        bindings: &[BindingTableEntry],
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        let id = self.queue.add_execute(waits, buffer, bindings, signals)?;
        self.added += 1;
        Ok(id)
    }

    /// [`DeviceQueue::barrier`], announced with the batch.
    pub fn barrier(
        &mut self,
        waits: &[SemaphoreValue<'_>],
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        let id = self.queue.add(waits, signals, None, None)?;
        self.added += 1;
        Ok(id)
    }

    /// Announces the entries: one tick request.
    pub fn submit(mut self) -> Result<()> {
        self.announce()
    }

    fn announce(&mut self) -> Result<()> {
        if std::mem::take(&mut self.added) == 0 {
            return Ok(());
        }
        self.queue.device.inner.request(SchedulerActions::INCOMING)
    }
}

impl Drop for Batch<'_> {
    /// Announces what was not: an entry in the mailbox is never lost.
    fn drop(&mut self) {
        let _ = self.announce();
    }
}

struct SemaphoreInner {
    memory: HostBuffer<u8>,
    mirror: Signal,
    system: crate::System,
}

/// A timeline semaphore in device memory: a 64-bit payload that only
/// grows, waited for by device entries and host threads alike. Cheap to
/// clone; `Send + Sync`.
#[derive(Clone)]
pub struct Semaphore {
    inner: Arc<SemaphoreInner>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Semaphore({:#x})", self.address())
    }
}

impl Semaphore {
    /// A semaphore at `initial` on `device`.
    pub fn new(device: &Device, initial: u64) -> Result<Self> {
        check_value(initial)?;
        let mirror = Signal::new(device.agent().system(), initial as i64)?;
        let mut memory = device
            .inner
            .execution()
            .kernarg_pool()
            .alloc_host::<u8>(size_of::<SemaphoreLayout>())?;
        let mut s = SemaphoreLayout::new_zeroed();
        s.payload = initial;
        s.signal = mirror.handle();
        memory.copy_from_slice(s.as_bytes());
        Ok(Self {
            inner: Arc::new(SemaphoreInner {
                memory,
                mirror,
                system: device.agent().system().clone(),
            }),
        })
    }

    /// The semaphore's device address.
    pub fn address(&self) -> u64 {
        self.inner.memory.address()
    }

    /// The current payload, or the failure.
    pub fn query(&self) -> Result<u64> {
        // SAFETY: our live semaphore.
        unsafe {
            if let Some(status) = shared_logic::failure(self.address()) {
                return Err(self.failed(status, None));
            }
            Ok(shared_logic::payload(self.address()))
        }
    }

    fn failed(&self, status: u32, value: Option<u64>) -> Error {
        // SAFETY: our live semaphore, failed: these fields are written
        // before its FAILED flag and never again.
        let (sched, entry) = unsafe {
            let s = &*(self.address() as *const SemaphoreLayout);
            (
                std::ptr::read_volatile(&s.failed_scheduler),
                std::ptr::read_volatile(&s.failed_entry),
            )
        };
        let cause = (sched != 0).then(|| {
            // The Weak cloned out first: a device's last Arc may drop here,
            // and its drop takes this lock.
            let weak = {
                let all = SCHEDULERS.lock().unwrap_or_else(|p| p.into_inner());
                all.iter()
                    .find(|(at, _)| *at == sched)
                    .map(|(_, w)| w.clone())
            };
            let why = weak.and_then(|w| w.upgrade()).and_then(|d| {
                d.failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&entry)
                    .cloned()
            });
            match why {
                Some(why) => format!("entry {entry} failed: {why}"),
                None => format!("entry {entry} failed"),
            }
        });
        Error::SemaphoreFailed {
            semaphore: self.address(),
            value,
            status,
            cause,
        }
    }

    /// Advances the payload to `value` (a smaller value changes nothing)
    /// and releases the entries and host waits it satisfies.
    pub fn signal(&self, value: u64) -> Result<()> {
        check_value(value)?;
        let mut r = HostRequester {
            system: &self.inner.system,
            device: None,
            error: None,
        };
        // SAFETY: our live semaphore; its waiters are live entries of live
        // schedulers (each keeps its waits' semaphores alive until
        // reclaimed, and a device outlives its semaphores).
        unsafe { shared_logic::signal(self.address(), value, &mut r) }
            .map_err(|status| self.failed(status, Some(value)))?;
        r.error.map_or(Ok(()), Err)
    }

    /// Fails the semaphore with `status` (an HSA status): every waiter,
    /// device or host, gets the error.
    pub fn fail(&self, status: u32) -> Result<()> {
        let mut r = HostRequester {
            system: &self.inner.system,
            device: None,
            error: None,
        };
        // SAFETY: as in `signal`.
        unsafe {
            shared_logic::fail(
                self.address(),
                status,
                shared_logic::Origin::default(),
                &mut r,
            )
        };
        r.error.map_or(Ok(()), Err)
    }

    /// Blocks until the payload reaches `value` (in the runtime's signal
    /// wait on the mirror), the semaphore fails, or `timeout` passes.
    pub fn wait(&self, value: u64, timeout: Duration) -> Result<()> {
        check_value(value)?;
        // A failure also ends the wait even if the mirror missed it.
        let failed = || {
            // SAFETY: our live semaphore.
            unsafe { shared_logic::failure(self.address()) }
        };
        let waited = self.inner.mirror.wait_checked(
            SignalCondition::GTE,
            value as i64,
            timeout,
            WaitOrder::Acquire,
            "semaphore",
            || match failed() {
                Some(_) => Err(Error::InvalidArgument {
                    what: "semaphore",
                    problem: "failed".into(),
                }),
                None => Ok(()),
            },
        );
        // SAFETY: our live semaphore.
        if let Some(status) = unsafe { shared_logic::failure(self.address()) } {
            return Err(self.failed(status, Some(value)));
        }
        match waited {
            Ok(_) => Ok(()),
            Err(Error::Timeout {
                condition, waited, ..
            }) => Err(Error::Timeout {
                what: format!("semaphore {:#x}", self.address()),
                condition,
                expected: value as i64,
                // SAFETY: our live semaphore.
                observed: unsafe { shared_logic::payload(self.address()) } as i64,
                waited,
            }),
            Err(e) => Err(e),
        }
    }
}

/// The largest payload: the mirror signal is an i64, and `i64::MAX` means
/// failed.
pub const MAX_SEMAPHORE_VALUE: u64 = i64::MAX as u64 - 1;

fn check_value(value: u64) -> Result<()> {
    if value > MAX_SEMAPHORE_VALUE {
        return Err(Error::InvalidArgument {
            what: "semaphore value",
            problem: format!("{value} is above {MAX_SEMAPHORE_VALUE}"),
        });
    }
    Ok(())
}

/// A device trace on the host's clock ([`Device::trace`]).
#[derive(Clone, Debug)]
pub struct DeviceTrace {
    /// The host instant the events' times count from.
    pub epoch: Instant,
    /// How far off the device-to-host correlation may be: half the host's
    /// window around the calibrating tick.
    pub error: Duration,
    /// Records the device could not write (ring full).
    pub dropped: u64,
    /// The records, in the order the device wrote them.
    pub events: Vec<TraceEvent>,
}

/// One record: seconds from [`DeviceTrace::epoch`] on the host's clock
/// (negative before it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceEvent {
    /// What the record describes: a tick, an issue, a retire, a block.
    pub kind: TraceKind,
    /// The tick's number, or the entry's id.
    pub id: u64,
    /// Of a tick: the entries it accepted.
    pub flags: u16,
    /// When it began, seconds from the epoch.
    pub start: f64,
    /// When it ended, seconds from the epoch (`start` for a point event).
    pub end: f64,
}

impl DeviceTrace {
    /// The Chrome trace-event JSON of the trace (microseconds): ticks as
    /// complete events on track 1, entries from issue to retire on track 2
    /// (an entry not retired yet as an instant at its issue).
    pub fn chrome_json(&self, device: &str) -> String {
        use std::fmt::Write as _;
        let us = |s: f64| s * 1e6;
        let device: String = device
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let mut events = vec![
            format!(
                r#"{{"ph":"M","name":"process_name","pid":1,"args":{{"name":"{device} device scheduler"}}}}"#
            ),
            r#"{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"scheduler ticks"}}"#
                .to_string(),
            r#"{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"queue entries"}}"#
                .to_string(),
        ];
        let retired: std::collections::HashMap<u64, f64> = self
            .events
            .iter()
            .filter(|e| e.kind == TraceKind::RETIRE)
            .map(|e| (e.id, e.start))
            .collect();
        for e in &self.events {
            let mut s = String::new();
            let _ = match (e.kind, retired.get(&e.id)) {
                (TraceKind::SCHEDULER_TICK, _) => write!(
                    s,
                    r#"{{"ph":"X","name":"tick {}","cat":"scheduler","pid":1,"tid":1,"ts":{:.3},"dur":{:.3},"args":{{"accepted":{}}}}}"#,
                    e.id,
                    us(e.start),
                    us(e.end - e.start),
                    e.flags
                ),
                (TraceKind::ISSUE, Some(&end)) => write!(
                    s,
                    r#"{{"ph":"X","name":"entry {}","cat":"entry","pid":1,"tid":2,"ts":{:.3},"dur":{:.3}}}"#,
                    e.id,
                    us(e.start),
                    us((end - e.start).max(0.0))
                ),
                (TraceKind::ISSUE, None) => write!(
                    s,
                    r#"{{"ph":"i","s":"t","name":"entry {} issued","cat":"entry","pid":1,"tid":2,"ts":{:.3}}}"#,
                    e.id,
                    us(e.start)
                ),
                (TraceKind::BLOCK, _) => write!(
                    s,
                    r#"{{"ph":"i","s":"t","name":"block {} of entry {}","cat":"block","pid":1,"tid":2,"ts":{:.3}}}"#,
                    e.flags,
                    e.id,
                    us(e.start)
                ),
                _ => continue,
            };
            events.push(s);
        }
        format!(
            r#"{{"traceEvents":[{}],"displayTimeUnit":"ms","otherData":{{"dropped":{},"clock_error_us":{:.3}}}}}"#,
            events.join(","),
            self.dropped,
            self.error.as_secs_f64() * 1e6
        )
    }
}
