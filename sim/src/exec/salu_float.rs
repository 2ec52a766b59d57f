//! GFX12's scalar float and 64-bit arithmetic (LLVM's
//! `SOPInstructions.td` GFX12 entries, each the scalar twin of a VALU
//! operation of the same name): `s_add/sub/mul/fmac_f32`, the float
//! compares that set SCC, conversions and roundings, `s_add/sub_nc_u64`
//! (no carry out), `s_mul_u64`, and the `v_s_*` transcendentals (VOP3
//! encodings that read and write one SGPR).
//!
//! Floats follow the VALU's rules (`super::valu`): IEEE round to nearest
//! even (another MODE round is refused), f32 denormals flushed on input
//! and output unless MODE keeps them. The scalar unit has no clamp or
//! output modifier; `v_s_*` take VOP3's ABS/NEG on their source and
//! refuse clamp and omod rather than ignore them.

use crate::decode::Inst;
use crate::exec::ctx::{Ctx, Exec};
use crate::exec::valu::{check_round, flush_f32, flush32};
use crate::fault::Fault;
use crate::wave::{Ty, Wave};
use std::cmp::Ordering::{self, Equal, Greater, Less};

type R = Result<(), Fault>;

/// Source `n` as an f32, denormals flushed by MODE.
fn source(w: &Wave, i: &Inst, n: usize) -> Result<f32, Fault> {
    let x = f32::from_bits(w.s32_of(i.src[n], Ty::B32)?);
    Ok(if flush32(w) { flush_f32(x) } else { x })
}

/// Writes an f32 result to SDST, flushed by MODE.
fn write(w: &mut Wave, sdst: u8, x: f32) {
    let x = if flush32(w) { flush_f32(x) } else { x };
    w.set_s32(sdst, x.to_bits());
}

macro_rules! sop2_f32 {
    ($($name:ident => |$a:ident, $b:ident, $d:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            check_round(w)?;
            let $a = source(w, i, 0)?;
            let $b = source(w, i, 1)?;
            // The accumulator of `s_fmac_f32` is its destination.
            let $d = {
                let d = f32::from_bits(w.s[usize::from(i.sdst & 0x7F)]);
                if flush32(w) { flush_f32(d) } else { d }
            };
            let _ = $d;
            write(w, i.sdst, $body);
            Ok(())
        })*
        const SOP2_F32: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

sop2_f32! {
    s_add_f32 => |a, b, d| a + b;
    s_sub_f32 => |a, b, d| a - b;
    s_mul_f32 => |a, b, d| a * b;
    s_fmac_f32 => |a, b, d| a.mul_add(b, d);
    // IEEE-mode min/max: a NaN operand yields the other (as the VALU's).
    s_min_num_f32 => |a, b, d| a.min(b);
    s_max_num_f32 => |a, b, d| a.max(b);
}

macro_rules! sop1_f32 {
    ($($name:ident => |$a:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            check_round(w)?;
            let $a = source(w, i, 0)?;
            write(w, i.sdst, $body);
            Ok(())
        })*
        const SOP1_F32: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

sop1_f32! {
    s_trunc_f32 => |a| a.trunc();
    s_ceil_f32 => |a| a.ceil();
    s_floor_f32 => |a| a.floor();
    s_rndne_f32 => |a| a.round_ties_even();
}

/// `s_cvt_f32_i32`/`_u32`: to the nearest f32; `s_cvt_i32_f32`/`_u32_f32`:
/// toward zero, saturating, NaN to 0 (Rust's `as` is exactly that).
fn s_cvt_f32_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    check_round(w)?;
    let a = w.s32_of(i.src[0], Ty::B32)? as i32;
    write(w, i.sdst, a as f32);
    Ok(())
}

fn s_cvt_f32_u32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    check_round(w)?;
    let a = w.s32_of(i.src[0], Ty::B32)?;
    write(w, i.sdst, a as f32);
    Ok(())
}

fn s_cvt_i32_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let a = source(w, i, 0)?;
    w.set_s32(i.sdst, a as i32 as u32);
    Ok(())
}

fn s_cvt_u32_f32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let a = source(w, i, 0)?;
    w.set_s32(i.sdst, a as u32);
    Ok(())
}

