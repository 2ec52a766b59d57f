//! VOP3P: packed math on two 16-bit (or, on gfx90a/gfx942, two 32-bit)
//! halves, mixed-precision FMA, dot products, and the moves of the
//! accumulation registers.
//!
//! CDNA3 ISA, "VOP3P Instructions" and "Packed Math": for the low result
//! `OP_SEL[n]` chooses which half of source n is read, for the high result
//! `OP_SEL_HI[n]`; NEG and NEG_HI negate (float operands only) the value read
//! for the low and the high result. Integer packed ops with CLAMP saturate.
//!
//! Inline constants: a packed operand reads the constant's 32-bit form for
//! a 16-bit operand (`Ty::B16`): integers sign-extended to 32 bits, float
//! constants as f16 bits in the low half with a zero high half. So with the
//! default OP_SEL_HI a float constant feeds only the low result and the
//! high one sees 0.0; LLVM's SIFoldOperands relies on this when it clears
//! OP_SEL_HI to splat a constant. The packed-f32 ops read a constant the
//! same way over 64 bits: f32 bits in the low dword, zero (or the sign
//! extension of an integer) in the high one.
//!
//! `v_fma_mix*` are not packed: `OP_SEL_HI[n]` says whether source n is an
//! f16 (the half chosen by `OP_SEL[n]`) or an f32, and `NEG_HI[n]` is the ABS
//! of source n (LLVM encodes mix `|x|` there). `v_dot2c_*`/`v_pk_fmac_f16`
//! are VOP2 (and their VOP3 forms): the destination is the accumulator.

use crate::decode::inst::code;
use crate::decode::{Inst, Src};
use crate::exec::ctx::{Ctx, Exec};
use crate::exec::valu;
use crate::fault::Fault;
use crate::float::{f16_to_f32, f32_to_f16};
use crate::lanes::{LANES, Lanes};
use crate::wave::{Ty, Wave, inline32};

type R = Result<(), Fault>;

use valu::check_round;

/// `x` with f32 denormals flushed when MODE asks for it.
fn flush_f32(w: &Wave, x: f32) -> f32 {
    if valu::flush32(w) {
        valu::flush_f32(x)
    } else {
        x
    }
}

// ---------------------------------------------------------------------------
// Packed 16-bit operands
// ---------------------------------------------------------------------------

/// The low and high 16-bit values source `n` feeds, per lane.
fn halves(w: &Wave, i: &Inst, n: usize) -> Result<[[u16; 2]; LANES], Fault> {
    let raw = w.lanes(i, n, Ty::B16)?;
    let lo_hi = i.mods.op_sel >> n & 1 != 0;
    let hi_hi = i.mods.op_sel_hi >> n & 1 != 0;
    let pick = |v: u32, hi: bool| if hi { (v >> 16) as u16 } else { v as u16 };
    Ok(std::array::from_fn(|l| {
        [pick(raw[l], lo_hi), pick(raw[l], hi_hi)]
    }))
}

/// Float halves with NEG/NEG_HI applied, widened to f32 (exact).
fn f16_halves(w: &Wave, i: &Inst, n: usize) -> Result<[[f32; 2]; LANES], Fault> {
    let h = halves(w, i, n)?;
    let neg = [i.mods.neg >> n & 1 != 0, i.mods.neg_hi >> n & 1 != 0];
    Ok(h.map(|p| {
        std::array::from_fn(|half| {
            let x = f16_to_f32(p[half]);
            if neg[half] { -x } else { x }
        })
    }))
}

fn clamp01(x: f32) -> f32 {
    // DX10 clamp: NaN becomes 0.
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

fn pack(lo: u16, hi: u16) -> u32 {
    u32::from(lo) | u32::from(hi) << 16
}

fn write(w: &mut Wave, i: &Inst, out: &Lanes) -> R {
    valu::write(w, i, out)
}

/// Packed f16 executors: the body maps (a, b, c) halves (f32) to an f32
/// that is rounded once to f16.
macro_rules! pk_f16 {
    ($($name:ident($($s:ident),*) => $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            check_round(w)?;
            let mut k = 0;
            $( let $s = f16_halves(w, i, { let n = k; k += 1; n })?; )*
            let _ = k;
            let out: Lanes = std::array::from_fn(|l| {
                let r: [u16; 2] = std::array::from_fn(|h| {
                    $( let $s = $s[l][h]; )*
                    let x: f32 = $body;
                    f32_to_f16(if i.mods.clamp { clamp01(x) } else { x })
                });
                pack(r[0], r[1])
            });
            write(w, i, &out)
        })*
    };
}

