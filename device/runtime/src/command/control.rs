//! The control kernels' work: where a branch goes ([`branch_target`]),
//! the issue of the block it goes to ([`issue_block`], and
//! [`dispatch_block`] for the scheduler's tick), and the patch of an
//! INDIRECT_DYNAMIC dispatch ([`patch_dispatch`]).
//!
//! ```text
//!   BRANCH / COND_BRANCH ──► cmd_branch ──► target block
//!       small block:  reserve its packets, issue it here, serially
//!       else:         reserve 1 + its packets, publish a dispatch of
//!                     cmd_block_issue in the first, which fills the rest
//!   INDIRECT_DYNAMIC ──► cmd_patch_dispatch (barrier bit) ──► read the
//!       count now, write the grid, publish the real packet (or a no-op)
//! ```

use aqueduct_abi::atomic::{Release, System};
use aqueduct_abi::command::{
    BranchCommand, BufferRefKind, Command, CommandOpcode, CondBranchCommand, Execution, PatchArgs,
};
use aqueduct_abi::hsa::PacketSlot;
use aqueduct_abi::packet::{KernelDispatch, Ordering};
use aqueduct_abi::view::View;

use crate::queue::Queue;

use super::ISSUE_WORKGROUP;
use super::checked::resolve;
use super::error::{IssueError, check_aligned};
use super::issuer::BlockIssuer;

/// The addresses a patch kernel's arguments name, checked for the
/// alignment of what they point at: the workgroup count (4) and the
/// packet slot (64).
pub fn patch_targets(args: &PatchArgs) -> Result<(u64, u64), IssueError> {
    Ok((
        check_aligned(args.count, 4)?,
        check_aligned(args.packet, 64)?,
    ))
}

/// The patch kernel's work: reads an INDIRECT_DYNAMIC dispatch's workgroup
/// count now (`count`), writes the grid into its packet (`slot`, whose
/// body the issue wrote, header INVALID) and publishes it with a
/// system-scope release store; a count of 0 in a used dimension makes the
/// slot a barrier-AND that waits for nothing, with the command's ordering.
/// Counts beyond the dispatch's dimensions are ignored.
pub fn patch_dispatch(
    args: &PatchArgs,
    count: View<'_, [u32; 3]>,
    slot: View<'_, PacketSlot>,
) -> Result<(), IssueError> {
    let count = count.get();
    let dims = usize::from(args.dimensions).clamp(1, 3);
    let mut grid = [1u32; 3];
    let mut empty = false;
    for axis in 0..dims {
        empty |= count[axis] == 0;
        grid[axis] = count[axis]
            .checked_mul(u32::from(args.workgroup_size[axis]))
            .ok_or(IssueError::Grid {
                count,
                size: args.workgroup_size,
            })?;
    }
    // The slot's 64 bytes are ours until published.
    let body = slot.body();
    let first_word = if empty {
        // A barrier-AND's body is all zeros: no dependencies, no signal.
        for word in 0..body.len() {
            if let Some(w) = body.get(word) {
                w.set(0);
            }
        }
        u32::from(args.no_op_header)
    } else {
        // grid_size_x/y/z at bytes 12, 16 and 20: body dwords 2, 3, 4.
        for (axis, &g) in grid.iter().enumerate() {
            if let Some(w) = body.get(2 + axis) {
                w.set(g);
            }
        }
        args.first_word
    };
    slot.first_word().store(first_word, Release, System);
    Ok(())
}

/// The block a BRANCH or COND_BRANCH continues with: its target, or for a
/// conditional one the true or false block by the value in memory now.
pub fn branch_target(
    execution: View<'_, Execution>,
    command: View<'_, Command>,
) -> Result<u32, IssueError> {
    let opcode = command.header().opcode().get();
    match opcode {
        CommandOpcode::BRANCH => Ok(command.as_kind::<BranchCommand>().target_block().get()),
        CommandOpcode::COND_BRANCH => {
            let c = command.as_kind::<CondBranchCommand>();
            // Every block's issue state holds the submission's binding table.
            check_aligned(execution.issues().get(), 64)?;
            let issue = execution
                .issue_states()
                .get(0)
                .ok_or(IssueError::NoCommand { index: 0, count: 0 })?;
            check_aligned(issue.binding_table().address(), 8)?;
            let table = issue.binding_table().get();
            let condition = c.condition().get();
            if condition.kind == BufferRefKind::ALLOCATION {
                check_aligned(condition.address, 8)?;
            }
            if condition.length < 8 {
                return Err(IssueError::Length {
                    need: 8,
                    have: condition.length,
                });
            }
            let memory = resolve(&condition, table)?.read::<u64>()?;
            let taken = c
                .cond()
                .get()
                .holds(memory, c.value().get() as u64)
                .ok_or(IssueError::Opcode(opcode.0))?;
            Ok(if taken {
                c.true_block().get()
            } else {
                c.false_block().get()
            })
        }
        _ => Err(IssueError::Opcode(opcode.0)),
    }
}

