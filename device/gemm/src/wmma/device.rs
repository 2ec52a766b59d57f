//! The WMMA kernels themselves (amdgpu, gfx1100 and gfx1201 only): the
//! intrinsics, the per-slice WMMAs and the entry points; the slices go
//! through `crate::staging` as the MFMA kernels' do.

use core::arch::amdgpu::workgroup_id_z;

use super::{BLOCK, Layouts, THREADS, WAVE, d_place, operand_offset};
#[cfg(aqueduct_gfx = "gfx1201")]
use crate::common::{Bf8, Fp8};
use crate::common::{Bf16, Element, F16, Problem};
use crate::mfma::{SLICE_BYTES, Tile, VECTOR};
use crate::staging::{Elem, Place, Stage, Vector, each_block, store_d};

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

/// `<2 x i32>`: eight 8-bit elements of a lane.
#[cfg(aqueduct_gfx = "gfx1201")]
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I32x2([i32; 2]);

/// An A/B element type of the WMMA kernels.
trait Input: Elem {
    /// The WMMAs of a lane's A and B reads (`READS` vectors each): one
    /// for 16-bit elements, two for 8-bit ones (bytes 0-7, then 8-15).
    fn wmma(acc: F32x8, a: [Vector; READS], b: [Vector; READS]) -> F32x8;
}

/// gfx1201's 8-bit inputs: two WMMAs of one read each (module doc).
macro_rules! eight_bit_inputs {
    ($($ty:ident => $intrinsic:ident;)*) => {$(
        #[cfg(aqueduct_gfx = "gfx1201")]
        impl Input for $ty {
            #[inline(always)]
            fn wmma(acc: F32x8, [a]: [Vector; READS], [b]: [Vector; READS]) -> F32x8 {
                let (a, b) = (a.words().map(|w| w as i32), b.words().map(|w| w as i32));
                // SAFETY: gfx1201 has the 16x16x16 FP8/BF8 WMMAs these
                // intrinsics name; the operands have their types.
                unsafe {
                    let acc = $intrinsic(I32x2([a[0], a[1]]), I32x2([b[0], b[1]]), acc);
                    $intrinsic(I32x2([a[2], a[3]]), I32x2([b[2], b[3]]), acc)
                }
            }
        }
    )*};
}

eight_bit_inputs! {
    Fp8 => wmma_fp8_fp8;
    Bf8 => wmma_bf8_bf8;
}

impl Input for F16 {
    #[inline(always)]
    fn wmma(acc: F32x8, a: [Vector; READS], b: [Vector; READS]) -> F32x8 {
        // SAFETY: `READS` vectors of 16 bytes and `HALVES` f16 have the
        // same size, and every bit pattern is valid for both.
        let (a, b): (HalfOperand, HalfOperand) =
            unsafe { (core::mem::transmute(a), core::mem::transmute(b)) };
        // SAFETY: gfx1100 and gfx1201 have v_wmma_f32_16x16x16_f16; the
        // operands have the intrinsic's types for the target.
        unsafe { wmma_f16(a, b, acc) }
    }
}

impl Input for Bf16 {
    #[inline(always)]
    fn wmma(acc: F32x8, a: [Vector; READS], b: [Vector; READS]) -> F32x8 {
        // SAFETY: as for f16, with i16 elements.
        let (a, b): (Bf16Operand, Bf16Operand) =
            unsafe { (core::mem::transmute(a), core::mem::transmute(b)) };
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
    fn compute<const BM: usize, const BN: usize>(&self, buffer: u32, acc: &mut [[F32x8; BN]; BM]) {
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
                    *block = In::wmma(*block, fa[i], fb[c]);
                }
            }
        }
    }
}

/// `D = alpha · op(A) · op(B) + beta · C` for one macro-tile of `BM × BN`
/// blocks per wave (module doc); `lds` is the tile's LDS array.
#[inline(always)]
fn gemm_wmma<In: Input, Out: Element, const BM: usize, const BN: usize>(
    lds: *mut u8,
    p: Problem<In, Out>,
) {
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

    let mut acc = [[F32x8([0.0; 8]); BN]; BM];
    // Each work-item moves BM vectors of A and BN of B per slice (32 · BM
    // rows of 4 vectors over 128 work-items).
    group.stage.run::<BM, BN, _, _>(
        &mut acc,
        p.k,
        p.alpha,
        |_| (),
        #[inline(always)]
        |buffer, _, acc| group.compute(buffer, acc),
    );

    // D's elements of block (i, j) of the wave.
    let store_block = |i: u32, j: u32, block: F32x8| {
        // SAFETY: `<8 x float>` and `[f32; 8]` have the same size, and
        // every bit pattern is a valid f32.
        let values: [f32; 8] = unsafe { core::mem::transmute(block) };
        for (r, x) in values.iter().enumerate() {
            let (gr, gc) = at.d(BLOCK, i, j, d_place(LAYOUTS, at.lane, r as u32));
            store_d(&p, gr, gc, *x);
        }
    };
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
