//! Matrix fused multiply-add (MFMA, the VOP3P-MAI encoding) of gfx90a and
//! gfx942: D = A × B + C over one wave, each matrix spread over the 64
//! lanes and several registers.
//!
//! CDNA2/CDNA3 ISA, "Matrix Arithmetic Instructions" (dependent-register
//! layouts, CBSZ/ABID/BLGP), cross-checked against AMD's matrix instruction
//! calculator (github.com/ROCm/amd_matrix_instruction_calculator), whose
//! `--detail-instruction` output gives each instruction's element-to-lane
//! formulas. An M×N×K instruction with B blocks computes B independent
//! products; every shape here has M = N. [`Shape`] holds the dimensions and
//! types, and the layout is a handful of formulas shared by the families:
//!
//! ```text
//!   A[i][k] of block b (B[k][j] alike, j for i):  E = M·K·B/64 per lane
//!     lane = i + M·(b·K/E + k/E),  element k % E packed low bits first
//!     f64 4x4x4 (4 blocks) instead: lane = i + 4·b + 16·k
//!   C/D[i][j] of block b:
//!     M = 32:  register 16·b + 4·(i/8) + i%4,  lane 32·((i/4)%2) + j
//!     M = 16:  register 4·b + i%4,             lane 16·(i/4) + j
//!     M = 4:   register i,                     lane 4·b + j
//!     f64:     register pair i/4,              lane 16·(i%4) + M·b + j
//! ```
//!
//! Modifiers: CBSZ/ABID make each group of 2^CBSZ blocks read the A block
//! ABID of its group (only multi-block shapes have more than one block to
//! share); BLGP makes B's lane L read lane `blgp_lane(L)` (broadcast or
//! rotate 16/32-lane groups). On gfx942 the f64 shapes reuse BLGP's three
//! bits as negation of A, B and C (CDNA3 ISA; the calculator and LLVM's
//! gfx940 `neg:[..]` syntax agree); on gfx90a the f64 shapes have no BLGP
//! and the field is ignored.
//!
//! Arithmetic: float products are exact in f64 for every input type
//! (24 + 24 significand bits at most, and at least 2^-298, far above
//! f64's smallest normal), summed over K in f64 with C and
//! rounded once to f32, so the result is within one f32 rounding of the
//! exact value. The hardware's internal order and rounding are not
//! documented bit for bit (MMA-Sim, arXiv:2511.10909, finds truncating
//! accumulation on CDNA3), so tests compare with a tolerance. f64 shapes
//! fuse in K order from C; i8 shapes wrap in i32. `xf32` inputs are taken
//! as full f32, as MMA-Sim reports for the multiply stage. Denormals are
//! kept regardless of MODE. The FP8/BF8 shapes read FNUZ bytes on
//! gfx942 and OCP ones on gfx950 ([`ocp`]).
//!
//! EXEC: an MFMA is one operation of the whole wave (every D element reads
//! 16 to 64 lanes of A and B), so all lanes are read and written whatever
//! EXEC holds.

use aqueduct_abi::gfx::Fp8Format;

use crate::decode::inst::Mai;
use crate::decode::inst::flag;
use crate::decode::{Ext, Inst, Src};
use crate::exec::ctx::{Ctx, Exec};
use crate::fault::Fault;
use crate::float::{
    bf8_fnuz_to_f32, bf8_ocp_to_f32, bf16_to_f32, f16_to_f32, fp8_fnuz_to_f32, fp8_ocp_to_f32,
};
use crate::lanes::{LANES, Lanes};
use crate::wave::{Ty, Wave};
use std::sync::OnceLock;

type R = Result<(), Fault>;

/// Element type of an A or B operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum In {
    /// f32.
    F32,
    /// gfx942's reduced-precision f32 shapes; read as f32 (module doc).
    Xf32,
    /// f16.
    F16,
    /// bfloat16.
    Bf16,
    /// i8 (results accumulate in i32).
    I8,
    /// gfx942 FP8, E4M3 FNUZ.
    Fp8,
    /// gfx942 BF8, E5M2 FNUZ.
    Bf8,
    /// gfx950 FP8: the same mnemonics' bytes read as OCP E4M3 ([`ocp`]).
    Fp8Ocp,
    /// gfx950 BF8: OCP E5M2.
    Bf8Ocp,
    /// f64.
    F64,
}

impl In {
    const fn bits(self) -> usize {
        match self {
            In::F32 | In::Xf32 => 32,
            In::F16 | In::Bf16 => 16,
            In::I8 | In::Fp8 | In::Bf8 | In::Fp8Ocp | In::Bf8Ocp => 8,
            In::F64 => 64,
        }
    }

    /// The value of a `bits()`-wide element, exactly, as f64 (integers
    /// too: i8 products and sums stay far inside 2^53). Inlined into the
    /// conversion loops, where `self` is a constant.
    #[inline(always)]
    fn value(self, raw: u64) -> f64 {
        match self {
            In::F32 | In::Xf32 => f64::from(f32::from_bits(raw as u32)),
            In::F16 => f64::from(f16_to_f32(raw as u16)),
            In::Bf16 => f64::from(bf16_to_f32(raw as u16)),
            In::I8 => f64::from(raw as u8 as i8),
            In::Fp8 => f64::from(fp8_fnuz_to_f32(raw as u8)),
            In::Bf8 => f64::from(bf8_fnuz_to_f32(raw as u8)),
            In::Fp8Ocp => f64::from(fp8_ocp_to_f32(raw as u8)),
            In::Bf8Ocp => f64::from(bf8_ocp_to_f32(raw as u8)),
            In::F64 => f64::from_bits(raw),
        }
    }
}

/// Dimensions and types of one MFMA instruction (M = N for all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Rows of each block's A and D, and columns of its B and D (M = N).
    pub m: usize,
    /// The summed dimension: columns of A, rows of B.
    pub k: usize,
    /// Independent products computed at once (1, 2, 4 or 16).
    pub blocks: usize,
    /// Element type of A.
    pub a: In,
    /// Element type of B.
    pub b: In,
    /// gfx942 f64: BLGP is NEG for A, B, C (bits 0, 1, 2).
    pub blgp_is_neg: bool,
}

const fn shape(m: usize, k: usize, blocks: usize, a: In, b: In) -> Shape {
    Shape {
        m,
        k,
        blocks,
        a,
        b,
        blgp_is_neg: false,
    }
}

/// gfx942's f64 shapes, whose BLGP field negates.
const fn shape_neg(m: usize, k: usize, blocks: usize) -> Shape {
    Shape {
        blgp_is_neg: true,
        ..shape(m, k, blocks, In::F64, In::F64)
    }
}

impl Shape {
    /// A (and B) elements per lane.
    pub const fn per_lane(&self) -> usize {
        self.m * self.k * self.blocks / LANES
    }

    /// Registers of the A (B) operand.
    pub const fn ab_regs(&self, t: In) -> usize {
        (self.per_lane() * t.bits()).div_ceil(32)
    }

    /// Registers of C and D.
    pub const fn cd_regs(&self) -> usize {
        let words = if matches!(self.a, In::F64) { 2 } else { 1 };
        self.m * self.m * self.blocks / LANES * words
    }

    /// Lane and element index within the lane of `A[row][k]` (or `B[k][row]`)
    /// of block `b`.
    pub const fn ab_slot(&self, row: usize, k: usize, b: usize) -> (usize, usize) {
        if matches!(self.a, In::F64) && self.blocks > 1 {
            return (row + self.m * b + 16 * k, 0);
        }
        let e = self.per_lane();
        (row + self.m * (b * (self.k / e) + k / e), k % e)
    }

    /// Register (first of the pair for f64) and lane of `C/D[i][j]` of
    /// block `b`.
    pub const fn cd_slot(&self, i: usize, j: usize, b: usize) -> (usize, usize) {
        if matches!(self.a, In::F64) {
            return (2 * (i / 4), 16 * (i % 4) + self.m * b + j);
        }
        match self.m {
            4 => (i, 4 * b + j),
            16 => (4 * b + i % 4, 16 * (i / 4) + j),
            _ => (16 * b + 4 * (i / 8) + i % 4, 32 * ((i / 4) % 2) + j),
        }
    }
}

/// The lane whose B data lane `lane` uses under BLGP (CDNA3 ISA, BLGP:
/// 1/2 broadcast lanes 0-31/32-63, 3 rotates down by 16, 4-7 broadcast
/// lanes 16·(blgp-4) to 16·(blgp-4)+15).
pub const fn blgp_lane(lane: usize, blgp: u8) -> usize {
    match blgp {
        1 => lane % 32,
        2 => 32 + lane % 32,
        3 => (lane + 16) % LANES,
        4..=7 => 16 * (blgp as usize - 4) + lane % 16,
        _ => lane,
    }
}

/// The A block that block `b` reads under CBSZ/ABID: blocks come in groups
/// of 2^CBSZ and each group reads its block ABID. CBSZ is capped at the
/// shape's block count and ABID taken within the group, so a malformed
/// encoding reads some block of A rather than faulting.
pub fn cbsz_block(b: usize, blocks: usize, cbsz: u8, abid: u8) -> usize {
    let group = (1usize << cbsz).min(blocks);
    b - b % group + (abid as usize) % group
}

// ---------------------------------------------------------------------------
// Execution
//
// `run` reads A and B and checks every operand; `multiply` converts A and
// B once into dense [block][k][row] (A) and [block][k][col] (B) arrays of
// f64 (i32 for i8) on the stack, copies C into D's registers, and forms D
// in place, one output row of one block at a time with up to `COLS`
// columns side by side, so that the compiler keeps the sums in vector
// registers. Nothing is allocated, and the layout formulas are evaluated
// at compile time into a [`Layout`] per mnemonic.
//
// The layout is what makes rows cheap: for a fixed block and k, the M rows
// of A (columns of B) sit in M consecutive lanes of one element slot, and
// for a fixed block and row, the M columns of C/D sit in M consecutive
// lanes of one register (the formulas in the module doc; a test checks
// every shape).
//
// `multiply` is compiled twice, for the x86-64 baseline and for AVX2 with
// FMA3, and `Isa` picks one at run time. The second is 1.2 to 2.6 times as
// fast on f32-output and i8 shapes and ten times on f64 ones, whose fused
// multiply-add the baseline can only call a library function for, once
// per product (sim/examples/mfma_bench.rs measures).
//
// Each D element sees exactly the reference arithmetic: C first, then the
// K products in K order, rounded once (f32), fused in K order (f64) or
// wrapped (i32). The test `every_mfma_matches_the_reference_executor_bit_
// for_bit` holds both compilations to the executor as first written.

