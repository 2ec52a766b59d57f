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
use crate::fault::Fault;
use crate::float::{
    bf8_ocp_to_f32, bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, fp8_ocp_to_f32,
};
use crate::lanes::WaveSize;
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
pub fn ab_place(family: GfxFamily, t: In, k_dim: usize, row: usize, k: usize) -> Place {
    let bits = t.bits();
    let per_dword = 32 / bits;
    let shift = (bits * (k % per_dword)) as u32;
    if family == GfxFamily::Gfx11 {
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
pub fn cd_place(family: GfxFamily, out: Out, i: usize, j: usize) -> Place {
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

/// Registers of the largest operand.
const MAX_REGS: usize = 8;
/// Elements of the largest A or B (16 × K, K at most 32).
const MAX_AB: usize = M * 32;

/// Operand `n`'s `regs` registers (a VGPR range; C may be an inline
/// constant or literal, the same in every register and lane) into `out`.
fn operand(w: &Wave, i: &Inst, n: usize, out: &mut [[u32; 32]], ty: Ty) -> R {
    match i.src[n] {
        Src::Vgpr(r) => {
            for (k, reg) in out.iter_mut().enumerate() {
                reg.copy_from_slice(&w.vreg(r + k as u16, false)?[..32]);
            }
        }
        Src::Inline(_) | Src::Literal(_) if n == 2 => {
            let c = w.lanes(i, 2, ty)?[0];
            out.fill([c; 32]);
        }
        _ => return Err(refuse("a WMMA A/B operand that is not a VGPR")),
    }
    Ok(())
}

/// A or B gathered from its registers into `out`, `out[row·K + k]` for A
/// (`row` = B's column), each element's value exactly, NEG applied to
/// floats; checks GFX11's lane copies.
#[inline(always)]
fn gather(
    family: GfxFamily,
    s: &Shape,
    regs: &[[u32; 32]],
    t: In,
    signed: bool,
    (neg, neg_hi, which): (u8, u8, u8),
    out: &mut [f64],
) -> R {
    // GFX11: lanes l and l + 16 hold the same row, every bit of every
    // register (the elements tile the dwords), so whole halves compare.
    if family == GfxFamily::Gfx11 && regs.iter().any(|r| r[..16] != r[16..]) {
        return Err(refuse(
            "a GFX11 v_wmma_* whose A/B lane copies differ (lanes l and l+16 must hold the same row)",
        ));
    }
    let mask = (1u32 << t.bits()) - 1;
    for row in 0..M {
        for k in 0..s.k {
            let p = ab_place(family, t, s.k, row, k);
            out[row * s.k + k] = t.value((regs[p.reg][p.lane] >> p.shift) & mask, signed);
        }
    }
    // NEG (NEG_HI for the high halves) negates float elements; rarely set.
    let (lo, hi) = (neg & which != 0, neg_hi & which != 0);
    if !t.integer() && (lo || hi) {
        for row in 0..M {
            for k in 0..s.k {
                let high = ab_place(family, t, s.k, row, k).shift == 16;
                if (high && hi) || (!high && lo) {
                    out[row * s.k + k] = -out[row * s.k + k];
                }
            }
        }
    }
    Ok(())
}

/// `v_wmma_*` of shape `s` (module doc); inlined into each form's
/// executor, where `s` is a constant.
#[inline(always)]
fn v_wmma(w: &mut Wave, i: &Inst, ctx: &mut Ctx<'_>, s: &Shape) -> R {
    let family = ctx.target.family();
    if w.size() != WaveSize::W32 {
        return Err(refuse("a wave64 v_wmma_* (ours are wave32)"));
    }
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
    // Registers on the stack: an instruction allocates nothing.
    let mut a_regs = [[0u32; 32]; MAX_REGS];
    let a_regs = &mut a_regs[..ab_regs(family, s.a, s.k)];
    operand(w, i, 0, a_regs, Ty::B32)?;
    let mut b_regs = [[0u32; 32]; MAX_REGS];
    let b_regs = &mut b_regs[..ab_regs(family, s.b, s.k)];
    operand(w, i, 1, b_regs, Ty::B32)?;
    let c_ty = if matches!(s.out, Out::F16 | Out::Bf16) {
        Ty::B16
    } else {
        Ty::B32
    };
    let mut c_regs = [[0u32; 32]; MAX_REGS];
    let c_regs = &mut c_regs[..cd_regs(family, s.out)];
    operand(w, i, 2, c_regs, c_ty)?;

    // A row-major (16 × K), B by column (B[k][j] at j·K + k).
    let mods = |which| (m.neg, m.neg_hi, which);
    let mut a = [0f64; MAX_AB];
    gather(family, s, a_regs, s.a, m.neg & 1 != 0, mods(1), &mut a)?;
    let mut b = [0f64; MAX_AB];
    gather(family, s, b_regs, s.b, m.neg & 2 != 0, mods(2), &mut b)?;

    let half_shift = if gfx11_half && m.op_sel & 4 != 0 {
        16
    } else {
        0
    };
    let mut d_regs = [[0u32; 32]; MAX_REGS];
    let d_regs = &mut d_regs[..c_regs.len()];
    d_regs.copy_from_slice(c_regs);
    let kk = s.k;
    // B by row of K, its 16 columns side by side.
    let mut bt = [0f64; MAX_AB];
    for (k, bt) in bt.as_chunks_mut::<M>().0.iter_mut().take(kk).enumerate() {
        for (j, v) in bt.iter_mut().enumerate() {
            *v = b[j * kk + k];
        }
    }
    for row in 0..M {
        // Sixteen sums side by side, each in K order from -0 as an
        // iterator's sum is (the products are exact in f64).
        let mut dots = [-0.0f64; M];
        for (&x, bt) in a[row * kk..][..kk].iter().zip(bt.as_chunks::<M>().0) {
            for (dot, y) in dots.iter_mut().zip(bt) {
                *dot += x * y;
            }
        }
        for (col, dot) in dots.into_iter().enumerate() {
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
                // Exact in f64 (at most 32 products of 8-bit values plus
                // an i32), then wrapped or saturated.
                Out::I32 if m.clamp => {
                    (sum as i64).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
                }
                Out::I32 => sum as i64 as u32,
            };
            let slot = &mut d_regs[p.reg][p.lane];
            *slot = if matches!(s.out, Out::F16 | Out::Bf16) {
                (*slot & !(0xFFFF << shift)) | (bits & 0xFFFF) << shift
            } else {
                bits
            };
        }
    }
    // D's registers whole: every element was placed above, and a GFX11
    // 16-bit output's other half keeps C's bits (copied in `d_regs`).
    for (k, regs) in d_regs.iter().enumerate() {
        let lanes = w.vreg_mut(i.vdst + k as u16, false)?;
        lanes[..32].copy_from_slice(regs);
    }
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
                v_wmma(w, i, ctx, &SHAPE)
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