/// FMA of f16 values with one rounding: the f64 product of two f16 is
/// exact and the f64 sum rounds far below f16 precision, so the only
/// rounding that matters is the final one to f16.
fn fma16(a: f32, b: f32, c: f32) -> f32 {
    (f64::from(a) * f64::from(b) + f64::from(c)) as f32
}

pk_f16! {
    v_pk_fma_f16(a, b, c) => fma16(a, b, c);
    v_pk_add_f16(a, b) => a + b;
    v_pk_mul_f16(a, b) => a * b;
    v_pk_min_f16(a, b) => a.min(b);
    v_pk_max_f16(a, b) => a.max(b);
}

/// `v_pk_fmac_f16` (VOP2): D = S0 × S1 + D per half.
fn v_pk_fmac_f16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    check_round(w)?;
    let a = f16_halves(w, i, 0)?;
    let b = f16_halves(w, i, 1)?;
    let d = *w.vreg(i.vdst, false)?;
    let out: Lanes = std::array::from_fn(|l| {
        let c = [d[l] as u16, (d[l] >> 16) as u16].map(f16_to_f32);
        let r: [u16; 2] = std::array::from_fn(|h| f32_to_f16(fma16(a[l][h], b[l][h], c[h])));
        pack(r[0], r[1])
    });
    write(w, i, &out)
}

/// Packed 16-bit integer executors over (a, b, c) halves as u16; the body
/// gives an i64 (exact) that CLAMP saturates to `$lo..=$hi` and that
/// otherwise wraps to 16 bits.
macro_rules! pk_int {
    ($($name:ident($($s:ident),*) [$lo:expr, $hi:expr] => $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let mut k = 0;
            $( let $s = halves(w, i, { let n = k; k += 1; n })?; )*
            let _ = k;
            let out: Lanes = std::array::from_fn(|l| {
                let r: [u16; 2] = std::array::from_fn(|h| {
                    $( let $s = $s[l][h]; )*
                    let x: i64 = $body;
                    if i.mods.clamp { x.clamp($lo, $hi) as u16 } else { x as u16 }
                });
                pack(r[0], r[1])
            });
            write(w, i, &out)
        })*
    };
}

const I16_RANGE: (i64, i64) = (i16::MIN as i64, i16::MAX as i64);
const U16_RANGE: (i64, i64) = (0, u16::MAX as i64);

fn s(x: u16) -> i64 {
    i64::from(x as i16)
}

fn u(x: u16) -> i64 {
    i64::from(x)
}

pk_int! {
    v_pk_mad_i16(a, b, c) [I16_RANGE.0, I16_RANGE.1] => s(a) * s(b) + s(c);
    v_pk_mad_u16(a, b, c) [U16_RANGE.0, U16_RANGE.1] => u(a) * u(b) + u(c);
    v_pk_add_i16(a, b) [I16_RANGE.0, I16_RANGE.1] => s(a) + s(b);
    v_pk_sub_i16(a, b) [I16_RANGE.0, I16_RANGE.1] => s(a) - s(b);
    v_pk_add_u16(a, b) [U16_RANGE.0, U16_RANGE.1] => u(a) + u(b);
    v_pk_sub_u16(a, b) [U16_RANGE.0, U16_RANGE.1] => u(a) - u(b);
    v_pk_mul_lo_u16(a, b) [i64::MIN, i64::MAX] => u(a) * u(b);
    v_pk_max_i16(a, b) [i64::MIN, i64::MAX] => s(a).max(s(b));
    v_pk_min_i16(a, b) [i64::MIN, i64::MAX] => s(a).min(s(b));
    v_pk_max_u16(a, b) [i64::MIN, i64::MAX] => u(a).max(u(b));
    v_pk_min_u16(a, b) [i64::MIN, i64::MAX] => u(a).min(u(b));
    // Shifts: S1 shifted by S0[3:0].
    v_pk_lshlrev_b16(a, b) [i64::MIN, i64::MAX] => u(b) << (a & 0xF);
    v_pk_lshrrev_b16(a, b) [i64::MIN, i64::MAX] => u(b) >> (a & 0xF);
    v_pk_ashrrev_i16(a, b) [i64::MIN, i64::MAX] => s(b) >> (a & 0xF);
}

