//! Every kernel of the device library, in one room: the entry points are
//! the amdgpu-only layer over the plain Rust below them (the house rule:
//! only entry points, intrinsics and asm are amdgpu-only). Each turns its
//! arguments — raw pointers, as kernel arguments are — into what the
//! library works on (views of shared layouts, slices of buffers), which is
//! the one unsafe step per kernel, under the kernel's contract.
//!
//! | kernels | what they run |
//! |---|---|
//! | `fill_u32`, `copy_bytes`, `saxpy_f32`, `fill_pattern` | element-at-a-time grid-stride loops (the first kernels; the main job's operands) |
//! | `blit_fill`, `blit_copy` | the command buffers' FILL, COPY and UPDATE ([`crate::blit`]) |
//! | `enqueue_dispatch` | device-side enqueue of one dispatch ([`crate::queue`]) |
//! | `cmd_block_issue`, `cmd_block_issue_serial` | a command block's issue ([`crate::command`]) |
//! | `cmd_patch_dispatch`, `cmd_branch` | the control kernels ([`crate::command::control`]) |
//! | `sched_tick` | the device scheduler's tick ([`crate::scheduler::tick`]) |
//!
//! Each is grid-stride where it loops (see [`crate::grid`]), so any 1-D
//! dispatch covers any length exactly once. The caller (host shim or
//! device scheduler) guarantees that each buffer holds what the kernel's
//! doc says and that the buffers do not overlap.

use core::arch::amdgpu::{workgroup_id_x, workitem_id_x};
use core::ptr::NonNull;

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::command::{BlockIssue, Command, CommandOpcode, Execution, PatchArgs};
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::packet::{DispatchLimits, KernelDispatch};
use aqueduct_abi::scheduler::SchedulerState;
use aqueduct_abi::view::View;

use crate::arch::{pause, work_item_x};
use crate::blit::{CopyPlan, FillPattern, Partition, SourceRead, Unit, funnel};
use crate::command::{BlockIssuer, ISSUE_WORKGROUP};
use crate::queue::Queue;
use crate::scheduler::QueueRequester;

/// The view of a layout a kernel argument points at.
///
/// # Safety
/// `ptr` is not null and meets a view's contract
/// ([`aqueduct_abi::view`]) while the kernel runs: the kernel's contract.
#[inline(always)]
unsafe fn argument<'a, T>(ptr: *const T) -> View<'a, T> {
    // SAFETY: the caller's contract.
    unsafe { View::from_ptr(NonNull::new_unchecked(ptr.cast_mut())) }
}

/// The device's requester: the queues' own pause between looks (the
/// function itself, not a pointer to it, so that it inlines).
#[inline(always)]
fn requester() -> QueueRequester<impl FnMut()> {
    QueueRequester { pause }
}

// ---------------------------------------------------------------------------
// The first kernels
// ---------------------------------------------------------------------------

/// `dst[i] = value` for `i < len`.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn fill_u32(dst: *mut u32, len: u64, value: u32) {
    for i in work_item_x().stride(len) {
        // SAFETY: the dispatch contract gives `dst` `len` writable elements
        // and `i < len`.
        unsafe { dst.add(i as usize).write(value) };
    }
}

/// `dst[i] = src[i]` for the first `len` bytes; the ranges must not overlap.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn copy_bytes(dst: *mut u8, src: *const u8, len: u64) {
    for i in work_item_x().stride(len) {
        // SAFETY: the dispatch contract gives `src` `len` readable and `dst`
        // `len` writable bytes, not overlapping, and `i < len`.
        unsafe { dst.add(i as usize).write(src.add(i as usize).read()) };
    }
}

/// Element `i` of [`aqueduct_abi::pattern`]'s pattern `seed`, stored as the
/// element kind `element` (its `repr(u32)` code), into `dst[i]` for
/// `i < len`: operands with values the host's reference computes from the
/// same definition. An unknown `element` writes nothing (the host checks it
/// before recording).
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn fill_pattern(dst: *mut u8, len: u64, element: u32, seed: u32) {
    use aqueduct_abi::pattern::{Element, bits};
    let Some(kind) = Element::from_code(element) else {
        return;
    };
    for i in work_item_x().stride(len) {
        let v = bits(kind, seed, i);
        // SAFETY: the dispatch contract gives `dst` `len` writable elements
        // of `kind`'s size, aligned to it, and `i < len`.
        unsafe {
            match kind.bytes() {
                4 => dst.cast::<u32>().add(i as usize).write(v),
                2 => dst.cast::<u16>().add(i as usize).write(v as u16),
                _ => dst.add(i as usize).write(v as u8),
            }
        }
    }
}

