//! The device scheduler: timeline semaphores, the tick, and the retire of
//! an entry's work, over the layouts of [`aqueduct_abi::scheduler`].
//!
//! ```text
//!   submitter ── entry into the mailbox ring, write_index ──► request(INCOMING)
//!   request   ── fetch_or into actions; the one that saw 0 enqueues a tick
//!   tick      ── actions := 0; accept new entries; take the wake stack;
//!                each entry checks its waits in order: reached, or onto
//!                the semaphore's waiter list; ready entries in id order:
//!                BARRIER completes here, EXECUTE issues its entry block;
//!                reclaim retired entries' slots and kernarg space
//!   RETURN    ── the control kernel retires the entry: signals its
//!                semaphores (its slot is reclaimed by the next tick)
//!   signal    ── payload := value, mirror into the HSA signal, detach the
//!                waiters reached, push each on its scheduler's wake stack,
//!                request(WAKE)
//! ```
//!
//! A chain of N entries, each waiting for the one before, takes N ticks:
//! the first accepts them all and issues the head; each retire's wake
//! requests the tick that issues the next. N entries that wait for one
//! value take two: one accepts them, the one the signal's wakes request
//! (coalesced) issues them all.
//!
//! Host and device run these functions: the device's tick and control
//! kernel, the host's `Semaphore::signal`. What differs is a [`Requester`]:
//! how to pause in a spin, how to put a tick on a control queue, how to
//! store a mirror signal's value. [`QueueRequester`] is the device's (plain
//! Rust over the queue's `amd_queue_t`, so the host tests run it too).
//!
//! Memory: a semaphore's lock is taken and released with system-scope
//! acquire and release, so the fields it guards are plain accesses under
//! it; the action set, the wake stack, entry states, the ring indices and
//! `in_flight` are system-scope atomics (the host reads and writes some of
//! them); the rest of [`SchedulerState`] is the tick's own (ticks run one
//! at a time: one lane, barrier bit, one control queue).

use core::mem::offset_of;

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::command::{AllocationHandle, BlockIssue, CommandBufferHeader, Execution};
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::scheduler::{
    BlockPool, HostRequest, KernargRing, MAX_EXECUTION_QUEUES, PoolBucket, QueueEntry,
    QueueEntryKind, QueueEntryState, SchedulerActions, SchedulerState, Semaphore, SemaphoreFlags,
    SemaphoreRef, TraceKind, TraceRecord, TraceRing,
};

use crate::atomic::{AcqRel, Acquire, Atomic, Relaxed, Release, System};
use crate::command::{IssueError, dispatch_block};
use crate::queue::{Queue, QueueError};
use crate::signal::Signal;

/// HSA_STATUS_ERROR: the status of an entry whose issue failed.
pub const STATUS_ERROR: u32 = 0x1000;

/// HSA_STATUS_ERROR_INVALID_ARGUMENT: an entry kind the scheduler does not
/// run, a DEALLOCA of a handle that holds no block.
pub const STATUS_INVALID_ARGUMENT: u32 = 0x1001;

/// HSA_STATUS_ERROR_INVALID_ALLOCATION: an ALLOCA larger than the pool's
/// large blocks (or with no pool).
pub const STATUS_INVALID_ALLOCATION: u32 = 0x1003;

/// HSA_STATUS_ERROR_OUT_OF_RESOURCES: an ALLOCA whose bucket the host
/// could not grow.
pub const STATUS_OUT_OF_RESOURCES: u32 = 0x1008;

/// What the scheduler's shared functions need from where they run.
pub trait Requester {
    /// Between two looks of a spin-wait.
    fn pause(&mut self);
    /// Puts the tick packet of the scheduler at `scheduler` on its control
    /// queue.
    fn enqueue_tick(&mut self, scheduler: u64);
    /// Stores `value` to the HSA signal `signal` (release, system scope),
    /// waking its host waiters.
    fn mirror(&mut self, signal: SignalHandle, value: i64);
    /// The agent's timestamp (`s_memrealtime`) for trace records.
    fn timestamp(&mut self) -> u64;
    /// Posts `request` with `arg` (`arg[1]`) to the host service of the
    /// scheduler at `scheduler`, if it has one
    /// ([`SchedulerState::host_queue`]).
    fn post(&mut self, scheduler: u64, request: HostRequest, arg: u64);
}

/// What a tick needs besides a [`Requester`].
pub trait Issuer: Requester {
    /// Issues the entry block of the submission at `execution` for the
    /// scheduler at `scheduler`. Gives up waiting for room in the
    /// submission's queue once the scheduler's execution queue is another
    /// one ([`QueueError::Abandoned`]): the host replaced a faulted queue,
    /// whose slots never free again.
    fn execute(&mut self, scheduler: u64, execution: u64) -> Result<(), IssueError>;
}

/// The device's [`Requester`] and [`Issuer`]: ticks go on the control
/// queue through its `amd_queue_t`, a submission's entry block through
/// [`dispatch_block`] (a dispatch of the submission's issue kernel),
/// mirrors through [`Signal::store`].
pub struct QueueRequester<P: FnMut()> {
    pub pause: P,
}

impl<P: FnMut()> Requester for QueueRequester<P> {
    fn pause(&mut self) {
        (self.pause)()
    }

    fn enqueue_tick(&mut self, scheduler: u64) {
        let s = scheduler as *const SchedulerState;
        // SAFETY: a live scheduler (every caller's contract); the queue
        // address and the packet are written once, before any request.
        let (queue, packet) = unsafe { ((*s).control_queue, (*s).tick_packet) };
        // SAFETY: the scheduler's control queue is live while it is.
        let Ok(q) = (unsafe { Queue::from_ptr(queue as *mut AmdQueue) }) else {
            // The host checked the queue when it made the scheduler.
            return;
        };
        if let Ok(id) = q.reserve(1, &mut self.pause) {
            q.write_words(id, &packet);
            q.ring_doorbell(id);
        }
    }

    fn mirror(&mut self, signal: SignalHandle, value: i64) {
        // SAFETY: a semaphore's mirror is a live signal while it is.
        unsafe { Signal::from_handle(signal) }.store(value, Release, System);
    }

    /// An AGENT_DISPATCH packet on the host's soft queue: reserved, written
    /// and published as on any AQL queue (system-scope fences: the host
    /// reads what the device wrote before), then the doorbell, whose store
    /// wakes the service thread waiting on it. A full queue waits for the
    /// service to consume.
    fn post(&mut self, scheduler: u64, request: HostRequest, arg: u64) {
        // SAFETY: a live scheduler (every caller's contract); the field is
        // written once, before any entry runs.
        let queue =
            unsafe { get::<u64>(scheduler + offset_of!(SchedulerState, host_queue) as u64) };
        if queue == 0 {
            return;
        }
        // SAFETY: the host service's queue is live while its scheduler is.
        let Ok(q) = (unsafe { Queue::from_ptr(queue as *mut AmdQueue) }) else {
            return;
        };
        let Ok(packet) = aqueduct_abi::packet::agent_dispatch(
            request.0,
            [scheduler, arg, 0, 0],
            0,
            SignalHandle::NULL,
            aqueduct_abi::packet::Ordering::SYSTEM,
        ) else {
            return;
        };
        if let Ok(id) = q.reserve(1, &mut self.pause) {
            q.write(id, &packet);
            q.ring_doorbell(id);
        }
    }

    fn timestamp(&mut self) -> u64 {
        #[cfg(target_arch = "amdgpu")]
        {
            unsafe extern "C" {
                /// Defined in `llvm/clock.ll`: `llvm.readsteadycounter`
                /// (the constant-rate real-time clock).
                safe fn aqueduct_realtime() -> u64;
            }
            aqueduct_realtime()
        }
        #[cfg(not(target_arch = "amdgpu"))]
        0
    }
}

impl<P: FnMut()> Issuer for QueueRequester<P> {
    fn execute(&mut self, scheduler: u64, execution: u64) -> Result<(), IssueError> {
        // SAFETY: an EXECUTE entry's execution is live until it retires.
        let execution = unsafe { &*(execution as *const Execution) };
        let queue = execution.queue;
        // SAFETY: a live scheduler; the host stores a queue's slot
        // atomically (release) when it replaces the queue.
        unsafe {
            dispatch_block(execution, 0, || {
                (self.pause)();
                is_execution_queue(scheduler, queue)
            })
        }
    }
}

/// The atomic `T` at `address`.
///
/// # Safety
/// `address` is live, aligned and accessed only atomically while used.
unsafe fn atomic<'a, T: crate::atomic::Int>(address: u64) -> &'a Atomic<T> {
    // SAFETY: the caller's contract.
    unsafe { Atomic::from_ptr(address as *mut T) }
}

/// The plain `T` field at `address`.
///
/// # Safety
/// `address` is live and aligned; the caller holds whatever guards it.
unsafe fn get<T: Copy>(address: u64) -> T {
    // SAFETY: the caller's contract.
    unsafe { (address as *const T).read() }
}

/// # Safety
/// As for [`get`].
unsafe fn set<T: Copy>(address: u64, value: T) {
    // SAFETY: the caller's contract.
    unsafe { (address as *mut T).write(value) }
}

macro_rules! field {
    ($base:expr, $ty:ident . $field:ident) => {
        $base + offset_of!($ty, $field) as u64
    };
}

/// How a wait looks to the entry that makes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The payload has reached the value.
    Reached,
    /// Not yet: the entry is on the semaphore's waiter list and will be
    /// pushed on its scheduler's wake stack when it is.
    Registered,
    /// The semaphore failed, with this status.
    Failed(u32),
}

/// Takes the semaphore's lock.
///
/// # Safety
/// `sem` is a live [`Semaphore`].
unsafe fn lock(sem: u64, r: &mut impl Requester) {
    // SAFETY: the caller's contract.
    let l = unsafe { atomic::<u32>(field!(sem, Semaphore.lock)) };
    while l.compare_exchange(0, 1, Acquire, System).is_err() {
        r.pause();
    }
}

/// # Safety
/// `sem` is a live [`Semaphore`] whose lock the caller holds.
unsafe fn unlock(sem: u64) {
    // SAFETY: the caller's contract.
    unsafe { atomic::<u32>(field!(sem, Semaphore.lock)) }.store(0, Release, System);
}

/// The semaphore's payload (acquire: what its signaller wrote before is
/// visible).
///
/// # Safety
/// `sem` is a live [`Semaphore`].
pub unsafe fn payload(sem: u64) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { atomic::<u64>(field!(sem, Semaphore.payload)) }.load(Acquire, System)
}

/// The semaphore's failure status, if it failed.
///
/// # Safety
/// `sem` is a live [`Semaphore`].
pub unsafe fn failure(sem: u64) -> Option<u32> {
    // SAFETY: the caller's contract.
    let flags = unsafe { atomic::<u32>(field!(sem, Semaphore.flags)) }.load(Acquire, System);
    // SAFETY: written before the flag's release store, read after its
    // acquire load.
    (flags & SemaphoreFlags::FAILED.bits() != 0)
        .then(|| unsafe { get::<u32>(field!(sem, Semaphore.status)) })
}

