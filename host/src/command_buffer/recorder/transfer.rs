//! Recording fills, copies, updates and barriers, and finishing a
//! recording.

use aqueduct_abi::command::{
    BarrierCommand, BufferRef, COMMAND_BUFFER_MAGIC, COMMAND_SIZE, Command, CommandBlockHeader,
    CommandBufferHeader, CommandFlags, CommandHeader, CommandOpcode, CommandView, CopyArgs,
    CopyCommand, FillArgs, FillCommand, IssueShape, UpdateCommand,
};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

use crate::error::{Error, Result};

use super::super::error::{CommandError, UPDATE_MAX};
use super::super::recorded::{CommandBuffer, Recorded, RecordedBlock};
use super::CommandBufferBuilder;

/// Fill pattern sizes, in bytes.
pub const PATTERN_SIZES: [usize; 5] = [1, 2, 4, 8, 16];

impl CommandBufferBuilder {
    /// Records a fill of `target` with `pattern` (1, 2, 4, 8 or 16 bytes;
    /// the length a whole number of patterns).
    pub fn fill(&mut self, target: BufferRef, pattern: &[u8]) -> Result<u32> {
        const KIND: &str = "fill";
        self.pending_needs.clear();
        let problem = if !PATTERN_SIZES.contains(&pattern.len()) {
            Some("a pattern is 1, 2, 4, 8 or 16 bytes")
        } else if !target.length.is_multiple_of(pattern.len() as u64) {
            Some("the length is not a whole number of patterns")
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(self.refuse(
                KIND,
                CommandError::Pattern {
                    pattern: pattern.len(),
                    length: target.length,
                    problem,
                },
            ));
        }
        self.check_ref(&target, 1, "a fill target")
            .map_err(|e| self.refuse(KIND, e))?;
        let header = self.claim(KIND, CommandOpcode::FILL, size_of::<FillArgs>() as u32)?;
        let mut f = FillCommand::new_zeroed();
        f.header = header;
        f.target = target;
        f.pattern[..pattern.len()].copy_from_slice(pattern);
        f.pattern_length = pattern.len() as u8;
        Ok(self.append_bytes(f.as_bytes(), 1, size_of::<FillArgs>() as u32))
    }

    /// Records a copy of `source` to `target` (equal lengths, any
    /// alignment, not overlapping).
    pub fn copy(&mut self, source: BufferRef, target: BufferRef) -> Result<u32> {
        const KIND: &str = "copy";
        self.pending_needs.clear();
        if source.length != target.length {
            return Err(self.refuse(
                KIND,
                CommandError::CopyLength {
                    source_length: source.length,
                    target_length: target.length,
                },
            ));
        }
        self.check_ref(&source, 1, "a copy source")
            .map_err(|e| self.refuse(KIND, e))?;
        self.check_ref(&target, 1, "a copy target")
            .map_err(|e| self.refuse(KIND, e))?;
        let header = self.claim(KIND, CommandOpcode::COPY, size_of::<CopyArgs>() as u32)?;
        let mut c = CopyCommand::new_zeroed();
        c.header = header;
        c.source = source;
        c.target = target;
        Ok(self.append_bytes(c.as_bytes(), 1, size_of::<CopyArgs>() as u32))
    }

    /// Records a write of `data`, kept with the recording, to `target`
    /// (whose length is `data`'s).
    pub fn update(&mut self, target: BufferRef, data: &[u8]) -> Result<u32> {
        const KIND: &str = "update";
        self.pending_needs.clear();
        if data.is_empty() || data.len() > UPDATE_MAX {
            return Err(self.refuse(KIND, CommandError::UpdateLength(data.len())));
        }
        let target = BufferRef {
            length: data.len() as u64,
            ..target
        };
        self.check_ref(&target, 1, "an update target")
            .map_err(|e| self.refuse(KIND, e))?;
        let header = self.claim(KIND, CommandOpcode::UPDATE, size_of::<CopyArgs>() as u32)?;
        let source = self.arena.put(data, 16)?;
        let mut u = UpdateCommand::new_zeroed();
        u.header = header;
        u.source_data = source;
        u.target = target;
        Ok(self.append(u.into()))
    }

    /// Records an execution barrier: later commands start after every
    /// earlier one completed, with the current ordering's fence scopes.
    pub fn barrier(&mut self) -> Result<u32> {
        self.pending_needs.clear();
        let mut header = self.claim("barrier", CommandOpcode::BARRIER, 0)?;
        header.flags = CommandFlags::BARRIER;
        let mut b = BarrierCommand::new_zeroed();
        b.header = header;
        Ok(self.append(b.into()))
    }

