//! Operand decoding: a classified instruction's fields, normalised so one
//! executor serves every encoding of an operation.
//!
//! The GFX9 microcode formats (CDNA2/CDNA3 ISA, "Microcode Formats") put
//! the same operation in several encodings: `v_add_f32` is VOP2, VOP3
//! (with modifiers), SDWA and DPP; `v_cmp_*` writes VCC in VOPC and any SGPR
//! pair in VOP3. [`Inst`] flattens them: sources in `src[0..3]`, the scalar
//! destination in `sdst` (VCC when the short encoding implies it), source
//! modifiers in [`Mods`], and the extension word in [`Ext`]. Memory formats
//! use the same slots (see each field).

use super::format::{Classified, DecodeError, Encoding, Format, classify};
use super::target::Target;

/// Scalar operand codes (8-bit SSRC/SDST, the low half of 9-bit SRC).
pub mod code {
    /// The last SGPR, s101.
    pub const SGPR_LAST: u8 = 101;
    /// FLAT_SCRATCH_LO: low dword of the flat scratch base.
    pub const FLAT_SCRATCH_LO: u8 = 102;
    /// FLAT_SCRATCH_HI: its high dword.
    pub const FLAT_SCRATCH_HI: u8 = 103;
    /// XNACK_MASK_LO: lanes whose memory access was not acknowledged (low
    /// 32 lanes).
    pub const XNACK_MASK_LO: u8 = 104;
    /// XNACK_MASK_HI: the high 32 lanes.
    pub const XNACK_MASK_HI: u8 = 105;
    /// VCC_LO: vector condition code, lanes 0..32.
    pub const VCC_LO: u8 = 106;
    /// VCC_HI: lanes 32..64.
    pub const VCC_HI: u8 = 107;
    /// TTMP0: the first of the trap handler's 16 temporary SGPRs.
    pub const TTMP0: u8 = 108;
    /// TTMP15: the last trap temporary.
    pub const TTMP_LAST: u8 = 123;
    /// M0: the memory/misc register (LDS limits, `s_movrel` index, LDS-DMA
    /// address).
    pub const M0: u8 = 124;
    /// Reads as zero (LLVM prints it `null`; FLAT's SADDR may name it).
    pub const NULL: u8 = 125;
    /// EXEC_LO: the execute mask, lanes 0..32.
    pub const EXEC_LO: u8 = 126;
    /// EXEC_HI: lanes 32..64.
    pub const EXEC_HI: u8 = 127;
    /// Inline integer 0; codes 128..=192 are the integers 0..=64.
    pub const ZERO: u8 = 128;
    /// Inline integer 64, the largest positive inline integer.
    pub const INT_MAX: u8 = 192;
    /// Inline integer -16; codes 193..=208 are -1..=-16.
    pub const INT_NEG_MAX: u8 = 208;
    /// SRC_SHARED_BASE: high dword of the LDS aperture's flat address.
    pub const SHARED_BASE: u8 = 235;
    /// SRC_SHARED_LIMIT: high dword of the LDS aperture's end.
    pub const SHARED_LIMIT: u8 = 236;
    /// SRC_PRIVATE_BASE: high dword of the scratch aperture's flat address.
    pub const PRIVATE_BASE: u8 = 237;
    /// SRC_PRIVATE_LIMIT: high dword of the scratch aperture's end.
    pub const PRIVATE_LIMIT: u8 = 238;
    /// SRC_POPS_EXITING_WAVE_ID (graphics only; reads 0 here).
    pub const POPS_EXITING_WAVE_ID: u8 = 239;
    /// Inline float 0.5; codes 240..=247 are 0.5, -0.5, 1, -1, 2, -2, 4,
    /// -4 in the operand's float type.
    pub const HALF: u8 = 240;
    /// Inline float 1 / (2π).
    pub const INV_2PI: u8 = 248;
    /// In a VOP1/VOP2/VOPC `src0`: an SDWA extension word follows.
    pub const SDWA: u8 = 249;
    /// In a VOP1/VOP2/VOPC `src0`: a DPP extension word follows.
    pub const DPP: u8 = 250;
    /// VCCZ: 1 when VCC is zero.
    pub const VCCZ: u8 = 251;
    /// EXECZ: 1 when EXEC is zero.
    pub const EXECZ: u8 = 252;
    /// SCC: the scalar condition code, as a 0/1 operand.
    pub const SCC: u8 = 253;
    /// LDS_DIRECT: a value read from LDS at the address M0 gives.
    pub const LDS_DIRECT: u8 = 254;
    /// A 32-bit literal constant follows the instruction.
    pub const LITERAL: u8 = 255;
}

