//! The deterministic test pattern the main job fills its GEMM operands
//! with, on the device (`aqueduct-device`'s `fill_pattern` kernel) and in
//! the host's f64 reference: one definition for both sides.
//!
//! Element `i` of a pattern with seed `s` is `(q - 5) / 4` with `q` in
//! `0..11` taken from a 64-bit mix of `s` and `i`: one of the eleven values
//! −1.25, −1, …, 1, 1.25. Each is exact in every element format here (f32,
//! f16, bf16, and both 8-bit E4M3 encodings), so the device writes exactly
//! the value the reference reads. Products are multiples of 1/16 of
//! magnitude at most 1.5625, so every partial sum of up to 671,088 of them
//! (magnitude ≤ 2^20) is exact in f32, in any order. Neighbouring elements
//! are unrelated (no period a transposed or shifted read could hide
//! behind), and 6 of the 11 values are negative or zero.
//!
//! The integer elements (i8 operands, i32 C and D of the integer GEMMs)
//! store `q - 5` itself, −5 ..= 5 ([`int_value`]): four times the float
//! value, so an integer GEMM of the pattern is exact in i32 while
//! `25 · K · |alpha| + 5 · |beta|` stays below 2^31.

/// How a pattern element is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Element {
    /// IEEE binary32.
    F32 = 0,
    /// IEEE binary16.
    F16 = 1,
    /// bfloat16: the top half of a binary32.
    Bf16 = 2,
    /// E4M3 FNUZ (gfx942's FP8: exponent bias 8).
    Fp8Fnuz = 3,
    /// OCP E4M3FN (gfx950's and gfx12's FP8: exponent bias 7).
    Fp8Ocp = 4,
    /// A signed byte holding `q - 5` ([`int_value`]).
    I8 = 5,
    /// A signed 32-bit integer holding `q - 5`.
    I32 = 6,
}

impl Element {
    /// The element with this `repr(u32)` code (the kernel's argument).
    pub const fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            0 => Self::F32,
            1 => Self::F16,
            2 => Self::Bf16,
            3 => Self::Fp8Fnuz,
            4 => Self::Fp8Ocp,
            5 => Self::I8,
            6 => Self::I32,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub const fn bytes(self) -> u32 {
        match self {
            Self::F32 | Self::I32 => 4,
            Self::F16 | Self::Bf16 => 2,
            Self::Fp8Fnuz | Self::Fp8Ocp | Self::I8 => 1,
        }
    }

    /// Whether the element is an integer, holding [`int_value`].
    pub const fn integer(self) -> bool {
        matches!(self, Self::I8 | Self::I32)
    }

    /// (exponent bits, mantissa bits, exponent bias) of a float element.
    const fn layout(self) -> (u32, u32, i32) {
        match self {
            // Integers are no floats: `encode` never asks.
            Self::I8 | Self::I32 => (0, 0, 0),
            Self::F32 => (8, 23, 127),
            Self::F16 => (5, 10, 15),
            Self::Bf16 => (8, 7, 127),
            Self::Fp8Fnuz => (4, 3, 8),
            Self::Fp8Ocp => (4, 3, 7),
        }
    }
}

/// `q` in `0..11` for element `index` of the pattern `seed`: the top bits
/// of a SplitMix64-style mix, scaled to 0..11 by a multiply (no division,
/// which the GPU does in software).
pub const fn quarter_index(seed: u32, index: u64) -> u32 {
    let mut x = index ^ (seed as u64).rotate_left(40);
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (((x >> 32) * 11) >> 32) as u32
}

/// Element `index` of the pattern `seed` as a value.
pub const fn value(seed: u32, index: u64) -> f32 {
    (quarter_index(seed, index) as f32 - 5.0) / 4.0
}

/// Element `index` of the pattern `seed` as an integer element holds it:
/// `q - 5`, four times [`value`].
pub const fn int_value(seed: u32, index: u64) -> i32 {
    quarter_index(seed, index) as i32 - 5
}

