//! `cargo xtask isa-tables`: the simulator's opcode tables for the GFX9
//! encodings (gfx90a, gfx942, gfx950), the GFX11 ones (gfx1100) and the
//! GFX12 ones (gfx1201), read out of LLVM's AMDGPU disassembler.
//!
//! For every encoding format the generator places one instruction per
//! opcode value (with harmless, aligned register operands) in a 16-byte
//! slot of a bare ELF `.text`, runs the toolchain's `llvm-objdump` on it
//! once per target, and keeps the mnemonic it prints at each slot's
//! address (`.long` = no such opcode). Slots keep a mis-sized decode from
//! shifting the rest. The result is written to
//! `sim/src/decode/opcodes.rs`, each row once: where one format's opcodes
//! open another's table (the VOPC compares in VOP3, see `PREFIXED`) the
//! second table is built from the first's. The simulator's decoder test
//! checks real code objects against `llvm-objdump` again, operand by
//! operand.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use aqueduct_sim::Target;

use crate::device_build::llvm_bin_dir;

/// `s_nop 0`: filler after each probe.
const S_NOP: u32 = 0xBF80_0000;
/// Register operands used by the probes: 4 is aligned for pairs and quads.
const SGPR: u32 = 4;
const VGPR: u32 = 4;
/// `v4` as a 9-bit source operand.
const VSRC: u32 = 256 + VGPR;

/// A probe instruction: one to three words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    words: [u32; 3],
    len: usize,
}

impl Probe {
    /// A 32-bit instruction.
    const fn one(w0: u32) -> Self {
        Self {
            words: [w0, 0, 0],
            len: 1,
        }
    }
    /// A 64-bit instruction.
    const fn two(w0: u32, w1: u32) -> Self {
        Self {
            words: [w0, w1, 0],
            len: 2,
        }
    }
    /// A 96-bit instruction (GFX12's VFLAT/VGLOBAL/VSCRATCH/VBUFFER).
    const fn three(w0: u32, w1: u32, w2: u32) -> Self {
        Self {
            words: [w0, w1, w2],
            len: 3,
        }
    }
    /// The words.
    pub fn words(&self) -> &[u32] {
        &self.words[..self.len]
    }
}

/// One encoding format: its name, the opcodes to try, and the probe
/// instruction for an opcode (second word `None` for 32-bit formats) in
/// variant `v` of its operand fields, `None` when the format has no such
/// variant. The disassembler refuses some operand fields that an opcode
/// leaves unused unless they are zero (a DS store's `vdst`, FLAT's
/// `saddr`), so formats with such fields try each subset of them zeroed.
pub struct Format {
    pub name: &'static str,
    /// The targets whose disassembler reads this format's fields.
    pub targets: &'static [Target],
    pub opcodes: u32,
    pub probe: fn(u32, u32) -> Option<Probe>,
}

/// Operand-field variants tried per opcode.
const VARIANTS: u32 = 16;

/// Variant 0: the probe as given; 1: every operand field zero (`keep`
/// masks the encoding and opcode bits of word 0) — for opcodes without
/// operands (`v_nop`, `s_dcache_wb`, `s_memtime`).
fn one(v: u32, keep: u32, words: Probe) -> Option<Probe> {
    match v {
        0 => Some(words),
        1 => Some(Probe {
            words: [words.words[0] & keep, 0, 0],
            len: words.len,
        }),
        _ => None,
    }
}

/// SMEM: sdata s[4..], sbase s[4:5], offset 0x10 as the second word
/// (imm = 1); or no data and offset 0 with imm set (1) or clear (2), as
/// the cache and time instructions want.
fn smem(op: u32, v: u32) -> Option<Probe> {
    let base = 0xC000_0000 | op << 18;
    match v {
        0 => Some(Probe::two(base | 1 << 17 | SGPR << 6 | SGPR >> 1, 0x10)),
        1 => Some(Probe::two(base | 1 << 17, 0)),
        2 => Some(Probe::two(base, 0)),
        3 => Some(Probe::two(base | SGPR << 6, 0)),
        _ => None,
    }
}