/// A source operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// Scalar register file by operand code 0..=127 (SGPRs, FLAT_SCRATCH,
    /// XNACK_MASK, VCC, TTMPs, M0, EXEC).
    Sgpr(u8),
    /// Architectural VGPR.
    Vgpr(u16),
    /// Accumulation VGPR (AGPR).
    Agpr(u16),
    /// Inline constant by operand code (128..=208 integers, 240..=248
    /// floats); its bits depend on the operand's type.
    Inline(u8),
    /// The 32-bit literal after the instruction.
    Literal(u32),
    /// Other special codes: VCCZ, EXECZ, SCC, apertures, LDS_DIRECT.
    Special(u8),
    /// No operand in this slot.
    None,
}

impl Src {
    /// Decodes an 8-bit scalar operand code.
    pub fn scalar(c: u32, literal: Option<u32>) -> Self {
        let c = (c & 0xFF) as u8;
        match c {
            0..=127 => Self::Sgpr(c),
            code::ZERO..=code::INT_NEG_MAX | code::HALF..=code::INV_2PI => Self::Inline(c),
            code::LITERAL => Self::Literal(literal.unwrap_or(0)),
            _ => Self::Special(c),
        }
    }

    /// Decodes a 9-bit vector-ALU source (256.. = VGPRs).
    pub fn vector(c: u32, literal: Option<u32>) -> Self {
        if c & 0x100 != 0 {
            Self::Vgpr((c & 0xFF) as u16)
        } else {
            Self::scalar(c, literal)
        }
    }

    /// A VGPR, or an AGPR when `acc` is set (gfx90a/gfx942 memory formats
    /// and MAI operands).
    pub fn vreg(r: u32, acc: bool) -> Self {
        let r = (r & 0xFF) as u16;
        if acc { Self::Agpr(r) } else { Self::Vgpr(r) }
    }
}

/// Source and output modifiers of VOP3/VOP3P (and the SDWA/DPP ones,
/// folded in here when the extension word carries them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mods {
    /// Per source, bit i = src i: take the absolute value (floats).
    pub abs: u8,
    /// Per source, bit i = src i: negate (floats; VOP3P: the low half).
    pub neg: u8,
    /// VOP3P: negate the high half.
    pub neg_hi: u8,
    /// VOP3 op_sel (bit 3 = destination), VOP3P op_sel.
    pub op_sel: u8,
    /// VOP3P op_sel_hi; 0b111 when not encoded.
    pub op_sel_hi: u8,
    /// Clamp the result: floats to [0, 1], integers saturate.
    pub clamp: bool,
    /// Output modifier: 0 none, 1 ×2, 2 ×4, 3 ÷2.
    pub omod: u8,
}

/// SDWA operand selection (`sel`): which part of a dword an operand uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sel {
    /// Byte 0..=3 of the dword (`BYTE_0`..`BYTE_3`).
    Byte(u8),
    /// 16-bit half 0 or 1 (`WORD_0`, `WORD_1`).
    Word(u8),
    /// The whole dword (`DWORD`).
    Dword,
}

impl Sel {
    fn of(v: u32) -> Self {
        match v & 7 {
            0..=3 => Self::Byte((v & 3) as u8),
            4 => Self::Word(0),
            5 => Self::Word(1),
            _ => Self::Dword,
        }
    }
}

/// SDWA extension word (VOP1/VOP2/VOPC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sdwa {
    /// The part of the destination dword written.
    pub dst_sel: Sel,
    /// 0 pad with zeros, 1 sign-extend, 2 preserve the untouched bits.
    pub dst_unused: u8,
    /// The part of src0 read.
    pub src0_sel: Sel,
    /// Sign-extend the selected part of src0 (else zero-extend).
    pub src0_sext: bool,
    /// The part of src1 read.
    pub src1_sel: Sel,
    /// Sign-extend the selected part of src1 (else zero-extend).
    pub src1_sext: bool,
}

/// DPP extension word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dpp {
    /// DPP_CTRL (9 bits): the lane movement (quad_perm, row shifts and
    /// rotates, wave shifts, row mirror, broadcasts).
    pub ctrl: u16,
    /// BOUND_CTRL: a lane whose source lane is out of range reads 0 and is
    /// written, instead of keeping its old value.
    pub bound_ctrl: bool,
    /// FI (GFX11+): a source lane outside EXEC gives its register's value
    /// instead of 0 / the old value (GFX9: always clear).
    pub fi: bool,
    /// BANK_MASK: bit b enables lanes `4b..4b+4` of each row of 16.
    pub bank_mask: u8,
    /// ROW_MASK: bit r enables lanes `16r..16r+16`.
    pub row_mask: u8,
}

/// DPP8 extension word (GFX11+): within each group of eight lanes, lane
/// `i` reads lane `sel[3i+2:3i]` of its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dpp8 {
    /// The eight 3-bit lane selects, lane 0's in bits 2:0 of the first
    /// byte (bytes, not a `u32`: an [`Inst`] stays as small as before).
    pub sel: [u8; 3],
    /// FI: a source lane outside EXEC gives its value rather than 0.
    pub fi: bool,
}

impl Dpp8 {
    /// From the extension word's bits 31:8.
    pub fn new(selects: u32, fi: bool) -> Self {
        let [a, b, c, _] = selects.to_le_bytes();
        Self { sel: [a, b, c], fi }
    }

