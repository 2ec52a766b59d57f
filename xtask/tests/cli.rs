//! `cargo xtask`'s command line: generated help, and usage errors that exit
//! with status 2 before any command runs (nothing here builds or runs a
//! job: a usage error is refused while parsing).

use std::process::Command;

/// Runs the binary: its exit status, then everything it printed (standard
/// output, then standard error).
fn xtask(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run xtask {args:?}: {e}"));
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn help_lists_every_command() {
    let (code, help, errors) = xtask(&["--help"]);
    assert_eq!(code, Some(0), "{help}{errors}");
    for command in [
        "build",
        "report",
        "run",
        "test",
        "isa-tables",
        "atomics-ir",
        "sim-coverage",
        "sim-bench",
        "hsa-bench",
        "cmdbuf-bench",
        "sched-bench",
        "gemm-report",
        "catalog",
        "catalog-bench",
    ] {
        assert!(
            help.lines()
                .any(|l| l.split_whitespace().next() == Some(command)),
            "{command} missing from\n{help}"
        );
    }
}

#[test]
fn each_command_has_its_own_help() {
    for (command, option) in [
        ("run", "--trans <NN|NT|TN|TT>"),
        ("build", "--gfx <LIST>"),
        ("catalog-bench", "--queries <N>"),
    ] {
        let (code, help, errors) = xtask(&[command, "--help"]);
        assert_eq!(code, Some(0), "{command}: {help}{errors}");
        assert!(help.contains(option), "{command}: {help}");
    }
}

#[test]
fn run_help_shows_the_main_jobs_defaults() {
    let (_, help, _) = xtask(&["run", "--help"]);
    let defaults = ["amdgpu:0", "1024", "512", "f16", "NT", "1"];
    for default in defaults.map(|d| format!("[default: {d}]")) {
        assert!(help.contains(&default), "{default}: {help}");
    }
}

#[test]
fn usage_errors_exit_with_status_2_and_say_what_is_wrong() {
    let cases: [(&[&str], &str); 6] = [
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (&["run", "--m", "0"], "invalid value '0' for '--m <N>'"),
        (&["run", "--type", "f64"], "unknown type \"f64\""),
        (&["run", "--trans", "NX"], "unknown transpose \"NX\""),
        (&["build", "--gfx", "gfx1"], "unknown gfx target `gfx1`"),
        (&["run", "--batch"], "a value is required for '--batch <N>'"),
    ];
    for (args, expected) in cases {
        let (code, out, errors) = xtask(args);
        assert_eq!(code, Some(2), "{args:?}: {out}{errors}");
        assert!(errors.contains(expected), "{args:?}: {errors}");
    }
}
