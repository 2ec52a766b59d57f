//! The WMMA kernels themselves (amdgpu, gfx1100 and gfx1201 only): the
//! intrinsics, the per-slice WMMAs and the entry points; the slices go
//! through `crate::staging` as the MFMA kernels' do.

use core::arch::amdgpu::workgroup_id_z;

use super::{BLOCK, Layouts, THREADS, WAVE, d_place, operand_offset};
#[cfg(aqueduct_gfx = "gfx1201")]
use crate::common::{Bf8, Fp8};
use crate::common::{Bf16, Element, F16, I8, Problem};
use crate::mfma::{SLICE_BYTES, Tile, VECTOR};
use crate::staging::{Accumulator, Elem, Place, Stage, Vector, each_block, store_d, store_d_i32};

#[cfg(aqueduct_gfx = "gfx1100")]
const LAYOUTS: Layouts = Layouts::Gfx11;
#[cfg(aqueduct_gfx = "gfx1201")]
const LAYOUTS: Layouts = Layouts::Gfx12;

/// 16-byte reads per lane per WMMA operand (module doc of `wmma`).
const READS: usize = LAYOUTS.reads() as usize;

/// `<8 x float>`: one 16 × 16 block's accumulators in a lane (wave32).
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct F32x8([f32; 8]);

/// `<8 x i32>`: one 16 × 16 block's i32 accumulators in a lane (the
/// integer kernels).
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I32x8([i32; 8]);

/// `store(row, column, x)` of D's element that each of a lane's values
/// `x` of the wave's block (`i`, `j`) is (register `r`: [`d_place`]).
#[inline(always)]
fn each_element<T: Copy>(values: [T; 8], at: &Place, i: u32, j: u32, store: impl Fn(u32, u32, T)) {
    for (r, x) in values.iter().enumerate() {
        let (gr, gc) = at.d(BLOCK, i, j, d_place(LAYOUTS, at.lane, r as u32));
        store(gr, gc, *x);
    }
}

impl<In, Out: Element> Accumulator<In, Out> for F32x8 {
    const ZERO: Self = F32x8([0.0; 8]);

    #[inline(always)]
    fn store(self, p: &Problem<In, Out>, at: &Place, i: u32, j: u32) {
        // SAFETY: `<8 x float>` and `[f32; 8]` have the same size, and
        // every bit pattern is a valid f32.
        let values: [f32; 8] = unsafe { core::mem::transmute(self) };
        each_element(values, at, i, j, |gr, gc, x| store_d(p, gr, gc, x));
    }
}

impl<In> Accumulator<In, i32> for I32x8 {
    const ZERO: Self = I32x8([0; 8]);

    #[inline(always)]
    fn store(self, p: &Problem<In, i32>, at: &Place, i: u32, j: u32) {
        // SAFETY: `<8 x i32>` and `[i32; 8]` have the same size, and every
        // bit pattern is valid for both.
        let values: [i32; 8] = unsafe { core::mem::transmute(self) };
        each_element(values, at, i, j, |gr, gc, x| store_d_i32(p, gr, gc, x));
    }
}

/// A lane's f16 operand: `<16 x half>` on GFX11, `<8 x half>` on GFX12.
#[cfg(aqueduct_gfx = "gfx1100")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct HalfOperand([f16; 16]);
#[cfg(aqueduct_gfx = "gfx1201")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct HalfOperand([f16; 8]);

/// A lane's bf16 operand, as LLVM types it: `<16 x i16>` / `<8 x i16>`.
#[cfg(aqueduct_gfx = "gfx1100")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct Bf16Operand([i16; 16]);
#[cfg(aqueduct_gfx = "gfx1201")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct Bf16Operand([i16; 8]);

