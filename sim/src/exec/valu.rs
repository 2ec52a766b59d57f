//! Vector ALU: VOP1, VOP2, VOPC and VOP3 (with their SDWA and DPP forms).
//!
//! CDNA3 ISA, "Vector ALU Operations". Every executor reads its sources
//! as lane arrays (SDWA selection and DPP movement already applied by
//! [`Wave::lanes_in`]), computes the wave's lanes in a straight loop
//! ([`crate::lanes::WaveSize::map`]: 64, or 32 in wave32), and writes
//! back under EXEC (and the DPP row/bank masks, and the SDWA destination
//! selection) through [`write`].
//!
//! Sources are borrowed, not copied: a plain VGPR source is the register
//! itself, and a source helper takes an empty `Option` it fills only when
//! it must build the lanes (a scalar broadcast, SDWA, DPP, modifiers), so
//! a VALU instruction moves no 256-byte array it does not compute. The
//! float views of a register's bits are `zerocopy` reference casts.
//! (Copies of whole 64-lane arrays made a wave32 instruction cost the
//! host as much as a wave64 one; the figures are in the commit that
//! removed them, 544756c.)
//!
//! Floating point: f32 and f64 arithmetic is the host's IEEE arithmetic
//! (round to nearest even, fused `mul_add` for FMA), which is what the
//! hardware computes in its default mode; f32 denormals are flushed on
//! input and output when the MODE register says so (the kernel
//! descriptor's FLOAT_DENORM_MODE_32), f16 and f64 ones likewise by
//! FLOAT_DENORM_MODE_16_64. `v_mad_f32`/`v_mac_f32` are the
//! unfused, denormal-flushing multiply-add. Round modes other than nearest
//! even are refused rather than approximated.

use crate::decode::inst::flag;
use crate::decode::{Ext, Inst, Src};
use crate::exec::ctx::{Ctx, Exec};
use crate::exec::{dpp, sdwa};
use crate::fault::Fault;
use crate::float::{f16_to_f32, f32_to_f16};
use crate::lanes::{LANES, Lanes};
use crate::wave::{Ty, Wave};
use std::cmp::Ordering::{Equal, Greater, Less};

type R = Result<(), Fault>;

// ---------------------------------------------------------------------------
// Operand access with modifiers
// ---------------------------------------------------------------------------

/// MODE bits (CDNA3 ISA, "MODE register"): FP_ROUND [3:0], FP_DENORM [7:4].
const MODE_ROUND: u32 = 0xF;
const MODE_DENORM32_SHIFT: u32 = 4;

pub(crate) fn check_round(w: &Wave) -> R {
    if w.mode & MODE_ROUND != 0 {
        return Err(Fault::Unimplemented {
            mnemonic: "a float round mode other than nearest-even",
        });
    }
    Ok(())
}

pub(crate) fn flush32(w: &Wave) -> bool {
    (w.mode >> MODE_DENORM32_SHIFT) & 3 != 3
}

pub(crate) fn flush_f32(x: f32) -> f32 {
    if x.is_subnormal() {
        0.0f32.copysign(x)
    } else {
        x
    }
}

/// Source `n` as f32 with abs/neg (and denormal flushing) applied.
#[inline]
fn f32_src<'a>(
    w: &'a Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<Lanes>,
) -> Result<&'a [f32; LANES], Fault> {
    let abs = i.mods.abs >> n & 1 != 0;
    let neg = i.mods.neg >> n & 1 != 0;
    let flush = flush32(w);
    if !abs && !neg && !flush {
        // The register's bits are the values.
        let raw: &Lanes = w.lanes_in(i, n, Ty::B32, buf)?;
        return Ok(zerocopy::transmute_ref!(raw));
    }
    let mask = if abs { 0x7FFF_FFFF } else { u32::MAX };
    let flip = if neg { 0x8000_0000 } else { 0 };
    let raw = w.lanes_in(i, n, Ty::B32, buf)?;
    let out = w.size().map(|l| {
        let x = f32::from_bits((raw[l] & mask) ^ flip);
        if flush { flush_f32(x) } else { x }.to_bits()
    });
    let out: &Lanes = buf.insert(out);
    Ok(zerocopy::transmute_ref!(out))
}

/// Source `n` as f64 with abs/neg applied.
#[inline]
fn f64_src<'a>(
    w: &Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<[u64; LANES]>,
) -> Result<&'a [f64; LANES], Fault> {
    let raw = buf.insert([0; LANES]);
    w.lanes64_in(i, n, Ty::F64, raw)?;
    let abs = i.mods.abs >> n & 1 != 0;
    let neg = i.mods.neg >> n & 1 != 0;
    let flush = flush16_64(w);
    if abs || neg || flush {
        let mask = if abs { !(1u64 << 63) } else { u64::MAX };
        let flip = if neg { 1u64 << 63 } else { 0 };
        let v = *raw;
        w.size().fill(raw, |l| {
            let x = f64::from_bits((v[l] & mask) ^ flip);
            if flush && x.is_subnormal() {
                0.0f64.copysign(x)
            } else {
                x
            }
            .to_bits()
        });
    }
    let raw: &[u64; LANES] = raw;
    Ok(zerocopy::transmute_ref!(raw))
}

/// Whether MODE's FP_DENORM for f16 and f64 (bits 7:6) flushes
/// denormals (anything but 3, "keep in and out").
fn flush16_64(w: &Wave) -> bool {
    (w.mode >> (MODE_DENORM32_SHIFT + 2)) & 3 != 3
}

/// An f16 with its denormals flushed to a signed zero.
fn flush_f16(h: u16) -> u16 {
    if h & 0x7C00 == 0 { h & 0x8000 } else { h }
}

/// Source `n` as an f16 widened to f32, with op_sel (high half) and
/// abs/neg applied.
#[inline]
fn f16_src<'a>(
    w: &Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<Lanes>,
) -> Result<&'a [f32; LANES], Fault> {
    let raw = w.lanes_in(i, n, Ty::B16, buf)?;
    let hi = i.mods.op_sel >> n & 1 != 0;
    let abs = i.mods.abs >> n & 1 != 0;
    let neg = i.mods.neg >> n & 1 != 0;
    let flush = flush16_64(w);
    let out = w.size().map(|l| {
        let h = if hi { raw[l] >> 16 } else { raw[l] } as u16;
        let h = if abs { h & 0x7FFF } else { h };
        let h = if neg { h ^ 0x8000 } else { h };
        f16_to_f32(if flush { flush_f16(h) } else { h }).to_bits()
    });
    let out: &Lanes = buf.insert(out);
    Ok(zerocopy::transmute_ref!(out))
}

#[inline]
fn u32_src<'a>(
    w: &'a Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<Lanes>,
) -> Result<&'a Lanes, Fault> {
    w.lanes_in(i, n, Ty::B32, buf)
}

#[inline]
fn u64_src<'a>(
    w: &Wave,
    i: &Inst,
    n: usize,
    ty: Ty,
    buf: &'a mut Option<[u64; LANES]>,
) -> Result<&'a [u64; LANES], Fault> {
    let out = buf.insert([0; LANES]);
    w.lanes64_in(i, n, ty, out)?;
    Ok(out)
}

/// Applies the output modifier and clamp of a float result.
#[inline]
fn omod_clamp_f32(i: &Inst, x: f32) -> f32 {
    if i.mods.omod == 0 && !i.mods.clamp {
        return x;
    }
    // Scaling by a power of two is exact in f64, so one rounding back to
    // f32 gives what the f32 multiply would.
    omod_clamp_f64(i, f64::from(x)) as f32
}

#[inline]
fn omod_clamp_f64(i: &Inst, x: f64) -> f64 {
    let x = match i.mods.omod {
        1 => x * 2.0,
        2 => x * 4.0,
        3 => x * 0.5,
        _ => x,
    };
    if i.mods.clamp {
        // Clamp to [0, 1]; NaN becomes 0 (DX10 clamp).
        if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
    } else {
        x
    }
}

/// The lanes a VALU write lands in: EXEC, narrowed by DPP's row and bank
/// masks and by lanes whose DPP source was invalid without bound_ctrl.
#[inline]
fn write_mask(w: &Wave, i: &Inst) -> u64 {
    match i.ext {
        Ext::Dpp(d) => w.exec() & dpp::write_mask(d),
        _ => w.exec(),
    }
}

/// Writes a 32-bit result to `vdst` (SDWA destination selection applied).
#[inline]
pub(crate) fn write(w: &mut Wave, i: &Inst, vals: &Lanes) -> R {
    let mask = write_mask(w, i);
    if let Ext::Sdwa(s) = i.ext {
        let d = w.vreg_mut(i.vdst, false)?;
        for l in 0..LANES {
            if mask >> l & 1 != 0 {
                d[l] = sdwa::place(d[l], vals[l], s.dst_sel, s.dst_unused);
            }
        }
        return Ok(());
    }
    w.write_lanes(i.vdst, vals, mask)
}

#[inline]
fn write64(w: &mut Wave, i: &Inst, vals: &[u64; LANES]) -> R {
    let mask = write_mask(w, i);
    w.write_lanes64(i.vdst, vals, mask)
}

fn write_f32(w: &mut Wave, i: &Inst, vals: [f32; LANES]) -> R {
    let flush = flush32(w);
    let out: Lanes = w.size().map(|l| {
        let x = omod_clamp_f32(i, vals[l]);
        if flush { flush_f32(x) } else { x }.to_bits()
    });
    write(w, i, &out)
}

fn write_f64(w: &mut Wave, i: &Inst, vals: [f64; LANES]) -> R {
    let flush = flush16_64(w);
    let out: [u64; LANES] = w.size().map(|l| {
        let x = omod_clamp_f64(i, vals[l]);
        if flush && x.is_subnormal() {
            0.0f64.copysign(x)
        } else {
            x
        }
        .to_bits()
    });
    write64(w, i, &out)
}

/// Writes an f16 result: low half with the high half zeroed, or with
/// op_sel[3] the high half with the low half kept (gfx9 16-bit results).
fn write_f16(w: &mut Wave, i: &Inst, vals: [f32; LANES]) -> R {
    let flush = flush16_64(w);
    let h: Lanes = w.size().map(|l| {
        let h = f32_to_f16(omod_clamp_f32(i, vals[l]));
        u32::from(if flush { flush_f16(h) } else { h })
    });
    write_b16(w, i, h)
}