/// Whether the payload of `sem` has reached `value`; if not, puts `entry`
/// on its waiter list (in value order) to be woken when it does.
///
/// # Safety
/// `sem` is a live [`Semaphore`]; `entry` a live [`QueueEntry`] on no
/// waiter list, whose `scheduler` is set.
pub unsafe fn add_waiter(sem: u64, entry: u64, value: u64, r: &mut impl Requester) -> Wait {
    // SAFETY: the contract.
    unsafe {
        if let Some(status) = failure(sem) {
            return Wait::Failed(status);
        }
        if payload(sem) >= value {
            return Wait::Reached;
        }
        lock(sem, r);
        let outcome = if let Some(status) = failure(sem) {
            Wait::Failed(status)
        } else if payload(sem) >= value {
            Wait::Reached
        } else {
            insert_waiter(sem, entry, value);
            Wait::Registered
        };
        unlock(sem);
        outcome
    }
}

/// Links `entry` into the waiter list of `sem` after every entry waiting
/// for at most `value`.
///
/// # Safety
/// The caller holds the lock of the live `sem`; `entry` is on no list.
unsafe fn insert_waiter(sem: u64, entry: u64, value: u64) {
    let head_at = field!(sem, Semaphore.waiters_head);
    let tail_at = field!(sem, Semaphore.waiters_tail);
    let next_of = |e: u64| field!(e, QueueEntry.wait_next);
    let value_of = |e: u64| field!(e, QueueEntry.wait_value);
    // SAFETY: the contract: the list and its entries are the lock's.
    unsafe {
        set(value_of(entry), value);
        let tail = get::<u64>(tail_at);
        if tail == 0 || get::<u64>(value_of(tail)) <= value {
            // The common case: waits arrive in value order.
            set(next_of(entry), 0u64);
            if tail == 0 {
                set(head_at, entry);
            } else {
                set(next_of(tail), entry);
            }
            set(tail_at, entry);
            return;
        }
        // The tail waits for more than `value`: the entry goes before it.
        link_in_order(head_at, entry, next_of, |e| get::<u64>(value_of(e)));
    }
}

/// Links `entry` into the list at `head_at` (entries linked by the u64 at
/// `next_of(entry)`, 0-ended, in `key` order) after every entry whose key
/// is at most its own.
///
/// # Safety
/// The caller owns the list and its entries; `entry` is on no list.
unsafe fn link_in_order(
    head_at: u64,
    entry: u64,
    next_of: impl Fn(u64) -> u64,
    key: impl Fn(u64) -> u64,
) {
    let mine = key(entry);
    // SAFETY: the contract.
    unsafe {
        let mut prev = 0u64;
        let mut cur = get::<u64>(head_at);
        while cur != 0 && key(cur) <= mine {
            prev = cur;
            cur = get(next_of(cur));
        }
        set(next_of(entry), cur);
        set(if prev == 0 { head_at } else { next_of(prev) }, entry);
    }
}

/// Takes `entry` off the waiter list of `sem`, if it is on it: for a
/// scheduler that goes away while its entries wait, so that no later
/// signal reaches memory that is gone. Returns whether it was there.
///
/// # Safety
/// `sem` is a live [`Semaphore`] whose waiters are live entries.
pub unsafe fn remove_waiter(sem: u64, entry: u64, r: &mut impl Requester) -> bool {
    let head_at = field!(sem, Semaphore.waiters_head);
    let next_of = |e: u64| field!(e, QueueEntry.wait_next);
    // SAFETY: the contract; the list is the lock's.
    unsafe {
        lock(sem, r);
        let mut prev = 0u64;
        let mut cur = get::<u64>(head_at);
        while cur != 0 && cur != entry {
            prev = cur;
            cur = get(next_of(cur));
        }
        if cur == entry {
            let next = get::<u64>(next_of(entry));
            set(if prev == 0 { head_at } else { next_of(prev) }, next);
            if next == 0 {
                set(field!(sem, Semaphore.waiters_tail), prev);
            }
        }
        unlock(sem);
        cur == entry
    }
}

/// Unlinks the waiters of `sem` that need at most `value` (all of them
/// with `u64::MAX`) and returns the first (linked by `wait_next`, 0-ended).
///
/// # Safety
/// The caller holds the lock of the live `sem`.
unsafe fn detach_waiters(sem: u64, value: u64) -> u64 {
    let head_at = field!(sem, Semaphore.waiters_head);
    // SAFETY: the contract.
    unsafe {
        let head = get::<u64>(head_at);
        let mut last = 0u64;
        let mut cur = head;
        while cur != 0 && get::<u64>(field!(cur, QueueEntry.wait_value)) <= value {
            last = cur;
            cur = get(field!(cur, QueueEntry.wait_next));
        }
        if last == 0 {
            return 0;
        }
        set(field!(last, QueueEntry.wait_next), 0u64);
        set(head_at, cur);
        if cur == 0 {
            set(field!(sem, Semaphore.waiters_tail), 0u64);
        }
        // Each one's scheduler knows it is being woken before the lock goes
        // (a scheduler going away takes its waiters off under this lock,
        // then waits for these to be pushed).
        let mut e = head;
        while e != 0 {
            let sched = get::<u64>(field!(e, QueueEntry.scheduler));
            atomic::<u64>(field!(sched, SchedulerState.waking)).fetch_add(1, Relaxed, System);
            e = get(field!(e, QueueEntry.wait_next));
        }
        head
    }
}

/// Pushes each entry of a detached waiter list on its scheduler's wake
/// stack and requests a tick for it: once per run of entries of one
/// scheduler, after the run is pushed, so that a tick that starts while
/// the list is walked does not take a part of it and leave the rest to
/// another tick.
///
/// # Safety
/// `list` is a detached list ([`detach_waiters`]) of live entries.
unsafe fn wake_all(mut list: u64, r: &mut impl Requester) {
    // The scheduler of the current run and how many of the run's entries
    // were pushed.
    let (mut pending, mut pushed) = (0u64, 0u64);
    while list != 0 {
        let entry = list;
        // SAFETY: the contract: the entry is ours until pushed.
        unsafe {
            list = get(field!(entry, QueueEntry.wait_next));
            let sched = get::<u64>(field!(entry, QueueEntry.scheduler));
            if pending != sched && pending != 0 {
                woken(pending, pushed, r);
                pushed = 0;
            }
            pending = sched;
            push_wake(sched, entry);
            pushed += 1;
        }
    }
    if pending != 0 {
        // SAFETY: the scheduler of live entries.
        unsafe { woken(pending, pushed, r) };
    }
}

/// Ends a run of `pushed` entries woken on `sched`: requests its tick, then
/// counts them out of its `waking`.
///
/// # Safety
/// `sched` is live (its entries were).
unsafe fn woken(sched: u64, pushed: u64, r: &mut impl Requester) {
    // SAFETY: the contract.
    unsafe {
        request(sched, SchedulerActions::WAKE, r);
        atomic::<u64>(field!(sched, SchedulerState.waking)).fetch_sub(pushed, Release, System);
    }
}

/// Pushes `entry` on the wake stack of `sched` (a lock-free stack: many
/// pushers, one taker, the tick, which takes it whole).
///
/// # Safety
/// Both live; `entry` is on no list.
unsafe fn push_wake(sched: u64, entry: u64) {
    // SAFETY: the contract.
    let head = unsafe { atomic::<u64>(field!(sched, SchedulerState.wake_head)) };
    let mut top = head.load(Relaxed, System);
    loop {
        // SAFETY: the entry is ours until the exchange below publishes it
        // (release: the taker sees this link).
        unsafe { set(field!(entry, QueueEntry.wake_next), top) };
        match head.compare_exchange(top, entry, Release, System) {
            Ok(_) => return,
            Err(now) => top = now,
        }
    }
}

/// Requests a tick of `sched` for `actions`: enqueues it if no request is
/// pending, else the pending tick will see them.
///
/// # Safety
/// `sched` is a live scheduler.
pub unsafe fn request(sched: u64, actions: SchedulerActions, r: &mut impl Requester) {
    // SAFETY: the contract.
    let set = unsafe { atomic::<u32>(field!(sched, SchedulerState.actions)) };
    if set.fetch_or(actions.bits(), AcqRel, System) == 0 {
        r.enqueue_tick(sched);
    }
}

/// Advances `sem` to `value` (a smaller value changes nothing), mirrors it
/// into the semaphore's HSA signal and wakes the waiters it satisfies.
/// `Err(status)` if the semaphore had failed: it stays failed.
///
/// # Safety
/// `sem` is a live [`Semaphore`] whose waiters are live entries.
pub unsafe fn signal(sem: u64, value: u64, r: &mut impl Requester) -> Result<(), u32> {
    // SAFETY: the contract.
    unsafe {
        lock(sem, r);
        if let Some(status) = failure(sem) {
            unlock(sem);
            return Err(status);
        }
        let mut woken = 0;
        if value > payload(sem) {
            atomic::<u64>(field!(sem, Semaphore.payload)).store(value, Release, System);
            let mirror = get::<SignalHandle>(field!(sem, Semaphore.signal));
            if mirror != SignalHandle::NULL {
                // Under the lock: mirrors are stored in payload order.
                r.mirror(mirror, value as i64);
            }
            woken = detach_waiters(sem, value);
        }
        unlock(sem);
        wake_all(woken, r);
    }
    Ok(())
}

/// Where a failure began: the entry (its scheduler and id) whose work or
/// issue failed first; all zero when the host failed a semaphore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// Device address of the entry's [`SchedulerState`].
    pub scheduler: u64,
    pub entry: u64,
}

impl Origin {
    /// The failure of `entry` itself.
    ///
    /// # Safety
    /// `entry` is live.
    pub unsafe fn of_entry(entry: u64) -> Self {
        // SAFETY: the contract.
        unsafe {
            Self {
                scheduler: get(field!(entry, QueueEntry.scheduler)),
                entry: get(field!(entry, QueueEntry.id)),
            }
        }
    }

    /// The origin recorded in a failed semaphore.
    ///
    /// # Safety
    /// `sem` is live and failed (the fields are written before the flag).
    pub unsafe fn of_semaphore(sem: u64) -> Self {
        // SAFETY: the contract.
        unsafe {
            Self {
                scheduler: get(field!(sem, Semaphore.failed_scheduler)),
                entry: get(field!(sem, Semaphore.failed_entry)),
            }
        }
    }
}

