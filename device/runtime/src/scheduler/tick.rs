//! The scheduler's tick: one kernel of one work-item on the control queue
//! (`sched_tick`), which runs whenever a requester found no tick pending
//! ([`request`](super::request)).
//!
//! ```text
//!   actions := 0
//!   ├─ accept   entries write_index > id >= accept_index: WAITING, look at their waits
//!   ├─ pool     allocations waiting on a bucket the host grew (or gave up): ready again
//!   ├─ wake     the wake stack, whole: look at the rest of each entry's waits
//!   ├─ ready    in id order: BARRIER completes, EXECUTE issues its entry block,
//!   │           ALLOCA takes a block (or waits on its bucket), DEALLOCA gives it back
//!   ├─ again    while its own completions woke entries of this scheduler
//!   └─ reclaim  retired and failed entries in order: slots and kernarg space
//! ```
//!
//! Everything here is the tick's own: one tick of a scheduler runs at a
//! time (one lane, barrier bit, one control queue), so the ready list,
//! the accept index, the next-queue counter and the buckets' waiting
//! lists are plain fields only it touches.

use aqueduct_abi::atomic::{AcqRel, Acquire, Relaxed, Release, System};
use aqueduct_abi::command::Execution;
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::hsa_api::{
    HSA_STATUS_ERROR, HSA_STATUS_ERROR_INVALID_ALLOCATION, HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
};
use aqueduct_abi::scheduler::{
    HostRequest, MAX_EXECUTION_QUEUES, PoolBucket, QueueEntry, QueueEntryKind, QueueEntryState,
    SchedulerActions, SchedulerState, TraceKind,
};
use aqueduct_abi::view::View;

use crate::command::IssueError;
use crate::queue::QueueError;

use super::entry::{complete, fail_entry, set_state, state};
use super::list::link_in_order;
use super::pool::{bucket_for, give_block, take_block};
use super::requester::{Issuer, Requester};
use super::semaphore::{Origin, Wait, add_waiter};
use super::trace::trace;

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
struct TickRequester<'r, 'a, I> {
    inner: &'r mut I,
    sched: View<'a, SchedulerState>,
    again: bool,
}

impl<I: Issuer> Requester for TickRequester<'_, '_, I> {
    fn pause(&mut self) {
        self.inner.pause()
    }

    fn enqueue_tick(&mut self, scheduler: View<'_, SchedulerState>) {
        if scheduler.device_address() == self.sched.device_address() {
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

    fn post(&mut self, scheduler: View<'_, SchedulerState>, request: HostRequest, arg: u64) {
        self.inner.post(scheduler, request, arg)
    }
}

/// Looks at `entry`'s waits from its cursor on: registers it with the
/// first not reached, or puts it on the ready list, or fails it. The
/// entry is WAITING and on no list.
fn consider<'a>(
    sched: View<'a, SchedulerState>,
    entry: View<'a, QueueEntry>,
    r: &mut impl Requester,
    report: &mut TickReport,
) {
    let waits = entry.waits().get();
    let cursor_at = entry.wait_cursor();
    let mut cursor = cursor_at.get();
    for w in waits.iter().skip(cursor as usize) {
        let sem = w.semaphore().get();
        match add_waiter(sem, entry, w.value().get(), r) {
            Wait::Reached => cursor += 1,
            Wait::Registered => {
                cursor_at.set(cursor);
                return;
            }
            Wait::Failed(status) => {
                cursor_at.set(cursor);
                fail_entry(entry, status, Origin::of_semaphore(sem), r);
                report.failed += 1;
                return;
            }
        }
    }
    cursor_at.set(cursor);
    insert_ready(sched, entry);
}

/// Links `entry` into the ready list of `sched` in id order: at the end
/// when its id is the largest (accepted entries arrive in id order), else
/// from the start (woken ones arrive from a stack, latest first). `entry`
/// is on no list.
fn insert_ready<'a>(sched: View<'a, SchedulerState>, entry: View<'a, QueueEntry>) {
    let (head, tail) = (sched.ready_head(), sched.ready_tail());
    match tail.get() {
        Some(last) if last.id().get() < entry.id().get() => {
            entry.ready_next().set(None);
            last.ready_next().set(Some(entry));
            tail.set(Some(entry));
        }
        None => {
            entry.ready_next().set(None);
            head.set(Some(entry));
            tail.set(Some(entry));
        }
        // The tail's id is larger: the entry goes before it.
        Some(_) => link_in_order(head, entry, |e| e.ready_next(), |e| e.id().get()),
    }
}

