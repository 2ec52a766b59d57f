//! A device's scheduler on the host's side: its state in host-visible
//! memory, its queues and service queue, what its entries keep alive,
//! and the host's part in the scheduler's protocols — the requester that
//! runs the device's shared functions on the host ([`HostRequester`]),
//! the service thread that serves the device's requests ([`serve`]),
//! recovery from a faulted execution queue, and the orderly end of a
//! device.
//!
//! ```text
//!   DeviceInner ── state (SchedulerState, mailbox, tick argument)
//!               ── control queue (ticks), execution queues, service queue
//!               ── held: by entry id, what the device may still read
//!   service thread: requests (RELEASE, TRACE_FLUSH, GROW), trace drains,
//!                   faulted queues → fail their issued entries, replace
//! ```

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering as MemOrdering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use aqueduct_abi::atomic::{AcqRel, Acquire, Release, System};
use aqueduct_abi::hsa::{SignalCondition, SignalHandle};
use aqueduct_abi::hsa_api::HSA_STATUS_ERROR;
use aqueduct_abi::packet::Ordering;
use aqueduct_abi::scheduler::{
    HostRequest, QueueEntry, QueueEntryState, SchedulerActions, SchedulerState, TraceKind,
};
use aqueduct_abi::view::View;
use aqueduct_device::scheduler as shared;

use crate::agent::Agent;
use crate::command_buffer::{CommandBuffer, IssueKernels, IssueMode, KernargProducer};
use crate::error::{Error, Result};
use crate::executable::Kernel;
use crate::memory::HostBuffer;
use crate::queue::{DEFAULT_SPACE_TIMEOUT, Queue};
use crate::service::HostQueue;
use crate::signal::{Signal, StoreOrder};

use super::pool::PoolMemory;
use super::trace::Trace;

/// The host's side of submitting: the write position of the kernarg ring.
pub(super) struct Producer {
    pub(super) ring: KernargProducer,
}

/// What an entry keeps alive while the device may read it: its command
/// buffer and its semaphores. Released when the entry retires (the
/// device's [`HostRequest::RELEASE`]) or its slot is reclaimed.
pub(super) struct Held {
    pub(super) buffer: Option<CommandBuffer>,
    /// The entry's semaphores and allocation, whatever they are.
    pub(super) _keep_alive: Vec<Arc<dyn Send + Sync>>,
}

pub(super) struct DeviceInner {
    pub(super) agent: Agent,
    pub(super) control: Queue,
    /// The execution queue; replaced by the service thread when it faults
    /// (the old one stays in `faulted` until the device goes).
    pub(super) execution: Mutex<Vec<Queue>>,
    pub(super) faulted: Mutex<Vec<Queue>>,
    /// What made entries fail, by entry id: the command and kernel a
    /// faulted queue stopped at.
    pub(super) failures: Mutex<std::collections::HashMap<u64, String>>,
    pub(super) kernels: IssueKernels,
    pub(super) _tick_kernel: Kernel,
    pub(super) mode: IssueMode,
    /// The [`SchedulerState`], then the mailbox ring of entries, then the
    /// tick's kernel argument.
    pub(super) state: HostBuffer<u8>,
    pub(super) tick: aqueduct_abi::packet::Prepared<aqueduct_abi::aql::KernelDispatchPacket>,
    pub(super) producer: Mutex<Producer>,
    /// By entry id: what the entries not yet released keep alive.
    pub(super) held: Mutex<std::collections::BTreeMap<u64, Held>>,
    /// The device block pool behind ALLOCA entries.
    pub(super) pool: PoolMemory,
    /// The host service's queue (its address is in the state).
    pub(super) _service: Arc<HostQueue>,
    /// Requests served: RELEASE, TRACE_FLUSH, packets of no kind the
    /// service knows, GROW.
    pub(super) served: [AtomicU64; 4],
    pub(super) capacity: u64,
    pub(super) trace: Option<Trace>,
}

/// Every live scheduler by its state's device address, for host requests
/// that wake another device's entries.
pub(super) static SCHEDULERS: Mutex<Vec<(u64, Weak<DeviceInner>)>> = Mutex::new(Vec::new());

/// How long a submitter short of room waits for progress before it asks
/// for another reclaiming tick.
pub(super) const RETIRE_NUDGE: Duration = Duration::from_millis(1);

impl DeviceInner {
    /// The scheduler state's device address.
    pub(super) fn sched(&self) -> u64 {
        self.state.address()
    }

