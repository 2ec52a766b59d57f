//! Command-buffer issue: one command of a recorded block ([`aqueduct_abi::command`])
//! turned into its AQL packets in the execution queue.
//!
//! The block-issue kernel (`kernels::cmd_block_issue`) runs one work-item
//! per command, in any order; each issues its own command
//! ([`BlockIssuer::issue_work_item`]: the fast path for a dispatch the
//! recorder vouched for, else the checked [`BlockIssuer::issue`]) and looks
//! at no other. In the serial issue
//! ([`Execution::serial_threshold`]) one work-item issues a block's commands
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
//! | DISPATCH | a kernel dispatch of its kernel, arguments from the template with the bindings patched in: a direct one with workgroups copies the packet the host prepared ([`DispatchCommand::packet`]) with the kernarg address filled in, the others build it here; INDIRECT_STATIC reads the workgroup count here |
//! | DISPATCH, INDIRECT_DYNAMIC | two: a dispatch of the patch kernel (`cmd_patch_dispatch`, [`PatchArgs`], barrier bit), then the dispatch's packet, written but not published: the patch reads the count when it runs and publishes it ([`patch_dispatch`]) |
//! | FILL     | a dispatch of the library's `blit_fill` ([`FillArgs`])        |
//! | COPY, UPDATE | a dispatch of `blit_copy` ([`CopyArgs`]); UPDATE copies from the recording's own data |
//! | BARRIER  | a barrier-AND without dependencies, barrier bit set           |
//! | BRANCH, COND_BRANCH | a dispatch of the control kernel (`cmd_branch`, [`BranchArgs`], barrier bit), which picks the next block ([`branch_target`]) and issues it ([`issue_block`]) |
//! | RETURN   | a barrier-AND, barrier bit set, that decrements the issue's completion signal; under the device scheduler ([`Execution::entry`]) a dispatch of the control kernel instead, which retires the entry ([`crate::scheduler::retire`]) and decrements the signal too |
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
//! This is plain Rust over device addresses: the host tests run it on host
//! memory, the kernel on the GPU's.

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::aql::KernelDispatchPacket;
use aqueduct_abi::aql_ring::is_ring_size;
use aqueduct_abi::command::{
    AllocationHandle, BindingPatch, BindingTableEntry, BlockIssue, BranchArgs, BufferRef,
    BufferRefKind, COMMAND_SIZE, Command, CommandBlockHeader, CommandBufferHeader, CommandHeader,
    CommandOpcode, CommandView, CopyArgs, DispatchCommand, DispatchFlags, DispatchPacketError,
    Execution, FAST_ARGUMENT_BYTES, FAST_PATCHES, FillArgs, KERNARG_ALIGN, KernelInfo, PatchArgs,
};
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::packet::{
    BarrierKind, BarrierPacket, KernelDispatch, Ordering, PacketError, Prepared, barrier,
};

use crate::blit::{CopyPlan, FillPattern, Partition};
use crate::memory::{keep_order, load_invariant_u64, load_u32, load_u64, store_u64};
use crate::queue::{MAX_QUEUE_PACKETS, Queue, QueueError};

/// Bytes of a [`BindingPatch`].
const PATCH_SIZE: u64 = size_of::<BindingPatch>() as u64;

// The fast path reads a command's header as two words (packet offset in
// the first's high half; issue shape and kernarg offset in the second's)
// and a patch as two (slot in the first's low half, place in its top 16
// bits; the offset).
const _: () = {
    assert!(core::mem::offset_of!(CommandHeader, packet_offset) == 4);
    assert!(core::mem::offset_of!(CommandHeader, issue_shape) == 10);
    assert!(core::mem::offset_of!(CommandHeader, kernarg_offset) == 12);
    assert!(core::mem::offset_of!(BindingPatch, slot) == 0);
    assert!(core::mem::offset_of!(BindingPatch, kernarg_offset) == 6);
    assert!(core::mem::offset_of!(BindingPatch, value) == 8);
};

/// The 8-byte word of a kernel dispatch packet that holds its
/// `kernarg_address`.
const KERNARG_ADDRESS_WORD: usize =
    core::mem::offset_of!(KernelDispatchPacket, kernarg_address) / 8;

/// Work-items per workgroup of a blit dispatch.
pub const BLIT_WORKGROUP: u16 = 256;

/// Most work-items a blit dispatch launches; larger blits grid-stride.
pub const BLIT_MAX_ITEMS: u64 = 1 << 20;

/// Why a command could not be issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssueError {
    /// The index is past the block's commands.
    NoCommand { index: u32, count: u32 },
    /// An opcode the issue kernel does not know, or cannot issue yet.
    Opcode(u8),
    /// A dispatch flag the issue kernel cannot honour yet.
    DispatchFlags(u16),
    /// The command's packets lie outside the block's reservation, or it
    /// announces another number than its kind emits.
    Packets { offset: u32, count: u16, block: u32 },
    /// The command's arguments lie outside the block's reservation or are
    /// misaligned.
    Kernargs { offset: u32, size: u32, block: u32 },
    /// A binding-table slot at or past the table's end.
    Binding { slot: u32, count: u32 },
    /// A reference of unknown kind.
    RefKind(u32),
    /// A queue-ordered allocation not committed yet.
    NotCommitted { handle: u64 },
    /// A reference reaching past the buffer it resolves to.
    Range { offset: u64, length: u64, size: u64 },
    /// A buffer shorter than the command needs (an indirect count, a copy
    /// of unequal lengths, a fill not a whole number of patterns).
    Length { need: u64, have: u64 },
    /// A fill pattern size other than 1, 2, 4, 8 or 16.
    Pattern(u8),
    /// The workgroup count times the workgroup size overflows a grid.
    Grid { count: [u32; 3], size: [u16; 3] },
    /// The packet builder refused the packet.
    Packet(PacketError),
    /// The execution queue's `amd_queue_t` is not a queue.
    Queue(QueueError),
    /// A prepared dispatch's packet or kernel arguments do not fit the
    /// block, or its packet is misaligned.
    Prepared {
        packet_offset: u32,
        kernarg_offset: u32,
    },
    /// An address the recording or the issue state gives is not aligned
    /// for what it points at.
    Misaligned { address: u64, align: u32 },
}

/// `address`, if it is a multiple of `align` (a power of two).
fn check_aligned(address: u64, align: u32) -> Result<u64, IssueError> {
    if aligned(address, u64::from(align)) {
        Ok(address)
    } else {
        Err(IssueError::Misaligned { address, align })
    }
}

/// The first of these checks that fails (addresses and their alignments,
/// then a queue's size), for an issue state known to fail one: the common
/// path computes one flag and branches once.
#[cold]
fn first_error(aligned: &[(u64, u32)], size: u32) -> IssueError {
    for &(address, align) in aligned {
        if let Err(e) = check_aligned(address, align) {
            return e;
        }
    }
    IssueError::Queue(QueueError::BadSize(size))
}

impl From<PacketError> for IssueError {
    fn from(e: PacketError) -> Self {
        Self::Packet(e)
    }
}

/// `T` at a device address. Used only for the shared layouts
/// (`aqueduct-abi`), plain data that any bytes make valid. Aligned: the
/// GPU reads an unaligned struct a byte at a time, a register per byte.
///
/// # Safety
/// `size_of::<T>()` readable bytes at `address`, aligned for `T`.
unsafe fn load<T: Copy>(address: u64) -> T {
    // SAFETY: the caller guarantees the bytes and their alignment; every T
    // read here is a repr(C) layout of integers, valid for any bytes.
    unsafe { (address as *const T).read() }
}

/// Writes `value` at a device address.
///
/// # Safety
/// `size_of::<T>()` writable bytes at `address`, aligned for `T`, not read
/// concurrently.
unsafe fn store<T: Copy>(address: u64, value: T) {
    // SAFETY: the caller guarantees the bytes and their alignment.
    unsafe { (address as *mut T).write(value) }
}

/// Whether `address` is a multiple of `align` (a power of two).
fn aligned(address: u64, align: u64) -> bool {
    address & (align - 1) == 0
}

/// Packets a command of this header's kind emits here.
pub fn packets_of(command: &Command) -> Result<u16, IssueError> {
    match command.view() {
        Ok(CommandView::Dispatch(d)) => {
            dispatch_flags(d)?;
            Ok(command.packet_count())
        }
        Ok(_) => Ok(command.packet_count()),
        Err(op) => Err(IssueError::Opcode(op.0)),
    }
}

/// One of the known flags, and not both indirect kinds.
fn dispatch_flags(d: &DispatchCommand) -> Result<(), IssueError> {
    let known = DispatchFlags::INDIRECT_STATIC | DispatchFlags::INDIRECT_DYNAMIC;
    if d.dispatch_flags.difference(known).is_empty() && d.dispatch_flags != known {
        Ok(())
    } else {
        Err(IssueError::DispatchFlags(d.dispatch_flags.bits()))
    }
}

/// Resolves a buffer reference to a device address, checking that the
/// referenced range lies inside what it points through. `table` is the
/// binding table; `handle` reads an allocation handle at its address.
pub fn resolve(
    r: &BufferRef,
    table: &[BindingTableEntry],
    handle: impl FnOnce(u64) -> AllocationHandle,
) -> Result<u64, IssueError> {
    let (base, size) = match r.kind {
        BufferRefKind::DIRECT => return Ok(r.address.wrapping_add(r.offset)),
        BufferRefKind::BINDING => {
            let entry = table.get(r.slot as usize).ok_or(IssueError::Binding {
                slot: r.slot,
                count: table.len() as u32,
            })?;
            (entry.address, entry.length)
        }
        BufferRefKind::ALLOCATION => {
            let h = handle(r.address);
            if h.address == 0 {
                return Err(IssueError::NotCommitted { handle: r.address });
            }
            (h.address, h.length)
        }
        other => return Err(IssueError::RefKind(other.0)),
    };
    let end = r.offset.checked_add(r.length);
    if end.is_none_or(|end| end > size) {
        return Err(IssueError::Range {
            offset: r.offset,
            length: r.length,
            size,
        });
    }
    Ok(base + r.offset)
}

/// The dispatch packet of `d` running `info`'s kernel with `count`
/// workgroups and its arguments at `kernarg_address`; a barrier-AND when
/// `count` has a zero.
pub fn dispatch_packet(
    d: &DispatchCommand,
    info: &KernelInfo,
    kernarg_address: u64,
    count: [u32; 3],
) -> Result<Packet, IssueError> {
    match d.build_packet(info, kernarg_address, count) {
        Ok(Some(packet)) => Ok(Packet::Dispatch(packet)),
        Ok(None) => no_op(d.header.ordering(false)),
        Err(DispatchPacketError::Grid) => Err(IssueError::Grid {
            count,
            size: d.workgroup_size,
        }),
        Err(DispatchPacketError::Packet(e)) => Err(IssueError::Packet(e)),
    }
}

/// A one-dimensional dispatch of a blit kernel over `units` units of work
/// (at most [`BLIT_MAX_ITEMS`] work-items; the kernels grid-stride); a
/// barrier-AND when there is nothing to do.
pub fn blit_packet(
    kernel: &KernelInfo,
    kernarg_address: u64,
    units: u64,
    order: Ordering,
) -> Result<Packet, IssueError> {
    if units == 0 {
        return no_op(order);
    }
    let items = units.min(BLIT_MAX_ITEMS) as u32;
    let packet = KernelDispatch {
        private_segment_size: kernel.private_segment_size,
        group_segment_size: kernel.group_segment_size,
        ordering: order,
        ..KernelDispatch::linear(kernel.kernel_object, kernarg_address, items, BLIT_WORKGROUP)
    }
    .build_unchecked()?;
    Ok(Packet::Dispatch(packet))
}

/// A fill pattern's 16 bytes as the fill kernel takes them: two
/// little-endian words.
pub fn pattern_words(pattern: &[u8; 16]) -> [u64; 2] {
    let word = |k: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&pattern[8 * k..8 * k + 8]);
        u64::from_le_bytes(w)
    };
    [word(0), word(1)]
}

/// A barrier-AND that waits for nothing: an empty slot's packet.
fn no_op(order: Ordering) -> Result<Packet, IssueError> {
    Ok(Packet::Barrier(barrier(
        BarrierKind::And,
        &[],
        SignalHandle::NULL,
        order,
    )?))
}

/// A packet ready to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    Dispatch(Prepared<KernelDispatchPacket>),
    Barrier(BarrierPacket),
}

/// One block's issue, as each work-item of the block-issue kernel sees it.
/// It keeps a pointer to the issue state, whose fields the rarer commands
/// read where they use them, and the fields every command uses, read once
/// as the wave's values with scalar loads ([`crate::memory`]): the block
/// header's totals, the issue state's bases and the queue.
pub struct BlockIssuer {
    state: *const BlockIssue,
    block: u64,
    /// The block header's `command_count`, `packet_count`, `kernarg_size`
    /// and `issue_order`.
    commands: u32,
    packets: u32,
    kernarg_size: u32,
    order: u64,
    /// The block header's `vouched_count`; checked ([`BlockIssuer::new`]),
    /// no more than the block's commands, packets and 64-byte shares hold
    /// (so 0 for a block without room for a vouched dispatch); unchecked
    /// ([`BlockIssuer::trusted`]), as the header says.
    vouched: u32,
    /// The last place a vouched dispatch's share of the arguments may
    /// start ([`BlockIssuer::issue_vouched`]).
    last_share: u32,
    /// The issue state's `kernarg_base`, `binding_table`, `binding_count`
    /// and `packet_base`.
    kernarg_base: u64,
    table: u64,
    table_len: u32,
    packet_base: u64,
    queue: Queue,
}