// The instructions through their LLVM intrinsics (IntrinsicsAMDGPU.td:
// overloaded on the C/D and A/B vector types, wave32 here).
#[cfg(aqueduct_gfx = "gfx1100")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16"]
    fn wmma_f16(a: HalfOperand, b: HalfOperand, c: F32x8) -> F32x8;
    #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v16i16"]
    fn wmma_bf16(a: Bf16Operand, b: Bf16Operand, c: F32x8) -> F32x8;
}
#[cfg(aqueduct_gfx = "gfx1201")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v8f16"]
    fn wmma_f16(a: HalfOperand, b: HalfOperand, c: F32x8) -> F32x8;
    #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v8i16"]
    fn wmma_bf16(a: Bf16Operand, b: Bf16Operand, c: F32x8) -> F32x8;
}

// gfx1201's 8-bit forms: eight OCP FP8/BF8 a lane in `<2 x i32>`.
#[cfg(aqueduct_gfx = "gfx1201")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.fp8.fp8.v8f32.v2i32"]
    fn wmma_fp8_fp8(a: I32x2, b: I32x2, c: F32x8) -> F32x8;
    #[link_name = "llvm.amdgcn.wmma.f32.16x16x16.bf8.bf8.v8f32.v2i32"]
    fn wmma_bf8_bf8(a: I32x2, b: I32x2, c: F32x8) -> F32x8;
}

// The signed 8-bit integer WMMA (IntrinsicsAMDGPU.td's
// `int_amdgcn_wmma_i32_16x16x16_iu8`: A's and B's signedness and the
// clamp are immediates): sixteen bytes a lane on GFX11, eight on GFX12.
#[cfg(aqueduct_gfx = "gfx1100")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.wmma.i32.16x16x16.iu8.v8i32.v4i32"]
    fn wmma_iu8(a_signed: bool, a: I32x4, b_signed: bool, b: I32x4, c: I32x8, clamp: bool)
    -> I32x8;
}
#[cfg(aqueduct_gfx = "gfx1201")]
unsafe extern "C" {
    #[link_name = "llvm.amdgcn.wmma.i32.16x16x16.iu8.v8i32.v2i32"]
    fn wmma_iu8(a_signed: bool, a: I32x2, b_signed: bool, b: I32x2, c: I32x8, clamp: bool)
    -> I32x8;
}

/// `<2 x i32>`: eight 8-bit elements of a lane.
#[cfg(aqueduct_gfx = "gfx1201")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I32x2([i32; 2]);

/// `<4 x i32>`: sixteen 8-bit elements of a lane.
#[cfg(aqueduct_gfx = "gfx1100")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I32x4([i32; 4]);

/// An A/B element type of the WMMA kernels.
trait Input: Elem {
    /// A lane's accumulators of one block: f32, i32 for integers.
    type Acc: Copy;
    /// WMMAs per block of a lane's A and B reads (`READS` vectors each):
    /// one for 16-bit elements, two for 8-bit ones.
    const STEPS: usize;
    /// WMMA `step` of a lane's reads: for 8-bit elements on GFX11 read
    /// `step`, on GFX12 bytes `8 step .. 8 step + 8` of the read.
    fn wmma(acc: Self::Acc, a: &[Vector; READS], b: &[Vector; READS], step: usize) -> Self::Acc;
}

/// The 8 bytes of a GFX12 lane's read that WMMA `step` takes, as
/// `<2 x i32>` (module doc of `wmma`).
#[cfg(aqueduct_gfx = "gfx1201")]
#[inline(always)]
fn eight_bytes([v]: &[Vector; READS], step: usize) -> I32x2 {
    let w = v.words().map(|w| w as i32);
    if step == 0 {
        I32x2([w[0], w[1]])
    } else {
        I32x2([w[2], w[3]])
    }
}

/// Signed 8-bit integers, i32 sums modulo 2^32 (no clamp): GFX11's two
/// reads are 16 k each, one WMMA apiece (the module doc of `wmma`).
#[cfg(aqueduct_gfx = "gfx1100")]
impl Input for I8 {
    type Acc = I32x8;
    const STEPS: usize = 2;

