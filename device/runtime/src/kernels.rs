//! The first kernels: fill, copy and saxpy over one-dimensional buffers.
//!
//! Each is grid-stride (see [`crate::grid`]), so any 1-D dispatch covers any
//! length exactly once. Pointers are raw because kernel arguments are: the
//! caller (host shim or device scheduler) guarantees that each buffer holds
//! `len` elements and that the buffers do not overlap. These are simple
//! element-at-a-time loops; the vectorised blits come with the device
//! runtime's blit layer.

use crate::arch::work_item_x;

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
