//! Scalar ALU and program control: SOP1, SOP2, SOPK, SOPC, SOPP.
//!
//! Semantics per the CDNA3 ISA, "Scalar ALU Operations" and "Program Flow
//! Control". SCC rules differ per op and are spelled out in each body:
//! carry/borrow for unsigned add/sub, signed overflow for signed add/sub,
//! "result is non-zero" for logic, shifts and bit-field ops, "S0 chosen"
//! for min/max.

use crate::decode::inst::code;
use crate::decode::{Inst, Src};
use crate::exec::ctx::{Ctx, Event, Exec};
use crate::fault::Fault;
use crate::wave::{PRIVATE_APERTURE_HI, SHARED_APERTURE_HI, Status, Ty, Wave};

type R = Result<(), Fault>;

fn sext16(v: i32) -> u32 {
    v as u16 as i16 as i32 as u32
}

/// The branch target of a SOPP/SOPK with SIMM16 at instruction `pc`.
fn branch_target(pc: u64, simm: i32) -> u64 {
    (pc as i64 + 4 + i64::from(sext16(simm) as i32) * 4) as u64
}

macro_rules! sop2_32 {
    ($table:ident: $($name:ident => |$a:ident, $b:ident, $c:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let $a = w.s32_of(i.src[0], Ty::B32)?;
            let $b = w.s32_of(i.src[1], Ty::B32)?;
            let $c = w.scc;
            let (d, scc): (u32, Option<bool>) = $body;
            w.set_s32(i.sdst, d);
            if let Some(s) = scc { w.scc = s; }
            Ok(())
        })*
        const $table: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

macro_rules! sop2_64 {
    ($table:ident: $($name:ident($t0:ident, $t1:ident) => |$a:ident, $b:ident, $c:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let $a = sop2_64_src(w, i.src[0], Ty::$t0)?;
            let $b = sop2_64_src(w, i.src[1], Ty::$t1)?;
            let $c = w.scc;
            let (d, scc): (u64, Option<bool>) = $body;
            w.set_s64(i.sdst, d);
            if let Some(s) = scc { w.scc = s; }
            Ok(())
        })*
        const $table: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

fn nz32(d: u32) -> (u32, Option<bool>) {
    (d, Some(d != 0))
}

fn nz64(d: u64) -> (u64, Option<bool>) {
    (d, Some(d != 0))
}

fn bfe_u(v: u64, off: u32, width: u32, bits: u32) -> u64 {
    let off = off & (bits - 1);
    if width == 0 {
        return 0;
    }
    let x = v >> off;
    if width >= 64 {
        x
    } else {
        x & ((1u64 << width) - 1)
    }
}

fn bfe_i(v: u64, off: u32, width: u32, bits: u32) -> i64 {
    let u = bfe_u(v, off, width, bits);
    if width == 0 || width >= 64 {
        return u as i64;
    }
    let shift = 64 - width;
    ((u << shift) as i64) >> shift
}

sop2_32! { SOP2_32:
    s_add_u32 => |a, b, _c| { let (d, o) = a.overflowing_add(b); (d, Some(o)) };
    s_sub_u32 => |a, b, _c| { let (d, o) = a.overflowing_sub(b); (d, Some(o)) };
    s_add_i32 => |a, b, _c| { let (d, o) = (a as i32).overflowing_add(b as i32); (d as u32, Some(o)) };
    s_sub_i32 => |a, b, _c| { let (d, o) = (a as i32).overflowing_sub(b as i32); (d as u32, Some(o)) };
    s_addc_u32 => |a, b, c| {
        let s = u64::from(a) + u64::from(b) + u64::from(c);
        (s as u32, Some(s >> 32 != 0))
    };
    s_subb_u32 => |a, b, c| {
        let s = u64::from(a).wrapping_sub(u64::from(b)).wrapping_sub(u64::from(c));
        (s as u32, Some(u64::from(b) + u64::from(c) > u64::from(a)))
    };
    s_min_i32 => |a, b, _c| { let l = (a as i32) < (b as i32); (if l { a } else { b }, Some(l)) };
    s_min_u32 => |a, b, _c| { let l = a < b; (if l { a } else { b }, Some(l)) };
    s_max_i32 => |a, b, _c| { let g = (a as i32) > (b as i32); (if g { a } else { b }, Some(g)) };
    s_max_u32 => |a, b, _c| { let g = a > b; (if g { a } else { b }, Some(g)) };
    s_cselect_b32 => |a, b, c| (if c { a } else { b }, None);
    s_and_b32 => |a, b, _c| nz32(a & b);
    s_or_b32 => |a, b, _c| nz32(a | b);
    s_xor_b32 => |a, b, _c| nz32(a ^ b);
    s_andn2_b32 => |a, b, _c| nz32(a & !b);
    s_orn2_b32 => |a, b, _c| nz32(a | !b);
    s_nand_b32 => |a, b, _c| nz32(!(a & b));
    s_nor_b32 => |a, b, _c| nz32(!(a | b));
    s_xnor_b32 => |a, b, _c| nz32(!(a ^ b));
    s_lshl_b32 => |a, b, _c| nz32(a << (b & 31));
    s_lshr_b32 => |a, b, _c| nz32(a >> (b & 31));
    s_ashr_i32 => |a, b, _c| nz32(((a as i32) >> (b & 31)) as u32);
    s_bfm_b32 => |a, b, _c| ((((1u64 << (a & 31)) - 1) as u32) << (b & 31), None);
    s_mul_i32 => |a, b, _c| (a.wrapping_mul(b), None);
    s_bfe_u32 => |a, b, _c| nz32(bfe_u(u64::from(a), b, (b >> 16) & 0x7F, 32) as u32);
    s_bfe_i32 => |a, b, _c| nz32(bfe_i32(a, b));
    s_absdiff_i32 => |a, b, _c| nz32((a as i32).wrapping_sub(b as i32).unsigned_abs());
    s_mul_hi_u32 => |a, b, _c| (((u64::from(a) * u64::from(b)) >> 32) as u32, None);
    s_mul_hi_i32 => |a, b, _c| (((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32, None);
    s_lshl1_add_u32 => |a, b, _c| shl_add(a, b, 1);
    s_lshl2_add_u32 => |a, b, _c| shl_add(a, b, 2);
    s_lshl3_add_u32 => |a, b, _c| shl_add(a, b, 3);
    s_lshl4_add_u32 => |a, b, _c| shl_add(a, b, 4);
    s_pack_ll_b32_b16 => |a, b, _c| ((a & 0xFFFF) | b << 16, None);
    s_pack_lh_b32_b16 => |a, b, _c| ((a & 0xFFFF) | (b & 0xFFFF_0000), None);
    s_pack_hh_b32_b16 => |a, b, _c| (a >> 16 | (b & 0xFFFF_0000), None);
}

fn bfe_i32(a: u32, b: u32) -> u32 {
    let off = b & 31;
    let width = (b >> 16) & 0x7F;
    if width == 0 {
        return 0;
    }
    let x = a >> off;
    if width >= 32 {
        return x;
    }
    let shift = 32 - width;
    (((x << shift) as i32) >> shift) as u32
}

fn shl_add(a: u32, b: u32, n: u32) -> (u32, Option<bool>) {
    let s = (u64::from(a) << n) + u64::from(b);
    (s as u32, Some(s >> 32 != 0))
}

/// A source of a 64-bit SOP2 op: 64 bits, or, typed `B32`, one dword
/// zero-extended. Shift amounts and bit-field controls are 32-bit operands
/// even in the 64-bit ops (CDNA3 ISA, SOP2: `S_LSHL_B64: D.u64 = S0.u64 <<
/// S1.u[5:0]`, `S_BFM_B64: D.u64 = ((1 << S0.u[5:0]) - 1) << S1.u[5:0]`;
/// LLVM's SOPInstructions.td gives them the classes SOP2_64_32 and
/// SOP2_64_32_32, whose 32-bit sources are one SGPR): `s_lshl_b64 s[16:17],
/// 1, s13` reads s13 alone, not the pair s[12:13].
fn sop2_64_src(w: &Wave, src: Src, ty: Ty) -> Result<u64, Fault> {
    match ty {
        Ty::B32 => w.s32_of(src, Ty::B32).map(u64::from),
        _ => w.s64_of(src, ty),
    }
}

sop2_64! { SOP2_64:
    s_cselect_b64(U64, U64) => |a, b, c| (if c { a } else { b }, None);
    s_and_b64(U64, U64) => |a, b, _c| nz64(a & b);
    s_or_b64(U64, U64) => |a, b, _c| nz64(a | b);
    s_xor_b64(U64, U64) => |a, b, _c| nz64(a ^ b);
    s_andn2_b64(U64, U64) => |a, b, _c| nz64(a & !b);
    s_orn2_b64(U64, U64) => |a, b, _c| nz64(a | !b);
    s_nand_b64(U64, U64) => |a, b, _c| nz64(!(a & b));
    s_nor_b64(U64, U64) => |a, b, _c| nz64(!(a | b));
    s_xnor_b64(U64, U64) => |a, b, _c| nz64(!(a ^ b));
    s_lshl_b64(U64, B32) => |a, b, _c| nz64(a << (b & 63));
    s_lshr_b64(U64, B32) => |a, b, _c| nz64(a >> (b & 63));
    s_ashr_i64(I64, B32) => |a, b, _c| nz64(((a as i64) >> (b & 63)) as u64);
    s_bfm_b64(B32, B32) => |a, b, _c| ((((1u128 << (a & 63)) - 1) as u64) << (b & 63), None);
    s_bfe_u64(U64, B32) => |a, b, _c| nz64(bfe_u(a, b as u32, (b as u32 >> 16) & 0x7F, 64));
    s_bfe_i64(I64, B32) => |a, b, _c| nz64(bfe_i(a, b as u32, (b as u32 >> 16) & 0x7F, 64) as u64);
}

// ---------------------------------------------------------------------------
// SOP1
// ---------------------------------------------------------------------------

macro_rules! sop1 {
    ($table:ident: $($name:ident($get:ident, $t:ident, $set:ident) => |$a:ident, $d:ident, $c:ident| $body:expr;)*) => {
        $(#[allow(unused_variables)]
        fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let $a = w.$get(i.src[0], Ty::$t)?;
            let $d = w.s64(i.sdst);
            let $c = w.scc;
            let (d, scc) = $body;
            if let Some(d) = d { w.$set(i.sdst, d); }
            if let Some(s) = scc { w.scc = s; }
            Ok(())
        })*
        const $table: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

fn some32(d: u32) -> (Option<u32>, Option<bool>) {
    (Some(d), None)
}

fn some_nz32(d: u32) -> (Option<u32>, Option<bool>) {
    (Some(d), Some(d != 0))
}

fn some64(d: u64) -> (Option<u64>, Option<bool>) {
    (Some(d), None)
}

fn some_nz64(d: u64) -> (Option<u64>, Option<bool>) {
    (Some(d), Some(d != 0))
}

fn wqm(v: u64) -> u64 {
    let mut d = 0;
    for q in 0..16 {
        if v >> (q * 4) & 0xF != 0 {
            d |= 0xF << (q * 4);
        }
    }
    d
}

fn quadmask(v: u64) -> u64 {
    (0..16)
        .filter(|q| v >> (q * 4) & 0xF != 0)
        .fold(0, |d, q| d | 1 << q)
}

/// Bit position of the first set bit from the LSB, -1 if none.
fn ff1(v: u64) -> u32 {
    if v == 0 { u32::MAX } else { v.trailing_zeros() }
}

/// Leading-zero count from the MSB, -1 if zero.
fn flbit(v: u64, bits: u32) -> u32 {
    if v == 0 {
        u32::MAX
    } else {
        v.leading_zeros() - (64 - bits)
    }
}

/// Leading bits equal to the sign, -1 if all are.
fn flbit_signed(v: i64, bits: u32) -> u32 {
    let v = if v < 0 { !v } else { v } as u64;
    let v = if bits == 32 { v & 0xFFFF_FFFF } else { v };
    if v == 0 {
        u32::MAX
    } else {
        v.leading_zeros() - (64 - bits)
    }
}

fn bitreplicate(v: u32) -> u64 {
    (0..32).fold(0u64, |d, b| d | (u64::from(v >> b & 1) * 3) << (2 * b))
}

sop1! { SOP1_32:
    s_mov_b32(s32_of, B32, set_s32) => |a, d, c| some32(a);
    s_cmov_b32(s32_of, B32, set_s32) => |a, d, c| (c.then_some(a), None);
    s_not_b32(s32_of, B32, set_s32) => |a, d, c| some_nz32(!a);
    s_wqm_b32(s32_of, B32, set_s32) => |a, d, c| some_nz32(wqm(u64::from(a)) as u32);
    s_brev_b32(s32_of, B32, set_s32) => |a, d, c| some32(a.reverse_bits());
    s_bcnt0_i32_b32(s32_of, B32, set_s32) => |a, d, c| some_nz32(a.count_zeros());
    s_bcnt1_i32_b32(s32_of, B32, set_s32) => |a, d, c| some_nz32(a.count_ones());
    s_ff0_i32_b32(s32_of, B32, set_s32) => |a, d, c| some32(ff1(u64::from(!a)));
    s_ff1_i32_b32(s32_of, B32, set_s32) => |a, d, c| some32(ff1(u64::from(a)));
    s_flbit_i32_b32(s32_of, B32, set_s32) => |a, d, c| some32(flbit(u64::from(a), 32));
    s_flbit_i32(s32_of, B32, set_s32) => |a, d, c| some32(flbit_signed(i64::from(a as i32), 32));
    s_sext_i32_i8(s32_of, B32, set_s32) => |a, d, c| some32(a as i8 as i32 as u32);
    s_sext_i32_i16(s32_of, B32, set_s32) => |a, d, c| some32(a as i16 as i32 as u32);
    s_bitset0_b32(s32_of, B32, set_s32) => |a, d, c| some32(d as u32 & !(1 << (a & 31)));
    s_bitset1_b32(s32_of, B32, set_s32) => |a, d, c| some32(d as u32 | 1 << (a & 31));
    s_quadmask_b32(s32_of, B32, set_s32) => |a, d, c| some_nz32(quadmask(u64::from(a)) as u32);
    s_abs_i32(s32_of, B32, set_s32) => |a, d, c| some_nz32((a as i32).unsigned_abs());
}

sop1! { SOP1_64:
    s_mov_b64(s64_of, U64, set_s64) => |a, d, c| some64(a);
    s_cmov_b64(s64_of, U64, set_s64) => |a, d, c| (c.then_some(a), None);
    s_not_b64(s64_of, U64, set_s64) => |a, d, c| some_nz64(!a);
    s_wqm_b64(s64_of, U64, set_s64) => |a, d, c| some_nz64(wqm(a));
    s_brev_b64(s64_of, U64, set_s64) => |a, d, c| some64(a.reverse_bits());
    s_quadmask_b64(s64_of, U64, set_s64) => |a, d, c| some_nz64(quadmask(a));
    s_bitset0_b64(s32_of, B32, set_s64) => |a, d, c| some64(d & !(1 << (a & 63)));
    s_bitset1_b64(s32_of, B32, set_s64) => |a, d, c| some64(d | 1 << (a & 63));
    s_bitreplicate_b64_b32(s32_of, B32, set_s64) => |a, d, c| some64(bitreplicate(a));
}

// Ops on a 64-bit source with a 32-bit result.
sop1! { SOP1_64_TO_32:
    s_bcnt0_i32_b64(s64_of, U64, set_s32) => |a, d, c| some_nz32(a.count_zeros());
    s_bcnt1_i32_b64(s64_of, U64, set_s32) => |a, d, c| some_nz32(a.count_ones());
    s_ff0_i32_b64(s64_of, U64, set_s32) => |a, d, c| some32(ff1(!a));
    s_ff1_i32_b64(s64_of, U64, set_s32) => |a, d, c| some32(ff1(a));
    s_flbit_i32_b64(s64_of, U64, set_s32) => |a, d, c| some32(flbit(a, 64));
    s_flbit_i32_i64(s64_of, I64, set_s32) => |a, d, c| some32(flbit_signed(a as i64, 64));
}

/// `s_*_saveexec_b64` / `s_*_wrexec_b64`: D = old EXEC (saveexec) or the
/// new EXEC (wrexec); SCC = new EXEC != 0. The `_b32` forms (GFX10+, for
/// wave32) work on EXEC_LO: the wave's lane mask ([`Wave::exec`] and
/// [`Wave::lane_mask`] read one SGPR in wave32).
macro_rules! exec_ops {
    ($table:ident; $($name:ident($wr:expr) => |$s:ident, $e:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let $s = w.lane_mask(i.src[0])?;
            let $e = w.exec();
            let new: u64 = ($body) & w.size().full();
            w.set_exec(new);
            w.set_lane_mask(i.sdst, if $wr { new } else { $e });
            w.scc = new != 0;
            Ok(())
        })*
        const $table: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

exec_ops! {
    EXEC_OPS_32;
    s_and_saveexec_b32(false) => |s, e| s & e;
    s_or_saveexec_b32(false) => |s, e| s | e;
    s_xor_saveexec_b32(false) => |s, e| s ^ e;
    s_and_not1_saveexec_b32(false) => |s, e| s & !e;
    s_or_not1_saveexec_b32(false) => |s, e| s | !e;
    s_nand_saveexec_b32(false) => |s, e| !(s & e);
    s_nor_saveexec_b32(false) => |s, e| !(s | e);
    s_xnor_saveexec_b32(false) => |s, e| !(s ^ e);
    s_and_not0_saveexec_b32(false) => |s, e| !s & e;
    s_or_not0_saveexec_b32(false) => |s, e| !s | e;
    s_and_not0_wrexec_b32(true) => |s, e| !s & e;
    s_and_not1_wrexec_b32(true) => |s, e| s & !e;
}

exec_ops! {
    EXEC_OPS;
    s_and_saveexec_b64(false) => |s, e| s & e;
    s_or_saveexec_b64(false) => |s, e| s | e;
    s_xor_saveexec_b64(false) => |s, e| s ^ e;
    s_andn2_saveexec_b64(false) => |s, e| s & !e;
    s_orn2_saveexec_b64(false) => |s, e| s | !e;
    s_nand_saveexec_b64(false) => |s, e| !(s & e);
    s_nor_saveexec_b64(false) => |s, e| !(s | e);
    s_xnor_saveexec_b64(false) => |s, e| !(s ^ e);
    s_andn1_saveexec_b64(false) => |s, e| !s & e;
    s_orn1_saveexec_b64(false) => |s, e| !s | e;
    s_andn1_wrexec_b64(true) => |s, e| !s & e;
    s_andn2_wrexec_b64(true) => |s, e| s & !e;
}

fn s_getpc_b64(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    w.set_s64(i.sdst, ctx.pc + 4);
    Ok(())
}

fn s_setpc_b64(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    let target = w.s64_of(i.src[0], Ty::U64)?;
    ctx.jump(w, target)
}

fn s_swappc_b64(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    let target = w.s64_of(i.src[0], Ty::U64)?;
    w.set_s64(i.sdst, ctx.pc + 4);
    ctx.jump(w, target)
}

/// `s_movrels`: D = SGPR[S0 + M0]; `s_movreld`: SGPR[D + M0] = S0.
fn relative(base: u8, m0: u32, width: u32) -> Result<u8, Fault> {
    let r = u32::from(base) + m0;
    // Relative addressing stays within SGPRs 0..=101 (plus VCC).
    if r + width > u32::from(code::VCC_HI) + 1 {
        return Err(Fault::Operand { code: base });
    }
    Ok(r as u8)
}

fn s_movrels_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let crate::decode::Src::Sgpr(base) = i.src[0] else {
        return Err(Fault::Operand { code: 0 });
    };
    let r = relative(base, w.s[code::M0 as usize], 1)?;
    let v = w.s[usize::from(r)];
    w.set_s32(i.sdst, v);
    Ok(())
}

fn s_movrels_b64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let crate::decode::Src::Sgpr(base) = i.src[0] else {
        return Err(Fault::Operand { code: 0 });
    };
    let r = relative(base, w.s[code::M0 as usize], 2)?;
    let v = w.s64(r);
    w.set_s64(i.sdst, v);
    Ok(())
}

fn s_movreld_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let v = w.s32_of(i.src[0], Ty::B32)?;
    let r = relative(i.sdst, w.s[code::M0 as usize], 1)?;
    w.set_s32(r, v);
    Ok(())
}

fn s_movreld_b64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let v = w.s64_of(i.src[0], Ty::U64)?;
    let r = relative(i.sdst, w.s[code::M0 as usize], 2)?;
    w.set_s64(r, v);
    Ok(())
}

const SOP1_OTHER: &[(&str, Exec)] = &[
    ("s_getpc_b64", s_getpc_b64),
    ("s_setpc_b64", s_setpc_b64),
    ("s_swappc_b64", s_swappc_b64),
    ("s_movrels_b32", s_movrels_b32),
    ("s_movrels_b64", s_movrels_b64),
    ("s_movreld_b32", s_movreld_b32),
    ("s_movreld_b64", s_movreld_b64),
];

// ---------------------------------------------------------------------------
// SOPC
// ---------------------------------------------------------------------------

macro_rules! sopc {
    ($table:ident: $($name:ident($get:ident, $t:ident) => |$a:ident, $b:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let $a = w.$get(i.src[0], Ty::$t)?;
            let $b = w.$get(i.src[1], Ty::$t)?;
            w.scc = $body;
            Ok(())
        })*
        const $table: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

sopc! { SOPC:
    s_cmp_eq_i32(s32_of, B32) => |a, b| a == b;
    s_cmp_lg_i32(s32_of, B32) => |a, b| a != b;
    s_cmp_gt_i32(s32_of, B32) => |a, b| (a as i32) > (b as i32);
    s_cmp_ge_i32(s32_of, B32) => |a, b| (a as i32) >= (b as i32);
    s_cmp_lt_i32(s32_of, B32) => |a, b| (a as i32) < (b as i32);
    s_cmp_le_i32(s32_of, B32) => |a, b| (a as i32) <= (b as i32);
    s_cmp_eq_u32(s32_of, B32) => |a, b| a == b;
    s_cmp_lg_u32(s32_of, B32) => |a, b| a != b;
    s_cmp_gt_u32(s32_of, B32) => |a, b| a > b;
    s_cmp_ge_u32(s32_of, B32) => |a, b| a >= b;
    s_cmp_lt_u32(s32_of, B32) => |a, b| a < b;
    s_cmp_le_u32(s32_of, B32) => |a, b| a <= b;
    s_bitcmp0_b32(s32_of, B32) => |a, b| a >> (b & 31) & 1 == 0;
    s_bitcmp1_b32(s32_of, B32) => |a, b| a >> (b & 31) & 1 == 1;
    s_cmp_eq_u64(s64_of, U64) => |a, b| a == b;
    s_cmp_lg_u64(s64_of, U64) => |a, b| a != b;
}

fn s_bitcmp0_b64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let a = w.s64_of(i.src[0], Ty::U64)?;
    let b = w.s32_of(i.src[1], Ty::B32)?;
    w.scc = a >> (b & 63) & 1 == 0;
    Ok(())
}

fn s_bitcmp1_b64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let a = w.s64_of(i.src[0], Ty::U64)?;
    let b = w.s32_of(i.src[1], Ty::B32)?;
    w.scc = a >> (b & 63) & 1 == 1;
    Ok(())
}

// ---------------------------------------------------------------------------
// SOPK
// ---------------------------------------------------------------------------

macro_rules! sopk_cmp {
    ($($name:ident($signed:expr) => |$a:ident, $k:ident| $body:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            let $a = w.s[usize::from(i.sdst & 0x7F)];
            let $k = if $signed { sext16(i.imm) } else { i.imm as u32 & 0xFFFF };
            w.scc = $body;
            Ok(())
        })*
        const SOPK_CMP: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

sopk_cmp! {
    s_cmpk_eq_i32(true) => |a, k| a == k;
    s_cmpk_lg_i32(true) => |a, k| a != k;
    s_cmpk_gt_i32(true) => |a, k| (a as i32) > (k as i32);
    s_cmpk_ge_i32(true) => |a, k| (a as i32) >= (k as i32);
    s_cmpk_lt_i32(true) => |a, k| (a as i32) < (k as i32);
    s_cmpk_le_i32(true) => |a, k| (a as i32) <= (k as i32);
    s_cmpk_eq_u32(false) => |a, k| a == k;
    s_cmpk_lg_u32(false) => |a, k| a != k;
    s_cmpk_gt_u32(false) => |a, k| a > k;
    s_cmpk_ge_u32(false) => |a, k| a >= k;
    s_cmpk_lt_u32(false) => |a, k| a < k;
    s_cmpk_le_u32(false) => |a, k| a <= k;
}

fn s_movk_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    w.set_s32(i.sdst, sext16(i.imm));
    Ok(())
}

fn s_cmovk_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    if w.scc {
        w.set_s32(i.sdst, sext16(i.imm));
    }
    Ok(())
}

