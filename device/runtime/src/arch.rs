//! The amdgpu-only bottom layer: intrinsics that tell a work-item where it is.
//!
//! Everything above this module is safe, host-testable Rust.

use core::arch::amdgpu::{workgroup_id_x, workitem_id_x};

use crate::grid::WorkItem;

// Byte offsets in the AQL kernel dispatch packet (HSA spec 2.9.6,
// `hsa_kernel_dispatch_packet_t`): workgroup_size_x is a u16 at 4,
// grid_size_x a u32 at 12.
const WORKGROUP_SIZE_X_OFFSET: usize = 4;
const GRID_SIZE_X_OFFSET: usize = 12;

unsafe extern "C" {
    /// Defined in `llvm/dispatch.ll`: `llvm.amdgcn.dispatch.ptr` cast to a
    /// generic pointer.
    safe fn aqueduct_dispatch_ptr() -> *const u8;
}

/// This work-item's place in the x dimension of the current dispatch.
#[inline(always)]
pub fn work_item_x() -> WorkItem {
    let packet = aqueduct_dispatch_ptr();
    // SAFETY: the dispatch pointer addresses the 64-byte, 64-byte-aligned AQL
    // packet that launched this kernel, which the packet processor keeps
    // valid and unchanged until the dispatch completes; both fields lie
    // inside it at their natural alignment.
    let (workgroup_size, grid_size) = unsafe {
        (
            packet.add(WORKGROUP_SIZE_X_OFFSET).cast::<u16>().read(),
            packet.add(GRID_SIZE_X_OFFSET).cast::<u32>().read(),
        )
    };
    WorkItem {
        workgroup_id: workgroup_id_x(),
        local_id: workitem_id_x(),
        workgroup_size: u32::from(workgroup_size),
        grid_size,
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // llvm.trap: `s_trap 2` on amdhsa, which the runtime reports as a queue
    // error for this dispatch. Nothing of the panic message can reach the
    // host yet.
    core::process::abort_immediate()
}