    #[inline(always)]
    fn wmma(acc: I32x8, a: &[Vector; READS], b: &[Vector; READS], step: usize) -> I32x8 {
        let ints = |v: &[Vector; READS]| {
            let v = if step == 0 { v[0] } else { v[1] };
            I32x4(v.words().map(|w| w as i32))
        };
        // SAFETY: gfx1100 has v_wmma_i32_16x16x16_iu8; the operands have
        // the intrinsic's types, the flags are constants.
        unsafe { wmma_iu8(true, ints(a), true, ints(b), acc, false) }
    }
}

/// Signed 8-bit integers on GFX12: eight a lane, two WMMAs a read (as
/// the FP8 inputs).
#[cfg(aqueduct_gfx = "gfx1201")]
impl Input for I8 {
    type Acc = I32x8;
    const STEPS: usize = 2;

    #[inline(always)]
    fn wmma(acc: I32x8, a: &[Vector; READS], b: &[Vector; READS], step: usize) -> I32x8 {
        let (a, b) = (eight_bytes(a, step), eight_bytes(b, step));
        // SAFETY: gfx1201 has v_wmma_i32_16x16x16_iu8; the operands have
        // the intrinsic's types, the flags are constants.
        unsafe { wmma_iu8(true, a, true, b, acc, false) }
    }
}

/// gfx1201's 8-bit float inputs: two WMMAs of one read each (module doc).
macro_rules! eight_bit_inputs {
    ($($ty:ident => $intrinsic:ident;)*) => {$(
        #[cfg(aqueduct_gfx = "gfx1201")]
        impl Input for $ty {
            type Acc = F32x8;
            const STEPS: usize = 2;

            #[inline(always)]
            fn wmma(acc: F32x8, a: &[Vector; READS], b: &[Vector; READS], step: usize) -> F32x8 {
                // SAFETY: gfx1201 has the 16x16x16 FP8/BF8 WMMAs these
                // intrinsics name; the operands have their types.
                unsafe { $intrinsic(eight_bytes(a, step), eight_bytes(b, step), acc) }
            }
        }
    )*};
}

eight_bit_inputs! {
    Fp8 => wmma_fp8_fp8;
    Bf8 => wmma_bf8_bf8;
}

impl Input for F16 {
    type Acc = F32x8;
    const STEPS: usize = 1;

    #[inline(always)]
    fn wmma(acc: F32x8, a: &[Vector; READS], b: &[Vector; READS], _: usize) -> F32x8 {
        // SAFETY: `READS` vectors of 16 bytes and `HALVES` f16 have the
        // same size, and every bit pattern is valid for both.
        let (a, b): (HalfOperand, HalfOperand) =
            unsafe { (core::mem::transmute(*a), core::mem::transmute(*b)) };
        // SAFETY: gfx1100 and gfx1201 have v_wmma_f32_16x16x16_f16; the
        // operands have the intrinsic's types for the target.
        unsafe { wmma_f16(a, b, acc) }
    }
}

impl Input for Bf16 {
    type Acc = F32x8;
    const STEPS: usize = 1;

    #[inline(always)]
    fn wmma(acc: F32x8, a: &[Vector; READS], b: &[Vector; READS], _: usize) -> F32x8 {
        // SAFETY: as for f16, with i16 elements.
        let (a, b): (Bf16Operand, Bf16Operand) =
            unsafe { (core::mem::transmute(*a), core::mem::transmute(*b)) };
        // SAFETY: gfx1100 and gfx1201 have v_wmma_f32_16x16x16_bf16; the
        // operands have the intrinsic's types for the target.
        unsafe { wmma_bf16(a, b, acc) }
    }
}

/// One workgroup's state: its staging, its place.
struct Workgroup<In> {
    stage: Stage<In, THREADS>,
    at: Place,
}