fn write_b16(w: &mut Wave, i: &Inst, h: Lanes) -> R {
    if i.mods.op_sel & 8 != 0 {
        let old = *w.vreg(i.vdst, false)?;
        let out: Lanes = w.size().map(|l| (old[l] & 0xFFFF) | (h[l] & 0xFFFF) << 16);
        write(w, i, &out)
    } else if i.flags & flag::T16 != 0 {
        // GFX11+ true16: the high half stays.
        let old = *w.vreg(i.vdst, false)?;
        let out: Lanes = w.size().map(|l| (old[l] & 0xFFFF_0000) | (h[l] & 0xFFFF));
        write(w, i, &out)
    } else {
        let out: Lanes = w.size().map(|l| h[l] & 0xFFFF);
        write(w, i, &out)
    }
}

// ---------------------------------------------------------------------------
// Families, generated
// ---------------------------------------------------------------------------

/// Defines lane-wise executors: each source read with `$src` (modifiers
/// applied), the body evaluated per lane, the result written with `$out`.
/// Float families check the round mode first.
macro_rules! vop {
    ($table:ident, $src:ident -> $out:ident, float: $float:expr;
     $($name:ident($($s:ident),*) => $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            if $float {
                check_round(w)?;
            }
            let mut k = 0;
            $( let mut $s = None;
               let $s = $src(w, i, { let n = k; k += 1; n }, &mut $s)?; )*
            let _ = k;
            let out = w.size().map(|l| { $( let $s = $s[l]; )* $body });
            $out(w, i, out)
        })*
        const $table: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

/// `v_alignbit_b32`/`v_alignbyte_b32`: the dword at bit (byte) `shift` of
/// `a:b`. GFX11+ reads the shift as a 16-bit operand, its half chosen by
/// OP_SEL bit 2 (LLVM's true16 profile); GFX9 never sets that bit.
fn align(w: &mut Wave, i: &Inst, unit: u32, mask: u32) -> R {
    let mut a_buf = None;
    let a = u32_src(w, i, 0, &mut a_buf)?;
    let mut b_buf = None;
    let b = u32_src(w, i, 1, &mut b_buf)?;
    let mut c_buf = None;
    let c = u16_src(w, i, 2, &mut c_buf)?;
    let out = w.size().map(|l| {
        ((u64::from(a[l]) << 32 | u64::from(b[l])) >> (unit * (u32::from(c[l]) & mask))) as u32
    });
    write_u32(w, i, out)
}

fn v_alignbit_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    align(w, i, 1, 31)
}

fn v_alignbyte_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    align(w, i, 8, 3)
}

/// A 16-bit integer source: the low half, or the high one with op_sel.
fn u16_src<'a>(
    w: &Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<[u16; LANES]>,
) -> Result<&'a [u16; LANES], Fault> {
    let mut tmp = None;
    let raw = w.lanes_in(i, n, Ty::B16, &mut tmp)?;
    let hi = i.mods.op_sel >> n & 1 != 0;
    Ok(buf.insert(w.size().map(|l| {
        if hi {
            (raw[l] >> 16) as u16
        } else {
            raw[l] as u16
        }
    })))
}

fn write_u32(w: &mut Wave, i: &Inst, out: Lanes) -> R {
    write(w, i, &out)
}

fn write_u16(w: &mut Wave, i: &Inst, out: [u16; LANES]) -> R {
    write_b16(w, i, out.map(u32::from))
}

fn fma32(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}

/// `v_mad_f32`: multiply, round, add, round; denormals flushed.
fn mad32(a: f32, b: f32, c: f32) -> f32 {
    flush_f32(flush_f32(flush_f32(a) * flush_f32(b)) + flush_f32(c))
}

/// IEEE-mode min/max: a NaN operand yields the other operand.
fn fmin32(a: f32, b: f32) -> f32 {
    a.min(b)
}

fn fmax32(a: f32, b: f32) -> f32 {
    a.max(b)
}

fn med3_f32(a: f32, b: f32, c: f32) -> f32 {
    if a.is_nan() || b.is_nan() || c.is_nan() {
        return fmin32(fmin32(a, b), c);
    }
    let mx = a.max(b).max(c);
    if mx == a {
        b.max(c)
    } else if mx == b {
        a.max(c)
    } else {
        a.max(b)
    }
}

fn ldexp32(a: f32, e: i32) -> f32 {
    // Exact scaling by powers of two in f64, one rounding to f32.
    (f64::from(a) * 2f64.powi(e.clamp(-400, 400))) as f32
}

vop! { F32, f32_src -> write_f32, float: true;
    v_add_f32(a, b) => a + b;
    v_sub_f32(a, b) => a - b;
    v_subrev_f32(a, b) => b - a;
    v_mul_f32(a, b) => a * b;
    v_mul_legacy_f32(a, b) => if a == 0.0 || b == 0.0 { 0.0 } else { a * b };
    v_min_f32(a, b) => fmin32(a, b);
    v_max_f32(a, b) => fmax32(a, b);
    v_fma_f32(a, b, c) => fma32(a, b, c);
    v_fmac_f32(a, b, c) => fma32(a, b, c);
    v_fmamk_f32(a, b, c) => fma32(a, b, c);
    v_fmaak_f32(a, b, c) => fma32(a, b, c);
    v_mad_f32(a, b, c) => mad32(a, b, c);
    v_mac_f32(a, b, c) => mad32(a, b, c);
    v_madmk_f32(a, b, c) => mad32(a, b, c);
    v_madak_f32(a, b, c) => mad32(a, b, c);
    v_mad_legacy_f32(a, b, c) => if a == 0.0 || b == 0.0 { flush_f32(c) } else { mad32(a, b, c) };
    v_min3_f32(a, b, c) => fmin32(fmin32(a, b), c);
    v_max3_f32(a, b, c) => fmax32(fmax32(a, b), c);
    v_med3_f32(a, b, c) => med3_f32(a, b, c);
    v_rcp_f32(a) => 1.0 / a;
    v_rcp_iflag_f32(a) => 1.0 / a;
    v_rsq_f32(a) => 1.0 / a.sqrt();
    v_sqrt_f32(a) => a.sqrt();
    v_exp_f32(a) => a.exp2();
    v_log_f32(a) => a.log2();
    v_exp_legacy_f32(a) => a.exp2();
    v_log_legacy_f32(a) => a.log2();
    v_sin_f32(a) => (f64::from(a) * std::f64::consts::TAU).sin() as f32;
    v_cos_f32(a) => (f64::from(a) * std::f64::consts::TAU).cos() as f32;
    v_fract_f32(a) => if a.is_infinite() { f32::NAN } else { (a - a.floor()).min(f32::from_bits(0x3F7F_FFFF)) };
    v_trunc_f32(a) => a.trunc();
    v_ceil_f32(a) => a.ceil();
    v_floor_f32(a) => a.floor();
    v_rndne_f32(a) => a.round_ties_even();
    v_frexp_mant_f32(a) => frexp_mant32(a);
}

fn frexp_mant32(a: f32) -> f32 {
    if a.is_nan() || a.is_infinite() || a == 0.0 {
        return a;
    }
    let (m, _) = frexp(f64::from(a));
    m as f32
}

fn frexp(a: f64) -> (f64, i32) {
    if a == 0.0 || a.is_nan() || a.is_infinite() {
        return (a, 0);
    }
    let mut e = a.abs().log2().floor() as i32 + 1;
    let mut m = a / 2f64.powi(e);
    // Correct for log2 rounding at the edges.
    if m.abs() >= 1.0 {
        m /= 2.0;
        e += 1;
    } else if m.abs() < 0.5 {
        m *= 2.0;
        e -= 1;
    }
    (m, e)
}

fn v_ldexp_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    check_round(w)?;
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    let mut e_buf = None;
    let e = u32_src(w, i, 1, &mut e_buf)?;
    write_f32(w, i, w.size().map(|l| ldexp32(a[l], e[l] as i32)))
}

fn v_frexp_exp_i32_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    write(w, i, &w.size().map(|l| frexp(f64::from(a[l])).1 as u32))
}

vop! { F64, f64_src -> write_f64, float: true;
    v_add_f64(a, b) => a + b;
    v_mul_f64(a, b) => a * b;
    v_min_f64(a, b) => a.min(b);
    v_max_f64(a, b) => a.max(b);
    v_fma_f64(a, b, c) => a.mul_add(b, c);
    v_fmac_f64(a, b, c) => a.mul_add(b, c);
    v_rcp_f64(a) => 1.0 / a;
    v_rsq_f64(a) => 1.0 / a.sqrt();
    v_sqrt_f64(a) => a.sqrt();
    v_trunc_f64(a) => a.trunc();
    v_ceil_f64(a) => a.ceil();
    v_floor_f64(a) => a.floor();
    v_rndne_f64(a) => a.round_ties_even();
    v_fract_f64(a) => if a.is_infinite() { f64::NAN } else { (a - a.floor()).min(f64::from_bits(0x3FEF_FFFF_FFFF_FFFF)) };
    v_frexp_mant_f64(a) => frexp(a).0;
}

fn v_ldexp_f64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    check_round(w)?;
    let mut a_buf = None;
    let a = f64_src(w, i, 0, &mut a_buf)?;
    let mut e_buf = None;
    let e = u32_src(w, i, 1, &mut e_buf)?;
    write_f64(
        w,
        i,
        w.size().map(|l| {
            let e = e[l] as i32;
            // Two steps keep the intermediate power of two representable.
            let h = e / 2;
            a[l] * 2f64.powi(h) * 2f64.powi(e - h)
        }),
    )
}

fn v_frexp_exp_i32_f64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f64_src(w, i, 0, &mut a_buf)?;
    write(w, i, &w.size().map(|l| frexp(a[l]).1 as u32))
}