/// Fails `sem` with `status` (nothing if it already failed): its mirror
/// goes to `i64::MAX` so that host waits return, and every waiter wakes to
/// find it failed. It records `origin`.
///
/// # Safety
/// As for [`signal`].
pub unsafe fn fail(sem: u64, status: u32, origin: Origin, r: &mut impl Requester) {
    // SAFETY: the contract.
    unsafe {
        lock(sem, r);
        if failure(sem).is_some() {
            unlock(sem);
            return;
        }
        set(field!(sem, Semaphore.status), status);
        set(field!(sem, Semaphore.failed_scheduler), origin.scheduler);
        set(field!(sem, Semaphore.failed_entry), origin.entry);
        atomic::<u32>(field!(sem, Semaphore.flags)).fetch_or(
            SemaphoreFlags::FAILED.bits(),
            Release,
            System,
        );
        let mirror = get::<SignalHandle>(field!(sem, Semaphore.signal));
        if mirror != SignalHandle::NULL {
            r.mirror(mirror, i64::MAX);
        }
        let woken = detach_waiters(sem, u64::MAX);
        unlock(sem);
        wake_all(woken, r);
    }
}

/// Element `i` of an entry's wait or signal list at `list`.
///
/// # Safety
/// `list` holds more than `i` [`SemaphoreRef`]s, 8-aligned.
unsafe fn sem_ref(list: u64, i: u32) -> SemaphoreRef {
    // SAFETY: the contract.
    unsafe { get::<SemaphoreRef>(list + size_of::<SemaphoreRef>() as u64 * u64::from(i)) }
}

/// The entry's state (acquire).
///
/// # Safety
/// `entry` is live.
pub unsafe fn state(entry: u64) -> QueueEntryState {
    // SAFETY: the contract.
    QueueEntryState(unsafe { atomic::<u32>(field!(entry, QueueEntry.state)) }.load(Acquire, System))
}

/// # Safety
/// `entry` is live.
unsafe fn set_state(entry: u64, state: QueueEntryState) {
    // SAFETY: the contract.
    unsafe { atomic::<u32>(field!(entry, QueueEntry.state)) }.store(state.0, Release, System);
}

/// Claims the end of an issued entry for the caller (ISSUED → ENDING):
/// its retire and a recovery that fails it may race (a faulted queue's
/// other waves may still run its RETURN), and exactly one of them may
/// signal or fail its semaphores, release it and count it out of
/// `in_flight`. False: the other has it. The claim is by slot: a RETURN
/// that runs only after its entry's slot was reclaimed and reused would
/// claim the new entry (not handled yet).
///
/// # Safety
/// `entry` is live.
pub unsafe fn claim_end(entry: u64) -> bool {
    // SAFETY: the contract.
    unsafe { atomic::<u32>(field!(entry, QueueEntry.state)) }
        .compare_exchange(
            QueueEntryState::ISSUED.0,
            QueueEntryState::ENDING.0,
            AcqRel,
            System,
        )
        .is_ok()
}

/// Completes `entry`: signals its semaphores, then marks it RETIRED.
///
/// # Safety
/// `entry` is live and done, with live semaphores.
unsafe fn complete(entry: u64, r: &mut impl Requester) {
    // SAFETY: the contract.
    unsafe {
        let signals = get::<u64>(field!(entry, QueueEntry.signals));
        let count = get::<u16>(field!(entry, QueueEntry.signal_count));
        for i in 0..u32::from(count) {
            let s = sem_ref(signals, i);
            // A failed semaphore stays failed: nothing to do.
            let _ = signal(s.semaphore, s.value, r);
        }
        set_state(entry, QueueEntryState::RETIRED);
    }
}

/// Fails `entry` with `status`: fails its semaphores (recording
/// `origin`), then marks it FAILED.
///
/// # Safety
/// `entry` is live, with live semaphores.
pub unsafe fn fail_entry(entry: u64, status: u32, origin: Origin, r: &mut impl Requester) {
    // SAFETY: the contract.
    unsafe {
        set(field!(entry, QueueEntry.status), status);
        let signals = get::<u64>(field!(entry, QueueEntry.signals));
        let count = get::<u16>(field!(entry, QueueEntry.signal_count));
        for i in 0..u32::from(count) {
            fail(sem_ref(signals, i).semaphore, status, origin, r);
        }
        set_state(entry, QueueEntryState::FAILED);
    }
}

/// Records a trace event in the ring of `sched`, if it traces: reserves a
/// slot only while the ring has room (else counts it dropped), writes the
/// record, publishes its kind last ([`TraceRing`]). The record that fills
/// another half of the ring asks the host service to drain it
/// ([`HostRequest::TRACE_FLUSH`]).
///
/// # Safety
/// `sched` is live, and so is its trace ring if it has one.
pub unsafe fn trace(
    sched: u64,
    event: (TraceKind, u64),
    start: u64,
    end: u64,
    flags: u16,
    r: &mut impl Requester,
) {
    let (kind, id) = event;
    // SAFETY: the contract.
    unsafe {
        let ring = get::<u64>(field!(sched, SchedulerState.trace));
        if ring == 0 {
            return;
        }
        let write = atomic::<u64>(field!(ring, TraceRing.write_index));
        let capacity = get::<u64>(field!(ring, TraceRing.capacity));
        let mut at = write.load(Relaxed, System);
        loop {
            let read = atomic::<u64>(field!(ring, TraceRing.read_index)).load(Acquire, System);
            if at < read {
                // Stale: others wrote and the host drained meanwhile.
                at = write.load(Relaxed, System);
                continue;
            }
            if at - read >= capacity {
                atomic::<u64>(field!(ring, TraceRing.dropped)).fetch_add(1, Relaxed, System);
                return;
            }
            match write.compare_exchange(at, at + 1, Relaxed, System) {
                Ok(_) => break,
                Err(now) => at = now,
            }
        }
        let record = get::<u64>(field!(ring, TraceRing.base))
            + size_of::<TraceRecord>() as u64 * (at & (capacity - 1));
        set(field!(record, TraceRecord.id), id);
        set(field!(record, TraceRecord.start_ts), start);
        set(field!(record, TraceRecord.end_ts), end);
        atomic::<u32>(record).store(
            u32::from(kind.0) | (u32::from(flags) << 16),
            Release,
            System,
        );
        if (at + 1).is_multiple_of((capacity / 2).max(1)) {
            r.post(sched, HostRequest::TRACE_FLUSH, at + 1);
        }
    }
}

/// Records, under a tracing scheduler, that the block whose issue state
/// is at `issue` begins ([`TraceKind::BLOCK`]); with `first_only`, only if
/// it is the entry's first block. Nothing for a submission outside a
/// scheduler.
///
/// # Safety
/// `issue` is a live [`BlockIssue`] of a live [`Execution`].
pub unsafe fn trace_block(issue: u64, first_only: bool, r: &mut impl Requester) {
    // SAFETY: the contract; an execution's entry and scheduler are live
    // while it runs.
    unsafe {
        let execution = get::<u64>(field!(issue, BlockIssue.execution));
        let entry = get::<u64>(field!(execution, Execution.entry));
        if entry == 0 {
            return;
        }
        let sched = get::<u64>(field!(entry, QueueEntry.scheduler));
        if get::<u64>(field!(sched, SchedulerState.trace)) == 0 {
            return;
        }
        let first = get::<u64>(field!(execution, Execution.issues));
        let block = (issue - first) / size_of::<BlockIssue>() as u64;
        if first_only && block != 0 {
            return;
        }
        let (id, now) = (get::<u64>(field!(entry, QueueEntry.id)), r.timestamp());
        trace(sched, (TraceKind::BLOCK, id), now, now, block as u16, r);
    }
}

/// Retires an issued entry whose work is done (the RETURN's control
/// kernel): completes it, which wakes its semaphores' waiters. It requests
/// no tick of its own: its slot is reclaimed by whatever tick runs next,
/// and a submitter that runs out of room requests one
/// ([`SchedulerActions::RETIRE`]). So entries that nobody waits for cost
/// no tick when they finish.
///
/// An entry the host's recovery failed first ([`claim_end`]) is left
/// alone.
///
/// # Safety
/// `entry` is a live, issued entry whose work is done.
pub unsafe fn retire(entry: u64, r: &mut impl Requester) {
    // SAFETY: the contract.
    unsafe {
        if !claim_end(entry) {
            return;
        }
        let sched = get::<u64>(field!(entry, QueueEntry.scheduler));
        // Recorded first: once its semaphores are signalled, the entries
        // waiting for it may issue (and record) before this kernel goes on.
        let (id, now) = (get(field!(entry, QueueEntry.id)), r.timestamp());
        trace(sched, (TraceKind::RETIRE, id), now, now, 0, r);
        complete(entry, r);
        // Before `in_flight` drops: a device that saw no entry in flight
        // may destroy the host service's queue.
        r.post(sched, HostRequest::RELEASE, id);
        atomic::<u32>(field!(sched, SchedulerState.in_flight)).fetch_sub(1, Release, System);
    }
}

/// What a tick did, for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Entries accepted from the mailbox.
    pub accepted: u32,
    /// Entries taken from the wake stack.
    pub woken: u32,
    /// Entries issued (EXECUTE) or completed on the spot (BARRIER,
    /// ALLOCA, DEALLOCA).
    pub issued: u32,
    /// Entries failed (a failed wait, an issue that failed).
    pub failed: u32,
    /// Slots reclaimed.
    pub reclaimed: u32,
    /// Passes: more than one when the tick's own completions woke entries
    /// of this scheduler.
    pub passes: u32,
}

/// A [`Requester`] for the tick itself: a request for its own scheduler
/// is remembered instead of enqueued (the tick makes another pass).
struct TickRequester<'a, I> {
    inner: &'a mut I,
    sched: u64,
    again: bool,
}

impl<I: Issuer> Requester for TickRequester<'_, I> {
    fn pause(&mut self) {
        self.inner.pause()
    }

    fn enqueue_tick(&mut self, scheduler: u64) {
        if scheduler == self.sched {
            self.again = true;
        } else {
            self.inner.enqueue_tick(scheduler)
        }
    }

    fn mirror(&mut self, signal: SignalHandle, value: i64) {
        self.inner.mirror(signal, value)
    }

    fn timestamp(&mut self) -> u64 {
        self.inner.timestamp()
    }

    fn post(&mut self, scheduler: u64, request: HostRequest, arg: u64) {
        self.inner.post(scheduler, request, arg)
    }
}

/// The entry of the mailbox ring with id `id`.
///
/// # Safety
/// `sched` is live.
unsafe fn entry_at(sched: u64, id: u64) -> u64 {
    // SAFETY: the contract.
    unsafe {
        let base = get::<u64>(field!(sched, SchedulerState.entries));
        let capacity = get::<u64>(field!(sched, SchedulerState.capacity));
        base + size_of::<QueueEntry>() as u64 * (id & (capacity - 1))
    }
}

