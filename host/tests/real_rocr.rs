//! The host layer against the real ROCr library: the system's, else
//! Debian bookworm's `libhsa-runtime64-1` fetched into the cache
//! (`xtask::rocr`). Without an AMD GPU (no `/dev/kfd`) opening the system
//! must fail with a clear error, promptly; with one it must enumerate the
//! GPU.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use aqueduct::hsa::ffi::{STATUSES, SYMBOLS};
use aqueduct::{Error, LoadOptions, Runtime, System};

/// The real ROCr, found or fetched once per process, with the libraries a
/// fetched one needs already loaded (so the loader finds them by soname).
fn rocr() -> &'static xtask::rocr::Runtime {
    static ROCR: OnceLock<xtask::rocr::Runtime> = OnceLock::new();
    ROCR.get_or_init(|| {
        let rocr = xtask::rocr::runtime().unwrap_or_else(|e| panic!("ROCr: {e}"));
        eprintln!("ROCr: {} ({})", rocr.library.display(), rocr.origin);
        for dependency in &rocr.preload {
            // SAFETY: Debian's libraries that ROCr links against (libnuma,
            // libdrm, libhsakmt, libelf), each loaded after those it needs;
            // their initialisers only set up their own state.
            let library = unsafe { libloading::Library::new(dependency) }
                .unwrap_or_else(|e| panic!("{}: {e}", dependency.display()));
            // Kept loaded for the process, for ROCr to link against.
            std::mem::forget(library);
        }
        rocr
    })
}

fn have_gpu() -> bool {
    Path::new("/dev/kfd").exists()
}

#[test]
fn the_real_library_loads_and_every_symbol_resolves() {
    let rocr = &rocr().library;
    let runtime = Runtime::load(&LoadOptions::library(rocr)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(Path::new(runtime.path()), rocr);
    // Each symbol once more, by name, so a missing one is reported by name.
    // SAFETY: loading the same HSA runtime again; dlopen only bumps its
    // reference count.
    let lib = unsafe { libloading::Library::new(rocr) }.expect("load");
    for name in SYMBOLS {
        let mut c_name = name.as_bytes().to_vec();
        c_name.push(0);
        // SAFETY: only looking the symbol up, never calling it.
        let found = unsafe { lib.get::<*const ()>(&c_name) };
        assert!(found.is_ok(), "{} lacks {name}", rocr.display());
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
    let result = System::open(&LoadOptions::library(&rocr().library));
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
    aqueduct_info_fails_cleanly_on(rocr());
}

/// The fetch itself, as on a machine without ROCr (whatever this one has):
/// Debian's packages downloaded into the cache (on first use; then the
/// cached entry), unpacked, and the runtime loaded from there with the
/// libraries fetched beside it. (`AQUEDUCT_CACHE_DIR` pointed at an empty
/// directory makes this a fresh download.)
#[test]
fn debians_rocr_fetched_into_the_cache_loads() {
    let cache = xtask::debian::cache_dir();
    let fetched = xtask::rocr::fetch(&cache).unwrap_or_else(|e| panic!("{e}"));
    let header = fetched.headers.include.join("hsa/hsa.h");
    assert!(header.is_file(), "{} is missing", header.display());
    assert!(fetched.runtime.library.starts_with(&cache));
    assert!(!fetched.runtime.preload.is_empty());
    aqueduct_info_fails_cleanly_on(&fetched.runtime);
}

/// `aqueduct info` on `rocr`, in a child process: on a machine without a
/// GPU it exits 1 saying so, promptly; with one it lists it.
fn aqueduct_info_fails_cleanly_on(rocr: &xtask::rocr::Runtime) {
    let mut child = rocr
        .find_dependencies(&mut Command::new(env!("CARGO_BIN_EXE_aqueduct")))
        .args(["info", "--lib"])
        .arg(&rocr.library)
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
    if have_gpu() && !rocr.library.starts_with(xtask::debian::cache_dir()) {
        assert!(status.success(), "{stderr}");
        assert!(stdout.contains("Device Type:             GPU"), "{stdout}");
    } else if have_gpu() {
        // Debian bookworm's ROCr 5.2 may not know a newer GPU, or the user
        // may lack access to it: it must end, either way, without a panic.
        assert!(matches!(status.code(), Some(0 | 1)), "{stdout}{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    } else {
        assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
        assert!(stderr.contains("no AMD GPU is available"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
