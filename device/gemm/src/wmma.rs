//! The WMMA kernel family (RDNA3 gfx1100, RDNA4 gfx1201): D in 16 × 16
//! blocks of `v_wmma_f32_16x16x16_{f16,bf16}` (and on gfx1201
//! `v_wmma_f32_16x16x16_{fp8_fp8,bf8_bf8}`) with f32 accumulators, and of
//! `v_wmma_i32_16x16x16_iu8` (signed 8-bit integers, i32 accumulators
//! and output: Tensile's I8II), in wave32, as the compiler builds RDNA
//! kernels.
//!
//! **Work split.** A workgroup of [`THREADS`] work-items (four wave32s,
//! 2 × 2) computes a macro-tile of D of the MFMA family's shapes
//! ([`crate::mfma::Tile`]: `64 · WM × 64 · WN`); each wave a `32·WM ×
//! 32·WN` part of it ([`crate::mfma::wave_place`]), `2·WM × 2·WN` blocks
//! of one WMMA output (8 f32 per lane each).
//!
//! **K slices and LDS.** Exactly the MFMA family's ([`crate::mfma`]'s
//! module doc, `crate::staging` on the device): 64-byte slices of K (32
//! f16/bf16) as rows in two LDS buffers, 128-bit loads in a whole tile's
//! main loop, element by element at the edges. With half the work-items
//! of a CDNA workgroup, each moves `2·WM` (A) and `2·WN` (B) vectors per
//! slice.
//!
//! **LDS to WMMA.** A slice feeds two WMMAs per block, WMMA `j` taking
//! the slice's bytes `32j .. 32j + 32` of each row (16 k). The A operand
//! of lane `l` is row `l % 16` of the block, B's column `l % 16`:
//!
//! ```text
//!   GFX11 (gfx1100): every lane holds its row's 16 k (eight VGPRs of
//!                    f16 pairs), and lanes 16-31 repeat lanes 0-15,
//!                    as the ISA requires: two 16-byte reads, bytes
//!                    32j and 32j + 16.
//!   GFX12 (gfx1201): lanes 0-15 hold 8 of the 16 k, lanes 16-31 the
//!                    other 8 (four VGPRs): one 16-byte read, bytes
//!                    32j + 16 (l / 16).
//! ```
//!
//! gfx1201's FP8/BF8 (OCP) and 8-bit integer WMMAs take 8 bytes a lane
//! (K = 16 one byte each): a 16-byte read feeds two, bytes `8s .. 8s + 8`
//! the `s`-th, so a slice (64 k) is four WMMAs a block. gfx1100's 8-bit
//! integer WMMA takes a row's 16 k (16 bytes, lanes 16-31 again repeating
//! 0-15): each of its two reads feeds one.
//!
//! Which k the hardware takes each of a lane's elements for differs
//! between the two (AMD's matrix instruction calculator: GFX12 interleaves
//! them in pairs across the lane halves), but A and B use the same
//! mapping, so every k of the slice meets its partner once whatever it
//! is ([`operand_offset`]).
//!
//! **Epilogue.** Register `r` of lane `l` holds D's element [`d_place`]:
//! GFX11 row `2r + l / 16`, GFX12 row `8 (l / 16) + r`, column `l % 16`
//! in both (the calculator's C/D layouts for 32-bit outputs, wave32). It
//! is scaled by alpha, added to beta · C when beta ≠ 0, converted to the
//! output type and stored if it lies inside D; for the integer kernels
//! in i32 arithmetic modulo 2^32 (`alpha`, `beta` converted to i32).

use crate::common::{Bf8, Bf16, ElementType, F16, Family, Fp8, GemmKernel, I8, Stored};
use crate::mfma::{Tile, VECTOR, lds_place};

/// Work-items per workgroup (four wave32s, 2 × 2 over the macro-tile).
pub const THREADS: u32 = 128;
/// Lanes per wave.
pub const WAVE: u32 = 32;
/// Rows (and columns) of one WMMA output block, and its K.
pub const BLOCK: u32 = 16;

/// The WMMA layouts of a processor generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layouts {
    /// GFX11 (RDNA3): whole rows per lane, halves repeated.
    Gfx11,
    /// GFX12 (RDNA4): each half of the wave holds half the k.
    Gfx12,
}

impl Layouts {
    /// 16-byte LDS reads per lane per WMMA operand.
    pub const fn reads(self) -> u32 {
        match self {
            Layouts::Gfx11 => 2,
            Layouts::Gfx12 => 1,
        }
    }
}

