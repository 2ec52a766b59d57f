//! aqueduct's GEMM microkernels: MFMA on CDNA (gfx90a, gfx942, gfx950), WMMA
//! on RDNA (gfx1100, gfx1201) and an FMA fallback, each described by a
//! solution catalog so the host can pick one per problem and GPU.
//!
//! The crate holds no kernels yet. It is built like every device crate (one
//! code object per gfx target, which today contains no kernels), so the build
//! and report pipeline already covers it.
#![no_std]
#![cfg_attr(target_arch = "amdgpu", feature(abort_immediate))]

#[cfg(target_arch = "amdgpu")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // llvm.trap: the runtime reports it as a queue error for the dispatch.
    core::process::abort_immediate()
}
