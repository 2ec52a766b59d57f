//! The MFMA kernels themselves (amdgpu, CDNA only): the intrinsics, the
//! generic body the module doc describes, and the entry points.

use core::arch::amdgpu::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};

use super::{
    BLOCK, SLICE_BYTES, THREADS, Tile, VECTOR, WAVE, d_place, lds_offset, operand_offset,
    vector_place, wave_place,
};
use crate::common::{Bf16, Element, F16, Layout, Problem, TRANSPOSE_A, TRANSPOSE_B};

/// `<16 x float>`: one 32 × 32 MFMA block's accumulators in a lane.
#[repr(simd)]
#[derive(Clone, Copy)]
pub struct F32x16([f32; 16]);

#[repr(simd)]
#[derive(Clone, Copy)]
pub struct F16x4([f16; 4]);

#[repr(simd)]
#[derive(Clone, Copy)]
pub struct I16x4([i16; 4]);

// The instructions, through their LLVM intrinsics (IntrinsicsAMDGPU.td),
// with LLVM's exact types; CBSZ, ABID and BLGP are immargs, 0 here.
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
    #[link_name = "llvm.amdgcn.mfma.f32.32x32x2f32"]
    fn mfma_32x32x2f32(a: f32, b: f32, c: F32x16, cbsz: i32, abid: i32, blgp: i32) -> F32x16;
}

unsafe extern "C" {
    /// device/gemm/llvm/gemm.ll: the LDS of each macro-tile.
    safe fn aqueduct_gemm_mfma_lds_64x64_ptr() -> *mut u8;
    safe fn aqueduct_gemm_mfma_lds_128x128_ptr() -> *mut u8;
    /// device/gemm/llvm/gemm.ll: a workgroup barrier with fences.
    safe fn aqueduct_gemm_barrier();
}

/// 16 bytes, 16-byte aligned: what one 128-bit access moves.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Vector([u32; 4]);

/// An A/B element type of the MFMA kernels.
trait Input: Copy {
    /// Bytes per element.
    const BYTES: u32;
    /// The MFMAs of one 16-byte read of A and of B: `16 / BYTES` k, in
    /// the order `chunk_k` gives.
    fn mfma(acc: F32x16, a: Vector, b: Vector) -> F32x16;
}

fn halves(w0: u32, w1: u32) -> [u16; 4] {
    [w0 as u16, (w0 >> 16) as u16, w1 as u16, (w1 >> 16) as u16]
}

/// The two MFMAs of four 16-bit elements each that one 16-byte read of A
/// and of B feed (`chunk_k`: elements 0-3, then 4-7).
#[inline(always)]
fn two_mfmas(
    acc: F32x16,
    a: Vector,
    b: Vector,
    mfma: impl Fn(F32x16, [u16; 4], [u16; 4]) -> F32x16,
) -> F32x16 {
    let (a, b) = (a.0, b.0);
    let acc = mfma(acc, halves(a[0], a[1]), halves(b[0], b[1]));
    mfma(acc, halves(a[2], a[3]), halves(b[2], b[3]))
}

impl Input for F16 {
    const BYTES: u32 = 2;
    #[inline(always)]
    fn mfma(acc: F32x16, a: Vector, b: Vector) -> F32x16 {
        two_mfmas(acc, a, b, |c, a, b| {
            let (a, b) = (F16x4(a.map(f16::from_bits)), F16x4(b.map(f16::from_bits)));
            // SAFETY: gfx90a/gfx942/gfx950 have v_mfma_f32_32x32x8f16; the
            // operands have the intrinsic's types and the immargs are
            // literals.
            unsafe { mfma_32x32x8f16(a, b, c, 0, 0, 0) }
        })
    }
}

impl Input for Bf16 {
    const BYTES: u32 = 2;
    #[inline(always)]
    fn mfma(acc: F32x16, a: Vector, b: Vector) -> F32x16 {
        two_mfmas(acc, a, b, |c, a, b| {
            let (a, b) = (I16x4(a.map(|h| h as i16)), I16x4(b.map(|h| h as i16)));
            // SAFETY: gfx90a/gfx942/gfx950 have v_mfma_f32_32x32x8bf16_1k;
            // the operands have the intrinsic's types and the immargs are
            // literals.
            unsafe { mfma_32x32x8bf16_1k(a, b, c, 0, 0, 0) }
        })
    }
}

