//! aqueduct's own GEMM kernels on the simulator (every simulated target)
//! against an f64 CPU reference: the FMA fallback, the MFMA kernels of
//! CDNA and the WMMA kernels of RDNA3/RDNA4 (every macro-tile), for f32,
//! and f16/bf16 inputs with f16/bf16/f32 output, FP8/BF8 inputs with f32
//! output on gfx942 (FNUZ), gfx950 and gfx1201 (OCP), gfx950's MXFP8 and
//! MXFP6 and MXFP4 (OCP FP8/BF8/FP6/BF6/FP4 with E8M0 scales per 32 k of
//! each row of A and column of B, 2^-3 to 2^4, which the reference
//! applies block by block; MXFP6 and MXFP4 in their one layout,
//! [`packed_cases`]), on gfx942 xf32 (f32
//! multiplied at xf32 precision), and the signed 8-bit integer kernels
//! of every matrix target (MFMA and WMMA; i32 out, inputs over all of
//! i8, the reference in i32 arithmetic modulo 2^32, one case past 2^31).
//!
//! Inputs are small integers, so products and sums are exact in f32 and
//! every result is exact in the output type (|D| < 256 for bf16): the
//! comparison is exact; one case of random floats compares within
//! `2 K u Σ|a b| + u |beta c|` (u = 2^-24, f32 fused multiply-adds in K
//! order against the exact sum), plus the kernel's own product error for
//! xf32 (`Kernel::u`). D is poisoned (and one element past it
//! checked) before every run; beta = 0 runs with a NaN-poisoned C and
//! alpha = 0 with NaN-poisoned A and B, which must not reach D.

#![feature(f16)]

use aqueduct_abi::gemm::{GemmArgs, GemmFlags, scale_blocks};
use aqueduct_abi::gfx::Fp8Format;
use aqueduct_gemm::common::{ElementType, GemmKernel};
use aqueduct_gemm::{fma, mfma, wmma};
use aqueduct_tests::{Rng, Sim, simulated};
use zerocopy::IntoBytes;

const GEMM: &str = "aqueduct-gemm";

/// Element types as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ty {
    F32,
    F16,
    Bf16,
    /// FP8, E4M3 in the target's format (FNUZ on gfx942, OCP on gfx950
    /// and gfx1201).
    Fp8(Fp8Format),
    /// BF8, E5M2 in the target's format.
    Bf8(Fp8Format),
    /// OCP FP4 (E2M1), two a byte (k even in the low nibble).
    Fp4,
    /// OCP FP6 (E2M3 with 2 exponent bits, E3M2 with 3), four in three
    /// bytes (element `i` of the buffer in bits `6 i ..`).
    Fp6(u32),
    /// Signed 8-bit integers (the integer kernels' A and B).
    I8,
    /// Signed 32-bit integers (their C and D).
    I32,
}

/// An FP4 E2M1 value (OCP Microscaling specification: sign, 2 exponent
/// bits of bias 1, 1 mantissa bit; no infinities or NaNs): ±{0, 0.5, 1,
/// 1.5, 2, 3, 4, 6}.
fn fp4(bits: u8) -> f64 {
    let (e, m) = (i32::from(bits >> 1 & 3), f64::from(bits & 1));
    let magnitude = if e == 0 {
        m * 0.5
    } else {
        (1.0 + m / 2.0) * 2f64.powi(e - 1)
    };
    if bits & 8 != 0 { -magnitude } else { magnitude }
}

