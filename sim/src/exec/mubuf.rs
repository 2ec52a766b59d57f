//! MUBUF and MTBUF buffer instructions: memory addressed through a buffer
//! resource descriptor (V#) in four SGPRs.
//!
//! CDNA3 ISA, "Vector Memory Buffer Instructions" (the gfx90a CDNA2 text is
//! the same). A lane's address is
//!
//! ```text
//! index  = (IDXEN ? VADDR[0] : 0) + (ADD_TID_ENABLE ? lane : 0)
//! offset = (OFFEN ? VADDR[IDXEN ? 1 : 0] : 0) + OFFSET
//! linear:   buffer_offset = offset + index * stride
//! swizzled: buffer_offset = (index / index_stride * stride
//!                            + offset / element_size * element_size) * index_stride
//!                           + index % index_stride * element_size
//!                           + offset % element_size
//! address = base + SOFFSET + buffer_offset
//! ```
//!
//! Range checking: MI200 (CDNA2) and MI300 (CDNA3) ISA reference guides,
//! §9.1.5.1 "Range Checking" (the same text in both). "When an address is
//! out of range, reads return zero, and writes and atomics are dropped.
//! The address range check method depends on the buffer type":
//!
//! | buffer     | ISA "used when"                     | out of range if (ISA)                           |
//! |------------|-------------------------------------|-------------------------------------------------|
//! | private    | AddTID==1 && IdxEn==0               | never ("there is no range checking")            |
//! | structured | AddTID==0 && Stride!=0 && IdxEn==1  | Index(vgpr) >= NumRecords                       |
//! | raw        | AddTID==0 && SWizzleEn==0 && IdxEn==0 | (InstOffset + (OffEN ? vgpr_offset : 0)) >= NumRecords |
//!
//! **SOFFSET is part of the raw check here, against the documents.** The
//! ISA's raw formula has only the instruction and VGPR offsets, §9.1.5.2
//! says "the sgpr_offset is not a part of the offset term" (for
//! swizzling), and LLVM calls `soffset` "excluded from bounds checking"
//! (IntrinsicsAMDGPU.td, docs/AMDGPUDMAOperations.md). But AMD's own
//! compiled GEMM kernels cannot run on the hardware under that rule: the
//! K-tail loop of rocBLAS 5.5.1's gfx90a SGEMM
//! (`Cijk_Ailk_Bljk_SB_MT32x32x32_MI16x16x4x1_..._WGM1`, code offset
//! 0x9d8 from its entry) issues four `buffer_load_dword`s from one VGPR
//! offset with SOFFSET = 0, 8, 16, 24 columns of A (8 × lda × 4 bytes
//! apart), and relies on the columns past K reading nothing: without
//! SOFFSET in the check they read up to (DepthU − 1) × lda × 4 bytes past
//! the end of A (megabytes for a large lda), which would fault on the
//! hardware for exactly sized allocations, yet rocBLAS runs such problems.
//! gem5's Vega/MI200 model checks `buffer_offset >= num_records - soffset`
//! (op_encodings.hh `Inst_MUBUF::calcAddr`), and a comment in a public
//! gfx950 kernel says SOFFSET is included in the bounds check there. No
//! hardware run here confirms it. So a raw buffer access is out of range when
//! `SOFFSET + InstOffset + vgpr_offset (+ 4k) >= NUM_RECORDS`; the test
//! `sim_rocblas` runs that kernel with exactly sized buffers at odd sizes.
//! Structured buffers keep the ISA's index check.
//!
//! The rows above are the ISA's; the combinations it leaves open (IDXEN
//! with stride 0, swizzled without IDXEN or ADD_TID, ADD_TID with IDXEN)
//! take the row above whose condition they meet. The offset is compared
//! as an unbounded (64-bit) sum, which agrees with the unsigned, saturating
//! check of LLVM's AMDGPUUsage ("relaxed buffer OOB mode"). §9.1.5.1's
//! notes: "Load/store-Dword-x{2,3,4} and range-check per component", so
//! an access straddling NUM_RECORDS keeps its in-range dwords (each at
//! `offset + 4k`); "Load/store-format-* instruction and atomics are
//! range-checked 'all or nothing'", and so are bytes and shorts here.
//! Out-of-range reads give 0 for every component, except that a format
//! load's `dst_sel = SEL_1` components still "return 1" (§9.1.5.1 note 1;
//! below).
//!
//! Out-of-range loads return 0 (returning atomics too), out-of-range
//! stores and atomics are dropped. An in-range access still goes through
//! the valid-range table; outside it the wave stops with a memory fault in
//! [`Space::Global`].
//!
//! **GFX11 and GFX12** (MUBUF on gfx1100, VBUFFER on gfx1201) take the
//! same address; their V# is laid out anew ([`Rsrc::from_words_rdna`]: a
//! 2-bit SWIZZLE_ENABLE that gives the element size, a unified FORMAT, no
//! ELEMENT_SIZE) and its OUT_OF_BOUNDS_SELECT picks the check (RDNA3.5 ISA
//! "Range Checking", the same table as Mesa's `ac_descriptors.c` comment
//! for GFX11+; no RDNA4 text was found, and Mesa treats GFX12 alike):
//!
//! | OOB_SELECT | out of range when                                        |
//! |------------|----------------------------------------------------------|
//! | 0          | `index >= NumRecords` or `offset + payload > stride`     |
//! | 1          | `index >= NumRecords`                                    |
//! | 2          | `NumRecords == 0`                                        |
//! | 3          | `offset + payload > NumRecords - SOFFSET` (saturating); as 0 when swizzled with a stride |
//!
//! "payload" is the access's bytes, so the check is exact; 64- to 128-bit
//! accesses are checked per dword. A FORMAT of 0 without ADD_TID is an
//! unbound resource, every access out of range (the ISA says so for
//! untyped accesses too). Format loads through such a V# (the unified
//! format table) are refused; there are no loads to LDS on GFX11/GFX12.
//!
//! With ADD_TID_ENABLE the V#'s DATA_FORMAT field holds stride bits 17:14
//! (GFX9 scratch descriptors need strides above 16 KiB); gem5's Vega model
//! reads it the same way.
//!
//! Atomics return the pre-op value when GLC (SC0 on gfx942) is set, in
//! VDATA, and run lane by lane in lane order; `cmpswap` data is (new,
//! compare) as in FLAT.
//!
//! Loads to LDS (`buffer_load_dword ... lds`, the LDS bit, 16 of the first
//! dword on gfx9/gfx90a/gfx942 in LLVM's `MUBUF_Real_Base_vi`): MI200/MI300
//! ISA §9.1.9 "Memory Buffer Load to LDS". Each lane in EXEC reads its
//! dword as any buffer load does (range checking "follows the same rules
//! as any other buffer fetch", so 0 out of range) and writes it to LDS at
//! `M0[15:0] + OFFSET + 4 * lane` ("LDS_offset = 16-bit unsigned byte
//! offset from M0\[15:0\]"; the lane term per LLVM's AMDGPUDMAOperations,
//! "implicitly offset by 4 * lane_id bytes"); no VGPR is written (LLVM's
//! LDS forms have no VDATA operand). The §9.1.9 figure that gives the LDS
//! address is not in the text we could read; OFFSET is added as in the
//! global/scratch form's formula (MI300 ISA §10.3, `LDSbase + M0 +
//! INST.OFFSET + ThreadID*4`). AMD's direct-to-LDS GEMM kernels use
//! OFFSET 0, so their results do not depend on it. An LDS address out of
//! range masks the lane ("does NOT return a memory violation", §3.11), a
//! fault in strict mode. gfx950 adds `buffer_load_dwordx3/x4 ... lds`
//! and an 18-bit M0 offset (CDNA4 ISA §9.1.9: "M0\[17:0\]"; lanes
//! "TIDinWave × 16" apart for 3 and 4 dwords, and "LOAD_DWORDX3 writes 3
//! dwords and skips the 4th"), each dword range-checked on its own.
//!
//! The byte and short loads to LDS (`buffer_load_ubyte/sbyte/ushort/sshort
//! ... lds`) use the same per-lane LDS address, `4 * lane` apart ("for
//! sizes up to 4 bytes", LLVM's AMDGPUDMAOperations, GFX9 LDS DMA), and
//! write the data's own size, 1 or 2 bytes, to LDS: the ISA text does not
//! say what a byte or short DMA writes, and LLVM models the operation as a
//! load and a store of "data byte size: 1/2/4" (its LDS memory operand has
//! that size). The other bytes of the lane's dword keep their value, so
//! the signed and unsigned forms write the same bytes. A kernel that read
//! those other bytes back would depend on what the model leaves open; no
//! code object we know of does.
//!
//! Format loads (`buffer_load_format_*`, `tbuffer_load_format_*`): MI200
//! ISA §9.1.4 Table 31 — MUBUF format loads take DATA_FORMAT, NUM_FORMAT
//! and DST_SEL from the V# (word 3 bits 18:15, 14:12 and 2:0/5:3/8:6/11:9,
//! Table 36), MTBUF takes the formats from the instruction with the
//! identity DST_SEL ("X000, XY00, XYZ0, or XYZW": components past the
//! format's are 0). Codes from §9.1.2 Table 29. Per §9.1.3 "Float or
//! normalized data is returned as floats; integer formats are returned as
//! integers (signed or unsigned, same type as the memory storage format).
//! Memory reads of data in memory that is 32 or 64 bits do not undergo
//! any format conversion": UINT zero-extends, SINT sign-extends, USCALED
//! and SSCALED give the integer as an f32 (exact for 8 and 16 bits),
//! FLOAT widens f16 exactly and passes 32 bits through. Components lie X
//! first at the lowest address. DST_SEL 0 and 1 give the constants; the
//! ISA does not say whether "1" is 1 or 1.0, so it follows the register
//! type, 1 for UINT/SINT and 1.0 otherwise (the graphics-API convention,
//! as in Mesa's RADV vertex fetch). Range checks are "all or nothing"
//! on the access's first byte, as for MTBUF; out of range every component
//! is 0 and SEL_1 still 1. An all-zero V# "acts as an unbound ... buffer
//! (return 0,0,0,0)". `buffer_load_format_x ... lds` (listed in §9.1.9)
//! writes the dword the VGPR form would return to the lane's LDS place.
//!
//! Refused with [`Fault::UnimplementedCase`] before any lane runs, since
//! the text we could read leaves them open: UNORM and SNORM (the
//! conversion table is a figure missing from the text; the rounding of
//! `u / (2^n - 1)` is not stated), the packed formats 10_11_11, 11_11_10,
//! 10_10_10_2 and 2_10_10_10 (no bit layout in the text), DST_SEL of a
//! component the format lacks (undocumented), reserved codes (DATA_FORMAT
//! 0 and 15, NUM_FORMAT 6, DST_SEL 2 and 3), and the combinations Mesa's
//! `ac_shader_util.c` calls incompatible (FLOAT with 8-bit components,
//! SCALED with 32-bit ones).
//!
//! Not implemented (no executor, or a fault when the bits ask for it):
//! loads to LDS of two dwords or of other formats than `format_x`,
//! `buffer_store_lds_dword` (gfx90a only: it decodes, but
//! the ISA text gives no LDS address for it), `buffer_store_format_*`
//! (what DST_SEL means for a store is not documented), the d16 format
//! forms, and MTBUF stores other than their count of 32-bit
//! UINT/SINT/FLOAT components. Cache maintenance (`buffer_wbl2`,
//! `buffer_inv`, `buffer_wbinvl1*`) lives in `exec::flat`.

use aqueduct_abi::kernel_descriptor::GfxFamily;

use crate::decode::inst::code::M0;
use crate::decode::inst::flag;
use crate::decode::{Inst, Src};
use crate::exec::ctx::{Ctx, Exec};
use crate::exec::ds::regs_mut;
use crate::exec::flat::{Loc, Port, Rmw, d16, d16_keeps_other_half, extend, rmw};
use crate::fault::{Fault, Space};
use crate::float::f16_to_f32;
use crate::lanes::{LANES, Lanes, for_lanes};
use crate::memory::Access;
use crate::wave::{Ty, Wave};

