//! Classification, step one of decoding: the first 32-bit word's fixed
//! encoding bits name the microcode format (CDNA2/CDNA3 ISA documents,
//! "Microcode Formats"), the format gives the opcode field and the
//! instruction's size, and the opcode tables ([`super::opcodes`], generated
//! from LLVM's disassembler by `cargo xtask isa-tables`) give the mnemonic
//! per target.
//!
//! Sizes: SOP*/VOP1/VOP2/VOPC are one word, plus a 32-bit literal when a
//! source names it (operand 255) or the opcode always carries one
//! (`*mk`/`*ak` multiply-adds, `s_setreg_imm32_b32`), plus one word when
//! VOP1/VOP2/VOPC use SDWA (src0 = 249) or DPP (src0 = 250). SMEM, VOP3,
//! VOP3P, DS, FLAT, MUBUF and MTBUF are two words; GFX9 allows no literal
//! in VOP3.

use super::op_name::OpName;
use super::opcodes;
use super::target::Target;
use aqueduct_abi::kernel_descriptor::GfxFamily;

/// Which encodings a target uses: GFX9's, or GFX11's and GFX12's (which
/// share most formats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// gfx90a, gfx942, gfx950.
    Gfx9,
    /// gfx1100.
    Gfx11,
    /// gfx1201.
    Gfx12,
}

impl Encoding {
    /// The encodings of `target`.
    pub fn of(target: Target) -> Self {
        match target.family() {
            GfxFamily::Gfx11 => Self::Gfx11,
            GfxFamily::Gfx12 => Self::Gfx12,
            _ => Self::Gfx9,
        }
    }
}

/// Microcode formats (one enum over the families: an executor sees the
/// same format whichever family's encoding it came in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// SOP2: scalar ALU, two sources.
    Sop2,
    /// SOPK: scalar ALU with a 16-bit immediate.
    Sopk,
    /// SOP1: scalar ALU, one source.
    Sop1,
    /// SOPC: scalar compare, result in SCC.
    Sopc,
    /// SOPP: scalar program control (branches, waits, `s_endpgm`).
    Sopp,
    /// SMEM: scalar memory loads and stores.
    Smem,
    /// VOP2: vector ALU, two sources (short encoding).
    Vop2,
    /// VOP1: vector ALU, one source (short encoding).
    Vop1,
    /// VOPC: vector compare into VCC (short encoding).
    Vopc,
    /// VOP3: vector ALU, long encoding with modifiers (VOP3a/VOP3b).
    Vop3,
    /// VOP3P: packed 16-bit math and the matrix-core (MAI) instructions.
    Vop3p,
    /// DS: LDS and GDS accesses.
    Ds,
    /// FLAT: accesses through the flat address space.
    Flat,
    /// SCRATCH: FLAT-family accesses to the private segment.
    Scratch,
    /// GLOBAL: FLAT-family accesses to global memory.
    Global,
    /// MUBUF: untyped buffer accesses through a V# resource.
    Mubuf,
    /// MTBUF: typed buffer accesses (format in the instruction).
    Mtbuf,
    /// VOPD (GFX11+): two VALU operations, X and Y, in one instruction.
    Vopd,
}

impl Format {
    /// Classifies an instruction by its first word.
    pub fn of(word: u32, enc: Encoding) -> Option<Self> {
        // The scalar formats and the short vector ones sit where GFX9 has
        // them in every family.
        let scalar = match word >> 23 {
            0x17D => Some(Self::Sop1),
            0x17E => Some(Self::Sopc),
            0x17F => Some(Self::Sopp),
            _ if word >> 28 == 0xB => Some(Self::Sopk),
            _ if word >> 30 == 0b10 => Some(Self::Sop2),
            _ if word >> 31 == 0 => Some(match word >> 25 {
                0x3F => Self::Vop1,
                0x3E => Self::Vopc,
                _ => Self::Vop2,
            }),
            _ => None,
        };
        if scalar.is_some() {
            return scalar;
        }
        match enc {
            Encoding::Gfx9 => Self::of_gfx9(word),
            Encoding::Gfx11 | Encoding::Gfx12 => Self::of_rdna(word, enc),
        }
    }