/// VOP3/VOP3P sources: all VGPRs (0), all SGPRs (2), src1 an SGPR (3, for
/// lane selects such as `v_readlane_b32`), or no operands at all (1); all
/// VGPRs with VOP3P's OP_SEL_HI set for every source (4: GFX12's WMMA
/// accepts no other).
fn vop3(v: u32, word0: u32) -> Option<Probe> {
    let s = SGPR;
    match v {
        0 => Some(Probe::two(word0, VSRC | VSRC << 9 | VSRC << 18)),
        1 => Some(Probe::two(word0 & 0xFFFF_0000, 0)),
        2 => Some(Probe::two(word0, s | s << 9 | s << 18)),
        3 => Some(Probe::two(word0, VSRC | s << 9 | VSRC << 18)),
        4 => Some(Probe::two(
            word0 | 1 << 14,
            VSRC | VSRC << 9 | VSRC << 18 | 3 << 27,
        )),
        _ => None,
    }
}

/// `fields` (one byte each, low to high) with those whose bit in `v` is set
/// zeroed.
fn zero_some(fields: [u32; 4], v: u32) -> u32 {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| if v >> i & 1 == 1 { 0 } else { f << (8 * i) })
        .fold(0, |a, b| a | b)
}

/// The GFX9 targets: the tables of the GFX9 encodings are probed on these.
const GFX9: &[Target] = &[Target::Gfx90a, Target::Gfx942, Target::Gfx950];
/// The targets whose encodings of a format are GFX11's (the scalar and
/// vector ALU formats, DS: the same fields on gfx1100 and gfx1201).
const GFX11_12: &[Target] = &[Target::Gfx1100, Target::Gfx1201];
/// Formats GFX12 changed (SMEM, the FLAT family, buffers): GFX11's form.
const GFX11: &[Target] = &[Target::Gfx1100];
/// GFX12's own forms of those.
const GFX12: &[Target] = &[Target::Gfx1201];

/// FLAT/SCRATCH/GLOBAL (GFX9, GFX11): one opcode space under the segment
/// bits of `word0`; variants zero VADDR, DATA, SADDR (else "off": `off`)
/// and VDST in turn.
fn flat(word0: u32, off: u32, v: u32) -> Option<Probe> {
    (v < 8).then(|| {
        Probe::two(
            word0,
            zero_some(
                [VGPR, VGPR, if v & 4 == 0 { off } else { 0 }, VGPR],
                v & 0b1011,
            ),
        )
    })
}

/// GFX12 VFLAT/VGLOBAL/VSCRATCH (96 bits): SADDR null (0x7C) in word 0;
/// VDST in word 1 bits 7:0, VDATA in 30:23; VADDR in word 2 bits 7:0
/// (llvm-objdump on gfx1201 code objects). Variants zero VDST and VDATA.
fn flat12(seg: u32, op: u32, v: u32) -> Option<Probe> {
    (v < 4).then(|| {
        let vdst = if v & 1 == 0 { VGPR } else { 0 };
        let data = if v & 2 == 0 { VGPR << 23 } else { 0 };
        Probe::three(0xEC00_007C | seg << 24 | op << 14, vdst | data, VGPR)
    })
}