fn s_addk_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let d = w.s[usize::from(i.sdst & 0x7F)] as i32;
    let (r, o) = d.overflowing_add(sext16(i.imm) as i32);
    w.set_s32(i.sdst, r as u32);
    w.scc = o;
    Ok(())
}

fn s_mulk_i32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    let d = w.s[usize::from(i.sdst & 0x7F)];
    w.set_s32(i.sdst, d.wrapping_mul(sext16(i.imm)));
    Ok(())
}

fn s_call_b64(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    w.set_s64(i.sdst, ctx.pc + 4);
    ctx.jump(w, branch_target(ctx.pc, i.imm))
}

/// Hardware registers `s_getreg`/`s_setreg` reach (CDNA3 ISA, "Hardware
/// Registers"): SIMM16 = ID[5:0], OFFSET[10:6], SIZE-1[15:11].
mod hwreg {
    pub const MODE: u32 = 1;
    pub const STATUS: u32 = 2;
    pub const TRAPSTS: u32 = 3;
    pub const HW_ID: u32 = 4;
    pub const GPR_ALLOC: u32 = 5;
    pub const LDS_ALLOC: u32 = 6;
    pub const IB_STS: u32 = 7;
    pub const SH_MEM_BASES: u32 = 15;
    pub const FLAT_SCR_LO: u32 = 20;
    pub const FLAT_SCR_HI: u32 = 21;
}

