//! MFMA on the simulator, end to end: the kernels of
//! tests/kernels/src/mfma.rs load A, B and C from memory, run one
//! `v_mfma_*` with fixed CBSZ/ABID/BLGP and store D; this test runs them
//! for gfx90a, gfx942 and gfx950 on random non-zero inputs and checks every D
//! register of every lane against a scalar model of the documented layout.
//! The forms every target has run on each ([`CASES`]); the others
//! ([`GFX942_CASES`], [`GFX940_CASES`] and [`FP8_CASES`] of gfx942 and gfx950,
//! [`GFX950_CASES`], [`GFX90A_CASES`]) run where the kernel crate builds
//! them; gfx950's `f8f6f4` kernels with OCP Microscaling block scales
//! ([`MX_CASES`]) have a model of their own, from the CDNA4 ISA.
//!
//! The model is written here from AMD's matrix instruction calculator
//! (github.com/ROCm/amd_matrix_instruction_calculator, `--detail-
//! instruction`, and its `_get_cbsz_abid_transformed_block` and
//! `_get_blgp_transformed_lane`), not from the simulator's helpers: it
//! places each matrix element in its (register, lane) slot, applies the
//! modifiers, multiplies in f64 (exact for every input type here) and
//! compares. Integer results must match exactly, f32 results within a few
//! f32 rounding steps of the sum's magnitude (the hardware's accumulation
//! order is not documented bit for bit), f64 results within a few f64
//! steps.
//!
//! gfx942's own types: xf32 inputs are taken as full f32, the reading
//! sim/src/exec/mfma.rs takes from MMA-Sim (arXiv:2511.10909; not checked
//! here against hardware, which if it rounded xf32 inputs would need a
//! wider tolerance than f32's); fp8 and bf8 are the FNUZ encodings CDNA3
//! uses on gfx942 and the OCP ones (E4M3FN, E5M2) on gfx950, the same
//! kernels read both ways (decoded here, see [`eight_bit`]); and on
//! gfx942 an f64 MFMA's BLGP
//! field negates A, B and C (bits 0, 1 and 2, CDNA3 ISA "Matrix
//! Arithmetic Instructions"; the calculator's `negate` handling) instead
//! of choosing B lanes.
//!
//! D is poisoned before each run and has a poisoned guard after it.

use aqueduct_sim::{Gpu, Program, Target};
use aqueduct_tests::{Rng, Sim, TEST_KERNELS, Word, simulated, upload};

const LANES: usize = 64;

/// Element type of the A and B operands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum In {
    F32,
    /// gfx942's xf32, stored as f32.
    Xf32,
    F16,
    Bf16,
    I8,
    /// gfx942's FP8: E4M3 FNUZ.
    Fp8,
    /// gfx942's BF8: E5M2 FNUZ.
    Bf8,
    /// gfx950's FP8: OCP E4M3FN.
    Fp8Ocp,
    /// gfx950's BF8: OCP E5M2.
    Bf8Ocp,
    F64,
}

/// The value of a finite 8-bit float with `man_bits` of mantissa and
/// exponent bias `bias`: FNUZ ("finite, no negative zero": 0x80 is the
/// only NaN and there are no infinities; CDNA3 ISA, FP8/BF8 data formats)
/// or OCP (OCP 8-bit Floating Point Specification: E4M3FN's NaNs are
/// S.1111.111, E5M2's exponent 31 is infinity or NaN). FNUZ's biases are
/// one more than OCP's (8 and 16 against 7 and 15). [`In::random`] never
/// draws a NaN or an infinity.
fn eight_bit(raw: u8, man_bits: u32, bias: i32) -> f64 {
    let man = f64::from(raw & ((1 << man_bits) - 1));
    let exp = i32::from((raw & 0x7F) >> man_bits);
    let scale = f64::from(1u32 << man_bits);
    let mag = if exp == 0 {
        man / scale * 2f64.powi(1 - bias)
    } else {
        (1.0 + man / scale) * 2f64.powi(exp - bias)
    };
    if raw & 0x80 != 0 { -mag } else { mag }
}

/// E4M3 FNUZ: three mantissa bits, bias 8.
const FP8: (u32, i32) = (3, 8);
/// E5M2 FNUZ: two mantissa bits, bias 16.
const BF8: (u32, i32) = (2, 16);
/// OCP E4M3FN: three mantissa bits, bias 7.
const FP8_OCP: (u32, i32) = (3, 7);
/// OCP E5M2: two mantissa bits, bias 15.
const BF8_OCP: (u32, i32) = (2, 15);

impl In {
    const fn bytes(self) -> usize {
        match self {
            In::F32 | In::Xf32 => 4,
            In::F16 | In::Bf16 => 2,
            In::I8 | In::Fp8 | In::Bf8 | In::Fp8Ocp | In::Bf8Ocp => 1,
            In::F64 => 8,
        }
    }

