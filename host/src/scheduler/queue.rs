//! Submitting to a device's scheduler: a [`DeviceQueue`] writes one
//! queue entry per call into the scheduler's mailbox ring — its kind, its
//! wait and signal lists and, for a command buffer, the whole issue state,
//! in the scheduler's kernarg ring — and requests a tick; a [`Batch`]
//! writes several and requests one.
//!
//! Back-pressure: a full mailbox or kernarg ring makes the submitter wait
//! (up to [`DEFAULT_SPACE_TIMEOUT`]) until the tick reclaims retired
//! entries, polling the ring's read side every 50 µs, and asking for a
//! reclaiming tick when a millisecond passes without progress.

use std::sync::Arc;
use std::time::Instant;

use aqueduct_abi::atomic::{Acquire, Relaxed, Release, System};
use aqueduct_abi::command::{BindingTableEntry, BufferRef};
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::scheduler::{
    QueueEntry, QueueEntryKind, QueueEntryState, SchedulerActions, SemaphoreRef,
};
use zerocopy::{FromZeros, IntoBytes};

use crate::command_buffer::{CommandBuffer, SubmissionPlan, SubmissionTarget};
use crate::error::{Error, Result};
use crate::queue::{DEFAULT_SPACE_TIMEOUT, RoomWait};

use super::allocation::Allocation;
use super::inner::{DeviceInner, Held, RETIRE_NUDGE};
use super::semaphore::Semaphore;

/// A semaphore and a payload: "wait until it reaches the value" in a wait
/// list, "advance it to the value" in a signal list.
pub type SemaphoreValue<'a> = (&'a Semaphore, u64);

/// What a queue entry runs: its kind and what the kind needs (the
/// entry's [`QueueEntryKind`]).
#[derive(Clone, Copy)]
enum EntryWork<'a> {
    /// Nothing: complete once the waits are reached (BARRIER).
    Barrier,
    /// A command buffer with its binding table, checked (EXECUTE).
    Execute(&'a SubmissionPlan<'a>),
    /// A queue-ordered allocation's block taken (ALLOCA).
    Alloca(&'a Allocation),
    /// A queue-ordered allocation's block given back (DEALLOCA).
    Dealloca(&'a Allocation),
}

impl<'a> EntryWork<'a> {
    /// The entry's kind.
    fn kind(self) -> QueueEntryKind {
        match self {
            Self::Barrier => QueueEntryKind::BARRIER,
            Self::Execute(..) => QueueEntryKind::EXECUTE,
            Self::Alloca(_) => QueueEntryKind::ALLOCA,
            Self::Dealloca(_) => QueueEntryKind::DEALLOCA,
        }
    }

    /// The submission an EXECUTE runs.
    fn plan(self) -> Option<&'a SubmissionPlan<'a>> {
        match self {
            Self::Execute(plan) => Some(plan),
            _ => None,
        }
    }

    /// The command buffer an EXECUTE runs.
    fn buffer(self) -> Option<&'a CommandBuffer> {
        self.plan().map(SubmissionPlan::buffer)
    }

    /// The allocation an ALLOCA or DEALLOCA names.
    fn allocation(self) -> Option<&'a Allocation> {
        match self {
            Self::Alloca(a) | Self::Dealloca(a) => Some(a),
            _ => None,
        }
    }
}

/// Submits to a [`PhysicalDevice`](super::PhysicalDevice)'s execution queue: every call
/// adds one entry that runs once its waits are reached and signals its
/// semaphores when done.
#[derive(Clone)]
pub struct DeviceQueue {
    inner: Arc<DeviceInner>,
}

impl std::fmt::Debug for DeviceQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceQueue")
            .field("scheduler", &format_args!("{:#x}", self.inner.sched()))
            .finish()
    }
}