fn hwreg_field(simm: i32) -> (u32, u32, u32) {
    let s = simm as u32;
    let id = s & 0x3F;
    let offset = (s >> 6) & 0x1F;
    let size = ((s >> 11) & 0x1F) + 1;
    let mask = if size >= 32 {
        u32::MAX
    } else {
        ((1u32 << size) - 1) << offset
    };
    (id, offset, mask)
}

/// GFX11 and GFX12 hardware registers that GFX9 does not have (LLVM's
/// `SIDefines.h` Hwreg ids, as `llvm-objdump` names them).
mod hwreg_rdna {
    /// GFX11 SHADER_CYCLES: a free-running 20-bit shader-clock counter
    /// (LLVM lowers `llvm.readcyclecounter` on gfx1100 to
    /// `s_getreg_b32 hwreg(HW_REG_SHADER_CYCLES, 0, 20)`); GFX12
    /// SHADER_CYCLES_LO: the low 32 bits of a 64-bit one (gfx1201's
    /// lowering reads HI, LO, HI).
    pub const SHADER_CYCLES: u32 = 29;
    /// GFX12 SHADER_CYCLES_HI: the counter's high 32 bits.
    pub const SHADER_CYCLES_HI: u32 = 30;
    /// GFX12 SCHED_MODE (`llvm-objdump --mcpu=gfx1201` names id 26
    /// `HW_REG_WAVE_SCHED_MODE`): its DEP_MODE field (bits 1:0) chooses
    /// how the hardware checks VALU dependencies (RDNA4 ISA, "Hardware
    /// Registers"). That is timing: code that waits as the ISA asks gets
    /// the same results in any mode, and the simulator runs each
    /// instruction to completion in order. hipBLASLt's gfx1201 GEMM
    /// kernels set it; it is kept for `s_getreg` and changes nothing else.
    pub const SCHED_MODE: u32 = 26;
}

