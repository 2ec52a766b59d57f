//! A queue entry's life after the tick issued it
//! ([`aqueduct_abi::scheduler::QueueEntry`]): its RETURN's retire, or a
//! failure, and the semaphores each signals or fails.
//!
//! ```text
//!   ISSUED ──claim_end (CAS)──► ENDING ──complete──► RETIRED   (its retire)
//!                                      └─fail_entry─► FAILED    (a recovery)
//! ```
//!
//! Exactly one of an issued entry's retire and the host's recovery from a
//! queue fault claims its end ([`claim_end`]); the other leaves it alone.

use aqueduct_abi::atomic::{AcqRel, Acquire, Release, System};
use aqueduct_abi::scheduler::{HostRequest, QueueEntry, QueueEntryState, TraceKind};
use aqueduct_abi::view::View;

use super::requester::Requester;
use super::semaphore::{Origin, fail, signal};
use super::trace::trace;

/// The entry's state (acquire).
pub fn state(entry: View<'_, QueueEntry>) -> QueueEntryState {
    entry.state().load(Acquire, System)
}

/// Sets the entry's state (release: what was written about it before is
/// visible to whoever reads the state).
pub(super) fn set_state(entry: View<'_, QueueEntry>, state: QueueEntryState) {
    entry.state().store(state, Release, System);
}

/// Claims the end of an issued entry for the caller (ISSUED → ENDING):
/// its retire and a recovery that fails it may race (a faulted queue's
/// other waves may still run its RETURN), and exactly one of them may
/// signal or fail its semaphores, release it and count it out of
/// `in_flight`. False: the other has it. The claim is by slot: a RETURN
/// that runs only after its entry's slot was reclaimed and reused would
/// claim the new entry (not handled yet).
pub fn claim_end(entry: View<'_, QueueEntry>) -> bool {
    entry
        .state()
        .compare_exchange(
            QueueEntryState::ISSUED,
            QueueEntryState::ENDING,
            AcqRel,
            System,
        )
        .is_ok()
}

/// Completes `entry`, which is done: signals its semaphores, then marks it
/// RETIRED.
pub(super) fn complete(entry: View<'_, QueueEntry>, r: &mut impl Requester) {
    for s in entry.signals().get().iter() {
        // A failed semaphore stays failed: nothing to do.
        let _ = signal(s.semaphore().get(), s.value().get(), r);
    }
    set_state(entry, QueueEntryState::RETIRED);
}

/// Fails `entry` with `status`: fails its semaphores (recording
/// `origin`), then marks it FAILED.
pub fn fail_entry(
    entry: View<'_, QueueEntry>,
    status: u32,
    origin: Origin,
    r: &mut impl Requester,
) {
    entry.status().set(status);
    for s in entry.signals().get().iter() {
        fail(s.semaphore().get(), status, origin, r);
    }
    set_state(entry, QueueEntryState::FAILED);
}

/// Retires an issued entry whose work is done (the RETURN's control
/// kernel): completes it, which wakes its semaphores' waiters. It requests
/// no tick of its own: its slot is reclaimed by whatever tick runs next,
/// and a submitter that runs out of room requests one
/// ([`SchedulerActions::RETIRE`](aqueduct_abi::scheduler::SchedulerActions::RETIRE)).
/// So entries that nobody waits for cost no tick when they finish.
///
/// An entry the host's recovery failed first ([`claim_end`]) is left
/// alone.
pub fn retire(entry: View<'_, QueueEntry>, r: &mut impl Requester) {
    if !claim_end(entry) {
        return;
    }
    let sched = entry.scheduler().get();
    // Recorded first: once its semaphores are signalled, the entries
    // waiting for it may issue (and record) before this kernel goes on.
    let (id, now) = (entry.id().get(), r.timestamp());
    trace(sched, (TraceKind::RETIRE, id), now, now, 0, r);
    complete(entry, r);
    // Before `in_flight` drops: a device that saw no entry in flight may
    // destroy the host service's queue.
    r.post(sched, HostRequest::RELEASE, id);
    sched.in_flight().fetch_sub(1, Release, System);
}
