//! A block's issue as the work-items share it: which command each takes
//! (the block's issue order), the fast path below the block's vouched
//! dispatches and the checked path from there, and the serial issue, in
//! which one work-item issues the whole block
//! ([`Execution::serial_threshold`](aqueduct_abi::command::Execution::serial_threshold)).

use aqueduct_abi::global::load_u32;

use super::error::IssueError;
use super::issuer::BlockIssuer;

impl BlockIssuer<'_> {
    /// Commands in the block.
    pub fn command_count(&self) -> u32 {
        self.commands.len() as u32
    }

    /// The command work-item `g` (below [`BlockIssuer::command_count`])
    /// issues: `g`, or the block's issue order's entry `g`.
    pub fn command_for(&self, g: u32) -> u32 {
        if self.order == 0 {
            return g;
        }
        // SAFETY: the issue state's view vouches for the block: its order
        // holds `command_count` u32s (4-byte aligned: checked in `new`,
        // vouched for in `trusted`); a block's command count is below 2^30
        // (it fits the command offsets of `issue_vouched`), so the offset
        // fits 32 bits, which lets the global load take the order's address
        // as the wave's.
        unsafe { load_u32(self.order + u64::from(4 * g)) }
    }

    /// Issues every command of the block, one after the other, in this
    /// work-item (the serial issue).
    pub fn issue_serially(&self) -> Result<(), IssueError> {
        for g in 0..self.command_count() {
            self.issue_work_item(g)?;
        }
        Ok(())
    }

    /// Whether work-items `0..end` all take the fast path
    /// ([`BlockIssuer::issue_work_item`]): `end` at most the block's
    /// vouched dispatches.
    #[inline(always)]
    pub fn all_vouched(&self, end: u32) -> bool {
        end <= self.vouched
    }

    /// Issues the command work-item `g` (below
    /// [`BlockIssuer::command_count`]) takes ([`BlockIssuer::command_for`]):
    /// the fast path ([`BlockIssuer::issue_vouched`]) below the block's
    /// vouched dispatches, [`BlockIssuer::issue`] from there.
    #[inline(always)]
    pub fn issue_work_item(&self, g: u32) -> Result<(), IssueError> {
        let index = self.command_for(g);
        if g < self.vouched {
            self.issue_vouched(index);
            return Ok(());
        }
        self.issue(index)
    }
}
