//! The catalogs of aqueduct's own GEMM kernels: for each gfx target the
//! device build writes, next to `aqueduct-gemm.hsaco`, a lazy catalog in
//! hipBLASLt's TensileLite layout (`TensileLibrary_lazy_<gfx>.dat`, its
//! children and `TensileLiteLibrary_lazy_Mapping.dat`, through
//! [`crate::catalog_write`]) that the host reads with the same code as
//! rocBLAS's and hipBLASLt's.
//!
//! What it says:
//!
//! - **Hardware rows**: on CDNA, one row per product whose tile choice
//!   differs (processor, CU count, PCI chip IDs: MI300X and MI325X vs
//!   MI300A vs MI308X on gfx942, and so on), then a processor-only row for
//!   any other product of the processor. RDNA targets have the processor
//!   row only.
//! - **Problems**: the four transposes (one operation identifier each) ×
//!   the kernels' type combinations (Tensile's names: `Float`, `Half`,
//!   `BFloat16`, and on gfx942 `Float8`, `BFloat8`; narrow inputs with
//!   high-precision accumulation). On gfx942 the f32 row holds the xf32
//!   kernels too, each solution naming its `F32XdlMathOp`. The
//!   kernels take any M, N, K, batch and leading dimensions (transposes are
//!   a flag, edges are loaded element by element), so no alignment or
//!   K-multiple predicate applies.
//! - **Sizes**: on CDNA a GridBased Matching table over (M, N, batch, K)
//!   chooses among the type's macro-tiles (64 × 64 up to 256 × 256: [`tile_for`]); on RDNA
//!   the FMA kernel is the only solution (a Single node).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use aqueduct_abi::gfx::MatrixCore;
use aqueduct_gemm::common::{ElementType, GemmKernel};

use crate::targets::GfxTarget;

/// Tensile's operation identifiers of the four transposes (A, B).
pub const OPERATIONS: [(&str, bool, bool); 4] = [
    ("Contraction_l_Ailk_Bljk_Cijk_Dijk", false, false),
    ("Contraction_l_Ailk_Bjlk_Cijk_Dijk", false, true),
    ("Contraction_l_Alik_Bljk_Cijk_Dijk", true, false),
    ("Contraction_l_Alik_Bjlk_Cijk_Dijk", true, true),
];

/// A product the catalog has its own row for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProductRow {
    pub name: &'static str,
    pub cu_count: u32,
    pub chip_ids: &'static [u32],
}

/// The products of `gfx` with their own rows (their chips are in
/// `aqueduct_abi::gfx::CHIPS`), and the CU count the processor-only row is
/// tuned for.
pub fn product_rows(gfx: &str) -> (&'static [ProductRow], u32) {
    const GFX90A: &[ProductRow] = &[
        ProductRow {
            name: "MI210",
            cu_count: 104,
            chip_ids: &[0x740f],
        },
        ProductRow {
            name: "MI250X/MI250 (one GCD)",
            cu_count: 110,
            chip_ids: &[0x7408, 0x740c],
        },
    ];
    const GFX942: &[ProductRow] = &[
        ProductRow {
            name: "MI300X/MI325X",
            cu_count: 304,
            chip_ids: &[0x74a1, 0x74a5, 0x74a9],
        },
        ProductRow {
            name: "MI300A",
            cu_count: 228,
            chip_ids: &[0x74a0],
        },
        ProductRow {
            name: "MI308X",
            cu_count: 80,
            chip_ids: &[0x74a2],
        },
    ];
    const GFX950: &[ProductRow] = &[ProductRow {
        name: "MI350X/MI355X",
        cu_count: 256,
        chip_ids: &[0x75a0, 0x75a2, 0x75a3],
    }];
    match gfx {
        "gfx90a" => (GFX90A, 104),
        "gfx942" => (GFX942, 304),
        "gfx950" => (GFX950, 256),
        _ => (&[], 0),
    }
}

