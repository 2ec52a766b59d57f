//! Varied GEMM problems for exercising a catalog: every transpose pair,
//! the types rocBLAS asks Tensile for (with the accumulate flag rocBLAS
//! sets), sizes spread log-uniformly over 1..=16384, batched and not, and
//! leading dimensions padded to odd values. Deterministic (a fixed seed),
//! so a run can be repeated and two runs compared.

use aqueduct_catalog::{DataType, Problem, Transpose};

pub use crate::rng::Rng;

/// (a, b, c, d types, high-precision accumulate): rocBLAS's GEMM flavours
/// (sgemm, dgemm, hgemm, hgemm with f32 compute, bf16 with f32 compute,
/// cgemm, zgemm, int8x4 into int32).
pub const FLAVOURS: [([DataType; 4], bool); 8] = {
    use DataType::*;
    [
        ([Float; 4], false),
        ([Double; 4], false),
        ([Half; 4], false),
        ([Half; 4], true),
        ([BFloat16, BFloat16, BFloat16, BFloat16], true),
        ([ComplexFloat; 4], false),
        ([ComplexDouble; 4], false),
        ([Int8x4, Int8x4, Int32, Int32], true),
    ]
};

/// `count` problems from `seed`.
pub fn problems(count: usize, seed: u64) -> Vec<Problem> {
    let mut rng = Rng::new(seed);
    let trans = [
        Transpose::None,
        Transpose::Transpose,
        Transpose::ConjugateTranspose,
    ];
    (0..count)
        .map(|i| {
            let (types, hpa) = FLAVOURS[i % FLAVOURS.len()];
            let complex = types[0].is_complex();
            let pick = |rng: &mut Rng| trans[rng.below(if complex { 3 } else { 2 }) as usize];
            let (ta, tb) = (pick(&mut rng), pick(&mut rng));
            let (m, n, k) = (rng.size(16384), rng.size(16384), rng.size(16384));
            let mut p = Problem::gemm(ta, tb, m, n, k, types[0]);
            (p.c_type, p.d_type) = (types[2], types[3]);
            p.high_precision_accumulate = hpa;
            if rng.below(4) == 0 {
                p = p.with_batch(1 + rng.below(64));
            }
            if rng.below(2) == 0 {
                // Odd padding on every leading dimension.
                let pad = |rng: &mut Rng, ld: u64| ld + 1 + 2 * rng.below(8) + (ld % 2);
                let (lda, ldb, ldc) = (
                    pad(&mut rng, p.lda),
                    pad(&mut rng, p.ldb),
                    pad(&mut rng, p.ldc),
                );
                p = p.with_leading_dims(lda, ldb, ldc, ldc);
            }
            p.beta = [0.0, 1.0, 0.5][rng.below(3) as usize];
            p
        })
        .collect()
}

/// (inputs, output, compute): the plain GEMMs hipBLASLt's catalogs serve
/// (f16 in and out, f16 in f32 out, bf16, f32, int8 into int32, OCP FP8
/// E4M3 into f32), each posed as `hipblasLtMatmul` poses it.
pub const HIPBLASLT_CLASSES: [(DataType, DataType, DataType); 6] = {
    use DataType::*;
    [
        (Half, Half, Float),
        (Half, Float, Float),
        (BFloat16, BFloat16, Float),
        (Float, Float, Float),
        (Int8, Int32, Int32),
        (Float8, Float, Float),
    ]
};

/// `count` plain hipBLASLt GEMMs from `seed` ([`Problem::hipblaslt`]):
/// every transpose pair, the classes above, sizes log-uniform over
/// 1..=16384, one in four batched (2..=8).
pub fn hipblaslt_problems(count: usize, seed: u64) -> Vec<Problem> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|_| {
            let (input, output, compute) =
                HIPBLASLT_CLASSES[rng.below(HIPBLASLT_CLASSES.len() as u64) as usize];
            let mut t = || {
                if rng.below(2) == 0 {
                    Transpose::None
                } else {
                    Transpose::Transpose
                }
            };
            let (ta, tb) = (t(), t());
            let mut size = || {
                let log = rng.below(15);
                1 + rng.below(1 << log)
            };
            let (m, n, k) = (size(), size(), size());
            let batch = if rng.below(4) == 0 {
                2 + rng.below(7)
            } else {
                1
            };
            Problem::hipblaslt(ta, tb, m, n, k, input, input, output, compute).with_batch(batch)
        })
        .collect()
}
