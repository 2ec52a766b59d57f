//! The FMA (VALU) kernel family: the fallback every target runs, RDNA
//! included. One workgroup of [`THREADS`] work-items computes a
//! [`TILE`] × [`TILE`] tile of D; work-item `(tx, ty)` of the 16 × 16 grid
//! owns rows `tx + 16 i` and columns `ty + 16 j` (`i, j < 4`), so
//! neighbouring work-items touch neighbouring elements. K advances
//! [`K_STEP`] at a time through two LDS tiles (A: TILE × K_STEP, B:
//! K_STEP × TILE), each filled by every work-item loading two elements.
//! Elements outside M, N or K load as 0, so edges need no other code.
//!
//! The index arithmetic is here as plain functions, tested on the host; the
//! kernel (amdgpu only) strings them together. Types, layouts and the
//! kernel arguments are [`crate::common`]'s.

#[cfg(target_arch = "amdgpu")]
use crate::common::{Bf16, Element, F16, Layout, Problem, offset};
use crate::common::{ElementType, Family, GemmKernel};
pub use crate::common::{TRANSPOSE_A, TRANSPOSE_B};

/// Rows and columns of D one workgroup computes.
pub const TILE: u32 = 64;
/// K elements per LDS tile.
pub const K_STEP: u32 = 8;
/// Work-items per workgroup: the kernel's launch bound.
pub const THREADS: u32 = 256;
/// Rows (and columns) of D one work-item computes.
pub const PER_THREAD: u32 = TILE / 16;

/// `$body` four times with `$i` = 0, 1, 2, 3 (a `usize`): the per-thread
/// 4 × 4 block unrolled, so its arrays are indexed by constants and stay in
/// registers. [`PER_THREAD`] is 4.
#[cfg(target_arch = "amdgpu")]
macro_rules! unroll4 {
    ($i:ident, $body:block) => {{
        const _: () = assert!($crate::fma::PER_THREAD == 4);
        {
            let $i: usize = 0;
            $body
        }
        {
            let $i: usize = 1;
            $body
        }
        {
            let $i: usize = 2;
            $body
        }
        {
            let $i: usize = 3;
            $body
        }
    }};
}

/// The two A-tile elements work-item `lid` loads: (row in the tile, k in
/// the step) for `e = lid` and `lid + THREADS`; the LDS slot is
/// `k * TILE + row`.
#[inline(always)]
pub fn a_tile_element(e: u32) -> (u32, u32) {
    (e % TILE, e / TILE)
}

/// The two B-tile elements work-item `lid` loads: (k in the step, column in
/// the tile); the LDS slot is `k * TILE + col`.
#[inline(always)]
pub fn b_tile_element(e: u32) -> (u32, u32) {
    (e % K_STEP, e / K_STEP)
}

/// Work-item `lid`'s row and column base in the tile.
#[inline(always)]
pub fn thread_place(lid: u32) -> (u32, u32) {
    (lid % 16, lid / 16)
}

