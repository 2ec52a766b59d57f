//! Wave matrix multiply-accumulate (WMMA, VOP3P) of GFX11 (gfx1100) and
//! GFX12 (gfx1201): D = A × B + C for one 16 × 16 × K tile over a wave32
//! wave, each matrix spread over the 32 lanes and a few VGPRs.
//!
//! Layouts: AMD's matrix instruction calculator
//! (github.com/ROCm/amd_matrix_instruction_calculator, `--detail-
//! instruction` for RDNA3 and RDNA4), the stand-in for the RDNA3/RDNA4 ISA
//! guides' WMMA tables, cross-checked against tinygrad's hardware-tested
//! tensor-core tables. A is M × K (row i), B is K × N (column j), C/D are
//! M × N; "v+r" is the operand's r-th VGPR:
//!
//! ```text
//!   GFX11 A[i][k] (B[k][j] alike, j for i): every lane of a 16-lane group
//!     holds a whole row: v + k/E, element k % E (E per dword: 2 halves,
//!     4 bytes, 8 nibbles), lane i and its copy i + 16 (the copies must
//!     agree: the model refuses a WMMA whose copies differ)
//!   GFX11 C/D[i][j]: v + i/2, lane 16·(i%2) + j; the 16-bit outputs use
//!     one half of each VGPR, OPSEL[2] choosing which (the other is kept)
//!   GFX12 A[i][k], 16-bit: v + 2·(k/8) + (k/2)%2, half k%2,
//!     lane 16·((k/4)%2) + i
//!   GFX12 A[i][k], 8-bit:  v + (k/4)%2, byte k%4, lane 16·(k/8) + i
//!   GFX12 A[i][k], 4-bit:  v + (k/8)%(K/16), nibble k%8,
//!     lane 16·(k/(K/2)) + i   (K = 16 or 32)
//!   GFX12 C/D[i][j], 32-bit: v + i%8, lane 16·(i/8) + j
//!   GFX12 C/D[i][j], 16-bit: v + (i/2)%4, half i%2, lane 16·(i/8) + j
//! ```
//!
//! Modifiers (calculator README, "VOP3P Matrix Multiplication Instruction
//! Encoding"): on float inputs `NEG[0]`/`NEG[1]` negate A's/B's low
//! halves and `NEG_HI[0]`/`NEG_HI[1]` their high halves, `NEG[2]` negates
//! C and `NEG_HI[2]` takes its absolute value; on integer inputs
//! `NEG[0]`/`NEG[1]` say A/B are signed and CLAMP saturates the i32
//! result. The fp8/bf8 forms take no
//! modifiers; GFX12 WMMA takes no OP_SEL. A modifier outside these is
//! refused by name, as is a wave64 WMMA (the compiler builds ours wave32).
//! OPSEL_HI is ignored (LLVM writes ones there).
//!
//! Arithmetic as [`super::mfma`]'s: products exact in f64, summed over K
//! with C in f64 and rounded once to f32 (then to f16/bf16 for the 16-bit
//! outputs); the hardware's order of accumulation is not documented bit
//! for bit, so tests compare with a tolerance. Integer forms sum exactly
//! and wrap (or, with CLAMP, saturate) to i32. gfx1201's fp8/bf8 are the
//! OCP formats (E4M3 and E5M2; calculator data-type table). Denormals are
//! kept. A WMMA is one operation of the whole wave, as an MFMA: every lane
//! is read and written whatever EXEC holds.

use aqueduct_abi::kernel_descriptor::GfxFamily;

use crate::decode::{Inst, Src};
use crate::exec::ctx::{Ctx, Exec};
use crate::exec::mfma::registers;
use crate::fault::Fault;
use crate::float::{
    bf8_ocp_to_f32, bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, fp8_ocp_to_f32,
};
use crate::lanes::{Lanes, WaveSize};
use crate::wave::{Ty, Wave};

type R = Result<(), Fault>;

/// Rows of A, C and D, and columns of B, C and D.
const M: usize = 16;

/// Element type of an A or B operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum In {
    /// f16.
    F16,
    /// bfloat16.
    Bf16,
    /// 8-bit integer (signed or not by NEG).
    Iu8,
    /// 4-bit integer (signed or not by NEG).
    Iu4,
    /// OCP E4M3.
    Fp8,
    /// OCP E5M2.
    Bf8,
}

impl In {
    const fn bits(self) -> usize {
        match self {
            In::F16 | In::Bf16 => 16,
            In::Iu8 | In::Fp8 | In::Bf8 => 8,
            In::Iu4 => 4,
        }
    }

    const fn integer(self) -> bool {
        matches!(self, In::Iu8 | In::Iu4)
    }