fn getreg(w: &Wave, id: u32, target: crate::Target) -> Result<u32, Fault> {
    use aqueduct_abi::kernel_descriptor::GfxFamily;
    let family = target.family();
    let cycles = crate::clock::shader_cycles;
    match (family, id) {
        (GfxFamily::Gfx11, hwreg_rdna::SHADER_CYCLES) => return Ok(cycles() as u32 & 0xF_FFFF),
        (GfxFamily::Gfx12, hwreg_rdna::SHADER_CYCLES) => return Ok(cycles() as u32),
        (GfxFamily::Gfx12, hwreg_rdna::SHADER_CYCLES_HI) => return Ok((cycles() >> 32) as u32),
        (GfxFamily::Gfx12, hwreg_rdna::SCHED_MODE) => return Ok(w.sched_mode),
        // MODE, STATUS and TRAPSTS keep their ids; GFX9's others mean
        // other registers (or nothing) on RDNA: refused by id rather
        // than read as GFX9's.
        (GfxFamily::Gfx11 | GfxFamily::Gfx12, hwreg::MODE | hwreg::STATUS | hwreg::TRAPSTS) => {}
        (GfxFamily::Gfx11 | GfxFamily::Gfx12, _) => return Err(Fault::Operand { code: id as u8 }),
        _ => {}
    }
    Ok(match id {
        hwreg::MODE => w.mode,
        // STATUS: SCC (bit 0), EXECZ (9), VCCZ (10), IN_BARRIER (12)...
        hwreg::STATUS => {
            u32::from(w.scc)
                | u32::from(w.exec() == 0) << 9
                | u32::from(w.vcc() == 0) << 10
                | u32::from(w.status == Status::Barrier) << 12
        }
        hwreg::TRAPSTS => w.trapsts,
        // HW_ID: WAVE_ID (3:0) is the only field a kernel can rely on.
        hwreg::HW_ID => w.id & 0xF,
        hwreg::GPR_ALLOC | hwreg::LDS_ALLOC | hwreg::IB_STS => 0,
        // Bits 63:48 of the private (15:0) and shared (31:16) apertures.
        hwreg::SH_MEM_BASES => (SHARED_APERTURE_HI >> 16) << 16 | PRIVATE_APERTURE_HI >> 16,
        hwreg::FLAT_SCR_LO => w.s[code::FLAT_SCRATCH_LO as usize],
        hwreg::FLAT_SCR_HI => w.s[code::FLAT_SCRATCH_LO as usize + 1],
        _ => return Err(Fault::Operand { code: id as u8 }),
    })
}

