//! Prints a decoded [`Inst`] in LLVM's AMDGPU assembly syntax, the way
//! `llvm-objdump -d --mcpu=<gfx>` prints it.
//!
//! This exists to check the decoder: the oracle test compares this text
//! with objdump's for every built instruction, so every operand the
//! executors read is checked against LLVM's disassembler. For that to mean
//! anything the printer reads only the decoded fields — never the raw
//! words — and takes what the fields do not say (operand widths and types)
//! from the mnemonic, as the assembler syntax itself does (`_b64` →
//! register pairs, `dwordx4` → four registers).
//!
//! The syntax is LLVM's `AMDGPUInstPrinter` (AMDGPUUsage, "Assembler
//! syntax"; the operand pages of "AMDGPU Instruction Syntax" for GFX9 and
//! GFX940): register ranges `s[4:5]`, inline constants as values (`-4`,
//! `1.0`, `0.15915494`), other literals in hex, modifiers after the
//! operands in the printer's order.

use core::fmt::Write;

use super::format::{Encoding, Format};
use super::inst::{
    Dpp, Dpp8, Ext, Inst, Mai, Sdwa, Sel, Src, code, flag, is_mai, is_vop3b, vop2_reads_vcc,
};
use super::target::Target;

std::thread_local! {
    /// Whether the instruction being printed is GFX11/GFX12's (set by
    /// [`print`]): what differs in the syntax (s102..s105 are SGPRs, lane
    /// masks are one SGPR as in LLVM's default wave32 disassembly) is
    /// decided below without passing it through every helper.
    static RDNA: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Whether the instruction being printed is GFX11+.
fn rdna() -> bool {
    RDNA.with(core::cell::Cell::get)
}

/// Dwords of a lane mask: a pair on GFX9 (wave64); one in LLVM's default
/// (wave32) GFX11+ disassembly.
fn mask_dwords() -> u8 {
    if rdna() { 1 } else { 2 }
}

// ---------------------------------------------------------------------------
// Operand types
// ---------------------------------------------------------------------------

/// What an operand holds, as far as printing needs: its width and whether
/// constants in it are floating point (which decides how an inline constant
/// or literal reads back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    I16,
    F16,
    I32,
    F32,
    I64,
    F64,
    /// Two 16-bit values in one dword (packed math, `dot2` sources).
    V2I16,
    V2F16,
    /// A register range of this many dwords (memory data, MAI matrices).
    Regs(u8),
}

impl Ty {
    fn dwords(self) -> u8 {
        match self {
            Self::I64 | Self::F64 => 2,
            Self::Regs(n) => n,
            _ => 1,
        }
    }
}

/// A type token of a mnemonic (`f32`, `u64`, `b16`, `i32`; `bf16` is 16-bit
/// data and reads as an integer).
fn ty_token(t: &str) -> Option<Ty> {
    let (float, bits) = match t.as_bytes().first()? {
        b'f' => (true, &t[1..]),
        b'i' | b'u' | b'b' => (false, &t[1..]),
        _ => return None,
    };
    Some(match (float, bits) {
        (true, "16") => Ty::F16,
        (true, "32") => Ty::F32,
        (true, "64") => Ty::F64,
        (false, "16") => Ty::I16,
        (false, "32") => Ty::I32,
        (false, "64") => Ty::I64,
        _ => return None,
    })
}

/// Number in a mnemonic's `dwordxN` / `_xN` width token.
fn dword_count(m: &str) -> u8 {
    for (token, n) in [
        ("b512", 16),
        ("b256", 8),
        ("x16", 16),
        ("x8", 8),
        ("x4", 4),
        ("xyzw", 4),
        ("x3", 3),
        ("xyz", 3),
        ("x2", 2),
        ("xy", 2),
        ("b128", 4),
        ("b96", 3),
    ] {
        if m.ends_with(token) || m.contains(&format!("{token}_")) {
            return n;
        }
    }
    1
}

/// Operand types of a vector-ALU operation: destination and three sources.
///
/// The mnemonic names them: one type token types every operand
/// (`v_add_f32`), two type the destination and then the sources
/// (`v_cvt_f32_f16`, `v_mad_u64_u32`). The exceptions are operations whose
/// operands differ in a way the name does not spell (shift amounts, the
/// exponent of `ldexp`, the class mask of `cmp_class`).
fn valu_types(m: &str) -> (Ty, [Ty; 3]) {
    let tokens: Vec<Ty> = m.split('_').filter_map(ty_token).collect();
    let (dst, src) = match tokens.as_slice() {
        [] => (Ty::I32, Ty::I32),
        [t] => (*t, *t),
        [d, s, ..] => (*d, *s),
    };
    let mut srcs = [src; 3];
    if m.starts_with("v_pk_") {
        // Packed halves sit in one dword; `v_pk_*_f32` and `v_pk_mov_b32`
        // take register pairs, which read inline constants as f32 (so they
        // are no F64).
        let t = match src {
            Ty::F32 | Ty::I32 => Ty::Regs(2),
            Ty::F16 => Ty::V2F16,
            _ => Ty::V2I16,
        };
        return (t, [t; 3]);
    }
    if m.starts_with("v_dot2") {
        let pair = if src == Ty::F16 { Ty::V2F16 } else { Ty::V2I16 };
        return (dst, [pair, pair, dst]);
    }
    if m.contains("rev_b64") || m.contains("rev_i64") {
        srcs[0] = Ty::I32;
    }
    if m == "v_lshl_add_u64" {
        srcs[1] = Ty::I32;
    }
    if m.starts_with("v_mad_u64")
        || m.starts_with("v_mad_i64")
        || m.starts_with("v_mad_co_u64")
        || m.starts_with("v_mad_co_i64")
    {
        srcs[2] = dst;
    }
    if m.starts_with("v_ldexp") || m.contains("_class_") || m == "v_trig_preop_f64" {
        srcs[1] = if src == Ty::F16 { Ty::I16 } else { Ty::I32 };
    }
    match m {
        "v_qsad_pk_u16_u8" | "v_mqsad_pk_u16_u8" => return (Ty::I64, [Ty::I64, Ty::I32, Ty::I64]),
        "v_mqsad_u32_u8" => return (Ty::Regs(4), [Ty::I64, Ty::I32, Ty::Regs(4)]),
        _ => {}
    }
    if m.starts_with("v_cvt_pk_f32_") {
        return (Ty::F64, [Ty::I32; 3]);
    }
    // Packing conversions: two sources of the source type into one dword;
    // `v_cvt_pk_u8_f32` and the stochastic-rounding ones take an integer
    // second source (byte index, random bits).
    if m.starts_with("v_cvt_sr_") || m == "v_cvt_pk_u8_f32" || m == "v_cvt_pkaccum_u8_f32" {
        return (Ty::I32, [src, Ty::I32, Ty::I32]);
    }
    if m.starts_with("v_cvt_pk") {
        return (Ty::I32, [src, src, Ty::I32]);
    }
    if m.starts_with("v_cmp") {
        return (Ty::I64, srcs);
    }
    (dst, srcs)
}

/// Sources of a VOP3-only operation (the VOP1/VOP2/VOPC ones have 1, 2, 2).
fn vop3_sources(m: &str) -> usize {
    const THREE: &[&str] = &[
        "v_mad",
        "v_fma",
        "v_bfe_",
        "v_bfi_",
        "v_alignbit",
        "v_alignbyte",
        "v_min3",
        "v_max3",
        "v_med3",
        "v_sad",
        "v_msad",
        "v_qsad",
        "v_mqsad",
        "v_lerp",
        "v_cube",
        "v_div_fixup",
        "v_div_fmas",
        "v_div_scale",
        "v_xad",
        "v_lshl_add",
        "v_add_lshl",
        "v_add3",
        "v_lshl_or",
        "v_and_or",
        "v_or3",
        "v_perm",
        "v_dot",
        "v_cvt_pk_u8_f32",
        "v_bitop3",
        "v_cndmask_b16",
    ];
    // GFX12's scalar transcendentals (`v_s_rcp_f32 s0, s1`) take one.
    if m.starts_with("v_s_") {
        return 1;
    }
    if THREE.iter().any(|p| m.starts_with(p)) {
        3
    } else {
        2
    }
}

// ---------------------------------------------------------------------------
// Operands
// ---------------------------------------------------------------------------

fn range(out: &mut String, prefix: &str, first: u32, n: u8) {
    if n <= 1 {
        let _ = write!(out, "{prefix}{first}");
    } else {
        let _ = write!(out, "{prefix}[{first}:{}]", first + u32::from(n) - 1);
    }
}

/// A scalar register (range) by operand code. The named registers come as
/// halves or as a pair; anything else (a misaligned pair, a range past
/// them) prints as `?…`, which no objdump text matches.
fn sreg(out: &mut String, c: u8, n: u8) {
    let text = match (c, n) {
        (0..=code::SGPR_LAST, _) => return range(out, "s", c.into(), n),
        // GFX11+ has no FLAT_SCRATCH/XNACK_MASK operands: s102..s105.
        (102..=105, _) if rdna() => return range(out, "s", c.into(), n),
        (code::TTMP0..=code::TTMP_LAST, _) => {
            return range(out, "ttmp", u32::from(c - code::TTMP0), n);
        }
        (code::FLAT_SCRATCH_LO, 1) => "flat_scratch_lo",
        (code::FLAT_SCRATCH_LO, 2) => "flat_scratch",
        (code::FLAT_SCRATCH_HI, 1) => "flat_scratch_hi",
        (code::XNACK_MASK_LO, 1) => "xnack_mask_lo",
        (code::XNACK_MASK_LO, 2) => "xnack_mask",
        (code::XNACK_MASK_HI, 1) => "xnack_mask_hi",
        (code::VCC_LO, 1) => "vcc_lo",
        (code::VCC_LO, 2) => "vcc",
        (code::VCC_HI, 1) => "vcc_hi",
        (code::M0, 1) => "m0",
        (code::NULL, _) => "null",
        (code::EXEC_LO, 1) => "exec_lo",
        (code::EXEC_LO, 2) => "exec",
        (code::EXEC_HI, 1) => "exec_hi",
        _ => {
            let _ = write!(out, "?s{c}x{n}");
            return;
        }
    };
    out.push_str(text);
}

/// Text of an inline constant by code, for an operand of type `ty`.
fn inline(out: &mut String, c: u8, ty: Ty) {
    let text = match c {
        code::ZERO..=code::INT_MAX => return write_int(out, i64::from(c - code::ZERO)),
        193..=code::INT_NEG_MAX => return write_int(out, -i64::from(c - code::INT_MAX)),
        // Operand codes 240..=248 (GFX9 ISA, "Scalar ALU Operands").
        240 => "0.5",
        241 => "-0.5",
        242 => "1.0",
        243 => "-1.0",
        244 => "2.0",
        245 => "-2.0",
        246 => "4.0",
        247 => "-4.0",
        // 1/(2π), printed with the digits of the operand's precision.
        code::INV_2PI if matches!(ty, Ty::F64 | Ty::I64) => "0.15915494309189532",
        code::INV_2PI => "0.15915494",
        _ => "?inline",
    };
    out.push_str(text);
}

fn write_int(out: &mut String, v: i64) {
    let _ = write!(out, "{v}");
}

/// Float bit patterns an inline constant can name (f32), and their text:
/// a literal equal to one reads back as the constant.
const F32_CONSTANTS: [(u32, &str); 9] = [
    (0x3F00_0000, "0.5"),
    (0xBF00_0000, "-0.5"),
    (0x3F80_0000, "1.0"),
    (0xBF80_0000, "-1.0"),
    (0x4000_0000, "2.0"),
    (0xC000_0000, "-2.0"),
    (0x4080_0000, "4.0"),
    (0xC080_0000, "-4.0"),
    (0x3E22_F983, "0.15915494"),
];

