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
//! Versioned by [`crate::ABI_VERSION`].

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::amd_queue::AmdQueue;
use crate::aql::{FenceScope, KernelDispatchPacket};
use crate::hsa::SignalHandle;
use crate::packet::{KernelDispatch, Ordering, PacketError, Prepared};
use crate::view::{Link, List, ListOf, Nested, Plain, Ref, View};

/// Bytes of every command.
pub const COMMAND_SIZE: usize = 128;

/// Bytes of a block's [`CommandBlockHeader`], which its commands follow.
pub const BLOCK_HEADER_SIZE: u64 = size_of::<CommandBlockHeader>() as u64;

/// `b"AQCB"` little-endian: marks a [`CommandBufferHeader`].
pub const COMMAND_BUFFER_MAGIC: u32 = u32::from_le_bytes(*b"AQCB");

/// Alignment of each command's share of the kernarg reservation (AQL
/// requires 16-byte-aligned kernarg segments).
pub const KERNARG_ALIGN: u32 = 16;

open_enum! {
    /// What a [`BufferRef`] points through.
    pub struct BufferRefKind(u32) {
        /// `address` is the buffer's device address.
        DIRECT = 0,
        /// `address` is the device address of an [`AllocationHandle`] whose
        /// `address` becomes valid when the queue-ordered allocation commits.
        ALLOCATION = 1,
        /// `slot` indexes the submission's binding table
        /// ([`BindingTableEntry`]).
        BINDING = 2,
    }
}

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
    /// A reference to a byte range of a buffer, resolved when the command issues:
    /// `base(kind) + offset .. + length`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BufferRef {
        /// How `address`/`slot` are read.
        pub kind: BufferRefKind = 0 => Plain,
        /// Binding table slot (kind `BINDING`); zero otherwise.
        pub slot: u32 = 4 => Plain,
        /// Buffer address (`DIRECT`) or allocation handle address
        /// (`ALLOCATION`); zero for `BINDING`.
        pub address: u64 = 8 => Plain,
        /// Byte offset into the buffer.
        pub offset: u64 = 16 => Plain,
        /// Byte length of the range.
        pub length: u64 = 24 => Plain,
    }
    size = 32,
    align = 8,
    why = "embedded in fill, copy, update, conditional-branch and dispatch commands, and pointed \
           at by an ALLOCATION BindingPatch, which the issue kernel reads at fixed offsets \
           (aqueduct ABI: change it with ABI_VERSION)";
}

impl BufferRef {
    /// `length` bytes at the device address `address` (kind `DIRECT`,
    /// offset 0).
    pub const fn direct(address: u64, length: u64) -> Self {
        Self {
            kind: BufferRefKind::DIRECT,
            slot: 0,
            address,
            offset: 0,
            length,
        }
    }

    /// `length` bytes at `offset` into whatever the submission binds to
    /// binding table slot `slot` (kind `BINDING`).
    pub const fn binding(slot: u32, offset: u64, length: u64) -> Self {
        Self {
            kind: BufferRefKind::BINDING,
            slot,
            address: 0,
            offset,
            length,
        }
    }

    /// `length` bytes at `offset` into a queue-ordered allocation, `handle`
    /// being the device address of its [`AllocationHandle`] (kind
    /// `ALLOCATION`).
    pub const fn allocation(handle: u64, offset: u64, length: u64) -> Self {
        Self {
            kind: BufferRefKind::ALLOCATION,
            slot: 0,
            address: handle,
            offset,
            length,
        }
    }
}

layout! {
    /// The device-side record of a queue-ordered allocation: `address` is zero
    /// until the allocation commits; commands referencing it issue only after.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct AllocationHandle {
        /// Device address of the committed allocation, or 0.
        pub address: u64 = 0 => Plain,
        /// Byte size of the allocation.
        pub length: u64 = 8 => Plain,
    }
    size = 16,
    align = 8,
    why = "the allocator writes it and the issue kernel reads it through a BufferRef of kind \
           ALLOCATION (aqueduct ABI: change it with ABI_VERSION)";
}

layout! {
    /// One slot of a submission's binding table.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BindingTableEntry {
        /// Device address of the bound buffer.
        pub address: u64 = 0 => Plain,
        /// Byte size of the bound range; a reference past it is a fault.
        pub length: u64 = 8 => Plain,
    }
    size = 16,
    align = 8,
    why = "a submission's binding table is an array of these, which the issue kernel indexes by \
           slot (aqueduct ABI: change it with ABI_VERSION)";
}

layout! {
    /// What the device knows of a loaded kernel, in device memory: a dispatch
    /// command points at one. Built by the host from the code object's metadata
    /// and kernel descriptor when it loads the code object.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct KernelInfo {
        /// Address of the kernel descriptor (the packet's `kernel_object`).
        pub kernel_object: u64 = 0 => Plain,
        /// Kernarg segment size in bytes (`.kernarg_segment_size`).
        pub kernarg_size: u32 = 8 => Plain,
        /// Kernarg segment alignment (`.kernarg_segment_align`, at least 16).
        pub kernarg_alignment: u32 = 12 => Plain,
        /// Static LDS bytes (`.group_segment_fixed_size`).
        pub group_segment_size: u32 = 16 => Plain,
        /// Scratch bytes per work-item (`.private_segment_fixed_size`).
        pub private_segment_size: u32 = 20 => Plain,
        /// Required workgroup size (`.reqd_workgroup_size`), or zeros.
        pub required_workgroup_size: [u16; 3] = 24 => Plain,
        /// Wavefront size, 32 or 64.
        pub wavefront_size: u16 = 30 => Plain,
        /// Host-assigned id for tracing (index in the loaded kernel table).
        pub trace_id: u64 = 32 => Plain,
        /// Pads the record to one 64-byte line; written as zero.
        pub reserved: [u64; 3] = 40,
    }
    size = 64,
    align = 64,
    why = "one 64-byte line the issue kernel reads for every dispatch command (aqueduct ABI: \
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