    /// Ends the current block with a RETURN if it has no control command
    /// yet, checks that every block ends in one and that every branch
    /// target exists, and hands over the recording.
    pub fn finish(mut self) -> Result<CommandBuffer> {
        if !self.cur().ended {
            self.ret()?;
        }
        let count = self.blocks.len() as u32;
        let mut recorded = Vec::new();
        for index in 0..self.blocks.len() {
            let b = &self.blocks[index];
            if !b.ended {
                return Err(Error::InvalidArgument {
                    what: "command buffer",
                    problem: format!("block {index} does not end in a branch or return"),
                });
            }
            let last = 64 + COMMAND_SIZE * (b.count as usize - 1);
            let control =
                Command::read_from_bytes(&b.storage[last..last + COMMAND_SIZE]).map_err(|_| {
                    Error::InvalidArgument {
                        what: "command buffer",
                        problem: "unreadable command".into(),
                    }
                })?;
            let targets = match control.view() {
                Ok(CommandView::Branch(c)) => vec![c.target_block],
                Ok(CommandView::CondBranch(c)) => vec![c.true_block, c.false_block],
                _ => Vec::new(),
            };
            if let Some(&t) = targets.iter().find(|&&t| t >= count) {
                return Err(Error::Command {
                    block: index as u32,
                    index: b.count - 1,
                    kind: "branch",
                    problem: CommandError::Target {
                        target: t,
                        blocks: count,
                    },
                });
            }
            // The issue order: the dispatches the recorder vouches for
            // first, then the others grouped by kind (stably), so each
            // wave of the block-issue kernel runs one kind's code. Without
            // it, the vouched dispatches the block starts with.
            let vouched = |i: u32| {
                let header = 64 + COMMAND_SIZE * i as usize;
                let shape = core::mem::offset_of!(CommandHeader, issue_shape);
                let shape =
                    u16::from_le_bytes([b.storage[header + shape], b.storage[header + shape + 1]]);
                IssueShape(shape).is_vouched()
            };
            let (issue_order, vouched_count) = if self.sort_by_kind {
                // A counting sort, stable: key 0 for the vouched, then
                // 1 + the opcode.
                let key = |i: u32| {
                    if vouched(i) {
                        0
                    } else {
                        1 + usize::from(b.storage[64 + COMMAND_SIZE * i as usize])
                    }
                };
                let mut starts = [0u32; 258];
                for i in 0..b.count {
                    starts[key(i) + 1] += 1;
                }
                let vouched_count = starts[1];
                for k in 1..starts.len() {
                    starts[k] += starts[k - 1];
                }
                let mut order = vec![0u32; b.count as usize];
                for i in 0..b.count {
                    let k = key(i);
                    order[starts[k] as usize] = i;
                    starts[k] += 1;
                }
                (self.arena.put(order.as_bytes(), 16)?, vouched_count)
            } else {
                (0, (0..b.count).take_while(|&i| vouched(i)).count() as u32)
            };
            let b = &mut self.blocks[index];
            let header = CommandBlockHeader {
                block_index: index as u32,
                command_count: b.count,
                packet_count: b.packets,
                kernarg_size: b.kernarg_size,
                issue_order,
                vouched_count,
                reserved0: 0,
                reserved: [0; 4],
            };
            b.storage[..64].copy_from_slice(header.as_bytes());
        }
        // The command buffer header and its block list.
        let mut head = CommandBufferHeader::new_zeroed();
        head.magic = COMMAND_BUFFER_MAGIC;
        head.abi_version = aqueduct_abi::ABI_VERSION;
        head.block_count = count;
        head.entry_block = 0;
        head.binding_count = self.slot_sizes.len() as u32;
        head.max_block_packet_count = self.blocks.iter().map(|b| b.packets).max().unwrap_or(0);
        head.max_block_kernarg_size = self
            .blocks
            .iter()
            .map(|b| b.kernarg_size)
            .max()
            .unwrap_or(0);
        let mut bytes = vec![0u8; 64 + 8 * self.blocks.len()];
        let at = self.arena.put(&bytes, 64)?;
        head.blocks = at + 64;
        bytes[..64].copy_from_slice(head.as_bytes());
        for (k, b) in self.blocks.iter().enumerate() {
            bytes[64 + 8 * k..72 + 8 * k].copy_from_slice(&b.storage.address().to_le_bytes());
        }
        self.arena.overwrite(at, &bytes)?;
        for b in self.blocks {
            recorded.push(RecordedBlock {
                commands: b.count,
                packets: b.packets,
                kernarg_size: b.kernarg_size,
                storage: b.storage,
            });
        }
        Ok(CommandBuffer {
            inner: std::sync::Arc::new(Recorded {
                header: at,
                blocks: recorded,
                arena: self.arena,
                kernels: self
                    .infos
                    .iter()
                    .map(|&(_, at, _)| at)
                    .zip(self.kernels)
                    .collect(),
                slot_sizes: self.slot_sizes,
                agent: self.agent,
            }),
        })
    }
}
