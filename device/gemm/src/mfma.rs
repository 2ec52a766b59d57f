//! The MFMA kernel family (CDNA: gfx90a, gfx942, gfx950): D in 32 × 32
//! blocks of `v_mfma_f32_32x32x*` with f32 accumulators (of
//! `v_mfma_i32_32x32x*` with i32 ones for 8-bit integers).
//!
//! **Work split.** A workgroup of [`THREADS`] work-items (four waves, 2 × 2)
//! computes an `MT_M × MT_N` macro-tile of D; each wave a `32·WM × 32·WN`
//! part of it, `WM · WN` blocks of one MFMA output (16 f32 per lane each),
//! so `MT_M = 64 · WM` and `MT_N = 64 · WN` ([`Tile`]).
//!
//! **K slices and LDS.** K advances [`SLICE_BYTES`] bytes of elements at a
//! time (16 f32, 32 f16/bf16, 64 FP8/BF8). A and B slices sit in LDS as
//! rows of K: row `r` of the A slice holds `A[row0 + r][k0 ..]`, row `c` of
//! the B slice `B[k0 ..][col0 + c]`, so that eight lanes reading the same
//! 16 bytes of eight consecutive rows hit 32 distinct banks
//! ([`lds_offset`]): rows [`PADDED_ROW`] bytes apart (16 bytes of padding),
//! or, for a tile whose padded buffers would not fit a workgroup's
//! [`LDS_LIMIT`] (256 × 256), [`SLICE_BYTES`] apart with the row's four
//! 16-byte chunks swizzled, chunk `q` of row `r` stored at chunk
//! `q ^ (r / 2 % 4)`. The padded rows keep a row-contiguous operand's
//! element writes at constant offsets from one address (the swizzle costs
//! each its own address, a few instructions in the main loop), so only
//! the tile that needs it swizzles.
//!
//! **The main loop.** A whole tile (inside M and N, operands 16-byte
//! aligned with aligned leading dimensions) runs its slices inside K in a
//! loop specialised for its layouts: two LDS buffers alternate, and while
//! the MFMAs read one, the next slice, loaded with 128-bit loads before the
//! MFMAs were issued, is written to the other (one barrier per slice).
//! Each work-item moves `WM` (A) and `WN` (B) 16-byte vectors per slice
//! ([`vector_place`]). An operand stored with K contiguous (A transposed,
//! B as is) fills a vector with consecutive K of one row and writes it
//! with one 128-bit LDS write; one stored with rows contiguous (A as is, B
//! transposed) fills it with consecutive rows of one k and, on gfx90a and
//! gfx942 and for 32-bit types, writes each element on its own.
//!
//! **Transposed slices (gfx950, 16- and 8-bit types).** gfx950 reads LDS
//! transposed (`ds_read_b64_tr_b16`, `_tr_b8`, CDNA4 ISA §12.12), so there
//! a row-contiguous operand of f16, bf16, FP8, BF8 or i8 (MXFP8 too; not
//! the packed MXFP6/MXFP4, which are K-contiguous only) keeps its memory
//! layout in LDS: the slice is `64 / es` k lines of the tile's rows
//! ([`Lines`]: `16 es` bytes of padding a line or, in the swizzled tile,
//! `16 es`-byte pieces swizzled), each loaded vector one 128-bit write,
//! and the MFMA's operand comes back as two transposing reads a lane
//! ([`Lines::reads`]) holding exactly what the 16-byte read of the other
//! layout holds, so the MFMAs are unchanged. The reads meet no bank
//! conflict, nor do the writes but in the 64-row 8-bit slices (two of
//! eight 16-byte pieces on the same banks; the layout's test checks
//! both). A vector's `16 / es` element writes become one, for two reads
//! a block and chunk where there was one. The 256 × 256 tile keeps
//! element writes: staged transposed, its bf16 kernel spilled (the build
//! refuses it), its 256 accumulators leaving no registers for the
//! swizzled reads' addresses.
//!
//! **Edges.** Edge tiles, odd leading dimensions and the K tail go a slice
//! at a time through one buffer, element by element: each lane zeroes its
//! elements' places and copies over them those inside M, N and K.
//!
//! **LDS to MFMA.** A 32 × 32 × 8 f16 MFMA takes, in lane `l`, four
//! consecutive k of row `l % 32` (A) or column `l % 32` (B), the lanes
//! `l / 32 = g` holding k `4g ..`. Each lane reads 16 bytes from its row at
//! byte `32c + 16g` for chunk `c` of the slice ([`operand_offset`]) and
//! feeds them to 16 / (4 · element bytes) MFMAs in turn: the k order inside
//! a slice is permuted, identically for A and B, so every k meets its
//! partner once ([`chunk_k`]). On gfx950 the 16 bytes of f16 (bf16) feed
//! one doubled-K `v_mfma_f32_32x32x16_f16` (`_bf16`) instead of two 32 ×
//! 32 × 8 ones (CDNA4's 16-bit rate; the bf16 one through an IR wrapper,
//! `llvm/gemm.ll`, as its intrinsic takes a type Rust cannot name), and the two
//! chunks of an FP8/BF8 slice, 32 bytes a lane, one
//! `v_mfma_f32_32x32x64_f8f6f4`, whose k order is the slice's own
//! ([`f8f6f4_k`]). The MX kernels take the scaled form, each lane reading
//! its row's (column's) E8M0 scale of its K block from `scale_a`/`scale_b`
//! ([`scale_place`]) with the slice's operands, a slice ahead of its
//! MFMAs, so those loads are in flight while the previous slice's MFMAs
//! run (the disassembly's waits show it; no GPU here has timed it).
//! MXFP6's 6-bit elements (four in three bytes) make its slice rows 48
//! bytes, [`FP6_SLICE`]: the 64 k of one MFMA, three 16-byte vectors a
//! row (so a tile's last waves move one vector fewer than the others),
//! each lane reading its 24 bytes as three 8-byte reads
//! ([`fp6_offsets`]).
//!
//! **Epilogue.** Register `r` of lane `l` of a block holds D's element
//! ([`d_place`]); it is scaled by alpha, added to beta · C when beta ≠ 0 (C
//! is never read otherwise) and stored if it lies inside D.
//!
//! The index arithmetic is plain functions here, tested on the host; the
//! kernel (amdgpu only) strings them together. The WMMA kernels of RDNA
//! (`crate::wmma`) use the same tiles, LDS layout and slices (the device's
//! `staging` module holds the code both families run). Arguments and launch are
//! [`crate::common`]'s; the grid is `(ceil(M / MT_M) · 256, ceil(N /
//! MT_N), batch)`.

