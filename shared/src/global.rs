//! Loads and stores in the GPU's global and constant address spaces, at
//! device addresses given as integers: what the device library's hot
//! paths use, directly or through a view's word accessors
//! ([`crate::view::PlainField::load_invariant`] and its siblings).
//!
//! On the GPU these go through the global and constant address spaces
//! (`shared/llvm/global.ll`, linked into every code object); Rust's own pointer accesses are flat, which costs a
//! 64-bit address per lane and makes every loaded value per-lane to the
//! compiler:
//!
//! - [`load_invariant_u32`] and [`load_invariant_u64`] read memory nothing
//!   writes while the kernel runs (an issue state, a block header, a
//!   queue's fixed fields): at an address the whole wave passes, that is
//!   one scalar load into SGPRs, and the value is the wave's, so branches
//!   on it are scalar;
//! - [`load_u32`], [`load_u64`], [`store_u32`], [`store_u64`] and [`store_release_u32`]
//!   are global accesses: where the address is a wave-uniform base plus a
//!   32-bit offset the instruction takes the base in SGPRs and the offset in
//!   one VGPR, with no per-lane 64-bit arithmetic.
//!
//! On the host each is the plain access (the release store an atomic
//! one), so the logic around them is unit-tested there. The instructions
//! the GPU build makes of them are seen in the disassembly
//! (`llvm-objdump`); no test checks them.

#[cfg(target_arch = "amdgpu")]
unsafe extern "C" {
    fn aqueduct_load_invariant_u32(p: *const u32) -> u32;
    fn aqueduct_load_invariant_u64(p: *const u64) -> u64;
    fn aqueduct_global_load_u32(p: *const u32) -> u32;
    fn aqueduct_global_load_u64(p: *const u64) -> u64;
    fn aqueduct_global_store_u32(p: *mut u32, v: u32);
    fn aqueduct_global_store_u64(p: *mut u64, v: u64);
    fn aqueduct_global_store_release_u32(p: *mut u32, v: u32);
}

/// Reads the `u32` at `address`, which does not change while the kernel
/// runs.
///
/// # Safety
/// 4 readable bytes at `address`, 4-byte aligned, in global memory, not
/// written while the kernel runs.
#[inline(always)]
pub unsafe fn load_invariant_u32(address: u64) -> u32 {
    #[cfg(target_arch = "amdgpu")]
    // SAFETY: the caller's contract.
    unsafe {
        aqueduct_load_invariant_u32(address as *const u32)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    // SAFETY: the caller's contract.
    unsafe {
        (address as *const u32).read()
    }
}

/// [`load_invariant_u32`] for a `u64` (8-byte aligned).
///
/// # Safety
/// As for [`load_invariant_u32`], for 8 bytes.
#[inline(always)]
pub unsafe fn load_invariant_u64(address: u64) -> u64 {
    #[cfg(target_arch = "amdgpu")]
    // SAFETY: the caller's contract.
    unsafe {
        aqueduct_load_invariant_u64(address as *const u64)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    // SAFETY: the caller's contract.
    unsafe {
        (address as *const u64).read()
    }
}

/// Reads the `u32` at `address`.
///
/// # Safety
/// 4 readable bytes at `address`, 4-byte aligned, in global memory.
#[inline(always)]
pub unsafe fn load_u32(address: u64) -> u32 {
    #[cfg(target_arch = "amdgpu")]
    // SAFETY: the caller's contract.
    unsafe {
        aqueduct_global_load_u32(address as *const u32)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    // SAFETY: the caller's contract.
    unsafe {
        (address as *const u32).read()
    }
}

/// Reads the `u64` at `address`.
///
/// # Safety
/// 8 readable bytes at `address`, 8-byte aligned, in global memory.
#[inline(always)]
pub unsafe fn load_u64(address: u64) -> u64 {
    #[cfg(target_arch = "amdgpu")]
    // SAFETY: the caller's contract.
    unsafe {
        aqueduct_global_load_u64(address as *const u64)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    // SAFETY: the caller's contract.
    unsafe {
        (address as *const u64).read()
    }
}

/// Writes `value` at `address`.
///
/// # Safety
/// 4 writable bytes at `address`, 4-byte aligned, in global memory, not
/// accessed concurrently.
#[inline(always)]
pub unsafe fn store_u32(address: u64, value: u32) {
    #[cfg(target_arch = "amdgpu")]
    // SAFETY: the caller's contract.
    unsafe {
        aqueduct_global_store_u32(address as *mut u32, value)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    // SAFETY: the caller's contract.
    unsafe {
        (address as *mut u32).write(value)
    }
}

/// Writes `value` at `address`.
///
/// # Safety
/// As for [`store_u32`], for 8 bytes, 8-byte aligned.
#[inline(always)]
pub unsafe fn store_u64(address: u64, value: u64) {
    #[cfg(target_arch = "amdgpu")]
    // SAFETY: the caller's contract.
    unsafe {
        aqueduct_global_store_u64(address as *mut u64, value)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    // SAFETY: the caller's contract.
    unsafe {
        (address as *mut u64).write(value)
    }
}

/// Writes `value` at `address` with a system-scope release store: every
/// earlier write of this work-item is visible to any agent that sees it
/// (what publishes an AQL packet's header).
///
/// # Safety
/// 4 bytes at `address`, 4-byte aligned, in global memory, accessed only
/// atomically while others may.
#[inline(always)]
pub unsafe fn store_release_u32(address: u64, value: u32) {
    #[cfg(target_arch = "amdgpu")]
    // SAFETY: the caller's contract.
    unsafe {
        aqueduct_global_store_release_u32(address as *mut u32, value)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    // SAFETY: the caller's contract: aligned, live, only accessed
    // atomically.
    unsafe {
        core::sync::atomic::AtomicU32::from_ptr(address as *mut u32)
            .store(value, core::sync::atomic::Ordering::Release)
    }
}

/// Keeps the memory instructions before it before those after it: the
/// compiler's scheduler moves none across (arithmetic may cross). Where
/// stores count in the same counter as loads (gfx9's `vmcnt`), loads
/// issued in the order their data is waited for let one wait cover
/// several.
#[inline(always)]
pub fn keep_order() {
    #[cfg(target_arch = "amdgpu")]
    // SAFETY: a scheduling hint, no effect on what the code computes.
    unsafe {
        core::arch::amdgpu::sched_barrier::<0x6>()
    }
}
