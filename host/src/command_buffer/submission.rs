//! Submitting a command buffer: the checks a submission passes (agent,
//! binding table, queue size), its state's layout in a kernarg ring
//! (execution, each block's issue argument and issue state, the binding
//! table, the blocks' kernel arguments), how its blocks are issued
//! ([`IssueMode`]), and the [`Submission`] a host waits on — with the
//! command a fault stopped at.
//!
//! The device scheduler writes the same layout into its own kernarg ring
//! (`SubmissionPlan::write` with a `SubmissionTarget` naming its
//! entry); [`crate::command_buffer::CommandQueue`] writes it for a host
//! submission.

use std::time::Duration;

use aqueduct_abi::command::{
    BindingTableEntry, BlockIssue, BranchArgs, CopyArgs, Execution, FillArgs, MAX_BINDING_SLOTS,
    PatchArgs,
};
use aqueduct_abi::hsa::{SignalCondition, SignalHandle};
use zerocopy::{FromZeros, IntoBytes};

use crate::error::{Error, Result};
use crate::executable::{Executable, Kernel};
use crate::memory::HostBuffer;
use crate::queue::Queue;
use crate::signal::{LoadOrder, Signal};

use super::kernarg_ring::SharedBytes;
use super::recorded::CommandBuffer;
use super::recorder::kernel_info;

/// Work-items per workgroup of the block-issue kernel: its launch bound
/// (`aqueduct_device::command::ISSUE_WORKGROUP`).
pub const ISSUE_WORKGROUP: u16 = 64;

/// A submitted command buffer: wait for it with [`Submission::wait`].
#[must_use = "a submission is only known complete after wait()"]
pub struct Submission {
    pub(super) queue: Queue,
    pub(super) signal: Signal,
    /// The recording, alive while the device may read it.
    pub(super) buffer: CommandBuffer,
    /// The kernarg ring, and where this submission's block issue states
    /// are in it (their packet bases say where each block's packets went).
    pub(super) ring: std::sync::Arc<SharedBytes>,
    pub(super) issues_at: usize,
}

impl Submission {
    /// Waits until the block's RETURN completed (everything before it is
    /// done and visible to the host), or fails on a queue fault or timeout.
    ///
    /// A fault names the command whose packet the queue stopped at
    /// ([`Error::CommandFault`]): its index and, for a dispatch, the kernel.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        match self
            .queue
            .wait(&self.signal, SignalCondition::LT, 1, timeout)
        {
            Ok(_) => Ok(()),
            Err(fault @ Error::QueueFault { .. }) => Err(self.blame(fault)),
            Err(e) => Err(e),
        }
    }

    /// The command the queue stopped at ([`CommandBuffer::blame`]).
    fn blame(&self, fault: Error) -> Error {
        self.buffer.blame(
            self.ring.address() + self.issues_at as u64,
            self.queue.read_index(),
            fault,
        )
    }

    /// Whether the block's RETURN completed.
    pub fn is_done(&self) -> bool {
        self.signal.load(LoadOrder::Acquire) < 1
    }
}

/// How a submission's blocks are issued on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssueMode {
    /// The measured default: branches issue blocks of at most
    /// [`SERIAL_THRESHOLD`] commands themselves, the rest go through the
    /// block-issue kernel.
    Auto,
    /// Every block through the block-issue kernel (`cmd_block_issue`), one
    /// work-item per command.
    Parallel,
    /// Every block issued serially by one work-item: the entry block by
    /// `cmd_block_issue_serial`, the others by the branch that continues
    /// with them (for debugging: commands issue one at a time, in the
    /// block's issue order, grouped by kind unless
    /// [`CommandBufferBuilder::set_sort_by_kind`](crate::CommandBufferBuilder::set_sort_by_kind) turned that off).
    Serial,
    /// A branch issues a block of at most this many commands itself,
    /// serially, saving the block-issue dispatch (to tune on hardware,
    /// where a dispatch's launch costs what the simulator cannot show).
    SerialUpTo(u32),
}

/// The largest block [`IssueMode::Auto`] has a branch issue serially: 0,
/// measured. `cargo xtask cmdbuf-bench` runs chains of N-command blocks
/// both ways: for every N from 1 to 6 the serial issue executes more
/// wave-instructions (gfx942, N = 1: about 1,150 against 650 for the
/// branch plus the issue dispatch), and saves 0.9 dispatches per block, whose
/// launch cost only hardware shows. Until a hardware run says otherwise,
/// blocks go through the block-issue kernel.
pub const SERIAL_THRESHOLD: u32 = 0;

impl IssueMode {
    /// [`Execution::serial_threshold`] for this mode.
    fn serial_threshold(self) -> u32 {
        match self {
            Self::Auto => SERIAL_THRESHOLD,
            Self::Parallel => 0,
            Self::Serial => u32::MAX,
            Self::SerialUpTo(n) => n,
        }
    }
}

