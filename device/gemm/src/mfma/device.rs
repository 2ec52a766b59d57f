//! The MFMA kernels themselves (amdgpu, CDNA only): the intrinsics, the
//! generic body the module doc describes, and the entry points.

use core::arch::amdgpu::{workgroup_id_x, workgroup_id_y, workgroup_id_z, workitem_id_x};

use super::{
    BLOCK, SLICE_BYTES, THREADS, Tile, VECTOR, WAVE, d_place, lds_offset, operand_offset,
    vector_place, wave_place,
};
#[cfg(aqueduct_gfx = "gfx942")]
use crate::common::{Bf8, Fp8, Xf32};
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

unsafe extern "C" {
    /// device/gemm/llvm/gemm.ll: a workgroup barrier with fences.
    safe fn aqueduct_gemm_barrier();
}

/// 16 bytes, 16-byte aligned: what one 128-bit access moves. A SIMD type
/// (`<4 x i32>` to LLVM), so a vector carried from one slice to the next
/// stays in registers; an array struct is copied through scratch.
#[repr(simd)]
#[derive(Clone, Copy)]
struct Vector([u32; 4]);

impl Vector {
    const ZERO: Vector = Vector([0; 4]);

    #[inline(always)]
    fn words(self) -> [u32; 4] {
        // SAFETY: `<4 x i32>` and `[u32; 4]` have the same size, and every
        // bit pattern is valid for both.
        unsafe { core::mem::transmute(self) }
    }
}

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
    let (a, b) = (a.words(), b.words());
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