/// Limits over [`SHAPES`], which size the stack buffers and layout tables.
struct Limits {
    /// Registers of the largest A or B operand.
    ab_regs: usize,
    /// Elements of the largest A or B matrix (M·K·blocks).
    ab_elements: usize,
    /// Most columns of A (rows of B) over all blocks (K·blocks).
    ab_columns: usize,
    /// Most rows of C/D over all blocks (M·blocks).
    cd_rows: usize,
}

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

const fn limits() -> Limits {
    let mut l = Limits {
        ab_regs: 0,
        ab_elements: 0,
        ab_columns: 0,
        cd_rows: 0,
    };
    let mut n = 0;
    while n < SHAPES.len() {
        let s = &SHAPES[n].1;
        // The row kernels take M/4 or M/COLS passes of 4 or COLS columns.
        assert!(
            s.m == 4 || s.m.is_multiple_of(COLS),
            "an MFMA with M neither 4 nor a multiple of COLS"
        );
        // Layout tables hold lanes, registers and elements as bytes.
        assert!(s.cd_regs() <= 256 && s.per_lane() <= 256);
        l.ab_regs = max(l.ab_regs, max(s.ab_regs(s.a), s.ab_regs(s.b)));
        l.ab_elements = max(l.ab_elements, s.m * s.k * s.blocks);
        l.ab_columns = max(l.ab_columns, s.k * s.blocks);
        l.cd_rows = max(l.cd_rows, s.m * s.blocks);
        n += 1;
    }
    l
}

const LIMITS: Limits = limits();

/// Where each column of A (row of B) and each row of C/D of a shape
/// begins, from [`Shape::ab_slot`] and [`Shape::cd_slot`].
struct Layout {
    /// Lane and element of A[0][k] (B[k][0]) of block b, at b·K + k; rows
    /// (columns) 1 to M-1 follow in the next lanes.
    ab: [(u8, u8); LIMITS.ab_columns],
    /// Register (first of the pair for f64) and lane of C/D[row][0] of
    /// block b, at b·M + row; columns 1 to M-1 follow in the next lanes.
    cd: [(u8, u8); LIMITS.cd_rows],
}

impl Layout {
    const fn of(s: &Shape) -> Self {
        let mut l = Layout {
            ab: [(0, 0); LIMITS.ab_columns],
            cd: [(0, 0); LIMITS.cd_rows],
        };
        let mut blk = 0;
        while blk < s.blocks {
            let mut k = 0;
            while k < s.k {
                let (lane, item) = s.ab_slot(0, k, blk);
                l.ab[blk * s.k + k] = (lane as u8, item as u8);
                k += 1;
            }
            let mut row = 0;
            while row < s.m {
                let (reg, lane) = s.cd_slot(row, 0, blk);
                l.cd[blk * s.m + row] = (reg as u8, lane as u8);
                row += 1;
            }
            blk += 1;
        }
        l
    }
}

/// The words of a non-register MAI operand (SrcC may be an inline
/// constant) for even and odd registers: the value in each 32-bit
/// register, or its halves in each pair for f64.
pub(super) fn constant(w: &Wave, src: Src, f64: bool) -> Result<[u32; 2], Fault> {
    if f64 {
        let v = w.s64_of(src, Ty::F64)?;
        Ok([v as u32, (v >> 32) as u32])
    } else {
        let v = w.s32_of(src, Ty::B32)?;
        Ok([v, v])
    }
}

/// `count` registers from `r` of the VGPRs or (`acc`) AGPRs, faulting on
/// the first that does not exist.
pub(super) fn registers(w: &Wave, r: u16, count: usize, acc: bool) -> Result<&[Lanes], Fault> {
    for n in 0..count {
        w.vreg(r + n as u16, acc)?;
    }
    let file = if acc { &w.a } else { &w.v };
    Ok(&file[usize::from(r)..][..count])
}

/// Reads the `out.len()` registers of MAI operand A or B into `out`: from
/// the register file, or for a non-register operand, its [`constant`].
fn operand(w: &Wave, src: Src, out: &mut [Lanes], f64: bool) -> R {
    match src {
        Src::Vgpr(r) => out.copy_from_slice(registers(w, r, out.len(), false)?),
        Src::Agpr(r) => out.copy_from_slice(registers(w, r, out.len(), true)?),
        _ => {
            let words = constant(w, src, f64)?;
            for (n, reg) in out.iter_mut().enumerate() {
                *reg = [words[n % 2]; LANES];
            }
        }
    }
    Ok(())
}

/// An A or B operand converted by [`convert`]: `vals[e·64 + lane]` is
/// element `e` of `lane`, and column `k` of block `b` of A (row `k` of B)
/// starts at `vals[at[b·K + k]]`, its M rows (columns) in the next M values.
struct Converted<'v, V> {
    vals: &'v [V],
    at: [usize; LIMITS.ab_columns],
}

/// Converts every element of an A or B operand of `s` with `value` into
/// `out`, element by element over all 64 lanes (so the loops run a whole
/// register wide), and finds where each column starts from the [`Layout`];
/// block `blk` reads the operand's block `block_of(blk)`. Elements are
/// `BITS` wide, packed from bit 0 of the first register (an f64 spans a
/// pair).
#[inline(always)]
fn convert<'v, V, const BITS: usize>(
    s: &Shape,
    layout: &Layout,
    regs: &[Lanes],
    out: &'v mut [V],
    block_of: impl Fn(usize) -> usize,
    value: impl Fn(u64) -> V,
) -> Converted<'v, V> {
    for (e, dst) in out.as_chunks_mut::<LANES>().0.iter_mut().enumerate() {
        if BITS == 64 {
            let (lo, hi) = (&regs[2 * e], &regs[2 * e + 1]);
            for ((d, &lo), &hi) in dst.iter_mut().zip(lo).zip(hi) {
                *d = value(u64::from(lo) | u64::from(hi) << 32);
            }
        } else {
            let bit = e * BITS;
            let (src, shift) = (&regs[bit / 32], bit % 32);
            for (d, &word) in dst.iter_mut().zip(src) {
                *d = value(u64::from(word >> shift) & ((1 << BITS) - 1));
            }
        }
    }
    Converted {
        at: starts(s, layout, block_of),
        vals: out,
    }
}

/// Where each column of a [`Converted`] operand starts.
#[inline(always)]
fn starts(
    s: &Shape,
    layout: &Layout,
    block_of: impl Fn(usize) -> usize,
) -> [usize; LIMITS.ab_columns] {
    let mut at = [0; LIMITS.ab_columns];
    let kk = s.k;
    for blk in 0..s.blocks {
        for k in 0..kk {
            let (lane, e) = layout.ab[block_of(blk) * kk + k];
            at[blk * kk + k] = usize::from(e) * LANES + usize::from(lane);
        }
    }
    at
}

/// [`convert`] of an f16 operand with the processor's F16C conversion,
/// eight elements at a time: the same values bit for bit (a test compares
/// every f16 with [`f16_to_f64`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn convert_f16c<'v>(
    s: &Shape,
    layout: &Layout,
    regs: &[Lanes],
    out: &'v mut [f64],
    block_of: impl Fn(usize) -> usize,
    negate: bool,
) -> Converted<'v, f64> {
    for (e, dst) in out.as_chunks_mut::<LANES>().0.iter_mut().enumerate() {
        // SAFETY: `multiply::<true>`, the only caller, runs only where
        // `avx2_fma` found AVX2 and F16C on this processor.
        unsafe { f16_lanes_to_f64(&regs[e / 2], e % 2 == 1, dst) };
        if negate {
            for d in dst.iter_mut() {
                *d = -*d;
            }
        }
    }
    Converted {
        at: starts(s, layout, block_of),
        vals: out,
    }
}

/// The low (or `high`) f16 of every lane of `words`, as f64, into `out`
/// (`N` values, a multiple of 8: a wave64 register, or the 32 lanes of a
/// wave32 one): F16C's `vcvtph2ps` converts eight at a time, exactly
/// (f16 subnormals become normal f32s, NaNs are made quiet).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
pub(super) fn f16_lanes_to_f64<const N: usize>(words: &[u32; N], high: bool, out: &mut [f64; N]) {
    use std::arch::x86_64::*;
    for (w, o) in words
        .as_chunks::<8>()
        .0
        .iter()
        .zip(out.as_chunks_mut::<8>().0)
    {
        // SAFETY: `w` is 8 u32, the 32 bytes an unaligned load reads.
        let v = unsafe { _mm256_loadu_si256(w.as_ptr().cast()) };
        let v = if high {
            _mm256_srli_epi32::<16>(v)
        } else {
            _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF))
        };
        // Eight u32 below 2^16 to eight u16 in order: packus packs within
        // each 128-bit half, so gather quadwords 0 and 2.
        let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(v, v));
        let f = _mm256_cvtph_ps(_mm256_castsi256_si128(packed));
        let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
        let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(f));
        // SAFETY: `o` is 8 f64, the 64 bytes the two unaligned stores write.
        unsafe {
            _mm256_storeu_pd(o.as_mut_ptr(), lo);
            _mm256_storeu_pd(o.as_mut_ptr().add(4), hi);
        }
    }
}

/// f16 bits to f64: the bits of `f64::from(f16_to_f32(h))`, without its
/// branches, so that a loop of these vectorises, and without denormal
/// arithmetic, which is slow on some processors. A normal f16 moves its
/// exponent and mantissa into an f32's and rebiases the exponent, a
/// subnormal one is its mantissa times 2^-24 (exact, and a normal f32),
/// and infinities and NaNs keep their mantissa, NaNs made quiet.
#[inline(always)]
pub(crate) fn f16_to_f64(h: u16) -> f64 {
    /// f32 exponent bias minus f16's, at the f32 exponent field.
    const REBIAS: u32 = (127 - 15) << 23;
    /// 2^-24, the unit of an f16 subnormal's mantissa.
    const SUBNORMAL_UNIT: f32 = f32::from_bits((127 - 24) << 23);
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let mag = h & 0x7FFF;
    let man = h & 0x3FF;
    let normal = (mag << 13) + REBIAS;
    let subnormal = (man as f32 * SUBNORMAL_UNIT).to_bits();
    let inf_nan = 0x7F80_0000 | man << 13 | u32::from(man != 0) << 22;
    let exp = mag >> 10;
    let bits = if exp == 0 {
        subnormal
    } else if exp == 0x1F {
        inf_nan
    } else {
        normal
    };
    f64::from(f32::from_bits(sign | bits))
}

/// Every value of an 8-bit float type as f64, from its decoder.
fn byte_table(decode: fn(u8) -> f32) -> [f64; 256] {
    std::array::from_fn(|b| f64::from(decode(b as u8)))
}