/// The encoding formats (bit positions from the ISA documents' "Microcode
/// Formats" chapters: CDNA2/CDNA3 for GFX9, RDNA3 for GFX11, RDNA4 for
/// GFX12), each probed on the targets that share its fields.
pub const FORMATS: &[Format] = &[
    Format {
        name: "SOP2",
        targets: GFX9,
        opcodes: 0x60,
        probe: sop2,
    },
    Format {
        name: "SOPK",
        targets: GFX9,
        opcodes: 0x1D,
        probe: sopk,
    },
    Format {
        name: "SOP1",
        targets: GFX9,
        opcodes: 0x100,
        probe: sop1,
    },
    Format {
        name: "SOPC",
        targets: GFX9,
        opcodes: 0x80,
        probe: sopc,
    },
    Format {
        name: "SOPP",
        targets: GFX9,
        opcodes: 0x80,
        probe: sopp,
    },
    // imm = 1 (bit 17): the offset is the second word.
    Format {
        name: "SMEM",
        targets: GFX9,
        opcodes: 0x100,
        probe: smem,
    },
    Format {
        name: "VOP2",
        targets: GFX9,
        opcodes: 0x3E,
        probe: vop2,
    },
    Format {
        name: "VOP1",
        targets: GFX9,
        opcodes: 0x100,
        probe: vop1,
    },
    Format {
        name: "VOPC",
        targets: GFX9,
        opcodes: 0x100,
        probe: vopc,
    },
    Format {
        name: "VOP3",
        targets: GFX9,
        opcodes: 0x380,
        probe: |op, v| vop3(v, 0xD000_0000 | op << 16 | VGPR),
    },
    Format {
        name: "VOP3P",
        targets: GFX9,
        opcodes: 0x80,
        probe: |op, v| vop3(v, 0xD380_0000 | op << 16 | VGPR),
    },
    Format {
        name: "DS",
        targets: GFX9,
        opcodes: 0x100,
        probe: |op, v| Some(Probe::two(0xD800_0000 | op << 17, zero_some([VGPR; 4], v))),
    },
    // FLAT, SCRATCH, GLOBAL: one opcode space, seg in bits 15:14; saddr off.
    Format {
        name: "FLAT",
        targets: GFX9,
        opcodes: 0x80,
        probe: |op, v| flat(0xDC00_0000 | op << 18, 0x7F, v),
    },
    Format {
        name: "SCRATCH",
        targets: GFX9,
        opcodes: 0x80,
        probe: |op, v| flat(0xDC00_4000 | op << 18, 0x7F, v),
    },
    Format {
        name: "GLOBAL",
        targets: GFX9,
        opcodes: 0x80,
        probe: |op, v| flat(0xDC00_8000 | op << 18, 0x7F, v),
    },
    // srsrc s[4:7] (field holds the SGPR number / 4), soffset 0 (inline 128);
    // variant 2 sets the LDS bit (16) with no VDATA, as the disassembler
    // wants for `buffer_store_lds_dword` (gfx90a), which has no other form.
    Format {
        name: "MUBUF",
        targets: GFX9,
        opcodes: 0x80,
        probe: |op, v| {
            let srsrc = (SGPR / 4) << 16 | 0x80 << 24;
            match v {
                2 => Some(Probe::two(0xE001_0000 | op << 18, srsrc)),
                _ => one(
                    v,
                    0xFFFC_0000,
                    Probe::two(0xE000_0000 | op << 18, VGPR | VGPR << 8 | srsrc),
                ),
            }
        },
    },
    Format {
        name: "MTBUF",
        targets: GFX9,
        opcodes: 0x10,
        probe: |op, v| {
            one(
                v,
                0xFFFF_8000,
                Probe::two(
                    0xE800_0000 | 1 << 19 | op << 15,
                    VGPR | VGPR << 8 | (SGPR / 4) << 16 | 0x80 << 24,
                ),
            )
        },
    },
    // GFX11 and GFX12: the scalar and VALU formats keep GFX9's fields
    // (VOP3 moves to 0b110101 with a 10-bit opcode, VOP3P to 0xCC), DS
    // moves its opcode to bits 25:18.
    Format {
        name: "RDNA_SOP2",
        targets: GFX11_12,
        opcodes: 0x60,
        probe: sop2,
    },
    Format {
        name: "RDNA_SOPK",
        targets: GFX11_12,
        opcodes: 0x1D,
        probe: sopk,
    },
    Format {
        name: "RDNA_SOP1",
        targets: GFX11_12,
        opcodes: 0x100,
        probe: sop1,
    },
    Format {
        name: "RDNA_SOPC",
        targets: GFX11_12,
        opcodes: 0x80,
        probe: sopc,
    },
    Format {
        name: "RDNA_SOPP",
        targets: GFX11_12,
        opcodes: 0x80,
        probe: sopp,
    },
    Format {
        name: "RDNA_VOP2",
        targets: GFX11_12,
        opcodes: 0x3E,
        probe: vop2,
    },
    Format {
        name: "RDNA_VOP1",
        targets: GFX11_12,
        opcodes: 0x100,
        probe: vop1,
    },
    Format {
        name: "RDNA_VOPC",
        targets: GFX11_12,
        opcodes: 0x100,
        probe: vopc,
    },
    Format {
        name: "RDNA_VOP3",
        targets: GFX11_12,
        opcodes: 0x400,
        probe: |op, v| vop3(v, 0xD400_0000 | op << 16 | VGPR),
    },
    Format {
        name: "RDNA_VOP3P",
        targets: GFX11_12,
        opcodes: 0x80,
        probe: |op, v| vop3(v, 0xCC00_0000 | op << 16 | VGPR),
    },
    // VOPD: OPX in word 0 bits 25:22 with OPY = v_dual_mov_b32 (0x10);
    // OPY in bits 21:17 with OPX = v_dual_mov_b32 (8). Sources v2/v3,
    // destinations v0/v1 (VDSTY's low bit is the inverse of VDSTX's).
    Format {
        name: "RDNA_VOPDX",
        targets: GFX11_12,
        opcodes: 0x10,
        probe: |op, v| {
            (v == 0).then(|| Probe::two(0xC800_0000 | op << 22 | 0x10 << 17 | 0x102, 0x103))
        },
    },
    Format {
        name: "RDNA_VOPDY",
        targets: GFX11_12,
        opcodes: 0x20,
        probe: |op, v| {
            (v == 0).then(|| Probe::two(0xC800_0000 | 8 << 22 | op << 17 | 0x102, 0x103))
        },
    },
    Format {
        name: "RDNA_DS",
        targets: GFX11_12,
        opcodes: 0x100,
        probe: |op, v| Some(Probe::two(0xD800_0000 | op << 18, zero_some([VGPR; 4], v))),
    },
    // GFX11 SMEM: 0b111101, opcode 25:18, SDATA 12:6, SBASE 5:0; word 1:
    // SOFFSET 31:25 (null = 0x7C), OFFSET 20:0.
    Format {
        name: "GFX11_SMEM",
        targets: GFX11,
        opcodes: 0x100,
        probe: |op, v| smem_rdna(0xF400_0000 | op << 18, v),
    },
    Format {
        name: "GFX11_FLAT",
        targets: GFX11,
        opcodes: 0x80,
        probe: |op, v| flat(0xDC00_0000 | op << 18, 0x7C, v),
    },
    Format {
        name: "GFX11_SCRATCH",
        targets: GFX11,
        opcodes: 0x80,
        probe: |op, v| flat(0xDC01_0000 | op << 18, 0x7C, v),
    },
    Format {
        name: "GFX11_GLOBAL",
        targets: GFX11,
        opcodes: 0x80,
        probe: |op, v| flat(0xDC02_0000 | op << 18, 0x7C, v),
    },
    Format {
        name: "GFX11_MUBUF",
        targets: GFX11,
        opcodes: 0x100,
        probe: |op, v| {
            one(
                v,
                0xFFFC_0000,
                Probe::two(
                    0xE000_0000 | op << 18,
                    VGPR | VGPR << 8 | (SGPR / 4) << 16 | 0x80 << 24,
                ),
            )
        },
    },
    // GFX12 SMEM: opcode 18:13; word 1: SOFFSET 31:25, OFFSET 23:0.
    Format {
        name: "GFX12_SMEM",
        targets: GFX12,
        opcodes: 0x40,
        probe: |op, v| smem_rdna(0xF400_0000 | op << 13, v),
    },
    Format {
        name: "GFX12_FLAT",
        targets: GFX12,
        opcodes: 0x100,
        probe: |op, v| flat12(0, op, v),
    },
    Format {
        name: "GFX12_SCRATCH",
        targets: GFX12,
        opcodes: 0x100,
        probe: |op, v| flat12(1, op, v),
    },
    Format {
        name: "GFX12_GLOBAL",
        targets: GFX12,
        opcodes: 0x100,
        probe: |op, v| flat12(2, op, v),
    },
    // GFX12 VBUFFER (96 bits): SOFFSET 6:0 (NULL), OP 21:14; word 1:
    // VDATA 7:0, RSRC 17:9 (an SGPR number), FORMAT 29:23 (1, as LLVM
    // writes for untyped ops); word 2: VADDR 7:0. Variant 1 without
    // VDATA (the cache ops).
    Format {
        name: "GFX12_VBUFFER",
        targets: GFX12,
        opcodes: 0x100,
        probe: |op, v| {
            let data = if v == 0 { VGPR } else { 0 };
            (v < 2).then(|| Probe::three(0xC400_007C | op << 14, data | SGPR << 9 | 1 << 23, VGPR))
        },
    },
];