    /// The lane of its group of eight that lane `l % 8` reads.
    pub fn select(&self, l: usize) -> usize {
        let bits = u32::from_le_bytes([self.sel[0], self.sel[1], self.sel[2], 0]);
        (bits >> (3 * (l % 8)) & 7) as usize
    }
}

/// The second (Y) operation of a VOPD instruction; X is the instruction's
/// own fields, and a literal both may use is in [`Inst::imm`]. Both read
/// their sources before either writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VopdY {
    /// OPY, its row in the Y table ([`VopdY::mnemonic`]).
    pub opcode: u8,
    /// Destination VGPR.
    pub vdst: u8,
    /// SRC0's 9-bit operand field (read on use, [`VopdY::sources`]: kept
    /// raw, an [`Inst`] stays as small as the GFX9 ones).
    pub src0: u16,
    /// VSRC1's VGPR.
    pub vsrc1: u8,
}

impl VopdY {
    /// LLVM's mnemonic on `target` (`v_dual_mov_b32`).
    pub fn mnemonic(&self, target: Target) -> &'static str {
        super::format::vopd_y_mnemonic(u16::from(self.opcode), target).unwrap_or("")
    }

    /// The sources normalised as X's are (the accumulator of `fmac`/
    /// `dot2acc`, `fmamk`/`fmaak`'s K from the instruction `i`, VCC_LO of
    /// `cndmask`).
    pub fn sources(&self, i: &Inst, target: Target) -> [Src; 3] {
        let literal = (i.words > 2).then_some(i.imm as u32);
        super::rdna::vopd_sources(
            self.mnemonic(target),
            self.vdst.into(),
            super::rdna::vector(self.src0.into(), literal),
            self.vsrc1.into(),
            literal,
        )
    }
}

/// Matrix-core (MAI) fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mai {
    /// CBSZ: blocks share A in groups of 2^CBSZ.
    pub cbsz: u8,
    /// ABID: which block of its group each block reads A from.
    pub abid: u8,
    /// BLGP: B's lane broadcast or rotation pattern (on gfx942's f64
    /// shapes: negation of A, B and C). gfx950's `f8f6f4` forms read CBSZ
    /// as A's and BLGP as B's element format.
    pub blgp: u8,
}

/// The extension of an instruction beyond its base fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ext {
    /// No extension.
    None,
    /// The SDWA word of a VOP1/VOP2/VOPC (sub-dword selection).
    Sdwa(Sdwa),
    /// The DPP word of a VOP1/VOP2/VOPC (lane movement).
    Dpp(Dpp),
    /// The matrix-core fields of a VOP3P MAI instruction.
    Mai(Mai),
    /// The DPP8 word of a GFX11+ VALU instruction.
    Dpp8(Dpp8),
    /// The Y operation of a VOPD instruction.
    Vopd(VopdY),
}

/// Cache-policy and addressing bits of memory instructions.
pub mod flag {
    /// GLC (gfx90a) / SC0 (gfx942).
    pub const GLC: u16 = 1 << 0;
    /// SLC (gfx90a) / SC1 (gfx942: FLAT bit 25 and MUBUF bit 15, where
    /// gfx90a has SCC).
    pub const SLC: u16 = 1 << 1;
    /// NT (gfx942: FLAT and MUBUF bit 17, MTBUF word 1 bit 22 — where
    /// gfx90a has SLC).
    pub const NT: u16 = 1 << 2;
    /// MUBUF/MTBUF: VADDR supplies a per-lane offset.
    pub const OFFEN: u16 = 1 << 3;
    /// MUBUF/MTBUF: VADDR supplies a per-lane index (scaled by the V#'s
    /// stride); with OFFEN, index then offset.
    pub const IDXEN: u16 = 1 << 4;
    /// MUBUF/FLAT: data goes to LDS (M0-addressed) instead of VGPRs.
    pub const LDS: u16 = 1 << 5;
    /// DS: the access goes to the global data share, not LDS.
    pub const GDS: u16 = 1 << 6;
    /// The data/destination registers are AGPRs.
    pub const ACC: u16 = 1 << 7;
    /// SMEM: the offset is an immediate.
    pub const IMM: u16 = 1 << 8;
    /// SMEM: an SGPR offset is added (SOFFSET in `src[1]`).
    pub const SOE: u16 = 1 << 9;
    /// VOP3: encoded as VOP3 (e64) rather than its short form.
    pub const E64: u16 = 1 << 10;
    /// MAI: the C and D matrices are AGPRs.
    pub const ACC_CD: u16 = 1 << 11;
    /// SCC bit of gfx90a MUBUF/FLAT (system coherence).
    pub const SCC: u16 = 1 << 12;
    /// DLC (GFX11 SMEM, FLAT, MUBUF): device-level coherence.
    pub const DLC: u16 = 1 << 13;
    /// GFX11+ true16 result: a 16-bit result goes to the half OP_SEL bit 3
    /// names and the other half keeps its bits (GFX9 zeroes the high half
    /// of a low-half result).
    pub const T16: u16 = 1 << 14;
}