/// One scheduler tick (see the module's documentation). No other tick of
/// `sched` runs.
pub fn tick(sched: View<'_, SchedulerState>, issuer: &mut impl Issuer) -> TickReport {
    let mut report = TickReport::default();
    let mut r = TickRequester {
        inner: issuer,
        sched,
        again: false,
    };
    let began = r.timestamp();
    let number = sched.ticks().get() + 1;
    sched.ticks().set(number);
    let entries = sched.entries().get();
    loop {
        report.passes += 1;
        r.again = false;
        sched
            .actions()
            .swap(SchedulerActions::empty(), AcqRel, System);
        // New entries, in id order.
        let write = sched.write_index().load(Acquire, System);
        let mut id = sched.accept_index().get();
        while id < write {
            let entry = entries.slot(id);
            entry.wait_cursor().set(0);
            set_state(entry, QueueEntryState::WAITING);
            consider(sched, entry, &mut r, &mut report);
            report.accepted += 1;
            id += 1;
        }
        sched.accept_index().set(id);
        // Allocations waiting for blocks the host has added since (or
        // given up adding): ready again.
        if let Some(pool) = sched.pool().get() {
            for b in 0..2 {
                let Some(bucket) = pool.buckets().get(b) else {
                    continue;
                };
                if !bucket.starved_head().is_none()
                    && bucket.growth().load(Acquire, System) != PoolBucket::GROWING
                {
                    unstarve(sched, bucket);
                }
            }
        }
        // Woken entries: their semaphore reached the value they waited
        // for (or failed); look at the rest of their waits.
        let mut woken = sched.wake_head().swap(None, Acquire, System);
        while let Some(entry) = woken {
            woken = entry.wake_next().get();
            consider(sched, entry, &mut r, &mut report);
            report.woken += 1;
        }
        // Ready entries, in id order.
        let ready = sched.ready_head();
        while let Some(entry) = ready.get() {
            let next = entry.ready_next().get();
            ready.set(next);
            if next.is_none() {
                sched.ready_tail().set(None);
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
    report
}

/// Issues a ready entry (on no list): completes a BARRIER, issues an
/// EXECUTE's entry block, serves an ALLOCA or DEALLOCA, fails anything
/// else.
// Inlined into the tick, as the release build does anyway: in the
// device-dev profile LLVM kept it outlined and, on gfx90a, failed with
// "unhandled SGPR spill to memory" (an SGPR spill needing EXEC changed
// while SCC is live, which LLVM's SIRegisterInfo does not handle).
#[inline(always)]
fn issue<'a, I: Issuer>(
    sched: View<'a, SchedulerState>,
    entry: View<'a, QueueEntry>,
    r: &mut TickRequester<'_, 'a, I>,
    report: &mut TickReport,
) {
    match entry.kind().get() {
        QueueEntryKind::BARRIER => complete_here(sched, entry, r, report),
        QueueEntryKind::EXECUTE => {
            let Some(execution) = entry.execution().get() else {
                fail_here(entry, HSA_STATUS_ERROR_INVALID_ARGUMENT, r, report);
                return;
            };
            // Pointed at a queue before it reads ISSUED: the host's
            // recovery fails the ISSUED entries of a faulted queue by the
            // queue they name.
            retarget(sched, execution);
            sched.in_flight().fetch_add(1, Relaxed, System);
            set_state(entry, QueueEntryState::ISSUED);
            let (id, now) = (entry.id().get(), r.timestamp());
            // Again onto a current queue if the host replaces this one (a
            // fault) while the issue waits for room in it.
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
                sched.in_flight().fetch_sub(1, Relaxed, System);
                fail_here(entry, HSA_STATUS_ERROR, r, report);
            }
        }
        QueueEntryKind::ALLOCA => alloca(sched, entry, r, report),
        QueueEntryKind::DEALLOCA => dealloca(sched, entry, r, report),
        _ => fail_here(entry, HSA_STATUS_ERROR_INVALID_ARGUMENT, r, report),
    }
}

/// Fails a ready entry (on no list) in the tick with `status` (it is where
/// the failure began), counted in the report.
fn fail_here(
    entry: View<'_, QueueEntry>,
    status: u32,
    r: &mut impl Requester,
    report: &mut TickReport,
) {
    fail_entry(entry, status, Origin::of_entry(entry), r);
    report.failed += 1;
}

/// Completes an entry that needs no packet (BARRIER, ALLOCA, DEALLOCA) in
/// the tick, with its issue and retire in the trace.
// Inlined into the tick: see `issue`.
#[inline(always)]
fn complete_here<'a, I: Issuer>(
    sched: View<'a, SchedulerState>,
    entry: View<'a, QueueEntry>,
    r: &mut TickRequester<'_, 'a, I>,
    report: &mut TickReport,
) {
    complete(entry, r);
    report.issued += 1;
    let (id, now) = (entry.id().get(), r.timestamp());
    trace(sched, (TraceKind::ISSUE, id), now, now, 0, r);
    trace(sched, (TraceKind::RETIRE, id), now, now, 0, r);
}

/// Moves the allocations waiting on `bucket` back to the ready list (a
/// block came free, or the host grew the bucket or gave up on it).
fn unstarve<'a>(sched: View<'a, SchedulerState>, bucket: View<'a, PoolBucket>) {
    let mut e = bucket.starved_head().get();
    bucket.starved_head().set(None);
    bucket.starved_tail().set(None);
    while let Some(entry) = e {
        let next = entry.ready_next().get();
        insert_ready(sched, entry);
        e = next;
    }
}