open_enum! {
    /// A command's kind. Zero is never valid, so zeroed memory is refused.
    pub struct CommandOpcode(u8) {
        /// [`DispatchCommand`].
        DISPATCH = 1,
        /// [`FillCommand`].
        FILL = 2,
        /// [`CopyCommand`].
        COPY = 3,
        /// [`UpdateCommand`].
        UPDATE = 4,
        /// [`BarrierCommand`].
        BARRIER = 5,
        /// [`BranchCommand`].
        BRANCH = 6,
        /// [`CondBranchCommand`].
        COND_BRANCH = 7,
        /// [`ReturnCommand`].
        RETURN = 8,
    }
}

flags_type! {
    /// Flags common to every command.
    pub struct CommandFlags: u8 {
        /// Set the AQL barrier bit on the command's first packet: it starts
        /// only after every earlier packet of the queue completed.
        const BARRIER = 1 << 0;
    }
}

layout! {
    /// The first 16 bytes of every command.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct CommandHeader {
        /// The command's kind, which says how the payload after this header is
        /// laid out; zero (zeroed memory) is refused.
        pub opcode: CommandOpcode = 0 => Plain,
        /// Options common to every kind (the AQL barrier bit).
        pub flags: CommandFlags = 1 => Plain,
        /// Acquire fence scope of the command's first packet.
        pub acquire_scope: FenceScope = 2 => Plain,
        /// Release fence scope of the command's last packet.
        pub release_scope: FenceScope = 3 => Plain,
        /// Index of the command's first packet within the block's reserved
        /// packet range.
        pub packet_offset: u32 = 4 => Plain,
        /// Packets the command emits: 1 for most, 2 for an indirect-dynamic
        /// dispatch (the patch dispatch, then the dispatch).
        pub packet_count: u16 = 8 => Plain,
        /// A dispatch the issue may copy and patch without checking it
        /// ([`DispatchCommand::issue_shape`]), and its shape; zero otherwise.
        pub issue_shape: IssueShape = 10 => Plain,
        /// Byte offset of the command's kernel arguments within the block's
        /// kernarg reservation; a multiple of [`KERNARG_ALIGN`].
        pub kernarg_offset: u32 = 12 => Plain,
    }
    size = 16,
    align = 4,
    why = "embedded at byte 0 of every command, whose payload starts at byte 16; the issue kernel \
           reads it before it knows the command's type (aqueduct ABI: change it with ABI_VERSION)";
}

/// Most commands a block holds: the issue kernel addresses a command with
/// a 32-bit offset from its block.
pub const MAX_BLOCK_COMMANDS: u32 = (u32::MAX - 64) / COMMAND_SIZE as u32;

/// Most binding-table slots a submission binds (and a recording
/// references): the issue kernel addresses a slot with a 32-bit offset
/// from the table, and the recorder keeps each slot's need.
pub const MAX_BINDING_SLOTS: u32 = 1 << 16;

/// Bytes of kernel arguments of a dispatch the recorder vouches for
/// ([`IssueShape`]): its template's length and its share of the block's
/// kernarg reservation.
pub const FAST_ARGUMENT_BYTES: u32 = 64;

/// Binding patches in the list of a dispatch the recorder vouches for
/// ([`IssueShape`]): its own, then copies of its last one (which write the
/// same bytes again); for a dispatch without bindings, fillers
/// ([`BindingPatch::FILLER`]).
pub const FAST_PATCHES: usize = 4;

/// What the recorder vouches for about a dispatch, in its
/// [`CommandHeader::issue_shape`]: zero ([`IssueShape::NONE`]) for every
/// other command; for a dispatch the issue kernel may issue by copying and
/// patching alone ([`DispatchCommand::issue_shape`]), bit 15 set, its
/// argument units (16 bytes each) in bits 8..15 and its binding patches in
/// bits 0..8.
///
/// Such a dispatch also has one layout whatever its kernel, so that one
/// code, without a branch, issues a wave of them: a template with
/// [`FAST_ARGUMENT_BYTES`] readable (the bytes past its arguments land in
/// its share past the kernel's arguments, which the kernel does not read),
/// a list of [`FAST_PATCHES`] patches, a share of the block's arguments of
/// [`FAST_ARGUMENT_BYTES`] ([`Command::kernarg_bytes`]).
///
/// The issue kernel's fast path takes such a dispatch without checking its
/// fields: the recorder checked them, and the submission checked the
/// binding table against every slot the recording uses. It still clamps
/// every write into the block's own reservations, so a damaged command
/// (its fields, template or patches, the block header and issue order
/// intact) writes only inside them.
#[repr(transparent)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct IssueShape(pub u16);

impl IssueShape {
    /// Not a dispatch the fast path may take.
    pub const NONE: Self = Self(0);

    /// The shape of `units` argument units and `bindings` patches, if
    /// the fast layout holds them (1 to 4 units: arguments of 1 to
    /// [`FAST_ARGUMENT_BYTES`] bytes; up to [`FAST_PATCHES`] bindings).
    #[inline]
    pub const fn new(units: u32, bindings: u32) -> Option<Self> {
        let fits = units >= 1
            && units <= FAST_ARGUMENT_BYTES / KERNARG_ALIGN
            && bindings as usize <= FAST_PATCHES;
        if !fits {
            return None;
        }
        Some(Self(0x8000 | (units << 8) as u16 | bindings as u16))
    }

    /// Whether the recorder vouches for the dispatch.
    pub const fn is_vouched(self) -> bool {
        self.0 & 0x8000 != 0
    }

    /// Argument units (16 bytes each) of the kernel's arguments.
    pub const fn units(self) -> u32 {
        (self.0 as u32 >> 8) & 0x7f
    }