/// The device library's kernels a command buffer's issue dispatches: the
/// block-issue kernels, and the fill, copy, control and patch kernels'
/// infos, in kernarg memory, 64 bytes each.
pub(crate) struct IssueKernels {
    pub(crate) issue: Kernel,
    /// `cmd_block_issue_serial`, the entry block's issue in
    /// [`IssueMode::Serial`].
    pub(crate) serial: Kernel,
    infos: HostBuffer<u8>,
    _kernels: [Kernel; 4],
}

impl IssueKernels {
    /// The kernels of `library`, their infos in `queue`'s kernarg pool.
    pub(crate) fn new(queue: &Queue, library: &Executable) -> Result<Self> {
        let issue = library.kernel("cmd_block_issue")?;
        let serial = library.kernel("cmd_block_issue_serial")?;
        let fill = library.kernel("blit_fill")?;
        let copy = library.kernel("blit_copy")?;
        let control = library.kernel("cmd_branch")?;
        let patch = library.kernel("cmd_patch_dispatch")?;
        for (kernel, want) in [
            (&fill, size_of::<FillArgs>()),
            (&copy, size_of::<CopyArgs>()),
            (&control, size_of::<BranchArgs>()),
            (&patch, size_of::<PatchArgs>()),
        ] {
            if kernel.kernarg_segment_size() as usize > want.next_multiple_of(16) {
                return Err(Error::InvalidArgument {
                    what: "command queue",
                    problem: format!(
                        "{} takes {} bytes of arguments, the issue writes {want}",
                        kernel.name(),
                        kernel.kernarg_segment_size()
                    ),
                });
            }
        }
        let mut infos = queue.kernarg_pool().alloc_host::<u8>(256)?;
        for (k, kernel) in [&fill, &copy, &control, &patch].into_iter().enumerate() {
            infos[64 * k..64 * k + 64].copy_from_slice(kernel_info(kernel).as_bytes());
        }
        Ok(Self {
            issue,
            serial,
            infos,
            _kernels: [fill, copy, control, patch],
        })
    }
}

/// Refuses a queue larger than the device library issues into
/// ([`aqueduct_abi::aql_ring::MAX_QUEUE_PACKETS`]).
pub(super) fn check_queue_size(queue: &Queue) -> Result<()> {
    let max = aqueduct_abi::aql_ring::MAX_QUEUE_PACKETS;
    if queue.size() > max {
        return Err(Error::InvalidArgument {
            what: "queue",
            problem: format!(
                "{} packets: the device library issues into queues of at most {max}",
                queue.size()
            ),
        });
    }
    Ok(())
}

/// Checks a submission of `buffer` with `bindings` to `queue`: the agent,
/// every binding slot the commands use, the queue's size.
fn check_submission(
    buffer: &CommandBuffer,
    bindings: &[BindingTableEntry],
    queue: &Queue,
) -> Result<()> {
    if buffer.inner.agent.handle() != queue.agent().handle() {
        return Err(Error::InvalidArgument {
            what: "submit",
            problem: format!(
                "the command buffer was recorded for {}, the queue is on {}",
                buffer.inner.agent.info().name,
                queue.agent().info().name
            ),
        });
    }
    check_queue_size(queue)?;
    if bindings.len() > MAX_BINDING_SLOTS as usize {
        return Err(Error::InvalidArgument {
            what: "binding table",
            problem: format!(
                "{} slots, more than the {MAX_BINDING_SLOTS} a submission binds",
                bindings.len()
            ),
        });
    }
    for (slot, &need) in buffer.inner.slot_sizes.iter().enumerate() {
        let problem = match bindings.get(slot) {
            None => Some(format!(
                "slot {slot} is not bound ({} bound)",
                bindings.len()
            )),
            Some(b) if b.length < need => Some(format!(
                "slot {slot} holds {} bytes, the commands reach {need}",
                b.length
            )),
            Some(b) if b.address % 16 != 0 => Some(format!(
                "slot {slot} at {:#x} is not 16-byte aligned",
                b.address
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            return Err(Error::InvalidArgument {
                what: "binding table",
                problem,
            });
        }
    }
    let slots = u64::from(buffer.packets()) + 1;
    if slots + 1 > u64::from(queue.size()) {
        return Err(Error::InvalidArgument {
            what: "submit",
            problem: format!(
                "a block needs {slots} packet slots at once (and its branch one more), the queue holds {}",
                queue.size()
            ),
        });
    }
    Ok(())
}

/// A command buffer checked for a submission with its binding table
/// (agent, bindings, queue size: [`check_submission`]) and where its state
/// goes: what a submitter writes into a kernarg ring. The device scheduler
/// and [`CommandQueue`](super::CommandQueue) submit through it.
pub(crate) struct SubmissionPlan<'a> {
    buffer: &'a CommandBuffer,
    bindings: &'a [BindingTableEntry],
    layout: SubmissionLayout,
}

impl<'a> SubmissionPlan<'a> {
    /// `buffer` with `bindings`, checked for a submission to `queue`.
    pub(crate) fn new(
        buffer: &'a CommandBuffer,
        bindings: &'a [BindingTableEntry],
        queue: &Queue,
    ) -> Result<Self> {
        check_submission(buffer, bindings, queue)?;
        Ok(Self {
            buffer,
            bindings,
            layout: SubmissionLayout::of(buffer, bindings),
        })
    }

    /// The command buffer.
    pub(crate) fn buffer(&self) -> &'a CommandBuffer {
        self.buffer
    }

    /// Bytes of kernarg ring the submission's state takes.
    pub(crate) fn size(&self) -> u64 {
        self.layout.size
    }

    /// Where its state goes.
    pub(crate) fn layout(&self) -> &SubmissionLayout {
        &self.layout
    }

    /// Writes the submission's state at offset `o` of `ring`, for `t`.
    pub(crate) fn write(&self, ring: &SharedBytes, o: usize, t: &SubmissionTarget<'_>) {
        self.layout.write(ring, o, self.buffer, self.bindings, t);
    }
}

