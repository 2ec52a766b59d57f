//! What a wave's work-items share, for code that every active work-item of
//! a wave runs with the same values (a kernel's issue state, the block it
//! issues, the queue it writes).
//!
//! On the GPU a value loaded through a generic pointer counts as
//! per-work-item to the compiler (a flat load may read private memory), so
//! a branch on it manages the execution mask and a loop to it runs with a
//! per-lane exit. [`uniform_u32`] and [`uniform_u64`] read the first active
//! lane's copy (`v_readfirstlane`), which the compiler knows is the wave's:
//! branches and loops on it become scalar. On the host, where a work-item
//! is a wave of one, each is the value itself, so the logic around them is
//! unit-tested there as it is.

/// `value` as the wave's first active work-item has it. Only for values
/// every active work-item holds the same (or where the first one's is what
/// is wanted).
#[inline(always)]
pub fn uniform_u32(value: u32) -> u32 {
    #[cfg(target_arch = "amdgpu")]
    {
        core::arch::amdgpu::readfirstlane_u32(value)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    {
        value
    }
}

/// [`uniform_u32`] for a 64-bit value.
#[inline(always)]
pub fn uniform_u64(value: u64) -> u64 {
    #[cfg(target_arch = "amdgpu")]
    {
        core::arch::amdgpu::readfirstlane_u64(value)
    }
    #[cfg(not(target_arch = "amdgpu"))]
    {
        value
    }
}

/// Whether `holds` holds on every active work-item of the wave (a ballot);
/// the answer is the wave's, so a branch on it is scalar.
#[inline(always)]
pub fn all(holds: bool) -> bool {
    #[cfg(target_arch = "amdgpu")]
    {
        core::arch::amdgpu::ballot(!holds) == 0
    }
    #[cfg(not(target_arch = "amdgpu"))]
    {
        holds
    }
}