use aqueduct_abi::gfx::{MatrixCore, TARGETS};

use crate::common::{
    Bf8, Bf16, ElementType, F16, Family, Fp8, GemmKernel, I8, MxBf6, MxBf8, MxFp4, MxFp6, MxFp8,
    Stored, Xf32,
};

/// Work-items per workgroup (four waves, 2 × 2 over the macro-tile).
pub const THREADS: u32 = 256;
/// Lanes per wave.
pub const WAVE: u32 = 64;
/// Rows (and columns) of one MFMA output block.
pub const BLOCK: u32 = 32;
/// Bytes of K per LDS row and slice.
pub const SLICE_BYTES: u32 = 64;
/// Bytes from one LDS row to the next in a padded tile.
pub const PADDED_ROW: u32 = SLICE_BYTES + 16;
/// LDS bytes a workgroup may have on every target the MFMA kernels are
/// built for: the smallest `lds_per_workgroup` of the per-gfx table's MFMA
/// processors (64 KiB: gfx90a and gfx942; gfx950 has 160 KiB). One limit
/// for all, not each target's own: a tile's LDS layout and size are one
/// fact on every target (the kernel table, which the catalogs and the
/// simulator's tests read on the host), so a tile fits the smallest.
pub const LDS_LIMIT: u32 = mfma_lds_limit();

/// The smallest `lds_per_workgroup` of the MFMA processors.
const fn mfma_lds_limit() -> u32 {
    let mut limit = u32::MAX;
    let mut i = 0;
    while i < TARGETS.len() {
        let gfx = &TARGETS[i];
        if matches!(gfx.matrix_core, MatrixCore::Mfma) && gfx.lds_per_workgroup < limit {
            limit = gfx.lds_per_workgroup;
        }
        i += 1;
    }
    limit
}

/// Bytes in a vector: one 128-bit load or LDS access.
pub const VECTOR: u32 = 16;

/// A macro-tile: `64 · WM` rows × `64 · WN` columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    pub wm: u32,
    pub wn: u32,
}

impl Tile {
    pub const fn rows(self) -> u32 {
        2 * BLOCK * self.wm
    }
    pub const fn cols(self) -> u32 {
        2 * BLOCK * self.wn
    }
    /// Whether its LDS rows are unpadded and swizzled: padded, its two
    /// buffers would not fit [`LDS_LIMIT`] (module doc).
    pub const fn swizzled(self) -> bool {
        2 * (self.rows() + self.cols()) * PADDED_ROW > LDS_LIMIT
    }
    /// Bytes from one LDS row to the next.
    pub const fn row_stride(self) -> u32 {
        if self.swizzled() {
            SLICE_BYTES
        } else {
            PADDED_ROW
        }
    }
    /// LDS bytes: two buffers of A and B slices.
    pub const fn lds_bytes(self) -> u32 {
        2 * (self.rows() + self.cols()) * self.row_stride()
    }
}

/// Where vector `v` (0 ≤ v < 4 · `rows`) of an operand slice comes from:
/// (row, first k) for a K-contiguous operand, or (first row, k) for a
/// row-contiguous one; `per` = elements per vector.
#[inline(always)]
pub fn vector_place(v: u32, rows: u32, k_contiguous: bool, per: u32) -> (u32, u32) {
    vector_place_in(SLICE_BYTES, v, rows, k_contiguous, per)
}

/// [`vector_place`] for slice rows of `slice` bytes (MXFP6's 48: three
/// vectors a row, `v` < 3 · `rows`, so a tile's last work-items move one
/// vector fewer than the others).
#[inline(always)]
pub fn vector_place_in(slice: u32, v: u32, rows: u32, k_contiguous: bool, per: u32) -> (u32, u32) {
    let per_row = slice / VECTOR;
    if k_contiguous {
        (v / per_row, v % per_row * per)
    } else {
        let across = rows / per;
        (v % across * per, v / across)
    }
}

/// Where byte `byte` of LDS row `row` of a slice of `tile` lies: at
/// `row · 80 + byte` in a padded tile; in a swizzled one, 16-byte chunk
/// `q` of the row at chunk `q ^ (row / 2 % 4)` of its 64 bytes (eight
/// consecutive rows from an even one span 4 × 128 bytes, and the same
/// chunk of each lands on a different 16 bytes of the 128 the 32 banks
/// cover).
#[inline(always)]
pub fn lds_place(tile: Tile, row: u32, byte: u32) -> u32 {
    if !tile.swizzled() {
        return row * PADDED_ROW + byte;
    }
    let chunk = (byte / VECTOR) ^ (row >> 1 & 3);
    row * SLICE_BYTES + chunk * VECTOR + byte % VECTOR
}

/// Byte offset in an operand slice of `tile` of row `row`, element `kk`
/// of `es` bytes.
#[inline(always)]
pub fn lds_offset(tile: Tile, row: u32, kk: u32, es: u32) -> u32 {
    lds_place(tile, row, kk * es)
}

/// The byte offset lane `lane` reads its 16 bytes from for chunk `c` of
/// block row (or column) `base`: row `base + lane % 32`, the row's bytes
/// `32c + 16 (lane / 32)` ([`lds_place`]).
#[inline(always)]
pub fn operand_offset(tile: Tile, base: u32, lane: u32, c: u32) -> u32 {
    lds_place(
        tile,
        base + lane % BLOCK,
        c * 2 * VECTOR + lane / BLOCK * VECTOR,
    )
}