/// `y[i] = a * x[i] + y[i]` for `i < len` (BLAS saxpy, unit strides).
///
/// The product is rounded before the sum (no fused multiply-add), exactly as
/// the host expression `a * x + y` computes it in f32.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn saxpy_f32(len: u64, a: f32, x: *const f32, y: *mut f32) {
    for i in work_item_x().stride(len) {
        // SAFETY: the dispatch contract gives `x` `len` readable and `y` `len`
        // writable elements and `i < len`.
        unsafe {
            let yi = y.add(i as usize);
            yi.write(a * x.add(i as usize).read() + yi.read());
        }
    }
}

/// Device-side enqueue, the first step of device scheduling: the first
/// work-item builds a one-dimensional dispatch packet of `kernel_object`
/// (grid `grid_size`, workgroups of `workgroup_size`, kernel arguments at
/// `kernarg_address`, `group_segment_size` bytes of LDS, decrementing
/// `completion_signal` when done) and submits it to the queue at `queue`:
/// reserve a slot (waiting while the ring is full), write the body,
/// publish the header with a system-scope release, ring the doorbell.
/// `status[0]` receives the packet id, or `u64::MAX` if the packet or the
/// queue was refused.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn enqueue_dispatch(
    queue: *mut AmdQueue,
    kernel_object: u64,
    kernarg_address: u64,
    grid_size: u32,
    workgroup_size: u32,
    group_segment_size: u32,
    completion_signal: u64,
    status: *mut u64,
) {
    if work_item_x().global_id() != 0 {
        return;
    }
    let id = match u16::try_from(workgroup_size) {
        Ok(workgroup) => {
            let packet = KernelDispatch {
                group_segment_size,
                completion_signal: SignalHandle(completion_signal),
                ..KernelDispatch::linear(kernel_object, kernarg_address, grid_size, workgroup)
            };
            // SAFETY: the caller passes a live queue (the kernel's
            // contract, as for every pointer argument).
            let queue = unsafe { argument(queue) };
            match (packet.build(&DispatchLimits::AMD_GPU), Queue::new(queue)) {
                (Ok(prepared), Ok(q)) => q.submit(&prepared, pause).unwrap_or(u64::MAX),
                _ => u64::MAX,
            }
        }
        Err(_) => u64::MAX,
    };
    // SAFETY: `status` holds one writable u64 (kernel contract).
    unsafe { status.write(id) };
}

// ---------------------------------------------------------------------------
// Blits
// ---------------------------------------------------------------------------

/// One chunk as its store sees it: 16-byte alignment is what lets LLVM
/// emit a single `global_store_dwordx4` (and `global_load_dwordx4`).
#[repr(C, align(16))]
struct Chunk([u32; 4]);

/// `dst[k] = pattern[k % pattern_size]` for `k < len`, the pattern
/// being `pattern_size` bytes taken little-endian from `pattern_lo`,
/// then `pattern_hi`.
///
/// `pattern_size` must be one of [`crate::blit::PATTERN_SIZES`]; any other
/// size traps (`s_trap 2`, a queue error) before a byte is written —
/// callers validate it with [`FillPattern::new`] first.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn blit_fill(
    dst: *mut u8,
    len: u64,
    pattern_lo: u64,
    pattern_hi: u64,
    pattern_size: u32,
) {
    let Some(pattern) = FillPattern::new(pattern_lo, pattern_hi, pattern_size) else {
        panic!("blit_fill: pattern size not 1, 2, 4, 8 or 16");
    };
    let part = Partition::fill(dst.addr() as u64, len);
    let chunk = pattern.chunk(part.front);
    for u in work_item_x().stride(part.units()) {
        match part.unit(u) {
            // SAFETY: the dispatch contract gives `dst` `len` writable
            // bytes; a chunk's 16 bytes lie inside them and start at a
            // 16-byte-aligned address (`Partition::fill`).
            Unit::Chunk(o) => unsafe { dst.add(o as usize).cast::<Chunk>().write(Chunk(chunk)) },
            // SAFETY: `o < len`, inside the writable range.
            Unit::Byte(o) => unsafe { dst.add(o as usize).write(pattern.byte(o)) },
        }
    }
}