/// An ALLOCA: takes a block of the bucket its length picks and commits the
/// handle, or waits on the bucket for one (asking the host to grow it), or
/// fails when nothing can serve it.
fn alloca<'a, I: Issuer>(
    sched: View<'a, SchedulerState>,
    entry: View<'a, QueueEntry>,
    r: &mut TickRequester<'_, 'a, I>,
    report: &mut TickReport,
) {
    let Some(handle) = entry.handle().get() else {
        fail_here(entry, HSA_STATUS_ERROR_INVALID_ARGUMENT, r, report);
        return;
    };
    let Some((index, bucket)) = bucket_for(sched.pool().get(), handle.length().get()) else {
        fail_here(entry, HSA_STATUS_ERROR_INVALID_ALLOCATION, r, report);
        return;
    };
    // First come, first served: while allocations wait on the bucket, a
    // later one waits behind them (the host's answer to their request
    // brings the tick that serves them all, in id order).
    let waiting = !bucket.starved_head().is_none();
    if !waiting {
        if let Some(block) = take_block(bucket, r) {
            handle.address().set(block);
            complete_here(sched, entry, r, report);
            return;
        }
        let growth = bucket.growth();
        match growth.compare_exchange(0, PoolBucket::GROWING, AcqRel, System) {
            Err(PoolBucket::EXHAUSTED) => {
                fail_here(entry, HSA_STATUS_ERROR_OUT_OF_RESOURCES, r, report);
                return;
            }
            Ok(_) => r.post(sched, HostRequest::GROW, index),
            Err(_) => {} // asked already
        }
    }
    // Last on the bucket's list (ready entries arrive in id order).
    entry.ready_next().set(None);
    let tail = bucket.starved_tail();
    match tail.get() {
        None => bucket.starved_head().set(Some(entry)),
        Some(last) => last.ready_next().set(Some(entry)),
    }
    tail.set(Some(entry));
}

/// A DEALLOCA: gives the handle's block back to its bucket, empties the
/// handle, and lets the allocations waiting on the bucket try again.
// Inlined into the tick: see `issue`.
#[inline(always)]
fn dealloca<'a, I: Issuer>(
    sched: View<'a, SchedulerState>,
    entry: View<'a, QueueEntry>,
    r: &mut TickRequester<'_, 'a, I>,
    report: &mut TickReport,
) {
    let Some(handle) = entry.handle().get() else {
        fail_here(entry, HSA_STATUS_ERROR_INVALID_ARGUMENT, r, report);
        return;
    };
    let length = handle.length().get();
    let block = handle.address().get();
    let bucket = bucket_for(sched.pool().get(), length).map(|(_, bucket)| bucket);
    let Some(bucket) = bucket.filter(|_| block != 0) else {
        fail_here(entry, HSA_STATUS_ERROR_INVALID_ARGUMENT, r, report);
        return;
    };
    if !give_block(bucket, block, r) {
        fail_here(entry, HSA_STATUS_ERROR, r, report);
        return;
    }
    handle.address().set(0);
    complete_here(sched, entry, r, report);
    unstarve(sched, bucket);
}

/// Points a submission not issued yet at the next of the scheduler's
/// execution queues, in turn: its execution and every block's issue state.
/// (The host replaces a queue that faulted; entries submitted before named
/// another queue.)
fn retarget<'a>(sched: View<'a, SchedulerState>, execution: View<'a, Execution>) {
    let count = sched
        .execution_count()
        .get()
        .clamp(1, MAX_EXECUTION_QUEUES as u64);
    let next_at = sched.next_queue();
    let next = next_at.get();
    next_at.set(next.wrapping_add(1));
    let queue = sched
        .execution_queues()
        .get((next % count) as usize)
        .and_then(|slot| slot.load(Acquire, System));
    // (A slot below the scheduler's count always holds a queue.)
    if let Some(queue) = queue {
        execution.queue().set(queue);
        for issue in execution.issue_states().iter() {
            issue.queue().set(queue);
        }
    }
}

/// Frees the slots (and kernarg space) of the oldest entries that are
/// done, in order; returns how many.
fn reclaim(sched: View<'_, SchedulerState>) -> u32 {
    let mut n = 0;
    let retire = sched.retire_index();
    let accepted = sched.accept_index().get();
    let read = sched.kernarg().read_offset();
    let entries = sched.entries().get();
    let mut id = retire.load(Relaxed, System);
    while id < accepted {
        let entry = entries.slot(id);
        let s = state(entry);
        if s != QueueEntryState::RETIRED && s != QueueEntryState::FAILED {
            break;
        }
        read.store(entry.kernarg_end().get(), Release, System);
        id += 1;
        n += 1;
    }
    retire.store(id, Release, System);
    n
}
