//! Trace records into a scheduler's ring
//! ([`aqueduct_abi::scheduler::TraceRing`]), which the host's trace worker
//! drains.
//!
//! ```text
//!   writer ── reserve: write_index + 1 while the ring has room (else dropped += 1)
//!          ── id, timestamps; header (kind | flags << 16) last, release
//!          ── the record that fills another half: post TRACE_FLUSH
//!   host   ── reads in order up to the first header still 0, zeroes each,
//!             then advances read_index (release)
//! ```

use aqueduct_abi::atomic::{Acquire, Relaxed, Release, System};
use aqueduct_abi::command::{BlockIssue, Execution};
use aqueduct_abi::scheduler::{HostRequest, SchedulerState, TraceKind, TraceRecord};
use aqueduct_abi::view::View;

use super::requester::Requester;

/// Records a trace event in the ring of `sched`, if it traces: reserves a
/// slot only while the ring has room (else counts it dropped), writes the
/// record, publishes its header last. The record that fills another half
/// of the ring asks the host service to drain it
/// ([`HostRequest::TRACE_FLUSH`]).
pub fn trace(
    sched: View<'_, SchedulerState>,
    event: (TraceKind, u64),
    start: u64,
    end: u64,
    flags: u16,
    r: &mut impl Requester,
) {
    let (kind, id) = event;
    let Some(ring) = sched.trace().get() else {
        return;
    };
    let write = ring.write_index();
    let records = ring.base().get();
    let capacity = records.len();
    let mut at = write.load(Relaxed, System);
    loop {
        let read = ring.read_index().load(Acquire, System);
        if at < read {
            // Stale: others wrote and the host drained meanwhile.
            at = write.load(Relaxed, System);
            continue;
        }
        if at - read >= capacity {
            ring.dropped().fetch_add(1, Relaxed, System);
            return;
        }
        match write.compare_exchange(at, at + 1, Relaxed, System) {
            Ok(_) => break,
            Err(now) => at = now,
        }
    }
    let record = records.slot(at);
    record.id().set(id);
    record.start_ts().set(start);
    record.end_ts().set(end);
    record
        .header()
        .store(TraceRecord::header(kind, flags), Release, System);
    if (at + 1).is_multiple_of((capacity / 2).max(1)) {
        r.post(sched, HostRequest::TRACE_FLUSH, at + 1);
    }
}

/// Records, under a tracing scheduler, that block `block` of the
/// submission `execution` begins ([`TraceKind::BLOCK`]). Nothing for a
/// submission outside a scheduler.
pub fn trace_block(execution: View<'_, Execution>, block: u32, r: &mut impl Requester) {
    // An execution's entry and scheduler are live while it runs.
    let Some(entry) = execution.queue_entry() else {
        return;
    };
    let sched = entry.scheduler().get();
    if sched.trace().is_none() {
        return;
    }
    let (id, now) = (entry.id().get(), r.timestamp());
    trace(sched, (TraceKind::BLOCK, id), now, now, block as u16, r);
}

/// [`trace_block`] for the block whose issue state is `issue`, if it is
/// the entry's first (a later block was recorded by the control kernel
/// that issued it): what a block-issue kernel records.
pub fn trace_first_block(issue: View<'_, BlockIssue>, r: &mut impl Requester) {
    let execution = issue.execution().get();
    let first = execution.issues().get();
    if issue.device_address() == first {
        trace_block(execution, 0, r);
    }
}