type R = Result<(), Fault>;

// ---------------------------------------------------------------------
// The buffer resource descriptor
// ---------------------------------------------------------------------

/// A buffer resource descriptor (V#), CDNA3 ISA "Buffer Resource
/// Descriptor". The bit layout is the hardware's, not ours to change; the
/// fields are decoded (element size and index stride in bytes and lanes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rsrc {
    /// BASE_ADDRESS, bits 47:0: byte address of the buffer.
    pub base: u64,
    /// STRIDE, bits 61:48, in bytes; with ADD_TID_ENABLE, DATA_FORMAT
    /// supplies bits 17:14.
    pub stride: u32,
    /// SWIZZLE_EN, bit 63: swizzled addressing.
    pub swizzle: bool,
    /// NUM_RECORDS, bits 95:64: bytes (raw) or records (structured).
    pub num_records: u32,
    /// DST_SEL_X, _Y, _Z, _W, bits 98:96, 101:99, 104:102, 107:105
    /// (MUBUF format loads only).
    pub dst_sel: [u8; 4],
    /// NUM_FORMAT, bits 110:108 (MUBUF format ops only).
    pub num_format: u8,
    /// DATA_FORMAT, bits 114:111.
    pub data_format: u8,
    /// ELEMENT_SIZE, bits 116:115: 2, 4, 8 or 16 bytes (swizzling).
    pub element_size: u32,
    /// INDEX_STRIDE, bits 118:117: 8, 16, 32 or 64 indices (swizzling).
    pub index_stride: u32,
    /// ADD_TID_ENABLE, bit 119: the lane id is added to the index.
    pub add_tid: bool,
    /// GFX11/GFX12 only: OUT_OF_BOUNDS_SELECT (bits 125:124) and whether
    /// the unified FORMAT (bits 113:108) is 0, INVALID (see [`Rdna`]).
    pub rdna: Option<Rdna>,
}

/// The GFX11/GFX12 fields of a V# that decide range checking (RDNA3.5
/// ISA, "Buffer Resource" table and "Range Checking"; the same layout as
/// ROCr's `resource_gfx11.h` and `resource_gfx12.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rdna {
    /// OOB_SELECT: 0 structured with the offset checked against the
    /// stride, 1 the index only, 2 only an empty buffer, 3 raw.
    pub oob_select: u8,
    /// FORMAT 0 with ADD_TID_ENABLE 0: an unbound resource, which the ISA
    /// says reads 0 and drops writes, untyped accesses included.
    pub unbound: bool,
}

impl Rsrc {
    /// Decodes the four dwords of a V# (the SGPR quad SRSRC names).
    pub fn from_words(w: [u32; 4]) -> Self {
        let data_format = (w[3] >> 15 & 0xF) as u8;
        let add_tid = w[3] >> 23 & 1 != 0;
        let stride = w[1] >> 16 & 0x3FFF;
        Self {
            base: u64::from(w[0]) | u64::from(w[1] & 0xFFFF) << 32,
            stride: if add_tid {
                stride | u32::from(data_format) << 14
            } else {
                stride
            },
            swizzle: w[1] >> 31 != 0,
            num_records: w[2],
            dst_sel: [0, 3, 6, 9].map(|at| (w[3] >> at & 7) as u8),
            num_format: (w[3] >> 12 & 7) as u8,
            data_format,
            element_size: 2 << (w[3] >> 19 & 3),
            index_stride: 8 << (w[3] >> 21 & 3),
            add_tid,
            rdna: None,
        }
    }

    /// Decodes a GFX11/GFX12 V# (module doc, "GFX11 and GFX12"): BASE
    /// 47:0, STRIDE 61:48, SWIZZLE_ENABLE 63:62 (0 off, 1 elements of 4
    /// bytes, 3 of 16; 2 reserved), NUM_RECORDS 95:64, DST_SEL 107:96,
    /// FORMAT 113:108, INDEX_STRIDE 118:117, ADD_TID_ENABLE 119,
    /// OOB_SELECT 125:124.
    pub fn from_words_rdna(w: [u32; 4]) -> Result<Self, Fault> {
        let swizzle = w[1] >> 30;
        if swizzle == 2 {
            return Err(Fault::UnimplementedCase {
                mnemonic: "buffer access",
                case: "a V# with the reserved SWIZZLE_ENABLE 2",
            });
        }
        let add_tid = w[3] >> 23 & 1 != 0;
        Ok(Self {
            base: u64::from(w[0]) | u64::from(w[1] & 0xFFFF) << 32,
            stride: w[1] >> 16 & 0x3FFF,
            swizzle: swizzle != 0,
            num_records: w[2],
            dst_sel: [0, 3, 6, 9].map(|at| (w[3] >> at & 7) as u8),
            num_format: 0,
            data_format: 0,
            element_size: if swizzle == 3 { 16 } else { 4 },
            index_stride: 8 << (w[3] >> 21 & 3),
            add_tid,
            rdna: Some(Rdna {
                oob_select: (w[3] >> 28 & 3) as u8,
                unbound: w[3] >> 12 & 0x3F == 0 && !add_tid,
            }),
        })
    }

    /// Which range check applies (see the module doc's tables).
    fn check(&self, idxen: bool) -> Check {
        if let Some(r) = self.rdna {
            return match r.oob_select {
                _ if r.unbound => Check::Unbound,
                0 => Check::StructuredWithOffset,
                1 => Check::Structured,
                2 => Check::EmptyOnly,
                _ if self.swizzle && self.stride != 0 => Check::StructuredWithOffset,
                _ => Check::RawPayload,
            };
        }
        if self.add_tid && !idxen {
            Check::Private
        } else if idxen && self.stride != 0 {
            Check::Structured
        } else {
            Check::Raw
        }
    }

    /// The byte offset of (`index`, `offset`) from the base (before
    /// SOFFSET), linear or swizzled.
    pub fn buffer_offset(&self, index: u64, offset: u64) -> u64 {
        let stride = u64::from(self.stride);
        if !self.swizzle {
            return offset + index * stride;
        }
        let (es, is) = (u64::from(self.element_size), u64::from(self.index_stride));
        (index / is * stride + offset / es * es) * is + index % is * es + offset % es
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    /// GFX9 private (ADD_TID without IDXEN): no check.
    Private,
    /// `index < NUM_RECORDS` (GFX9 structured; GFX11+ OOB_SELECT 1).
    Structured,
    /// GFX9 raw: the access's first byte, SOFFSET included (module doc).
    Raw,
    /// GFX11+ OOB_SELECT 0 (and 3 when swizzled with a stride):
    /// `index < NUM_RECORDS` and `offset + payload <= STRIDE`.
    StructuredWithOffset,
    /// GFX11+ OOB_SELECT 2: out of range only when NUM_RECORDS is 0.
    EmptyOnly,
    /// GFX11+ OOB_SELECT 3: `offset + payload <= NUM_RECORDS - SOFFSET`
    /// (saturating), payload-exact.
    RawPayload,
    /// GFX11+ FORMAT 0 without ADD_TID: every access is out of range.
    Unbound,
}

/// One lane's index and offset.
#[derive(Clone, Copy)]
struct Lane {
    index: u64,
    offset: u64,
}

/// Everything an instruction's lanes share.
struct Buffer {
    rsrc: Rsrc,
    soffset: u64,
    check: Check,
}

impl Buffer {
    fn of(w: &Wave, i: &Inst, target: crate::Target) -> Result<Self, Fault> {
        let Src::Sgpr(s) = i.src[1] else {
            return Err(Fault::Operand { code: 0 });
        };
        let s = usize::from(s);
        let words = w.s.get(s..s + 4).ok_or(Fault::Operand { code: s as u8 })?;
        let words = [words[0], words[1], words[2], words[3]];
        // GFX11 and GFX12 lay the V# out anew (module doc).
        let gfx9 = matches!(target.family(), GfxFamily::Gfx9 | GfxFamily::Gfx9Mai);
        let rsrc = if !gfx9 {
            Rsrc::from_words_rdna(words)?
        } else {
            Rsrc::from_words(words)
        };
        Ok(Self {
            rsrc,
            soffset: u64::from(w.s32_of(i.src[2], Ty::B32)?),
            check: rsrc.check(i.flags & flag::IDXEN != 0),
        })
    }

    /// Lane `l`'s index and offset from VADDR.
    fn lane(&self, vaddr: &[Option<&Lanes>; 2], i: &Inst, l: usize) -> Lane {
        let idxen = i.flags & flag::IDXEN != 0;
        let offen = i.flags & flag::OFFEN != 0;
        let get = |k: usize| vaddr[k].map_or(0, |r| u64::from(r[l]));
        let mut index = if idxen { get(0) } else { 0 };
        if self.rsrc.add_tid {
            index += l as u64;
        }
        let voffset = match (idxen, offen) {
            (true, true) => get(1),
            (false, true) => get(0),
            _ => 0,
        };
        Lane {
            index,
            // OFFSET: 12 bits on GFX9 and GFX11, 24 on GFX12 (decoded so).
            offset: voffset + u64::from(i.imm as u32),
        }
    }

    /// The range check of an instruction whose lanes all have index 0
    /// and unswizzled addresses (no IDXEN, no ADD_TID, no swizzle: raw
    /// buffers, the common case), as one bound; `None` for the others.
    fn linear(&self, i: &Inst) -> Option<Linear> {
        if self.rsrc.swizzle || self.rsrc.add_tid || i.flags & flag::IDXEN != 0 {
            return None;
        }
        let n = u64::from(self.rsrc.num_records);
        // Index 0 passes `index < NUM_RECORDS` exactly when it is not 0.
        let unless_empty = if n != 0 { u64::MAX } else { 0 };
        let (limit, payload) = match self.check {
            Check::Private => (u64::MAX, false),
            Check::Structured | Check::EmptyOnly => (unless_empty, false),
            Check::Raw => (n.saturating_sub(self.soffset), false),
            Check::StructuredWithOffset => (unless_empty.min(u64::from(self.rsrc.stride)), true),
            Check::RawPayload => (n.saturating_sub(self.soffset), true),
            Check::Unbound => (0, false),
        };
        Some(Linear {
            limit,
            payload,
            base: self.rsrc.base.wrapping_add(self.soffset),
        })
    }

    /// Whether the `size` bytes at `extra` past the lane's offset are in
    /// range: GFX9 checks their first byte, GFX11+ the whole payload.
    fn in_range(&self, lane: Lane, extra: u64, size: u32) -> bool {
        let n = u64::from(self.rsrc.num_records);
        let end = lane.offset + extra + u64::from(size);
        match self.check {
            Check::Private => true,
            Check::Structured => lane.index < n,
            Check::Raw => self.soffset + lane.offset + extra < n,
            Check::StructuredWithOffset => lane.index < n && end <= u64::from(self.rsrc.stride),
            Check::EmptyOnly => n != 0,
            Check::RawPayload => end <= n.saturating_sub(self.soffset),
            Check::Unbound => false,
        }
    }

    /// The address of the byte at `extra` past the lane's offset.
    fn address(&self, lane: Lane, extra: u64) -> u64 {
        self.rsrc
            .base
            .wrapping_add(self.soffset)
            .wrapping_add(self.rsrc.buffer_offset(lane.index, lane.offset + extra))
    }

    /// Where the `size` (1, 2, 4) bytes at `extra` past the lane's offset
    /// lie, as (address, bytes, bit shift) pieces: one, or a byte at a
    /// time when a swizzled access crosses an element, whose neighbour
    /// lies a whole index stride of elements further on.
    fn pieces(&self, lane: Lane, extra: u64, size: u32) -> ([(u64, u32, u32); 4], usize) {
        let es = u64::from(self.rsrc.element_size);
        let at = lane.offset + extra;
        let mut out = [(0, 0, 0); 4];
        if !self.rsrc.swizzle || at % es + u64::from(size) <= es {
            out[0] = (self.address(lane, extra), size, 0);
            return (out, 1);
        }
        for k in 0..size {
            out[k as usize] = (self.address(lane, extra + u64::from(k)), 1, 8 * k);
        }
        (out, size as usize)
    }

