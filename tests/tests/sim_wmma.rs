//! WMMA on the simulator, end to end: the kernels of
//! tests/kernels/src/wmma.rs load A, B and C from memory, run one
//! `v_wmma_*` of a wave32 wave and store D; this test runs them for
//! gfx1100 and gfx1201 on random non-zero inputs and checks every D
//! register of every lane against a scalar model.
//!
//! The model is written here from AMD's matrix instruction calculator
//! (github.com/ROCm/amd_matrix_instruction_calculator, `--detail-
//! instruction` for RDNA3 and RDNA4), in the direction opposite to the
//! simulator's: for each (register, lane, bit) of an operand it names the
//! matrix element there, where sim/src/exec/wmma.rs places each element.
//! The values are drawn so every product and sum is exact in f32 (small
//! multiples of powers of two; fp8/bf8 from a table of OCP encodings), so
//! f32 results must match exactly and f16/bf16 ones be the exact sum
//! rounded to nearest even, and integer results exactly (wrapped, or
//! saturated under CLAMP).
//!
//! A permutation of K that A and B share changes no exact sum, so what
//! this pins is the rows, the columns and the C/D layout; the order of K
//! within a row (the calculator's, followed in both places) would show
//! only in rounding.
//!
//! On gfx1100 both 16-lane halves carry a copy of each A row and B
//! column, as the hardware requires; the 16-bit outputs write one half of
//! each D register (OPSEL) and the test checks the other keeps C's.

#![feature(f16)]

use aqueduct_sim::Target;
use aqueduct_tests::{Rng, Sim, TEST_KERNELS, Word, simulated};

const LANES: usize = 32;
const M: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq)]
enum In {
    F16,
    Bf16,
    /// 8-bit integer, signed or not.
    I8(bool),
    /// 4-bit integer, signed or not.
    I4(bool),
    /// OCP E4M3.
    Fp8,
    /// OCP E5M2.
    Bf8,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Out {
    F32,
    F16,
    Bf16,
    I32,
}

struct Case {
    kernel: &'static str,
    a: In,
    b: In,
    out: Out,
    k: usize,
    clamp: bool,
    /// gfx1100's 16-bit outputs: the high half of each D register.
    high: bool,
}

const fn case(kernel: &'static str, a: In, b: In, out: Out, k: usize) -> Case {
    Case {
        kernel,
        a,
        b,
        out,
        k,
        clamp: false,
        high: false,
    }
}

const GFX11_CASES: &[Case] = &[
    case("wmma_gfx11_f32_f16", In::F16, In::F16, Out::F32, 16),
    case("wmma_gfx11_f32_bf16", In::Bf16, In::Bf16, Out::F32, 16),
    case("wmma_gfx11_f16_f16_lo", In::F16, In::F16, Out::F16, 16),
    Case {
        high: true,
        ..case("wmma_gfx11_f16_f16_hi", In::F16, In::F16, Out::F16, 16)
    },
    Case {
        high: true,
        ..case("wmma_gfx11_bf16_bf16_hi", In::Bf16, In::Bf16, Out::Bf16, 16)
    },
    case(
        "wmma_gfx11_i32_iu8_su",
        In::I8(true),
        In::I8(false),
        Out::I32,
        16,
    ),
    Case {
        clamp: true,
        ..case(
            "wmma_gfx11_i32_iu8_us_clamp",
            In::I8(false),
            In::I8(true),
            Out::I32,
            16,
        )
    },
    case(
        "wmma_gfx11_i32_iu4_ss",
        In::I4(true),
        In::I4(true),
        Out::I32,
        16,
    ),
];

const GFX12_CASES: &[Case] = &[
    case("wmma_gfx12_f32_f16", In::F16, In::F16, Out::F32, 16),
    case("wmma_gfx12_f32_bf16", In::Bf16, In::Bf16, Out::F32, 16),
    case("wmma_gfx12_f16_f16", In::F16, In::F16, Out::F16, 16),
    case("wmma_gfx12_bf16_bf16", In::Bf16, In::Bf16, Out::Bf16, 16),
    case(
        "wmma_gfx12_i32_iu8_su",
        In::I8(true),
        In::I8(false),
        Out::I32,
        16,
    ),
    Case {
        clamp: true,
        ..case(
            "wmma_gfx12_i32_iu8_us_clamp",
            In::I8(false),
            In::I8(true),
            Out::I32,
            16,
        )
    },
    case(
        "wmma_gfx12_i32_iu4_ss",
        In::I4(true),
        In::I4(true),
        Out::I32,
        16,
    ),
    case(
        "wmma_gfx12_i32_iu4_k32_us",
        In::I4(false),
        In::I4(true),
        Out::I32,
        32,
    ),
    case("wmma_gfx12_f32_fp8_fp8", In::Fp8, In::Fp8, Out::F32, 16),
    case("wmma_gfx12_f32_fp8_bf8", In::Fp8, In::Bf8, Out::F32, 16),
    case("wmma_gfx12_f32_bf8_fp8", In::Bf8, In::Fp8, Out::F32, 16),
    case("wmma_gfx12_f32_bf8_bf8", In::Bf8, In::Bf8, Out::F32, 16),
];

fn cases(target: Target) -> &'static [Case] {
    match target {
        Target::Gfx1100 => GFX11_CASES,
        Target::Gfx1201 => GFX12_CASES,
        // No WMMA on CDNA (MFMA instead): the test kernels build none.
        Target::Gfx90a | Target::Gfx942 | Target::Gfx950 => &[],
    }
}