/// Issues block `target` of the submission `execution`: reserves its
/// packets plus one in the execution queue (waiting for room, calling
/// `pause` between looks), records the first block packet in the block's
/// issue state, and publishes a dispatch of the block-issue kernel in the
/// extra slot before them; the issue kernel then fills the rest. A block of
/// at most [`Execution::serial_threshold`] commands is issued here instead,
/// serially, into exactly its reserved packets, with no issue dispatch.
/// Rings the doorbell for all of them.
pub fn issue_block(
    execution: View<'_, Execution>,
    target: u32,
    mut pause: impl FnMut(),
) -> Result<(), IssueError> {
    issue_block_with::<true>(execution, target, || {
        pause();
        true
    })
}

/// [`issue_block`] without the serial issue: always the block-issue
/// dispatch, whatever the block's size. For the scheduler's tick, which
/// must stay a small kernel (the serial issue is the whole command
/// translation). `pause` returning false gives up the wait for room
/// ([`QueueError::Abandoned`](crate::queue::QueueError::Abandoned)).
pub fn dispatch_block(
    execution: View<'_, Execution>,
    target: u32,
    pause: impl FnMut() -> bool,
) -> Result<(), IssueError> {
    issue_block_with::<false>(execution, target, pause)
}

/// [`issue_block`], with the serial path only if `SERIAL`.
#[inline(always)]
fn issue_block_with<const SERIAL: bool>(
    execution: View<'_, Execution>,
    target: u32,
    pause: impl FnMut() -> bool,
) -> Result<(), IssueError> {
    check_aligned(execution.command_buffer().raw(), 64)?;
    let header = execution.command_buffer().get();
    let block_count = header.block_count().get();
    if target >= block_count {
        return Err(IssueError::NoCommand {
            index: target,
            count: block_count,
        });
    }
    check_aligned(header.blocks().address(), 8)?;
    let entry = header
        .blocks()
        .get()
        .get(u64::from(target))
        .ok_or(IssueError::NoCommand {
            index: target,
            count: block_count,
        })?
        .block();
    check_aligned(entry.raw(), 64)?;
    let block = entry.get().get();
    let queue = Queue::new(execution.queue().get()).map_err(IssueError::Queue)?;
    check_aligned(execution.issues().get(), 64)?;
    let issue = execution
        .issue_states()
        .get(u64::from(target))
        .ok_or(IssueError::NoCommand {
            index: target,
            count: block_count,
        })?;
    if SERIAL && block.command_count <= execution.serial_threshold().get() {
        // A small block: issued here, serially, without a block-issue
        // dispatch, into exactly its reserved packets. A block has at
        // least its control command's packet; a slot reserved and never
        // published would stall the queue.
        if block.packet_count == 0 {
            return Err(IssueError::Packets {
                offset: 0,
                count: 0,
                block: 0,
            });
        }
        let count = u64::from(block.packet_count);
        let first = queue
            .reserve_until(count, pause)
            .map_err(IssueError::Queue)?;
        // The block's issue state is read by no one else now (its previous
        // issue completed before the branch that runs this).
        issue.packet_base().set(first);
        let issuer = BlockIssuer::new_written(issue)?;
        issuer.issue_serially()?;
        queue.ring_doorbell(first.wrapping_add(count - 1));
        return Ok(());
    }
    let args = check_aligned(execution.issue_args().get(), 16)? + 16 * u64::from(target);
    let packet = KernelDispatch {
        ordering: Ordering::AGENT,
        ..KernelDispatch::linear(
            execution.issue_kernel().get(),
            args,
            block.command_count.max(1),
            ISSUE_WORKGROUP,
        )
    }
    .build_unchecked()?;
    let first = queue
        .reserve_until(1 + u64::from(block.packet_count), pause)
        .map_err(IssueError::Queue)?;
    // The block's issue state is not read by anyone until the packet below
    // is published (its previous issue completed before the branch that
    // runs this).
    issue.packet_base().set(first.wrapping_add(1));
    queue.write(first, &packet);
    queue.ring_doorbell(first.wrapping_add(u64::from(block.packet_count)));
    Ok(())
}
