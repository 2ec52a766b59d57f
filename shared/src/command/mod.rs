//! aqueduct's command buffers: the in-memory program the device scheduler
//! issues as AQL packets.
//!
//! # Shape
//!
//! A command buffer ([`CommandBufferHeader`]) is a set of basic blocks. Each
//! block is a [`CommandBlockHeader`] followed, in the same allocation, by
//! `command_count` fixed-size [`Command`]s (128 bytes, 64-byte aligned) and
//! ends in a control command (branch, conditional branch or return).
//! Commands are recorded straight into device memory by the host.
//!
//! # One work-item, one command
//!
//! The block-issue kernel runs one work-item per command, in any order. Each
//! command therefore carries everything needed to produce its packets, with
//! no look at any other command:
//!
//! - [`CommandHeader::packet_offset`] / [`CommandHeader::packet_count`]: the
//!   command's packets are at `packet_base + packet_offset ..` of the range
//!   the scheduler reserved in the execution queue for the block
//!   ([`CommandBlockHeader::packet_count`] packets in all);
//! - [`CommandHeader::kernarg_offset`]: its kernel arguments go at
//!   `kernarg_base + kernarg_offset` of the block's kernarg reservation
//!   ([`CommandBlockHeader::kernarg_size`] bytes in all, each command's part
//!   16-byte aligned);
//! - buffers are [`BufferRef`]s, resolved at issue time against the
//!   submission's binding table or a queue-ordered allocation handle, so a
//!   recording can be replayed with other buffers;
//! - a dispatch names its kernel by a [`KernelInfo`] the device already holds;
//!   a direct one also carries its packet, prepared at record time
//!   ([`DispatchCommand::packet`]), which the issue copies.
//!
//! The issue kernel writes every packet body, then publishes each header with
//! a release store; the doorbell may be rung before all headers are in place
//! (AQL lets the processor wait for a slot's type to turn valid).
//!
//! # Rooms
//!
//! | module | what it holds |
//! |---|---|
//! | here | the buffer ([`CommandBufferHeader`]) and its blocks ([`CommandBlockHeader`], [`BlockAddress`]) |
//! | [`refs`] | buffers as commands name them: [`BufferRef`], [`BindingTableEntry`], [`BindingPatch`] |
//! | [`commands`] | [`CommandHeader`], [`Command`] and its kinds, [`KernelInfo`], a dispatch's packet |
//! | [`issue`] | a submission's issue state ([`Execution`], [`BlockIssue`]) and the issue kernels' arguments |
//!
//! Versioned by [`crate::ABI_VERSION`].

pub mod commands;
pub mod issue;
pub mod refs;

pub use commands::{
    BarrierCommand, BranchCommand, BranchCondition, Command, CommandFlags, CommandHeader,
    CommandLayout, CommandOpcode, CommandView, CondBranchCommand, CopyCommand, DispatchCommand,
    DispatchFlags, DispatchPacketError, FAST_ARGUMENT_BYTES, FAST_PATCHES, FillCommand, IssueShape,
    KernelInfo, ReturnCommand, UpdateCommand,
};
pub use issue::{BlockIssue, BranchArgs, CopyArgs, Execution, FillArgs, PatchArgs};
pub use refs::{
    AllocationHandle, BindingPatch, BindingTableEntry, BufferRef, BufferRefKind, MAX_BINDING_SLOTS,
};

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::view::{List, ListOf, Plain, Ref, View};

/// Bytes of every command.
pub const COMMAND_SIZE: usize = 128;

/// Bytes of a block's [`CommandBlockHeader`], which its commands follow.
pub const BLOCK_HEADER_SIZE: u64 = size_of::<CommandBlockHeader>() as u64;

/// `b"AQCB"` little-endian: marks a [`CommandBufferHeader`].
pub const COMMAND_BUFFER_MAGIC: u32 = u32::from_le_bytes(*b"AQCB");

/// Alignment of each command's share of the kernarg reservation (AQL
/// requires 16-byte-aligned kernarg segments).
pub const KERNARG_ALIGN: u32 = 16;