/// OCP E4M3 and E5M2 encodings and their values (OCP 8-bit Floating
/// Point Specification, 2023): exact values only, so sums stay exact.
const FP8: &[(u8, f64)] = &[
    (0x38, 1.0),
    (0x40, 2.0),
    (0x30, 0.5),
    (0xB8, -1.0),
    (0x3C, 1.5),
    (0xC4, -3.0),
    (0x34, 0.75),
    (0x00, 0.0),
];
const BF8: &[(u8, f64)] = &[
    (0x3C, 1.0),
    (0x40, 2.0),
    (0x38, 0.5),
    (0xBC, -1.0),
    (0x3E, 1.5),
    (0xC2, -3.0),
    (0x3A, 0.75),
    (0x80, -0.0),
];

impl In {
    fn bits(self) -> usize {
        match self {
            In::F16 | In::Bf16 => 16,
            In::I8(_) | In::Fp8 | In::Bf8 => 8,
            In::I4(_) => 4,
        }
    }

    /// A random element: its bits and its value.
    fn draw(self, rng: &mut Rng) -> (u32, f64) {
        // Quarter steps in [-4, 4]: exact in f16 and bf16, and products
        // and sums of 32 of them exact in f32.
        let small = |rng: &mut Rng| (rng.below(33) as f64 - 16.0) / 4.0;
        match self {
            In::F16 => {
                let v = small(rng);
                (u32::from((v as f16).to_bits()), v)
            }
            In::Bf16 => {
                let v = small(rng);
                ((v as f32).to_bits() >> 16, v)
            }
            In::I8(signed) => {
                let raw = rng.u32() & 0xFF;
                let v = if signed {
                    f64::from(raw as u8 as i8)
                } else {
                    f64::from(raw)
                };
                (raw, v)
            }
            In::I4(signed) => {
                let raw = rng.u32() & 0xF;
                let v = if signed && raw >= 8 {
                    f64::from(raw) - 16.0
                } else {
                    f64::from(raw)
                };
                (raw, v)
            }
            In::Fp8 | In::Bf8 => {
                let table = if self == In::Fp8 { FP8 } else { BF8 };
                let (raw, v) = table[rng.below(table.len() as u64) as usize];
                (u32::from(raw), v)
            }
        }
    }
}

impl Out {
    fn sixteen(self) -> bool {
        matches!(self, Out::F16 | Out::Bf16)
    }
}

/// Registers per lane of an A/B operand.
fn ab_regs(target: Target, t: In, k: usize) -> usize {
    let row_bits = k * t.bits();
    // gfx1100: a whole row per lane; gfx1201: half a row.
    if target == Target::Gfx1100 {
        row_bits / 32
    } else {
        row_bits / 64
    }
}

