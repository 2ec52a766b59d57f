//! The LDS staging both matrix families share (amdgpu only): a
//! workgroup's A and B slices through two LDS buffers in the layout of
//! [`crate::mfma`]'s module doc ([`Tile`], [`vector_place_in`],
//! [`lds_offset`]; slice rows of 64 bytes of K, MXFP6's 48; on gfx950 a
//! row-contiguous 16- or 8-bit operand in k lines, [`Lines`]), 128-bit
//! loads in a whole tile's main loop, element by element at the edges.
//! Generic over the workgroup's size (`THREADS`: 256 on CDNA's four
//! wave64s, 128 on RDNA's four wave32s) and over what the matrix unit
//! does with a slice in LDS (`compute`).

use core::arch::amdgpu::{readfirstlane_u32, workgroup_id_x, workgroup_id_y, workitem_id_x};

use crate::common::{Element, Layout, Problem, Stored, TRANSPOSE_A, TRANSPOSE_B};
use crate::mfma::{
    Lines, SLICE_BYTES, Tile, VECTOR, lds_offset, transposable, vector_place_in, wave_place,
};

unsafe extern "C" {
    /// device/gemm/llvm/gemm.ll: a workgroup barrier with fences.
    safe fn aqueduct_gemm_barrier();
}

/// 16 bytes, 16-byte aligned: what one 128-bit access moves. A SIMD type
/// (`<4 x i32>` to LLVM), so a vector carried from one slice to the next
/// stays in registers; an array struct is copied through scratch.
#[repr(simd)]
#[derive(Clone, Copy)]
pub(crate) struct Vector(pub(crate) [u32; 4]);

impl Vector {
    pub(crate) const ZERO: Vector = Vector([0; 4]);

    #[inline(always)]
    pub(crate) fn words(self) -> [u32; 4] {
        // SAFETY: `<4 x i32>` and `[u32; 4]` have the same size, and every
        // bit pattern is valid for both.
        unsafe { core::mem::transmute(self) }
    }
}

/// An A/B element type as the staging moves it.
pub(crate) trait Elem: Copy {
    /// Bytes per element (a packed type's byte: `ElementType::staged_bytes`).
    const BYTES: u32;
    /// Bytes of K in a slice row (`ElementType::slice_bytes`: 64, MXFP6's
    /// 48).
    const SLICE: u32;
    /// Several elements a stored unit (MXFP4, MXFP6): K contiguous only.
    const PACKED: bool;
    /// A row-contiguous operand is staged transposed, in k lines
    /// ([`Lines`]), and read by gfx950's transposing reads: the 16- and
    /// 8-bit types but the packed ones, on gfx950 (`crate::mfma`'s module
    /// doc).
    const TRANSPOSED: bool;
}

impl<T: Stored + Copy> Elem for T {
    const BYTES: u32 = T::TYPE.staged_bytes();
    const SLICE: u32 = T::TYPE.slice_bytes();
    const PACKED: bool = T::TYPE.per_unit() > 1;
    const TRANSPOSED: bool =
        cfg!(aqueduct_gfx = "gfx950") && transposable(Self::BYTES) && !Self::PACKED;
}

/// Which operands of a slice sit transposed in LDS ([`Elem::TRANSPOSED`]
/// and rows contiguous): how the matrix unit's `compute` reads them.
/// Compile-time constants in a main loop, the operands' layouts at edges.
#[derive(Clone, Copy)]
#[cfg_attr(
    not(any(
        aqueduct_gfx = "gfx90a",
        aqueduct_gfx = "gfx942",
        aqueduct_gfx = "gfx950"
    )),
    allow(dead_code, reason = "RDNA's WMMA kernels stage nothing transposed")
)]
pub(crate) struct Transposed {
    pub(crate) a: bool,
    pub(crate) b: bool,
}

impl Transposed {
    /// An operand of `In` sits transposed in the LDS of `tile` when its
    /// rows are contiguous, the target has transposing reads of `In`
    /// ([`Elem::TRANSPOSED`]) and the tile is padded (staged transposed,
    /// the swizzled 256 × 256 tile's bf16 kernel spilled: `crate::mfma`'s
    /// module doc).
    #[inline(always)]
    fn of<In: Elem>(tile: Tile, a_k_contiguous: bool, b_k_contiguous: bool) -> Self {
        let transposed = |k_contiguous: bool| !tile.swizzled() && In::TRANSPOSED && !k_contiguous;
        Self {
            a: transposed(a_k_contiguous),
            b: transposed(b_k_contiguous),
        }
    }
}