    /// The element's value, exactly, as f64; integers by `signed`.
    #[inline(always)]
    fn value(self, raw: u32, signed: bool) -> f64 {
        match self {
            In::F16 => crate::exec::mfma::f16_to_f64(raw as u16),
            In::Bf16 => f64::from(bf16_to_f32(raw as u16)),
            In::Fp8 => f64::from(fp8_ocp_to_f32(raw as u8)),
            In::Bf8 => f64::from(bf8_ocp_to_f32(raw as u8)),
            In::Iu8 if signed => f64::from(raw as u8 as i8),
            In::Iu8 => f64::from(raw as u8),
            In::Iu4 if signed => f64::from(((raw as u8) << 4) as i8 >> 4),
            In::Iu4 => f64::from(raw & 0xF),
        }
    }
}

/// Element type of C and D.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// f32.
    F32,
    /// f16 (GFX11: one half of each VGPR; GFX12: packed).
    F16,
    /// bfloat16, as f16.
    Bf16,
    /// i32.
    I32,
}

/// One WMMA instruction's types and K.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// A's element type.
    pub a: In,
    /// B's element type.
    pub b: In,
    /// C's and D's element type.
    pub out: Out,
    /// The summed dimension: 16, or 32 for `v_wmma_i32_16x16x32_iu4`.
    pub k: usize,
}

/// The shape of a WMMA mnemonic ([`SHAPES`]).
pub fn shape(mnemonic: &str) -> Option<Shape> {
    SHAPES.iter().find(|(m, _)| *m == mnemonic).map(|&(_, s)| s)
}

/// Where an element of an operand lives in wave32: register (from the
/// operand's first), lane, and bit offset in the dword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// Register, from the operand's first.
    pub reg: usize,
    /// Lane.
    pub lane: usize,
    /// Bit offset of the element in the dword.
    pub shift: u32,
}

/// `A[row][k]` (or `B[k][row]`) of elements `t` in a K-deep WMMA of
/// `family` (module doc). On GFX11 the lane is the first of the two copies.
pub const fn ab_place(family: GfxFamily, t: In, k_dim: usize, row: usize, k: usize) -> Place {
    let bits = t.bits();
    let per_dword = 32 / bits;
    let shift = (bits * (k % per_dword)) as u32;
    if matches!(family, GfxFamily::Gfx11) {
        return Place {
            reg: k / per_dword,
            lane: row,
            shift,
        };
    }
    let (reg, group) = match bits {
        16 => (2 * (k / 8) + (k / 2) % 2, (k / 4) % 2),
        8 => ((k / 4) % 2, k / 8),
        _ => ((k / 8) % (k_dim / 16), k / (k_dim / 2)),
    };
    Place {
        reg,
        lane: 16 * group + row,
        shift,
    }
}

/// `C/D[i][j]` of a WMMA of `family` with output `out` (module doc); the
/// GFX11 16-bit half is OPSEL's, applied by the caller.
pub const fn cd_place(family: GfxFamily, out: Out, i: usize, j: usize) -> Place {
    let wide = matches!(out, Out::F32 | Out::I32);
    match family {
        GfxFamily::Gfx11 => Place {
            reg: i / 2,
            lane: 16 * (i % 2) + j,
            shift: 0,
        },
        _ if wide => Place {
            reg: i % 8,
            lane: 16 * (i / 8) + j,
            shift: 0,
        },
        _ => Place {
            reg: (i / 2) % 4,
            lane: 16 * (i / 8) + j,
            shift: 16 * (i % 2) as u32,
        },
    }
}

/// Registers of an A/B operand of elements `t` in a K-deep WMMA.
pub fn ab_regs(family: GfxFamily, t: In, k_dim: usize) -> usize {
    match family {
        // A whole row per lane.
        GfxFamily::Gfx11 => k_dim * t.bits() / 32,
        // The row split over the two 16-lane groups.
        _ => k_dim * t.bits() / 64,
    }
}

/// Registers of C and D.
pub fn cd_regs(family: GfxFamily, out: Out) -> usize {
    match (family, out) {
        (GfxFamily::Gfx12, Out::F16 | Out::Bf16) => 4,
        _ => 8,
    }
}

fn refuse(what: &'static str) -> Fault {
    Fault::Unimplemented { mnemonic: what }
}

/// Lanes of a WMMA wave (module doc: the compiler builds ours wave32).
const WAVE: usize = 32;
/// Registers of the largest operand.
const MAX_REGS: usize = 8;

