//! The static quality goal of our MFMA kernels, as `cargo xtask gemm-report`
//! measures it: on gfx90a each of our MFMA kernels' main loop has at least
//! the MFMA share of the kernel rocBLAS's own catalog runs for the same
//! types and macro-tile (NT problems on an MI210; AMD's compiled kernels
//! from Debian's rocBLAS package), with 128-bit global loads and LDS reads
//! and no scratch; on gfx942 (no AMD kernels to compare with) the same
//! widths and no scratch; on gfx1100 and gfx1201 our WMMA kernels, in
//! wave32, the same widths and no scratch. On gfx1201 the report takes
//! AMD's RDNA kernels as they are (their own wave size, WMMA as the matrix
//! instructions) and the throughput model gives them modelled rows. On
//! gfx950 the 16- and 8-bit kernels' main loops write LDS only 128 bits
//! wide, their row-contiguous operands staged transposed.

use xtask::gemm_report::{
    Line, Row, access_bits, amd_rows, innermost_loops, ours, parse_disassembly, rows,
};

fn report(gfx: &str) -> (Vec<Row>, Vec<Row>) {
    let workspace = xtask::workspace_root();
    let target = xtask::targets::target(gfx).expect("a target");
    let objdump = xtask::device_build::llvm_tool(&workspace, "llvm-objdump").expect("objdump");
    let our_co = xtask::gemm_report::our_code_object(&workspace, gfx);
    let mine = rows("ours", &our_co, &objdump, target, &ours(gfx)).expect("our rows");
    if gfx != "gfx90a" {
        return (mine, Vec::new());
    }
    let amd_co = xtask::rocblas_catalog::fetch_report_kernels().expect("AMD's kernels");
    let amd = amd_rows(&amd_co, &objdump, target, true).expect("AMD's rows");
    (mine, amd)
}

#[test]
fn our_main_loops_keep_at_least_amds_mfma_share_with_wide_accesses() {
    for gfx in ["gfx90a", "gfx942"] {
        let (mine, amd) = report(gfx);
        let built = aqueduct_gemm::mfma::KERNELS
            .iter()
            .filter(|k| k.built_for(gfx));
        assert_eq!(mine.len(), built.count());
        for r in &mine {
            let l = r
                .main_loop
                .as_ref()
                .unwrap_or_else(|| panic!("{}: no main loop", r.kernel));
            assert!(l.mfmas > 0, "{}", r.kernel);
            assert_eq!(
                (l.global_load_bits, l.lds_read_bits, r.scratch),
                (128, 128, 0),
                "{gfx} {}",
                r.kernel
            );
            // Tensile's type code of our kernel's types.
            let code = if r.kernel.starts_with("gemm_f32_") {
                "_SB_"
            } else if r.kernel.starts_with("gemm_f16_") {
                "_HHS_BH_"
            } else if r.kernel.starts_with("gemm_bf16_") {
                "_BBS_BH_"
            } else {
                "none: rocBLAS has no fp8 kernels for gfx90a"
            };
            if let Some(theirs) = amd
                .iter()
                .find(|a| a.tile == r.tile && a.kernel.contains(code))
            {
                let t = theirs.main_loop.as_ref().expect("AMD's main loop");
                assert!(
                    l.mfma_share() >= t.mfma_share(),
                    "{} {:.3} < {} {:.3}",
                    r.kernel,
                    l.mfma_share(),
                    theirs.kernel,
                    t.mfma_share()
                );
            }
        }
        if gfx == "gfx90a" {
            // rocBLAS has f32, f16 and bf16 kernels of at least our two
            // smaller tiles.
            for code in ["_SB_", "_HHS_BH_", "_BBS_BH_"] {
                for tile in ["64x64", "128x128"] {
                    assert!(
                        amd.iter()
                            .any(|a| a.tile == tile && a.kernel.contains(code)),
                        "no AMD {code} {tile} kernel"
                    );
                }
            }
        }
    }
}