macro_rules! sopc_f32 {
    ($($name:ident => |$a:ident, $b:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let $a = source(w, i, 0)?;
            let $b = source(w, i, 1)?;
            w.scc = $body;
            Ok(())
        })*
        const SOPC_F32: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

// The ordered compares are false on a NaN; the `n` forms are their
// negations, true on a NaN (as the VALU's `v_cmp_*_f32` of the same
// names).
sopc_f32! {
    s_cmp_lt_f32 => |a, b| is(a, b, &[Less]);
    s_cmp_eq_f32 => |a, b| is(a, b, &[Equal]);
    s_cmp_le_f32 => |a, b| is(a, b, &[Less, Equal]);
    s_cmp_gt_f32 => |a, b| is(a, b, &[Greater]);
    s_cmp_lg_f32 => |a, b| is(a, b, &[Less, Greater]);
    s_cmp_ge_f32 => |a, b| is(a, b, &[Greater, Equal]);
    s_cmp_o_f32 => |a, b| a.partial_cmp(&b).is_some();
    s_cmp_u_f32 => |a, b| a.partial_cmp(&b).is_none();
    s_cmp_nge_f32 => |a, b| !is(a, b, &[Greater, Equal]);
    s_cmp_nlg_f32 => |a, b| !is(a, b, &[Less, Greater]);
    s_cmp_ngt_f32 => |a, b| !is(a, b, &[Greater]);
    s_cmp_nle_f32 => |a, b| !is(a, b, &[Less, Equal]);
    s_cmp_neq_f32 => |a, b| !is(a, b, &[Equal]);
    s_cmp_nlt_f32 => |a, b| !is(a, b, &[Less]);
}

/// Whether `a` and `b` are ordered one of the ways in `any` (never when
/// either is a NaN).
fn is(a: f32, b: f32, any: &[Ordering]) -> bool {
    a.partial_cmp(&b).is_some_and(|o| any.contains(&o))
}

macro_rules! sop2_u64 {
    ($($name:ident => |$a:ident, $b:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let $a = w.s64_of(i.src[0], Ty::U64)?;
            let $b = w.s64_of(i.src[1], Ty::U64)?;
            // SCC unchanged ("nc": no carry).
            w.set_s64(i.sdst, $body);
            Ok(())
        })*
        const SOP2_U64: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

sop2_u64! {
    s_add_nc_u64 => |a, b| a.wrapping_add(b);
    s_sub_nc_u64 => |a, b| a.wrapping_sub(b);
    s_mul_u64 => |a, b| a.wrapping_mul(b);
}

macro_rules! v_s_f32 {
    ($($name:ident => |$a:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            check_round(w)?;
            if i.mods.clamp || i.mods.omod != 0 {
                return Err(Fault::Unimplemented {
                    mnemonic: "a v_s_* transcendental with clamp or omod",
                });
            }
            let mut bits = w.s32_of(i.src[0], Ty::B32)?;
            if i.mods.abs & 1 != 0 {
                bits &= 0x7FFF_FFFF;
            }
            if i.mods.neg & 1 != 0 {
                bits ^= 0x8000_0000;
            }
            let $a = if flush32(w) { flush_f32(f32::from_bits(bits)) } else { f32::from_bits(bits) };
            // The decoder puts the SGPR destination in VDST.
            write(w, i.vdst as u8, $body);
            Ok(())
        })*
        const V_S_F32: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

// As the VALU's `v_rcp_f32` and friends (`super::valu`).
v_s_f32! {
    v_s_rcp_f32 => |a| 1.0 / a;
    v_s_rsq_f32 => |a| 1.0 / a.sqrt();
    v_s_sqrt_f32 => |a| a.sqrt();
    v_s_exp_f32 => |a| a.exp2();
    v_s_log_f32 => |a| a.log2();
}

/// Every executor of this module.
pub const OPS: &[&[(&str, Exec)]] = &[SOP2_F32, SOP1_F32, SOPC_F32, SOP2_U64, V_S_F32, CONVERSIONS];

const CONVERSIONS: &[(&str, Exec)] = &[
    ("s_cvt_f32_i32", s_cvt_f32_i32),
    ("s_cvt_f32_u32", s_cvt_f32_u32),
    ("s_cvt_i32_f32", s_cvt_i32_f32),
    ("s_cvt_u32_f32", s_cvt_u32_f32),
];