/// `D = alpha · op(A) · op(B) + beta · C` in f32, batched (`workgroup_id_z`
/// is the batch, the `stride_*` its element strides); `flags` bit
/// [`TRANSPOSE_A`] / [`TRANSPOSE_B`] says A / B is stored transposed.
/// Launch: `(ceil(M / 64) · 256, ceil(N / 64), batch)` work-items in
/// workgroups of `(256, 1, 1)`. `beta == 0` never reads C and `alpha == 0`
/// never reads A or B (BLAS semantics: NaNs there do not propagate); K = 0
/// gives `beta · C`.
///
/// The body every element type shares; the `gemm_*_fma` entry points below
/// instantiate it. A and B are `In`, C and D `Out`; products accumulate in
/// f32 and the LDS tiles hold f32.
#[cfg(target_arch = "amdgpu")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gemm_fma<In: Element, Out: Element>(p: Problem<In, Out>) {
    use core::arch::amdgpu::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};

    unsafe extern "C" {
        /// device/gemm/llvm/gemm.ll: the 4 KiB of LDS tiles.
        safe fn aqueduct_gemm_fma_tiles_ptr() -> *mut f32;
        /// device/gemm/llvm/gemm.ll: a workgroup barrier with fences.
        safe fn aqueduct_gemm_barrier();
    }
    let (la, lb) = (
        Layout::from_flag(p.flags, TRANSPOSE_A),
        Layout::from_flag(p.flags, TRANSPOSE_B),
    );
    let lid = workitem_id_x();
    let (row0, col0) = (workgroup_id_x() * TILE, workgroup_id_y() * TILE);
    let p = p.batch(workgroup_id_z());
    let tiles = aqueduct_gemm_fma_tiles_ptr();
    // SAFETY: the two tiles are the LDS array's two halves.
    let (a_tile, b_tile) = (tiles, unsafe { tiles.add((TILE * K_STEP) as usize) });
    let (tx, ty) = thread_place(lid);
    let mut acc = [[0f32; PER_THREAD as usize]; PER_THREAD as usize];
    // alpha == 0: A·B is not referenced (a uniform branch).
    let steps = if p.alpha == 0.0 {
        0
    } else {
        p.k.div_ceil(K_STEP)
    };
    for step in 0..steps {
        let k0 = step * K_STEP;
        for half in 0..2 {
            let e = lid + half * THREADS;
            let (row, kk) = a_tile_element(e);
            let (r, kg) = (row0 + row, k0 + kk);
            let v = if r < p.m && kg < p.k {
                // SAFETY: (r, kg) is an element of A (r < M, kg < K).
                unsafe { p.a.add(offset(la, r, kg, p.lda) as usize).read() }.to_f32()
            } else {
                0.0
            };
            // SAFETY: the slot is inside the A tile (`a_tile_element`).
            unsafe { a_tile.add((kk * TILE + row) as usize).write(v) };
            let (kk, col) = b_tile_element(e);
            let (kg, cg) = (k0 + kk, col0 + col);
            let v = if kg < p.k && cg < p.n {
                // SAFETY: (kg, cg) is an element of B (kg < K, cg < N).
                unsafe { p.b.add(offset(lb, kg, cg, p.ldb) as usize).read() }.to_f32()
            } else {
                0.0
            };
            // SAFETY: the slot is inside the B tile (`b_tile_element`).
            unsafe { b_tile.add((kk * TILE + col) as usize).write(v) };
        }
        aqueduct_gemm_barrier();
        for kk in 0..K_STEP {
            let mut av = [0f32; PER_THREAD as usize];
            let mut bv = [0f32; PER_THREAD as usize];
            // Constant indices only (unrolled), so the arrays stay in
            // registers: a run-time index would put them in scratch.
            unroll4!(i, {
                // SAFETY: every index is below TILE · K_STEP of its tile.
                unsafe {
                    av[i] = a_tile.add((kk * TILE + tx + 16 * i as u32) as usize).read();
                    bv[i] = b_tile.add((kk * TILE + ty + 16 * i as u32) as usize).read();
                }
            });
            unroll4!(i, {
                unroll4!(j, {
                    acc[i][j] = core::f32::math::mul_add(av[i], bv[j], acc[i][j]);
                });
            });
        }
        aqueduct_gemm_barrier();
    }
    // D's element (r, cg) from its dot product `x`, if it lies in D.
    let store = |r: u32, cg: u32, x: f32| {
        if r >= p.m || cg >= p.n {
            return;
        }
        let mut v = p.alpha * x;
        if p.beta != 0.0 {
            // SAFETY: (r, cg) is an element of C (r < M, cg < N).
            let cv =
                unsafe { p.c.add(offset(Layout::AsIs, r, cg, p.ldc) as usize).read() }.to_f32();
            v = core::f32::math::mul_add(p.beta, cv, v);
        }
        // SAFETY: (r, cg) is an element of D.
        unsafe {
            p.d.add(offset(Layout::AsIs, r, cg, p.ldd) as usize)
                .write(Out::from_f32(v))
        };
    };
    unroll4!(i, {
        unroll4!(j, {
            store(
                row0 + tx + 16 * i as u32,
                col0 + ty + 16 * j as u32,
                acc[i][j],
            );
        });
    });
}

#[cfg(target_arch = "amdgpu")]
crate::common::entry_points! {
    /// f32 in, f32 out.
    gemm_f32_fma: f32 => f32 = gemm_fma::<f32, f32>();
    /// f16 in, f16 out (f32 accumulation).
    gemm_f16_fma: F16 => F16 = gemm_fma::<F16, F16>();
    /// f16 in, f32 out.
    gemm_f16_f32_fma: F16 => f32 = gemm_fma::<F16, f32>();
    /// bf16 in, bf16 out (f32 accumulation).
    gemm_bf16_fma: Bf16 => Bf16 = gemm_fma::<Bf16, Bf16>();
    /// bf16 in, f32 out.
    gemm_bf16_f32_fma: Bf16 => f32 = gemm_fma::<Bf16, f32>();
}

/// Every FMA kernel.
pub const KERNELS: &[GemmKernel] = &[
    fma_kernel("gemm_f32_fma", ElementType::F32, ElementType::F32),
    fma_kernel("gemm_f16_fma", ElementType::F16, ElementType::F16),
    fma_kernel("gemm_f16_f32_fma", ElementType::F16, ElementType::F32),
    fma_kernel("gemm_bf16_fma", ElementType::Bf16, ElementType::Bf16),
    fma_kernel("gemm_bf16_f32_fma", ElementType::Bf16, ElementType::F32),
];

const fn fma_kernel(name: &'static str, input: ElementType, output: ElementType) -> GemmKernel {
    GemmKernel {
        name,
        family: Family::Fma,
        input,
        output,
        tile_rows: TILE,
        tile_cols: TILE,
        threads: THREADS,
        only_on: &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_loads_of_all_work_items_cover_each_tile_once() {
        let mut a = [0u32; (TILE * K_STEP) as usize];
        let mut b = [0u32; (TILE * K_STEP) as usize];
        for lid in 0..THREADS {
            for half in 0..2 {
                let e = lid + half * THREADS;
                let (row, k) = a_tile_element(e);
                a[(k * TILE + row) as usize] += 1;
                let (k, col) = b_tile_element(e);
                b[(k * TILE + col) as usize] += 1;
            }
        }
        assert!(a.iter().all(|&n| n == 1) && b.iter().all(|&n| n == 1));
    }

    #[test]
    fn the_work_items_own_each_element_of_the_tile_once() {
        let mut d = [0u32; (TILE * TILE) as usize];
        for lid in 0..THREADS {
            let (tx, ty) = thread_place(lid);
            for i in 0..PER_THREAD {
                for j in 0..PER_THREAD {
                    d[((ty + 16 * j) * TILE + tx + 16 * i) as usize] += 1;
                }
            }
        }
        assert!(d.iter().all(|&n| n == 1));
    }
}