fn sop2(op: u32, v: u32) -> Option<Probe> {
    one(
        v,
        0xFF80_0000,
        Probe::one(0x8000_0000 | op << 23 | SGPR << 16 | SGPR << 8 | SGPR),
    )
}

fn sopk(op: u32, v: u32) -> Option<Probe> {
    one(
        v,
        0xFF80_0000,
        Probe::one(0xB000_0000 | op << 23 | SGPR << 16),
    )
}

fn sop1(op: u32, v: u32) -> Option<Probe> {
    one(
        v,
        0xFF80_FF00,
        Probe::one(0xBE80_0000 | SGPR << 16 | op << 8 | SGPR),
    )
}

fn sopc(op: u32, v: u32) -> Option<Probe> {
    one(
        v,
        0xFFFF_0000,
        Probe::one(0xBF00_0000 | op << 16 | SGPR << 8 | SGPR),
    )
}

fn sopp(op: u32, v: u32) -> Option<Probe> {
    one(v, 0xFFFF_0000, Probe::one(0xBF80_0000 | op << 16))
}

fn vop2(op: u32, v: u32) -> Option<Probe> {
    one(
        v,
        0xFE00_0000,
        Probe::one(op << 25 | VGPR << 17 | VGPR << 9 | VSRC),
    )
}