    fn of_gfx9(word: u32) -> Option<Self> {
        if word >> 23 == 0x1A7 {
            return Some(Self::Vop3p);
        }
        Some(match word >> 26 {
            0b11_0000 => Self::Smem,
            0b11_0100 => Self::Vop3,
            0b11_0110 => Self::Ds,
            0b11_0111 => match (word >> 14) & 3 {
                0 => Self::Flat,
                1 => Self::Scratch,
                2 => Self::Global,
                _ => return None,
            },
            0b11_1000 => Self::Mubuf,
            0b11_1010 => Self::Mtbuf,
            _ => return None,
        })
    }

    /// GFX11/GFX12. Not classified (an `UnknownFormat`, refused by
    /// name): MTBUF, MIMG/VIMAGE/VSAMPLE, EXP, VINTERP and LDSDIR — no
    /// compute code of ours reaches them. GFX12's VBUFFER is MUBUF's
    /// successor (MTBUF's too: its typed ops are opcodes 0x80 and up).
    fn of_rdna(word: u32, enc: Encoding) -> Option<Self> {
        if word >> 24 == 0xCC {
            return Some(Self::Vop3p);
        }
        let flat_seg = |seg: u32| match seg {
            0 => Some(Self::Flat),
            1 => Some(Self::Scratch),
            2 => Some(Self::Global),
            _ => None,
        };
        match (word >> 26, enc) {
            (0b11_0101, _) => Some(Self::Vop3),
            (0b11_0010, _) => Some(Self::Vopd),
            (0b11_0110, _) => Some(Self::Ds),
            (0b11_1101, _) => Some(Self::Smem),
            (0b11_0111, Encoding::Gfx11) => flat_seg((word >> 16) & 3),
            (0b11_1000, Encoding::Gfx11) => Some(Self::Mubuf),
            (0b11_1011, Encoding::Gfx12) => flat_seg((word >> 24) & 3),
            (0b11_0001, Encoding::Gfx12) => Some(Self::Mubuf),
            _ => None,
        }
    }

    /// The opcode field of `word` (VOPD: OPX; OPY is `vopd_y_opcode`).
    pub fn opcode(self, word: u32, enc: Encoding) -> u16 {
        let rdna = enc != Encoding::Gfx9;
        let (shift, bits) = match self {
            Self::Sop2 => (23, 7),
            Self::Sopk => (23, 5),
            Self::Sop1 => (8, 8),
            Self::Sopc | Self::Sopp => (16, 7),
            Self::Smem if enc == Encoding::Gfx12 => (13, 6),
            Self::Smem => (18, 8),
            Self::Vop2 => (25, 6),
            Self::Vop1 => (9, 8),
            Self::Vopc => (17, 8),
            Self::Vop3 => (16, 10),
            Self::Vop3p => (16, 7),
            Self::Vopd => (22, 4),
            Self::Ds if rdna => (18, 8),
            Self::Ds => (17, 8),
            Self::Flat | Self::Scratch | Self::Global if enc == Encoding::Gfx12 => (14, 8),
            Self::Flat | Self::Scratch | Self::Global => (18, 7),
            Self::Mubuf if enc == Encoding::Gfx12 => (14, 8),
            Self::Mubuf if rdna => (18, 8),
            Self::Mubuf => (18, 7),
            Self::Mtbuf => (15, 4),
        };
        ((word >> shift) & ((1 << bits) - 1)) as u16
    }