/// Looks at `entry`'s waits from its cursor on: registers it with the
/// first not reached, or puts it on the ready list, or fails it.
///
/// # Safety
/// The tick's: `sched` and `entry` are live, the entry is WAITING and on
/// no list.
unsafe fn consider(sched: u64, entry: u64, r: &mut impl Requester, report: &mut TickReport) {
    // SAFETY: the contract.
    unsafe {
        let waits = get::<u64>(field!(entry, QueueEntry.waits));
        let count = u32::from(get::<u16>(field!(entry, QueueEntry.wait_count)));
        let cursor_at = field!(entry, QueueEntry.wait_cursor);
        let mut cursor = get::<u32>(cursor_at);
        while cursor < count {
            let w = sem_ref(waits, cursor);
            match add_waiter(w.semaphore, entry, w.value, r) {
                Wait::Reached => cursor += 1,
                Wait::Registered => {
                    set(cursor_at, cursor);
                    return;
                }
                Wait::Failed(status) => {
                    set(cursor_at, cursor);
                    fail_entry(entry, status, Origin::of_semaphore(w.semaphore), r);
                    report.failed += 1;
                    return;
                }
            }
        }
        set(cursor_at, cursor);
        insert_ready(sched, entry);
    }
}

/// Links `entry` into the ready list of `sched` in id order: at the end
/// when its id is the largest (accepted entries arrive in id order), else
/// from the start (woken ones arrive from a stack, latest first).
///
/// # Safety
/// The tick's; `entry` is on no list.
unsafe fn insert_ready(sched: u64, entry: u64) {
    let head_at = field!(sched, SchedulerState.ready_head);
    let tail_at = field!(sched, SchedulerState.ready_tail);
    let next_of = |e: u64| field!(e, QueueEntry.ready_next);
    let id_of = |e: u64| field!(e, QueueEntry.id);
    // SAFETY: the contract.
    unsafe {
        let tail = get::<u64>(tail_at);
        if tail == 0 || get::<u64>(id_of(tail)) < get::<u64>(id_of(entry)) {
            set(next_of(entry), 0u64);
            set(if tail == 0 { head_at } else { next_of(tail) }, entry);
            set(tail_at, entry);
            return;
        }
        // The tail's id is larger: the entry goes before it.
        link_in_order(head_at, entry, next_of, |e| get::<u64>(id_of(e)));
    }
}

/// One scheduler tick (see the module's documentation).
///
/// # Safety
/// `sched` is a live [`SchedulerState`] whose entries, semaphores and
/// executions are live; no other tick of it runs.
pub unsafe fn tick(sched: u64, issuer: &mut impl Issuer) -> TickReport {
    let mut report = TickReport::default();
    let mut r = TickRequester {
        inner: issuer,
        sched,
        again: false,
    };
    let began = r.timestamp();
    // SAFETY: the contract.
    unsafe {
        let ticks_at = field!(sched, SchedulerState.ticks);
        let number = get::<u64>(ticks_at) + 1;
        set(ticks_at, number);
        let actions = atomic::<u32>(field!(sched, SchedulerState.actions));
        loop {
            report.passes += 1;
            r.again = false;
            actions.swap(0, AcqRel, System);
            // New entries, in id order.
            let write =
                atomic::<u64>(field!(sched, SchedulerState.write_index)).load(Acquire, System);
            let accept_at = field!(sched, SchedulerState.accept_index);
            let mut id = get::<u64>(accept_at);
            while id < write {
                let entry = entry_at(sched, id);
                set(field!(entry, QueueEntry.wait_cursor), 0u32);
                set_state(entry, QueueEntryState::WAITING);
                consider(sched, entry, &mut r, &mut report);
                report.accepted += 1;
                id += 1;
            }
            set(accept_at, id);
            // Allocations waiting for blocks the host has added since (or
            // given up adding): ready again.
            let pool = get::<u64>(field!(sched, SchedulerState.pool));
            if pool != 0 {
                for b in 0..2u64 {
                    let bucket = bucket_at(pool, b);
                    let growth = atomic::<u32>(field!(bucket, PoolBucket.growth));
                    if get::<u64>(field!(bucket, PoolBucket.starved_head)) != 0
                        && growth.load(Acquire, System) != PoolBucket::GROWING
                    {
                        unstarve(sched, bucket);
                    }
                }
            }
            // Woken entries: their semaphore reached the value they waited
            // for (or failed); look at the rest of their waits.
            let mut woken =
                atomic::<u64>(field!(sched, SchedulerState.wake_head)).swap(0, Acquire, System);
            while woken != 0 {
                let entry = woken;
                woken = get(field!(entry, QueueEntry.wake_next));
                consider(sched, entry, &mut r, &mut report);
                report.woken += 1;
            }
            // Ready entries, in id order.
            let ready_at = field!(sched, SchedulerState.ready_head);
            loop {
                let entry = get::<u64>(ready_at);
                if entry == 0 {
                    break;
                }
                let next = get::<u64>(field!(entry, QueueEntry.ready_next));
                set(ready_at, next);
                if next == 0 {
                    set(field!(sched, SchedulerState.ready_tail), 0u64);
                }
                issue(sched, entry, &mut r, &mut report);
            }
            if !r.again {
                break;
            }
        }
        report.reclaimed = reclaim(sched);
        let ended = r.timestamp();
        let accepted = report.accepted.min(u32::from(u16::MAX)) as u16;
        trace(
            sched,
            (TraceKind::SCHEDULER_TICK, number),
            began,
            ended,
            accepted,
            &mut r,
        );
    }
    report
}

/// Issues a ready entry: completes a BARRIER, issues an EXECUTE's entry
/// block, fails anything else.
///
/// # Safety
/// The tick's: `entry` is ready and on no list.
// Inlined into the tick, as the release build does anyway: in the
// device-dev profile LLVM kept it outlined and, on gfx90a, failed with
// "unhandled SGPR spill to memory" (an SGPR spill needing EXEC changed
// while SCC is live, which LLVM's SIRegisterInfo does not handle).
#[inline(always)]
unsafe fn issue<I: Issuer>(
    sched: u64,
    entry: u64,
    r: &mut TickRequester<'_, I>,
    report: &mut TickReport,
) {
    // SAFETY: the contract.
    unsafe {
        match get::<QueueEntryKind>(field!(entry, QueueEntry.kind)) {
            QueueEntryKind::BARRIER => complete_here(sched, entry, r, report),
            QueueEntryKind::EXECUTE => {
                let execution = get::<u64>(field!(entry, QueueEntry.execution));
                // Pointed at a queue before it reads ISSUED: the host's
                // recovery fails the ISSUED entries of a faulted queue by
                // the queue they name.
                retarget(sched, execution);
                atomic::<u32>(field!(sched, SchedulerState.in_flight))
                    .fetch_add(1, Relaxed, System);
                set_state(entry, QueueEntryState::ISSUED);
                let (id, now) = (get(field!(entry, QueueEntry.id)), r.timestamp());
                // Again onto a current queue if the host replaces this one
                // (a fault) while the issue waits for room in it.
                let issued = loop {
                    match r.inner.execute(sched, execution) {
                        Err(IssueError::Queue(QueueError::Abandoned)) => retarget(sched, execution),
                        other => break other,
                    }
                };
                if issued.is_ok() {
                    report.issued += 1;
                    trace(sched, (TraceKind::ISSUE, id), now, now, 0, r);
                } else {
                    atomic::<u32>(field!(sched, SchedulerState.in_flight))
                        .fetch_sub(1, Relaxed, System);
                    fail_here(entry, STATUS_ERROR, r, report);
                }
            }
            QueueEntryKind::ALLOCA => alloca(sched, entry, r, report),
            QueueEntryKind::DEALLOCA => dealloca(sched, entry, r, report),
            _ => {
                fail_here(entry, STATUS_INVALID_ARGUMENT, r, report);
            }
        }
    }
}

/// Fails a ready entry in the tick with `status` (it is where the failure
/// began), counted in the report.
///
/// # Safety
/// The tick's: `entry` is ready and on no list.
unsafe fn fail_here(entry: u64, status: u32, r: &mut impl Requester, report: &mut TickReport) {
    // SAFETY: the contract.
    unsafe { fail_entry(entry, status, Origin::of_entry(entry), r) };
    report.failed += 1;
}

/// Completes an entry that needs no packet (BARRIER, ALLOCA, DEALLOCA) in
/// the tick, with its issue and retire in the trace.
///
/// # Safety
/// The tick's: `entry` is ready and done.
// Inlined into the tick: see `issue`.
#[inline(always)]
unsafe fn complete_here<I: Issuer>(
    sched: u64,
    entry: u64,
    r: &mut TickRequester<'_, I>,
    report: &mut TickReport,
) {
    // SAFETY: the contract.
    unsafe {
        complete(entry, r);
        report.issued += 1;
        let (id, now) = (get(field!(entry, QueueEntry.id)), r.timestamp());
        trace(sched, (TraceKind::ISSUE, id), now, now, 0, r);
        trace(sched, (TraceKind::RETIRE, id), now, now, 0, r);
    }
}

/// The device address of bucket `b` of the [`BlockPool`] at `pool`.
pub const fn bucket_at(pool: u64, b: u64) -> u64 {
    pool + offset_of!(BlockPool, buckets) as u64 + size_of::<PoolBucket>() as u64 * b
}

/// The index of the bucket of the pool at `pool` that serves `length`
/// bytes: the smallest whose blocks hold it; none for 0 bytes, more than
/// the large blocks, or no pool.
///
/// # Safety
/// `pool` is 0 or a live [`BlockPool`].
pub unsafe fn bucket_for(pool: u64, length: u64) -> Option<u64> {
    if pool == 0 || length == 0 {
        return None;
    }
    (0..2u64).find(|&b| {
        // SAFETY: the contract: a live pool's buckets.
        let size = unsafe { get::<u64>(field!(bucket_at(pool, b), PoolBucket.block_size)) };
        length <= size
    })
}

/// Runs `f` on the free-block stack of `bucket` (its array and count)
/// under the bucket's lock.
///
/// # Safety
/// `bucket` is live.
pub unsafe fn with_bucket<R>(
    bucket: u64,
    r: &mut impl Requester,
    f: impl FnOnce(u64, &mut u64, u64) -> R,
) -> R {
    // SAFETY: the contract; the lock makes the plain accesses of `free`
    // and `count` exclusive (acquire and release at system scope, the host
    // takes it too).
    unsafe {
        let lock = atomic::<u32>(field!(bucket, PoolBucket.lock));
        while lock.compare_exchange(0, 1, Acquire, System).is_err() {
            r.pause();
        }
        let mut count = get::<u64>(field!(bucket, PoolBucket.count));
        let out = f(
            get(field!(bucket, PoolBucket.free)),
            &mut count,
            get(field!(bucket, PoolBucket.capacity)),
        );
        set(field!(bucket, PoolBucket.count), count);
        lock.store(0, Release, System);
        out
    }
}