impl BlockIssuer {
    /// The issue described at `state`.
    ///
    /// # Safety
    /// Every active work-item of the wave passes the same `state` (its
    /// fields, block header and queue are read as the wave's,
    /// [`crate::memory::load_invariant_u64`]), which points at a
    /// [`BlockIssue`] in global memory, unchanged while the kernel runs and
    /// written before it started (by the host or an earlier dispatch; the
    /// kernel's packet has an acquire fence of agent scope or wider, so the
    /// scalar cache holds nothing older), whose addresses are live while
    /// the issuer is used: the block and its
    /// commands (the header unchanged too), the execution queue, the kernarg
    /// reservation, the binding table and everything the commands reference
    /// (kernel infos, templates, binding patches, allocation handles,
    /// indirect counts, update data).
    pub unsafe fn new(state: *const BlockIssue) -> Result<Self, IssueError> {
        // SAFETY: the caller's contract.
        unsafe { Self::read::<true, true>(state) }
    }

    /// [`BlockIssuer::new`] without its checks of the issue state (its
    /// addresses' alignments, the queue's size), for the block-issue
    /// kernel, where they would cost every wave.
    ///
    /// # Safety
    /// As for [`BlockIssuer::new`], and the issue state is one aqueduct's
    /// submission or control kernel wrote, for a block header and issue
    /// order aqueduct's recorder wrote: the block, kernarg base, binding
    /// table and issue order aligned as [`BlockIssuer::new`] checks, a
    /// queue whose size is a power of two of at most
    /// [`crate::queue::MAX_QUEUE_PACKETS`] (the host refuses larger ones),
    /// and a block whose `vouched_count` counts the vouched dispatches its
    /// issue order starts with (each with a packet and a share in the
    /// block, so that the fast path's clamps hold).
    pub unsafe fn trusted(state: *const BlockIssue) -> Self {
        // SAFETY: the caller's contract; unchecked, `read` cannot fail.
        match unsafe { Self::read::<true, false>(state) } {
            Ok(issuer) => issuer,
            Err(_) => unreachable!(),
        }
    }

    /// [`BlockIssuer::new`] for an issue state this kernel has just written
    /// (the control kernel issuing a small block itself): read with plain
    /// loads, which the compiler keeps after the stores.
    ///
    /// # Safety
    /// As for [`BlockIssuer::new`], the issue state live but not unchanged.
    pub unsafe fn new_written(state: *const BlockIssue) -> Result<Self, IssueError> {
        // SAFETY: the caller's contract.
        unsafe { Self::read::<false, true>(state) }
    }

    /// [`BlockIssuer::new`], the issue state's fields read with scalar
    /// loads if `INVARIANT`, checked if `CHECKED`.
    ///
    /// # Safety
    /// As for [`BlockIssuer::new`] (the issue state unchanged only if
    /// `INVARIANT`; as for [`BlockIssuer::trusted`] unless `CHECKED`).
    #[inline(always)]
    unsafe fn read<const INVARIANT: bool, const CHECKED: bool>(
        state: *const BlockIssue,
    ) -> Result<Self, IssueError> {
        let at = state as u64;
        let field = |offset: usize| {
            let address = at + offset as u64;
            // SAFETY: the caller's contract: a live issue state (unchanged
            // while the kernel runs if `INVARIANT`); every field is
            // naturally aligned.
            unsafe {
                if INVARIANT {
                    load_invariant_u64(address)
                } else {
                    load::<u64>(address)
                }
            }
        };
        let block = field(core::mem::offset_of!(BlockIssue, block));
        let kernarg_base = field(core::mem::offset_of!(BlockIssue, kernarg_base));
        let table = field(core::mem::offset_of!(BlockIssue, binding_table));
        let queue = field(core::mem::offset_of!(BlockIssue, queue)) as *mut AmdQueue;
        // SAFETY: the caller's contract: the block header is live and
        // unchanged, its fields naturally aligned (the block's alignment
        // is checked below, before any use of what this reads).
        let header = |offset: usize| unsafe {
            // (Unchecked, the block is aligned: no masking.)
            let address = if CHECKED { block & !63 } else { block } + offset as u64;
            if INVARIANT {
                load_invariant_u64(address)
            } else {
                load::<u64>(address)
            }
        };
        let order = header(core::mem::offset_of!(CommandBlockHeader, issue_order));
        // The header's first two words: block index and command count,
        // packet count and kernarg size.
        const _: () = assert!(
            core::mem::offset_of!(CommandBlockHeader, command_count) == 4
                && core::mem::offset_of!(CommandBlockHeader, packet_count) == 8
                && core::mem::offset_of!(CommandBlockHeader, kernarg_size) == 12
        );
        let (first, second) = (header(0), header(8));
        const _: () = assert!(core::mem::offset_of!(CommandBlockHeader, vouched_count) == 24);
        let vouched_count = header(24) as u32;
        // SAFETY: the caller's contract: a live queue, the same for the
        // whole wave.
        let (size, ring, doorbell) = unsafe {
            if INVARIANT {
                Queue::wave_fields(queue)
            } else {
                Queue::fields(queue)
            }
        };
        // One branch for every check (a kernel that cannot issue the
        // block traps there); the first that fails names the error.
        let bad = ((block | kernarg_base) & 63) | (table & 7) | (order & 3);
        if CHECKED && ((bad != 0) | !is_ring_size(size) | (size > MAX_QUEUE_PACKETS)) {
            return Err(first_error(
                &[(block, 64), (kernarg_base, 64), (table, 8), (order, 4)],
                size,
            ));
        }
        // SAFETY: the caller's contract; the queue's own fields, its size
        // checked above.
        let queue = unsafe { Queue::from_fields(queue, size, ring, doorbell) };
        let (commands, packets, kernarg_size) =
            ((first >> 32) as u32, second as u32, (second >> 32) as u32);
        Ok(Self {
            state,
            block,
            commands,
            packets,
            kernarg_size,
            order,
            // (Unchecked, the recorder's count holds: see `trusted`.)
            // Checked: no more than the block's commands, and than its
            // packets and 64-byte shares hold (a block's vouched
            // dispatches have a packet and a share each), so that the
            // fast path's clamps hold: with a vouched dispatch, the block
            // has a packet and a share's room. Unchecked, the header is
            // trusted to say so (see `trusted`).
            vouched: if CHECKED {
                vouched_count
                    .min(commands)
                    .min(packets)
                    .min(kernarg_size / FAST_ARGUMENT_BYTES)
            } else {
                vouched_count
            },
            // (Used only with a vouched dispatch: no wrap.)
            last_share: kernarg_size.wrapping_sub(FAST_ARGUMENT_BYTES) & !(KERNARG_ALIGN - 1),
            kernarg_base,
            table,
            table_len: field(core::mem::offset_of!(BlockIssue, binding_count)) as u32,
            packet_base: field(core::mem::offset_of!(BlockIssue, packet_base)),
            queue,
        })
    }

    fn state(&self) -> &BlockIssue {
        // SAFETY: `new`'s contract: live and unchanged while issuing.
        unsafe { &*self.state }
    }

    /// Commands in the block.
    pub fn command_count(&self) -> u32 {
        self.commands
    }

    /// The command work-item `g` (below [`BlockIssuer::command_count`])
    /// issues: `g`, or the block's issue order's entry `g`.
    pub fn command_for(&self, g: u32) -> u32 {
        if self.order == 0 {
            return g;
        }
        // SAFETY: `new`'s contract: the block's order holds `command_count`
        // u32s (4-byte aligned: checked in `new`, the caller's contract in
        // `trusted`); a block's command count is
        // below 2^30 (it fits the command offsets of `issue_vouched`), so
        // the offset fits 32 bits.
        unsafe { load_u32(self.order + u64::from(4 * g)) }
    }

    /// The binding table.
    fn table(&self) -> &[BindingTableEntry] {
        if self.table_len == 0 {
            return &[];
        }
        // SAFETY: `new`'s contract: the table holds `binding_count` entries,
        // 8-byte aligned (its layout's alignment), live and unchanged while
        // the block issues.
        unsafe {
            core::slice::from_raw_parts(
                self.table as *const BindingTableEntry,
                self.table_len as usize,
            )
        }
    }

    fn resolve(&self, r: &BufferRef) -> Result<u64, IssueError> {
        if r.kind == BufferRefKind::ALLOCATION {
            check_aligned(r.address, 8)?;
        }
        resolve(r, self.table(), |address| {
            // SAFETY: `new`'s contract: the handles the commands name are
            // live.
            unsafe { load::<AllocationHandle>(address) }
        })
    }

    /// Whether the submission runs under the device scheduler
    /// ([`Execution::entry`]): its RETURN then dispatches the control
    /// kernel, which retires the entry.
    ///
    /// # Safety
    /// The issue state's `execution` is live (or 0: none).
    unsafe fn scheduled(&self) -> Result<bool, IssueError> {
        let execution = check_aligned(self.state().execution, 64)?;
        if execution == 0 {
            return Ok(false);
        }
        // SAFETY: the contract.
        Ok(unsafe { load::<u64>(execution + core::mem::offset_of!(Execution, entry) as u64) } != 0)
    }

    /// Issues every command of the block, one after the other, in this
    /// work-item (the serial issue: [`Execution::serial_threshold`]).
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

    /// Issues command `index`, whatever it is, checked: checks it against
    /// the block, writes its kernel arguments and packet bodies, then
    /// publishes its packets. Nothing is published when it fails (a
    /// dispatch's own arguments may be half written: no packet points at
    /// them).
    pub fn issue(&self, index: u32) -> Result<(), IssueError> {
        let count = self.commands;
        if index >= count {
            return Err(IssueError::NoCommand { index, count });
        }
        let at = self.block + 64 + COMMAND_SIZE as u64 * u64::from(index);
        // SAFETY: `new`'s contract: the block's commands follow its header
        // (64-byte aligned: the block is, and commands are 128 bytes).
        let d = unsafe { &*(at as *const DispatchCommand) };
        if d.header.opcode == CommandOpcode::DISPATCH && d.packet != 0 {
            return self.prepared_dispatch(d);
        }
        // SAFETY: as above.
        let command = unsafe { load::<Command>(at) };
        let h = command.header;
        let packets = packets_of(&command)?;
        // Both range checks as flags, one branch each at the end.
        let packet_end = u64::from(h.packet_offset) + u64::from(h.packet_count);
        let bad_packets = (h.packet_count != packets) | (packet_end > u64::from(self.packets));
        let args = command.kernarg_bytes();
        let args_end = u64::from(h.kernarg_offset) + u64::from(args);
        let bad_args =
            (h.kernarg_offset % KERNARG_ALIGN != 0) | (args_end > u64::from(self.kernarg_size));
        if bad_packets {
            return Err(IssueError::Packets {
                offset: h.packet_offset,
                count: h.packet_count,
                block: self.packets,
            });
        }
        if bad_args {
            return Err(IssueError::Kernargs {
                offset: h.kernarg_offset,
                size: args,
                block: self.kernarg_size,
            });
        }
        let kernargs = self.kernarg_base + u64::from(h.kernarg_offset);
        let id = self.packet_base.wrapping_add(u64::from(h.packet_offset));
        let packet = match command.view() {
            Ok(CommandView::Dispatch(d)) => self.dispatch(d, kernargs, id)?,
            Ok(CommandView::Fill(f)) => {
                let dst = self.resolve(&f.target)?;
                let len = f.target.length;
                let size = f.pattern_length;
                let [lo, hi] = pattern_words(&f.pattern);
                FillPattern::new(lo, hi, u32::from(size)).ok_or(IssueError::Pattern(size))?;
                if len % u64::from(size) != 0 {
                    return Err(IssueError::Length {
                        need: len.next_multiple_of(u64::from(size)),
                        have: len,
                    });
                }
                let args = FillArgs {
                    dst,
                    len,
                    pattern_lo: lo,
                    pattern_hi: hi,
                    pattern_size: u32::from(size),
                    reserved: 0,
                };
                // SAFETY: `new`'s contract: the fill kernel's info is live.
                let kernel =
                    unsafe { load::<KernelInfo>(check_aligned(self.state().fill_kernel, 64)?) };
                let units = Partition::fill(dst, len).units();
                let packet = blit_packet(&kernel, kernargs, units, h.ordering(false))?;
                // SAFETY: checked above: the arguments lie inside the
                // block's kernarg reservation, which only this command
                // writes there.
                unsafe { store(kernargs, args) };
                packet
            }
            Ok(CommandView::Copy(c)) => {
                if c.source.length != c.target.length {
                    return Err(IssueError::Length {
                        need: c.target.length,
                        have: c.source.length,
                    });
                }
                let src = self.resolve(&c.source)?;
                let dst = self.resolve(&c.target)?;
                self.copy(&h, kernargs, dst, src, c.target.length)?
            }
            Ok(CommandView::Update(u)) => {
                let dst = self.resolve(&u.target)?;
                self.copy(&h, kernargs, dst, u.source_data, u.target.length)?
            }
            Ok(CommandView::Barrier(_)) => no_op(h.ordering(true))?,
            // SAFETY: `new`'s contract: the submission's execution is
            // live (RETURN only: the other commands never read it).
            Ok(CommandView::Return(_)) if unsafe { !self.scheduled()? } => {
                Packet::Barrier(barrier(
                    BarrierKind::And,
                    &[],
                    self.state().completion_signal,
                    h.ordering(true),
                )?)
            }
            Ok(CommandView::Branch(_) | CommandView::CondBranch(_) | CommandView::Return(_)) => {
                // SAFETY: `new`'s contract: the control kernel's info is
                // live (alignment checked).
                let kernel =
                    unsafe { load::<KernelInfo>(check_aligned(self.state().control_kernel, 64)?) };
                let packet = KernelDispatch {
                    private_segment_size: kernel.private_segment_size,
                    group_segment_size: kernel.group_segment_size,
                    ordering: h.ordering(true),
                    // A scheduled RETURN still decrements it.
                    completion_signal: if h.opcode == CommandOpcode::RETURN {
                        self.state().completion_signal
                    } else {
                        SignalHandle::NULL
                    },
                    ..KernelDispatch::linear(kernel.kernel_object, kernargs, 1, 1)
                }
                .build_unchecked()?;
                let args = BranchArgs {
                    execution: self.state().execution,
                    command: at,
                };
                // SAFETY: checked above: inside the reservation.
                unsafe { store(kernargs, args) };
                Packet::Dispatch(packet)
            }
            Err(op) => return Err(IssueError::Opcode(op.0)),
        };
        match packet {
            Packet::Dispatch(p) => self.queue.write(id, &p),
            Packet::Barrier(p) => self.queue.write_barrier(id, &p),
        }
        Ok(())
    }

