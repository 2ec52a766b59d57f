//! Buffers as commands name them: a [`BufferRef`] (a direct address, a
//! queue-ordered allocation's handle, or a binding-table slot), the
//! [`BindingTableEntry`] a submission binds a slot to, and the
//! [`BindingPatch`]es that write a resolved binding into a dispatch's
//! kernel arguments at issue time.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use crate::view::Plain;

use super::{FAST_ARGUMENT_BYTES, FAST_PATCHES};

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

/// Most binding-table slots a submission binds (and a recording
/// references): the issue kernel addresses a slot with a 32-bit offset
/// from the table, and the recorder keeps each slot's need.
pub const MAX_BINDING_SLOTS: u32 = 1 << 16;

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