/// A 32-bit literal in an operand of type `ty`. A literal whose value an
/// inline constant could have named prints as `lit(..)`, so that it
/// reassembles to the same encoding.
fn literal(out: &mut String, l: u32, ty: Ty) {
    let int = (-16..=64).contains(&(l as i32));
    let f32_constant = F32_CONSTANTS.iter().any(|(b, _)| *b == l);
    let (inlinable, shown) = match ty {
        // A 64-bit integer literal is zero-extended.
        Ty::I64 => (l <= 64, l),
        // A 64-bit float literal is the high half of the double.
        Ty::F64 => (l == 0 || F64_HIGH_CONSTANTS.contains(&l), l),
        // 16-bit operands use the low half. An integer one still reads an
        // f32 constant's bits as inline; a float one reads f16 constants.
        Ty::I16 => (
            int || f32_constant,
            if int || f32_constant { l } else { l & 0xFFFF },
        ),
        Ty::F16 => {
            let h = l & 0xFFFF;
            let inlinable =
                (-16..=64).contains(&i32::from(h as u16 as i16)) || F16_CONSTANTS.contains(&h);
            (inlinable, if inlinable { l } else { h })
        }
        // Packed: inline when both halves read as one inline constant
        // (or the other half is zero), as LLVM's isInlinableLiteralV216.
        Ty::V2I16 | Ty::V2F16 => {
            let (lo, hi) = (l & 0xFFFF, l >> 16);
            let half = |h: u32| {
                (-16..=64).contains(&i32::from(h as u16 as i16))
                    || (ty == Ty::V2F16 && F16_CONSTANTS.contains(&h))
            };
            let sign_extended = hi == 0 || (hi == 0xFFFF && lo & 0x8000 != 0);
            let inlinable = if sign_extended {
                half(lo)
            } else if lo == 0 {
                half(hi)
            } else {
                lo == hi && half(lo)
            };
            (inlinable, l)
        }
        _ => (int || f32_constant, l),
    };
    if inlinable {
        let _ = write!(out, "lit({shown:#x})");
    } else {
        let _ = write!(out, "{shown:#x}");
    }
}

/// The f16 bit patterns of the inline float constants (0.5, -0.5, 1, -1,
/// 2, -2, 4, -4, 1/(2π)).
const F16_CONSTANTS: [u32; 9] = [
    0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118,
];

/// The high halves of the f64 inline float constants (their low halves are
/// zero; 1/(2π) has no such pattern).
const F64_HIGH_CONSTANTS: [u32; 8] = [
    0x3FE0_0000,
    0xBFE0_0000,
    0x3FF0_0000,
    0xBFF0_0000,
    0x4000_0000,
    0xC000_0000,
    0x4010_0000,
    0xC010_0000,
];

/// A 32-bit immediate that is no source operand (`s_setreg_imm32_b32`):
/// inline-constant values read as the constant, the rest in hex.
fn imm32(out: &mut String, l: u32) {
    if (-16..=64).contains(&(l as i32)) {
        write_int(out, i64::from(l as i32));
    } else if let Some((_, t)) = F32_CONSTANTS.iter().find(|(b, _)| *b == l) {
        out.push_str(t);
    } else {
        let _ = write!(out, "{l:#x}");
    }
}

fn special(out: &mut String, c: u8) {
    out.push_str(match c {
        code::SHARED_BASE => "src_shared_base",
        code::SHARED_LIMIT => "src_shared_limit",
        code::PRIVATE_BASE => "src_private_base",
        code::PRIVATE_LIMIT => "src_private_limit",
        code::POPS_EXITING_WAVE_ID => "src_pops_exiting_wave_id",
        code::VCCZ => "src_vccz",
        code::EXECZ => "src_execz",
        code::SCC => "src_scc",
        code::LDS_DIRECT => "src_lds_direct",
        _ => "?special",
    });
}

/// A source operand of type `ty`.
fn src(out: &mut String, s: Src, ty: Ty) {
    let n = ty.dwords();
    match s {
        Src::Sgpr(c) => sreg(out, c, n),
        Src::Vgpr(r) => range(out, "v", r.into(), n),
        Src::Agpr(r) => range(out, "a", r.into(), n),
        Src::Inline(c) => inline(out, c, ty),
        Src::Literal(l) => literal(out, l, ty),
        Src::Special(c) => special(out, c),
        Src::None => out.push_str("off"),
    }
}

/// A GFX11+ 16-bit VGPR operand's half: `v1.l`, `v1.h`.
fn half_reg(out: &mut String, r: u16, hi: bool) {
    let _ = write!(out, "v{r}.{}", if hi { 'h' } else { 'l' });
}

/// A source with VOP3/SDWA/DPP modifiers: `-`, `|..|`, `sext(..)`; `half`
/// prints a VGPR as its GFX11+ true16 half.
fn src_mods(
    out: &mut String,
    s: Src,
    ty: Ty,
    (neg, abs, sext): (bool, bool, bool),
    half: Option<bool>,
) {
    // A negated constant prints as `neg(..)`: `-1` would be another value.
    let neg_call = neg && !abs && matches!(s, Src::Inline(_) | Src::Literal(_));
    if neg_call {
        out.push_str("neg(");
    } else if neg {
        out.push('-');
    }
    if abs {
        out.push('|');
    }
    if sext {
        out.push_str("sext(");
    }
    match (s, half) {
        (Src::Vgpr(r), Some(hi)) => half_reg(out, r, hi),
        _ => src(out, s, ty),
    }
    if sext {
        out.push(')');
    }
    if abs {
        out.push('|');
    }
    if neg_call {
        out.push(')');
    }
}

// ---------------------------------------------------------------------------
// Instructions
// ---------------------------------------------------------------------------

/// Prints `inst` as `llvm-objdump -d --mcpu=<target>` does (without the
/// address/encoding comment). Operands are separated by `", "`, modifiers by
/// one space.
pub fn print(inst: &Inst, target: Target) -> String {
    RDNA.with(|r| r.set(Encoding::of(target) != Encoding::Gfx9));
    let mut p = Printer {
        out: String::new(),
        first: true,
    };
    let m = inst.mnemonic;
    match inst.format {
        Format::Sop1 | Format::Sop2 | Format::Sopc | Format::Sopk | Format::Sopp => {
            p.out.push_str(m);
            salu(&mut p, inst, target);
        }
        Format::Smem => {
            p.out.push_str(m);
            smem(&mut p, inst, target);
        }
        Format::Vop1 | Format::Vop2 | Format::Vopc | Format::Vop3 | Format::Vop3p => {
            valu(&mut p, inst, target);
        }
        Format::Ds => {
            p.out.push_str(m);
            ds(&mut p, inst);
        }
        Format::Flat | Format::Global | Format::Scratch => {
            p.out.push_str(m);
            flat(&mut p, inst, target);
        }
        Format::Vopd => vopd(&mut p, inst, target),
        // GFX11's cache invalidations have no operands.
        Format::Mubuf if rdna() && matches!(m, "buffer_gl0_inv" | "buffer_gl1_inv") => {
            p.out.push_str(m)
        }
        Format::Mubuf | Format::Mtbuf => {
            p.out.push_str(m);
            mubuf(&mut p, inst, target);
        }
    }
    p.out
}

struct Printer {
    out: String,
    first: bool,
}

impl Printer {
    /// Starts the next operand.
    fn op(&mut self) -> &mut String {
        self.out.push_str(if self.first { " " } else { ", " });
        self.first = false;
        &mut self.out
    }

    /// Appends a modifier.
    fn modifier(&mut self, text: &str) {
        self.out.push(' ');
        self.out.push_str(text);
    }
}

fn salu(p: &mut Printer, i: &Inst, target: Target) {
    let m = i.mnemonic;
    // Widths: `_b64`-style tokens make 64-bit operands; where two tokens
    // appear the first is the destination's (`s_bcnt1_i32_b64`).
    // SALU has no 16-bit operands: `_b16`/`_i16` name data inside a dword.
    let tokens: Vec<Ty> = m
        .split('_')
        .filter_map(ty_token)
        .map(|t| if t.dwords() == 2 { Ty::I64 } else { Ty::I32 })
        .collect();
    let (d, s) = match tokens.as_slice() {
        [] => (Ty::I32, Ty::I32),
        [t] => (*t, *t),
        [d, s, ..] => (*d, *s),
    };
    let mut srcs = [s, s];
    // Shift amounts, bit indices and field descriptors stay 32-bit.
    if m.starts_with("s_lsh")
        || m.starts_with("s_ashr")
        || m.starts_with("s_bfe")
        || m.starts_with("s_bitcmp")
    {
        srcs[1] = Ty::I32;
    }
    if m == "s_cbranch_g_fork" {
        srcs = [Ty::I64, Ty::I64];
    }
    if m == "s_bfm_b64" {
        srcs = [Ty::I32, Ty::I32];
    }
    if m.starts_with("s_bitset") {
        srcs[0] = Ty::I32;
    }
    match i.format {
        Format::Sop2 => {
            if !matches!(m, "s_cbranch_g_fork" | "s_rfe_restore_b64") {
                sreg(p.op(), i.sdst, d.dwords());
            }
            if m == "s_rfe_restore_b64" {
                srcs[1] = Ty::I32;
            }
            src(p.op(), i.src[0], srcs[0]);
            src(p.op(), i.src[1], srcs[1]);
        }
        Format::Sop1 => match m {
            "s_sendmsg_rtn_b32" | "s_sendmsg_rtn_b64" => {
                sreg(p.op(), i.sdst, d.dwords());
                let id = match i.src[0] {
                    Src::Sgpr(c) | Src::Inline(c) | Src::Special(c) => u32::from(c),
                    _ => 0,
                };
                sendmsg_gfx11(p.op(), id);
            }
            "s_barrier_signal" | "s_barrier_signal_isfirst" => src(p.op(), i.src[0], Ty::I32),
            "s_getpc_b64" => sreg(p.op(), i.sdst, 2),
            "s_setpc_b64" | "s_rfe_b64" => src(p.op(), i.src[0], Ty::I64),
            "s_cbranch_join" | "s_set_gpr_idx_idx" => src(p.op(), i.src[0], Ty::I32),
            _ => {
                sreg(p.op(), i.sdst, d.dwords());
                src(p.op(), i.src[0], srcs[0]);
            }
        },
        Format::Sopc => {
            src(p.op(), i.src[0], srcs[0]);
            if m == "s_set_gpr_idx_on" {
                gpr_idx_mode(p.op(), i.imm as u32);
            } else {
                src(p.op(), i.src[1], srcs[1]);
            }
        }
        Format::Sopk => sopk(p, i, d, target),
        _ => sopp(p, i),
    }
}

/// `gpr_idx(SRC0,...)` of `s_set_gpr_idx_on`/`_mode`; a value with bits
/// beyond the four modes prints as a number.
fn gpr_idx_mode(out: &mut String, bits: u32) {
    const MODES: [&str; 4] = ["SRC0", "SRC1", "SRC2", "DST"];
    if bits > 0xF {
        let _ = write!(out, "{bits:#x}");
        return;
    }
    let names: Vec<&str> = (0..4)
        .filter(|b| bits & (1 << b) != 0)
        .map(|b| MODES[b])
        .collect();
    let _ = write!(out, "gpr_idx({})", names.join(","));
}

fn sopk(p: &mut Printer, i: &Inst, d: Ty, target: Target) {
    let m = i.mnemonic;
    let simm = i.imm as u32 & 0xFFFF;
    match m {
        "s_getreg_b32" => {
            sreg(p.op(), i.sdst, 1);
            hwreg(p.op(), simm, target);
        }
        "s_setreg_b32" => {
            hwreg(p.op(), simm, target);
            sreg(p.op(), i.sdst, 1);
        }
        "s_setreg_imm32_b32" => {
            hwreg(p.op(), simm, target);
            match i.src[0] {
                Src::Literal(l) => imm32(p.op(), l),
                s => src(p.op(), s, Ty::I32),
            }
        }
        "s_call_b64" | "s_cbranch_i_fork" => {
            sreg(p.op(), i.sdst, 2);
            let _ = write!(p.op(), "{simm}");
        }
        _ => {
            sreg(p.op(), i.sdst, d.dwords());
            let _ = write!(p.op(), "{simm:#x}");
        }
    }
}