vop! { F16, f16_src -> write_f16, float: true;
    v_add_f16(a, b) => a + b;
    v_sub_f16(a, b) => a - b;
    v_subrev_f16(a, b) => b - a;
    v_mul_f16(a, b) => a * b;
    v_min_f16(a, b) => a.min(b);
    v_max_f16(a, b) => a.max(b);
    v_fma_f16(a, b, c) => (f64::from(a) * f64::from(b) + f64::from(c)) as f32;
    v_mac_f16(a, b, c) => a * b + c;
    v_mad_f16(a, b, c) => a * b + c;
    v_mad_legacy_f16(a, b, c) => a * b + c;
    v_fma_legacy_f16(a, b, c) => (f64::from(a) * f64::from(b) + f64::from(c)) as f32;
    v_madmk_f16(a, b, c) => a * b + c;
    v_madak_f16(a, b, c) => a * b + c;
    v_min3_f16(a, b, c) => a.min(b).min(c);
    v_max3_f16(a, b, c) => a.max(b).max(c);
    v_med3_f16(a, b, c) => med3_f32(a, b, c);
    v_rcp_f16(a) => 1.0 / a;
    v_rsq_f16(a) => 1.0 / a.sqrt();
    v_sqrt_f16(a) => a.sqrt();
    v_exp_f16(a) => a.exp2();
    v_log_f16(a) => a.log2();
    v_sin_f16(a) => (f64::from(a) * std::f64::consts::TAU).sin() as f32;
    v_cos_f16(a) => (f64::from(a) * std::f64::consts::TAU).cos() as f32;
    v_trunc_f16(a) => a.trunc();
    v_ceil_f16(a) => a.ceil();
    v_floor_f16(a) => a.floor();
    v_rndne_f16(a) => a.round_ties_even();
    v_fract_f16(a) => if a.is_infinite() { f32::NAN } else { a - a.floor() };
}

fn bfe(v: u32, off: u32, width: u32, signed: bool) -> u32 {
    let off = off & 31;
    let width = width & 31;
    if width == 0 {
        return 0;
    }
    let x = v >> off;
    if off + width < 32 {
        let shift = 32 - width;
        if signed {
            (((x << shift) as i32) >> shift) as u32
        } else {
            (x << shift) >> shift
        }
    } else if signed {
        ((v as i32) >> off) as u32
    } else {
        x
    }
}

fn med3_i(a: i32, b: i32, c: i32) -> i32 {
    a.max(b).min(a.min(b).max(c))
}

fn med3_u(a: u32, b: u32, c: u32) -> u32 {
    a.max(b).min(a.min(b).max(c))
}

fn ffbh(v: u32) -> u32 {
    if v == 0 { u32::MAX } else { v.leading_zeros() }
}

fn ffbh_i(v: u32) -> u32 {
    let x = if (v as i32) < 0 { !v } else { v };
    if x == 0 { u32::MAX } else { x.leading_zeros() }
}

fn perm(a: u32, b: u32, sel: u32) -> u32 {
    // Bytes 0-3 of S1, 4-7 of S0; 8-11 sign replicas; 12 = 0; 13+ = 0xFF.
    let src = u64::from(b) | u64::from(a) << 32;
    (0..4).fold(0, |d, k| {
        let s = (sel >> (8 * k)) & 0xFF;
        let byte = match s {
            0..=7 => (src >> (8 * s)) as u8,
            8 => ((src >> 15) & 1) as u8 * 0xFF,
            9 => ((src >> 31) & 1) as u8 * 0xFF,
            10 => ((src >> 47) & 1) as u8 * 0xFF,
            11 => ((src >> 63) & 1) as u8 * 0xFF,
            12 => 0,
            _ => 0xFF,
        };
        d | u32::from(byte) << (8 * k)
    })
}

fn sad_u8(a: u32, b: u32, c: u32) -> u32 {
    (0..4).fold(c, |acc, k| {
        let x = (a >> (8 * k)) as u8;
        let y = (b >> (8 * k)) as u8;
        acc.wrapping_add(u32::from(x.abs_diff(y)))
    })
}

fn u24(v: u32) -> u64 {
    u64::from(v & 0xFF_FFFF)
}

fn i24(v: u32) -> i64 {
    i64::from(((v << 8) as i32) >> 8)
}

vop! { U32, u32_src -> write_u32, float: false;
    v_mov_b32(a) => a;
    v_not_b32(a) => !a;
    v_bfrev_b32(a) => a.reverse_bits();
    v_ffbh_u32(a) => ffbh(a);
    v_ffbl_b32(a) => if a == 0 { u32::MAX } else { a.trailing_zeros() };
    v_ffbh_i32(a) => ffbh_i(a);
    v_cvt_f32_i32(a) => (a as i32 as f32).to_bits();
    v_cvt_f32_u32(a) => (a as f32).to_bits();
    v_cvt_f32_ubyte0(a) => f32::from(a as u8).to_bits();
    v_cvt_f32_ubyte1(a) => f32::from((a >> 8) as u8).to_bits();
    v_cvt_f32_ubyte2(a) => f32::from((a >> 16) as u8).to_bits();
    v_cvt_f32_ubyte3(a) => f32::from((a >> 24) as u8).to_bits();
    v_cvt_off_f32_i4(a) => ((((a & 0xF) as i32) << 28 >> 28) as f32 / 16.0).to_bits();
    v_and_b32(a, b) => a & b;
    v_or_b32(a, b) => a | b;
    v_xor_b32(a, b) => a ^ b;
    v_xnor_b32(a, b) => !(a ^ b);
    v_lshlrev_b32(a, b) => b << (a & 31);
    v_lshrrev_b32(a, b) => b >> (a & 31);
    v_ashrrev_i32(a, b) => ((b as i32) >> (a & 31)) as u32;
    v_min_i32(a, b) => (a as i32).min(b as i32) as u32;
    v_max_i32(a, b) => (a as i32).max(b as i32) as u32;
    v_min_u32(a, b) => a.min(b);
    v_max_u32(a, b) => a.max(b);
    v_mul_lo_u32(a, b) => a.wrapping_mul(b);
    v_mul_hi_u32(a, b) => ((u64::from(a) * u64::from(b)) >> 32) as u32;
    v_mul_hi_i32(a, b) => ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32;
    v_mul_u32_u24(a, b) => (u24(a) * u24(b)) as u32;
    v_mul_hi_u32_u24(a, b) => ((u24(a) * u24(b)) >> 32) as u32;
    v_mul_i32_i24(a, b) => (i24(a) * i24(b)) as u32;
    v_mul_hi_i32_i24(a, b) => ((i24(a) * i24(b)) >> 32) as u32;
    v_bcnt_u32_b32(a, b) => a.count_ones().wrapping_add(b);
    v_bfm_b32(a, b) => (((1u64 << (a & 31)) - 1) as u32) << (b & 31);
    v_mad_u32_u24(a, b, c) => ((u24(a) * u24(b)) as u32).wrapping_add(c);
    v_mad_i32_i24(a, b, c) => ((i24(a) * i24(b)) as u32).wrapping_add(c);
    v_bfe_u32(a, b, c) => bfe(a, b, c, false);
    v_bfe_i32(a, b, c) => bfe(a, b, c, true);
    v_bfi_b32(a, b, c) => (a & b) | (!a & c);
    v_min3_i32(a, b, c) => (a as i32).min(b as i32).min(c as i32) as u32;
    v_max3_i32(a, b, c) => (a as i32).max(b as i32).max(c as i32) as u32;
    v_med3_i32(a, b, c) => med3_i(a as i32, b as i32, c as i32) as u32;
    v_min3_u32(a, b, c) => a.min(b).min(c);
    v_max3_u32(a, b, c) => a.max(b).max(c);
    v_med3_u32(a, b, c) => med3_u(a, b, c);
    v_lshl_add_u32(a, b, c) => (a << (b & 31)).wrapping_add(c);
    v_add_lshl_u32(a, b, c) => a.wrapping_add(b) << (c & 31);
    v_add3_u32(a, b, c) => a.wrapping_add(b).wrapping_add(c);
    v_lshl_or_b32(a, b, c) => (a << (b & 31)) | c;
    v_and_or_b32(a, b, c) => (a & b) | c;
    v_or3_b32(a, b, c) => a | b | c;
    v_xad_u32(a, b, c) => (a ^ b).wrapping_add(c);
    v_perm_b32(a, b, c) => perm(a, b, c);
    v_sad_u8(a, b, c) => sad_u8(a, b, c);
    v_sad_u16(a, b, c) => c.wrapping_add(u32::from((a as u16).abs_diff(b as u16))).wrapping_add(u32::from(((a >> 16) as u16).abs_diff((b >> 16) as u16)));
    v_sad_u32(a, b, c) => a.abs_diff(b).wrapping_add(c);
    v_cvt_pk_u16_u32(a, b) => (a.min(0xFFFF)) | b.min(0xFFFF) << 16;
    v_cvt_pk_i16_i32(a, b) => ((a as i32).clamp(-32768, 32767) as u32 & 0xFFFF) | ((b as i32).clamp(-32768, 32767) as u32) << 16;
    v_pack_b32_f16(a, b) => (a & 0xFFFF) | b << 16;
}

vop! { U16, u16_src -> write_u16, float: false;
    v_mul_lo_u16(a, b) => a.wrapping_mul(b);
    v_lshlrev_b16(a, b) => b << (a & 15);
    v_lshrrev_b16(a, b) => b >> (a & 15);
    v_ashrrev_i16(a, b) => ((b as i16) >> (a & 15)) as u16;
    v_max_u16(a, b) => a.max(b);
    v_min_u16(a, b) => a.min(b);
    v_max_i16(a, b) => (a as i16).max(b as i16) as u16;
    v_min_i16(a, b) => (a as i16).min(b as i16) as u16;
    v_add_i16(a, b) => (a as i16).wrapping_add(b as i16) as u16;
    v_sub_i16(a, b) => (a as i16).wrapping_sub(b as i16) as u16;
    v_mad_u16(a, b, c) => a.wrapping_mul(b).wrapping_add(c);
    v_mad_i16(a, b, c) => (a as i16).wrapping_mul(b as i16).wrapping_add(c as i16) as u16;
    v_mad_legacy_u16(a, b, c) => a.wrapping_mul(b).wrapping_add(c);
    v_mad_legacy_i16(a, b, c) => (a as i16).wrapping_mul(b as i16).wrapping_add(c as i16) as u16;
    v_max3_u16(a, b, c) => a.max(b).max(c);
    v_min3_u16(a, b, c) => a.min(b).min(c);
    v_med3_u16(a, b, c) => a.max(b).min(a.min(b).max(c));
    v_max3_i16(a, b, c) => (a as i16).max(b as i16).max(c as i16) as u16;
    v_min3_i16(a, b, c) => (a as i16).min(b as i16).min(c as i16) as u16;
    v_med3_i16(a, b, c) => { let (a, b, c) = (a as i16, b as i16, c as i16); a.max(b).min(a.min(b).max(c)) as u16 };
}

