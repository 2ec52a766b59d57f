//! Operand decoding of the GFX11 (gfx1100) and GFX12 (gfx1201) encodings
//! into the same [`Inst`] the GFX9 decoder makes, so one executor serves
//! an operation in every family.
//!
//! Field positions: AMD's RDNA3/RDNA4 ISA documents ("Microcode Formats")
//! and LLVM's `SIInstrFormats.td`, `VOPInstructions.td`,
//! `VOPDInstructions.td`, `SMInstructions.td`, `FLATInstructions.td`,
//! `BUFInstructions.td`; every one is checked by the decoder oracle test
//! against `llvm-objdump` on the built gfx1100 and gfx1201 code objects.
//!
//! What the model normalises:
//! - Scalar operand codes: GFX11+ swaps NULL (124) and M0 (125) against
//!   GFX9; the [`Inst`] carries GFX9's codes ([`code::M0`], [`code::NULL`]),
//!   so executors and the register file see one numbering.
//! - True16: in the 32-bit encodings a 16-bit VGPR operand's bit 7 picks
//!   the high half (registers v0..v127 only); it becomes the operand's
//!   OP_SEL bit (0, 1 for sources, 3 for the destination), the bit the
//!   VOP3 encoding carries for the same choice.
//! - `v_cmpx_*` write EXEC only (LLVM's `no-sdst-cmpx`): `sdst` is NULL.
//! - GFX12's TH/SCOPE cache policy goes to [`Inst::cpol`]; an atomic with
//!   TH's RETURN bit also sets [`flag::GLC`], which is how GFX9 and GFX11
//!   ask an atomic for the old value.

use super::format::{Classified, DecodeError, Encoding, Format};
use super::inst::{Dpp, Dpp8, Ext, Inst, Src, VopdY, bits, code, flag, is_mac, is_vop3b, sext};
use super::target::Target;

/// A GFX11+ scalar operand code in GFX9's numbering (NULL and M0 swap).
fn canon(c: u32) -> u32 {
    match c & 0xFF {
        124 => u32::from(code::NULL),
        125 => u32::from(code::M0),
        x => x,
    }
}

/// An 8-bit scalar source.
fn scalar(c: u32, literal: Option<u32>) -> Src {
    Src::scalar(canon(c), literal)
}

/// A 9-bit source (256.. = VGPRs).
pub(super) fn vector(c: u32, literal: Option<u32>) -> Src {
    if c & 0x100 != 0 {
        Src::Vgpr((c & 0xFF) as u16)
    } else {
        scalar(c, literal)
    }
}

/// A 7-bit scalar destination.
fn sdst(c: u32) -> u8 {
    canon(c & 0x7F) as u8
}

/// DPP8 markers in SRC0 (fetch-inactive clear, set) and the DPP16 one.
const DPP8: u32 = 233;
const DPP8_FI: u32 = 234;
const DPP16: u32 = 250;

/// Which operands of a VALU operation are 16-bit, as its mnemonic's type
/// tokens say (`v_cvt_f32_f16`: a 32-bit destination, 16-bit source):
/// (destination, sources). Packed operations and those whose data is a
/// byte or a pair are not.
fn halves(m: &str) -> (bool, bool) {
    if m.contains("_pk_") || m.starts_with("v_dot") || m.contains("_u8") {
        return (false, false);
    }
    let tokens: Vec<&str> = m
        .split('_')
        .filter(|t| {
            t.len() >= 2
                && matches!(t.as_bytes()[0], b'f' | b'i' | b'u' | b'b')
                && t[1..].bytes().all(|b| b.is_ascii_digit())
        })
        .collect();
    let is16 = |t: &&str| t.ends_with("16") && !t.starts_with("bf");
    match tokens.as_slice() {
        [] => (false, false),
        [t] => (is16(t), is16(t)),
        [d, s, ..] => (is16(d), is16(s)),
    }
}

/// A true16 VGPR field of a 32-bit encoding: the register (bits 6:0) and
/// whether bit 7 picked the high half.
fn t16(r: u16) -> (u16, bool) {
    (r & 0x7F, r & 0x80 != 0)
}

/// The DPP16 extension word's fields (VOP1/2/C: with the source
/// modifiers; VOP3: those are in the VOP3 bits).
fn dpp16(ext: u32) -> Dpp {
    Dpp {
        ctrl: bits(ext, 8, 9) as u16,
        fi: ext & (1 << 18) != 0,
        bound_ctrl: ext & (1 << 19) != 0,
        bank_mask: bits(ext, 24, 4) as u8,
        row_mask: bits(ext, 28, 4) as u8,
    }
}

