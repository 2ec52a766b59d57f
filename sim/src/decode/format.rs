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

/// Microcode formats of the GFX9 family.
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
}

impl Format {
    /// Classifies an instruction by its first word.
    pub fn of(word: u32) -> Option<Self> {
        Some(match word >> 23 {
            0x17D => Self::Sop1,
            0x17E => Self::Sopc,
            0x17F => Self::Sopp,
            _ if word >> 28 == 0xB => Self::Sopk,
            _ if word >> 30 == 0b10 => Self::Sop2,
            0x1A7 => Self::Vop3p,
            _ => match word >> 26 {
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
                _ if word >> 31 == 0 => match word >> 25 {
                    0x3F => Self::Vop1,
                    0x3E => Self::Vopc,
                    _ => Self::Vop2,
                },
                _ => return None,
            },
        })
    }

    /// The opcode field of `word`.
    pub fn opcode(self, word: u32) -> u16 {
        let (shift, bits) = match self {
            Self::Sop2 => (23, 7),
            Self::Sopk => (23, 5),
            Self::Sop1 => (8, 8),
            Self::Sopc | Self::Sopp => (16, 7),
            Self::Smem => (18, 8),
            Self::Vop2 => (25, 6),
            Self::Vop1 => (9, 8),
            Self::Vopc => (17, 8),
            Self::Vop3 => (16, 10),
            Self::Vop3p => (16, 7),
            Self::Ds => (17, 8),
            Self::Flat | Self::Scratch | Self::Global | Self::Mubuf => (18, 7),
            Self::Mtbuf => (15, 4),
        };
        ((word >> shift) & ((1 << bits) - 1)) as u16
    }

    /// The opcode table of this format.
    pub fn table(self) -> &'static [OpName] {
        match self {
            Self::Sop2 => opcodes::SOP2,
            Self::Sopk => opcodes::SOPK,
            Self::Sop1 => opcodes::SOP1,
            Self::Sopc => opcodes::SOPC,
            Self::Sopp => opcodes::SOPP,
            Self::Smem => opcodes::SMEM,
            Self::Vop2 => opcodes::VOP2,
            Self::Vop1 => opcodes::VOP1,
            Self::Vopc => opcodes::VOPC,
            Self::Vop3 => opcodes::VOP3,
            Self::Vop3p => opcodes::VOP3P,
            Self::Ds => opcodes::DS,
            Self::Flat => opcodes::FLAT,
            Self::Scratch => opcodes::SCRATCH,
            Self::Global => opcodes::GLOBAL,
            Self::Mubuf => opcodes::MUBUF,
            Self::Mtbuf => opcodes::MTBUF,
        }
    }

    pub(crate) fn two_words(self) -> bool {
        matches!(
            self,
            Self::Smem
                | Self::Vop3
                | Self::Vop3p
                | Self::Ds
                | Self::Flat
                | Self::Scratch
                | Self::Global
                | Self::Mubuf
                | Self::Mtbuf
        )
    }
}

/// Operand value naming a 32-bit literal after the instruction.
const LITERAL: u32 = 255;
/// VOP1/VOP2/VOPC src0 values selecting the SDWA and DPP extension words.
const SDWA: u32 = 249;
const DPP: u32 = 250;

/// An instruction classified: format, opcode, mnemonic, size in words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    /// The microcode format of the first word.
    pub format: Format,
    /// Its opcode field.
    pub opcode: u16,
    /// LLVM's mnemonic on the target.
    pub mnemonic: &'static str,
    /// Length in dwords, literal and SDWA/DPP word included.
    pub words: usize,
}

/// Why the words at an address are not an instruction of the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The first word matches no format.
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
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::UnknownFormat { word } => {
                write!(f, "word {word:#010x} is no GFX9 instruction format")
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
        }
    }
}

/// Classifies the instruction at the start of `code`.
pub fn classify(code: &[u32], target: Target) -> Result<Classified, DecodeError> {
    let &word = code.first().ok_or(DecodeError::Truncated {
        needed: 1,
        available: 0,
    })?;
    let format = Format::of(word).ok_or(DecodeError::UnknownFormat { word })?;
    let opcode = format.opcode(word);
    let mnemonic = format
        .table()
        .binary_search_by_key(&opcode, |o| o.opcode)
        .ok()
        .map(|i| format.table()[i].on(target))
        .filter(|m| !m.is_empty())
        .ok_or(DecodeError::UnknownOpcode {
            format,
            opcode,
            word,
        })?;
    let words = if format.two_words() {
        2
    } else {
        1 + usize::from(has_literal(format, word, mnemonic))
            + usize::from(has_extension(format, word))
    };
    if code.len() < words {
        return Err(DecodeError::Truncated {
            needed: words,
            available: code.len(),
        });
    }
    Ok(Classified {
        format,
        opcode,
        mnemonic,
        words,
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
        Format::Vop2 => {
            word & 0x1FF == LITERAL
                || ["mk_f32", "ak_f32", "mk_f16", "ak_f16"]
                    .iter()
                    .any(|s| mnemonic.ends_with(s))
        }
        _ => false,
    }
}

fn has_extension(format: Format, word: u32) -> bool {
    matches!(format, Format::Vop1 | Format::Vop2 | Format::Vopc)
        && matches!(word & 0x1FF, SDWA | DPP)
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
        ] {
            assert!(
                f.table().windows(2).all(|w| w[0].opcode < w[1].opcode),
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