// ---------------------------------------------------------------------------
// Conversions between float widths and to integers
// ---------------------------------------------------------------------------

/// f32 → i32 as the hardware converts: truncate, saturate, NaN → 0.
fn f32_to_i32(x: f32) -> u32 {
    (x as i32) as u32
}

fn f32_to_u32(x: f32) -> u32 {
    x as u32
}

fn v_cvt_i32_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    write(w, i, &w.size().map(|l| f32_to_i32(a[l])))
}

fn v_cvt_u32_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    write(w, i, &w.size().map(|l| f32_to_u32(a[l])))
}

fn v_cvt_rpi_i32_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    write(w, i, &w.size().map(|l| f32_to_i32((a[l] + 0.5).floor())))
}

fn v_cvt_flr_i32_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    write(w, i, &w.size().map(|l| f32_to_i32(a[l].floor())))
}

fn v_cvt_f16_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    let h: Lanes = w
        .size()
        .map(|l| u32::from(f32_to_f16(omod_clamp_f32(i, a[l]))));
    write_b16(w, i, h)
}

fn v_cvt_f32_f16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f16_src(w, i, 0, &mut a_buf)?;
    write_f32(w, i, *a)
}

fn v_cvt_f32_f64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f64_src(w, i, 0, &mut a_buf)?;
    write_f32(w, i, w.size().map(|l| a[l] as f32))
}

fn v_cvt_f64_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    write_f64(w, i, w.size().map(|l| f64::from(a[l])))
}

fn v_cvt_i32_f64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f64_src(w, i, 0, &mut a_buf)?;
    write(w, i, &w.size().map(|l| (a[l] as i32) as u32))
}

fn v_cvt_u32_f64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f64_src(w, i, 0, &mut a_buf)?;
    write(w, i, &w.size().map(|l| a[l] as u32))
}

fn v_cvt_f64_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u32_src(w, i, 0, &mut a_buf)?;
    write_f64(w, i, w.size().map(|l| f64::from(a[l] as i32)))
}

fn v_cvt_f64_u32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u32_src(w, i, 0, &mut a_buf)?;
    write_f64(w, i, w.size().map(|l| f64::from(a[l])))
}

fn v_cvt_f16_u16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u16_src(w, i, 0, &mut a_buf)?;
    write_f16(w, i, w.size().map(|l| f32::from(a[l])))
}

fn v_cvt_f16_i16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u16_src(w, i, 0, &mut a_buf)?;
    write_f16(w, i, w.size().map(|l| f32::from(a[l] as i16)))
}

fn v_cvt_u16_f16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f16_src(w, i, 0, &mut a_buf)?;
    write_b16(w, i, w.size().map(|l| u32::from(a[l] as u16)))
}

fn v_cvt_i16_f16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f16_src(w, i, 0, &mut a_buf)?;
    write_b16(w, i, w.size().map(|l| u32::from(a[l] as i16 as u16)))
}

/// `v_cvt_pkrtz_f16_f32`: two f32 to packed f16, rounding toward zero.
fn v_cvt_pkrtz_f16_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = f32_src(w, i, 0, &mut a_buf)?;
    let mut b_buf = None;
    let b = f32_src(w, i, 1, &mut b_buf)?;
    write(
        w,
        i,
        &w.size()
            .map(|l| u32::from(f32_to_f16_rtz(a[l])) | u32::from(f32_to_f16_rtz(b[l])) << 16),
    )
}

fn f32_to_f16_rtz(x: f32) -> u16 {
    let r = f32_to_f16(x);
    // If rounding went away from zero, step back one ulp toward zero
    // (never past the largest finite value for finite inputs).
    if x.is_nan() || x.is_infinite() {
        return r;
    }
    if f16_to_f32(r).abs() > x.abs() {
        if r & 0x7FFF == 0x7C00 {
            (r & 0x8000) | 0x7BFF
        } else {
            r - 1
        }
    } else {
        r
    }
}

const CONVERSIONS: &[(&str, Exec)] = &[
    ("v_cvt_i32_f32", v_cvt_i32_f32),
    ("v_cvt_u32_f32", v_cvt_u32_f32),
    ("v_cvt_rpi_i32_f32", v_cvt_rpi_i32_f32),
    ("v_cvt_flr_i32_f32", v_cvt_flr_i32_f32),
    ("v_cvt_f16_f32", v_cvt_f16_f32),
    ("v_cvt_f32_f16", v_cvt_f32_f16),
    ("v_cvt_f32_f64", v_cvt_f32_f64),
    ("v_cvt_f64_f32", v_cvt_f64_f32),
    ("v_cvt_i32_f64", v_cvt_i32_f64),
    ("v_cvt_u32_f64", v_cvt_u32_f64),
    ("v_cvt_f64_i32", v_cvt_f64_i32),
    ("v_cvt_f64_u32", v_cvt_f64_u32),
    ("v_cvt_f16_u16", v_cvt_f16_u16),
    ("v_cvt_f16_i16", v_cvt_f16_i16),
    ("v_cvt_u16_f16", v_cvt_u16_f16),
    ("v_cvt_i16_f16", v_cvt_i16_f16),
    ("v_cvt_pkrtz_f16_f32", v_cvt_pkrtz_f16_f32),
    ("v_ldexp_f32", v_ldexp_f32),
    ("v_ldexp_f64", v_ldexp_f64),
    ("v_frexp_exp_i32_f32", v_frexp_exp_i32_f32),
    ("v_frexp_exp_i32_f64", v_frexp_exp_i32_f64),
];

// ---------------------------------------------------------------------------
// Carries, 64-bit integer ops, selects
// ---------------------------------------------------------------------------

/// Writes a per-lane condition to the scalar destination `sdst` (VCC for
/// the short forms): bits of inactive lanes are 0.
fn write_sdst(w: &mut Wave, sdst: u8, bits: u64) {
    w.set_lane_mask(sdst, bits & w.exec());
}

macro_rules! carry_ops {
    ($($name:ident($carry_in:expr) => |$a:ident, $b:ident, $c:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let mut a_buf = None;
            let $a = u32_src(w, i, 0, &mut a_buf)?;
            let mut b_buf = None;
            let $b = u32_src(w, i, 1, &mut b_buf)?;
            let cin: u64 = if $carry_in { w.lane_mask(i.src[2])? } else { 0 };
            let mut out = [0u32; LANES];
            let mut carry = 0u64;
            // The wave's lanes only: the others are never in EXEC.
            for l in 0..w.size().lanes() {
                let ($a, $b, $c) = (u64::from($a[l]), u64::from($b[l]), cin >> l & 1);
                let (d, co): (u64, bool) = $body;
                out[l] = d as u32;
                carry |= u64::from(co) << l;
            }
            if i.mods.clamp {
                // Unsigned saturation instead of wrap-around.
                for l in 0..LANES {
                    if carry >> l & 1 != 0 {
                        out[l] = if stringify!($name).contains("add") { u32::MAX } else { 0 };
                    }
                }
            }
            write(w, i, &out)?;
            write_sdst(w, i.sdst, carry);
            Ok(())
        })*
        const CARRY: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

carry_ops! {
    v_add_co_u32(false) => |a, b, _c| { let s = a + b; (s, s >> 32 != 0) };
    v_sub_co_u32(false) => |a, b, _c| (a.wrapping_sub(b), b > a);
    v_subrev_co_u32(false) => |a, b, _c| (b.wrapping_sub(a), a > b);
    v_addc_co_u32(true) => |a, b, c| { let s = a + b + c; (s, s >> 32 != 0) };
    v_subb_co_u32(true) => |a, b, c| (a.wrapping_sub(b).wrapping_sub(c), b + c > a);
    v_subbrev_co_u32(true) => |a, b, c| (b.wrapping_sub(a).wrapping_sub(c), a + c > b);
}

/// `v_{add,sub,subrev}_u32` and `_u16`: the exact result wraps, or with
/// VOP3's CLAMP saturates to [0, max] ("Supports saturation (unsigned
/// 32-bit integer domain)", and the 16-bit alike: CDNA3 ISA, VOP2
/// instructions). LLVM selects `v_sub_u32 ... clamp` for `usub.sat`.
macro_rules! unsigned_saturating {
    ($($name:ident($src:ident -> $write:ident, $max:expr) => |$a:ident, $b:ident| $exact:expr;)*) => {$(
        fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let (mut a, mut b) = (None, None);
            let (a, b) = ($src(w, i, 0, &mut a)?, $src(w, i, 1, &mut b)?);
            let out = w.size().map(|l| {
                let ($a, $b) = (i64::from(a[l]), i64::from(b[l]));
                let exact: i64 = $exact;
                if i.mods.clamp {
                    exact.clamp(0, $max) as _
                } else {
                    exact as _
                }
            });
            $write(w, i, out)
        }
    )*
    const SATURATING: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

unsigned_saturating! {
    v_add_u32(u32_src -> write_u32, i64::from(u32::MAX)) => |a, b| a + b;
    v_sub_u32(u32_src -> write_u32, i64::from(u32::MAX)) => |a, b| a - b;
    v_subrev_u32(u32_src -> write_u32, i64::from(u32::MAX)) => |a, b| b - a;
    v_add_u16(u16_src -> write_u16, i64::from(u16::MAX)) => |a, b| a + b;
    v_sub_u16(u16_src -> write_u16, i64::from(u16::MAX)) => |a, b| a - b;
    v_subrev_u16(u16_src -> write_u16, i64::from(u16::MAX)) => |a, b| b - a;
}

/// GFX11+ true16 moves and bit operations on 16-bit halves (RDNA3 ISA,
/// V_MOV_B16, V_AND_B16, ...): sources by OP_SEL, results by OP_SEL[3]
/// with the other half kept ([`flag::T16`]).
macro_rules! bits16 {
    ($($name:ident($($s:ident),*) => $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let mut k = 0;
            $( let mut $s = None;
               let $s = u16_src(w, i, { let n = k; k += 1; n }, &mut $s)?; )*
            let _ = k;
            let out: [u16; LANES] = w.size().map(|l| { $( let $s = $s[l]; )* $body });
            write_u16(w, i, out)
        })*
        const BITS16: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

bits16! {
    v_mov_b16(a) => a;
    v_not_b16(a) => !a;
    v_and_b16(a, b) => a & b;
    v_or_b16(a, b) => a | b;
    v_xor_b16(a, b) => a ^ b;
}

/// `v_cndmask_b16` (GFX11+): a 16-bit select by the lane mask in SRC2.
fn v_cndmask_b16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u16_src(w, i, 0, &mut a_buf)?;
    let mut b_buf = None;
    let b = u16_src(w, i, 1, &mut b_buf)?;
    let m = w.lane_mask(i.src[2])?;
    write_u16(
        w,
        i,
        w.size().map(|l| if m >> l & 1 != 0 { b[l] } else { a[l] }),
    )
}

/// `v_cvt_u32_u16` / `v_cvt_i32_i16` (GFX11+): a 16-bit half widened.
fn v_cvt_u32_u16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u16_src(w, i, 0, &mut a_buf)?;
    write(w, i, &a.map(u32::from))
}

fn v_cvt_i32_i16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u16_src(w, i, 0, &mut a_buf)?;
    write(w, i, &a.map(|h| h as i16 as i32 as u32))
}