/// A decoded instruction.
///
/// Slot use per format:
/// - SOP1/SOP2/SOPC: `sdst`, `src[0]`, `src[1]`; `s_set_gpr_idx_on` has
///   its mode mask (SSRC1) in `imm`, not `src[1]`. SOPK: `sdst`, `imm` =
///   SIMM16 (and `src[0]` = the literal of `s_setreg_imm32_b32`). SOPP:
///   `imm` = SIMM16.
/// - SMEM: `vdst` = SDATA (SGPR number), `src[0]` = SBASE (first SGPR),
///   `src[1]` = SOFFSET when `SOE` or not `IMM`, `imm` = the immediate.
/// - VOP*: `vdst`, `sdst` (VOPC/VOP3b carry or compare destination),
///   `src[0..3]`; the short encodings' implied VCC is explicit. MAI:
///   `src[0..3]` = A, B, C (AGPRs where the ACC bits say); `v_smfmac_*`
///   accumulate into `vdst` and have the sparsity-index VGPR in `src[2]`.
///   gfx950's block-scaled `v_mfma_scale_*` keep their prefix's fields:
///   `imm` = the A and B scale operands' 9-bit source fields (bits 8:0
///   and 17:9, [`Inst::scale_sources`]), `mods.op_sel`/`op_sel_hi` bit 0
///   (A) and bit 1 (B) = the low and high bits of the scale byte each
///   reads (CDNA4 ISA §7.2.1).
/// - DS: `vdst`, `src[0]` = ADDR, `src[1]` = DATA0, `src[2]` = DATA1,
///   `imm` = OFFSET0 | OFFSET1 << 8.
/// - FLAT/GLOBAL/SCRATCH: `vdst`, `src[0]` = ADDR (`None` when off),
///   `src[1]` = DATA, `src[2]` = SADDR (`None` when off), `imm` = offset.
/// - MUBUF/MTBUF: `vdst` = VDATA, `src[0]` = VADDR, `src[1]` = SRSRC,
///   `src[2]` = SOFFSET, `imm` = OFFSET (MTBUF's format in `fmt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inst {
    /// The microcode format it was encoded in.
    pub format: Format,
    /// The opcode within the format.
    pub opcode: u16,
    /// LLVM's mnemonic, e.g. `v_add_f32`; executors are keyed by it.
    pub mnemonic: &'static str,
    /// Length in dwords: the base word(s), plus a literal or an SDWA/DPP
    /// word.
    pub words: u8,
    /// Destination register: a VGPR or AGPR number, or the SGPR of SMEM
    /// loads (see the slot table above).
    pub vdst: u16,
    /// Scalar destination operand code (SALU results, VOPC/VOP3b masks).
    pub sdst: u8,
    /// Up to three sources; unused slots are [`Src::None`].
    pub src: [Src; 3],
    /// Immediate: SIMM16, a memory offset, or DS's two offsets.
    pub imm: i32,
    /// Source and output modifiers.
    pub mods: Mods,
    /// [`flag`] bits.
    pub flags: u16,
    /// The extension word's fields, if any.
    pub ext: Ext,
    /// MTBUF format: data format in bits 3:0, numeric format in 6:4.
    pub fmt: u8,
    /// GFX12 cache policy of memory instructions: TH in bits 2:0, SCOPE
    /// (0 CU, 1 SE, 2 device, 3 system) in bits 4:3.
    pub cpol: u8,
}

impl Inst {
    /// An instruction of `c` with no operand decoded yet: every slot
    /// empty, OP_SEL_HI at its default (all set).
    pub(super) fn blank(c: &Classified) -> Self {
        Self {
            format: c.format,
            opcode: c.opcode,
            mnemonic: c.mnemonic,
            words: c.words as u8,
            vdst: 0,
            sdst: 0,
            src: [Src::None; 3],
            imm: 0,
            mods: Mods {
                op_sel_hi: 0b111,
                ..Mods::default()
            },
            flags: 0,
            ext: Ext::None,
            fmt: 0,
            cpol: 0,
        }
    }

    /// FLAT-family operand slots: ADDR (`None` when absent), DATA, SADDR
    /// (`None` when off).
    pub(super) fn set_flat_operands(&mut self, vaddr: Option<u16>, data: Src, saddr: Option<u8>) {
        self.src = [
            vaddr.map_or(Src::None, Src::Vgpr),
            data,
            saddr.map_or(Src::None, Src::Sgpr),
        ];
    }