    /// A dispatch command's arguments and packet (the patch kernel's for an
    /// INDIRECT_DYNAMIC one, whose own packet goes unpublished at `id + 1`).
    fn dispatch(&self, d: &DispatchCommand, kernargs: u64, id: u64) -> Result<Packet, IssueError> {
        // SAFETY: `new`'s contract: the kernel's info is live (alignment
        // checked).
        let info = unsafe { load::<KernelInfo>(check_aligned(d.kernel, 64)?) };
        let dynamic = d.dispatch_flags.contains(DispatchFlags::INDIRECT_DYNAMIC);
        let indirect = dynamic || d.dispatch_flags.contains(DispatchFlags::INDIRECT_STATIC);
        let count_at = if indirect {
            let r = &d.workgroup_count_ref;
            if r.length < 12 {
                return Err(IssueError::Length {
                    need: 12,
                    have: r.length,
                });
            }
            check_aligned(self.resolve(r)?, 4)?
        } else {
            0
        };
        let count = if dynamic {
            // A stand-in: the patch kernel writes the real grid.
            [1; 3]
        } else if indirect {
            // SAFETY: resolved and range-checked: 12 readable bytes,
            // alignment checked.
            unsafe { load::<[u32; 3]>(count_at) }
        } else {
            d.workgroup_count
        };
        let packet = dispatch_packet(d, &info, kernargs, count)?;
        let packet = match packet {
            Packet::Dispatch(real) if dynamic => {
                // SAFETY: `new`'s contract: the patch kernel's info is live
                // (alignment checked).
                let patch =
                    unsafe { load::<KernelInfo>(check_aligned(self.state().patch_kernel, 64)?) };
                let Packet::Barrier(no_op) = no_op(d.header.ordering(false))? else {
                    return Err(IssueError::Opcode(d.header.opcode.0));
                };
                let patch_at = kernargs + u64::from(d.kernarg_size.next_multiple_of(KERNARG_ALIGN));
                let args = PatchArgs {
                    packet: self.queue.slot_address(id.wrapping_add(1)),
                    count: count_at,
                    first_word: real.first_word(),
                    no_op_header: no_op.first_word() as u16,
                    dimensions: u16::from(d.dimensions),
                    workgroup_size: d.workgroup_size,
                    reserved: 0,
                };
                let packet = KernelDispatch {
                    private_segment_size: patch.private_segment_size,
                    group_segment_size: patch.group_segment_size,
                    ordering: d.header.ordering(true),
                    ..KernelDispatch::linear(patch.kernel_object, patch_at, 1, 1)
                }
                .build_unchecked()?;
                self.queue.write_unpublished(id.wrapping_add(1), &real);
                // SAFETY: checked in `issue`: the patch arguments follow the
                // kernel's inside the command's share of the reservation.
                unsafe { store(patch_at, args) };
                Packet::Dispatch(packet)
            }
            other => other,
        };
        self.arguments(d, kernargs)?;
        Ok(packet)
    }

    /// Issues command `index`, a dispatch the recorder vouched for
    /// ([`IssueShape`](aqueduct_abi::command::IssueShape)): the fast path,
    /// which the work-items below the
    /// block's `vouched_count` take ([`BlockIssuer::issue_work_item`]).
    ///
    /// It checks nothing the recorder vouched for (that is the point of
    /// vouching), and does not look at what kind of command it has:
    /// every vouched dispatch has one layout whatever its kernel, so one
    /// code without a branch, its offsets immediates, serves a whole wave
    /// of them. It loads everything first (the command's fields; its
    /// argument units, patches and packet; the patches' table entries),
    /// then writes the arguments and the bindings, then the packet with
    /// its kernarg address, and publishes it. It clamps every write into
    /// the block's reservations (the command's share into the block's
    /// arguments, its packet into the block's packets, a binding into its
    /// share: the block has room for one, [`BlockIssuer::new`] counts no
    /// vouched dispatch otherwise and [`BlockIssuer::trusted`]'s caller
    /// vouches for it), so that a damaged command (its fields, template or
    /// patches; not the block header or issue order) writes only inside
    /// its block's reservations. It may still publish its packet over
    /// another command's slot, leaving that one's empty, so the queue
    /// stops there instead of faulting; and a damaged slot reads whatever
    /// lies at the table's address plus 16 times it.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)]
    pub fn issue_vouched(&self, index: u32) {
        const UNITS: usize = (FAST_ARGUMENT_BYTES / KERNARG_ALIGN) as usize;
        let at = self.block + u64::from(64 + COMMAND_SIZE as u32 * index);
        // SAFETY: `new`'s contract: the block's commands follow its header,
        // the issue order names them (a block holds at most
        // MAX_BLOCK_COMMANDS, so the offset fits 32 bits); the words read
        // are inside the command (128 bytes, 64-byte aligned: the block
        // is) and 8-byte aligned.
        let word = |offset: usize| unsafe { load_u64(at + offset as u64) };
        // SAFETY: as above, 4-byte aligned.
        let half = |offset: usize| unsafe { load_u32(at + offset as u64) };
        let (packet_offset, kernarg_offset) = (
            half(core::mem::offset_of!(CommandHeader, packet_offset)),
            half(core::mem::offset_of!(CommandHeader, kernarg_offset)),
        );
        let template = word(core::mem::offset_of!(DispatchCommand, kernarg_template));
        let bindings = word(core::mem::offset_of!(DispatchCommand, bindings));
        let packet = word(core::mem::offset_of!(DispatchCommand, packet));
        // Loads in the order their data is needed last: on gfx9 stores
        // count in the same counter as loads, so the wait for the patches
        // covers the units and the packet, and their stores wait no more.
        let units: [[u64; 2]; UNITS] = core::array::from_fn(|u| {
            let at = template + 16 * u as u64;
            // SAFETY: `new`'s contract: the vouched command's template is
            // live, FAST_ARGUMENT_BYTES readable, 16-byte aligned
            // (`IssueShape`).
            unsafe { [load_u64(at), load_u64(at + 8)] }
        });
        // SAFETY: `new`'s contract: the vouched command's prepared packet
        // is live (64-byte aligned).
        let words: [u64; 8] = core::array::from_fn(|k| unsafe { load_u64(packet + 8 * k as u64) });
        keep_order();
        let patches: [[u64; 2]; FAST_PATCHES] = core::array::from_fn(|b| {
            let at = bindings + PATCH_SIZE * b as u64;
            // SAFETY: `new`'s contract: the vouched command's patch list is
            // live, FAST_PATCHES long, 16-byte aligned.
            unsafe { [load_u64(at), load_u64(at + 8)] }
        });
        // The last loaded patch's slot first: its wait covers the others.
        let mut entries = [0u64; FAST_PATCHES];
        for b in (0..FAST_PATCHES).rev() {
            let slot = patches[b][0] as u32;
            // SAFETY: `new`'s contract: the table is live, 8-byte aligned,
            // and holds every slot the recording uses (the submission
            // checked), slot 0 at least (`BindingPatch::FILLER`); it holds
            // at most MAX_BINDING_SLOTS, so the offset fits 32 bits.
            entries[b] = unsafe { load_u64(self.table + u64::from(16 * slot)) };
        }
        // The share clamped into the block's arguments, the packet into
        // the block's.
        let kernarg_offset = (kernarg_offset & !(KERNARG_ALIGN - 1)).min(self.last_share);
        let packet_offset = packet_offset.min(self.packets.wrapping_sub(1));
        let share = self.kernarg_base + u64::from(kernarg_offset);
        for u in 0..UNITS {
            let [lo, hi] = units[u];
            let at = share + 16 * u as u64;
            // SAFETY: inside the command's share of the reservation (its
            // offset clamped above), 16-byte aligned.
            unsafe {
                store_u64(at, lo);
                store_u64(at + 8, hi);
            }
        }
        // The last loaded first: its wait covers the others.
        for b in (0..FAST_PATCHES).rev() {
            let [head, value] = patches[b];
            let place = (head >> 48) as u32 & (FAST_ARGUMENT_BYTES - 8);
            // SAFETY: 8 bytes inside the command's share (the place masked
            // into it), 8-byte aligned.
            unsafe {
                store_u64(
                    self.kernarg_base + u64::from(kernarg_offset + place),
                    entries[b].wrapping_add(value),
                )
            };
        }
        self.publish_prepared(words, share, packet_offset);
    }

    /// Publishes a prepared dispatch's packet ([`DispatchCommand::packet`],
    /// given as its eight words) at the block's packet `packet_offset`,
    /// with its kernel arguments at `kernargs`: the one place every path
    /// of a prepared dispatch fills in the kernarg address.
    #[inline(always)]
    fn publish_prepared(&self, mut words: [u64; 8], kernargs: u64, packet_offset: u32) {
        words[KERNARG_ADDRESS_WORD] = kernargs;
        self.queue.write_words(
            self.packet_base.wrapping_add(u64::from(packet_offset)),
            &words,
        );
    }

    /// A dispatch whose packet the host prepared ([`DispatchCommand::packet`]:
    /// direct, at least one workgroup), on the checked path: the fast
    /// path's work ([`BlockIssuer::issue_vouched`]), with every check's own
    /// error. Checks
    /// its place in the block, writes its arguments, copies the packet with
    /// the kernarg address filled in, publishes it.
    fn prepared_dispatch(&self, d: &DispatchCommand) -> Result<(), IssueError> {
        let h = &d.header;
        let bad = (h.packet_count != 1)
            | !d.dispatch_flags.is_empty()
            | (u64::from(h.packet_offset) + 1 > u64::from(self.packets))
            | !h.kernarg_offset.is_multiple_of(KERNARG_ALIGN)
            | (u64::from(h.kernarg_offset) + u64::from(d.kernarg_size)
                > u64::from(self.kernarg_size))
            | !aligned(d.packet, 16);
        if bad {
            return Err(IssueError::Prepared {
                packet_offset: h.packet_offset,
                kernarg_offset: h.kernarg_offset,
            });
        }
        let kernargs = self.kernarg_base + u64::from(h.kernarg_offset);
        self.arguments(d, kernargs)?;
        // SAFETY: `new`'s contract: the prepared packet is live; 16-byte
        // aligned (checked above).
        let words = unsafe { load::<[u64; 8]>(d.packet) };
        self.publish_prepared(words, kernargs, h.packet_offset);
        Ok(())
    }