fn s_getreg_b32(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    let (id, offset, mask) = hwreg_field(i.imm);
    let v = (getreg(w, id, ctx.target)? & mask) >> offset;
    w.set_s32(i.sdst, v);
    Ok(())
}

fn setreg(w: &mut Wave, simm: i32, value: u32, target: crate::Target) -> R {
    use aqueduct_abi::kernel_descriptor::GfxFamily;
    let (id, offset, mask) = hwreg_field(simm);
    let put = |old: u32| (old & !mask) | ((value << offset) & mask);
    match (target.family(), id) {
        (_, hwreg::MODE) => w.mode = put(w.mode),
        (_, hwreg::TRAPSTS) => w.trapsts = put(w.trapsts),
        (GfxFamily::Gfx12, hwreg_rdna::SCHED_MODE) => w.sched_mode = put(w.sched_mode),
        _ => return Err(Fault::Operand { code: id as u8 }),
    }
    Ok(())
}

fn s_setreg_b32(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    // The SDST field names the source SGPR here.
    let v = w.s[usize::from(i.sdst & 0x7F)];
    setreg(w, i.imm, v, ctx.target)
}

fn s_setreg_imm32_b32(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    let v = w.s32_of(i.src[0], Ty::B32)?;
    setreg(w, i.imm, v, ctx.target)
}