/// Whether gfx950's transposing LDS reads take elements of `es` bytes:
/// `ds_read_b64_tr_b16` and `ds_read_b64_tr_b8` (CDNA4 ISA §12.12).
pub const fn transposable(es: u32) -> bool {
    es == 1 || es == 2
}

/// A transposed operand slice (gfx950, module doc): k lines of the
/// operand's `rows` rows (A: the tile's rows, B: its columns) of `es`-byte
/// elements, `SLICE_BYTES / es` lines.
#[derive(Clone, Copy, Debug)]
pub struct Lines {
    pub tile: Tile,
    pub rows: u32,
    pub es: u32,
}

impl Lines {
    /// Bytes from one k line to the next: the line's `es · rows` bytes,
    /// then `16 es` bytes of padding in a padded tile; none in a swizzled
    /// one, whose lines fill the slice's `rows × 64` bytes exactly
    /// ([`Lines::place`]). A 16-lane transposing read spans `8 / es`
    /// consecutive lines, `16 es` bytes of each: the padding puts them on
    /// different banks (`rows` is a multiple of 64, so the stride is `16
    /// es` or `64 es + 16 es` past a multiple of 128 bytes).
    #[inline(always)]
    pub const fn stride(self) -> u32 {
        if self.tile.swizzled() {
            self.rows * self.es
        } else {
            self.rows * self.es + VECTOR * self.es
        }
    }

    /// Where byte `byte` of k line `k` lies: at `k · stride + byte`; in a
    /// swizzled tile, its `16 es`-byte piece `q` at piece `q ^ (k % (8 /
    /// es))`.
    #[inline(always)]
    pub fn place(self, k: u32, byte: u32) -> u32 {
        let start = k * self.stride();
        if !self.tile.swizzled() {
            return start + byte;
        }
        let size = VECTOR * self.es;
        let piece = (byte / size) ^ (k % (8 / self.es));
        start + piece * size + byte % size
    }

    /// Byte offset of element (`row`, `kk`): byte `es · row` of k line
    /// `kk`. The `16 / es` rows of a row-contiguous operand's loaded
    /// vector (from a multiple of `16 / es`) are one aligned 16-byte
    /// piece of a line: one 128-bit LDS write.
    #[inline(always)]
    pub fn offset(self, row: u32, kk: u32) -> u32 {
        self.place(kk, row * self.es)
    }

    /// The two byte offsets lane `lane` gives gfx950's transposing read
    /// (`ds_read_b64_tr_b16` or `_tr_b8`) for chunk `c` of block row (or
    /// column) `base`, so that the two reads bring it what
    /// [`operand_offset`]'s one 16-byte read brings from the other layout:
    /// row `base + lane % 32`, the `16 / es` k from `(32c + 16g) / es` in
    /// order (`g = lane / 32`), read `j` the `8 / es` from `(32c + 16g) /
    /// es + j · 8 / es`.
    ///
    /// The read (CDNA4 ISA §12.12; the lane formula the simulator's
    /// `read_transposed` documents) takes `E = 8 / es` elements from each
    /// lane's 8 bytes and hands lane `c'` of each 16-lane group, as
    /// element `n`, element `c' % E` of the 8 bytes lane `n · 16 / E + c'
    /// / E` read. So lane `p` of a group reads k line `k0 + p / (16 /
    /// E)`, rows `r0 + E (p % (16 / E)) ..+ E`: lane `c'` then holds row
    /// `r0 + c'`, k `k0 .. k0 + E`. The lanes 16–31 of each half take rows
    /// 16–31 of the block.
    #[inline(always)]
    pub fn reads(self, base: u32, lane: u32, c: u32) -> [u32; 2] {
        let (g, half, p) = (lane / BLOCK, lane / 16 % 2, lane % 16);
        let (e, per_line) = (8 / self.es, 2 * self.es);
        let row = base + 16 * half + e * (p % per_line);
        let k0 = (2 * VECTOR * c + VECTOR * g) / self.es;
        [0, 1].map(|j| self.offset(row, k0 + e * j + p / per_line))
    }
}

/// The k inside the slice that MFMA `j` of chunk `c` multiplies in lane
/// group `g` as its element `h`, for an instruction taking `per` elements
/// per lane of `es` bytes each: the element at byte `32c + 16g + es (per j
/// + h)` of the row.
#[inline(always)]
pub fn chunk_k(c: u32, g: u32, j: u32, h: u32, per: u32, es: u32) -> u32 {
    (c * 2 * VECTOR + g * VECTOR) / es + per * j + h
}

/// The k inside the slice that gfx950's `v_mfma_f32_32x32x64_f8f6f4`
/// multiplies as element `e` (< 32) of lane group `g` when an FP8/BF8
/// operand's registers hold chunk 0's read, then chunk 1's (element `e` in
/// byte `e % 16` of chunk `e / 16`): CDNA4 ISA §7.1.5.1 puts k = `32 h +
/// 16 g + i` in element `16 h + i` of group `g` (i < 16), which is the
/// byte that chunk `h`'s read of group `g` holds, so the slice's k order
/// is the instruction's own, and its block `b` of 32 k (the unit of an MX
/// block scale, §7.2) is chunk `b`.
#[inline(always)]
pub fn f8f6f4_k(g: u32, e: u32) -> u32 {
    32 * (e / 16) + 16 * g + e % 16
}

/// The row (column) of a 32-row block and the K block of an MFMA whose
/// E8M0 scale lane `lane` holds for gfx950's scaled f8f6f4 MFMA: CDNA4
/// ISA §7.2 puts row `i`'s scale of K block `b` (k `32 b ..`) in lane `i
/// + 32 b` (the byte OP_SEL picks, 0 here). Every such MFMA takes 64 k,
/// two blocks: the `q`-th of the problem (slice `s`'s only one for FP8,
/// chunk `c`'s of `2 s + c` for FP4) takes blocks `2 q` and `2 q + 1`.
#[inline(always)]
pub fn scale_place(lane: u32) -> (u32, u32) {
    (lane % BLOCK, lane / BLOCK)
}