    /// A dispatch command's kernel arguments: the template copied to
    /// `kernargs`, then each binding resolved, checked and patched in.
    fn arguments(&self, d: &DispatchCommand, kernargs: u64) -> Result<(), IssueError> {
        check_aligned(d.bindings, 8)?;
        check_aligned(d.kernarg_template, 16)?;
        // A binding's fallback place below (the arguments' first word) must
        // be inside them.
        if d.binding_count > 0 && d.kernarg_size < 8 {
            return Err(IssueError::Kernargs {
                offset: 0,
                size: 8,
                block: d.kernarg_size,
            });
        }
        // Whole 8-byte words: the template is 16-byte aligned and padded to
        // 16 bytes, and so is the command's share of the reservation.
        for w in 0..u64::from(d.kernarg_size.div_ceil(8)) {
            // SAFETY: inside the padded template and the command's share of
            // the reservation (checked by the caller), both 8-aligned.
            unsafe { store(kernargs + 8 * w, load::<u64>(d.kernarg_template + 8 * w)) };
        }
        // The bindings, each resolved, checked and patched in one pass,
        // with no branch per binding (a divergent exit from the loop costs
        // more than the work): a failure is remembered, and the first one
        // is looked at again, on the slow path, for its error. A failure
        // leaves the command's own arguments half written, which no packet
        // points at (nothing is published).
        let mut failed = u64::MAX;
        for b in 0..u64::from(d.binding_count) {
            // SAFETY: `new`'s contract: the command's patch list is live
            // (alignment checked above).
            let patch = unsafe { load::<BindingPatch>(d.bindings + b * PATCH_SIZE) };
            let (address, ok) = match self.patch_address(&patch) {
                Ok(address) => (address, true),
                Err(_) => (0, false),
            };
            let offset = u32::from(patch.kernarg_offset);
            let inside = offset.is_multiple_of(8) & (offset + 8 <= d.kernarg_size);
            if !(ok & inside) & (failed == u64::MAX) {
                failed = b;
            }
            // SAFETY: 8 bytes inside the command's arguments: the patch's
            // place if it is inside them, else their first word (they hold
            // at least 8 bytes: checked at the top).
            unsafe {
                store(
                    kernargs + u64::from(if inside { offset } else { 0 }),
                    address,
                )
            };
        }
        if failed != u64::MAX {
            // SAFETY: as above.
            let patch = unsafe { load::<BindingPatch>(d.bindings + failed * PATCH_SIZE) };
            self.patch_address(&patch)?;
            return Err(IssueError::Kernargs {
                offset: u32::from(patch.kernarg_offset),
                size: 8,
                block: d.kernarg_size,
            });
        }
        Ok(())
    }

    /// The address a binding patch writes: a binding-table slot's plus the
    /// offset (the range was checked when the table was bound), or an
    /// allocation reference resolved against its handle.
    fn patch_address(&self, patch: &BindingPatch) -> Result<u64, IssueError> {
        match BufferRefKind(u32::from(patch.kind)) {
            BufferRefKind::BINDING => {
                let table = self.table();
                let entry = table.get(patch.slot as usize).ok_or(IssueError::Binding {
                    slot: patch.slot,
                    count: table.len() as u32,
                })?;
                Ok(entry.address.wrapping_add(patch.value))
            }
            BufferRefKind::ALLOCATION => {
                // SAFETY: `new`'s contract: the reference the patch names is
                // live (alignment checked).
                let r = unsafe { load::<BufferRef>(check_aligned(patch.value, 8)?) };
                if r.kind != BufferRefKind::ALLOCATION {
                    return Err(IssueError::RefKind(r.kind.0));
                }
                self.resolve(&r)
            }
            other => Err(IssueError::RefKind(other.0)),
        }
    }

    /// A copy's arguments and packet (COPY and UPDATE).
    fn copy(
        &self,
        h: &CommandHeader,
        kernargs: u64,
        dst: u64,
        src: u64,
        len: u64,
    ) -> Result<Packet, IssueError> {
        // SAFETY: `new`'s contract: the copy kernel's info is live.
        let kernel = unsafe { load::<KernelInfo>(check_aligned(self.state().copy_kernel, 64)?) };
        let units = CopyPlan::new(dst, src, len).partition.units();
        let packet = blit_packet(&kernel, kernargs, units, h.ordering(false))?;
        // SAFETY: checked in `issue`: inside the reservation.
        unsafe { store(kernargs, CopyArgs { dst, src, len }) };
        Ok(packet)
    }
}

/// Work-items per workgroup of the block-issue kernel (its launch bound in
/// `xtask`'s device build).
pub const ISSUE_WORKGROUP: u16 = 64;

/// The patch kernel's work: reads an INDIRECT_DYNAMIC dispatch's workgroup
/// count now, writes the grid into its packet (whose body the issue wrote,
/// header INVALID) and publishes it with a system-scope release store; a
/// count of 0 in a used dimension makes the slot a barrier-AND that waits
/// for nothing, with the command's ordering. Counts beyond the dispatch's
/// dimensions are ignored.
///
/// # Safety
/// `args.count` holds 12 readable bytes and `args.packet` is the reserved,
/// unpublished slot of the dispatch (the patch kernel's contract).
pub unsafe fn patch_dispatch(args: &PatchArgs) -> Result<(), IssueError> {
    // SAFETY: the contract (alignment checked).
    let count = unsafe { load::<[u32; 3]>(check_aligned(args.count, 4)?) };
    let slot = check_aligned(args.packet, 64)?;
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
    let first_word = if empty {
        // A barrier-AND's body is all zeros: no dependencies, no signal.
        for word in 1..16 {
            // SAFETY: the slot's 64 bytes are ours until published.
            unsafe { store(slot + 4 * word, 0u32) };
        }
        u32::from(args.no_op_header)
    } else {
        for (axis, &g) in grid.iter().enumerate() {
            // SAFETY: as above: grid_size_x/y/z at bytes 12, 16 and 20.
            unsafe { store(slot + 12 + 4 * axis as u64, g) };
        }
        args.first_word
    };
    // SAFETY: the slot's first word, 4-byte aligned, which the packet
    // processor reads atomically.
    unsafe {
        crate::atomic::Atomic::<u32>::from_ptr(slot as *mut u32).store(
            first_word,
            crate::atomic::Release,
            crate::atomic::System,
        )
    };
    Ok(())
}