fn vop1(op: u32, v: u32) -> Option<Probe> {
    one(
        v,
        0xFE01_FE00,
        Probe::one(0x7E00_0000 | VGPR << 17 | op << 9 | VSRC),
    )
}

fn vopc(op: u32, v: u32) -> Option<Probe> {
    one(
        v,
        0xFFFE_0000,
        Probe::one(0x7C00_0000 | op << 17 | VGPR << 9 | VSRC),
    )
}

/// GFX11/GFX12 SMEM with the opcode placed in `base`: sdata s[4..], sbase
/// s[4:5], SOFFSET null and offset 0x10 (0); no data (1); data but offset
/// 0 (2).
fn smem_rdna(base: u32, v: u32) -> Option<Probe> {
    match v {
        0 => Some(Probe::two(base | SGPR << 6 | SGPR >> 1, 0xF800_0010)),
        1 => Some(Probe::two(base, 0xF800_0000)),
        2 => Some(Probe::two(base | SGPR << 6, 0xF800_0000)),
        _ => None,
    }
}

/// The targets the tables cover, in column order: the simulator's.
pub const TARGETS: [Target; Target::ALL.len()] = Target::ALL;

/// `EF_AMDGPU_MACH` of each target (the code-object reader's table), with
/// xnack/sramecc "any" (v4 flags).
fn e_flags(gfx: &str) -> Result<u32, String> {
    let mach = aqueduct_abi::code_object::target::mach_of(gfx)
        .ok_or_else(|| format!("{gfx}: no EF_AMDGPU_MACH value known"))?;
    Ok(mach | 0x100 | 0x400)
}