    /// The `size` (1, 2, 4) bytes at `extra` past the lane's offset, read
    /// from memory (the caller checked the range).
    #[inline(always)]
    fn read(&self, m: &mut Access<'_>, lane: Lane, extra: u64, size: u32) -> Result<u32, Fault> {
        if !self.rsrc.swizzle {
            // One piece: the common case, without the pieces array.
            let a = self.address(lane, extra);
            m.check(a, u64::from(size))
                .map_err(|_| memory_fault(a, u64::from(size), false))?;
            return Ok(m.load_small(a, size));
        }
        let (pieces, n) = self.pieces(lane, extra, size);
        let mut v = 0;
        for &(a, size, shift) in &pieces[..n] {
            m.check(a, u64::from(size))
                .map_err(|_| memory_fault(a, u64::from(size), false))?;
            v |= m.load_small(a, size) << shift;
        }
        Ok(v)
    }
}

/// [`Buffer::in_range`] and [`Buffer::address`] of an instruction whose
/// lanes all have index 0 and unswizzled addresses ([`Buffer::linear`]).
#[derive(Clone, Copy)]
struct Linear {
    /// A lane's bytes at `offset` are in range when `offset` plus the
    /// bytes checked (the payload, or with `payload` false its first byte)
    /// is at most this.
    limit: u64,
    payload: bool,
    /// BASE + SOFFSET: a lane's address is this plus its offset.
    base: u64,
}

impl Linear {
    /// Whether `size` bytes at `offset` are in range.
    #[inline(always)]
    fn in_range(&self, offset: u64, size: u32) -> bool {
        offset + if self.payload { u64::from(size) } else { 1 } <= self.limit
    }
}

/// The VADDR registers an instruction reads (index and/or offset).
fn vaddr<'w>(w: &'w Wave, i: &Inst) -> Result<[Option<&'w Lanes>; 2], Fault> {
    let n = usize::from(i.flags & flag::IDXEN != 0) + usize::from(i.flags & flag::OFFEN != 0);
    let Src::Vgpr(r) = i.src[0] else {
        return Err(Fault::Operand { code: 0 });
    };
    let mut out = [None, None];
    for (k, slot) in out.iter_mut().enumerate().take(n) {
        *slot = Some(w.vreg(r + k as u16, false)?);
    }
    Ok(out)
}

fn refuse_lds(i: &Inst) -> R {
    if i.flags & flag::LDS != 0 {
        return Err(Fault::Unimplemented {
            mnemonic: i.mnemonic,
        });
    }
    Ok(())
}

fn memory_fault(address: u64, size: u64, write: bool) -> Fault {
    Fault::Memory {
        space: Space::Global,
        address,
        size,
        write,
    }
}

// ---------------------------------------------------------------------
// Loads and stores
// ---------------------------------------------------------------------

/// How a load puts its data into VDATA (as in FLAT).
#[derive(Clone, Copy)]
enum Put {
    /// `n` dwords, range-checked one by one.
    Dwords(u32),
    /// `n` registers of a format load, range-checked together: MUBUF
    /// `buffer_load_format_*` (format and DST_SEL from the V#) or MTBUF
    /// `tbuffer_load_format_*` (`typed`: format from the instruction,
    /// identity DST_SEL).
    Format {
        n: u32,
        typed: bool,
    },
    Extend {
        size: u32,
        signed: bool,
    },
    D16 {
        size: u32,
        signed: bool,
        hi: bool,
    },
}

/// Inlined into each opcode's executor, where `put` is a constant: one
/// loop per form, which writes the destination registers in place (after
/// copying VADDR, which the destination may overlap).
#[inline(always)]
fn load(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, put: Put) -> R {
    load_on(w, i, ctx, put, true)
}

/// [`load`], through [`load_linear`] where it applies if `linear` (the
/// tests compare the two paths).
#[inline(always)]
fn load_on(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, put: Put, linear: bool) -> R {
    if i.flags & flag::LDS != 0 {
        return load_to_lds(w, i, ctx, put);
    }
    let exec = w.exec();
    let acc = i.acc();
    let buf = Buffer::of(w, i, ctx.target)?;
    let format = match put {
        Put::Format { n, typed } => Some(Format::of(i, &buf.rsrc, n, typed)?),
        _ => None,
    };
    let va = vaddr(w, i)?.map(|r| r.copied());
    let va = [va[0].as_ref(), va[1].as_ref()];
    if linear
        && format.is_none()
        && let Some(lin) = buf.linear(i)
    {
        return load_linear(w, i, ctx, put, lin, va[0]);
    }
    let dwords = match put {
        Put::Dwords(n) | Put::Format { n, .. } => n as usize,
        _ => 1,
    };
    let dst = regs_mut(w, i.vdst, dwords, acc)?;
    // D16 loads may keep the other half of the register (`flat::d16`).
    let keep = d16_keeps_other_half(ctx.target);
    let mut m = ctx.mem.access();
    for_lanes!(exec, |l| {
        let lane = buf.lane(&va, i, l);
        if let Put::Dwords(n) = put
            && !buf.rsrc.swizzle
            && buf.in_range(lane, 4 * (u64::from(n) - 1), 4)
        {
            // The common case: every dword in range (the range grows with
            // the offset) and all in one valid range of memory.
            let a = buf.address(lane, 0);
            if m.check(a, 4 * u64::from(n)).is_ok() {
                for (k, reg) in dst.iter_mut().enumerate() {
                    reg[l] = m.load_u32(a + 4 * k as u64);
                }
                continue;
            }
        }
        let mut get = |extra: u64, size: u32| buf.read(&mut m, lane, extra, size);
        match put {
            Put::Dwords(_) => {
                for (k, reg) in dst.iter_mut().enumerate() {
                    let extra = 4 * k as u64;
                    reg[l] = if buf.in_range(lane, extra, 4) {
                        get(extra, 4)?
                    } else {
                        0
                    };
                }
            }
            Put::Format { .. } => {
                if let Some(f) = &format {
                    let v = f.lane(&mut get, buf.in_range(lane, 0, 4))?;
                    for (reg, v) in dst.iter_mut().zip(v) {
                        reg[l] = v;
                    }
                }
            }
            Put::Extend { size, signed } => {
                dst[0][l] = if buf.in_range(lane, 0, size) {
                    extend(get(0, size)?, size, signed)
                } else {
                    0
                };
            }
            Put::D16 { size, signed, hi } => {
                let v = if buf.in_range(lane, 0, size) {
                    extend(get(0, size)?, size, signed)
                } else {
                    0
                };
                dst[0][l] = d16(keep, dst[0][l], v, hi);
            }
        }
    });
    Ok(())
}

/// [`load`] of a [`Buffer::linear`] instruction that is not a format
/// load: each lane's offset is its VADDR (with OFFEN) plus OFFSET, checked
/// against one bound; the same results as the general loop, without
/// indices, swizzling or the per-lane range-check dispatch.
#[inline(always)]
fn load_linear(
    w: &mut Wave,
    i: &Inst,
    ctx: &mut Ctx<'_>,
    put: Put,
    lin: Linear,
    voffset: Option<&Lanes>,
) -> R {
    let exec = w.exec();
    let acc = i.acc();
    let voffset = voffset.filter(|_| i.flags & flag::OFFEN != 0);
    let imm = u64::from(i.imm as u32);
    let dwords = match put {
        Put::Dwords(n) => n as usize,
        _ => 1,
    };
    let dst = regs_mut(w, i.vdst, dwords, acc)?;
    let keep = d16_keeps_other_half(ctx.target);
    let mut m = ctx.mem.access();
    let offset = |l: usize| voffset.map_or(0, |v| u64::from(v[l])) + imm;
    // The common case: the highest lane's bytes in range (so every lane's
    // are: the checks grow with the offset) and the span from the lowest
    // lane's first byte to the highest's last inside one valid range of
    // memory. No lane then needs checks of its own.
    let (piece, bytes) = match put {
        Put::Dwords(n) => (4, 4 * n),
        Put::Extend { size, .. } | Put::D16 { size, .. } => (size, size),
        Put::Format { .. } => (4, 4),
    };
    if let Some((lo, hi)) = offset_span(voffset, exec, imm)
        && lin.in_range(hi + u64::from(bytes - piece), piece)
        && m.check(lin.base.wrapping_add(lo), hi - lo + u64::from(bytes))
            .is_ok()
    {
        for_lanes!(exec, |l| {
            let a = lin.base + offset(l);
            match put {
                Put::Dwords(_) => {
                    for (k, reg) in dst.iter_mut().enumerate() {
                        reg[l] = m.load_u32(a + 4 * k as u64);
                    }
                }
                Put::Extend { size, signed } => {
                    dst[0][l] = extend(m.load_small(a, size), size, signed);
                }
                Put::D16 { size, signed, hi } => {
                    let v = extend(m.load_small(a, size), size, signed);
                    dst[0][l] = d16(keep, dst[0][l], v, hi);
                }
                Put::Format { .. } => {}
            }
        });
        return Ok(());
    }
    let mut read = |a: u64, size: u32| {
        m.check(a, u64::from(size))
            .map_err(|_| memory_fault(a, u64::from(size), false))?;
        Ok::<_, Fault>(m.load_small(a, size))
    };
    for_lanes!(exec, |l| {
        let offset = offset(l);
        let a = lin.base.wrapping_add(offset);
        match put {
            Put::Dwords(_) => {
                for (k, reg) in dst.iter_mut().enumerate() {
                    let extra = 4 * k as u64;
                    reg[l] = if lin.in_range(offset + extra, 4) {
                        read(a.wrapping_add(extra), 4)?
                    } else {
                        0
                    };
                }
            }
            Put::Extend { size, signed } => {
                dst[0][l] = if lin.in_range(offset, size) {
                    extend(read(a, size)?, size, signed)
                } else {
                    0
                };
            }
            Put::D16 { size, signed, hi } => {
                let v = if lin.in_range(offset, size) {
                    extend(read(a, size)?, size, signed)
                } else {
                    0
                };
                dst[0][l] = d16(keep, dst[0][l], v, hi);
            }
            // Format loads take the general path.
            Put::Format { .. } => {}
        }
    });
    Ok(())
}

/// The lowest and highest offset (VADDR with OFFEN, plus OFFSET) of the
/// lanes in `exec`; `None` with no lane.
#[inline(always)]
fn offset_span(voffset: Option<&Lanes>, exec: u64, imm: u64) -> Option<(u64, u64)> {
    if exec == 0 {
        return None;
    }
    let Some(v) = voffset else {
        return Some((imm, imm));
    };
    let (lo, hi) = if exec & exec.wrapping_add(1) == 0 {
        // Lanes 0..n: a minimum and maximum that vectorise.
        let n = 64 - exec.leading_zeros() as usize;
        v[..n]
            .iter()
            .fold((u32::MAX, 0), |(lo, hi), &x| (lo.min(x), hi.max(x)))
    } else {
        let (mut lo, mut hi) = (u32::MAX, 0);
        for_lanes!(exec, |l| {
            (lo, hi) = (lo.min(v[l]), hi.max(v[l]));
        });
        (lo, hi)
    };
    Some((u64::from(lo) + imm, u64::from(hi) + imm))
}

