//! Timeline semaphores in device memory
//! ([`aqueduct_abi::scheduler::DeviceSemaphore`]): a payload that only grows,
//! and the entries waiting for it, in value order.
//!
//! ```text
//!   add_waiter ── payload reached? ── yes: Reached
//!                 └─ lock; reached now? else link into the waiters by value; unlock
//!   signal     ── lock; payload := value; mirror; detach the waiters reached;
//!                 unlock; push each on its scheduler's wake stack; request(WAKE)
//!   fail       ── lock; status, origin, FAILED flag; mirror := i64::MAX;
//!                 detach every waiter; unlock; wake them (they find it failed)
//! ```
//!
//! The lock (system-scope acquire and release, the host takes it too)
//! guards the waiter list, the waiting entries' `wait_next` and
//! `wait_value`, `status`, `flags`, and changes of the payload and of the
//! mirror signal; the payload is also read without it (an acquire load: a
//! value reached stays reached).

use aqueduct_abi::atomic::{Acquire, Relaxed, Release, System};
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::scheduler::{
    DeviceSemaphore, QueueEntry, SchedulerActions, SchedulerState, SemaphoreFlags,
};
use aqueduct_abi::view::View;

use super::list::link_in_order;
use super::requester::{Requester, request};

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

/// Where a failure began: the entry (its scheduler and id) whose work or
/// issue failed first; all zero when the host failed a semaphore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// Device address of the entry's
    /// [`SchedulerState`].
    pub scheduler: u64,
    pub entry: u64,
}

impl Origin {
    /// The failure of `entry` itself.
    pub fn of_entry(entry: View<'_, QueueEntry>) -> Self {
        Self {
            scheduler: entry.scheduler().raw(),
            entry: entry.id().get(),
        }
    }

    /// The origin recorded in a failed semaphore (the fields are written
    /// before the flag).
    pub fn of_semaphore(sem: View<'_, DeviceSemaphore>) -> Self {
        Self {
            scheduler: sem.failed_scheduler().get(),
            entry: sem.failed_entry().get(),
        }
    }
}

/// Takes the semaphore's lock.
fn lock(sem: View<'_, DeviceSemaphore>, r: &mut impl Requester) {
    let l = sem.lock();
    while l.compare_exchange(0, 1, Acquire, System).is_err() {
        r.pause();
    }
}

/// Releases the lock the caller holds.
fn unlock(sem: View<'_, DeviceSemaphore>) {
    sem.lock().store(0, Release, System);
}

/// The semaphore's payload (acquire: what its signaller wrote before is
/// visible).
pub fn payload(sem: View<'_, DeviceSemaphore>) -> u64 {
    sem.payload().load(Acquire, System)
}

/// The semaphore's failure status, if it failed.
pub fn failure(sem: View<'_, DeviceSemaphore>) -> Option<u32> {
    let flags = sem.flags().load(Acquire, System);
    // Written before the flag's release store, read after its acquire
    // load.
    flags
        .contains(SemaphoreFlags::FAILED)
        .then(|| sem.status().get())
}

/// Whether the payload of `sem` has reached `value`; if not, puts `entry`
/// on its waiter list (in value order) to be woken when it does. `entry`
/// is on no waiter list, and its `scheduler` is set.
pub fn add_waiter<'a>(
    sem: View<'a, DeviceSemaphore>,
    entry: View<'a, QueueEntry>,
    value: u64,
    r: &mut impl Requester,
) -> Wait {
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

/// Links `entry` into the waiter list of `sem` after every entry waiting
/// for at most `value`. Under the lock; `entry` is on no list.
fn insert_waiter<'a>(sem: View<'a, DeviceSemaphore>, entry: View<'a, QueueEntry>, value: u64) {
    entry.wait_value().set(value);
    let (head, tail) = (sem.waiters_head(), sem.waiters_tail());
    match tail.get() {
        // The common case: waits arrive in value order.
        Some(last) if last.wait_value().get() <= value => {
            entry.wait_next().set(None);
            last.wait_next().set(Some(entry));
            tail.set(Some(entry));
        }
        None => {
            entry.wait_next().set(None);
            head.set(Some(entry));
            tail.set(Some(entry));
        }
        // The tail waits for more than `value`: the entry goes before it.
        Some(_) => link_in_order(head, entry, |e| e.wait_next(), |e| e.wait_value().get()),
    }
}

/// Takes `entry` off the waiter list of `sem`, if it is on it: for a
/// scheduler that goes away while its entries wait, so that no later
/// signal reaches memory that is gone. Returns whether it was there.
pub fn remove_waiter<'a>(
    sem: View<'a, DeviceSemaphore>,
    entry: View<'a, QueueEntry>,
    r: &mut impl Requester,
) -> bool {
    let head = sem.waiters_head();
    lock(sem, r);
    let mut prev = None;
    let mut cur = head.get();
    while let Some(c) = cur
        && c != entry
    {
        prev = Some(c);
        cur = c.wait_next().get();
    }
    let found = cur == Some(entry);
    if found {
        let next = entry.wait_next().get();
        match prev {
            None => head.set(next),
            Some(p) => p.wait_next().set(next),
        }
        if next.is_none() {
            sem.waiters_tail().set(prev);
        }
    }
    unlock(sem);
    found
}