/// A minimal relocatable AMDGPU ELF whose only section is `.text` = `code`.
fn elf(code: &[u8], e_flags: u32) -> Vec<u8> {
    const SHSTRTAB: &[u8] = b"\0.text\0.shstrtab\0";
    let text_off = 64u64;
    let shstr_off = text_off + code.len() as u64;
    let sh_off = (shstr_off + SHSTRTAB.len() as u64).next_multiple_of(8);
    let mut out = Vec::new();
    // e_ident: ELF64, little-endian, version 1, OSABI AMDGPU_HSA (64),
    // ABI version 3 (code object v5).
    out.extend_from_slice(b"\x7fELF\x02\x01\x01\x40\x03\0\0\0\0\0\0\0");
    out.extend_from_slice(&1u16.to_le_bytes()); // ET_REL
    out.extend_from_slice(&224u16.to_le_bytes()); // EM_AMDGPU
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // entry
    out.extend_from_slice(&0u64.to_le_bytes()); // phoff
    out.extend_from_slice(&sh_off.to_le_bytes());
    out.extend_from_slice(&e_flags.to_le_bytes());
    for v in [64u16, 0, 0, 64, 3, 2] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(code);
    out.extend_from_slice(SHSTRTAB);
    out.resize(sh_off as usize + 64, 0); // section 0: null
    let mut section = |name: u32, kind: u32, flags: u64, offset: u64, size: u64, align: u64| {
        out.extend_from_slice(&name.to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&[0; 8]); // link, info
        out.extend_from_slice(&align.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
    };
    // SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR.
    section(1, 1, 6, text_off, code.len() as u64, 4);
    section(7, 3, 0, shstr_off, SHSTRTAB.len() as u64, 1);
    out
}

/// The probe slots of every format, in order: (format index, opcode).
fn slots() -> Vec<(usize, u32)> {
    FORMATS
        .iter()
        .enumerate()
        .flat_map(|(f, fmt)| (0..fmt.opcodes).map(move |op| (f, op)))
        .collect()
}

/// The base mnemonic: encoding suffixes removed.
pub fn base_mnemonic(m: &str) -> &str {
    ["_e32", "_e64", "_sdwa", "_dpp"]
        .iter()
        .find_map(|s| m.strip_suffix(s))
        .unwrap_or(m)
}

/// Instruction text per slot address from `llvm-objdump -d` output.
fn mnemonics_by_address(disassembly: &str) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    for line in disassembly.lines() {
        let Some((insn, comment)) = line.split_once("//") else {
            continue;
        };
        let Some((address, _)) = comment.trim().split_once(':') else {
            continue;
        };
        let Ok(address) = u64::from_str_radix(address.trim(), 16) else {
            continue;
        };
        out.insert(address, insn.trim().to_string());
    }
    out
}

