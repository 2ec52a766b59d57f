//! DPP (data-parallel primitives): cross-lane source movement for VOP1,
//! VOP2 and VOPC (CDNA3 ISA, "DPP"; DPP_CTRL encodings as LLVM's
//! `DppCtrl`): quad permutes, row shifts and rotates within 16-lane rows,
//! wave shifts and rotates by one, row mirrors and row broadcasts, and
//! gfx90a/gfx942's row_newbcast. 64-bit operands move as whole lanes.
//!
//! A lane whose source lane is invalid (shifted in from outside its row or
//! the wave) reads 0 when BOUND_CTRL is set and is not written otherwise;
//! ROW_MASK and BANK_MASK disable writes to whole rows and banks.

use crate::decode::inst::Dpp;
use crate::lanes::{LANES, Lanes};

/// The source lane of `lane` under `ctrl`, or `None` when invalid.
pub fn source_lane(ctrl: u16, lane: usize) -> Option<usize> {
    let row = lane & !15;
    let in_row = lane & 15;
    let n = usize::from(ctrl & 0xF);
    match ctrl {
        0x000..=0x0FF => Some((lane & !3) | usize::from(ctrl >> (2 * (lane & 3)) & 3)),
        0x101..=0x10F => (in_row + n < 16).then(|| lane + n),
        0x111..=0x11F => (in_row >= n).then(|| lane - n),
        0x121..=0x12F => Some(row + (in_row + 16 - n) % 16),
        0x130 => (lane < 63).then(|| lane + 1),
        0x134 => Some((lane + 1) % 64),
        0x138 => lane.checked_sub(1),
        0x13C => Some((lane + 63) % 64),
        0x140 => Some(row + 15 - in_row),
        0x141 => Some((lane & !7) + 7 - (lane & 7)),
        0x142 => (lane >= 16).then(|| row - 1),
        0x143 => (lane >= 32).then_some(31),
        // row_newbcast:n (gfx90a/gfx942 DPP64): lane n of each row to the
        // whole row.
        0x150..=0x15F => Some(row + n),
        _ => None,
    }
}

/// GFX11+ DPP8 (RDNA3.5 ISA §7.7.2 "DPP8"): lane `l` takes the value of
/// lane `8·⌊l/8⌋ + SEL[l % 8]` (the eight 3-bit selects, lane 0's lowest).
/// Every source lane is in range; one outside EXEC gives 0, or its value
/// with FI (the DPP8FI form). DPP8 masks no destination lanes.
pub fn permute8(src: &Lanes, d: crate::decode::inst::Dpp8, exec: u64) -> Lanes {
    let sel = u32::from(d.sel[0]) | u32::from(d.sel[1]) << 8 | u32::from(d.sel[2]) << 16;
    std::array::from_fn(|l| {
        let from = (l & !7) | (sel >> (3 * (l % 8)) & 7) as usize;
        if d.fi || exec >> from & 1 != 0 {
            src[from]
        } else {
            0
        }
    })
}

/// `src` moved per `ctrl`; invalid sources read 0 (their lanes are masked
/// off by [`write_mask`] unless BOUND_CTRL is set).
pub fn permute(src: &Lanes, ctrl: u16, _bound_ctrl: bool) -> Lanes {
    std::array::from_fn(|l| source_lane(ctrl, l).map_or(0, |s| src[s]))
}

/// Lanes a DPP instruction may write.
pub fn write_mask(d: Dpp) -> u64 {
    let mut m = 0u64;
    for l in 0..LANES {
        let row_ok = d.row_mask >> (l / 16) & 1 != 0;
        let bank_ok = d.bank_mask >> ((l & 15) / 4) & 1 != 0;
        let src_ok = d.bound_ctrl || source_lane(d.ctrl, l).is_some();
        if row_ok && bank_ok && src_ok {
            m |= 1 << l;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    // The DPP forms' execution (write masks, 64-bit lanes) is tested with
    // the VALU executors that apply them, in `valu`.
    use super::*;

    #[test]
    fn source_lanes_follow_the_control_encodings() {
        // quad_perm:[1,0,3,2] = 0b10_11_00_01.
        assert_eq!(source_lane(0xB1, 4), Some(5));
        assert_eq!(source_lane(0xB1, 7), Some(6));
        // row_shr:1 / row_shl:1 stay within the 16-lane row.
        assert_eq!(source_lane(0x111, 16), None);
        assert_eq!(source_lane(0x111, 17), Some(16));
        assert_eq!(source_lane(0x101, 15), None);
        // row_ror:1 wraps inside the row.
        assert_eq!(source_lane(0x121, 16), Some(31));
        // wave_shr:1, wave_rol:1.
        assert_eq!(source_lane(0x138, 0), None);
        assert_eq!(source_lane(0x134, 63), Some(0));
        // row_mirror, row_half_mirror.
        assert_eq!(source_lane(0x140, 17), Some(30));
        assert_eq!(source_lane(0x141, 9), Some(14));
        // row_bcast:15 / :31, row_newbcast:2.
        assert_eq!(source_lane(0x142, 20), Some(15));
        assert_eq!(source_lane(0x142, 3), None);
        assert_eq!(source_lane(0x143, 40), Some(31));
        assert_eq!(source_lane(0x152, 37), Some(34));
    }
}
