//! The host crate's examples (`host/examples/`), run as users run them: each
//! binary in a child process on the simulator's HSA runtime
//! (`AQUEDUCT_HSA_LIB` = `libaqueduct_sim.so`, found next to this test
//! binary), with one or two simulated GPUs, checked by its exit status and
//! by what it prints. An example that gets a wrong result returns an error,
//! so it exits with status 1 and its test fails. Always the simulator, GPU
//! or not: this checks the examples, the other suites the hardware.
//!
//! The binaries are the ones cargo built beside this test
//! (`<target>/<profile>/examples/<name>`; [`aqueduct_tests::host_binary`]):
//! `cargo test --workspace` builds every example before running any test.
//! `cargo test -p aqueduct-tests` does not (they belong to `aqueduct`), so
//! when one is missing, or older than a source its dep-info file lists,
//! this test runs `cargo build -p aqueduct --bins --examples` once itself: cargo
//! lets go of the build directory before it runs tests, so the nested
//! build does not wait for the outer one. If that fails, the test fails
//! with the build's output and that command. Their device code is what
//! this crate's build script built (`target/amdgpu/<gfx>/`), found the way
//! the examples find it (`aqueduct::device_code`).
//!
//! Sizes are the examples' own, small enough for the interpreter: each
//! runs in under a second here (the GEMM, 192×160×96, the longest).

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use aqueduct_tests::{HostBinary, host_binary, simulator_library};

/// Longest one example may run on the simulator: a hundred times what
/// the slowest takes, for a machine busy with other tests.
const EXAMPLE_TIMEOUT: Duration = Duration::from_secs(120);

/// What an example printed, and how it ended.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Panics with everything the example printed unless it exited with
    /// status 0 and printed each of `expected` on standard output.
    fn assert_success(&self, name: &str, expected: &[&str]) {
        let Run {
            status,
            stdout,
            stderr,
        } = self;
        assert!(
            status.success(),
            "example {name} failed ({status}):\n{stdout}\n{stderr}"
        );
        for want in expected {
            assert!(
                stdout.contains(want),
                "example {name} did not print {want:?}:\n{stdout}\n{stderr}"
            );
        }
    }
}

/// Example `name`'s binary, built first if it is missing or stale.
fn example(name: &str) -> PathBuf {
    host_binary(HostBinary::Example(name)).unwrap_or_else(|e| panic!("example {name}: {e}"))
}

/// Runs example `name` on the simulator with the simulated GPUs `agents`
/// (an `AQUEDUCT_SIM_AGENTS` list) and the extra environment `env`; kills
/// it and panics once it has run [`EXAMPLE_TIMEOUT`].
fn run_example(name: &str, agents: &str, env: &[(&str, &str)]) -> Run {
    let binary = example(name);
    let simulator = simulator_library().unwrap_or_else(|e| panic!("{e}"));
    let start = Instant::now();
    let mut child = Command::new(&binary)
        .env("AQUEDUCT_HSA_LIB", &simulator)
        .env(aqueduct_sim::hsa::profile::AGENTS_ENV, agents)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
    // Drained while the example runs, so a full pipe cannot stall it.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the example") {
            break status;
        }
        if start.elapsed() > EXAMPLE_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "example {name} still running after {EXAMPLE_TIMEOUT:?}; it printed:\n{}\n{}",
                stdout.join().unwrap_or_default(),
                stderr.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let run = Run {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    };
    eprintln!(
        "example {name} on {agents}: {:.1?}, {status}\n{}",
        start.elapsed(),
        run.stdout
    );
    run
}

#[test]
fn info_lists_both_simulated_gpus_with_their_properties() {
    run_example("info", "mi300x,mi210", &[]).assert_success(
        "info",
        &[
            "GPU gfx942 (AMD Instinct MI300X): amdgcn-amd-amdhsa--gfx942",
            "304 CUs, chip ID 0x74a1",
            "GPU gfx90a (AMD Instinct MI210): amdgcn-amd-amdhsa--gfx90a",
            "104 CUs, chip ID 0x740f",
            "aqueduct-device.hsaco\n",
            "coarse-grained",
        ],
    );
}

#[test]
fn fill_and_copy_checks_every_element_on_gfx90a() {
    run_example("fill_and_copy", "gfx90a", &[]).assert_success(
        "fill_and_copy",
        &["copied 2048 over them", "checked 4096 elements twice"],
    );
}

#[test]
fn command_buffer_replays_on_two_binding_tables() {
    run_example("command_buffer", "gfx942", &[]).assert_success(
        "command_buffer",
        &[
            "y = 10 + 3 · 1: 1000 of 1000 elements are 13",
            "y = -2 + 3 · 1: 1000 of 1000 elements are 1",
        ],
    );
}

#[test]
fn gemm_matches_the_cpu_exactly_on_both_processors() {
    for (agents, gfx) in [("mi300x", "on gfx942"), ("mi210", "on gfx90a")] {
        run_example("gemm", agents, &[])
            .assert_success("gemm", &[gfx, "largest difference from the CPU: 0e0"]);
    }
}

#[test]
fn scheduler_runs_the_chain_of_three() {
    run_example("scheduler", "gfx942", &[]).assert_success(
        "scheduler",
        &["y = 1 + 9x over 1000 elements after three chained runs"],
    );
}

/// An example that cannot do its job returns the error from `main`: exit
/// status 1 and the error on standard error, which `Run::assert_success`
/// turns into a failed test. Here the device library is missing.
#[test]
fn a_failing_example_exits_with_an_error() {
    let empty =
        std::env::temp_dir().join(format!("aqueduct-no-device-code-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("create an empty directory");
    let run = run_example(
        "fill_and_copy",
        "gfx90a",
        &[(aqueduct::device_code::DIR_ENV, &empty.to_string_lossy())],
    );
    let _ = std::fs::remove_dir(&empty);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", run.stdout, run.stderr);
    // `main`'s error, printed by the standard library (with `Debug`).
    assert!(run.stderr.contains("Error: NotBuilt"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}