/// Pushes `block` on the free stack of `bucket`; false if it is full.
///
/// # Safety
/// `bucket` is live.
pub unsafe fn give_block(bucket: u64, block: u64, r: &mut impl Requester) -> bool {
    // SAFETY: the contract; the array holds `capacity` addresses.
    unsafe {
        with_bucket(bucket, r, |free, count, capacity| {
            if *count >= capacity {
                return false;
            }
            set(free + 8 * *count, block);
            *count += 1;
            true
        })
    }
}

/// Pops a free block of `bucket`, if it has one.
///
/// # Safety
/// `bucket` is live.
pub unsafe fn take_block(bucket: u64, r: &mut impl Requester) -> Option<u64> {
    // SAFETY: the contract; the array holds `count` addresses.
    unsafe {
        with_bucket(bucket, r, |free, count, _| {
            if *count == 0 {
                return None;
            }
            *count -= 1;
            Some(get::<u64>(free + 8 * *count))
        })
    }
}

/// Moves the allocations waiting on `bucket` back to the ready list (a
/// block came free, or the host grew the bucket or gave up on it).
///
/// # Safety
/// The tick's.
unsafe fn unstarve(sched: u64, bucket: u64) {
    // SAFETY: the contract: the list is the tick's own.
    unsafe {
        let mut e = get::<u64>(field!(bucket, PoolBucket.starved_head));
        set(field!(bucket, PoolBucket.starved_head), 0u64);
        set(field!(bucket, PoolBucket.starved_tail), 0u64);
        while e != 0 {
            let next = get::<u64>(field!(e, QueueEntry.ready_next));
            insert_ready(sched, e);
            e = next;
        }
    }
}

/// An ALLOCA: takes a block of the bucket its length picks and commits the
/// handle, or waits on the bucket for one (asking the host to grow it), or
/// fails when nothing can serve it.
///
/// # Safety
/// The tick's: `entry` is a ready ALLOCA whose handle is live.
unsafe fn alloca<I: Issuer>(
    sched: u64,
    entry: u64,
    r: &mut TickRequester<'_, I>,
    report: &mut TickReport,
) {
    // SAFETY: the contract.
    unsafe {
        let handle = get::<u64>(field!(entry, QueueEntry.handle));
        let length = get::<u64>(field!(handle, AllocationHandle.length));
        let pool = get::<u64>(field!(sched, SchedulerState.pool));
        let Some(index) = bucket_for(pool, length) else {
            fail_here(entry, STATUS_INVALID_ALLOCATION, r, report);
            return;
        };
        let bucket = bucket_at(pool, index);
        // First come, first served: while allocations wait on the bucket,
        // a later one waits behind them (the host's answer to their
        // request brings the tick that serves them all, in id order).
        let waiting = get::<u64>(field!(bucket, PoolBucket.starved_head)) != 0;
        if !waiting {
            if let Some(block) = take_block(bucket, r) {
                set(field!(handle, AllocationHandle.address), block);
                complete_here(sched, entry, r, report);
                return;
            }
            let growth = atomic::<u32>(field!(bucket, PoolBucket.growth));
            match growth.compare_exchange(0, PoolBucket::GROWING, AcqRel, System) {
                Err(PoolBucket::EXHAUSTED) => {
                    fail_here(entry, STATUS_OUT_OF_RESOURCES, r, report);
                    return;
                }
                Ok(_) => r.post(sched, HostRequest::GROW, index),
                Err(_) => {} // asked already
            }
        }
        // Last on the bucket's list (ready entries arrive in id order).
        set(field!(entry, QueueEntry.ready_next), 0u64);
        let tail = get::<u64>(field!(bucket, PoolBucket.starved_tail));
        if tail == 0 {
            set(field!(bucket, PoolBucket.starved_head), entry);
        } else {
            set(field!(tail, QueueEntry.ready_next), entry);
        }
        set(field!(bucket, PoolBucket.starved_tail), entry);
    }
}

/// A DEALLOCA: gives the handle's block back to its bucket, empties the
/// handle, and lets the allocations waiting on the bucket try again.
///
/// # Safety
/// The tick's: `entry` is a ready DEALLOCA whose handle is live.
// Inlined into the tick: see `issue`.
#[inline(always)]
unsafe fn dealloca<I: Issuer>(
    sched: u64,
    entry: u64,
    r: &mut TickRequester<'_, I>,
    report: &mut TickReport,
) {
    // SAFETY: the contract.
    unsafe {
        let handle = get::<u64>(field!(entry, QueueEntry.handle));
        let length = get::<u64>(field!(handle, AllocationHandle.length));
        let block = get::<u64>(field!(handle, AllocationHandle.address));
        let pool = get::<u64>(field!(sched, SchedulerState.pool));
        let bucket = bucket_for(pool, length).map(|b| bucket_at(pool, b));
        let Some(bucket) = bucket.filter(|_| block != 0) else {
            fail_here(entry, STATUS_INVALID_ARGUMENT, r, report);
            return;
        };
        if !give_block(bucket, block, r) {
            fail_here(entry, STATUS_ERROR, r, report);
            return;
        }
        set(field!(handle, AllocationHandle.address), 0u64);
        complete_here(sched, entry, r, report);
        unstarve(sched, bucket);
    }
}

/// Whether `queue` is one of the execution queues of the scheduler at
/// `sched` now (the host replaces one that faulted).
///
/// # Safety
/// `sched` is live.
pub unsafe fn is_execution_queue(sched: u64, queue: u64) -> bool {
    // SAFETY: the contract; the slots are stored atomically.
    unsafe {
        let count = get::<u64>(sched + offset_of!(SchedulerState, execution_count) as u64);
        let slots = sched + offset_of!(SchedulerState, execution_queues) as u64;
        (0..count.min(MAX_EXECUTION_QUEUES as u64))
            .any(|k| atomic::<u64>(slots + 8 * k).load(Relaxed, System) == queue)
    }
}

/// Points a submission at the next of the scheduler's execution queues,
/// in turn: its execution and every block's issue state. (The host
/// replaces a queue that faulted; entries submitted before named another
/// queue.)
///
/// # Safety
/// The tick's: `execution` is a live [`Execution`] not issued yet, with
/// its command buffer and issue states.
unsafe fn retarget(sched: u64, execution: u64) {
    // SAFETY: the contract.
    unsafe {
        let count = get::<u64>(field!(sched, SchedulerState.execution_count))
            .clamp(1, MAX_EXECUTION_QUEUES as u64);
        let next_at = field!(sched, SchedulerState.next_queue);
        let next = get::<u64>(next_at);
        set(next_at, next.wrapping_add(1));
        let slot = field!(sched, SchedulerState.execution_queues) + 8 * (next % count);
        let queue = atomic::<u64>(slot).load(Acquire, System);
        set(field!(execution, Execution.queue), queue);
        let header = get::<u64>(field!(execution, Execution.command_buffer));
        let blocks = get::<u32>(field!(header, CommandBufferHeader.block_count));
        let issues = get::<u64>(field!(execution, Execution.issues));
        for b in 0..u64::from(blocks) {
            set(
                issues + size_of::<BlockIssue>() as u64 * b + offset_of!(BlockIssue, queue) as u64,
                queue,
            );
        }
    }
}

/// Frees the slots (and kernarg space) of the oldest entries that are done,
/// in order; returns how many.
///
/// # Safety
/// The tick's.
unsafe fn reclaim(sched: u64) -> u32 {
    let mut n = 0;
    // SAFETY: the contract.
    unsafe {
        let retire = atomic::<u64>(field!(sched, SchedulerState.retire_index));
        let accepted = get::<u64>(field!(sched, SchedulerState.accept_index));
        let read = atomic::<u64>(
            field!(sched, SchedulerState.kernarg) + offset_of!(KernargRing, read_offset) as u64,
        );
        let mut id = retire.load(Relaxed, System);
        while id < accepted {
            let entry = entry_at(sched, id);
            let s = state(entry);
            if s != QueueEntryState::RETIRED && s != QueueEntryState::FAILED {
                break;
            }
            read.store(
                get::<u64>(field!(entry, QueueEntry.kernarg_end)),
                Release,
                System,
            );
            id += 1;
            n += 1;
        }
        retire.store(id, Release, System);
    }
    n
}

/// The scheduler's kernels.
#[cfg(all(target_arch = "amdgpu", feature = "kernels"))]
pub mod kernels {
    use aqueduct_abi::scheduler::SchedulerState;

    use super::QueueRequester;
    use crate::arch::work_item_x;