/// `hwreg(...)` of the SOPK hardware-register instructions: SIMM16 =
/// ID[5:0] | OFFSET[10:6] | (SIZE-1)[15:11] (GFX9 ISA, S_GETREG_B32).
fn hwreg(out: &mut String, simm: u32, target: Target) {
    let id = simm & 0x3F;
    let offset = (simm >> 6) & 0x1F;
    let size = ((simm >> 11) & 0x1F) + 1;
    let gfx12 = target.family() == aqueduct_abi::kernel_descriptor::GfxFamily::Gfx12;
    let name = match (id, target) {
        // GFX11+ ids that differ from GFX9's (LLVM's SIDefines.h): only
        // those our objects use; others print as numbers.
        (29, _) if gfx12 => Some("HW_REG_SHADER_CYCLES_LO"),
        (29, _) if rdna() => Some("HW_REG_SHADER_CYCLES"),
        (30, _) if gfx12 => Some("HW_REG_SHADER_CYCLES_HI"),
        (4..=24, _) if rdna() => None,
        (1, _) => Some("HW_REG_MODE"),
        (2, _) => Some("HW_REG_STATUS"),
        (3, _) => Some("HW_REG_TRAPSTS"),
        (4, _) => Some("HW_REG_HW_ID"),
        (5, _) => Some("HW_REG_GPR_ALLOC"),
        (6, _) => Some("HW_REG_LDS_ALLOC"),
        (7, _) => Some("HW_REG_IB_STS"),
        (15, _) => Some("HW_REG_SH_MEM_BASES"),
        (16, _) => Some("HW_REG_TBA_LO"),
        (17, _) => Some("HW_REG_TBA_HI"),
        (18, _) => Some("HW_REG_TMA_LO"),
        (19, _) => Some("HW_REG_TMA_HI"),
        (20, t) if t.gfx940_insts() => Some("HW_REG_XCC_ID"),
        (21, t) if t.gfx940_insts() => Some("HW_REG_SQ_PERF_SNAPSHOT_DATA"),
        (22, t) if t.gfx940_insts() => Some("HW_REG_SQ_PERF_SNAPSHOT_DATA1"),
        (23, t) if t.gfx940_insts() => Some("HW_REG_SQ_PERF_SNAPSHOT_PC_LO"),
        (24, t) if t.gfx940_insts() => Some("HW_REG_SQ_PERF_SNAPSHOT_PC_HI"),
        _ => None,
    };
    out.push_str("hwreg(");
    match name {
        Some(n) => out.push_str(n),
        None => {
            let _ = write!(out, "{id}");
        }
    }
    if offset != 0 || size != 32 {
        let _ = write!(out, ", {offset}, {size}");
    }
    out.push(')');
}

fn sopp(p: &mut Printer, i: &Inst) {
    let simm = i.imm as u32 & 0xFFFF;
    if rdna() {
        return sopp_rdna(p, i.mnemonic, simm);
    }
    match i.mnemonic {
        "s_waitcnt" => waitcnt(p.op(), simm),
        // `s_endpgm` shows its (meaningless) immediate only when set.
        "s_endpgm" if simm != 0 => {
            let _ = write!(p.op(), "{simm}");
        }
        "s_endpgm"
        | "s_barrier"
        | "s_icache_inv"
        | "s_wakeup"
        | "s_ttracedata"
        | "s_set_gpr_idx_off"
        | "s_endpgm_saved"
        | "s_endpgm_ordered_ps_done" => {}
        "s_set_gpr_idx_mode" => gpr_idx_mode(p.op(), simm),
        "s_sendmsg" | "s_sendmsghalt" => sendmsg(p.op(), simm),
        // Branch offsets print as unsigned decimals (objdump adds the target
        // in its comment).
        m if m.starts_with("s_branch") || m.starts_with("s_cbranch") => {
            let _ = write!(p.op(), "{simm}");
        }
        _ => u16_imm(p.op(), simm),
    }
}

/// GFX11/GFX12 SOPP operands: the new counters and hints have their own
/// syntax (LLVM's `printWaitFlag`, `printDelayFlag`, `printDepCtr`); the
/// split GFX12 waits and the clause/prefetch hints print in hex.
fn sopp_rdna(p: &mut Printer, m: &str, simm: u32) {
    match m {
        "s_waitcnt" => waitcnt_gfx11(p.op(), simm),
        "s_delay_alu" => delay_alu(p.op(), simm),
        "s_waitcnt_depctr" | "s_wait_alu" => depctr(p.op(), simm),
        "s_sendmsg" | "s_sendmsghalt" => sendmsg_gfx11(p.op(), simm),
        "s_endpgm" if simm != 0 => {
            let _ = write!(p.op(), "{simm}");
        }
        "s_endpgm"
        | "s_code_end"
        | "s_barrier"
        | "s_icache_inv"
        | "s_wakeup"
        | "s_ttracedata"
        | "s_endpgm_saved"
        | "s_endpgm_ordered_ps_done"
        | "s_wait_idle"
        | "s_barrier_leave" => {}
        m if m.starts_with("s_branch") || m.starts_with("s_cbranch") => {
            let _ = write!(p.op(), "{simm}");
        }
        m if m.starts_with("s_wait_")
            || matches!(
                m,
                "s_clause" | "s_set_inst_prefetch_distance" | "s_barrier_wait"
            ) =>
        {
            let _ = write!(p.op(), "{simm:#x}");
        }
        _ => u16_imm(p.op(), simm),
    }
}

/// GFX11 `s_waitcnt`: EXP_CNT in bits 2:0, LGKM_CNT 9:4, VM_CNT 15:10
/// (LLVM `AMDGPUBaseInfo.cpp`, the GFX11 bit shifts and widths). As on
/// GFX9, the counters that wait print, or all three when none does.
fn waitcnt_gfx11(out: &mut String, simm: u32) {
    let (vm, exp, lgkm) = (simm >> 10 & 0x3F, simm & 7, simm >> 4 & 0x3F);
    let all = vm == 0x3F && exp == 7 && lgkm == 0x3F;
    let mut parts = Vec::new();
    if vm != 0x3F || all {
        parts.push(format!("vmcnt({vm})"));
    }
    if exp != 7 || all {
        parts.push(format!("expcnt({exp})"));
    }
    if lgkm != 0x3F || all {
        parts.push(format!("lgkmcnt({lgkm})"));
    }
    out.push_str(&parts.join(" "));
}

/// `s_delay_alu`: INSTID0 in bits 3:0, INSTSKIP 6:4, INSTID1 10:7 (RDNA3
/// ISA, S_DELAY_ALU); fields that are zero are left out.
fn delay_alu(out: &mut String, simm: u32) {
    const IDS: [&str; 12] = [
        "NO_DEP",
        "VALU_DEP_1",
        "VALU_DEP_2",
        "VALU_DEP_3",
        "VALU_DEP_4",
        "TRANS32_DEP_1",
        "TRANS32_DEP_2",
        "TRANS32_DEP_3",
        "FMA_ACCUM_CYCLE_1",
        "SALU_CYCLE_1",
        "SALU_CYCLE_2",
        "SALU_CYCLE_3",
    ];
    const SKIPS: [&str; 6] = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"];
    let name = |table: &[&str], v: u32| {
        table
            .get(v as usize)
            .map_or_else(|| v.to_string(), |s| (*s).to_string())
    };
    let mut parts = Vec::new();
    let (id0, skip, id1) = (simm & 0xF, simm >> 4 & 7, simm >> 7 & 0xF);
    if id0 != 0 {
        parts.push(format!("instid0({})", name(&IDS, id0)));
    }
    if skip != 0 {
        parts.push(format!("instskip({})", name(&SKIPS, skip)));
    }
    if id1 != 0 {
        parts.push(format!("instid1({})", name(&IDS, id1)));
    }
    if parts.is_empty() {
        out.push('0');
    } else {
        out.push_str(&parts.join(" | "));
    }
}

/// `s_waitcnt_depctr` / GFX12's `s_wait_alu`: the dependency counters
/// that wait (below their maximum) by name, in LLVM's table order
/// (`AMDGPUAsmUtils.cpp` DepCtr): hold_cnt [7], sa_sdst [0], va_vdst
/// [15:12], va_sdst [11:9], va_ssrc [8], va_vcc [1], vm_vsrc [4:2].
fn depctr(out: &mut String, simm: u32) {
    const FIELDS: [(&str, u32, u32); 7] = [
        ("depctr_hold_cnt", 7, 1),
        ("depctr_sa_sdst", 0, 1),
        ("depctr_va_vdst", 12, 4),
        ("depctr_va_sdst", 9, 3),
        ("depctr_va_ssrc", 8, 1),
        ("depctr_va_vcc", 1, 1),
        ("depctr_vm_vsrc", 2, 3),
    ];
    let parts: Vec<String> = FIELDS
        .iter()
        .filter_map(|&(name, at, width)| {
            let max = (1 << width) - 1;
            let v = simm >> at & max;
            (v != max).then(|| format!("{name}({v})"))
        })
        .collect();
    if parts.is_empty() {
        let _ = write!(out, "{simm:#x}");
    } else {
        out.push_str(&parts.join(" "));
    }
}

/// GFX11+ `sendmsg(...)`: message ids differ from GFX9's (RDNA3 ISA,
/// "Message Types"); ours send only MSG_INTERRUPT and the `_rtn` ones.
fn sendmsg_gfx11(out: &mut String, simm: u32) {
    let name = match simm {
        1 => "MSG_INTERRUPT",
        2 => "MSG_HS_TESSFACTOR",
        3 => "MSG_DEALLOC_VGPRS",
        5 => "MSG_STALL_WAVE_GEN",
        6 => "MSG_HALT_WAVES",
        9 => "MSG_GS_ALLOC_REQ",
        0x80 => "MSG_RTN_GET_DOORBELL",
        0x81 => "MSG_RTN_GET_DDID",
        0x82 => "MSG_RTN_GET_TMA",
        0x83 => "MSG_RTN_GET_REALTIME",
        0x84 => "MSG_RTN_SAVE_WAVE",
        0x85 => "MSG_RTN_GET_TBA",
        _ => "",
    };
    if name.is_empty() {
        let _ = write!(out, "{simm}");
    } else {
        let _ = write!(out, "sendmsg({name})");
    }
}

/// A 16-bit immediate as LLVM's `printU16ImmOperand`: decimal when an
/// inline integer could hold it, hex otherwise.
fn u16_imm(out: &mut String, v: u32) {
    if v <= 64 {
        let _ = write!(out, "{v}");
    } else {
        let _ = write!(out, "{v:#x}");
    }
}

/// `sendmsg(...)`: SIMM16 = MSG[3:0] | OP[6:4] | STREAM[9:8] (GFX9 ISA,
/// S_SENDMSG). As LLVM's `printSendMsg`: a known message with a valid
/// operation and stream prints by name (other bits are ignored), one that
/// the three fields encode exactly prints as numbers, anything else as the
/// plain immediate.
fn sendmsg(out: &mut String, simm: u32) {
    const GS_OPS: [&str; 4] = ["GS_OP_NOP", "GS_OP_CUT", "GS_OP_EMIT", "GS_OP_EMIT_CUT"];
    let (msg, op, stream) = (simm & 0xF, (simm >> 4) & 7, (simm >> 8) & 3);
    let name = match msg {
        1 => "MSG_INTERRUPT",
        2 => "MSG_GS",
        3 => "MSG_GS_DONE",
        4 => "MSG_SAVEWAVE",
        5 => "MSG_STALL_WAVE_GEN",
        6 => "MSG_HALT_WAVES",
        7 => "MSG_ORDERED_PS_DONE",
        8 => "MSG_EARLY_PRIM_DEALLOC",
        9 => "MSG_GS_ALLOC_REQ",
        10 => "MSG_GET_DOORBELL",
        _ => "",
    };
    let gs = matches!(msg, 2 | 3);
    let valid_op = match msg {
        2 => (1..=3).contains(&op),
        3 => op <= 3,
        _ => op == 0,
    };
    let valid_stream = (gs && op != 0) || stream == 0;
    if !name.is_empty() && valid_op && valid_stream {
        let _ = match (gs, op) {
            (false, _) => write!(out, "sendmsg({name})"),
            (true, 0) => write!(out, "sendmsg({name}, {})", GS_OPS[0]),
            (true, _) => write!(out, "sendmsg({name}, {}, {stream})", GS_OPS[op as usize]),
        };
    } else if simm >> 10 == 0 {
        let _ = write!(out, "sendmsg({msg}, {op}, {stream})");
    } else {
        let _ = write!(out, "{simm}");
    }
}

/// `s_waitcnt` counters (GFX9: VM_CNT = bits 3:0 and 15:14, EXP_CNT = 6:4,
/// LGKM_CNT = 11:8). LLVM prints the counters that wait, or all three when
/// none does.
fn waitcnt(out: &mut String, simm: u32) {
    const VM_MAX: u32 = 63;
    const EXP_MAX: u32 = 7;
    const LGKM_MAX: u32 = 15;
    let vm = (simm & 0xF) | ((simm >> 10) & 0x30);
    let exp = (simm >> 4) & 7;
    let lgkm = (simm >> 8) & 0xF;
    let all = vm == VM_MAX && exp == EXP_MAX && lgkm == LGKM_MAX;
    let mut parts = Vec::new();
    if vm != VM_MAX || all {
        parts.push(format!("vmcnt({vm})"));
    }
    if exp != EXP_MAX || all {
        parts.push(format!("expcnt({exp})"));
    }
    if lgkm != LGKM_MAX || all {
        parts.push(format!("lgkmcnt({lgkm})"));
    }
    out.push_str(&parts.join(" "));
}

