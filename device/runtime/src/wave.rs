//! What a wave's work-items decide together: answers that are the
//! wave's, so that a branch on them is scalar (no execution-mask
//! bookkeeping, no per-lane exit).
//!
//! [`all`] is a ballot; [`first_where`] a ballot and a read of one lane
//! (`v_readlane`). Values every work-item reads at the same address come
//! from scalar loads instead ([`crate::memory::load_invariant_u64`]). On
//! the host, where a work-item is a wave of one, each is the plain
//! answer, so the logic around them is unit-tested there as it is.

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

/// `value` as the first active work-item where `which` holds has it, the
/// wave's (a ballot, then a read of that lane); `None` when it holds on
/// none.
#[inline(always)]
pub fn first_where(which: bool, value: u64) -> Option<u64> {
    #[cfg(target_arch = "amdgpu")]
    {
        let lanes = core::arch::amdgpu::ballot(which);
        if lanes == 0 {
            return None;
        }
        // SAFETY: the lane is the wave's (from the ballot), one of the
        // active ones.
        Some(unsafe { core::arch::amdgpu::readlane_u64(value, lanes.trailing_zeros()) })
    }
    #[cfg(not(target_arch = "amdgpu"))]
    {
        which.then_some(value)
    }
}