    /// The dispatch's own binding patches.
    pub const fn bindings(self) -> u32 {
        self.0 as u32 & 0xff
    }
}

layout! {
    /// Any command, before its opcode is looked at.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct Command {
        /// The fields every command shares; `header.opcode` says which typed
        /// command ([`Command::view`]) the slot holds.
        pub header: CommandHeader = 0 => Nested,
        /// Bytes 16..128, laid out by the opcode's command type.
        pub payload: [u8; COMMAND_SIZE - 16] = 16 => Plain,
    }
    size = COMMAND_SIZE,
    align = 64,
    why = "COMMAND_SIZE: a block's commands are an array of 128-byte slots, each starting a \
           64-byte line and holding a 16-byte CommandHeader, then its opcode's payload (aqueduct \
           ABI: change it with ABI_VERSION)";
}

flags_type! {
    /// [`DispatchCommand::dispatch_flags`].
    pub struct DispatchFlags: u16 {
        /// The workgroup count is read from `workgroup_count_ref` when the
        /// command issues (its contents are final by then).
        const INDIRECT_STATIC = 1 << 0;
        /// The workgroup count is produced by earlier work in the same
        /// queue: the command emits a patch dispatch that reads it and fills
        /// in the real dispatch packet just before it runs.
        const INDIRECT_DYNAMIC = 1 << 1;
    }
}

layout! {
    /// A binding the issue kernel resolves and writes into the kernel
    /// arguments: a buffer's device address (8 bytes) at `kernarg_offset`.
    /// A reference of kind `DIRECT` never becomes a patch: the recorder writes
    /// its address into the template. One 16-byte load per binding, the
    /// common kind's fields first.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BindingPatch {
        /// Binding table slot (kind `BINDING`); zero otherwise.
        pub slot: u32 = 0 => Plain,
        /// The reference's [`BufferRefKind`]: `BINDING` or `ALLOCATION`.
        pub kind: u16 = 4 => Plain,
        /// Byte offset in the kernarg segment, 8-byte aligned.
        pub kernarg_offset: u16 = 6 => Plain,
        /// `BINDING`: the byte offset into the bound buffer; the range it
        /// starts was checked against the binding table when the submission
        /// bound it (the recording knows each slot's need), so the issue only
        /// adds. `ALLOCATION`: the device address of the whole [`BufferRef`]
        /// (kind `ALLOCATION`, 8-byte aligned), which the issue resolves and
        /// checks against the handle.
        pub value: u64 = 8 => Plain,
    }
    size = 16,
    align = 8,
    why = "DispatchCommand::bindings points at an array of these, which the issue kernel reads \
           one 16-byte load each (aqueduct ABI: change it with ABI_VERSION)";
}

impl BindingPatch {
    /// What fills the patch list of a dispatch without bindings that the
    /// recorder vouches for ([`FAST_PATCHES`]): it writes binding-table
    /// slot 0's address (whatever it is: a submission's table always has
    /// room for one entry) into the last word of the dispatch's share,
    /// past its arguments.
    pub const FILLER: Self = Self::binding(0, 0, (FAST_ARGUMENT_BYTES - 8) as u16);

    /// The patch list of a dispatch the recorder vouches for
    /// ([`FAST_PATCHES`]) whose own patches are `own` (at most
    /// [`FAST_PATCHES`]): them, then copies of the last; fillers without
    /// any. `None` for more.
    #[inline]
    pub fn fast_list(own: &[Self]) -> Option<[Self; FAST_PATCHES]> {
        let mut list = [own.last().copied().unwrap_or(Self::FILLER); FAST_PATCHES];
        list.get_mut(..own.len())?.copy_from_slice(own);
        Some(list)
    }

    /// The buffer bound to binding-table slot `slot`, from byte `offset`,
    /// written at kernel-argument byte `kernarg_offset`.
    #[inline]
    pub const fn binding(slot: u32, offset: u64, kernarg_offset: u16) -> Self {
        Self {
            slot,
            kind: BufferRefKind::BINDING.0 as u16,
            kernarg_offset,
            value: offset,
        }
    }

    /// The allocation reference ([`BufferRef`] of kind `ALLOCATION`) at
    /// device address `reference`, resolved when the command issues and
    /// written at kernel-argument byte `kernarg_offset`.
    pub const fn allocation(reference: u64, kernarg_offset: u16) -> Self {
        Self {
            slot: 0,
            kind: BufferRefKind::ALLOCATION.0 as u16,
            kernarg_offset,
            value: reference,
        }
    }
}

/// Declares a typed command's layout (`layout!`): [`Command::view`]
/// transmutes a command slot into it, so it has a slot's size and
/// alignment, and the issue kernel reads its payload at the offsets listed.
macro_rules! command_layout {
    ($($layout:tt)*) => {
        layout! {
            $($layout)*
            size = COMMAND_SIZE,
            align = 64,
            why = "Command::view transmutes a command slot into it, and the issue kernel reads \
                   its payload at these offsets (aqueduct ABI: change it with ABI_VERSION)";
        }
    };
}