/// Unlinks the waiters of `sem` that need at most `value` (all of them
/// with `u64::MAX`) and returns the first (linked by `wait_next`). Under
/// the lock.
pub(super) fn detach_waiters<'a>(
    sem: View<'a, DeviceSemaphore>,
    value: u64,
) -> Option<View<'a, QueueEntry>> {
    let head = sem.waiters_head();
    let first = head.get();
    let mut last = None;
    let mut cur = first;
    while let Some(c) = cur
        && c.wait_value().get() <= value
    {
        last = Some(c);
        cur = c.wait_next().get();
    }
    let last = last?;
    last.wait_next().set(None);
    head.set(cur);
    if cur.is_none() {
        sem.waiters_tail().set(None);
    }
    // Each one's scheduler knows it is being woken before the lock goes
    // (a scheduler going away takes its waiters off under this lock, then
    // waits for these to be pushed).
    let mut e = first;
    while let Some(entry) = e {
        entry
            .scheduler()
            .get()
            .waking()
            .fetch_add(1, Relaxed, System);
        e = entry.wait_next().get();
    }
    first
}

/// Pushes each entry of a detached waiter list on its scheduler's wake
/// stack and requests a tick for it: once per run of entries of one
/// scheduler, after the run is pushed, so that a tick that starts while
/// the list is walked does not take a part of it and leave the rest to
/// another tick.
pub(super) fn wake_all(mut list: Option<View<'_, QueueEntry>>, r: &mut impl Requester) {
    // The scheduler of the current run and how many of the run's entries
    // were pushed.
    let (mut pending, mut pushed) = (None, 0u64);
    while let Some(entry) = list {
        // The entry is ours until pushed.
        list = entry.wait_next().get();
        let sched = entry.scheduler().get();
        if let Some(p) = pending
            && p != sched
        {
            woken(p, pushed, r);
            pushed = 0;
        }
        pending = Some(sched);
        push_wake(sched, entry);
        pushed += 1;
    }
    if let Some(p) = pending {
        woken(p, pushed, r);
    }
}

/// Ends a run of `pushed` entries woken on `sched`: requests its tick, then
/// counts them out of its `waking`.
fn woken(sched: View<'_, SchedulerState>, pushed: u64, r: &mut impl Requester) {
    request(sched, SchedulerActions::WAKE, r);
    sched.waking().fetch_sub(pushed, Release, System);
}

/// Pushes `entry` on the wake stack of `sched` (a lock-free stack: many
/// pushers, one taker, the tick, which takes it whole). `entry` is on no
/// list.
fn push_wake<'a>(sched: View<'a, SchedulerState>, entry: View<'a, QueueEntry>) {
    let head = sched.wake_head();
    let mut top = head.load(Relaxed, System);
    loop {
        // The entry is ours until the exchange below publishes it
        // (release: the taker sees this link).
        entry.wake_next().set(top);
        match head.compare_exchange(top, Some(entry), Release, System) {
            Ok(_) => return,
            Err(now) => top = now,
        }
    }
}

/// Advances `sem` to `value` (a smaller value changes nothing), mirrors it
/// into the semaphore's HSA signal and wakes the waiters it satisfies.
/// `Err(status)` if the semaphore had failed: it stays failed.
pub fn signal(
    sem: View<'_, DeviceSemaphore>,
    value: u64,
    r: &mut impl Requester,
) -> Result<(), u32> {
    lock(sem, r);
    if let Some(status) = failure(sem) {
        unlock(sem);
        return Err(status);
    }
    let mut woken = None;
    if value > payload(sem) {
        sem.payload().store(value, Release, System);
        let mirror = sem.signal().get();
        if mirror != SignalHandle::NULL {
            // Under the lock: mirrors are stored in payload order.
            r.mirror(mirror, value as i64);
        }
        woken = detach_waiters(sem, value);
    }
    unlock(sem);
    wake_all(woken, r);
    Ok(())
}

/// Fails `sem` with `status` (nothing if it already failed): its mirror
/// goes to `i64::MAX` so that host waits return, and every waiter wakes to
/// find it failed. It records `origin`.
pub fn fail(sem: View<'_, DeviceSemaphore>, status: u32, origin: Origin, r: &mut impl Requester) {
    lock(sem, r);
    if failure(sem).is_some() {
        unlock(sem);
        return;
    }
    sem.status().set(status);
    sem.failed_scheduler().set(origin.scheduler);
    sem.failed_entry().set(origin.entry);
    sem.flags()
        .fetch_or(SemaphoreFlags::FAILED, Release, System);
    let mirror = sem.signal().get();
    if mirror != SignalHandle::NULL {
        r.mirror(mirror, i64::MAX);
    }
    let woken = detach_waiters(sem, u64::MAX);
    unlock(sem);
    wake_all(woken, r);
}