/// `v_add_i32`/`v_sub_i32` (VOP3, gfx9): wrap, or saturate with clamp.
fn v_add_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u32_src(w, i, 0, &mut a_buf)?;
    let mut b_buf = None;
    let b = u32_src(w, i, 1, &mut b_buf)?;
    let out: Lanes = w.size().map(|l| {
        let (a, b) = (a[l] as i32, b[l] as i32);
        (if i.mods.clamp {
            a.saturating_add(b)
        } else {
            a.wrapping_add(b)
        }) as u32
    });
    write(w, i, &out)
}

fn v_sub_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u32_src(w, i, 0, &mut a_buf)?;
    let mut b_buf = None;
    let b = u32_src(w, i, 1, &mut b_buf)?;
    let out: Lanes = w.size().map(|l| {
        let (a, b) = (a[l] as i32, b[l] as i32);
        (if i.mods.clamp {
            a.saturating_sub(b)
        } else {
            a.wrapping_sub(b)
        }) as u32
    });
    write(w, i, &out)
}

fn v_cndmask_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    // Float modifiers apply (VOP3 abs/neg on src0/src1 as f32 bits).
    let mut a_buf = None;
    let a = f32_src_bits(w, i, 0, &mut a_buf)?;
    let mut b_buf = None;
    let b = f32_src_bits(w, i, 1, &mut b_buf)?;
    let m = w.lane_mask(i.src[2])?;
    write(
        w,
        i,
        &w.size().map(|l| if m >> l & 1 != 0 { b[l] } else { a[l] }),
    )
}

/// Raw 32-bit source with abs/neg applied to the sign bit (no flushing).
fn f32_src_bits<'a>(
    w: &'a Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<Lanes>,
) -> Result<&'a Lanes, Fault> {
    let abs = i.mods.abs >> n & 1 != 0;
    let neg = i.mods.neg >> n & 1 != 0;
    if !abs && !neg {
        return w.lanes_in(i, n, Ty::B32, buf);
    }
    let raw = w.lanes_in(i, n, Ty::B32, buf)?;
    let out = w.size().map(|l| {
        let x = if abs { raw[l] & 0x7FFF_FFFF } else { raw[l] };
        if neg { x ^ 0x8000_0000 } else { x }
    });
    Ok(buf.insert(out))
}

fn v_mad_u64_u32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u32_src(w, i, 0, &mut a_buf)?;
    let mut b_buf = None;
    let b = u32_src(w, i, 1, &mut b_buf)?;
    let mut c_buf = None;
    let c = u64_src(w, i, 2, Ty::U64, &mut c_buf)?;
    let mut carry = 0u64;
    let out: [u64; LANES] = w.size().map(|l| {
        let p = u128::from(a[l]) * u128::from(b[l]) + u128::from(c[l]);
        carry |= u64::from(p >> 64 != 0) << l;
        p as u64
    });
    write64(w, i, &out)?;
    write_sdst(w, i.sdst, carry);
    Ok(())
}

fn v_mad_i64_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u32_src(w, i, 0, &mut a_buf)?;
    let mut b_buf = None;
    let b = u32_src(w, i, 1, &mut b_buf)?;
    let mut c_buf = None;
    let c = u64_src(w, i, 2, Ty::I64, &mut c_buf)?;
    let mut carry = 0u64;
    let out: [u64; LANES] = w.size().map(|l| {
        let p = i128::from(a[l] as i32) * i128::from(b[l] as i32) + i128::from(c[l] as i64);
        carry |= u64::from(p != i128::from(p as i64)) << l;
        p as u64
    });
    write64(w, i, &out)?;
    write_sdst(w, i.sdst, carry);
    Ok(())
}

macro_rules! vop_64 {
    ($($name:ident($ta:ident, $tb:ident) => |$a:ident, $b:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let (mut $a, mut $b) = (None, None);
            let $a = vop64_src(w, i, 0, Ty::$ta, &mut $a)?;
            let $b = vop64_src(w, i, 1, Ty::$tb, &mut $b)?;
            let out: [u64; LANES] = w.size().map(|l| { let ($a, $b) = ($a[l], $b[l]); $body });
            write64(w, i, &out)
        })*
        const OPS64: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

/// A source that is 32-bit (`B32`, zero-extended) or 64-bit.
fn vop64_src<'a>(
    w: &Wave,
    i: &Inst,
    n: usize,
    ty: Ty,
    buf: &'a mut Option<[u64; LANES]>,
) -> Result<&'a [u64; LANES], Fault> {
    if ty == Ty::B32 {
        let mut tmp = None;
        let v = w.lanes_in(i, n, ty, &mut tmp)?;
        Ok(buf.insert(w.size().map(|l| u64::from(v[l]))))
    } else {
        u64_src(w, i, n, ty, buf)
    }
}

vop_64! {
    v_lshlrev_b64(B32, U64) => |a, b| b << (a & 63);
    v_lshrrev_b64(B32, U64) => |a, b| b >> (a & 63);
    v_ashrrev_i64(B32, I64) => |a, b| ((b as i64) >> (a & 63)) as u64;
    v_mov_b64(U64, U64) => |a, b| { let _ = b; a };
}

fn v_lshl_add_u64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut a_buf = None;
    let a = u64_src(w, i, 0, Ty::U64, &mut a_buf)?;
    let mut b_buf = None;
    let b = u32_src(w, i, 1, &mut b_buf)?;
    let mut c_buf = None;
    let c = u64_src(w, i, 2, Ty::U64, &mut c_buf)?;
    write64(
        w,
        i,
        &w.size().map(|l| (a[l] << (b[l] & 7)).wrapping_add(c[l])),
    )
}

/// `v_mbcnt_lo/hi`: count of set mask bits below the lane, plus src1.
fn v_mbcnt_lo_u32_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut m_buf = None;
    let m = u32_src(w, i, 0, &mut m_buf)?;
    let mut c_buf = None;
    let c = u32_src(w, i, 1, &mut c_buf)?;
    write(
        w,
        i,
        &w.size().map(|l| {
            let below = if l >= 32 { u32::MAX } else { (1u32 << l) - 1 };
            (m[l] & below).count_ones().wrapping_add(c[l])
        }),
    )
}

fn v_mbcnt_hi_u32_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let mut m_buf = None;
    let m = u32_src(w, i, 0, &mut m_buf)?;
    let mut c_buf = None;
    let c = u32_src(w, i, 1, &mut c_buf)?;
    write(
        w,
        i,
        &w.size().map(|l| {
            let below = if l < 32 {
                0
            } else if l == 63 {
                u32::MAX >> 1
            } else {
                (1u32 << (l - 32)) - 1
            };
            (m[l] & below).count_ones().wrapping_add(c[l])
        }),
    )
}

// ---------------------------------------------------------------------------
// Lane access: readlane, writelane, readfirstlane; register moves
// ---------------------------------------------------------------------------

fn v_readlane_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let lane = w.lane_select(w.s32_of(i.src[1], Ty::B32)?);
    let Src::Vgpr(r) = i.src[0] else {
        return Err(Fault::Operand { code: 0 });
    };
    let v = w.vreg(r, false)?[lane];
    // VOP3 encodes the SGPR destination in VDST.
    w.set_s32(i.vdst as u8, v);
    Ok(())
}

fn v_writelane_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let v = w.s32_of(i.src[0], Ty::B32)?;
    let lane = w.lane_select(w.s32_of(i.src[1], Ty::B32)?);
    w.vreg_mut(i.vdst, false)?[lane] = v;
    Ok(())
}

fn v_readfirstlane_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let exec = w.exec();
    let lane = if exec == 0 {
        w.lane_base()
    } else {
        exec.trailing_zeros() as usize
    };
    let v = match i.src[0] {
        Src::Vgpr(r) => w.vreg(r, false)?[lane],
        s => w.s32_of(s, Ty::B32)?,
    };
    w.set_s32(i.vdst as u8, v);
    Ok(())
}

fn v_nop(_: &mut Wave, _: &Inst, _: &mut Ctx<'_>) -> R {
    Ok(())
}

fn v_swap_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let Src::Vgpr(s) = i.src[0] else {
        return Err(Fault::Operand { code: 0 });
    };
    let exec = w.exec();
    let a = *w.vreg(i.vdst, false)?;
    let b = *w.vreg(s, false)?;
    w.write_lanes(i.vdst, &b, exec)?;
    w.write_lanes(s, &a, exec)
}