    /// The exact value of a raw element.
    fn value(self, raw: u64) -> f64 {
        match self {
            In::F32 | In::Xf32 => f64::from(f32::from_bits(raw as u32)),
            In::F16 => {
                // Only normal halves are generated (see `random`).
                let (sign, exp, man) = (raw >> 15 & 1, (raw >> 10 & 0x1F) as i32, raw & 0x3FF);
                let mag = (1.0 + man as f64 / 1024.0) * 2f64.powi(exp - 15);
                if sign == 1 { -mag } else { mag }
            }
            In::Bf16 => f64::from(f32::from_bits((raw as u32) << 16)),
            In::I8 => f64::from(raw as u8 as i8),
            In::Fp8 => eight_bit(raw as u8, FP8.0, FP8.1),
            In::Bf8 => eight_bit(raw as u8, BF8.0, BF8.1),
            In::Fp8Ocp => eight_bit(raw as u8, FP8_OCP.0, FP8_OCP.1),
            In::Bf8Ocp => eight_bit(raw as u8, BF8_OCP.0, BF8_OCP.1),
            In::F64 => f64::from_bits(raw),
        }
    }

    /// A random non-zero element, of magnitude in [0.25, 2) for the wider
    /// floats (so sums neither overflow nor lose everything to
    /// cancellation); any byte but zero and the NaN for fp8/bf8, whose
    /// whole range (subnormals to 240 or 57344) an f32 sum holds.
    fn random(self, rng: &mut Rng) -> u64 {
        let r = rng.next_u64();
        let sign = r >> 63;
        match self {
            In::F32 | In::Xf32 => sign << 31 | (125 + r % 3) << 23 | (r >> 8) & 0x7F_FFFF,
            In::F16 => sign << 15 | (13 + r % 3) << 10 | (r >> 8) & 0x3FF,
            In::Bf16 => sign << 15 | (125 + r % 3) << 7 | (r >> 8) & 0x7F,
            In::I8 => match (r >> 8) as u8 {
                0 => 1,
                b => u64::from(b),
            },
            In::Fp8 | In::Bf8 => match (r >> 8) as u8 {
                0x00 | 0x80 => u64::from((r >> 16) as u8 & 0x7F | 1),
                b => u64::from(b),
            },
            // OCP: no zeros, and no NaN or infinity (E4M3FN's x.1111.111,
            // E5M2's exponent 31): the top magnitudes fold down.
            In::Fp8Ocp | In::Bf8Ocp => {
                let b = (r >> 8) as u8;
                let top = if self == In::Fp8Ocp { 0x7E } else { 0x7B };
                let magnitude = match b & 0x7F {
                    0 => 1,
                    m if m > top => m - 0x10,
                    m => m,
                };
                u64::from(b & 0x80 | magnitude)
            }
            In::F64 => sign << 63 | (1021 + r % 3) << 52 | (r >> 8) & 0xF_FFFF_FFFF_FFFF,
        }
    }
}

/// One kernel of tests/kernels/src/mfma.rs: shape M×M×K with `blocks`
/// blocks (calculator `--detail-instruction`), A and B element types, and
/// the modifiers it was compiled with.
#[derive(Clone, Copy)]
struct Case {
    kernel: &'static str,
    m: usize,
    k: usize,
    blocks: usize,
    /// A's element type; also says what C and D hold (f64 for f64, i32
    /// for i8, f32 otherwise).
    ty: In,
    /// B's element type: `ty` but for the mixed fp8/bf8 forms.
    b_ty: In,
    cbsz: u32,
    abid: u32,
    blgp: u32,
}

const fn case(
    kernel: &'static str,
    shape: (usize, usize, usize),
    ty: In,
    modifiers: (u32, u32, u32),
) -> Case {
    mixed(kernel, shape, (ty, ty), modifiers)
}

/// A case whose A and B types differ (gfx942's fp8 × bf8 forms).
const fn mixed(
    kernel: &'static str,
    (m, k, blocks): (usize, usize, usize),
    (ty, b_ty): (In, In),
    (cbsz, abid, blgp): (u32, u32, u32),
) -> Case {
    Case {
        kernel,
        m,
        k,
        blocks,
        ty,
        b_ty,
        cbsz,
        abid,
        blgp,
    }
}

use In::{Bf8, Bf16, F16, F32, F64, Fp8, I8, Xf32};

