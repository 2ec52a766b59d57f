//! The amdgpu-only bottom layer: intrinsics that tell a work-item where it is.
//!
//! Everything above this module is safe, host-testable Rust.

#[cfg(feature = "kernels")]
use core::arch::amdgpu::{workgroup_id_x, workitem_id_x};

#[cfg(feature = "kernels")]
use aqueduct_abi::aql::KernelDispatchPacket;

#[cfg(feature = "kernels")]
use crate::grid::WorkItem;

#[cfg(feature = "kernels")]
unsafe extern "C" {
    /// Defined in `llvm/dispatch.ll`: `llvm.amdgcn.dispatch.ptr` cast to a
    /// generic pointer.
    safe fn aqueduct_dispatch_ptr() -> *const KernelDispatchPacket;
}

/// This work-item's place in the x dimension of the current dispatch.
/// (Only the library's kernels use it and [`pause`]: a crate that takes
/// the library without them leaves both unused.)
#[cfg(feature = "kernels")]
#[inline(always)]
pub fn work_item_x() -> WorkItem {
    let packet = aqueduct_dispatch_ptr();
    // SAFETY: the dispatch pointer addresses the 64-byte, 64-byte-aligned AQL
    // kernel dispatch packet that launched this kernel, which the packet
    // processor keeps valid and unchanged until the dispatch completes; the
    // fields are read in place, at their natural alignment.
    let (workgroup_size, grid_size) = unsafe {
        (
            (&raw const (*packet).workgroup_size_x).read(),
            (&raw const (*packet).grid_size_x).read(),
        )
    };
    WorkItem {
        workgroup_id: workgroup_id_x(),
        local_id: workitem_id_x(),
        workgroup_size: u32::from(workgroup_size),
        grid_size,
    }
}

/// The agent's constant-rate real-time clock (`s_memrealtime`), for
/// trace records.
#[inline(always)]
pub fn realtime() -> u64 {
    unsafe extern "C" {
        /// Defined in `llvm/clock.ll`: `llvm.readsteadycounter`.
        safe fn aqueduct_realtime() -> u64;
    }
    aqueduct_realtime()
}

/// Yields the wave's issue slots for a moment: what a spin-wait does
/// between looks (`s_sleep 1`, about 64 clocks).
#[cfg(feature = "kernels")]
#[inline(always)]
pub fn pause() {
    core::arch::amdgpu::s_sleep::<1>();
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // llvm.trap: `s_trap 2` on amdhsa, which the runtime reports as a queue
    // error for this dispatch. Nothing of the panic message can reach the
    // host yet.
    core::process::abort_immediate()
}