layout! {
    /// An element of a command buffer's block list
    /// ([`CommandBufferHeader::blocks`]): one block's address.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BlockAddress {
        /// Device address of the block's [`CommandBlockHeader`].
        pub block: u64 = 0 => Ref<CommandBlockHeader>,
    }
    size = 8,
    align = 8,
    why = "the block list is an array of u64 addresses the control kernel indexes (aqueduct ABI: \
           change it with ABI_VERSION)";
}

layout! {
    /// The whole command buffer, at the address a submission names.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct CommandBufferHeader {
        /// [`COMMAND_BUFFER_MAGIC`]; anything else is refused.
        pub magic: u32 = 0 => Plain,
        /// [`crate::ABI_VERSION`] of the recorder; a mismatch is refused.
        pub abi_version: u32 = 4 => Plain,
        /// Number of blocks.
        pub block_count: u32 = 8 => Plain,
        /// Index of the block execution starts at.
        pub entry_block: u32 = 12 => Plain,
        /// Binding table slots the commands use (the submission must bind at
        /// least this many).
        pub binding_count: u32 = 16 => Plain,
        /// Largest `packet_count` of any block: what the scheduler must be able
        /// to reserve in one go.
        pub max_block_packet_count: u32 = 20 => Plain,
        /// Largest `kernarg_size` of any block.
        pub max_block_kernarg_size: u32 = 24 => Plain,
        /// Keeps `blocks` 8-byte aligned; written as zero.
        pub reserved0: u32 = 28,
        /// Device address of `[u64; block_count]`: each block's address.
        pub blocks: u64 = 32 => ListOf<BlockAddress>[block_count: u32],
        /// Pads the header to one 64-byte line; written as zero.
        pub reserved: [u64; 3] = 40,
    }
    size = 64,
    align = 64,
    why = "one 64-byte line at the address a submission names; magic and abi_version stay at bytes \
           0 and 4 in every ABI_VERSION so the device can refuse another version's recording, and \
           the rest changes only with ABI_VERSION";
}

layout! {
    /// A basic block; its commands follow it directly in memory (command `i` at
    /// `block + 64 + 128 * i`).
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct CommandBlockHeader {
        /// This block's index in the command buffer.
        pub block_index: u32 = 0 => Plain,
        /// Commands in the block, the last one a control command.
        pub command_count: u32 = 4 => Plain,
        /// AQL packets the block's commands emit in all (the sum of their
        /// `packet_count`s): the range the scheduler reserves.
        pub packet_count: u32 = 8 => Plain,
        /// Kernarg bytes the block's commands need in all.
        pub kernarg_size: u32 = 12 => Plain,
        /// Device address of `[u32; command_count]`, the order in which the
        /// block-issue kernel's work-items take the commands (work-item `g`
        /// issues command `issue_order[g]`): the vouched dispatches
        /// ([`CommandBlockHeader::vouched_count`]) first, then grouped by kind,
        /// so that each wave runs one kind's code without divergence. 0:
        /// work-item `g` issues command `g`.
        pub issue_order: u64 = 16 => Plain,
        /// The first `vouched_count` commands in the issue order are
        /// dispatches the recorder vouches for ([`IssueShape`]), which the
        /// issue kernel's work-items below it take without looking at what
        /// kind of command they have (the recorder orders them first).
        pub vouched_count: u32 = 24 => Plain,
        /// Written as zero.
        pub reserved0: u32 = 28,
        /// Pads the header to one 64-byte line, so commands start at
        /// `block + 64`; written as zero.
        pub reserved: [u64; 4] = 32,
    }
    size = 64,
    align = 64,
    why = "exactly one 64-byte line, so command i of a block sits at block + 64 + 128 * i; the \
           scheduler reads the block's totals here (aqueduct ABI: change it with ABI_VERSION)";
}

/// Most commands a block holds: the issue kernel addresses a command with
/// a 32-bit offset from its block.
pub const MAX_BLOCK_COMMANDS: u32 = (u32::MAX - 64) / COMMAND_SIZE as u32;