// ---------------------------------------------------------------------------
// Packed f32 (gfx90a/gfx942): two f32 in a 64-bit register pair
// ---------------------------------------------------------------------------

/// The two f32 values source `n` feeds (dword OP_SEL[n] for the low
/// result, OP_SEL_HI[n] for the high), NEG/NEG_HI and denormal flushing
/// applied.
fn f32_pair(w: &Wave, i: &Inst, n: usize) -> Result<[[f32; 2]; LANES], Fault> {
    let raw: [u64; LANES] = match i.src[n] {
        Src::Inline(c) => {
            // Module doc: the constant's 32-bit form; integers are
            // sign-extended to 64 bits, float bits zero-extended.
            let v = inline32(c, Ty::B32);
            let int = c < code::HALF;
            [if int {
                i64::from(v as i32) as u64
            } else {
                u64::from(v)
            }; LANES]
        }
        _ => w.lanes64(i, n, Ty::U64)?,
    };
    let sel = [i.mods.op_sel >> n & 1 != 0, i.mods.op_sel_hi >> n & 1 != 0];
    let neg = [i.mods.neg >> n & 1 != 0, i.mods.neg_hi >> n & 1 != 0];
    Ok(raw.map(|v| {
        std::array::from_fn(|h| {
            let x = f32::from_bits(if sel[h] { (v >> 32) as u32 } else { v as u32 });
            flush_f32(w, if neg[h] { -x } else { x })
        })
    }))
}

macro_rules! pk_f32 {
    ($($name:ident($($s:ident),*) => $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            check_round(w)?;
            let mut k = 0;
            $( let $s = f32_pair(w, i, { let n = k; k += 1; n })?; )*
            let _ = k;
            let out: [u64; LANES] = std::array::from_fn(|l| {
                let r: [u32; 2] = std::array::from_fn(|h| {
                    $( let $s = $s[l][h]; )*
                    let x: f32 = $body;
                    flush_f32(w, if i.mods.clamp { clamp01(x) } else { x }).to_bits()
                });
                u64::from(r[0]) | u64::from(r[1]) << 32
            });
            let exec = w.exec();
            w.write_lanes64(i.vdst, &out, exec)
        })*
    };
}

pk_f32! {
    v_pk_fma_f32(a, b, c) => a.mul_add(b, c);
    v_pk_mul_f32(a, b) => a * b;
    v_pk_add_f32(a, b) => a + b;
}

/// `v_pk_mov_b32`: D.dword0 = S0.dword[op_sel[0]], D.dword1 =
/// S1.dword[op_sel[1]], over 64-bit register pairs.
fn v_pk_mov_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let a = w.lanes64(i, 0, Ty::U64)?;
    let b = w.lanes64(i, 1, Ty::U64)?;
    let pick = |v: u64, hi: bool| if hi { (v >> 32) as u32 } else { v as u32 };
    let sel0 = i.mods.op_sel & 1 != 0;
    let sel1 = i.mods.op_sel & 2 != 0;
    let out: [u64; LANES] =
        std::array::from_fn(|l| u64::from(pick(a[l], sel0)) | u64::from(pick(b[l], sel1)) << 32);
    let exec = w.exec();
    w.write_lanes64(i.vdst, &out, exec)
}

// ---------------------------------------------------------------------------
// Mixed precision FMA
// ---------------------------------------------------------------------------