/// `buffer_load_{dword,ubyte,sbyte,ushort,sshort,format_x} ... lds`: each
/// lane in EXEC reads its 4, 1 or 2 bytes by the buffer rules (0 out of
/// range; `format_x` converts its component as the VGPR form would) and
/// writes that many bytes (4 for `format_x`) to LDS at `M0[15:0] + OFFSET
/// + 4 * lane`; no VGPR is written (module doc).
fn load_to_lds(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, put: Put) -> R {
    let buf = Buffer::of(w, i, ctx.target)?;
    let gfx950 = ctx.target == crate::decode::Target::Gfx950;
    let (size, format) = match put {
        Put::Dwords(1) => (4, None),
        // gfx950's wide forms (CDNA4 ISA §9.1.9).
        Put::Dwords(n @ (3 | 4)) if gfx950 => (4 * n, None),
        Put::Extend { size, .. } => (size, None),
        Put::Format { n: 1, typed: false } => (4, Some(Format::of(i, &buf.rsrc, 1, false)?)),
        _ => {
            return Err(Fault::Unimplemented {
                mnemonic: i.mnemonic,
            });
        }
    };
    let exec = w.exec();
    let va = vaddr(w, i)?;
    let strict = ctx.mem.is_strict();
    // CDNA4 widens the M0 offset to 18 bits for its 160 KiB LDS (§9.1.9:
    // "18-bit unsigned byte offset from M0[17:0]"), and its 3- and
    // 4-dword forms place lanes 16 bytes apart ("(TIDinWave * 16)").
    let m0_mask = if gfx950 { 0x3_FFFF } else { 0xFFFF };
    let stride: u64 = if size > 4 { 16 } else { 4 };
    let base = u64::from(w.s[usize::from(M0)] & m0_mask) + (i.imm as u64 & 0xFFF);
    let lanes = (0..LANES).filter(|l| exec >> l & 1 != 0);
    // Strict mode: every lane's LDS place checked before any is written.
    if let Some(l) = lanes
        .clone()
        .find(|&l| base + stride * l as u64 + u64::from(size) > ctx.lds.len() as u64)
        && strict
    {
        return Err(Fault::Memory {
            space: Space::Lds,
            address: base + stride * l as u64,
            size: u64::from(size),
            write: true,
        });
    }
    let mut m = ctx.mem.access();
    for l in lanes {
        let lane = buf.lane(&va, i, l);
        let mut v = [0u32; 4];
        if let Some(f) = &format {
            let mut get = |extra: u64, size: u32| buf.read(&mut m, lane, extra, size);
            v[0] = f.lane(&mut get, buf.in_range(lane, 0, 4))?[0];
        } else {
            // Each dword in or out of range on its own (§9.1.5.1).
            for (k, v) in v.iter_mut().enumerate().take(size.div_ceil(4) as usize) {
                let (extra, piece) = (4 * k as u64, size.min(4));
                if !buf.in_range(lane, extra, piece) {
                    continue;
                }
                let (pieces, n) = buf.pieces(lane, extra, piece);
                for &(a, size, shift) in &pieces[..n] {
                    m.check(a, u64::from(size))
                        .map_err(|_| memory_fault(a, u64::from(size), false))?;
                    *v |= m.load_small(a, size) << shift;
                }
            }
        }
        // "Memory Buffer to LDS does NOT return a memory violation if the
        // LDS address is out of range, but masks off EXEC bits" (§3.11).
        // A 3-dword load leaves its slot's fourth dword as it was.
        let at = (base + stride * l as u64) as usize;
        let mut bytes = [0u8; 16];
        for (b, d) in bytes.as_chunks_mut::<4>().0.iter_mut().zip(v) {
            *b = d.to_le_bytes();
        }
        if let Some(dst) = ctx.lds.get_mut(at..at + size as usize) {
            dst.copy_from_slice(&bytes[..size as usize]);
        }
    }
    Ok(())
}

/// How a store takes its data from VDATA.
#[derive(Clone, Copy)]
enum Take {
    Dwords(u32),
    Typed(u32),
    Part { size: u32, hi: bool },
}

fn store(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, take: Take) -> R {
    refuse_lds(i)?;
    let exec = w.exec();
    let acc = i.acc();
    let buf = Buffer::of(w, i, ctx.target)?;
    let va = vaddr(w, i)?;
    let dwords = match take {
        Take::Dwords(n) | Take::Typed(n) => n,
        Take::Part { .. } => 1,
    };
    w.vreg(i.vdst + dwords as u16 - 1, acc)?;
    // (address, size, value) of every in-range piece, checked before any
    // is written so a fault leaves memory unchanged.
    let mut writes = Vec::new();
    let mut m = ctx.mem.access();
    for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let lane = buf.lane(&va, i, l);
        let all = match take {
            Take::Part { size, .. } => buf.in_range(lane, 0, size),
            _ => buf.in_range(lane, 0, 4 * dwords),
        };
        for k in 0..dwords {
            let extra = 4 * u64::from(k);
            let v = w.vreg(i.vdst + k as u16, acc)?[l];
            let (ok, size, v) = match take {
                Take::Dwords(_) => (buf.in_range(lane, extra, 4), 4, v),
                Take::Typed(_) => (all, 4, v),
                Take::Part { size, hi } => (all, size, if hi { v >> 16 } else { v }),
            };
            if ok {
                let (pieces, n) = buf.pieces(lane, extra, size);
                for &(a, size, shift) in &pieces[..n] {
                    m.check(a, u64::from(size))
                        .map_err(|_| memory_fault(a, u64::from(size), true))?;
                    writes.push((a, size, v >> shift));
                }
            }
        }
    }
    for (a, size, v) in writes {
        m.store_small(a, size, v);
    }
    Ok(())
}

// ---------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------

fn atomic(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, op: Rmw, wide: bool) -> R {
    refuse_lds(i)?;
    let exec = w.exec();
    let acc = i.acc();
    let buf = Buffer::of(w, i, ctx.target)?;
    let va = vaddr(w, i)?;
    let size: u64 = if wide { 8 } else { 4 };
    let n: u16 = if wide { 2 } else { 1 };
    let cmpswap = matches!(op, Rmw::CmpSwap);
    let regs = if cmpswap { 2 * n } else { n };
    w.vreg(i.vdst + regs - 1, acc)?;
    let value = |r: u16, l: usize| -> Result<u64, Fault> {
        let lo = u64::from(w.vreg(i.vdst + r, acc)?[l]);
        Ok(if wide {
            lo | u64::from(w.vreg(i.vdst + r + 1, acc)?[l]) << 32
        } else {
            lo
        })
    };
    let mut port = Port {
        m: ctx.mem.access(),
        lds: ctx.lds,
    };
    // (lane, address, data, compare) of the in-range lanes, all checked
    // before the first one runs.
    let mut todo = Vec::new();
    for l in (0..LANES).filter(|l| exec >> l & 1 != 0) {
        let lane = buf.lane(&va, i, l);
        if !buf.in_range(lane, 0, size as u32) {
            continue;
        }
        let a = buf.address(lane, 0);
        port.m
            .check(a, size)
            .map_err(|_| memory_fault(a, size, true))?;
        if !a.is_multiple_of(size) {
            return Err(Fault::Misaligned { address: a, size });
        }
        let cmp = if cmpswap { value(n, l)? } else { 0 };
        todo.push((l, a, value(0, l)?, cmp));
    }
    let mut old = [0u64; LANES];
    for (l, a, d, cmp) in todo {
        old[l] = rmw(&mut port, Loc::Global(a), op, d, cmp, wide)?;
    }
    drop(port);
    if i.flags & flag::GLC == 0 {
        return Ok(());
    }
    let mut out = vec![std::array::from_fn(|l| old[l] as u32)];
    if wide {
        out.push(std::array::from_fn(|l| (old[l] >> 32) as u32));
    }
    w.write_regs(i.vdst, acc, &out, exec)
}

// ---------------------------------------------------------------------
// Format loads (MUBUF `buffer_load_format_*`, MTBUF `tbuffer_*`)
// ---------------------------------------------------------------------

/// The array DATA_FORMATs (MI200 ISA §9.1.2 Table 29, MI300 Table 40) and
/// their components' widths in bits, X first at the lowest address:
/// BUF_DATA_FORMAT_8, 16, 8_8, 32, 16_16, 8_8_8_8, 32_32, 16_16_16_16,
/// 32_32_32, 32_32_32_32. The packed ones (6 to 9: 10_11_11, 11_11_10,
/// 10_10_10_2, 2_10_10_10) are not here (module doc).
const ARRAY_FORMATS: [(u8, &[u8]); 10] = [
    (1, &[8]),
    (2, &[16]),
    (3, &[8, 8]),
    (4, &[32]),
    (5, &[16, 16]),
    (10, &[8; 4]),
    (11, &[32, 32]),
    (12, &[16; 4]),
    (13, &[32; 3]),
    (14, &[32; 4]),
];

/// NUM_FORMAT (the same tables): how a component becomes a register.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Num {
    /// UINT (4): zero-extended.
    Uint,
    /// SINT (5): sign-extended.
    Sint,
    /// USCALED (2): the unsigned integer as an f32.
    Uscaled,
    /// SSCALED (3): the signed integer as an f32.
    Sscaled,
    /// FLOAT (7): 32-bit components as they are, 16-bit ones f16 → f32.
    Float,
}

/// What one destination register of a format load gets (DST_SEL, MI200
/// ISA Table 36 "Buffer Resource Descriptor": 0=0, 1=1, 4=R, 5=G, 6=B,
/// 7=A).
#[derive(Clone, Copy)]
enum Sel {
    Zero,
    One,
    /// The format's component (0 = X/R … 3 = W/A).
    Comp(usize),
}

/// A format load's format, checked once per instruction.
struct Format {
    widths: &'static [u8],
    num: Num,
    /// Per destination register; only the first `n` are used.
    sel: [Sel; 4],
    n: usize,
}

impl Format {
    /// The format of a `buffer_load_format_*` (from the V#, with its
    /// DST_SEL) or, `typed`, a `tbuffer_load_format_*` (from the
    /// instruction, identity DST_SEL) that writes `n` registers. A case
    /// the simulator does not model is refused before any lane runs.
    fn of(i: &Inst, rsrc: &Rsrc, n: u32, typed: bool) -> Result<Self, Fault> {
        let refuse = |case| Fault::UnimplementedCase {
            mnemonic: i.mnemonic,
            case,
        };
        // GFX11+'s unified FORMAT codes are another table, not modelled.
        if rsrc.rdna.is_some() {
            return Err(refuse(
                "a format load through a GFX11+ V# (unified formats)",
            ));
        }
        let n = n as usize;
        let (dfmt, nfmt) = if typed {
            (i.fmt & 0xF, i.fmt >> 4)
        } else {
            (rsrc.data_format, rsrc.num_format)
        };
        if !typed && *rsrc == Rsrc::from_words([0; 4]) {
            // "A resource set to all zeros acts as an unbound texture or
            // buffer (return 0,0,0,0)" (Table 36's note).
            return Ok(Self {
                widths: &[],
                num: Num::Uint,
                sel: [Sel::Zero; 4],
                n,
            });
        }
        let widths = match dfmt {
            6..=9 => {
                return Err(refuse(
                    "a packed DATA_FORMAT (10_11_11, 11_11_10, 10_10_10_2 or 2_10_10_10)",
                ));
            }
            _ => ARRAY_FORMATS
                .iter()
                .find(|(d, _)| *d == dfmt)
                .map(|&(_, w)| w)
                .ok_or(refuse("DATA_FORMAT 0 (invalid) or 15 (reserved)"))?,
        };
        let num = match nfmt {
            0 | 1 => {
                return Err(refuse(
                    "NUM_FORMAT UNORM or SNORM (the ISA text gives no exact conversion)",
                ));
            }
            2 => Num::Uscaled,
            3 => Num::Sscaled,
            4 => Num::Uint,
            5 => Num::Sint,
            7 => Num::Float,
            _ => return Err(refuse("NUM_FORMAT 6 (reserved on GFX9)")),
        };
        let width = widths[0];
        if matches!(num, Num::Uscaled | Num::Sscaled) && width == 32
            || num == Num::Float && width == 8
        {
            return Err(refuse(
                "a NUM_FORMAT its DATA_FORMAT does not take (SCALED with 32-bit or FLOAT with 8-bit components)",
            ));
        }
        let mut sel = [Sel::Zero; 4];
        for (k, s) in sel.iter_mut().enumerate().take(n) {
            *s = if typed {
                // "DST_SEL identity: ... X000, XY00, XYZ0, or XYZW".
                if k < widths.len() {
                    Sel::Comp(k)
                } else {
                    Sel::Zero
                }
            } else {
                match rsrc.dst_sel[k] {
                    0 => Sel::Zero,
                    1 => Sel::One,
                    c @ 4..=7 if usize::from(c - 4) < widths.len() => Sel::Comp(usize::from(c - 4)),
                    4..=7 => {
                        return Err(refuse(
                            "a DST_SEL of a component its DATA_FORMAT lacks (undocumented)",
                        ));
                    }
                    _ => return Err(refuse("DST_SEL 2 or 3 (reserved)")),
                }
            };
        }
        Ok(Self {
            widths,
            num,
            sel,
            n,
        })
    }

