//! Kernels for benchmarks of the path around a kernel rather than of the
//! kernel: `cargo xtask hsa-bench` times a dispatch's round trip through the
//! host shim and an HSA runtime, so the kernel itself does nothing.

/// Does nothing: a dispatch of it costs only the queue, the packet
/// processor and the completion signal.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn empty_kernel() {}
