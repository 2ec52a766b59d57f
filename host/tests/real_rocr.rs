//! The host layer against the real ROCr library (Debian's
//! `libhsa-runtime64-1`, installed by `.ci/run`). Without an AMD GPU (no
//! `/dev/kfd`) opening the system must fail with a clear error, promptly;
//! with one it must enumerate the GPU.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aqueduct::hsa::ffi::{STATUSES, SYMBOLS};
use aqueduct::{Error, LoadOptions, Runtime, System};

/// The real ROCr on the system loader path.
const ROCR: &str = "libhsa-runtime64.so.1";

fn have_gpu() -> bool {
    Path::new("/dev/kfd").exists()
}

#[test]
fn the_real_library_loads_and_every_symbol_resolves() {
    let runtime = Runtime::load(&LoadOptions::library(ROCR))
        .unwrap_or_else(|e| panic!("{e}\n(install Debian's libhsa-runtime64-1)"));
    assert_eq!(runtime.path(), ROCR);
    // Each symbol once more, by name, so a missing one is reported by name.
    // SAFETY: loading the same HSA runtime again; dlopen only bumps its
    // reference count.
    let lib = unsafe { libloading::Library::new(ROCR) }.expect("load");
    for name in SYMBOLS {
        let mut c_name = name.as_bytes().to_vec();
        c_name.push(0);
        // SAFETY: only looking the symbol up, never calling it.
        let found = unsafe { lib.get::<*const ()>(&c_name) };
        assert!(found.is_ok(), "{ROCR} lacks {name}");
    }
    assert!(
        SYMBOLS.len() >= 69,
        "the table lists {} functions",
        SYMBOLS.len()
    );
    // The library's own status strings come through, and they are the
    // texts of aqueduct's one definition (which the simulator returns).
    for &(status, name, text) in STATUSES {
        assert_eq!(
            runtime.status_message(status),
            text.to_string_lossy(),
            "{name}"
        );
    }
}

#[test]
fn opening_the_system_without_a_gpu_says_so() {
    let start = Instant::now();
    let result = System::open(&LoadOptions::library(ROCR));
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "hsa_init took {:?}",
        start.elapsed()
    );
    if have_gpu() {
        let system = result.expect("a machine with /dev/kfd must initialise");
        assert!(!system.gpus().expect("agents").is_empty());
        return;
    }
    let err = result.err().expect("no /dev/kfd: hsa_init must fail");
    let text = err.to_string();
    assert!(matches!(err, Error::NoGpu { .. }), "{text}");
    assert!(
        text.contains("no AMD GPU is available") && text.contains("/dev/kfd"),
        "{text}"
    );
    assert!(
        text.contains("HSA_STATUS_ERROR"),
        "the runtime's own reason is kept: {text}"
    );
}

#[test]
fn aqueduct_info_fails_cleanly_without_a_gpu() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aqueduct"))
        .args(["info", "--lib", ROCR])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run aqueduct info");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("aqueduct info hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if have_gpu() {
        assert!(status.success(), "{stderr}");
        assert!(stdout.contains("Device Type:             GPU"), "{stdout}");
    } else {
        assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
        assert!(stderr.contains("no AMD GPU is available"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn aqueduct_info_refuses_bad_arguments() {
    let cases: [(&[&str], &str); 5] = [
        (&[], "usage: aqueduct info"),
        (&["status"], "unknown command \"status\""),
        (&["info", "--lib"], "--lib needs a value"),
        (&["info", "--verbose"], "unknown option \"--verbose\""),
        (
            &["info", "--lib", "/nonexistent/libhsa.so"],
            "/nonexistent/libhsa.so (explicit path)",
        ),
    ];
    for (args, expected) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_aqueduct"))
            .args(args)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