/// Whether vector `v` of a slice of `rows` rows exists: always for 64-byte
/// slice rows (`4 · rows` vectors, the work-items' `NV` each exactly); for
/// MXFP6's 48-byte ones `v < 3 · rows`. `3 · rows` is a multiple of 64 for
/// every tile, so the answer is that of `v`'s first multiple of 64 below,
/// which every lane of a wave shares: read from the first lane, it is a
/// scalar branch, not a lane mask.
#[inline(always)]
fn exists<In: Elem>(v: u32, rows: u32) -> bool {
    In::SLICE == SLICE_BYTES || readfirstlane_u32(v & !63) < rows * (In::SLICE / VECTOR)
}

/// [`vector_place_in`] of `In`'s slice rows.
#[inline(always)]
fn place<In: Elem>(v: u32, rows: u32, k_contiguous: bool, per: u32) -> (u32, u32) {
    vector_place_in(In::SLICE, v, rows, k_contiguous, per)
}

/// An element of `In` (its low `BYTES` bytes of `bits`) written at `at`.
///
/// # Safety
/// `at` is valid for a write of `In::BYTES` bytes, aligned to them.
#[inline(always)]
pub(crate) unsafe fn write_element<In: Elem>(at: *mut u8, bits: u32) {
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
pub(crate) unsafe fn read_element<In: Elem>(p: *const In) -> u32 {
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
/// one batch, as the slices of a `THREADS`-work-item workgroup read it.
pub(crate) struct Operand<In, const THREADS: u32> {
    base: *const In,
    ld: u32,
    /// Rows of the operand (M for A, N for B).
    rows: u32,
    /// K is the contiguous dimension in memory.
    pub(crate) k_contiguous: bool,
    /// The tile's first row, and its rows.
    row0: u32,
    tile_rows: u32,
    /// The base and the leading dimension allow 128-bit loads.
    aligned: bool,
}

impl<In: Elem, const THREADS: u32> Operand<In, THREADS> {
    #[inline(always)]
    pub(crate) fn new(
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

    /// [`Operand::at`] with the layout a compile-time constant (a main
    /// loop's), not the operand's `k_contiguous`.
    #[inline(always)]
    fn at_as<const K_CONTIGUOUS: bool>(&self, row: u32, kg: u32) -> *const In {
        let (major, minor) = if K_CONTIGUOUS { (row, kg) } else { (kg, row) };
        self.base
            .wrapping_add(major as usize * self.ld as usize + minor as usize)
    }

    /// The slice's k lines in `tile`, staged transposed.
    #[inline(always)]
    fn lines(&self, tile: Tile) -> Lines {
        Lines {
            tile,
            rows: self.tile_rows,
            es: In::BYTES,
        }
    }

    /// The byte offset of element (`r`, `kk`) of the slice in its LDS
    /// rows ([`lds_offset`]), or, staged transposed, in its k lines
    /// ([`Lines::offset`]).
    #[inline(always)]
    fn element_offset(&self, tile: Tile, r: u32, kk: u32, transposed: bool) -> u32 {
        if transposed {
            self.lines(tile).offset(r, kk)
        } else {
            lds_offset(tile, r, kk, In::BYTES)
        }
    }

    /// The whole tile lies inside the operand and 128-bit loads are
    /// aligned: every slice but a K tail loads with [`Operand::vectors`].
    #[inline(always)]
    pub(crate) fn whole(&self) -> bool {
        self.aligned && self.row0 + self.tile_rows <= self.rows
    }

    /// The `NV` vectors work-item `lid` moves for the slice at `k0`, each
    /// one 128-bit load: the slice lies inside the operand ([`Self::whole`]
    /// and `k0 + depth <= K`).
    #[inline(always)]
    pub(crate) fn vectors<const NV: usize, const K_CONTIGUOUS: bool>(
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
            if !exists::<In>(v, self.tile_rows) {
                continue;
            }
            let (r, kk) = place::<In>(v, self.tile_rows, K_CONTIGUOUS, per);
            // The packed types' main loop is compiled for one layout only
            // (`Stage::run`), which `at_as` fixes; the others' `at` gives
            // the same address, in the code their loops were measured
            // with (`cargo xtask gemm-report`).
            let (row, kg) = (self.row0 + r, k0 + kk);
            let at = if In::PACKED {
                self.at_as::<K_CONTIGUOUS>(row, kg)
            } else {
                self.at(row, kg)
            };
            // SAFETY: the slice lies inside the operand and the vector's
            // address is 16-byte aligned (`aligned`).
            *slot = unsafe { at.cast::<Vector>().read() };
        }
        out
    }

    /// Copies the slice at `k0` into its LDS rows at `lds` (its k lines
    /// when `transposed`) element by element, for any slice: elements
    /// outside the operand (rows ≥ its rows, k ≥ K) are 0. Each element
    /// goes straight from its load to its LDS place, so little is live at
    /// once. The layout is a uniform branch.
    #[inline(always)]
    pub(crate) fn copy_elements<const NV: usize>(
        &self,
        tile: Tile,
        lds: *mut u8,
        lid: u32,
        k0: u32,
        k: u32,
        transposed: bool,
    ) {
        if self.k_contiguous {
            self.copy_elements_as::<NV, true>(tile, lds, lid, (k0, k), false)
        } else {
            self.copy_elements_as::<NV, false>(tile, lds, lid, (k0, k), transposed)
        }
    }

    #[inline(always)]
    fn copy_elements_as<const NV: usize, const K_CONTIGUOUS: bool>(
        &self,
        tile: Tile,
        lds: *mut u8,
        lid: u32,
        (k0, k): (u32, u32),
        transposed: bool,
    ) {
        let per = VECTOR / In::BYTES;
        for t in 0..NV as u32 {
            let v = lid + t * THREADS;
            if !exists::<In>(v, self.tile_rows) {
                continue;
            }
            let (r, kk) = place::<In>(v, self.tile_rows, K_CONTIGUOUS, per);
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
                let at = self.element_offset(tile, lr, lk, transposed);
                (lr, lk, lds.wrapping_add(at as usize))
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
    /// `transposed`, 16 bytes of one k line, one 128-bit write too; else
    /// an LDS write per element. `transposed` is the caller's, decided
    /// once outside the slice loop: decided here from the tile, it cost
    /// the 256 × 256 tile's K-contiguous main loop on gfx950 64 copies
    /// between accumulator registers (122 instructions became 186 in
    /// `cargo xtask gemm-report`'s disassembly).
    #[inline(always)]
    pub(crate) fn store_as<const NV: usize, const K_CONTIGUOUS: bool>(
        &self,
        tile: Tile,
        lds: *mut u8,
        lid: u32,
        vectors: &[Vector; NV],
        transposed: bool,
    ) {
        let per = VECTOR / In::BYTES;
        for (t, vector) in vectors.iter().enumerate() {
            let v = lid + t as u32 * THREADS;
            if !exists::<In>(v, self.tile_rows) {
                continue;
            }
            let (r, kk) = place::<In>(v, self.tile_rows, K_CONTIGUOUS, per);
            if K_CONTIGUOUS {
                let at = lds_offset(tile, r, kk, In::BYTES);
                // SAFETY: 16 bytes of row `r` of the slice, 16-byte aligned
                // (the row stride and the chunk's place are multiples of
                // 16).
                unsafe { lds.add(at as usize).cast::<Vector>().write(*vector) };
                continue;
            }
            if transposed {
                let at = self.lines(tile).offset(r, kk);
                // SAFETY: 16 bytes of k line `kk` of the slice, 16-byte
                // aligned (the line stride and the vector's place are
                // multiples of 16).
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

/// Where a work-item works: its workgroup's macro-tile of D, its wave's
/// part of it ([`wave_place`]), its lane.
#[derive(Clone, Copy)]
pub(crate) struct Place {
    pub(crate) lid: u32,
    pub(crate) lane: u32,
    pub(crate) row0: u32,
    pub(crate) col0: u32,
    pub(crate) wave_row: u32,
    pub(crate) wave_col: u32,
}

impl Place {
    /// This work-item's, in waves of `lanes` over macro-tiles `tile`.
    #[inline(always)]
    pub(crate) fn here(tile: Tile, lanes: u32) -> Self {
        let lid = workitem_id_x();
        let (wave_row, wave_col) = wave_place(lid / lanes, tile);
        Self {
            lid,
            lane: lid % lanes,
            row0: workgroup_id_x() * tile.rows(),
            col0: workgroup_id_y() * tile.cols(),
            wave_row,
            wave_col,
        }
    }

    /// D's element at (`bi`, `bj`) of the wave's block (`i`, `j`) of
    /// `block` × `block`.
    #[inline(always)]
    pub(crate) fn d(&self, block: u32, i: u32, j: u32, (bi, bj): (u32, u32)) -> (u32, u32) {
        (
            self.row0 + self.wave_row + i * block + bi,
            self.col0 + self.wave_col + j * block + bj,
        )
    }
}

/// A workgroup's staging: its two operands and its LDS.
pub(crate) struct Stage<In, const THREADS: u32> {
    pub(crate) a: Operand<In, THREADS>,
    pub(crate) b: Operand<In, THREADS>,
    pub(crate) lds: *mut u8,
    /// The macro-tile, whose LDS layout the slices follow.
    pub(crate) tile: Tile,
    pub(crate) lid: u32,
}

impl<In: Elem, const THREADS: u32> Stage<In, THREADS> {
    /// The staging of the macro-tile at (`row0`, `col0`) of `p`.
    #[inline(always)]
    pub(crate) fn new<Out>(p: &Problem<In, Out>, lds: *mut u8, tile: Tile, at: &Place) -> Self {
        let (lid, row0, col0) = (at.lid, at.row0, at.col0);
        let a = Operand::new(
            p.a,
            p.lda,
            p.m,
            Layout::from_flag(p.flags, TRANSPOSE_A) == Layout::Transposed,
            row0,
            tile.rows(),
        );
        let b = Operand::new(
            p.b,
            p.ldb,
            p.n,
            Layout::from_flag(p.flags, TRANSPOSE_B) == Layout::AsIs,
            col0,
            tile.cols(),
        );
        Self {
            a,
            b,
            lds,
            tile,
            lid,
        }
    }

    /// Bytes of one LDS buffer (the A slice's rows, then the B slice's).
    fn buffer_bytes(&self) -> u32 {
        self.tile.lds_bytes() / 2
    }

    /// The A slice in `buffer`.
    pub(crate) fn a_slice(&self, buffer: u32) -> *mut u8 {
        self.lds
            .wrapping_add((buffer * self.buffer_bytes()) as usize)
    }

    /// The B slice in `buffer`.
    pub(crate) fn b_slice(&self, buffer: u32) -> *mut u8 {
        let a_bytes = self.tile.rows() * self.tile.row_stride();
        self.lds
            .wrapping_add((buffer * self.buffer_bytes() + a_bytes) as usize)
    }

    /// Every slice of K through `compute(buffer, &side(slice), acc,
    /// transposed)`, which multiplies the slice in LDS buffer `buffer` into
    /// `acc` with what `side` loaded for it (the MX kernels' block scales;
    /// `()` for the others), reading the operands `transposed` names in
    /// their transposed layout; the main loop issues `side(s + 1)` with
    /// slice `s + 1`'s loads, before slice `s`'s MFMAs, so its latency
    /// hides as theirs does. A whole tile runs its slices inside K in a
    /// main loop specialised for its layouts (a uniform branch here, none
    /// in the loop), then the K tail element by
    /// element; an edge tile runs every slice element by element. `NA`,
    /// `NB`: the vectors of A and of B each work-item moves per slice.
    #[inline(always)]
    pub(crate) fn run<const NA: usize, const NB: usize, Acc, X>(
        &self,
        acc: &mut Acc,
        k: u32,
        alpha: f32,
        side: impl Fn(u32) -> X,
        compute: impl Fn(u32, &X, &mut Acc, Transposed),
    ) {
        let depth = In::SLICE / In::BYTES;
        // alpha == 0: A·B is not referenced (a uniform branch).
        let slices = if alpha == 0.0 { 0 } else { k.div_ceil(depth) };
        let (a, b) = (&self.a, &self.b);
        // The packed types' elements run along K in memory (the host
        // refuses the other layouts): their main loop is that layout's
        // alone, and any other goes element by element, in bounds.
        let layout = !In::PACKED || a.k_contiguous && b.k_contiguous;
        let inside = if a.whole() && b.whole() && layout {
            k / depth
        } else {
            0
        };
        let inside = inside.min(slices);
        let c = (&side, &compute);
        if In::PACKED {
            self.whole_slices::<NA, NB, true, true, Acc, X>(acc, inside, c);
            return self.edge_slices::<NA, NB, Acc, X>(acc, inside, slices, k, c);
        }
        match (a.k_contiguous, b.k_contiguous) {
            (false, false) => self.whole_slices::<NA, NB, false, false, Acc, X>(acc, inside, c),
            (false, true) => self.whole_slices::<NA, NB, false, true, Acc, X>(acc, inside, c),
            (true, false) => self.whole_slices::<NA, NB, true, false, Acc, X>(acc, inside, c),
            (true, true) => self.whole_slices::<NA, NB, true, true, Acc, X>(acc, inside, c),
        }
        self.edge_slices::<NA, NB, Acc, X>(acc, inside, slices, k, c);
    }
    /// Slices `first..end` through the two LDS buffers: slice `s` is
    /// stored into buffer `(s - first) % 2` and computed from it; slice
    /// `s + 1` is loaded from memory before slice `s`'s MFMAs (the last
    /// iteration loads its own slice again, unused, so the loop has no
    /// branch). A buffer was last read two slices before, by MFMAs every
    /// wave finished before the previous slice's barrier, so one barrier
    /// per slice suffices; one more at the end frees both buffers.
    #[inline(always)]
    fn slices<const NA: usize, const NB: usize, Acc, X>(
        &self,
        acc: &mut Acc,
        first: u32,
        end: u32,
        load: impl Fn(u32) -> ([Vector; NA], [Vector; NB]),
        store: impl Fn(u32, &[Vector; NA], &[Vector; NB]),
        transposed: Transposed,
        (side, compute): (&impl Fn(u32) -> X, &impl Fn(u32, &X, &mut Acc, Transposed)),
    ) {
        if first >= end {
            return;
        }
        let (mut a, mut b) = load(first);
        let mut x = side(first);
        let mut s = first;
        loop {
            let buffer = (s - first) & 1;
            store(buffer, &a, &b);
            aqueduct_gemm_barrier();
            let next = (s + 1).min(end - 1);
            (a, b) = load(next);
            let x_next = side(next);
            compute(buffer, &x, acc, transposed);
            x = x_next;
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
    fn whole_slices<const NA: usize, const NB: usize, const KA: bool, const KB: bool, Acc, X>(
        &self,
        acc: &mut Acc,
        end: u32,
        work: (&impl Fn(u32) -> X, &impl Fn(u32, &X, &mut Acc, Transposed)),
    ) {
        let depth = In::SLICE / In::BYTES;
        let transposed = Transposed::of::<In>(self.tile, KA, KB);
        self.slices(
            acc,
            0,
            end,
            #[inline(always)]
            |s| {
                (
                    self.a.vectors::<NA, KA>(self.lid, s * depth),
                    self.b.vectors::<NB, KB>(self.lid, s * depth),
                )
            },
            #[inline(always)]
            |buffer, a, b| {
                let t = self.tile;
                let (sa, sb) = (self.a_slice(buffer), self.b_slice(buffer));
                self.a.store_as::<NA, KA>(t, sa, self.lid, a, transposed.a);
                self.b.store_as::<NB, KB>(t, sb, self.lid, b, transposed.b);
            },
            transposed,
            work,
        );
    }

    /// Slices `first..end` element by element (edge tiles, the K tail),
    /// one at a time through the first buffer: no loads in flight across
    /// the MFMAs, which edges can afford.
    #[inline(always)]
    fn edge_slices<const NA: usize, const NB: usize, Acc, X>(
        &self,
        acc: &mut Acc,
        first: u32,
        end: u32,
        k: u32,
        (side, compute): (&impl Fn(u32) -> X, &impl Fn(u32, &X, &mut Acc, Transposed)),
    ) {
        let depth = In::SLICE / In::BYTES;
        let transposed = Transposed::of::<In>(self.tile, self.a.k_contiguous, self.b.k_contiguous);
        for s in first..end {
            let t = self.tile;
            self.a
                .copy_elements::<NA>(t, self.a_slice(0), self.lid, s * depth, k, transposed.a);
            self.b
                .copy_elements::<NB>(t, self.b_slice(0), self.lid, s * depth, k, transposed.b);
            aqueduct_gemm_barrier();
            compute(0, &side(s), acc, transposed);
            aqueduct_gemm_barrier();
        }
    }
}

/// The epilogue of one accumulated element `x` of D's element (`gr`,
/// `gc`): `alpha · x + beta · C`, C read only when beta ≠ 0, stored in the
/// output type if the element lies inside D.
#[inline(always)]
pub(crate) fn store_d<In, Out: Element>(p: &Problem<In, Out>, gr: u32, gc: u32, x: f32) {
    if gr >= p.m || gc >= p.n {
        return;
    }
    let mut v = p.alpha * x;
    if p.beta != 0.0 {
        // SAFETY: (gr, gc) is an element of C (gr < M, gc < N).
        let cv = unsafe { p.c.add(gr as usize + gc as usize * p.ldc as usize).read() }.to_f32();
        v = core::f32::math::mul_add(p.beta, cv, v);
    }
    // SAFETY: (gr, gc) is an element of D.
    unsafe {
        p.d.add(gr as usize + gc as usize * p.ldd as usize)
            .write(Out::from_f32(v))
    };
}

/// A lane's accumulators of one output block of a matrix family (an
/// MFMA's 32 × 32, a WMMA's 16 × 16), and how they reach D.
pub(crate) trait Accumulator<In, Out>: Copy {
    const ZERO: Self;
    /// The epilogue of the wave's block (`i`, `j`): each register holds
    /// the element of the block its family's `d_place` gives.
    fn store(self, p: &Problem<In, Out>, at: &Place, i: u32, j: u32);
}

/// [`store_d`] of the integer kernels: `alpha · x + beta · C` in i32
/// modulo 2^32 (Tensile's I8II, Int32 compute), alpha and beta converted
/// to i32 (the host passes them integral).
#[inline(always)]
pub(crate) fn store_d_i32<In>(p: &Problem<In, i32>, gr: u32, gc: u32, x: i32) {
    if gr >= p.m || gc >= p.n {
        return;
    }
    let mut v = (p.alpha as i32).wrapping_mul(x);
    if p.beta != 0.0 {
        // SAFETY: (gr, gc) is an element of C (gr < M, gc < N).
        let cv = unsafe { p.c.add(gr as usize + gc as usize * p.ldc as usize).read() };
        v = v.wrapping_add((p.beta as i32).wrapping_mul(cv));
    }
    // SAFETY: (gr, gc) is an element of D.
    unsafe { p.d.add(gr as usize + gc as usize * p.ldd as usize).write(v) };
}

/// `$store(i, j, $acc[i][j])` for each block (i, j) of a wave's `$bm × $bn`
/// accumulators (up to 4 × 4), with constant indices: a loop LLVM leaves
/// rolled (the conversions make a large tile's epilogue big) would index
/// the accumulators at run time and put them in scratch.
macro_rules! each_block {
    ($acc:ident, $bm:ident, $bn:ident, $store:ident) => {
        each_block!(@ $acc, $bm, $bn, $store;
            0 0, 0 1, 0 2, 0 3, 1 0, 1 1, 1 2, 1 3, 2 0, 2 1, 2 2, 2 3, 3 0, 3 1, 3 2, 3 3);
        const { assert!($bm <= 4 && $bn <= 4, "the epilogue covers up to 4 × 4 blocks") };
    };
    (@ $acc:ident, $bm:ident, $bn:ident, $store:ident; $($i:literal $j:literal),*) => {$(
        if $i < $bm && $j < $bn {
            $store($i, $j, $acc[$i][$j]);
        }
    )*};
}
pub(crate) use each_block;
