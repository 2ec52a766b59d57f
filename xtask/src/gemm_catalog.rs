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
//!   chooses among the type's macro-tiles (64 × 64 up to 256 × 256): at
//!   each grid point the kernel the throughput model rates fastest on the
//!   row's product ([`choice`]; **modelled**, from the main loops of the
//!   code object just built, [`models`]). A kernel the model picks nowhere
//!   on a row is left out of it. RDNA's WMMA kernels (f16, bf16) are
//!   chosen the same way for the processor's simulated product (RX 7900
//!   XTX, RX 9070 XT); a type only the FMA family covers (f32 on RDNA) has
//!   one solution (a Single node).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use aqueduct_abi::gemm::MX_BLOCK;
use aqueduct_abi::gfx::MatrixCore;
use aqueduct_gemm::common::{ElementType, Family, GemmKernel};

use crate::gemm_model::{Kernel, Problem};
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
        // RDNA: the processor row alone, tuned for the simulated product
        // (`aqueduct_abi::gfx::PRODUCTS`): RX 7900 XTX, RX 9070 XT.
        "gfx1100" => (&[], 96),
        "gfx1201" => (&[], 64),
        _ => (&[], 0),
    }
}

/// The kernels a target's catalog offers: its matrix family's (MFMA on
/// CDNA, WMMA on RDNA3/RDNA4), and the FMA kernels of the type
/// combinations that family lacks (f32 on RDNA; every one on a target
/// without matrix cores). The block-scaled (MXFP8, MXFP6, MXFP4) kernels
/// sit in rows of their own (`MXBlockA`/`MXBlockB` 32); MXFP6's and
/// MXFP4's only in the TN problem rows ([`serves`]).
pub fn kernels_for(target: &GfxTarget) -> Vec<&'static GemmKernel> {
    let matrix: &[GemmKernel] = match target.matrix_core {
        MatrixCore::Mfma => aqueduct_gemm::mfma::KERNELS,
        MatrixCore::Wmma => aqueduct_gemm::wmma::KERNELS,
        MatrixCore::None => &[],
    };
    let matrix: Vec<&GemmKernel> = matrix.iter().filter(|k| k.built_for(target.name)).collect();
    let covered = |k: &GemmKernel| {
        matrix
            .iter()
            .any(|m| (m.input, m.output) == (k.input, k.output))
    };
    let fma = aqueduct_gemm::fma::KERNELS
        .iter()
        .filter(|k| k.built_for(target.name) && !covered(k));
    matrix.iter().copied().chain(fma).collect()
}

/// Whether `k` serves problems of A and B stored transposed as
/// `(trans_a, trans_b)`: every kernel does but MXFP4's and MXFP6's, whose
/// packed elements (two a byte; four in three bytes) must run along K in
/// memory: A transposed, B not (`aqueduct_gemm::common::MxFp4`, `MxFp6`).
pub fn serves(k: &GemmKernel, (trans_a, trans_b): (bool, bool)) -> bool {
    k.input.per_unit() == 1 || (trans_a && !trans_b)
}