command_layout! {
    /// Launch a kernel: one kernel dispatch packet (two when
    /// `INDIRECT_DYNAMIC`).
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct DispatchCommand {
        /// Opcode `DISPATCH`, ordering, packet and kernarg placement.
        pub header: CommandHeader = 0 => Nested,
        /// Device address of the kernel's [`KernelInfo`].
        pub kernel: u64 = 16 => Ref<KernelInfo>,
        /// Where the workgroup count comes from: none set for a direct dispatch
        /// (`workgroup_count`), `INDIRECT_STATIC` or `INDIRECT_DYNAMIC` to read
        /// it through `workgroup_count_ref`.
        pub dispatch_flags: DispatchFlags = 24 => Plain,
        /// Workgroup size per dimension.
        pub workgroup_size: [u16; 3] = 26 => Plain,
        /// Workgroups per dimension (direct dispatches); the grid is
        /// `workgroup_count * workgroup_size`.
        pub workgroup_count: [u32; 3] = 32 => Plain,
        /// LDS bytes added to the kernel's static group segment.
        pub dynamic_group_segment_size: u32 = 44 => Plain,
        /// Device address of the kernarg template: `kernarg_size` bytes copied to
        /// the command's kernarg slot before the bindings are patched in;
        /// 16-byte aligned and padded with zeros to a multiple of 16 bytes
        /// (the copy moves whole words).
        pub kernarg_template: u64 = 48 => Plain,
        /// Bytes of kernel arguments (the kernel's `kernarg_size`).
        pub kernarg_size: u32 = 56 => Plain,
        /// Entries at `bindings`.
        pub binding_count: u16 = 60 => Plain,
        /// Grid dimensions, 1..=3 (the packet's setup).
        pub dimensions: u8 = 62 => Plain,
        /// Keeps `bindings` 8-byte aligned; written as zero.
        pub reserved0: u8 = 63,
        /// Device address of `[BindingPatch; binding_count]`.
        pub bindings: u64 = 64 => ListOf<BindingPatch>[binding_count: u16],
        /// Where an indirect dispatch reads its `[u32; 3]` workgroup count.
        pub workgroup_count_ref: BufferRef = 72 => Nested,
        /// Device address of the dispatch's AQL packet prepared at record time,
        /// header in place ([`DispatchCommand::build_packet`] with a zero
        /// kernarg address, [`Prepared::published`]; 16-byte aligned, 64 for a dispatch the
        /// recorder vouches for, [`IssueShape`]), which
        /// the issue copies, filling in the kernarg address and storing the
        /// first word last; 0 to build the packet at issue (indirect
        /// dispatches, zero workgroups).
        pub packet: u64 = 104 => Link<[u64; 8]>,
        /// Pads the command to its 128-byte slot; written as zero.
        pub reserved: [u64; 2] = 112,
    }
}

impl CommandHeader {
    /// The packet ordering the command asks for: its fence scopes, the
    /// barrier bit with [`CommandFlags::BARRIER`] or when `barrier` forces
    /// it (control commands, barriers).
    pub fn ordering(&self, barrier: bool) -> Ordering {
        Ordering {
            barrier: barrier || self.flags.contains(CommandFlags::BARRIER),
            acquire: self.acquire_scope,
            release: self.release_scope,
        }
    }
}

impl DispatchCommand {
    /// Whether a dispatch with `kernarg_size` bytes of arguments and the
    /// binding patches `patches` has arguments the fast layout holds
    /// ([`IssueShape`]): 1 to [`FAST_ARGUMENT_BYTES`] bytes (to 8 fewer
    /// without bindings, for [`BindingPatch::FILLER`]), at most
    /// [`FAST_PATCHES`] patches, each of kind `BINDING` at an 8-byte
    /// aligned place inside the arguments. The recorder asks before it
    /// places the arguments, which it then lays out for the fast path.
    #[inline]
    pub fn fast_arguments(kernarg_size: u32, patches: &[BindingPatch]) -> bool {
        Self::fast_shape(kernarg_size, patches).is_some()
    }

    /// The [`IssueShape`] of such arguments
    /// ([`DispatchCommand::fast_arguments`]), `None` for others.
    #[inline]
    pub fn fast_shape(kernarg_size: u32, patches: &[BindingPatch]) -> Option<IssueShape> {
        let shape = IssueShape::new(kernarg_size.div_ceil(KERNARG_ALIGN), patches.len() as u32)?;
        let fits = (!patches.is_empty() || kernarg_size <= FAST_ARGUMENT_BYTES - 8)
            && patches.iter().all(|p| {
                u32::from(p.kind) == BufferRefKind::BINDING.0
                    && p.kernarg_offset % 8 == 0
                    && u32::from(p.kernarg_offset) + 8 <= kernarg_size
            });
        fits.then_some(shape)
    }

    /// The shape the recorder vouches for ([`IssueShape`]) if the issue
    /// may take this dispatch, whose own binding patches are `patches`,
    /// by copying and patching alone: a direct dispatch with its packet
    /// prepared (64-byte aligned), one packet, arguments the fast layout
    /// holds ([`DispatchCommand::fast_arguments`]) at a 16-byte aligned
    /// place, the template and patch list 16-byte aligned.
    /// [`IssueShape::NONE`] otherwise (an allocation reference, an
    /// indirect count, no workgroups, large arguments), which the issue
    /// checks field by field.
    ///
    /// What the command alone cannot tell is the recorder's to keep: the
    /// fast layout of its template, patch list and share, its packet and
    /// share inside the block's reservations, every slot's need recorded
    /// for the submission's check of the binding table.
    pub fn issue_shape(&self, patches: &[BindingPatch]) -> IssueShape {
        let h = &self.header;
        let vouched = h.opcode == CommandOpcode::DISPATCH
            && h.packet_count == 1
            && h.kernarg_offset.is_multiple_of(KERNARG_ALIGN)
            && self.dispatch_flags.is_empty()
            && self.packet != 0
            && self.packet.is_multiple_of(64)
            && self.kernarg_template != 0
            && self.kernarg_template.is_multiple_of(16)
            && self.bindings != 0
            && self.bindings.is_multiple_of(16)
            && usize::from(self.binding_count) == patches.len();
        match Self::fast_shape(self.kernarg_size, patches) {
            Some(shape) if vouched => shape,
            _ => IssueShape::NONE,
        }
    }

