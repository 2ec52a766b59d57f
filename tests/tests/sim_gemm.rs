//! aqueduct's own GEMM kernels on the simulator (gfx90a and gfx942)
//! against an f64 CPU reference (issue 18). So far: the FMA fallback,
//! `gemm_f32_fma`.
//!
//! Inputs are small integers, so products and sums are exact in f32 and the
//! comparison is exact; one case of random floats compares within
//! `2 K u Σ|a b| + u |beta c|` (u = 2^-24, f32 fused multiply-adds in K
//! order against the exact sum). D is poisoned (and one element past it
//! checked) before every run; beta = 0 runs with a NaN-poisoned C and
//! alpha = 0 with NaN-poisoned A and B, which must not reach D.

use aqueduct_gemm::fma::{THREADS, TILE, TRANSPOSE_A, TRANSPOSE_B};
use aqueduct_tests::{Args, Rng, Sim, simulated};

const GEMM: &str = "aqueduct-gemm";

#[derive(Clone, Copy, Debug)]
struct Case {
    m: u32,
    n: u32,
    k: u32,
    trans_a: bool,
    trans_b: bool,
    /// Extra rows in every leading dimension.
    pad: u32,
    batch: u32,
    alpha: f32,
    beta: f32,
}

/// Column-major `rows × cols` with leading dimension `ld`: elements spanned.
fn span(rows: u32, cols: u32, ld: u32) -> usize {
    if rows == 0 || cols == 0 {
        return 0;
    }
    (rows - 1) as usize + (cols - 1) as usize * ld as usize + 1
}