/// `dst[k] = src[k]` for `k < len`; the ranges must not overlap.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn blit_copy(dst: *mut u8, src: *const u8, len: u64) {
    let plan = CopyPlan::new(dst.addr() as u64, src.addr() as u64, len);
    let part = plan.partition;
    // One loop per read: the choice is uniform across the dispatch, so
    // it is made once, outside the loop.
    match plan.read {
        SourceRead::Aligned => copy_units(dst, src, part, |at| {
            // SAFETY: `at` is a chunk's source; `CopyPlan`'s invariant
            // puts its 16 bytes inside `src`'s range at 16-byte
            // alignment.
            unsafe { at.cast::<Chunk>().read().0 }
        }),
        SourceRead::Dwords => copy_units(dst, src, part, |at| {
            // SAFETY: as above, at dword alignment.
            unsafe { at.cast::<[u32; 4]>().read() }
        }),
        SourceRead::Funnel { shift } => copy_units(dst, src, part, |at| {
            // SAFETY: `CopyPlan`'s invariant puts the 20 bytes from
            // `shift` bytes before `at` inside `src`'s range, at dword
            // alignment.
            let w = unsafe {
                let base = at.sub(shift as usize);
                let body = base.cast::<[u32; 4]>().read();
                let last = base.add(16).cast::<u32>().read();
                [body[0], body[1], body[2], body[3], last]
            };
            funnel(w, shift)
        }),
    }
}

/// The grid-stride loop of a copy, with `load` reading a chunk's 16
/// source bytes from its source address.
#[inline(always)]
fn copy_units(dst: *mut u8, src: *const u8, part: Partition, load: impl Fn(*const u8) -> [u32; 4]) {
    for u in work_item_x().stride(part.units()) {
        match part.unit(u) {
            // SAFETY: the dispatch contract gives `dst` `len` writable
            // and `src` `len` readable bytes; a chunk lies inside both
            // and its destination is 16-byte aligned (`CopyPlan`).
            Unit::Chunk(o) => unsafe {
                let value = load(src.add(o as usize));
                dst.add(o as usize).cast::<Chunk>().write(Chunk(value));
            },
            // SAFETY: `o < len`, inside both ranges.
            Unit::Byte(o) => unsafe { dst.add(o as usize).write(src.add(o as usize).read()) },
        }
    }
}

// ---------------------------------------------------------------------------
// Command-buffer issue and control
// ---------------------------------------------------------------------------

/// Issues the block described at `issue` serially in work-item 0 (the
/// serial issue mode: launch one work-item); traps like
/// [`cmd_block_issue`].
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn cmd_block_issue_serial(issue: *const BlockIssue) {
    if work_item_x().global_id() != 0 {
        return;
    }
    // SAFETY: the kernel's contract: `issue` describes a live block.
    let issue = unsafe { argument(issue) };
    let Ok(issuer) = BlockIssuer::new(issue) else {
        panic!("cmd_block_issue_serial: bad issue state");
    };
    // The entry starts (a later block was recorded by the control kernel
    // that issued it).
    crate::scheduler::trace_first_block(issue, &mut requester());
    if issuer.issue_serially().is_err() {
        panic!("cmd_block_issue_serial: a command failed its checks");
    }
}

