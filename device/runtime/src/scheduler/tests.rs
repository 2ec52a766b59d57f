//! The scheduler's host tests: a scheduler, its entries and semaphores in
//! host memory (a rig), driven by a mock requester that records what the
//! shared functions asked of their host.

extern crate std;

use std::boxed::Box;
use std::vec;
use std::vec::Vec;

use core::ptr::NonNull;

use aqueduct_abi::command::{BlockIssue, CommandBufferHeader, Execution};
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::hsa_api::{
    HSA_STATUS_ERROR, HSA_STATUS_ERROR_INVALID_ALLOCATION, HSA_STATUS_ERROR_INVALID_ARGUMENT,
    HSA_STATUS_ERROR_OUT_OF_RESOURCES,
};
use aqueduct_abi::scheduler::{
    BlockPool, DeviceSemaphore, HostRequest, PoolBucket, QueueEntry, QueueEntryKind,
    QueueEntryState, SchedulerActions, SchedulerState, SemaphoreRef, TraceKind,
};
use aqueduct_abi::view::View;
use zerocopy::FromZeros;

use super::semaphore::{detach_waiters, wake_all};
use super::*;
use crate::command::IssueError;
use crate::queue::QueueError;

/// The view of the rig's layout at `address` (the tests pass addresses
/// as the device does).
fn sv<T>(address: u64) -> View<'static, T> {
    // SAFETY: every address the tests pass is of a live, aligned layout
    // in a rig that outlives the call's use of the view.
    unsafe { View::from_ptr(NonNull::new(address as *mut T).expect("a rig address")) }
}

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
    fn enqueue_tick(&mut self, scheduler: View<'_, SchedulerState>) {
        self.ticks_enqueued.push(scheduler.device_address())
    }
    fn mirror(&mut self, signal: SignalHandle, value: i64) {
        self.mirrors.push((signal.0, value))
    }
    fn timestamp(&mut self) -> u64 {
        self.clock += 10;
        self.clock
    }
    fn post(&mut self, scheduler: View<'_, SchedulerState>, request: HostRequest, arg: u64) {
        self.posts.push((scheduler.device_address(), request, arg))
    }
}