/// The k inside the slice that gfx950's f8f6f4 MFMA of chunk `c` takes as
/// FP4 element `e` (< 32) of lane group `g`: CDNA4 ISA §7.1.5.1 puts k =
/// `32 g + e` of the MFMA's 64 in element `e` of group `g`, nibble `e % 2`
/// of byte `e / 2` of the lane's 16 bytes (k even in the low nibble, as
/// memory holds them); chunk `c`'s read of group `g` is the slice row's
/// bytes `32 c + 16 g ..` (two k a byte), so k = `64 c + 32 g + e`: the
/// slice's own order, and the MFMA's K block `g` is lane group `g`'s 32
/// elements.
#[inline(always)]
pub fn fp4_k(c: u32, g: u32, e: u32) -> u32 {
    64 * c + 32 * g + e
}

/// Bytes of a slice row gfx950's MXFP6 kernels read for one f8f6f4 MFMA:
/// 64 k of 6-bit elements, [`FP6_SLICE`] (a slice is one MFMA).
pub const FP6_SLICE: u32 = 48;

/// The three LDS byte offsets lane `lane` reads 8 bytes each from for
/// gfx950's MXFP6 MFMA of block row (or column) `base`: row `base + lane %
/// 32`, the row's bytes `24 g ..` for lane group `g = lane / 32`. CDNA4 ISA
/// §7.1.5.1 puts k = `32 g + e` of the MFMA's 64 in element `e` of group
/// `g`, bits `6 e ..` of the lane's six registers; the row holds k at bits
/// `6 k ..` of its bytes (`crate::common::MxFp6`), so the 24 bytes from
/// `24 g` are the lane's registers in order, and each lane group's 32
/// elements are one MX block. Each 8-byte read lies inside one 16-byte
/// chunk, so it is one `ds_read_b64` in either layout ([`lds_place`]).
#[inline(always)]
pub fn fp6_offsets(tile: Tile, base: u32, lane: u32) -> [u32; 3] {
    let (row, group) = (base + lane % BLOCK, lane / BLOCK);
    [0, 1, 2].map(|j| lds_place(tile, row, FP6_SLICE / 2 * group + 8 * j))
}

/// The element of a 32 × 32 block that register `r` (< 16) of lane `lane`
/// holds after a 32 × 32 single-block MFMA: (row, column) (CDNA3 ISA,
/// "Dependent arithmetic … 32 × 32": row `8 (r / 4) + 4 (lane / 32) + r %
/// 4`, column `lane % 32`).
#[inline(always)]
pub fn d_place(lane: u32, r: u32) -> (u32, u32) {
    (8 * (r / 4) + 4 * (lane / BLOCK) + r % 4, lane % BLOCK)
}

/// Wave `w`'s first row and column in the macro-tile.
#[inline(always)]
pub fn wave_place(w: u32, tile: Tile) -> (u32, u32) {
    (w % 2 * BLOCK * tile.wm, w / 2 * BLOCK * tile.wn)
}

/// The macro-tiles: 64 × 64, 128 × 128, 256 × 128 and 256 × 256 (whose
/// swizzled buffers fill [`LDS_LIMIT`]; its 256 accumulators per lane take
/// AGPRs).
const T64: Tile = Tile { wm: 1, wn: 1 };
const T128: Tile = Tile { wm: 2, wn: 2 };
const T256: Tile = Tile { wm: 4, wn: 2 };
const T256X256: Tile = Tile { wm: 4, wn: 4 };