    /// A VOP2's operands its short encoding implies, once VDST, SRC0 and
    /// VSRC1 are in place: VCC as carry/condition in and out, the
    /// accumulator of `mac`/`fmac`, and `madmk`/`madak`'s K literal (D =
    /// S0 · K + S1, D = S0 · S1 + K).
    pub(super) fn vop2_implied(&mut self, literal: Option<u32>) {
        let m = self.mnemonic;
        if vop2_reads_vcc(m) {
            self.src[2] = Src::Sgpr(code::VCC_LO);
        }
        if vop2_writes_vcc(m) {
            self.sdst = code::VCC_LO;
        }
        if is_mac(m) {
            self.src[2] = Src::Vgpr(self.vdst);
        }
        if let Some(k) = literal {
            if m.ends_with("mk_f32") || m.ends_with("mk_f16") {
                self.src[2] = self.src[1];
                self.src[1] = Src::Literal(k);
            } else if m.ends_with("ak_f32") || m.ends_with("ak_f16") {
                self.src[2] = Src::Literal(k);
            }
        }
    }

    /// The A and B scale operands of a block-scaled MFMA and the byte of
    /// each 32-bit scale that applies, 0 (bits 7:0) to 3 (bits 31:24).
    pub fn scale_sources(&self) -> [(Src, u8); 2] {
        let (op_sel, hi) = (self.mods.op_sel, self.mods.op_sel_hi);
        [0, 1].map(|x| {
            let code = bits(self.imm as u32, 9 * x, 9);
            let byte = (op_sel >> x & 1) | (hi >> x & 1) << 1;
            (Src::vector(code, None), byte)
        })
    }

    /// Whether the data and destination registers of a memory or MAI
    /// instruction are AGPRs (the ACC bit).
    pub fn acc(&self) -> bool {
        self.flags & flag::ACC != 0
    }
}

pub(super) fn bits(w: u32, lo: u32, n: u32) -> u32 {
    (w >> lo) & ((1 << n) - 1)
}

pub(super) fn sext(v: u32, n: u32) -> i32 {
    ((v << (32 - n)) as i32) >> (32 - n)
}

/// Mnemonics of VOP3 opcodes that are VOP3b: a scalar carry/condition
/// destination in bits 14:8 instead of ABS/OP_SEL/CLAMP's low bits.
pub(crate) fn is_vop3b(mnemonic: &str) -> bool {
    matches!(
        mnemonic,
        "v_add_co_u32"
            | "v_sub_co_u32"
            | "v_subrev_co_u32"
            | "v_addc_co_u32"
            | "v_subb_co_u32"
            | "v_subbrev_co_u32"
            | "v_div_scale_f32"
            | "v_div_scale_f64"
            | "v_mad_u64_u32"
            | "v_mad_i64_i32"
            // GFX11+ names.
            | "v_add_co_ci_u32"
            | "v_sub_co_ci_u32"
            | "v_subrev_co_ci_u32"
            | "v_mad_co_u64_u32"
            | "v_mad_co_i64_i32"
    )
}

/// VOP2 add/subtract with a carry in (GFX9 names, then GFX11+'s): VCC in
/// the short encoding, and VCC out.
const CARRY_IN: [&str; 6] = [
    "v_addc_co_u32",
    "v_subb_co_u32",
    "v_subbrev_co_u32",
    "v_add_co_ci_u32",
    "v_sub_co_ci_u32",
    "v_subrev_co_ci_u32",
];

/// VOP2 ops that read VCC as a third operand in the short encoding.
pub(crate) fn vop2_reads_vcc(mnemonic: &str) -> bool {
    mnemonic == "v_cndmask_b32" || CARRY_IN.contains(&mnemonic)
}

/// VOP2 ops that write VCC as carry-out in the short encoding.
fn vop2_writes_vcc(mnemonic: &str) -> bool {
    matches!(
        mnemonic,
        "v_add_co_u32" | "v_sub_co_u32" | "v_subrev_co_u32"
    ) || CARRY_IN.contains(&mnemonic)
}

/// `v_mac`/`v_fmac` (and GFX11's `v_dot2acc`): the destination is also
/// the addend.
pub(super) fn is_mac(mnemonic: &str) -> bool {
    mnemonic.starts_with("v_mac_")
        || mnemonic.starts_with("v_fmac_")
        || mnemonic.starts_with("v_dot2acc_")
}

/// Matrix instructions, as the statistics count them: MAI (MFMA, SMFMAC)
/// and RDNA's WMMA and SWMMAC.
pub fn is_matrix(mnemonic: &str) -> bool {
    is_mai(mnemonic) || mnemonic.starts_with("v_wmma") || mnemonic.starts_with("v_swmmac")
}

/// MAI (matrix) instructions of the VOP3P encoding space.
pub fn is_mai(mnemonic: &str) -> bool {
    (mnemonic.starts_with("v_mfma") || mnemonic.starts_with("v_smfmac"))
        && mnemonic != "v_mfma_ld_scale_b32"
}