/// Source `n` of a mix op: f16 (half OP_SEL[n]) when OP_SEL_HI[n], else
/// f32; NEG_HI[n] is abs, NEG[n] negation.
fn mix_src(w: &Wave, i: &Inst, n: usize) -> Result<[f32; LANES], Fault> {
    let f16 = i.mods.op_sel_hi >> n & 1 != 0;
    let raw = w.lanes(i, n, if f16 { Ty::B16 } else { Ty::B32 })?;
    let hi = i.mods.op_sel >> n & 1 != 0;
    let abs = i.mods.neg_hi >> n & 1 != 0;
    let neg = i.mods.neg >> n & 1 != 0;
    Ok(raw.map(|v| {
        let x = if f16 {
            f16_to_f32(if hi { (v >> 16) as u16 } else { v as u16 })
        } else {
            flush_f32(w, f32::from_bits(v))
        };
        let x = if abs { x.abs() } else { x };
        if neg { -x } else { x }
    }))
}

/// The mix FMA of lane `l`, unrounded as far as f16 results care: the
/// f64 product of two f32 is exact, so only the sum rounds (far below
/// f16 precision) before the final rounding.
fn mix(a: &[f32; LANES], b: &[f32; LANES], c: &[f32; LANES], l: usize) -> f64 {
    f64::from(a[l]).mul_add(f64::from(b[l]), f64::from(c[l]))
}

fn v_fma_mix_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    check_round(w)?;
    let (a, b, c) = (mix_src(w, i, 0)?, mix_src(w, i, 1)?, mix_src(w, i, 2)?);
    let out: Lanes = std::array::from_fn(|l| {
        let x = a[l].mul_add(b[l], c[l]);
        flush_f32(w, if i.mods.clamp { clamp01(x) } else { x }).to_bits()
    });
    write(w, i, &out)
}

/// `v_fma_mixlo_f16`/`v_fma_mixhi_f16`: the f16 result goes to one half of
/// the destination, the other half is kept.
fn fma_mix_f16(w: &mut Wave, i: &Inst, high: bool) -> R {
    check_round(w)?;
    let (a, b, c) = (mix_src(w, i, 0)?, mix_src(w, i, 1)?, mix_src(w, i, 2)?);
    let old = *w.vreg(i.vdst, false)?;
    let out: Lanes = std::array::from_fn(|l| {
        let x = mix(&a, &b, &c, l) as f32;
        let h = u32::from(f32_to_f16(if i.mods.clamp { clamp01(x) } else { x }));
        if high {
            (old[l] & 0xFFFF) | h << 16
        } else {
            (old[l] & 0xFFFF_0000) | h
        }
    });
    write(w, i, &out)
}

fn v_fma_mixlo_f16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    fma_mix_f16(w, i, false)
}

fn v_fma_mixhi_f16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    fma_mix_f16(w, i, true)
}

// ---------------------------------------------------------------------------
// Dot products
// ---------------------------------------------------------------------------

/// `v_dot2_f32_f16`: S0.f16 · S1.f16 over both halves + S2.f32, in one
/// rounding (the f16 products are exact in f64).
fn dot2_f16(a: [f32; 2], b: [f32; 2], c: f32) -> f32 {
    (f64::from(a[0]) * f64::from(b[0]) + f64::from(a[1]) * f64::from(b[1]) + f64::from(c)) as f32
}

fn v_dot2_f32_f16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    check_round(w)?;
    let a = f16_halves(w, i, 0)?;
    let b = f16_halves(w, i, 1)?;
    let c = w.lanes(i, 2, Ty::B32)?;
    let neg_c = i.mods.neg & 4 != 0;
    let out: Lanes = std::array::from_fn(|l| {
        let c = f32::from_bits(c[l]);
        let x = dot2_f16(a[l], b[l], if neg_c { -c } else { c });
        if i.mods.clamp { clamp01(x) } else { x }.to_bits()
    });
    write(w, i, &out)
}