/// Every MFMA kernel, one row each: the one place its name, its types
/// and its macro-tile are written. A row is `name: In => Out, TILE;`, the
/// types as its entry point stores them (`crate::common`'s, `f32` for
/// f32) and one of the tiles above, then `, only_on "gfx..", ..` for a
/// kernel built for those targets only (on every MFMA target otherwise).
/// `mfma_kernels!(then)` gives the rows to macro `then`: here
/// `kernel_infos`, which makes [`KERNELS`]; on the device
/// `mfma_entry_points` (`device.rs`), which makes the kernels, each on its
/// own LDS array, which `cargo xtask build` declares from [`KERNELS`]
/// ([`write_lds_ir`]).
///
/// The FP8 and BF8 kernels (f32 out) are gfx942's and gfx950's, each in
/// its processor's 8-bit formats (`aqueduct_abi::gfx::Fp8Format`): FNUZ
/// through gfx942's `v_mfma_f32_32x32x16_{fp8,bf8}_*`, OCP through
/// gfx950's `v_mfma_f32_32x32x64_f8f6f4`, one per slice
/// ([`f8f6f4_k`]); the MXFP8, MXFP6 and MXFP4 ones (MxFp8, MxBf8, MxFp6,
/// MxBf6, MxFp4) are gfx950's, through the scaled form
/// `v_mfma_scale_f32_32x32x64_f8f6f4` with each block's scale in its lane
/// ([`scale_place`]); MXFP4 takes one chunk (64 k) an MFMA ([`fp4_k`]),
/// MXFP6 one slice of 48-byte rows ([`fp6_offsets`]). The xf32 kernels are gfx942's only
/// (`v_mfma_f32_32x32x4_xf32`; CDNA4 dropped it). The signed 8-bit
/// integer kernels (I8 in, i32 accumulators and out: Tensile's I8II) are
/// every MFMA target's: `v_mfma_i32_32x32x8i8` on gfx90a (four bytes a
/// lane), `32x32x16_i8` on gfx942 (eight), `32x32x32_i8` on gfx950
/// (sixteen, a read an MFMA), in `chunk_k`'s order.
macro_rules! mfma_kernels {
    ($then:ident) => {
        $then! {
            gemm_f32_mfma_64x64: f32 => f32, T64;
            gemm_f32_mfma_128x128: f32 => f32, T128;
            gemm_f32_mfma_256x128: f32 => f32, T256;
            gemm_f32_mfma_256x256: f32 => f32, T256X256;
            gemm_f16_mfma_64x64: F16 => F16, T64;
            gemm_f16_mfma_128x128: F16 => F16, T128;
            gemm_f16_mfma_256x128: F16 => F16, T256;
            gemm_f16_mfma_256x256: F16 => F16, T256X256;
            gemm_f16_f32_mfma_64x64: F16 => f32, T64;
            gemm_f16_f32_mfma_128x128: F16 => f32, T128;
            gemm_f16_f32_mfma_256x128: F16 => f32, T256;
            gemm_f16_f32_mfma_256x256: F16 => f32, T256X256;
            gemm_bf16_mfma_64x64: Bf16 => Bf16, T64;
            gemm_bf16_mfma_128x128: Bf16 => Bf16, T128;
            gemm_bf16_mfma_256x128: Bf16 => Bf16, T256;
            gemm_bf16_mfma_256x256: Bf16 => Bf16, T256X256;
            gemm_bf16_f32_mfma_64x64: Bf16 => f32, T64;
            gemm_bf16_f32_mfma_128x128: Bf16 => f32, T128;
            gemm_bf16_f32_mfma_256x128: Bf16 => f32, T256;
            gemm_bf16_f32_mfma_256x256: Bf16 => f32, T256X256;
            gemm_fp8_f32_mfma_64x64: Fp8 => f32, T64, only_on "gfx942", "gfx950";
            gemm_fp8_f32_mfma_128x128: Fp8 => f32, T128, only_on "gfx942", "gfx950";
            gemm_bf8_f32_mfma_64x64: Bf8 => f32, T64, only_on "gfx942", "gfx950";
            gemm_bf8_f32_mfma_128x128: Bf8 => f32, T128, only_on "gfx942", "gfx950";
            gemm_mxfp8_f32_mfma_64x64: MxFp8 => f32, T64, only_on "gfx950";
            gemm_mxfp8_f32_mfma_128x128: MxFp8 => f32, T128, only_on "gfx950";
            gemm_mxbf8_f32_mfma_64x64: MxBf8 => f32, T64, only_on "gfx950";
            gemm_mxbf8_f32_mfma_128x128: MxBf8 => f32, T128, only_on "gfx950";
            gemm_mxfp4_f32_mfma_64x64: MxFp4 => f32, T64, only_on "gfx950";
            gemm_mxfp4_f32_mfma_128x128: MxFp4 => f32, T128, only_on "gfx950";
            gemm_mxfp6_f32_mfma_64x64: MxFp6 => f32, T64, only_on "gfx950";
            gemm_mxfp6_f32_mfma_128x128: MxFp6 => f32, T128, only_on "gfx950";
            gemm_mxbf6_f32_mfma_64x64: MxBf6 => f32, T64, only_on "gfx950";
            gemm_mxbf6_f32_mfma_128x128: MxBf6 => f32, T128, only_on "gfx950";
            gemm_xf32_mfma_64x64: Xf32 => f32, T64, only_on "gfx942";
            gemm_xf32_mfma_128x128: Xf32 => f32, T128, only_on "gfx942";
            gemm_xf32_mfma_256x128: Xf32 => f32, T256, only_on "gfx942";
            gemm_i8_i32_mfma_64x64: I8 => i32, T64;
            gemm_i8_i32_mfma_128x128: I8 => i32, T128;
            gemm_i8_i32_mfma_256x128: I8 => i32, T256;
        }
    };
}

/// [`KERNELS`] from the rows of `mfma_kernels!`.
macro_rules! kernel_infos {
    ($($name:ident: $in:ty => $out:ty, $tile:ident $(, only_on $($gfx:literal),+)?;)*) => {
        /// Every MFMA kernel (`mfma_kernels!`), built for gfx90a, gfx942 and
        /// gfx950 unless its `only_on` says otherwise.
        pub const KERNELS: &[GemmKernel] = &[$(
            mfma_kernel(
                stringify!($name),
                <$in as Stored>::TYPE,
                <$out as Stored>::TYPE,
                $tile,
                &[$($($gfx),+)?],
            )
        ),*];
    };
}

mfma_kernels!(kernel_infos);

const fn mfma_kernel(
    name: &'static str,
    input: ElementType,
    output: ElementType,
    tile: Tile,
    only_on: &'static [&'static str],
) -> GemmKernel {
    GemmKernel {
        name,
        family: Family::Mfma,
        input,
        output,
        tile_rows: tile.rows(),
        tile_cols: tile.cols(),
        threads: THREADS,
        only_on,
    }
}

/// The start of the name of each MFMA kernel's LDS accessor,
/// `aqueduct_gemm_lds_<kernel>` (a macro: the entry points' `link_name`
/// is a `concat!` of it).
macro_rules! lds_accessor_prefix {
    () => {
        "aqueduct_gemm_lds_"
    };
}

/// Writes the LLVM IR of the LDS of the MFMA and WMMA kernels built for
/// `gfx`, as [`KERNELS`] and [`crate::wmma::KERNELS`] give them (both
/// families' tiles have this module's LDS layout). Rust cannot declare a static in address space
/// 3 (LDS): for each kernel an internal array of its tile's
/// [`Tile::lds_bytes`], 16-byte aligned, so that the kernel's group
/// segment is its tile's, and the always-inlined function
/// `aqueduct_gemm_lds_<kernel>` that its entry point calls for it, which
/// returns it as a generic pointer (after inlining, LLVM's
/// InferAddressSpaces turns the accesses back into DS instructions).
/// `cargo xtask build` links it into the crate's code object with
/// `llvm/gemm.ll`.
pub fn write_lds_ir(out: &mut impl core::fmt::Write, gfx: &str) -> core::fmt::Result {
    const PREFIX: &str = lds_accessor_prefix!();
    let all = KERNELS.iter().chain(crate::wmma::KERNELS);
    for kernel in all.filter(|k| k.built_for(gfx)) {
        let (name, bytes) = (kernel.name, tile_of(kernel).lds_bytes());
        writeln!(
            out,
            "@{PREFIX}{name}.array = internal addrspace(3) global [{bytes} x i8] poison, align 16\n"
        )?;
        writeln!(
            out,
            "define linkonce_odr ptr @{PREFIX}{name}() \
             alwaysinline nounwind speculatable willreturn memory(none) {{"
        )?;
        writeln!(
            out,
            "  %g = addrspacecast ptr addrspace(3) @{PREFIX}{name}.array to ptr"
        )?;
        writeln!(out, "  ret ptr %g\n}}\n")?;
    }
    Ok(())
}