/// The block a BRANCH or COND_BRANCH continues with: its target, or for a
/// conditional one the true or false block by the value in memory now.
///
/// # Safety
/// `execution` and `command` are live (the control kernel's contract), and
/// so is everything they reference.
pub unsafe fn branch_target(execution: &Execution, command: &Command) -> Result<u32, IssueError> {
    match command.view() {
        Ok(CommandView::Branch(b)) => Ok(b.target_block),
        Ok(CommandView::CondBranch(c)) => {
            // Every block's issue state holds the submission's binding table.
            // SAFETY: the contract: the issues are live.
            let issue = unsafe { load::<BlockIssue>(check_aligned(execution.issues, 64)?) };
            check_aligned(issue.binding_table, 8)?;
            let table = if issue.binding_count == 0 {
                &[][..]
            } else {
                // SAFETY: the table holds `binding_count` entries, aligned.
                unsafe {
                    core::slice::from_raw_parts(
                        issue.binding_table as *const BindingTableEntry,
                        issue.binding_count as usize,
                    )
                }
            };
            if c.condition.kind == BufferRefKind::ALLOCATION {
                check_aligned(c.condition.address, 8)?;
            }
            if c.condition.length < 8 {
                return Err(IssueError::Length {
                    need: 8,
                    have: c.condition.length,
                });
            }
            let at = resolve(&c.condition, table, |address| {
                // SAFETY: the contract: the handle is live.
                unsafe { load::<AllocationHandle>(address) }
            })?;
            // SAFETY: resolved and range-checked: 8 readable bytes, aligned.
            let memory = unsafe { load::<u64>(check_aligned(at, 8)?) };
            let taken = c
                .cond
                .holds(memory, c.value as u64)
                .ok_or(IssueError::Opcode(command.header.opcode.0))?;
            Ok(if taken { c.true_block } else { c.false_block })
        }
        _ => Err(IssueError::Opcode(command.header.opcode.0)),
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
///
/// # Safety
/// `execution` is live, with everything it references.
pub unsafe fn issue_block(
    execution: &Execution,
    target: u32,
    mut pause: impl FnMut(),
) -> Result<(), IssueError> {
    // SAFETY: the contract.
    unsafe {
        issue_block_with::<true>(execution, target, || {
            pause();
            true
        })
    }
}

/// [`issue_block`] without the serial issue: always the block-issue
/// dispatch, whatever the block's size. For the scheduler's tick, which
/// must stay a small kernel (the serial issue is the whole command
/// translation). `pause` returning false gives up the wait for room
/// ([`crate::queue::QueueError::Abandoned`]).
///
/// # Safety
/// As for [`issue_block`].
pub unsafe fn dispatch_block(
    execution: &Execution,
    target: u32,
    pause: impl FnMut() -> bool,
) -> Result<(), IssueError> {
    // SAFETY: the contract.
    unsafe { issue_block_with::<false>(execution, target, pause) }
}

/// [`issue_block`], with the serial path only if `SERIAL`.
///
/// # Safety
/// As for [`issue_block`].
#[inline(always)]
unsafe fn issue_block_with<const SERIAL: bool>(
    execution: &Execution,
    target: u32,
    pause: impl FnMut() -> bool,
) -> Result<(), IssueError> {
    // SAFETY: the contract (alignment checked).
    let header =
        unsafe { load::<CommandBufferHeader>(check_aligned(execution.command_buffer, 64)?) };
    if target >= header.block_count {
        return Err(IssueError::NoCommand {
            index: target,
            count: header.block_count,
        });
    }
    let blocks = check_aligned(header.blocks, 8)?;
    // SAFETY: the header's block list holds `block_count` addresses.
    let block_at = unsafe { load::<u64>(blocks + 8 * u64::from(target)) };
    // SAFETY: a live block header (alignment checked).
    let block = unsafe { load::<CommandBlockHeader>(check_aligned(block_at, 64)?) };
    // SAFETY: a live queue.
    let queue =
        unsafe { Queue::from_ptr(execution.queue as *mut AmdQueue) }.map_err(IssueError::Queue)?;
    let issue = check_aligned(execution.issues, 64)? + 128 * u64::from(target);
    if SERIAL && block.command_count <= execution.serial_threshold {
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
        // SAFETY: the block's issue state is live and read by no one else
        // now (its previous issue completed before the branch that runs
        // this); BlockIssue::packet_base is at byte 16.
        unsafe { store(issue + 16, first) };
        // SAFETY: the contract: the issue state describes a live block.
        let issuer = unsafe { BlockIssuer::new_written(issue as *const BlockIssue) }?;
        issuer.issue_serially()?;
        queue.ring_doorbell(first.wrapping_add(count - 1));
        return Ok(());
    }
    let args = check_aligned(execution.issue_args, 16)? + 16 * u64::from(target);
    let packet = KernelDispatch {
        ordering: Ordering::AGENT,
        ..KernelDispatch::linear(
            execution.issue_kernel,
            args,
            block.command_count.max(1),
            ISSUE_WORKGROUP,
        )
    }
    .build_unchecked()?;
    let first = queue
        .reserve_until(1 + u64::from(block.packet_count), pause)
        .map_err(IssueError::Queue)?;
    // SAFETY: the block's issue state is live and not read by anyone until
    // the packet below is published (its previous issue completed before
    // the branch that runs this).
    unsafe {
        store(issue + 16, first.wrapping_add(1));
    }
    queue.write(first, &packet);
    queue.ring_doorbell(first.wrapping_add(u64::from(block.packet_count)));
    Ok(())
}

/// The block-issue kernel.
#[cfg(all(target_arch = "amdgpu", feature = "kernels"))]
pub mod kernels {
    use aqueduct_abi::command::BlockIssue;

    use core::arch::amdgpu::{workgroup_id_x, workitem_id_x};

    use super::BlockIssuer;
    use crate::arch::work_item_x;

    /// Issues the block described at `issue` serially in work-item 0 (the
    /// serial issue mode: launch one work-item); traps like
    /// [`cmd_block_issue`].
    #[unsafe(no_mangle)]
    pub extern "gpu-kernel" fn cmd_block_issue_serial(issue: *const BlockIssue) {
        if work_item_x().global_id() != 0 {
            return;
        }
        // SAFETY: the kernel's contract: `issue` describes a live block.
        let Ok(issuer) = (unsafe { BlockIssuer::new(issue) }) else {
            panic!("cmd_block_issue_serial: bad issue state");
        };
        let mut r = crate::scheduler::QueueRequester {
            pause: crate::arch::pause,
        };
        // The entry starts (a later block was recorded by the control
        // kernel that issued it).
        // SAFETY: as above.
        unsafe { crate::scheduler::trace_block(issue as u64, true, &mut r) };
        if issuer.issue_serially().is_err() {
            panic!("cmd_block_issue_serial: a command failed its checks");
        }
    }

    /// Issues the block described at `issue`, one work-item per command:
    /// launch at least `command_count` work-items (the rest return), in
    /// workgroups of [`super::ISSUE_WORKGROUP`]. A command on the checked
    /// path that cannot be issued traps (a queue error for this dispatch):
    /// the host validated it, so the recording is damaged. The issue state
    /// is trusted, not checked ([`BlockIssuer::trusted`]), and so are the
    /// dispatches the recorder vouched for ([`BlockIssuer::issue_vouched`]).
    ///
    /// One command per work-item, no loop: a grid-stride loop over the
    /// commands keeps the whole issue state live across iterations, and
    /// the kernel then spilled 77 SGPRs.
    #[unsafe(no_mangle)]
    pub extern "gpu-kernel" fn cmd_block_issue(issue: *const BlockIssue) {
        // SAFETY: the kernel's contract: `issue` describes a live block,
        // its issue state written by aqueduct.
        let issuer = unsafe { BlockIssuer::trusted(issue) };
        // The launchers use workgroups of ISSUE_WORKGROUP work-items (the
        // kernel's launch bound), for blocks of at most 2^16 commands (the
        // recorder's limit), so nothing below wraps.
        let first = workgroup_id_x().wrapping_mul(u32::from(super::ISSUE_WORKGROUP));
        let id = first.wrapping_add(workitem_id_x());
        // (The workgroup first: a scalar branch for all but one.)
        if first == 0 && id == 0 {
            let mut r = crate::scheduler::QueueRequester {
                pause: crate::arch::pause,
            };
            // The entry starts (a later block was recorded by the control
            // kernel that issued it).
            // SAFETY: as above.
            unsafe { crate::scheduler::trace_block(issue as u64, true, &mut r) };
        }
        // Work-items below the block's vouched dispatches take the fast
        // path, so a wave of them runs one code without divergence; a
        // workgroup all of whose work-items do decides so with one scalar
        // branch. The launchers size the grid to the commands.
        let end = first.wrapping_add(u32::from(super::ISSUE_WORKGROUP));
        if issuer.all_vouched(end) {
            issuer.issue_vouched(issuer.command_for(id));
        } else if id < issuer.command_count() && issuer.issue_work_item(id).is_err() {
            panic!("cmd_block_issue: a command failed its checks");
        }
    }

    /// The patch kernel of an INDIRECT_DYNAMIC dispatch (one work-item):
    /// [`super::patch_dispatch`] on its arguments, which are
    /// [`aqueduct_abi::command::PatchArgs`]' fields in order (a test checks
    /// the metadata's offsets against the struct's). Traps on a grid that
    /// overflows.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub extern "gpu-kernel" fn cmd_patch_dispatch(
        packet: u64,
        count: u64,
        first_word: u32,
        no_op_header: u16,
        dimensions: u16,
        workgroup_x: u16,
        workgroup_y: u16,
        workgroup_z: u16,
    ) {
        if work_item_x().global_id() != 0 {
            return;
        }
        let args = aqueduct_abi::command::PatchArgs {
            packet,
            count,
            first_word,
            no_op_header,
            dimensions,
            workgroup_size: [workgroup_x, workgroup_y, workgroup_z],
            reserved: 0,
        };
        // SAFETY: the kernel's contract: written by the issue of the
        // dispatch, naming its reserved slot and count.
        if unsafe { super::patch_dispatch(&args) }.is_err() {
            panic!("cmd_patch_dispatch: bad workgroup count");
        }
    }

    /// The control kernel of BRANCH and COND_BRANCH (one work-item): picks
    /// the next block and issues it ([`super::issue_block`]); of a RETURN
    /// under the device scheduler: retires the entry
    /// ([`crate::scheduler::retire`]). Traps when the command or the
    /// submission is damaged.
    #[unsafe(no_mangle)]
    pub extern "gpu-kernel" fn cmd_branch(
        execution: *const aqueduct_abi::command::Execution,
        command: *const aqueduct_abi::command::Command,
    ) {
        if work_item_x().global_id() != 0 {
            return;
        }
        // SAFETY: the kernel's contract: both live, written by the issue of
        // the block that ends in this command.
        let (execution, command) = unsafe { (&*execution, &*command) };
        if command.header.opcode == aqueduct_abi::command::CommandOpcode::RETURN {
            let mut r = crate::scheduler::QueueRequester {
                pause: crate::arch::pause,
            };
            // SAFETY: a RETURN dispatches this kernel only under a
            // scheduler (Execution::entry set), once the entry's work is
            // done (barrier bit).
            unsafe { crate::scheduler::retire(execution.entry, &mut r) };
            return;
        }
        // SAFETY: as above.
        let Ok(target) = (unsafe { super::branch_target(execution, command) }) else {
            panic!("cmd_branch: bad branch");
        };
        // SAFETY: as above.
        let mut r = crate::scheduler::QueueRequester {
            pause: crate::arch::pause,
        };
        let issue = execution.issues
            + size_of::<aqueduct_abi::command::BlockIssue>() as u64 * u64::from(target);
        // Recorded before the issue (after it, in the serial issue's path,
        // the call made this kernel spill 220 SGPRs instead of 45 on
        // gfx942); its issue kernel does not record it again.
        // SAFETY: the block's live issue state (its execution's).
        unsafe { crate::scheduler::trace_block(issue, false, &mut r) };
        // SAFETY: as above.
        if unsafe { super::issue_block(execution, target, crate::arch::pause) }.is_err() {
            panic!("cmd_branch: cannot issue the next block");
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::boxed::Box;
    use std::vec::Vec;

    use aqueduct_abi::aql::{BarrierAndPacket, FenceScope, PacketType};
    use aqueduct_abi::command::{
        BarrierCommand, CommandFlags, CopyCommand, FillCommand, IssueShape, ReturnCommand,
        UpdateCommand,
    };

    use super::*;
    use crate::queue::testing::HostQueue;

    /// One 64-byte line, so blocks and kernargs get their alignment.
    #[derive(Clone, Copy)]
    #[repr(C, align(64))]
    struct Line([u8; 64]);

    fn lines(bytes: usize) -> Vec<Line> {
        std::vec![Line([0; 64]); bytes.div_ceil(64)]
    }

    /// Sentinel kernel objects: 64-aligned, never run.
    const USER_KERNEL: u64 = 0x1000_0040;
    const FILL_KERNEL: u64 = 0x2000_0080;
    const COPY_KERNEL: u64 = 0x3000_00c0;

    fn info(kernel_object: u64, kernarg_size: u32, lds: u32) -> KernelInfo {
        KernelInfo {
            kernel_object,
            kernarg_size,
            kernarg_alignment: 16,
            group_segment_size: lds,
            private_segment_size: 48,
            required_workgroup_size: [0; 3],
            wavefront_size: 64,
            trace_id: 7,
            reserved: [0; 3],
        }
    }

    /// A block being put together in host memory, with everything its
    /// commands reference.
    struct Rig {
        block: Vec<Line>,
        commands: Vec<Command>,
        kernargs: Vec<Line>,
        kernarg_size: u32,
        packets: u32,
        infos: Box<[KernelInfo; 3]>,
        table: Vec<BindingTableEntry>,
        host: HostQueue,
        /// The submission's execution: a host submission (no entry)
        /// unless a test sets one.
        execution: Box<Execution>,
        /// The block header's `vouched_count`.
        vouched: u32,
    }

    impl Rig {
        fn new() -> Self {
            Self {
                block: Vec::new(),
                commands: Vec::new(),
                kernargs: Vec::new(),
                kernarg_size: 0,
                packets: 0,
                infos: Box::new([
                    info(USER_KERNEL, 24, 512),
                    info(FILL_KERNEL, 40, 0),
                    info(COPY_KERNEL, 24, 0),
                ]),
                table: Vec::new(),
                host: HostQueue::new(64, 1000),
                execution: Box::new(zeroed()),
                vouched: 0,
            }
        }

        fn user_kernel(&self) -> u64 {
            &raw const self.infos[0] as u64
        }

        /// Appends `c`, giving it the next packets and kernarg bytes.
        fn push(&mut self, c: impl Into<Command>) -> u32 {
            let mut c: Command = c.into();
            c.header.packet_offset = self.packets;
            c.header.packet_count = packets_of(&c).unwrap();
            c.header.kernarg_offset = self.kernarg_size;
            self.packets += u32::from(c.header.packet_count);
            self.kernarg_size += c.kernarg_bytes().next_multiple_of(KERNARG_ALIGN);
            self.commands.push(c);
            self.commands.len() as u32 - 1
        }

        /// Lays the block out and returns its issue state.
        fn issue_state(&mut self) -> Box<BlockIssue> {
            let header = CommandBlockHeader {
                block_index: 0,
                command_count: self.commands.len() as u32,
                packet_count: self.packets,
                kernarg_size: self.kernarg_size,
                issue_order: 0,
                vouched_count: self.vouched,
                reserved0: 0,
                reserved: [0; 4],
            };
            self.block = lines(64 + COMMAND_SIZE * self.commands.len());
            let base = self.block.as_mut_ptr() as u64;
            // SAFETY: the lines hold the header and every command.
            unsafe {
                store(base, header);
                for (i, c) in self.commands.iter().enumerate() {
                    store(base + 64 + (COMMAND_SIZE * i) as u64, *c);
                }
            }
            self.kernargs = lines(self.kernarg_size as usize + 64);
            Box::new(BlockIssue {
                block: base,
                queue: &raw mut *self.host.amd as u64,
                packet_base: 1000,
                kernarg_base: self.kernargs.as_mut_ptr() as u64,
                binding_table: self.table.as_ptr() as u64,
                binding_count: self.table.len() as u32,
                reserved0: 0,
                completion_signal: SignalHandle(0x5150),
                fill_kernel: &raw const self.infos[1] as u64,
                copy_kernel: &raw const self.infos[2] as u64,
                control_kernel: &raw const self.infos[0] as u64,
                execution: &raw const *self.execution as u64,
                patch_kernel: &raw const self.infos[0] as u64,
                reserved: [0; 4],
            })
        }

        fn packet_header(&self, offset: u32) -> aqueduct_abi::aql::PacketHeader {
            let s = self.host.slot(1000 + u64::from(offset));
            aqueduct_abi::aql::PacketHeader(u16::from_le_bytes([s[0], s[1]]))
        }

        fn dispatch_at(&self, offset: u32) -> KernelDispatchPacket {
            let s = self.host.slot(1000 + u64::from(offset));
            // SAFETY: a 64-byte slot holds the 64-byte packet.
            unsafe { load(s.as_ptr() as u64) }
        }

        fn barrier_at(&self, offset: u32) -> BarrierAndPacket {
            let s = self.host.slot(1000 + u64::from(offset));
            // SAFETY: as above.
            unsafe { load(s.as_ptr() as u64) }
        }

        fn kernargs_at(&self, offset: u32, len: usize) -> Vec<u8> {
            let base = self.kernargs.as_ptr() as *const u8;
            // SAFETY: inside the reservation.
            unsafe { core::slice::from_raw_parts(base.add(offset as usize), len) }.to_vec()
        }
    }

    fn header(opcode: CommandOpcode) -> CommandHeader {
        CommandHeader {
            opcode,
            flags: CommandFlags::empty(),
            acquire_scope: FenceScope::AGENT,
            release_scope: FenceScope::SYSTEM,
            packet_offset: 0,
            packet_count: 0,
            issue_shape: IssueShape::NONE,
            kernarg_offset: 0,
        }
    }

    fn zeroed<T: Copy>() -> T {
        // SAFETY: only the shared command layouts, plain integers, for
        // which zero bytes are valid.
        unsafe { core::mem::zeroed() }
    }

    /// Prepares `d`'s packet as the recorder does
    /// ([`DispatchCommand::packet`]), in a line the caller keeps while the
    /// block issues.
    fn prepare(rig: &Rig, d: &mut DispatchCommand) -> Box<Line> {
        let packet = d
            .build_packet(&rig.infos[0], 0, d.workgroup_count)
            .unwrap()
            .unwrap();
        let words = Box::new(Line(
            zerocopy::IntoBytes::as_bytes(&packet.published())
                .try_into()
                .unwrap(),
        ));
        d.packet = words.0.as_ptr() as u64;
        words
    }

    /// A kernel-argument template: 16-byte aligned, as the recorder puts
    /// them.
    #[repr(C, align(16))]
    struct Template([u8; 32]);

    /// A dispatch of the user kernel: 24 bytes of arguments, a pointer at
    /// 0 and 8 patched from `bindings`, a u32 at 16 from the template.
    fn dispatch(
        rig: &Rig,
        template: &Template,
        bindings: &[BindingPatch],
        count: [u32; 3],
    ) -> DispatchCommand {
        let mut d: DispatchCommand = zeroed();
        d.header = header(CommandOpcode::DISPATCH);
        d.kernel = rig.user_kernel();
        d.workgroup_size = [64, 2, 1];
        d.workgroup_count = count;
        d.dimensions = 2;
        d.dynamic_group_segment_size = 256;
        d.kernarg_template = template.0.as_ptr() as u64;
        d.kernarg_size = 24;
        d.binding_count = bindings.len() as u16;
        d.bindings = bindings.as_ptr() as u64;
        d
    }

    #[test]
    fn every_command_kind_becomes_its_packets_in_any_issue_order() {
        let mut rig = Rig::new();
        let mut a = std::vec![0u8; 256];
        let mut b = std::vec![0u8; 256];
        let source = [7u8; 40];
        let committed = Box::new(AllocationHandle {
            address: b.as_mut_ptr() as u64,
            length: 256,
        });
        let counts: Box<[u32; 3]> = Box::new([5, 3, 1]);
        rig.table.push(BindingTableEntry {
            address: 0x9999_0000,
            length: 64,
        });
        rig.table.push(BindingTableEntry {
            address: a.as_mut_ptr() as u64,
            length: 256,
        });
        let template = Template([0xAB; 32]);
        let reference = Box::new(BufferRef::allocation(&raw const *committed as u64, 8, 8));
        let bindings = [
            BindingPatch::binding(1, 16, 0),
            BindingPatch::allocation(&raw const *reference as u64, 8),
        ];
        let mut d = dispatch(&rig, &template, &bindings, [4, 2, 1]);
        d.header.flags = CommandFlags::BARRIER;
        let direct = rig.push(d);
        let mut ind = dispatch(&rig, &template, &[], [0; 3]);
        ind.dispatch_flags = DispatchFlags::INDIRECT_STATIC;
        ind.workgroup_count_ref = BufferRef::direct(counts.as_ptr() as u64, 12);
        let indirect = rig.push(ind);
        let empty = rig.push(dispatch(&rig, &template, &[], [3, 0, 1]));
        let mut f: FillCommand = zeroed();
        f.header = header(CommandOpcode::FILL);
        f.target = BufferRef::binding(1, 3, 200);
        f.pattern[..4].copy_from_slice(&[1, 2, 3, 4]);
        f.pattern_length = 4;
        let fill = rig.push(f);
        let mut c: CopyCommand = zeroed();
        c.header = header(CommandOpcode::COPY);
        c.source = BufferRef::binding(1, 0, 100);
        c.target = BufferRef::direct(b.as_mut_ptr() as u64 + 1, 100);
        let copy = rig.push(c);
        let mut u: UpdateCommand = zeroed();
        u.header = header(CommandOpcode::UPDATE);
        u.source_data = source.as_ptr() as u64;
        u.target = BufferRef::binding(1, 200, 40);
        let update = rig.push(u);
        let mut bar: BarrierCommand = zeroed();
        bar.header = header(CommandOpcode::BARRIER);
        let bar = rig.push(bar);
        let mut r: ReturnCommand = zeroed();
        r.header = header(CommandOpcode::RETURN);
        let ret = rig.push(r);

        let state = rig.issue_state();
        // SAFETY: everything the state names lives in `rig` and above.
        let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
        assert_eq!(issuer.command_count(), 8);
        for i in (0..8).rev() {
            issuer.issue(i).unwrap();
        }

        // The direct dispatch: grid = count × size, LDS static + dynamic,
        // arguments from the template with both bindings patched in.
        let h = rig.packet_header(direct);
        assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
        assert!(h.barrier());
        assert_eq!(h.acquire_fence_scope(), FenceScope::AGENT);
        assert_eq!(h.release_fence_scope(), FenceScope::SYSTEM);
        let p = rig.dispatch_at(direct);
        assert_eq!(p.setup, 2);
        assert_eq!((p.grid_size_x, p.grid_size_y, p.grid_size_z), (256, 4, 1));
        assert_eq!(
            (p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z),
            (64, 2, 1)
        );
        assert_eq!(p.kernel_object, USER_KERNEL);
        assert_eq!(p.group_segment_size, 512 + 256);
        assert_eq!(p.private_segment_size, 48);
        assert_eq!(p.kernarg_address, state.kernarg_base);
        let args = rig.kernargs_at(0, 24);
        assert_eq!(&args[..8], &(a.as_ptr() as u64 + 16).to_le_bytes());
        assert_eq!(&args[8..16], &(b.as_ptr() as u64 + 8).to_le_bytes());
        assert_eq!(&args[16..], &[0xAB; 8]);

        // The indirect one reads its count now.
        let p = rig.dispatch_at(indirect);
        assert_eq!((p.grid_size_x, p.grid_size_y), (5 * 64, 3 * 2));
        assert!(!rig.packet_header(indirect).barrier());
        assert_eq!(p.kernarg_address, state.kernarg_base + 32);
        assert_eq!(rig.kernargs_at(32, 24), std::vec![0xAB; 24]);

        // No workgroups: a barrier-AND in the slot, the command's scopes.
        let h = rig.packet_header(empty);
        assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
        assert!(!h.barrier());
        assert_eq!(h.acquire_fence_scope(), FenceScope::AGENT);

        // Fill: blit_fill over the resolved range.
        let p = rig.dispatch_at(fill);
        assert_eq!(p.kernel_object, FILL_KERNEL);
        assert_eq!(u32::from(p.workgroup_size_x), u32::from(BLIT_WORKGROUP));
        let dst = a.as_ptr() as u64 + 3;
        assert_eq!(u64::from(p.grid_size_x), Partition::fill(dst, 200).units());
        let args = rig.kernargs_at(96, 40);
        let mut want = Vec::new();
        want.extend_from_slice(&dst.to_le_bytes());
        want.extend_from_slice(&200u64.to_le_bytes());
        want.extend_from_slice(&u64::from_le_bytes([1, 2, 3, 4, 0, 0, 0, 0]).to_le_bytes());
        want.extend_from_slice(&0u64.to_le_bytes());
        want.extend_from_slice(&4u32.to_le_bytes());
        want.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(args, want);

        // Copy and update: blit_copy with (dst, src, len).
        let p = rig.dispatch_at(copy);
        assert_eq!(p.kernel_object, COPY_KERNEL);
        let args = rig.kernargs_at(144, 24);
        assert_eq!(&args[..8], &(b.as_ptr() as u64 + 1).to_le_bytes());
        assert_eq!(&args[8..16], &(a.as_ptr() as u64).to_le_bytes());
        assert_eq!(&args[16..], &100u64.to_le_bytes());
        let p = rig.dispatch_at(update);
        assert_eq!(p.kernel_object, COPY_KERNEL);
        let args = rig.kernargs_at(176, 24);
        assert_eq!(&args[..8], &(a.as_ptr() as u64 + 200).to_le_bytes());
        assert_eq!(&args[8..16], &(source.as_ptr() as u64).to_le_bytes());
        assert_eq!(&args[16..], &40u64.to_le_bytes());

        // Barrier and return: barrier bit forced; return signals.
        let h = rig.packet_header(bar);
        assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
        assert!(h.barrier());
        assert_eq!(rig.barrier_at(bar).completion_signal, SignalHandle::NULL);
        let h = rig.packet_header(ret);
        assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
        assert!(h.barrier());
        assert_eq!(rig.barrier_at(ret).completion_signal, SignalHandle(0x5150));
        // Eight slots, no more.
        assert_eq!(rig.packet_header(8).packet_type(), PacketType::INVALID);
    }

    /// A dispatch whose packet the host prepared at record time (the
    /// shared `DispatchCommand::build_packet` with a zero kernarg address)
    /// publishes exactly what the issue builds for the same command, its
    /// kernarg address filled in and its arguments written the same way;
    /// one that does not fit the block publishes nothing.
    #[test]
    fn a_prepared_dispatch_publishes_what_the_issue_would_build() {
        let mut rig = Rig::new();
        let mut a = std::vec![0u8; 256];
        rig.table.push(BindingTableEntry {
            address: a.as_mut_ptr() as u64,
            length: 256,
        });
        let template = Template([0x5A; 32]);
        let bindings = [BindingPatch::binding(0, 32, 8)];
        let mut built = dispatch(&rig, &template, &bindings, [4, 3, 1]);
        built.header.flags = CommandFlags::BARRIER;
        let mut prepared = built;
        let packet = prepared
            .build_packet(&rig.infos[0], 0, prepared.workgroup_count)
            .unwrap()
            .unwrap();
        fn bytes<P: aqueduct_abi::aql::Packet>(p: &P) -> &[u8] {
            p.as_bytes()
        }
        let words: Box<Line> = Box::new(Line(bytes(&packet.published()).try_into().unwrap()));
        prepared.packet = words.0.as_ptr() as u64;
        let built = rig.push(built);
        let prepared = rig.push(prepared);
        // Too many kernel arguments for the block: refused, nothing
        // published.
        let mut late = dispatch(&rig, &template, &bindings, [1, 1, 1]);
        late.packet = words.0.as_ptr() as u64;
        let late = rig.push(late);
        let state = rig.issue_state();
        let bad = Box::new(*state);
        // SAFETY: the block header lives in `rig`.
        let block = unsafe { &mut *(bad.block as *mut CommandBlockHeader) };
        block.kernarg_size = rig.commands[late as usize].header.kernarg_offset + 8;

        // SAFETY: everything the state names lives in `rig` and above.
        let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
        issuer.issue(prepared).unwrap();
        issuer.issue(built).unwrap();
        // SAFETY: as above.
        let short = unsafe { BlockIssuer::new(&raw const *bad) }.unwrap();
        assert!(matches!(
            short.issue(late),
            Err(IssueError::Prepared { .. })
        ));
        assert_eq!(
            rig.packet_header(late).packet_type(),
            PacketType::INVALID,
            "not published"
        );

        let (p, b) = (rig.dispatch_at(prepared), rig.dispatch_at(built));
        let offset = |c: u32| u64::from(rig.commands[c as usize].header.kernarg_offset);
        assert_eq!(p.kernarg_address, state.kernarg_base + offset(prepared));
        assert_eq!(b.kernarg_address, state.kernarg_base + offset(built));
        let same = KernelDispatchPacket {
            kernarg_address: b.kernarg_address,
            ..p
        };
        assert_eq!(same, b);
        assert!(rig.packet_header(prepared).barrier());
        assert_eq!(
            rig.kernargs_at(offset(prepared) as u32, 24),
            rig.kernargs_at(offset(built) as u32, 24)
        );
        let patched = u64::from_le_bytes(
            rig.kernargs_at(offset(prepared) as u32, 24)[8..16]
                .try_into()
                .unwrap(),
        );
        assert_eq!(patched, a.as_ptr() as u64 + 32);
    }

    /// The checked path ([`BlockIssuer::issue`]) issues a prepared
    /// dispatch, or names what is wrong with it and publishes nothing.
    #[test]
    fn the_checked_path_issues_a_prepared_dispatch_or_names_what_is_wrong() {
        let mut a = std::vec![0u8; 256];
        let mut b = std::vec![0u8; 256];
        let committed = Box::new(AllocationHandle {
            address: b.as_mut_ptr() as u64,
            length: 64,
        });
        let reference = Box::new(BufferRef::allocation(&raw const *committed as u64, 8, 8));
        let template = Box::new(Template([0x5A; 32]));
        let buffers = [a.as_mut_ptr() as u64, b.as_mut_ptr() as u64];
        let bind = BindingPatch::binding;
        type Edit = fn(&mut DispatchCommand);
        let keep: Edit = |_| {};
        // (patches, an edit of the recorded command, what the checked path
        // says)
        type Case = (std::vec::Vec<BindingPatch>, Edit, Result<(), IssueError>);
        let cases: std::vec::Vec<Case> = std::vec![
            (std::vec![bind(0, 32, 8), bind(1, 16, 0)], keep, Ok(())),
            (std::vec![], keep, Ok(())),
            (
                std::vec![BindingPatch::allocation(&raw const *reference as u64, 8)],
                keep,
                Ok(()),
            ),
            (
                std::vec![bind(0, 0, 8), bind(5, 0, 0)],
                keep,
                Err(IssueError::Binding { slot: 5, count: 2 }),
            ),
            (
                std::vec![bind(0, 0, 4)],
                keep,
                Err(IssueError::Kernargs {
                    offset: 4,
                    size: 8,
                    block: 24
                }),
            ),
            (
                std::vec![bind(0, 0, 24)],
                keep,
                Err(IssueError::Kernargs {
                    offset: 24,
                    size: 8,
                    block: 24
                }),
            ),
            (
                std::vec![bind(0, 0, 8)],
                |d| d.dispatch_flags = DispatchFlags::INDIRECT_STATIC,
                Err(IssueError::Prepared {
                    packet_offset: 0,
                    kernarg_offset: 0
                }),
            ),
            (
                std::vec![bind(0, 0, 8)],
                |d| d.kernarg_template += 8,
                Err(IssueError::Misaligned {
                    address: 0,
                    align: 16
                }),
            ),
            (
                std::vec![bind(0, 0, 8)],
                |d| d.bindings += 4,
                Err(IssueError::Misaligned {
                    address: 0,
                    align: 8
                }),
            ),
            (
                std::vec![bind(0, 0, 8)],
                |d| d.packet += 8,
                Err(IssueError::Prepared {
                    packet_offset: 0,
                    kernarg_offset: 0
                }),
            ),
            (
                std::vec![bind(0, 0, 8)],
                |d| d.header.packet_offset = 2,
                Err(IssueError::Prepared {
                    packet_offset: 2,
                    kernarg_offset: 0
                }),
            ),
            (
                std::vec![bind(0, 0, 8)],
                |d| d.header.packet_count = 2,
                Err(IssueError::Prepared {
                    packet_offset: 0,
                    kernarg_offset: 0
                }),
            ),
            (
                std::vec![bind(0, 0, 8)],
                |d| d.header.kernarg_offset = 8,
                Err(IssueError::Prepared {
                    packet_offset: 0,
                    kernarg_offset: 8
                }),
            ),
            // A size whose 16-byte rounding overflows a u32.
            (
                std::vec![bind(0, 0, 8)],
                |d| d.kernarg_size = 0xFFFF_FFF8,
                Err(IssueError::Prepared {
                    packet_offset: 0,
                    kernarg_offset: 0
                }),
            ),
        ];
        for (k, (patches, edit, checked)) in cases.into_iter().enumerate() {
            let mut rig = Rig::new();
            for address in buffers {
                rig.table.push(BindingTableEntry {
                    address,
                    length: 256,
                });
            }
            let mut d = dispatch(&rig, &template, &patches, [4, 3, 1]);
            let _words = prepare(&rig, &mut d);
            rig.push(d);
            // The edit once the rig has placed the command.
            let c = &mut rig.commands[0];
            let mut d = <DispatchCommand as zerocopy::FromBytes>::read_from_bytes(
                zerocopy::IntoBytes::as_bytes(c),
            )
            .unwrap();
            edit(&mut d);
            *c = d.into();
            // A second command, so that a share or a slot past the first's
            // is still inside the block.
            rig.push(dispatch(&rig, &template, &[], [1, 1, 1]));
            let state = rig.issue_state();
            // SAFETY: everything the state names lives in the rig and above.
            let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
            match (issuer.issue(0), checked) {
                (
                    Err(IssueError::Misaligned { align: g, .. }),
                    Err(IssueError::Misaligned { align: w, .. }),
                ) => assert_eq!(g, w, "case {k}"),
                (got, want) => assert_eq!(got, want, "case {k}"),
            }
            if checked.is_err() {
                assert_eq!(
                    rig.packet_header(0).packet_type(),
                    PacketType::INVALID,
                    "case {k}: nothing published"
                );
            } else {
                assert_eq!(
                    rig.packet_header(0).packet_type(),
                    PacketType::KERNEL_DISPATCH,
                    "case {k}"
                );
            }
        }
    }

    /// A template as the recorder lays out a vouched dispatch's: 64 bytes,
    /// 64-byte aligned.
    #[repr(C, align(64))]
    struct FastTemplate([u8; FAST_ARGUMENT_BYTES as usize]);

    /// A patch list as the recorder lays out a vouched dispatch's.
    #[repr(C, align(16))]
    struct FastPatches([BindingPatch; FAST_PATCHES]);

    /// What a vouched dispatch points at, kept alive while it issues.
    struct Vouched {
        _template: Box<FastTemplate>,
        patches: Box<FastPatches>,
        _packet: Box<Line>,
    }

    /// A dispatch of the user kernel with `size` bytes of arguments (the
    /// leading bytes of `bytes`) and the binding patches `patches`, laid
    /// out as the recorder lays out one it vouches for
    /// ([`IssueShape`]), and vouched for if the shape allows.
    fn vouched(
        rig: &Rig,
        bytes: &[u8; 64],
        size: u32,
        patches: &[BindingPatch],
    ) -> (DispatchCommand, Vouched) {
        // (Past 64 bytes, only the first 64: such a dispatch is not
        // vouched for, and the test does not issue it.)
        let mut template = Box::new(FastTemplate([0; 64]));
        let copied = (size as usize).min(64);
        template.0[..copied].copy_from_slice(&bytes[..copied]);
        let list = Box::new(FastPatches(BindingPatch::fast_list(patches).unwrap()));
        let mut d: DispatchCommand = zeroed();
        d.header = header(CommandOpcode::DISPATCH);
        d.header.packet_count = 1;
        d.kernel = rig.user_kernel();
        d.workgroup_size = [64, 2, 1];
        d.workgroup_count = [5, 2, 1];
        d.dimensions = 2;
        d.kernarg_template = template.0.as_ptr() as u64;
        d.kernarg_size = size;
        d.binding_count = patches.len() as u16;
        d.bindings = list.0.as_ptr() as u64;
        let packet = prepare(rig, &mut d);
        d.header.issue_shape = d.issue_shape(patches);
        (
            d,
            Vouched {
                _template: template,
                patches: list,
                _packet: packet,
            },
        )
    }

    /// A rig with a binding table of `buffers`, the dispatch `d` first,
    /// then a RETURN, and `vouched` vouched dispatches; `edit` changes the
    /// dispatch once the rig has placed it.
    fn rig_with(
        buffers: &[u64],
        d: DispatchCommand,
        vouched: u32,
        edit: fn(&mut CommandHeader),
    ) -> (Rig, Box<BlockIssue>) {
        let mut rig = Rig::new();
        for &address in buffers {
            rig.table.push(BindingTableEntry {
                address,
                length: 256,
            });
        }
        // The kernel this rig holds (the packet was prepared from an
        // identical one).
        let mut d = d;
        d.kernel = rig.user_kernel();
        rig.push(d);
        edit(&mut rig.commands[0].header);
        rig.push(ReturnCommand {
            header: header(CommandOpcode::RETURN),
            ..zeroed()
        });
        rig.vouched = vouched;
        let state = rig.issue_state();
        (rig, state)
    }

    /// Every shape the fast layout holds (1 to 4 argument units, sizes a
    /// multiple of 8 and 4 short of one, up to 4 bindings; without
    /// bindings, arguments that leave the share's last word free) is
    /// vouched for, and the fast path ([`BlockIssuer::issue_vouched`])
    /// issues it exactly as the checked path does: the same packet, the
    /// same arguments.
    #[test]
    fn a_vouched_dispatch_issues_as_the_checked_path() {
        let mut bytes = [0u8; 64];
        for (k, byte) in bytes.iter_mut().enumerate() {
            *byte = 0x40 + k as u8;
        }
        let buffers = [0x1000_0000u64, 0x2000_0000, 0x3000_0000];
        let mut shapes = 0;
        for size in (4..=64u32).step_by(4) {
            for count in 0..=4u32 {
                let places = size / 8;
                if count > places || (count == 0 && size > 56) {
                    continue;
                }
                // Bindings at the last places, of slots and offsets their
                // own.
                let patches: Vec<BindingPatch> = (0..count)
                    .map(|b| {
                        let place = 8 * (places - 1 - b) as u16;
                        BindingPatch::binding(b % 3, 8 * u64::from(b) + 4, place)
                    })
                    .collect();
                let (d, _fast_keep) = vouched(&Rig::new(), &bytes, size, &patches);
                let shape = d.header.issue_shape;
                assert!(shape.is_vouched(), "size {size}, {count} bindings");
                assert_eq!(
                    (shape.units(), shape.bindings()),
                    (size.div_ceil(16), count)
                );
                let (fast, fast_state) = rig_with(&buffers, d, 1, |_| {});
                let (checked, checked_state) = rig_with(&buffers, d, 0, |_| {});
                // SAFETY: everything the states name lives in the rigs and
                // above.
                let issuer = unsafe { BlockIssuer::new(&raw const *fast_state) }.unwrap();
                // SAFETY: as above.
                let checker = unsafe { BlockIssuer::new(&raw const *checked_state) }.unwrap();
                issuer.issue_work_item(0).unwrap();
                checker.issue_work_item(0).unwrap();
                assert_eq!(
                    fast.dispatch_at(0),
                    KernelDispatchPacket {
                        kernarg_address: fast_state.kernarg_base,
                        ..checked.dispatch_at(0)
                    },
                    "size {size}, {count} bindings"
                );
                assert_eq!(
                    fast.kernargs_at(0, size as usize),
                    checked.kernargs_at(0, size as usize),
                    "size {size}, {count} bindings"
                );
                shapes += 1;
            }
        }
        assert_eq!(shapes, 62);
        // Past the fast layout: not vouched for.
        for (size, count) in [(68, 1), (60, 0), (64, 0)] {
            let patches = std::vec![BindingPatch::binding(0, 0, 0); count];
            let (d, _keep) = vouched(&Rig::new(), &bytes, size, &patches);
            assert_eq!(d.header.issue_shape, IssueShape::NONE, "{size}, {count}");
        }
    }

    /// The fast path checks nothing, but a damaged vouched dispatch (its
    /// share, packet and binding places past the block's) writes only
    /// inside the block's reservations: its share at the last place one
    /// fits, its packet at the block's last, its bindings inside its share.
    #[test]
    fn a_damaged_vouched_dispatch_writes_only_inside_the_block() {
        let bytes = [0x33u8; 64];
        let buffers = [0x1000_0000u64];
        let patches = [BindingPatch::binding(0, 8, 0)];
        let (mut d, mut keep) = vouched(&Rig::new(), &bytes, 40, &patches);
        for (b, p) in keep.patches.0.iter_mut().enumerate() {
            p.kernarg_offset = 0xFFF8 - 8 * b as u16;
        }
        d.bindings = keep.patches.0.as_ptr() as u64;
        let (rig, state) = rig_with(&buffers, d, 1, |h| {
            h.kernarg_offset = 0xFFFF_FF00;
            h.packet_offset = 1000;
        });
        // Canaries past the block's arguments (the rig leaves 64 bytes).
        let end = rig.kernarg_size as usize;
        let canary = |rig: &Rig| rig.kernargs_at(end as u32, 64);
        // SAFETY: inside the rig's argument lines.
        unsafe { core::ptr::write_bytes((rig.kernargs.as_ptr() as *mut u8).add(end), 0xEE, 64) };
        // The block-issue kernel's issuer, which checks nothing of the
        // issue state (the rig's is whole).
        // SAFETY: everything the state names lives in the rig and above,
        // aligned, with a 64-packet queue.
        let issuer = unsafe { BlockIssuer::trusted(&raw const *state) };
        issuer.issue_work_item(0).unwrap();
        assert_eq!(canary(&rig), std::vec![0xEE; 64]);
        // The share at the last place a share fits: the RETURN's 16
        // bytes follow the dispatch's 64, so that is 16.
        assert_eq!(rig.kernarg_size, 80);
        let share = rig.kernargs_at(16, 64);
        assert_eq!(&share[..32], &bytes[..32]);
        // Every binding landed in the share's words.
        let words: Vec<u64> = share
            .chunks(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .collect();
        assert!(words.contains(&(0x1000_0000 + 8)), "{words:x?}");
        // The packet at the block's last (the RETURN's, unpublished: the
        // RETURN has not issued), nothing past it.
        assert_eq!(rig.packets, 2);
        assert_eq!(
            rig.packet_header(1).packet_type(),
            PacketType::KERNEL_DISPATCH
        );
        assert_eq!(rig.packet_header(0).packet_type(), PacketType::INVALID);
        assert_eq!(rig.packet_header(2).packet_type(), PacketType::INVALID);
    }

    /// Work-items below the block's vouched count take the fast path,
    /// which checks nothing; the others the checked path. A dispatch
    /// vouched for and then damaged (a flag the checked path refuses)
    /// tells which ran. The checked issue state counts no vouched
    /// dispatch for a block without room for one.
    #[test]
    fn work_items_below_the_vouched_count_take_the_fast_path() {
        let bytes = [7u8; 64];
        let buffers = [0x1000_0000u64];
        let (mut d, _keep) = vouched(&Rig::new(), &bytes, 24, &[BindingPatch::binding(0, 0, 8)]);
        d.dispatch_flags = DispatchFlags::INDIRECT_STATIC;
        for vouched in [0, 1] {
            let (rig, state) = rig_with(&buffers, d, vouched, |_| {});
            // SAFETY: everything the state names lives in the rig and above.
            let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
            assert_eq!(issuer.all_vouched(1), vouched == 1);
            assert!(!issuer.all_vouched(2));
            let got = issuer.issue_work_item(0);
            if vouched == 1 {
                assert_eq!(got, Ok(()));
                assert_eq!(
                    rig.packet_header(0).packet_type(),
                    PacketType::KERNEL_DISPATCH
                );
            } else {
                assert!(matches!(got, Err(IssueError::Prepared { .. })), "{got:?}");
            }
            // Work-item 1 is the RETURN's, checked either way.
            issuer.issue_work_item(1).unwrap();
        }
        // A block whose arguments cannot hold a vouched dispatch's share:
        // the checked state counts none, whatever the header says.
        let mut rig = Rig::new();
        rig.push(ReturnCommand {
            header: header(CommandOpcode::RETURN),
            ..zeroed()
        });
        rig.vouched = 1;
        let state = rig.issue_state();
        // SAFETY: as above.
        let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
        assert!(!issuer.all_vouched(1));
        issuer.issue_work_item(0).unwrap();
    }

    #[test]
    fn a_branch_dispatches_the_control_kernel_with_its_arguments() {
        use aqueduct_abi::command::BranchCommand;
        let mut rig = Rig::new();
        let mut b: BranchCommand = zeroed();
        b.header = header(CommandOpcode::BRANCH);
        b.target_block = 1;
        rig.push(b);
        let state = rig.issue_state();
        // SAFETY: as in the tests above.
        let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
        issuer.issue(0).unwrap();
        let h = rig.packet_header(0);
        assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
        assert!(h.barrier(), "a branch waits for the block's work");
        let p = rig.dispatch_at(0);
        assert_eq!(p.kernel_object, USER_KERNEL);
        assert_eq!((p.grid_size_x, p.workgroup_size_x), (1, 1));
        let args = rig.kernargs_at(0, 16);
        assert_eq!(
            &args[..8],
            &(&raw const *rig.execution as u64).to_le_bytes()
        );
        assert_eq!(&args[8..], &(state.block + 64).to_le_bytes());
    }

    #[test]
    fn a_scheduled_return_dispatches_the_control_kernel_and_still_signals() {
        use aqueduct_abi::command::ReturnCommand;
        for entry in [0u64, 0xE17_0000] {
            let mut rig = Rig::new();
            rig.execution.entry = entry;
            let mut r: ReturnCommand = zeroed();
            r.header = header(CommandOpcode::RETURN);
            rig.push(r);
            let state = rig.issue_state();
            // SAFETY: as in the tests above.
            let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
            issuer.issue(0).unwrap();
            let h = rig.packet_header(0);
            assert!(h.barrier());
            if entry == 0 {
                assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
                assert_eq!(rig.barrier_at(0).completion_signal, SignalHandle(0x5150));
                continue;
            }
            assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
            let p = rig.dispatch_at(0);
            assert_eq!(p.kernel_object, USER_KERNEL, "the control kernel");
            assert_eq!(p.completion_signal, SignalHandle(0x5150));
            let args = rig.kernargs_at(0, 16);
            assert_eq!(
                &args[..8],
                &(&raw const *rig.execution as u64).to_le_bytes()
            );
            assert_eq!(&args[8..], &(state.block + 64).to_le_bytes());
        }
    }

    #[test]
    fn a_dynamic_dispatch_is_patched_and_published_when_the_patch_runs() {
        for (count, want_grid) in [([5u32, 3, 9], Some((320, 6))), ([4, 0, 1], None)] {
            let mut rig = Rig::new();
            let counts: Box<[u32; 4]> = Box::new([count[0], count[1], count[2], 0]);
            let template = Template([0xCD; 32]);
            let mut d = dispatch(&rig, &template, &[], [0; 3]);
            d.dispatch_flags = DispatchFlags::INDIRECT_DYNAMIC;
            d.workgroup_count_ref = BufferRef::direct(counts.as_ptr() as u64, 12);
            rig.push(d);
            let state = rig.issue_state();
            // SAFETY: as in the tests above.
            let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
            issuer.issue(0).unwrap();
            // The patch first (barrier bit: after the count's producer),
            // the dispatch after it, not published yet.
            let h = rig.packet_header(0);
            assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
            assert!(h.barrier());
            assert_eq!(rig.packet_header(1).packet_type(), PacketType::INVALID);
            let patch = rig.dispatch_at(0);
            // The kernel's 24 bytes, padded to 32, then the patch's.
            assert_eq!(patch.kernarg_address, state.kernarg_base + 32);
            // SAFETY: the patch's arguments, written by the issue.
            let args = unsafe { load::<PatchArgs>(patch.kernarg_address) };
            assert_eq!(args.count, counts.as_ptr() as u64);
            assert_eq!(rig.kernargs_at(0, 24), std::vec![0xCD; 24]);
            // SAFETY: the arguments name the rig's live slot and counts.
            unsafe { patch_dispatch(&args) }.unwrap();
            let h = rig.packet_header(1);
            match want_grid {
                Some((x, y)) => {
                    assert_eq!(h.packet_type(), PacketType::KERNEL_DISPATCH);
                    let p = rig.dispatch_at(1);
                    // Two dimensions: z's count is ignored.
                    assert_eq!((p.grid_size_x, p.grid_size_y, p.grid_size_z), (x, y, 1));
                    assert_eq!(p.kernel_object, USER_KERNEL);
                    assert_eq!(p.kernarg_address, state.kernarg_base);
                }
                None => {
                    assert_eq!(h.packet_type(), PacketType::BARRIER_AND);
                    assert_eq!(rig.barrier_at(1).completion_signal, SignalHandle::NULL);
                    assert_eq!(h.acquire_fence_scope(), FenceScope::AGENT);
                }
            }
        }
    }

    #[test]
    fn a_conditional_branch_picks_its_block_and_issues_it() {
        use aqueduct_abi::command::{BranchCondition, CondBranchCommand, Execution};
        // Two blocks: the target's issue state and arguments, a queue.
        let mut rig = Rig::new();
        let mut r: ReturnCommand = zeroed();
        r.header = header(CommandOpcode::RETURN);
        rig.push(r);
        rig.push(r);
        let state = rig.issue_state();
        let value: Box<[u64; 2]> = Box::new([7, 0]);
        rig.table.push(BindingTableEntry {
            address: value.as_ptr() as u64,
            length: 16,
        });
        let mut issues = lines(256);
        let base = issues.as_mut_ptr() as u64;
        let mut issue = *state;
        issue.binding_table = rig.table.as_ptr() as u64;
        issue.binding_count = 1;
        // SAFETY: two 128-byte issue states fit the lines.
        unsafe {
            store(base, issue);
            store(base + 128, issue);
        }
        let args: Box<[[u64; 2]; 2]> = Box::new([[base, 0], [base + 128, 0]]);
        let mut head: CommandBufferHeader = zeroed();
        head.block_count = 2;
        let blocks: Box<[u64; 2]> = Box::new([state.block, state.block]);
        head.blocks = blocks.as_ptr() as u64;
        let mut head_line = lines(64);
        // SAFETY: one line holds the header.
        unsafe { store(head_line.as_mut_ptr() as u64, head) };
        let execution = Execution {
            command_buffer: head_line.as_ptr() as u64,
            issues: base,
            issue_args: args.as_ptr() as u64,
            issue_kernel: COPY_KERNEL,
            queue: state.queue,
            serial_threshold: 1,
            reserved0: 0,
            entry: 0,
            reserved: 0,
        };
        let mut c: CondBranchCommand = zeroed();
        c.header = header(CommandOpcode::COND_BRANCH);
        c.condition = BufferRef::binding(0, 0, 8);
        c.value = 7;
        c.true_block = 1;
        c.false_block = 0;
        for (cond, want) in [
            (BranchCondition::EQ, 1),
            (BranchCondition::ULT, 0),
            (BranchCondition::GE, 1),
        ] {
            c.cond = cond;
            // SAFETY: everything the execution names lives above.
            let target = unsafe { branch_target(&execution, &c.into()) }.unwrap();
            assert_eq!(target, want, "{cond:?}");
        }
        c.cond = BranchCondition(77);
        // SAFETY: as above.
        assert!(unsafe { branch_target(&execution, &c.into()) }.is_err());
        // Issuing block 1 (2 commands, above the serial threshold of 1):
        // its issue kernel in the next free slot, the block's 2 packets
        // reserved after it, its issue state told where.
        let write = rig.host.amd.write_dispatch_id;
        // SAFETY: as above.
        unsafe { issue_block(&execution, 1, || panic!("room")) }.unwrap();
        assert_eq!(rig.host.amd.write_dispatch_id, write + 3);
        let p = rig.dispatch_at((write - 1000) as u32);
        assert_eq!(p.kernel_object, COPY_KERNEL);
        assert_eq!(p.kernarg_address, args.as_ptr() as u64 + 16);
        assert_eq!(p.grid_size_x, 2);
        // SAFETY: block 1's issue state.
        let packet_base = unsafe { load::<BlockIssue>(base + 128) }.packet_base;
        assert_eq!(packet_base, write + 1);
        // SAFETY: as above.
        assert!(unsafe { issue_block(&execution, 2, || panic!("room")) }.is_err());

        // At or below the threshold the branch issues the block itself:
        // exactly its 2 packets, published, and no issue dispatch.
        let serial = Execution {
            serial_threshold: 2,
            ..execution
        };
        let write = rig.host.amd.write_dispatch_id;
        // SAFETY: as above.
        unsafe { issue_block(&serial, 1, || panic!("room")) }.unwrap();
        assert_eq!(rig.host.amd.write_dispatch_id, write + 2);
        // SAFETY: block 1's issue state.
        let packet_base = unsafe { load::<BlockIssue>(base + 128) }.packet_base;
        assert_eq!(packet_base, write);
        for k in 0..2 {
            let h = rig.packet_header((write - 1000) as u32 + k);
            assert_eq!(h.packet_type(), PacketType::BARRIER_AND, "packet {k}");
        }
    }

    #[test]
    fn an_issue_order_maps_work_items_to_commands() {
        let mut rig = Rig::new();
        for _ in 0..3 {
            let mut b: BarrierCommand = zeroed();
            b.header = header(CommandOpcode::BARRIER);
            rig.push(b);
        }
        let state = rig.issue_state();
        // SAFETY: as in the tests above.
        let plain = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
        assert_eq!(
            (0..3).map(|g| plain.command_for(g)).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        let order: Box<[u32; 3]> = Box::new([2, 0, 1]);
        // SAFETY: the block header at the start of the rig's block.
        unsafe {
            let mut header = load::<CommandBlockHeader>(state.block);
            header.issue_order = order.as_ptr() as u64;
            store(state.block, header);
        }
        // SAFETY: as above.
        let ordered = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
        assert_eq!(
            (0..3).map(|g| ordered.command_for(g)).collect::<Vec<_>>(),
            [2, 0, 1]
        );
    }

    #[test]
    fn bad_commands_are_refused_and_publish_nothing() {
        let template = Template([0; 32]);
        let unc = Box::new(AllocationHandle {
            address: 0,
            length: 64,
        });
        let committed = Box::new(AllocationHandle {
            address: 0x9000,
            length: 64,
        });
        // The references allocation patches point at.
        let refs = Box::new([
            BufferRef::allocation(&raw const *committed as u64, 60, 8),
            BufferRef::allocation(&raw const *unc as u64, 0, 8),
            BufferRef::binding(0, 0, 8),
        ]);
        let at = |k: usize| &raw const refs[k] as u64;
        // A binding's range is checked when the submission binds the
        // table (the host's `check_submission`), not here.
        let cases: [(BindingPatch, IssueError); 5] = [
            (
                BindingPatch::binding(2, 0, 8),
                IssueError::Binding { slot: 2, count: 1 },
            ),
            (
                BindingPatch::allocation(at(0), 8),
                IssueError::Range {
                    offset: 60,
                    length: 8,
                    size: 64,
                },
            ),
            (
                BindingPatch::allocation(at(1), 8),
                IssueError::NotCommitted {
                    handle: &raw const *unc as u64,
                },
            ),
            (
                BindingPatch::allocation(at(2), 8),
                IssueError::RefKind(BufferRefKind::BINDING.0),
            ),
            (
                BindingPatch {
                    kind: 9,
                    ..BindingPatch::binding(0, 0, 8)
                },
                IssueError::RefKind(9),
            ),
        ];
        for (patch, want) in cases {
            let mut rig = Rig::new();
            rig.table.push(BindingTableEntry {
                address: 0x7000,
                length: 64,
            });
            let patch = [patch];
            rig.push(dispatch(&rig, &template, &patch, [1, 1, 1]));
            let state = rig.issue_state();
            // SAFETY: as in the test above.
            let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
            assert_eq!(issuer.issue(0), Err(want));
            assert_eq!(
                rig.packet_header(0).packet_type(),
                PacketType::INVALID,
                "{want:?}"
            );
        }

        // Bindings into arguments too small for any: refused before any
        // argument is written (the template's bytes stay zero), for the
        // built and the prepared dispatch alike.
        for prepared in [false, true] {
            let mut rig = Rig::new();
            rig.table.push(BindingTableEntry {
                address: 0x7000,
                length: 64,
            });
            let patch = [BindingPatch::binding(0, 0, 0)];
            let marked = Template([0xAB; 32]);
            let mut d = dispatch(&rig, &marked, &patch, [1, 1, 1]);
            d.kernarg_size = 4;
            let packet = Box::new(Line([0; 64]));
            if prepared {
                d.packet = packet.0.as_ptr() as u64;
            }
            rig.push(d);
            let state = rig.issue_state();
            // SAFETY: as in the test above.
            let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
            let want = IssueError::Kernargs {
                offset: 0,
                size: 8,
                block: 4,
            };
            assert_eq!(issuer.issue(0), Err(want), "prepared {prepared}");
            assert_eq!(rig.packet_header(0).packet_type(), PacketType::INVALID);
            assert_eq!(
                rig.kernargs_at(0, 16),
                std::vec![0u8; 16],
                "nothing written"
            );
        }

        // A command announcing a packet outside the block, a fill pattern of
        // 3 bytes, a copy of unequal lengths, a zeroed slot.
        let mut rig = Rig::new();
        let mut f: FillCommand = zeroed();
        f.header = header(CommandOpcode::FILL);
        f.target = BufferRef::direct(0x8000, 12);
        f.pattern_length = 3;
        rig.push(f);
        let mut c: CopyCommand = zeroed();
        c.header = header(CommandOpcode::COPY);
        c.source = BufferRef::direct(0x8000, 12);
        c.target = BufferRef::direct(0x9000, 16);
        rig.push(c);
        let mut r: ReturnCommand = zeroed();
        r.header = header(CommandOpcode::RETURN);
        rig.push(r);
        rig.commands[2].header.packet_offset = 3;
        rig.commands.push(zeroed());
        let state = rig.issue_state();
        // SAFETY: as above.
        let issuer = unsafe { BlockIssuer::new(&raw const *state) }.unwrap();
        assert_eq!(issuer.issue(0), Err(IssueError::Pattern(3)));
        assert_eq!(
            issuer.issue(1),
            Err(IssueError::Length { need: 16, have: 12 })
        );
        assert_eq!(
            issuer.issue(2),
            Err(IssueError::Packets {
                offset: 3,
                count: 1,
                block: 3
            })
        );
        assert_eq!(issuer.issue(3), Err(IssueError::Opcode(0)));
        assert_eq!(
            issuer.issue(4),
            Err(IssueError::NoCommand { index: 4, count: 4 })
        );
        for p in 0..4 {
            assert_eq!(rig.packet_header(p).packet_type(), PacketType::INVALID);
        }
    }
}