/// Where a form's elements lie, for the executor's loops: one table per
/// form and family, built at compile time from [`ab_place`] and
/// [`cd_place`].
///
/// In every layout (module doc) the 16 rows of A's column k (B's row k)
/// sit in 16 consecutive lanes of one element of one register, and so do
/// the 16 columns of a row of C/D; the tables hold where each begins. The
/// executor converts A and B a column (row) at a time, into 16 values.
pub(crate) struct Layout {
    /// Register, first lane and bit shift of A[0][k] (B[k][0]), by k.
    ab: [(usize, usize, u32); 32],
    /// Register, lane and bit shift of C/D[row][0], by row.
    cd: [(usize, usize, u32); M],
}

impl Layout {
    const fn of(family: GfxFamily, s: &Shape) -> Self {
        assert!(s.a.bits() == s.b.bits() && s.k <= 32);
        let mut l = Layout {
            ab: [(0, 0, 0); 32],
            cd: [(0, 0, 0); M],
        };
        let mut k = 0;
        while k < s.k {
            let p = ab_place(family, s.a, s.k, 0, k);
            l.ab[k] = (p.reg, p.lane, p.shift);
            k += 1;
        }
        let mut row = 0;
        while row < M {
            let p = cd_place(family, s.out, row, 0);
            l.cd[row] = (p.reg, p.lane, p.shift);
            row += 1;
        }
        l
    }

    /// The tables of shape `s` for GFX11 and for GFX12, in that order.
    pub(crate) const fn both(s: &Shape) -> [Self; 2] {
        [Self::of(GfxFamily::Gfx11, s), Self::of(GfxFamily::Gfx12, s)]
    }
}

/// Where C comes from.
#[derive(Clone, Copy)]
enum CSource {
    /// VGPRs from this one.
    Registers(usize),
    /// An inline constant or literal: this word in every register and lane.
    Constant(u32),
}

/// The 32 lanes of a wave32 register from storage lane `base` (0, or 32
/// for the second wave of a pair: [`Wave::lane_base`]).
fn wave32(reg: &Lanes, base: usize) -> &[u32; WAVE] {
    reg[base..]
        .first_chunk()
        .expect("a register holds 64 lanes, a wave's 32 from 0 or 32")
}

/// Column `k` of A (row `k` of B) of element type `t`, from the operand's
/// `regs` at `place` (register, first lane, bit shift: [`Layout`]) for
/// the wave whose lanes start at `base`: its 16 values exactly; integers
/// by `signed`, float halves negated by `neg` (low) and `neg_hi` (high).
/// GFX11's layouts read lanes 0-15 alone (lanes 16-31 hold copies, which
/// [`v_wmma`] checks).
#[inline(always)]
fn column<const F16C: bool>(
    t: In,
    regs: &[Lanes],
    base: usize,
    (reg, lane, shift): (usize, usize, u32),
    signed: bool,
    (neg, neg_hi): (bool, bool),
) -> [f64; M] {
    let words: &[u32; M] = regs[reg][base + lane..]
        .first_chunk()
        .expect("16 lanes of a wave32 in a 64-lane register");
    let mut out = [0f64; M];
    match t {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `F16C` is set only in `multiply_avx2_fma`, which runs
        // only where `avx2_fma` found AVX2 and F16C.
        In::F16 if F16C => unsafe {
            crate::exec::mfma::f16_lanes_to_f64(words, shift == 16, &mut out)
        },
        In::F16 => {
            for (d, &word) in out.iter_mut().zip(words) {
                *d = crate::exec::mfma::f16_to_f64((word >> shift) as u16);
            }
        }
        In::Bf16 => {
            for (d, &word) in out.iter_mut().zip(words) {
                *d = f64::from(bf16_to_f32((word >> shift) as u16));
            }
        }
        In::Fp8 | In::Bf8 => {
            let table = crate::exec::mfma::byte_values(if t == In::Fp8 {
                crate::exec::mfma::In::Fp8Ocp
            } else {
                crate::exec::mfma::In::Bf8Ocp
            });
            for (d, &word) in out.iter_mut().zip(words) {
                *d = table[(word >> shift) as u8 as usize];
            }
        }
        In::Iu8 | In::Iu4 => {
            for (d, &word) in out.iter_mut().zip(words) {
                *d = t.value(word >> shift, signed);
            }
        }
    }
    // NEG (NEG_HI for the high halves) negates float elements.
    let high = shift == 16;
    if !t.integer() && ((high && neg_hi) || (!high && neg)) {
        for d in out.iter_mut() {
            *d = -*d;
        }
    }
    out
}

