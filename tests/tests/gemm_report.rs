//! The static quality goal of our MFMA kernels, as `cargo xtask gemm-report`
//! measures it: on gfx90a each of our MFMA kernels' main loop has at least
//! the MFMA share of the kernel rocBLAS's own catalog runs for the same
//! types and macro-tile (NT problems on an MI210; AMD's compiled kernels
//! from Debian's rocBLAS package), with 128-bit global loads and LDS reads
//! and no scratch; on gfx942 (no AMD kernels to compare with) the same
//! widths and no scratch.

use xtask::gemm_report::{Row, ours, rows, with_tiles};

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
    let bytes = std::fs::read(&amd_co).expect("read");
    let co = aqueduct_abi::code_object::CodeObject::parse(&bytes).expect("parse");
    let kernels = with_tiles(co.kernels.iter().map(|k| k.metadata.name.as_str()));
    let amd = rows("amd", &amd_co, &objdump, target, &kernels).expect("AMD's rows");
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