/// Disassembles the probes for `gfx`: per slot, the mnemonic of the first
/// variant that decodes, or `None`.
fn disassemble(
    objdump: &Path,
    target: Target,
    scratch: &Path,
) -> Result<Vec<Option<String>>, String> {
    let slots = slots();
    let mut found: Vec<Option<String>> = vec![None; slots.len()];
    for variant in 0..VARIANTS {
        let probes: Vec<(usize, Probe)> = slots
            .iter()
            .enumerate()
            .filter(|(i, _)| found[*i].is_none())
            .filter(|(_, (f, _))| FORMATS[*f].targets.contains(&target))
            .filter_map(|(i, &(f, op))| (FORMATS[f].probe)(op, variant).map(|w| (i, w)))
            .collect();
        for (i, text) in disassemble_probes(objdump, target.name(), scratch, &probes)? {
            // A VOPD pair prints `X ... :: Y ...`; VOPDY's probes name Y.
            let part = if FORMATS[slots[i].0].name.ends_with("VOPDY") {
                text.split_once("::").map(|(_, y)| y)
            } else {
                Some(text.as_str())
            };
            if let Some(m) = part.and_then(|p| p.split_whitespace().next()) {
                found[i] = Some(base_mnemonic(m).to_string());
            }
        }
    }
    Ok(found)
}

/// Mnemonics of `probes` (slot index, words) that decode. llvm-objdump
/// aborts on a few encodings; a failing batch is split until the culprit
/// stands alone, and it counts as not decoded.
fn disassemble_probes(
    objdump: &Path,
    gfx: &str,
    scratch: &Path,
    probes: &[(usize, Probe)],
) -> Result<Vec<(usize, String)>, String> {
    if probes.is_empty() {
        return Ok(Vec::new());
    }
    let mut code = Vec::new();
    for (_, probe) in probes {
        let words = probe.words();
        for k in 0..4 {
            let w = words.get(k).copied().unwrap_or(S_NOP);
            code.extend_from_slice(&w.to_le_bytes());
        }
    }
    let file = scratch.join(format!("isa-probe-{gfx}.o"));
    std::fs::write(&file, elf(&code, e_flags(gfx)?))
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let out = Command::new(objdump)
        .args(["-d", &format!("--mcpu={gfx}")])
        .arg(&file)
        .output()
        .map_err(|e| format!("{}: {e}", objdump.display()))?;
    if !out.status.success() {
        if probes.len() == 1 {
            return Ok(Vec::new());
        }
        let (a, b) = probes.split_at(probes.len() / 2);
        let mut names = disassemble_probes(objdump, gfx, scratch, a)?;
        names.extend(disassemble_probes(objdump, gfx, scratch, b)?);
        return Ok(names);
    }
    let by_address = mnemonics_by_address(&String::from_utf8_lossy(&out.stdout));
    Ok(probes
        .iter()
        .enumerate()
        .filter_map(|(k, &(i, _))| {
            by_address
                .get(&(k as u64 * 16))
                .filter(|m| !m.starts_with('.'))
                .map(|m| (i, m.clone()))
        })
        .collect())
}

/// A table whose opcode space starts with another format's opcodes under
/// the same numbers: VOP3's first 0x100 are the VOPC compares (GFX9 ISA,
/// "VOP3 Opcodes"; LLVM gives a compare one opcode for both encodings), and
/// VOPD's Y opcodes start with its X ones.
/// Those rows are written once, in `from`'s table; `name`'s table is that
/// table followed by its own rows from `own_from` on, joined at compile
/// time (`OpName::concat`). The generator checks the disassembler agrees.
struct Prefixed {
    name: &'static str,
    from: &'static str,
    own_from: u32,
}

const PREFIXED: &[Prefixed] = &[
    Prefixed {
        name: "VOP3",
        from: "VOPC",
        own_from: 0x100,
    },
    Prefixed {
        name: "RDNA_VOP3",
        from: "RDNA_VOPC",
        own_from: 0x100,
    },
    // VOPD's Y operations are the X ones plus three of its own from 0x10
    // (LLVM's VOPDYOnlyPseudosCommon).
    Prefixed {
        name: "RDNA_VOPDY",
        from: "RDNA_VOPDX",
        own_from: 0x10,
    },
];

/// A table row: opcode, then the mnemonic on each target in column order.
type Row<'a> = (u32, Vec<&'a str>);