    /// The dispatch's packet running `info`'s kernel with `count`
    /// workgroups and its arguments at `kernarg_address`: `Ok(None)` when a
    /// count is 0 (nothing to run), an error when the grid overflows or
    /// the packet builder refuses. The host prepares it at record time
    /// ([`DispatchCommand::packet`]), the issue kernel for what it builds
    /// at issue: one definition.
    pub fn build_packet(
        &self,
        info: &KernelInfo,
        kernarg_address: u64,
        count: [u32; 3],
    ) -> Result<Option<Prepared<KernelDispatchPacket>>, DispatchPacketError> {
        // Flags gathered without a branch per axis: each is a divergent
        // branch in the issue kernel.
        let mut grid = [1u32; 3];
        let (mut empty, mut overflow) = (false, false);
        for axis in 0..3 {
            let (g, o) = count[axis].overflowing_mul(u32::from(self.workgroup_size[axis]));
            grid[axis] = g;
            empty |= count[axis] == 0;
            overflow |= o;
        }
        if empty {
            return Ok(None);
        }
        if overflow {
            return Err(DispatchPacketError::Grid);
        }
        KernelDispatch {
            kernel_object: info.kernel_object,
            kernarg_address,
            dimensions: self.dimensions,
            grid_size: grid,
            workgroup_size: self.workgroup_size,
            private_segment_size: info.private_segment_size,
            group_segment_size: info
                .group_segment_size
                .saturating_add(self.dynamic_group_segment_size),
            completion_signal: SignalHandle::NULL,
            ordering: self.header.ordering(false),
        }
        .build_unchecked()
        .map(Some)
        .map_err(DispatchPacketError::Packet)
    }
}

/// Why [`DispatchCommand::build_packet`] has no packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchPacketError {
    /// The workgroup count times the workgroup size overflows a grid.
    Grid,
    /// The packet builder refused it.
    Packet(PacketError),
}

command_layout! {
    /// Fill `target` with a repeating pattern of 1, 2, 4, 8 or 16 bytes: one
    /// dispatch of the device library's fill kernel.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct FillCommand {
        /// Opcode `FILL`, ordering, packet and kernarg placement.
        pub header: CommandHeader = 0 => Nested,
        /// The range filled (`length` bytes, a multiple of `pattern_length`).
        pub target: BufferRef = 16 => Nested,
        /// The pattern, in its first `pattern_length` bytes.
        pub pattern: [u8; 16] = 48 => Plain,
        /// 1, 2, 4, 8 or 16.
        pub pattern_length: u8 = 64 => Plain,
        /// Keeps `reserved` 8-byte aligned; written as zero.
        pub reserved0: [u8; 7] = 65,
        /// Pads the command to its 128-byte slot; written as zero.
        pub reserved: [u64; 7] = 72,
    }
}

command_layout! {
    /// Copy `source` to `target` (equal lengths, any alignment): one dispatch of
    /// the copy kernel.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct CopyCommand {
        /// Opcode `COPY`, ordering, packet and kernarg placement.
        pub header: CommandHeader = 0 => Nested,
        /// The range read; must not overlap `target`.
        pub source: BufferRef = 16 => Nested,
        /// The range written, of the same length as `source`.
        pub target: BufferRef = 48 => Nested,
        /// Pads the command to its 128-byte slot; written as zero.
        pub reserved: [u64; 6] = 80,
    }
}

command_layout! {
    /// Write inline data, recorded with the command buffer, to `target`: one
    /// dispatch of the copy kernel.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct UpdateCommand {
        /// Opcode `UPDATE`, ordering, packet and kernarg placement.
        pub header: CommandHeader = 0 => Nested,
        /// Device address of the data, in the command buffer's own storage
        /// (`target.length` bytes).
        pub source_data: u64 = 16 => Plain,
        /// The range written.
        pub target: BufferRef = 24 => Nested,
        /// Pads the command to its 128-byte slot; written as zero.
        pub reserved: [u64; 9] = 56,
    }
}

command_layout! {
    /// An execution barrier: one barrier-AND packet without dependencies, with
    /// the barrier bit and the header's fence scopes.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BarrierCommand {
        /// Opcode `BARRIER` and the barrier-AND's fence scopes.
        pub header: CommandHeader = 0 => Nested,
        /// Pads the command to its 128-byte slot; written as zero.
        pub reserved: [u64; 14] = 16,
    }
}

command_layout! {
    /// Continue with another block. Issues one packet: a dispatch of the
    /// device library's control kernel (`cmd_branch`, one work-item, barrier bit
    /// set), which reserves the target block's packets and dispatches its issue
    /// ([`Execution`]). Its arguments are [`BranchArgs`].
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BranchCommand {
        /// Opcode `BRANCH`, ordering, packet and kernarg placement.
        pub header: CommandHeader = 0 => Nested,
        /// Index of the block to continue with (`< block_count`).
        pub target_block: u32 = 16 => Plain,
        /// Keeps `reserved` 8-byte aligned; written as zero.
        pub reserved0: u32 = 20,
        /// Pads the command to its 128-byte slot; written as zero.
        pub reserved: [u64; 13] = 24,
    }
}

open_enum! {
    /// How a [`CondBranchCommand`] compares the 64-bit value in memory with
    /// its `value`: equality, or an ordering as signed or unsigned
    /// integers.
    pub struct BranchCondition(u32) {
        /// `memory == value`.
        EQ = 0,
        /// `memory != value`.
        NE = 1,
        /// `memory < value`, as signed integers.
        LT = 2,
        /// `memory <= value`, as signed integers.
        LE = 3,
        /// `memory > value`, as signed integers.
        GT = 4,
        /// `memory >= value`, as signed integers.
        GE = 5,
        /// `memory < value`, as unsigned integers.
        ULT = 6,
        /// `memory <= value`, as unsigned integers.
        ULE = 7,
        /// `memory > value`, as unsigned integers.
        UGT = 8,
        /// `memory >= value`, as unsigned integers.
        UGE = 9,
    }
}