/// The value of every byte of an 8-bit float type, built once.
pub(super) fn byte_values(t: In) -> &'static [f64; 256] {
    static FP8: OnceLock<[f64; 256]> = OnceLock::new();
    static BF8: OnceLock<[f64; 256]> = OnceLock::new();
    static FP8_OCP: OnceLock<[f64; 256]> = OnceLock::new();
    static BF8_OCP: OnceLock<[f64; 256]> = OnceLock::new();
    let (cell, decode): (_, fn(u8) -> f32) = match t {
        In::Bf8 => (&BF8, bf8_fnuz_to_f32),
        In::Fp8Ocp => (&FP8_OCP, fp8_ocp_to_f32),
        In::Bf8Ocp => (&BF8_OCP, bf8_ocp_to_f32),
        _ => (&FP8, fp8_fnuz_to_f32),
    };
    cell.get_or_init(|| byte_table(decode))
}

/// `v` negated if `negate`: the NEG modifier of gfx942's f64 shapes as a
/// sign flip, NaNs included, as the hardware's modifiers work. The
/// reference multiplies by ±1, which leaves a NaN's sign to the compiler
/// (an optimised build flips it, an unoptimised one keeps it).
#[inline(always)]
fn signed(v: f64, negate: bool) -> f64 {
    if negate { -v } else { v }
}

/// [`convert`] of a float type, each element [`signed`]; each type gets
/// its own inlined loop and its fastest exact conversion.
#[inline(always)]
fn convert_float<'v, const F16C: bool>(
    s: &Shape,
    layout: &Layout,
    t: In,
    regs: &[Lanes],
    out: &'v mut [f64],
    block_of: impl Fn(usize) -> usize,
    negate: bool,
) -> Converted<'v, f64> {
    let (l, b) = (layout, block_of);
    match t {
        #[cfg(target_arch = "x86_64")]
        In::F16 if F16C => convert_f16c(s, l, regs, out, b, negate),
        In::F32 => convert::<_, 32>(s, l, regs, out, b, |r| signed(In::F32.value(r), negate)),
        In::Xf32 => convert::<_, 32>(s, l, regs, out, b, |r| signed(In::Xf32.value(r), negate)),
        In::F16 => convert::<_, 16>(s, l, regs, out, b, |r| signed(f16_to_f64(r as u16), negate)),
        In::Bf16 => convert::<_, 16>(s, l, regs, out, b, |r| signed(In::Bf16.value(r), negate)),
        In::Fp8 | In::Bf8 | In::Fp8Ocp | In::Bf8Ocp => {
            let table = byte_values(t);
            convert::<_, 8>(s, l, regs, out, b, |r| {
                signed(table[r as u8 as usize], negate)
            })
        }
        In::F64 => convert::<_, 64>(s, l, regs, out, b, |r| signed(In::F64.value(r), negate)),
        In::I8 => convert::<_, 8>(s, l, regs, out, b, |r| signed(In::I8.value(r), negate)),
    }
}

/// Columns of one output row that the row kernels sum side by side: 16
/// f64 sums fill eight SSE2 registers (four AVX ones), enough independent
/// additions to hide the adder's latency without spilling. Shapes with
/// M = 4 use 4.
const COLS: usize = 16;

/// D = A·B + C of an f32-output shape, two rows by `W` columns at a
/// time, over `d` holding C: products in f64 summed in K order from C,
/// rounded once to f32. Two rows share each load of B and keep 2·W/4
/// AVX sums in flight, enough to hide the fused multiply-add's latency.
#[inline(always)]
fn rows_f32<const W: usize>(
    s: &Shape,
    layout: &Layout,
    a: &Converted<'_, f64>,
    b: &Converted<'_, f64>,
    d: &mut [Lanes],
) {
    let (m, kk) = (s.m, s.k);
    for blk in 0..s.blocks {
        // Every shape's M is even.
        for row in (0..m).step_by(2) {
            let place = [layout.cd[blk * m + row], layout.cd[blk * m + row + 1]]
                .map(|(reg, lane)| (usize::from(reg), usize::from(lane)));
            for col in (0..m).step_by(W) {
                let mut acc = [[0f64; W]; 2];
                for (acc, &(reg, lane)) in acc.iter_mut().zip(&place) {
                    for (acc, &c) in acc.iter_mut().zip(&d[reg][lane + col..][..W]) {
                        *acc = f64::from(f32::from_bits(c));
                    }
                }
                for k in blk * kk..(blk + 1) * kk {
                    let (x0, x1) = (a.vals[a.at[k] + row], a.vals[a.at[k] + row + 1]);
                    let [acc0, acc1] = &mut acc;
                    let y = &b.vals[b.at[k] + col..][..W];
                    for ((acc0, acc1), &y) in acc0.iter_mut().zip(acc1).zip(y) {
                        // `x * y` is exact in f64 (module doc), so the
                        // fused form is the same sum, in one instruction.
                        *acc0 = x0.mul_add(y, *acc0);
                        *acc1 = x1.mul_add(y, *acc1);
                    }
                }
                for (acc, &(reg, lane)) in acc.iter().zip(&place) {
                    for (out, &acc) in d[reg][lane + col..][..W].iter_mut().zip(acc) {
                        *out = (acc as f32).to_bits();
                    }
                }
            }
        }
    }
}

/// D = A·B + C of an f64 shape, `W` columns at a time, over `d` holding C
/// (register pairs): fused multiply-adds in K order from C, [`signed`]
/// with `negate_c`.
#[inline(always)]
fn rows_f64<const W: usize>(
    s: &Shape,
    layout: &Layout,
    a: &Converted<'_, f64>,
    b: &Converted<'_, f64>,
    d: &mut [Lanes],
    negate_c: bool,
) {
    let (m, kk) = (s.m, s.k);
    for blk in 0..s.blocks {
        for row in 0..m {
            let (reg, lane) = layout.cd[blk * m + row];
            let (reg, lane) = (usize::from(reg), usize::from(lane));
            let [lo, hi] = d.get_disjoint_mut([reg, reg + 1]).expect("a register pair");
            for col in (0..m).step_by(W) {
                let lo = &mut lo[lane + col..][..W];
                let hi = &mut hi[lane + col..][..W];
                let mut acc = [0f64; W];
                for (acc, (&lo, &hi)) in acc.iter_mut().zip(lo.iter().zip(hi.iter())) {
                    let c = f64::from_bits(u64::from(lo) | u64::from(hi) << 32);
                    *acc = signed(c, negate_c);
                }
                for k in blk * kk..(blk + 1) * kk {
                    let x = a.vals[a.at[k] + row];
                    for (acc, &y) in acc.iter_mut().zip(&b.vals[b.at[k] + col..][..W]) {
                        *acc = x.mul_add(y, *acc);
                    }
                }
                for ((lo, hi), acc) in lo.iter_mut().zip(hi.iter_mut()).zip(acc) {
                    *lo = acc.to_bits() as u32;
                    *hi = (acc.to_bits() >> 32) as u32;
                }
            }
        }
    }
}

/// D = A·B + C of an i8 shape, `W` columns at a time, over `d` holding C:
/// wrapping i32 sums.
#[inline(always)]
fn rows_i32<const W: usize>(
    s: &Shape,
    layout: &Layout,
    a: &Converted<'_, i32>,
    b: &Converted<'_, i32>,
    d: &mut [Lanes],
) {
    let (m, kk) = (s.m, s.k);
    for blk in 0..s.blocks {
        for row in 0..m {
            let (reg, lane) = layout.cd[blk * m + row];
            let (reg, lane) = (usize::from(reg), usize::from(lane));
            for col in (0..m).step_by(W) {
                let out = &mut d[reg][lane + col..][..W];
                let mut acc = [0i32; W];
                for (acc, &c) in acc.iter_mut().zip(out.iter()) {
                    *acc = c as i32;
                }
                for k in blk * kk..(blk + 1) * kk {
                    let x = a.vals[a.at[k] + row];
                    for (acc, &y) in acc.iter_mut().zip(&b.vals[b.at[k] + col..][..W]) {
                        *acc = acc.wrapping_add(x * y);
                    }
                }
                for (out, acc) in out.iter_mut().zip(acc) {
                    *out = acc as u32;
                }
            }
        }
    }
}

/// Where C comes from.
#[derive(Clone, Copy)]
pub(super) enum CSource {
    /// Registers from `at` of the VGPRs or (`acc`) AGPRs.
    Registers { at: usize, acc: bool },
    /// A [`constant`]'s words for even and odd registers.
    Constant([u32; 2]),
}

/// Copies C into the `count` registers from `at` of the VGPRs or (`acc`)
/// AGPRs, which C may overlap, and gives those registers.
pub(super) fn c_into_d(
    w: &mut Wave,
    c: CSource,
    at: usize,
    count: usize,
    acc: bool,
) -> &mut [Lanes] {
    match c {
        CSource::Constant(words) => {
            let file = if acc { &mut w.a } else { &mut w.v };
            for (n, reg) in file[at..at + count].iter_mut().enumerate() {
                *reg = [words[n % 2]; LANES];
            }
        }
        CSource::Registers {
            at: c_at,
            acc: c_acc,
        } => {
            let c = c_at..c_at + count;
            match (c_acc, acc) {
                // C is D (the usual accumulation): nothing to copy.
                (c_acc, acc) if c_acc == acc && c_at == at => {}
                (true, true) => w.a.copy_within(c, at),
                (false, false) => w.v.copy_within(c, at),
                (false, true) => w.a[at..at + count].copy_from_slice(&w.v[c]),
                (true, false) => w.v[at..at + count].copy_from_slice(&w.a[c]),
            }
        }
    }
    let file = if acc { &mut w.a } else { &mut w.v };
    &mut file[at..at + count]
}

/// One MFMA, read and checked by [`run`], for [`multiply`].
struct Job<'a> {
    s: &'a Shape,
    layout: &'a Layout,
    /// A's and B's registers, BLGP applied to B's lanes.
    a: &'a [Lanes],
    b: &'a [Lanes],
    c: CSource,
    /// D's first register and file (AGPRs if `acc`).
    at: usize,
    acc: bool,
    mai: Mai,
    /// Negation of A, B, C (bits 0, 1, 2).
    neg: u8,
}