impl<In: Input> Workgroup<In> {
    /// A lane's reads for WMMA `j` of the block at `base` of a slice.
    #[inline(always)]
    fn operand(&self, slice: *const u8, base: u32, j: u32) -> [Vector; READS] {
        let mut out = [Vector::ZERO; READS];
        for (h, v) in out.iter_mut().enumerate() {
            let at = operand_offset(LAYOUTS, self.stage.tile, base, self.at.lane, j, h as u32);
            // SAFETY: 16 aligned bytes inside the slice (`operand_offset`).
            *v = unsafe { slice.add(at as usize).cast::<Vector>().read() };
        }
        out
    }

    /// The WMMAs of the slice in `buffer` (every wave's blocks).
    #[inline(always)]
    fn compute<const BM: usize, const BN: usize>(
        &self,
        buffer: u32,
        acc: &mut [[In::Acc; BN]; BM],
    ) {
        let (sa, sb) = (self.stage.a_slice(buffer), self.stage.b_slice(buffer));
        for j in 0..SLICE_BYTES / (2 * VECTOR) {
            let mut fa = [[Vector::ZERO; READS]; BM];
            let mut fb = [[Vector::ZERO; READS]; BN];
            for (i, f) in fa.iter_mut().enumerate() {
                *f = self.operand(sa, self.at.wave_row + i as u32 * BLOCK, j);
            }
            for (i, f) in fb.iter_mut().enumerate() {
                *f = self.operand(sb, self.at.wave_col + i as u32 * BLOCK, j);
            }
            for (i, row) in acc.iter_mut().enumerate() {
                for (c, block) in row.iter_mut().enumerate() {
                    for step in 0..In::STEPS {
                        *block = In::wmma(*block, &fa[i], &fb[c], step);
                    }
                }
            }
        }
    }
}

/// `D = alpha · op(A) · op(B) + beta · C` for one macro-tile of `BM × BN`
/// blocks per wave (module doc); `lds` is the tile's LDS array.
#[inline(always)]
fn gemm_wmma<In: Input, Out, const BM: usize, const BN: usize>(lds: *mut u8, p: Problem<In, Out>)
where
    In::Acc: Accumulator<In, Out>,
{
    let tile = Tile {
        wm: BM as u32 / 2,
        wn: BN as u32 / 2,
    };
    let at = Place::here(tile, WAVE);
    let p = p.batch(workgroup_id_z());
    let group = Workgroup {
        stage: Stage::new(&p, lds, tile, &at),
        at,
    };

    let mut acc = [[<In::Acc as Accumulator<In, Out>>::ZERO; BN]; BM];
    // Each work-item moves BM vectors of A and BN of B per slice (32 · BM
    // rows of 4 vectors over 128 work-items).
    group.stage.run::<BM, BN, _, _>(
        &mut acc,
        p.k,
        p.alpha,
        |_| (),
        #[inline(always)]
        |buffer, _, acc, _| group.compute(buffer, acc),
    );

    // D's elements of block (i, j) of the wave.
    let store_block = |i: u32, j: u32, block: In::Acc| block.store(&p, &at, i, j);
    each_block!(acc, BM, BN, store_block);
}

/// The entry points of the rows of `wmma_kernels!` (wmma.rs), each on its
/// own LDS array as the MFMA kernels' are (`crate::mfma::write_lds_ir`).
macro_rules! wmma_entry_points {
    ($($name:ident: $in:ty => $out:ty, $tile:ident $(, only_on $($gfx:literal),+)?;)*) => {$(
        $(#[cfg(any($(aqueduct_gfx = $gfx),+))])?
        crate::common::entry_points! {
            #[doc = concat!(
                "`", stringify!($in), "` in, `", stringify!($out), "` out, macro-tile ",
                stringify!($tile), " (`wmma_kernels!`)."
            )]
            $name: $in => $out = gemm_wmma::<
                $in,
                $out,
                { 2 * super::$tile.wm as usize },
                { 2 * super::$tile.wn as usize }
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

wmma_kernels!(wmma_entry_points);