/// Every kernel, with the shape and modifiers its name and body say.
#[rustfmt::skip]
const CASES: &[Case] = &[
    case("mfma_f32_32x32x1f32_plain", (32, 1, 2), F32, (0, 0, 0)),
    case("mfma_f32_32x32x1f32_cbsz1_abid1", (32, 1, 2), F32, (1, 1, 0)),
    case("mfma_f32_32x32x1f32_blgp3", (32, 1, 2), F32, (0, 0, 3)),
    case("mfma_f32_16x16x1f32_plain", (16, 1, 4), F32, (0, 0, 0)),
    case("mfma_f32_16x16x1f32_cbsz2_abid3", (16, 1, 4), F32, (2, 3, 0)),
    case("mfma_f32_16x16x1f32_cbsz1_blgp5", (16, 1, 4), F32, (1, 0, 5)),
    case("mfma_f32_4x4x1f32_plain", (4, 1, 16), F32, (0, 0, 0)),
    case("mfma_f32_4x4x1f32_cbsz4_abid9", (4, 1, 16), F32, (4, 9, 0)),
    case("mfma_f32_4x4x1f32_cbsz3_abid5_blgp2", (4, 1, 16), F32, (3, 5, 2)),
    case("mfma_f32_32x32x2f32_plain", (32, 2, 1), F32, (0, 0, 0)),
    case("mfma_f32_32x32x2f32_blgp1", (32, 2, 1), F32, (0, 0, 1)),
    case("mfma_f32_16x16x4f32_plain", (16, 4, 1), F32, (0, 0, 0)),
    case("mfma_f32_16x16x4f32_blgp6", (16, 4, 1), F32, (0, 0, 6)),
    case("mfma_f32_32x32x4f16_cbsz1_abid1_blgp4", (32, 4, 2), F16, (1, 1, 4)),
    case("mfma_f32_16x16x4f16_cbsz2_abid1_blgp7", (16, 4, 4), F16, (2, 1, 7)),
    case("mfma_f32_4x4x4f16_plain", (4, 4, 16), F16, (0, 0, 0)),
    case("mfma_f32_4x4x4f16_cbsz2_abid2_blgp3", (4, 4, 16), F16, (2, 2, 3)),
    case("mfma_f32_32x32x8f16_blgp2", (32, 8, 1), F16, (0, 0, 2)),
    case("mfma_f32_16x16x16f16_plain", (16, 16, 1), F16, (0, 0, 0)),
    case("mfma_f32_32x32x4bf16_1k_cbsz1_abid1", (32, 4, 2), Bf16, (1, 1, 0)),
    case("mfma_f32_16x16x4bf16_1k_blgp3", (16, 4, 4), Bf16, (0, 0, 3)),
    case("mfma_f32_4x4x4bf16_1k_cbsz3_abid7_blgp1", (4, 4, 16), Bf16, (3, 7, 1)),
    case("mfma_f32_32x32x8bf16_1k_blgp5", (32, 8, 1), Bf16, (0, 0, 5)),
    case("mfma_f32_16x16x16bf16_1k_plain", (16, 16, 1), Bf16, (0, 0, 0)),
    case("mfma_i32_32x32x4i8_cbsz1_abid1_blgp2", (32, 4, 2), I8, (1, 1, 2)),
    case("mfma_i32_16x16x4i8_cbsz2_abid2_blgp6", (16, 4, 4), I8, (2, 2, 6)),
    case("mfma_i32_4x4x4i8_plain", (4, 4, 16), I8, (0, 0, 0)),
    case("mfma_i32_4x4x4i8_cbsz4_abid5_blgp3", (4, 4, 16), I8, (4, 5, 3)),
    case("mfma_f64_16x16x4f64_plain", (16, 4, 1), F64, (0, 0, 0)),
    case("mfma_f64_4x4x4f64_plain", (4, 4, 4), F64, (0, 0, 0)),
];

/// The gfx942-only kernels: xf32 (gone on gfx950). They have no
/// CBSZ/ABID/BLGP (calculator: "not supported"), nor do the FP8/BF8 ones.
#[rustfmt::skip]
const GFX942_CASES: &[Case] = &[
    case("mfma_f32_16x16x8_xf32_plain", (16, 8, 1), Xf32, (0, 0, 0)),
    case("mfma_f32_32x32x4_xf32_plain", (32, 4, 1), Xf32, (0, 0, 0)),
];

/// The FP8/BF8 kernels of gfx942 (FNUZ) and gfx950 (OCP, by [`cases`]).
#[rustfmt::skip]
const FP8_CASES: &[Case] = &[
    mixed("mfma_f32_16x16x32_fp8_fp8_plain", (16, 32, 1), (Fp8, Fp8), (0, 0, 0)),
    mixed("mfma_f32_16x16x32_fp8_bf8_plain", (16, 32, 1), (Fp8, Bf8), (0, 0, 0)),
    mixed("mfma_f32_16x16x32_bf8_fp8_plain", (16, 32, 1), (Bf8, Fp8), (0, 0, 0)),
    mixed("mfma_f32_16x16x32_bf8_bf8_plain", (16, 32, 1), (Bf8, Bf8), (0, 0, 0)),
    mixed("mfma_f32_32x32x16_fp8_fp8_plain", (32, 16, 1), (Fp8, Fp8), (0, 0, 0)),
    mixed("mfma_f32_32x32x16_fp8_bf8_plain", (32, 16, 1), (Fp8, Bf8), (0, 0, 0)),
    mixed("mfma_f32_32x32x16_bf8_fp8_plain", (32, 16, 1), (Bf8, Fp8), (0, 0, 0)),
    mixed("mfma_f32_32x32x16_bf8_bf8_plain", (32, 16, 1), (Bf8, Bf8), (0, 0, 0)),
];