const OTHER: &[(&str, Exec)] = &[
    ("v_cndmask_b16", v_cndmask_b16),
    ("v_cvt_u32_u16", v_cvt_u32_u16),
    ("v_alignbit_b32", v_alignbit_b32),
    ("v_alignbyte_b32", v_alignbyte_b32),
    ("v_cvt_i32_i16", v_cvt_i32_i16),
    ("v_add_i32", v_add_i32),
    ("v_sub_i32", v_sub_i32),
    ("v_cndmask_b32", v_cndmask_b32),
    ("v_mad_u64_u32", v_mad_u64_u32),
    ("v_mad_i64_i32", v_mad_i64_i32),
    ("v_lshl_add_u64", v_lshl_add_u64),
    ("v_mbcnt_lo_u32_b32", v_mbcnt_lo_u32_b32),
    ("v_mbcnt_hi_u32_b32", v_mbcnt_hi_u32_b32),
    ("v_readlane_b32", v_readlane_b32),
    ("v_writelane_b32", v_writelane_b32),
    ("v_readfirstlane_b32", v_readfirstlane_b32),
    ("v_nop", v_nop),
    ("v_swap_b32", v_swap_b32),
];

// ---------------------------------------------------------------------------
// Compares (VOPC and VOP3-encoded VOPC)
// ---------------------------------------------------------------------------

/// Writes a compare result: the destination SGPR pair (VCC for VOPC), and
/// EXEC too for `v_cmpx` (gfx9 writes both).
fn compare_result(w: &mut Wave, i: &Inst, bits: u64, x: bool) {
    let bits = bits & w.exec();
    w.set_lane_mask(i.sdst, bits);
    if x {
        w.set_exec(bits);
    }
}

// Compare sources beyond the plain ones (`f32_src`, `u32_src`, ...): the
// signed views of a register's bits, and the 64-bit integers.

fn cmp_i32<'a>(
    w: &'a Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<Lanes>,
) -> Result<&'a [i32; LANES], Fault> {
    let raw: &Lanes = w.lanes_in(i, n, Ty::B32, buf)?;
    Ok(zerocopy::transmute_ref!(raw))
}

fn cmp_i16<'a>(
    w: &Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<[u16; LANES]>,
) -> Result<&'a [i16; LANES], Fault> {
    let raw: &[u16; LANES] = u16_src(w, i, n, buf)?;
    Ok(zerocopy::transmute_ref!(raw))
}

fn cmp_i64<'a>(
    w: &Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<[u64; LANES]>,
) -> Result<&'a [i64; LANES], Fault> {
    let raw = u64_src(w, i, n, Ty::I64, buf)?;
    Ok(zerocopy::transmute_ref!(raw))
}

fn cmp_u64<'a>(
    w: &Wave,
    i: &Inst,
    n: usize,
    buf: &'a mut Option<[u64; LANES]>,
) -> Result<&'a [u64; LANES], Fault> {
    u64_src(w, i, n, Ty::U64, buf)
}

/// Whether `a` and `b` are ordered one of the ways in `any` (false when
/// either is NaN): the ordered compares, and negated, the unordered ones.
fn ord<T: PartialOrd>(a: T, b: T, any: &[std::cmp::Ordering]) -> bool {
    a.partial_cmp(&b).is_some_and(|o| any.contains(&o))
}

/// Float compares in all 16 flavours for one type.
macro_rules! float_cmps {
    ($table:ident, $src:ident: $f:ident $xf:ident, $lt:ident $xlt:ident, $eq:ident $xeq:ident, $le:ident $xle:ident,
     $gt:ident $xgt:ident, $lg:ident $xlg:ident, $ge:ident $xge:ident, $o:ident $xo:ident,
     $u:ident $xu:ident, $nge:ident $xnge:ident, $nlg:ident $xnlg:ident, $ngt:ident $xngt:ident,
     $nle:ident $xnle:ident, $neq:ident $xneq:ident, $nlt:ident $xnlt:ident, $tru:ident $xtru:ident) => {
        cmp_table! { $table, $src:
            $f, $xf => |a, b| { let _ = (a, b); false };
            $lt, $xlt => |a, b| ord(a, b, &[Less]);
            $eq, $xeq => |a, b| ord(a, b, &[Equal]);
            $le, $xle => |a, b| ord(a, b, &[Less, Equal]);
            $gt, $xgt => |a, b| ord(a, b, &[Greater]);
            $lg, $xlg => |a, b| ord(a, b, &[Less, Greater]);
            $ge, $xge => |a, b| ord(a, b, &[Greater, Equal]);
            $o, $xo => |a, b| a.partial_cmp(&b).is_some();
            $u, $xu => |a, b| a.partial_cmp(&b).is_none();
            $nge, $xnge => |a, b| !ord(a, b, &[Greater, Equal]);
            $nlg, $xnlg => |a, b| !ord(a, b, &[Less, Greater]);
            $ngt, $xngt => |a, b| !ord(a, b, &[Greater]);
            $nle, $xnle => |a, b| !ord(a, b, &[Less, Equal]);
            $neq, $xneq => |a, b| !ord(a, b, &[Equal]);
            $nlt, $xnlt => |a, b| !ord(a, b, &[Less]);
            $tru, $xtru => |a, b| { let _ = (a, b); true };
        }
    };
}

macro_rules! int_cmps {
    ($table:ident, $src:ident: $f:ident $xf:ident, $lt:ident $xlt:ident, $eq:ident $xeq:ident, $le:ident $xle:ident,
     $gt:ident $xgt:ident, $ne:ident $xne:ident, $ge:ident $xge:ident, $t:ident $xt:ident) => {
        cmp_table! { $table, $src:
            $f, $xf => |a, b| { let _ = (a, b); false };
            $lt, $xlt => |a, b| a < b;
            $eq, $xeq => |a, b| a == b;
            $le, $xle => |a, b| a <= b;
            $gt, $xgt => |a, b| a > b;
            $ne, $xne => |a, b| a != b;
            $ge, $xge => |a, b| a >= b;
            $t, $xt => |a, b| { let _ = (a, b); true };
        }
    };
}

/// Defines compare executors (plain and `x`) and their table.
macro_rules! cmp_table {
    ($table:ident, $src:ident: $($name:ident, $xname:ident => |$a:ident, $b:ident| $body:expr;)*) => {
        $(
            fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
                let (mut $a, mut $b) = (None, None);
                let ($a, $b) = ($src(w, i, 0, &mut $a)?, $src(w, i, 1, &mut $b)?);
                let bits = (0..w.size().lanes()).fold(0u64, |m, l| { let ($a, $b) = ($a[l], $b[l]); m | u64::from($body) << l });
                compare_result(w, i, bits, false);
                Ok(())
            }
            fn $xname(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
                let (mut $a, mut $b) = (None, None);
                let ($a, $b) = ($src(w, i, 0, &mut $a)?, $src(w, i, 1, &mut $b)?);
                let bits = (0..w.size().lanes()).fold(0u64, |m, l| { let ($a, $b) = ($a[l], $b[l]); m | u64::from($body) << l });
                compare_result(w, i, bits, true);
                Ok(())
            }
        )*
        const $table: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec), (stringify!($xname), $xname as Exec)),*];
    };
}

float_cmps!(CMP_F32, f32_src: v_cmp_f_f32 v_cmpx_f_f32, v_cmp_lt_f32 v_cmpx_lt_f32, v_cmp_eq_f32 v_cmpx_eq_f32,
    v_cmp_le_f32 v_cmpx_le_f32, v_cmp_gt_f32 v_cmpx_gt_f32, v_cmp_lg_f32 v_cmpx_lg_f32,
    v_cmp_ge_f32 v_cmpx_ge_f32, v_cmp_o_f32 v_cmpx_o_f32, v_cmp_u_f32 v_cmpx_u_f32,
    v_cmp_nge_f32 v_cmpx_nge_f32, v_cmp_nlg_f32 v_cmpx_nlg_f32, v_cmp_ngt_f32 v_cmpx_ngt_f32,
    v_cmp_nle_f32 v_cmpx_nle_f32, v_cmp_neq_f32 v_cmpx_neq_f32, v_cmp_nlt_f32 v_cmpx_nlt_f32,
    v_cmp_tru_f32 v_cmpx_tru_f32);
float_cmps!(CMP_F64, f64_src: v_cmp_f_f64 v_cmpx_f_f64, v_cmp_lt_f64 v_cmpx_lt_f64, v_cmp_eq_f64 v_cmpx_eq_f64,
    v_cmp_le_f64 v_cmpx_le_f64, v_cmp_gt_f64 v_cmpx_gt_f64, v_cmp_lg_f64 v_cmpx_lg_f64,
    v_cmp_ge_f64 v_cmpx_ge_f64, v_cmp_o_f64 v_cmpx_o_f64, v_cmp_u_f64 v_cmpx_u_f64,
    v_cmp_nge_f64 v_cmpx_nge_f64, v_cmp_nlg_f64 v_cmpx_nlg_f64, v_cmp_ngt_f64 v_cmpx_ngt_f64,
    v_cmp_nle_f64 v_cmpx_nle_f64, v_cmp_neq_f64 v_cmpx_neq_f64, v_cmp_nlt_f64 v_cmpx_nlt_f64,
    v_cmp_tru_f64 v_cmpx_tru_f64);
float_cmps!(CMP_F16, f16_src: v_cmp_f_f16 v_cmpx_f_f16, v_cmp_lt_f16 v_cmpx_lt_f16, v_cmp_eq_f16 v_cmpx_eq_f16,
    v_cmp_le_f16 v_cmpx_le_f16, v_cmp_gt_f16 v_cmpx_gt_f16, v_cmp_lg_f16 v_cmpx_lg_f16,
    v_cmp_ge_f16 v_cmpx_ge_f16, v_cmp_o_f16 v_cmpx_o_f16, v_cmp_u_f16 v_cmpx_u_f16,
    v_cmp_nge_f16 v_cmpx_nge_f16, v_cmp_nlg_f16 v_cmpx_nlg_f16, v_cmp_ngt_f16 v_cmpx_ngt_f16,
    v_cmp_nle_f16 v_cmpx_nle_f16, v_cmp_neq_f16 v_cmpx_neq_f16, v_cmp_nlt_f16 v_cmpx_nlt_f16,
    v_cmp_tru_f16 v_cmpx_tru_f16);