    /// One tick of the scheduler at `scheduler` (launch one work-item, on
    /// its control queue, barrier bit set).
    #[unsafe(no_mangle)]
    pub extern "gpu-kernel" fn sched_tick(scheduler: *mut SchedulerState) {
        if work_item_x().global_id() != 0 {
            return;
        }
        let mut r = QueueRequester {
            pause: crate::arch::pause,
        };
        // SAFETY: the kernel's contract: the host made the scheduler and
        // keeps it live; ticks run one at a time on its control queue.
        unsafe { super::tick(scheduler as u64, &mut r) };
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::boxed::Box;
    use std::vec;
    use std::vec::Vec;

    use aqueduct_abi::command::{BlockIssue, CommandBufferHeader, Execution};
    use aqueduct_abi::scheduler::{
        QueueEntry, QueueEntryKind, QueueEntryState, SchedulerState, Semaphore, SemaphoreRef,
    };
    use zerocopy::FromZeros;

    use super::*;

    /// Records what the shared functions asked of their host.
    #[derive(Default)]
    struct Mock {
        ticks_enqueued: Vec<u64>,
        mirrors: Vec<(u64, i64)>,
        executed: Vec<u64>,
        /// Executions whose issue fails.
        refuse: Vec<u64>,
        clock: u64,
        /// Host requests posted: scheduler, request, argument.
        posts: Vec<(u64, HostRequest, u64)>,
        /// Executions whose issue meets a full queue that the host replaces
        /// (with the second queue) meanwhile.
        stall: Vec<(u64, u64)>,
        /// Issues given up.
        abandoned: Vec<u64>,
    }

    impl Mock {
        /// The arguments of the posted requests of kind `request`.
        fn posted(&self, request: HostRequest) -> Vec<u64> {
            self.posts
                .iter()
                .filter(|p| p.1 == request)
                .map(|p| p.2)
                .collect()
        }
    }

    impl Requester for Mock {
        fn pause(&mut self) {
            std::thread::yield_now()
        }
        fn enqueue_tick(&mut self, scheduler: u64) {
            self.ticks_enqueued.push(scheduler)
        }
        fn mirror(&mut self, signal: SignalHandle, value: i64) {
            self.mirrors.push((signal.0, value))
        }
        fn timestamp(&mut self) -> u64 {
            self.clock += 10;
            self.clock
        }
        fn post(&mut self, scheduler: u64, request: HostRequest, arg: u64) {
            self.posts.push((scheduler, request, arg))
        }
    }

    impl Issuer for Mock {
        fn execute(&mut self, scheduler: u64, execution: u64) -> Result<(), IssueError> {
            if self.refuse.contains(&execution) {
                return Err(IssueError::Opcode(0));
            }
            if let Some(k) = self.stall.iter().position(|s| s.0 == execution) {
                // The queue is full and faults; the host replaces it while
                // the issue waits for room, which gives up.
                let (_, replacement) = self.stall.remove(k);
                // SAFETY: the rig's scheduler, as the tick's is.
                unsafe { (*(scheduler as *mut SchedulerState)).execution_queues[0] = replacement };
                self.abandoned.push(execution);
                return Err(IssueError::Queue(QueueError::Abandoned));
            }
            self.executed.push(execution);
            Ok(())
        }
    }

    /// A scheduler in host memory with a mailbox of `capacity` entries.
    struct Rig {
        state: Box<SchedulerState>,
        entries: Vec<QueueEntry>,
        sems: Vec<Semaphore>,
        /// Wait and signal lists, 2 refs per entry each.
        lists: Vec<SemaphoreRef>,
        /// Each slot's execution, of a command buffer of two blocks.
        execs: Vec<Execution>,
        issues: Vec<[BlockIssue; 2]>,
        header: Box<CommandBufferHeader>,
    }

    impl Rig {
        fn new(capacity: usize, semaphores: usize) -> Self {
            let mut r = Rig {
                state: Box::new(SchedulerState::new_zeroed()),
                entries: vec![QueueEntry::new_zeroed(); capacity],
                sems: vec![Semaphore::new_zeroed(); semaphores],
                lists: vec![SemaphoreRef::new_zeroed(); 4 * capacity],
                execs: vec![Execution::new_zeroed(); capacity],
                issues: vec![[BlockIssue::new_zeroed(); 2]; capacity],
                header: Box::new(CommandBufferHeader::new_zeroed()),
            };
            r.header.block_count = 2;
            for (e, i) in r.execs.iter_mut().zip(&r.issues) {
                e.command_buffer = &raw const *r.header as u64;
                e.issues = i.as_ptr() as u64;
                e.queue = 0xDEAD;
            }
            r.state.execution_queues[0] = 0x9000;
            r.state.execution_count = 1;
            r.state.entries = r.entries.as_ptr() as u64;
            r.state.capacity = capacity as u64;
            for (k, s) in r.sems.iter_mut().enumerate() {
                s.signal = SignalHandle(0x1000 + k as u64);
            }
            r
        }
        fn sched(&self) -> u64 {
            &raw const *self.state as u64
        }
        fn sem(&self, k: usize) -> u64 {
            &raw const self.sems[k] as u64
        }
        /// Submits an entry as the host does: fills the slot, then
        /// advances the write index.
        fn submit(
            &mut self,
            kind: QueueEntryKind,
            waits: &[(usize, u64)],
            signals: &[(usize, u64)],
        ) -> u64 {
            let id = self.state.write_index;
            let slot = (id % self.state.capacity) as usize;
            let mut e = QueueEntry::new_zeroed();
            e.kind = kind;
            e.id = id;
            e.scheduler = self.sched();
            e.execution = self.exec_of(id);
            e.kernarg_end = 64 * (id + 1);
            for (k, &(s, v)) in waits.iter().enumerate() {
                self.lists[4 * slot + k] = SemaphoreRef {
                    semaphore: self.sem(s),
                    value: v,
                };
            }
            for (k, &(s, v)) in signals.iter().enumerate() {
                self.lists[4 * slot + 2 + k] = SemaphoreRef {
                    semaphore: self.sem(s),
                    value: v,
                };
            }
            e.waits = &raw const self.lists[4 * slot] as u64;
            e.signals = &raw const self.lists[4 * slot + 2] as u64;
            e.wait_count = waits.len() as u16;
            e.signal_count = signals.len() as u16;
            self.entries[slot] = e;
            self.state.write_index = id + 1;
            id
        }
        /// The execution of entry `id`'s slot.
        fn exec_of(&self, id: u64) -> u64 {
            &raw const self.execs[(id % self.state.capacity) as usize] as u64
        }
        fn id_of_exec(&self, execution: u64) -> u64 {
            (execution - self.execs.as_ptr() as u64) / size_of::<Execution>() as u64
        }
        fn entry(&self, id: u64) -> u64 {
            &raw const self.entries[(id % self.state.capacity) as usize] as u64
        }
        fn state_of(&self, id: u64) -> QueueEntryState {
            self.entries[(id % self.state.capacity) as usize].state
        }
        fn tick(&mut self, m: &mut Mock) -> TickReport {
            // SAFETY: everything lives in the rig.
            unsafe { tick(self.sched(), m) }
        }
        /// The RETURN of an issued entry: its control kernel's retire.
        fn retire(&mut self, id: u64, m: &mut Mock) {
            // SAFETY: as above.
            unsafe { retire(self.entry(id), m) }
        }
        fn request(&mut self, m: &mut Mock) {
            // SAFETY: as above.
            unsafe { request(self.sched(), SchedulerActions::INCOMING, m) }
        }
    }

    #[test]
    fn waiters_are_kept_in_value_order_and_woken_exactly_when_reached() {
        let mut rig = Rig::new(8, 1);
        let mut m = Mock::default();
        let sem = rig.sem(0);
        let values = [3u64, 1, 2, 5, 2];
        for (k, &v) in values.iter().enumerate() {
            rig.entries[k].scheduler = rig.sched();
            // SAFETY: rig memory.
            let w = unsafe { add_waiter(sem, rig.entry(k as u64), v, &mut m) };
            assert_eq!(w, Wait::Registered);
        }
        // The list, by value (equal values keep their arrival order).
        let mut order = Vec::new();
        let mut cur = rig.sems[0].waiters_head;
        while cur != 0 {
            order.push((cur - rig.entry(0)) / 256);
            // SAFETY: a rig entry.
            cur = unsafe { (*(cur as *const QueueEntry)).wait_next };
        }
        assert_eq!(order, [1, 2, 4, 0, 3]);
        assert_eq!(rig.sems[0].waiters_tail, rig.entry(3));
        // SAFETY: rig memory.
        unsafe { signal(sem, 2, &mut m) }.unwrap();
        assert_eq!(m.mirrors, [(0x1000, 2)]);
        // Entries 1, 2, 4 (values 1, 2, 2) woke, pushed in list order: the
        // stack's top is the last.
        let mut woken = Vec::new();
        let mut cur = rig.state.wake_head;
        while cur != 0 {
            woken.push((cur - rig.entry(0)) / 256);
            // SAFETY: a rig entry.
            cur = unsafe { (*(cur as *const QueueEntry)).wake_next };
        }
        assert_eq!(woken, [4, 2, 1]);
        assert_eq!(rig.sems[0].waiters_head, rig.entry(0));
        // One tick requested for three wakes.
        assert_eq!(m.ticks_enqueued, [rig.sched()]);
        assert_eq!(rig.state.actions, SchedulerActions::WAKE);
        // A smaller value changes nothing; a reached one is reached at once.
        // SAFETY: rig memory.
        unsafe {
            signal(sem, 1, &mut m).unwrap();
            assert_eq!(rig.sems[0].payload, 2);
            assert_eq!(add_waiter(sem, rig.entry(5), 2, &mut m), Wait::Reached);
        }
        assert_eq!(m.mirrors.len(), 1);
        // SAFETY: rig memory.
        unsafe { signal(sem, 9, &mut m) }.unwrap();
        assert_eq!(rig.sems[0].waiters_head, 0);
        assert_eq!(rig.sems[0].waiters_tail, 0);
        assert_eq!(rig.sems[0].lock, 0);
    }

    #[test]
    fn a_scheduler_counts_its_entries_taken_off_a_list_until_they_are_pushed() {
        let mut rig = Rig::new(8, 1);
        let mut m = Mock::default();
        for v in [1, 2, 3] {
            rig.submit(QueueEntryKind::BARRIER, &[(0, v)], &[]);
        }
        rig.request(&mut m);
        rig.tick(&mut m);
        // SAFETY: rig memory.
        let list = unsafe { detach_waiters(rig.sem(0), 2) };
        // Taken off (under the lock, in `signal`), not pushed yet: a
        // scheduler going away must wait for these two.
        assert_eq!(rig.state.waking, 2);
        // SAFETY: rig memory; the list is detached.
        unsafe { wake_all(list, &mut m) };
        assert_eq!(rig.state.waking, 0);
        assert_eq!(rig.tick(&mut m).woken, 2);
    }

    #[test]
    fn a_waiter_removed_is_never_woken_and_the_list_stays_whole() {
        let mut rig = Rig::new(8, 1);
        let mut m = Mock::default();
        let sem = rig.sem(0);
        for k in 0..4 {
            rig.entries[k].scheduler = rig.sched();
            // SAFETY: rig memory.
            unsafe { add_waiter(sem, rig.entry(k as u64), k as u64 + 1, &mut m) };
        }
        // SAFETY: rig memory.
        unsafe {
            assert!(remove_waiter(sem, rig.entry(3), &mut m), "the tail");
            assert!(remove_waiter(sem, rig.entry(0), &mut m), "the head");
            assert!(!remove_waiter(sem, rig.entry(0), &mut m), "gone already");
            assert!(!remove_waiter(sem, rig.entry(5), &mut m), "never there");
        }
        assert_eq!(rig.sems[0].waiters_head, rig.entry(1));
        assert_eq!(rig.sems[0].waiters_tail, rig.entry(2));
        // SAFETY: rig memory.
        unsafe { signal(sem, 9, &mut m) }.unwrap();
        let mut woken = Vec::new();
        let mut cur = rig.state.wake_head;
        while cur != 0 {
            woken.push((cur - rig.entry(0)) / 256);
            // SAFETY: a rig entry.
            cur = unsafe { (*(cur as *const QueueEntry)).wake_next };
        }
        assert_eq!(woken, [2, 1]);
        assert_eq!(rig.sems[0].lock, 0);
    }

    #[test]
    fn a_failure_wakes_every_waiter_and_sticks() {
        let mut rig = Rig::new(4, 1);
        let mut m = Mock::default();
        let sem = rig.sem(0);
        rig.entries[0].scheduler = rig.sched();
        rig.entries[1].scheduler = rig.sched();
        // SAFETY: rig memory.
        unsafe {
            add_waiter(sem, rig.entry(0), 5, &mut m);
            add_waiter(sem, rig.entry(1), u64::MAX, &mut m);
            fail(sem, 0x2b, Origin::default(), &mut m);
            assert_eq!(rig.sems[0].waiters_head, 0);
            assert_eq!(failure(sem), Some(0x2b));
            assert_eq!(signal(sem, 7, &mut m), Err(0x2b));
            assert_eq!(add_waiter(sem, rig.entry(2), 1, &mut m), Wait::Failed(0x2b));
            // A second failure keeps the first status.
            fail(sem, 0x99, Origin::default(), &mut m);
            assert_eq!(failure(sem), Some(0x2b));
        }
        assert_eq!(m.mirrors, [(0x1000, i64::MAX)]);
        assert_eq!(rig.sems[0].payload, 0);
    }

    #[test]
    fn a_chain_takes_one_tick_per_entry() {
        const N: u64 = 10;
        let mut rig = Rig::new(16, 1);
        let mut m = Mock::default();
        for k in 0..N {
            let waits: &[(usize, u64)] = if k == 0 { &[] } else { &[(0, k)] };
            rig.submit(QueueEntryKind::EXECUTE, waits, &[(0, k + 1)]);
        }
        rig.request(&mut m);
        let mut ticks = 0;
        while m.ticks_enqueued.pop().is_some() {
            ticks += 1;
            let report = rig.tick(&mut m);
            assert_eq!(report.passes, 1);
            // The work of what was issued completes: its RETURN retires it.
            for &execution in m.executed.clone().iter() {
                let id = rig.id_of_exec(execution);
                if rig.state_of(id) == QueueEntryState::ISSUED {
                    rig.retire(id, &mut m);
                }
            }
        }
        assert_eq!(ticks, N);
        assert_eq!(rig.state.ticks, N);
        assert_eq!(
            m.executed,
            (0..N).map(|k| rig.exec_of(k)).collect::<Vec<_>>()
        );
        assert_eq!(rig.sems[0].payload, N);
        // Each retire told the host service it may release the entry.
        assert_eq!(m.posted(HostRequest::RELEASE), (0..N).collect::<Vec<_>>());
        assert!(m.posts.iter().all(|p| p.0 == rig.sched()));
        // Each issued execution and its blocks' issue states were pointed
        // at the scheduler's execution queue of the time.
        assert_eq!(rig.execs[0].queue, 0x9000);
        assert!(rig.issues[3].iter().all(|i| i.queue == 0x9000));
        // The last entry's retire asked for no tick: reclaimed by the next
        // one (which a submitter short of room requests).
        assert_eq!(rig.state.retire_index, N - 1);
        // SAFETY: rig memory.
        unsafe { request(rig.sched(), SchedulerActions::RETIRE, &mut m) };
        assert_eq!(rig.tick(&mut m).reclaimed, 1);
        assert_eq!(rig.state.retire_index, N);
        assert_eq!(rig.state.kernarg.read_offset, 64 * N);
        assert_eq!(rig.state.in_flight, 0);
        assert_eq!(rig.state.actions, SchedulerActions::empty());
    }

    #[test]
    fn a_tracing_scheduler_records_ticks_issues_and_retires_and_counts_drops() {
        use aqueduct_abi::scheduler::{TraceKind, TraceRecord, TraceRing};
        const N: u64 = 3;
        let mut rig = Rig::new(8, 1);
        let mut records = vec![TraceRecord::new_zeroed(); 8];
        let mut ring = Box::new(TraceRing::new_zeroed());
        ring.base = records.as_mut_ptr() as u64;
        ring.capacity = 8;
        rig.state.trace = &raw const *ring as u64;
        let mut m = Mock::default();
        for k in 0..N {
            let waits: &[(usize, u64)] = if k == 0 { &[] } else { &[(0, k)] };
            rig.submit(QueueEntryKind::EXECUTE, waits, &[(0, k + 1)]);
        }
        rig.request(&mut m);
        while m.ticks_enqueued.pop().is_some() {
            rig.tick(&mut m);
            for &execution in m.executed.clone().iter() {
                let id = rig.id_of_exec(execution);
                if rig.state_of(id) == QueueEntryState::ISSUED {
                    rig.retire(id, &mut m);
                }
            }
        }
        // 3 ticks, 3 issues, 3 retires: 9 records for 8 slots, one dropped.
        assert_eq!(ring.write_index, 8);
        assert_eq!(ring.dropped, 1);
        // Each half of the ring filled asked the host to drain it.
        assert_eq!(m.posted(HostRequest::TRACE_FLUSH), [4, 8]);
        let kinds: Vec<(TraceKind, u64)> = records.iter().map(|r| (r.kind, r.id)).collect();
        use TraceKind as K;
        assert_eq!(
            kinds,
            [
                (K::ISSUE, 0),
                (K::SCHEDULER_TICK, 1),
                (K::RETIRE, 0),
                (K::ISSUE, 1),
                (K::SCHEDULER_TICK, 2),
                (K::RETIRE, 1),
                (K::ISSUE, 2),
                (K::SCHEDULER_TICK, 3),
            ]
        );
        // The first tick accepted all three; its span holds its issue.
        assert_eq!(records[1].flags, 3);
        assert!(records[1].start_ts < records[0].start_ts);
        assert!(records[0].start_ts < records[1].end_ts);
        // After the host consumed the ring, a record fits again.
        ring.read_index = 8;
        rig.tick(&mut m);
        assert_eq!((records[0].kind, records[0].id), (K::SCHEDULER_TICK, 4));
    }

    #[test]
    fn a_block_beginning_is_recorded_once_under_a_tracing_scheduler() {
        use aqueduct_abi::scheduler::{TraceRecord, TraceRing};
        let mut rig = Rig::new(4, 1);
        let id = rig.submit(QueueEntryKind::EXECUTE, &[], &[]);
        let mut m = Mock::default();
        rig.issues[0][0].execution = rig.exec_of(id);
        rig.issues[0][1].execution = rig.exec_of(id);
        let issue = |b: usize| &raw const rig.issues[0][b] as u64;
        let (first, second) = (issue(0), issue(1));
        // Outside a scheduler, and with tracing off: nothing, no harm.
        // SAFETY: rig memory.
        unsafe { trace_block(first, true, &mut m) };
        rig.execs[0].entry = rig.entry(id);
        // SAFETY: rig memory.
        unsafe { trace_block(first, true, &mut m) };
        let mut records = vec![TraceRecord::new_zeroed(); 4];
        let mut ring = Box::new(TraceRing::new_zeroed());
        ring.base = records.as_mut_ptr() as u64;
        ring.capacity = 4;
        rig.state.trace = &raw const *ring as u64;
        // SAFETY: rig memory.
        unsafe {
            trace_block(first, true, &mut m);
            // A later block: recorded by the control kernel that issues it,
            // not by its issue kernel.
            trace_block(second, true, &mut m);
            trace_block(second, false, &mut m);
        }
        assert_eq!(ring.write_index, 2);
        let seen: Vec<(TraceKind, u64, u16)> = records[..2]
            .iter()
            .map(|r| (r.kind, r.id, r.flags))
            .collect();
        assert_eq!(seen, [(TraceKind::BLOCK, id, 0), (TraceKind::BLOCK, id, 1)]);
    }

    #[test]
    fn barriers_that_wait_out_of_order_run_in_dependency_order_in_one_tick() {
        // Entries wait for 3, 1, 2 and signal 4, 2, 3: the host's signal of
        // 1 releases all three, in the order 1, 2, 0.
        let mut rig = Rig::new(8, 2);
        let mut m = Mock::default();
        rig.submit(QueueEntryKind::BARRIER, &[(0, 3)], &[(0, 4), (1, 3)]);
        rig.submit(QueueEntryKind::BARRIER, &[(0, 1)], &[(0, 2), (1, 1)]);
        rig.submit(QueueEntryKind::BARRIER, &[(0, 2)], &[(0, 3), (1, 2)]);
        rig.request(&mut m);
        m.ticks_enqueued.clear();
        let r = rig.tick(&mut m);
        assert_eq!((r.accepted, r.issued), (3, 0));
        // SAFETY: rig memory.
        unsafe { signal(rig.sem(0), 1, &mut m) }.unwrap();
        assert_eq!(m.ticks_enqueued.len(), 1);
        let r = rig.tick(&mut m);
        // Entry 1's completion woke entry 2, whose completion woke entry 0:
        // one tick, three passes, no tick enqueued for its own wakes.
        assert_eq!((r.woken, r.issued, r.passes, r.reclaimed), (3, 3, 3, 3));
        assert_eq!(m.ticks_enqueued.len(), 1);
        assert_eq!(rig.sems[0].payload, 4);
        // Semaphore 1 saw the order: 1, then 2, then 3.
        let mirrors_1: Vec<i64> = m
            .mirrors
            .iter()
            .filter(|(s, _)| *s == 0x1001)
            .map(|&(_, v)| v)
            .collect();
        assert_eq!(mirrors_1, [1, 2, 3]);
        assert_eq!(rig.state.actions, SchedulerActions::empty());
    }

    #[test]
    fn a_failed_wait_or_issue_fails_the_entry_and_everything_downstream() {
        let mut rig = Rig::new(8, 3);
        let mut m = Mock::default();
        // Entry 0 issues and fails; 1 waits for it; 2 waits for 1.
        let e0 = rig.submit(QueueEntryKind::EXECUTE, &[], &[(0, 1)]);
        rig.submit(QueueEntryKind::EXECUTE, &[(0, 1)], &[(1, 1)]);
        rig.submit(QueueEntryKind::BARRIER, &[(1, 1)], &[(2, 1)]);
        // An unknown kind fails on its own.
        let odd = rig.submit(QueueEntryKind(9), &[], &[]);
        m.refuse.push(rig.exec_of(e0));
        rig.request(&mut m);
        let r = rig.tick(&mut m);
        assert_eq!(r.failed, 4);
        for id in 0..3 {
            assert_eq!(rig.state_of(id), QueueEntryState::FAILED, "entry {id}");
        }
        assert_eq!(rig.entries[odd as usize].status, STATUS_INVALID_ARGUMENT);
        for k in 0..3 {
            // SAFETY: rig memory.
            assert_eq!(unsafe { failure(rig.sem(k)) }, Some(STATUS_ERROR));
            // Every semaphore downstream names where it began: entry 0.
            assert_eq!(rig.sems[k].failed_entry, e0, "semaphore {k}");
            assert_eq!(rig.sems[k].failed_scheduler, rig.sched());
        }
        assert!(m.executed.is_empty());
        assert_eq!(rig.state.retire_index, 4);
        assert_eq!(rig.state.in_flight, 0);
    }

    #[test]
    fn entries_are_dealt_to_the_execution_queues_in_turn() {
        let mut rig = Rig::new(8, 1);
        rig.state.execution_queues[1] = 0xA000;
        rig.state.execution_count = 2;
        let mut m = Mock::default();
        let ids: Vec<u64> = (0..4)
            .map(|_| rig.submit(QueueEntryKind::EXECUTE, &[], &[(0, 1)]))
            .collect();
        // A barrier takes no queue.
        rig.submit(QueueEntryKind::BARRIER, &[], &[]);
        rig.request(&mut m);
        assert_eq!(rig.tick(&mut m).issued, 5);
        let queues: Vec<u64> = ids.iter().map(|&id| rig.execs[id as usize].queue).collect();
        assert_eq!(queues, [0x9000, 0xA000, 0x9000, 0xA000]);
        assert_eq!(rig.state.next_queue, 4);
        // SAFETY: rig memory.
        unsafe {
            assert!(is_execution_queue(rig.sched(), 0xA000));
            assert!(!is_execution_queue(rig.sched(), 0xB000));
        }
    }

    #[test]
    fn an_issue_waiting_on_a_replaced_queue_moves_to_the_new_one() {
        let mut rig = Rig::new(4, 1);
        let mut m = Mock::default();
        let a = rig.submit(QueueEntryKind::EXECUTE, &[], &[(0, 1)]);
        let b = rig.submit(QueueEntryKind::EXECUTE, &[], &[(0, 2)]);
        m.stall.push((rig.exec_of(b), 0xA000));
        rig.request(&mut m);
        let r = rig.tick(&mut m);
        // `a` went to the first queue; `b` gave up waiting on it and went
        // to its replacement, in the same tick.
        assert_eq!((r.issued, r.failed), (2, 0));
        assert_eq!(m.abandoned, [rig.exec_of(b)]);
        assert_eq!(m.executed, [rig.exec_of(a), rig.exec_of(b)]);
        assert_eq!(rig.execs[a as usize].queue, 0x9000);
        assert_eq!(rig.execs[b as usize].queue, 0xA000);
        assert!(rig.issues[b as usize].iter().all(|i| i.queue == 0xA000));
        assert_eq!(rig.state_of(b), QueueEntryState::ISSUED);
        assert_eq!(rig.state.in_flight, 2);
    }

    #[test]
    fn an_issued_entry_ends_once_by_its_retire_or_by_a_recovery() {
        let mut rig = Rig::new(4, 2);
        let mut m = Mock::default();
        let a = rig.submit(QueueEntryKind::EXECUTE, &[], &[(0, 1)]);
        let b = rig.submit(QueueEntryKind::EXECUTE, &[], &[(1, 1)]);
        rig.request(&mut m);
        assert_eq!(rig.tick(&mut m).issued, 2);
        assert_eq!(rig.state.in_flight, 2);
        // The host's recovery claims `a` first and fails it; a wave of the
        // faulted queue then runs its RETURN: the retire leaves it alone.
        // SAFETY: rig memory.
        unsafe {
            assert!(claim_end(rig.entry(a)));
            fail_entry(
                rig.entry(a),
                STATUS_ERROR,
                Origin::of_entry(rig.entry(a)),
                &mut m,
            );
        }
        rig.retire(a, &mut m);
        assert_eq!(rig.state_of(a), QueueEntryState::FAILED);
        // SAFETY: rig memory.
        assert_eq!(unsafe { failure(rig.sem(0)) }, Some(STATUS_ERROR));
        assert_eq!(rig.sems[0].payload, 0);
        assert!(m.posted(HostRequest::RELEASE).is_empty());
        assert_eq!(rig.state.in_flight, 2, "the recovery counts it out");
        // `b` retires first: a recovery after that cannot claim it.
        rig.retire(b, &mut m);
        assert_eq!(rig.state_of(b), QueueEntryState::RETIRED);
        // SAFETY: rig memory.
        assert!(!unsafe { claim_end(rig.entry(b)) });
        assert_eq!(rig.sems[1].payload, 1);
        assert_eq!(m.posted(HostRequest::RELEASE), [b]);
        assert_eq!(rig.state.in_flight, 1);
    }

    /// A block pool of two buckets (16 and 256 bytes) with free arrays of
    /// 4 blocks, empty.
    struct Pool {
        pool: Box<BlockPool>,
        free: Vec<[u64; 4]>,
    }

    impl Pool {
        fn new(rig: &mut Rig) -> Self {
            let mut p = Pool {
                pool: Box::new(BlockPool::new_zeroed()),
                free: vec![[0; 4]; 2],
            };
            for (b, size) in [16u64, 256].into_iter().enumerate() {
                let bucket = &mut p.pool.buckets[b];
                bucket.block_size = size;
                bucket.free = p.free[b].as_ptr() as u64;
                bucket.capacity = 4;
            }
            rig.state.pool = &raw const *p.pool as u64;
            p
        }
        fn bucket(&self, b: usize) -> u64 {
            &raw const self.pool.buckets[b] as u64
        }
        /// The host's growing: a block in, the request answered.
        fn grow(&mut self, b: usize, block: u64, m: &mut Mock) {
            // SAFETY: the pool's memory.
            assert!(unsafe { give_block(self.bucket(b), block, m) });
            self.pool.buckets[b].growth = 0;
        }
    }

    fn handle(length: u64) -> Box<aqueduct_abi::command::AllocationHandle> {
        Box::new(aqueduct_abi::command::AllocationHandle { address: 0, length })
    }

    impl Rig {
        /// Submits an ALLOCA or DEALLOCA of `handle`.
        fn submit_handle(
            &mut self,
            kind: QueueEntryKind,
            handle: &aqueduct_abi::command::AllocationHandle,
            signals: &[(usize, u64)],
        ) -> u64 {
            let id = self.submit(kind, &[], signals);
            self.entries[(id % self.state.capacity) as usize].handle = handle as *const _ as u64;
            id
        }
    }

    #[test]
    fn allocations_take_blocks_of_their_bucket_and_wait_while_the_host_grows_it() {
        let mut rig = Rig::new(8, 2);
        let mut pool = Pool::new(&mut rig);
        let mut m = Mock::default();
        let (small, large, huge) = (handle(16), handle(100), handle(257));
        let a = rig.submit_handle(QueueEntryKind::ALLOCA, &small, &[(0, 1)]);
        let b = rig.submit_handle(QueueEntryKind::ALLOCA, &large, &[(1, 1)]);
        let c = rig.submit_handle(QueueEntryKind::ALLOCA, &huge, &[]);
        rig.request(&mut m);
        let r = rig.tick(&mut m);
        // No blocks yet: one request to grow per bucket; the entry too
        // large for any block fails.
        assert_eq!((r.issued, r.failed), (0, 1));
        assert_eq!(rig.entries[c as usize].status, STATUS_INVALID_ALLOCATION);
        assert_eq!(m.posted(HostRequest::GROW), [0, 1]);
        assert_eq!(pool.pool.buckets[0].growth, PoolBucket::GROWING);
        // The host adds a block to the large bucket and asks for a tick:
        // `b` commits it; `a` still waits, asking nothing more.
        pool.grow(1, 0xB000, &mut m);
        let r = rig.tick(&mut m);
        assert_eq!(r.issued, 1);
        assert_eq!((large.address, small.address), (0xB000, 0));
        assert_eq!(rig.state_of(b), QueueEntryState::RETIRED);
        assert_eq!(rig.sems[1].payload, 1);
        assert_eq!(m.posted(HostRequest::GROW), [0, 1]);
        // Deallocating gives the block back; the next allocation of the
        // bucket takes the same block.
        let d = rig.submit_handle(QueueEntryKind::DEALLOCA, &large, &[]);
        let again = handle(200);
        let e = rig.submit_handle(QueueEntryKind::ALLOCA, &again, &[]);
        rig.request(&mut m);
        let r = rig.tick(&mut m);
        assert_eq!(r.issued, 2);
        assert_eq!(rig.state_of(d), QueueEntryState::RETIRED);
        assert_eq!((large.address, again.address), (0, 0xB000));
        assert_eq!(rig.state_of(e), QueueEntryState::RETIRED);
        // The host cannot grow the small bucket: `a` fails.
        pool.pool.buckets[0].growth = PoolBucket::EXHAUSTED;
        rig.request(&mut m);
        let r = rig.tick(&mut m);
        assert_eq!(r.failed, 1);
        assert_eq!(rig.entries[a as usize].status, STATUS_OUT_OF_RESOURCES);
        // SAFETY: rig memory.
        let failed = unsafe { failure(rig.sem(0)) };
        assert_eq!(failed, Some(STATUS_OUT_OF_RESOURCES));
        // A deallocation of a handle that holds nothing fails.
        let f = rig.submit_handle(QueueEntryKind::DEALLOCA, &small, &[]);
        rig.request(&mut m);
        assert_eq!(rig.tick(&mut m).failed, 1);
        assert_eq!(
            rig.entries[(f % 8) as usize].status,
            STATUS_INVALID_ARGUMENT
        );
    }

    #[test]
    fn a_freed_block_serves_the_allocations_waiting_in_the_same_tick() {
        let mut rig = Rig::new(8, 1);
        let mut pool = Pool::new(&mut rig);
        let mut m = Mock::default();
        pool.grow(0, 0xA000, &mut m);
        let (x, y) = (handle(8), handle(8));
        rig.submit_handle(QueueEntryKind::ALLOCA, &x, &[]);
        let wait_y = rig.submit_handle(QueueEntryKind::ALLOCA, &y, &[]);
        rig.request(&mut m);
        rig.tick(&mut m);
        assert_eq!((x.address, y.address), (0xA000, 0));
        assert_eq!(m.posted(HostRequest::GROW), [0]);
        // The host is slow to grow; x is freed meanwhile and y takes its
        // block at once.
        rig.submit_handle(QueueEntryKind::DEALLOCA, &x, &[(0, 1)]);
        rig.request(&mut m);
        let r = rig.tick(&mut m);
        assert_eq!(r.issued, 2);
        assert_eq!((x.address, y.address), (0, 0xA000));
        assert_eq!(rig.state_of(wait_y), QueueEntryState::RETIRED);
        assert_eq!(pool.pool.buckets[0].count, 0);
    }

    #[test]
    fn slots_are_reclaimed_in_order_only() {
        let mut rig = Rig::new(4, 2);
        let mut m = Mock::default();
        rig.submit(QueueEntryKind::BARRIER, &[(0, 1)], &[]);
        rig.submit(QueueEntryKind::BARRIER, &[], &[]);
        rig.request(&mut m);
        let r = rig.tick(&mut m);
        // Entry 1 is done, entry 0 is not: nothing reclaimed.
        assert_eq!((r.issued, r.reclaimed), (1, 0));
        assert_eq!(rig.state.retire_index, 0);
        // SAFETY: rig memory.
        unsafe { signal(rig.sem(0), 1, &mut m) }.unwrap();
        let r = rig.tick(&mut m);
        assert_eq!((r.issued, r.reclaimed), (1, 2));
        assert_eq!(rig.state.kernarg.read_offset, 128);
        // The ring wraps: ids 2..6 reuse the slots.
        for _ in 0..4 {
            rig.submit(QueueEntryKind::BARRIER, &[], &[(1, 1)]);
        }
        rig.request(&mut m);
        let r = rig.tick(&mut m);
        assert_eq!((r.accepted, r.issued, r.reclaimed), (4, 4, 4));
        assert_eq!(rig.state.retire_index, 6);
    }
}