    /// The register value of SEL_1: 1.0 for the float NUM_FORMATs, 1 for
    /// the integer ones (module doc).
    fn one(&self) -> u32 {
        match self.num {
            Num::Uint | Num::Sint => 1,
            _ => 1f32.to_bits(),
        }
    }

    /// One lane's registers: its bytes read through `get(extra, size)` if
    /// `in_range` (all or nothing), converted and selected; out of range
    /// every component is 0 and SEL_1 still gives 1.
    #[inline(always)]
    fn lane(
        &self,
        get: &mut impl FnMut(u64, u32) -> Result<u32, Fault>,
        in_range: bool,
    ) -> Result<[u32; 4], Fault> {
        let mut comps = [0u32; 4];
        if in_range && !self.widths.is_empty() {
            let bytes: u32 = self.widths.iter().map(|&w| u32::from(w) / 8).sum();
            let mut raw = 0u128;
            for k in (0..bytes).step_by(4) {
                raw |= u128::from(get(u64::from(k), (bytes - k).min(4))?) << (8 * k);
            }
            let mut at = 0;
            for (c, &width) in comps.iter_mut().zip(self.widths) {
                *c = self.convert((raw >> at) as u32, width);
                at += u32::from(width);
            }
        }
        let mut out = [0; 4];
        for (o, s) in out.iter_mut().zip(&self.sel).take(self.n) {
            *o = match *s {
                Sel::Zero => 0,
                Sel::One => self.one(),
                Sel::Comp(c) => comps[c],
            };
        }
        Ok(out)
    }

    /// A component's `width` low bits of `v` as a register (§9.1.3).
    fn convert(&self, v: u32, width: u8) -> u32 {
        let shift = 32 - u32::from(width);
        let unsigned = v << shift >> shift;
        let signed = (v << shift) as i32 >> shift;
        match self.num {
            Num::Uint => unsigned,
            Num::Sint => signed as u32,
            Num::Uscaled => (unsigned as f32).to_bits(),
            Num::Sscaled => (signed as f32).to_bits(),
            Num::Float if width == 16 => f16_to_f32(unsigned as u16).to_bits(),
            Num::Float => v,
        }
    }
}

/// A `tbuffer_store_format_*` of `n` components, if the simulator
/// supports its format: exactly `n` 32-bit components of [`ARRAY_FORMATS`]
/// in UINT, SINT or FLOAT, which pass through unconverted (§9.1.3).
fn typed_store(i: &Inst, n: u32) -> R {
    let (dfmt, nfmt) = (i.fmt & 0xF, i.fmt >> 4);
    let whole = ARRAY_FORMATS
        .iter()
        .find(|(d, _)| *d == dfmt)
        .is_some_and(|(_, w)| w.len() == n as usize && w.iter().all(|&b| b == 32));
    if whole && matches!(nfmt, 4 | 5 | 7) {
        return Ok(());
    }
    Err(Fault::UnimplementedCase {
        mnemonic: i.mnemonic,
        case: "a format other than its count of 32-bit UINT, SINT or FLOAT components",
    })
}

fn tstore(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, n: u32) -> R {
    typed_store(i, n)?;
    store(w, i, ctx, Take::Typed(n))
}

// ---------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------