int_cmps!(CMP_I32, cmp_i32: v_cmp_f_i32 v_cmpx_f_i32, v_cmp_lt_i32 v_cmpx_lt_i32, v_cmp_eq_i32 v_cmpx_eq_i32,
    v_cmp_le_i32 v_cmpx_le_i32, v_cmp_gt_i32 v_cmpx_gt_i32, v_cmp_ne_i32 v_cmpx_ne_i32,
    v_cmp_ge_i32 v_cmpx_ge_i32, v_cmp_t_i32 v_cmpx_t_i32);
int_cmps!(CMP_U32, u32_src: v_cmp_f_u32 v_cmpx_f_u32, v_cmp_lt_u32 v_cmpx_lt_u32, v_cmp_eq_u32 v_cmpx_eq_u32,
    v_cmp_le_u32 v_cmpx_le_u32, v_cmp_gt_u32 v_cmpx_gt_u32, v_cmp_ne_u32 v_cmpx_ne_u32,
    v_cmp_ge_u32 v_cmpx_ge_u32, v_cmp_t_u32 v_cmpx_t_u32);
int_cmps!(CMP_I16, cmp_i16: v_cmp_f_i16 v_cmpx_f_i16, v_cmp_lt_i16 v_cmpx_lt_i16, v_cmp_eq_i16 v_cmpx_eq_i16,
    v_cmp_le_i16 v_cmpx_le_i16, v_cmp_gt_i16 v_cmpx_gt_i16, v_cmp_ne_i16 v_cmpx_ne_i16,
    v_cmp_ge_i16 v_cmpx_ge_i16, v_cmp_t_i16 v_cmpx_t_i16);
int_cmps!(CMP_U16, u16_src: v_cmp_f_u16 v_cmpx_f_u16, v_cmp_lt_u16 v_cmpx_lt_u16, v_cmp_eq_u16 v_cmpx_eq_u16,
    v_cmp_le_u16 v_cmpx_le_u16, v_cmp_gt_u16 v_cmpx_gt_u16, v_cmp_ne_u16 v_cmpx_ne_u16,
    v_cmp_ge_u16 v_cmpx_ge_u16, v_cmp_t_u16 v_cmpx_t_u16);
int_cmps!(CMP_I64, cmp_i64: v_cmp_f_i64 v_cmpx_f_i64, v_cmp_lt_i64 v_cmpx_lt_i64, v_cmp_eq_i64 v_cmpx_eq_i64,
    v_cmp_le_i64 v_cmpx_le_i64, v_cmp_gt_i64 v_cmpx_gt_i64, v_cmp_ne_i64 v_cmpx_ne_i64,
    v_cmp_ge_i64 v_cmpx_ge_i64, v_cmp_t_i64 v_cmpx_t_i64);
int_cmps!(CMP_U64, cmp_u64: v_cmp_f_u64 v_cmpx_f_u64, v_cmp_lt_u64 v_cmpx_lt_u64, v_cmp_eq_u64 v_cmpx_eq_u64,
    v_cmp_le_u64 v_cmpx_le_u64, v_cmp_gt_u64 v_cmpx_gt_u64, v_cmp_ne_u64 v_cmpx_ne_u64,
    v_cmp_ge_u64 v_cmpx_ge_u64, v_cmp_t_u64 v_cmpx_t_u64);

/// `v_cmp_class_*`: src1's bits select IEEE classes of src0 (CDNA3 ISA,
/// "V_CMP_CLASS"): 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0,
/// 6 +0, 7 +denormal, 8 +normal, 9 +inf.
fn class_of(x: f64, is_snan: bool, is_denorm: bool) -> u32 {
    if x.is_nan() {
        return if is_snan { 0 } else { 1 };
    }
    let neg = x.is_sign_negative();
    if x.is_infinite() {
        if neg { 2 } else { 9 }
    } else if x == 0.0 {
        if neg { 5 } else { 6 }
    } else if is_denorm {
        if neg { 4 } else { 7 }
    } else if neg {
        3
    } else {
        8
    }
}

fn class_bits(w: &Wave, i: &Inst) -> Result<u64, Fault> {
    let mask = w.lanes(i, 1, Ty::B32)?;
    let mn = i.mnemonic;
    let mut bits = 0u64;
    if mn.ends_with("f64") {
        let mut a_buf = None;
        let a = f64_src(w, i, 0, &mut a_buf)?;
        for l in 0..LANES {
            let x = a[l];
            let b = x.to_bits();
            let snan = x.is_nan() && b & (1 << 51) == 0;
            let c = class_of(x, snan, x.is_subnormal());
            bits |= u64::from(mask[l] >> c & 1) << l;
        }
    } else if mn.ends_with("f16") {
        let mut raw_buf = None;
        let raw = u16_src(w, i, 0, &mut raw_buf)?;
        for l in 0..LANES {
            let mut h = raw[l];
            if i.mods.abs & 1 != 0 {
                h &= 0x7FFF;
            }
            if i.mods.neg & 1 != 0 {
                h ^= 0x8000;
            }
            let x = f64::from(f16_to_f32(h));
            let snan = x.is_nan() && h & 0x200 == 0;
            let denorm = h & 0x7C00 == 0 && h & 0x3FF != 0;
            let c = class_of(x, snan, denorm);
            bits |= u64::from(mask[l] >> c & 1) << l;
        }
    } else {
        let mut a_buf = None;
        let a = f32_src_bits(w, i, 0, &mut a_buf)?;
        for l in 0..LANES {
            let x = f32::from_bits(a[l]);
            let snan = x.is_nan() && a[l] & (1 << 22) == 0;
            let c = class_of(f64::from(x), snan, x.is_subnormal());
            bits |= u64::from(mask[l] >> c & 1) << l;
        }
    }
    Ok(bits)
}

fn v_cmp_class(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let bits = class_bits(w, i)?;
    compare_result(w, i, bits, false);
    Ok(())
}

fn v_cmpx_class(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let bits = class_bits(w, i)?;
    compare_result(w, i, bits, true);
    Ok(())
}

const CLASS: &[(&str, Exec)] = &[
    ("v_cmp_class_f32", v_cmp_class),
    ("v_cmp_class_f64", v_cmp_class),
    ("v_cmp_class_f16", v_cmp_class),
    ("v_cmpx_class_f32", v_cmpx_class),
    ("v_cmpx_class_f64", v_cmpx_class),
    ("v_cmpx_class_f16", v_cmpx_class),
];

/// gfx950's `v_bitop3_b32`/`_b16`: bit k of the result is bit
/// `(a_k << 2) | (b_k << 1) | c_k` of the instruction's 8-bit truth table
/// (CDNA4 ISA, V_BITOP3_B32; the table is the function's value on the
/// sources 0xF0, 0xCC and 0xAA, as LLVM's instruction selection builds it).
pub fn bitop3(table: u8, a: u32, b: u32, c: u32) -> u32 {
    (0..8u32).fold(0, |out, row| {
        if table >> row & 1 == 0 {
            return out;
        }
        let pick = |x: u32, bit: u32| if row >> bit & 1 != 0 { x } else { !x };
        out | (pick(a, 2) & pick(b, 1) & pick(c, 0))
    })
}

fn v_bitop3_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let [a, b, c] = [0, 1, 2].map(|n| w.lanes(i, n, Ty::B32));
    let (a, b, c) = (a?, b?, c?);
    let table = i.imm as u8;
    let out: Lanes = w.size().map(|l| bitop3(table, a[l], b[l], c[l]));
    write_u32(w, i, out)
}

fn v_bitop3_b16(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let [a, b, c] = [0, 1, 2].map(|n| u16_src(w, i, n, &mut None).copied());
    let (a, b, c) = (a?, b?, c?);
    let table = i.imm as u8;
    let out: [u16; LANES] = w
        .size()
        .map(|l| bitop3(table, a[l].into(), b[l].into(), c[l].into()) as u16);
    write_u16(w, i, out)
}

/// gfx950's ternary bit operations.
const BITOP3: &[(&str, Exec)] = &[
    ("v_bitop3_b32", v_bitop3_b32),
    ("v_bitop3_b16", v_bitop3_b16),
];

/// Every VALU executor of this module.
pub const OPS: &[&[(&str, Exec)]] = &[
    BITS16,
    F32,
    F64,
    F16,
    U32,
    U16,
    CONVERSIONS,
    CARRY,
    SATURATING,
    OPS64,
    OTHER,
    BITOP3,
    CLASS,
    CMP_F32,
    CMP_F64,
    CMP_F16,
    CMP_I32,
    CMP_U32,
    CMP_I16,
    CMP_U16,
    CMP_I64,
    CMP_U64,
];

#[cfg(test)]
mod tests {

    use super::*;
    use crate::decode::Target;
    use crate::decode::inst::code;

    #[test]
    fn bitop3_reads_its_table_at_the_sources_bits() {
        // Tables LLVM's instruction selection builds for gfx950 (llc
        // -mcpu=gfx950): (a & !b) | c with operands (a, c, b) is 0xdc,
        // a & b & !c with (a, c, b) is 0x20, (a & b) | !c with (a, c, b)
        // is 0xb3 (as v_bitop3_b16); three-way XOR is 0x96.
        let mut x = 0x9E37_79B9u32;
        for _ in 0..64 {
            x = x.rotate_left(7) ^ x.wrapping_mul(0x85EB_CA6B);
            let (a, b, c) = (x, x.rotate_left(11) ^ 0x5bd1_e995, !x.rotate_right(5));
            assert_eq!(bitop3(0xdc, a, c, b), (a & !b) | c);
            assert_eq!(bitop3(0x20, a, c, b), a & b & !c);
            assert_eq!(bitop3(0xb3, a, c, b), (a & b) | !c);
            assert_eq!(bitop3(0x96, a, b, c), a ^ b ^ c);
            assert_eq!(bitop3(0xf0, a, b, c), a);
            assert_eq!(bitop3(0xcc, a, b, c), b);
            assert_eq!(bitop3(0xaa, a, b, c), c);
            assert_eq!(bitop3(0, a, b, c), 0);
        }
    }

    fn run(w: &mut Wave, words: &[u32], mnemonic: &str) -> R {
        crate::exec::run_words(w, Target::Gfx942, words, mnemonic, &mut [])
    }

