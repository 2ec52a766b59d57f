//! gfx950's `f8f6f4` matrix fused multiply-adds, plain and block-scaled:
//! `v_mfma_f32_16x16x128_f8f6f4`, `v_mfma_f32_32x32x64_f8f6f4` and their
//! `v_mfma_scale_*` forms, the OCP Microscaling (MX) formats of CDNA4.
//!
//! CDNA4 ISA, chapter 7 ("Matrix Arithmetic Instructions": §7.1.4 packing,
//! §7.1.5 the F8F6F4 rows, §7.1.5.1 register layouts, §7.2 block scaling,
//! §7.3 Table 30 the formats); the 128-bit encoding of the scaled forms is
//! decoded in `decode::format::scaled_mfma`.
//!
//! ```text
//!   one wave: D (M×M, f32) = C + Σ_b  2^(sa[i][b]−127) · 2^(sb[b][j]−127)
//!                                    · Σ_{k in block b} A[i][k] · B[k][j]
//!   M×M×K = 16×16×128 (4 K-blocks of 32) or 32×32×64 (2 K-blocks)
//!
//!   A's format from CBSZ, B's from BLGP (no broadcast in these forms):
//!     0 FP8 E4M3   1 BF8 E5M2   2 FP6 E2M3   3 BF6 E3M2   4 FP4 E2M1
//!     32 elements per lane in 8, 8, 6, 6, 4 registers, element e at bits
//!     [w·e + w−1 : w·e] of the registers read as one little-endian value
//!     (FP6 elements cross register boundaries).
//!
//!   A[i][k] (B[k][j] alike, j for i), G = 64/M lane groups:
//!     FP8/BF8:  two halves of K, each spread over the groups by 16:
//!               k = h·K/2 + 16·g + e  →  lane i + M·g, element 16·h + e
//!     FP6/FP4:  k = 32·g + e          →  lane i + M·g, element e
//!
//!   scales (scaled forms only): one 32-bit VGPR per lane for A and one
//!   for B; lane i + M·b holds row i's (column j's) scale of K-block b in
//!   the byte OP_SEL/OP_SEL_HI select (E8M0: 2^(s−127), 0xFF NaN). The
//!   plain forms scale by 1 (ISA §7.1.5: ABID[0] = 0 "forces all scales
//!   into the ALU as 1.0f").
//!
//!   C/D[i][j] as the single-block MFMAs (`mfma::Shape::cd_slot`):
//!     M = 16: register i%4, lane 16·(i/4) + j
//!     M = 32: register 4·(i/8) + i%4, lane 32·((i/4)%2) + j
//! ```
//!
//! Arithmetic: every element is exact in f64, and so is every product
//! and each block's sum of 32 (at most 2·4 + 5 significand bits over a
//! range of 2^64, BF8's widest); each block's sum is scaled by a power
//! of two and added to C in block order in f64, then the result rounded
//! once to f32 — the ISA's "scales are applied after the normal dot
//! product prior to output/accumulation" (§7.2), with RNE and denormals
//! kept as §7.1.5 fixes them. NaN and infinite elements (FP8's S.1111.111,
//! BF8's exponent 31) and a NaN scale propagate as f64 arithmetic does.
//! EXEC is ignored (§7.1.5: all lanes).
//!
//! Refused by name: formats 5 to 7 (undefined in §7.1.5), A or B not in
//! registers (§7.1.5: "Src0/1 must be VGPR or AccVGPR"), and a scale that
//! is not a VGPR: LLVM rejects those as invalid operands (its
//! `VOP3PInstructions.td` notes the hardware reads bits 30:23 of an SGPR
//! or constant scale, which the ISA text does not confirm).

use crate::decode::inst::{Mai, flag};
use crate::decode::{Ext, Inst, Src};
use crate::exec::ctx::{Ctx, Exec};
use crate::exec::mfma::{CSource, Shape, c_into_d, constant, registers};
use crate::fault::Fault;
use crate::float::{
    bf6_e3m2_to_f32, bf8_ocp_to_f32, e8m0_to_f64, fp4_e2m1_to_f32, fp6_e2m3_to_f32, fp8_ocp_to_f32,
};
use crate::lanes::{LANES, Lanes};
use crate::wave::Wave;