/// The byte offset in an operand slice of `tile` that lane `lane` reads
/// its `h`-th 16 bytes (`h < reads()`) from for WMMA `j` of block row (or
/// column) `base`: row `base + lane % 16`, the row's bytes `32j + 16h`
/// (GFX11) or `32j + 16 (lane / 16)` (GFX12).
#[inline(always)]
pub fn operand_offset(layouts: Layouts, tile: Tile, base: u32, lane: u32, j: u32, h: u32) -> u32 {
    let half = match layouts {
        Layouts::Gfx11 => h,
        Layouts::Gfx12 => lane / BLOCK,
    };
    lds_place(tile, base + lane % BLOCK, j * 2 * VECTOR + half * VECTOR)
}

/// The element of a 16 × 16 block that f32 register `r` (< 8) of lane
/// `lane` holds after a WMMA: (row, column).
#[inline(always)]
pub fn d_place(layouts: Layouts, lane: u32, r: u32) -> (u32, u32) {
    let row = match layouts {
        Layouts::Gfx11 => 2 * r + lane / BLOCK,
        Layouts::Gfx12 => 8 * (lane / BLOCK) + r,
    };
    (row, lane % BLOCK)
}

/// 64 × 64 and 128 × 128 macro-tiles (the MFMA family's shapes).
const T64: Tile = Tile { wm: 1, wn: 1 };
const T128: Tile = Tile { wm: 2, wn: 2 };
/// 128 × 64: the 8-bit integer kernels' larger tile on gfx1100, where
/// their 128 × 128 one spills a VGPR around its main loop (253 of the 256
/// a lane has are live there, 128 of them accumulators; the f16 kernels
/// of that tile fit in 253).
const T128X64: Tile = Tile { wm: 2, wn: 1 };

/// Every WMMA kernel, one row each (as `mfma_kernels!`): `name: In =>
/// Out, TILE;`, then `, only_on "gfx.."` for a kernel of one target (the
/// FP8/BF8 ones: gfx1201's OCP WMMAs; RDNA3 has none). `wmma_kernels!(then)` gives the rows to macro `then`:
/// `kernel_infos` here ([`KERNELS`]), `wmma_entry_points` on the device.
macro_rules! wmma_kernels {
    ($then:ident) => {
        $then! {
            gemm_f16_wmma_64x64: F16 => F16, T64;
            gemm_f16_wmma_128x128: F16 => F16, T128;
            gemm_f16_f32_wmma_64x64: F16 => f32, T64;
            gemm_f16_f32_wmma_128x128: F16 => f32, T128;
            gemm_bf16_wmma_64x64: Bf16 => Bf16, T64;
            gemm_bf16_wmma_128x128: Bf16 => Bf16, T128;
            gemm_bf16_f32_wmma_64x64: Bf16 => f32, T64;
            gemm_bf16_f32_wmma_128x128: Bf16 => f32, T128;
            gemm_fp8_f32_wmma_64x64: Fp8 => f32, T64, only_on "gfx1201";
            gemm_fp8_f32_wmma_128x128: Fp8 => f32, T128, only_on "gfx1201";
            gemm_bf8_f32_wmma_64x64: Bf8 => f32, T64, only_on "gfx1201";
            gemm_bf8_f32_wmma_128x128: Bf8 => f32, T128, only_on "gfx1201";
            gemm_i8_i32_wmma_64x64: I8 => i32, T64;
            gemm_i8_i32_wmma_128x64: I8 => i32, T128X64;
            gemm_i8_i32_wmma_128x128: I8 => i32, T128, only_on "gfx1201";
        }
    };
}

/// [`KERNELS`] from the rows of `wmma_kernels!`.
macro_rules! kernel_infos {
    ($($name:ident: $in:ty => $out:ty, $tile:ident $(, only_on $($gfx:literal),+)?;)*) => {
        /// Every WMMA kernel (`wmma_kernels!`), built for the WMMA
        /// processors (gfx1100, gfx1201) unless its `only_on` says
        /// otherwise.
        pub const KERNELS: &[GemmKernel] = &[$(
            wmma_kernel(
                stringify!($name),
                <$in as Stored>::TYPE,
                <$out as Stored>::TYPE,
                $tile,
                &[$($($gfx),+)?],
            )
        ),*];
    };
}

wmma_kernels!(kernel_infos);

const fn wmma_kernel(
    name: &'static str,
    input: ElementType,
    output: ElementType,
    tile: Tile,
    only_on: &'static [&'static str],
) -> GemmKernel {
    GemmKernel {
        name,
        family: Family::Wmma,
        input,
        output,
        tile_rows: tile.rows(),
        tile_cols: tile.cols(),
        threads: THREADS,
        only_on,
    }
}

