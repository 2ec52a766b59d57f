//! Lanes: a wavefront's work-items as the vector registers, the EXEC mask
//! and the cross-lane operations (DPP, permutes) see them. A leaf: the
//! wave's state and the executors build on it.
//!
//! Storage is always 64 lanes; a wave32 wave (GFX10 and later, chosen per
//! kernel by the descriptor's `ENABLE_WAVEFRONT_SIZE32`: AMDGPUUsage,
//! "Kernel Descriptor") uses the low 32. Its EXEC reads as 32 bits
//! ([`crate::wave::Wave::exec`]), so every loop over EXEC's lanes stops at
//! lane 31 by itself; what names a lane by number (permutes, `readlane`)
//! wraps at [`WaveSize::lanes`], and lane masks written to SGPRs take one
//! register instead of a pair ([`crate::wave::Wave::set_lane_mask`]).
//! A wave32 pair ([`WaveSize::Pair`], `crate::pair`) fills all 64: the
//! second wave's lanes are 32..64.

/// Lanes of the register storage: the widest wave.
pub const LANES: usize = 64;
/// One 32-bit value per lane.
pub type Lanes = [u32; LANES];

/// A wave's width: GFX9 runs wave64 only; GFX10+ kernels choose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaveSize {
    /// 32 lanes: lane masks are one SGPR.
    W32,
    /// 64 lanes: lane masks are an SGPR pair.
    #[default]
    W64,
    /// Two wave32 waves of one workgroup run in lockstep at one pc, each
    /// with its own scalar state (`crate::pair`): the first wave's lanes
    /// are 0..32, the second's 32..64, so lane loops run 64 lanes, while a
    /// lane mask is still one SGPR of each wave, read into its half.
    Pair,
}

impl WaveSize {
    /// Work-items per wave.
    #[inline]
    pub const fn lanes(self) -> usize {
        match self {
            Self::W32 => 32,
            Self::W64 | Self::Pair => 64,
        }
    }

    /// `out[l] = f(l)` for each of the wave's lanes; lanes past the wave
    /// (32..64 in wave32) are left as they are: EXEC never names them, so
    /// nothing reads or writes them back. One loop of constant trip count
    /// per size, so wave32 computes half the lanes.
    #[inline(always)]
    pub fn fill<T>(self, out: &mut [T; LANES], mut f: impl FnMut(usize) -> T) {
        match self {
            Self::W64 | Self::Pair => {
                for (l, o) in out.iter_mut().enumerate() {
                    *o = f(l);
                }
            }
            Self::W32 => {
                for (l, o) in out[..32].iter_mut().enumerate() {
                    *o = f(l);
                }
            }
        }
    }

    /// [`Self::fill`] into a new array whose lanes past the wave hold
    /// `T::default()`.
    #[inline(always)]
    pub fn map<T: Copy + Default>(self, f: impl FnMut(usize) -> T) -> [T; LANES] {
        let mut out = [T::default(); LANES];
        self.fill(&mut out, f);
        out
    }

    /// The mask of every lane (of both waves of a pair).
    #[inline]
    pub const fn full(self) -> u64 {
        match self {
            Self::W32 => 0xFFFF_FFFF,
            Self::W64 | Self::Pair => u64::MAX,
        }
    }
}

/// Runs `$body` with `$l` bound to each lane set in `$mask`, in lane
/// order: a plain loop when the set lanes are one run `a..b` (the common
/// case: a full wave64 or wave32, a partial last wave, one wave of a
/// wave32 pair; the compiler can vectorise it), else one step per set bit.
/// A macro rather than a function taking a closure: the body is pasted
/// into both loops, where a closure called from two places is not always
/// inlined.
macro_rules! for_lanes {
    ($mask:expr, |$l:ident| $body:block) => {{
        let mask: u64 = $mask;
        let from = mask.trailing_zeros() as usize & 63;
        let run = mask >> from;
        if run & run.wrapping_add(1) == 0 {
            // 0, or from..to all set: to = 64 - leading zeros.
            for $l in from..(64 - mask.leading_zeros() as usize) $body
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

#[cfg(test)]
mod tests {
    use super::*;

    fn visited(mask: u64) -> Vec<usize> {
        let mut v = Vec::new();
        for_lanes!(mask, |l| { v.push(l) });
        v
    }

    #[test]
    fn for_lanes_visits_exactly_the_set_lanes_in_order() {
        for mask in [
            0,
            1,
            u64::MAX,
            WaveSize::W32.full(),
            0x0000_0000_0000_FFFF,
            0x8000_0000_0000_0000,
            0xFFFF_FFFF_0000_0000,
            0x0000_FFFF_FFFF_0000,
            0xF0F0_0000_0000_0001,
            u64::MAX - 1,
            u64::MAX >> 1,
        ] {
            let want: Vec<usize> = (0..64).filter(|l| mask >> l & 1 != 0).collect();
            assert_eq!(visited(mask), want, "mask {mask:#x}");
        }
    }
}