type R = Result<(), Fault>;

/// An element format of A or B, by its CBSZ/BLGP code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// 0: OCP FP8 E4M3 (E4M3FN).
    Fp8,
    /// 1: OCP BF8 E5M2.
    Bf8,
    /// 2: FP6 E2M3.
    Fp6,
    /// 3: BF6 E3M2.
    Bf6,
    /// 4: FP4 E2M1.
    Fp4,
}

impl Format {
    /// The format of a CBSZ (A) or BLGP (B) code; 5 to 7 are undefined.
    pub const fn of(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::Fp8,
            1 => Self::Bf8,
            2 => Self::Fp6,
            3 => Self::Bf6,
            4 => Self::Fp4,
            _ => return None,
        })
    }

    /// Bits per element.
    pub const fn bits(self) -> usize {
        match self {
            Self::Fp8 | Self::Bf8 => 8,
            Self::Fp6 | Self::Bf6 => 6,
            Self::Fp4 => 4,
        }
    }

    /// Registers of an operand: 32 elements per lane.
    pub const fn regs(self) -> usize {
        32 * self.bits() / 32
    }

    /// The value of a raw element (its low `bits()` bits), exactly.
    pub fn value(self, raw: u8) -> f64 {
        f64::from(match self {
            Self::Fp8 => fp8_ocp_to_f32(raw),
            Self::Bf8 => bf8_ocp_to_f32(raw),
            Self::Fp6 => fp6_e2m3_to_f32(raw),
            Self::Bf6 => bf6_e3m2_to_f32(raw),
            Self::Fp4 => fp4_e2m1_to_f32(raw),
        })
    }
}

/// One of the four instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// Rows of A and D, columns of B and D.
    pub m: usize,
    /// The summed dimension.
    pub k: usize,
    /// A `v_mfma_scale_*` form, with E8M0 scales per 32 elements of K.
    pub scaled: bool,
}

/// Elements of K that share one scale (OCP MX block size; ISA §7.2).
pub const BLOCK: usize = 32;

impl Op {
    /// The instruction of a mnemonic.
    pub fn of(mnemonic: &str) -> Option<Self> {
        let (m, k) = if mnemonic.ends_with("16x16x128_f8f6f4") {
            (16, 128)
        } else if mnemonic.ends_with("32x32x64_f8f6f4") {
            (32, 64)
        } else {
            return None;
        };
        Some(Self {
            m,
            k,
            scaled: mnemonic.starts_with("v_mfma_scale_"),
        })
    }

    /// Registers of C and D.
    pub const fn cd_regs(&self) -> usize {
        self.m * self.m / LANES
    }

    /// Lane and element of `A[row][k]` (or `B[k][row]`) in format `f`.
    pub const fn ab_slot(&self, f: Format, row: usize, k: usize) -> (usize, usize) {
        match f {
            Format::Fp8 | Format::Bf8 => {
                let half = self.k / 2;
                let (h, k) = (k / half, k % half);
                (row + self.m * (k / 16), 16 * h + k % 16)
            }
            _ => (row + self.m * (k / BLOCK), k % BLOCK),
        }
    }

    /// The lane holding row `row`'s (column's) scale of K-block `block`.
    pub const fn scale_lane(&self, row: usize, block: usize) -> usize {
        row + self.m * block
    }

    /// Register and lane of `C/D[i][j]`.
    pub const fn cd_slot(&self, i: usize, j: usize) -> (usize, usize) {
        Shape {
            m: self.m,
            k: self.k,
            blocks: 1,
            a: crate::exec::mfma::In::F32,
            b: crate::exec::mfma::In::F32,
            blgp_is_neg: false,
        }
        .cd_slot(i, j, 0)
    }
}