impl BranchCondition {
    /// Whether `memory cond value` holds; `None` for an unknown condition.
    pub const fn holds(self, memory: u64, value: u64) -> Option<bool> {
        let (sm, sv) = (memory as i64, value as i64);
        Some(match self {
            Self::EQ => memory == value,
            Self::NE => memory != value,
            Self::LT => sm < sv,
            Self::LE => sm <= sv,
            Self::GT => sm > sv,
            Self::GE => sm >= sv,
            Self::ULT => memory < value,
            Self::ULE => memory <= value,
            Self::UGT => memory > value,
            Self::UGE => memory >= value,
            _ => return None,
        })
    }
}

command_layout! {
    /// Continue with `true_block` if `(u64 at condition) cond value` holds when
    /// the control kernel runs (after everything before it in the queue), else
    /// with `false_block`; issued like a [`BranchCommand`].
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct CondBranchCommand {
        /// Opcode `COND_BRANCH`, ordering, packet and kernarg placement.
        pub header: CommandHeader = 0 => Nested,
        /// An 8-byte range holding the value compared.
        pub condition: BufferRef = 16 => Nested,
        /// The comparison; an unknown one fails the issue.
        pub cond: BranchCondition = 48 => Plain,
        /// Keeps `value` 8-byte aligned; written as zero.
        pub reserved0: u32 = 52,
        /// The right-hand side of the comparison (its bits are compared as
        /// unsigned for the `U*` conditions).
        pub value: i64 = 56 => Plain,
        /// Index of the block to continue with when the condition holds.
        pub true_block: u32 = 64 => Plain,
        /// Index of the block to continue with when it does not.
        pub false_block: u32 = 68 => Plain,
        /// Pads the command to its 128-byte slot; written as zero.
        pub reserved: [u64; 7] = 72,
    }
}

command_layout! {
    /// End of the command buffer: one packet, a barrier-AND with the barrier
    /// bit and the header's fence scopes that decrements the issue's
    /// [`BlockIssue::completion_signal`] once everything before it is done.
    /// (The device scheduler will make it its retire dispatch.)
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct ReturnCommand {
        /// Opcode `RETURN` and the barrier-AND's fence scopes.
        pub header: CommandHeader = 0 => Nested,
        /// Pads the command to its 128-byte slot; written as zero.
        pub reserved: [u64; 14] = 16,
    }
}

layout! {
    /// One submission of a command buffer, as its control kernels see it: a
    /// BRANCH or COND_BRANCH reserves the target block's packets in `queue` and
    /// dispatches the block-issue kernel on `issues[target]` (whose argument is
    /// at `issue_args[target]`, a 16-byte slot holding that issue's address).
    /// Each block has its own issue state and kernarg space for the whole
    /// submission: a block issues again only after a branch with the barrier
    /// bit, so after its previous issue's packets completed.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct Execution {
        /// Device address of the [`CommandBufferHeader`].
        pub command_buffer: u64 = 0 => Ref<CommandBufferHeader>,
        /// Device address of `[BlockIssue; block_count]`.
        pub issues: u64 = 8 => Plain,
        /// Device address of `[[u64; 2]; block_count]`: block `b`'s issue
        /// kernel arguments (the address of `issues[b]`).
        pub issue_args: u64 = 16 => Plain,
        /// Kernel object of the block-issue kernel.
        pub issue_kernel: u64 = 24 => Plain,
        /// Device address of the execution queue's `amd_queue_t`.
        pub queue: u64 = 32 => Ref<AmdQueue>,
        /// Blocks of at most this many commands that a branch continues with
        /// are issued serially by the branch's control kernel itself, saving
        /// the block-issue dispatch (0: never; `u32::MAX`: always).
        pub serial_threshold: u32 = 40 => Plain,
        /// Keeps `entry` 8-byte aligned; written as zero.
        pub reserved0: u32 = 44,
        /// Device address of the scheduler's [`crate::scheduler::QueueEntry`]
        /// this submission runs (0: submitted by the host, no scheduler). With
        /// one, RETURN dispatches the control kernel, which retires the entry.
        pub entry: u64 = 48 => Plain,
        /// Pads the record to one 64-byte line; written as zero.
        pub reserved: u64 = 56,
    }
    size = 64,
    align = 64,
    why = "the control kernels read it at these offsets (aqueduct ABI: change it with \
           ABI_VERSION)";
}

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

/// A typed command layout ([`Command::view`]'s targets): plain data over
/// a whole 128-byte command slot.
///
/// # Safety
/// The type is `repr(C, align(64))`, `COMMAND_SIZE` bytes, all plain
/// fields that any bytes make valid (`command_layout!` asserts the size
/// and alignment).
pub unsafe trait CommandLayout: crate::view::Layout {}

macro_rules! command_layouts {
    ($($ty:ty),+) => {$(
        // SAFETY: declared with `command_layout!` (size and alignment
        // asserted), zerocopy's FromBytes (any bytes valid).
        unsafe impl CommandLayout for $ty {}
    )+};
}

command_layouts!(
    DispatchCommand,
    FillCommand,
    CopyCommand,
    UpdateCommand,
    BarrierCommand,
    BranchCommand,
    CondBranchCommand,
    ReturnCommand
);

impl<'a> View<'a, Command> {
    /// The command's slot seen as command layout `C`, whatever its opcode
    /// says: every command layout is plain data over the same 128-byte
    /// slot ([`Command::view`] transmutes the same way). Reading a field
    /// through it reads that field alone, where [`View::get`] copies the
    /// whole command.
    #[inline(always)]
    pub fn as_kind<C: CommandLayout>(self) -> View<'a, C> {
        // SAFETY: the same live, 64-byte-aligned 128 bytes, which any
        // bytes make a valid C (CommandLayout's contract).
        unsafe { View::from_ptr(core::ptr::NonNull::new_unchecked(self.as_ptr().cast())) }
    }

    /// [`as_kind`](Self::as_kind) for a dispatch.
    #[inline(always)]
    pub fn as_dispatch(self) -> View<'a, DispatchCommand> {
        self.as_kind()
    }
}