/// The kernels a target's catalog offers: the MFMA family where the
/// target has matrix cores, else the FMA one.
pub fn kernels_for(target: &GfxTarget) -> Vec<&'static GemmKernel> {
    let family = if target.matrix_core == MatrixCore::Mfma {
        aqueduct_gemm::mfma::KERNELS
    } else {
        aqueduct_gemm::fma::KERNELS
    };
    family.iter().filter(|k| k.built_for(target.name)).collect()
}

/// Tensile's type name.
pub fn type_name(t: ElementType) -> &'static str {
    match t {
        ElementType::F32 => "Float",
        ElementType::F16 => "Half",
        ElementType::Bf16 => "BFloat16",
        ElementType::Fp8 => "Float8",
        ElementType::Bf8 => "BFloat8",
        // f32 in memory; the math is the problem's `F32XdlMathOp`.
        ElementType::Xf32 => "Float",
    }
}

/// The `F32XdlMathOp` a kernel of f32 inputs does: `XFloat32` for the xf32
/// kernels, `Float` for the others.
pub fn math_name(t: ElementType) -> &'static str {
    if t == ElementType::Xf32 {
        "XFloat32"
    } else {
        "Float"
    }
}

/// The macro-tile rows × columns for an M × N problem on `cu_count` CUs:
/// the largest tile whose workgroups alone give every CU one (fewer, larger
/// tiles read less per flop; a tile that leaves CUs idle wastes them), the
/// smallest when none does.
pub fn tile_for(m: u64, n: u64, cu_count: u32, tiles: &[(u32, u32)]) -> (u32, u32) {
    let mut by_size = tiles.to_vec();
    by_size.sort_by_key(|&(r, c)| std::cmp::Reverse(r * c));
    let fills = |&(r, c): &(u32, u32)| {
        m.div_ceil(u64::from(r)) * n.div_ceil(u64::from(c)) >= u64::from(cu_count)
    };
    by_size
        .iter()
        .copied()
        .find(fills)
        .or_else(|| by_size.last().copied())
        .unwrap_or((0, 0))
}

/// The (M, N, K) points of a Matching table: M and N from 64 to 16384 by
/// powers of two, K at 256 and 4096.
fn size_points() -> Vec<(u64, u64, u64)> {
    let sides: Vec<u64> = (6..=14).map(|e| 1u64 << e).collect();
    let mut out = Vec::new();
    for &m in &sides {
        for &n in &sides {
            for k in [256u64, 4096] {
                out.push((m, n, k));
            }
        }
    }
    out
}

