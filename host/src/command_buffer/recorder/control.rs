//! Recording the control commands that end a block: branches,
//! conditional branches, returns.

use aqueduct_abi::aql::FenceScope;
use aqueduct_abi::command::{
    BranchCommand, BranchCondition, BufferRef, Command, CommandFlags, CommandHeader, CommandOpcode,
    CondBranchCommand, IssueShape, ReturnCommand,
};
use zerocopy::FromZeros;

use crate::error::Result;

use super::super::error::CommandError;
use super::CommandBufferBuilder;

impl CommandBufferBuilder {
    /// The header of the current block's control command, in its reserved
    /// last slot (or any free slot before it).
    fn control_header(&self, opcode: CommandOpcode) -> Result<CommandHeader> {
        const KIND: &str = "control";
        if self.cur().ended {
            return Err(self.refuse(
                KIND,
                CommandError::BlockFull {
                    capacity: self.capacity,
                },
            ));
        }
        Ok(CommandHeader {
            opcode,
            flags: CommandFlags::BARRIER,
            acquire_scope: FenceScope::AGENT,
            release_scope: if opcode == CommandOpcode::RETURN {
                FenceScope::SYSTEM
            } else {
                FenceScope::AGENT
            },
            packet_offset: self.cur().packets,
            packet_count: 1,
            issue_shape: IssueShape::NONE,
            kernarg_offset: self.cur().kernarg_size,
        })
    }

    /// Ends the current block with a branch to block `target` (recorded
    /// or still to add: checked at [`CommandBufferBuilder::finish`]); the
    /// next block issues once everything before the branch is done.
    pub fn branch(&mut self, target: u32) -> Result<u32> {
        self.pending_needs.clear();
        let header = self.control_header(CommandOpcode::BRANCH)?;
        let mut c = BranchCommand::new_zeroed();
        c.header = header;
        c.target_block = target;
        Ok(self.end_block(c.into()))
    }

    /// Ends the current block with a conditional branch: to `if_true` when
    /// the 8 bytes at `condition`, read once everything before the branch
    /// is done, compare `cond` with `value` (as signed or unsigned
    /// integers, per the condition), else to `if_false`.
    pub fn cond_branch(
        &mut self,
        condition: BufferRef,
        cond: BranchCondition,
        value: u64,
        if_true: u32,
        if_false: u32,
    ) -> Result<u32> {
        const KIND: &str = "conditional branch";
        self.pending_needs.clear();
        if !cond.is_known() {
            return Err(self.refuse(KIND, CommandError::Condition(cond.0)));
        }
        let condition = BufferRef {
            length: 8,
            ..condition
        };
        self.check_ref(&condition, 8, "a branch condition")
            .map_err(|e| self.refuse(KIND, e))?;
        let header = self.control_header(CommandOpcode::COND_BRANCH)?;
        let mut c = CondBranchCommand::new_zeroed();
        c.header = header;
        c.condition = condition;
        c.cond = cond;
        c.value = value as i64;
        c.true_block = if_true;
        c.false_block = if_false;
        Ok(self.end_block(c.into()))
    }

    /// Ends the current block with a RETURN: the submission completes once
    /// everything before it is done (system-scope release, so the host sees
    /// every result).
    pub fn ret(&mut self) -> Result<u32> {
        self.pending_needs.clear();
        let header = self.control_header(CommandOpcode::RETURN)?;
        let mut r = ReturnCommand::new_zeroed();
        r.header = header;
        Ok(self.end_block(r.into()))
    }

    /// Appends the control command and marks the block ended.
    fn end_block(&mut self, command: Command) -> u32 {
        let index = self.append(command);
        self.blocks[self.current].ended = true;
        index
    }
}