fn smem(p: &mut Printer, i: &Inst, target: Target) {
    if rdna() {
        return smem_rdna(p, i, target);
    }
    let m = i.mnemonic;
    let n = dword_count(m) * if m.contains("cmpswap") { 2 } else { 1 };
    let base = if m.starts_with("s_buffer") || m == "s_atc_probe_buffer" {
        4
    } else {
        2
    };
    let sdata = i.vdst as u8;
    match m {
        "s_memtime" | "s_memrealtime" => return sreg(p.op(), sdata, 2),
        "s_dcache_inv" | "s_dcache_wb" | "s_dcache_inv_vol" | "s_dcache_wb_vol" => return,
        _ => {}
    }
    if m.starts_with("s_atc_probe") {
        let _ = write!(p.op(), "{sdata}");
    } else if !m.starts_with("s_dcache_discard") {
        sreg(p.op(), sdata, n);
    }
    src(p.op(), i.src[0], Ty::Regs(base));
    if i.flags & flag::IMM == 0 {
        src(p.op(), i.src[1], Ty::I32);
    } else if i.flags & flag::SOE != 0 {
        src(p.op(), i.src[1], Ty::I32);
        p.out.push_str(" offset:");
        signed_hex(&mut p.out, i.imm);
    } else {
        signed_hex(p.op(), i.imm);
    }
    // Probes and discards have no GLC; the bit means nothing to them.
    if i.flags & flag::GLC != 0
        && !m.starts_with("s_atc_probe")
        && !m.starts_with("s_dcache_discard")
    {
        p.modifier("glc");
    }
}

/// GFX11/GFX12 SMEM: the offset operand is SOFFSET (`null` when absent)
/// when the immediate is 0 on GFX11, the immediate otherwise, both as
/// `sN offset:..`; GFX11 adds `glc dlc`, GFX12 its cache policy.
fn smem_rdna(p: &mut Printer, i: &Inst, target: Target) {
    let m = i.mnemonic;
    let n = dword_count(m) * if m.contains("cmpswap") { 2 } else { 1 };
    let base = if m.starts_with("s_buffer") || m == "s_atc_probe_buffer" {
        4
    } else {
        2
    };
    let n = if m.ends_with("_b64") { 2 } else { n };
    let sdata = i.vdst as u8;
    if matches!(m, "s_dcache_inv" | "s_gl1_inv") {
        return;
    }
    if m.starts_with("s_atc_probe") || m.starts_with("s_prefetch") {
        let _ = write!(p.op(), "{sdata}");
    } else {
        sreg(p.op(), sdata, n);
    }
    src(p.op(), i.src[0], Ty::Regs(base));
    let gfx12 = Encoding::of(target) == Encoding::Gfx12;
    if i.flags & flag::SOE != 0 {
        src(p.op(), i.src[1], Ty::I32);
        if i.imm != 0 || gfx12 {
            p.out.push_str(" offset:");
            signed_hex(&mut p.out, i.imm);
        }
    } else if i.imm == 0 && !gfx12 {
        sreg(p.op(), code::NULL, 1);
    } else {
        signed_hex(p.op(), i.imm);
    }
    if gfx12 {
        cpol_gfx12(p, m, i.cpol);
    } else {
        for (f, name) in [(flag::GLC, "glc"), (flag::DLC, "dlc")] {
            if i.flags & f != 0 {
                p.modifier(name);
            }
        }
    }
}

/// GFX12 `th:` and `scope:` (LLVM `SIDefines.h` CPol; defaults left out):
/// TH names by kind (load, store, atomic), SCOPE CU/SE/DEV/SYS.
fn cpol_gfx12(p: &mut Printer, m: &str, cpol: u8) {
    let th = cpol & 7;
    let scope = cpol >> 3 & 3;
    let atomic = m.contains("_atomic_");
    let store = m.contains("_store") || matches!(m, "global_wb" | "global_wbinv");
    if th != 0 {
        let name = if atomic {
            match th {
                1 => "TH_ATOMIC_RETURN",
                2 => "TH_ATOMIC_NT",
                3 => "TH_ATOMIC_NT_RETURN",
                4 => "TH_ATOMIC_CASCADE_RT",
                6 => "TH_ATOMIC_CASCADE_NT",
                _ => "",
            }
        } else if store {
            match th {
                1 => "TH_STORE_NT",
                2 => "TH_STORE_HT",
                3 if scope == 3 => "TH_STORE_BYPASS",
                3 => "TH_STORE_RT_WB",
                4 => "TH_STORE_NT_RT",
                5 => "TH_STORE_RT_NT",
                6 => "TH_STORE_NT_HT",
                7 => "TH_STORE_NT_WB",
                _ => "",
            }
        } else {
            match th {
                1 => "TH_LOAD_NT",
                2 => "TH_LOAD_HT",
                3 if scope == 3 => "TH_LOAD_BYPASS",
                3 => "TH_LOAD_LU",
                4 => "TH_LOAD_NT_RT",
                5 => "TH_LOAD_RT_NT",
                6 => "TH_LOAD_NT_HT",
                _ => "",
            }
        };
        if name.is_empty() {
            let _ = write!(p.out, " th:{th}");
        } else {
            let _ = write!(p.out, " th:{name}");
        }
    }
    if scope != 0 {
        let name = ["SCOPE_CU", "SCOPE_SE", "SCOPE_DEV", "SCOPE_SYS"][usize::from(scope)];
        let _ = write!(p.out, " scope:{name}");
    }
}

fn signed_hex(out: &mut String, v: i32) {
    if v < 0 {
        let _ = write!(out, "-{:#x}", v.unsigned_abs());
    } else {
        let _ = write!(out, "{v:#x}");
    }
}

// ---------------------------------------------------------------------------
// Vector ALU
// ---------------------------------------------------------------------------

/// VOP1/VOP2/VOPC mnemonics LLVM prints without `_e32`: they have no VOP3
/// form to tell apart.
fn e32_without_suffix(m: &str) -> bool {
    matches!(
        m,
        "v_readfirstlane_b32" | "v_swap_b32" | "v_nop" | "v_clrexcp" | "v_accvgpr_mov_b32"
    ) || m.starts_with("v_madmk")
        || m.starts_with("v_madak")
        || m.starts_with("v_fmamk")
        || m.starts_with("v_fmaak")
}

fn valu(p: &mut Printer, i: &Inst, target: Target) {
    let m = i.mnemonic;
    let (dty, mut sty) = valu_types(m);
    // GFX11+ reads the shift of `v_alignbit_b32`/`v_alignbyte_b32` as a
    // 16-bit operand (LLVM's true16 VOP3 profile for them).
    if rdna() && matches!(m, "v_alignbit_b32" | "v_alignbyte_b32") {
        sty[2] = Ty::I16;
    }
    // The operation's short-encoding family, which fixes the source count
    // and the `_e64` suffix: GFX9 VOP3 opcodes are the VOPC opcode, 0x100 +
    // the VOP2 one, 0x140 + the VOP1 one, and VOP3-only from 0x1C0 (GFX9
    // ISA, "VOP3 Opcodes").
    // GFX11+ puts VOP1 at 0x180 + its opcode and VOP3-only from 0x200
    // (RDNA3 ISA, "VOP3 Opcodes").
    let family = match (i.format, i.opcode, rdna()) {
        (Format::Vop3, 0..=0xFF, _) => Format::Vopc,
        (Format::Vop3, 0x100..=0x13F, _) => Format::Vop2,
        (Format::Vop3, 0x140..=0x1BF, false) => Format::Vop1,
        (Format::Vop3, 0x180..=0x1FF, true) => Format::Vop1,
        (Format::Vop3, _, _) => Format::Vop3,
        (f, _, _) => f,
    };
    p.out.push_str(m);
    // Without operands there is nothing for SDWA/DPP/VOP3 to modify.
    if matches!(m, "v_nop" | "v_clrexcp") {
        return;
    }
    match (i.format, i.ext) {
        (_, Ext::Sdwa(_)) => p.out.push_str("_sdwa"),
        (Format::Vop3, Ext::Dpp(_) | Ext::Dpp8(_)) => p.out.push_str("_e64_dpp"),
        (_, Ext::Dpp(_) | Ext::Dpp8(_)) => p.out.push_str("_dpp"),
        (Format::Vop1 | Format::Vop2 | Format::Vopc, _) if !e32_without_suffix(m) => {
            p.out.push_str("_e32");
        }
        (Format::Vop3, _) if family != Format::Vop3 => p.out.push_str("_e64"),
        _ => {}
    }
    if i.format == Format::Vop3p {
        return vop3p(p, i, dty, sty, target);
    }
    let mk = m.starts_with("v_madmk") || m.starts_with("v_fmamk");
    let ak = m.starts_with("v_madak") || m.starts_with("v_fmaak");
    let nsrc = match family {
        _ if mk || ak => 3,
        Format::Vop1 => 1,
        Format::Vop2 | Format::Vopc => 2,
        _ => vop3_sources(m),
    };
    // GFX11+ true16: 16-bit VGPR operands print as their halves, the half
    // from OP_SEL (source k: bit k, destination: bit 3).
    let t16 = |t: Ty| rdna() && matches!(t, Ty::I16 | Ty::F16);
    let op_sel = |b: usize| i.mods.op_sel & (1 << b) != 0;
    // Destination(s). GFX11+ `v_cmpx` writes EXEC only and names none.
    match (family, m) {
        (Format::Vopc, _) if rdna() && m.starts_with("v_cmpx") => {}
        (Format::Vopc, _) => sreg(p.op(), i.sdst, mask_dwords()),
        (_, "v_readfirstlane_b32" | "v_readlane_b32") => sreg(p.op(), i.vdst as u8, 1),
        _ if m.starts_with("v_s_") => sreg(p.op(), i.vdst as u8, 1),
        (_, "v_accvgpr_mov_b32") => range(p.op(), "a", i.vdst.into(), 1),
        _ if t16(dty) => half_reg(p.op(), i.vdst, op_sel(3)),
        _ => {
            range(p.op(), "v", i.vdst.into(), dty.dwords());
            if is_vop3b(m) {
                sreg(p.op(), i.sdst, mask_dwords());
            }
        }
    }
    let (neg, abs, sext) = match i.ext {
        Ext::Sdwa(s) => (
            i.mods.neg,
            i.mods.abs,
            u8::from(s.src0_sext) | (u8::from(s.src1_sext) << 1),
        ),
        _ => (i.mods.neg, i.mods.abs, 0),
    };
    for k in 0..nsrc {
        let mut ty = sty[k];
        if m == "v_readlane_b32" && k == 1 || m == "v_writelane_b32" && k > 0 {
            ty = Ty::I32;
        }
        // Float operands take NEG/ABS, integer ones SDWA's SEXT; LLVM
        // ignores the other bits (`v_cndmask_b32` takes NEG/ABS on its
        // data; the packed `v_pk_fmac_f16` takes none in SDWA).
        let float = matches!(ty, Ty::F16 | Ty::F32 | Ty::F64 | Ty::V2F16)
            || (m == "v_cndmask_b32" && k < 2);
        let none = m == "v_pk_fmac_f16" && matches!(i.ext, Ext::Sdwa(_));
        let bit = |f: u8, want_float: bool| !none && float == want_float && f & (1 << k) != 0;
        // The K constant of madmk/madak prints as its 32 bits.
        if let (Src::Literal(l), true) = (i.src[k], (mk && k == 1) || (ak && k == 2)) {
            let _ = write!(p.op(), "{l:#x}");
            continue;
        }
        src_mods(
            p.op(),
            i.src[k],
            ty,
            (bit(neg, true), bit(abs, true), bit(sext, false)),
            t16(ty).then(|| op_sel(k)),
        );
    }
    // The carry-in / condition mask: VCC in the short encoding, an SGPR pair
    // in VOP3 (one SGPR in GFX11+'s wave32).
    if vop2_reads_vcc(m) {
        let mask = if rdna() { Ty::I32 } else { Ty::I64 };
        src(p.op(), i.src[2], mask);
    }
    if rdna() {
        return valu_mods_rdna(p, i, family, nsrc);
    }
    match i.ext {
        Ext::Sdwa(s) => sdwa(p, i, &s, family),
        Ext::Dpp(d) => dpp(p, &d),
        _ => {
            // GFX9 has OP_SEL only on the VOP3-only operations with 16-bit
            // sources; the promoted VOP1/VOP2/VOPC ones ignore the bits.
            let half = sty[..nsrc].iter().any(|t| matches!(t, Ty::I16 | Ty::F16));
            if i.mods.op_sel != 0 && family == Format::Vop3 && half && !m.contains("_legacy_") {
                let bits: Vec<String> = (0..=nsrc)
                    .map(|b| {
                        // The destination's bit is bit 3 whatever the count.
                        let bit = if b == nsrc { 3 } else { b };
                        ((i.mods.op_sel >> bit) & 1).to_string()
                    })
                    .collect();
                let _ = write!(p.out, " op_sel:[{}]", bits.join(","));
            }
            if i.mods.clamp {
                p.modifier("clamp");
            }
            omod(p, i.mods.omod);
            if m.starts_with("v_bitop3_") && i.imm != 0 {
                let _ = write!(p.out, " bitop3:{:#x}", i.imm);
            }
        }
    }
}