/// The README's claim for the 256 × 256 tile: its 256 accumulators per
/// lane take AGPRs (the architected VGPRs alone hold 256), with no scratch.
/// Every function of our GEMM code object for `gfx`, as `llvm-objdump`
/// disassembles it.
fn disassembly(gfx: &str) -> std::collections::BTreeMap<String, Vec<Line>> {
    let workspace = xtask::workspace_root();
    let objdump = xtask::device_build::llvm_tool(&workspace, "llvm-objdump").expect("objdump");
    let our_co = xtask::gemm_report::our_code_object(&workspace, gfx);
    let out = std::process::Command::new(objdump)
        .arg("-d")
        .arg(format!("--mcpu={gfx}"))
        .arg(&our_co)
        .output()
        .expect("llvm-objdump");
    assert!(out.status.success(), "llvm-objdump {}", our_co.display());
    parse_disassembly(&String::from_utf8_lossy(&out.stdout))
}

/// gfx950 stages a row-contiguous operand of 16- or 8-bit elements
/// transposed (`aqueduct_gemm::mfma::Lines`): in every main loop (an
/// innermost loop with MFMAs and 128-bit global loads; one a layout, or
/// more where LLVM unrolled one) of those kernels below the swizzled 256 ×
/// 256 tile, each LDS write is 128-bit, and the loops of the three layouts
/// with a row-contiguous operand read it through a transposing read.
/// gfx942, which has no such reads, writes those operands element by
/// element in the same three: the test tells the two apart.
#[test]
fn gfx950_writes_row_contiguous_operands_wide_and_reads_them_transposed() {
    use aqueduct_gemm::mfma::{KERNELS, tile_of, transposable};
    let mut checked = 0;
    for gfx in ["gfx950", "gfx942"] {
        let functions = disassembly(gfx);
        let kernels = KERNELS.iter().filter(|k| {
            k.built_for(gfx)
                && transposable(k.input.bytes())
                && k.input.per_unit() == 1
                && !tile_of(k).swizzled()
        });
        for k in kernels {
            let lines = &functions[k.name];
            let has = |body: &[Line], f: &dyn Fn(&str) -> bool| body.iter().any(|l| f(&l.mnemonic));
            let mains: Vec<&[Line]> = innermost_loops(lines)
                .into_iter()
                .filter(|b| has(b, &|m| m.starts_with("v_mfma")))
                .filter(|b| has(b, &|m| m == "global_load_dwordx4"))
                .collect();
            assert!(
                mains.len() >= 4,
                "{gfx} {}: {} main loops",
                k.name,
                mains.len()
            );
            let count = |f: &dyn Fn(&str) -> bool| mains.iter().filter(|b| has(b, f)).count();
            let narrow = count(&|m| m.starts_with("ds_write") && access_bits(m) < 128);
            let transposing = count(&|m| m.starts_with("ds_read_b64_tr_b"));
            if gfx == "gfx950" {
                assert_eq!((narrow, transposing >= 3), (0, true), "{gfx} {}", k.name);
            } else {
                assert_eq!((narrow >= 3, transposing), (true, 0), "{gfx} {}", k.name);
            }
            checked += 1;
        }
    }
    // gfx950: f16, bf16 (each with f32 out too) in three tiles, FP8, BF8,
    // MXFP8, MXBF8 in two, i8 in three; gfx942 its own.
    assert!(checked >= 20, "{checked} kernels checked");
}

#[test]
fn the_256x256_tiles_hold_their_accumulators_in_agprs() {
    for gfx in ["gfx90a", "gfx942"] {
        let (mine, _) = report(gfx);
        let big: Vec<&Row> = mine.iter().filter(|r| r.tile == "256x256").collect();
        assert!(!big.is_empty(), "{gfx}: no 256x256 kernel");
        for r in big {
            assert!(r.agprs > 0, "{gfx} {}: no AGPRs", r.kernel);
            assert_eq!(r.scratch, 0, "{gfx} {}", r.kernel);
        }
    }
}