impl DeviceQueue {
    /// The submission API of the scheduler `inner`.
    pub(super) fn new(inner: Arc<DeviceInner>) -> Self {
        Self { inner }
    }

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
        self.inner.request(SchedulerActions::INCOMING)?;
        Ok(id)
    }

    /// Completes once every wait is reached, then advances every signal:
    /// no work of its own (a pure dependency).
    pub fn barrier(
        &self,
        waits: &[SemaphoreValue<'_>],
        signals: &[SemaphoreValue<'_>],
    ) -> Result<u64> {
        let id = self.add(waits, signals, EntryWork::Barrier)?;
        self.inner.request(SchedulerActions::INCOMING)?;
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
        let d = &*self.inner;
        let large = d.pool.largest();
        if length == 0 || length > large {
            return Err(Error::InvalidArgument {
                what: "alloca",
                problem: format!(
                    "{length} bytes: the device pool's blocks hold 1 to {large} bytes \
                     (PhysicalDeviceOptions::pool_block_sizes)"
                ),
            });
        }
        let allocation = Allocation::new(d.execution().kernarg_pool(), length)?;
        self.add(waits, signals, EntryWork::Alloca(&allocation))?;
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
        let id = self.add(waits, signals, EntryWork::Dealloca(allocation))?;
        self.inner.request(SchedulerActions::INCOMING)?;
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
        let mut b = crate::CommandBufferBuilder::new(&self.inner.execution(), 2)?;
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
        let plan = SubmissionPlan::new(buffer, bindings, &self.inner.execution())?;
        self.add(waits, signals, EntryWork::Execute(&plan))
    }

    /// Writes one entry into the mailbox, of the kind `work` says. The
    /// caller requests the tick.
    fn add(
        &self,
        waits: &[SemaphoreValue<'_>],
        signals: &[SemaphoreValue<'_>],
        work: EntryWork<'_>,
    ) -> Result<u64> {
        let d = &*self.inner;
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
        let plan = work.plan();
        let state_at = lists.next_multiple_of(64);
        let size = state_at + plan.map_or(0, SubmissionPlan::size);
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
        let state = d.state();
        let id = state.write_index().load(Relaxed, System);
        // Room: a mailbox slot and kernarg space, both freed by ticks. A
        // retire asks for no tick, so ask for one (again after a
        // millisecond without progress).
        let mut wait = RoomWait::new(DEFAULT_SPACE_TIMEOUT);
        let mut asked: Option<(Instant, u64)> = None;
        let (offset, ring_end) = loop {
            let retired = state.retire_index().load(Acquire, System);
            let read = state.kernarg().read_offset().load(Acquire, System);
            p.ring.release_to(read);
            if id - retired < d.capacity
                && let Some(r) = p.ring.reserve(size)
            {
                break r;
            }
            d.check_control()?;
            if asked.is_none_or(|(at, seen)| seen == retired && at.elapsed() > RETIRE_NUDGE) {
                asked = Some((Instant::now(), retired));
                d.request(SchedulerActions::RETIRE)?;
            }
            wait.check(|waited| Error::Timeout {
                what: format!(
                    "room in the scheduler's mailbox and kernarg ring ({})",
                    d.describe()
                ),
                condition: ">=",
                expected: size as i64,
                observed: p.ring.room() as i64,
                waited,
            })?;
            wait.pause();
        };
        let ring = p.ring.storage().clone();
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
        let slot = d.entry(id);
        let mut e = QueueEntry::new_zeroed();
        e.kind = work.kind();
        if let Some(plan) = plan {
            e.execution = base + state_at;
            plan.write(
                &ring,
                o + state_at as usize,
                &SubmissionTarget {
                    kernels: &d.kernels,
                    queue: &d.execution(),
                    mode: d.mode,
                    signal: SignalHandle::NULL,
                    entry_packets: 0,
                    entry: slot.device_address(),
                },
            );
        }
        if let EntryWork::Alloca(a) | EntryWork::Dealloca(a) = work {
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
        // The slot is free (its previous entry was reclaimed: the loop
        // above checked the retire index); nothing reads it until the
        // write index below says so.
        slot.set(e);
        p.ring.commit(ring_end);
        let keep = waits
            .iter()
            .chain(signals)
            .map(|(s, _)| s.keep_alive())
            .chain(work.allocation().map(Allocation::keep_alive))
            .collect();
        d.held.lock().unwrap_or_else(|p| p.into_inner()).insert(
            id,
            Held {
                buffer: work.buffer().cloned(),
                _keep_alive: keep,
            },
        );
        state.write_index().store(id + 1, Release, System);
        Ok(id)
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
        let id = self.queue.add(waits, signals, EntryWork::Barrier)?;
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
        self.queue.inner.request(SchedulerActions::INCOMING)
    }
}

impl Drop for Batch<'_> {
    /// Announces what was not: an entry in the mailbox is never lost.
    fn drop(&mut self) {
        let _ = self.announce();
    }
}