impl Input for f32 {
    const BYTES: u32 = 4;
    #[inline(always)]
    fn mfma(acc: F32x16, a: Vector, b: Vector) -> F32x16 {
        let (a, b) = (a.0.map(f32::from_bits), b.0.map(f32::from_bits));
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

/// One operand (A, or B seen as its transpose: rows are D's columns) of
/// one batch, as the slices read it.
struct Operand<In> {
    base: *const In,
    ld: u32,
    /// Rows of the operand (M for A, N for B).
    rows: u32,
    /// K is the contiguous dimension in memory.
    k_contiguous: bool,
    /// The tile's first row, and its rows.
    row0: u32,
    tile_rows: u32,
    /// The base and the leading dimension allow 128-bit loads.
    aligned: bool,
}

impl<In: Input> Operand<In> {
    #[inline(always)]
    fn new(
        base: *const In,
        ld: u32,
        rows: u32,
        k_contiguous: bool,
        row0: u32,
        tile_rows: u32,
    ) -> Self {
        let aligned = (base as usize).is_multiple_of(VECTOR as usize)
            && (ld * In::BYTES).is_multiple_of(VECTOR);
        Self {
            base,
            ld,
            rows,
            k_contiguous,
            row0,
            tile_rows,
            aligned,
        }
    }

    /// The element (row, kg) of the operand.
    #[inline(always)]
    fn at(&self, row: u32, kg: u32) -> *const In {
        let (major, minor) = if self.k_contiguous {
            (row, kg)
        } else {
            (kg, row)
        };
        // Callers read it only when `row < rows` and `kg < K`, or when the
        // whole slice lies inside the operand.
        self.base
            .wrapping_add(major as usize * self.ld as usize + minor as usize)
    }

    /// The `NV` vectors work-item `lid` moves for the slice at `k0`. The
    /// layout is a uniform branch here, so each path is straight code.
    #[inline(always)]
    fn load<const NV: usize>(&self, lid: u32, k0: u32, k: u32) -> [Vector; NV] {
        if self.k_contiguous {
            self.load_as::<NV, true>(lid, k0, k)
        } else {
            self.load_as::<NV, false>(lid, k0, k)
        }
    }

    #[inline(always)]
    fn load_as<const NV: usize, const K_CONTIGUOUS: bool>(
        &self,
        lid: u32,
        k0: u32,
        k: u32,
    ) -> [Vector; NV] {
        let per = VECTOR / In::BYTES;
        let whole = self.aligned
            && self.row0 + self.tile_rows <= self.rows
            && k0 + SLICE_BYTES / In::BYTES <= k;
        let mut out = [Vector([0; 4]); NV];
        for (t, slot) in out.iter_mut().enumerate() {
            let v = lid + t as u32 * THREADS;
            let (r, kk) = vector_place(v, self.tile_rows, K_CONTIGUOUS, per);
            let (row, kg) = (self.row0 + r, k0 + kk);
            if whole {
                // SAFETY: the slice lies inside the operand and the vector's
                // address is 16-byte aligned (`aligned`).
                *slot = unsafe { self.at(row, kg).cast::<Vector>().read() };
                continue;
            }
            // Elements of the vector inside the operand: along K for a
            // K-contiguous operand (the row is the vector's), else along
            // the rows (the k is).
            let (first, limit, fixed_inside) = if K_CONTIGUOUS {
                (kg, k, row < self.rows)
            } else {
                (row, self.rows, kg < k)
            };
            let count = if fixed_inside {
                limit.saturating_sub(first).min(per)
            } else {
                0
            };
            let mut words = [0u32; 4];
            for e in 0..per {
                // Branch-free: an element outside the operand reads the
                // first one instead (there is one: rows > 0 and K > 0 when
                // a slice is loaded) and counts as 0.
                let inside = e < count;
                let (er, ek) = if K_CONTIGUOUS {
                    (row, kg + e)
                } else {
                    (row + e, kg)
                };
                let p = if inside { self.at(er, ek) } else { self.base };
                let bits = match In::BYTES {
                    // SAFETY: `p` is an element of the operand.
                    2 => u32::from(unsafe { p.cast::<u16>().read() }),
                    // SAFETY: as above.
                    _ => unsafe { p.cast::<u32>().read() },
                };
                let bits = if inside { bits } else { 0 };
                let bit = e * In::BYTES * 8;
                words[(bit / 32) as usize] |= bits << (bit % 32);
            }
            *slot = Vector(words);
        }
        out
    }

    /// Writes vectors loaded by [`Operand::load`] into the slice at `lds`.
    #[inline(always)]
    fn store<const NV: usize>(&self, lds: *mut u8, lid: u32, vectors: &[Vector; NV]) {
        let per = VECTOR / In::BYTES;
        if self.k_contiguous {
            for (t, vector) in vectors.iter().enumerate() {
                let v = lid + t as u32 * THREADS;
                let (r, kk) = vector_place(v, self.tile_rows, true, per);
                let at = lds_offset(r, kk, In::BYTES);
                // SAFETY: 16 bytes of row `r` of the slice, 16-byte aligned
                // (ROW_STRIDE and the vector's offset are multiples of 16).
                unsafe { lds.add(at as usize).cast::<Vector>().write(*vector) };
            }
            return;
        }
        for (t, vector) in vectors.iter().enumerate() {
            let v = lid + t as u32 * THREADS;
            let (r, kk) = vector_place(v, self.tile_rows, false, per);
            for e in 0..per {
                let at = lds_offset(r + e, kk, In::BYTES) as usize;
                let bit = e * In::BYTES * 8;
                let bits = vector.0[(bit / 32) as usize] >> (bit % 32);
                // SAFETY: element `kk` of row `r + e` of the slice.
                unsafe {
                    match In::BYTES {
                        2 => lds.add(at).cast::<u16>().write(bits as u16),
                        _ => lds.add(at).cast::<u32>().write(bits),
                    }
                }
            }
        }
    }
}

/// `D = alpha · op(A) · op(B) + beta · C` for one macro-tile of `WM`, `WN`
/// (module doc); `lds` is the tile's LDS array.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gemm_mfma<In: Input, Out: Element, const WM: usize, const WN: usize>(
    lds: *mut u8,
    p: Problem<In, Out>,
) {
    let tile = Tile {
        wm: WM as u32,
        wn: WN as u32,
    };
    let lid = workitem_id_x();
    let (lane, wave) = (lid % WAVE, lid / WAVE);
    let (row0, col0) = (
        workgroup_id_x() * tile.rows(),
        workgroup_id_y() * tile.cols(),
    );
    let p = p.batch(workgroup_id_z());
    let a_op = Operand::new(
        p.a,
        p.lda,
        p.m,
        Layout::from_flag(p.flags, TRANSPOSE_A) == Layout::Transposed,
        row0,
        tile.rows(),
    );
    let b_op = Operand::new(
        p.b,
        p.ldb,
        p.n,
        Layout::from_flag(p.flags, TRANSPOSE_B) == Layout::AsIs,
        col0,
        tile.cols(),
    );
    // One buffer: the A slice's rows, then the B slice's.
    let buffer_bytes = (tile.rows() + tile.cols()) * super::ROW_STRIDE;
    let a_slice = |buffer: u32| lds.wrapping_add((buffer * buffer_bytes) as usize);
    let b_slice = |buffer: u32| {
        lds.wrapping_add((buffer * buffer_bytes + tile.rows() * super::ROW_STRIDE) as usize)
    };
    let (wave_row, wave_col) = wave_place(wave, tile);

    let mut acc = [[F32x16([0.0; 16]); WN]; WM];
    let depth = SLICE_BYTES / In::BYTES;
    // alpha == 0: A·B is not referenced (a uniform branch).
    let slices = if p.alpha == 0.0 {
        0
    } else {
        p.k.div_ceil(depth)
    };
    // Slice s is stored into buffer s % 2 and computed from it; slice s + 1
    // is loaded from memory before slice s's MFMAs. Buffer s % 2 was last
    // read by slice s − 2's MFMAs, which every wave finished before the
    // barrier of slice s − 1, so one barrier per slice suffices.
    let (mut next_a, mut next_b) = ([Vector([0; 4]); WM], [Vector([0; 4]); WN]);
    if slices > 0 {
        next_a = a_op.load::<WM>(lid, 0, p.k);
        next_b = b_op.load::<WN>(lid, 0, p.k);
    }
    for s in 0..slices {
        let buffer = s & 1;
        let (sa, sb) = (a_slice(buffer), b_slice(buffer));
        a_op.store(sa, lid, &next_a);
        b_op.store(sb, lid, &next_b);
        aqueduct_gemm_barrier();
        if s + 1 < slices {
            next_a = a_op.load::<WM>(lid, (s + 1) * depth, p.k);
            next_b = b_op.load::<WN>(lid, (s + 1) * depth, p.k);
        }
        for chunk in 0..SLICE_BYTES / (2 * VECTOR) {
            let mut fa = [Vector([0; 4]); WM];
            let mut fb = [Vector([0; 4]); WN];
            for (i, f) in fa.iter_mut().enumerate() {
                let at = operand_offset(wave_row + i as u32 * BLOCK, lane, chunk);
                // SAFETY: 16 aligned bytes inside the A slice.
                *f = unsafe { sa.add(at as usize).cast::<Vector>().read() };
            }
            for (j, f) in fb.iter_mut().enumerate() {
                let at = operand_offset(wave_col + j as u32 * BLOCK, lane, chunk);
                // SAFETY: 16 aligned bytes inside the B slice.
                *f = unsafe { sb.add(at as usize).cast::<Vector>().read() };
            }
            for (i, row) in acc.iter_mut().enumerate() {
                for (j, block) in row.iter_mut().enumerate() {
                    *block = In::mfma(*block, fa[i], fb[j]);
                }
            }
        }
    }

    for (i, row) in acc.iter().enumerate() {
        for (j, block) in row.iter().enumerate() {
            // SAFETY: `<16 x float>` and `[f32; 16]` have the same size,
            // and every bit pattern is a valid f32.
            let values: [f32; 16] = unsafe { core::mem::transmute(*block) };
            for (r, x) in values.iter().enumerate() {
                let (bi, bj) = d_place(lane, r as u32);
                let gr = row0 + wave_row + i as u32 * BLOCK + bi;
                let gc = col0 + wave_col + j as u32 * BLOCK + bj;
                if gr >= p.m || gc >= p.n {
                    continue;
                }
                let mut v = p.alpha * x;
                if p.beta != 0.0 {
                    // SAFETY: (gr, gc) is an element of C (gr < M, gc < N).
                    let cv = unsafe { p.c.add(gr as usize + gc as usize * p.ldc as usize).read() }
                        .to_f32();
                    v = core::f32::math::mul_add(p.beta, cv, v);
                }
                // SAFETY: (gr, gc) is an element of D.
                unsafe {
                    p.d.add(gr as usize + gc as usize * p.ldd as usize)
                        .write(Out::from_f32(v))
                };
            }
        }
    }
}

crate::common::entry_points! {
    /// f32 in and out, 64 × 64.
    gemm_f32_mfma_64x64: f32 => f32 = gemm_mfma::<f32, f32, 1, 1>(aqueduct_gemm_mfma_lds_64x64_ptr());
    /// f32 in and out, 128 × 128.
    gemm_f32_mfma_128x128: f32 => f32 = gemm_mfma::<f32, f32, 2, 2>(aqueduct_gemm_mfma_lds_128x128_ptr());
    /// f16 in and out (f32 accumulation), 64 × 64.
    gemm_f16_mfma_64x64: F16 => F16 = gemm_mfma::<F16, F16, 1, 1>(aqueduct_gemm_mfma_lds_64x64_ptr());
    /// f16 in and out (f32 accumulation), 128 × 128.
    gemm_f16_mfma_128x128: F16 => F16 = gemm_mfma::<F16, F16, 2, 2>(aqueduct_gemm_mfma_lds_128x128_ptr());
    /// f16 in, f32 out, 64 × 64.
    gemm_f16_f32_mfma_64x64: F16 => f32 = gemm_mfma::<F16, f32, 1, 1>(aqueduct_gemm_mfma_lds_64x64_ptr());
    /// f16 in, f32 out, 128 × 128.
    gemm_f16_f32_mfma_128x128: F16 => f32 = gemm_mfma::<F16, f32, 2, 2>(aqueduct_gemm_mfma_lds_128x128_ptr());
    /// bf16 in and out (f32 accumulation), 64 × 64.
    gemm_bf16_mfma_64x64: Bf16 => Bf16 = gemm_mfma::<Bf16, Bf16, 1, 1>(aqueduct_gemm_mfma_lds_64x64_ptr());
    /// bf16 in and out (f32 accumulation), 128 × 128.
    gemm_bf16_mfma_128x128: Bf16 => Bf16 = gemm_mfma::<Bf16, Bf16, 2, 2>(aqueduct_gemm_mfma_lds_128x128_ptr());
    /// bf16 in, f32 out, 64 × 64.
    gemm_bf16_f32_mfma_64x64: Bf16 => f32 = gemm_mfma::<Bf16, f32, 1, 1>(aqueduct_gemm_mfma_lds_64x64_ptr());
    /// bf16 in, f32 out, 128 × 128.
    gemm_bf16_f32_mfma_128x128: Bf16 => f32 = gemm_mfma::<Bf16, f32, 2, 2>(aqueduct_gemm_mfma_lds_128x128_ptr());
}