/// Decodes the instruction at the start of `code`.
pub fn decode(code: &[u32], target: Target) -> Result<Inst, DecodeError> {
    let c = classify(code, target)?;
    if Encoding::of(target) != Encoding::Gfx9 {
        return super::rdna::decode(c, code, target);
    }
    let mut i = Inst::blank(&c);
    let Classified {
        format,
        opcode,
        mnemonic,
        words,
        ..
    } = c;
    let w0 = code[0];
    let w1 = code.get(1).copied().unwrap_or(0);
    // The literal, for the short formats that may carry one, is the word
    // after the instruction (VOP formats: after any extension word, but a
    // literal and an extension never come together).
    let literal = (words > 1 && !format.two_words()).then_some(w1);
    let gfx942 = target.gfx940_insts();
    match format {
        Format::Sop2 => {
            i.sdst = bits(w0, 16, 7) as u8;
            i.src[0] = Src::scalar(w0, literal);
            i.src[1] = Src::scalar(w0 >> 8, literal);
        }
        Format::Sopk => {
            i.sdst = bits(w0, 16, 7) as u8;
            i.imm = bits(w0, 0, 16) as i32;
            if let Some(l) = literal {
                i.src[0] = Src::Literal(l);
            }
        }
        Format::Sop1 => {
            i.sdst = bits(w0, 16, 7) as u8;
            i.src[0] = Src::scalar(w0, literal);
        }
        Format::Sopc => {
            i.src[0] = Src::scalar(w0, literal);
            if mnemonic == "s_set_gpr_idx_on" {
                // SSRC1 is the 4-bit mode mask, not an operand.
                i.imm = bits(w0, 8, 8) as i32;
            } else {
                i.src[1] = Src::scalar(w0 >> 8, literal);
            }
        }
        Format::Sopp => i.imm = bits(w0, 0, 16) as i32,
        Format::Smem => {
            i.vdst = bits(w0, 6, 7) as u16;
            i.src[0] = Src::Sgpr((bits(w0, 0, 6) * 2) as u8);
            if w0 & (1 << 16) != 0 {
                i.flags |= flag::GLC;
            }
            let imm = w0 & (1 << 17) != 0;
            let soe = w0 & (1 << 14) != 0;
            if imm {
                i.flags |= flag::IMM;
                i.imm = sext(bits(w1, 0, 21), 21);
                if soe {
                    i.flags |= flag::SOE;
                    i.src[1] = Src::Sgpr(bits(w1, 25, 7) as u8);
                }
            } else if soe {
                // SGPR offset in SOFFSET (how LLVM encodes it for GFX9).
                i.flags |= flag::SOE;
                i.src[1] = Src::Sgpr(bits(w1, 25, 7) as u8);
            } else {
                // The legacy form: OFFSET[6:0] names the SGPR.
                i.src[1] = Src::Sgpr(bits(w1, 0, 7) as u8);
            }
        }
        Format::Vop1 | Format::Vop2 | Format::Vopc => {
            let ext = code.get(1).copied().unwrap_or(0);
            let src0 = w0 & 0x1FF;
            match src0 {
                0xF9 => {
                    // SDWA: src0 is in the extension word, S0 says SGPR.
                    i.src[0] = if ext & (1 << 23) != 0 {
                        Src::scalar(ext, None)
                    } else {
                        Src::Vgpr((ext & 0xFF) as u16)
                    };
                    i.ext = Ext::Sdwa(Sdwa {
                        dst_sel: Sel::of(ext >> 8),
                        dst_unused: bits(ext, 11, 2) as u8,
                        src0_sel: Sel::of(ext >> 16),
                        src0_sext: ext & (1 << 19) != 0,
                        src1_sel: Sel::of(ext >> 24),
                        src1_sext: ext & (1 << 27) != 0,
                    });
                    i.mods.clamp = ext & (1 << 13) != 0 && format != Format::Vopc;
                    if format != Format::Vopc {
                        i.mods.omod = bits(ext, 14, 2) as u8;
                    }
                    i.mods.neg = bits(ext, 20, 1) as u8 | (bits(ext, 28, 1) << 1) as u8;
                    i.mods.abs = bits(ext, 21, 1) as u8 | (bits(ext, 29, 1) << 1) as u8;
                }
                0xFA => {
                    i.src[0] = Src::Vgpr((ext & 0xFF) as u16);
                    i.ext = Ext::Dpp(Dpp {
                        ctrl: bits(ext, 8, 9) as u16,
                        fi: false,
                        bound_ctrl: ext & (1 << 19) != 0,
                        bank_mask: bits(ext, 24, 4) as u8,
                        row_mask: bits(ext, 28, 4) as u8,
                    });
                    i.mods.neg = bits(ext, 20, 1) as u8 | (bits(ext, 22, 1) << 1) as u8;
                    i.mods.abs = bits(ext, 21, 1) as u8 | (bits(ext, 23, 1) << 1) as u8;
                }
                _ => i.src[0] = Src::vector(src0, literal),
            }
            match format {
                Format::Vop1 => {
                    i.vdst = bits(w0, 17, 8) as u16;
                    // gfx90a's VOP1 v_accvgpr_mov_b32 moves AGPR to AGPR;
                    // its VGPR-range source names an AGPR.
                    if let ("v_accvgpr_mov_b32", Src::Vgpr(r)) = (mnemonic, i.src[0]) {
                        i.src[0] = Src::Agpr(r);
                    }
                }
                Format::Vop2 => {
                    i.vdst = bits(w0, 17, 8) as u16;
                    i.src[1] = Src::Vgpr(bits(w0, 9, 8) as u16);
                    i.vop2_implied(literal);
                }
                _ => {
                    i.src[1] = Src::Vgpr(bits(w0, 9, 8) as u16);
                    i.sdst = code::VCC_LO;
                    if let Ext::Sdwa(_) = i.ext {
                        // VOPC SDWA: SD selects an explicit SGPR destination.
                        if ext & (1 << 15) != 0 {
                            i.sdst = bits(ext, 8, 7) as u8;
                        }
                    }
                }
            }
            if let Ext::Sdwa(_) = i.ext
                && format != Format::Vop1
                && ext & (1 << 31) != 0
            {
                i.src[1] = Src::scalar(bits(w0, 9, 8), None);
            }
        }
        Format::Vop3 => {
            i.flags |= flag::E64;
            i.vdst = bits(w0, 0, 8) as u16;
            i.src = [
                Src::vector(bits(w1, 0, 9), None),
                Src::vector(bits(w1, 9, 9), None),
                Src::vector(bits(w1, 18, 9), None),
            ];
            i.mods.omod = bits(w1, 27, 2) as u8;
            i.mods.neg = bits(w1, 29, 3) as u8;
            i.mods.clamp = w0 & (1 << 15) != 0;
            let vopc = opcode < 0x100;
            if vopc {
                // VOPC promoted: VDST holds the SGPR destination.
                i.sdst = bits(w0, 0, 8) as u8;
                i.mods.abs = bits(w0, 8, 3) as u8;
            } else if is_vop3b(mnemonic) {
                i.sdst = bits(w0, 8, 7) as u8;
            } else {
                i.mods.abs = bits(w0, 8, 3) as u8;
                i.mods.op_sel = bits(w0, 11, 4) as u8;
            }
            if is_mac(mnemonic) {
                i.src[2] = Src::Vgpr(i.vdst);
            }
            if mnemonic.starts_with("v_bitop3_") {
                // gfx950's ternary bit operation keeps its 8-bit truth
                // table where the float modifiers would be: bits 2:0 in
                // NEG, 5:3 in ABS, 7:6 in OMOD (LLVM's VOP3 BITOP3
                // encoding; checked against `llvm-objdump`, which prints
                // it as `bitop3:0x..`). The instruction has no modifiers.
                i.imm = i32::from(i.mods.neg | i.mods.abs << 3 | i.mods.omod << 6);
                (i.mods.neg, i.mods.abs, i.mods.omod) = (0, 0, 0);
            }
        }
        Format::Vop3p => {
            // A block-scaled MFMA is the scale prefix's dword pair, then
            // the MFMA's ([`super::format::classify`]).
            let scaled = words == 4 && is_mai(mnemonic);
            let (prefix, w0, w1) = if scaled {
                (Some((w0, w1)), code[2], code[3])
            } else {
                (None, w0, w1)
            };
            i.vdst = bits(w0, 0, 8) as u16;
            if is_mai(mnemonic) {
                let acc = bits(w1, 27, 2);
                let acc_cd = w0 & (1 << 15) != 0;
                i.src = [
                    mai_src(bits(w1, 0, 9), acc & 1 != 0),
                    mai_src(bits(w1, 9, 9), acc & 2 != 0),
                    mai_src(bits(w1, 18, 9), acc_cd),
                ];
                // The sparse ops accumulate into VDST in place; SRC2 is the
                // sparsity index, always a VGPR.
                if mnemonic.starts_with("v_smfmac") {
                    i.src[2] = Src::vector(bits(w1, 18, 9), None);
                }
                if acc_cd {
                    i.flags |= flag::ACC_CD;
                }
                if let Some((p0, p1)) = prefix {
                    // The scale prefix's fields, where a VOP3P keeps them
                    // (slot table above).
                    i.imm = bits(p1, 0, 18) as i32;
                    i.mods.op_sel = bits(p0, 11, 2) as u8;
                    i.mods.op_sel_hi = bits(p1, 27, 2) as u8;
                }
                i.ext = Ext::Mai(Mai {
                    cbsz: bits(w0, 8, 3) as u8,
                    abid: bits(w0, 11, 4) as u8,
                    blgp: bits(w1, 29, 3) as u8,
                });
            } else {
                i.src = [
                    Src::vector(bits(w1, 0, 9), None),
                    Src::vector(bits(w1, 9, 9), None),
                    Src::vector(bits(w1, 18, 9), None),
                ];
                i.mods.neg_hi = bits(w0, 8, 3) as u8;
                i.mods.op_sel = bits(w0, 11, 3) as u8;
                i.mods.op_sel_hi = bits(w1, 27, 2) as u8 | (bits(w0, 14, 1) << 2) as u8;
                i.mods.clamp = w0 & (1 << 15) != 0;
                i.mods.neg = bits(w1, 29, 3) as u8;
                // v_accvgpr_* live in this space on gfx90a/gfx942.
                // Their register sources are AGPRs: bit 8 picks the register
                // file, the rest of the 9-bit field reads as usual.
                if matches!(mnemonic, "v_accvgpr_read_b32" | "v_accvgpr_mov_b32") {
                    i.src[0] = mai_src(bits(w1, 0, 9), true);
                }
            }
        }
        Format::Ds => {
            i.imm = bits(w0, 0, 16) as i32;
            if w0 & (1 << 16) != 0 {
                i.flags |= flag::GDS;
            }
            // ACC is bit 25 of the first dword (bits 31:24 of the second
            // are VDST).
            let acc = w0 & (1 << 25) != 0;
            if acc {
                i.flags |= flag::ACC;
            }
            i.src[0] = Src::Vgpr(bits(w1, 0, 8) as u16);
            i.src[1] = Src::vreg(bits(w1, 8, 8), acc);
            i.src[2] = Src::vreg(bits(w1, 16, 8), acc);
            i.vdst = bits(w1, 24, 8) as u16;
        }
        Format::Flat | Format::Global | Format::Scratch => {
            i.imm = if format == Format::Flat {
                bits(w0, 0, 12) as i32
            } else {
                sext(bits(w0, 0, 13), 13)
            };
            if w0 & (1 << 13) != 0 {
                i.flags |= flag::LDS;
            }
            if w0 & (1 << 16) != 0 {
                i.flags |= flag::GLC;
            }
            // gfx940 renamed the bits in place: SLC (17) became NT and
            // SCC (25) became SC1 (LLVM's CPol: NT = SLC, SC1 = SCC).
            if w0 & (1 << 17) != 0 {
                i.flags |= if gfx942 { flag::NT } else { flag::SLC };
            }
            if w0 & (1 << 25) != 0 {
                i.flags |= if gfx942 { flag::SLC } else { flag::SCC };
            }
            let acc = w1 & (1 << 23) != 0;
            if acc {
                i.flags |= flag::ACC;
            }
            // SADDR = 0x7F is "off": the address is all in VADDR.
            let saddr = bits(w1, 16, 7);
            let has_saddr = format != Format::Flat && saddr != 0x7F;
            // Scratch uses VADDR only without SADDR on gfx90a; on gfx942
            // the SVE bit (13) says so, and neither is the ST mode.
            let has_vaddr = match format {
                Format::Scratch if gfx942 => w0 & (1 << 13) != 0,
                Format::Scratch => !has_saddr,
                _ => true,
            };
            if format == Format::Scratch && gfx942 {
                i.flags &= !flag::LDS;
            }
            i.set_flat_operands(
                has_vaddr.then_some(bits(w1, 0, 8) as u16),
                Src::vreg(bits(w1, 8, 8), acc),
                has_saddr.then_some(saddr as u8),
            );
            i.vdst = bits(w1, 24, 8) as u16;
        }
        // GFX11+ only: the early return above took it.
        Format::Vopd => return Err(DecodeError::OperandsUnread { mnemonic, target }),
        Format::Mubuf | Format::Mtbuf => {
            i.imm = bits(w0, 0, 12) as i32;
            if w0 & (1 << 12) != 0 {
                i.flags |= flag::OFFEN;
            }
            if w0 & (1 << 13) != 0 {
                i.flags |= flag::IDXEN;
            }
            if w0 & (1 << 14) != 0 {
                i.flags |= flag::GLC;
            }
            if format == Format::Mubuf {
                if w0 & (1 << 16) != 0 {
                    i.flags |= flag::LDS;
                }
                if w0 & (1 << 17) != 0 {
                    i.flags |= if gfx942 { flag::NT } else { flag::SLC };
                }
                if w0 & (1 << 15) != 0 {
                    i.flags |= if gfx942 { flag::SLC } else { flag::SCC };
                }
            } else {
                i.fmt = bits(w0, 19, 7) as u8;
                // MTBUF's SLC is NT on gfx940, as in MUBUF.
                if w1 & (1 << 22) != 0 {
                    i.flags |= if gfx942 { flag::NT } else { flag::SLC };
                }
            }
            let acc = w1 & (1 << 23) != 0;
            if acc {
                i.flags |= flag::ACC;
            }
            i.src[0] = Src::Vgpr(bits(w1, 0, 8) as u16);
            i.vdst = bits(w1, 8, 8) as u16;
            i.src[1] = Src::Sgpr((bits(w1, 16, 5) * 4) as u8);
            i.src[2] = Src::scalar(bits(w1, 24, 8), None);
        }
    }
    Ok(i)
}

/// MAI sources: 9-bit operand with its ACC bit selecting AGPRs.
fn mai_src(c: u32, acc: bool) -> Src {
    if c & 0x100 != 0 {
        Src::vreg(c, acc)
    } else {
        Src::vector(c, None)
    }
}