/// `v_dot2c_f32_f16` (VOP2, DPP-capable): D.f32 += S0.f16 · S1.f16. The
/// VOP2 form has no half selection; VOP3's NEG/ABS apply to both halves.
fn v_dot2c_f32_f16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    check_round(w)?;
    let operand = |n: usize| -> Result<[[f32; 2]; LANES], Fault> {
        let raw = w.lanes(i, n, Ty::B16)?;
        let abs = i.mods.abs >> n & 1 != 0;
        let neg = i.mods.neg >> n & 1 != 0;
        Ok(raw.map(|v| {
            [v as u16, (v >> 16) as u16].map(|h| {
                let x = f16_to_f32(h);
                let x = if abs { x.abs() } else { x };
                if neg { -x } else { x }
            })
        }))
    };
    let (a, b) = (operand(0)?, operand(1)?);
    let d = *w.vreg(i.vdst, false)?;
    let out: Lanes = std::array::from_fn(|l| {
        let x = dot2_f16(a[l], b[l], f32::from_bits(d[l]));
        if i.mods.clamp { clamp01(x) } else { x }.to_bits()
    });
    write(w, i, &out)
}

/// Lanes of `n` signed (`signed`) `bits`-wide fields of each dword.
fn fields(v: u32, bits: u32, signed: bool) -> impl Iterator<Item = i64> {
    let n = 32 / bits;
    (0..n).map(move |f| {
        let x = (v >> (f * bits)) << (32 - bits);
        if signed {
            i64::from((x as i32) >> (32 - bits))
        } else {
            i64::from(x >> (32 - bits))
        }
    })
}

/// An integer dot product: the sum of field products and the accumulator
/// is exact in i64; CLAMP saturates it to the 32-bit result type,
/// otherwise it wraps.
fn int_dot(a: u32, b: u32, c: u32, bits: u32, signed: bool, clamp: bool) -> u32 {
    let c = if signed {
        i64::from(c as i32)
    } else {
        i64::from(c)
    };
    let sum: i64 = fields(a, bits, signed)
        .zip(fields(b, bits, signed))
        .map(|(x, y)| x * y)
        .sum::<i64>()
        + c;
    match (clamp, signed) {
        (false, _) => sum as u32,
        (true, true) => sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as u32,
        (true, false) => sum.clamp(0, i64::from(u32::MAX)) as u32,
    }
}

/// Integer dots of VOP3P. The 16-bit forms select halves by OP_SEL and
/// OP_SEL_HI like packed math; the 8- and 4-bit forms read whole dwords.
/// `$c` says whether the accumulator is S2 or (the VOP2 `c` forms) D.
macro_rules! int_dots {
    ($($name:ident: $bits:expr, $signed:expr, acc_is_dst: $c:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let (a, b) = if $bits == 16 && !$c {
                let (a, b) = (halves(w, i, 0)?, halves(w, i, 1)?);
                (a.map(|p| pack(p[0], p[1])), b.map(|p| pack(p[0], p[1])))
            } else {
                (w.lanes(i, 0, Ty::B32)?, w.lanes(i, 1, Ty::B32)?)
            };
            let c = if $c { *w.vreg(i.vdst, false)? } else { w.lanes(i, 2, Ty::B32)? };
            let out: Lanes =
                std::array::from_fn(|l| int_dot(a[l], b[l], c[l], $bits, $signed, i.mods.clamp));
            write(w, i, &out)
        })*
    };
}

int_dots! {
    v_dot2_i32_i16: 16, true, acc_is_dst: false;
    v_dot2_u32_u16: 16, false, acc_is_dst: false;
    v_dot4_i32_i8: 8, true, acc_is_dst: false;
    v_dot4_u32_u8: 8, false, acc_is_dst: false;
    v_dot8_i32_i4: 4, true, acc_is_dst: false;
    v_dot8_u32_u4: 4, false, acc_is_dst: false;
    v_dot2c_i32_i16: 16, true, acc_is_dst: true;
    v_dot4c_i32_i8: 8, true, acc_is_dst: true;
    v_dot8c_i32_i4: 4, true, acc_is_dst: true;
}

// ---------------------------------------------------------------------------
// Accumulation registers
// ---------------------------------------------------------------------------

