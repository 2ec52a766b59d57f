//! Kernels for benchmarks of the path around a kernel rather than of the
//! kernel: `cargo xtask hsa-bench` times a dispatch's round trip through the
//! host shim and an HSA runtime, so the kernel itself does nothing.

/// Does nothing: a dispatch of it costs only the queue, the packet
/// processor and the completion signal.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn empty_kernel() {}

/// `out[i] = a[i] + b[i] + c[i]` for `i < len`, summed left to right in
/// f32: a kernel with four pointer arguments, the dispatch of
/// `cargo xtask cmdbuf-bench`'s issue goal (four bindings each).
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn sum3_f32(
    len: u64,
    a: *const f32,
    b: *const f32,
    c: *const f32,
    out: *mut f32,
) {
    for i in crate::work_item_x().stride(len) {
        let i = i as usize;
        // SAFETY: the dispatch contract gives `a`, `b` and `c` `len`
        // readable and `out` `len` writable elements, and `i < len`.
        unsafe {
            out.add(i)
                .write(a.add(i).read() + b.add(i).read() + c.add(i).read())
        };
    }
}
