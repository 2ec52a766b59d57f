//! What the scheduler's shared functions need from where they run — the
//! device's control kernels or the host's submit and signal paths — and
//! the one way to ask for a tick.
//!
//! A [`Requester`] pauses in a spin, enqueues a scheduler's tick, stores a
//! semaphore's mirror signal, reads the clock and posts host requests; an
//! [`Issuer`] also issues a submission's entry block (the tick's job).
//! [`QueueRequester`] is the device's: plain Rust over the queues'
//! `amd_queue_t` views, so the host tests run it too.

use aqueduct_abi::atomic::{AcqRel, Relaxed, Release, System};
use aqueduct_abi::command::Execution;
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::scheduler::{
    HostRequest, MAX_EXECUTION_QUEUES, SchedulerActions, SchedulerState,
};
use aqueduct_abi::view::View;

use crate::command::{IssueError, dispatch_block};
use crate::queue::Queue;
use crate::signal::Signal;

/// What the scheduler's shared functions need from where they run.
pub trait Requester {
    /// Between two looks of a spin-wait.
    fn pause(&mut self);
    /// Puts the tick packet of `scheduler` on its control queue.
    fn enqueue_tick(&mut self, scheduler: View<'_, SchedulerState>);
    /// Stores `value` to the HSA signal `signal` (release, system scope),
    /// waking its host waiters.
    fn mirror(&mut self, signal: SignalHandle, value: i64);
    /// The agent's timestamp (`s_memrealtime`) for trace records.
    fn timestamp(&mut self) -> u64;
    /// Posts `request` with `arg` (`arg[1]`) to the host service of
    /// `scheduler`, if it has one ([`SchedulerState::host_queue`]).
    fn post(&mut self, scheduler: View<'_, SchedulerState>, request: HostRequest, arg: u64);
}

/// What a tick needs besides a [`Requester`].
pub trait Issuer: Requester {
    /// Issues the entry block of the submission `execution` for
    /// `scheduler`. Gives up waiting for room in the submission's queue
    /// once the scheduler's execution queue is another one
    /// ([`QueueError::Abandoned`](crate::queue::QueueError::Abandoned)):
    /// the host replaced a faulted queue, whose slots never free again.
    fn execute(
        &mut self,
        scheduler: View<'_, SchedulerState>,
        execution: View<'_, Execution>,
    ) -> Result<(), IssueError>;
}

/// Requests a tick of `sched` for `actions`: enqueues it if no request is
/// pending, else the pending tick will see them.
pub fn request(sched: View<'_, SchedulerState>, actions: SchedulerActions, r: &mut impl Requester) {
    if sched.actions().fetch_or(actions, AcqRel, System).is_empty() {
        r.enqueue_tick(sched);
    }
}

/// Whether `queue` is the address of one of the execution queues of
/// `sched` now (the host replaces one that faulted).
pub fn is_execution_queue(sched: View<'_, SchedulerState>, queue: u64) -> bool {
    let count = sched.execution_count().get();
    let slots = sched.execution_queues();
    // The slots are stored atomically.
    (0..count.min(MAX_EXECUTION_QUEUES as u64)).any(|k| {
        slots
            .get(k as usize)
            .is_some_and(|slot| slot.load_address(Relaxed, System) == queue)
    })
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

    fn enqueue_tick(&mut self, scheduler: View<'_, SchedulerState>) {
        // The queue address and the packet are written once, before any
        // request.
        let (queue, packet) = (
            scheduler.control_queue().get(),
            scheduler.tick_packet().get(),
        );
        // The host checked the queue when it made the scheduler.
        let Ok(q) = Queue::new(queue) else {
            return;
        };
        if let Ok(id) = q.reserve(1, &mut self.pause) {
            q.write_words(id, &packet);
            q.ring_doorbell(id);
        }
    }

    fn mirror(&mut self, signal: SignalHandle, value: i64) {
        // SAFETY: a semaphore's mirror is a live signal while the
        // semaphore is (the semaphore's view vouches for its fields' use);
        // its handle is the one the host's runtime gave, used unmasked as
        // ROCr's device code uses handles.
        unsafe { Signal::from_handle(signal) }.store(value, Release, System);
    }

    /// An AGENT_DISPATCH packet on the host's soft queue: reserved, written
    /// and published as on any AQL queue (system-scope fences: the host
    /// reads what the device wrote before), then the doorbell, whose store
    /// wakes the service thread waiting on it. A full queue waits for the
    /// service to consume.
    fn post(&mut self, scheduler: View<'_, SchedulerState>, request: HostRequest, arg: u64) {
        // The field is written once, before any entry runs.
        let Some(Ok(q)) = scheduler.host_queue().get().map(Queue::new) else {
            return;
        };
        let Ok(packet) = aqueduct_abi::packet::agent_dispatch(
            request.0,
            [scheduler.device_address(), arg, 0, 0],
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
            crate::arch::realtime()
        }
        #[cfg(not(target_arch = "amdgpu"))]
        0
    }
}

impl<P: FnMut()> Issuer for QueueRequester<P> {
    fn execute(
        &mut self,
        scheduler: View<'_, SchedulerState>,
        execution: View<'_, Execution>,
    ) -> Result<(), IssueError> {
        let queue = execution.queue().raw();
        // The host stores a queue's slot atomically (release) when it
        // replaces the queue.
        dispatch_block(execution, 0, || {
            (self.pause)();
            is_execution_queue(scheduler, queue)
        })
    }
}