const SOPK_OTHER: &[(&str, Exec)] = &[
    ("s_movk_i32", s_movk_i32),
    ("s_cmovk_i32", s_cmovk_i32),
    ("s_addk_i32", s_addk_i32),
    ("s_mulk_i32", s_mulk_i32),
    ("s_call_b64", s_call_b64),
    ("s_getreg_b32", s_getreg_b32),
    ("s_setreg_b32", s_setreg_b32),
    ("s_setreg_imm32_b32", s_setreg_imm32_b32),
    ("s_bitcmp0_b64", s_bitcmp0_b64),
    ("s_bitcmp1_b64", s_bitcmp1_b64),
];

// ---------------------------------------------------------------------------
// SOPP
// ---------------------------------------------------------------------------

macro_rules! branches {
    ($($name:ident => |$w:ident| $cond:expr;)*) => {
        $(fn $name($w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
            if $cond {
                ctx.jump($w, branch_target(ctx.pc, i.imm))?;
            }
            Ok(())
        })*
        const BRANCHES: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

branches! {
    s_branch => |w| true;
    s_cbranch_scc0 => |w| !w.scc;
    s_cbranch_scc1 => |w| w.scc;
    s_cbranch_vccz => |w| w.vcc() == 0;
    s_cbranch_vccnz => |w| w.vcc() != 0;
    s_cbranch_execz => |w| w.exec() == 0;
    s_cbranch_execnz => |w| w.exec() != 0;
}

/// Instructions with no functional effect in a functional model: waits on
/// counters (every access completes before the next instruction),
/// scheduling hints, cache maintenance of caches the model does not have.
fn nop(_: &mut Wave, _: &Inst, _: &mut Ctx<'_>) -> R {
    Ok(())
}

fn s_endpgm(w: &mut Wave, _: &Inst, _: &mut Ctx<'_>) -> R {
    w.status = Status::Ended;
    Ok(())
}

fn s_barrier(w: &mut Wave, _: &Inst, _: &mut Ctx<'_>) -> R {
    w.status = Status::Barrier;
    Ok(())
}

/// GFX12's split workgroup barrier, which LLVM emits for a workgroup
/// barrier on gfx1201 as `s_barrier_signal -1` then `s_barrier_wait -1`
/// (SOPInstructions.td): the signal marks the wave arrived, the wait
/// waits until every wave has. The model holds a wave
/// at its signal until all have signalled, which is one of the orders the
/// split allows; the wait then has nothing left to wait for. Named
/// barriers (another id) are refused by name.
fn s_barrier_signal(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    if w.s32_of(i.src[0], Ty::B32)? != u32::MAX {
        return Err(Fault::Unimplemented {
            mnemonic: "s_barrier_signal of a named barrier",
        });
    }
    w.status = Status::Barrier;
    Ok(())
}

fn s_barrier_wait(_: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    if i.imm & 0xFFFF != 0xFFFF {
        return Err(Fault::Unimplemented {
            mnemonic: "s_barrier_wait on a named barrier",
        });
    }
    Ok(())
}

fn s_trap(_: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    Err(Fault::Trap {
        id: (i.imm & 0xFF) as u16,
    })
}

fn s_sethalt(_: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    if i.imm & 1 != 0 {
        Err(Fault::Halt)
    } else {
        Ok(())
    }
}

fn s_sendmsg(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    ctx.events.push(Event::Message {
        id: i.imm as u16,
        m0: w.s[code::M0 as usize],
    });
    Ok(())
}

fn s_sendmsghalt(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
    s_sendmsg(w, i, ctx)?;
    Err(Fault::Halt)
}

fn s_memtime(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    w.set_s64(i.vdst as u8, crate::clock::shader_cycles());
    Ok(())
}

fn s_memrealtime(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    w.set_s64(i.vdst as u8, crate::clock::realtime_ticks());
    Ok(())
}

/// `s_sendmsg_rtn_b32/b64` (GFX11+): a message whose answer lands in
/// SDST; the message id is SRC0's field (RDNA3 ISA, "Message Types").
/// GET_REALTIME is the constant-rate clock `s_memrealtime` reads on GFX9;
/// the others (doorbell, trap handler addresses, ...) have nothing behind
/// them here and are refused by name.
fn s_sendmsg_rtn(w: &mut Wave, i: &Inst, wide: bool) -> R {
    const MSG_RTN_GET_REALTIME: u8 = 0x83;
    match i.src[0] {
        Src::Inline(MSG_RTN_GET_REALTIME) => {
            let t = crate::clock::realtime_ticks();
            if wide {
                w.set_s64(i.sdst, t);
            } else {
                w.set_s32(i.sdst, t as u32);
            }
            Ok(())
        }
        _ => Err(Fault::Unimplemented {
            mnemonic: "s_sendmsg_rtn (a message other than MSG_RTN_GET_REALTIME)",
        }),
    }
}

fn s_sendmsg_rtn_b32(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    s_sendmsg_rtn(w, i, false)
}

fn s_sendmsg_rtn_b64(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
    s_sendmsg_rtn(w, i, true)
}

/// The SOPP instructions that run [`nop`]: waits, scheduling hints and
/// cache maintenance. One list, for the executor table and for
/// [`is_no_op`], which lets the interpreter count a run of them without
/// dispatching each.
const NO_OPS: &[&str] = &[
    "s_nop",
    "s_waitcnt",
    // GFX11+: the split counters (SOPK waits of GFX10/GFX11, GFX12's
    // s_wait_*), and the scheduling hints (instruction-dependency delays,
    // clauses, prefetch distance, hazard waits on dependency counters).
    "s_waitcnt_vscnt",
    "s_waitcnt_vmcnt",
    "s_waitcnt_expcnt",
    "s_waitcnt_lgkmcnt",
    "s_wait_loadcnt",
    "s_wait_storecnt",
    "s_wait_samplecnt",
    "s_wait_bvhcnt",
    "s_wait_expcnt",
    "s_wait_dscnt",
    "s_wait_kmcnt",
    "s_wait_loadcnt_dscnt",
    "s_wait_storecnt_dscnt",
    "s_wait_idle",
    "s_delay_alu",
    "s_clause",
    "s_waitcnt_depctr",
    "s_wait_alu",
    "s_set_inst_prefetch_distance",
    "s_sleep",
    "s_setprio",
    "s_icache_inv",
    "s_incperflevel",
    "s_decperflevel",
    "s_ttracedata",
    "s_code_end",
    "s_wakeup",
];

const NO_OP_TABLE: [(&str, Exec); NO_OPS.len()] = {
    let mut out = [("", nop as Exec); NO_OPS.len()];
    let mut k = 0;
    while k < NO_OPS.len() {
        out[k].0 = NO_OPS[k];
        k += 1;
    }
    out
};

/// Whether `mnemonic` is one of the [`NO_OPS`].
pub(crate) fn is_no_op(mnemonic: &str) -> bool {
    NO_OPS.contains(&mnemonic)
}

const SOPP: &[(&str, Exec)] = &[
    ("s_endpgm", s_endpgm),
    ("s_sendmsg_rtn_b32", s_sendmsg_rtn_b32),
    ("s_sendmsg_rtn_b64", s_sendmsg_rtn_b64),
    ("s_barrier", s_barrier),
    ("s_barrier_signal", s_barrier_signal),
    ("s_barrier_wait", s_barrier_wait),
    ("s_trap", s_trap),
    ("s_sethalt", s_sethalt),
    ("s_sendmsg", s_sendmsg),
    ("s_sendmsghalt", s_sendmsghalt),
    // SMEM-encoded, but scalar and memory-less here.
    ("s_memtime", s_memtime),
    ("s_memrealtime", s_memrealtime),
    ("s_dcache_wb", nop),
    ("s_dcache_inv", nop),
    ("s_dcache_wb_vol", nop),
    ("s_dcache_inv_vol", nop),
];

/// Every SALU and program-control executor.
pub const OPS: &[&[(&str, Exec)]] = &[
    SOP2_32,
    SOP2_64,
    SOP1_32,
    SOP1_64,
    SOP1_64_TO_32,
    EXEC_OPS,
    EXEC_OPS_32,
    SOP1_OTHER,
    SOPC,
    SOPK_CMP,
    SOPK_OTHER,
    BRANCHES,
    &NO_OP_TABLE,
    SOPP,
];
