//! The commands: the 16-byte [`CommandHeader`] every one starts with (its
//! packets' and kernel arguments' places, the [`IssueShape`] the recorder
//! vouches for), the 128-byte [`Command`] and its kinds (dispatch, fill,
//! copy, update, barrier, branch, conditional branch, return), the
//! [`KernelInfo`] a dispatch names, and how a dispatch becomes its AQL
//! packet ([`DispatchCommand::build_packet`]).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::aql::{FenceScope, KernelDispatchPacket};
use crate::hsa::SignalHandle;
use crate::packet::{KernelDispatch, Ordering, PacketError, Prepared};
use crate::view::{Link, ListOf, Nested, Plain, Ref, View};

use super::{
    BindingPatch, BranchArgs, BufferRef, BufferRefKind, COMMAND_SIZE, CopyArgs, FillArgs,
    KERNARG_ALIGN, PatchArgs,
};

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
    /// ([`Execution`](super::Execution)). Its arguments are [`BranchArgs`].
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
    /// [`BlockIssue::completion_signal`](super::BlockIssue::completion_signal) once everything before it is done.
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
