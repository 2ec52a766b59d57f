//! Kernels that exist to exercise the simulator (issue 5's execution
//! suite): each module holds kernels of one kind, and `tests/tests/`
//! runs them on the simulator for gfx90a and gfx942 against CPU
//! references. They are built only for those two targets.
//!
//! Like the device library, the crate compiles for the host too (where it
//! is empty), so `cargo test --workspace` builds it.
#![no_std]
#![cfg_attr(
    target_arch = "amdgpu",
    feature(
        abi_gpu_kernel,
        stdarch_amdgpu,
        abort_immediate,
        link_llvm_intrinsics,
        simd_ffi,
        repr_simd,
        asm_experimental_arch
    )
)]
#![cfg_attr(target_arch = "amdgpu", allow(internal_features))]

#[cfg(target_arch = "amdgpu")]
pub mod mfma;

#[cfg(target_arch = "amdgpu")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::process::abort_immediate()
}