/// GFX11+ VALU modifiers: OP_SEL of the VOP3 encoding (sources, then
/// the destination) whenever set, clamp, omod, then DPP16/DPP8.
fn valu_mods_rdna(p: &mut Printer, i: &Inst, family: Format, nsrc: usize) {
    let m = i.mnemonic;
    // `v_cndmask_b16` shows its halves by the registers alone.
    if i.format == Format::Vop3 && i.mods.op_sel != 0 && m != "v_cndmask_b16" {
        let bits: Vec<String> = (0..=nsrc)
            .map(|b| {
                let bit = if b == nsrc { 3 } else { b };
                ((i.mods.op_sel >> bit) & 1).to_string()
            })
            .collect();
        let _ = write!(p.out, " op_sel:[{}]", bits.join(","));
    }
    if i.mods.clamp {
        p.modifier("clamp");
    }
    if family != Format::Vopc {
        omod(p, i.mods.omod);
    }
    match i.ext {
        Ext::Dpp(d) => dpp(p, &d),
        Ext::Dpp8(d) => dpp8(p, &d),
        _ => {}
    }
}

/// `dpp8:[..]` and `fi:1` (GFX11+).
fn dpp8(p: &mut Printer, d: &Dpp8) {
    let sel: Vec<String> = (0..8).map(|l| d.select(l).to_string()).collect();
    let _ = write!(p.out, " dpp8:[{}]", sel.join(","));
    if d.fi {
        p.modifier("fi:1");
    }
}

/// VOPD: `X vdst, srcs :: Y vdst, srcs`. The accumulator of `fmac`/
/// `dot2acc` and `cndmask`'s VCC_LO are implied; `fmamk`/`fmaak` show K.
fn vopd(p: &mut Printer, i: &Inst, target: Target) {
    vopd_op(p, i.mnemonic, i.vdst, &i.src);
    p.out.push_str(" :: ");
    p.first = true;
    match i.ext {
        Ext::Vopd(y) => vopd_op(p, y.mnemonic(target), y.vdst.into(), &y.sources(i, target)),
        _ => p.out.push('?'),
    }
}

fn vopd_op(p: &mut Printer, m: &str, vdst: u16, srcs: &[Src; 3]) {
    p.out.push_str(m);
    let op = m.strip_prefix("v_dual_").unwrap_or(m);
    let ty = if op.contains("dot2acc") {
        Ty::V2F16
    } else if op.ends_with("_f32") {
        Ty::F32
    } else {
        Ty::I32
    };
    let n = match op {
        "mov_b32" => 1,
        "fmamk_f32" | "fmaak_f32" => 3,
        _ => 2,
    };
    range(p.op(), "v", vdst.into(), 1);
    for (k, s) in srcs.iter().enumerate().take(n) {
        let k_operand = (op == "fmamk_f32" && k == 1) || (op == "fmaak_f32" && k == 2);
        match s {
            Src::Literal(l) if k_operand => {
                let _ = write!(p.op(), "{l:#x}");
            }
            _ => src(p.op(), *s, ty),
        }
    }
}

fn omod(p: &mut Printer, omod: u8) {
    match omod {
        1 => p.modifier("mul:2"),
        2 => p.modifier("mul:4"),
        3 => p.modifier("div:2"),
        _ => {}
    }
}

fn sel(s: Sel) -> String {
    match s {
        Sel::Byte(b) => format!("BYTE_{b}"),
        Sel::Word(w) => format!("WORD_{w}"),
        Sel::Dword => "DWORD".to_string(),
    }
}

fn sdwa(p: &mut Printer, i: &Inst, s: &Sdwa, family: Format) {
    if i.mods.clamp {
        p.modifier("clamp");
    }
    omod(p, i.mods.omod);
    if family != Format::Vopc {
        let _ = write!(p.out, " dst_sel:{}", sel(s.dst_sel));
        let unused = ["UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE", "?"];
        let _ = write!(
            p.out,
            " dst_unused:{}",
            unused[usize::from(s.dst_unused & 3)]
        );
    }
    let _ = write!(p.out, " src0_sel:{}", sel(s.src0_sel));
    if family != Format::Vop1 {
        let _ = write!(p.out, " src1_sel:{}", sel(s.src1_sel));
    }
}

/// DPP_CTRL by its GFX9 ranges (GFX9 ISA, "DPP"); gfx90a adds
/// `row_newbcast`. LLVM prints a set BOUND_CTRL bit as `bound_ctrl:1`.
fn dpp(p: &mut Printer, d: &Dpp) {
    let c = d.ctrl;
    let text = match c {
        0x000..=0x0FF => format!(
            "quad_perm:[{},{},{},{}]",
            c & 3,
            (c >> 2) & 3,
            (c >> 4) & 3,
            (c >> 6) & 3
        ),
        0x101..=0x10F => format!("row_shl:{}", c & 0xF),
        0x111..=0x11F => format!("row_shr:{}", c & 0xF),
        0x121..=0x12F => format!("row_ror:{}", c & 0xF),
        0x130 => "wave_shl:1".into(),
        0x134 => "wave_rol:1".into(),
        0x138 => "wave_shr:1".into(),
        0x13C => "wave_ror:1".into(),
        0x140 => "row_mirror".into(),
        0x141 => "row_half_mirror".into(),
        0x142 => "row_bcast:15".into(),
        0x143 => "row_bcast:31".into(),
        0x150..=0x15F if rdna() => format!("row_share:{}", c & 0xF),
        0x160..=0x16F if rdna() => format!("row_xmask:{}", c & 0xF),
        0x150..=0x15F => format!("row_newbcast:{}", c & 0xF),
        _ => format!("?dpp{c:#x}"),
    };
    p.modifier(&text);
    let _ = write!(
        p.out,
        " row_mask:{:#x} bank_mask:{:#x}",
        d.row_mask, d.bank_mask
    );
    if d.bound_ctrl {
        p.modifier("bound_ctrl:1");
    }
    if d.fi {
        p.modifier("fi:1");
    }
}

fn vop3p(p: &mut Printer, i: &Inst, dty: Ty, sty: [Ty; 3], target: Target) {
    let m = i.mnemonic;
    if is_mai(m) {
        return mai(p, i, target);
    }
    if m.starts_with("v_wmma_") {
        return wmma(p, i, target);
    }
    match m {
        "v_accvgpr_write_b32" => {
            range(p.op(), "a", i.vdst.into(), 1);
            src(p.op(), i.src[0], Ty::I32);
            return;
        }
        "v_accvgpr_read_b32" => {
            range(p.op(), "v", i.vdst.into(), 1);
            src(p.op(), i.src[0], Ty::I32);
            return;
        }
        "v_accvgpr_mov_b32" => {
            range(p.op(), "a", i.vdst.into(), 1);
            src(p.op(), i.src[0], Ty::I32);
            return;
        }
        _ => {}
    }
    let nsrc = if m.starts_with("v_pk_fma")
        || m.starts_with("v_pk_mad")
        || m.starts_with("v_fma_mix")
        || m.starts_with("v_dot")
    {
        3
    } else {
        2
    };
    let mix = m.starts_with("v_fma_mix");
    let dot = m.starts_with("v_dot");
    let (dty, sty) = if mix {
        (Ty::F32, [Ty::F32; 3])
    } else if dot {
        (dty, [Ty::I32, Ty::I32, dty])
    } else {
        (dty, sty)
    };
    // gfx950's stand-alone scale load has no destination operand.
    if m != "v_mfma_ld_scale_b32" {
        range(p.op(), "v", i.vdst.into(), dty.dwords());
    }
    for (k, ty) in sty.iter().enumerate().take(nsrc) {
        let neg = mix && i.mods.neg & (1 << k) != 0;
        let abs = mix && i.mods.neg_hi & (1 << k) != 0;
        src_mods(p.op(), i.src[k], *ty, (neg, abs, false), None);
    }
    // The integer dot products have no OP_SEL operands.
    let no_op_sel = m.starts_with("v_dot4_") || m.starts_with("v_dot8_");
    let list = |bits: u8| -> String {
        let v: Vec<String> = (0..nsrc).map(|b| ((bits >> b) & 1).to_string()).collect();
        v.join(",")
    };
    let all = (1u8 << nsrc) - 1;
    if i.mods.op_sel & all != 0 && !no_op_sel {
        let _ = write!(p.out, " op_sel:[{}]", list(i.mods.op_sel));
    }
    let hi_default = if mix { 0 } else { all };
    if i.mods.op_sel_hi & all != hi_default && !no_op_sel {
        let _ = write!(p.out, " op_sel_hi:[{}]", list(i.mods.op_sel_hi));
    }
    if !mix {
        if i.mods.neg & all != 0 {
            let _ = write!(p.out, " neg_lo:[{}]", list(i.mods.neg));
        }
        if i.mods.neg_hi & all != 0 {
            let _ = write!(p.out, " neg_hi:[{}]", list(i.mods.neg_hi));
        }
    }
    if i.mods.clamp {
        p.modifier("clamp");
    }
}

/// Register counts of an MAI operation: (A, B, C/D) dwords per lane.
///
/// From the shape `MxNxK` and block count B (`_Nb` in gfx940 names; older
/// names imply it), each lane holds M·K·B/64 elements of A, N·K·B/64 of B
/// and M·N·B/64 of C/D (CDNA3 ISA, "Matrix Arithmetic Instructions").
fn mai_shape(m: &str) -> (u8, u8, u8) {
    let rest = m
        .trim_start_matches("v_mfma_")
        .trim_start_matches("v_smfmac_");
    let (dtype, rest) = rest.split_once('_').unwrap_or(("f32", rest));
    let dims: Vec<u32> = rest
        .split(['x', '_'])
        .take(3)
        .map(|d| {
            d.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or(1)
        })
        .collect();
    let (mm, nn, kk) = match dims.as_slice() {
        [a, b, c] => (*a, *b, *c),
        _ => (1, 1, 1),
    };
    let tail = rest.rsplit('x').next().unwrap_or("");
    // Source element bits.
    let src_bits = if tail.contains("f64") {
        64
    } else if tail.contains("f32") {
        32
    } else if tail.contains("i8") || tail.contains("fp8") || tail.contains("bf8") {
        8
    } else {
        16
    };
    let explicit = rest
        .split('_')
        .find_map(|t| t.strip_suffix('b').and_then(|n| n.parse::<u32>().ok()));
    let old_style = tail.chars().next().is_some_and(|c| c.is_ascii_digit())
        && !tail
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .starts_with('_');
    let blocks = if let Some(b) = explicit {
        b
    } else if mm == 4 {
        if src_bits == 64 { 4 } else { 16 }
    } else if old_style {
        // Elements per K·B of the old names at 32×32 and 16×16.
        let per = match (src_bits, tail.contains("bf16") && !tail.contains("1k"), mm) {
            (32, _, 32) => 2,
            (32, _, _) => 4,
            (16, true, 32) => 4,
            (16, true, _) => 8,
            (64, _, _) => 4,
            (_, _, 32) => 8,
            _ => 16,
        };
        (per / kk.max(1)).max(1)
    } else {
        1
    };
    let sparse = m.starts_with("v_smfmac");
    let dbits = if dtype == "f64" { 64 } else { 32 };
    let regs = |elems: u32, bits: u32| ((elems * bits).div_ceil(32)) as u8;
    let a = regs(mm * kk * blocks / 64 / if sparse { 2 } else { 1 }, src_bits);
    let b = regs(nn * kk * blocks / 64, src_bits);
    let d = regs(mm * nn * blocks / 64, dbits);
    (a, b, d)
}