/// The AGPR a source names: the decoder marks `v_accvgpr_read/mov`'s
/// source as an AGPR in VOP3P, but VOP1 `v_accvgpr_mov_b32` carries it in
/// the VGPR operand range.
fn agpr_of(src: Src) -> Option<u16> {
    match src {
        Src::Agpr(r) | Src::Vgpr(r) => Some(r),
        _ => None,
    }
}

/// Writes `vals` to AGPR `r` under EXEC.
fn write_agpr(w: &mut Wave, r: u16, vals: &Lanes) -> R {
    let exec = w.exec();
    let d = w.vreg_mut(r, true)?;
    for l in 0..LANES {
        if exec >> l & 1 != 0 {
            d[l] = vals[l];
        }
    }
    Ok(())
}

/// `v_accvgpr_read_b32`: VGPR D = AGPR S0.
fn v_accvgpr_read_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let r = agpr_of(i.src[0]).ok_or(Fault::Unimplemented {
        mnemonic: "v_accvgpr_read_b32 of a non-register source",
    })?;
    let v = *w.vreg(r, true)?;
    let exec = w.exec();
    w.write_lanes(i.vdst, &v, exec)
}

/// `v_accvgpr_write_b32`: AGPR D = S0 (a VGPR or an inline constant).
fn v_accvgpr_write_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let v = w.lanes(i, 0, Ty::B32)?;
    write_agpr(w, i.vdst, &v)
}

/// `v_accvgpr_mov_b32`: AGPR D = AGPR S0.
fn v_accvgpr_mov_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let r = agpr_of(i.src[0]).ok_or(Fault::Unimplemented {
        mnemonic: "v_accvgpr_mov_b32 of a non-register source",
    })?;
    let v = *w.vreg(r, true)?;
    write_agpr(w, i.vdst, &v)
}

