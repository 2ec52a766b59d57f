//! SDWA (sub-dword addressing): operand selection and destination placement
//! (CDNA3 ISA, "SDWA": SRC*_SEL, SRC*_SEXT, DST_SEL, DST_UNUSED).

use crate::decode::inst::Sel;

/// The selected part of `x`, zero- or sign-extended to 32 bits.
#[inline]
pub fn select(x: u32, sel: Sel, sext: bool) -> u32 {
    match sel {
        Sel::Dword => x,
        Sel::Byte(k) => {
            let b = (x >> (8 * k)) as u8;
            if sext {
                b as i8 as i32 as u32
            } else {
                u32::from(b)
            }
        }
        Sel::Word(k) => {
            let h = (x >> (16 * k)) as u16;
            if sext {
                h as i16 as i32 as u32
            } else {
                u32::from(h)
            }
        }
    }
}

/// Places result `v` into the selected part of the destination `old`:
/// `unused` 0 pads the rest with zeros, 1 sign-extends the selected part
/// upward (zeros below), 2 preserves `old`'s other bits.
#[inline]
pub fn place(old: u32, v: u32, sel: Sel, unused: u8) -> u32 {
    let (shift, bits) = match sel {
        Sel::Dword => return v,
        Sel::Byte(k) => (8 * u32::from(k), 8),
        Sel::Word(k) => (16 * u32::from(k), 16),
    };
    let mask = ((1u64 << bits) - 1) as u32;
    let part = (v & mask) << shift;
    match unused {
        2 => (old & !(mask << shift)) | part,
        1 => {
            let top = shift + bits;
            let neg = v >> (bits - 1) & 1 != 0;
            let ext = if neg && top < 32 { u32::MAX << top } else { 0 };
            part | ext
        }
        _ => part,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_and_places_parts() {
        assert_eq!(select(0x8899_AABB, Sel::Byte(1), false), 0xAA);
        assert_eq!(select(0x8899_AABB, Sel::Byte(1), true), 0xFFFF_FFAA);
        assert_eq!(select(0x8899_AABB, Sel::Word(1), false), 0x8899);
        assert_eq!(place(0x1122_3344, 0xAB, Sel::Byte(2), 2), 0x11AB_3344);
        assert_eq!(place(0x1122_3344, 0xAB, Sel::Byte(2), 0), 0x00AB_0000);
        assert_eq!(place(0x1122_3344, 0xAB, Sel::Byte(1), 1), 0xFFFF_AB00);
    }
}