/// Converts A and B, copies C into D and forms D: the part of [`run`] that
/// does the arithmetic, inlined into each compilation of it.
#[inline(always)]
fn multiply<const F16C: bool>(w: &mut Wave, job: &Job<'_>) {
    let Job { s, layout, .. } = *job;
    let a_block = |blk| cbsz_block(blk, s.blocks, job.mai.cbsz, job.mai.abid);
    let same = |blk| blk;
    let n = s.m * s.k * s.blocks;
    let count = s.cd_regs();
    if matches!(s.a, In::I8) {
        let (mut a, mut b) = ([0i32; LIMITS.ab_elements], [0i32; LIMITS.ab_elements]);
        let (a, b) = (&mut a[..n], &mut b[..n]);
        let int = |r: u64| i32::from(r as u8 as i8);
        let a = convert::<_, 8>(s, layout, job.a, a, a_block, int);
        let b = convert::<_, 8>(s, layout, job.b, b, same, int);
        let d = c_into_d(w, job.c, job.at, count, job.acc);
        if s.m >= COLS {
            rows_i32::<COLS>(s, layout, &a, &b, d);
        } else {
            rows_i32::<4>(s, layout, &a, &b, d);
        }
    } else {
        let negate = |bit: u8| job.neg & bit != 0;
        let (mut a, mut b) = ([0f64; LIMITS.ab_elements], [0f64; LIMITS.ab_elements]);
        let (a, b) = (&mut a[..n], &mut b[..n]);
        let a = convert_float::<F16C>(s, layout, s.a, job.a, a, a_block, negate(1));
        let b = convert_float::<F16C>(s, layout, s.b, job.b, b, same, negate(2));
        let d = c_into_d(w, job.c, job.at, count, job.acc);
        match (matches!(s.a, In::F64), s.m >= COLS) {
            (true, true) => rows_f64::<COLS>(s, layout, &a, &b, d, negate(4)),
            (true, false) => rows_f64::<4>(s, layout, &a, &b, d, negate(4)),
            (false, true) => rows_f32::<COLS>(s, layout, &a, &b, d),
            (false, false) => rows_f32::<4>(s, layout, &a, &b, d),
        }
    }
}

/// [`multiply`] compiled for the target's baseline (SSE2 on x86-64).
fn multiply_portable(w: &mut Wave, job: &Job<'_>) {
    multiply::<false>(w, job);
}

/// [`multiply`] compiled for AVX2, FMA3 and F16C: twice the vector width,
/// f64 `mul_add` as one instruction rather than a call into the runtime
/// library, and f16 inputs converted eight at a time. Results are the same
/// bits: the same IEEE operations in the same order (a fused multiply-add
/// rounds once wherever it is done, and the conversions are exact).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn multiply_avx2_fma(w: &mut Wave, job: &Job<'_>) {
    multiply::<true>(w, job);
}

/// Which compilation of [`multiply`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
}

impl Isa {
    /// The fastest this processor runs.
    fn best() -> Self {
        #[cfg(target_arch = "x86_64")]
        if avx2_fma() {
            return Isa::Avx2Fma;
        }
        Isa::Portable
    }
}

/// Whether this processor has AVX2, FMA3 and F16C (and the OS saves their
/// registers), as [`multiply_avx2_fma`] needs; the answer is cached.
#[cfg(target_arch = "x86_64")]
pub(super) fn avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("f16c")
}

/// Runs one MFMA of `s`, whose [`Layout`] is `layout`.
fn run(w: &mut Wave, i: &Inst, s: &Shape, layout: &Layout) -> R {
    run_on(w, i, s, layout, Isa::best())
}

/// [`run`] with [`multiply`] compiled for `isa` if the processor has what
/// that needs, else for the baseline.
fn run_on(w: &mut Wave, i: &Inst, s: &Shape, layout: &Layout, isa: Isa) -> R {
    let Ext::Mai(mai) = i.ext else {
        return Err(Fault::Unimplemented {
            mnemonic: "an MFMA without its MAI fields",
        });
    };
    let f64_out = matches!(s.a, In::F64);
    let (blgp, neg) = if s.blgp_is_neg {
        (0, mai.blgp)
    } else if f64_out {
        (0, 0)
    } else {
        (mai.blgp, 0)
    };

    // Faults come in the reference's order, A, B, C, then the
    // destination, and before anything is written.
    let mut a = [[0u32; LANES]; LIMITS.ab_regs];
    let a = &mut a[..s.ab_regs(s.a)];
    operand(w, i.src[0], a, f64_out)?;
    let mut b = [[0u32; LANES]; LIMITS.ab_regs];
    let b = &mut b[..s.ab_regs(s.b)];
    operand(w, i.src[1], b, f64_out)?;
    let count = s.cd_regs();
    let c = match i.src[2] {
        Src::Vgpr(r) => registers(w, r, count, false).map(|_| CSource::Registers {
            at: usize::from(r),
            acc: false,
        })?,
        Src::Agpr(r) => registers(w, r, count, true).map(|_| CSource::Registers {
            at: usize::from(r),
            acc: true,
        })?,
        src => CSource::Constant(constant(w, src, f64_out)?),
    };
    let acc = i.flags & flag::ACC_CD != 0;
    w.vreg(i.vdst + count as u16 - 1, acc)?;

    if blgp != 0 {
        // Lane L of B reads lane blgp_lane(L): move the lanes once.
        for reg in b.iter_mut() {
            let read = *reg;
            *reg = std::array::from_fn(|lane| read[blgp_lane(lane, blgp)]);
        }
    }
    let job = Job {
        s,
        layout,
        a,
        b,
        c,
        at: usize::from(i.vdst),
        acc,
        mai,
        neg,
    };
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma if avx2_fma() => {
            // SAFETY: avx2_fma() has just found AVX2, FMA3 and F16C on this
            // processor, all that multiply_avx2_fma's target features ask.
            unsafe { multiply_avx2_fma(w, &job) }
        }
        _ => multiply_portable(w, &job),
    }
    Ok(())
}

/// The FP8/BF8 shapes read FNUZ bytes on gfx942; gfx950's same mnemonics
/// read the OCP formats E4M3FN and E5M2 (`aqueduct_abi::gfx::Fp8Format`,
/// from LLVM's `AMDGPU.td`): `s` with its 8-bit float types as the target
/// reads them.
#[inline(always)]
pub const fn ocp(s: Shape, format: Fp8Format) -> Shape {
    const fn read(t: In, format: Fp8Format) -> In {
        match (t, format) {
            (In::Fp8, Fp8Format::Ocp) => In::Fp8Ocp,
            (In::Bf8, Fp8Format::Ocp) => In::Bf8Ocp,
            _ => t,
        }
    }
    Shape {
        a: read(s.a, format),
        b: read(s.b, format),
        ..s
    }
}