/// Decodes a classified GFX11/GFX12 instruction.
pub(super) fn decode(c: Classified, code: &[u32], target: Target) -> Result<Inst, DecodeError> {
    let mut i = Inst::blank(&c);
    let Classified {
        format,
        opcode,
        mnemonic,
        words,
        ..
    } = c;
    let enc = Encoding::of(target);
    let w0 = code[0];
    let w1 = code.get(1).copied().unwrap_or(0);
    let w2 = code.get(2).copied().unwrap_or(0);
    let m = mnemonic;
    match format {
        Format::Sop2 | Format::Sopk | Format::Sop1 | Format::Sopc | Format::Sopp => {
            let literal = (words > 1).then_some(w1);
            match format {
                Format::Sop2 => {
                    i.sdst = sdst(w0 >> 16);
                    i.src[0] = scalar(w0, literal);
                    i.src[1] = scalar(w0 >> 8, literal);
                }
                Format::Sopk => {
                    i.sdst = sdst(w0 >> 16);
                    i.imm = bits(w0, 0, 16) as i32;
                    if let Some(l) = literal {
                        i.src[0] = Src::Literal(l);
                    }
                }
                Format::Sop1 => {
                    i.sdst = sdst(w0 >> 16);
                    i.src[0] = scalar(w0, literal);
                }
                Format::Sopc => {
                    i.src[0] = scalar(w0, literal);
                    i.src[1] = scalar(w0 >> 8, literal);
                }
                _ => i.imm = bits(w0, 0, 16) as i32,
            }
        }
        Format::Smem => {
            i.vdst = bits(w0, 6, 7) as u16;
            i.src[0] = Src::Sgpr((bits(w0, 0, 6) * 2) as u8);
            i.flags |= flag::IMM;
            if enc == Encoding::Gfx12 {
                i.cpol = (bits(w0, 23, 2) | bits(w0, 21, 2) << 3) as u8;
                i.imm = sext(bits(w1, 0, 24), 24);
            } else {
                if w0 & (1 << 14) != 0 {
                    i.flags |= flag::GLC;
                }
                if w0 & (1 << 13) != 0 {
                    i.flags |= flag::DLC;
                }
                i.imm = sext(bits(w1, 0, 21), 21);
            }
            // SOFFSET = NULL: no SGPR offset.
            let soffset = bits(w1, 25, 7);
            if soffset != 124 {
                i.flags |= flag::SOE;
                i.src[1] = Src::Sgpr(sdst(soffset));
            }
        }
        Format::Vop1 | Format::Vop2 | Format::Vopc => {
            short_valu(&mut i, code);
        }
        Format::Vop3 => {
            i.flags |= flag::E64;
            sources3(&mut i, w1, w2, words);
            i.vdst = bits(w0, 0, 8) as u16;
            i.mods.clamp = w0 & (1 << 15) != 0;
            i.mods.omod = bits(w1, 27, 2) as u8;
            i.mods.neg = bits(w1, 29, 3) as u8;
            if opcode < 0x100 {
                // VOPC promoted: VDST is the scalar destination; v_cmpx
                // writes EXEC only.
                i.sdst = if m.starts_with("v_cmpx") {
                    code::NULL
                } else {
                    sdst(w0)
                };
                i.mods.abs = bits(w0, 8, 3) as u8;
                i.mods.op_sel = bits(w0, 11, 4) as u8;
            } else if is_vop3b(m) {
                i.sdst = sdst(w0 >> 8);
            } else {
                i.mods.abs = bits(w0, 8, 3) as u8;
                i.mods.op_sel = bits(w0, 11, 4) as u8;
                if halves(m).0 {
                    i.flags |= flag::T16;
                }
            }
            // These write an SGPR (GFX12's `v_s_*` transcendentals too).
            if matches!(m, "v_readlane_b32" | "v_readfirstlane_b32") || m.starts_with("v_s_") {
                i.vdst = u16::from(sdst(w0));
            }
            if is_mac(m) {
                i.src[2] = Src::Vgpr(i.vdst);
            }
        }
        Format::Vop3p => {
            sources3(&mut i, w1, w2, words);
            i.vdst = bits(w0, 0, 8) as u16;
            i.mods.neg_hi = bits(w0, 8, 3) as u8;
            i.mods.op_sel = bits(w0, 11, 3) as u8;
            i.mods.op_sel_hi = bits(w1, 27, 2) as u8 | (bits(w0, 14, 1) << 2) as u8;
            i.mods.clamp = w0 & (1 << 15) != 0;
            i.mods.neg = bits(w1, 29, 3) as u8;
        }
        Format::Vopd => {
            let literal = (words > 2).then_some(w2);
            let x_dst = bits(w1, 24, 8) as u16;
            let y_dst = (bits(w1, 17, 7) << 1) as u16 | ((x_dst & 1) ^ 1);
            i.vdst = x_dst;
            i.src = vopd_sources(
                m,
                x_dst,
                vector(bits(w0, 0, 9), literal),
                bits(w0, 9, 8) as u16,
                literal,
            );
            // The Y operation keeps its fields (its sources are derived
            // on use, `VopdY::sources`): an `Inst` stays small.
            if let Some(k) = literal {
                i.imm = k as i32;
            }
            i.ext = Ext::Vopd(VopdY {
                opcode: bits(w0, 17, 5) as u8,
                vdst: y_dst as u8,
                src0: bits(w1, 0, 9) as u16,
                vsrc1: bits(w1, 9, 8) as u8,
            });
        }
        Format::Ds => {
            i.imm = bits(w0, 0, 16) as i32;
            if enc == Encoding::Gfx11 && w0 & (1 << 17) != 0 {
                i.flags |= flag::GDS;
            }
            i.src[0] = Src::Vgpr(bits(w1, 0, 8) as u16);
            i.src[1] = Src::Vgpr(bits(w1, 8, 8) as u16);
            i.src[2] = Src::Vgpr(bits(w1, 16, 8) as u16);
            i.vdst = bits(w1, 24, 8) as u16;
        }
        Format::Flat | Format::Global | Format::Scratch if enc == Encoding::Gfx12 => {
            // VFLAT/VGLOBAL/VSCRATCH: SADDR in word 0; VDST, SVE, SCOPE,
            // TH, VSRC in word 1; VADDR and a 24-bit signed offset in
            // word 2.
            let saddr = bits(w0, 0, 7);
            let th = bits(w1, 20, 3);
            i.cpol = (th | bits(w1, 18, 2) << 3) as u8;
            if m.contains("_atomic_") && th & 1 != 0 {
                i.flags |= flag::GLC;
            }
            let has_saddr = format != Format::Flat && saddr != 124;
            let has_vaddr = format != Format::Scratch || w1 & (1 << 17) != 0;
            i.vdst = bits(w1, 0, 8) as u16;
            i.set_flat_operands(
                has_vaddr.then_some(bits(w2, 0, 8) as u16),
                Src::Vgpr(bits(w1, 23, 8) as u16),
                has_saddr.then_some(sdst(saddr)),
            );
            i.imm = sext(bits(w2, 8, 24), 24);
        }
        Format::Flat | Format::Global | Format::Scratch => {
            i.imm = if format == Format::Flat {
                bits(w0, 0, 12) as i32
            } else {
                sext(bits(w0, 0, 13), 13)
            };
            for (bit, f) in [(13, flag::DLC), (14, flag::GLC), (15, flag::SLC)] {
                if w0 & (1 << bit) != 0 {
                    i.flags |= f;
                }
            }
            let saddr = bits(w1, 16, 7);
            let has_saddr = format != Format::Flat && saddr != 124;
            // SCRATCH: SVE says VADDR is there (without it and SADDR,
            // the ST mode: the offset alone).
            let has_vaddr = format != Format::Scratch || w1 & (1 << 23) != 0;
            i.set_flat_operands(
                has_vaddr.then_some(bits(w1, 0, 8) as u16),
                Src::Vgpr(bits(w1, 8, 8) as u16),
                has_saddr.then_some(sdst(saddr)),
            );
            i.vdst = bits(w1, 24, 8) as u16;
        }
        // The cache invalidations have no operands.
        Format::Mubuf if matches!(m, "buffer_gl0_inv" | "buffer_gl1_inv") => {}
        // GFX11 MUBUF (MUBUF_Real_gfx11): OFFSET [11:0], SLC [12], DLC
        // [13], GLC [14]; word 1: VADDR [7:0], VDATA [15:8], SRSRC/4
        // [20:16], TFE [21], OFFEN [22], IDXEN [23], SOFFSET [31:24].
        // TFE (a status dword after the data) is not read: refused.
        // GFX12 VBUFFER (XML ENC_VBUFFER): SOFFSET [6:0], TFE [22]; word
        // 1: VDATA [7:0], RSRC [17:9] (an SGPR number), SCOPE [19:18], TH
        // [22:20], FORMAT [29:23], OFFEN [30], IDXEN [31]; word 2: VADDR
        // [7:0], IOFFSET [31:8] (the assembler takes 0..=0x7FFFFF). TH and
        // SCOPE go to `cpol` as VFLAT's do. TFE is refused.
        Format::Mubuf if enc == Encoding::Gfx12 && w0 & (1 << 22) == 0 => {
            let th = bits(w1, 20, 3);
            i.cpol = (th | bits(w1, 18, 2) << 3) as u8;
            if m.contains("_atomic_") && th & 1 != 0 {
                i.flags |= flag::GLC;
            }
            if w1 & (1 << 30) != 0 {
                i.flags |= flag::OFFEN;
            }
            if w1 & (1 << 31) != 0 {
                i.flags |= flag::IDXEN;
            }
            i.imm = bits(w2, 8, 24) as i32;
            i.src[0] = Src::Vgpr(bits(w2, 0, 8) as u16);
            i.vdst = bits(w1, 0, 8) as u16;
            i.src[1] = Src::Sgpr(bits(w1, 9, 7) as u8);
            i.src[2] = scalar(bits(w0, 0, 7), None);
        }
        Format::Mubuf if enc == Encoding::Gfx11 && w1 & (1 << 21) == 0 => {
            i.imm = bits(w0, 0, 12) as i32;
            for (bit, f) in [(12, flag::SLC), (13, flag::DLC), (14, flag::GLC)] {
                if w0 & (1 << bit) != 0 {
                    i.flags |= f;
                }
            }
            if w1 & (1 << 22) != 0 {
                i.flags |= flag::OFFEN;
            }
            if w1 & (1 << 23) != 0 {
                i.flags |= flag::IDXEN;
            }
            i.src[0] = Src::Vgpr(bits(w1, 0, 8) as u16);
            i.vdst = bits(w1, 8, 8) as u16;
            i.src[1] = Src::Sgpr((bits(w1, 16, 5) * 4) as u8);
            i.src[2] = scalar(bits(w1, 24, 8), None);
        }
        Format::Mubuf | Format::Mtbuf => {
            return Err(DecodeError::OperandsUnread {
                mnemonic: m,
                target,
            });
        }
    }
    Ok(i)
}

