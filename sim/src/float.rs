//! Small-float formats: IEEE binary16 (f16) and bfloat16 (bf16), converted
//! exactly as the hardware does (round to nearest even, NaN stays NaN,
//! overflow to infinity).
//!
//! Arithmetic on f16 is done in f32 and rounded once: for add, sub and mul
//! of two f16 values the f32 result is exact or correctly rounded, and
//! double rounding through f32 cannot happen because f32 has more than
//! 2 × 11 + 2 significand bits (Figueroa's condition), so the final result
//! equals a correctly rounded f16 operation. FMA is done in f64 for the
//! same reason.

/// f16 bits to f32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from(h >> 10) & 0x1F;
    let man = u32::from(h) & 0x3FF;
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            // Subnormal: normalise.
            let shift = man.leading_zeros() - 21;
            let man = (man << shift) & 0x3FF;
            sign | (113 - shift) << 23 | man << 13
        }
        0x1F => sign | 0x7F80_0000 | man << 13 | if man != 0 { 0x40_0000 } else { 0 },
        _ => sign | (exp + 112) << 23 | man << 13,
    };
    f32::from_bits(bits)
}

/// f32 to f16 bits, round to nearest even.
pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xFF) as i32;
    let man = x & 0x7F_FFFF;
    if exp == 0xFF {
        // Inf stays inf; NaN is quieted, keeping the payload's top bits.
        return sign
            | 0x7C00
            | if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 127 + 15;
    if e >= 0x1F {
        return sign | 0x7C00;
    }
    if e <= 0 {
        // Subnormal or zero in f16.
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let rest = man & 0x1FFF;
    let mut r = ((e as u32) << 10) | (man >> 13);
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1; // may carry into the exponent, up to infinity: correct.
    }
    sign | r as u16
}

/// bf16 bits to f32 (exact).
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// f32 to bf16 bits, round to nearest even; NaN stays a quiet NaN.
pub fn f32_to_bf16(f: f32) -> u16 {
    let x = f.to_bits();
    if f.is_nan() {
        return ((x >> 16) | 0x40) as u16;
    }
    let round = 0x7FFF + ((x >> 16) & 1);
    (x.wrapping_add(round) >> 16) as u16
}

/// Packed f16 add of the two halves.
pub fn pk_add_f16(a: u32, b: u32) -> u32 {
    let lo = f32_to_f16(f16_to_f32(a as u16) + f16_to_f32(b as u16));
    let hi = f32_to_f16(f16_to_f32((a >> 16) as u16) + f16_to_f32((b >> 16) as u16));
    u32::from(lo) | u32::from(hi) << 16
}

/// Packed bf16 add of the two halves.
pub fn pk_add_bf16(a: u32, b: u32) -> u32 {
    let lo = f32_to_bf16(bf16_to_f32(a as u16) + bf16_to_f32(b as u16));
    let hi = f32_to_bf16(bf16_to_f32((a >> 16) as u16) + bf16_to_f32((b >> 16) as u16));
    u32::from(lo) | u32::from(hi) << 16
}

/// Bias of gfx942's FP8 (E4M3 FNUZ): one more than IEEE-style 7, because
/// the format spends no exponent code on infinities (CDNA3 ISA, "FP8 and
/// BF8 formats"; LLVM's `Float8E4M3FNUZ`).
const FP8_BIAS: i32 = 8;
/// Bias of gfx942's BF8 (E5M2 FNUZ), likewise one more than IEEE's 15.
const BF8_BIAS: i32 = 16;
/// The one NaN of both FNUZ formats: "negative zero" (sign bit alone).
/// There is no infinity and no negative zero.
const FNUZ_NAN: u8 = 0x80;

/// Decodes an 8-bit FNUZ float with `man_bits` of mantissa and `bias`.
fn fnuz_to_f32(b: u8, man_bits: u32, bias: i32) -> f32 {
    if b == FNUZ_NAN {
        return f32::NAN;
    }
    finite_8bit_to_f32(b, man_bits, bias)
}

/// gfx942 FP8 (E4M3 FNUZ: bias 8, no infinities, 0x80 is the only NaN)
/// bits to f32 (exact).
pub fn fp8_fnuz_to_f32(b: u8) -> f32 {
    fnuz_to_f32(b, 3, FP8_BIAS)
}

/// gfx942 BF8 (E5M2 FNUZ: bias 16, no infinities, 0x80 is the only NaN)
/// bits to f32 (exact).
pub fn bf8_fnuz_to_f32(b: u8) -> f32 {
    fnuz_to_f32(b, 2, BF8_BIAS)
}

/// OCP FP8 E4M3 (the "FN" variant of gfx950 and gfx12: bias 7, no
/// infinities, S.1111.111 the only NaNs; OCP 8-bit Floating Point
/// Specification, 2023) bits to f32 (exact).
pub fn fp8_ocp_to_f32(b: u8) -> f32 {
    if b & 0x7F == 0x7F {
        return f32::NAN;
    }
    finite_8bit_to_f32(b, 3, 7)
}

