//! The MFMA kernels themselves (amdgpu, CDNA only): the intrinsics, the
//! per-slice MFMAs, the epilogue and the entry points; the K slices go
//! through LDS by `crate::staging`, which the WMMA kernels share.

use core::arch::amdgpu::workgroup_id_z;

use super::{
    BLOCK, Lines, SLICE_BYTES, THREADS, Tile, VECTOR, WAVE, d_place, fp6_offsets, operand_offset,
    scale_place,
};
#[cfg(aqueduct_gfx = "gfx942")]
use crate::common::Xf32;
#[cfg(any(aqueduct_gfx = "gfx942", aqueduct_gfx = "gfx950"))]
use crate::common::{Bf8, Fp8};
use crate::common::{Bf16, Element, F16, I8, Problem, Stored};
#[cfg(aqueduct_gfx = "gfx950")]
use crate::common::{MxBf6, MxBf8, MxFp4, MxFp6, MxFp8};
use crate::staging::{
    Accumulator, Elem, Place, Stage, Transposed, Vector, each_block, store_d, store_d_i32,
};

/// `<16 x float>`: one 32 × 32 MFMA block's accumulators in a lane.
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct F32x16([f32; 16]);

/// `<16 x i32>`: the integer kernels' accumulators of a block in a lane.
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I32x16([i32; 16]);

impl<In, Out: Element> Accumulator<In, Out> for F32x16 {
    const ZERO: Self = F32x16([0.0; 16]);

    // `#[inline]`, not `always`: forced into the epilogue's closure early,
    // the 256 × 256 kernels' epilogue spilled (48 VGPRs; 432 for f32)
    // where LLVM's own inlining does not.
    #[inline]
    fn store(self, p: &Problem<In, Out>, at: &Place, i: u32, j: u32) {
        // SAFETY: `<16 x float>` and `[f32; 16]` have the same size, and
        // every bit pattern is a valid f32.
        let values: [f32; 16] = unsafe { core::mem::transmute(self) };
        for (r, x) in values.iter().enumerate() {
            let (gr, gc) = at.d(BLOCK, i, j, d_place(at.lane, r as u32));
            store_d(p, gr, gc, *x);
        }
    }
}

impl<In> Accumulator<In, i32> for I32x16 {
    const ZERO: Self = I32x16([0; 16]);

    #[inline]
    fn store(self, p: &Problem<In, i32>, at: &Place, i: u32, j: u32) {
        // SAFETY: `<16 x i32>` and `[i32; 16]` have the same size, and
        // every bit pattern is valid for both.
        let values: [i32; 16] = unsafe { core::mem::transmute(self) };
        for (r, x) in values.iter().enumerate() {
            let (gr, gc) = at.d(BLOCK, i, j, d_place(at.lane, r as u32));
            store_d_i32(p, gr, gc, *x);
        }
    }
}

#[cfg(not(aqueduct_gfx = "gfx950"))]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct F16x4([f16; 4]);

#[cfg(not(aqueduct_gfx = "gfx950"))]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I16x4([i16; 4]);

// The instructions, through their LLVM intrinsics (IntrinsicsAMDGPU.td),
// with LLVM's exact types; CBSZ, ABID and BLGP are immargs, 0 here.
// The 16-bit forms of gfx90a and gfx942 (gfx950 takes its doubled-K ones).
#[cfg(not(aqueduct_gfx = "gfx950"))]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x8f16"]
    fn mfma_32x32x8f16(a: F16x4, b: F16x4, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x8bf16.1k"]
    fn mfma_32x32x8bf16_1k(
        a: I16x4,
        b: I16x4,
        c: F32x16,
        cbsz: i32,
        abid: i32,
        blgp: i32,
    ) -> F32x16;
}
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x2f32"]
    fn mfma_32x32x2f32(a: f32, b: f32, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
}

