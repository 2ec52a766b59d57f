//! [`CommandQueue`]: command buffers submitted by the host straight to an
//! AQL queue, without the device scheduler: the entry block's issue
//! dispatch and its packets reserved here, the submission's state in the
//! queue's own kernarg ring, released in submission order.

use std::collections::VecDeque;
use std::time::Duration;

use aqueduct_abi::command::BindingTableEntry;
use aqueduct_abi::hsa::SignalCondition;
use aqueduct_abi::packet::{KernelDispatch, Ordering};

use crate::error::{Error, Result};
use crate::executable::Executable;
use crate::queue::{DEFAULT_SPACE_TIMEOUT, Queue, RoomWait};
use crate::signal::{LoadOrder, Signal};

use super::kernarg_ring::KernargProducer;
use super::recorded::CommandBuffer;
use super::submission::{
    ISSUE_WORKGROUP, IssueKernels, IssueMode, Submission, SubmissionPlan, SubmissionTarget,
    check_queue_size,
};

/// An execution queue that runs command buffers: the device library's
/// issue, blit and control kernels, and a kernarg ring for the blocks'
/// arguments and issue states.
pub struct CommandQueue {
    queue: Queue,
    kernels: IssueKernels,
    mode: IssueMode,
    ring: KernargProducer,
    /// Submissions whose ring space is not released yet: their signal and
    /// the write position after them.
    pending: VecDeque<(Signal, u64)>,
}

impl CommandQueue {
    /// Command buffers on `queue`, issued by `library` (the device library
    /// loaded on the queue's agent), with `ring_bytes` of kernarg ring.
    pub fn new(queue: &Queue, library: &Executable, ring_bytes: usize) -> Result<Self> {
        check_queue_size(queue)?;
        let kernels = IssueKernels::new(queue, library)?;
        let storage = queue
            .kernarg_pool()
            .alloc_host::<u8>(ring_bytes.next_multiple_of(64).max(4096))?;
        Ok(Self {
            queue: queue.clone(),
            kernels,
            mode: IssueMode::Auto,
            ring: KernargProducer::new(storage),
            pending: VecDeque::new(),
        })
    }

    /// The execution queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// How later submissions' blocks are issued ([`IssueMode::Auto`]
    /// unless set).
    pub fn set_issue_mode(&mut self, mode: IssueMode) -> &mut Self {
        self.mode = mode;
        self
    }

    /// The issue mode of later submissions.
    pub fn issue_mode(&self) -> IssueMode {
        self.mode
    }

    /// Releases the ring space of finished submissions, in order.
    fn reclaim(&mut self) {
        while let Some((signal, end)) = self.pending.front() {
            if signal.load(LoadOrder::Acquire) >= 1 {
                break;
            }
            self.ring.release_to(*end);
            self.pending.pop_front();
        }
    }

    /// Submits `buffer` with `bindings` (at least as many slots as it uses,
    /// each at least as large as its commands reference, 16-byte aligned).
    /// Waits up to the queue's default timeout for ring and queue space.
    pub fn submit(
        &mut self,
        buffer: &CommandBuffer,
        bindings: &[BindingTableEntry],
    ) -> Result<Submission> {
        let plan = SubmissionPlan::new(buffer, bindings, &self.queue)?;
        let inner = &buffer.inner;
        let size = plan.size();
        if size > self.ring.capacity() {
            return Err(Error::InvalidArgument {
                what: "submit",
                problem: format!(
                    "the submission needs {size} bytes of kernel arguments and issue state, the ring holds {}",
                    self.ring.capacity()
                ),
            });
        }
        let mut wait = RoomWait::new(DEFAULT_SPACE_TIMEOUT);
        let (offset, ring_end) = loop {
            self.reclaim();
            if let Some(r) = self.ring.reserve(size) {
                break r;
            }
            wait.check(|waited| Error::Timeout {
                what: "room in the kernarg ring".into(),
                condition: ">=",
                expected: size as i64,
                observed: self.ring.room() as i64,
                waited,
            })?;
            // The oldest submission's end frees room: wait on it, not the
            // clock.
            if let Some((signal, _)) = self.pending.front() {
                self.queue
                    .wait(signal, SignalCondition::LT, 1, Duration::from_millis(10))
                    .or_else(|e| match e {
                        Error::Timeout { .. } => Ok(0),
                        e => Err(e),
                    })?;
            } else {
                wait.pause();
            }
        };
        let base = self.ring.storage().address() + offset;
        let o = offset as usize;
        let signal = Signal::new(self.queue.agent().system(), 1)?;
        // The issue kernel's slot and exactly the entry block's packets: a
        // slot reserved here and not written would stall the queue.
        let entry_slots = 1 + inner.blocks[0].packets;
        let mut reservation = self.queue.reserve(entry_slots, DEFAULT_SPACE_TIMEOUT)?;
        let entry_packets = reservation.first_id() + 1;
        plan.write(
            self.ring.storage(),
            o,
            &SubmissionTarget {
                kernels: &self.kernels,
                queue: &self.queue,
                mode: self.mode,
                signal: signal.handle(),
                entry_packets,
                entry: 0,
            },
        );
        let issues_at = plan.layout().issues_at;
        let issue_args_at = plan.layout().issue_args_at;
        let entry = &inner.blocks[0];
        let (kernel, items, workgroup) = if self.mode == IssueMode::Serial {
            (&self.kernels.serial, 1, 1)
        } else {
            (&self.kernels.issue, entry.commands.max(1), ISSUE_WORKGROUP)
        };
        let packet = KernelDispatch {
            ordering: Ordering::AGENT.with_barrier(),
            ..KernelDispatch::linear(kernel.object(), base + issue_args_at, items, workgroup)
        }
        .build(self.queue.limits())?;
        reservation.emplace(&packet)?;
        reservation.leave_to_device();
        self.ring.commit(ring_end);
        self.pending.push_back((signal.clone(), ring_end));
        Ok(Submission {
            queue: self.queue.clone(),
            signal,
            buffer: buffer.clone(),
            ring: self.ring.storage().clone(),
            issues_at: o + issues_at as usize,
        })
    }
}