/// The stored bits (in the low `8 · bytes` bits) of `(q - 5) / 4` as
/// `element`, for `q` in `0..11`.
pub const fn encode(element: Element, q: u32) -> u32 {
    match element {
        // Two's complement of q - 5, in the element's bytes.
        Element::I8 => return (q as i32 - 5) as u8 as u32,
        Element::I32 => return (q as i32 - 5) as u32,
        _ => {}
    }
    if q == 5 {
        return 0;
    }
    let (exponent_bits, mantissa_bits, bias) = element.layout();
    let sign = (q < 5) as u32;
    let magnitude = q.abs_diff(5); // 1..=5 quarters
    // magnitude / 4 = (1 + fraction / 4) · 2^exponent, fraction in quarters.
    let (exponent, fraction) = match magnitude {
        1 => (-2, 0), // 0.25
        2 => (-1, 0), // 0.5
        3 => (-1, 2), // 0.75 = 1.5 · 2^-1
        4 => (0, 0),  // 1
        _ => (0, 1),  // 1.25
    };
    let biased = (exponent + bias) as u32;
    sign << (exponent_bits + mantissa_bits)
        | biased << mantissa_bits
        | fraction << (mantissa_bits - 2)
}

/// Element `index` of the pattern `seed`, stored as `element`.
pub const fn bits(element: Element, seed: u32, index: u64) -> u32 {
    encode(element, quarter_index(seed, index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_and_bf16_bits_are_the_values() {
        for q in 0..11 {
            let v = (q as f32 - 5.0) / 4.0;
            assert_eq!(f32::from_bits(encode(Element::F32, q)), v, "q {q}");
            assert_eq!(encode(Element::Bf16, q), v.to_bits() >> 16, "q {q}");
        }
    }

    #[test]
    fn fp8_bits_follow_the_two_e4m3_encodings() {
        // q = 6..=10: 0.25, 0.5, 0.75, 1, 1.25. OCP E4M3FN (bias 7): 1.0
        // is 0x38 (OCP 8-bit floating point specification, table of E4M3
        // values); FNUZ (bias 8): 1.0 is 0x40. The sign is the top bit.
        let ocp: std::vec::Vec<u32> = (6..11).map(|q| encode(Element::Fp8Ocp, q)).collect();
        let fnuz: std::vec::Vec<u32> = (6..11).map(|q| encode(Element::Fp8Fnuz, q)).collect();
        assert_eq!(ocp, [0x28, 0x30, 0x34, 0x38, 0x3A]);
        assert_eq!(fnuz, [0x30, 0x38, 0x3C, 0x40, 0x42]);
        assert_eq!(encode(Element::Fp8Ocp, 0), 0x80 | 0x3A); // -1.25
        // f16: 1.25 is 0x3D00, -0.25 is 0xB400.
        assert_eq!(encode(Element::F16, 10), 0x3D00);
        assert_eq!(encode(Element::F16, 4), 0xB400);
    }

    #[test]
    fn integer_elements_hold_four_times_the_value() {
        for q in 0..11 {
            let v = (q as i32 - 5) as i8;
            assert_eq!(encode(Element::I8, q), u32::from(v as u8), "q {q}");
            assert_eq!(encode(Element::I32, q) as i32, i32::from(v), "q {q}");
        }
        for i in 0..1000 {
            assert_eq!(int_value(9, i) as f32, 4.0 * value(9, i));
            assert_eq!(bits(Element::I8, 9, i) as u8 as i8 as i32, int_value(9, i));
        }
        assert_eq!(encode(Element::I8, 0), 0xFB); // -5
        assert!(Element::I32.integer() && !Element::F32.integer());
        assert_eq!(Element::from_code(Element::I8 as u32), Some(Element::I8));
    }

    #[test]
    fn every_value_occurs_and_neighbours_differ() {
        let mut seen = [0u32; 11];
        let mut same_as_next = 0;
        for i in 0..11_000u64 {
            let q = quarter_index(7, i);
            seen[q as usize] += 1;
            same_as_next += u32::from(q == quarter_index(7, i + 1));
        }
        // Near-uniform (1000 each) and about 1 in 11 neighbours equal.
        assert!(seen.iter().all(|&n| (850..1150).contains(&n)), "{seen:?}");
        assert!((800..1200).contains(&same_as_next), "{same_as_next}");
        let seeded = |s| {
            (0..64)
                .map(|i| quarter_index(s, i))
                .collect::<std::vec::Vec<_>>()
        };
        assert_ne!(seeded(1), seeded(2));
    }
}
