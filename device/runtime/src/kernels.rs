//! The first kernels: fill, copy, saxpy and the test pattern over
//! one-dimensional buffers.
//!
//! Each is grid-stride (see [`crate::grid`]), so any 1-D dispatch covers any
//! length exactly once. Pointers are raw because kernel arguments are: the
//! caller (host shim or device scheduler) guarantees that each buffer holds
//! `len` elements and that the buffers do not overlap. These are simple
//! element-at-a-time loops; the vectorised blits come with the device
//! runtime's blit layer.

use aqueduct_abi::amd_queue::AmdQueue;
use aqueduct_abi::hsa::SignalHandle;
use aqueduct_abi::packet::{DispatchLimits, KernelDispatch};

use crate::arch::{pause, work_item_x};
use crate::queue::Queue;

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
            match (packet.build(&DispatchLimits::AMD_GPU), unsafe {
                Queue::from_ptr(queue)
            }) {
                (Ok(prepared), Ok(q)) => q.submit(&prepared, pause).unwrap_or(u64::MAX),
                _ => u64::MAX,
            }
        }
        Err(_) => u64::MAX,
    };
    // SAFETY: `status` holds one writable u64 (kernel contract).
    unsafe { status.write(id) };
}