fn mai(p: &mut Printer, i: &Inst, target: Target) {
    if i.mnemonic.ends_with("_f8f6f4") {
        return mai_f8f6f4(p, i);
    }
    let (a, b, d) = mai_shape(i.mnemonic);
    let acc_cd = i.flags & flag::ACC_CD != 0;
    range(p.op(), if acc_cd { "a" } else { "v" }, i.vdst.into(), d);
    src(p.op(), i.src[0], Ty::Regs(a));
    src(p.op(), i.src[1], Ty::Regs(b));
    if i.mnemonic.starts_with("v_smfmac") {
        src(p.op(), i.src[2], Ty::I32);
    } else {
        let cty = if i.mnemonic.contains("f64") && !matches!(i.src[2], Src::Vgpr(_) | Src::Agpr(_))
        {
            Ty::F64
        } else {
            Ty::Regs(d)
        };
        src(p.op(), i.src[2], cty);
    }
    let Ext::Mai(Mai { cbsz, abid, blgp }) = i.ext else {
        return;
    };
    if cbsz != 0 {
        let _ = write!(p.out, " cbsz:{cbsz}");
    }
    if abid != 0 {
        let _ = write!(p.out, " abid:{abid}");
    }
    // gfx940 reuses BLGP as per-source negation for the f64 operations.
    if blgp != 0 && target.gfx940_insts() && i.mnemonic.contains("f64") {
        let _ = write!(
            p.out,
            " neg:[{},{},{}]",
            blgp & 1,
            (blgp >> 1) & 1,
            (blgp >> 2) & 1
        );
    } else if blgp != 0 {
        let _ = write!(p.out, " blgp:{blgp}");
    }
}

/// gfx950's `f8f6f4` MFMA, scaled or not: A and B as wide as the formats
/// CBSZ and BLGP name (`exec::mfma_mx`; `llvm-objdump` prints the tuple
/// from them too), then the two scale VGPRs with their byte selects as
/// OP_SEL/OP_SEL_HI (whose third bit is always clear, so OP_SEL_HI always
/// prints), then the formats. ABID, 1 in every scaled form, is not shown.
fn mai_f8f6f4(p: &mut Printer, i: &Inst) {
    use crate::exec::mfma_mx::{Format, Op};
    let Ext::Mai(mai) = i.ext else {
        return;
    };
    let Some(op) = Op::of(i.mnemonic) else {
        return;
    };
    let acc_cd = i.flags & flag::ACC_CD != 0;
    let d = op.cd_regs() as u8;
    range(p.op(), if acc_cd { "a" } else { "v" }, i.vdst.into(), d);
    let regs = |code: u8| Format::of(code).map_or(8, Format::regs) as u8;
    src(p.op(), i.src[0], Ty::Regs(regs(mai.cbsz)));
    src(p.op(), i.src[1], Ty::Regs(regs(mai.blgp)));
    let cty = if matches!(i.src[2], Src::Vgpr(_) | Src::Agpr(_)) {
        Ty::Regs(d)
    } else {
        Ty::F32
    };
    src(p.op(), i.src[2], cty);
    if op.scaled {
        let [(sa, a), (sb, b)] = i.scale_sources();
        src(p.op(), sa, Ty::I32);
        src(p.op(), sb, Ty::I32);
        if (a | b) & 1 != 0 {
            let _ = write!(p.out, " op_sel:[{},{},0]", a & 1, b & 1);
        }
        let _ = write!(p.out, " op_sel_hi:[{},{},0]", a >> 1, b >> 1);
    }
    if mai.cbsz != 0 {
        let _ = write!(p.out, " cbsz:{}", mai.cbsz);
    }
    if mai.blgp != 0 {
        let _ = write!(p.out, " blgp:{}", mai.blgp);
    }
}