/// Defines one executor per mnemonic and the table of shapes.
macro_rules! mfma {
    ($($name:ident => $shape:expr;)*) => {
        $(fn $name(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
            const LAYOUT: Layout = Layout::of(&$shape);
            run(w, i, &ocp($shape, ctx.target.gfx().fp8), &LAYOUT)
        })*
        /// Every MFMA shape by mnemonic (gfx90a, gfx942 and gfx950 spellings).
        pub const SHAPES: &[(&str, Shape)] = &[$((stringify!($name), $shape)),*];
        const TABLE: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

use In::{Bf8, Bf16, F16, F32, F64, Fp8, I8, Xf32};

mfma! {
    // gfx90a spellings (CDNA2 ISA).
    v_mfma_f32_32x32x1f32 => shape(32, 1, 2, F32, F32);
    v_mfma_f32_16x16x1f32 => shape(16, 1, 4, F32, F32);
    v_mfma_f32_4x4x1f32 => shape(4, 1, 16, F32, F32);
    v_mfma_f32_32x32x2f32 => shape(32, 2, 1, F32, F32);
    v_mfma_f32_16x16x4f32 => shape(16, 4, 1, F32, F32);
    v_mfma_f32_32x32x4f16 => shape(32, 4, 2, F16, F16);
    v_mfma_f32_16x16x4f16 => shape(16, 4, 4, F16, F16);
    v_mfma_f32_4x4x4f16 => shape(4, 4, 16, F16, F16);
    v_mfma_f32_32x32x8f16 => shape(32, 8, 1, F16, F16);
    v_mfma_f32_16x16x16f16 => shape(16, 16, 1, F16, F16);
    v_mfma_i32_32x32x4i8 => shape(32, 4, 2, I8, I8);
    v_mfma_i32_16x16x4i8 => shape(16, 4, 4, I8, I8);
    v_mfma_i32_4x4x4i8 => shape(4, 4, 16, I8, I8);
    v_mfma_i32_32x32x8i8 => shape(32, 8, 1, I8, I8);
    v_mfma_i32_16x16x16i8 => shape(16, 16, 1, I8, I8);
    v_mfma_f32_32x32x2bf16 => shape(32, 2, 2, Bf16, Bf16);
    v_mfma_f32_16x16x2bf16 => shape(16, 2, 4, Bf16, Bf16);
    v_mfma_f32_4x4x2bf16 => shape(4, 2, 16, Bf16, Bf16);
    v_mfma_f32_32x32x4bf16 => shape(32, 4, 1, Bf16, Bf16);
    v_mfma_f32_16x16x8bf16 => shape(16, 8, 1, Bf16, Bf16);
    v_mfma_f32_32x32x4bf16_1k => shape(32, 4, 2, Bf16, Bf16);
    v_mfma_f32_16x16x4bf16_1k => shape(16, 4, 4, Bf16, Bf16);
    v_mfma_f32_4x4x4bf16_1k => shape(4, 4, 16, Bf16, Bf16);
    v_mfma_f32_32x32x8bf16_1k => shape(32, 8, 1, Bf16, Bf16);
    v_mfma_f32_16x16x16bf16_1k => shape(16, 16, 1, Bf16, Bf16);
    v_mfma_f64_16x16x4f64 => shape(16, 4, 1, F64, F64);
    v_mfma_f64_4x4x4f64 => shape(4, 4, 4, F64, F64);
    // gfx942 spellings (CDNA3 ISA).
    v_mfma_f32_32x32x1_2b_f32 => shape(32, 1, 2, F32, F32);
    v_mfma_f32_16x16x1_4b_f32 => shape(16, 1, 4, F32, F32);
    v_mfma_f32_4x4x1_16b_f32 => shape(4, 1, 16, F32, F32);
    v_mfma_f32_32x32x2_f32 => shape(32, 2, 1, F32, F32);
    v_mfma_f32_16x16x4_f32 => shape(16, 4, 1, F32, F32);
    v_mfma_f32_16x16x8_xf32 => shape(16, 8, 1, Xf32, Xf32);
    v_mfma_f32_32x32x4_xf32 => shape(32, 4, 1, Xf32, Xf32);
    v_mfma_f32_32x32x4_2b_f16 => shape(32, 4, 2, F16, F16);
    v_mfma_f32_16x16x4_4b_f16 => shape(16, 4, 4, F16, F16);
    v_mfma_f32_4x4x4_16b_f16 => shape(4, 4, 16, F16, F16);
    v_mfma_f32_32x32x8_f16 => shape(32, 8, 1, F16, F16);
    v_mfma_f32_16x16x16_f16 => shape(16, 16, 1, F16, F16);
    v_mfma_i32_32x32x4_2b_i8 => shape(32, 4, 2, I8, I8);
    v_mfma_i32_16x16x4_4b_i8 => shape(16, 4, 4, I8, I8);
    v_mfma_i32_4x4x4_16b_i8 => shape(4, 4, 16, I8, I8);
    v_mfma_i32_32x32x16_i8 => shape(32, 16, 1, I8, I8);
    v_mfma_i32_16x16x32_i8 => shape(16, 32, 1, I8, I8);
    v_mfma_f32_32x32x4_2b_bf16 => shape(32, 4, 2, Bf16, Bf16);
    v_mfma_f32_16x16x4_4b_bf16 => shape(16, 4, 4, Bf16, Bf16);
    v_mfma_f32_4x4x4_16b_bf16 => shape(4, 4, 16, Bf16, Bf16);
    v_mfma_f32_32x32x8_bf16 => shape(32, 8, 1, Bf16, Bf16);
    v_mfma_f32_16x16x16_bf16 => shape(16, 16, 1, Bf16, Bf16);
    v_mfma_f64_16x16x4_f64 => shape_neg(16, 4, 1);
    v_mfma_f64_4x4x4_4b_f64 => shape_neg(4, 4, 4);
    v_mfma_f32_16x16x32_bf8_bf8 => shape(16, 32, 1, Bf8, Bf8);
    v_mfma_f32_16x16x32_bf8_fp8 => shape(16, 32, 1, Bf8, Fp8);
    v_mfma_f32_16x16x32_fp8_bf8 => shape(16, 32, 1, Fp8, Bf8);
    v_mfma_f32_16x16x32_fp8_fp8 => shape(16, 32, 1, Fp8, Fp8);
    v_mfma_f32_32x32x16_bf8_bf8 => shape(32, 16, 1, Bf8, Bf8);
    v_mfma_f32_32x32x16_bf8_fp8 => shape(32, 16, 1, Bf8, Fp8);
    v_mfma_f32_32x32x16_fp8_bf8 => shape(32, 16, 1, Fp8, Bf8);
    v_mfma_f32_32x32x16_fp8_fp8 => shape(32, 16, 1, Fp8, Fp8);
    // gfx950 (CDNA4 ISA): f16, bf16 and i8 with K doubled, eight 16-bit
    // or sixteen 8-bit elements per lane.
    v_mfma_f32_32x32x16_f16 => shape(32, 16, 1, F16, F16);
    v_mfma_f32_16x16x32_f16 => shape(16, 32, 1, F16, F16);
    v_mfma_f32_32x32x16_bf16 => shape(32, 16, 1, Bf16, Bf16);
    v_mfma_f32_16x16x32_bf16 => shape(16, 32, 1, Bf16, Bf16);
    v_mfma_i32_32x32x32_i8 => shape(32, 32, 1, I8, I8);
    v_mfma_i32_16x16x64_i8 => shape(16, 64, 1, I8, I8);
}

/// Every MFMA executor. The sparse `v_smfmac_*` of gfx942 are not here.
pub const OPS: &[&[(&str, Exec)]] = &[TABLE];

/// The executor as first written, kept as the bit-for-bit reference of
/// [`run`]: it copies the operands into vectors and walks the layout
/// formulas element by element. Tests only.
#[cfg(test)]
mod reference {
    use super::*;

    /// `count` consecutive registers of a MAI operand; a non-register
    /// operand (SrcC may be an inline constant) gives its value in every
    /// register, or in every pair for f64.
    fn operand(w: &Wave, src: Src, count: usize, f64: bool) -> Result<Vec<Lanes>, Fault> {
        match src {
            Src::Vgpr(r) | Src::Agpr(r) => {
                let acc = matches!(src, Src::Agpr(_));
                (0..count)
                    .map(|n| w.vreg(r + n as u16, acc).copied())
                    .collect()
            }
            _ if f64 => {
                let v = w.s64_of(src, Ty::F64)?;
                Ok((0..count)
                    .map(|n| {
                        [if n % 2 == 0 {
                            v as u32
                        } else {
                            (v >> 32) as u32
                        }; LANES]
                    })
                    .collect())
            }
            _ => Ok(vec![[w.s32_of(src, Ty::B32)?; LANES]; count]),
        }
    }

    /// Element `item` (of `bits` each, packed from bit 0 of the first
    /// register) of lane `lane`.
    fn element(regs: &[Lanes], lane: usize, item: usize, bits: usize) -> u64 {
        if bits == 64 {
            return u64::from(regs[2 * item][lane]) | u64::from(regs[2 * item + 1][lane]) << 32;
        }
        let bit = item * bits;
        let word = regs[bit / 32][lane] >> (bit % 32);
        u64::from(word) & ((1u64 << bits) - 1)
    }

    /// Runs one MFMA of `s`.
    pub(super) fn run_reference(w: &mut Wave, i: &Inst, s: &Shape) -> R {
        let Ext::Mai(mai) = i.ext else {
            return Err(Fault::Unimplemented {
                mnemonic: "an MFMA without its MAI fields",
            });
        };
        let f64_out = matches!(s.a, In::F64);
        let int_out = matches!(s.a, In::I8);
        let (blgp, neg) = if s.blgp_is_neg {
            (0, mai.blgp)
        } else if f64_out {
            (0, 0)
        } else {
            (mai.blgp, 0)
        };
        let a_regs = operand(w, i.src[0], s.ab_regs(s.a), f64_out)?;
        let b_regs = operand(w, i.src[1], s.ab_regs(s.b), f64_out)?;
        let c_regs = operand(w, i.src[2], s.cd_regs(), f64_out)?;
        let sign = |bit: u8| if neg & bit != 0 { -1.0 } else { 1.0 };
        let (sa, sb, sc) = (sign(1), sign(2), sign(4));

        // Gather A as [block][row][k] and B as [block][k][col], modifiers
        // applied, so the product below is a plain loop.
        let (m, kk, nb) = (s.m, s.k, s.blocks);
        let mut a = vec![0f64; nb * m * kk];
        let mut b = vec![0f64; nb * kk * m];
        for blk in 0..nb {
            let src_blk = cbsz_block(blk, nb, mai.cbsz, mai.abid);
            for row in 0..m {
                for k in 0..kk {
                    let (lane, item) = s.ab_slot(row, k, src_blk);
                    a[(blk * m + row) * kk + k] =
                        sa * s.a.value(element(&a_regs, lane, item, s.a.bits()));
                    let (lane, item) = s.ab_slot(row, k, blk);
                    let lane = blgp_lane(lane, blgp);
                    b[(blk * kk + k) * m + row] =
                        sb * s.b.value(element(&b_regs, lane, item, s.b.bits()));
                }
            }
        }

        let mut d = vec![[0u32; LANES]; s.cd_regs()];
        for blk in 0..nb {
            for row in 0..m {
                let a_row = &a[(blk * m + row) * kk..][..kk];
                for col in 0..m {
                    let (reg, lane) = s.cd_slot(row, col, blk);
                    let products = (0..kk).map(|k| (a_row[k], b[(blk * kk + k) * m + col]));
                    if f64_out {
                        let c = sc * f64::from_bits(element(&c_regs, lane, reg / 2, 64));
                        let v = products.fold(c, |acc, (x, y)| x.mul_add(y, acc));
                        d[reg][lane] = v.to_bits() as u32;
                        d[reg + 1][lane] = (v.to_bits() >> 32) as u32;
                    } else if int_out {
                        let c = c_regs[reg][lane] as i32;
                        let v = products.fold(c, |acc, (x, y)| acc.wrapping_add((x * y) as i32));
                        d[reg][lane] = v as u32;
                    } else {
                        let c = f64::from(f32::from_bits(c_regs[reg][lane]));
                        let v = products.fold(c, |acc, (x, y)| acc + x * y);
                        d[reg][lane] = (v as f32).to_bits();
                    }
                }
            }
        }

        let acc = i.flags & flag::ACC_CD != 0;
        // Check the whole destination before writing any of it.
        w.vreg(i.vdst + d.len() as u16 - 1, acc)?;
        for (n, vals) in d.iter().enumerate() {
            *w.vreg_mut(i.vdst + n as u16, acc)? = *vals;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! The executor against a scalar model written the other way round:
    //! it walks every (register, lane) slot and asks which matrix element
    //! the slot holds (the calculator's "register to matrix element"
    //! mapping), builds dense matrices, multiplies them with a plain
    //! triple loop, and compares. The shapes come from the mnemonics'
    //! `MxNxK[_Bb]` text, not from [`SHAPES`].

    use super::*;
    use crate::decode::opcodes::VOP3P;
    use crate::decode::{Target, decode};
    use crate::float::{f16_to_f32, f32_to_bf16, f32_to_f16};

    /// [`super::run`] with the shape's layout built on the spot.
    fn run(w: &mut Wave, i: &Inst, s: &Shape) -> R {
        super::run(w, i, s, &Layout::of(s))
    }

    /// A xorshift generator: random test data without a dependency.
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 16) as u32
        }

        /// A non-zero value in ±[0.25, 2) with random low bits.
        fn unit(&mut self) -> f32 {
            let mag = 0.25 + (self.next() % 7000) as f32 / 4000.0;
            if self.next() & 1 == 0 { mag } else { -mag }
        }
    }

    /// Block counts of the gfx90a spellings, which do not say them
    /// (calculator `--detail-instruction`, "blocks").
    fn blocks_of(name: &str, m: usize, k: usize) -> usize {
        if let Some(b) = name
            .split('_')
            .find_map(|p| p.strip_suffix('b')?.parse().ok())
        {
            return b;
        }
        let _ = (m, k);
        match name {
            "v_mfma_f32_32x32x1f32"
            | "v_mfma_f32_32x32x4f16"
            | "v_mfma_i32_32x32x4i8"
            | "v_mfma_f32_32x32x2bf16"
            | "v_mfma_f32_32x32x4bf16_1k" => 2,
            "v_mfma_f32_16x16x1f32"
            | "v_mfma_f32_16x16x4f16"
            | "v_mfma_i32_16x16x4i8"
            | "v_mfma_f32_16x16x2bf16"
            | "v_mfma_f32_16x16x4bf16_1k"
            | "v_mfma_f64_4x4x4f64" => 4,
            "v_mfma_f32_4x4x1f32"
            | "v_mfma_f32_4x4x4f16"
            | "v_mfma_i32_4x4x4i8"
            | "v_mfma_f32_4x4x2bf16"
            | "v_mfma_f32_4x4x4bf16_1k" => 16,
            _ => 1,
        }
    }

    /// (M, K, blocks, A type, B type) from the mnemonic text.
    fn parse(name: &str) -> (usize, usize, usize, In, In) {
        let dims = name
            .split('_')
            .find(|p| p.matches('x').count() == 2)
            .expect("MxNxK");
        let mut it = dims.split('x');
        let m: usize = it.next().and_then(|s| s.parse().ok()).expect("M");
        let k_text = it.nth(1).expect("K");
        let digits: String = k_text.chars().take_while(char::is_ascii_digit).collect();
        let k: usize = digits.parse().expect("K");
        let ty = |t: &str| match t {
            "fp8" => In::Fp8,
            "bf8" => In::Bf8,
            _ => unreachable!(),
        };
        let (a, b) = if name.contains("fp8") || name.contains("bf8") {
            let parts: Vec<&str> = name.rsplit('_').take(2).collect();
            (ty(parts[1]), ty(parts[0]))
        } else {
            let t = if name.contains("xf32") {
                In::Xf32
            } else if name.contains("bf16") {
                In::Bf16
            } else if name.contains("f16") {
                In::F16
            } else if name.contains("i8") {
                In::I8
            } else if name.contains("f64") {
                In::F64
            } else {
                In::F32
            };
            (t, t)
        };
        (m, k, blocks_of(name, m, k), a, b)
    }

    fn bits(t: In) -> usize {
        match t {
            In::F64 => 64,
            In::F32 | In::Xf32 => 32,
            In::F16 | In::Bf16 => 16,
            _ => 8,
        }
    }

    /// Which (block, row, k) an A/B slot holds (lane, element index).
    fn ab_element(
        name: &str,
        m: usize,
        k: usize,
        blocks: usize,
        lane: usize,
        t: usize,
    ) -> (usize, usize, usize) {
        if name.contains("f64") {
            // A i: lane % M, k: lane / 16, block: (lane / 4) % 4 for 4x4.
            let block = if blocks > 1 { (lane / 4) % 4 } else { 0 };
            return (block, lane % m, lane / 16);
        }
        let per_lane = m * k * blocks / 64;
        let group = lane / m;
        if blocks > 1 {
            (group, lane % m, t)
        } else {
            (0, lane % m, group * per_lane + t)
        }
    }

    /// Which (block, i, j) a C/D slot holds (register, lane); for f64 the
    /// register is the pair's first.
    fn cd_element(name: &str, m: usize, reg: usize, lane: usize) -> (usize, usize, usize) {
        if name.contains("f64") {
            let block = if m == 4 { (lane / 4) % 4 } else { 0 };
            return (block, 4 * (reg / 2) + lane / 16, lane % m);
        }
        match m {
            32 => (
                reg / 16,
                8 * ((reg % 16) / 4) + 4 * (lane / 32) + reg % 4,
                lane % 32,
            ),
            16 => (reg / 4, 4 * (lane / 16) + reg % 4, lane % 16),
            _ => (lane / 4, reg, lane % 4),
        }
    }

    fn value(t: In, raw: u64) -> f64 {
        match t {
            In::F32 | In::Xf32 => f64::from(f32::from_bits(raw as u32)),
            In::F16 => f64::from(f16_to_f32(raw as u16)),
            In::Bf16 => f64::from(bf16_to_f32(raw as u16)),
            In::I8 => f64::from(raw as u8 as i8),
            In::Fp8 => f64::from(fp8_fnuz_to_f32(raw as u8)),
            In::Bf8 => f64::from(bf8_fnuz_to_f32(raw as u8)),
            In::Fp8Ocp => f64::from(fp8_ocp_to_f32(raw as u8)),
            In::Bf8Ocp => f64::from(bf8_ocp_to_f32(raw as u8)),
            In::F64 => f64::from_bits(raw),
        }
    }

    /// Random register contents for `n` elements per lane of type `t`.
    fn fill(rng: &mut Rng, t: In, per_lane: usize) -> Vec<Lanes> {
        let words = (per_lane * bits(t)).div_ceil(32);
        let mut regs = vec![[0u32; LANES]; words];
        for l in 0..LANES {
            for e in 0..per_lane {
                let raw: u64 = match t {
                    In::F32 | In::Xf32 => u64::from(rng.unit().to_bits()),
                    In::F16 => u64::from(f32_to_f16(rng.unit())),
                    In::Bf16 => u64::from(f32_to_bf16(rng.unit())),
                    In::I8 => u64::from(rng.next() as u8),
                    // Any byte but the FNUZ NaN 0x80 or an OCP NaN or
                    // infinity (magnitudes 0x08..0x77), and no tiny
                    // subnormals.
                    In::Fp8 | In::Bf8 | In::Fp8Ocp | In::Bf8Ocp => {
                        u64::from((rng.next() % 0x70 + 8) as u8 | (rng.next() as u8 & 0x80))
                    }
                    In::F64 => f64::from(rng.unit()).to_bits() ^ u64::from(rng.next() & 0xFFFF),
                };
                let bit = e * bits(t);
                for w in 0..bits(t).div_ceil(32) {
                    let part = (raw >> (32 * w)) as u32;
                    regs[bit / 32 + w][l] |= part << (bit % 32);
                }
            }
        }
        regs
    }

    fn read(regs: &[Lanes], lane: usize, t: In, e: usize) -> u64 {
        let b = bits(t);
        let bit = e * b;
        if b == 64 {
            return u64::from(regs[2 * e][lane]) | u64::from(regs[2 * e + 1][lane]) << 32;
        }
        u64::from(regs[bit / 32][lane] >> (bit % 32)) & ((1 << b) - 1)
    }

    /// The scalar model: D registers for the given inputs and modifiers.
    #[allow(clippy::too_many_arguments)]
    fn model(
        name: &str,
        a_regs: &[Lanes],
        b_regs: &[Lanes],
        c_regs: &[Lanes],
        cbsz: u8,
        abid: u8,
        blgp: u8,
    ) -> Vec<Lanes> {
        let (m, k, blocks, ta, tb) = parse(name);
        let per_lane = m * k * blocks / 64;
        let neg_mode = name.contains("f64") && name.ends_with("_f64");
        let blgp_lanes = if name.contains("f64") { 0 } else { blgp };
        let neg = if neg_mode { blgp } else { 0 };
        let mut a = vec![vec![vec![0f64; k]; m]; blocks];
        let mut b = vec![vec![vec![0f64; m]; k]; blocks];
        for lane in 0..64 {
            for t in 0..per_lane {
                let (blk, row, kk) = ab_element(name, m, k, blocks, lane, t);
                a[blk][row][kk] = value(ta, read(a_regs, lane, ta, t));
                let from = match blgp_lanes {
                    0 => lane,
                    1 => lane % 32,
                    2 => lane % 32 + 32,
                    3 => (lane + 16) % 64,
                    g => lane % 16 + 16 * (g as usize - 4),
                };
                b[blk][kk][row] = value(tb, read(b_regs, from, tb, t));
            }
        }
        let sign = |bit: u8| if neg & bit != 0 { -1.0 } else { 1.0 };
        let f64_out = ta == In::F64;
        let words = if f64_out { 2 } else { 1 };
        let mut d = vec![[0u32; LANES]; m * m * blocks / 64 * words];
        for reg in (0..d.len()).step_by(words) {
            for lane in 0..64 {
                let (blk, i, j) = cd_element(name, m, reg, lane);
                let group = 1usize << cbsz;
                let src = blk / group * group + usize::from(abid);
                let src = if blocks > 1 { src } else { blk };
                let mut acc = 0f64;
                let mut iacc = 0i64;
                for kk in 0..k {
                    acc += sign(1) * a[src][i][kk] * sign(2) * b[blk][kk][j];
                    iacc += (a[src][i][kk] * b[blk][kk][j]) as i64;
                }
                if f64_out {
                    let c = f64::from_bits(read(c_regs, lane, In::F64, reg / 2));
                    let v = (acc + sign(4) * c).to_bits();
                    d[reg][lane] = v as u32;
                    d[reg + 1][lane] = (v >> 32) as u32;
                } else if ta == In::I8 {
                    d[reg][lane] = (iacc + i64::from(c_regs[reg][lane] as i32)) as i32 as u32;
                } else {
                    d[reg][lane] =
                        ((acc + f64::from(f32::from_bits(c_regs[reg][lane]))) as f32).to_bits();
                }
            }
        }
        d
    }

    /// Hand-assembled VOP3P-MAI (CDNA3 ISA, "VOP3P-MAI"): checked
    /// against LLVM's MC tests, e.g. `v_mfma_f32_16x16x8_xf32 a[0:3],
    /// v[2:3], v[4:5], a[2:5]` = d3be8000 040a0902.
    #[allow(clippy::too_many_arguments)]
    fn encode(
        op: u16,
        vdst: u32,
        acc_cd: bool,
        a: u32,
        b: u32,
        c: u32,
        acc_ab: u32,
        cbsz: u8,
        abid: u8,
        blgp: u8,
    ) -> [u32; 2] {
        const MAI: u32 = 0xD380_0000;
        [
            MAI | u32::from(op) << 16
                | u32::from(acc_cd) << 15
                | u32::from(abid) << 11
                | u32::from(cbsz) << 8
                | vdst,
            (0x100 | a)
                | (0x100 | b) << 9
                | (0x100 | c) << 18
                | acc_ab << 27
                | u32::from(blgp) << 29,
        ]
    }

    fn target_and_opcode(name: &str) -> (Target, u16) {
        VOP3P
            .iter()
            .find_map(|o| {
                [Target::Gfx942, Target::Gfx90a, Target::Gfx950]
                    .into_iter()
                    .find(|&t| o.on(t) == name)
                    .map(|t| (t, o.opcode))
            })
            .expect("MFMA in the opcode table")
    }

    const A_REG: u32 = 0;
    const B_REG: u32 = 8;
    const C_REG: u32 = 16;
    const D_REG: u32 = 64;

    #[allow(clippy::too_many_arguments)]
    fn check(
        name: &str,
        shape: &Shape,
        cbsz: u8,
        abid: u8,
        blgp: u8,
        acc_ab: u32,
        acc_cd: bool,
        seed: u64,
    ) {
        let mut rng = Rng(seed);
        let (target, op) = target_and_opcode(name);
        let a = fill(&mut rng, shape.a, shape.per_lane());
        let b = fill(&mut rng, shape.b, shape.per_lane());
        let c_words = shape.cd_regs();
        let c_ty = match shape.a {
            In::F64 => In::F64,
            In::I8 => In::I8,
            _ => In::F32,
        };
        let c: Vec<Lanes> = if c_ty == In::I8 {
            (0..c_words)
                .map(|_| std::array::from_fn(|_| rng.next()))
                .collect()
        } else {
            let per = if c_ty == In::F64 {
                c_words / 2
            } else {
                c_words
            };
            fill(&mut rng, c_ty, per)
        };
        let mut w = Wave::new(128, 128);
        // EXEC is ignored by MFMA: leave half the lanes off.
        w.set_exec(0x0000_FFFF_FFFF_0000);
        let (a_file_acc, b_file_acc) = (acc_ab & 1 != 0, acc_ab & 2 != 0);
        for (n, r) in a.iter().enumerate() {
            *w.vreg_mut(A_REG as u16 + n as u16, a_file_acc).unwrap() = *r;
        }
        for (n, r) in b.iter().enumerate() {
            *w.vreg_mut(B_REG as u16 + n as u16, b_file_acc).unwrap() = *r;
        }
        for (n, r) in c.iter().enumerate() {
            *w.vreg_mut(C_REG as u16 + n as u16, acc_cd).unwrap() = *r;
        }
        let words = encode(
            op, D_REG, acc_cd, A_REG, B_REG, C_REG, acc_ab, cbsz, abid, blgp,
        );
        let inst = decode(&words, target).unwrap();
        assert_eq!(inst.mnemonic, name);
        run(&mut w, &inst, shape).unwrap();
        let want_hi = model(name, &a, &b, &c, cbsz, abid, blgp);
        for (n, want) in want_hi.iter().enumerate() {
            let got = w.vreg(D_REG as u16 + n as u16, acc_cd).unwrap();
            for l in 0..LANES {
                let ok = match c_ty {
                    In::F32 => {
                        let (g, e) = (f32::from_bits(got[l]), f32::from_bits(want[l]));
                        (g - e).abs() <= 1e-6 * (1.0 + e.abs())
                    }
                    In::F64 if n % 2 == 0 => {
                        let g = f64::from_bits(
                            u64::from(got[l])
                                | u64::from(
                                    w.vreg(D_REG as u16 + n as u16 + 1, acc_cd).unwrap()[l],
                                ) << 32,
                        );
                        let e =
                            f64::from_bits(u64::from(want[l]) | u64::from(want_hi[n + 1][l]) << 32);
                        (g - e).abs() <= 1e-12 * (1.0 + e.abs())
                    }
                    In::F64 => true,
                    _ => got[l] == want[l],
                };
                assert!(
                    ok,
                    "{name} cbsz {cbsz} abid {abid} blgp {blgp}: d[{n}] lane {l}: {:#x} vs {:#x}",
                    got[l], want[l]
                );
            }
        }
    }

    #[test]
    fn every_mfma_matches_the_scalar_model_with_broadcasts_and_lane_patterns() {
        let mut seed: u64 = 0x1234_5678_9ABC_DEF1;
        for (name, shape) in SHAPES {
            let log_blocks = shape.blocks.trailing_zeros() as u8;
            let mut settings = vec![(0u8, 0u8, 0u8), (0, 0, 3), (0, 0, 6)];
            if shape.blocks > 1 {
                settings.push((1, 1, 0));
                settings.push((log_blocks, (shape.blocks - 1) as u8, 1));
                settings.push((log_blocks.min(2), 2u8.min((shape.blocks - 1) as u8), 7));
            }
            if shape.a == In::F64 {
                settings.push((0, 0, 5));
            }
            for (n, &(cbsz, abid, blgp)) in settings.iter().enumerate() {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let acc_ab = (n % 4) as u32;
                check(name, shape, cbsz, abid, blgp, acc_ab, n % 2 == 0, seed | 1);
            }
        }
    }

    #[test]
    fn the_f64_blgp_field_negates_on_gfx942_only() {
        // gfx942: blgp bit 0 negates A: D = -A·B + C; with A = B = 1 and
        // C = 0 that is -K in every element. gfx90a ignores the field.
        for (name, negated) in [
            ("v_mfma_f64_16x16x4_f64", true),
            ("v_mfma_f64_16x16x4f64", false),
        ] {
            let (target, op) = target_and_opcode(name);
            let mut w = Wave::new(16, 16);
            let one = 1f64.to_bits();
            for r in 0..2 {
                w.v[r] = [(one >> (32 * r)) as u32; LANES];
                w.v[2 + r] = [(one >> (32 * r)) as u32; LANES];
            }
            let words = encode(op, 4, false, 0, 2, 0, 0, 0, 0, 1);
            let mut inst = decode(&words, target).unwrap();
            inst.src[2] = Src::Inline(crate::decode::inst::code::ZERO);
            run(
                &mut w,
                &inst,
                &SHAPES.iter().find(|s| s.0 == name).unwrap().1,
            )
            .unwrap();
            let d = f64::from_bits(u64::from(w.v[4][0]) | u64::from(w.v[5][0]) << 32);
            assert_eq!(d, if negated { -4.0 } else { 4.0 }, "{name}");
        }
    }

    #[test]
    fn fp8_reads_fnuz_on_gfx942_and_ocp_on_gfx950() {
        // Byte 0x38 is 0.5 in E4M3 FNUZ (bias 8) and 1.0 in OCP E4M3
        // (bias 7): with A = B = 0x38 everywhere and C = 0, every D of
        // the K = 32 shape is 32 · 0.25 on gfx942 and 32 · 1 on gfx950.
        let (_, op) = target_and_opcode("v_mfma_f32_16x16x32_fp8_fp8");
        let words = encode(op, 0, true, 0, 2, 0, 0, 0, 0, 0);
        for (target, want) in [(Target::Gfx942, 8.0f32), (Target::Gfx950, 32.0)] {
            let mut w = Wave::new(8, 8);
            for r in 0..4 {
                w.v[r] = [0x3838_3838; LANES];
            }
            crate::exec::run_words(
                &mut w,
                target,
                &words,
                "v_mfma_f32_16x16x32_fp8_fp8",
                &mut [],
            )
            .unwrap();
            for r in 0..4 {
                assert!(
                    w.a[r].iter().all(|&d| f32::from_bits(d) == want),
                    "{target:?}: {}",
                    f32::from_bits(w.a[r][0])
                );
            }
        }
    }

    #[test]
    fn an_inline_constant_c_fills_every_accumulator() {
        let (target, op) = target_and_opcode("v_mfma_f32_4x4x1_16b_f32");
        let mut w = Wave::new(8, 8);
        let words = encode(op, 0, true, 0, 1, 0, 0, 0, 0, 0);
        let mut inst = decode(&words, target).unwrap();
        // 2.0 as SrcC; A = B = 0.
        inst.src[2] = Src::Inline(244);
        run(
            &mut w,
            &inst,
            &SHAPES
                .iter()
                .find(|s| s.0 == "v_mfma_f32_4x4x1_16b_f32")
                .unwrap()
                .1,
        )
        .unwrap();
        for r in 0..4 {
            assert!(w.a[r].iter().all(|&x| x == 2f32.to_bits()));
        }
    }

    /// A `bits`-wide element of type `t` for the bit-exactness test:
    /// mostly ordinary values near 1, and now and then a denormal, a
    /// signed zero, raw random bits and, if `specials`, a NaN or an
    /// infinity.
    fn pattern(rng: &mut Rng, t: In, specials: bool) -> u64 {
        let (exp_bits, man_bits) = match t {
            In::F64 => (11, 52),
            In::F32 | In::Xf32 => (8, 23),
            In::F16 => (5, 10),
            In::Bf16 => (8, 7),
            // FNUZ bytes: every byte is a value or the NaN 0x80, and a
            // random byte is a denormal one time in 8 or 16; i8 likewise.
            In::Fp8 | In::Bf8 | In::Fp8Ocp | In::Bf8Ocp | In::I8 => {
                let byte = match rng.next() % 32 {
                    0 => 0x80,
                    1 => 0,
                    _ => rng.next() as u8,
                };
                // NaNs and infinities: FNUZ's 0x80; OCP E4M3's S.1111.111,
                // E5M2's exponent 31.
                let special = match t {
                    In::Fp8 | In::Bf8 => byte == 0x80,
                    In::Fp8Ocp => byte & 0x7F == 0x7F,
                    In::Bf8Ocp => byte & 0x7C == 0x7C,
                    _ => false,
                };
                return if special && !specials {
                    0
                } else {
                    u64::from(byte)
                };
            }
        };
        let random = u64::from(rng.next()) | u64::from(rng.next()) << 32;
        let bits = 1 + exp_bits + man_bits;
        let sign = (random >> 63) << (bits - 1);
        let man_mask = (1u64 << man_bits) - 1;
        let exp_max = (1u64 << exp_bits) - 1;
        let man = random & man_mask;
        let exp = match rng.next() % 64 {
            // NaN: a zero mantissa would be an infinity.
            0 if specials => return sign | exp_max << man_bits | man.max(1),
            1 if specials => return sign | exp_max << man_bits,
            2 | 3 => return sign | man.max(1),
            4 => return sign,
            // Random bits, but no NaN or infinity unless `specials`.
            5 if specials || (random >> man_bits) & exp_max != exp_max => {
                return random & ((1u64 << (bits - 1)) << 1).wrapping_sub(1);
            }
            // Ordinary: within 2^±3 of 1.
            n => (exp_max >> 1) + u64::from(n % 7) - 3,
        };
        sign | exp << man_bits | man
    }

    /// A NaN of type `t` (quiet or signalling, either sign, any payload).
    fn nan(rng: &mut Rng, t: In) -> u64 {
        let (exp_bits, man_bits) = match t {
            In::F64 => (11, 52),
            In::F32 | In::Xf32 => (8, 23),
            In::F16 => (5, 10),
            In::Bf16 => (8, 7),
            _ => return 0x80,
        };
        let random = u64::from(rng.next()) | u64::from(rng.next()) << 32;
        let sign = (random >> 63) << (exp_bits + man_bits);
        sign | ((1u64 << exp_bits) - 1) << man_bits | (random & ((1u64 << man_bits) - 1)).max(1)
    }

    /// Writes element `e` (of `bits(t)`, packed from bit 0) of `lane`.
    fn put(regs: &mut [Lanes], t: In, lane: usize, e: usize, raw: u64) {
        let b = bits(t);
        let bit = e * b;
        let width = b.min(32);
        let mask = ((1u64 << width) - 1) as u32;
        for w in 0..b.div_ceil(32) {
            let word = &mut regs[bit / 32 + w][lane];
            *word &= !(mask << (bit % 32));
            *word |= ((raw >> (32 * w)) as u32 & mask) << (bit % 32);
        }
    }

    /// `regs` registers of random words with `per_lane` elements of `t`
    /// from [`pattern`] packed from bit 0 (bits past them stay random).
    fn fill_patterns(
        rng: &mut Rng,
        t: In,
        per_lane: usize,
        regs: usize,
        specials: bool,
    ) -> Vec<Lanes> {
        let mut out: Vec<Lanes> = (0..regs)
            .map(|_| std::array::from_fn(|_| rng.next()))
            .collect();
        for lane in 0..LANES {
            for e in 0..per_lane {
                let raw = pattern(rng, t, specials);
                put(&mut out, t, lane, e, raw);
            }
        }
        out
    }

    #[test]
    fn rows_and_columns_sit_in_consecutive_lanes() {
        // `run` reads M rows of A (columns of B) per block and k, and
        // writes M columns of D per block and row, as runs of lanes.
        for (name, s) in SHAPES {
            for blk in 0..s.blocks {
                for k in 0..s.k {
                    let (lane, item) = s.ab_slot(0, k, blk);
                    for row in 0..s.m {
                        assert_eq!(s.ab_slot(row, k, blk), (lane + row, item), "{name}");
                    }
                }
                for row in 0..s.m {
                    let (reg, lane) = s.cd_slot(row, 0, blk);
                    for col in 0..s.m {
                        assert_eq!(s.cd_slot(row, col, blk), (reg, lane + col), "{name}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_f16_converts_to_f64_as_through_f32() {
        for h in 0..=u16::MAX {
            let want = f64::from(f16_to_f32(h)).to_bits();
            assert_eq!(f16_to_f64(h).to_bits(), want, "{h:#06x}");
        }
    }

    /// F16C gives every f16 the bits of the portable conversion, NaN
    /// payloads and subnormals included, from either half of a register,
    /// with the other half holding a different value.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn f16c_converts_every_f16_as_the_portable_code() {
        if !avx2_fma() {
            eprintln!("no F16C here: nothing to compare");
            return;
        }
        for first in (0..=u16::MAX as u32).step_by(LANES) {
            let h = |l: usize| (first + l as u32) as u16;
            let words: Lanes =
                std::array::from_fn(|l| u32::from(h(l)) << 16 | u32::from(!h(l) ^ 0x5A5A));
            let mut out = [0f64; LANES];
            for high in [false, true] {
                // SAFETY: avx2_fma() found AVX2 and F16C above.
                unsafe { f16_lanes_to_f64(&words, high, &mut out) };
                for (l, got) in out.iter().enumerate() {
                    let raw = if high { h(l) } else { !h(l) ^ 0x5A5A };
                    let want = f16_to_f64(raw).to_bits();
                    assert_eq!(got.to_bits(), want, "{raw:#06x} high={high}");
                }
            }
        }
    }

    /// How much of a NaN in D must match the reference's.
    #[derive(Clone, Copy, PartialEq)]
    enum NanRule {
        /// Every bit.
        Exact,
        /// All but the sign.
        Payload,
        /// Only that it is a NaN.
        Any,
    }

    /// Whether two D words (or, for f64, register pairs) agree: bit for
    /// bit, or as far as `rule` asks if the reference's is a NaN.
    fn agree(
        got: &[Lanes],
        want: &[Lanes],
        reg: usize,
        lane: usize,
        c_ty: In,
        rule: NanRule,
    ) -> bool {
        if got[reg][lane] == want[reg][lane] {
            return true;
        }
        let (got_nan, want_nan, same_payload) = match c_ty {
            In::F32 => {
                let (g, e) = (got[reg][lane], want[reg][lane]);
                (
                    f32::from_bits(g).is_nan(),
                    f32::from_bits(e).is_nan(),
                    g << 1 == e << 1,
                )
            }
            In::F64 => {
                let pair = reg - reg % 2;
                let f = |r: &[Lanes]| u64::from(r[pair][lane]) | u64::from(r[pair + 1][lane]) << 32;
                let (g, e) = (f(got), f(want));
                (
                    f64::from_bits(g).is_nan(),
                    f64::from_bits(e).is_nan(),
                    g << 1 == e << 1,
                )
            }
            _ => return false,
        };
        match rule {
            NanRule::Exact => false,
            NanRule::Payload => got_nan && want_nan && same_payload,
            NanRule::Any => got_nan && want_nan,
        }
    }

    /// The executor gives the reference's bits in every register, over
    /// all shapes, operand files, CBSZ/ABID/BLGP and special values.
    ///
    /// Except for NaNs' signs and payloads where the reference leaves them
    /// to the compiler: Rust does not specify which NaN an operation with
    /// two NaN operands returns (x86 returns the first, and the compiler
    /// orders the operands as it likes), nor the sign of a NaN times -1
    /// (an optimised build flips it, an unoptimised one does not), and
    /// the reference gives different bits built with and without
    /// optimisation. So half the rounds put NaNs and infinities anywhere
    /// and ask only that a D element is NaN where the reference's is; the
    /// other half hold exactly one NaN among all inputs and no infinity,
    /// so every NaN in D has one source, and its payload, and its sign
    /// unless the round negates, must come through as the reference's.
    #[test]
    fn every_mfma_matches_the_reference_executor_bit_for_bit() {
        use crate::decode::inst::{Mai, code};
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        // gfx950's OCP readings of the FP8/BF8 shapes too.
        let ocp_shapes: Vec<(&str, Shape)> = SHAPES
            .iter()
            .map(|&(name, shape)| (name, ocp(shape, Fp8Format::Ocp)))
            .filter(|(name, shape)| SHAPES.iter().all(|s| s.0 != *name || s.1 != *shape))
            .collect();
        assert_eq!(ocp_shapes.len(), 8, "the eight FP8/BF8 shapes");
        for (name, shape) in SHAPES.iter().chain(&ocp_shapes) {
            let (target, op) = target_and_opcode(name);
            let base = decode(
                &encode(op, D_REG, false, A_REG, B_REG, C_REG, 0, 0, 0, 0),
                target,
            )
            .unwrap();
            let c_ty = match shape.a {
                In::F64 => In::F64,
                In::I8 => In::I8,
                _ => In::F32,
            };
            for round in 0..32 {
                let specials = round % 2 == 0;
                let mut w = Wave::new(128, 128);
                let (acc_a, acc_b, acc_cd) = (round % 4 >= 2, round % 8 >= 4, round % 3 == 0);
                let (per_lane, ab) = (shape.per_lane(), |t| shape.ab_regs(t));
                let mut a = fill_patterns(&mut rng, shape.a, per_lane, ab(shape.a), specials);
                let mut b = fill_patterns(&mut rng, shape.b, per_lane, ab(shape.b), specials);
                let c_per = shape.cd_regs() * 32 / bits(c_ty);
                let mut c = if c_ty == In::I8 {
                    fill_patterns(&mut rng, In::F32, 0, shape.cd_regs(), specials)
                } else {
                    fill_patterns(&mut rng, c_ty, c_per, shape.cd_regs(), specials)
                };
                if !specials && c_ty != In::I8 {
                    let lane = rng.next() as usize % LANES;
                    match rng.next() % 3 {
                        0 => put(
                            &mut a,
                            shape.a,
                            lane,
                            rng.next() as usize % per_lane,
                            nan(&mut rng, shape.a),
                        ),
                        1 => put(
                            &mut b,
                            shape.b,
                            lane,
                            rng.next() as usize % per_lane,
                            nan(&mut rng, shape.b),
                        ),
                        _ => put(
                            &mut c,
                            c_ty,
                            lane,
                            rng.next() as usize % c_per,
                            nan(&mut rng, c_ty),
                        ),
                    }
                }
                for (first, regs, acc) in
                    [(A_REG, &a, acc_a), (B_REG, &b, acc_b), (C_REG, &c, acc_cd)]
                {
                    for (n, r) in regs.iter().enumerate() {
                        *w.vreg_mut(first as u16 + n as u16, acc).unwrap() = *r;
                    }
                }
                let mut inst = base;
                let operand = |r: u32, acc: bool| {
                    if acc {
                        Src::Agpr(r as u16)
                    } else {
                        Src::Vgpr(r as u16)
                    }
                };
                inst.src = [
                    operand(A_REG, acc_a),
                    operand(B_REG, acc_b),
                    operand(C_REG, acc_cd),
                ];
                // Some rounds take C from an inline constant (2.0, -1.0,
                // 0, 64) or an SGPR pair, and some write D over C or A.
                w.s[4] = rng.next();
                w.s[5] = rng.next();
                match round % 10 {
                    5 => inst.src[2] = Src::Inline([244, 243, code::ZERO, 192][round / 10 % 4]),
                    7 if specials => inst.src[2] = Src::Sgpr(4),
                    _ => {}
                }
                inst.vdst = match round % 6 {
                    1 => C_REG,
                    4 if acc_a == acc_cd => A_REG,
                    _ => D_REG,
                } as u16;
                if acc_cd {
                    inst.flags |= flag::ACC_CD;
                } else {
                    inst.flags &= !flag::ACC_CD;
                }
                let (cbsz, abid, blgp) = if round < 2 {
                    (0, 0, 0)
                } else {
                    (
                        rng.next() as u8 % 8,
                        rng.next() as u8 % 16,
                        rng.next() as u8 % 8,
                    )
                };
                inst.ext = Ext::Mai(Mai { cbsz, abid, blgp });
                let mut want = w.clone();
                let want_result = reference::run_reference(&mut want, &inst, shape);
                let d = usize::from(inst.vdst)..usize::from(inst.vdst) + shape.cd_regs();
                let rule = if specials {
                    NanRule::Any
                } else if shape.blgp_is_neg && blgp != 0 {
                    NanRule::Payload
                } else {
                    NanRule::Exact
                };
                for isa in isas() {
                    let mut got = w.clone();
                    let layout = Layout::of(shape);
                    let got_result = run_on(&mut got, &inst, shape, &layout, isa);
                    let what =
                        format!("{name} {isa:?} round {round} cbsz {cbsz} abid {abid} blgp {blgp}");
                    assert_eq!(got_result, want_result, "{what}");
                    for (file, got, want, is_acc) in
                        [("v", &got.v, &want.v, false), ("a", &got.a, &want.a, true)]
                    {
                        for r in 0..got.len() {
                            let in_d = is_acc == acc_cd && d.contains(&r);
                            for l in 0..LANES {
                                let ok = if in_d {
                                    agree(got, want, r, l, c_ty, rule)
                                } else {
                                    got[r][l] == want[r][l]
                                };
                                assert!(
                                    ok,
                                    "{what}: {file}{r} lane {l}: {:#x} vs {:#x}",
                                    got[r][l], want[r][l]
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every compilation of the arithmetic this processor can run.
    fn isas() -> Vec<Isa> {
        let mut isas = vec![Isa::Portable];
        if Isa::best() != Isa::Portable {
            isas.push(Isa::best());
        } else {
            eprintln!("this processor runs only the portable MFMA arithmetic");
        }
        isas
    }

    #[test]
    fn a_destination_past_the_register_file_faults_like_the_reference() {
        for (name, shape) in SHAPES {
            let (target, op) = target_and_opcode(name);
            let vdst = 128 - shape.cd_regs() as u32 + 1;
            let inst = decode(
                &encode(op, vdst, false, A_REG, B_REG, C_REG, 0, 0, 0, 0),
                target,
            )
            .unwrap();
            let mut want = Wave::new(128, 128);
            let want_result = reference::run_reference(&mut want, &inst, shape);
            for isa in isas() {
                let mut got = Wave::new(128, 128);
                let result = run_on(&mut got, &inst, shape, &Layout::of(shape), isa);
                assert_eq!(result, want_result, "{name} {isa:?}");
                assert_eq!(got.v, want.v, "{name} {isa:?}");
            }
        }
    }
}