/// Issues the block described at `issue`, one work-item per command:
/// launch at least `command_count` work-items (the rest return), in
/// workgroups of [`ISSUE_WORKGROUP`]. A command on the checked path that
/// cannot be issued traps (a queue error for this dispatch): the host
/// validated it, so the recording is damaged. The issue state is trusted,
/// not checked ([`BlockIssuer::trusted`]), and so are the dispatches the
/// recorder vouched for ([`BlockIssuer::issue_vouched`]).
///
/// One command per work-item, no loop: a grid-stride loop over the
/// commands keeps the whole issue state live across iterations, and the
/// kernel then spilled 77 SGPRs.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn cmd_block_issue(issue: *const BlockIssue) {
    // SAFETY: the kernel's contract: `issue` describes a live block, its
    // issue state written by aqueduct.
    let issue = unsafe { argument(issue) };
    let issuer = BlockIssuer::trusted(issue);
    // The launchers use workgroups of ISSUE_WORKGROUP work-items (the
    // kernel's launch bound), for blocks of at most 2^16 commands (the
    // recorder's limit), so nothing below wraps.
    let first = workgroup_id_x().wrapping_mul(u32::from(ISSUE_WORKGROUP));
    let id = first.wrapping_add(workitem_id_x());
    // (The workgroup first: a scalar branch for all but one.)
    if first == 0 && id == 0 {
        // The entry starts (a later block was recorded by the control
        // kernel that issued it).
        crate::scheduler::trace_first_block(issue, &mut requester());
    }
    // Work-items below the block's vouched dispatches take the fast path,
    // so a wave of them runs one code without divergence; a workgroup all
    // of whose work-items do decides so with one scalar branch. The
    // launchers size the grid to the commands.
    let end = first.wrapping_add(u32::from(ISSUE_WORKGROUP));
    if issuer.all_vouched(end) {
        issuer.issue_vouched(issuer.command_for(id));
    } else if id < issuer.command_count() && issuer.issue_work_item(id).is_err() {
        panic!("cmd_block_issue: a command failed its checks");
    }
}

/// The patch kernel of an INDIRECT_DYNAMIC dispatch (one work-item):
/// [`crate::command::patch_dispatch`] on its arguments, which are
/// [`PatchArgs`]' fields in order (a test checks the metadata's offsets
/// against the struct's). Traps on a grid that overflows.
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
    let args = PatchArgs {
        packet,
        count,
        first_word,
        no_op_header,
        dimensions,
        workgroup_size: [workgroup_x, workgroup_y, workgroup_z],
        reserved: 0,
    };
    let Ok((count, slot)) = crate::command::control::patch_targets(&args) else {
        panic!("cmd_patch_dispatch: misaligned arguments");
    };
    // SAFETY: the kernel's contract: written by the issue of the dispatch,
    // naming its reserved, unpublished slot and its count (12 readable
    // bytes); both aligned (checked above).
    let (count, slot) = unsafe { (View::at_nonzero(count), View::at_nonzero(slot)) };
    if crate::command::patch_dispatch(&args, count, slot).is_err() {
        panic!("cmd_patch_dispatch: bad workgroup count");
    }
}

/// The control kernel of BRANCH and COND_BRANCH (one work-item): picks the
/// next block and issues it ([`crate::command::issue_block`]); of a RETURN
/// under the device scheduler: retires the entry
/// ([`crate::scheduler::retire`]). Traps when the command or the
/// submission is damaged.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn cmd_branch(execution: *const Execution, command: *const Command) {
    if work_item_x().global_id() != 0 {
        return;
    }
    // SAFETY: the kernel's contract: both live, written by the issue of
    // the block that ends in this command.
    let (execution, command) = unsafe { (argument(execution), argument(command)) };
    if command.header().opcode().get() == CommandOpcode::RETURN {
        // A RETURN dispatches this kernel only under a scheduler
        // (Execution::entry set), once the entry's work is done (barrier
        // bit).
        if let Some(entry) = execution.queue_entry() {
            crate::scheduler::retire(entry, &mut requester());
        }
        return;
    }
    let Ok(target) = crate::command::branch_target(execution, command) else {
        panic!("cmd_branch: bad branch");
    };
    // Recorded before the issue (after it, in the serial issue's path, the
    // call made this kernel spill 220 SGPRs instead of 45 on gfx942); its
    // issue kernel does not record it again.
    crate::scheduler::trace_block(execution, target, &mut requester());
    if crate::command::issue_block(execution, target, pause).is_err() {
        panic!("cmd_branch: cannot issue the next block");
    }
}

// ---------------------------------------------------------------------------
// The device scheduler
// ---------------------------------------------------------------------------

/// One tick of the scheduler at `scheduler` (launch one work-item, on its
/// control queue, barrier bit set).
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn sched_tick(scheduler: *mut SchedulerState) {
    if work_item_x().global_id() != 0 {
        return;
    }
    // SAFETY: the kernel's contract: the host made the scheduler and keeps
    // it live; ticks run one at a time on its control queue.
    let scheduler = unsafe { argument(scheduler) };
    crate::scheduler::tick(scheduler, &mut requester());
}