/// GFX11/GFX12 WMMA: D, A, B and C as register ranges of the
/// instruction's widths (the executor's, `exec::wmma`), then OP_SEL,
/// NEG_LO, NEG_HI over the three sources and clamp. OPSEL_HI is not
/// printed (LLVM writes ones there and shows none).
fn wmma(p: &mut Printer, i: &Inst, target: Target) {
    use crate::exec::wmma::{Out, ab_regs, cd_regs, shape};
    let Some(s) = shape(i.mnemonic) else {
        let _ = write!(p.out, "{}", i.mnemonic);
        return;
    };
    let family = target.family();
    let d = cd_regs(family, s.out) as u8;
    range(p.op(), "v", i.vdst.into(), d);
    src(p.op(), i.src[0], Ty::Regs(ab_regs(family, s.a, s.k) as u8));
    src(p.op(), i.src[1], Ty::Regs(ab_regs(family, s.b, s.k) as u8));
    let cty = match (i.src[2], s.out) {
        (Src::Vgpr(_), _) => Ty::Regs(d),
        (_, Out::F32 | Out::Bf16) => Ty::F32,
        (_, Out::F16) => Ty::F16,
        (_, Out::I32) => Ty::I32,
    };
    src(p.op(), i.src[2], cty);
    let three = |bits: u8| format!("[{},{},{}]", bits & 1, (bits >> 1) & 1, (bits >> 2) & 1);
    if i.mods.op_sel & 7 != 0 {
        let _ = write!(p.out, " op_sel:{}", three(i.mods.op_sel));
    }
    if i.mods.neg != 0 {
        let _ = write!(p.out, " neg_lo:{}", three(i.mods.neg));
    }
    if i.mods.neg_hi != 0 {
        let _ = write!(p.out, " neg_hi:{}", three(i.mods.neg_hi));
    }
    if i.mods.clamp {
        p.modifier("clamp");
    }
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

/// Data width in dwords of a memory operation, from its mnemonic.
fn mem_dwords(m: &str) -> u8 {
    let base = if m.contains("_x2")
        || m.ends_with("64")
        || m.contains("_b64")
        || m.contains("_u64")
        || m.contains("_i64")
    {
        2
    } else {
        dword_count(m)
    };
    // d16 formats pack two components per dword.
    if m.contains("_d16_") && m.contains("format") {
        return match base {
            1 | 2 => 1,
            _ => 2,
        };
    }
    base
}

fn ds(p: &mut Printer, i: &Inst) {
    let m = i.mnemonic;
    let gds = i.flags & flag::GDS != 0;
    let n = mem_dwords(m);
    // Two addresses (OFFSET0/OFFSET1 apart): read2, write2, wrxchg2 (GFX11
    // names: load_2addr, store_2addr, storexchg_2addr).
    let two = [
        "ds_read2",
        "ds_write2",
        "ds_wrxchg2",
        "ds_load_2addr",
        "ds_store_2addr",
        "ds_storexchg_2addr",
    ]
    .iter()
    .any(|p| m.starts_with(p));
    let load = m.starts_with("ds_read") || m.starts_with("ds_load");
    let rtn = m.contains("_rtn_")
        || load
        || matches!(
            m,
            "ds_swizzle_b32" | "ds_permute_b32" | "ds_bpermute_b32" | "ds_append" | "ds_consume"
        );
    let vty = |s: Src| match s {
        Src::Agpr(r) => ("a", r),
        Src::Vgpr(r) => ("v", r),
        _ => ("v", 0),
    };
    let acc = i.flags & flag::ACC != 0;
    if rtn {
        let dn = if two && (load || m.contains("xchg")) {
            n * 2
        } else if m == "ds_condxchg32_rtn_b64" {
            2
        } else {
            n
        };
        range(p.op(), if acc { "a" } else { "v" }, i.vdst.into(), dn);
    }
    if matches!(m, "ds_append" | "ds_consume" | "ds_nop") {
        // No address and no data.
    } else if m == "ds_read_addtid_b32" {
    } else if m == "ds_write_addtid_b32" {
        let (pre, r) = vty(i.src[1]);
        range(p.op(), pre, r.into(), 1);
    } else {
        src(p.op(), i.src[0], Ty::I32);
        let ndata = if load || matches!(m, "ds_swizzle_b32" | "ds_nop") {
            0
        } else if two || m.contains("cmpst") || m.contains("mskor") || m == "ds_wrap_rtn_b32" {
            2
        } else {
            1
        };
        for k in 0..ndata {
            let (pre, r) = vty(i.src[1 + k]);
            range(p.op(), pre, r.into(), n);
        }
    }
    let off0 = i.imm & 0xFF;
    let off1 = (i.imm >> 8) & 0xFF;
    if two {
        if off0 != 0 {
            let _ = write!(p.out, " offset0:{off0}");
        }
        if off1 != 0 {
            let _ = write!(p.out, " offset1:{off1}");
        }
    } else if m == "ds_swizzle_b32" {
        swizzle(&mut p.out, (i.imm & 0xFFFF) as u16);
    } else if i.imm & 0xFFFF != 0 {
        let _ = write!(p.out, " offset:{}", i.imm & 0xFFFF);
    }
    // LLVM has no GDS on gfx90a/gfx942: it rejects most encodings with the
    // bit and drops it from the rest, so objdump never prints this.
    if gds {
        p.modifier("gds");
    }
}

/// `ds_swizzle_b32`'s offset as LLVM's `printSwizzle` spells the pattern
/// (GFX9 ISA, DS_SWIZZLE_B32; AMDGPU "Swizzle" operand syntax): rotate and
/// FFT modes from 0xC000, QUAD_PERM when bits 15:8 are 0x80, else (bit 15
/// clear) the AND/OR/XOR bitmask mode, shown as SWAP, REVERSE, BROADCAST
/// or a per-bit pattern.
fn swizzle(out: &mut String, imm: u16) {
    const ROTATE_MODE: u16 = 0xC000;
    const FFT_MODE: u16 = 0xE000;
    const QUAD_PERM: u16 = 0x8000;
    const BITMASK_MAX: u16 = 0x1F;
    if imm == 0 {
        return;
    }
    out.push_str(" offset:");
    if imm >= FFT_MODE {
        let _ = write!(out, "swizzle(FFT,{})", imm & 0x1F);
    } else if imm >= ROTATE_MODE {
        let _ = write!(
            out,
            "swizzle(ROTATE,{},{})",
            (imm >> 10) & 1,
            (imm >> 5) & 0x1F
        );
    } else if imm & 0xFF00 == QUAD_PERM {
        let lanes: Vec<String> = (0..4).map(|l| ((imm >> (2 * l)) & 3).to_string()).collect();
        let _ = write!(out, "swizzle(QUAD_PERM,{})", lanes.join(","));
    } else if imm & QUAD_PERM == 0 {
        let and = imm & BITMASK_MAX;
        let or = (imm >> 5) & BITMASK_MAX;
        let xor = (imm >> 10) & BITMASK_MAX;
        let group = BITMASK_MAX - and + 1;
        if and == BITMASK_MAX && or == 0 && xor.count_ones() == 1 {
            let _ = write!(out, "swizzle(SWAP,{xor})");
        } else if and == BITMASK_MAX && or == 0 && xor > 0 && (xor + 1).is_power_of_two() {
            let _ = write!(out, "swizzle(REVERSE,{})", xor + 1);
        } else if group > 1 && group.is_power_of_two() && or < group && xor == 0 {
            let _ = write!(out, "swizzle(BROADCAST,{group},{or})");
        } else {
            // Each lane-id bit, high first: what lane 0 and lane 31 read.
            let probe0 = or ^ xor;
            let probe1 = ((BITMASK_MAX & and) | or) ^ xor;
            let bits: String = (0..5)
                .rev()
                .map(|b| match ((probe0 >> b) & 1, (probe1 >> b) & 1) {
                    (0, 0) => '0',
                    (1, 1) => '1',
                    (0, _) => 'p',
                    _ => 'i',
                })
                .collect();
            let _ = write!(out, "swizzle(BITMASK_PERM,\"{bits}\")");
        }
    } else {
        let _ = write!(out, "{imm}");
    }
}

/// MTBUF `format:[..]`: DFMT = bits 3:0, NFMT = bits 6:4 of `fmt` (GFX9
/// ISA, "Buffer Data/Numeric Format"). LLVM leaves out the defaults
/// (DATA_FORMAT_8, NUM_FORMAT_UNORM), and the whole modifier when both are.
fn mtbuf_format(out: &mut String, fmt: u8) {
    const DFMT: [&str; 16] = [
        "INVALID",
        "8",
        "16",
        "8_8",
        "32",
        "16_16",
        "10_11_11",
        "11_11_10",
        "10_10_10_2",
        "2_10_10_10",
        "8_8_8_8",
        "32_32",
        "16_16_16_16",
        "32_32_32",
        "32_32_32_32",
        "RESERVED_15",
    ];
    const NFMT: [&str; 8] = [
        "UNORM",
        "SNORM",
        "USCALED",
        "SSCALED",
        "UINT",
        "SINT",
        "RESERVED_6",
        "FLOAT",
    ];
    const DFMT_DEFAULT: usize = 1;
    const NFMT_DEFAULT: usize = 0;
    let (d, n) = (usize::from(fmt & 0xF), usize::from((fmt >> 4) & 7));
    let mut parts = Vec::new();
    if d != DFMT_DEFAULT {
        parts.push(format!("BUF_DATA_FORMAT_{}", DFMT[d]));
    }
    if n != NFMT_DEFAULT {
        parts.push(format!("BUF_NUM_FORMAT_{}", NFMT[n]));
    }
    if !parts.is_empty() {
        let _ = write!(out, " format:[{}]", parts.join(","));
    }
}

/// Cache-policy modifiers: gfx90a `glc slc scc`, gfx942/gfx950 `sc0 sc1 nt`.
fn cache_policy(p: &mut Printer, flags: u16, target: Target) {
    let names: &[(u16, &str)] = if target.gfx940_insts() {
        &[(flag::GLC, "sc0"), (flag::NT, "nt"), (flag::SLC, "sc1")]
    } else {
        &[(flag::GLC, "glc"), (flag::SLC, "slc"), (flag::SCC, "scc")]
    };
    for (f, n) in names {
        if flags & f != 0 {
            p.modifier(n);
        }
    }
}

fn flat(p: &mut Printer, i: &Inst, target: Target) {
    let m = i.mnemonic;
    // GFX12's cache controls (VGLOBAL encodings) have no operands.
    if matches!(m, "global_inv" | "global_wb" | "global_wbinv") {
        return cpol_gfx12(p, m, i.cpol);
    }
    let acc = i.flags & flag::ACC != 0;
    let vreg = if acc { "a" } else { "v" };
    let n = mem_dwords(m);
    let atomic = m.contains("_atomic_");
    let store = m.contains("_store_");
    let lds = m.contains("_lds_");
    // An atomic returns the old value when GLC (SC0 on gfx942) is set; a
    // load with the LDS bit writes LDS instead of VDST.
    let returns =
        !store && !lds && i.flags & flag::LDS == 0 && (!atomic || i.flags & flag::GLC != 0);
    if returns {
        range(p.op(), vreg, i.vdst.into(), n);
    }
    let addr_n = if i.format == Format::Scratch {
        1
    } else if matches!(i.src[2], Src::None) {
        2
    } else {
        1
    };
    src(p.op(), i.src[0], Ty::Regs(addr_n));
    if store || atomic {
        let dn = if m.contains("cmpswap") { n * 2 } else { n };
        let r = match i.src[1] {
            Src::Vgpr(r) | Src::Agpr(r) => r,
            _ => 0,
        };
        range(p.op(), vreg, r.into(), dn);
    }
    if i.format != Format::Flat {
        let sn = if i.format == Format::Global { 2 } else { 1 };
        src(p.op(), i.src[2], Ty::Regs(sn));
    }
    if i.imm != 0 {
        let _ = write!(p.out, " offset:{}", i.imm);
    }
    match Encoding::of(target) {
        Encoding::Gfx12 => return cpol_gfx12(p, m, i.cpol),
        Encoding::Gfx11 => return cpol_gfx11(p, i.flags),
        Encoding::Gfx9 => {}
    }
    cache_policy(p, i.flags, target);
    if i.flags & flag::LDS != 0 && !lds {
        p.modifier("lds");
    }
}

/// GFX11's cache policy bits, in LLVM's order.
fn cpol_gfx11(p: &mut Printer, flags: u16) {
    for (f, name) in [(flag::GLC, "glc"), (flag::SLC, "slc"), (flag::DLC, "dlc")] {
        if flags & f != 0 {
            p.modifier(name);
        }
    }
}

fn mubuf(p: &mut Printer, i: &Inst, target: Target) {
    let m = i.mnemonic;
    let acc = i.flags & flag::ACC != 0;
    let n = mem_dwords(m);
    let no_data = matches!(
        m,
        "buffer_wbinvl1" | "buffer_wbinvl1_vol" | "buffer_wbl2" | "buffer_inv" | "buffer_invl2"
    );
    if !no_data {
        let dn = if m.contains("cmpswap") { n * 2 } else { n };
        // With the LDS bit the data goes to LDS: no VDATA.
        if i.flags & flag::LDS == 0 {
            range(p.op(), if acc { "a" } else { "v" }, i.vdst.into(), dn);
        }
        let offen = i.flags & flag::OFFEN != 0;
        let idxen = i.flags & flag::IDXEN != 0;
        let an = u8::from(offen) + u8::from(idxen);
        if an == 0 {
            // `buffer_store_lds_dword` has no VADDR operand at all.
            if m != "buffer_store_lds_dword" {
                p.op().push_str("off");
            }
        } else {
            src(p.op(), i.src[0], Ty::Regs(an));
        }
        src(p.op(), i.src[1], Ty::Regs(4));
        src(p.op(), i.src[2], Ty::I32);
        if i.format == Format::Mtbuf {
            mtbuf_format(&mut p.out, i.fmt);
        }
        if idxen {
            p.modifier("idxen");
        }
        if offen {
            p.modifier("offen");
        }
        if i.imm != 0 {
            let _ = write!(p.out, " offset:{}", i.imm);
        }
    }
    match Encoding::of(target) {
        Encoding::Gfx12 => return cpol_gfx12(p, m, i.cpol),
        Encoding::Gfx11 => return cpol_gfx11(p, i.flags),
        Encoding::Gfx9 => {}
    }
    // The cache maintenance ops take no policy on gfx90a and only the scope
    // (SC0/SC1) on gfx942/gfx950.
    let flags = match (no_data, target.gfx940_insts()) {
        (false, _) => i.flags,
        (true, false) => 0,
        (true, true) => i.flags & (flag::GLC | flag::SLC),
    };
    cache_policy(p, flags, target);
    if i.flags & flag::LDS != 0 && !no_data {
        p.modifier("lds");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::inst::decode;
    use Target::{Gfx90a, Gfx942, Gfx950, Gfx1100, Gfx1201};

    /// Words of the formats the built kernels do not (yet) contain, and
    /// their text from `llvm-objdump -d --mcpu=<gfx>` of the pinned
    /// toolchain (nightly-2026-10-25, LLVM 23), run once on a bare AMDGPU
    /// ELF holding the words (as `xtask/src/isa_tables.rs` builds them).
    const LLVM_OBJDUMP: &[(Target, &[u32], &str)] = &[
        // GFX11/GFX12: VOPD with and without the shared literal, a VOP3
        // literal, DPP16 with FI, DPP8 in VOP3, true16 halves in a 32-bit
        // encoding, VOP3P modifiers, SMEM with SGPR and immediate offsets,
        // VGLOBAL/VFLAT's 24-bit offsets and cache policy.
        // GFX12 VBUFFER: 96 bits, TH/SCOPE, a 23-bit offset, NULL SOFFSET.
        (
            Gfx1201,
            &[0xC4050003, 0x40800805, 0x00001001],
            "buffer_load_b32 v5, v1, s[4:7], s3 offen offset:16",
        ),
        (
            Gfx1201,
            &[0xC405C003, 0xC0981004, 0x00000002],
            "buffer_load_b128 v[4:7], v[2:3], s[8:11], s3 idxen offen th:TH_LOAD_NT scope:SCOPE_DEV",
        ),
        (
            Gfx1201,
            &[0xC405407C, 0x00801004, 0x7FFFFF00],
            "buffer_load_b64 v[4:5], off, s[8:11], null offset:8388607",
        ),
        (
            Gfx1201,
            &[0xC4068003, 0x40800805, 0x00000001],
            "buffer_store_b32 v5, v1, s[4:7], s3 offen",
        ),
        (
            Gfx1201,
            &[0xC40D4003, 0x40900805, 0x00000001],
            "buffer_atomic_add_u32 v5, v1, s[4:7], s3 offen th:TH_ATOMIC_RETURN",
        ),
        (
            Gfx1201,
            &[0xC4064002, 0x00801805, 0x00000600],
            "buffer_store_b16 v5, off, s[12:15], s2 offset:6",
        ),
        // GFX11 MUBUF: offen/idxen pairs, null and inline SOFFSET, stores,
        // a returning atomic, cmpswap's data pair, d16.
        (
            Gfx1100,
            &[0xE0507010, 0x03410501],
            "buffer_load_b32 v5, v1, s[4:7], s3 offen offset:16 glc slc dlc",
        ),
        (
            Gfx1100,
            &[0xE05C0FFF, 0x7CC20401],
            "buffer_load_b128 v[4:7], v[1:2], s[8:11], null idxen offen offset:4095",
        ),
        (
            Gfx1100,
            &[0xE0540000, 0x80020400],
            "buffer_load_b64 v[4:5], off, s[8:11], 0",
        ),
        (
            Gfx1100,
            &[0xE0680000, 0x03410501],
            "buffer_store_b32 v5, v1, s[4:7], s3 offen",
        ),
        (
            Gfx1100,
            &[0xE0640006, 0x02030500],
            "buffer_store_b16 v5, off, s[12:15], s2 offset:6",
        ),
        (
            Gfx1100,
            &[0xE0480000, 0x03810501],
            "buffer_load_u16 v5, v1, s[4:7], s3 idxen",
        ),
        (
            Gfx1100,
            &[0xE0D44000, 0x03410501],
            "buffer_atomic_add_u32 v5, v1, s[4:7], s3 offen glc",
        ),
        (
            Gfx1100,
            &[0xE0D00000, 0x03410401],
            "buffer_atomic_cmpswap_b32 v[4:5], v1, s[4:7], s3 offen",
        ),
        (
            Gfx1100,
            &[0xE08C0000, 0x03410501],
            "buffer_load_d16_hi_b16 v5, v1, s[4:7], s3 offen",
        ),
        (
            Gfx1100,
            &[0xC9060501, 0x00020B04],
            "v_dual_add_f32 v0, v1, v2 :: v_dual_mul_f32 v3, v4, v5",
        ),
        (
            Gfx1100,
            &[0xC8830282, 0x00020B04, 0x12345678],
            "v_dual_fmamk_f32 v0, 2, 0x12345678, v129 :: v_dual_fmaak_f32 v3, v4, v5, 0x12345678",
        ),
        (
            Gfx1100,
            &[0xD6130005, 0x03FE0501, 0x12345678],
            "v_fma_f32 v5, v1, v2, 0x12345678",
        ),
        (
            Gfx1100,
            &[0x7E0A02FA, 0xA50CB101],
            "v_mov_b32_dpp v5, v1 quad_perm:[1,0,3,2] row_mask:0xa bank_mask:0x5 bound_ctrl:1 fi:1",
        ),
        (
            Gfx1100,
            &[0xD6130005, 0x040E04E9, 0xFAC68801],
            "v_fma_f32_e64_dpp v5, v1, v2, v3 dpp8:[0,1,2,3,4,5,6,7]",
        ),
        (Gfx1100, &[0x650B0581], "v_add_f16_e32 v5.h, v1.h, v2.h"),
        (
            Gfx1100,
            &[0xD5038105, 0x2A020501],
            "v_add_f32_e64 v5, -|v1|, v2 clamp mul:2",
        ),
        (
            Gfx1100,
            &[0xCC0FCA05, 0x32020501],
            "v_pk_add_f16 v5, v1, v2 op_sel:[1,0] op_sel_hi:[0,1] neg_lo:[1,0] neg_hi:[0,1] clamp",
        ),
        (
            Gfx1100,
            &[0xF4000141, 0x0E1FFFF8],
            "s_load_b32 s5, s[2:3], s7 offset:-0x8",
        ),
        (
            Gfx1201,
            &[0xF4002101, 0x0E000010],
            "s_load_b64 s[4:5], s[2:3], s7 offset:0x10",
        ),
        (
            Gfx1201,
            &[0xEE050004, 0x006C0001, 0x7FFFFF02],
            "global_load_b32 v1, v2, s[4:5] offset:8388607 th:TH_LOAD_NT_HT scope:SCOPE_SYS",
        ),
        (
            Gfx1201,
            &[0xEC05007C, 0x00000001, 0xFFFFF002],
            "flat_load_b32 v1, v[2:3] offset:-16",
        ),
        // DS: offsets, two-address forms, AGPR data (ACC), permutes.
        (
            Gfx90a,
            &[0xD86C0010, 0x00000001],
            "ds_read_b32 v0, v1 offset:16",
        ),
        (
            Gfx90a,
            &[0xD81C0201, 0x00030201],
            "ds_write2_b32 v1, v2, v3 offset0:1 offset1:2",
        ),
        (
            Gfx90a,
            &[0xD8400000, 0x00000201],
            "ds_add_rtn_u32 v0, v1, v2",
        ),
        (Gfx90a, &[0xDBFE0000, 0x04000001], "ds_read_b128 a[4:7], v1"),
        (
            Gfx90a,
            &[0xD87E0000, 0x05000201],
            "ds_bpermute_b32 v5, v1, v2",
        ),
        (
            Gfx90a,
            &[0xD87A001F, 0x05000001],
            "ds_swizzle_b32 v5, v1 offset:swizzle(BITMASK_PERM,\"ppppp\")",
        ),
        (
            Gfx90a,
            &[0xD87A8041, 0x05000001],
            "ds_swizzle_b32 v5, v1 offset:swizzle(QUAD_PERM,1,0,0,1)",
        ),
        (
            Gfx90a,
            &[0xD87AFFFF, 0x05000001],
            "ds_swizzle_b32 v5, v1 offset:swizzle(FFT,31)",
        ),
        (
            Gfx942,
            &[0xD8EE0403, 0x08000006],
            "ds_read2_b64 v[8:11], v6 offset0:3 offset1:4",
        ),
        // MUBUF: addressing modes, SOFFSET, cache policy per target.
        (
            Gfx90a,
            &[0xE0501010, 0x80010102],
            "buffer_load_dword v1, v2, s[4:7], 0 offen offset:16",
        ),
        (
            Gfx90a,
            &[0xE07C0000, 0x02020000],
            "buffer_store_dwordx4 v[0:3], off, s[8:11], s2",
        ),
        (
            Gfx90a,
            &[0xE1086000, 0x80010001],
            "buffer_atomic_add v0, v1, s[4:7], 0 idxen glc",
        ),
        (
            Gfx942,
            &[0xE1086000, 0x80010001],
            "buffer_atomic_add v0, v1, s[4:7], 0 idxen sc0",
        ),
        (
            Gfx90a,
            &[0xE052C000, 0x80010100],
            "buffer_load_dword v1, off, s[4:7], 0 glc slc scc",
        ),
        (
            Gfx942,
            &[0xE052C000, 0x80010100],
            "buffer_load_dword v1, off, s[4:7], 0 sc0 nt sc1",
        ),
        (
            Gfx90a,
            &[0xE0543FFF, 0x04830402],
            "buffer_load_dwordx2 a[4:5], v[2:3], s[12:15], s4 idxen offen offset:4095",
        ),
        // VOP3P: op_sel/op_sel_hi/neg defaults per kind (packed, mix, dot).
        (
            Gfx90a,
            &[0xD38E4000, 0x140E0501],
            "v_pk_fma_f16 v0, v1, v2, v3 op_sel_hi:[0,1,1]",
        ),
        (
            Gfx90a,
            &[0xD3B20000, 0x38020902],
            "v_pk_add_f32 v[0:1], v[2:3], v[4:5] neg_lo:[1,0]",
        ),
        (
            Gfx942,
            &[0xD3A34000, 0x1C0E0501],
            "v_dot2_f32_f16 v0, v1, v2, v3",
        ),
        (
            Gfx90a,
            &[0xD3A00000, 0x9C0E0501],
            "v_fma_mix_f32 v0, v1, v2, -v3 op_sel_hi:[1,1,0]",
        ),
        (
            Gfx942,
            &[0xD3908A04, 0x1801E501],
            "v_pk_mul_f16 v4, v1, 1.0 op_sel:[1,0] neg_hi:[0,1] clamp",
        ),
        // SDWA: selects, sign extension, modifiers, VOPC with an SGPR pair.
        (
            Gfx90a,
            &[0x020004F9, 0x06000501],
            "v_add_f32_sdwa v0, v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD",
        ),
        (
            Gfx942,
            &[0x7E0202F9, 0x00051102],
            "v_mov_b32_sdwa v1, v2 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1",
        ),
        (
            Gfx90a,
            &[0x7D9404F9, 0x04088201],
            "v_cmp_eq_u32_sdwa s[2:3], sext(v1), v2 src0_sel:BYTE_0 src1_sel:WORD_0",
        ),
        (
            Gfx90a,
            &[0x020204F9, 0x06302D01],
            "v_add_f32_sdwa v1, -|v1|, v2 clamp dst_sel:WORD_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_0 src1_sel:DWORD",
        ),
        // DPP: the control kinds, masks, bound_ctrl, gfx90a's row_newbcast.
        (
            Gfx90a,
            &[0x7E0002FA, 0xFF091101],
            "v_mov_b32_dpp v0, v1 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:1",
        ),
        (
            Gfx942,
            &[0x020004FA, 0xFF90B101],
            "v_add_f32_dpp v0, -v1, |v2| quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf",
        ),
        (
            Gfx90a,
            &[0x680206FA, 0xA5014202],
            "v_add_u32_dpp v1, v2, v3 row_bcast:15 row_mask:0xa bank_mask:0x5",
        ),
        (
            Gfx90a,
            &[0x7E0030FA, 0xFF015102],
            "v_ceil_f64_dpp v[0:1], v[2:3] row_newbcast:1 row_mask:0xf bank_mask:0xf",
        ),
        // MFMA: matrix widths from the shape, AGPRs by ACC/ACC_CD, the
        // gfx940 names, f64's BLGP as neg on gfx942, the sparse index.
        (
            Gfx90a,
            &[0xD3CC8000, 0x04020500],
            "v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]",
        ),
        (
            Gfx90a,
            &[0xD3CD1100, 0x64020D04],
            "v_mfma_f32_16x16x16f16 v[0:3], v[4:5], v[6:7], v[0:3] cbsz:1 abid:2 blgp:3",
        ),
        (
            Gfx942,
            &[0xD3C28008, 0x02020300],
            "v_mfma_f32_4x4x1_16b_f32 a[8:11], v0, v1, 0",
        ),
        (
            Gfx90a,
            &[0xD3EE0000, 0xA4020500],
            "v_mfma_f64_16x16x4f64 v[0:7], v[0:1], v[2:3], v[0:7] blgp:5",
        ),
        (
            Gfx942,
            &[0xD3EE0000, 0xA4020500],
            "v_mfma_f64_16x16x4_f64 v[0:7], v[0:1], v[2:3], v[0:7] neg:[1,0,1]",
        ),
        (
            Gfx942,
            &[0xD3CD8010, 0x1C420D04],
            "v_mfma_f32_16x16x16_f16 a[16:19], a[4:5], a[6:7], a[16:19]",
        ),
        (
            Gfx942,
            &[0xD3D68000, 0x04020500],
            "v_mfma_i32_32x32x16_i8 a[0:15], v[0:1], v[2:3], a[0:15]",
        ),
        (
            Gfx942,
            &[0xD3E28000, 0x042A0D04],
            "v_smfmac_f32_16x16x32_f16 a[0:3], v[4:5], v[6:9], v10",
        ),
        (
            Gfx90a,
            &[0xD3D80003, 0x18000105],
            "v_accvgpr_read_b32 v3, a5",
        ),
        (
            Gfx942,
            &[0xD3D90007, 0x18000102],
            "v_accvgpr_write_b32 a7, v2",
        ),
        (
            Gfx90a,
            &[0xD3D90007, 0x180000C1],
            "v_accvgpr_write_b32 a7, -1",
        ),
        // gfx950's bitop3: the truth table in NEG (2:0), ABS (5:3) and
        // OMOD (7:6); words from the gfx950 device library.
        (
            Gfx950,
            &[0xD2340503, 0x8AC2090A],
            "v_bitop3_b32 v3, v10, v4, 48 bitop3:0x6c",
        ),
        (
            Gfx950,
            &[0xD2330723, 0xDC142304],
            "v_bitop3_b16 v35, v4, s17, v5 bitop3:0xfe",
        ),
        // gfx950's f8f6f4 MFMAs: the 128-bit scaled form, tuples from
        // CBSZ/BLGP (`llvm-objdump --mcpu=gfx950` of these words).
        (
            Gfx950,
            &[0xD3AC0000, 0x00022B14, 0xD3AD0800, 0x04021904],
            "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3], v20, v21 \
             op_sel_hi:[0,0,0]",
        ),
        (
            Gfx950,
            &[0xD3AC1800, 0x18022B14, 0xD3AD0B00, 0x84021904],
            "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:9], v[12:15], v[0:3], v20, v21 \
             op_sel:[1,1,0] op_sel_hi:[1,1,0] cbsz:3 blgp:4",
        ),
        (
            Gfx950,
            &[0xD3AC0000, 0x00024320, 0xD3AE0800, 0x04023110],
            "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], v[0:15], v32, v33 \
             op_sel_hi:[0,0,0]",
        ),
        (
            Gfx950,
            &[0xD3AC0000, 0x00022B14, 0xD3AD8800, 0x04021904],
            "v_mfma_scale_f32_16x16x128_f8f6f4 a[0:3], v[4:11], v[12:19], a[0:3], v20, v21 \
             op_sel_hi:[0,0,0]",
        ),
        (
            Gfx950,
            &[0xD3AC0000, 0x00022B14, 0xD3AD0800, 0x1C021904],
            "v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], a[4:11], a[12:19], v[0:3], v20, v21 \
             op_sel_hi:[0,0,0]",
        ),
        // ABID 0: a stand-alone scale load, then the unscaled MFMA.
        (
            Gfx950,
            &[0xD3AC4000, 0x18020501, 0xD3AD0000, 0x04021904],
            "v_mfma_ld_scale_b32 v1, v2",
        ),
        (
            Gfx950,
            &[0xD3AD0000, 0x04021904],
            "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:11], v[12:19], v[0:3]",
        ),
        (
            Gfx950,
            &[0xD3AD0400, 0x84021904],
            "v_mfma_f32_16x16x128_f8f6f4 v[0:3], v[4:7], v[12:15], v[0:3] cbsz:4 blgp:4",
        ),
        (
            Gfx950,
            &[0xD3AE0100, 0x24023110],
            "v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[16:23], v[24:31], v[0:15] cbsz:1 blgp:1",
        ),
    ];

    #[test]
    fn uncompiled_formats_print_like_llvm_objdump() {
        for &(target, words, expected) in LLVM_OBJDUMP {
            let inst =
                decode(words, target).unwrap_or_else(|e| panic!("{target:?} {words:08x?}: {e}"));
            assert_eq!(print(&inst, target), expected, "{target:?} {words:08x?}");
        }
    }

    #[test]
    fn mfma_register_counts_follow_the_shape() {
        // (A, B, C/D) dwords per lane as llvm-objdump prints the register
        // ranges; the old names imply the block count.
        assert_eq!(mai_shape("v_mfma_f32_32x32x1f32"), (1, 1, 32));
        assert_eq!(mai_shape("v_mfma_f32_32x32x2_f32"), (1, 1, 16));
        assert_eq!(mai_shape("v_mfma_f32_16x16x4bf16_1k"), (2, 2, 16));
        assert_eq!(mai_shape("v_mfma_f32_4x4x4_16b_f16"), (2, 2, 4));
        assert_eq!(mai_shape("v_mfma_f64_4x4x4_4b_f64"), (2, 2, 2));
        assert_eq!(mai_shape("v_mfma_f32_32x32x16_fp8_bf8"), (2, 2, 16));
        // gfx950's K-doubled forms: eight halves, sixteen bytes per lane.
        assert_eq!(mai_shape("v_mfma_f32_32x32x16_f16"), (4, 4, 16));
        assert_eq!(mai_shape("v_mfma_f32_16x16x32_bf16"), (4, 4, 4));
        assert_eq!(mai_shape("v_mfma_i32_32x32x32_i8"), (4, 4, 16));
        assert_eq!(mai_shape("v_mfma_i32_16x16x64_i8"), (4, 4, 4));
    }
}