/// One WMMA read and checked by [`v_wmma`], for [`multiply`].
struct Job<'a> {
    s: &'a Shape,
    layout: &'a Layout,
    /// A's and B's VGPRs (first, count).
    a: (usize, usize),
    b: (usize, usize),
    c: CSource,
    /// D's first VGPR and its register count.
    d: usize,
    count: usize,
    /// Whether A and B are signed (integer forms).
    signed: (bool, bool),
    /// NEG and NEG_HI of A and B (float forms).
    neg_a: (bool, bool),
    neg_b: (bool, bool),
    /// NEG[2] and NEG_HI[2] (C negated, C's absolute value).
    neg_c: (bool, bool),
    clamp: bool,
    /// Bits added to each C/D shift: GFX11's OPSEL[2] half.
    half_shift: u32,
    /// The wave's first storage lane ([`Wave::lane_base`]).
    base: usize,
}

/// D = A × B + C: A and B converted, C copied into D (C may overlap A, B
/// or D), then each pair of rows summed in place over D. Each element is
/// the reference arithmetic: the K products (exact in f64) summed in K
/// order from -0, then C added, rounded once.
#[inline(always)]
fn multiply<const K: usize, const FAST: bool>(w: &mut Wave, job: &Job<'_>) {
    let s = job.s;
    let regs = |(at, count): (usize, usize)| &w.v[at..at + count];
    let a: [[f64; M]; K] = std::array::from_fn(|k| {
        let place = job.layout.ab[k];
        column::<FAST>(s.a, regs(job.a), job.base, place, job.signed.0, job.neg_a)
    });
    let b: [[f64; M]; K] = std::array::from_fn(|k| {
        let place = job.layout.ab[k];
        column::<FAST>(s.b, regs(job.b), job.base, place, job.signed.1, job.neg_b)
    });

    let d = &mut w.v[job.d..job.d + job.count];
    match job.c {
        CSource::Constant(word) => {
            for reg in d.iter_mut() {
                reg[job.base..][..WAVE].fill(word);
            }
        }
        CSource::Registers(at) if at == job.d => {}
        CSource::Registers(at) => {
            let mut c = [[0u32; WAVE]; MAX_REGS];
            for (c, reg) in c.iter_mut().zip(&w.v[at..at + job.count]) {
                *c = *wave32(reg, job.base);
            }
            for (reg, c) in w.v[job.d..job.d + job.count].iter_mut().zip(&c) {
                reg[job.base..][..WAVE].copy_from_slice(c);
            }
        }
    }
    let d = &mut w.v[job.d..job.d + job.count];
    let (layout, hs) = (job.layout, job.half_shift);
    // One loop per output type, so that each element's conversions are
    // straight-line code.
    let (neg, abs) = job.neg_c;
    let sign = |c: f64| {
        let c = if abs { c.abs() } else { c };
        if neg { -c } else { c }
    };
    let half =
        |word: u32, shift: u32, bits: u16| (word & !(0xFFFF << shift)) | u32::from(bits) << shift;
    match s.out {
        Out::F32 => rows::<K, FAST>(&a, &b, layout, d, job.base, hs, |word, _, dot| {
            let c = sign(f64::from(f32::from_bits(word)));
            ((dot + c) as f32).to_bits()
        }),
        Out::F16 => rows::<K, FAST>(&a, &b, layout, d, job.base, hs, |word, shift, dot| {
            let c = sign(f64::from(f16_to_f32((word >> shift) as u16)));
            half(word, shift, f32_to_f16((dot + c) as f32))
        }),
        Out::Bf16 => rows::<K, FAST>(&a, &b, layout, d, job.base, hs, |word, shift, dot| {
            let c = sign(f64::from(bf16_to_f32((word >> shift) as u16)));
            half(word, shift, f32_to_bf16((dot + c) as f32))
        }),
        // Exact in f64 (at most 32 products of 8-bit values plus an
        // i32), then wrapped or (CLAMP) saturated.
        Out::I32 => rows::<K, FAST>(&a, &b, layout, d, job.base, hs, |word, _, dot| {
            let sum = (dot + f64::from(word as i32)) as i64;
            if job.clamp {
                sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
            } else {
                sum as u32
            }
        }),
    }
}