#[cfg(all(
    target_arch = "amdgpu",
    any(aqueduct_gfx = "gfx1100", aqueduct_gfx = "gfx1201")
))]
mod device;

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::mfma::{SLICE_BYTES, wave_place};
    use std::vec;

    const BOTH: [Layouts; 2] = [Layouts::Gfx11, Layouts::Gfx12];

    #[test]
    fn d_place_is_the_calculators_layout_and_covers_the_block_once() {
        // AMD's matrix instruction calculator, wave32, 32-bit C/D: GFX11
        // D[i][j] in VGPR i / 2 of lane 16 (i % 2) + j; GFX12 in VGPR i % 8
        // of lane 16 (i / 8) + j.
        for i in 0..BLOCK {
            for j in 0..BLOCK {
                assert_eq!(d_place(Layouts::Gfx11, 16 * (i % 2) + j, i / 2), (i, j));
                assert_eq!(d_place(Layouts::Gfx12, 16 * (i / 8) + j, i % 8), (i, j));
            }
        }
        for layouts in BOTH {
            let mut seen = vec![false; (BLOCK * BLOCK) as usize];
            for lane in 0..WAVE {
                for r in 0..8 {
                    let (i, j) = d_place(layouts, lane, r);
                    let at = (i * BLOCK + j) as usize;
                    assert!(!seen[at], "{layouts:?} ({i}, {j}) twice");
                    seen[at] = true;
                }
            }
        }
    }

    #[test]
    fn each_wmma_reads_the_rows_16_k_and_a_and_b_agree() {
        // For each layout and WMMA j, the bytes a lane's operand comes from
        // are those of its row (A) or column (B) only, and the wave's lanes
        // of one row together read the slice's 32 bytes 32j .. 32j + 32:
        // GFX11 each lane all of them, GFX12 half each.
        let tile = T64;
        for layouts in BOTH {
            for j in 0..SLICE_BYTES / (2 * VECTOR) {
                for row in 0..BLOCK {
                    let mut bytes = vec![0u32; 32];
                    for lane in (0..WAVE).filter(|l| l % BLOCK == row) {
                        for h in 0..layouts.reads() {
                            let at = operand_offset(layouts, tile, 0, lane, j, h);
                            let first = lds_place(tile, row, 32 * j);
                            assert!(at >= first && at + VECTOR <= first + 32, "{layouts:?}");
                            for b in 0..VECTOR {
                                bytes[(at - first + b) as usize] += 1;
                            }
                        }
                    }
                    let per = if layouts == Layouts::Gfx11 { 2 } else { 1 };
                    assert!(bytes.iter().all(|&n| n == per), "{layouts:?} {bytes:?}");
                }
            }
        }
    }

    #[test]
    fn the_waves_split_the_tile_into_their_blocks() {
        // Four waves of 2·WM × 2·WN blocks of 16 cover the tile once.
        for tile in [T64, T128] {
            let mut seen = vec![false; (tile.rows() * tile.cols()) as usize];
            for w in 0..THREADS / WAVE {
                let (r0, c0) = wave_place(w, tile);
                for bi in 0..2 * tile.wm {
                    for bj in 0..2 * tile.wn {
                        for i in 0..BLOCK {
                            for j in 0..BLOCK {
                                let (r, c) = (r0 + bi * BLOCK + i, c0 + bj * BLOCK + j);
                                let at = (r * tile.cols() + c) as usize;
                                assert!(!seen[at]);
                                seen[at] = true;
                            }
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn each_kernel_is_named_for_its_tile_and_built_for_the_wmma_processors() {
        for k in KERNELS {
            let eight_bit_float = matches!(k.input, ElementType::Fp8 | ElementType::Bf8);
            assert!(
                k.name
                    .ends_with(&std::format!("_{}x{}", k.tile_rows, k.tile_cols)),
                "{}",
                k.name
            );
            // RDNA3 has no FP8/BF8 WMMA (AMD's matrix instruction
            // calculator); RDNA4 has them. Both have the iu8 one (gfx1100
            // without the 128 × 128 tile, which would spill there).
            let spills_on_rdna3 = k.name == "gemm_i8_i32_wmma_128x128";
            assert_eq!(
                k.built_for("gfx1100"),
                !eight_bit_float && !spills_on_rdna3,
                "{}",
                k.name
            );
            assert_eq!(
                k.input == ElementType::I8,
                k.output == ElementType::I32,
                "{}",
                k.name
            );
            assert!(k.built_for("gfx1201"), "{}", k.name);
            assert!(!k.built_for("gfx942"), "{}", k.name);
            // Each work-item's vectors: 4 per row of the slice.
            assert_eq!(k.tile_rows * SLICE_BYTES / VECTOR % THREADS, 0);
        }
    }
}