/// Registers per lane of C and D.
fn cd_regs(target: Target, out: Out) -> usize {
    if target == Target::Gfx1201 && out.sixteen() {
        4
    } else {
        8
    }
}

/// The element of A (row, k) — or of B (k, column) — held by lane `l`,
/// register `r`, element `e` of the dword (calculator, inverse form).
fn ab_element(target: Target, t: In, k: usize, l: usize, r: usize, e: usize) -> (usize, usize) {
    let row = l % 16;
    let group = l / 16;
    let per = 32 / t.bits();
    let kk = match (target, t.bits()) {
        (Target::Gfx1100, _) => per * r + e,
        (_, 16) => 8 * (r / 2) + 4 * group + 2 * (r % 2) + e,
        (_, 8) => 8 * group + 4 * r + e,
        _ => (k / 2) * group + 8 * r + e,
    };
    (row, kk)
}

/// The C/D element held by lane `l`, register `r`, half `h` (16-bit
/// outputs on gfx1201; elsewhere `h` is 0) (calculator, inverse form).
fn cd_element(target: Target, out: Out, l: usize, r: usize, h: usize) -> (usize, usize) {
    let col = l % 16;
    match target {
        Target::Gfx1100 => (2 * r + l / 16, col),
        _ if out.sixteen() => (8 * (l / 16) + 2 * r + h, col),
        _ => (8 * (l / 16) + r, col),
    }
}