/// The two MFMAs of eight 8-bit elements each that one 16-byte read of A
/// and of B feed (`chunk_k`: bytes 0-7, then 8-15), as i64s.
#[cfg(aqueduct_gfx = "gfx942")]
#[inline(always)]
fn two_byte_mfmas(
    acc: F32x16,
    a: Vector,
    b: Vector,
    mfma: impl Fn(F32x16, i64, i64) -> F32x16,
) -> F32x16 {
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
            const BYTES: u32 = 1;
            #[inline(always)]
            fn mfma(acc: F32x16, a: Vector, b: Vector) -> F32x16 {
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

#[cfg(aqueduct_gfx = "gfx942")]
impl Input for Xf32 {
    const BYTES: u32 = 4;
    #[inline(always)]
    fn mfma(acc: F32x16, a: Vector, b: Vector) -> F32x16 {
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
    const BYTES: u32 = 4;
    #[inline(always)]
    fn mfma(acc: F32x16, a: Vector, b: Vector) -> F32x16 {
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

/// An element of `In` (its low `BYTES` bytes of `bits`) written at `at`.
///
/// # Safety
/// `at` is valid for a write of `In::BYTES` bytes, aligned to them.
#[inline(always)]
unsafe fn write_element<In: Input>(at: *mut u8, bits: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        match In::BYTES {
            1 => at.write(bits as u8),
            2 => at.cast::<u16>().write(bits as u16),
            _ => at.cast::<u32>().write(bits),
        }
    }
}

/// The bits of the element of `In` at `p`, zero-extended.
///
/// # Safety
/// `p` is valid for a read of `In::BYTES` bytes, aligned to them.
#[inline(always)]
unsafe fn read_element<In: Input>(p: *const In) -> u32 {
    // SAFETY: the caller's contract.
    unsafe {
        match In::BYTES {
            1 => u32::from(p.cast::<u8>().read()),
            2 => u32::from(p.cast::<u16>().read()),
            _ => p.cast::<u32>().read(),
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

    /// The whole tile lies inside the operand and 128-bit loads are
    /// aligned: every slice but a K tail loads with [`Operand::vectors`].
    #[inline(always)]
    fn whole(&self) -> bool {
        self.aligned && self.row0 + self.tile_rows <= self.rows
    }

    /// The `NV` vectors work-item `lid` moves for the slice at `k0`, each
    /// one 128-bit load: the slice lies inside the operand ([`Self::whole`]
    /// and `k0 + depth <= K`).
    #[inline(always)]
    fn vectors<const NV: usize, const K_CONTIGUOUS: bool>(
        &self,
        lid: u32,
        k0: u32,
    ) -> [Vector; NV] {
        let per = VECTOR / In::BYTES;
        // Arrays filled through `iter_mut` (not `array::from_fn`, whose
        // run-time index keeps them in scratch) are unrolled into registers.
        let mut out = [Vector::ZERO; NV];
        for (t, slot) in out.iter_mut().enumerate() {
            let v = lid + t as u32 * THREADS;
            let (r, kk) = vector_place(v, self.tile_rows, K_CONTIGUOUS, per);
            // SAFETY: the slice lies inside the operand and the vector's
            // address is 16-byte aligned (`aligned`).
            *slot = unsafe { self.at(self.row0 + r, k0 + kk).cast::<Vector>().read() };
        }
        out
    }

    /// Copies the slice at `k0` into its LDS rows at `lds` element by
    /// element, for any slice: elements outside the operand (rows ≥ its
    /// rows, k ≥ K) are 0. Each element goes straight from its load to its
    /// LDS place, so little is live at once. The layout is a uniform branch.
    #[inline(always)]
    fn copy_elements<const NV: usize>(&self, tile: Tile, lds: *mut u8, lid: u32, k0: u32, k: u32) {
        if self.k_contiguous {
            self.copy_elements_as::<NV, true>(tile, lds, lid, k0, k)
        } else {
            self.copy_elements_as::<NV, false>(tile, lds, lid, k0, k)
        }
    }

    #[inline(always)]
    fn copy_elements_as<const NV: usize, const K_CONTIGUOUS: bool>(
        &self,
        tile: Tile,
        lds: *mut u8,
        lid: u32,
        k0: u32,
        k: u32,
    ) {
        let per = VECTOR / In::BYTES;
        for t in 0..NV as u32 {
            let (r, kk) = vector_place(lid + t * THREADS, self.tile_rows, K_CONTIGUOUS, per);
            // How many of the vector's elements lie inside the operand:
            // along K for a K-contiguous operand (the row is the vector's),
            // else along the rows (the k is). One count per vector, which
            // changes with `k0`, so no per-element test is hoisted out of
            // the slice loop (each would hold an SGPR pair).
            let (first, limit, fixed_inside) = if K_CONTIGUOUS {
                (k0 + kk, k, self.row0 + r < self.rows)
            } else {
                (self.row0 + r, self.rows, k0 + kk < k)
            };
            let count = if fixed_inside {
                limit.saturating_sub(first).min(per)
            } else {
                0
            };
            // The vector's places are zeroed, then the elements inside are
            // copied over them (a wave's LDS writes land in order). The
            // copy is a loop of the lane's own trip count: unrolled, each
            // element would need a lane mask, an SGPR pair apiece.
            let place = |e: u32| {
                let (lr, lk) = if K_CONTIGUOUS {
                    (r, kk + e)
                } else {
                    (r + e, kk)
                };
                (
                    lr,
                    lk,
                    lds.wrapping_add(lds_offset(tile, lr, lk, In::BYTES) as usize),
                )
            };
            for e in 0..per {
                let (_, _, at) = place(e);
                // SAFETY: the element's place in its row of the slice.
                unsafe { write_element::<In>(at, 0) };
            }
            for e in 0..count {
                let (lr, lk, at) = place(e);
                let p = self.at(self.row0 + lr, k0 + lk);
                // SAFETY: `e < count`, so `p` is an element of the operand;
                // `at` is its place in its row of the slice.
                unsafe { write_element::<In>(at, read_element(p)) };
            }
        }
    }

    /// A K-contiguous operand's vector is 16 bytes of one row: one 128-bit
    /// LDS write. A row-contiguous one's holds one k of consecutive rows:
    /// an LDS write per element.
    #[inline(always)]
    fn store_as<const NV: usize, const K_CONTIGUOUS: bool>(
        &self,
        tile: Tile,
        lds: *mut u8,
        lid: u32,
        vectors: &[Vector; NV],
    ) {
        let per = VECTOR / In::BYTES;
        for (t, vector) in vectors.iter().enumerate() {
            let v = lid + t as u32 * THREADS;
            let (r, kk) = vector_place(v, self.tile_rows, K_CONTIGUOUS, per);
            if K_CONTIGUOUS {
                let at = lds_offset(tile, r, kk, In::BYTES);
                // SAFETY: 16 bytes of row `r` of the slice, 16-byte aligned
                // (the row stride and the chunk's place are multiples of
                // 16).
                unsafe { lds.add(at as usize).cast::<Vector>().write(*vector) };
                continue;
            }
            for e in 0..per {
                let at = lds_offset(tile, r + e, kk, In::BYTES) as usize;
                let bit = e * In::BYTES * 8;
                let bits = vector.words()[(bit / 32) as usize] >> (bit % 32);
                // SAFETY: element `kk` of row `r + e` of the slice.
                unsafe { write_element::<In>(lds.add(at), bits) };
            }
        }
    }
}

/// One workgroup's state: its operands, its place, its LDS.
struct Workgroup<In> {
    a: Operand<In>,
    b: Operand<In>,
    lds: *mut u8,
    /// The macro-tile, whose LDS layout the slices follow.
    tile: Tile,
    lid: u32,
    lane: u32,
    wave_row: u32,
    wave_col: u32,
}

impl<In: Input> Workgroup<In> {
    /// Bytes of one LDS buffer (the A slice's rows, then the B slice's).
    fn buffer_bytes(&self) -> u32 {
        self.tile.lds_bytes() / 2
    }

    fn a_slice(&self, buffer: u32) -> *mut u8 {
        self.lds
            .wrapping_add((buffer * self.buffer_bytes()) as usize)
    }

    fn b_slice(&self, buffer: u32) -> *mut u8 {
        let a_bytes = self.tile.rows() * self.tile.row_stride();
        self.lds
            .wrapping_add((buffer * self.buffer_bytes() + a_bytes) as usize)
    }

    /// The MFMAs of the slice in `buffer` (every wave's blocks).
    #[inline(always)]
    fn compute<const WM: usize, const WN: usize>(&self, buffer: u32, acc: &mut [[F32x16; WN]; WM]) {
        let (sa, sb) = (self.a_slice(buffer), self.b_slice(buffer));
        for chunk in 0..SLICE_BYTES / (2 * VECTOR) {
            let mut fa = [Vector::ZERO; WM];
            let mut fb = [Vector::ZERO; WN];
            for (i, f) in fa.iter_mut().enumerate() {
                let at = operand_offset(
                    self.tile,
                    self.wave_row + i as u32 * BLOCK,
                    self.lane,
                    chunk,
                );
                // SAFETY: 16 aligned bytes inside the A slice.
                *f = unsafe { sa.add(at as usize).cast::<Vector>().read() };
            }
            for (j, f) in fb.iter_mut().enumerate() {
                let at = operand_offset(
                    self.tile,
                    self.wave_col + j as u32 * BLOCK,
                    self.lane,
                    chunk,
                );
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

    /// Slices `first..end` through the two LDS buffers: slice `s` is
    /// stored into buffer `(s - first) % 2` and computed from it; slice
    /// `s + 1` is loaded from memory before slice `s`'s MFMAs (the last
    /// iteration loads its own slice again, unused, so the loop has no
    /// branch). A buffer was last read two slices before, by MFMAs every
    /// wave finished before the previous slice's barrier, so one barrier
    /// per slice suffices; one more at the end frees both buffers.
    #[inline(always)]
    fn slices<const WM: usize, const WN: usize>(
        &self,
        acc: &mut [[F32x16; WN]; WM],
        first: u32,
        end: u32,
        load: impl Fn(u32) -> ([Vector; WM], [Vector; WN]),
        store: impl Fn(u32, &[Vector; WM], &[Vector; WN]),
    ) {
        if first >= end {
            return;
        }
        let (mut a, mut b) = load(first);
        let mut s = first;
        loop {
            let buffer = (s - first) & 1;
            store(buffer, &a, &b);
            aqueduct_gemm_barrier();
            (a, b) = load((s + 1).min(end - 1));
            self.compute(buffer, acc);
            s += 1;
            if s == end {
                break;
            }
        }
        aqueduct_gemm_barrier();
    }

    /// The main loop of a whole tile: the slices lying inside K, 128-bit
    /// loads, the layouts fixed (`KA`, `KB`: A, B K-contiguous).
    #[inline(always)]
    fn whole_slices<const WM: usize, const WN: usize, const KA: bool, const KB: bool>(
        &self,
        acc: &mut [[F32x16; WN]; WM],
        end: u32,
    ) {
        let depth = SLICE_BYTES / In::BYTES;
        self.slices(
            acc,
            0,
            end,
            #[inline(always)]
            |s| {
                (
                    self.a.vectors::<WM, KA>(self.lid, s * depth),
                    self.b.vectors::<WN, KB>(self.lid, s * depth),
                )
            },
            #[inline(always)]
            |buffer, a, b| {
                let t = self.tile;
                self.a
                    .store_as::<WM, KA>(t, self.a_slice(buffer), self.lid, a);
                self.b
                    .store_as::<WN, KB>(t, self.b_slice(buffer), self.lid, b);
            },
        );
    }

    /// Slices `first..end` element by element (edge tiles, the K tail),
    /// one at a time through the first buffer: no loads in flight across
    /// the MFMAs, which edges can afford.
    #[inline(always)]
    fn edge_slices<const WM: usize, const WN: usize>(
        &self,
        acc: &mut [[F32x16; WN]; WM],
        first: u32,
        end: u32,
        k: u32,
    ) {
        let depth = SLICE_BYTES / In::BYTES;
        for s in first..end {
            let t = self.tile;
            self.a
                .copy_elements::<WM>(t, self.a_slice(0), self.lid, s * depth, k);
            self.b
                .copy_elements::<WN>(t, self.b_slice(0), self.lid, s * depth, k);
            aqueduct_gemm_barrier();
            self.compute(0, acc);
            aqueduct_gemm_barrier();
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
    let (wave_row, wave_col) = wave_place(wave, tile);
    let group = Workgroup {
        a: a_op,
        b: b_op,
        lds,
        tile,
        lid,
        lane,
        wave_row,
        wave_col,
    };

    let mut acc = [[F32x16([0.0; 16]); WN]; WM];
    let depth = SLICE_BYTES / In::BYTES;
    // alpha == 0: A·B is not referenced (a uniform branch).
    let slices = if p.alpha == 0.0 {
        0
    } else {
        p.k.div_ceil(depth)
    };
    // A whole tile runs its slices inside K in a main loop specialised for
    // its layouts (a uniform branch here, none in the loop), then the K
    // tail element by element; an edge tile runs every slice element by
    // element.
    let (a, b) = (&group.a, &group.b);
    let inside = if a.whole() && b.whole() {
        p.k / depth
    } else {
        0
    };
    let inside = inside.min(slices);
    match (a.k_contiguous, b.k_contiguous) {
        (false, false) => group.whole_slices::<WM, WN, false, false>(&mut acc, inside),
        (false, true) => group.whole_slices::<WM, WN, false, true>(&mut acc, inside),
        (true, false) => group.whole_slices::<WM, WN, true, false>(&mut acc, inside),
        (true, true) => group.whole_slices::<WM, WN, true, true>(&mut acc, inside),
    }
    group.edge_slices(&mut acc, inside, slices, p.k);

    // D's elements of block (i, j) of the wave.
    let store_block = |i: u32, j: u32, block: F32x16| {
        // SAFETY: `<16 x float>` and `[f32; 16]` have the same size, and
        // every bit pattern is a valid f32.
        let values: [f32; 16] = unsafe { core::mem::transmute(block) };
        for (r, x) in values.iter().enumerate() {
            let (bi, bj) = d_place(lane, r as u32);
            let gr = row0 + wave_row + i * BLOCK + bi;
            let gc = col0 + wave_col + j * BLOCK + bj;
            if gr >= p.m || gc >= p.n {
                continue;
            }
            let mut v = p.alpha * x;
            if p.beta != 0.0 {
                // SAFETY: (gr, gc) is an element of C (gr < M, gc < N).
                let cv =
                    unsafe { p.c.add(gr as usize + gc as usize * p.ldc as usize).read() }.to_f32();
                v = core::f32::math::mul_add(p.beta, cv, v);
            }
            // SAFETY: (gr, gc) is an element of D.
            unsafe {
                p.d.add(gr as usize + gc as usize * p.ldd as usize)
                    .write(Out::from_f32(v))
            };
        }
    };
    // Block by block with constant indices: a loop LLVM leaves rolled (the
    // conversions make the 256 × 128 tile's body big) would index the
    // accumulators at run time and put them in scratch.
    macro_rules! blocks {
        ($($i:literal $j:literal),*) => {$(
            if $i < WM && $j < WN {
                store_block($i, $j, acc[$i][$j]);
            }
        )*};
    }
    blocks!(0 0, 0 1, 0 2, 0 3, 1 0, 1 1, 1 2, 1 3, 2 0, 2 1, 2 2, 2 3, 3 0, 3 1, 3 2, 3 3);
    const { assert!(WM <= 4 && WN <= 4, "the epilogue covers up to 4 × 4 blocks") };
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