impl<'a> View<'a, Execution> {
    /// The issue states of the submission's blocks, one per block of its
    /// command buffer (`issues` holds `block_count` of them).
    #[inline(always)]
    pub fn issue_states(self) -> List<'a, BlockIssue> {
        let blocks = self.command_buffer().get().block_count().get();
        // SAFETY: the view's contract: an execution's `issues` holds one
        // live BlockIssue per block of its command buffer (this layout's
        // docs), which its submitter wrote with it.
        unsafe { List::from_raw(self.issues().get(), u64::from(blocks)) }
    }
}

layout! {
    /// The kernel arguments of the patch kernel (`cmd_patch_dispatch`) an
    /// INDIRECT_DYNAMIC dispatch emits before its real dispatch packet: when it
    /// runs (after everything before it, barrier bit set) it reads the
    /// workgroup count, fills in the real packet's grid and publishes its
    /// header, or turns the slot into a no-op barrier-AND when a used
    /// dimension's count is 0.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct PatchArgs {
        /// Device address of the real dispatch packet's slot (body written,
        /// header INVALID).
        pub packet: u64 = 0 => Plain,
        /// Device address of the `[u32; 3]` workgroup count (resolved when the
        /// block issued; read when the patch runs).
        pub count: u64 = 8 => Plain,
        /// The real packet's first 32 bits once published: header and setup.
        pub first_word: u32 = 16 => Plain,
        /// The header of the no-op barrier-AND that replaces an empty dispatch
        /// (the command's ordering).
        pub no_op_header: u16 = 20 => Plain,
        /// Grid dimensions of the real dispatch, 1..=3: counts beyond them are
        /// ignored.
        pub dimensions: u16 = 22 => Plain,
        /// Workgroup size per dimension.
        pub workgroup_size: [u16; 3] = 24 => Plain,
        /// Pads the arguments to 32 bytes; written as zero.
        pub reserved: u16 = 30,
    }
    size = 32,
    align = 8,
    why = "the kernarg segment of cmd_patch_dispatch as the compiler lays it out (a test checks \
           it against the code object's metadata)";
}

layout! {
    /// The kernel arguments of the control kernel (`cmd_branch`) a BRANCH or
    /// COND_BRANCH dispatches.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BranchArgs {
        /// Device address of the submission's [`Execution`].
        pub execution: u64 = 0 => Plain,
        /// Device address of the branch command.
        pub command: u64 = 8 => Plain,
    }
    size = 16,
    align = 8,
    why = "the kernarg segment of cmd_branch as the compiler lays it out (a test checks it \
           against the code object's metadata)";
}

layout! {
    /// One block's issue: what the block-issue kernel (`cmd_block_issue` in the
    /// device library) reads through its single argument, a pointer to this.
    /// Whoever issues the block fills it after reserving the block's
    /// `packet_count` packet slots and `kernarg_size` kernarg bytes.
    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct BlockIssue {
        /// Device address of the block's [`CommandBlockHeader`].
        pub block: u64 = 0 => Ref<CommandBlockHeader>,
        /// Device address of the execution queue's `amd_queue_t`.
        pub queue: u64 = 8 => Ref<AmdQueue>,
        /// Packet id of the first reserved slot: command `i`'s packets go at
        /// `packet_base + packet_offset ..`.
        pub packet_base: u64 = 16 => Plain,
        /// Device address of the block's kernarg reservation (64-byte aligned):
        /// command `i`'s arguments go at `kernarg_base + kernarg_offset`.
        pub kernarg_base: u64 = 24 => Plain,
        /// Device address of `[BindingTableEntry; binding_count]`.
        pub binding_table: u64 = 32 => ListOf<BindingTableEntry>[binding_count: u32],
        /// Slots at `binding_table`.
        pub binding_count: u32 = 40 => Plain,
        /// Keeps `completion_signal` 8-byte aligned; written as zero.
        pub reserved0: u32 = 44,
        /// The signal the block's RETURN packet decrements (null: none).
        pub completion_signal: crate::hsa::SignalHandle = 48 => Plain,
        /// Device address of the [`KernelInfo`] of the device library's fill
        /// kernel, which FILL commands dispatch with [`FillArgs`].
        pub fill_kernel: u64 = 56 => Ref<KernelInfo>,
        /// The same for the copy kernel, which COPY and UPDATE commands dispatch
        /// with [`CopyArgs`].
        pub copy_kernel: u64 = 64 => Ref<KernelInfo>,
        /// The same for the control kernel, which BRANCH and COND_BRANCH
        /// dispatch with [`BranchArgs`].
        pub control_kernel: u64 = 72 => Ref<KernelInfo>,
        /// Device address of the submission's [`Execution`].
        pub execution: u64 = 80 => Ref<Execution>,
        /// Device address of the [`KernelInfo`] of the patch kernel, which an
        /// INDIRECT_DYNAMIC dispatch emits before its dispatch, with
        /// [`PatchArgs`].
        pub patch_kernel: u64 = 88 => Ref<KernelInfo>,
        /// Pads the issue state to two 64-byte lines; written as zero.
        pub reserved: [u64; 4] = 96,
    }
    size = 128,
    align = 64,
    why = "the block-issue kernel reads it at these offsets through its one pointer argument \
           (aqueduct ABI: change it with ABI_VERSION)";
}