// gfx942's FP8/BF8 forms: eight FNUZ values per lane in an i64.
#[cfg(aqueduct_gfx = "gfx942")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.fp8.fp8"]
    fn mfma_32x32x16_fp8_fp8(a: i64, b: i64, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.bf8.bf8"]
    fn mfma_32x32x16_bf8_bf8(a: i64, b: i64, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x4.xf32"]
    fn mfma_32x32x4_xf32(a: F32x2, b: F32x2, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
}

/// `<2 x float>`: xf32's operand in a lane.
#[cfg(aqueduct_gfx = "gfx942")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct F32x2([f32; 2]);

/// An A/B element type of the MFMA kernels.
trait Input: Elem + Stored {
    /// A lane's accumulators of one block: f32, i32 for integers.
    type Acc: Copy;
    /// The chunks of a slice (16-byte reads of A and of B per lane) one
    /// call of [`Input::mfma`] takes: one, or both (1 and 2) for gfx950's
    /// f8f6f4 MFMA (64 k of FP8/BF8, the whole slice), called at the
    /// second.
    const CHUNKS: usize = 1;
    /// The MFMAs of `CHUNKS` reads of A and of B (`a[..CHUNKS]`,
    /// `b[..CHUNKS]`): `16 / BYTES` k a read, in the order `chunk_k` (or
    /// `f8f6f4_k`) gives.
    fn mfma(acc: Self::Acc, a: [Vector; 2], b: [Vector; 2]) -> Self::Acc;
    /// Whether A and B come with E8M0 block scales (the MX types), which
    /// [`Input::mfma_scaled`] takes.
    const SCALED: bool = false;
    /// [`Input::mfma`] with the lane's scale bytes of A and of B
    /// (`super::scale_place`); only the MX types read them.
    #[inline(always)]
    fn mfma_scaled(
        acc: Self::Acc,
        a: [Vector; 2],
        b: [Vector; 2],
        _sa: u32,
        _sb: u32,
    ) -> Self::Acc {
        Self::mfma(acc, a, b)
    }
}

/// E8M0's 1.0 (`2^(127 − 127)`): the scale of what lies outside the
/// problem's rows or K blocks (zeros in LDS, which any finite scale keeps
/// zero).
const E8M0_ONE: u32 = 127;

/// [`E8M0_ONE`] in memory, where the MX kernels read the scales of rows
/// and K blocks outside the problem.
static ONE: u8 = E8M0_ONE as u8;

#[cfg(not(aqueduct_gfx = "gfx950"))]
fn halves(w0: u32, w1: u32) -> [u16; 4] {
    [w0 as u16, (w0 >> 16) as u16, w1 as u16, (w1 >> 16) as u16]
}

/// The two MFMAs of four 16-bit elements each that one 16-byte read of A
/// and of B feed (`chunk_k`: elements 0-3, then 4-7).
#[cfg(not(aqueduct_gfx = "gfx950"))]
#[inline(always)]
fn two_mfmas(
    acc: F32x16,
    a: Vector,
    b: Vector,
    mfma: impl Fn(F32x16, [u16; 4], [u16; 4]) -> F32x16,
) -> F32x16 {
    let (a, b) = (a.words(), b.words());
    let acc = mfma(acc, halves(a[0], a[1]), halves(b[0], b[1]));
    mfma(acc, halves(a[2], a[3]), halves(b[2], b[3]))
}

#[cfg(not(aqueduct_gfx = "gfx950"))]
impl Input for F16 {
    type Acc = F32x16;
    #[inline(always)]
    fn mfma(acc: F32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> F32x16 {
        two_mfmas(acc, a, b, |c, a, b| {
            let (a, b) = (F16x4(a.map(f16::from_bits)), F16x4(b.map(f16::from_bits)));
            // SAFETY: gfx90a/gfx942/gfx950 have v_mfma_f32_32x32x8f16; the
            // operands have the intrinsic's types and the immargs are
            // literals.
            unsafe { mfma_32x32x8f16(a, b, c, 0, 0, 0) }
        })
    }
}

/// `<8 x half>`: gfx950's doubled-K f16 operand in a lane.
#[cfg(aqueduct_gfx = "gfx950")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct F16x8([f16; 8]);

// gfx950's doubled-K f16 form (CDNA4 ISA): eight f16 per lane, K = 16.
#[cfg(aqueduct_gfx = "gfx950")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x16.f16"]
    fn mfma_32x32x16_f16(a: F16x8, b: F16x8, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
}

/// On gfx950 one 16-byte read of A and of B is one doubled-K MFMA: lane
/// group `g` holds the read's eight k, which the hardware takes in its
/// own order, the same for A and B, so each k meets its partner once.
#[cfg(aqueduct_gfx = "gfx950")]
impl Input for F16 {
    type Acc = F32x16;
    #[inline(always)]
    fn mfma(acc: F32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> F32x16 {
        // SAFETY: `<4 x i32>` and `<8 x half>` have the same size, and
        // every bit pattern is valid for both.
        let (a, b): (F16x8, F16x8) = unsafe { (core::mem::transmute(a), core::mem::transmute(b)) };
        // SAFETY: gfx950 has v_mfma_f32_32x32x16_f16; the operands have
        // the intrinsic's types and the immargs are literals.
        unsafe { mfma_32x32x16_f16(a, b, acc, 0, 0, 0) }
    }
}

// gfx950's doubled-K bf16 form through `llvm/gemm.ll`'s wrapper: its
// intrinsic takes `<8 x bfloat>`, which Rust cannot name; the wrapper
// takes the lane's 16 bytes as `<4 x i32>`.
#[cfg(aqueduct_gfx = "gfx950")]
unsafe extern "C" {
    #[link_name = "aqueduct_gemm_mfma_32x32x16_bf16"]
    fn mfma_32x32x16_bf16(a: Vector, b: Vector, c: F32x16) -> F32x16;
}

/// On gfx950 one 16-byte read of A and of B is one doubled-K bf16 MFMA,
/// as for f16.
#[cfg(aqueduct_gfx = "gfx950")]
impl Input for Bf16 {
    type Acc = F32x16;
    #[inline(always)]
    fn mfma(acc: F32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> F32x16 {
        // SAFETY: gfx950 has v_mfma_f32_32x32x16_bf16, which the wrapper
        // calls with these bytes as eight bf16 a lane.
        unsafe { mfma_32x32x16_bf16(a, b, acc) }
    }
}

#[cfg(not(aqueduct_gfx = "gfx950"))]
impl Input for Bf16 {
    type Acc = F32x16;
    #[inline(always)]
    fn mfma(acc: F32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> F32x16 {
        two_mfmas(acc, a, b, |c, a, b| {
            let (a, b) = (I16x4(a.map(|h| h as i16)), I16x4(b.map(|h| h as i16)));
            // SAFETY: gfx90a/gfx942/gfx950 have v_mfma_f32_32x32x8bf16_1k;
            // the operands have the intrinsic's types and the immargs are
            // literals.
            unsafe { mfma_32x32x8bf16_1k(a, b, c, 0, 0, 0) }
        })
    }
}

/// The two MFMAs of eight 8-bit elements each that one 16-byte read of A
/// and of B feed (`chunk_k`: bytes 0-7, then 8-15), as i64s.
#[cfg(aqueduct_gfx = "gfx942")]
#[inline(always)]
fn two_byte_mfmas<T>(acc: T, a: Vector, b: Vector, mfma: impl Fn(T, i64, i64) -> T) -> T {
    let (a, b) = (a.words(), b.words());
    let pair = |lo: u32, hi: u32| (u64::from(lo) | u64::from(hi) << 32) as i64;
    let acc = mfma(acc, pair(a[0], a[1]), pair(b[0], b[1]));
    mfma(acc, pair(a[2], a[3]), pair(b[2], b[3]))
}

/// gfx942's 8-bit inputs, each through its own 32x32x16 MFMA.
macro_rules! eight_bit_inputs {
    ($($ty:ident => $intrinsic:ident;)*) => {$(
        #[cfg(aqueduct_gfx = "gfx942")]
        impl Input for $ty {
            type Acc = F32x16;
            #[inline(always)]
            fn mfma(acc: F32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> F32x16 {
                two_byte_mfmas(acc, a, b, |c, a, b| {
                    // SAFETY: gfx942 has the 32x32x16 FP8/BF8 MFMAs these
                    // intrinsics name; the operands have their types and
                    // the immargs are literals.
                    unsafe { $intrinsic(a, b, c, 0, 0, 0) }
                })
            }
        }
    )*};
}

eight_bit_inputs! {
    Fp8 => mfma_32x32x16_fp8_fp8;
    Bf8 => mfma_32x32x16_bf8_bf8;
}

/// `<8 x i32>`: 32 FP8/BF8 of an f8f6f4 operand in a lane.
#[cfg(aqueduct_gfx = "gfx950")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I32x8([i32; 8]);

// gfx950's f8f6f4 forms (CDNA4 ISA §7.1.5, §7.2): CBSZ and BLGP name A's
// and B's formats (0 FP8 E4M3, 1 BF8 E5M2: the OCP formats; 2 FP6 E2M3,
// 3 BF6 E3M2, 4 FP4 E2M1). LLVM has one
// intrinsic for the scaled and the plain forms: (A, B, C, CBSZ, BLGP,
// OP_SEL of A's scale, A's scales, OP_SEL of B's, B's scales); with both
// scales the constant 0 and OP_SEL 0 it selects the plain
// `v_mfma_f32_32x32x64_f8f6f4`, which scales by 1 (§7.1.5), as the
// kernels' disassembly shows (`cargo xtask gemm-report`).
// Its overloads by operand width: FP8/BF8 eight VGPRs a lane, FP6/BF6
// six, FP4 four (`I32x8`, `I32x6`, `I32x4`).
macro_rules! f8f6f4_intrinsics {
    ($($name:ident: $operand:ident = $link:literal;)*) => {
        #[cfg(aqueduct_gfx = "gfx950")]
        unsafe extern "C" {$(
            #[link_name = $link]
            fn $name(
                a: $operand,
                b: $operand,
                c: F32x16,
                cbsz: i32,
                blgp: i32,
                op_sel_a: i32,
                scale_a: i32,
                op_sel_b: i32,
                scale_b: i32,
            ) -> F32x16;
        )*}
    };
}

f8f6f4_intrinsics! {
    mfma_scale_32x32x64_f8f6f4: I32x8 = "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v8i32.v8i32";
    mfma_scale_32x32x64_fp6: I32x6 = "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v6i32.v6i32";
    mfma_scale_32x32x64_fp4: I32x4 = "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v4i32.v4i32";
}

/// A slice's two reads as the f8f6f4 operand: chunk 0's 16 bytes in
/// registers 0-3, chunk 1's in 4-7 (`super::f8f6f4_k`).
#[cfg(aqueduct_gfx = "gfx950")]
#[inline(always)]
fn slice_operand([lo, hi]: [Vector; 2]) -> I32x8 {
    let (lo, hi) = (lo.words(), hi.words());
    I32x8([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]].map(|w| w as i32))
}

/// `<4 x i32>`: 32 FP4 of an f8f6f4 operand in a lane.
#[cfg(aqueduct_gfx = "gfx950")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I32x4([i32; 4]);

/// `<6 x i32>`: 32 FP6/BF6 of an f8f6f4 operand in a lane.
#[cfg(aqueduct_gfx = "gfx950")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I32x6([i32; 6]);

/// The lane's four registers of an MXFP4 operand: a chunk's 16-byte read.
#[cfg(aqueduct_gfx = "gfx950")]
#[inline(always)]
fn fp4_operand([read, _]: [Vector; 2]) -> I32x4 {
    I32x4(read.words().map(|w| w as i32))
}

/// The lane's six registers of an MXFP6 operand: words 0-3 of the first
/// vector, 0-1 of the second (`Workgroup::compute_fp6`'s reads).
#[cfg(aqueduct_gfx = "gfx950")]
#[inline(always)]
fn fp6_operand([lo, hi]: [Vector; 2]) -> I32x6 {
    let (lo, hi) = (lo.words(), hi.words());
    I32x6([lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]].map(|w| w as i32))
}

/// gfx950's f8f6f4 inputs, one MFMA of 64 k each (CDNA4 ISA §7.1.5:
/// CBSZ/BLGP give A's and B's format, the lane's scale bytes `sa`, `sb`
/// sit in OP_SEL byte 0; constant zero scales select the plain form):
/// FP8 (format 0) and BF8 (1) a slice through the plain form, MXFP8
/// through the scaled one (`slice_operand`); MXFP4 (4, FP4 E2M1) a chunk
/// (`super::fp4_k`); MXFP6 (2, FP6 E2M3) and MXBF6 (3, BF6 E3M2) a
/// 48-byte slice (`super::fp6_offsets`). `CHUNKS` 2: one MFMA step a
/// slice (`scales_of`).
macro_rules! f8f6f4_inputs {
    ($($ty:ident => $format:literal, $operand:ident, $mfma:ident, chunks $chunks:literal,
        scaled $scaled:literal;)*) => {$(
        #[cfg(aqueduct_gfx = "gfx950")]
        impl Input for $ty {
            type Acc = F32x16;
            const CHUNKS: usize = $chunks;
            const SCALED: bool = $scaled;
            #[inline(always)]
            fn mfma(acc: F32x16, a: [Vector; 2], b: [Vector; 2]) -> F32x16 {
                Self::mfma_scaled(acc, a, b, 0, 0)
            }
            #[inline(always)]
            fn mfma_scaled(
                acc: F32x16,
                a: [Vector; 2],
                b: [Vector; 2],
                sa: u32,
                sb: u32,
            ) -> F32x16 {
                let (a, b) = ($operand(a), $operand(b));
                let (sa, sb) = (sa as i32, sb as i32);
                // SAFETY: gfx950 has v_mfma_(scale_)f32_32x32x64_f8f6f4;
                // the operands have the intrinsic's types for the format,
                // the immargs are literals (the format for both, OP_SEL 0).
                unsafe { $mfma(a, b, acc, $format, $format, 0, sa, 0, sb) }
            }
        }
    )*};
}

f8f6f4_inputs! {
    Fp8 => 0, slice_operand, mfma_scale_32x32x64_f8f6f4, chunks 2, scaled false;
    Bf8 => 1, slice_operand, mfma_scale_32x32x64_f8f6f4, chunks 2, scaled false;
    MxFp8 => 0, slice_operand, mfma_scale_32x32x64_f8f6f4, chunks 2, scaled true;
    MxBf8 => 1, slice_operand, mfma_scale_32x32x64_f8f6f4, chunks 2, scaled true;
    MxFp4 => 4, fp4_operand, mfma_scale_32x32x64_fp4, chunks 1, scaled true;
    MxFp6 => 2, fp6_operand, mfma_scale_32x32x64_fp6, chunks 2, scaled true;
    MxBf6 => 3, fp6_operand, mfma_scale_32x32x64_fp6, chunks 2, scaled true;
}

// The signed 8-bit integer forms (IntrinsicsAMDGPU.td): four a lane on
// gfx90a (K = 8), eight on gfx942 (K = 16; CDNA3 dropped the K = 8 one),
// sixteen in gfx950's doubled-K one (K = 32); i32 sums.
#[cfg(aqueduct_gfx = "gfx90a")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.mfma.i32.32x32x8i8"]
    fn mfma_32x32x8i8(a: i32, b: i32, c: I32x16, cbsz: i32, abid: i32, blgp: i32) -> I32x16;
}
#[cfg(aqueduct_gfx = "gfx942")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.mfma.i32.32x32x16.i8"]
    fn mfma_32x32x16_i8(a: i64, b: i64, c: I32x16, cbsz: i32, abid: i32, blgp: i32) -> I32x16;
}
#[cfg(aqueduct_gfx = "gfx950")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.mfma.i32.32x32x32.i8"]
    fn mfma_32x32x32_i8(a: I32x4, b: I32x4, c: I32x16, cbsz: i32, abid: i32, blgp: i32) -> I32x16;
}

/// Signed 8-bit integers on gfx90a: four MFMAs of four bytes a read
/// (`chunk_k`: bytes `4j ..` the `j`-th).
#[cfg(aqueduct_gfx = "gfx90a")]
impl Input for I8 {
    type Acc = I32x16;
    #[inline(always)]
    fn mfma(acc: I32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> I32x16 {
        let (a, b) = (a.words().map(|w| w as i32), b.words().map(|w| w as i32));
        // SAFETY: gfx90a has v_mfma_i32_32x32x8i8; the operands have the
        // intrinsic's types and the immargs are literals.
        unsafe {
            let acc = mfma_32x32x8i8(a[0], b[0], acc, 0, 0, 0);
            let acc = mfma_32x32x8i8(a[1], b[1], acc, 0, 0, 0);
            let acc = mfma_32x32x8i8(a[2], b[2], acc, 0, 0, 0);
            mfma_32x32x8i8(a[3], b[3], acc, 0, 0, 0)
        }
    }
}

/// Signed 8-bit integers on gfx942: two MFMAs of eight bytes a read, as
/// its FP8.
#[cfg(aqueduct_gfx = "gfx942")]
impl Input for I8 {
    type Acc = I32x16;
    #[inline(always)]
    fn mfma(acc: I32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> I32x16 {
        two_byte_mfmas(acc, a, b, |c, a, b| {
            // SAFETY: gfx942 has v_mfma_i32_32x32x16_i8; the operands have
            // the intrinsic's types and the immargs are literals.
            unsafe { mfma_32x32x16_i8(a, b, c, 0, 0, 0) }
        })
    }
}

/// Signed 8-bit integers on gfx950: one doubled-K MFMA a read (lane group
/// `g` holds the read's 16 k, in the hardware's order, the same for A and
/// B, as its f16 one).
#[cfg(aqueduct_gfx = "gfx950")]
impl Input for I8 {
    type Acc = I32x16;
    #[inline(always)]
    fn mfma(acc: I32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> I32x16 {
        let ints = |v: Vector| I32x4(v.words().map(|w| w as i32));
        // SAFETY: gfx950 has v_mfma_i32_32x32x32_i8; the operands have the
        // intrinsic's types and the immargs are literals.
        unsafe { mfma_32x32x32_i8(ints(a), ints(b), acc, 0, 0, 0) }
    }
}

#[cfg(aqueduct_gfx = "gfx942")]
impl Input for Xf32 {
    type Acc = F32x16;
    #[inline(always)]
    fn mfma(acc: F32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> F32x16 {
        let (a, b) = (a.words().map(f32::from_bits), b.words().map(f32::from_bits));
        let pair = |v: [f32; 4], i: usize| F32x2([v[i], v[i + 1]]);
        // SAFETY: gfx942 has v_mfma_f32_32x32x4_xf32 (two f32 per lane,
        // `chunk_k`: elements 0-1, then 2-3); the operands have the
        // intrinsic's types and the immargs are literals.
        unsafe {
            let acc = mfma_32x32x4_xf32(pair(a, 0), pair(b, 0), acc, 0, 0, 0);
            mfma_32x32x4_xf32(pair(a, 2), pair(b, 2), acc, 0, 0, 0)
        }
    }
}

impl Input for f32 {
    type Acc = F32x16;
    #[inline(always)]
    fn mfma(acc: F32x16, [a, _]: [Vector; 2], [b, _]: [Vector; 2]) -> F32x16 {
        let (a, b) = (a.words().map(f32::from_bits), b.words().map(f32::from_bits));
        // SAFETY: gfx90a/gfx942/gfx950 have v_mfma_f32_32x32x2f32; the
        // operands have the intrinsic's types and the immargs are literals.
        unsafe {
            let acc = mfma_32x32x2f32(a[0], b[0], acc, 0, 0, 0);
            let acc = mfma_32x32x2f32(a[1], b[1], acc, 0, 0, 0);
            let acc = mfma_32x32x2f32(a[2], b[2], acc, 0, 0, 0);
            mfma_32x32x2f32(a[3], b[3], acc, 0, 0, 0)
        }
    }
}

// gfx950's transposing LDS reads of 16- and 8-bit elements through
// `llvm/gemm.ll`'s wrappers: their intrinsics take an LDS pointer, which
// Rust cannot name.
#[cfg(aqueduct_gfx = "gfx950")]
unsafe extern "C" {
    #[link_name = "aqueduct_gemm_ds_read_tr16_b64"]
    fn ds_read_tr16_b64(at: *const u8) -> u64;
    #[link_name = "aqueduct_gemm_ds_read_tr8_b64"]
    fn ds_read_tr8_b64(at: *const u8) -> u64;
}

/// The lane's 16 bytes of chunk `chunk` of block row (column) `base` of
/// the operand slice at `slice`: one 128-bit read ([`operand_offset`]);
/// staged transposed (gfx950), in `lines`, two transposing reads that
/// bring the same elements in the same order ([`Lines::reads`]).
#[inline(always)]
fn operand_read(
    slice: *const u8,
    (lines, transposed): (Lines, bool),
    base: u32,
    lane: u32,
    chunk: u32,
) -> Vector {
    #[cfg(aqueduct_gfx = "gfx950")]
    if transposed {
        let [lo, hi] = lines.reads(base, lane, chunk).map(|at| {
            // SAFETY: 8 aligned bytes inside the slice's k lines, of the
            // elements' width (`lines.es`: 2 or 1); every lane of the wave
            // runs it (`compute` is reached in uniform control flow), as
            // the read requires (CDNA4 ISA §11.4).
            unsafe {
                let at = slice.add(at as usize);
                if lines.es == 2 {
                    ds_read_tr16_b64(at)
                } else {
                    ds_read_tr8_b64(at)
                }
            }
        });
        // Element 0 in the low bits (little-endian registers, §7.1.4).
        let words = |x: u64| [x as u32, (x >> 32) as u32];
        let ([w0, w1], [w2, w3]) = (words(lo), words(hi));
        return Vector([w0, w1, w2, w3]);
    }
    let _ = transposed;
    let at = operand_offset(lines.tile, base, lane, chunk);
    // SAFETY: 16 aligned bytes inside the slice.
    unsafe { slice.add(at as usize).cast::<Vector>().read() }
}

/// A problem's block scales (the MX kernels'): the batch's A and B
/// scales, ⌈K / 32⌉ a row (column), and M and N.
struct Scales {
    a: *const u8,
    b: *const u8,
    blocks: u32,
    m: u32,
    n: u32,
}

impl Scales {
    /// The scale byte lane `lane` holds for the 32-row (column) block
    /// from row `first` of `rows` (of A at `base`: M; of B: N) and the
    /// problem's `q`-th f8f6f4 MFMA along K (`super::scale_place`); 1.0
    /// outside the problem, read from [`ONE`] rather than branched around,
    /// so the main loop stays one block.
    #[inline(always)]
    fn byte(&self, base: *const u8, first: u32, rows: u32, lane: u32, q: u32) -> u32 {
        let (r, b) = scale_place(lane);
        let (row, block) = (first + r, 2 * q + b);
        let inside = row < rows && block < self.blocks;
        let at = block as usize + row as usize * self.blocks as usize;
        let from = if inside {
            base.wrapping_add(at)
        } else {
            &ONE as *const u8
        };
        // SAFETY: inside the batch's scales (row `row` < `rows`, block
        // `block` < ⌈K / 32⌉: `GemmArgs::scale_a`), or `ONE`.
        u32::from(unsafe { from.read() })
    }
}

/// One workgroup's state: its staging, its place, its scales.
struct Workgroup<In> {
    stage: Stage<In, THREADS>,
    at: Place,
    scales: Scales,
}

/// The scale bytes of a slice's MFMAs in a lane (`Workgroup::scales_of`):
/// per MFMA step of the slice (one for FP8, two for FP4), A's for each of
/// the wave's row blocks and B's for each column block.
type SliceScales<const WM: usize, const WN: usize> = ([[u32; WM]; 2], [[u32; WN]; 2]);

impl<In: Input> Workgroup<In> {
    /// The lane's scale bytes for slice `slice`'s MFMAs: loaded by the
    /// staging with the slice's operands, a slice ahead of its MFMAs
    /// (`Stage::run`); E8M0 1.0 for the types without scales, which
    /// load nothing.
    #[inline(always)]
    fn scales_of<const WM: usize, const WN: usize>(&self, slice: u32) -> SliceScales<WM, WN> {
        let mut out = ([[E8M0_ONE; WM]; 2], [[E8M0_ONE; WN]; 2]);
        if !In::SCALED {
            return out;
        }
        let (sc, at) = (&self.scales, &self.at);
        let steps = SLICE_BYTES / (2 * VECTOR) / In::CHUNKS as u32;
        for step in 0..steps {
            // The MFMA's place along the problem's K (64 k each).
            let q = slice * steps + step;
            for (i, s) in out.0[step as usize].iter_mut().enumerate() {
                let first = at.row0 + at.wave_row + i as u32 * BLOCK;
                *s = sc.byte(sc.a, first, sc.m, at.lane, q);
            }
            for (j, s) in out.1[step as usize].iter_mut().enumerate() {
                let first = at.col0 + at.wave_col + j as u32 * BLOCK;
                *s = sc.byte(sc.b, first, sc.n, at.lane, q);
            }
        }
        out
    }

    /// The MFMAs of the slice in `buffer` (every wave's blocks), with its
    /// scale bytes (`scales_of`), reading the operands `transposed` names
    /// from their transposed layout.
    #[inline(always)]
    fn compute<const WM: usize, const WN: usize>(
        &self,
        buffer: u32,
        scales: &SliceScales<WM, WN>,
        acc: &mut [[In::Acc; WN]; WM],
        transposed: Transposed,
    ) {
        let (sa, sb) = (self.stage.a_slice(buffer), self.stage.b_slice(buffer));
        if In::SLICE != SLICE_BYTES {
            return self.compute_fp6(sa, sb, scales, acc);
        }
        // The previous chunk's reads, for a type whose MFMA takes two.
        let mut prev_a = [Vector::ZERO; WM];
        let mut prev_b = [Vector::ZERO; WN];
        for chunk in 0..SLICE_BYTES / (2 * VECTOR) {
            let mut fa = [Vector::ZERO; WM];
            let mut fb = [Vector::ZERO; WN];
            let (tile, lane, es) = (self.stage.tile, self.at.lane, In::BYTES);
            let a = (
                Lines {
                    tile,
                    rows: tile.rows(),
                    es,
                },
                transposed.a,
            );
            for (i, f) in fa.iter_mut().enumerate() {
                let base = self.at.wave_row + i as u32 * BLOCK;
                *f = operand_read(sa, a, base, lane, chunk);
            }
            let b = (
                Lines {
                    tile,
                    rows: tile.cols(),
                    es,
                },
                transposed.b,
            );
            for (j, f) in fb.iter_mut().enumerate() {
                let base = self.at.wave_col + j as u32 * BLOCK;
                *f = operand_read(sb, b, base, lane, chunk);
            }
            if In::CHUNKS == 1 || chunk % 2 == 1 {
                let step = chunk as usize / In::CHUNKS;
                let (sa, sb) = (&scales.0[step], &scales.1[step]);
                for (i, row) in acc.iter_mut().enumerate() {
                    for (j, block) in row.iter_mut().enumerate() {
                        let (a, b) = if In::CHUNKS == 1 {
                            ([fa[i], Vector::ZERO], [fb[j], Vector::ZERO])
                        } else {
                            ([prev_a[i], fa[i]], [prev_b[j], fb[j]])
                        };
                        *block = if In::SCALED {
                            In::mfma_scaled(*block, a, b, sa[i], sb[j])
                        } else {
                            In::mfma(*block, a, b)
                        };
                    }
                }
            }
            (prev_a, prev_b) = (fa, fb);
        }
    }
}

impl<In: Input> Workgroup<In> {
    /// MXFP6's slice (48 bytes a row): one MFMA per block, each lane's 24
    /// bytes read 8 at a time (`super::fp6_offsets`) into the registers
    /// the MFMA takes (`fp6_operand`).
    #[inline(always)]
    fn compute_fp6<const WM: usize, const WN: usize>(
        &self,
        sa: *mut u8,
        sb: *mut u8,
        scales: &SliceScales<WM, WN>,
        acc: &mut [[In::Acc; WN]; WM],
    ) {
        let (tile, lane) = (self.stage.tile, self.at.lane);
        let read = |slice: *mut u8, base: u32| {
            let mut words = [0u32; 8];
            for (j, at) in fp6_offsets(tile, base, lane).into_iter().enumerate() {
                // SAFETY: 8 bytes, 8-byte aligned, of the lane's row of
                // the slice (`fp6_offsets`).
                let pair = unsafe { slice.add(at as usize).cast::<[u32; 2]>().read() };
                words[2 * j] = pair[0];
                words[2 * j + 1] = pair[1];
            }
            [
                Vector([words[0], words[1], words[2], words[3]]),
                Vector([words[4], words[5], 0, 0]),
            ]
        };
        let mut fa = [[Vector::ZERO; 2]; WM];
        let mut fb = [[Vector::ZERO; 2]; WN];
        for (i, f) in fa.iter_mut().enumerate() {
            *f = read(sa, self.at.wave_row + i as u32 * BLOCK);
        }
        for (j, f) in fb.iter_mut().enumerate() {
            *f = read(sb, self.at.wave_col + j as u32 * BLOCK);
        }
        let (sa, sb) = (&scales.0[0], &scales.1[0]);
        for (i, row) in acc.iter_mut().enumerate() {
            for (j, block) in row.iter_mut().enumerate() {
                *block = In::mfma_scaled(*block, fa[i], fb[j], sa[i], sb[j]);
            }
        }
    }
}

/// `D = alpha · op(A) · op(B) + beta · C` for one macro-tile of `WM`, `WN`
/// (module doc); `lds` is the tile's LDS array.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gemm_mfma<In: Input, Out, const WM: usize, const WN: usize>(lds: *mut u8, p: Problem<In, Out>)
where
    In::Acc: Accumulator<In, Out>,
{
    let tile = Tile {
        wm: WM as u32,
        wn: WN as u32,
    };
    let at = Place::here(tile, WAVE);
    // MXFP4 and MXFP6: A and B's strides and leading dimensions in bytes
    // (two elements a byte; four in three) before the batch offsets, K
    // after (the scales' batch offsets and count are per element of K).
    // The host passes them multiples of the elements a unit holds.
    let (per, bytes) = (u64::from(In::TYPE.per_unit()), u64::from(In::TYPE.bytes()));
    let packed64 = |x: u64| if per == 1 { x } else { x / per * bytes };
    // In bytes a u32 count stays a u32: fewer bytes than elements.
    let packed = |x: u32| packed64(u64::from(x)) as u32;
    let p = Problem {
        lda: packed(p.lda),
        ldb: packed(p.ldb),
        stride_a: packed64(p.stride_a),
        stride_b: packed64(p.stride_b),
        ..p
    };
    let p = p.batch(workgroup_id_z());
    let blocks = aqueduct_abi::gemm::scale_blocks(p.k);
    let p = Problem {
        k: packed(p.k),
        ..p
    };
    let group = Workgroup {
        stage: Stage::new(&p, lds, tile, &at),
        at,
        scales: Scales {
            a: p.scale_a,
            b: p.scale_b,
            blocks,
            m: p.m,
            n: p.n,
        },
    };

    let mut acc = [[<In::Acc as Accumulator<In, Out>>::ZERO; WN]; WM];
    // Each work-item moves WM vectors of A and WN of B per slice (64 · WM
    // rows of 4 vectors over 256 work-items).
    group.stage.run::<WM, WN, _, _>(
        &mut acc,
        p.k,
        p.alpha,
        #[inline(always)]
        |slice| group.scales_of::<WM, WN>(slice),
        #[inline(always)]
        |buffer, scales, acc, transposed| group.compute(buffer, scales, acc, transposed),
    );

    // D's elements of block (i, j) of the wave.
    let store_block = |i: u32, j: u32, block: In::Acc| block.store(&p, &at, i, j);
    each_block!(acc, WM, WN, store_block);
}

/// The entry points of the rows of `mfma_kernels!` (mfma.rs): each kernel
/// is [`gemm_mfma`] of its types and tile on its own LDS array, reached
/// through `aqueduct_gemm_lds_<kernel>`, which `cargo xtask build`
/// declares in IR from the same table (`super::write_lds_ir`).
macro_rules! mfma_entry_points {
    ($($name:ident: $in:ty => $out:ty, $tile:ident $(, only_on $($gfx:literal),+)?;)*) => {$(
        $(#[cfg(any($(aqueduct_gfx = $gfx),+))])?
        crate::common::entry_points! {
            #[doc = concat!(
                "`", stringify!($in), "` in, `", stringify!($out), "` out, macro-tile ",
                stringify!($tile), " (`mfma_kernels!`)."
            )]
            $name: $in => $out = gemm_mfma::<
                $in,
                $out,
                { super::$tile.wm as usize },
                { super::$tile.wn as usize }
            >({
                unsafe extern "C" {
                    #[link_name = concat!(lds_accessor_prefix!(), stringify!($name))]
                    safe fn lds() -> *mut u8;
                }
                lds()
            });
        }
    )*};
}

mfma_kernels!(mfma_entry_points);