    /// The opcode table of this format in `enc`.
    pub fn table(self, enc: Encoding) -> &'static [OpName] {
        use opcodes::*;
        match (enc, self) {
            (Encoding::Gfx9, Self::Sop2) => SOP2,
            (Encoding::Gfx9, Self::Sopk) => SOPK,
            (Encoding::Gfx9, Self::Sop1) => SOP1,
            (Encoding::Gfx9, Self::Sopc) => SOPC,
            (Encoding::Gfx9, Self::Sopp) => SOPP,
            (Encoding::Gfx9, Self::Smem) => SMEM,
            (Encoding::Gfx9, Self::Vop2) => VOP2,
            (Encoding::Gfx9, Self::Vop1) => VOP1,
            (Encoding::Gfx9, Self::Vopc) => VOPC,
            (Encoding::Gfx9, Self::Vop3) => VOP3,
            (Encoding::Gfx9, Self::Vop3p) => VOP3P,
            (Encoding::Gfx9, Self::Ds) => DS,
            (Encoding::Gfx9, Self::Flat) => FLAT,
            (Encoding::Gfx9, Self::Scratch) => SCRATCH,
            (Encoding::Gfx9, Self::Global) => GLOBAL,
            (Encoding::Gfx9, Self::Mubuf) => MUBUF,
            (Encoding::Gfx9, Self::Mtbuf) => MTBUF,
            (Encoding::Gfx9, Self::Vopd) => &[],
            (_, Self::Sop2) => RDNA_SOP2,
            (_, Self::Sopk) => RDNA_SOPK,
            (_, Self::Sop1) => RDNA_SOP1,
            (_, Self::Sopc) => RDNA_SOPC,
            (_, Self::Sopp) => RDNA_SOPP,
            (_, Self::Vop2) => RDNA_VOP2,
            (_, Self::Vop1) => RDNA_VOP1,
            (_, Self::Vopc) => RDNA_VOPC,
            (_, Self::Vop3) => RDNA_VOP3,
            (_, Self::Vop3p) => RDNA_VOP3P,
            (_, Self::Vopd) => RDNA_VOPDX,
            (_, Self::Ds) => RDNA_DS,
            (Encoding::Gfx11, Self::Smem) => GFX11_SMEM,
            (Encoding::Gfx11, Self::Flat) => GFX11_FLAT,
            (Encoding::Gfx11, Self::Scratch) => GFX11_SCRATCH,
            (Encoding::Gfx11, Self::Global) => GFX11_GLOBAL,
            (Encoding::Gfx11, Self::Mubuf) => GFX11_MUBUF,
            (Encoding::Gfx12, Self::Mubuf) => GFX12_VBUFFER,
            (_, Self::Smem) => GFX12_SMEM,
            (_, Self::Flat) => GFX12_FLAT,
            (_, Self::Scratch) => GFX12_SCRATCH,
            (_, Self::Global) => GFX12_GLOBAL,
            (_, Self::Mtbuf) => &[],
        }
    }

    /// Words of the encoding before any literal or DPP word: 1 for the
    /// scalar and short vector formats, 3 for GFX12's FLAT family and
    /// VBUFFER, else 2.
    pub(crate) fn base_words(self, enc: Encoding) -> usize {
        match self {
            Self::Sop2
            | Self::Sopk
            | Self::Sop1
            | Self::Sopc
            | Self::Sopp
            | Self::Vop2
            | Self::Vop1
            | Self::Vopc => 1,
            Self::Flat | Self::Scratch | Self::Global | Self::Mubuf if enc == Encoding::Gfx12 => 3,
            _ => 2,
        }
    }

    pub(crate) fn two_words(self) -> bool {
        self.base_words(Encoding::Gfx9) == 2
    }
}

/// VOPD's OPY field (bits 21:17 of the first word).
pub fn vopd_y_opcode(word: u32) -> u16 {
    ((word >> 17) & 0x1F) as u16
}

/// The mnemonic of VOPD Y operation `opcode` on `target`.
pub(crate) fn vopd_y_mnemonic(opcode: u16, target: Target) -> Option<&'static str> {
    lookup(opcodes::RDNA_VOPDY, opcode, target)
}

/// Operand value naming a 32-bit literal after the instruction.
const LITERAL: u32 = 255;
/// VOP1/VOP2/VOPC src0 values selecting the SDWA and DPP extension words.
const SDWA: u32 = 249;
const DPP: u32 = 250;
/// GFX11+: src0 values selecting a DPP8 word (FI clear, FI set).
const DPP8: u32 = 233;
const DPP8_FI: u32 = 234;

/// An instruction classified: format, opcode, mnemonic, size in words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    /// The microcode format of the first word.
    pub format: Format,
    /// Its opcode field.
    pub opcode: u16,
    /// LLVM's mnemonic on the target (VOPD: the X operation's).
    pub mnemonic: &'static str,
    /// VOPD: the Y operation's mnemonic.
    pub paired: Option<&'static str>,
    /// Length in dwords, literal and SDWA/DPP word included.
    pub words: usize,
}

/// Why the words at an address are not an instruction of the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The first word matches no format the decoder knows for the target.
    UnknownFormat {
        /// The first word.
        word: u32,
    },
    /// The format has no such opcode on this target.
    UnknownOpcode {
        /// The format the first word names.
        format: Format,
        /// The opcode field.
        opcode: u16,
        /// The first word.
        word: u32,
    },
    /// The instruction runs past the end of the code.
    Truncated {
        /// Dwords the instruction needs.
        needed: usize,
        /// Dwords left in the code.
        available: usize,
    },
    /// The instruction classifies, but the decoder does not read the
    /// operands of this family's encodings yet.
    OperandsUnread {
        /// The mnemonic.
        mnemonic: &'static str,
        /// The target.
        target: Target,
    },
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::UnknownFormat { word } => {
                write!(
                    f,
                    "word {word:#010x} is no instruction format the decoder knows"
                )
            }
            Self::UnknownOpcode {
                format,
                opcode,
                word,
            } => {
                write!(
                    f,
                    "word {word:#010x}: {format:?} has no opcode {opcode:#x} on this target"
                )
            }
            Self::Truncated { needed, available } => {
                write!(f, "instruction needs {needed} words, {available} left")
            }
            Self::OperandsUnread { mnemonic, target } => write!(
                f,
                "{mnemonic}: the decoder does not read {} operands yet",
                target.name()
            ),
        }
    }
}