/// `x` (exact in f32 here) rounded to the nearest bf16, ties to even.
fn bf16_nearest(x: f32) -> u32 {
    let bits = x.to_bits();
    (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
}

fn run_case(sim: &Sim, case: &Case, seed: u64) {
    let t = sim.d.target;
    let what = format!("{:?} {}", t, case.kernel);
    let mut rng = Rng::new(seed);
    // Logical A (16 × K), B (K × 16, stored by column) and their bits.
    let mut a = vec![(0u32, 0f64); M * case.k];
    let mut b = vec![(0u32, 0f64); M * case.k];
    for x in &mut a {
        *x = case.a.draw(&mut rng);
    }
    for x in &mut b {
        *x = case.b.draw(&mut rng);
    }
    // Per-lane registers, filled from the inverse layout; gfx1100's second
    // half of the lanes copies the first (the hardware's requirement).
    let pack = |m: &[(u32, f64)], ty: In| -> Vec<u32> {
        let regs = ab_regs(t, ty, case.k);
        let per = 32 / ty.bits();
        let mut out = vec![0u32; LANES * regs];
        for l in 0..LANES {
            for r in 0..regs {
                for e in 0..per {
                    let (row, k) = ab_element(t, ty, case.k, l, r, e);
                    let bits = m[row * case.k + k].0;
                    out[l * regs + r] |= bits << (ty.bits() * e);
                }
            }
        }
        out
    };
    let (a_words, b_words) = (pack(&a, case.a), pack(&b, case.b));

    // C: random registers; the elements are what the layout reads.
    let regs = cd_regs(t, case.out);
    let mut c_words: Vec<u32> = (0..LANES * regs).map(|_| rng.u32()).collect();
    let mut c = vec![0f64; M * M];
    for l in 0..LANES {
        for r in 0..regs {
            let halves = if t == Target::Gfx1201 && case.out.sixteen() {
                2
            } else {
                1
            };
            for h in 0..halves {
                let (i, j) = cd_element(t, case.out, l, r, h);
                let word = &mut c_words[l * regs + r];
                let shift = if t == Target::Gfx1100 && case.high {
                    16
                } else {
                    16 * h as u32
                };
                c[i * M + j] = match case.out {
                    Out::F32 => {
                        let v = (rng.below(65) as f64 - 32.0) / 8.0;
                        *word = (v as f32).to_bits();
                        v
                    }
                    Out::F16 | Out::Bf16 => {
                        let v = (rng.below(65) as f64 - 32.0) / 8.0;
                        let bits = if case.out == Out::F16 {
                            u32::from((v as f16).to_bits())
                        } else {
                            (v as f32).to_bits() >> 16
                        };
                        *word = (*word & !(0xFFFF << shift)) | bits << shift;
                        v
                    }
                    // Half near the ends of i32, so some sums leave it:
                    // they wrap, or saturate under CLAMP.
                    Out::I32 => {
                        let near = rng.below(1 << 20) as i32;
                        *word = match rng.below(4) {
                            0 => (i32::MAX - near) as u32,
                            1 => (i32::MIN + near) as u32,
                            _ => (rng.below(1 << 16) as i32 - (1 << 15)) as u32,
                        };
                        f64::from(*word as i32)
                    }
                };
            }
        }
    }

    let pa = sim.upload(&a_words);
    let pb = sim.upload(&b_words);
    let pc = sim.upload(&c_words);
    let pd = sim.poisoned::<u32>(LANES * regs);
    let args = aqueduct_tests::Args::default()
        .u64(pa)
        .u64(pb)
        .u64(pc)
        .u64(pd);
    sim.run(case.kernel, (LANES as u32, LANES as u16), &args);
    let d = sim.output::<u32>(pd, LANES * regs, &what);

    let mut checked = 0;
    for l in 0..LANES {
        for r in 0..regs {
            let halves = if t == Target::Gfx1201 && case.out.sixteen() {
                2
            } else {
                1
            };
            let got_word = d[l * regs + r];
            for h in 0..halves {
                let (i, j) = cd_element(t, case.out, l, r, h);
                let exact: f64 = (0..case.k)
                    .map(|k| a[i * case.k + k].1 * b[j * case.k + k].1)
                    .sum::<f64>()
                    + c[i * M + j];
                let at = format!("{what}: D[{i}][{j}] (lane {l}, v+{r})");
                let shift = if t == Target::Gfx1100 && case.high {
                    16
                } else {
                    16 * h as u32
                };
                match case.out {
                    Out::F32 => assert_eq!(f32::from_bits(got_word), exact as f32, "{at}"),
                    Out::F16 => {
                        let got = f16::from_bits((got_word >> shift) as u16);
                        assert_eq!(got, exact as f16, "{at}");
                    }
                    Out::Bf16 => {
                        let got = (got_word >> shift) & 0xFFFF;
                        assert_eq!(got, bf16_nearest(exact as f32), "{at}: {exact}");
                    }
                    Out::I32 => {
                        let sum = exact as i64;
                        let want = if case.clamp {
                            sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
                        } else {
                            sum as i32
                        };
                        assert_eq!(got_word as i32, want, "{at}");
                    }
                }
                checked += 1;
            }
            // gfx1100's 16-bit outputs keep the other half of C's register.
            if t == Target::Gfx1100 && case.out.sixteen() {
                let keep = if case.high { 0xFFFF } else { 0xFFFF_0000 };
                assert_eq!(
                    got_word & keep,
                    c_words[l * regs + r] & keep,
                    "{what}: lane {l} v+{r}: the unused half"
                );
            }
        }
    }
    assert_eq!(checked, M * M, "{what}: every D element once");
    sim.free(&[pa, pb, pc, pd]);
}

#[test]
fn wmma_kernels_match_the_documented_layout() {
    let mut ran = Vec::new();
    for sim in simulated(TEST_KERNELS) {
        for (n, case) in cases(sim.d.target).iter().enumerate() {
            for seed in [1, 2] {
                run_case(&sim, case, 0x5EED_0000 ^ (n as u64) << 8 ^ seed);
            }
        }
        if !cases(sim.d.target).is_empty() {
            ran.push(sim.d.target);
        }
    }
    assert_eq!(
        ran,
        [Target::Gfx1100, Target::Gfx1201],
        "both RDNA targets ran"
    );
}

#[test]
fn every_wmma_kernel_has_a_case() {
    for sim in simulated(TEST_KERNELS) {
        let mut want: Vec<&str> = cases(sim.d.target).iter().map(|c| c.kernel).collect();
        want.sort_unstable();
        assert_eq!(sim.kernels_named("wmma_"), want, "{:?}", sim.d.target);
    }
}

// A kernel's D is poisoned (`Sim::poisoned`) and its guard checked
// (`Sim::output`), so a WMMA that wrote nothing, or past D, fails.
const _: () = assert!(u32::POISON != 0);