macro_rules! buffer_ops {
    ($table:ident: $($name:literal => |$w:ident, $i:ident, $c:ident| $body:expr;)*) => {
        const $table: &[(&str, Exec)] = &[
            $(($name, { fn f($w: &mut Wave, $i: &Inst, $c: &mut Ctx<'_>) -> R { $body } f }),)*
        ];
    };
}

buffer_ops! { MEM:
    "buffer_load_ubyte" => |w, i, c| load(w, i, c, Put::Extend { size: 1, signed: false });
    "buffer_load_sbyte" => |w, i, c| load(w, i, c, Put::Extend { size: 1, signed: true });
    "buffer_load_ushort" => |w, i, c| load(w, i, c, Put::Extend { size: 2, signed: false });
    "buffer_load_sshort" => |w, i, c| load(w, i, c, Put::Extend { size: 2, signed: true });
    "buffer_load_dword" => |w, i, c| load(w, i, c, Put::Dwords(1));
    "buffer_load_dwordx2" => |w, i, c| load(w, i, c, Put::Dwords(2));
    "buffer_load_dwordx3" => |w, i, c| load(w, i, c, Put::Dwords(3));
    "buffer_load_dwordx4" => |w, i, c| load(w, i, c, Put::Dwords(4));
    "buffer_load_ubyte_d16" => |w, i, c| load(w, i, c, Put::D16 { size: 1, signed: false, hi: false });
    "buffer_load_ubyte_d16_hi" => |w, i, c| load(w, i, c, Put::D16 { size: 1, signed: false, hi: true });
    "buffer_load_sbyte_d16" => |w, i, c| load(w, i, c, Put::D16 { size: 1, signed: true, hi: false });
    "buffer_load_sbyte_d16_hi" => |w, i, c| load(w, i, c, Put::D16 { size: 1, signed: true, hi: true });
    "buffer_load_short_d16" => |w, i, c| load(w, i, c, Put::D16 { size: 2, signed: false, hi: false });
    "buffer_load_short_d16_hi" => |w, i, c| load(w, i, c, Put::D16 { size: 2, signed: false, hi: true });
    "buffer_store_byte" => |w, i, c| store(w, i, c, Take::Part { size: 1, hi: false });
    "buffer_store_byte_d16_hi" => |w, i, c| store(w, i, c, Take::Part { size: 1, hi: true });
    "buffer_store_short" => |w, i, c| store(w, i, c, Take::Part { size: 2, hi: false });
    "buffer_store_short_d16_hi" => |w, i, c| store(w, i, c, Take::Part { size: 2, hi: true });
    "buffer_store_dword" => |w, i, c| store(w, i, c, Take::Dwords(1));
    "buffer_store_dwordx2" => |w, i, c| store(w, i, c, Take::Dwords(2));
    "buffer_store_dwordx3" => |w, i, c| store(w, i, c, Take::Dwords(3));
    "buffer_store_dwordx4" => |w, i, c| store(w, i, c, Take::Dwords(4));
    "buffer_load_format_x" => |w, i, c| load(w, i, c, Put::Format { n: 1, typed: false });
    "buffer_load_format_xy" => |w, i, c| load(w, i, c, Put::Format { n: 2, typed: false });
    "buffer_load_format_xyz" => |w, i, c| load(w, i, c, Put::Format { n: 3, typed: false });
    "buffer_load_format_xyzw" => |w, i, c| load(w, i, c, Put::Format { n: 4, typed: false });
    "tbuffer_load_format_x" => |w, i, c| load(w, i, c, Put::Format { n: 1, typed: true });
    "tbuffer_load_format_xy" => |w, i, c| load(w, i, c, Put::Format { n: 2, typed: true });
    "tbuffer_load_format_xyz" => |w, i, c| load(w, i, c, Put::Format { n: 3, typed: true });
    "tbuffer_load_format_xyzw" => |w, i, c| load(w, i, c, Put::Format { n: 4, typed: true });
    "tbuffer_store_format_x" => |w, i, c| tstore(w, i, c, 1);
    "tbuffer_store_format_xy" => |w, i, c| tstore(w, i, c, 2);
    "tbuffer_store_format_xyz" => |w, i, c| tstore(w, i, c, 3);
    "tbuffer_store_format_xyzw" => |w, i, c| tstore(w, i, c, 4);
}

buffer_ops! { ATOMIC:
    "buffer_atomic_swap" => |w, i, c| atomic(w, i, c, Rmw::Swap, false);
    "buffer_atomic_cmpswap" => |w, i, c| atomic(w, i, c, Rmw::CmpSwap, false);
    "buffer_atomic_add" => |w, i, c| atomic(w, i, c, Rmw::Add, false);
    "buffer_atomic_sub" => |w, i, c| atomic(w, i, c, Rmw::Sub, false);
    "buffer_atomic_smin" => |w, i, c| atomic(w, i, c, Rmw::SMin, false);
    "buffer_atomic_umin" => |w, i, c| atomic(w, i, c, Rmw::UMin, false);
    "buffer_atomic_smax" => |w, i, c| atomic(w, i, c, Rmw::SMax, false);
    "buffer_atomic_umax" => |w, i, c| atomic(w, i, c, Rmw::UMax, false);
    "buffer_atomic_and" => |w, i, c| atomic(w, i, c, Rmw::And, false);
    "buffer_atomic_or" => |w, i, c| atomic(w, i, c, Rmw::Or, false);
    "buffer_atomic_xor" => |w, i, c| atomic(w, i, c, Rmw::Xor, false);
    "buffer_atomic_inc" => |w, i, c| atomic(w, i, c, Rmw::Inc, false);
    "buffer_atomic_dec" => |w, i, c| atomic(w, i, c, Rmw::Dec, false);
    "buffer_atomic_add_f32" => |w, i, c| atomic(w, i, c, Rmw::AddF32, false);
    "buffer_atomic_pk_add_f16" => |w, i, c| atomic(w, i, c, Rmw::PkAddF16, false);
    "buffer_atomic_swap_x2" => |w, i, c| atomic(w, i, c, Rmw::Swap, true);
    "buffer_atomic_cmpswap_x2" => |w, i, c| atomic(w, i, c, Rmw::CmpSwap, true);
    "buffer_atomic_add_x2" => |w, i, c| atomic(w, i, c, Rmw::Add, true);
    "buffer_atomic_sub_x2" => |w, i, c| atomic(w, i, c, Rmw::Sub, true);
    "buffer_atomic_smin_x2" => |w, i, c| atomic(w, i, c, Rmw::SMin, true);
    "buffer_atomic_umin_x2" => |w, i, c| atomic(w, i, c, Rmw::UMin, true);
    "buffer_atomic_smax_x2" => |w, i, c| atomic(w, i, c, Rmw::SMax, true);
    "buffer_atomic_umax_x2" => |w, i, c| atomic(w, i, c, Rmw::UMax, true);
    "buffer_atomic_and_x2" => |w, i, c| atomic(w, i, c, Rmw::And, true);
    "buffer_atomic_or_x2" => |w, i, c| atomic(w, i, c, Rmw::Or, true);
    "buffer_atomic_xor_x2" => |w, i, c| atomic(w, i, c, Rmw::Xor, true);
    "buffer_atomic_inc_x2" => |w, i, c| atomic(w, i, c, Rmw::Inc, true);
    "buffer_atomic_dec_x2" => |w, i, c| atomic(w, i, c, Rmw::Dec, true);
    "buffer_atomic_add_f64" => |w, i, c| atomic(w, i, c, Rmw::AddF64, true);
    "buffer_atomic_min_f64" => |w, i, c| atomic(w, i, c, Rmw::MinF64, true);
    "buffer_atomic_max_f64" => |w, i, c| atomic(w, i, c, Rmw::MaxF64, true);
}

/// Every MUBUF/MTBUF executor (cache maintenance is in `exec::flat`).
pub const OPS: &[&[(&str, Exec)]] = &[MEM, ATOMIC];

#[cfg(test)]
mod tests {
    //! Instruction words and their disassembly come from the toolchain's
    //! `llc`/`llvm-objdump` for gfx90a (module asm assembled into an
    //! object, then disassembled).

    use super::*;
    use crate::decode::Target;
    use crate::memory::Memory;
    use crate::wave::Scratch;

    const POISON: u32 = 0xDEAD_BEEF;
    /// Bytes of the test buffer; dword k holds `PATTERN + k`.
    const BUFFER: u64 = 4096;
    const PATTERN: u32 = 0x7000_0000;
    /// The V# lives in s[8:11] in every instruction below.
    const SRSRC: usize = 8;

    struct Rig {
        memory: Memory,
        buf: u64,
    }

    impl Rig {
        fn new() -> Self {
            let memory = Memory::new();
            let buf = memory.alloc(BUFFER, 256).expect("alloc");
            let bytes: Vec<u8> = (0..BUFFER as u32 / 4)
                .flat_map(|k| (PATTERN + k).to_le_bytes())
                .collect();
            memory.write_bytes(buf, &bytes).expect("fill");
            Self { memory, buf }
        }

        fn run(&self, w: &mut Wave, words: [u32; 2], mnemonic: &str) -> R {
            crate::exec::run_words_in(&self.memory, Target::Gfx90a, w, &words, mnemonic, &mut [])
        }

        /// 64 records of 16 bytes, swizzled: ELEMENT_SIZE 4 bytes (code
        /// 1), INDEX_STRIDE 16 (code 1).
        fn swizzled_rsrc(&self) -> [u32; 4] {
            let mut rsrc = self.rsrc(16, 64);
            rsrc[1] |= 1 << 31;
            rsrc[3] = 1 << 19 | 1 << 21;
            rsrc
        }

        fn dword(&self, address: u64) -> u32 {
            let mut b = [0u8; 4];
            self.memory.read_bytes(address, &mut b).expect("in memory");
            u32::from_le_bytes(b)
        }

        /// A raw or structured V# over the buffer.
        fn rsrc(&self, stride: u32, num_records: u32) -> [u32; 4] {
            [
                self.buf as u32,
                (self.buf >> 32) as u32 & 0xFFFF | stride << 16,
                num_records,
                0,
            ]
        }
    }

    fn wave(exec: u64, rsrc: [u32; 4]) -> Wave {
        let mut w = Wave::new(16, 0);
        w.set_exec(exec);
        for r in 0..16 {
            w.v[r] = [POISON; LANES];
        }
        w.s[SRSRC..SRSRC + 4].copy_from_slice(&rsrc);
        w
    }

    fn pattern(byte_offset: u64) -> u32 {
        PATTERN + (byte_offset / 4) as u32
    }

    #[test]
    fn raw_load_reads_zero_from_num_records_on() {
        let rig = Rig::new();
        let mut w = wave(!(1 << 2), rig.rsrc(0, 24));
        w.v[1] = std::array::from_fn(|l| 4 * l as u32);
        // buffer_load_dword v4, v1, s[8:11], 0 offen
        rig.run(&mut w, [0xE0501000, 0x80020401], "buffer_load_dword")
            .unwrap();
        for l in 0..LANES {
            let want = match l {
                2 => POISON,
                0..6 => pattern(4 * l as u64),
                _ => 0,
            };
            assert_eq!(w.v[4][l], want, "lane {l}");
        }
    }

    #[test]
    fn raw_dwordx4_is_checked_dword_by_dword() {
        let rig = Rig::new();
        let mut w = wave(0b111, rig.rsrc(0, 22));
        // Lane 0 straddles NUM_RECORDS = 22: dwords at 12, 16 and 20 start
        // below it (20 reads bytes 20..24, past the limit, from memory),
        // 24 does not. Lane 1 starts at the limit; lane 2's offset is huge
        // and must not wrap back into range.
        w.v[1] = [12, 22, 0xFFFF_FFF0]
            .into_iter()
            .chain([0; 61])
            .collect::<Vec<_>>()
            .try_into()
            .expect("64 lanes");
        // buffer_load_dwordx4 v[4:7], v1, s[8:11], 0 offen
        rig.run(&mut w, [0xE05C1000, 0x80020401], "buffer_load_dwordx4")
            .unwrap();
        let got = |l: usize| [w.v[4][l], w.v[5][l], w.v[6][l], w.v[7][l]];
        assert_eq!(got(0), [pattern(12), pattern(16), pattern(20), 0]);
        assert_eq!(got(1), [0; 4]);
        assert_eq!(got(2), [0; 4]);
        assert_eq!(got(3), [POISON; 4]);
    }

    /// SOFFSET counts in the raw check (module doc: AMD's kernels need it,
    /// the ISA text leaves it out).
    #[test]
    fn soffset_moves_the_address_and_counts_in_the_range_check() {
        let rig = Rig::new();
        let mut w = wave(0b11, rig.rsrc(0, 32));
        w.s[5] = 8;
        w.v[1][0] = 16;
        w.v[1][1] = 20;
        // buffer_load_dword v4, v1, s[8:11], s5 offen offset:4: lane 0's
        // checked offset is 8 + 16 + 4 = 28 (< 32), its address base + 28;
        // lane 1's 32 is out.
        rig.run(&mut w, [0xE0501004, 0x05020401], "buffer_load_dword")
            .unwrap();
        assert_eq!(w.v[4][0], pattern(28));
        assert_eq!(w.v[4][1], 0);
    }

    /// The edge case of AMD's f32 GEMM kernels: SOFFSET carries an offset
    /// the VGPR keeps in range past the end of an exactly sized buffer.
    /// It reads 0 and touches no memory, so not even strict mode objects.
    #[test]
    fn soffset_past_an_exactly_sized_buffer_reads_zero_without_touching_memory() {
        let memory = Memory::new();
        let buf = memory.alloc(24, 256).unwrap();
        let mut w = wave(1, [buf as u32, (buf >> 32) as u32 & 0xFFFF, 24, 0]);
        w.s[5] = 4096;
        w.v[1][0] = 8;
        // buffer_load_dword v4, v1, s[8:11], s5 offen offset:4: VGPR and
        // instruction offsets 12 < 24, but 4096 more lies a page past.
        let words = [0xE0501004, 0x05020401];
        memory.set_strict(true);
        crate::exec::run_words_in(
            &memory,
            Target::Gfx90a,
            &mut w,
            &words,
            "buffer_load_dword",
            &mut [],
        )
        .unwrap();
        assert_eq!(w.v[4][0], 0);
    }

    /// MI200/MI300 ISA §9.1.9 "Memory Buffer Load to LDS": each lane in
    /// EXEC writes its dword to LDS at M0[15:0] + 4 × lane (plus OFFSET,
    /// module doc), nothing to VGPRs; memory out of range gives 0 (buffer
    /// rules, §9.1.9.1); an LDS address out of range masks the lane
    /// (§3.11) and is a fault in strict mode. The encoding is the one in
    /// AMD's direct-to-LDS SGEMM kernels.
    #[test]
    fn load_to_lds_writes_each_lane_at_m0_plus_four_per_lane() {
        let rig = Rig::new();
        // 40 records: lanes 0..10 in range, the rest read 0.
        let exec = !(1u64 << 3);
        let mut w = wave(exec, rig.rsrc(0, 40));
        w.s[usize::from(M0)] = 0xABCD_0100; // only M0[15:0] counts
        w.v[4] = std::array::from_fn(|l| 4 * l as u32);
        let run = |w: &mut Wave, words: [u32; 2], lds: &mut [u8], memory: &Memory| {
            crate::exec::run_words_in(memory, Target::Gfx90a, w, &words, "buffer_load_dword", lds)
        };
        let mut lds = vec![0xEEu8; 1024];
        run(&mut w, [0xE0511000, 0x80020004], &mut lds, &rig.memory).unwrap();
        let dword = |lds: &[u8], at: usize| u32::from_le_bytes(lds[at..at + 4].try_into().unwrap());
        for l in 0..LANES {
            let want = match l {
                3 => 0xEEEE_EEEE,
                0..10 => pattern(4 * l as u64),
                _ => 0,
            };
            assert_eq!(dword(&lds, 0x100 + 4 * l), want, "lane {l}");
        }
        assert_eq!(
            w.v[0..4],
            wave(exec, rig.rsrc(0, 40)).v[0..4],
            "no VGPR written"
        );
        assert_eq!(&lds[..0x100], &[0xEE; 0x100][..]);

        // OFFSET 16 moves the memory and the LDS address alike.
        let mut lds = vec![0u8; 1024];
        run(&mut w, [0xE0511010, 0x80020004], &mut lds, &rig.memory).unwrap();
        assert_eq!(dword(&lds, 0x110), pattern(16));

        // Past the LDS: lanes masked; in strict mode a fault.
        w.s[usize::from(M0)] = 1024 - 8;
        let mut lds = vec![0u8; 1024];
        run(&mut w, [0xE0511000, 0x80020004], &mut lds, &rig.memory).unwrap();
        assert_eq!(
            (dword(&lds, 1016), dword(&lds, 1020)),
            (pattern(0), pattern(4))
        );
        rig.memory.set_strict(true);
        let mut untouched = vec![0u8; 1024];
        let r = run(
            &mut w,
            [0xE0511000, 0x80020004],
            &mut untouched,
            &rig.memory,
        );
        assert!(untouched.iter().all(|&b| b == 0), "no lane writes first");
        assert_eq!(
            r,
            Err(Fault::Memory {
                space: Space::Lds,
                address: 1024,
                size: 4,
                write: true
            })
        );
        rig.memory.set_strict(false);
    }

    /// The byte and short loads to LDS: the same `4 * lane` LDS address
    /// ("for sizes up to 4 bytes", LLVM's AMDGPUDMAOperations), the data's
    /// own size written (LLVM's model of the DMA as a load and a store of
    /// that size; module doc), the rest of the lane's dword untouched, the
    /// signed and unsigned forms alike; 0 out of range.
    #[test]
    fn byte_and_short_loads_to_lds_write_their_size_four_bytes_apart() {
        let rig = Rig::new();
        let exec = !(1u64 << 5);
        // (first word, mnemonic, size): ubyte, sbyte, ushort, sshort, each
        // OFFEN with the LDS bit.
        let forms = [
            (0xE0411000u32, "buffer_load_ubyte", 1usize),
            (0xE0451000, "buffer_load_sbyte", 1),
            (0xE0491000, "buffer_load_ushort", 2),
            (0xE04D1000, "buffer_load_sshort", 2),
        ];
        for (word, mnemonic, size) in forms {
            // 41 records: lanes 0..10 read in range (the lane's bytes start
            // at 4 × lane + 3 - size, the top of its dword), the rest 0.
            let mut w = wave(exec, rig.rsrc(0, 41));
            w.s[usize::from(M0)] = 0x40;
            let skew = 4 - size as u32;
            w.v[4] = std::array::from_fn(|l| 4 * l as u32 + skew);
            let mut lds = vec![0xEEu8; 512];
            crate::exec::run_words_in(
                &rig.memory,
                Target::Gfx90a,
                &mut w,
                &[word, 0x80020004],
                mnemonic,
                &mut lds,
            )
            .unwrap();
            for l in 0..LANES {
                let at = 0x40 + 4 * l;
                let source = pattern(4 * l as u64).to_le_bytes();
                let mut want = [0xEEu8; 4];
                match l {
                    5 => {}
                    0..10 => want[..size].copy_from_slice(&source[4 - size..]),
                    _ => want[..size].fill(0),
                }
                assert_eq!(lds[at..at + 4], want, "{mnemonic} lane {l}");
            }
            assert!(lds[..0x40].iter().all(|&b| b == 0xEE), "{mnemonic}");
        }
    }

    #[test]
    fn raw_store_drops_the_out_of_range_dwords() {
        let rig = Rig::new();
        let mut w = wave(0b11, rig.rsrc(0, 24));
        w.v[1][0] = 20;
        w.v[1][1] = 24;
        w.v[4] = [0xAAAA; LANES];
        w.v[5] = [0xBBBB; LANES];
        // buffer_store_dwordx2 v[4:5], v1, s[8:11], 0 offen
        rig.run(&mut w, [0xE0741000, 0x80020401], "buffer_store_dwordx2")
            .unwrap();
        assert_eq!(rig.dword(rig.buf + 20), 0xAAAA);
        assert_eq!(rig.dword(rig.buf + 24), pattern(24));
        assert_eq!(rig.dword(rig.buf + 28), pattern(28));
    }

    #[test]
    fn structured_buffer_checks_the_index_only() {
        let rig = Rig::new();
        let mut w = wave(0b1111, rig.rsrc(16, 3));
        w.v[1] = std::array::from_fn(|l| l as u32);
        // buffer_load_dwordx4 v[4:7], v1, s[8:11], 0 idxen offset:4: the
        // last dword of record 2 reaches into record 3 and is still read.
        rig.run(&mut w, [0xE05C2004, 0x80020401], "buffer_load_dwordx4")
            .unwrap();
        for l in 0..3 {
            let at = 16 * l as u64 + 4;
            let want = [0, 4, 8, 12].map(|k| pattern(at + k));
            assert_eq!([w.v[4][l], w.v[5][l], w.v[6][l], w.v[7][l]], want);
        }
        assert_eq!([w.v[4][3], w.v[5][3], w.v[6][3], w.v[7][3]], [0; 4]);
    }

    #[test]
    fn swizzled_buffer_interleaves_elements_across_indices() {
        let rig = Rig::new();
        let mut w = wave(u64::MAX, rig.swizzled_rsrc());
        w.v[1] = std::array::from_fn(|l| l as u32);
        // buffer_load_dwordx4 v[4:7], v1, s[8:11], 0 idxen offset:4
        rig.run(&mut w, [0xE05C2004, 0x80020401], "buffer_load_dwordx4")
            .unwrap();
        for l in 0..LANES as u64 {
            // Sixteen indices share a 16 * 16-byte block; in it, dword d
            // of index i sits at (d * 16 + i) * 4.
            let block = l / 16 * 16 * 16;
            let want = [1, 2, 3, 4].map(|d| pattern(block + (d * 16 + l % 16) * 4));
            let l = l as usize;
            assert_eq!(
                [w.v[4][l], w.v[5][l], w.v[6][l], w.v[7][l]],
                want,
                "lane {l}"
            );
        }
    }

    #[test]
    fn a_swizzled_access_across_an_element_takes_each_byte_from_its_element() {
        let rig = Rig::new();
        let mut w = wave(u64::MAX, rig.swizzled_rsrc());
        w.v[1] = std::array::from_fn(|l| l as u32);
        // buffer_load_dword v4, v1, s[8:11], 0 idxen offset:2: bytes 2..4
        // of element 0 and bytes 0..2 of element 1, which lies 16
        // elements further on.
        rig.run(&mut w, [0xE0502002, 0x80020401], "buffer_load_dword")
            .unwrap();
        for l in 0..LANES as u64 {
            let element = |e: u64| rig.dword(rig.buf + (l / 16 * 16 * 16) + (e * 16 + l % 16) * 4);
            let want = element(0) >> 16 | element(1) << 16;
            assert_eq!(w.v[4][l as usize], want, "lane {l}");
        }
        // And back: the same store puts each byte into its element.
        w.v[4] = std::array::from_fn(|l| 0x4433_2211 + l as u32);
        // buffer_store_dword v4, v1, s[8:11], 0 idxen offset:2
        rig.run(&mut w, [0xE0702002, 0x80020401], "buffer_store_dword")
            .unwrap();
        for l in 0..LANES as u64 {
            let at = |e: u64| rig.buf + (l / 16 * 16 * 16) + (e * 16 + l % 16) * 4;
            let v = 0x4433_2211 + l as u32;
            assert_eq!(rig.dword(at(0)) >> 16, v & 0xffff, "lane {l}");
            assert_eq!(rig.dword(at(1)) & 0xffff, v >> 16, "lane {l}");
        }
    }

    #[test]
    fn scratch_descriptor_agrees_with_the_private_segment_swizzle() {
        let rig = Rig::new();
        let lane_bytes = 64;
        let wave_bytes = LANES as u64 * u64::from(lane_bytes);
        let region = rig.memory.alloc(2 * wave_bytes, 256).unwrap();
        // The second wave of the region, as dispatch lays waves out.
        let scratch = Scratch {
            base: region + wave_bytes,
            lane_bytes,
        };
        let mut w = wave(u64::MAX, crate::dispatch::private_segment_buffer(region));
        w.scratch = scratch;
        w.s[5] = wave_bytes as u32;
        w.v[1] = std::array::from_fn(|l| (4 * l as u32) % 56);
        w.v[4] = std::array::from_fn(|l| 0x100 + l as u32);
        w.v[5] = std::array::from_fn(|l| 0x200 + l as u32);
        // buffer_store_dwordx2 v[4:5], v1, s[8:11], s5 offen
        rig.run(&mut w, [0xE0741000, 0x05020401], "buffer_store_dwordx2")
            .unwrap();
        for l in 0..LANES {
            let o = u64::from(w.v[1][l]);
            let at = |o| scratch.address(l, o, 4).expect("in the lane's segment");
            assert_eq!(rig.dword(at(o)), 0x100 + l as u32, "lane {l}");
            assert_eq!(rig.dword(at(o + 4)), 0x200 + l as u32, "lane {l}");
        }
        w.v[4] = [POISON; LANES];
        w.v[5] = [POISON; LANES];
        // buffer_load_dwordx2 v[4:5], v1, s[8:11], s5 offen
        rig.run(&mut w, [0xE0541000, 0x05020401], "buffer_load_dwordx2")
            .unwrap();
        for l in 0..LANES {
            assert_eq!((w.v[4][l], w.v[5][l]), (0x100 + l as u32, 0x200 + l as u32));
        }
    }

    #[test]
    fn atomics_run_in_lane_order_and_skip_out_of_range_lanes() {
        let rig = Rig::new();
        let mut w = wave(u64::MAX, rig.rsrc(0, 64));
        w.v[1] = [8; LANES];
        w.v[1][3] = 64;
        w.v[4] = std::array::from_fn(|l| l as u32 + 1);
        // buffer_atomic_add v4, v1, s[8:11], 0 offen glc
        rig.run(&mut w, [0xE1085000, 0x80020401], "buffer_atomic_add")
            .unwrap();
        let mut sum = pattern(8);
        for l in 0..LANES {
            if l == 3 {
                assert_eq!(w.v[4][l], 0, "out of range returns 0");
                continue;
            }
            assert_eq!(w.v[4][l], sum, "lane {l}");
            sum = sum.wrapping_add(l as u32 + 1);
        }
        assert_eq!(rig.dword(rig.buf + 8), sum);
        assert_eq!(rig.dword(rig.buf + 64), pattern(64));
    }

    #[test]
    fn cmpswap_takes_new_value_then_compare() {
        let rig = Rig::new();
        let mut w = wave(0b11, rig.rsrc(0, 64));
        w.v[1][0] = 0;
        w.v[1][1] = 4;
        w.v[4] = [0x1234; LANES];
        w.v[5][0] = pattern(0);
        w.v[5][1] = 0;
        // buffer_atomic_cmpswap v[4:5], v1, s[8:11], 0 offen glc
        rig.run(&mut w, [0xE1045000, 0x80020401], "buffer_atomic_cmpswap")
            .unwrap();
        assert_eq!((w.v[4][0], w.v[4][1]), (pattern(0), pattern(4)));
        assert_eq!(rig.dword(rig.buf), 0x1234);
        assert_eq!(rig.dword(rig.buf + 4), pattern(4));
    }

    #[test]
    fn in_range_access_outside_device_memory_faults() {
        let rig = Rig::new();
        let mut w = wave(0b10, rig.rsrc(0, u32::MAX));
        w.v[1][1] = BUFFER as u32;
        // buffer_load_dword v4, v1, s[8:11], 0 offen
        let r = rig.run(&mut w, [0xE0501000, 0x80020401], "buffer_load_dword");
        assert_eq!(
            r,
            Err(Fault::Memory {
                space: Space::Global,
                address: rig.buf + BUFFER,
                size: 4,
                write: false
            })
        );
        assert_eq!(w.v[4][1], POISON);
    }

    #[test]
    fn typed_loads_are_all_or_nothing() {
        let rig = Rig::new();
        let mut w = wave(0b11, rig.rsrc(0, 24));
        w.v[1][0] = 20;
        w.v[1][1] = 24;
        // tbuffer_load_format_xy v[4:5], v1, s[8:11], 0
        //     format:[BUF_DATA_FORMAT_32_32,BUF_NUM_FORMAT_FLOAT] offen
        rig.run(&mut w, [0xEBD89000, 0x80020401], "tbuffer_load_format_xy")
            .unwrap();
        assert_eq!((w.v[4][0], w.v[5][0]), (pattern(20), pattern(24)));
        assert_eq!((w.v[4][1], w.v[5][1]), (0, 0));
    }

    /// A format V#'s word 3 (MI200 ISA Table 36): DST_SEL_X..W in bits
    /// 2:0, 5:3, 8:6, 11:9, NUM_FORMAT 14:12, DATA_FORMAT 18:15.
    fn word3(dfmt: u32, nfmt: u32, sel: [u32; 4]) -> u32 {
        sel[0] | sel[1] << 3 | sel[2] << 6 | sel[3] << 9 | nfmt << 12 | dfmt << 15
    }

    const XYZW: [u32; 4] = [4, 5, 6, 7];
    const F: fn(f32) -> u32 = f32::to_bits;
    /// Bytes at FORMAT_AT of the test buffer for the format tests.
    const FORMAT_AT: u64 = 0x100;
    const FORMAT_BYTES: [u8; 16] = [
        0x80, 0x7F, 0xFF, 0x01, // 8-bit: -128/128, 127, -1/255, 1
        0x00, 0x3C, 0x00, 0xC0, // f16 1.0, -2.0; i16 15360, -16384
        0x78, 0x56, 0x34, 0x12, 0xEF, 0xCD, 0xAB, 0x89,
    ];

    /// Runs `words` (VDATA v[4:7], VADDR v1 offen) on lanes 0 and 1 with
    /// word 3 of the V# set, lane 0 at FORMAT_AT + `offset` and lane 1
    /// past NUM_RECORDS; returns the two lanes' v[4:7].
    fn format_load(
        words: [u32; 2],
        mnemonic: &str,
        w3: u32,
        offset: u32,
    ) -> Result<[[u32; 4]; 2], Fault> {
        let rig = Rig::new();
        rig.memory
            .write_bytes(rig.buf + FORMAT_AT, &FORMAT_BYTES)
            .expect("in memory");
        let mut rsrc = rig.rsrc(0, 0x200);
        rsrc[3] = w3;
        let mut w = wave(0b11, rsrc);
        w.v[1][0] = FORMAT_AT as u32 + offset;
        w.v[1][1] = 0x200;
        rig.run(&mut w, words, mnemonic)?;
        Ok([0, 1].map(|l| [4, 5, 6, 7].map(|r| w.v[r][l])))
    }

    /// The linear path ([`load_linear`]) gives what the general loop
    /// gives, results and faults, on random raw resources of GFX9, GFX11
    /// and GFX12: every range check, offsets in, across and past the
    /// records and the memory behind them, every VGPR load form.
    #[test]
    fn linear_loads_match_the_general_path() {
        let rig = Rig::new();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 16) as u32 % n
        };
        let puts = [
            Put::Dwords(1),
            Put::Dwords(2),
            Put::Dwords(3),
            Put::Dwords(4),
            Put::Extend {
                size: 1,
                signed: true,
            },
            Put::Extend {
                size: 2,
                signed: false,
            },
            Put::D16 {
                size: 2,
                signed: false,
                hi: false,
            },
            Put::D16 {
                size: 2,
                signed: false,
                hi: true,
            },
            Put::D16 {
                size: 1,
                signed: true,
                hi: true,
            },
        ];
        // buffer_load_dword v4, v1, s[8:11], s5 offen (patched below).
        let base =
            crate::decode::decode(&[0xE0501000, 0x05020401], Target::Gfx90a).expect("decodes");
        let (mut linear, mut spans) = (0, 0);
        for round in 0..3000 {
            let target = [Target::Gfx90a, Target::Gfx1100, Target::Gfx1201][round % 3];
            let mut rsrc = rig.rsrc([0, 4, 16][next(3) as usize], next(5000));
            if target != Target::Gfx90a {
                // OOB_SELECT and FORMAT (0: an unbound resource).
                rsrc[3] = next(4) << 28 | [0, 4, 0x22][next(3) as usize] << 12;
            }
            let exec = match next(4) {
                0 => u64::MAX,
                1 => u64::from(u32::MAX),
                _ => u64::from(next(u32::MAX)) << 32 | u64::from(next(u32::MAX)),
            };
            let mut w = wave(exec, rsrc);
            w.s[5] = next(3) * next(64);
            // Offsets over the whole buffer and past it, or close together
            // (every lane in range: the span checked once).
            let near = next(4400);
            let spread = [4400, 256][next(2) as usize];
            w.v[1] = std::array::from_fn(|_| {
                if spread == 4400 {
                    next(4400)
                } else {
                    near + next(spread)
                }
            });
            let mut i = base;
            i.imm = next(80) as i32;
            if next(4) == 0 {
                i.flags &= !flag::OFFEN;
            }
            let put = puts[next(puts.len() as u32) as usize];
            let run = |w: &mut Wave, fast: bool| {
                let mut events = Vec::new();
                let mut ctx = Ctx {
                    code: &crate::code_index::CodeIndex::default(),
                    mem: &rig.memory,
                    lds: &mut [],
                    target,
                    pc: 0,
                    events: &mut events,
                };
                load_on(w, &i, &mut ctx, put, fast)
            };
            let mut want = w.clone();
            let want_result = run(&mut want, false);
            let got_result = run(&mut w, true);
            assert_eq!(got_result, want_result, "round {round}");
            assert!(
                (4..8).all(|r| w.v[r] == want.v[r]),
                "round {round}: {target:?} {:?} registers differ",
                rsrc
            );
            let buf = Buffer::of(&w, &i, target).expect("a V#");
            if let Some(lin) = buf.linear(&i) {
                linear += 1;
                let voffset = (i.flags & flag::OFFEN != 0).then_some(&w.v[1]);
                let imm = u64::from(i.imm as u32);
                let span = offset_span(voffset, exec, imm).expect("lanes");
                spans += usize::from(lin.in_range(span.1 + 4, 4) && want_result.is_ok());
            }
        }
        assert!(linear > 2000, "{linear} rounds ran the linear path");
        assert!(spans > 300, "{spans} rounds had every lane in range");
    }

    /// `buffer_load_format_xyzw v[4:7], v1, s[8:11], 0 offen`
    const LOAD_FORMAT_XYZW: [u32; 2] = [0xE00C1000, 0x80020401];

    /// MUBUF format loads take DATA_FORMAT, NUM_FORMAT and DST_SEL from the
    /// V# (MI200 ISA §9.1.4 Table 31, "BUFFER_LOAD_FORMAT_*: resource,
    /// resource, resource"). Integer formats come back as integers
    /// (sign-extended for SINT), the others as floats, 32-bit components
    /// unconverted (§9.1.3 "Read Data Format"). Out of range every
    /// component is 0, "except for components with V#.dst_sel = SEL_1
    /// that return 1" (§9.1.5.1), 1.0 for a float NUM_FORMAT.
    #[test]
    fn format_loads_convert_by_the_resource_and_select_by_dst_sel() {
        let run = |dfmt, nfmt, sel, offset| {
            format_load(
                LOAD_FORMAT_XYZW,
                "buffer_load_format_xyzw",
                word3(dfmt, nfmt, sel),
                offset,
            )
            .expect("runs")
        };
        let (n8888, n1616, n32, n32x4) = (10, 5, 4, 14);
        let (uscaled, sscaled, uint, sint, float) = (2, 3, 4, 5, 7);
        // 8_8_8_8 in every integer and scaled NUM_FORMAT.
        assert_eq!(run(n8888, uint, XYZW, 0)[0], [0x80, 0x7F, 0xFF, 1]);
        assert_eq!(
            run(n8888, sint, XYZW, 0)[0],
            [-128i32 as u32, 127, u32::MAX, 1]
        );
        assert_eq!(
            run(n8888, uscaled, XYZW, 0)[0],
            [F(128.0), F(127.0), F(255.0), F(1.0)]
        );
        assert_eq!(
            run(n8888, sscaled, XYZW, 0)[0],
            [F(-128.0), F(127.0), F(-1.0), F(1.0)]
        );
        // 16_16: f16 to f32; DST_SEL constants and a swizzle.
        let [lane0, lane1] = run(n1616, float, [4, 5, 0, 1], 4);
        assert_eq!(lane0, [F(1.0), F(-2.0), 0, F(1.0)]);
        assert_eq!(lane1, [0, 0, 0, F(1.0)], "out of range: SEL_1 gives 1.0");
        let [lane0, lane1] = run(n1616, sint, [5, 4, 1, 0], 4);
        assert_eq!(lane0, [-16384i32 as u32, 15360, 1, 0]);
        assert_eq!(lane1, [0, 0, 1, 0], "out of range: SEL_1 gives integer 1");
        // 32-bit components pass through, in any order.
        assert_eq!(
            run(n32x4, float, [7, 6, 5, 4], 0)[0],
            [0x89AB_CDEF, 0x1234_5678, 0xC000_3C00, 0x01FF_7F80]
        );
        assert_eq!(
            run(n32, uint, [4, 4, 0, 1], 8)[0],
            [0x1234_5678, 0x1234_5678, 0, 1]
        );
        // An all-zero V# is unbound: "return 0,0,0,0" (Table 36's note).
        let rig = Rig::new();
        let mut w = wave(0b11, [0; 4]);
        rig.run(&mut w, LOAD_FORMAT_XYZW, "buffer_load_format_xyzw")
            .expect("runs");
        assert!((4..8).all(|r| w.v[r][..2] == [0, 0]));
    }

    /// `buffer_load_format_x` writes DST_SEL_X's value only, and the whole
    /// access is in or out ("all or nothing", §9.1.5.1).
    #[test]
    fn format_x_writes_one_register_all_or_nothing() {
        // buffer_load_format_x v4, v1, s[8:11], 0 offen
        let words = [0xE0001000, 0x80020401];
        let w3 = word3(12, 5, [6, 0, 0, 0]); // 16_16_16_16 SINT, X = B
        let [lane0, lane1] = format_load(words, "buffer_load_format_x", w3, 0).expect("runs");
        assert_eq!(lane0, [15360, POISON, POISON, POISON]);
        assert_eq!(lane1, [0, POISON, POISON, POISON]);
    }

    /// What the simulator does not model is refused by name, before any
    /// lane runs: UNORM/SNORM (the ISA text gives no exact conversion),
    /// the packed formats, reserved codes, NUM_FORMATs Mesa's
    /// `ac_shader_util.c` calls incompatible ("float is incompatible with
    /// 8-bit data formats, [us]{norm,scaled} are incompatible with 32-bit
    /// data formats"), and a DST_SEL of a component the format lacks
    /// (undocumented).
    #[test]
    fn format_loads_refuse_what_the_documents_leave_open() {
        for (w3, case) in [
            (word3(10, 0, XYZW), "UNORM"),
            (word3(10, 1, XYZW), "SNORM"),
            (word3(9, 4, XYZW), "packed"),
            (word3(15, 4, XYZW), "reserved"),
            (word3(0, 4, XYZW), "invalid"),
            (word3(12, 6, XYZW), "NUM_FORMAT 6"),
            (word3(10, 7, XYZW), "FLOAT with 8-bit"),
            (word3(14, 2, XYZW), "SCALED with 32-bit"),
            (word3(5, 4, XYZW), "lacks"),
            (word3(14, 4, [4, 2, 4, 4]), "reserved"),
        ] {
            let r = format_load(LOAD_FORMAT_XYZW, "buffer_load_format_xyzw", w3, 0);
            match r {
                Err(Fault::UnimplementedCase { mnemonic, case: c }) => {
                    assert_eq!(mnemonic, "buffer_load_format_xyzw");
                    assert!(c.contains(case), "{w3:#x}: {c}");
                }
                other => panic!("{w3:#x}: {other:?}"),
            }
        }
    }

    /// MTBUF takes the format from the instruction and ignores DST_SEL:
    /// "DST_SEL identity: ... X000, XY00, XYZ0, or XYZW" (MI200 ISA §9.1.4
    /// Table 31), so components past the format's are 0.
    #[test]
    fn typed_loads_convert_with_the_identity_swizzle() {
        // tbuffer_load_format_xyzw v[4:7], v1, s[8:11], 0
        //     format:[BUF_DATA_FORMAT_16_16,BUF_NUM_FORMAT_SINT] offen
        let words = [0xEAA99000, 0x80020401];
        let w3 = word3(0, 0, [1, 1, 1, 1]); // ignored by MTBUF
        let [lane0, lane1] = format_load(words, "tbuffer_load_format_xyzw", w3, 4).expect("runs");
        assert_eq!(lane0, [15360, -16384i32 as u32, 0, 0]);
        assert_eq!(lane1, [0; 4]);
        // tbuffer_load_format_x v4, v1, s[8:11], 0
        //     format:[BUF_DATA_FORMAT_16,BUF_NUM_FORMAT_FLOAT] offen
        let words = [0xEB901000, 0x80020401];
        let [lane0, _] = format_load(words, "tbuffer_load_format_x", w3, 6).expect("runs");
        assert_eq!(lane0[0], F(-2.0));
    }

    /// `buffer_load_format_x ... lds` (one of §9.1.9's LDS loads) writes
    /// the dword the VGPR form would return, at `M0[15:0] + 4 * lane`.
    #[test]
    fn format_x_to_lds_writes_the_converted_dword() {
        let rig = Rig::new();
        rig.memory
            .write_bytes(rig.buf + FORMAT_AT, &FORMAT_BYTES)
            .expect("in memory");
        let mut rsrc = rig.rsrc(0, 0x200);
        rsrc[3] = word3(3, 3, [5, 0, 0, 0]); // 8_8 SSCALED, X = G
        let mut w = wave(0b111, rsrc);
        w.s[usize::from(M0)] = 0x40;
        w.v[1] = [FORMAT_AT as u32; LANES];
        w.v[1][1] += 2;
        w.v[1][2] = 0x200;
        let mut lds = vec![0xEEu8; 1024];
        // buffer_load_format_x v1, s[8:11], 0 offen lds
        crate::exec::run_words_in(
            &rig.memory,
            Target::Gfx90a,
            &mut w,
            &[0xE0011000, 0x80020001],
            "buffer_load_format_x",
            &mut lds,
        )
        .expect("runs");
        let dword = |at: usize| u32::from_le_bytes(lds[at..at + 4].try_into().expect("4 bytes"));
        assert_eq!(
            [dword(0x40), dword(0x44), dword(0x48)],
            [F(127.0), F(1.0), 0]
        );
        assert_eq!(dword(0x4C), 0xEEEE_EEEE);
        assert!((4..8).all(|r| w.v[r] == [POISON; LANES]), "no VGPR written");
    }

    /// `buffer_store_lds_dword` (gfx90a only; "Store one DWORD from LDS
    /// memory to system memory", MI200 ISA MUBUF opcode 61) decodes and
    /// prints as llvm-objdump does, and is reported as not implemented
    /// (module doc), not as an invalid instruction.
    #[test]
    fn store_lds_dword_decodes_and_is_reported_as_not_implemented() {
        use crate::decode::{decode, print::print};
        // llvm-objdump --mcpu=gfx90a: E0F50010 80020000
        let words = [0xE0F50010, 0x80020000];
        let inst = decode(&words, Target::Gfx90a).expect("decodes");
        assert_eq!(
            print(&inst, Target::Gfx90a),
            "buffer_store_lds_dword s[8:11], 0 offset:16 lds"
        );
        assert!(crate::exec::lookup(inst.mnemonic).is_none());
        assert!(decode(&words, Target::Gfx942).is_err(), "not on gfx942");
    }

    #[test]
    fn add_tid_stride_takes_data_format_as_high_bits() {
        let r = Rsrc::from_words([0, 5 << 16, 0, 1 << 23 | 0xA << 15]);
        assert_eq!(r.stride, 0xA << 14 | 5);
        let r = Rsrc::from_words([0, 5 << 16, 0, 0xA << 15]);
        assert_eq!(r.stride, 5);
    }
}
