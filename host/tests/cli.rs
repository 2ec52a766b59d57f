//! The `aqueduct` binary's command line: generated help, usage errors
//! (status 2), run-time failures (status 1, `aqueduct: <reason>`), and
//! `select` on the GEMM catalog the device build writes for gfx942,
//! checked against the catalog's own answer.

use std::path::PathBuf;
use std::process::Command;

use aqueduct::catalog::{Catalog, DataType, Hardware};
use aqueduct::job::GemmJob;

/// Runs the binary: its exit status, then everything it printed (standard
/// output, then standard error).
fn aqueduct(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_aqueduct"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run aqueduct {args:?}: {e}"));
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn help_exits_0_for_the_binary_and_each_command() {
    for (args, expected) in [
        (&["--help"][..], "select"),
        (&["info", "--help"], "--device <STRING>"),
        (&["gemm", "--help"], "--trans <NN|NT|TN|TT>"),
        (&["select", "--help"], "--chip <ID>"),
    ] {
        let (code, help, errors) = aqueduct(args);
        assert_eq!(code, Some(0), "{args:?}: {help}{errors}");
        assert!(help.contains(expected), "{args:?}: {help}");
    }
}

#[test]
fn usage_errors_exit_with_status_2() {
    let chip = "invalid value '74a1' for '--chip <ID>'";
    let cases: [(&[&str], &str); 7] = [
        (&[], "Usage: aqueduct <COMMAND>"),
        (&["status"], "unrecognized subcommand 'status'"),
        (&["info", "--lib"], "a value is required for '--lib <PATH>'"),
        (&["info", "--verbose"], "unexpected argument '--verbose'"),
        (&["gemm", "--k", "0"], "invalid value '0' for '--k <N>'"),
        (&["gemm", "--type", "f64"], "unknown type \"f64\""),
        (&["select", "--gfx", "gfx942", "--chip", "74a1"], chip),
    ];
    for (args, expected) in cases {
        let (code, out, errors) = aqueduct(args);
        assert_eq!(code, Some(2), "{args:?}: {out}{errors}");
        assert!(errors.contains(expected), "{args:?}: {errors}");
    }
}

#[test]
fn a_runtime_that_is_not_there_fails_with_status_1_naming_it() {
    let (code, out, errors) = aqueduct(&["info", "--lib", "/nonexistent/libhsa.so"]);
    assert_eq!(code, Some(1), "{out}{errors}");
    assert!(errors.starts_with("aqueduct: "), "{errors}");
    assert!(
        errors.contains("/nonexistent/libhsa.so (explicit path)"),
        "{errors}"
    );
    assert!(!errors.contains("panicked"), "{errors}");
}

/// `aqueduct select` on the catalog `cargo xtask build` writes for gfx942's
/// GEMM kernels.
fn select_on_gfx942_catalog(args: &[&str]) -> (Option<i32>, String, String) {
    let catalog = gfx942_catalog();
    let catalog = catalog.to_string_lossy();
    let select = ["select", "--catalog", &catalog];
    aqueduct(&[&select[..], args].concat())
}

fn gfx942_catalog() -> PathBuf {
    let path = aqueduct::device_code::dir().join("gfx942/TensileLibrary_lazy_gfx942.dat");
    assert!(
        path.exists(),
        "{} is missing: `cargo xtask build --release --gfx gfx942` writes it",
        path.display()
    );
    path
}

#[test]
fn select_prints_the_solution_the_catalog_selects_and_why() {
    let (code, out, errors) = select_on_gfx942_catalog(&[
        "--gfx", "gfx942", "--cu", "304", "--chip", "0x74a1", "--type", "f16", "--trans", "NT",
        "1024", "1024", "512",
    ]);
    assert_eq!(code, Some(0), "{out}{errors}");

    // The same question asked of the catalog directly.
    let catalog = Catalog::open(gfx942_catalog()).unwrap_or_else(|e| panic!("{e}"));
    let hardware = Hardware::new("gfx942", 304, Some(0x74a1));
    let job = GemmJob {
        m: 1024,
        n: 1024,
        k: 512,
        input: DataType::Half,
        trans_a: false,
        trans_b: true,
        ..GemmJob::default()
    };
    let problem = job.gemm().problem();
    let expected = match catalog.select(&problem, &hardware) {
        Ok(Some(s)) => s.solution.name.to_string(),
        other => panic!("the catalog selects nothing for {problem:?}: {other:?}"),
    };
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, format!("solution: {expected}"), "{out}");
    // The macro-tile printed is the one the kernel's name carries
    // (`..._mfma_<rows>x<cols>`).
    let tile = expected.rsplit('_').next().unwrap_or_default();
    let tile = tile.replace('x', " × ");
    assert!(out.contains(&format!("macro tile:   {tile}")), "{out}");
    // Then the trace: the query as the catalog read it, and its answer.
    let query = "SELECT Contraction_l_Ailk_Bjlk_Cijk_Dijk 1024x1024x512 batch 1";
    assert!(out.contains(query), "{out}");
    assert!(out.contains("(304 CUs, chip 0x74a1)"), "{out}");
    assert!(out.contains("RESULT: solution"), "{out}");
}

#[test]
fn select_without_a_solution_fails_naming_problem_and_hardware() {
    // gfx942's catalog has rows for gfx942 only.
    let (code, out, errors) = select_on_gfx942_catalog(&["--gfx", "gfx90a", "64", "64", "64"]);
    assert_eq!(code, Some(1), "{out}{errors}");
    let problem = "aqueduct: no GEMM kernel for NT 64×64×64";
    assert!(errors.starts_with(problem), "{errors}");
    assert!(errors.contains("on gfx90a"), "{errors}");
    assert!(out.contains("RESULT: no solution"), "{out}");
}

/// `--block-scales` asks the gfx950 catalog for a block-scaled GEMM: FP8
/// selects the MXFP8 kernel (and without the flag the plain FP8 one); on
/// f16 inputs the flag is refused naming it (status 1).
#[test]
fn select_with_block_scales_picks_the_mx_kernel_or_says_why_not() {
    let path = aqueduct::device_code::dir().join("gfx950/TensileLibrary_lazy_gfx950.dat");
    assert!(path.exists(), "{} is missing", path.display());
    let catalog = path.to_string_lossy();
    let ask = |extra: &[&str], ty: &str| {
        let base = [
            "select",
            "--catalog",
            &catalog,
            "--gfx",
            "gfx950",
            "--cu",
            "256",
        ];
        let tail = ["--type", ty, "--trans", "TN", "512", "512", "512"];
        aqueduct(&[&base[..], extra, &tail[..]].concat())
    };
    let (code, out, errors) = ask(&["--block-scales"], "fp8");
    assert_eq!(code, Some(0), "{out}{errors}");
    assert!(out.starts_with("solution: gemm_mxfp8_f32_mfma_"), "{out}");
    assert!(out.contains("MXBlockA"), "{out}");
    let (code, out, errors) = ask(&[], "fp8");
    assert_eq!(code, Some(0), "{out}{errors}");
    assert!(out.starts_with("solution: gemm_fp8_f32_mfma_"), "{out}");
    let (code, out, errors) = ask(&["--block-scales"], "f16");
    assert_eq!(code, Some(1), "{out}{errors}");
    assert!(errors.contains("block scales with Half"), "{errors}");
}