/// The K-deep dot products of A's rows and B's columns (converted, at
/// `layout`'s places), two rows at a time, each finished over D (holding
/// C) by `finish(word, shift, dot)`, which gives the word's new bits.
#[inline(always)]
fn rows<const K: usize, const FAST: bool>(
    a: &[[f64; M]; K],
    b: &[[f64; M]; K],
    layout: &Layout,
    d: &mut [Lanes],
    base: usize,
    half_shift: u32,
    finish: impl Fn(u32, u32, f64) -> u32,
) {
    for row in (0..M).step_by(2) {
        // Two rows share each load of B: 32 sums in flight.
        let mut acc = [[-0.0f64; M]; 2];
        for (a, y) in a.iter().zip(b) {
            let (x0, x1) = (a[row], a[row + 1]);
            let [acc0, acc1] = &mut acc;
            for ((acc0, acc1), &y) in acc0.iter_mut().zip(acc1).zip(y) {
                if FAST {
                    // The product is exact, so fusing rounds the same.
                    *acc0 = x0.mul_add(y, *acc0);
                    *acc1 = x1.mul_add(y, *acc1);
                } else {
                    *acc0 += x0 * y;
                    *acc1 += x1 * y;
                }
            }
        }
        for (r, dots) in acc.iter().enumerate() {
            let (reg, lane, shift) = layout.cd[row + r];
            for (word, &dot) in d[reg][base + lane..][..M].iter_mut().zip(dots) {
                *word = finish(*word, shift + half_shift, dot);
            }
        }
    }
}

/// [`multiply`] for the target's baseline (SSE2 on x86-64).
fn multiply_portable<const K: usize>(w: &mut Wave, job: &Job<'_>) {
    multiply::<K, false>(w, job);
}

/// [`multiply`] compiled for AVX2, FMA3 and F16C, as `mfma`'s: the same
/// bits (exact products and conversions, the same sums in the same order).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn multiply_avx2_fma<const K: usize>(w: &mut Wave, job: &Job<'_>) {
    multiply::<K, true>(w, job);
}

/// `v_wmma_*` of shape `s`, K deep, with `layouts` (GFX11's, GFX12's)
/// (module doc), with [`multiply_avx2_fma`] where the processor has it if
/// `fast`; inlined into each form's executor, where `s` is a constant.
#[inline(always)]
fn v_wmma<const K: usize>(
    w: &mut Wave,
    i: &Inst,
    ctx: &mut Ctx<'_>,
    s: &Shape,
    layouts: &[Layout; 2],
    fast: bool,
) -> R {
    let family = ctx.target.family();
    // A wave32, or one wave of a pair (`crate::pair`: lanes from base).
    if w.size() == WaveSize::W64 {
        return Err(refuse("a wave64 v_wmma_* (ours are wave32)"));
    }
    let base = w.lane_base();
    let m = &i.mods;
    let integer = s.a.integer();
    let eight_bit_float = matches!(s.a, In::Fp8 | In::Bf8);
    if eight_bit_float && (m.neg != 0 || m.neg_hi != 0) {
        return Err(refuse("NEG/NEG_HI on an fp8/bf8 v_wmma_*"));
    }
    if integer && (m.neg & 4 != 0 || m.neg_hi != 0) {
        return Err(refuse("NEG[2]/NEG_HI on an integer v_wmma_*"));
    }
    if !integer && m.clamp {
        return Err(refuse("CLAMP on a float v_wmma_*"));
    }
    // GFX11's 16-bit outputs take OPSEL[2]; nothing else takes OP_SEL.
    let gfx11_half = family == GfxFamily::Gfx11 && matches!(s.out, Out::F16 | Out::Bf16);
    let allowed_op_sel = if gfx11_half { 4 } else { 0 };
    if m.op_sel & !allowed_op_sel != 0 {
        return Err(refuse("OP_SEL on a v_wmma_* that has none"));
    }
    // Faults in order: A, B, C, then D, before anything is written.
    let ab = |n: usize, t: In| match i.src[n] {
        Src::Vgpr(r) => registers(w, r, ab_regs(family, t, s.k), false)
            .map(|regs| ((usize::from(r), regs.len()), regs)),
        _ => Err(refuse("a WMMA A/B operand that is not a VGPR")),
    };
    let (a, b) = (ab(0, s.a)?, ab(1, s.b)?);
    let count = cd_regs(family, s.out);
    let c = match i.src[2] {
        Src::Vgpr(r) => registers(w, r, count, false).map(|_| CSource::Registers(r.into()))?,
        Src::Inline(_) | Src::Literal(_) => {
            let ty = if matches!(s.out, Out::F16 | Out::Bf16) {
                Ty::B16
            } else {
                Ty::B32
            };
            CSource::Constant(w.lanes(i, 2, ty)?[0])
        }
        _ => {
            return Err(refuse(
                "a WMMA C operand that is neither a VGPR nor a constant",
            ));
        }
    };
    w.vreg(i.vdst + count as u16 - 1, false)?;
    // GFX11: lanes l and l + 16 hold the same row, every bit of every
    // register (the elements tile the dwords), so whole halves compare.
    let halves_differ = |regs: &[Lanes]| {
        // One pass of XORs (it vectorises) rather than a compare per
        // register.
        let mut diff = [0u32; 16];
        for r in regs {
            let (lo, hi) = wave32(r, base).split_at(16);
            for ((d, x), y) in diff.iter_mut().zip(lo).zip(hi) {
                *d |= x ^ y;
            }
        }
        diff.iter().any(|&d| d != 0)
    };
    if family == GfxFamily::Gfx11 && (halves_differ(a.1) || halves_differ(b.1)) {
        return Err(refuse(
            "a GFX11 v_wmma_* whose A/B lane copies differ (lanes l and l+16 must hold the same row)",
        ));
    }
    let integer_sign = |bit: u8| integer && m.neg & bit != 0;
    let float_neg = |bit: u8| {
        (
            !integer && m.neg & bit != 0,
            !integer && m.neg_hi & bit != 0,
        )
    };
    let job = Job {
        s,
        layout: &layouts[usize::from(family != GfxFamily::Gfx11)],
        a: a.0,
        b: b.0,
        c,
        d: usize::from(i.vdst),
        count,
        signed: (integer_sign(1), integer_sign(2)),
        neg_a: float_neg(1),
        neg_b: float_neg(2),
        neg_c: (m.neg & 4 != 0, m.neg_hi & 4 != 0),
        clamp: m.clamp,
        half_shift: if gfx11_half && m.op_sel & 4 != 0 {
            16
        } else {
            0
        },
        base,
    };
    #[cfg(target_arch = "x86_64")]
    if fast && crate::exec::mfma::avx2_fma() {
        // SAFETY: avx2_fma() has just found AVX2, FMA3 and F16C on this
        // processor, all that multiply_avx2_fma's target features ask.
        unsafe { multiply_avx2_fma::<K>(w, &job) };
        return Ok(());
    }
    let _ = fast;
    multiply_portable::<K>(w, &job);
    Ok(())
}