/// Tensile's type name.
pub fn type_name(t: ElementType) -> &'static str {
    match t {
        ElementType::F32 => "Float",
        ElementType::F16 => "Half",
        ElementType::Bf16 => "BFloat16",
        ElementType::Fp8 => "Float8",
        ElementType::Bf8 => "BFloat8",
        // MXFP8's elements are FP8's: the rows' MXBlockA/MXBlockB tell
        // them apart. MXFP4's are TensileLite's Float4.
        ElementType::MxFp8 => "Float8",
        ElementType::MxBf8 => "BFloat8",
        ElementType::MxFp4 => "Float4",
        // TensileLite has no 6-bit types: ours (`DataType::Float6`).
        ElementType::MxFp6 => "Float6",
        ElementType::MxBf6 => "BFloat6",
        // f32 in memory; the math is the problem's `F32XdlMathOp`.
        ElementType::Xf32 => "Float",
        ElementType::I8 => "Int8",
        ElementType::I32 => "Int32",
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

/// The throughput model's view of each MFMA kernel of a code object
/// ([`crate::gemm_model::Kernel`], by kernel name): what the catalog's size
/// tables are chosen by.
pub type Models = BTreeMap<String, Kernel>;

/// The models of `target`'s catalog kernels in the code object at `path`,
/// from `llvm-objdump`'s disassembly of their main loops. FMA kernels
/// (one per type where they are offered, so nothing to choose among) have
/// none; a matrix kernel the model cannot read is an error, so the
/// catalog never falls back to a guess.
pub fn models(target: &GfxTarget, path: &Path, objdump: &Path) -> Result<Models, String> {
    let mfma: Vec<(String, String)> = kernels_for(target)
        .iter()
        .filter(|k| k.family != Family::Fma)
        .map(|k| {
            (
                k.name.to_string(),
                format!("{}x{}", k.tile_rows, k.tile_cols),
            )
        })
        .collect();
    let rows = crate::gemm_report::rows("ours", path, objdump, target, &mfma)?;
    rows.iter()
        .map(|row| {
            let model = crate::gemm_model::kernel_of(row).ok_or_else(|| {
                let unknown = row
                    .main_loop
                    .as_ref()
                    .map(|l| crate::gemm_model::mix(&row.gfx, 64, l.body.iter().map(String::as_str)).unknown)
                    .unwrap_or_default();
                format!(
                    "the throughput model cannot read {}'s main loop on {} (matrix instructions without cycles: {unknown:?})",
                    row.kernel, row.gfx
                )
            })?;
            Ok((row.kernel.clone(), model))
        })
        .collect()
}

/// The kernel the catalog's size table picks among `group` (kernels of one
/// type and math) for an M × N × K problem on a `cus`-CU product of
/// `target`'s processor: the fastest by the throughput model
/// ([`crate::gemm_model::choose`]: **modelled**, not measured), the first
/// when the model has nothing to say.
pub fn choice<'k>(
    target: &GfxTarget,
    models: &Models,
    cus: u32,
    group: &[&'k GemmKernel],
    mnk: (u64, u64, u64),
) -> Option<&'k GemmKernel> {
    let first = group.first().copied();
    let Some(machine) = crate::gemm_model::machine_for(target.name, cus) else {
        return first;
    };
    let modelled: Option<Vec<&Kernel>> = group.iter().map(|g| models.get(g.name)).collect();
    let Some(modelled) = modelled else {
        return first;
    };
    let kernel = first?;
    // A packed input's unit holds `per_unit` elements (FP6: four in three
    // bytes): its traffic in bits an element.
    let in_bits = 8 * kernel.input.bytes() / kernel.input.per_unit();
    let problem =
        Problem::new(mnk, 1, u64::from(kernel.output.bytes())).with_input_bits(u64::from(in_bits));
    crate::gemm_model::choose(&modelled, &machine, &problem).map(|i| group[i])
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
/// `target`, its size tables chosen by `models` ([`models`]).
pub fn description(target: &GfxTarget, models: &Models) -> String {
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
        for (op, trans_a, trans_b) in OPERATIONS {
            // One problem row per catalog type (xf32 kernels share f32's)
            // and block scaling (MX kernels have their own rows).
            let key = |k: &GemmKernel| {
                let block = if k.input.block_scaled() { MX_BLOCK } else { 0 };
                (type_name(k.input), type_name(k.output), block)
            };
            let kernels: Vec<&GemmKernel> = kernels
                .iter()
                .copied()
                .filter(|k| serves(k, (trans_a, trans_b)))
                .collect();
            let mut types: Vec<(&str, &str, u32)> = Vec::new();
            for k in &kernels {
                if !types.contains(&key(k)) {
                    types.push(key(k));
                }
            }
            for (i, o, block) in types {
                let of_type: Vec<&GemmKernel> = kernels
                    .iter()
                    .copied()
                    .filter(|k| key(k) == (i, o, block))
                    .collect();
                // Where xf32 kernels sit beside f32 ones, each says which
                // math it does.
                let maths = of_type.iter().any(|k| k.input == ElementType::Xf32);
                let hpa = i != "Float";
                let _ = writeln!(out, "      - operation: {op}");
                let _ = writeln!(out, "        types: [{i}, {i}, {o}, {o}]");
                let _ = writeln!(out, "        high_precision_accumulate: {hpa}");
                if block != 0 {
                    let _ = writeln!(out, "        block_scales: {block}");
                }
                out.push_str(
                    "        solutions:
",
                );
                for k in &of_type {
                    // The size table of the kernel's own math: the points
                    // where the model picks it among its math's kernels.
                    let group: Vec<&GemmKernel> = of_type
                        .iter()
                        .copied()
                        .filter(|other| other.input == k.input)
                        .collect();
                    let sizes: Option<Vec<String>> = (of_type.len() > 1).then(|| {
                        size_points()
                            .into_iter()
                            .filter(|&point| {
                                choice(target, models, tuned_for, &group, point)
                                    .is_some_and(|c| c.name == k.name)
                            })
                            .map(|(m, n, kk)| format!("[{m}, {n}, {kk}, 1.0]"))
                            .collect()
                    });
                    // A kernel the model picks at no point of this product
                    // is left out of its row: every solution of a size
                    // table names the points it serves.
                    if sizes.as_ref().is_some_and(Vec::is_empty) {
                        continue;
                    }
                    let _ = writeln!(out, "          - name: {}", k.name);
                    out.push_str("            code_object: aqueduct-gemm.hsaco\n");
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
                    if let Some(sizes) = sizes {
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

/// Writes `target`'s catalog into `dir` (the code object's directory),
/// choosing by the models of the kernels in `code_object`, and returns the
/// files written.
pub fn write(
    target: &GfxTarget,
    dir: &Path,
    code_object: &Path,
    objdump: &Path,
) -> Result<Vec<PathBuf>, String> {
    let models = models(target, code_object, objdump)?;
    crate::catalog_write::from_description_text(&description(target, &models), dir)
        .map_err(|e| format!("the GEMM catalog for {}: {e}", target.name))
}

/// The lazy catalog's root file for `gfx` in `dir`.
pub fn root_file(dir: &Path, gfx: &str) -> PathBuf {
    dir.join(format!("TensileLibrary_lazy_{gfx}.dat"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Models of gfx90a's f16 kernels as if each main loop did nothing
    /// but its MFMAs (4 waves, 32 of K per iteration): the choice then
    /// turns on tile quantisation and the L2 roofline alone.
    fn matrix_only_models() -> (Vec<&'static GemmKernel>, Models) {
        let target = crate::targets::target("gfx90a").expect("gfx90a");
        let group: Vec<&GemmKernel> = kernels_for(target)
            .into_iter()
            .filter(|k| k.name.starts_with("gemm_f16_mfma_"))
            .collect();
        let models = group
            .iter()
            .map(|k| {
                let (r, c) = (u64::from(k.tile_rows), u64::from(k.tile_cols));
                // 2·r·c·32 FLOPs over 4 waves of 16384-FLOP MFMAs.
                let per_wave = (2 * r * c * 32 / (4 * 16384)) as usize;
                let body = vec!["v_mfma_f32_32x32x8f16"; per_wave];
                let kernel = Kernel {
                    tile: (r, c),
                    waves: 4,
                    lanes: 64,
                    occupancy: if r * c <= 64 * 64 { 2 } else { 1 },
                    mix: crate::gemm_model::mix("gfx90a", 64, body),
                };
                assert_eq!(kernel.k_per_iteration(), 32.0, "{}", k.name);
                (k.name.to_string(), kernel)
            })
            .collect();
        (group, models)
    }

    #[test]
    fn small_problems_take_the_tile_that_fills_the_cus_large_ones_the_tile_l2_can_feed() {
        let target = crate::targets::target("gfx90a").expect("gfx90a");
        let (group, models) = matrix_only_models();
        assert_eq!(group.len(), 4);
        let pick = |point| choice(target, &models, 104, &group, point).map(|k| k.name);
        // 256² is 16 tiles of 64 × 64, 4 of 128 × 128: more CUs at work.
        assert_eq!(pick((256, 256, 256)), Some("gemm_f16_mfma_64x64"));
        // 8192³ fills 104 CUs with any tile; 64 × 64 tiles would read
        // 2 · 8192 · 8192 · 8192 · 2 B / 64 = 34 GB through an L2 of 3.5
        // TB/s: 9.9 ms against 6.2 ms of matrix work.
        let big = pick((8192, 8192, 8192));
        assert!(big.is_some_and(|k| k != "gemm_f16_mfma_64x64"), "{big:?}");
        let machine = crate::gemm_model::machine_for("gfx90a", 104).expect("MI210");
        let problem = Problem::new((8192, 8192, 8192), 2, 2);
        let small_tile =
            crate::gemm_model::estimate(&models["gemm_f16_mfma_64x64"], &machine, &problem)
                .expect("estimate");
        assert_eq!(small_tile.bound, crate::gemm_model::Bound::L2);
    }

    #[test]
    fn the_catalog_lists_each_kernel_at_the_points_the_model_picks_it() {
        let target = crate::targets::target("gfx90a").expect("gfx90a");
        let (group, models) = matrix_only_models();
        let text = description(target, &models);
        // The processor-only row (the last) is tuned for an MI210's 104 CUs.
        let row = &text[text.rfind("  - processor: gfx90a").expect("a row")..];
        let half = &row[row
            .find("types: [Half, Half, Half, Half]")
            .expect("the f16 problem")..];
        let half = &half[..half.find("      - operation:").unwrap_or(half.len())];
        let mut listed = 0;
        for point in size_points() {
            let chosen = choice(target, &models, 104, &group, point).expect("a choice");
            let (m, n, k) = point;
            let entry = format!("[{m}, {n}, {k}, 1.0]");
            // The point sits in the chosen kernel's own `sizes` line.
            let at = half
                .find(&format!("name: {}\n", chosen.name))
                .expect("listed");
            let line = half[at..]
                .lines()
                .find(|l| l.trim_start().starts_with("sizes:"))
                .expect("sizes");
            assert!(line.contains(&entry), "{} {entry}", chosen.name);
            listed += 1;
        }
        assert_eq!(listed, size_points().len());
        // Every kernel listed serves some point: none sits there unused.
        for k in &group {
            if half.contains(&format!("name: {}\n", k.name)) {
                assert!(size_points().into_iter().any(|p| {
                    choice(target, &models, 104, &group, p).is_some_and(|c| c.name == k.name)
                }));
            }
        }
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
