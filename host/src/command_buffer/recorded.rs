//! A finished recording ([`CommandBuffer`]): its blocks in device memory,
//! replayable with any binding table, the kernels it keeps loaded, and
//! which command a queue's packet was (what a fault names).

use aqueduct_abi::command::{BlockIssue, COMMAND_SIZE, Command, CommandBlockHeader, CommandView};
use zerocopy::FromBytes;

use crate::error::Error;
use crate::executable::Kernel;
use crate::memory::HostBuffer;

use super::arena::Arena;

/// A finished recording: one block in device memory, replayable with any
/// binding table. Submissions keep it alive until they complete.
#[derive(Clone)]
pub struct CommandBuffer {
    pub(super) inner: std::sync::Arc<Recorded>,
}

pub(super) struct Recorded {
    pub(super) header: u64,
    pub(super) blocks: Vec<RecordedBlock>,
    pub(super) arena: Arena,
    /// The dispatched kernels, with their info's device address.
    pub(super) kernels: Vec<(u64, Kernel)>,
    pub(super) slot_sizes: Vec<u64>,
    pub(super) agent: crate::agent::Agent,
}

/// One recorded block.
pub(super) struct RecordedBlock {
    pub(super) storage: HostBuffer<u8>,
    pub(super) commands: u32,
    pub(super) packets: u32,
    pub(super) kernarg_size: u32,
}

impl RecordedBlock {
    /// The command whose packets include the block's packet `offset`: its
    /// index and kind (with the kernel for a dispatch, named from
    /// `kernels`).
    pub(super) fn command_at_packet(
        &self,
        offset: u32,
        kernels: &[(u64, Kernel)],
    ) -> Option<(u32, String)> {
        (0..self.commands).find_map(|index| {
            let at = 64 + COMMAND_SIZE * index as usize;
            let command = Command::read_from_bytes(&self.storage[at..at + COMMAND_SIZE]).ok()?;
            let h = command.header;
            let end = h.packet_offset + u32::from(h.packet_count);
            if !(h.packet_offset..end).contains(&offset) {
                return None;
            }
            let what = match command.view() {
                Ok(CommandView::Dispatch(d)) => {
                    let name = kernels
                        .iter()
                        .find(|(info, _)| *info == d.kernel)
                        .map_or("an unknown kernel", |(_, k)| k.name());
                    format!("dispatch of {name}")
                }
                Ok(CommandView::Fill(_)) => "fill".into(),
                Ok(CommandView::Copy(_)) => "copy".into(),
                Ok(CommandView::Update(_)) => "update".into(),
                Ok(CommandView::Barrier(_)) => "barrier".into(),
                Ok(CommandView::Branch(_)) => "branch".into(),
                Ok(CommandView::CondBranch(_)) => "conditional branch".into(),
                Ok(CommandView::Return(_)) => "return".into(),
                _ => format!("opcode {}", h.opcode.0),
            };
            Some((index, what))
        })
    }
}

impl std::fmt::Debug for CommandBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandBuffer")
            .field("blocks", &self.inner.blocks.len())
            .field("commands", &self.len())
            .field("packets", &self.packets())
            .field("kernarg_size", &self.kernarg_size())
            .field("binding_slots", &self.inner.slot_sizes.len())
            .finish()
    }
}

impl CommandBuffer {
    /// The command the queue stopped at, given its read index `at` (a
    /// faulting packet is never consumed) and the submission's issue states
    /// at `issues` (each block's packet base says where its packets went),
    /// as an [`Error::CommandFault`] around `fault`; `fault` itself when the
    /// queue stopped elsewhere.
    ///
    /// The issue states must be live: the caller keeps the ring holding
    /// them.
    pub(crate) fn blame(&self, issues: u64, at: u64, fault: Error) -> Error {
        let inner = &self.inner;
        for (b, block) in inner.blocks.iter().enumerate() {
            // The block's latest issue: its first packet, or 0 if never
            // issued.
            let base = issues
                + (size_of::<BlockIssue>() * b + std::mem::offset_of!(BlockIssue, packet_base))
                    as u64;
            // SAFETY: the caller's contract: live, host-accessible issue
            // states (8-aligned: 64-aligned states, an 8-aligned field),
            // which the device no longer writes (its queue stopped).
            let first = unsafe { std::ptr::read_volatile(base as *const u64) };
            if first == 0 {
                continue;
            }
            let found = if at == first.wrapping_sub(1) {
                Some((block.commands, "the block-issue kernel".to_string()))
            } else {
                at.checked_sub(first)
                    .filter(|&o| o < u64::from(block.packets))
                    .and_then(|o| block.command_at_packet(o as u32, &inner.kernels))
            };
            if let Some((index, what)) = found {
                return Error::CommandFault {
                    block: b as u32,
                    index,
                    what,
                    fault: Box::new(fault),
                };
            }
        }
        fault
    }

    /// Blocks recorded.
    pub fn blocks(&self) -> u32 {
        self.inner.blocks.len() as u32
    }

    /// Commands in all blocks, control commands included.
    pub fn len(&self) -> u32 {
        self.inner.blocks.iter().map(|b| b.commands).sum()
    }

    /// Whether no block holds a command.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// AQL packets of the largest block (what a queue must hold at once,
    /// with one more for its issue).
    pub fn packets(&self) -> u32 {
        self.inner
            .blocks
            .iter()
            .map(|b| b.packets)
            .max()
            .unwrap_or(0)
    }

    /// Kernel-argument bytes of all blocks: what one submission reserves.
    pub fn kernarg_size(&self) -> u32 {
        self.inner.blocks.iter().map(|b| b.kernarg_size).sum()
    }

    /// Binding-table slots the commands use, with the bytes each must hold.
    pub fn binding_sizes(&self) -> &[u64] {
        &self.inner.slot_sizes
    }

    /// Device address of the [`CommandBufferHeader`](aqueduct_abi::command::CommandBufferHeader).
    pub fn address(&self) -> u64 {
        self.inner.header
    }

    /// Block `block`'s header as the device reads it (`None` past the
    /// recording).
    pub fn block_header(&self, block: u32) -> Option<CommandBlockHeader> {
        let b = self.inner.blocks.get(block as usize)?;
        CommandBlockHeader::read_from_bytes(&b.storage[..64]).ok()
    }

    /// Command `index` of block `block` as the device reads it (`None`
    /// past the recording).
    pub fn command(&self, block: u32, index: u32) -> Option<Command> {
        let b = self.inner.blocks.get(block as usize)?;
        if index >= b.commands {
            return None;
        }
        let at = 64 + COMMAND_SIZE * index as usize;
        Command::read_from_bytes(&b.storage[at..at + COMMAND_SIZE]).ok()
    }

    /// The `len` bytes of the recording's own data (kernel-argument
    /// templates, binding patches and the allocation references they name,
    /// kernel infos, prepared packets, update data) at `address`, a device
    /// address a command names (`None` if they are not all in one of its
    /// chunks; bytes of a chunk past what was recorded read as zeros).
    pub fn data(&self, address: u64, len: usize) -> Option<&[u8]> {
        self.inner.arena.chunks.iter().find_map(|c| {
            let at = usize::try_from(address.checked_sub(c.address())?).ok()?;
            c.get(at..at.checked_add(len)?)
        })
    }
}