/// Defines every form's shape and its executor, one list.
macro_rules! wmma_forms {
    ($($name:literal => $a:ident, $b:ident, $out:ident, $k:literal;)*) => {
        /// Every WMMA form by mnemonic: A's and B's types, the output's, K.
        pub const SHAPES: &[(&str, Shape)] =
            &[$(($name, Shape { a: In::$a, b: In::$b, out: Out::$out, k: $k })),*];
        const TABLE: &[(&str, Exec)] = &[$(($name, {
            fn f(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
                const SHAPE: Shape = Shape { a: In::$a, b: In::$b, out: Out::$out, k: $k };
                const LAYOUTS: [Layout; 2] = Layout::both(&SHAPE);
                v_wmma::<$k>(w, i, ctx, &SHAPE, &LAYOUTS, true)
            }
            f as Exec
        })),*];
        /// [`TABLE`] on the baseline compilation only, for the tests.
        #[cfg(test)]
        const PORTABLE: &[(&str, Exec)] = &[$(($name, {
            fn f(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>) -> R {
                const SHAPE: Shape = Shape { a: In::$a, b: In::$b, out: Out::$out, k: $k };
                const LAYOUTS: [Layout; 2] = Layout::both(&SHAPE);
                v_wmma::<$k>(w, i, ctx, &SHAPE, &LAYOUTS, false)
            }
            f as Exec
        })),*];
    };
}

wmma_forms! {
    "v_wmma_f32_16x16x16_f16" => F16, F16, F32, 16;
    "v_wmma_f32_16x16x16_bf16" => Bf16, Bf16, F32, 16;
    "v_wmma_f16_16x16x16_f16" => F16, F16, F16, 16;
    "v_wmma_bf16_16x16x16_bf16" => Bf16, Bf16, Bf16, 16;
    "v_wmma_i32_16x16x16_iu8" => Iu8, Iu8, I32, 16;
    "v_wmma_i32_16x16x16_iu4" => Iu4, Iu4, I32, 16;
    "v_wmma_i32_16x16x32_iu4" => Iu4, Iu4, I32, 32;
    "v_wmma_f32_16x16x16_fp8_fp8" => Fp8, Fp8, F32, 16;
    "v_wmma_f32_16x16x16_fp8_bf8" => Fp8, Bf8, F32, 16;
    "v_wmma_f32_16x16x16_bf8_fp8" => Bf8, Fp8, F32, 16;
    "v_wmma_f32_16x16x16_bf8_bf8" => Bf8, Bf8, F32, 16;
}

/// Every WMMA executor.
pub const OPS: &[&[(&str, Exec)]] = &[TABLE];

#[cfg(test)]
mod tests {
    //! The executor against the first one written: the same arithmetic
    //! element by element through [`ab_place`] and [`cd_place`], kept
    //! here as the reference the fast loops must match bit for bit.