/// VOP3/VOP3P sources from word 1, with the literal or DPP word after it.
fn sources3(i: &mut Inst, w1: u32, w2: u32, words: usize) {
    let fields = [bits(w1, 0, 9), bits(w1, 9, 9), bits(w1, 18, 9)];
    match fields[0] {
        DPP16 if words > 2 => {
            i.ext = Ext::Dpp(dpp16(w2));
            i.src[0] = Src::Vgpr(bits(w2, 0, 8) as u16);
        }
        f @ (DPP8 | DPP8_FI) if words > 2 => {
            i.ext = Ext::Dpp8(Dpp8::new(w2 >> 8, f == DPP8_FI));
            i.src[0] = Src::Vgpr(bits(w2, 0, 8) as u16);
        }
        f => i.src[0] = vector(f, (words > 2).then_some(w2)),
    }
    let literal = (words > 2 && matches!(i.ext, Ext::None)).then_some(w2);
    i.src[1] = vector(fields[1], literal);
    i.src[2] = vector(fields[2], literal);
}

/// VOP1/VOP2/VOPC: operands, DPP16/DPP8, implied VCC, true16 halves.
fn short_valu(i: &mut Inst, code: &[u32]) {
    let m = i.mnemonic;
    let w0 = code[0];
    let ext = code.get(1).copied().unwrap_or(0);
    let literal = (i.words > 1).then_some(ext);
    let (dst16, src16) = halves(m);
    // SRC0 and a VGPR source 1, before the true16 halves are split off.
    let mut src0_vgpr = None;
    match bits(w0, 0, 9) {
        DPP16 => {
            src0_vgpr = Some(bits(ext, 0, 8) as u16);
            i.ext = Ext::Dpp(dpp16(ext));
            i.mods.neg = bits(ext, 20, 1) as u8 | (bits(ext, 22, 1) << 1) as u8;
            i.mods.abs = bits(ext, 21, 1) as u8 | (bits(ext, 23, 1) << 1) as u8;
        }
        f @ (DPP8 | DPP8_FI) => {
            src0_vgpr = Some(bits(ext, 0, 8) as u16);
            i.ext = Ext::Dpp8(Dpp8::new(ext >> 8, f == DPP8_FI));
        }
        f if f & 0x100 != 0 => src0_vgpr = Some((f & 0xFF) as u16),
        f => i.src[0] = scalar(f, literal),
    }
    if let Some(r) = src0_vgpr {
        i.src[0] = Src::Vgpr(r);
        if src16 {
            let (r, hi) = t16(r);
            i.src[0] = Src::Vgpr(r);
            i.mods.op_sel |= u8::from(hi);
        }
    }
    let mut vsrc1 = bits(w0, 9, 8) as u16;
    if src16 && i.format != Format::Vop1 {
        let (r, hi) = t16(vsrc1);
        vsrc1 = r;
        i.mods.op_sel |= u8::from(hi) << 1;
    }
    let mut vdst = bits(w0, 17, 8) as u16;
    if dst16 && i.format != Format::Vopc {
        i.flags |= flag::T16;
        let (r, hi) = t16(vdst);
        vdst = r;
        i.mods.op_sel |= u8::from(hi) << 3;
    }
    match i.format {
        Format::Vop1 => {
            i.vdst = vdst;
            if m == "v_readfirstlane_b32" {
                i.vdst = u16::from(sdst(bits(w0, 17, 8)));
            }
        }
        Format::Vop2 => {
            i.vdst = vdst;
            i.src[1] = Src::Vgpr(vsrc1);
            // A DPP word is no literal.
            i.vop2_implied(literal.filter(|_| matches!(i.ext, Ext::None)));
        }
        _ => {
            i.src[1] = Src::Vgpr(vsrc1);
            i.sdst = if m.starts_with("v_cmpx") {
                code::NULL
            } else {
                code::VCC_LO
            };
        }
    }
}

