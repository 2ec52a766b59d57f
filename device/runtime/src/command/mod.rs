//! Command-buffer issue: one command of a recorded block ([`aqueduct_abi::command`])
//! turned into its AQL packets in the execution queue.
//!
//! The block-issue kernel (`cmd_block_issue` in `kernels.rs`) runs one work-item
//! per command, in any order; each issues its own command
//! ([`BlockIssuer::issue_work_item`]: the fast path for a dispatch the
//! recorder vouched for, else the checked [`BlockIssuer::issue`]) and looks
//! at no other. In the serial issue
//! ([`Execution::serial_threshold`](aqueduct_abi::command::Execution::serial_threshold)) one work-item issues a block's commands
//! one after another in its issue order ([`BlockIssuer::issue_serially`]):
//! `cmd_block_issue_serial` for a submission's entry block, or the branch
//! continuing with a small block itself ([`issue_block`]).
//!
//! ```text
//!   command i ──► resolve its buffers (direct / binding table / allocation handle)
//!             ──► write its kernel arguments at kernarg_base + kernarg_offset
//!             ──► write its packet bodies at packet_base + packet_offset ..
//!             ──► publish each header last (system-scope release store)
//! ```
//!
//! What each command becomes:
//!
//! | command  | packet                                                        |
//! |----------|---------------------------------------------------------------|
//! | DISPATCH | a kernel dispatch of its kernel, arguments from the template with the bindings patched in: a direct one with workgroups copies the packet the host prepared ([`DispatchCommand::packet`](aqueduct_abi::command::DispatchCommand::packet)) with the kernarg address filled in, the others build it here; INDIRECT_STATIC reads the workgroup count here |
//! | DISPATCH, INDIRECT_DYNAMIC | two: a dispatch of the patch kernel (`cmd_patch_dispatch`, [`PatchArgs`](aqueduct_abi::command::PatchArgs), barrier bit), then the dispatch's packet, written but not published: the patch reads the count when it runs and publishes it ([`patch_dispatch`]) |
//! | FILL     | a dispatch of the library's `blit_fill` ([`FillArgs`](aqueduct_abi::command::FillArgs))        |
//! | COPY, UPDATE | a dispatch of `blit_copy` ([`CopyArgs`](aqueduct_abi::command::CopyArgs)); UPDATE copies from the recording's own data |
//! | BARRIER  | a barrier-AND without dependencies, barrier bit set           |
//! | BRANCH, COND_BRANCH | a dispatch of the control kernel (`cmd_branch`, [`BranchArgs`](aqueduct_abi::command::BranchArgs), barrier bit), which picks the next block ([`branch_target`]) and issues it ([`issue_block`]) |
//! | RETURN   | a barrier-AND, barrier bit set, that decrements the issue's completion signal; under the device scheduler ([`Execution::entry`](aqueduct_abi::command::Execution::entry)) a dispatch of the control kernel instead, which retires the entry ([`crate::scheduler::retire`]) and decrements the signal too |
//!
//! A dispatch with no work (a workgroup count of 0, a blit of 0 bytes) still
//! publishes its slot, as a barrier-AND with the command's ordering: the
//! packet processor never waits on a hole. Every packet takes the command's
//! fence scopes and, with
//! [`CommandFlags::BARRIER`](aqueduct_abi::command::CommandFlags::BARRIER), the
//! barrier bit.
//!
//! The checked path ([`BlockIssuer::issue`]) checks a command's fields
//! against the block (its packets and arguments inside the block's
//! reservation) and its buffer references against what they resolve to;
//! the host validated the same at record time, so a failure here means
//! corrupted memory or a stale recording, and the kernel traps before
//! publishing the failing command's packets (a serial issue has published
//! the commands before it). Packet fields a recorded dispatch gives (grid,
//! workgroup, LDS) are not checked against an agent's limits again: the
//! host did, and the packet processor checks what reaches it. A
//! binding-table reference of a dispatch's arguments is not checked against
//! the slot's length here either: the submission checked the table against
//! every slot's need when it bound it (its `BindingPatch` carries no
//! length), and the issue only adds the offset.
//!
//! The common command takes a fast path that checks nothing
//! ([`BlockIssuer::issue_vouched`]): a direct dispatch the recorder vouched
//! for ([`IssueShape`](aqueduct_abi::command::IssueShape)), which it
//! checked and laid out so that every such dispatch, whatever its kernel,
//! is issued by one code without a branch: a 64-byte template, four binding
//! patches, a 64-byte share of the block's arguments. The recorder orders
//! them first in the block's issue order and counts them
//! (`CommandBlockHeader::vouched_count`), so the block-issue kernel's
//! work-items below the count take the fast path without looking at their
//! command, and a workgroup all of whose work-items do decides so with one
//! scalar branch. It clamps every write into the block's reservations, so a
//! damaged command (the block header and issue order intact) writes only
//! inside them ([`BlockIssuer::issue_vouched`] says what it can still do
//! wrong). Values the
//! whole wave shares are read with scalar loads, and per-lane accesses take
//! 32-bit offsets from them ([`crate::memory`]).
//!
//! This is plain Rust over [views](aqueduct_abi::view) of the recording
//! and the issue state: the host tests run it on host memory, the kernel
//! on the GPU's. What a view cannot describe is written through a few raw
//! stores at the reservations' edge: a command's kernel arguments into
//! its share of the block's kernarg reservation, its packets into the
//! ring ([`crate::queue`]), each after the check (or, on the fast path,
//! the clamp) that keeps it inside.
//!
//! The rooms:
//!
//! | module      | what it holds                                                          |
//! |-------------|------------------------------------------------------------------------|
//! | [`error`]   | [`IssueError`]: why a command could not be issued                       |
//! | [`issuer`]  | [`BlockIssuer`]: one block's issue as a work-item sees it, read once from the issue state |
//! | [`fast`]    | the fast path: a dispatch the recorder vouched for, one code without a branch |
//! | [`checked`] | the checked path: every command kind, each field checked, and the pure translations (buffer references, packets) the host shares |
//! | [`block`]   | a work-item's choice between the two, and the serial issue of a block  |
//! | [`control`] | the control kernels' work: branches, the next block's issue, the indirect dispatch's patch |

pub mod block;
pub mod checked;
pub mod control;
pub mod error;
pub mod fast;
pub mod issuer;

#[cfg(test)]
mod tests;

pub use checked::{Packet, blit_packet, dispatch_packet, packets_of, pattern_words, resolve};
pub use control::{branch_target, dispatch_block, issue_block, patch_dispatch};
pub use error::IssueError;
pub use issuer::BlockIssuer;

/// Work-items per workgroup of a blit dispatch.
pub const BLIT_WORKGROUP: u16 = 256;

/// Most work-items a blit dispatch launches; larger blits grid-stride.
pub const BLIT_MAX_ITEMS: u64 = 1 << 20;

/// Work-items per workgroup of the block-issue kernel (its launch bound in
/// `xtask`'s device build).
pub const ISSUE_WORKGROUP: u16 = 64;