/// The macro-tile of a kernel of this family.
pub const fn tile_of(kernel: &GemmKernel) -> Tile {
    Tile {
        wm: kernel.tile_rows / (2 * BLOCK),
        wn: kernel.tile_cols / (2 * BLOCK),
    }
}

#[cfg(all(
    target_arch = "amdgpu",
    any(
        aqueduct_gfx = "gfx90a",
        aqueduct_gfx = "gfx942",
        aqueduct_gfx = "gfx950"
    )
))]
mod device;

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn the_vectors_of_all_work_items_cover_each_slice_once() {
        for tile in KERNELS.iter().map(tile_of) {
            for (rows, per_thread) in [(tile.rows(), tile.wm), (tile.cols(), tile.wn)] {
                for es in [1, 2, 4] {
                    let per = VECTOR / es;
                    let k_elems = SLICE_BYTES / es;
                    for k_contiguous in [false, true] {
                        let mut seen = vec![0u32; (rows * k_elems) as usize];
                        for lid in 0..THREADS {
                            for t in 0..per_thread {
                                let v = lid + t * THREADS;
                                let (r, kk) = vector_place(v, rows, k_contiguous, per);
                                for e in 0..per {
                                    let (r, kk) = if k_contiguous {
                                        (r, kk + e)
                                    } else {
                                        (r + e, kk)
                                    };
                                    assert!(r < rows && kk < k_elems, "{tile:?} {r} {kk}");
                                    seen[(r * k_elems + kk) as usize] += 1;
                                }
                            }
                        }
                        assert!(seen.iter().all(|&n| n == 1), "{tile:?} es {es}");
                    }
                }
            }
        }
    }

    /// gfx950's f8f6f4 MFMA takes, in element `e` of lane group `g`, the
    /// byte of the slice row that chunk `e / 16`'s read of group `g`
    /// holds at `e % 16`, and each MX block of 32 k is one chunk.
    #[test]
    fn the_f8f6f4_mfma_takes_the_slice_in_its_own_order() {
        let mut seen = [0u32; SLICE_BYTES as usize];
        for g in 0..2 {
            for e in 0..32 {
                let k = f8f6f4_k(g, e);
                let (chunk, byte) = (e / 16, e % 16);
                assert_eq!(k, chunk_k(chunk, g, 0, byte, 16, 1));
                let read = operand_offset(T128, 0, 32 * g + 3, chunk);
                assert_eq!(lds_offset(T128, 3, k, 1), read + byte);
                assert_eq!(k / 32, chunk, "block {g} {e}");
                seen[k as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
        // The scaled form's scales (ISA §7.2: lane i + 32 b, row i's block
        // b): each (row, block) of the slice in exactly one lane.
        let mut scales = [0u32; 64];
        for lane in 0..WAVE {
            let (row, block) = scale_place(lane);
            assert!(row < BLOCK && block < 2);
            assert_eq!(lane, row + BLOCK * block);
            scales[(row * 2 + block) as usize] += 1;
        }
        assert!(scales.iter().all(|&n| n == 1));
    }

    /// gfx950's FP4 MFMAs take a slice (128 k, two a byte) a chunk at a
    /// time, element `e` of group `g` from the byte of the read that holds
    /// it, each k once, each 32 k one lane group's (one block scale).
    #[test]
    fn the_fp4_mfmas_take_the_slice_in_its_own_order() {
        let mut seen = [0u32; 2 * SLICE_BYTES as usize];
        for c in 0..SLICE_BYTES / (2 * VECTOR) {
            for g in 0..2 {
                let read = operand_offset(T64, 0, 32 * g + 7, c);
                for e in 0..32 {
                    let k = fp4_k(c, g, e);
                    assert_eq!(lds_offset(T64, 7, k / 2, 1), read + e / 2);
                    assert_eq!((k % 2, k / 32 % 2), (e % 2, g));
                    seen[k as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    /// gfx950's MXFP6 MFMA reads each byte of a 48-byte slice row once
    /// over its two lane groups, in order, each 8-byte read aligned and
    /// inside one 16-byte chunk; the vectors of its three-vector slice
    /// rows cover each row once, and every tile's count of them is whole
    /// waves (`staging::exists` is uniform over a wave).
    #[test]
    fn the_fp6_mfma_reads_each_byte_of_its_slice_once_in_order() {
        for tile in [T64, T128] {
            for lane in [0, 5, 31, 32, 40, 63] {
                let offsets = fp6_offsets(tile, 32, lane);
                let row = 32 + lane % BLOCK;
                for (j, &o) in offsets.iter().enumerate() {
                    let byte = FP6_SLICE / 2 * (lane / BLOCK) + 8 * j as u32;
                    assert_eq!(o, lds_place(tile, row, byte));
                    assert_eq!(o % 8, 0);
                    assert_eq!(o / VECTOR, (o + 7) / VECTOR, "one chunk");
                }
            }
            for (rows, per_thread) in [(tile.rows(), tile.wm), (tile.cols(), tile.wn)] {
                let vectors = rows * FP6_SLICE / VECTOR;
                assert_eq!(vectors % WAVE, 0, "{tile:?}");
                assert!(vectors <= THREADS * per_thread, "{tile:?}");
                let mut seen = vec![0u32; (rows * FP6_SLICE) as usize];
                for v in 0..vectors {
                    let (r, b) = vector_place_in(FP6_SLICE, v, rows, true, VECTOR);
                    for e in 0..VECTOR {
                        seen[(r * FP6_SLICE + b + e) as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "{tile:?}");
            }
        }
        // The two lane groups of a row read bytes 0..24 and 24..48.
        let mut seen = [0u32; FP6_SLICE as usize];
        for lane in [7, 39] {
            for o in fp6_offsets(T64, 0, lane) {
                let byte = o - lds_place(T64, 7, 0);
                for b in byte..byte + 8 {
                    seen[b as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    /// Each k of a slice is multiplied exactly once per (row, column): the
    /// chunks, lane groups, MFMAs and elements of a 16-byte read cover the
    /// slice, for f16/bf16 (4 per lane, two MFMAs a read) and f32 (1 per
    /// lane, four), fp8/bf8 (8 per lane, two), and each k's LDS place
    /// (`lds_offset`, swizzled) is the byte of the lane's read
    /// (`operand_offset`) that the MFMA takes it from.
    #[test]
    fn the_mfmas_of_a_slice_meet_every_k_once() {
        for tile in [T128, T256X256] {
            for (es, per) in [(1, 8), (2, 4), (4, 1), (4, 2)] {
                let mut seen = vec![0u32; (SLICE_BYTES / es) as usize];
                for c in 0..SLICE_BYTES / (2 * VECTOR) {
                    for g in 0..2 {
                        let lane = 32 * g + 5;
                        let read = operand_offset(tile, 0, lane, c);
                        for j in 0..VECTOR / (es * per) {
                            for h in 0..per {
                                let kk = chunk_k(c, g, j, h, per, es);
                                let place = lds_offset(tile, 5, kk, es);
                                assert_eq!(place, read + es * (per * j + h));
                                seen[kk as usize] += 1;
                            }
                        }
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "es {es}");
            }
        }
    }

    /// gfx950's transposed layout of a row-contiguous operand of 16- and
    /// 8-bit elements: every element of a slice has its own place inside
    /// the operand's part of the buffer; a loaded vector (`16 / es` rows
    /// of one k) is one aligned 16-byte LDS write; the two transposing
    /// reads of a chunk bring each lane what the 16-byte read of the other
    /// layout brings (row `base + lane % 32`, the chunk's k of its lane
    /// group in order), with the read's lane formula (`E = 8 / es`
    /// elements a lane; lane `c` of a 16-lane group gets, as element `n`,
    /// element `c % E` of the 8 bytes lane `n · 16 / E + c / E` read); and
    /// the reads (16 lanes of 8 bytes) meet no bank conflict, nor do the
    /// writes (8 lanes of 16 bytes) but for the 64-row 8-bit slice, whose
    /// eight lanes write half a line each of two lines, two of their
    /// 16-byte pieces on the same four banks.
    #[test]
    fn the_transposing_reads_bring_what_the_row_reads_bring() {
        let banks = |offsets: &[u32], words: u32| {
            let mut banks: Vec<u32> = offsets
                .iter()
                .flat_map(|&o| (0..words).map(move |w| (o / 4 + w) % 32))
                .collect();
            banks.sort();
            banks.dedup();
            banks.len()
        };
        for (tile, es) in [T64, T128, T256, T256X256]
            .into_iter()
            .flat_map(|t| [(t, 2), (t, 1)])
        {
            assert!(transposable(es));
            let (depth, per) = (SLICE_BYTES / es, VECTOR / es);
            for rows in [tile.rows(), tile.cols()] {
                let lines = Lines { tile, rows, es };
                let region = rows * tile.row_stride();
                let mut holds = std::collections::BTreeMap::new();
                for row in 0..rows {
                    for kk in 0..depth {
                        let at = lines.offset(row, kk);
                        assert!(at.is_multiple_of(es) && at + es <= region, "{lines:?}");
                        assert!(
                            holds.insert(at, (row, kk)).is_none(),
                            "{lines:?} {row} {kk}"
                        );
                    }
                }
                for v in 0..rows * SLICE_BYTES / VECTOR {
                    let (r, kk) = vector_place(v, rows, false, per);
                    let at = lines.offset(r, kk);
                    assert_eq!(at % VECTOR, 0);
                    for e in 0..per {
                        assert_eq!(lines.offset(r + e, kk), at + es * e);
                    }
                }
                let want = if es == 1 && rows == 64 { 28 } else { 32 };
                for group in 0..THREADS / 8 {
                    let writes: Vec<u32> = (0..8)
                        .map(|l| {
                            let (r, kk) = vector_place(8 * group + l, rows, false, per);
                            lines.offset(r, kk)
                        })
                        .collect();
                    assert_eq!(banks(&writes, 4), want, "{lines:?} writes {group}×8");
                }
                let e = 8 / es;
                for base in (0..rows).step_by(BLOCK as usize) {
                    for c in 0..SLICE_BYTES / (2 * VECTOR) {
                        let reads: Vec<[u32; 2]> =
                            (0..WAVE).map(|lane| lines.reads(base, lane, c)).collect();
                        for lane in 0..WAVE {
                            let first = (2 * VECTOR * c + VECTOR * (lane / 32)) / es;
                            for j in 0..2 {
                                for n in 0..e {
                                    let from = 16 * (lane / 16) + n * 16 / e + lane % 16 / e;
                                    let at = reads[from as usize][j as usize] + es * (lane % e);
                                    let want = (base + lane % 32, first + e * j + n);
                                    assert_eq!(holds[&at], want, "{lines:?} lane {lane} read {j}");
                                }
                            }
                        }
                        for (group, lanes) in reads.chunks(16).enumerate() {
                            for j in 0..2 {
                                let offsets: Vec<u32> = lanes.iter().map(|r| r[j]).collect();
                                assert_eq!(banks(&offsets, 2), 32, "{lines:?} reads {group}×16");
                            }
                        }
                    }
                }
            }
        }
    }

    /// `d_place` inverts the ISA's C/D layout for M = 32, one block:
    /// element (i, j) in register 4 (i / 8) + i % 4 of lane 32 ((i / 4) % 2)
    /// + j (the formula the simulator's MFMA executor uses too).
    #[test]
    fn d_place_inverts_the_isa_layout() {
        let mut seen = [[0u32; 32]; 32];
        for lane in 0..WAVE {
            for r in 0..16 {
                let (i, j) = d_place(lane, r);
                assert_eq!(r, 4 * (i / 8) + i % 4);
                assert_eq!(lane, 32 * ((i / 4) % 2) + j);
                seen[i as usize][j as usize] += 1;
            }
        }
        assert!(seen.iter().flatten().all(|&n| n == 1));
    }

    #[test]
    fn the_waves_split_the_macro_tile() {
        let tile = Tile { wm: 2, wn: 2 };
        assert_eq!((tile.rows(), tile.cols()), (128, 128));
        assert_eq!(tile.lds_bytes(), 40960);
        assert!(!tile.swizzled() && !T256.swizzled() && T256X256.swizzled());
        assert_eq!(T256.lds_bytes(), 61440);
        assert_eq!(T256X256.lds_bytes(), 65536, "all of a workgroup's LDS");
        let places: Vec<_> = (0..4).map(|w| wave_place(w, tile)).collect();
        assert_eq!(places, [(0, 0), (64, 0), (0, 64), (64, 64)]);
    }

    /// A kernel's name ends in its tile, and the tile's LDS fits a
    /// workgroup on every target it is built for: [`LDS_LIMIT`] is the
    /// smallest of them.
    #[test]
    fn each_kernel_is_named_for_its_tile_and_fits_its_targets_lds() {
        use aqueduct_abi::gfx::TARGETS;
        for kernel in KERNELS {
            let tile = tile_of(kernel);
            let suffix = std::format!("_mfma_{}x{}", tile.rows(), tile.cols());
            assert!(kernel.name.ends_with(&suffix), "{}", kernel.name);
            assert!(tile.lds_bytes() <= LDS_LIMIT, "{}", kernel.name);
            for gfx in TARGETS.iter().filter(|g| kernel.built_for(g.name)) {
                assert!(tile.lds_bytes() <= gfx.lds_per_workgroup, "{}", kernel.name);
            }
        }
        assert_eq!(LDS_LIMIT, 64 * 1024, "gfx90a's and gfx942's");
        assert!(TARGETS.iter().any(|g| g.lds_per_workgroup == LDS_LIMIT));
    }

    /// The IR declares one LDS array for each matrix kernel (MFMA, WMMA)
    /// built for the target, of its tile's bytes, and its accessor: the
    /// name the entry point links.
    #[test]
    fn the_lds_ir_has_each_kernel_of_the_target_at_its_tile_s_size() {
        for gfx in ["gfx90a", "gfx942", "gfx1100"] {
            let mut ir = std::string::String::new();
            write_lds_ir(&mut ir, gfx).unwrap();
            let arrays = ir.lines().filter(|l| l.contains(" global ")).count();
            let built = KERNELS
                .iter()
                .chain(crate::wmma::KERNELS)
                .filter(|k| k.built_for(gfx));
            assert_eq!(arrays, built.clone().count(), "{gfx}");
            // CDNA: MFMA arrays only; RDNA (gfx1100): WMMA arrays only.
            assert!(built.clone().all(|k| k.family
                == if gfx == "gfx1100" {
                    Family::Wmma
                } else {
                    Family::Mfma
                }));
            for kernel in built {
                let bytes = tile_of(kernel).lds_bytes();
                let name = std::format!("aqueduct_gemm_lds_{}", kernel.name);
                let array = std::format!(
                    "@{name}.array = internal addrspace(3) global [{bytes} x i8] poison, align 16"
                );
                assert!(ir.contains(&array), "{gfx}: {array}");
                assert!(
                    ir.contains(&std::format!("ptr @{name}() ")),
                    "{gfx}: {name}"
                );
            }
        }
    }

    /// Both layouts keep every element of a row in the row and apart from
    /// the others, and the reads of a wave are free of bank conflicts:
    /// each eight lanes reading 16 bytes (a 128-bit LDS read is served
    /// eight lanes at a time) hit 32 distinct banks (4-byte banks, 128
    /// bytes a cycle), for every block row and chunk. In the swizzled
    /// layout the 128-bit writes of a K-contiguous operand (four
    /// consecutive lanes per row) are too; in the padded one two lanes of
    /// eight share four banks.
    #[test]
    fn the_lds_layouts_are_permutations_and_free_of_bank_conflicts() {
        for tile in KERNELS.iter().map(tile_of) {
            check_layout(tile);
        }
    }

    fn check_layout(tile: Tile) {
        let stride = tile.row_stride();
        for es in [1, 2, 4] {
            for row in 0..tile.rows() + tile.cols() {
                let mut places: Vec<u32> = (0..SLICE_BYTES / es)
                    .map(|kk| lds_offset(tile, row, kk, es))
                    .collect();
                assert!(places.iter().all(|&p| p / stride == row && p % es == 0));
                places.sort();
                places.dedup();
                assert_eq!(places.len() as u32, SLICE_BYTES / es, "row {row} es {es}");
            }
        }
        let banks = |offsets: &[u32]| {
            let mut banks: Vec<u32> = offsets
                .iter()
                .flat_map(|&o| (0..4).map(move |w| (o / 4 + w) % 32))
                .collect();
            banks.sort();
            banks.dedup();
            banks.len()
        };
        for base in (0..tile.rows().max(tile.cols())).step_by(BLOCK as usize) {
            for c in 0..SLICE_BYTES / (2 * VECTOR) {
                for group in 0..WAVE / 8 {
                    let offsets: Vec<u32> = (0..8)
                        .map(|l| operand_offset(tile, base, 8 * group + l, c))
                        .collect();
                    assert_eq!(banks(&offsets), 32, "base {base} chunk {c} lanes {group}×8");
                }
            }
        }
        for group in 0..THREADS / 8 {
            let offsets: Vec<u32> = (0..8)
                .map(|l| {
                    let (r, kk) = vector_place(8 * group + l, tile.rows(), true, 8);
                    lds_offset(tile, r, kk, 2)
                })
                .collect();
            let want = if tile.swizzled() { 32 } else { 28 };
            assert_eq!(banks(&offsets), want, "{tile:?} write lanes {group}×8");
        }
    }
}
