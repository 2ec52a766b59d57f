//! The checked path: any command, each field checked against the block
//! and each buffer reference against what it resolves to
//! ([`BlockIssuer::issue`]), and the pure translations it is made of
//! (buffer references, dispatch and blit packets), which the host tests
//! run directly.
//!
//! ```text
//!   command i ──► its packets and arguments inside the block's reservations?
//!             ──► resolve its buffers (direct / binding table / allocation handle)
//!             ──► write its kernel arguments at kernarg_base + kernarg_offset
//!             ──► write its packet bodies, publish each header last
//! ```
//!
//! A failure publishes nothing of the failing command (its own arguments
//! may be half written: no packet points at them), and the kernel traps:
//! the host validated the same at record time, so a failure here means
//! corrupted memory or a stale recording. The kernel arguments are written
//! with raw stores into the command's share of the block's kernarg
//! reservation, each after the check that keeps it there.

use aqueduct_abi::aql::KernelDispatchPacket;
use aqueduct_abi::command::{
    AllocationHandle, BindingPatch, BindingTableEntry, BranchArgs, BufferRef, BufferRefKind,
    Command, CommandHeader, CommandOpcode, CommandView, CopyArgs, DispatchCommand, DispatchFlags,
    DispatchPacketError, FillArgs, KERNARG_ALIGN, KernelInfo, PatchArgs,
};
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::packet::{
    BarrierKind, BarrierPacket, KernelDispatch, Ordering, Prepared, barrier,
};
use aqueduct_abi::view::{List, RefField, View};

use crate::blit::{CopyPlan, FillPattern, Partition};

use super::error::{IssueError, aligned, check_aligned};
use super::issuer::BlockIssuer;
use super::{BLIT_MAX_ITEMS, BLIT_WORKGROUP};

/// Writes `value` at `address`, inside a command's share of the block's
/// kernarg reservation.
///
/// # Safety
/// `size_of::<T>()` writable bytes at `address`, aligned for `T`, that
/// nothing else reads or writes while the block issues (the caller checked
/// they lie in the command's share).
unsafe fn store<T: Copy>(address: u64, value: T) {
    // SAFETY: the caller's contract.
    unsafe { (address as *mut T).write(value) }
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

/// A buffer range a reference resolved to: its device address and the
/// bytes the reference spans, inside the buffer it points through (checked
/// by [`resolve`], or vouched for by the recording for a direct one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Device address of the range's first byte.
    pub address: u64,
    /// Bytes in the range.
    pub length: u64,
}

/// What a command reads from a buffer it references: an indirect
/// dispatch's workgroup count, a conditional branch's value. Any bytes
/// are a valid one.
pub trait BufferValue: Copy {}

impl BufferValue for [u32; 3] {}

impl BufferValue for u64 {}

impl Resolved {
    /// The `T` at the range's start, if the range holds one at its
    /// alignment (else the error names what is short or misaligned).
    pub fn read<T: BufferValue>(self) -> Result<T, IssueError> {
        let need = size_of::<T>() as u64;
        if self.length < need {
            return Err(IssueError::Length {
                need,
                have: self.length,
            });
        }
        let at = check_aligned(self.address, align_of::<T>() as u32)?;
        // SAFETY: the range is a buffer's, as the recording's view vouches
        // (a direct reference) or as `resolve` checked it against its
        // binding or handle; it holds a T here (length and alignment
        // checked above), and any bytes are a valid T.
        Ok(unsafe { (at as *const T).read() })
    }
}

/// Binding-table slot `slot`, or why there is none.
#[inline(always)]
fn binding(table: List<'_, BindingTableEntry>, slot: u32) -> Result<BindingTableEntry, IssueError> {
    let entry = table.get(u64::from(slot)).ok_or(IssueError::Binding {
        slot,
        count: table.len() as u32,
    })?;
    Ok(entry.get())
}