/// Where a submission's state goes in its kernarg reservation: the
/// execution state, each block's issue-kernel argument and issue state, the
/// binding table, then each block's kernel arguments (64-byte aligned
/// each). Offsets from the reservation's start.
pub(crate) struct SubmissionLayout {
    pub(crate) issue_args_at: u64,
    pub(crate) issues_at: u64,
    table_at: u64,
    args_at: Vec<u64>,
    /// Bytes in all.
    pub(crate) size: u64,
}

/// Who runs a submission: what [`SubmissionLayout::write`] puts in its
/// execution and issue states.
pub(crate) struct SubmissionTarget<'a> {
    pub(crate) kernels: &'a IssueKernels,
    pub(crate) queue: &'a Queue,
    pub(crate) mode: IssueMode,
    /// The signal the RETURN decrements (null: none).
    pub(crate) signal: SignalHandle,
    /// The entry block's first packet if the host reserved them (0: the
    /// device reserves them).
    pub(crate) entry_packets: u64,
    /// The scheduler's entry (0: none).
    pub(crate) entry: u64,
}

impl SubmissionLayout {
    pub(crate) fn of(buffer: &CommandBuffer, bindings: &[BindingTableEntry]) -> Self {
        let blocks = &buffer.inner.blocks;
        let issue_args_at = 64;
        let issues_at = (issue_args_at + 16 * blocks.len() as u64).next_multiple_of(64);
        let table_at = issues_at + 128 * blocks.len() as u64;
        // Room for one entry at least: a vouched dispatch without
        // bindings reads slot 0 ([`BindingPatch::FILLER`]).
        let table_bytes = (size_of::<BindingTableEntry>() * bindings.len().max(1)) as u64;
        let mut args_at = Vec::with_capacity(blocks.len());
        let mut end = (table_at + table_bytes).next_multiple_of(64);
        for b in blocks {
            args_at.push(end);
            end = (end + u64::from(b.kernarg_size)).next_multiple_of(64);
        }
        Self {
            issue_args_at,
            issues_at,
            table_at,
            args_at,
            size: end,
        }
    }

    /// Writes the submission's state at offset `o` of `ring`.
    pub(crate) fn write(
        &self,
        ring: &SharedBytes,
        o: usize,
        buffer: &CommandBuffer,
        bindings: &[BindingTableEntry],
        t: &SubmissionTarget<'_>,
    ) {
        let base = ring.address() + o as u64;
        let infos = t.kernels.infos.address();
        let mut execution = Execution::new_zeroed();
        execution.command_buffer = buffer.inner.header;
        execution.issues = base + self.issues_at;
        execution.issue_args = base + self.issue_args_at;
        // The device's own issue of the entry block dispatches this kernel
        // (it leaves nothing to issue serially).
        execution.issue_kernel = if t.entry != 0 && t.mode == IssueMode::Serial {
            t.kernels.serial.object()
        } else {
            t.kernels.issue.object()
        };
        execution.queue = t.queue.address();
        execution.serial_threshold = t.mode.serial_threshold();
        execution.entry = t.entry;
        ring.write(o, execution.as_bytes());
        for (k, b) in buffer.inner.blocks.iter().enumerate() {
            let issue_at = base + self.issues_at + 128 * k as u64;
            let mut issue = BlockIssue::new_zeroed();
            issue.block = b.storage.address();
            issue.queue = t.queue.address();
            // The entry block's packets may be reserved already; whoever
            // reserves a block's packets sets its base.
            issue.packet_base = if k == 0 { t.entry_packets } else { 0 };
            issue.kernarg_base = base + self.args_at[k];
            issue.binding_table = base + self.table_at;
            issue.binding_count = bindings.len() as u32;
            issue.completion_signal = t.signal;
            issue.fill_kernel = infos;
            issue.copy_kernel = infos + 64;
            issue.control_kernel = infos + 128;
            issue.patch_kernel = infos + 192;
            issue.execution = base;
            ring.write(
                o + (self.issues_at + 128 * k as u64) as usize,
                issue.as_bytes(),
            );
            ring.write(
                o + (self.issue_args_at + 16 * k as u64) as usize,
                &issue_at.to_le_bytes(),
            );
        }
        ring.write(o + self.table_at as usize, bindings.as_bytes());
    }
}
