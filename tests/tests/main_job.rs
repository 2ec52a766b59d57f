//! The main job (`aqueduct::job`, what `aqueduct gemm` and `cargo xtask
//! run` run) end to end through the host shim: on ROCr with a GPU, else on
//! the simulator's runtime (the agents of `aqueduct_tests::SIM_AGENTS`). Every run is checked
//! by the job itself against its f64 reference; here the report is checked
//! against independent facts: the catalog's own choice, the element count,
//! the simulator's counts, the trace file.

use aqueduct::catalog::DataType;
use aqueduct::job::{self, GemmJob, JobError};
use aqueduct::{Gemm, GemmLibrary};
use aqueduct_tests::{announced_system, hsa_backend, hsa_gpus};

/// The job for agent `index`, small enough for the unoptimised simulator.
fn job(index: usize, input: DataType, trans: &str, (m, n, k): (u32, u32, u32)) -> GemmJob {
    let (trans_a, trans_b) = job::parse_trans(trans).expect("transposes");
    GemmJob {
        device: format!("amdgpu:{index}"),
        m,
        n,
        k,
        batch: 1,
        input,
        trans_a,
        trans_b,
        ..GemmJob::default()
    }
}

/// Whether `gfx` has MFMA matrix cores (the shared product facts).
fn gpu_has_mfma(gfx: &str) -> bool {
    aqueduct_abi::gfx::gfx(gfx)
        .expect("a known processor")
        .matrix_core
        == aqueduct_abi::gfx::MatrixCore::Mfma
}

#[test]
fn the_job_runs_each_type_and_reports_what_the_catalog_chose() {
    let system = announced_system();
    for (index, gpu) in hsa_gpus(&system).iter().enumerate() {
        let gfx = gpu.info().name.clone();
        let library = GemmLibrary::open(gpu).expect("catalog");
        let mut cases = vec![
            (DataType::Half, "NT", (200, 136, 72), 2),
            // K large enough that sums pass 16, where bf16 stops holding
            // sixteenths: the output rounding is exercised.
            (DataType::BFloat16, "TN", (65, 64, 300), 1),
            (DataType::Float, "NN", (64, 97, 40), 1),
            // The integer GEMM (i8 in, i32 out, beta 2) on every target's
            // integer matrix kernels, exact.
            (DataType::Int8, "TN", (72, 100, 96), 1),
        ];
        // FP8 wherever the processor has it, in its own format (FNUZ on
        // gfx942, OCP on gfx950 and gfx1201).
        let fp8 = aqueduct_abi::gfx::gfx(&gfx).expect("a known processor").fp8;
        if fp8 != aqueduct_abi::gfx::Fp8Format::None {
            cases.push((DataType::Float8, "TT", (96, 64, 128), 1));
        }
        for (input, trans, size, batch) in cases {
            let mut job = job(index, input, trans, size);
            job.batch = batch;
            let what = format!("{gfx} {input} {trans} {size:?} batch {batch}");
            let report = job::run(&system, &job).unwrap_or_else(|e| panic!("{what}: {e}"));
            eprintln!("{what}: {}", report.solution);
            let gemm: Gemm = job.gemm();
            let chosen = library.select(&gemm).expect("selection");
            assert_eq!(report.solution, chosen.name, "{what}");
            assert_eq!(report.macro_tile, chosen.macro_tile, "{what}");
            assert_eq!(
                report.check.elements,
                u64::from(size.0 * size.1 * batch),
                "{what}"
            );
            if input == DataType::Int8 {
                assert_eq!(report.check.max_error, 0.0, "{what}: i32 D is exact");
                assert!(report.problem.contains("Int8→Int32"), "{}", report.problem);
            }
            if input == DataType::BFloat16 {
                assert!(
                    report.check.max_error > 0.0,
                    "{what}: bf16 D rounded nowhere"
                );
            }
            assert_eq!(report.agent.gfx, gfx);
            assert_eq!(report.agent.simulated, hsa_backend().is_simulator());
            assert_eq!((report.scheduler.entries, report.scheduler.submits), (1, 1));
            assert!(report.scheduler.ticks >= 1, "{what}");
            assert!(report.kernel.vgprs > 0 && report.kernel.waves_per_simd >= 1);
            let text = report.to_string();
            assert!(
                text.contains(&chosen.name) && text.contains("RESULT"),
                "{text}"
            );
            if let Some(sim) = report.simulated {
                // Our CDNA kernels are MFMA kernels, our RDNA ones for
                // f16/bf16 WMMA kernels: the simulator counts their matrix
                // instructions, among others. The FMA kernels have none.
                let mfma = chosen.name.contains("_mfma");
                assert_eq!(mfma, gpu_has_mfma(&gfx), "{what}: {}", chosen.name);
                let matrix = mfma || chosen.name.contains("_wmma");
                assert_eq!(sim.matrix_instructions > 0, matrix, "{what}: {sim:?}");
                assert!(sim.instructions > sim.matrix_instructions, "{what}");
                assert!(sim.all_instructions > sim.instructions, "{what}");
                assert!(text.contains("simulated"), "{text}");
            }
        }
    }
}

