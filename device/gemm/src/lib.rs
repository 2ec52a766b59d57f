//! aqueduct's GEMM microkernels: MFMA on CDNA (gfx90a, gfx942, gfx950),
//! WMMA on RDNA3/RDNA4 (gfx1100, gfx1201) and an FMA fallback everywhere,
//! each described by a solution catalog so the host can pick one per
//! problem and GPU.
//!
//! Kernels: [`fma`], the VALU fallback (f32, and f16/bf16 inputs with f32
//! accumulation), [`mfma`], the matrix-core kernels of CDNA for the same
//! types, FP8/BF8 on gfx942 (FNUZ) and gfx950 (OCP), xf32 on gfx942, and
//! [`wmma`], RDNA's for f16/bf16 inputs and gfx1201's FP8/BF8 (OCP); [`common`] holds what they share (arguments, layouts,
//! element types, the kernel lists), and on the device `staging` the LDS
//! slices both matrix families use. Each
//! kernel is built with its real launch bound (xtask's launch bounds, from
//! those lists).
#![no_std]
#![cfg_attr(
    target_arch = "amdgpu",
    feature(
        abi_gpu_kernel,
        stdarch_amdgpu,
        abort_immediate,
        core_float_math,
        f16,
        link_llvm_intrinsics,
        simd_ffi,
        repr_simd,
        stmt_expr_attributes
    )
)]
#![cfg_attr(target_arch = "amdgpu", allow(internal_features))]

pub mod common;
pub mod fma;
#[macro_use]
pub mod mfma;
#[cfg(target_arch = "amdgpu")]
mod staging;
pub mod wmma;

#[cfg(target_arch = "amdgpu")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // llvm.trap: the runtime reports it as a queue error for the dispatch.
    core::process::abort_immediate()
}