    /// The scheduler state, as the device's tick sees it.
    pub(super) fn state(&self) -> View<'_, SchedulerState> {
        // SAFETY: the state buffer starts with the SchedulerState the host
        // wrote (64-byte aligned, kept by `self`), whose mailbox follows it
        // in the same buffer, and whose links the host set to its own
        // live memory (queues, pool, trace ring, kernarg storage); host
        // and device keep the scheduler's protocol (the layout's docs).
        unsafe {
            View::from_ptr(NonNull::new_unchecked(
                self.state.address() as *mut SchedulerState
            ))
        }
    }

    /// The mailbox slot of entry `id`.
    pub(super) fn entry(&self, id: u64) -> View<'_, QueueEntry> {
        self.state().entries().get().slot(id)
    }

    /// The first execution queue of now (they share an agent, limits and
    /// kernarg pool: what recordings and submissions ask of a queue).
    pub(super) fn execution(&self) -> Queue {
        self.executions()[0].clone()
    }

    /// The execution queues of now.
    pub(super) fn executions(&self) -> Vec<Queue> {
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
            _ => HSA_STATUS_ERROR,
        };
        let new = self.agent.create_queue(old.size())?;
        {
            let mut queues = self.execution.lock().unwrap_or_else(|p| p.into_inner());
            let Some(k) = queues.iter().position(|q| q.address() == old.address()) else {
                return Ok(()); // replaced already
            };
            let slot = self
                .state()
                .execution_queues()
                .get(k)
                .expect("at most MAX_EXECUTION_QUEUES execution queues");
            // SAFETY: the new queue is live until the device goes (kept in
            // `execution`, then in `faulted`): a link the scheduler's view
            // may vouch for.
            unsafe { slot.store_address(new.address(), Release, System) };
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
            // An entry of this scheduler's mailbox (not reclaimed: at or
            // above the retire index); an issued entry's execution is live
            // until it is reclaimed.
            let entry = self.entry(id);
            let execution = entry.execution().get();
            let on_old = execution.is_some_and(|e| e.queue().raw() == old.address());
            // A retire that claimed it first (a wave of the faulted queue
            // still ran its RETURN) ends it.
            if shared::state(entry) != QueueEntryState::ISSUED
                || !on_old
                || !shared::claim_end(entry)
            {
                continue;
            }
            let why = held
                .get(&id)
                .and_then(|h| h.buffer.as_ref())
                .zip(execution)
                .map(|(buffer, execution)| buffer.blame(execution.issues().get(), at, again()))
                .unwrap_or_else(again);
            self.failures
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, why.to_string());
            // The entry and its semaphores are live (kept by `held`: an
            // issued entry has not retired); nothing else touches an
            // issued entry.
            shared::fail_entry(entry, status, shared::Origin::of_entry(entry), &mut r);
            self.state().in_flight().fetch_sub(1, AcqRel, System);
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
    pub(super) fn calibrate(&self) -> Result<()> {
        let Some(trace) = &self.trace else {
            return Ok(());
        };
        let before = Instant::now();
        self.request(SchedulerActions::RETIRE)?;
        while self.state().ticks().observe() == 0 {
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
            if let Some(r) = trace.find(TraceKind::SCHEDULER_TICK) {
                let half = (after - before) / 2;
                let mid = r.start_ts / 2 + r.end_ts / 2;
                let _ = trace.epoch.set((before + half, mid, half));
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::InvalidArgument {
                    what: "trace",
                    problem: "the first tick left no trace record".into(),
                });
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }

    pub(super) fn check_control(&self) -> Result<()> {
        self.control.fault().map_or(Ok(()), Err)
    }

    /// The scheduler's state in a few words, for errors.
    pub(super) fn describe(&self) -> String {
        let state = self.state();
        format!(
            "entries submitted {}, accepted {}, reclaimed {}; actions {:#x}, in flight {}, ticks {}; control queue read {} write {}; execution queues{}",
            state.write_index().load(Acquire, System),
            state.accept_index().observe(),
            state.retire_index().load(Acquire, System),
            state.actions().load(Acquire, System).bits(),
            state.in_flight().load(Acquire, System),
            state.ticks().observe(),
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
        let actions = self.state().actions();
        for _ in 0..100 {
            actions.fetch_or(SchedulerActions::CLOSED, AcqRel, System);
            if self.control.fault().is_some() {
                break;
            }
            if self.settle_ticks(DEFAULT_SPACE_TIMEOUT).is_err() {
                break;
            }
            let idle = self.control.read_index() == self.control.write_index();
            let closed = actions
                .load(Acquire, System)
                .contains(SchedulerActions::CLOSED);
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
            // An entry of this scheduler's mailbox, not reclaimed; no tick
            // runs (closed), and its semaphores are alive (kept by `held`
            // until the entry retires or is reclaimed).
            let entry = self.entry(id);
            if shared::state(entry) != QueueEntryState::WAITING {
                continue;
            }
            let cursor = entry.wait_cursor().get();
            if let Some(w) = entry.waits().get().get(u64::from(cursor)) {
                shared::remove_waiter(w.semaphore().get(), entry, &mut r);
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
    pub(super) fn serve_pending(&self) {
        self._service.serve(Duration::ZERO, |p| {
            self.serve_request(HostRequest(p.function), p.arg[1])
        });
    }

    /// The ids of the entries not reclaimed yet: from the retire index to
    /// the write index.
    fn live_entries(&self) -> (u64, u64) {
        let state = self.state();
        (
            state.retire_index().load(Acquire, System),
            state.write_index().load(Acquire, System),
        )
    }

    /// Requests a tick of this scheduler for `actions`.
    pub(super) fn request(&self, actions: SchedulerActions) -> Result<()> {
        let mut r = HostRequester {
            system: self.agent.system(),
            device: Some(self),
            error: None,
        };
        shared::request(self.state(), actions, &mut r);
        r.error.map_or(Ok(()), Err)
    }

    /// Serves one request of the device's (or of the host's own
    /// [`HostRequester`]).
    pub(super) fn serve_request(&self, request: HostRequest, arg: u64) {
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

    /// Grows bucket `b` of the block pool (or marks it exhausted), then
    /// requests the tick that serves the allocations waiting on it.
    fn grow(&self, b: usize) {
        let mut r = HostRequester {
            system: self.agent.system(),
            device: Some(self),
            error: None,
        };
        self.pool.grow(b, &mut r);
        // The tick that serves the allocations waiting on the bucket (a
        // failure to enqueue it is the control queue's: `check` says so).
        let _ = self.request(SchedulerActions::WAKE);
    }

    /// Releases what the entries below the retire index kept alive: their
    /// slots are reclaimed, so the device reads none of it (entries that
    /// completed in a tick or failed post no RELEASE).
    fn release_reclaimed(&self) {
        let retired = self.state().retire_index().load(Acquire, System);
        let gone = {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            let live = held.split_off(&retired);
            std::mem::replace(&mut *held, live)
        };
        drop(gone);
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
        let in_flight = self.state().in_flight();
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
            if in_flight.load(Acquire, System) == 0
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
        let waking = self.state().waking();
        while waking.load(Acquire, System) != 0 && start.elapsed() < DEFAULT_SPACE_TIMEOUT {
            std::thread::sleep(Duration::from_micros(50));
        }
        let mut all = SCHEDULERS.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|(at, w)| *at != self.state.address() && w.strong_count() > 0);
    }
}

/// The host's [`shared::Requester`]: ticks go through the HSA queue
/// API, mirrors through `hsa_signal_store_screlease`.
pub(super) struct HostRequester<'a> {
    /// The runtime that stores mirrors.
    pub(super) system: &'a crate::System,
    /// The device submitting, if any (saves the registry look-up).
    pub(super) device: Option<&'a DeviceInner>,
    /// A tick that could not be enqueued.
    pub(super) error: Option<Error>,
}

impl shared::Requester for HostRequester<'_> {
    fn pause(&mut self) {
        std::hint::spin_loop();
    }

    fn enqueue_tick(&mut self, scheduler: View<'_, SchedulerState>) {
        self.with_device(scheduler.device_address(), |device, error| {
            if let Err(e) = device.control.submit(&device.tick) {
                // No tick is coming: empty the set again, or every later
                // request would find it non-empty and wait for this one.
                device
                    .state()
                    .actions()
                    .store(SchedulerActions::empty(), Release, System);
                error.get_or_insert(e);
            }
        });
    }

    /// The host serves its own requests on the spot (the functions it
    /// runs post none today: they come from retires and trace records).
    fn post(&mut self, scheduler: View<'_, SchedulerState>, request: HostRequest, arg: u64) {
        self.with_device(scheduler.device_address(), |device, _| {
            device.serve_request(request, arg)
        });
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
pub(super) fn serve(device: &Weak<DeviceInner>, queue: &HostQueue) {
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

/// Packets of the host service's queue: device requests waiting to be
/// served (a full queue makes the posting kernel wait).
pub(super) const SERVICE_QUEUE_SIZE: u32 = 256;

/// How often the service thread looks at the execution queue (it wakes at
/// once for a request).
const SERVICE_PERIOD: Duration = Duration::from_millis(2);