    /// MODE with FP_DENORM[5:4] (f32) and [7:6] (f16/f64) set to `d32`,
    /// `d16_64`: 3 keeps denormals, 0 flushes them.
    fn mode(d32: u32, d16_64: u32) -> u32 {
        d32 << 4 | d16_64 << 6
    }

    #[test]
    fn denormals_are_flushed_or_kept_as_the_mode_says() {
        let tiny32 = f32::from_bits(0x0000_0100); // subnormal
        let tiny64 = f64::from_bits(0x0000_0000_0000_1000); // subnormal
        for (m, keep32, keep64) in [
            (mode(3, 3), true, true),
            (mode(0, 3), false, true),
            (mode(3, 0), true, false),
        ] {
            let mut w = Wave::new(8, 0);
            w.set_exec(u64::MAX);
            w.mode = m;
            w.v[1] = [tiny32.to_bits(); LANES];
            w.v[2] = [tiny32.to_bits(); LANES];
            // v_add_f32_e32 v0, v1, v2
            run(&mut w, &[0x0200_0501], "v_add_f32").unwrap();
            let want32 = if keep32 {
                (tiny32 + tiny32).to_bits()
            } else {
                0
            };
            assert_eq!(w.v[0][0], want32, "mode {m:#x}");
            w.v[2] = [tiny64.to_bits() as u32; LANES];
            w.v[3] = [(tiny64.to_bits() >> 32) as u32; LANES];
            w.v[4] = w.v[2];
            w.v[5] = w.v[3];
            // v_add_f64 v[0:1], v[2:3], v[4:5]
            run(&mut w, &[0xD280_0000, 0x0002_0902], "v_add_f64").unwrap();
            let got = u64::from(w.v[0][5]) | u64::from(w.v[1][5]) << 32;
            let want64 = if keep64 {
                (tiny64 + tiny64).to_bits()
            } else {
                0
            };
            assert_eq!(got, want64, "mode {m:#x}");
        }
    }

    /// CDNA3 ISA, VOP2: V_ADD_U32, V_SUB_U32, V_SUBREV_U32 and the U16
    /// forms "support saturation": with VOP3's CLAMP the result stops at 0
    /// or the maximum instead of wrapping (encodings from LLVM's
    /// assembler). LLVM compiles `usub.sat` to `v_sub_u32 ... clamp`.
    #[test]
    fn unsigned_add_and_sub_saturate_with_clamp() {
        let mut w = Wave::new(8, 0);
        w.set_exec(u64::MAX);
        w.v[1][..3].copy_from_slice(&[3, 0xFFFF_FFF0, 5]);
        w.v[2][..3].copy_from_slice(&[5, 0x20, 3]);
        let lanes = |w: &Wave| [w.v[0][0], w.v[0][1], w.v[0][2]];
        // (words, mnemonic, lanes 0..3 of v0)
        let cases: [([u32; 2], &str, [u32; 3]); 7] = [
            ([0xD134_8000, 0x0002_0501], "v_add_u32", [8, u32::MAX, 8]),
            ([0xD135_8000, 0x0002_0501], "v_sub_u32", [0, 0xFFFF_FFD0, 2]),
            ([0xD136_8000, 0x0002_0501], "v_subrev_u32", [2, 0, 0]),
            (
                [0xD135_0000, 0x0002_0501],
                "v_sub_u32",
                [u32::MAX - 1, 0xFFFF_FFD0, 2],
            ),
            // The u16 forms take the low halves: 0xFFF0 + 0x20 saturates.
            ([0xD126_8000, 0x0002_0501], "v_add_u16", [8, 0xFFFF, 8]),
            ([0xD127_8000, 0x0002_0501], "v_sub_u16", [0, 0xFFD0, 2]),
            ([0xD128_8000, 0x0002_0501], "v_subrev_u16", [2, 0, 0]),
        ];
        for (words, mnemonic, want) in cases {
            run(&mut w, &words, mnemonic).unwrap();
            assert_eq!(lanes(&w), want, "{mnemonic} {:#010x}", words[0]);
        }
    }

    #[test]
    fn a_round_mode_other_than_nearest_even_is_refused() {
        let mut w = Wave::new(8, 0);
        w.set_exec(u64::MAX);
        w.mode = mode(3, 3) | 1; // round toward +inf for f32
        let err = run(&mut w, &[0x0200_0501], "v_add_f32").unwrap_err();
        assert!(matches!(err, Fault::Unimplemented { .. }), "{err}");
    }

    /// DPP forms run on gfx90a (DPP64 included).
    fn run_gfx90a(w: &mut Wave, words: &[u32], mnemonic: &str) {
        crate::exec::run_words(w, Target::Gfx90a, words, mnemonic, &mut []).expect("executes");
    }

    const POISON: u32 = 0xDEAD_BEEF;

    #[test]
    fn dpp_moves_sources_and_masks_writes() {
        let mut w = Wave::new(8, 0);
        w.set_exec(u64::MAX);
        w.v[0] = [POISON; LANES];
        w.v[1] = std::array::from_fn(|l| 100 + l as u32);
        // v_mov_b32_dpp v0, v1 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1
        run_gfx90a(&mut w, &[0x7E00_02FA, 0xFF09_1101], "v_mov_b32");
        for l in 0..LANES {
            // bound_ctrl: the first lane of each row reads 0.
            let want = if l % 16 == 0 { 0 } else { 100 + l as u32 - 1 };
            assert_eq!(w.v[0][l], want, "lane {l}");
        }
        // v_add_u32_dpp v1, v2, v3 row_bcast:15 row_mask:0xa bank_mask:0x5:
        // rows 1 and 3, banks 0 and 2 are written; row 0 has no source.
        w.v[1] = [POISON; LANES];
        w.v[2] = std::array::from_fn(|l| 1000 * l as u32);
        w.v[3] = [7; LANES];
        run_gfx90a(&mut w, &[0x6802_06FA, 0xA501_4202], "v_add_u32");
        for l in 0..LANES {
            let (row, bank) = (l / 16, (l % 16) / 4);
            let written = (row == 1 || row == 3) && (bank == 0 || bank == 2);
            let want = if written {
                1000 * (16 * row as u32 - 1) + 7
            } else {
                POISON
            };
            assert_eq!(w.v[1][l], want, "lane {l}");
        }
        // v_ceil_f64_dpp v[0:1], v[2:3] row_newbcast:1: 64-bit lanes move whole.
        w.v[2] = std::array::from_fn(|l| (l as f64 + 0.25).to_bits() as u32);
        w.v[3] = std::array::from_fn(|l| ((l as f64 + 0.25).to_bits() >> 32) as u32);
        run_gfx90a(&mut w, &[0x7E00_30FA, 0xFF01_5102], "v_ceil_f64");
        for l in 0..LANES {
            let got = f64::from_bits(u64::from(w.v[0][l]) | u64::from(w.v[1][l]) << 32);
            assert_eq!(got, ((l & !15) + 1) as f64 + 1.0, "lane {l}");
        }
    }

    /// The wave-size seam: the same executors on a wave32 wave (as GFX10+
    /// kernels choose) read EXEC_LO and VCC_LO only, write lane masks to
    /// one SGPR, and wrap lane selects at 32. GFX9 encodings stand in for
    /// the instructions (the executors do not see encodings); words from
    /// LLVM's disassembler (`llvm-objdump --mcpu=gfx942`).
    #[test]
    fn a_wave32_wave_reads_and_writes_one_sgpr_of_lane_mask() {
        let mut w = Wave::new(8, 0);
        w.set_size(crate::lanes::WaveSize::W32);
        // EXEC_HI and VCC_HI hold garbage a wave32 wave must not see.
        w.s[code::EXEC_LO as usize] = u32::MAX;
        w.s[code::EXEC_HI as usize] = POISON;
        w.s[code::VCC_HI as usize] = POISON;
        w.s[11] = POISON;
        assert_eq!(w.exec(), 0xFFFF_FFFF);
        w.v[1] = std::array::from_fn(|l| l as u32);
        w.v[2] = [16; LANES];
        w.v[3] = [POISON; LANES];
        w.v[4] = [100; LANES];
        w.v[5] = [200; LANES];
        w.v[7] = [0xFFFF_FFF0; LANES];
        // v_cmp_gt_u32_e32 vcc, v1, v2: lanes 17..31.
        run(&mut w, &[0x7D98_0501], "v_cmp_gt_u32").unwrap();
        assert_eq!(w.s[code::VCC_LO as usize], 0xFFFE_0000);
        assert_eq!(w.s[code::VCC_HI as usize], POISON);
        assert_eq!(w.vcc(), 0xFFFE_0000);
        // v_cndmask_b32_e32 v3, v4, v5, vcc: the selector is VCC_LO.
        run(&mut w, &[0x0006_0B04], "v_cndmask_b32").unwrap();
        for l in 0..LANES {
            let want = match l {
                0..=16 => 100,
                17..=31 => 200,
                _ => POISON,
            };
            assert_eq!(w.v[3][l], want, "lane {l}");
        }
        // v_cmp_gt_u32_e64 s[10:11], v1, v2: one SGPR, s10.
        run(&mut w, &[0xD0CC_000A, 0x0002_0501], "v_cmp_gt_u32").unwrap();
        assert_eq!((w.s[10], w.s[11]), (0xFFFE_0000, POISON));
        // v_add_co_u32_e32 v6, vcc, v7, v1: carry out of lanes 16..31.
        run(&mut w, &[0x320C_0307], "v_add_co_u32").unwrap();
        assert_eq!(w.s[code::VCC_LO as usize], 0xFFFF_0000);
        assert_eq!(w.s[code::VCC_HI as usize], POISON);
        // v_readlane_b32 s8, v1, s9: lane 35 wraps to lane 3.
        w.s[9] = 35;
        run(&mut w, &[0xD289_0008, 0x0000_1301], "v_readlane_b32").unwrap();
        assert_eq!(w.s[8], 3);
        // The same compare in wave64 sets lanes 17..63 across the pair.
        w.set_size(crate::lanes::WaveSize::W64);
        w.s[code::EXEC_HI as usize] = u32::MAX;
        run(&mut w, &[0x7D98_0501], "v_cmp_gt_u32").unwrap();
        assert_eq!(w.vcc(), 0xFFFF_FFFF_FFFE_0000);
    }
}