/// `[pub ]const NAME: &[OpName] = &[rows];` (`vis` is `"pub "` or `""`).
fn write_rows(src: &mut String, vis: &str, name: &str, rows: &[Row]) {
    writeln!(src, "{vis}const {name}: &[OpName] = &[").ok();
    for (op, names) in rows {
        writeln!(src, "    OpName::new({op:#x}, {names:?}),").ok();
    }
    src.push_str("];\n");
}

/// Generates the table source.
pub fn generate(workspace: &Path) -> Result<String, String> {
    let objdump = llvm_bin_dir(workspace)?.join("llvm-objdump");
    let scratch = workspace.join("target").join("isa-tables");
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let columns: Vec<Vec<Option<String>>> = TARGETS
        .iter()
        .map(|t| disassemble(&objdump, *t, &scratch))
        .collect::<Result<_, _>>()?;
    let slots = slots();
    // The rows of each format: opcodes that are an instruction on a target.
    let rows: Vec<Vec<Row>> = (0..FORMATS.len())
        .map(|f| {
            slots
                .iter()
                .enumerate()
                .filter(|(_, (sf, _))| *sf == f)
                .map(|(i, &(_, op))| {
                    let names = columns
                        .iter()
                        .map(|c| c[i].as_deref().unwrap_or(""))
                        .collect();
                    (op, names)
                })
                .filter(|(_, names): &Row| names.iter().any(|n| !n.is_empty()))
                .collect()
        })
        .collect();
    let rows_of = |name: &str| &rows[FORMATS.iter().position(|f| f.name == name).unwrap()];
    let names = TARGETS.map(Target::name).join(", ");
    let mut src = format!(
        "//! Opcode tables of the GFX9, GFX11 and GFX12 encodings for {names}.\n\
         //!\n\
         //! GFX9 tables carry the GFX9 names (`SOP2`); `RDNA_` tables the\n\
         //! formats GFX11 and GFX12 share, `GFX11_`/`GFX12_` those they do not.\n\
         //! A column is filled only for the targets that use the table.\n\
         //!\n\
         //! Generated by `cargo xtask isa-tables` from the toolchain's LLVM AMDGPU\n\
         //! disassembler (see xtask/src/isa_tables.rs); do not edit by hand.\n\
         //! Each row: opcode, then the mnemonic on {names} (\"\" = not an\n\
         //! instruction on that target). Mnemonics carry no `_e32`/`_e64` suffix.\n\n\
         use super::op_name::OpName;\n",
    );
    for (f, fmt) in FORMATS.iter().enumerate() {
        let Some(p) = PREFIXED.iter().find(|p| p.name == fmt.name) else {
            writeln!(src, "\n/// {} opcodes.", fmt.name).ok();
            write_rows(&mut src, "pub ", fmt.name, &rows[f]);
            continue;
        };
        let (prefix, own) = rows[f].split_at(rows[f].partition_point(|r| r.0 < p.own_from));
        if prefix != rows_of(p.from).as_slice() {
            return Err(format!(
                "{} opcodes below {:#x} are not the {} ones: the tables cannot share them",
                p.name, p.own_from, p.from
            ));
        }
        let own_name = format!("{}_OWN", p.name);
        writeln!(
            src,
            "\n/// {} opcodes: the {} ones (the same numbers), then `{own_name}`.\n\
             pub const {}: &[OpName] =\n    \
             &OpName::concat::<{{ {}.len() + {own_name}.len() }}>({}, {own_name});",
            p.name, p.from, p.name, p.from, p.from
        )
        .ok();
        writeln!(src, "\n/// {} opcodes from {:#x} on.", p.name, p.own_from).ok();
        write_rows(&mut src, "", &own_name, own);
    }
    Ok(src)
}

/// Where the tables live.
pub fn output_path(workspace: &Path) -> std::path::PathBuf {
    workspace.join("sim/src/decode/opcodes.rs")
}
