//! Kernels that exist to exercise the simulator (its execution suite):
//! each module holds kernels of one kind, and `tests/tests/`
//! runs them on the simulator for every target against CPU references.
//! The matrix kernels are built only where the instructions exist (MFMA
//! on gfx90a/gfx942/gfx950, WMMA on gfx1100/gfx1201).
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
        asm_experimental_arch,
        f16
    )
)]
#![cfg_attr(target_arch = "amdgpu", allow(internal_features))]

/// `<2 x T>`, `<4 x T>`, ... as LLVM vectors (`#[repr(simd)]` over an
/// array is the form rustc lowers to a vector type): the matrix
/// intrinsics' operands (`mfma`, `wmma`).
#[cfg(target_arch = "amdgpu")]
macro_rules! vectors {
    ($($name:ident = [$t:ty; $n:literal];)*) => {$(
        #[repr(simd)]
        #[derive(Clone, Copy)]
        pub struct $name([$t; $n]);
    )*};
}

#[cfg(target_arch = "amdgpu")]
pub mod atomics;
#[cfg(target_arch = "amdgpu")]
pub mod bench;
#[cfg(target_arch = "amdgpu")]
pub mod control;
#[cfg(target_arch = "amdgpu")]
pub mod convert;
#[cfg(target_arch = "amdgpu")]
pub mod device_runtime;
#[cfg(target_arch = "amdgpu")]
pub mod int64;
#[cfg(target_arch = "amdgpu")]
pub mod lds;
#[cfg(any(
    aqueduct_gfx = "gfx90a",
    aqueduct_gfx = "gfx942",
    aqueduct_gfx = "gfx950"
))]
pub mod mfma;
#[cfg(target_arch = "amdgpu")]
pub mod scratch;
#[cfg(target_arch = "amdgpu")]
pub mod system;
#[cfg(any(aqueduct_gfx = "gfx1100", aqueduct_gfx = "gfx1201"))]
pub mod wmma;

/// This work-item's place in the x dimension of the current dispatch; the
/// kernels are grid-stride over it (see `aqueduct_device::grid`).
#[cfg(target_arch = "amdgpu")]
#[inline(always)]
fn work_item_x() -> aqueduct_device::grid::WorkItem {
    use aqueduct_device::abi::aql::KernelDispatchPacket;
    use core::arch::amdgpu::{workgroup_id_x, workitem_id_x};

    unsafe extern "C" {
        /// Defined in device/runtime/llvm/dispatch.ll, which every code
        /// object links: `llvm.amdgcn.dispatch.ptr` as a generic pointer.
        safe fn aqueduct_dispatch_ptr() -> *const KernelDispatchPacket;
    }
    let packet = aqueduct_dispatch_ptr();
    // SAFETY: the dispatch pointer addresses this dispatch's AQL packet,
    // valid and unchanged until the dispatch completes; the fields are read
    // in place at their natural alignment.
    let (workgroup_size, grid_size) = unsafe {
        (
            (&raw const (*packet).workgroup_size_x).read(),
            (&raw const (*packet).grid_size_x).read(),
        )
    };
    aqueduct_device::grid::WorkItem {
        workgroup_id: workgroup_id_x(),
        local_id: workitem_id_x(),
        workgroup_size: u32::from(workgroup_size),
        grid_size,
    }
}

// The panic handler is aqueduct-device's (`s_trap 2`): the grid-stride
// helper above links that crate in, and a second handler would clash.