/// The mnemonic of `opcode` in `table` on `target`, if any.
fn lookup(table: &'static [OpName], opcode: u16, target: Target) -> Option<&'static str> {
    table
        .binary_search_by_key(&opcode, |o| o.opcode)
        .ok()
        .map(|i| table[i].on(target))
        .filter(|m| !m.is_empty())
}

/// Classifies the instruction at the start of `code`.
pub fn classify(code: &[u32], target: Target) -> Result<Classified, DecodeError> {
    let &word = code.first().ok_or(DecodeError::Truncated {
        needed: 1,
        available: 0,
    })?;
    let enc = Encoding::of(target);
    let format = Format::of(word, enc).ok_or(DecodeError::UnknownFormat { word })?;
    let opcode = format.opcode(word, enc);
    let unknown = |opcode| DecodeError::UnknownOpcode {
        format,
        opcode,
        word,
    };
    let mnemonic = lookup(format.table(enc), opcode, target).ok_or(unknown(opcode))?;
    let paired = if format == Format::Vopd {
        let y = vopd_y_opcode(word);
        Some(vopd_y_mnemonic(y, target).ok_or(unknown(y))?)
    } else {
        None
    };
    let base = format.base_words(enc);
    // The words after the base: VOP3/VOP3P/VOPD sources are in the second
    // word, the short formats' in the first.
    let extra = match enc {
        Encoding::Gfx9 if base == 1 => {
            usize::from(has_literal(format, word, mnemonic))
                + usize::from(has_extension(format, word))
        }
        Encoding::Gfx9 => 0,
        _ => rdna_extra_words(format, code, mnemonic, paired),
    };
    let words = base + extra;
    if code.len() < words {
        return Err(DecodeError::Truncated {
            needed: words,
            available: code.len(),
        });
    }
    if let Some(scaled) = scaled_mfma(code, mnemonic, enc) {
        return Ok(scaled);
    }
    Ok(Classified {
        format,
        opcode,
        mnemonic,
        paired,
        words,
    })
}

/// gfx950's block-scaled MFMA: a `v_mfma_ld_scale_b32` dword pair (the
/// scales of A and B) directly followed by an `f8f6f4` MFMA pair whose
/// ABID is 1 is one 128-bit instruction, `v_mfma_scale_f32_*_f8f6f4`
/// (CDNA4 ISA §7.2.1: "two back-to-back VOP3P's, where the first has the
/// constant 0xD3AC"; LLVM's `VOP3PX_Real_ScaledMFMA`). Any other ABID
/// leaves two instructions, as `llvm-objdump` decodes them: a stand-alone
/// `v_mfma_ld_scale_b32` and the unscaled MFMA (ABID 0), or words it does
/// not decode.
fn scaled_mfma(code: &[u32], mnemonic: &'static str, enc: Encoding) -> Option<Classified> {
    if enc != Encoding::Gfx9 || mnemonic != "v_mfma_ld_scale_b32" {
        return None;
    }
    let &[_, _, w2, _, ..] = code else {
        return None;
    };
    let name = match w2 >> 16 {
        0xD3AD => "v_mfma_scale_f32_16x16x128_f8f6f4",
        0xD3AE => "v_mfma_scale_f32_32x32x64_f8f6f4",
        _ => return None,
    };
    (w2 >> 11 & 0xF == 1).then_some(Classified {
        format: Format::Vop3p,
        opcode: (w2 >> 16 & 0x7F) as u16,
        mnemonic: name,
        paired: None,
        words: 4,
    })
}

fn has_literal(format: Format, word: u32, mnemonic: &str) -> bool {
    let s0 = word & 0xFF;
    let s1 = (word >> 8) & 0xFF;
    match format {
        Format::Sop2 | Format::Sopc => s0 == LITERAL || s1 == LITERAL,
        Format::Sop1 => s0 == LITERAL,
        Format::Sopk => mnemonic == "s_setreg_imm32_b32",
        Format::Vop1 | Format::Vopc => word & 0x1FF == LITERAL,
        Format::Vop2 => word & 0x1FF == LITERAL || takes_k(mnemonic),
        _ => false,
    }
}

/// The multiply-adds with a constant operand that always carry it as a
/// literal (`v_madmk_f32`, `v_fmaak_f32`, `v_dual_fmamk_f32`, ...).
fn takes_k(mnemonic: &str) -> bool {
    ["mk_f32", "ak_f32", "mk_f16", "ak_f16"]
        .iter()
        .any(|s| mnemonic.ends_with(s))
}

fn has_extension(format: Format, word: u32) -> bool {
    matches!(format, Format::Vop1 | Format::Vop2 | Format::Vopc)
        && matches!(word & 0x1FF, SDWA | DPP)
}

/// GFX11/GFX12 words after the base encoding: a literal when a source
/// names one (any format with sources; VOPD: either operation's SRC0, or
/// a `fmamk`/`fmaak` constant) and one DPP16 or DPP8 word when the VALU
/// SRC0 names it. `code` starts at the instruction (the base words are
/// there: the caller checks the total length).
fn rdna_extra_words(format: Format, code: &[u32], mnemonic: &str, paired: Option<&str>) -> usize {
    let w0 = code[0];
    let w1 = code.get(1).copied().unwrap_or(0);
    let dpp = |src0: u32| usize::from(matches!(src0, DPP | DPP8 | DPP8_FI));
    match format {
        Format::Sop2 | Format::Sopk | Format::Sop1 | Format::Sopc => {
            usize::from(has_literal(format, w0, mnemonic))
        }
        Format::Vop1 | Format::Vopc | Format::Vop2 => {
            usize::from(has_literal(format, w0, mnemonic)) + dpp(w0 & 0x1FF)
        }
        Format::Vop3 | Format::Vop3p => {
            let srcs = [w1 & 0x1FF, (w1 >> 9) & 0x1FF, (w1 >> 18) & 0x1FF];
            usize::from(srcs.contains(&LITERAL)) + dpp(srcs[0])
        }
        Format::Vopd => {
            let k = takes_k(mnemonic) || paired.is_some_and(takes_k);
            usize::from(w0 & 0x1FF == LITERAL || w1 & 0x1FF == LITERAL || k)
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_for_binary_search() {
        for f in [
            Format::Sop2,
            Format::Sopk,
            Format::Sop1,
            Format::Sopc,
            Format::Sopp,
            Format::Smem,
            Format::Vop2,
            Format::Vop1,
            Format::Vopc,
            Format::Vop3,
            Format::Vop3p,
            Format::Ds,
            Format::Flat,
            Format::Scratch,
            Format::Global,
            Format::Mubuf,
            Format::Mtbuf,
            Format::Vopd,
        ] {
            assert!(
                [Encoding::Gfx9, Encoding::Gfx11, Encoding::Gfx12]
                    .iter()
                    .all(|&e| f.table(e).windows(2).all(|w| w[0].opcode < w[1].opcode)),
                "{f:?}"
            );
        }
    }

    #[test]
    fn classifies_known_words() {
        // v_mov_b32_e32 v1, v2; s_endpgm; s_load_dword s4, s[4:5], 0x10.
        let c = classify(&[0x7E02_0302], Target::Gfx942).unwrap();
        assert_eq!(
            (c.format, c.mnemonic, c.words),
            (Format::Vop1, "v_mov_b32", 1)
        );
        let c = classify(&[0xBF81_0000], Target::Gfx90a).unwrap();
        assert_eq!((c.format, c.mnemonic), (Format::Sopp, "s_endpgm"));
        let c = classify(&[0xC002_0102, 0x10], Target::Gfx90a).unwrap();
        assert_eq!(
            (c.format, c.mnemonic, c.words),
            (Format::Smem, "s_load_dword", 2)
        );
        // v_mov_b32 v1, 0x12345678 carries a literal.
        assert_eq!(
            classify(&[0x7E02_02FF, 0x1234_5678], Target::Gfx942)
                .unwrap()
                .words,
            2
        );
        assert!(matches!(
            classify(&[0x7E02_02FF], Target::Gfx942),
            Err(DecodeError::Truncated {
                needed: 2,
                available: 1
            })
        ));
    }
}