impl Issuer for Mock {
    fn execute(
        &mut self,
        scheduler: View<'_, SchedulerState>,
        execution: View<'_, Execution>,
    ) -> Result<(), IssueError> {
        let execution = execution.device_address();
        if self.refuse.contains(&execution) {
            return Err(IssueError::Opcode(0));
        }
        if let Some(k) = self.stall.iter().position(|s| s.0 == execution) {
            // The queue is full and faults; the host replaces it while
            // the issue waits for room, which gives up.
            let (_, replacement) = self.stall.remove(k);
            // SAFETY: the rig's scheduler, as the tick's is.
            unsafe { (*scheduler.as_ptr()).execution_queues[0] = replacement };
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
    sems: Vec<DeviceSemaphore>,
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
            sems: vec![DeviceSemaphore::new_zeroed(); semaphores],
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
        tick(sv(self.sched()), m)
    }
    /// The RETURN of an issued entry: its control kernel's retire.
    fn retire(&mut self, id: u64, m: &mut Mock) {
        retire(sv(self.entry(id)), m)
    }
    fn request(&mut self, m: &mut Mock) {
        request(sv(self.sched()), SchedulerActions::INCOMING, m)
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
        let w = add_waiter(sv(sem), sv(rig.entry(k as u64)), v, &mut m);
        assert_eq!(w, Wait::Registered);
    }
    // The list, by value (equal values keep their arrival order).
    let mut order = Vec::new();
    let mut cur = rig.sems[0].waiters_head;
    while cur != 0 {
        order.push((cur - rig.entry(0)) / 256);
        cur = sv::<QueueEntry>(cur).wait_next().raw();
    }
    assert_eq!(order, [1, 2, 4, 0, 3]);
    assert_eq!(rig.sems[0].waiters_tail, rig.entry(3));
    signal(sv(sem), 2, &mut m).unwrap();
    assert_eq!(m.mirrors, [(0x1000, 2)]);
    // Entries 1, 2, 4 (values 1, 2, 2) woke, pushed in list order: the
    // stack's top is the last.
    let mut woken = Vec::new();
    let mut cur = rig.state.wake_head;
    while cur != 0 {
        woken.push((cur - rig.entry(0)) / 256);
        cur = sv::<QueueEntry>(cur).wake_next().raw();
    }
    assert_eq!(woken, [4, 2, 1]);
    assert_eq!(rig.sems[0].waiters_head, rig.entry(0));
    // One tick requested for three wakes.
    assert_eq!(m.ticks_enqueued, [rig.sched()]);
    assert_eq!(rig.state.actions, SchedulerActions::WAKE);
    // A smaller value changes nothing; a reached one is reached at once.
    {
        signal(sv(sem), 1, &mut m).unwrap();
        assert_eq!(rig.sems[0].payload, 2);
        assert_eq!(
            add_waiter(sv(sem), sv(rig.entry(5)), 2, &mut m),
            Wait::Reached
        );
    }
    assert_eq!(m.mirrors.len(), 1);
    signal(sv(sem), 9, &mut m).unwrap();
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
    let list = detach_waiters(sv(rig.sem(0)), 2);
    // Taken off (under the lock, in `signal`), not pushed yet: a
    // scheduler going away must wait for these two.
    assert_eq!(rig.state.waking, 2);
    wake_all(list, &mut m);
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
        add_waiter(sv(sem), sv(rig.entry(k as u64)), k as u64 + 1, &mut m);
    }
    {
        assert!(remove_waiter(sv(sem), sv(rig.entry(3)), &mut m), "the tail");
        assert!(remove_waiter(sv(sem), sv(rig.entry(0)), &mut m), "the head");
        assert!(
            !remove_waiter(sv(sem), sv(rig.entry(0)), &mut m),
            "gone already"
        );
        assert!(
            !remove_waiter(sv(sem), sv(rig.entry(5)), &mut m),
            "never there"
        );
    }
    assert_eq!(rig.sems[0].waiters_head, rig.entry(1));
    assert_eq!(rig.sems[0].waiters_tail, rig.entry(2));
    signal(sv(sem), 9, &mut m).unwrap();
    let mut woken = Vec::new();
    let mut cur = rig.state.wake_head;
    while cur != 0 {
        woken.push((cur - rig.entry(0)) / 256);
        cur = sv::<QueueEntry>(cur).wake_next().raw();
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
    {
        add_waiter(sv(sem), sv(rig.entry(0)), 5, &mut m);
        add_waiter(sv(sem), sv(rig.entry(1)), u64::MAX, &mut m);
        fail(sv(sem), 0x2b, Origin::default(), &mut m);
        assert_eq!(rig.sems[0].waiters_head, 0);
        assert_eq!(failure(sv(sem)), Some(0x2b));
        assert_eq!(signal(sv(sem), 7, &mut m), Err(0x2b));
        assert_eq!(
            add_waiter(sv(sem), sv(rig.entry(2)), 1, &mut m),
            Wait::Failed(0x2b)
        );
        // A second failure keeps the first status.
        fail(sv(sem), 0x99, Origin::default(), &mut m);
        assert_eq!(failure(sv(sem)), Some(0x2b));
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
    request(sv(rig.sched()), SchedulerActions::RETIRE, &mut m);
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
    let kinds: Vec<(TraceKind, u64)> = records.iter().map(|r| (r.kind(), r.id)).collect();
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
    assert_eq!(records[1].flags(), 3);
    assert!(records[1].start_ts < records[0].start_ts);
    assert!(records[0].start_ts < records[1].end_ts);
    // After the host consumed the ring, a record fits again.
    ring.read_index = 8;
    rig.tick(&mut m);
    assert_eq!((records[0].kind(), records[0].id), (K::SCHEDULER_TICK, 4));
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
    trace_first_block(sv(first), &mut m);
    rig.execs[0].entry = rig.entry(id);
    trace_first_block(sv(first), &mut m);
    let mut records = vec![TraceRecord::new_zeroed(); 4];
    let mut ring = Box::new(TraceRing::new_zeroed());
    ring.base = records.as_mut_ptr() as u64;
    ring.capacity = 4;
    rig.state.trace = &raw const *ring as u64;
    {
        trace_first_block(sv(first), &mut m);
        // A later block: recorded by the control kernel that issues it,
        // not by its issue kernel.
        trace_first_block(sv(second), &mut m);
        trace_block(sv(rig.exec_of(id)), 1, &mut m);
    }
    assert_eq!(ring.write_index, 2);
    let seen: Vec<(TraceKind, u64, u16)> = records[..2]
        .iter()
        .map(|r| (r.kind(), r.id, r.flags()))
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
    signal(sv(rig.sem(0)), 1, &mut m).unwrap();
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
    assert_eq!(
        rig.entries[odd as usize].status,
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    for k in 0..3 {
        assert_eq!(failure(sv(rig.sem(k))), Some(HSA_STATUS_ERROR));
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
    {
        assert!(is_execution_queue(sv(rig.sched()), 0xA000));
        assert!(!is_execution_queue(sv(rig.sched()), 0xB000));
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
    {
        assert!(claim_end(sv(rig.entry(a))));
        fail_entry(
            sv(rig.entry(a)),
            HSA_STATUS_ERROR,
            Origin::of_entry(sv(rig.entry(a))),
            &mut m,
        );
    }
    rig.retire(a, &mut m);
    assert_eq!(rig.state_of(a), QueueEntryState::FAILED);
    assert_eq!(failure(sv(rig.sem(0))), Some(HSA_STATUS_ERROR));
    assert_eq!(rig.sems[0].payload, 0);
    assert!(m.posted(HostRequest::RELEASE).is_empty());
    assert_eq!(rig.state.in_flight, 2, "the recovery counts it out");
    // `b` retires first: a recovery after that cannot claim it.
    rig.retire(b, &mut m);
    assert_eq!(rig.state_of(b), QueueEntryState::RETIRED);
    assert!(!claim_end(sv(rig.entry(b))));
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
        assert!(give_block(sv(self.bucket(b)), block, m));
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
    assert_eq!(
        rig.entries[c as usize].status,
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
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
    assert_eq!(
        rig.entries[a as usize].status,
        HSA_STATUS_ERROR_OUT_OF_RESOURCES
    );
    let failed = failure(sv(rig.sem(0)));
    assert_eq!(failed, Some(HSA_STATUS_ERROR_OUT_OF_RESOURCES));
    // A deallocation of a handle that holds nothing fails.
    let f = rig.submit_handle(QueueEntryKind::DEALLOCA, &small, &[]);
    rig.request(&mut m);
    assert_eq!(rig.tick(&mut m).failed, 1);
    assert_eq!(
        rig.entries[(f % 8) as usize].status,
        HSA_STATUS_ERROR_INVALID_ARGUMENT
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
    signal(sv(rig.sem(0)), 1, &mut m).unwrap();
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