    use super::*;
    use crate::code_index::CodeIndex;
    use crate::decode::Target;
    use crate::exec::mfma::tests::Rng;
    use crate::lanes::LANES;
    use crate::memory::Memory;

    /// Operand `n`'s registers (a VGPR range, or for C a constant in
    /// every register and lane) into `out`.
    fn operand(w: &Wave, i: &Inst, n: usize, out: &mut [[u32; 32]], ty: Ty) {
        match i.src[n] {
            Src::Vgpr(r) => {
                for (k, reg) in out.iter_mut().enumerate() {
                    reg.copy_from_slice(&w.v[usize::from(r) + k][..32]);
                }
            }
            _ => {
                let c = w.lanes(i, 2, ty).expect("a constant")[0];
                out.fill([c; 32]);
            }
        }
    }

    /// A (or B by column) as `out[row·K + k]`, NEG applied to floats.
    fn gather(
        family: GfxFamily,
        s: &Shape,
        regs: &[[u32; 32]],
        t: In,
        signed: bool,
        lo: bool,
        hi: bool,
    ) -> Vec<f64> {
        let mask = (1u32 << t.bits()) - 1;
        let mut out = vec![0.0; M * s.k];
        for row in 0..M {
            for k in 0..s.k {
                let p = ab_place(family, t, s.k, row, k);
                let v = t.value((regs[p.reg][p.lane] >> p.shift) & mask, signed);
                let high = p.shift == 16;
                let negate = !t.integer() && ((high && hi) || (!high && lo));
                out[row * s.k + k] = if negate { -v } else { v };
            }
        }
        out
    }

    /// The reference WMMA: every element placed one at a time.
    fn reference(w: &mut Wave, i: &Inst, family: GfxFamily, s: &Shape) {
        let m = &i.mods;
        let integer = s.a.integer();
        let mut a_regs = vec![[0u32; 32]; ab_regs(family, s.a, s.k)];
        operand(w, i, 0, &mut a_regs, Ty::B32);
        let mut b_regs = vec![[0u32; 32]; ab_regs(family, s.b, s.k)];
        operand(w, i, 1, &mut b_regs, Ty::B32);
        let half = matches!(s.out, Out::F16 | Out::Bf16);
        let mut c_regs = vec![[0u32; 32]; cd_regs(family, s.out)];
        operand(w, i, 2, &mut c_regs, if half { Ty::B16 } else { Ty::B32 });
        let neg = |bit: u8| (m.neg & bit != 0, m.neg_hi & bit != 0);
        let (na, nb) = (neg(1), neg(2));
        let a = gather(family, s, &a_regs, s.a, m.neg & 1 != 0, na.0, na.1);
        let b = gather(family, s, &b_regs, s.b, m.neg & 2 != 0, nb.0, nb.1);
        let half_shift = if family == GfxFamily::Gfx11 && half && m.op_sel & 4 != 0 {
            16
        } else {
            0
        };
        let mut d_regs = c_regs.clone();
        for row in 0..M {
            for col in 0..M {
                let dot: f64 = (0..s.k).map(|k| a[row * s.k + k] * b[col * s.k + k]).sum();
                let p = cd_place(family, s.out, row, col);
                let shift = p.shift + half_shift;
                let c_raw = c_regs[p.reg][p.lane] >> shift;
                let mut c = match s.out {
                    Out::F32 => f64::from(f32::from_bits(c_raw)),
                    Out::F16 => f64::from(f16_to_f32(c_raw as u16)),
                    Out::Bf16 => f64::from(bf16_to_f32(c_raw as u16)),
                    Out::I32 => f64::from(c_raw as i32),
                };
                if !integer {
                    if m.neg_hi & 4 != 0 {
                        c = c.abs();
                    }
                    if m.neg & 4 != 0 {
                        c = -c;
                    }
                }
                let sum = dot + c;
                let bits = match s.out {
                    Out::F32 => (sum as f32).to_bits(),
                    Out::F16 => u32::from(f32_to_f16(sum as f32)),
                    Out::Bf16 => u32::from(f32_to_bf16(sum as f32)),
                    Out::I32 if m.clamp => {
                        (sum as i64).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
                    }
                    Out::I32 => sum as i64 as u32,
                };
                let slot = &mut d_regs[p.reg][p.lane];
                *slot = if half {
                    (*slot & !(0xFFFF << shift)) | (bits & 0xFFFF) << shift
                } else {
                    bits
                };
            }
        }
        for (k, regs) in d_regs.iter().enumerate() {
            w.v[usize::from(i.vdst) + k][..32].copy_from_slice(regs);
        }
    }