impl<'a> View<'a, CommandBlockHeader> {
    /// The block's commands: `command_count` of them right after the
    /// header (the recorder lays them out so).
    #[inline(always)]
    pub fn commands(self) -> List<'a, Command> {
        let count = self.command_count().get();
        // SAFETY: the view's contract: a block header is followed by its
        // `command_count` commands (this layout's docs).
        unsafe { List::from_raw(self.device_address() + BLOCK_HEADER_SIZE, u64::from(count)) }
    }

    /// `packet_count` and `kernarg_size`, read as the wave's values with
    /// one scalar load of the eight bytes they share (what every issuing
    /// wave reads; two loads where one does cost each wave an instruction).
    #[inline(always)]
    pub fn sizes_invariant(self) -> (u32, u32) {
        const PACKETS: usize = core::mem::offset_of!(CommandBlockHeader, packet_count);
        const _: () = assert!(
            PACKETS.is_multiple_of(8)
                && core::mem::offset_of!(CommandBlockHeader, kernarg_size) == PACKETS + 4,
            "packet_count and kernarg_size share one aligned 8-byte word"
        );
        // SAFETY: the word at `PACKETS` is the two plain u32 fields
        // (asserted above), 8-byte aligned.
        let word = unsafe { self.word_at::<u64>(PACKETS) }.load_invariant();
        (word as u32, (word >> 32) as u32)
    }

    /// [`commands`](Self::commands), the count read as the wave's value
    /// ([`PlainField::load_invariant`](crate::view::PlainField::load_invariant)).
    #[inline(always)]
    pub fn commands_invariant(self) -> List<'a, Command> {
        let count = self.command_count().load_invariant();
        // SAFETY: as in `commands`.
        unsafe { List::from_raw(self.device_address() + BLOCK_HEADER_SIZE, u64::from(count)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aql::FenceScope;
    use zerocopy::FromZeros;

    fn header(opcode: CommandOpcode) -> CommandHeader {
        CommandHeader {
            opcode,
            flags: CommandFlags::BARRIER,
            acquire_scope: FenceScope::AGENT,
            release_scope: FenceScope::SYSTEM,
            packet_offset: 3,
            packet_count: 1,
            issue_shape: IssueShape::NONE,
            kernarg_offset: 48,
        }
    }

    #[test]
    fn commands_round_trip_and_view_by_opcode() {
        let mut d = DispatchCommand::new_zeroed();
        d.header = header(CommandOpcode::DISPATCH);
        d.kernel = 0x7000_0040;
        d.workgroup_count = [10, 2, 1];
        d.workgroup_size = [64, 1, 1];
        d.dimensions = 2;
        d.dispatch_flags = DispatchFlags::INDIRECT_STATIC;
        d.workgroup_count_ref = BufferRef::binding(4, 16, 12);
        let c = Command::from(d);
        assert_eq!(c.as_bytes(), d.as_bytes());
        assert_eq!(c.view(), Ok(CommandView::Dispatch(&d)));
        assert!(!c.is_control());
        assert_eq!(
            &c.as_bytes()[72..76],
            &2u32.to_le_bytes(),
            "BINDING kind at 72"
        );

        let mut f = FillCommand::new_zeroed();
        f.header = header(CommandOpcode::FILL);
        f.target = BufferRef::direct(0x9000, 4096);
        f.pattern[..4].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        f.pattern_length = 4;
        let c = Command::from(f);
        assert_eq!(c.view(), Ok(CommandView::Fill(&f)));
        assert_eq!(Command::read_from_bytes(c.as_bytes()).unwrap(), c);

        let mut r = ReturnCommand::new_zeroed();
        r.header = header(CommandOpcode::RETURN);
        assert!(Command::from(r).is_control());

        let zeroed = Command::new_zeroed();
        assert_eq!(zeroed.view(), Err(CommandOpcode(0)));
    }

    #[test]
    fn branch_conditions_compare_signed_and_unsigned() {
        let minus_one = u64::MAX;
        let cases = [
            (BranchCondition::EQ, 3, 3, true),
            (BranchCondition::NE, 3, 3, false),
            (BranchCondition::LT, minus_one, 0, true),
            (BranchCondition::ULT, minus_one, 0, false),
            (BranchCondition::LE, 5, 5, true),
            (BranchCondition::GT, 0, minus_one, true),
            (BranchCondition::UGT, 0, minus_one, false),
            (BranchCondition::GE, 4, 5, false),
            (BranchCondition::UGE, minus_one, 5, true),
            (BranchCondition::ULE, 6, 5, false),
        ];
        for (cond, memory, value, want) in cases {
            assert_eq!(
                cond.holds(memory, value),
                Some(want),
                "{cond:?} {memory} {value}"
            );
        }
        assert_eq!(BranchCondition(10).holds(0, 0), None);
    }

    /// The fast layout holds 1 to 4 argument units and up to 4 bindings;
    /// the shape keeps both, with the vouching bit.
    #[test]
    fn issue_shapes_hold_what_the_fast_layout_does() {
        assert_eq!(IssueShape::NONE.0, 0);
        assert!(!IssueShape::NONE.is_vouched());
        for units in 1..=4 {
            for bindings in 0..=4 {
                let shape = IssueShape::new(units, bindings).unwrap();
                assert!(shape.is_vouched());
                assert_eq!((shape.units(), shape.bindings()), (units, bindings));
            }
        }
        assert_eq!(IssueShape::new(0, 1), None);
        assert_eq!(IssueShape::new(5, 1), None);
        assert_eq!(IssueShape::new(4, 5), None);
        assert_eq!(FAST_ARGUMENT_BYTES / KERNARG_ALIGN, 4);
    }

    /// A dispatch's arguments fit the fast layout only as
    /// `fast_arguments` says; `issue_shape` vouches only for a direct,
    /// prepared, aligned dispatch whose arguments fit.
    #[test]
    fn only_a_prepared_dispatch_whose_arguments_fit_is_vouched_for() {
        let bind = |place: u16| BindingPatch::binding(1, 0, place);
        assert!(DispatchCommand::fast_arguments(24, &[bind(0), bind(8)]));
        assert!(DispatchCommand::fast_arguments(64, &[bind(56)]));
        assert!(DispatchCommand::fast_arguments(56, &[]));
        assert!(
            !DispatchCommand::fast_arguments(60, &[]),
            "no room for the filler"
        );
        assert!(!DispatchCommand::fast_arguments(0, &[]), "no arguments");
        assert!(
            !DispatchCommand::fast_arguments(72, &[bind(0)]),
            "five units"
        );
        assert!(
            !DispatchCommand::fast_arguments(24, &[bind(0); 5]),
            "five bindings"
        );
        assert!(
            !DispatchCommand::fast_arguments(24, &[bind(4)]),
            "misaligned"
        );
        assert!(
            !DispatchCommand::fast_arguments(24, &[bind(24)]),
            "past the arguments"
        );
        assert!(
            !DispatchCommand::fast_arguments(24, &[BindingPatch::allocation(0x1000, 0)]),
            "an allocation"
        );
        assert_eq!(
            BindingPatch::FILLER.kernarg_offset,
            (FAST_ARGUMENT_BYTES - 8) as u16
        );

        let patches = [bind(0), bind(16)];
        let mut d = DispatchCommand::new_zeroed();
        d.header = header(CommandOpcode::DISPATCH);
        d.kernarg_size = 24;
        d.kernarg_template = 0x1_0000;
        d.binding_count = 2;
        d.bindings = 0x2_0000;
        d.packet = 0x3_0000;
        assert_eq!(d.issue_shape(&patches), IssueShape::new(2, 2).unwrap());
        type Edit = fn(&mut DispatchCommand);
        let edits: [(&str, Edit); 10] = [
            ("opcode", |d| d.header.opcode = CommandOpcode::FILL),
            ("two packets", |d| d.header.packet_count = 2),
            ("arguments misplaced", |d| d.header.kernarg_offset = 8),
            ("indirect", |d| {
                d.dispatch_flags = DispatchFlags::INDIRECT_STATIC;
            }),
            ("no packet", |d| d.packet = 0),
            ("packet misaligned", |d| d.packet += 16),
            ("no template", |d| d.kernarg_template = 0),
            ("template misaligned", |d| d.kernarg_template += 8),
            ("patches misaligned", |d| d.bindings += 8),
            ("another count", |d| d.binding_count = 1),
        ];
        for (what, edit) in edits {
            let mut e = d;
            edit(&mut e);
            assert_eq!(e.issue_shape(&patches), IssueShape::NONE, "{what}");
        }
        let mut e = d;
        e.bindings = 0;
        e.binding_count = 0;
        assert_eq!(e.issue_shape(&[]), IssueShape::NONE, "no patch list");
    }

    #[test]
    fn magic_spells_aqcb() {
        assert_eq!(&COMMAND_BUFFER_MAGIC.to_le_bytes(), b"AQCB");
    }
}
