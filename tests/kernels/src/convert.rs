//! Half-precision conversions: f32 ↔ f16 with Rust's `f16` (the
//! `v_cvt_f16_f32`/`v_cvt_f32_f16` family, plus f16 arithmetic), and f32 ↔
//! bf16 by bit manipulation (bf16 is the upper half of an f32; rounding to
//! it is integer arithmetic on the bits).
//!
//! All values are passed as bits, so the test compares exact encodings,
//! NaN payloads aside.

use crate::work_item_x;

/// For each `i < len`: `half[i]` = `src[i]` rounded to f16 (round to
/// nearest even, the default mode), `back[i]` = that f16 widened to f32
/// (exact), and `square[i]` = the f16 product `h * h` widened (one f16
/// rounding).
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn f32_f16_round_trip(
    src: *const f32,
    half: *mut u16,
    back: *mut f32,
    square: *mut f32,
    len: u64,
) {
    for i in work_item_x().stride(len) {
        let i = i as usize;
        // SAFETY: the test gives each buffer `len` elements, and `i < len`.
        unsafe {
            let h = src.add(i).read() as f16;
            half.add(i).write(h.to_bits());
            back.add(i).write(h as f32);
            square.add(i).write((h * h) as f32);
        }
    }
}

/// `dst[i]` = the f16 with bits `src[i]` widened to f32, for `i < len`:
/// every encoding, subnormals, infinities and NaNs included.
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn f16_bits_to_f32(src: *const u16, dst: *mut f32, len: u64) {
    for i in work_item_x().stride(len) {
        let i = i as usize;
        // SAFETY: the test gives each buffer `len` elements, and `i < len`.
        unsafe { dst.add(i).write(f16::from_bits(src.add(i).read()) as f32) };
    }
}

/// For each `i < len`: `bf[i]` = `src[i]` rounded to bf16 (nearest, ties
/// to even; NaNs stay NaN with the quiet bit set), and `prod[i]` = the
/// product of the widened `bf[i]` and `bf[len - 1 - i]` in f32 (exact: two
/// 8-bit significands).
#[unsafe(no_mangle)]
pub extern "gpu-kernel" fn f32_bf16_round(src: *const f32, bf: *mut u16, prod: *mut f32, len: u64) {
    for i in work_item_x().stride(len) {
        let i = i as usize;
        let j = len as usize - 1 - i;
        // SAFETY: the test gives each buffer `len` elements; `i < len` and
        // `j < len`. `src` is only read, so reading `src[j]` races with
        // nothing.
        unsafe {
            let a = to_bf16(src.add(i).read());
            bf.add(i).write(a);
            let b = to_bf16(src.add(j).read());
            prod.add(i).write(from_bf16(a) * from_bf16(b));
        }
    }
}

/// f32 → bf16, round to nearest even on the dropped 16 bits.
#[inline(always)]
fn to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return (bits >> 16) as u16 | 0x0040;
    }
    let round = 0x7FFF + (bits >> 16 & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

/// bf16 → f32: the bits are the upper half of the f32.
#[inline(always)]
fn from_bf16(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}
