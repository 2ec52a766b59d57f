//! Lanes: a wavefront's 64 work-items as the vector registers, the EXEC
//! mask and the cross-lane operations (DPP) see them. A leaf: the wave's
//! state and the executors build on it.

/// Lanes of a wavefront: GFX9 runs wave64 only.
pub const LANES: usize = 64;
/// One 32-bit value per lane.
pub type Lanes = [u32; LANES];

/// Runs `$body` with `$l` bound to each lane set in `$mask`, in lane
/// order: a plain loop when all 64 are set (the common case, which the
/// compiler can unroll and vectorise), else one step per set bit. A macro
/// rather than a function taking a closure: the body is pasted into both
/// loops, where a closure called from two places is not always inlined.
macro_rules! for_lanes {
    ($mask:expr, |$l:ident| $body:block) => {{
        let mask: u64 = $mask;
        if mask == u64::MAX {
            for $l in 0..$crate::lanes::LANES $body
        } else {
            let mut rest = mask;
            while rest != 0 {
                let $l = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                $body
            }
        }
    }};
}
pub(crate) use for_lanes;