/// The kernels of gfx942 and gfx950: the K-doubled i8 shapes (no
/// CBSZ/ABID/BLGP) and f64 with BLGP as NEG (A, B, C in bits 0-2).
#[rustfmt::skip]
const GFX940_CASES: &[Case] = &[
    case("mfma_i32_16x16x32_i8_plain", (16, 32, 1), I8, (0, 0, 0)),
    case("mfma_i32_32x32x16_i8_plain", (32, 16, 1), I8, (0, 0, 0)),
    case("mfma_f64_16x16x4f64_neg_a", (16, 4, 1), F64, (0, 0, 1)),
    case("mfma_f64_16x16x4f64_neg_b_c", (16, 4, 1), F64, (0, 0, 6)),
    case("mfma_f64_4x4x4f64_neg_c", (4, 4, 4), F64, (0, 0, 4)),
];

/// The gfx950-only kernels: f16 and i8 with K doubled (no CBSZ/ABID/BLGP).
#[rustfmt::skip]
const GFX950_CASES: &[Case] = &[
    case("mfma_f32_32x32x16_f16_plain", (32, 16, 1), F16, (0, 0, 0)),
    case("mfma_f32_16x16x32_f16_plain", (16, 32, 1), F16, (0, 0, 0)),
    case("mfma_i32_32x32x32_i8_plain", (32, 32, 1), I8, (0, 0, 0)),
    case("mfma_i32_16x16x64_i8_plain", (16, 64, 1), I8, (0, 0, 0)),
];

/// The gfx90a-only kernels: single-block i8 (BLGP but no CBSZ/ABID) and
/// the bf16 forms older than `_1k`.
#[rustfmt::skip]
const GFX90A_CASES: &[Case] = &[
    case("mfma_i32_32x32x8i8_plain", (32, 8, 1), I8, (0, 0, 0)),
    case("mfma_i32_32x32x8i8_blgp3", (32, 8, 1), I8, (0, 0, 3)),
    case("mfma_i32_16x16x16i8_blgp4", (16, 16, 1), I8, (0, 0, 4)),
    case("mfma_f32_32x32x2bf16_cbsz1_abid1_blgp2", (32, 2, 2), Bf16, (1, 1, 2)),
    case("mfma_f32_16x16x2bf16_cbsz2_abid3_blgp5", (16, 2, 4), Bf16, (2, 3, 5)),
    case("mfma_f32_4x4x2bf16_plain", (4, 2, 16), Bf16, (0, 0, 0)),
    case("mfma_f32_4x4x2bf16_cbsz4_abid11", (4, 2, 16), Bf16, (4, 11, 0)),
    case("mfma_f32_32x32x4bf16_blgp1", (32, 4, 1), Bf16, (0, 0, 1)),
    case("mfma_f32_16x16x8bf16_plain", (16, 8, 1), Bf16, (0, 0, 0)),
    case("mfma_f32_16x16x8bf16_blgp7", (16, 8, 1), Bf16, (0, 0, 7)),
];