/// OCP BF8 E5M2 (IEEE-like: bias 15, exponent 31 is infinity or NaN) bits
/// to f32 (exact).
pub fn bf8_ocp_to_f32(b: u8) -> f32 {
    if b & 0x7C == 0x7C {
        let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
        return if b & 3 == 0 {
            sign * f32::INFINITY
        } else {
            f32::NAN
        };
    }
    finite_8bit_to_f32(b, 2, 15)
}

/// A finite 8-bit float (FNUZ or OCP): sign, then exponent and `man_bits`
/// mantissa bits with `bias`; exponent 0 is subnormal. Exact: every such
/// value is a small integer times a power of two that f32 represents.
/// The sign bit of a zero gives -0 (OCP has negative zero; FNUZ spends
/// that code on its NaN before calling this).
fn finite_8bit_to_f32(b: u8, man_bits: u32, bias: i32) -> f32 {
    minifloat_to_f32(b, 8, man_bits, bias)
}

/// A finite float of `width` bits (sign in the top bit, then exponent and
/// `man_bits` of mantissa with `bias`; exponent 0 is subnormal), exactly.
fn minifloat_to_f32(b: u8, width: u32, man_bits: u32, bias: i32) -> f32 {
    let sign = 1 << (width - 1);
    let exp = i32::from((b & (sign - 1)) >> man_bits);
    let man = f32::from(b & ((1 << man_bits) - 1));
    let scale = (1u32 << man_bits) as f32;
    let magnitude = if exp == 0 {
        man / scale * 2f32.powi(1 - bias)
    } else {
        (1.0 + man / scale) * 2f32.powi(exp - bias)
    };
    if b & sign != 0 { -magnitude } else { magnitude }
}

/// OCP FP6 E2M3 (bits 5:0 of `b`: sign, 2 exponent bits, 3 mantissa bits,
/// bias 1; no infinities or NaNs, largest ±7.5) to f32, exactly (CDNA4
/// ISA §7.3 Table 30; OCP Microscaling Formats v1.0).
pub fn fp6_e2m3_to_f32(b: u8) -> f32 {
    minifloat_to_f32(b & 0x3F, 6, 3, 1)
}

/// OCP BF6 E3M2 (bits 5:0: sign, 3 exponent bits, 2 mantissa bits, bias
/// 3; no infinities or NaNs, largest ±28) to f32, exactly (CDNA4 ISA §7.3).
pub fn bf6_e3m2_to_f32(b: u8) -> f32 {
    minifloat_to_f32(b & 0x3F, 6, 2, 3)
}

/// OCP FP4 E2M1 (bits 3:0: sign, 2 exponent bits, 1 mantissa bit, bias 1;
/// the values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives) to f32
/// (CDNA4 ISA §7.3).
pub fn fp4_e2m1_to_f32(b: u8) -> f32 {
    minifloat_to_f32(b & 0xF, 4, 1, 1)
}