/// An OCP FP6 value of `exp` exponent bits (2: E2M3, bias 1; 3: E3M2,
/// bias 3), the rest of bits 4:0 mantissa, bit 5 the sign; no infinities
/// or NaNs (OCP Microscaling specification, FP6 formats): E2M3's largest
/// is 7.5, E3M2's 28.
fn fp6(bits: u8, exp: u32) -> f64 {
    let man_bits = 5 - exp;
    let e = i32::from(bits >> man_bits) & ((1 << exp) - 1);
    let m = f64::from(bits & ((1 << man_bits) - 1)) / f64::from(1 << man_bits);
    let bias = (1 << (exp - 1)) - 1;
    let magnitude = if e == 0 {
        m * 2f64.powi(1 - bias)
    } else {
        (1.0 + m) * 2f64.powi(e - bias)
    };
    if bits & 0x20 != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// An 8-bit float of `exp` exponent bits (4: E4M3, 5: E5M2), the rest
/// mantissa, in `format`:
/// - FNUZ (CDNA3 ISA, "Float8/BFloat8"; AMD's FNUZ formats): bias
///   `2^(exp-1)`, no infinities, 0x80 the only NaN, no negative zero;
/// - OCP (OCP 8-bit floating point specification): bias `2^(exp-1) - 1`;
///   E4M3FN has no infinities and NaN S.1111.111, E5M2 is IEEE-like
///   (exponent 31: infinities and NaNs).
fn eight_bit(bits: u8, exp: u32, format: Fp8Format) -> f64 {
    let man_bits = 7 - exp;
    let e = i32::from(bits >> man_bits) & ((1 << exp) - 1);
    let m_bits = i32::from(bits) & ((1 << man_bits) - 1);
    let top = (1 << exp) - 1;
    let (bias, special) = match format {
        Fp8Format::Fnuz => (1 << (exp - 1), (bits == 0x80).then_some(f64::NAN)),
        Fp8Format::Ocp => {
            let special = match (exp, e == top, m_bits) {
                (4, true, 7) => Some(f64::NAN),
                (5, true, 0) => Some(f64::INFINITY),
                (5, true, _) => Some(f64::NAN),
                _ => None,
            };
            ((1 << (exp - 1)) - 1, special)
        }
        Fp8Format::None => panic!("no 8-bit format"),
    };
    let m = f64::from(m_bits) / f64::from(1 << man_bits);
    let magnitude = special.unwrap_or(if e == 0 {
        m * 2f64.powi(1 - bias)
    } else {
        (1.0 + m) * 2f64.powi(e - bias)
    });
    if bits & 0x80 != 0 {
        -magnitude
    } else {
        magnitude
    }
}

impl Ty {
    /// The bits of `v`, which the callers keep exact in the type.
    fn encode(self, v: f32) -> u32 {
        let eight = |exp: u32, format: Fp8Format| -> u32 {
            if v.is_nan() {
                // FNUZ's one NaN; OCP's S.1111.111 (a NaN in both E4M3FN
                // and E5M2).
                return if format == Fp8Format::Fnuz {
                    0x80
                } else {
                    0x7F
                };
            }
            (0..=255u8)
                .find(|&b| eight_bit(b, exp, format) == f64::from(v))
                .map(u32::from)
                .unwrap_or_else(|| panic!("{v} is not exact in {self:?}"))
        };
        match self {
            Ty::F32 => v.to_bits(),
            Ty::F16 => u32::from((v as f16).to_bits()),
            Ty::Bf16 => v.to_bits() >> 16,
            Ty::Fp8(f) => eight(4, f),
            Ty::Bf8(f) => eight(5, f),
            // No NaN in FP4: its largest value stands for the poison.
            Ty::Fp4 if v.is_nan() => 0x7,
            Ty::Fp4 => (0..16u8)
                .find(|&b| fp4(b) == f64::from(v))
                .map(u32::from)
                .unwrap_or_else(|| panic!("{v} is not exact in FP4")),
            // No NaN in FP6 either: its largest value for the poison.
            Ty::Fp6(_) if v.is_nan() => 0x1F,
            Ty::Fp6(exp) => (0..64u8)
                .find(|&b| fp6(b, exp) == f64::from(v))
                .map(u32::from)
                .unwrap_or_else(|| panic!("{v} is not exact in {self:?}")),
            // No NaN in the integers: their extremes stand for the poison.
            Ty::I8 if v.is_nan() => 0x7F,
            Ty::I32 if v.is_nan() => 0x8000_0000,
            Ty::I8 | Ty::I32 => {
                assert!(v.fract() == 0.0, "{v} is not an integer");
                let bits = v as i32 as u32;
                if self == Ty::I8 { bits & 0xFF } else { bits }
            }
        }
    }

    fn decode(self, bits: u32) -> f64 {
        match self {
            Ty::F32 => f64::from(f32::from_bits(bits)),
            Ty::F16 => f64::from(f16::from_bits(bits as u16)),
            Ty::Bf16 => f64::from(f32::from_bits(bits << 16)),
            Ty::Fp8(f) => eight_bit(bits as u8, 4, f),
            Ty::Bf8(f) => eight_bit(bits as u8, 5, f),
            Ty::Fp4 => fp4(bits as u8),
            Ty::Fp6(exp) => fp6(bits as u8, exp),
            Ty::I8 => f64::from(bits as u8 as i8),
            Ty::I32 => f64::from(bits as i32),
        }
    }

    fn bytes(self) -> usize {
        match self {
            Ty::F32 | Ty::I32 => 4,
            Ty::F16 | Ty::Bf16 => 2,
            Ty::Fp8(_) | Ty::Bf8(_) | Ty::Fp4 | Ty::Fp6(_) | Ty::I8 => 1,
        }
    }
}

/// Packs elements of `ty` (bits in u32s) into bytes: FP4 two a byte,
/// FP6 four in three (element `i` in bits `6 i ..` of the bytes).
fn pack(ty: Ty, v: &[u32]) -> Vec<u8> {
    if let Ty::Fp6(_) = ty {
        let mut out = vec![0u8; (v.len() * 6).div_ceil(8)];
        for (i, &e) in v.iter().enumerate() {
            let bits = u32::from(e as u8 & 0x3F) << (i * 6 % 8);
            for (j, byte) in bits.to_le_bytes().iter().take(2).enumerate() {
                if let Some(o) = out.get_mut(i * 6 / 8 + j) {
                    *o |= byte;
                }
            }
        }
        return out;
    }
    if ty == Ty::Fp4 {
        return v
            .chunks(2)
            .map(|p| (p[0] | p.get(1).copied().unwrap_or(0) << 4) as u8)
            .collect();
    }
    v.iter()
        .flat_map(|&b| b.to_le_bytes()[..ty.bytes()].to_vec())
        .collect()
}

#[derive(Clone, Copy, Debug)]
struct Case {
    m: u32,
    n: u32,
    k: u32,
    trans_a: bool,
    trans_b: bool,
    /// Extra rows in every leading dimension.
    pad: u32,
    /// Leading dimensions rounded up to a multiple of this (1: as they
    /// are), so 128-bit loads can be aligned.
    align: u32,
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

/// A kernel, its element types, the macro-tile one workgroup of `threads`
/// work-items computes, and the relative error of one of its products
/// (`u`): f32's 2^-24, or 2^-10 for xf32, whose inputs keep 11
/// significant bits (each rounded by up to 2^-11).
#[derive(Clone, Copy, Debug)]
struct Kernel {
    name: &'static str,
    input: Ty,
    output: Ty,
    tile: (u32, u32),
    threads: u32,
    u: f64,
    /// A and B come with E8M0 block scales (MX).
    scaled: bool,
}

impl Kernel {
    /// `k` as built for `gfx` (whose 8-bit formats its FP8/BF8 take).
    fn of(k: &GemmKernel, gfx: &str) -> Self {
        let format = aqueduct_abi::gfx::gfx(gfx).map_or(Fp8Format::None, |g| g.fp8);
        let ty = |t: ElementType| match t {
            ElementType::F32 => Ty::F32,
            ElementType::F16 => Ty::F16,
            ElementType::Bf16 => Ty::Bf16,
            ElementType::Fp8 => Ty::Fp8(format),
            ElementType::Bf8 => Ty::Bf8(format),
            // MXFP8: OCP elements (gfx950's), scaled per 32 k.
            ElementType::MxFp8 => Ty::Fp8(Fp8Format::Ocp),
            ElementType::MxBf8 => Ty::Bf8(Fp8Format::Ocp),
            ElementType::MxFp4 => Ty::Fp4,
            ElementType::MxFp6 => Ty::Fp6(2),
            ElementType::MxBf6 => Ty::Fp6(3),
            ElementType::Xf32 => Ty::F32,
            ElementType::I8 => Ty::I8,
            ElementType::I32 => Ty::I32,
        };
        Self {
            name: k.name,
            input: ty(k.input),
            output: ty(k.output),
            tile: (k.tile_rows, k.tile_cols),
            threads: k.threads,
            u: if k.input == ElementType::Xf32 {
                2f64.powi(-10)
            } else {
                2f64.powi(-24)
            },
            scaled: k.input.block_scaled(),
        }
    }
}

/// The kernels of `list` built for `sim`'s target.
fn built(list: &[GemmKernel], sim: &Sim) -> Vec<Kernel> {
    let gfx = sim.d.target.name();
    list.iter()
        .filter(|k| k.built_for(gfx))
        .map(|k| Kernel::of(k, gfx))
        .collect()
}

/// Runs one case; `values` draws the inputs (exact in the kernel's types
/// when `exact`).
fn run(sim: &Sim, kernel: Kernel, c: Case, values: &mut dyn FnMut() -> f32, exact: bool) {
    let what = format!("{} {c:?}", kernel.name);
    let (a_rows, a_cols) = if c.trans_a { (c.k, c.m) } else { (c.m, c.k) };
    let (b_rows, b_cols) = if c.trans_b { (c.n, c.k) } else { (c.k, c.n) };
    let ld = |rows: u32| (rows.max(1) + c.pad).next_multiple_of(c.align);
    let (lda, ldb, ldc) = (ld(a_rows), ld(b_rows), ld(c.m));
    let ldd = ldc + 1;
    let strides = [
        span(a_rows, a_cols, lda),
        span(b_rows, b_cols, ldb),
        span(c.m, c.n, ldc),
        span(c.m, c.n, ldd),
    ];
    let total = |s: usize| (s * c.batch as usize).max(1);
    let nan_a = c.alpha == 0.0;
    let (tin, tout) = (kernel.input, kernel.output);
    // Drawn, then stored: the reference uses what the kernel reads.
    let mut draw = |ty: Ty, n: usize, nan: bool| -> Vec<u32> {
        (0..n)
            .map(|_| ty.encode(if nan { f32::NAN } else { values() }))
            .collect()
    };
    let a = draw(tin, total(strides[0]), nan_a);
    let b = draw(tin, total(strides[1]), nan_a);
    let cm = draw(tout, total(strides[2]), c.beta == 0.0);
    let d_len = total(strides[3]);
    let mem = sim.d.memory();
    let up = |ty: Ty, v: &[u32]| mem.alloc_bytes(&pack(ty, v)).expect("alloc");
    let (a_dev, b_dev, c_dev) = (up(tin, &a), up(tin, &b), up(tout, &cm));
    // MX: E8M0 scales 2^-3 .. 2^4 (bytes 124 ..= 131), neighbours
    // unrelated; batch z's M (N) rows of ⌈K / 32⌉ each.
    let blocks = scale_blocks(c.k) as usize;
    let scale_bytes = |rows: u32, salt: u64| -> Vec<u8> {
        (0..(rows as usize * blocks * c.batch as usize).max(1))
            .map(|i| 124 + ((i as u64 ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61) as u8)
            .collect()
    };
    let (sa, sb) = (scale_bytes(c.m, 0x5A), scale_bytes(c.n, 0xB5));
    let (sa_dev, sb_dev) = if kernel.scaled {
        let up = |v: &[u8]| mem.alloc_bytes(v).expect("alloc");
        (up(&sa), up(&sb))
    } else {
        (0, 0)
    };
    // The factor the kernel applies to A[i][l] · B[l][j] of batch `bi`.
    let scale = |bi: usize, i: usize, j: usize, l: usize| -> f64 {
        if !kernel.scaled {
            return 1.0;
        }
        let (ra, rb) = (bi * c.m as usize + i, bi * c.n as usize + j);
        let e = i32::from(sa[ra * blocks + l / 32]) + i32::from(sb[rb * blocks + l / 32]);
        2f64.powi(e - 254)
    };
    let d_dev = match tout {
        Ty::F32 | Ty::I32 => sim.poisoned::<u32>(d_len),
        _ => sim.poisoned::<u16>(d_len),
    };
    let args = GemmArgs {
        a: a_dev,
        b: b_dev,
        c: c_dev,
        d: d_dev,
        m: c.m,
        n: c.n,
        k: c.k,
        lda,
        ldb,
        ldc,
        ldd,
        reserved0: 0,
        stride_a: strides[0] as u64,
        stride_b: strides[1] as u64,
        stride_c: strides[2] as u64,
        stride_d: strides[3] as u64,
        alpha: c.alpha,
        beta: c.beta,
        flags: GemmFlags::transposed(c.trans_a, c.trans_b),
        reserved: 0,
        scale_a: sa_dev,
        scale_b: sb_dev,
    };
    let grid = [
        c.m.div_ceil(kernel.tile.0).max(1) * kernel.threads,
        c.n.div_ceil(kernel.tile.1).max(1),
        c.batch,
    ];
    sim.d
        .run(
            &sim.p,
            kernel.name,
            grid,
            [kernel.threads as u16, 1, 1],
            args.as_bytes(),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", sim.at(&what)));
    let (out, poison): (Vec<u32>, u32) = match tout {
        Ty::F32 | Ty::I32 => (
            sim.output::<u32>(d_dev, d_len, &what),
            <u32 as aqueduct_tests::Word>::POISON,
        ),
        _ => (
            sim.output::<u16>(d_dev, d_len, &what)
                .into_iter()
                .map(u32::from)
                .collect(),
            u32::from(<u16 as aqueduct_tests::Word>::POISON),
        ),
    };
    let u = 2f64.powi(-24);
    for bi in 0..c.batch as usize {
        for j in 0..c.n as usize {
            for i in 0..c.m as usize {
                let (mut sum, mut abs) = (0f64, 0f64);
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
                        let p = tin.decode(av) * tin.decode(bv) * scale(bi, i, j, l);
                        sum += p;
                        abs += p.abs();
                    }
                }
                let cv = if c.beta == 0.0 {
                    0.0
                } else {
                    tout.decode(cm[bi * strides[2] + i + j * ldc as usize])
                };
                let want = if tout == Ty::I32 {
                    // i32 arithmetic modulo 2^32 (the WMMA's sums wrap
                    // too): `sum` is exact in f64, alpha and beta integral.
                    let wrap = |x: f64| x as i64 as i32;
                    let (alpha, beta) = (wrap(f64::from(c.alpha)), wrap(f64::from(c.beta)));
                    let d = alpha
                        .wrapping_mul(wrap(sum))
                        .wrapping_add(beta.wrapping_mul(wrap(cv)));
                    f64::from(d)
                } else {
                    f64::from(c.alpha) * sum + f64::from(c.beta) * cv
                };
                let got = tout.decode(out[bi * strides[3] + i + j * ldd as usize]);
                let tol = if exact {
                    0.0
                } else {
                    (2.0 * f64::from(c.k) * u + kernel.u) * abs * f64::from(c.alpha).abs()
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
                assert_eq!(
                    out[at],
                    poison,
                    "{}: padding D[{i}, {j}] written",
                    sim.at(&what)
                );
            }
        }
    }
    sim.free(&[a_dev, b_dev, c_dev, d_dev]);
    if kernel.scaled {
        sim.free(&[sa_dev, sb_dev]);
    }
}

/// The batch, K = 0 and alpha = 0 cases every kernel runs (alpha 3
/// where 1.5 is not an integer kernel's).
fn special_cases(sim: &Sim, kernel: Kernel, values: &mut dyn FnMut() -> f32) {
    let base = Case {
        m: 37,
        n: 21,
        k: 9,
        trans_a: false,
        trans_b: true,
        pad: 3,
        align: 1,
        batch: 3,
        alpha: if kernel.output == Ty::I32 { 3.0 } else { 1.5 },
        beta: 0.0,
    };
    // beta = 0 with NaN in C; larger leading dimensions; batch 3.
    run(sim, kernel, base, values, true);
    // K = 0: D = beta C.
    run(
        sim,
        kernel,
        Case {
            k: 0,
            beta: 2.0,
            ..base
        },
        values,
        true,
    );
    // alpha = 0 with NaN in A and B.
    run(
        sim,
        kernel,
        Case {
            alpha: 0.0,
            beta: 3.0,
            ..base
        },
        values,
        true,
    );
}

/// The reference's FP6 decoders give each format's extremes (OCP
/// Microscaling specification, FP6: E2M3 max 7.5, min subnormal 2^-3;
/// E3M2 max 28, min subnormal 2^-4), and `pack` puts element `i` in bits
/// `6 i ..`: four elements fill three bytes.
#[test]
fn the_fp6_references_give_each_formats_extremes_and_pack_four_in_three() {
    for (bits, exp, want) in [
        (0x1F, 2, 7.5),
        (0x01, 2, 0.125),
        (0x08, 2, 1.0),
        (0x21, 2, -0.125),
        (0x1F, 3, 28.0),
        (0x01, 3, 0.0625),
        (0x0C, 3, 1.0),
        (0x3F, 3, -28.0),
    ] {
        assert_eq!(fp6(bits, exp), want, "{bits:#x} E{exp}");
    }
    let packed = pack(Ty::Fp6(2), &[0x3F, 0x00, 0x15, 0x2A, 0x01]);
    assert_eq!(
        packed,
        [0x3F, 0x50, 0xA9, 0x01],
        "0b111111 | 0 << 6 | 0b010101 << 12 | 0b101010 << 18 | 1 << 24"
    );
}

/// The reference's 8-bit decoders give each format's extremes: OCP E4M3FN
/// max 448 and no infinity, E5M2 max 57344 then infinity (OCP 8-bit
/// floating point specification, Table 1); FNUZ E4M3 max 240, E5M2 max
/// 57344 (LLVM's `Float8E4M3FNUZ`/`Float8E5M2FNUZ`), and smallest
/// subnormals 2^-9, 2^-16 (OCP) and 2^-10, 2^-17 (FNUZ).
#[test]
fn the_8_bit_references_give_each_formats_extremes() {
    use Fp8Format::{Fnuz, Ocp};
    for (bits, exp, format, want) in [
        (0x7E, 4, Ocp, 448.0),
        (0x01, 4, Ocp, 2f64.powi(-9)),
        (0x08, 4, Ocp, 2f64.powi(-6)),
        (0xBC, 4, Ocp, -1.5),
        (0x7B, 5, Ocp, 57344.0),
        (0x7C, 5, Ocp, f64::INFINITY),
        (0x01, 5, Ocp, 2f64.powi(-16)),
        (0x7F, 4, Fnuz, 240.0),
        (0x7F, 5, Fnuz, 57344.0),
        (0x01, 4, Fnuz, 2f64.powi(-10)),
        (0x01, 5, Fnuz, 2f64.powi(-17)),
        (0xC4, 4, Fnuz, -1.5),
    ] {
        assert_eq!(
            eight_bit(bits, exp, format),
            want,
            "{bits:#x} {exp} {format:?}"
        );
    }
    assert!(eight_bit(0x7F, 4, Ocp).is_nan() && eight_bit(0xFF, 4, Ocp).is_nan());
    assert!(eight_bit(0x7D, 5, Ocp).is_nan());
    assert!(eight_bit(0x80, 4, Fnuz).is_nan() && eight_bit(0x80, 5, Fnuz).is_nan());
    assert_eq!(eight_bit(0x80, 4, Ocp), 0.0);
}

/// The packed types' cases (MXFP4: two elements a byte, a slice 128 k;
/// MXFP6: four in three bytes, a slice 64 k): K contiguous (A
/// transposed, B as is), K and the leading dimensions multiples of the
/// `unit` (2, 4): tiny and odd M and N, a whole tile (K one slice), past
/// a tile, whole tiles with a K tail (the main loop, then the tail
/// slice), batch 3 with padding and beta = 0 over NaN, K = 0, and alpha
/// = 0 (A and B poisoned with the type's largest value: it has no NaN).
fn packed_cases(sim: &Sim, kernel: Kernel, values: &mut dyn FnMut() -> f32) {
    let tn = (true, false);
    let (tm, tt) = kernel.tile;
    // Elements a unit, K a slice, and the K of two slices and a tail
    // with leading dimensions aligned for 128-bit loads.
    let (unit, slice, tail_k, tail_align) = match kernel.input {
        Ty::Fp4 => (2, 128, 138, 8),
        _ => (4, 64, 140, 64),
    };
    let even = |c: Case| Case { align: unit, ..c };
    for (m, n, k) in [
        (1, 1, unit),
        (7, 5, 3 * unit),
        (tm, tt, slice),
        (tm + 1, tt + 2, slice / 2 + unit),
    ] {
        run(sim, kernel, even(plain(m, n, k, tn)), values, true);
    }
    let tail = Case {
        align: tail_align,
        ..plain(tm, tt, tail_k, tn)
    };
    run(sim, kernel, tail, values, true);
    let base = Case {
        pad: 2,
        batch: 3,
        alpha: 1.5,
        beta: 0.0,
        ..even(plain(37, 21, 5 * unit, tn))
    };
    run(sim, kernel, base, values, true);
    let k0 = Case {
        k: 0,
        beta: 2.0,
        ..base
    };
    run(sim, kernel, k0, values, true);
    let alpha0 = Case {
        alpha: 0.0,
        beta: 3.0,
        ..base
    };
    run(sim, kernel, alpha0, values, true);
}

const TRANSPOSES: [(bool, bool); 4] = [(false, false), (false, true), (true, false), (true, true)];

/// A case with alpha 2, beta −1, no padding, one batch.
fn plain(m: u32, n: u32, k: u32, (trans_a, trans_b): (bool, bool)) -> Case {
    Case {
        m,
        n,
        k,
        trans_a,
        trans_b,
        pad: 0,
        align: 1,
        batch: 1,
        alpha: 2.0,
        beta: -1.0,
    }
}

/// Random f32 in [-1, 1), within the bound, for `kernel` (f32 in and out).
fn random_floats(sim: &Sim, kernel: Kernel, rng: &mut Rng) {
    let mut floats = || rng.f32() * 2.0 - 1.0;
    let case = Case {
        m: 100,
        n: 70,
        k: 45,
        trans_a: true,
        trans_b: false,
        pad: 1,
        align: 1,
        batch: 1,
        alpha: 1.5,
        beta: 0.5,
    };
    run(sim, kernel, case, &mut floats, false);
}

/// Every kernel of every aqueduct-gemm code object takes `GemmArgs`'
/// fields, in order, where its metadata puts them (the host writes the
/// struct: `GemmPlan::dispatch`), the matrices as pointers that a command
/// buffer binds by name; and they are the kernels of the tables.
#[test]
fn every_kernel_takes_gemm_args_where_its_metadata_puts_them() {
    use aqueduct::code_object::CodeObject;
    use std::mem::{offset_of, size_of, size_of_val};
    use zerocopy::FromZeros;
    let zero = GemmArgs::new_zeroed();
    macro_rules! fields {
        ($($field:ident: $kind:literal),*) => {
            [$((
                stringify!($field),
                offset_of!(GemmArgs, $field),
                size_of_val(&zero.$field),
                $kind,
            )),*]
        };
    }
    let want = fields!(
        a: "global_buffer", b: "global_buffer", c: "global_buffer", d: "global_buffer",
        m: "by_value", n: "by_value", k: "by_value",
        lda: "by_value", ldb: "by_value", ldc: "by_value", ldd: "by_value",
        stride_a: "by_value", stride_b: "by_value", stride_c: "by_value", stride_d: "by_value",
        alpha: "by_value", beta: "by_value", flags: "by_value",
        scale_a: "global_buffer", scale_b: "global_buffer"
    );
    let code_objects: Vec<_> = aqueduct_tests::built_code_objects()
        .into_iter()
        .filter(|b| b.package == GEMM)
        .collect();
    assert!(!code_objects.is_empty());
    for built in code_objects {
        let bytes = std::fs::read(&built.path).expect("read");
        let code = CodeObject::parse(&bytes).expect("parse");
        let mut names: Vec<&str> = code
            .kernels
            .iter()
            .map(|k| k.metadata.name.as_str())
            .collect();
        let mut table: Vec<&str> = fma::KERNELS
            .iter()
            .chain(mfma::KERNELS)
            .chain(wmma::KERNELS)
            .filter(|k| k.built_for(built.gfx))
            .map(|k| k.name)
            .collect();
        names.sort_unstable();
        table.sort_unstable();
        assert_eq!(names, table, "{}", built.gfx);
        for kernel in &code.kernels {
            let meta = &kernel.metadata;
            let got: Vec<_> = meta
                .args
                .iter()
                .map(|a| {
                    (
                        a.name.as_deref().unwrap_or("?"),
                        a.offset as usize,
                        a.size as usize,
                        a.value_kind.as_str(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{}: {}", built.gfx, meta.name);
            assert!(
                meta.kernarg_segment_size as usize <= size_of::<GemmArgs>(),
                "{}: {} takes {} bytes",
                built.gfx,
                meta.name,
                meta.kernarg_segment_size
            );
        }
    }
}

#[test]
fn fma_gemm_matches_the_cpu_for_every_type_transpose_and_edge() {
    let mut rng = Rng(0x6E33_F32A);
    for sim in simulated(GEMM) {
        let kernels = built(fma::KERNELS, &sim);
        for &kernel in &kernels {
            // In {-1, 0, 1}: every D below 256, exact in bf16 too.
            let mut small = || rng.below(3) as f32 - 1.0;
            for t in TRANSPOSES {
                for (m, n, k) in [
                    (1, 1, 1),
                    (7, 5, 3),
                    (64, 64, 16),
                    (65, 66, 9),
                    (127, 131, 61),
                ] {
                    run(&sim, kernel, plain(m, n, k, t), &mut small, true);
                }
            }
            special_cases(&sim, kernel, &mut small);
        }
        random_floats(&sim, kernels[0], &mut rng);
    }
}

/// Every kernel of a matrix family (each macro-tile of each type), every
/// transpose: tiny and odd sizes (element-wise loads), one exact tile with
/// K a multiple of the slice (every slice through the main loop's 128-bit
/// loads: leading dimensions of whole tiles are 16-byte aligned), one
/// exact tile with a K tail (main loop, then the tail slice), one past a
/// tile, a prime size for one transpose, the special cases, and random
/// floats.
#[test]
fn mfma_gemm_matches_the_cpu_for_every_type_tile_transpose_and_edge() {
    matrix_gemm_matches_the_cpu(mfma::KERNELS, Rng(0x3FA_6E33));
}

/// The same for the WMMA kernels of gfx1100 and gfx1201 (wave32; GFX11's
/// and GFX12's operand and result layouts).
#[test]
fn wmma_gemm_matches_the_cpu_for_every_type_tile_transpose_and_edge() {
    matrix_gemm_matches_the_cpu(wmma::KERNELS, Rng(0x3FA_3A33));
}

fn matrix_gemm_matches_the_cpu(list: &[GemmKernel], mut rng: Rng) {
    let mut ran = 0;
    for sim in simulated(GEMM) {
        let kernels = built(list, &sim);
        for &kernel in &kernels {
            ran += 1;
            let (tm, tn) = kernel.tile;
            // Integers take their whole range (|D| stays below 2^31 but
            // for the wrapping case below); the others {-1, 0, 1}.
            let integer = kernel.input == Ty::I8;
            let mut small = || {
                if integer {
                    rng.below(256) as f32 - 128.0
                } else {
                    rng.below(3) as f32 - 1.0
                }
            };
            if matches!(kernel.input, Ty::Fp4 | Ty::Fp6(_)) {
                packed_cases(&sim, kernel, &mut small);
                continue;
            }
            for t in TRANSPOSES {
                for (m, n, k) in [(1, 1, 1), (7, 5, 3), (tm, tn, 64), (tm + 1, tn + 2, 33)] {
                    run(&sim, kernel, plain(m, n, k, t), &mut small, true);
                }
            }
            run(
                &sim,
                kernel,
                plain(127, 131, 61, (false, true)),
                &mut small,
                true,
            );
            // Whole tiles with a K tail: the main loop, then the tail
            // slice element by element (leading dimensions 16-byte
            // aligned).
            let align = (16 / kernel.input.bytes() as u32).max(8);
            for t in TRANSPOSES {
                let case = Case {
                    align,
                    ..plain(tm, tn, 69, t)
                };
                run(&sim, kernel, case, &mut small, true);
            }
            if integer {
                // Past 2^31: alpha · sum wraps modulo 2^32, as i32 does.
                let case = Case {
                    alpha: 65537.0,
                    ..plain(tm, tn, 64, (true, false))
                };
                run(&sim, kernel, case, &mut small, true);
            }
            special_cases(&sim, kernel, &mut small);
            if kernel.input == Ty::F32 {
                random_floats(&sim, kernel, &mut rng);
            }
        }
    }
    assert!(ran > 0, "no simulated target has a kernel of the family");
}