/// Resolves a buffer reference to a device address, checking that the
/// referenced range lies inside what it points through: `table`, the
/// binding table; an allocation reference's address, the handle (whose
/// alignment is checked).
pub fn resolve(r: &BufferRef, table: List<'_, BindingTableEntry>) -> Result<Resolved, IssueError> {
    let (base, size) = match r.kind {
        BufferRefKind::DIRECT => {
            return Ok(Resolved {
                address: r.address.wrapping_add(r.offset),
                length: r.length,
            });
        }
        BufferRefKind::BINDING => {
            let entry = binding(table, r.slot)?;
            (entry.address, entry.length)
        }
        BufferRefKind::ALLOCATION => {
            let at = check_aligned(r.address, 8)?;
            // SAFETY: the recording's view vouches for what its references
            // name: an allocation reference's address is a live
            // AllocationHandle (alignment checked above).
            let h = unsafe { View::<AllocationHandle>::at_nonzero(at) }.get();
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
    Ok(Resolved {
        address: base + r.offset,
        length: r.length,
    })
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
pub(super) fn no_op(order: Ordering) -> Result<Packet, IssueError> {
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

/// The [`KernelInfo`] a reference names, its alignment checked (a damaged
/// recording or issue state is refused, not followed).
fn kernel_info(info: RefField<'_, KernelInfo>) -> Result<KernelInfo, IssueError> {
    check_aligned(info.raw(), 64)?;
    Ok(info.get().get())
}

impl BlockIssuer<'_> {
    /// Resolves a reference against this block's binding table.
    fn resolve(&self, r: &BufferRef) -> Result<Resolved, IssueError> {
        resolve(r, self.table())
    }

    /// Whether the submission runs under the device scheduler
    /// ([`Execution::entry`](aqueduct_abi::command::Execution::entry)):
    /// its RETURN then dispatches the control kernel, which retires the
    /// entry.
    fn scheduled(&self) -> Result<bool, IssueError> {
        let execution = self.state().execution();
        check_aligned(execution.raw(), 64)?;
        Ok(execution.get().entry().get() != 0)
    }

    /// Issues command `index`, whatever it is, checked: checks it against
    /// the block, writes its kernel arguments and packet bodies, then
    /// publishes its packets. Nothing is published when it fails (a
    /// dispatch's own arguments may be half written: no packet points at
    /// them).
    pub fn issue(&self, index: u32) -> Result<(), IssueError> {
        let Some(slot) = self.commands.get(u64::from(index)) else {
            return Err(IssueError::NoCommand {
                index,
                count: self.command_count(),
            });
        };
        let d = slot.as_dispatch();
        if d.header().opcode().get() == CommandOpcode::DISPATCH
            && let Some(packet) = d.packet().get()
        {
            return self.prepared_dispatch(d, packet);
        }
        let at = slot.device_address();
        let command = slot.get();
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
            Ok(CommandView::Dispatch(d)) => self.dispatch(slot.as_dispatch(), d, kernargs, id)?,
            Ok(CommandView::Fill(f)) => {
                let dst = self.resolve(&f.target)?.address;
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
                let kernel = kernel_info(self.state().fill_kernel())?;
                let units = Partition::fill(dst, len).units();
                let packet = blit_packet(&kernel, kernargs, units, h.ordering(false))?;
                // SAFETY: checked above: the arguments lie inside the
                // command's share of the block's kernarg reservation.
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
                let src = self.resolve(&c.source)?.address;
                let dst = self.resolve(&c.target)?.address;
                self.copy(&h, kernargs, dst, src, c.target.length)?
            }
            Ok(CommandView::Update(u)) => {
                let dst = self.resolve(&u.target)?.address;
                self.copy(&h, kernargs, dst, u.source_data, u.target.length)?
            }
            Ok(CommandView::Barrier(_)) => no_op(h.ordering(true))?,
            // RETURN only: the other commands never read the execution.
            Ok(CommandView::Return(_)) if !self.scheduled()? => Packet::Barrier(barrier(
                BarrierKind::And,
                &[],
                self.state().completion_signal().get(),
                h.ordering(true),
            )?),
            Ok(CommandView::Branch(_) | CommandView::CondBranch(_) | CommandView::Return(_)) => {
                let kernel = kernel_info(self.state().control_kernel())?;
                let packet = KernelDispatch {
                    private_segment_size: kernel.private_segment_size,
                    group_segment_size: kernel.group_segment_size,
                    ordering: h.ordering(true),
                    // A scheduled RETURN still decrements it.
                    completion_signal: if h.opcode == CommandOpcode::RETURN {
                        self.state().completion_signal().get()
                    } else {
                        SignalHandle::NULL
                    },
                    ..KernelDispatch::linear(kernel.kernel_object, kernargs, 1, 1)
                }
                .build_unchecked()?;
                let args = BranchArgs {
                    execution: self.state().execution().raw(),
                    command: at,
                };
                // SAFETY: checked above: inside the command's share.
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
    fn dispatch(
        &self,
        view: View<'_, DispatchCommand>,
        d: &DispatchCommand,
        kernargs: u64,
        id: u64,
    ) -> Result<Packet, IssueError> {
        let info = kernel_info(view.kernel())?;
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
            let resolved = self.resolve(r)?;
            check_aligned(resolved.address, 4)?;
            Some(resolved)
        } else {
            None
        };
        let count = match count_at {
            // A stand-in: the patch kernel writes the real grid.
            Some(_) if dynamic => [1; 3],
            Some(resolved) => resolved.read::<[u32; 3]>()?,
            None => d.workgroup_count,
        };
        let packet = dispatch_packet(d, &info, kernargs, count)?;
        let packet = match packet {
            Packet::Dispatch(real) if dynamic => {
                let patch = kernel_info(self.state().patch_kernel())?;
                let Packet::Barrier(no_op) = no_op(d.header.ordering(false))? else {
                    return Err(IssueError::Opcode(d.header.opcode.0));
                };
                let patch_at = kernargs + u64::from(d.kernarg_size.next_multiple_of(KERNARG_ALIGN));
                let args = PatchArgs {
                    packet: self.queue.slot_address(id.wrapping_add(1)),
                    count: count_at.map_or(0, |c| c.address),
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
        self.arguments(view, d.kernarg_template, d.kernarg_size, kernargs)?;
        Ok(packet)
    }

    /// A dispatch whose packet the host prepared ([`DispatchCommand::packet`]:
    /// direct, at least one workgroup), on the checked path: the fast
    /// path's work ([`BlockIssuer::issue_vouched`]), with every check's own
    /// error. Checks its place in the block, writes its arguments, copies
    /// the packet with the kernarg address filled in, publishes it.
    fn prepared_dispatch(
        &self,
        view: View<'_, DispatchCommand>,
        packet: View<'_, [u64; 8]>,
    ) -> Result<(), IssueError> {
        let h = view.header().get();
        let kernarg_size = view.kernarg_size().get();
        let bad = (h.packet_count != 1)
            | !view.dispatch_flags().get().is_empty()
            | (u64::from(h.packet_offset) + 1 > u64::from(self.packets))
            | !h.kernarg_offset.is_multiple_of(KERNARG_ALIGN)
            | (u64::from(h.kernarg_offset) + u64::from(kernarg_size)
                > u64::from(self.kernarg_size))
            | !aligned(packet.device_address(), 16);
        if bad {
            return Err(IssueError::Prepared {
                packet_offset: h.packet_offset,
                kernarg_offset: h.kernarg_offset,
            });
        }
        let kernargs = self.kernarg_base + u64::from(h.kernarg_offset);
        self.arguments(view, view.kernarg_template().get(), kernarg_size, kernargs)?;
        self.publish_prepared(packet.get(), kernargs, h.packet_offset);
        Ok(())
    }

    /// A dispatch command's kernel arguments: the template copied to
    /// `kernargs`, then each binding resolved, checked and patched in.
    fn arguments(
        &self,
        view: View<'_, DispatchCommand>,
        template: u64,
        size: u32,
        kernargs: u64,
    ) -> Result<(), IssueError> {
        let patches = view.bindings();
        check_aligned(patches.address(), 8)?;
        check_aligned(template, 16)?;
        let patches = patches.get();
        // A binding's fallback place below (the arguments' first word) must
        // be inside them.
        if !patches.is_empty() && size < 8 {
            return Err(IssueError::Kernargs {
                offset: 0,
                size: 8,
                block: size,
            });
        }
        // Whole 8-byte words: the template is 16-byte aligned and padded to
        // 16 bytes, and so is the command's share of the reservation.
        for w in 0..u64::from(size.div_ceil(8)) {
            // SAFETY: the recording's view vouches for the command's padded
            // template (its alignment checked above); the word written is
            // inside the command's share of the reservation (checked by
            // the caller), both 8-aligned.
            unsafe { store(kernargs + 8 * w, ((template + 8 * w) as *const u64).read()) };
        }
        // The bindings, each resolved, checked and patched in one pass,
        // with no branch per binding (a divergent exit from the loop costs
        // more than the work): a failure is remembered, and the first one
        // is looked at again, on the slow path, for its error. A failure
        // leaves the command's own arguments half written, which no packet
        // points at (nothing is published).
        let mut failed = u64::MAX;
        for b in 0..patches.len() {
            let Some(patch) = patches.get(b) else {
                break;
            };
            let patch = patch.get();
            let (address, ok) = match self.patch_address(&patch) {
                Ok(address) => (address, true),
                Err(_) => (0, false),
            };
            let offset = u32::from(patch.kernarg_offset);
            let inside = offset.is_multiple_of(8) & (offset + 8 <= size);
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
        if let Some(patch) = patches.get(failed) {
            let patch = patch.get();
            self.patch_address(&patch)?;
            return Err(IssueError::Kernargs {
                offset: u32::from(patch.kernarg_offset),
                size: 8,
                block: size,
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
                let entry = binding(self.table(), patch.slot)?;
                Ok(entry.address.wrapping_add(patch.value))
            }
            BufferRefKind::ALLOCATION => {
                let at = check_aligned(patch.value, 8)?;
                // SAFETY: the issue state's view vouches for what the
                // block's commands reference: an allocation patch's value is
                // the address of a live BufferRef (alignment checked).
                let r = unsafe { View::<BufferRef>::at_nonzero(at) }.get();
                if r.kind != BufferRefKind::ALLOCATION {
                    return Err(IssueError::RefKind(r.kind.0));
                }
                Ok(self.resolve(&r)?.address)
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
        let kernel = kernel_info(self.state().copy_kernel())?;
        let units = CopyPlan::new(dst, src, len).partition.units();
        let packet = blit_packet(&kernel, kernargs, units, h.ordering(false))?;
        // SAFETY: checked in `issue`: inside the command's share.
        unsafe { store(kernargs, CopyArgs { dst, src, len }) };
        Ok(packet)
    }
}