/// AMD's RDNA kernels (hipBLASLt 7.1.1's gfx1201 ones the tests run) come
/// into the report with the wave size their metadata gives, WMMA in the
/// main loops of the f16/bf16 ones, and a MODELLED RX 9070 XT row each.
#[test]
fn amd_rdna_kernels_are_reported_with_their_own_wave_size_and_modelled() {
    let workspace = xtask::workspace_root();
    let target = xtask::targets::target("gfx1201").expect("a target");
    let objdump = xtask::device_build::llvm_tool(&workspace, "llvm-objdump").expect("objdump");
    let co = xtask::hipblaslt_catalog::fetch_gemm_kernels("gfx1201").expect("AMD's kernels");
    let amd = amd_rows(&co, &objdump, target, false).expect("AMD's rows");
    assert_eq!(amd.len(), xtask::tensile_gemm::HIPBLASLT_GFX1201.len());
    for row in &amd {
        let kernel = xtask::tensile_gemm::HIPBLASLT_GFX1201
            .iter()
            .find(|k| k.name == row.kernel)
            .expect("one of the tests' kernels");
        let ws = if row.kernel.contains("_WS64_") {
            64
        } else {
            32
        };
        assert_eq!(row.wave_size, ws, "{}", row.kernel);
        // The main loop is the innermost loop with matrix instructions:
        // the WMMA kernels have one, the f32 (FMA) ones none.
        let wmma = row
            .main_loop
            .as_ref()
            .is_some_and(|l| l.body.iter().any(|m| m.starts_with("v_wmma")));
        assert_eq!(wmma, kernel.what.contains("WMMA"), "{}", row.kernel);
    }
    let table = xtask::gemm_model::table(&amd);
    assert!(table.contains("MODELLED"));
    // The WMMA kernels, each modelled.
    let wmma = xtask::tensile_gemm::HIPBLASLT_GFX1201
        .iter()
        .filter(|k| k.what.contains("WMMA"))
        .count();
    let rx = table
        .lines()
        .filter(|l| l.starts_with("RX 9070 XT"))
        .count();
    assert_eq!(rx, wmma, "{table}");
    assert!(wmma >= 4);
}

/// Our WMMA kernels (gfx1100, gfx1201): every one built and reported in
/// wave32, its main loop of WMMAs (of its type) fed by 128-bit global loads and LDS
/// reads, no scratch, and a MODELLED row for its product.
#[test]
fn our_wmma_kernels_run_wave32_main_loops_of_wide_accesses() {
    for (gfx, product) in [("gfx1100", "RX 7900 XTX"), ("gfx1201", "RX 9070 XT")] {
        let (mine, _) = report(gfx);
        let built = aqueduct_gemm::wmma::KERNELS
            .iter()
            .filter(|k| k.built_for(gfx))
            .count();
        assert!(built > 0, "{gfx}");
        assert_eq!(mine.len(), built, "{gfx}");
        for r in &mine {
            let l = r
                .main_loop
                .as_ref()
                .unwrap_or_else(|| panic!("{}: no main loop", r.kernel));
            // f32 accumulators, i32 for the 8-bit integers.
            let wmma = if r.kernel.starts_with("gemm_i8_i32_") {
                "v_wmma_i32_16x16x16_iu8"
            } else {
                "v_wmma_f32_16x16x16_"
            };
            assert!(
                l.body.iter().any(|m| m.starts_with(wmma)),
                "{gfx} {}",
                r.kernel
            );
            assert_eq!(r.wave_size, 32, "{gfx} {}", r.kernel);
            assert_eq!(
                (l.global_load_bits, l.lds_read_bits, r.scratch),
                (128, 128, 0),
                "{gfx} {}",
                r.kernel
            );
        }
        let table = xtask::gemm_model::table(&mine);
        let modelled = table
            .lines()
            .filter(|l| l.starts_with(product) && l.contains("ours"))
            .count();
        assert_eq!(modelled, built, "{gfx}: {table}");
    }
}