/// Element `e` (of `bits`) of `lane` in `regs`, read as one little-endian
/// value per lane.
fn element(regs: &[Lanes], lane: usize, e: usize, bits: usize) -> u8 {
    let bit = e * bits;
    let lo = u64::from(regs[bit / 32][lane]);
    let hi = regs.get(bit / 32 + 1).map_or(0, |r| u64::from(r[lane]));
    ((lo | hi << 32) >> (bit % 32)) as u8 & ((1u16 << bits) - 1) as u8
}

/// The registers of A or B: a VGPR or AGPR tuple.
fn operand(w: &Wave, src: Src, count: usize, mnemonic: &'static str) -> Result<Vec<Lanes>, Fault> {
    let (r, acc) = match src {
        Src::Vgpr(r) => (r, false),
        Src::Agpr(r) => (r, true),
        _ => {
            return Err(Fault::UnimplementedCase {
                mnemonic,
                case: "an A or B operand that is not a register (CDNA4 ISA §7.1.5)",
            });
        }
    };
    Ok(registers(w, r, count, acc)?.to_vec())
}

/// The scale of every lane of the scale operand `src`, byte `sel`, as
/// 2^(s−127).
fn scales(w: &Wave, src: Src, sel: u8, mnemonic: &'static str) -> Result<[f64; LANES], Fault> {
    let Src::Vgpr(r) = src else {
        return Err(Fault::UnimplementedCase {
            mnemonic,
            case: "a scale operand that is not a VGPR (LLVM: invalid operand)",
        });
    };
    let reg = w.vreg(r, false)?;
    Ok(std::array::from_fn(|l| {
        e8m0_to_f64((reg[l] >> (8 * u32::from(sel & 3))) as u8)
    }))
}

/// Runs one of the four instructions.
fn run(w: &mut Wave, i: &Inst, op: Op) -> R {
    let m = i.mnemonic;
    let Ext::Mai(mai) = i.ext else {
        return Err(Fault::Unimplemented {
            mnemonic: "an MFMA without its MAI fields",
        });
    };
    let Mai { cbsz, blgp, .. } = mai;
    let format = |code| {
        Format::of(code).ok_or(Fault::UnimplementedCase {
            mnemonic: m,
            case: "an f8f6f4 format code 5 to 7 (CDNA4 ISA §7.1.5 defines 0 to 4)",
        })
    };
    let (fa, fb) = (format(cbsz)?, format(blgp)?);
    // Faults in operand order, before anything is written.
    let a = operand(w, i.src[0], fa.regs(), m)?;
    let b = operand(w, i.src[1], fb.regs(), m)?;
    let count = op.cd_regs();
    let c = match i.src[2] {
        Src::Vgpr(r) | Src::Agpr(r) => {
            let acc = matches!(i.src[2], Src::Agpr(_));
            registers(w, r, count, acc)?;
            CSource::Registers {
                at: usize::from(r),
                acc,
            }
        }
        src => CSource::Constant(constant(w, src, false)?),
    };
    let (sa, sb) = if op.scaled {
        let [(a, a_byte), (b, b_byte)] = i.scale_sources();
        (scales(w, a, a_byte, m)?, scales(w, b, b_byte, m)?)
    } else {
        ([1.0; LANES], [1.0; LANES])
    };
    let acc = i.flags & flag::ACC_CD != 0;
    w.vreg(i.vdst + count as u16 - 1, acc)?;

    // A as [row][k], B as [col][k], so each dot product is two slices.
    let dense = |regs: &[Lanes], f: Format| -> Vec<f64> {
        (0..op.m * op.k)
            .map(|n| {
                let (lane, e) = op.ab_slot(f, n / op.k, n % op.k);
                f.value(element(regs, lane, e, f.bits()))
            })
            .collect()
    };
    let (a, b) = (dense(&a, fa), dense(&b, fb));
    let d = c_into_d(w, c, usize::from(i.vdst), count, acc);
    for row in 0..op.m {
        let a_row = &a[row * op.k..][..op.k];
        for col in 0..op.m {
            let b_col = &b[col * op.k..][..op.k];
            let (reg, lane) = op.cd_slot(row, col);
            let mut sum = f64::from(f32::from_bits(d[reg][lane]));
            for blk in 0..op.k / BLOCK {
                let ks = blk * BLOCK..(blk + 1) * BLOCK;
                let dot: f64 = a_row[ks.clone()]
                    .iter()
                    .zip(&b_col[ks])
                    .map(|(x, y)| x * y)
                    .sum();
                let scale = sa[op.scale_lane(row, blk)] * sb[op.scale_lane(col, blk)];
                sum += scale * dot;
            }
            d[reg][lane] = (sum as f32).to_bits();
        }
    }
    Ok(())
}