/// One VOPD operation's sources from its SRC0, VSRC1 and the shared
/// literal: `fmac`/`dot2acc` accumulate into the destination, `fmamk`
/// (S0 · K + S1) and `fmaak` (S0 · S1 + K) take the literal, `cndmask`
/// selects by VCC_LO, `mov` has one source.
pub(super) fn vopd_sources(
    m: &str,
    vdst: u16,
    src0: Src,
    vsrc1: u16,
    literal: Option<u32>,
) -> [Src; 3] {
    let v1 = Src::Vgpr(vsrc1);
    let k = literal.map_or(Src::None, Src::Literal);
    match m.strip_prefix("v_dual_").unwrap_or(m) {
        "mov_b32" => [src0, Src::None, Src::None],
        "fmamk_f32" => [src0, k, v1],
        "fmaak_f32" => [src0, v1, k],
        "cndmask_b32" => [src0, v1, Src::Sgpr(code::VCC_LO)],
        op if op.starts_with("fmac") || op.starts_with("dot2acc") => [src0, v1, Src::Vgpr(vdst)],
        _ => [src0, v1, Src::None],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_bit_operands_follow_the_type_tokens() {
        assert_eq!(halves("v_mov_b16"), (true, true));
        assert_eq!(halves("v_cvt_f32_f16"), (false, true));
        assert_eq!(halves("v_cvt_f16_f32"), (true, false));
        assert_eq!(halves("v_cmp_eq_u16"), (true, true));
        assert_eq!(halves("v_add_f32"), (false, false));
        assert_eq!(halves("v_pk_add_f16"), (false, false));
        assert_eq!(halves("v_mov_b32"), (false, false));
    }

    /// The interpreter walks an array of these; the GFX11/GFX12 fields
    /// (VOPD's Y operation, DPP8, GFX12's cache policy) fit in what GFX9
    /// needed (sim-bench's speed depends on it).
    #[test]
    fn an_instruction_is_no_larger_than_a_gfx9_one_was() {
        assert!(size_of::<Inst>() <= 72, "{} bytes", size_of::<Inst>());
    }

    #[test]
    fn null_and_m0_take_gfx9_codes() {
        assert_eq!(canon(124), u32::from(code::NULL));
        assert_eq!(canon(125), u32::from(code::M0));
        assert_eq!(canon(106), 106);
    }
}