#[test]
fn a_wrong_result_is_a_mismatch_naming_the_worst_element() {
    let system = announced_system();
    let job = GemmJob {
        wrong_reference: true,
        ..job(0, DataType::Half, "NT", (64, 64, 32))
    };
    match job::run(&system, &job) {
        Err(JobError::Mismatch {
            worst,
            elements,
            wrong,
        }) => {
            assert_eq!(elements, 64 * 64);
            assert!(wrong > 64 * 64 / 2, "{wrong} elements out of bounds");
            assert!(worst.row < 64 && worst.column < 64 && worst.batch == 0);
            assert!((worst.got - worst.expected).abs() > worst.bound);
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn bad_jobs_are_refused_by_name() {
    let system = announced_system();
    let zero = job(0, DataType::Half, "NN", (0, 64, 64));
    assert!(
        matches!(job::run(&system, &zero), Err(JobError::Usage(m)) if m.contains("at least 1"))
    );
    let nowhere = GemmJob {
        device: "amdgpu:7".into(),
        ..job(0, DataType::Half, "NN", (64, 64, 64))
    };
    assert!(job::run(&system, &nowhere).is_err());
    let gpus = hsa_gpus(&system);
    if let Some(index) = gpus.iter().position(|g| g.info().name == "gfx90a") {
        let fp8 = job(index, DataType::Float8, "NN", (64, 64, 64));
        match job::run(&system, &fp8) {
            Err(JobError::Usage(m)) => assert!(m.contains("gfx90a has no FP8"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_trace_option_writes_a_perfetto_file_of_the_run() {
    let system = announced_system();
    let path = std::env::temp_dir().join(format!("aqueduct-job-trace-{}.json", std::process::id()));
    let job = GemmJob {
        trace: Some(path.clone()),
        ..job(0, DataType::Half, "NT", (64, 64, 64))
    };
    let report = job::run(&system, &job).expect("the job");
    let (written, events) = report.trace.expect("a trace");
    assert_eq!(written, path);
    let json = std::fs::read_to_string(&path).expect("the trace file");
    let _ = std::fs::remove_file(&path);
    // The entry from issue to retire and the tick(s): named events with
    // device timestamps.
    assert!(events >= 2, "{events} events");
    assert!(
        json.contains("\"traceEvents\"") && json.contains("\"ts\""),
        "{json}"
    );
}

/// `aqueduct gemm`, the job's command line (what `cargo xtask run` runs
/// after building), on the simulator: exit status 0 and the report on a
/// right result, 1 and the worst element on a wrong one.
#[test]
fn aqueduct_gemm_exits_non_zero_on_a_wrong_result() {
    if !hsa_backend().is_simulator() {
        eprintln!("the command-line check runs on the simulator only");
        return;
    }
    let binary = aqueduct_tests::host_binary(aqueduct_tests::HostBinary::Bin("aqueduct"))
        .unwrap_or_else(|e| panic!("{e}"));
    let library = aqueduct_tests::simulator_library().unwrap_or_else(|e| panic!("{e}"));
    let run = |extra: &[&str]| {
        let out = std::process::Command::new(&binary)
            .args(["gemm", "--lib"])
            .arg(&library)
            .args(["--m", "64", "--n", "48", "--k", "40", "--type", "bf16"])
            .args(extra)
            .env(aqueduct_sim::hsa::profile::AGENTS_ENV, "mi300x")
            .output()
            .expect("run aqueduct gemm");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(&[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("all 3072 elements of D equal the f64 CPU reference exactly")
            && stdout.contains("simulated by aqueduct-sim"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run(&["--wrong-reference"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("D differs from the CPU reference: D[") && stderr.contains("out of bounds"),
        "{stderr}"
    );
}