/// Defines one executor per mnemonic.
macro_rules! ops {
    ($($name:ident),*) => {
        $(fn $name(w: &mut Wave, i: &Inst, _: &mut Ctx<'_>) -> R {
            match Op::of(stringify!($name)) {
                Some(op) => run(w, i, op),
                None => Err(Fault::Unimplemented { mnemonic: i.mnemonic }),
            }
        })*
        const TABLE: &[(&str, Exec)] = &[$((stringify!($name), $name as Exec)),*];
    };
}

ops!(
    v_mfma_f32_16x16x128_f8f6f4,
    v_mfma_f32_32x32x64_f8f6f4,
    v_mfma_scale_f32_16x16x128_f8f6f4,
    v_mfma_scale_f32_32x32x64_f8f6f4
);

/// The four executors.
pub const OPS: &[&[(&str, Exec)]] = &[TABLE];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (lane, element) slot of A holds exactly one A[row][k], and
    /// rows sit in consecutive lanes, for each shape and format.
    #[test]
    fn every_operand_slot_holds_one_element() {
        for name in ["v_mfma_f32_16x16x128_f8f6f4", "v_mfma_f32_32x32x64_f8f6f4"] {
            let op = Op::of(name).unwrap();
            for f in (0..5).filter_map(Format::of) {
                let mut seen = vec![false; LANES * 32];
                for row in 0..op.m {
                    for k in 0..op.k {
                        let (lane, e) = op.ab_slot(f, row, k);
                        assert!(e < 32 && lane % op.m == row, "{name} {f:?}");
                        assert!(!std::mem::replace(&mut seen[lane * 32 + e], true));
                    }
                }
                assert!(seen.iter().all(|&s| s), "{name} {f:?}");
            }
        }
    }

    /// The ISA's worked examples (§7.1.5.1 tables; the ROCm blog's
    /// 32x32x64 loads): FP8 lane 16 of 16x16x128 holds k = 16..31 then
    /// 80..95; FP4 lane 32 of 32x32x64 holds k = 32..63.
    #[test]
    fn layouts_follow_the_isa_tables() {
        let op = Op::of("v_mfma_f32_16x16x128_f8f6f4").unwrap();
        assert_eq!(op.ab_slot(Format::Fp8, 0, 16), (16, 0));
        assert_eq!(op.ab_slot(Format::Fp8, 0, 80), (16, 16));
        assert_eq!(op.ab_slot(Format::Fp8, 3, 127), (51, 31));
        assert_eq!(op.ab_slot(Format::Fp6, 0, 40), (16, 8));
        assert_eq!(op.scale_lane(5, 3), 53);
        let op = Op::of("v_mfma_scale_f32_32x32x64_f8f6f4").unwrap();
        assert!(op.scaled);
        assert_eq!(op.ab_slot(Format::Fp4, 0, 32), (32, 0));
        assert_eq!(op.ab_slot(Format::Bf8, 1, 40), (1, 24));
        assert_eq!(op.cd_regs(), 16);
    }

    /// FP6 elements straddle registers: element 5 is bits 35:30.
    #[test]
    fn six_bit_elements_cross_register_boundaries() {
        let mut regs = vec![[0u32; LANES]; 6];
        regs[0][0] = 0b11 << 30;
        regs[1][0] = 0b1010;
        assert_eq!(element(&regs, 0, 5, 6), 0b10_1011);
        assert_eq!(element(&regs, 0, 31, 6), 0);
    }
}