/// The kernels built for `target`: the FP8/BF8 ones of gfx950 read the
/// OCP formats.
fn cases(target: Target) -> Vec<Case> {
    let lists: &[&[Case]] = match target {
        Target::Gfx90a => &[CASES, GFX90A_CASES],
        Target::Gfx942 => &[CASES, GFX942_CASES, GFX940_CASES, FP8_CASES],
        Target::Gfx950 => &[CASES, GFX940_CASES, GFX950_CASES, FP8_CASES],
        // No MFMA on RDNA (WMMA instead): the test kernels build none.
        Target::Gfx1100 | Target::Gfx1201 => &[],
    };
    let ocp = |t: In| match (target, t) {
        (Target::Gfx950, Fp8) => In::Fp8Ocp,
        (Target::Gfx950, Bf8) => In::Bf8Ocp,
        _ => t,
    };
    lists
        .iter()
        .copied()
        .flatten()
        .map(|c| Case {
            ty: ocp(c.ty),
            b_ty: ocp(c.b_ty),
            ..*c
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The layout (calculator formulas)
// ---------------------------------------------------------------------------

impl Case {
    /// A (or B) elements each lane holds.
    fn per_lane(&self) -> usize {
        self.m * self.k * self.blocks / LANES
    }

    /// C/D elements each lane holds (one register each, a pair for f64).
    fn cd_per_lane(&self) -> usize {
        self.m * self.m * self.blocks / LANES
    }

    /// Lane and element within the lane of A[i][k] of `block` (B[k][j]
    /// alike, with j for i). Calculator, e.g. 32x32x8f16 "Lane: 32 *
    /// floor(k / 4) + i", 32x32x4f16 "Lane: 32 * block + i", f64 4x4x4
    /// "Lane: 4 * block + 16 * k + i".
    fn ab_slot(&self, i: usize, k: usize, block: usize) -> (usize, usize) {
        if self.ty == F64 && self.blocks > 1 {
            return (4 * block + 16 * k + i, 0);
        }
        let e = self.per_lane();
        if self.blocks > 1 {
            // Every lane holds a whole K row of its block.
            assert_eq!(e, self.k);
            (self.m * block + i, k)
        } else {
            (self.m * (k / e) + i, k % e)
        }
    }

    /// Element (register, or pair for f64) and lane of C/D[i][j] of
    /// `block`. Calculator "C or D[i][j].block GPR / Lane".
    fn cd_slot(&self, i: usize, j: usize, block: usize) -> (usize, usize) {
        if self.ty == F64 {
            // 16x16x4: "[2*floor(i/4)+1 : 2*floor(i/4)]", "16 * (i % 4) + j";
            // 4x4x4: one pair, "16 * (i % 4) + 4 * block + j".
            return (i / 4, 16 * (i % 4) + 4 * block + j);
        }
        match self.m {
            32 => (16 * block + 4 * (i / 8) + i % 4, (32 * (i / 4)) % 64 + j),
            16 => (4 * block + i % 4, 16 * (i / 4) + j),
            4 => (i, 4 * block + j),
            m => unreachable!("no {m}x{m} shape"),
        }
    }

    /// The A block that `block` multiplies with: "broadcast one block to
    /// 2^CBSZ other blocks", ABID choosing which.
    fn a_block(&self, block: usize) -> usize {
        let group = 1 << self.cbsz;
        block / group * group + self.abid as usize
    }

    /// The lane whose B data lane `lane` uses under BLGP (the
    /// calculator's table, case by case). f64 has no lane patterns: its
    /// BLGP is negation ([`Case::sign`]).
    fn b_lane(&self, lane: usize) -> usize {
        if self.ty == F64 {
            return lane;
        }
        match self.blgp {
            0 => lane,
            1 => lane % 32,
            2 if lane < 32 => lane + 32,
            2 => lane,
            3 => (lane + 16) % 64,
            g @ 4..=7 => 16 * (g as usize - 4) + lane % 16,
            g => unreachable!("BLGP {g}"),
        }
    }

    /// The sign f64's NEG (its BLGP field on gfx942) gives operand `bit`
    /// (1 A, 2 B, 4 C); gfx90a has no f64 BLGP and none of its f64 cases
    /// set one.
    fn sign(&self, bit: u32) -> f64 {
        if self.ty == F64 && self.blgp & bit != 0 {
            -1.0
        } else {
            1.0
        }
    }
}

// ---------------------------------------------------------------------------
// Inputs, reference and check
// ---------------------------------------------------------------------------

/// One lane's operands as raw elements: `a[lane][e]`.
type Operand = Vec<Vec<u64>>;

fn random_operand(ty: In, per_lane: usize, rng: &mut Rng) -> Operand {
    (0..LANES)
        .map(|_| (0..per_lane).map(|_| ty.random(rng)).collect())
        .collect()
}

/// Lane-major bytes, each lane's elements packed low first (the register
/// order the kernels load).
fn operand_bytes(ty: In, op: &Operand) -> Vec<u8> {
    let mut out = Vec::new();
    for lane in op {
        for &e in lane {
            out.extend_from_slice(&e.to_le_bytes()[..ty.bytes()]);
        }
    }
    out
}

/// C as `c[lane][element]` raw: an f32/i32 bit pattern, or f64 bits.
fn random_c(case: &Case, rng: &mut Rng) -> Operand {
    let elem = match case.ty {
        F64 => F64,
        I8 => I8,
        _ => F32,
    };
    (0..LANES)
        .map(|_| {
            (0..case.cd_per_lane())
                .map(|_| match elem {
                    // C of an i8 MFMA is an i32; keep it large and signed.
                    I8 => u64::from((rng.next_u64() >> 40) as u32 ^ 0x8000_0000),
                    t => t.random(rng),
                })
                .collect()
        })
        .collect()
}

fn c_bytes(case: &Case, c: &Operand) -> Vec<u8> {
    let width = if case.ty == F64 { 8 } else { 4 };
    let mut out = Vec::new();
    for lane in c {
        for &e in lane {
            out.extend_from_slice(&e.to_le_bytes()[..width]);
        }
    }
    out
}

/// The expected D, `[lane][element]`, with a magnitude bound per element
/// for the float tolerance.
fn reference(case: &Case, a: &Operand, b: &Operand, c: &Operand) -> Vec<Vec<(u64, f64)>> {
    let mut d = vec![vec![(0u64, 0f64); case.cd_per_lane()]; LANES];
    for block in 0..case.blocks {
        for i in 0..case.m {
            for j in 0..case.m {
                let (reg, lane) = case.cd_slot(i, j, block);
                let (mut sum, mut mag, mut isum) = (0f64, 0f64, 0i32);
                for k in 0..case.k {
                    let (al, ae) = case.ab_slot(i, k, case.a_block(block));
                    let (bl, be) = case.ab_slot(j, k, block);
                    let x = case.sign(1) * case.ty.value(a[al][ae]);
                    let y = case.sign(2) * case.b_ty.value(b[case.b_lane(bl)][be]);
                    sum += x * y;
                    mag += (x * y).abs();
                    isum = isum.wrapping_add((x * y) as i32);
                }
                let cv = c[lane][reg];
                d[lane][reg] = match case.ty {
                    I8 => ((cv as u32 as i32).wrapping_add(isum) as u32 as u64, 0.0),
                    F64 => {
                        let cf = case.sign(4) * f64::from_bits(cv);
                        ((cf + sum).to_bits(), mag + cf.abs())
                    }
                    _ => {
                        let cf = f64::from(f32::from_bits(cv as u32));
                        (u64::from(((cf + sum) as f32).to_bits()), mag + cf.abs())
                    }
                };
            }
        }
    }
    d
}

fn check(target: Target, case: &Case, got: &[u8], want: &[Vec<(u64, f64)>]) {
    let width = if case.ty == F64 { 8 } else { 4 };
    for (lane, row) in want.iter().enumerate() {
        for (reg, &(w, mag)) in row.iter().enumerate() {
            let at = (lane * row.len() + reg) * width;
            let mut raw = [0u8; 8];
            raw[..width].copy_from_slice(&got[at..at + width]);
            let g = u64::from_le_bytes(raw);
            let what = format!("{target:?} {} lane {lane} element {reg}", case.kernel);
            match case.ty {
                I8 => assert_eq!(g as u32 as i32, w as u32 as i32, "{what}"),
                F64 => {
                    let (g, w) = (f64::from_bits(g), f64::from_bits(w));
                    let tol = mag * 4.0 * f64::EPSILON;
                    assert!((g - w).abs() <= tol, "{what}: {g} vs {w} (±{tol})");
                }
                _ => {
                    let (g, w) = (f32::from_bits(g as u32), f32::from_bits(w as u32));
                    let tol = mag * 4.0 * f64::from(f32::EPSILON);
                    assert!(
                        (f64::from(g) - f64::from(w)).abs() <= tol,
                        "{what}: {g} vs {w} (±{tol})"
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

fn run_case(d: &Gpu, p: &Program, case: &Case, seed: u64) {
    let mut rng = Rng(seed);
    let a = random_operand(case.ty, case.per_lane(), &mut rng);
    let b = random_operand(case.b_ty, case.per_lane(), &mut rng);
    let c = random_c(case, &mut rng);
    let (a_raw, b_raw) = (operand_bytes(case.ty, &a), operand_bytes(case.b_ty, &b));
    let got = run_wave(d, p, case.kernel, [&a_raw, &b_raw, &c_bytes(case, &c)], &[]);
    check(d.target, case, &got, &reference(case, &a, &b, &c));
}

/// Runs one 64-lane wave of `kernel` with the arguments `a, b, c, d` and
/// then each of `extra`, all uploaded, D poisoned with a poisoned guard
/// after it (as long as C); D as the kernel left it, the guard checked.
fn run_wave(d: &Gpu, p: &Program, kernel: &str, [a, b, c]: [&[u8]; 3], extra: &[&[u8]]) -> Vec<u8> {
    let d_len = c.len();
    let poison: Vec<u8> = u32::POISON.to_le_bytes().repeat(d_len / 4 + 1);
    let mut buffers = vec![upload(d, a), upload(d, b), upload(d, c), upload(d, &poison)];
    buffers.extend(extra.iter().map(|e| upload(d, e)));
    let kernarg: Vec<u8> = buffers.iter().flat_map(|p| p.to_le_bytes()).collect();
    d.run(p, kernel, [64, 1, 1], [64, 1, 1], &kernarg)
        .unwrap_or_else(|e| panic!("{:?} {kernel}: {e}", d.target));
    let mut got = vec![0u8; d_len + 4];
    d.memory().read_bytes(buffers[3], &mut got).expect("read D");
    assert_eq!(
        got[d_len..],
        u32::POISON.to_le_bytes(),
        "{:?} {kernel}: wrote past D",
        d.target
    );
    for a in buffers {
        d.memory().free(a).expect("free");
    }
    got.truncate(d_len);
    got
}

#[test]
fn mfma_kernels_match_the_documented_layout_with_cbsz_abid_blgp() {
    for Sim { d, p } in simulated(TEST_KERNELS) {
        for (n, case) in cases(d.target).iter().enumerate() {
            for seed in [1, 2] {
                run_case(&d, &p, case, 0x9E37_79B9_7F4A_7C15 ^ (n as u64) << 8 ^ seed);
            }
        }
    }
}

#[test]
fn every_mfma_kernel_has_a_case() {
    // Each code object's kernel list must match its target's cases, so a
    // kernel added to tests/kernels/src/mfma.rs (for both targets or for
    // one) is not silently left unchecked.
    for sim in simulated(TEST_KERNELS) {
        let mut want: Vec<&str> = cases(sim.d.target).iter().map(|c| c.kernel).collect();
        want.sort_unstable();
        assert_eq!(sim.kernels_named("mfma_"), want, "{:?}", sim.d.target);
    }
}

// ---------------------------------------------------------------------------
// gfx950's f8f6f4 forms with OCP Microscaling block scales
// ---------------------------------------------------------------------------
//
// Written from the CDNA4 ISA (§7.1.4 packing, §7.1.5.1 register tables,
// §7.2 block scaling, §7.3 Table 30 formats), independently of
// sim/src/exec/mfma_mx.rs: there a matrix element is looked up by (row,
// k); here each lane's items are walked and told which k they hold.

/// An element format, by its CBSZ/BLGP code: (bits, mantissa bits, bias).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mx {
    /// 0: OCP FP8 E4M3 (S.1111.111 is NaN, never drawn).
    Fp8,
    /// 1: OCP BF8 E5M2 (exponent 31 is infinity or NaN, never drawn).
    Bf8,
    /// 2: FP6 E2M3, no specials.
    Fp6,
    /// 3: BF6 E3M2, no specials.
    Bf6,
    /// 4: FP4 E2M1, no specials.
    Fp4,
}

impl Mx {
    fn bits(self) -> usize {
        match self {
            Mx::Fp8 | Mx::Bf8 => 8,
            Mx::Fp6 | Mx::Bf6 => 6,
            Mx::Fp4 => 4,
        }
    }

    /// The value of `raw`: sign in the top bit, then exponent and mantissa
    /// (Table 30: E = 0 is 2^(1−bias)·M/2^m, else 2^(E−bias)·(1 + M/2^m)).
    fn value(self, raw: u8) -> f64 {
        let (man_bits, bias) = match self {
            Mx::Fp8 => (3, 7),
            Mx::Bf8 => (2, 15),
            Mx::Fp6 => (3, 1),
            Mx::Bf6 => (2, 3),
            Mx::Fp4 => (1, 1),
        };
        let width = self.bits() as u32;
        let sign = raw >> (width - 1) & 1;
        let exp = i32::from(raw >> man_bits) & ((1 << (width - 1 - man_bits)) - 1);
        let man = f64::from(raw & ((1 << man_bits) - 1)) / f64::from(1u32 << man_bits);
        let mag = if exp == 0 {
            man * 2f64.powi(1 - bias)
        } else {
            (1.0 + man) * 2f64.powi(exp - bias)
        };
        if sign == 1 { -mag } else { mag }
    }

    /// A random element: any code for the six- and four-bit formats, any
    /// finite one for FP8 and BF8 (the top magnitudes fold down).
    fn random(self, rng: &mut Rng) -> u8 {
        let r = (rng.next_u64() >> 24) as u8;
        match self {
            Mx::Fp8 if r & 0x7F == 0x7F => r & 0xF7,
            Mx::Bf8 if r & 0x7C == 0x7C => r & 0xBF,
            Mx::Fp8 | Mx::Bf8 => r,
            _ => r & ((1 << self.bits()) - 1),
        }
    }
}

/// One `mx_*` kernel: shape M×M×K, A's and B's formats, and the scale
/// bytes it reads (`None`: the unscaled instruction, scale 1).
struct MxCase {
    kernel: &'static str,
    m: usize,
    k: usize,
    a: Mx,
    b: Mx,
    sel: Option<(u32, u32)>,
}

#[rustfmt::skip]
const MX_CASES: &[MxCase] = &[
    mx("mx_16x16x128_fp8_fp8_sel1_2", 16, (Mx::Fp8, Mx::Fp8), Some((1, 2))),
    mx("mx_16x16x128_bf8_fp8_sel3_0", 16, (Mx::Bf8, Mx::Fp8), Some((3, 0))),
    mx("mx_16x16x128_fp6_fp4_sel0_3", 16, (Mx::Fp6, Mx::Fp4), Some((0, 3))),
    mx("mx_32x32x64_bf8_bf6_sel2_1", 32, (Mx::Bf8, Mx::Bf6), Some((2, 1))),
    mx("mx_32x32x64_fp4_bf8_sel0_0", 32, (Mx::Fp4, Mx::Bf8), Some((0, 0))),
    mx("mx_16x16x128_fp8_bf8_unscaled", 16, (Mx::Fp8, Mx::Bf8), None),
];

const fn mx(kernel: &'static str, m: usize, (a, b): (Mx, Mx), sel: Option<(u32, u32)>) -> MxCase {
    MxCase {
        kernel,
        m,
        k: 2048 / m,
        a,
        b,
        sel,
    }
}

impl MxCase {
    /// The k of item `e` (0..32) of `lane`, in format `f` (§7.1.5.1): the
    /// lane's group g = lane / M; FP8/BF8 items 0-15 are k = 16·g + e and
    /// items 16-31 the same in K's second half; FP6/BF6/FP4 items are
    /// k = 32·g + e.
    fn k_of(&self, f: Mx, lane: usize, e: usize) -> usize {
        let g = lane / self.m;
        match f {
            Mx::Fp8 | Mx::Bf8 if e < 16 => 16 * g + e,
            Mx::Fp8 | Mx::Bf8 => self.k / 2 + 16 * g + e - 16,
            _ => 32 * g + e,
        }
    }

    /// The single-block C/D slot, as the calculator gives it.
    fn cd_slot(&self, i: usize, j: usize) -> (usize, usize) {
        case("", (self.m, self.k, 1), F32, (0, 0, 0)).cd_slot(i, j, 0)
    }
}

/// Packs each lane's 32 items LSB first (§7.1.4) into `bits` dwords, each
/// lane's padded to a power of two as the kernels' SIMD types are (an FP6
/// operand, `<6 x i32>`, takes 32 bytes in memory).
fn mx_bytes(f: Mx, items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for lane in items {
        let mut words = vec![0u32; f.bits().next_power_of_two()];
        for (e, &raw) in lane.iter().enumerate() {
            let bit = e * f.bits();
            let v = u64::from(raw) << (bit % 32);
            words[bit / 32] |= v as u32;
            if bit % 32 + f.bits() > 32 {
                words[bit / 32 + 1] |= (v >> 32) as u32;
            }
        }
        out.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    }
    out
}

fn run_mx(d: &Gpu, p: &Program, case: &MxCase, seed: u64) {
    let mut rng = Rng(seed);
    let items = |f: Mx, rng: &mut Rng| -> Vec<Vec<u8>> {
        (0..LANES)
            .map(|_| (0..32).map(|_| f.random(rng)).collect())
            .collect()
    };
    let (a, b) = (items(case.a, &mut rng), items(case.b, &mut rng));
    let cd = case.m * case.m / LANES;
    let c: Vec<u32> = (0..LANES * cd)
        .map(|_| F32.random(&mut rng) as u32)
        .collect();
    // Every byte of every scale register a plausible scale, 2^-7 to 2^7,
    // so reading the wrong byte or lane shows.
    let mut scales = || -> Vec<u32> {
        (0..LANES)
            .map(|_| u32::from_le_bytes(std::array::from_fn(|_| 120 + (rng.next_u64() % 15) as u8)))
            .collect()
    };
    let (sa, sb) = (scales(), scales());

    // The model: A[i][k], B[k][j] from the lanes; scales by (row, block).
    let mut am = vec![vec![0f64; case.k]; case.m];
    let mut bm = vec![vec![0f64; case.m]; case.k];
    for lane in 0..LANES {
        for e in 0..32 {
            am[lane % case.m][case.k_of(case.a, lane, e)] = case.a.value(a[lane][e]);
            bm[case.k_of(case.b, lane, e)][lane % case.m] = case.b.value(b[lane][e]);
        }
    }
    let scale = |regs: &[u32], row: usize, block: usize, sel: u32| match case.sel {
        // §7.2: lane row + M·block holds the scale, 2^(s − 127).
        Some(_) => 2f64.powi((regs[row + case.m * block] >> (8 * sel) & 0xFF) as i32 - 127),
        None => 1.0,
    };
    let (sel_a, sel_b) = case.sel.unwrap_or((0, 0));
    let mut want = vec![(0f32, 0f64); LANES * cd];
    for (i, a_row) in am.iter().enumerate() {
        for j in 0..case.m {
            let (reg, lane) = case.cd_slot(i, j);
            let cv = f64::from(f32::from_bits(c[lane * cd + reg]));
            let (mut sum, mut mag) = (cv, cv.abs());
            for (k, (x, b_row)) in a_row.iter().zip(&bm).enumerate() {
                let s = scale(&sa, i, k / 32, sel_a) * scale(&sb, j, k / 32, sel_b);
                let term = s * x * b_row[j];
                sum += term;
                mag += term.abs();
            }
            want[lane * cd + reg] = (sum as f32, mag);
        }
    }

    let c_raw: Vec<u8> = c.iter().flat_map(|w| w.to_le_bytes()).collect();
    let words = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|w| w.to_le_bytes()).collect() };
    let scales = [words(&sa), words(&sb)];
    let extra: Vec<&[u8]> = match case.sel {
        Some(_) => scales.iter().map(Vec::as_slice).collect(),
        None => Vec::new(),
    };
    let (a_raw, b_raw) = (mx_bytes(case.a, &a), mx_bytes(case.b, &b));
    let got = run_wave(d, p, case.kernel, [&a_raw, &b_raw, &c_raw], &extra);
    for (n, &(w, mag)) in want.iter().enumerate() {
        let g = f32::from_le_bytes(got[4 * n..][..4].try_into().expect("4 bytes"));
        let tol = mag * 4.0 * f64::from(f32::EPSILON);
        assert!(
            (f64::from(g) - f64::from(w)).abs() <= tol,
            "{} lane {} element {}: {g} vs {w} (±{tol})",
            case.kernel,
            n / cd,
            n % cd
        );
    }
}

#[test]
fn gfx950_f8f6f4_mfma_match_the_microscaling_model() {
    for sim in simulated(TEST_KERNELS) {
        let want: Vec<&str> = if sim.d.target == Target::Gfx950 {
            let mut v: Vec<&str> = MX_CASES.iter().map(|c| c.kernel).collect();
            v.sort_unstable();
            v
        } else {
            Vec::new()
        };
        assert_eq!(sim.kernels_named("mx_"), want, "{:?}", sim.d.target);
        let Sim { d, p } = sim;
        if d.target != Target::Gfx950 {
            continue;
        }
        for (n, case) in MX_CASES.iter().enumerate() {
            run_mx(&d, &p, case, 0x5EED_0000 ^ (n as u64) << 8);
        }
    }
}