    /// Whether two D words agree: the same bits, or NaN in both (which
    /// NaN an operation returns is the host's choice in both executors);
    /// 16-bit outputs half by half.
    fn agree(out: Out, x: u32, y: u32) -> bool {
        let nan16 = |v: u32, exp: u32| v & exp == exp && v & 0xFFFF & !exp & 0x7FFF != 0;
        let half = |exp: u32| {
            [0, 16].iter().all(|&at| {
                let (x, y) = (x >> at & 0xFFFF, y >> at & 0xFFFF);
                x == y || (nan16(x, exp) && nan16(y, exp))
            })
        };
        match out {
            Out::F32 => x == y || (f32::from_bits(x).is_nan() && f32::from_bits(y).is_nan()),
            Out::F16 => half(0x7C00),
            Out::Bf16 => half(0x7F80),
            Out::I32 => x == y,
        }
    }

    #[test]
    fn every_form_matches_the_reference_bit_for_bit_on_both_families() {
        // v_wmma_f32_16x16x16_f16 v[16:23], v[0:7], v[8:15], v[16:23] on
        // gfx1100; each case patches the operands, modifiers and name.
        let word = [0xCC40_4010, 0x1C42_1100];
        let mem = Memory::new();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut cases = 0;
        for (target, family) in [
            (Target::Gfx1100, GfxFamily::Gfx11),
            (Target::Gfx1201, GfxFamily::Gfx12),
        ] {
            let base = crate::decode::decode(&word, Target::Gfx1100).expect("decodes");
            for &(name, exec) in TABLE.iter().chain(PORTABLE) {
                let s = shape(name).expect("a shape");
                if family == GfxFamily::Gfx11 && matches!(s.a, In::Fp8 | In::Bf8) {
                    continue;
                }
                let (ar, br) = (
                    ab_regs(family, s.a, s.k) as u16,
                    ab_regs(family, s.b, s.k) as u16,
                );
                // D on C, D apart from C, D over part of C, D over A, C a
                // constant (1.0).
                let placements = [
                    (40, Src::Vgpr(40)),
                    (60, Src::Vgpr(40)),
                    (40, Src::Vgpr(44)),
                    (0, Src::Vgpr(40)),
                    (40, Src::Inline(242)),
                ];
                for (n, &(d, c)) in placements.iter().enumerate() {
                    for modifiers in 0..8u8 {
                        let mut w = Wave::new(96, 0);
                        w.set_size(WaveSize::W32);
                        for reg in w.v.iter_mut() {
                            for l in reg.iter_mut() {
                                *l = rng.next();
                            }
                        }
                        if family == GfxFamily::Gfx11 {
                            // Lanes l and l + 16 hold the same row.
                            for r in 0..ar.max(br) {
                                for at in [0, 20] {
                                    let reg = &mut w.v[usize::from(at + r)];
                                    let (lo, hi) = reg.split_at_mut(16);
                                    hi[..16].copy_from_slice(lo);
                                }
                            }
                        }
                        let mut i = base;
                        i.mnemonic = name;
                        i.src = [Src::Vgpr(0), Src::Vgpr(20), c];
                        i.vdst = d;
                        let integer = s.a.integer();
                        let fp8 = matches!(s.a, In::Fp8 | In::Bf8);
                        i.mods.neg = if fp8 {
                            0
                        } else if integer {
                            modifiers & 3
                        } else {
                            modifiers
                        };
                        i.mods.neg_hi = if fp8 || integer {
                            0
                        } else {
                            modifiers.rotate_left(1) & 7
                        };
                        i.mods.clamp = integer && modifiers & 4 != 0;
                        i.mods.op_sel = if family == GfxFamily::Gfx11
                            && matches!(s.out, Out::F16 | Out::Bf16)
                        {
                            modifiers & 4
                        } else {
                            0
                        };
                        let mut want = w.clone();
                        reference(&mut want, &i, family, &s);
                        let mut events = Vec::new();
                        let mut ctx = Ctx {
                            code: &CodeIndex::default(),
                            mem: &mem,
                            lds: &mut [],
                            target,
                            pc: 0,
                            events: &mut events,
                        };
                        exec(&mut w, &i, &mut ctx).expect("runs");
                        for r in 0..96 {
                            for l in 0..LANES {
                                assert!(
                                    agree(s.out, w.v[r][l], want.v[r][l]),
                                    "{name} on {target:?}, placement {n}, modifiers {modifiers}: v{r} lane {l} {:#x}, want {:#x}",
                                    w.v[r][l],
                                    want.v[r][l]
                                );
                            }
                        }
                        cases += 1;
                    }
                }
            }
        }
        assert!(cases > 600, "{cases} cases");
    }
}