/// Runs one case; `values` draws the inputs.
fn run(sim: &Sim, c: Case, values: &mut dyn FnMut() -> f32, exact: bool) {
    let what = format!("{c:?}");
    let (a_rows, a_cols) = if c.trans_a { (c.k, c.m) } else { (c.m, c.k) };
    let (b_rows, b_cols) = if c.trans_b { (c.n, c.k) } else { (c.k, c.n) };
    let (lda, ldb, ldc) = (
        a_rows.max(1) + c.pad,
        b_rows.max(1) + c.pad,
        c.m.max(1) + c.pad,
    );
    let ldd = ldc + 1;
    let strides = [
        span(a_rows, a_cols, lda),
        span(b_rows, b_cols, ldb),
        span(c.m, c.n, ldc),
        span(c.m, c.n, ldd),
    ];
    let total = |s: usize| (s * c.batch as usize).max(1);
    let nan_a = c.alpha == 0.0;
    let a: Vec<f32> = (0..total(strides[0]))
        .map(|_| if nan_a { f32::NAN } else { values() })
        .collect();
    let b: Vec<f32> = (0..total(strides[1]))
        .map(|_| if nan_a { f32::NAN } else { values() })
        .collect();
    let cm: Vec<f32> = (0..total(strides[2]))
        .map(|_| if c.beta == 0.0 { f32::NAN } else { values() })
        .collect();
    let d_len = total(strides[3]);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let (a_dev, b_dev, c_dev) = (
        sim.upload(&bits(&a)),
        sim.upload(&bits(&b)),
        sim.upload(&bits(&cm)),
    );
    let d_dev = sim.poisoned::<u32>(d_len);
    let flags = u32::from(c.trans_a) << TRANSPOSE_A | u32::from(c.trans_b) << TRANSPOSE_B;
    let args = Args::default()
        .u64(a_dev)
        .u64(b_dev)
        .u64(c_dev)
        .u64(d_dev)
        .u32(c.m)
        .u32(c.n)
        .u32(c.k)
        .u32(lda)
        .u32(ldb)
        .u32(ldc)
        .u32(ldd)
        .u64(strides[0] as u64)
        .u64(strides[1] as u64)
        .u64(strides[2] as u64)
        .u64(strides[3] as u64)
        .arg(c.alpha)
        .arg(c.beta)
        .u32(flags);
    let grid = [
        c.m.div_ceil(TILE).max(1) * THREADS,
        c.n.div_ceil(TILE).max(1),
        c.batch,
    ];
    sim.d
        .run(
            &sim.p,
            "gemm_f32_fma",
            grid,
            [THREADS as u16, 1, 1],
            &args.0,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", sim.at(&what)));
    let out: Vec<f32> = sim
        .output::<u32>(d_dev, d_len, &what)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    for bi in 0..c.batch as usize {
        for j in 0..c.n as usize {
            for i in 0..c.m as usize {
                let (mut exact_sum, mut abs) = (0f64, 0f64);
                if c.alpha != 0.0 {
                    for l in 0..c.k as usize {
                        let av = if c.trans_a {
                            a[bi * strides[0] + l + i * lda as usize]
                        } else {
                            a[bi * strides[0] + i + l * lda as usize]
                        };
                        let bv = if c.trans_b {
                            b[bi * strides[1] + j + l * ldb as usize]
                        } else {
                            b[bi * strides[1] + l + j * ldb as usize]
                        };
                        exact_sum += f64::from(av) * f64::from(bv);
                        abs += (f64::from(av) * f64::from(bv)).abs();
                    }
                }
                let cv = if c.beta == 0.0 {
                    0.0
                } else {
                    f64::from(cm[bi * strides[2] + i + j * ldc as usize])
                };
                let want = f64::from(c.alpha) * exact_sum + f64::from(c.beta) * cv;
                let got = f64::from(out[bi * strides[3] + i + j * ldd as usize]);
                let u = 2f64.powi(-24);
                let tol = if exact {
                    0.0
                } else {
                    2.0 * f64::from(c.k) * u * abs * f64::from(c.alpha).abs()
                        + u * (f64::from(c.beta) * cv).abs()
                        + u * want.abs()
                };
                assert!(
                    (got - want).abs() <= tol,
                    "{}: D[{i}, {j}, {bi}] = {got}, want {want} (± {tol})",
                    sim.at(&what)
                );
            }
        }
        // The padding rows of D (ldd > M) are left alone (the last
        // column's are the next batch's first elements).
        for j in 0..(c.n as usize).saturating_sub(1) {
            for i in c.m as usize..ldd as usize {
                let at = bi * strides[3] + i + j * ldd as usize;
                if at < d_len {
                    let poison = <u32 as aqueduct_tests::Word>::POISON;
                    assert_eq!(
                        out[at].to_bits(),
                        poison,
                        "{}: padding D[{i}, {j}] written",
                        sim.at(&what)
                    );
                }
            }
        }
    }
    sim.free(&[a_dev, b_dev, c_dev, d_dev]);
}

#[test]
fn fma_f32_gemm_matches_the_cpu_for_every_transpose_and_edge() {
    let mut rng = Rng(0x6E33_F32A);
    for sim in simulated(GEMM) {
        let mut small = || rng.below(5) as f32 - 2.0;
        for (trans_a, trans_b) in [(false, false), (false, true), (true, false), (true, true)] {
            for (m, n, k) in [
                (1, 1, 1),
                (7, 5, 3),
                (64, 64, 16),
                (65, 66, 9),
                (127, 131, 61),
            ] {
                let case = Case {
                    m,
                    n,
                    k,
                    trans_a,
                    trans_b,
                    pad: 0,
                    batch: 1,
                    alpha: 2.0,
                    beta: -1.0,
                };
                run(&sim, case, &mut small, true);
            }
        }
        let base = Case {
            m: 37,
            n: 21,
            k: 9,
            trans_a: false,
            trans_b: true,
            pad: 3,
            batch: 3,
            alpha: 1.5,
            beta: 0.0,
        };
        // beta = 0 with NaN in C; larger leading dimensions; batch 3.
        run(&sim, base, &mut small, true);
        // K = 0: D = beta C.
        run(
            &sim,
            Case {
                k: 0,
                beta: 2.0,
                ..base
            },
            &mut small,
            true,
        );
        // alpha = 0 with NaN in A and B.
        run(
            &sim,
            Case {
                alpha: 0.0,
                beta: 3.0,
                ..base
            },
            &mut small,
            true,
        );
        // Random floats, within the bound.
        let mut floats = || rng.f32() * 2.0 - 1.0;
        run(
            &sim,
            Case {
                m: 100,
                n: 70,
                k: 45,
                beta: 0.5,
                ..base
            },
            &mut floats,
            false,
        );
    }
}