/// The catalog description (xtask/src/catalog_write.rs's format) for
/// `target`.
pub fn description(target: &GfxTarget) -> String {
    let kernels = kernels_for(target);
    let (products, default_cus) = product_rows(target.name);
    let mut out = String::from("lazy: true\nformat: msgpack\nlayout: tensilelite\nhardware:\n");
    let mut row = |cu_count: Option<u32>, chips: &[u32], tuned_for: u32| {
        let _ = writeln!(out, "  - processor: {}", target.name);
        if let Some(cu) = cu_count {
            let _ = writeln!(out, "    cu_count: {cu}");
        }
        if !chips.is_empty() {
            let ids: Vec<String> = chips.iter().map(|c| format!("{c:#x}")).collect();
            let _ = writeln!(out, "    chip_ids: [{}]", ids.join(", "));
        }
        out.push_str("    problems:\n");
        for (op, _, _) in OPERATIONS {
            // One problem row per catalog type (xf32 kernels share f32's).
            let mut types: Vec<(&str, &str)> = Vec::new();
            for k in &kernels {
                let key = (type_name(k.input), type_name(k.output));
                if !types.contains(&key) {
                    types.push(key);
                }
            }
            for (i, o) in types {
                let of_type: Vec<&GemmKernel> = kernels
                    .iter()
                    .copied()
                    .filter(|k| (type_name(k.input), type_name(k.output)) == (i, o))
                    .collect();
                // Where xf32 kernels sit beside f32 ones, each says which
                // math it does.
                let maths = of_type.iter().any(|k| k.input == ElementType::Xf32);
                let hpa = i != "Float";
                let _ = writeln!(out, "      - operation: {op}");
                let _ = writeln!(out, "        types: [{i}, {i}, {o}, {o}]");
                let _ = writeln!(out, "        high_precision_accumulate: {hpa}");
                out.push_str(
                    "        solutions:
",
                );
                for k in &of_type {
                    let _ = writeln!(out, "          - name: {}", k.name);
                    out.push_str(
                        "            code_object: aqueduct-gemm.hsaco
",
                    );
                    let _ = writeln!(
                        out,
                        "            macro_tile: [{}, {}, 1]",
                        k.tile_rows, k.tile_cols
                    );
                    let _ = writeln!(out, "            work_group: [{}, 1, 1]", k.threads);
                    if maths {
                        let math = math_name(k.input);
                        let _ = writeln!(
                            out,
                            "            predicates: [{{type: F32XdlMathOp, value: {math}}}]"
                        );
                    }
                    // The size table of the kernel's own math: its tiles.
                    let tiles: Vec<(u32, u32)> = of_type
                        .iter()
                        .filter(|other| other.input == k.input)
                        .map(|other| (other.tile_rows, other.tile_cols))
                        .collect();
                    if of_type.len() > 1 {
                        let sizes: Vec<String> = size_points()
                            .into_iter()
                            .filter(|&(m, n, _)| {
                                tile_for(m, n, tuned_for, &tiles) == (k.tile_rows, k.tile_cols)
                            })
                            .map(|(m, n, kk)| format!("[{m}, {n}, {kk}, 1.0]"))
                            .collect();
                        let _ = writeln!(out, "            sizes: [{}]", sizes.join(", "));
                    }
                }
            }
        }
    };
    for p in products {
        row(Some(p.cu_count), p.chip_ids, p.cu_count);
    }
    row(None, &[], default_cus);
    out
}

/// Writes `target`'s catalog into `dir` (the code object's directory) and
/// returns the files written.
pub fn write(target: &GfxTarget, dir: &Path) -> Result<Vec<PathBuf>, String> {
    crate::catalog_write::from_description_text(&description(target), dir)
        .map_err(|e| format!("the GEMM catalog for {}: {e}", target.name))
}

/// The lazy catalog's root file for `gfx` in `dir`.
pub fn root_file(dir: &Path, gfx: &str) -> PathBuf {
    dir.join(format!("TensileLibrary_lazy_{gfx}.dat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_big_tile_once_it_fills_the_gpu() {
        let tiles = [(64, 64), (128, 128)];
        // 304 CUs: 128 × 128 tiles of 2048² are 256, too few; of 4096², 1024.
        assert_eq!(tile_for(2048, 2048, 304, &tiles), (64, 64));
        assert_eq!(tile_for(4096, 4096, 304, &tiles), (128, 128));
        // 80 CUs: 1024² in 128 × 128 tiles is 64 workgroups, 1280² is 100.
        assert_eq!(tile_for(1024, 1024, 80, &tiles), (64, 64));
        assert_eq!(tile_for(1280, 1280, 80, &tiles), (128, 128));
        assert_eq!(tile_for(1, 1, 80, &tiles), (64, 64));
    }

    #[test]
    fn every_product_row_names_known_chips_of_its_processor() {
        for gfx in ["gfx90a", "gfx942", "gfx950"] {
            let (rows, cus) = product_rows(gfx);
            assert!(!rows.is_empty() && cus > 0, "{gfx}");
            for row in rows {
                for &id in row.chip_ids {
                    let chip = aqueduct_abi::gfx::chip_by_id(id).expect("a known chip");
                    assert_eq!(chip.gfx, gfx, "{} {id:#x}", row.name);
                }
            }
        }
    }
}