/// Every VOP3P executor (and the VOP2 dot2c/pk_fmac relatives).
pub const OPS: &[&[(&str, Exec)]] = &[&[
    ("v_pk_mov_b32", v_pk_mov_b32),
    ("v_pk_fma_f16", v_pk_fma_f16),
    ("v_pk_add_f16", v_pk_add_f16),
    ("v_pk_mul_f16", v_pk_mul_f16),
    ("v_pk_min_f16", v_pk_min_f16),
    ("v_pk_max_f16", v_pk_max_f16),
    ("v_pk_fmac_f16", v_pk_fmac_f16),
    ("v_pk_mad_i16", v_pk_mad_i16),
    ("v_pk_mad_u16", v_pk_mad_u16),
    ("v_pk_add_i16", v_pk_add_i16),
    ("v_pk_sub_i16", v_pk_sub_i16),
    ("v_pk_add_u16", v_pk_add_u16),
    ("v_pk_sub_u16", v_pk_sub_u16),
    ("v_pk_mul_lo_u16", v_pk_mul_lo_u16),
    ("v_pk_max_i16", v_pk_max_i16),
    ("v_pk_min_i16", v_pk_min_i16),
    ("v_pk_max_u16", v_pk_max_u16),
    ("v_pk_min_u16", v_pk_min_u16),
    ("v_pk_lshlrev_b16", v_pk_lshlrev_b16),
    ("v_pk_lshrrev_b16", v_pk_lshrrev_b16),
    ("v_pk_ashrrev_i16", v_pk_ashrrev_i16),
    ("v_pk_fma_f32", v_pk_fma_f32),
    ("v_pk_mul_f32", v_pk_mul_f32),
    ("v_pk_add_f32", v_pk_add_f32),
    ("v_fma_mix_f32", v_fma_mix_f32),
    ("v_fma_mixlo_f16", v_fma_mixlo_f16),
    ("v_fma_mixhi_f16", v_fma_mixhi_f16),
    ("v_dot2_f32_f16", v_dot2_f32_f16),
    ("v_dot2c_f32_f16", v_dot2c_f32_f16),
    ("v_dot2_i32_i16", v_dot2_i32_i16),
    ("v_dot2_u32_u16", v_dot2_u32_u16),
    ("v_dot4_i32_i8", v_dot4_i32_i8),
    ("v_dot4_u32_u8", v_dot4_u32_u8),
    ("v_dot8_i32_i4", v_dot8_i32_i4),
    ("v_dot8_u32_u4", v_dot8_u32_u4),
    ("v_dot2c_i32_i16", v_dot2c_i32_i16),
    ("v_dot4c_i32_i8", v_dot4c_i32_i8),
    ("v_dot8c_i32_i4", v_dot8c_i32_i4),
    ("v_accvgpr_read_b32", v_accvgpr_read_b32),
    ("v_accvgpr_write_b32", v_accvgpr_write_b32),
    ("v_accvgpr_mov_b32", v_accvgpr_mov_b32),
]];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::opcodes::VOP3P;
    use crate::decode::{Target, decode};

    /// Hand-assembled VOP3P (CDNA3 ISA, "VOP3P"): sources are VGPRs
    /// (or, with `None`, the 9-bit code given).
    struct Enc {
        op: &'static str,
        srcs: [u32; 3],
        op_sel: u32,
        op_sel_hi: u32,
        neg: u32,
        neg_hi: u32,
        clamp: bool,
    }

    fn vgpr(r: u32) -> u32 {
        0x100 | r
    }

    fn encode(e: &Enc, vdst: u32) -> [u32; 2] {
        const VOP3P_ENC: u32 = 0xD380_0000;
        let op = VOP3P
            .iter()
            .find(|o| o.on(Target::Gfx942) == e.op)
            .expect("opcode")
            .opcode;
        [
            VOP3P_ENC
                | u32::from(op) << 16
                | u32::from(e.clamp) << 15
                | (e.op_sel_hi >> 2 & 1) << 14
                | e.op_sel << 11
                | e.neg_hi << 8
                | vdst,
            e.srcs[0] | e.srcs[1] << 9 | e.srcs[2] << 18 | (e.op_sel_hi & 3) << 27 | e.neg << 29,
        ]
    }

    fn run(w: &mut Wave, words: &[u32]) {
        let mnemonic = decode(words, Target::Gfx942).expect("decodes").mnemonic;
        crate::exec::run_words(w, Target::Gfx942, words, mnemonic, &mut []).expect("executes");
    }

    fn h(x: f32) -> u32 {
        u32::from(f32_to_f16(x))
    }

    #[test]
    fn packed_fma_selects_and_negates_each_half_independently() {
        let mut w = Wave::new(8, 0);
        w.set_exec(u64::MAX);
        for l in 0..LANES {
            let x = l as f32;
            w.v[0][l] = h(x) | h(2.0) << 16;
            w.v[1][l] = h(0.5) | h(x + 1.0) << 16;
            w.v[2][l] = h(-3.0) | h(10.0) << 16;
        }
        // Low: a.lo * b.hi + c.lo; high: -(a.hi) * b.lo + (-c.lo).
        let e = Enc {
            op: "v_pk_fma_f16",
            srcs: [vgpr(0), vgpr(1), vgpr(2)],
            op_sel: 0b010,
            op_sel_hi: 0b001,
            neg: 0,
            neg_hi: 0b101,
            clamp: false,
        };
        run(&mut w, &encode(&e, 3));
        for l in 0..LANES {
            let x = l as f32;
            let lo = f16_to_f32(w.v[3][l] as u16);
            let hi = f16_to_f32((w.v[3][l] >> 16) as u16);
            assert_eq!(lo, f16_to_f32(h(x * (x + 1.0) - 3.0) as u16), "lane {l}");
            assert_eq!(hi, -2.0 * 0.5 + 3.0, "lane {l}");
        }
    }

    #[test]
    fn a_float_inline_constant_feeds_only_the_low_half_unless_op_sel_hi_is_clear() {
        let mut w = Wave::new(4, 0);
        w.set_exec(u64::MAX);
        w.v[0] = [h(1.5) | h(2.5) << 16; LANES];
        const ONE: u32 = 242;
        let mut e = Enc {
            op: "v_pk_add_f16",
            srcs: [vgpr(0), ONE, 0],
            op_sel: 0,
            op_sel_hi: 0b011,
            neg: 0,
            neg_hi: 0,
            clamp: false,
        };
        run(&mut w, &encode(&e, 1));
        assert_eq!(w.v[1][0], h(2.5) | h(2.5) << 16);
        e.op_sel_hi = 0b001;
        run(&mut w, &encode(&e, 1));
        assert_eq!(w.v[1][0], h(2.5) | h(3.5) << 16);
    }

    #[test]
    fn clamped_integer_packed_math_and_dots_saturate() {
        let mut w = Wave::new(4, 0);
        w.set_exec(u64::MAX);
        w.v[0] = [0x7FF0_8010; LANES];
        w.v[1] = [0x0100_FF00; LANES];
        let mut e = Enc {
            op: "v_pk_add_i16",
            srcs: [vgpr(0), vgpr(1), 0],
            op_sel: 0,
            op_sel_hi: 0b011,
            neg: 0,
            neg_hi: 0,
            clamp: true,
        };
        run(&mut w, &encode(&e, 2));
        // 0x8010 + 0xFF00 = -32752 - 256 saturates to -32768; 0x7FF0 +
        // 0x100 to 32767.
        assert_eq!(w.v[2][0], 0x7FFF_8000);
        e.clamp = false;
        run(&mut w, &encode(&e, 2));
        assert_eq!(w.v[2][0], 0x80F0_7F10);

        // dot4 of 127·127 ×4 + i32::MAX saturates with clamp, wraps without.
        w.v[0] = [0x7F7F_7F7F; LANES];
        w.v[1] = [0x7F7F_7F7F; LANES];
        w.v[3] = [i32::MAX as u32; LANES];
        let mut e = Enc {
            op: "v_dot4_i32_i8",
            srcs: [vgpr(0), vgpr(1), vgpr(3)],
            op_sel: 0,
            op_sel_hi: 0b011,
            neg: 0,
            neg_hi: 0,
            clamp: true,
        };
        run(&mut w, &encode(&e, 2));
        assert_eq!(w.v[2][0], i32::MAX as u32);
        e.clamp = false;
        run(&mut w, &encode(&e, 2));
        assert_eq!(w.v[2][0], (i32::MAX as u32).wrapping_add(4 * 127 * 127));
    }

    #[test]
    fn fma_mix_reads_f16_or_f32_per_source() {
        let mut w = Wave::new(4, 0);
        w.set_exec(u64::MAX);
        w.v[0] = [h(3.0) << 16; LANES]; // f16 in the high half
        w.v[1] = [1.25f32.to_bits(); LANES]; // f32
        w.v[2] = [h(-0.5); LANES]; // f16 in the low half, abs'd
        let e = Enc {
            op: "v_fma_mix_f32",
            srcs: [vgpr(0), vgpr(1), vgpr(2)],
            op_sel: 0b001,
            op_sel_hi: 0b101,
            neg: 0b010,
            neg_hi: 0b100,
            clamp: false,
        };
        run(&mut w, &encode(&e, 3));
        assert_eq!(f32::from_bits(w.v[3][0]), 3.0 * -1.25 + 0.5);
    }

    #[test]
    fn accvgpr_moves_go_between_the_register_files_under_exec() {
        let mut w = Wave::new(4, 4);
        w.set_exec(0xFFFF_FFFF);
        w.v[1] = std::array::from_fn(|l| l as u32);
        let write = Enc {
            op: "v_accvgpr_write_b32",
            srcs: [vgpr(1), 0, 0],
            op_sel: 0,
            op_sel_hi: 0,
            neg: 0,
            neg_hi: 0,
            clamp: false,
        };
        run(&mut w, &encode(&write, 2));
        assert_eq!(w.a[2][5], 5);
        assert_eq!(w.a[2][40], 0);
        let read = Enc {
            op: "v_accvgpr_read_b32",
            srcs: [vgpr(2), 0, 0],
            ..write
        };
        run(&mut w, &encode(&read, 3));
        assert_eq!(w.v[3][7], 7);
    }
}
