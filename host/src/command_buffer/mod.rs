//! Command buffers: record once into device memory, issue on the device.
//!
//! A [`CommandBufferBuilder`] writes each command straight into a block in
//! memory the GPU reads ([`aqueduct_abi::command`]: a 64-byte block header,
//! then 128-byte commands), after checking it as the device would: kernel
//! arguments against the kernel's metadata, the launch against the
//! kernel's and the agent's limits, buffer ranges, alignment, fill
//! patterns, the block's capacity, branch targets. A refused command is an
//! [`Error::Command`](crate::Error::Command) naming its block and index; the recording keeps no
//! command and no binding-slot need of it (data it put before the refusal
//! stays unused in the recording's memory).
//!
//! Buffers are [`BufferRef`]s: a direct address, a binding-table slot, or a
//! queue-ordered allocation handle. Slots are bound per submission, so one
//! recording runs on other buffers without being recorded again.
//!
//! A [`CommandQueue`] submits a finished [`CommandBuffer`]: it reserves one
//! packet slot for the block-issue kernel plus the entry block's packets in
//! the execution queue, reserves the submission's issue states and kernel
//! arguments in its kernarg ring, and dispatches `cmd_block_issue` (the
//! device library), one work-item per command; each writes its command's
//! packets into the reserved slots. A block ends in a branch, a conditional
//! branch or a return. A branch's packet runs the device library's
//! `cmd_branch` once everything before it is done, which reserves the next
//! block's packets and dispatches its issue; the RETURN decrements the
//! submission's signal: one submit, one wait, whatever the number of
//! commands and blocks. [`IssueMode`] can have blocks issued serially
//! instead: by one work-item (`cmd_block_issue_serial`) for the entry
//! block, by the branch itself for the others.
//!
//! A direct dispatch with workgroups gets its AQL packet built here, at
//! record time; the issue copies it with the kernarg address filled in.
//!
//! ```text
//!   queue:  [issue][cmd 0][cmd 1] ... [branch] [issue][cmd 0] ... [return]
//!            barrier  written by the issue      (reserved by cmd_branch)
//!   ring:   [Execution][issue args × blocks][BlockIssue × blocks][binding table]
//!           [block 0's kernargs][block 1's kernargs] ...
//! ```
//!
//! Each block's kernel arguments have a fixed place for the whole
//! submission: a block issues again only after a branch with the barrier
//! bit, so after its previous issue's packets completed.
//!
//! Kernel arguments: only what the kernel's metadata asks for. A kernel
//! with hidden arguments gets exactly those, filled at record time from the
//! launch; one that needs the queue pointer, or hidden counts with an
//! indirect workgroup count, is refused (neither is known when recording).
//!
//! The device scheduler ([`crate::scheduler`]) submits the same command

//! buffers from the device, with this module's layout of their state.
//!
//! The rooms:
//!
//! | module | what it holds |
//! |---|---|
//! | [`recorder`] | [`CommandBufferBuilder`]: recording blocks of commands, each checked |
//! | [`recorded`] | [`CommandBuffer`]: a finished recording, and what a fault's packet was |
//! | [`submission`] | a submission's layout in the kernarg ring, its checks, [`IssueMode`] and [`Submission`] |
//! | [`queue`] | [`CommandQueue`]: submitting command buffers to an AQL queue directly |
//! | `kernarg_ring` | the kernarg ring a submission's state is reserved in |
//! | `arena` | the recording's own device memory |
//! | [`error`] | [`CommandError`]: why a command was refused |

mod arena;
pub mod error;
mod kernarg_ring;
pub mod queue;
pub mod recorded;
pub mod recorder;
pub mod submission;

pub use aqueduct_abi::command::{
    AllocationHandle, BindingPatch, BindingTableEntry, BranchCondition, BufferRef, BufferRefKind,
    Command, CommandBlockHeader, CommandView, DispatchCommand, FAST_ARGUMENT_BYTES, FAST_PATCHES,
    IssueShape, MAX_BINDING_SLOTS,
};
pub use aqueduct_abi::packet::Ordering;
pub use error::{CommandError, UPDATE_MAX};
pub(crate) use kernarg_ring::KernargProducer;
pub use queue::CommandQueue;
pub use recorded::CommandBuffer;
pub use recorder::transfer::PATTERN_SIZES;
pub use recorder::{CommandBufferBuilder, MAX_BLOCK_PACKETS, Workgroups};
pub use submission::{ISSUE_WORKGROUP, IssueMode, SERIAL_THRESHOLD, Submission};
pub(crate) use submission::{IssueKernels, SubmissionPlan, SubmissionTarget};