layout! {
    /// The kernel arguments of the device library's fill kernel (`blit_fill`:
    /// `dst`, `len`, the pattern's first and second 8 bytes, its size), as a
    /// FILL command's packet passes them.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct FillArgs {
        /// Device address of the first byte written.
        pub dst: u64 = 0 => Plain,
        /// Bytes written: `dst[k] = pattern[k % pattern_size]` for `k < len`.
        pub len: u64 = 8 => Plain,
        /// Pattern bytes 0..8, little-endian.
        pub pattern_lo: u64 = 16 => Plain,
        /// Pattern bytes 8..16, little-endian (read only for a 16-byte
        /// pattern).
        pub pattern_hi: u64 = 24 => Plain,
        /// Pattern length in bytes: 1, 2, 4, 8 or 16 (any other traps, a queue
        /// error, before a byte is written).
        pub pattern_size: u32 = 32 => Plain,
        /// Pads the arguments to 40 bytes; written as zero.
        pub reserved: u32 = 36,
    }
    size = 40,
    align = 8,
    why = "the kernarg segment of blit_fill as the compiler lays it out (a test checks it against \
           the code object's metadata)";
}

layout! {
    /// The kernel arguments of the device library's copy kernel (`blit_copy`:
    /// `dst`, `src`, `len`), as COPY and UPDATE commands' packets pass them.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
    pub struct CopyArgs {
        /// Device address of the first byte written.
        pub dst: u64 = 0 => Plain,
        /// Device address of the first byte read; `[src, src + len)` must not
        /// overlap `[dst, dst + len)`.
        pub src: u64 = 8 => Plain,
        /// Bytes copied; any alignment of either address.
        pub len: u64 = 16 => Plain,
    }
    size = 24,
    align = 8,
    why = "the kernarg segment of blit_copy as the compiler lays it out (a test checks it against \
           the code object's metadata)";
}

/// A command viewed by its opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandView<'a> {
    /// Opcode `DISPATCH`.
    Dispatch(&'a DispatchCommand),
    /// Opcode `FILL`.
    Fill(&'a FillCommand),
    /// Opcode `COPY`.
    Copy(&'a CopyCommand),
    /// Opcode `UPDATE`.
    Update(&'a UpdateCommand),
    /// Opcode `BARRIER`.
    Barrier(&'a BarrierCommand),
    /// Opcode `BRANCH`.
    Branch(&'a BranchCommand),
    /// Opcode `COND_BRANCH`.
    CondBranch(&'a CondBranchCommand),
    /// Opcode `RETURN`.
    Return(&'a ReturnCommand),
}

impl Command {
    /// The typed view for the opcode; `Err(opcode)` for an unknown one.
    pub fn view(&self) -> Result<CommandView<'_>, CommandOpcode> {
        Ok(match self.header.opcode {
            CommandOpcode::DISPATCH => CommandView::Dispatch(zerocopy::transmute_ref!(self)),
            CommandOpcode::FILL => CommandView::Fill(zerocopy::transmute_ref!(self)),
            CommandOpcode::COPY => CommandView::Copy(zerocopy::transmute_ref!(self)),
            CommandOpcode::UPDATE => CommandView::Update(zerocopy::transmute_ref!(self)),
            CommandOpcode::BARRIER => CommandView::Barrier(zerocopy::transmute_ref!(self)),
            CommandOpcode::BRANCH => CommandView::Branch(zerocopy::transmute_ref!(self)),
            CommandOpcode::COND_BRANCH => CommandView::CondBranch(zerocopy::transmute_ref!(self)),
            CommandOpcode::RETURN => CommandView::Return(zerocopy::transmute_ref!(self)),
            other => return Err(other),
        })
    }

    /// Bytes of kernel arguments the command's packets take (before
    /// rounding to [`KERNARG_ALIGN`]): its kernel's segment for a dispatch
    /// ([`FAST_ARGUMENT_BYTES`] for one the recorder vouches for,
    /// [`IssueShape`]), the blit or control kernel's arguments, nothing for
    /// the others.
    pub fn kernarg_bytes(&self) -> u32 {
        match self.view() {
            Ok(CommandView::Dispatch(d))
                if d.dispatch_flags.contains(DispatchFlags::INDIRECT_DYNAMIC) =>
            {
                // The kernel's arguments, then the patch kernel's.
                d.kernarg_size.next_multiple_of(KERNARG_ALIGN) + size_of::<PatchArgs>() as u32
            }
            Ok(CommandView::Dispatch(d)) if d.header.issue_shape.is_vouched() => {
                FAST_ARGUMENT_BYTES
            }
            Ok(CommandView::Dispatch(d)) => d.kernarg_size,
            Ok(CommandView::Fill(_)) => size_of::<FillArgs>() as u32,
            Ok(CommandView::Copy(_) | CommandView::Update(_)) => size_of::<CopyArgs>() as u32,
            // RETURN too: under a scheduler it dispatches the control
            // kernel ([`Execution::entry`]).
            Ok(CommandView::Branch(_) | CommandView::CondBranch(_) | CommandView::Return(_)) => {
                size_of::<BranchArgs>() as u32
            }
            _ => 0,
        }
    }

    /// AQL packets the command emits: 2 for an INDIRECT_DYNAMIC dispatch
    /// (the patch, then the dispatch), 1 for every other command.
    pub fn packet_count(&self) -> u16 {
        match self.view() {
            Ok(CommandView::Dispatch(d))
                if d.dispatch_flags.contains(DispatchFlags::INDIRECT_DYNAMIC) =>
            {
                2
            }
            _ => 1,
        }
    }

    /// Whether the command ends a block.
    pub fn is_control(&self) -> bool {
        matches!(
            self.header.opcode,
            CommandOpcode::BRANCH | CommandOpcode::COND_BRANCH | CommandOpcode::RETURN
        )
    }
}

macro_rules! into_command {
    ($($ty:ty),+) => {$(
        impl From<$ty> for Command {
            fn from(c: $ty) -> Self {
                zerocopy::transmute!(c)
            }
        }
    )+};
}

into_command!(
    DispatchCommand,
    FillCommand,
    CopyCommand,
    UpdateCommand,
    BarrierCommand,
    BranchCommand,
    CondBranchCommand,
    ReturnCommand
);

#[cfg(test)]
mod tests {
    use super::*;
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