/// An OCP E8M0 block scale: the unsigned byte `s` is 2^(s−127), from
/// 2^-127 (0x00) to 2^127 (0xFE); 0xFF is NaN (CDNA4 ISA §7.2: "8-bit
/// exponent (bias 127) … 0xFF is NaN"). As f64, where every one is exact.
pub fn e8m0_to_f64(s: u8) -> f64 {
    if s == 0xFF {
        f64::NAN
    } else {
        2f64.powi(i32::from(s) - 127)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // The codes are written sign_exponent_mantissa.
    #[allow(clippy::unusual_byte_groupings)]
    fn microscaling_element_formats_have_the_ocp_values() {
        // CDNA4 ISA §7.3 Table 30 and the OCP MX v1.0 tables: FP4 E2M1's
        // eight magnitudes, the extremes of FP6 E2M3 and BF6 E3M2.
        let fp4: Vec<f32> = (0..8).map(fp4_e2m1_to_f32).collect();
        assert_eq!(fp4, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        assert_eq!(fp4_e2m1_to_f32(0xF), -6.0);
        assert_eq!(fp6_e2m3_to_f32(0b0_11_111), 7.5);
        assert_eq!(fp6_e2m3_to_f32(0b1_00_001), -0.125);
        assert_eq!(fp6_e2m3_to_f32(0b0_01_000), 1.0);
        assert_eq!(bf6_e3m2_to_f32(0b0_111_11), 28.0);
        assert_eq!(bf6_e3m2_to_f32(0b0_000_01), 0.0625);
        assert_eq!(bf6_e3m2_to_f32(0b0_001_00), 0.25);
        assert_eq!(e8m0_to_f64(127), 1.0);
        assert_eq!(e8m0_to_f64(0), 2f64.powi(-127));
        assert_eq!(e8m0_to_f64(0xFE), 2f64.powi(127));
        assert!(e8m0_to_f64(0xFF).is_nan());
    }

    #[test]
    fn every_f16_round_trips_through_f32() {
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            let back = f32_to_f16(f);
            if f.is_nan() {
                assert!(back & 0x7C00 == 0x7C00 && back & 0x3FF != 0, "{h:#x}");
            } else {
                assert_eq!(back, h, "{h:#x} -> {f}");
            }
        }
    }

    #[test]
    fn f16_values_match_their_definition() {
        // Independent reference: value = (-1)^s * 2^(e-15) * (1 + m/1024),
        // subnormals 2^-14 * m/1024, computed in f64.
        for h in 0..=u16::MAX {
            let s = if h >> 15 == 1 { -1.0 } else { 1.0 };
            let e = i32::from((h >> 10) & 0x1F);
            let m = f64::from(h & 0x3FF);
            let v = match e {
                0 => s * m / 1024.0 * 2f64.powi(-14),
                31 => continue,
                _ => s * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
            };
            assert_eq!(f64::from(f16_to_f32(h)), v, "{h:#x}");
        }
    }

    #[test]
    fn f32_to_f16_rounds_to_nearest_even() {
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3C00);
        // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: to even.
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3C02);
        // Just above halfway rounds up.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11) + 2f32.powi(-20)), 0x3C01);
        assert_eq!(f32_to_f16(65520.0), 0x7C00);
        assert_eq!(f32_to_f16(65519.0), 0x7BFF);
        // Smallest subnormal and half of it (ties to even: zero).
        assert_eq!(f32_to_f16(2f32.powi(-24)), 0x0001);
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0x0000);
        assert_eq!(f32_to_f16(1.5 * 2f32.powi(-24)), 0x0002);
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(f32_to_bf16(1.0), 0x3F80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F80_8000)), 0x3F80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F81_8000)), 0x3F82);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3F80_8001)), 0x3F81);
        assert_eq!(bf16_to_f32(0xC040), -3.0);
    }

    #[test]
    fn fnuz_small_floats_decode_to_their_documented_values() {
        // E4M3 FNUZ: 1.0 = exponent 8, largest finite 0x7F = 1.875 * 2^7
        // = 240, smallest subnormal 2^-10, and 0x80 the only NaN.
        assert_eq!(fp8_fnuz_to_f32(0x40), 1.0);
        assert_eq!(fp8_fnuz_to_f32(0x7F), 240.0);
        assert_eq!(fp8_fnuz_to_f32(0xFF), -240.0);
        assert_eq!(fp8_fnuz_to_f32(0x01), 2f32.powi(-10));
        assert_eq!(fp8_fnuz_to_f32(0x00), 0.0);
        assert!(fp8_fnuz_to_f32(0x80).is_nan());
        // E5M2 FNUZ: 1.0 = exponent 16, largest 0x7F = 1.75 * 2^15 = 57344.
        assert_eq!(bf8_fnuz_to_f32(0x40), 1.0);
        assert_eq!(bf8_fnuz_to_f32(0x7F), 57344.0);
        assert_eq!(bf8_fnuz_to_f32(0x01), 2f32.powi(-17));
        assert_eq!(bf8_fnuz_to_f32(0xC2), -1.5);
        assert!(bf8_fnuz_to_f32(0x80).is_nan());
    }

    #[test]
    fn ocp_eight_bit_floats_match_the_specification_table() {
        // OCP 8-bit Floating Point Specification (2023), table 1: E4M3
        // max normal 448 (S.1111.110), min normal 2^-6, min subnormal
        // 2^-9, NaN S.1111.111; E5M2 max normal 57344 (S.11110.11), min
        // subnormal 2^-16, infinities S.11111.00.
        assert_eq!(fp8_ocp_to_f32(0x7E), 448.0);
        assert_eq!(fp8_ocp_to_f32(0xFE), -448.0);
        assert_eq!(fp8_ocp_to_f32(0x08), 2f32.powi(-6));
        assert_eq!(fp8_ocp_to_f32(0x01), 2f32.powi(-9));
        assert_eq!(fp8_ocp_to_f32(0x38), 1.0);
        assert!(fp8_ocp_to_f32(0x7F).is_nan() && fp8_ocp_to_f32(0xFF).is_nan());
        assert!(fp8_ocp_to_f32(0x80).is_sign_negative() && fp8_ocp_to_f32(0x80) == 0.0);
        assert_eq!(bf8_ocp_to_f32(0x7B), 57344.0);
        assert_eq!(bf8_ocp_to_f32(0x01), 2f32.powi(-16));
        assert_eq!(bf8_ocp_to_f32(0x3C), 1.0);
        assert_eq!(bf8_ocp_to_f32(0x7C), f32::INFINITY);
        assert_eq!(bf8_ocp_to_f32(0xFC), f32::NEG_INFINITY);
        assert!(bf8_ocp_to_f32(0x7D).is_nan());
        // Every E5M2 value is the top byte of the f16 with the same bits
        // (E5M2 is f16 with the mantissa cut to two bits).
        for b in 0..=u8::MAX {
            let f = bf8_ocp_to_f32(b);
            let h = f16_to_f32(u16::from(b) << 8);
            assert!(f == h || (f.is_nan() && h.is_nan()), "{b:#x}: {f} vs {h}");
        }
    }
}
