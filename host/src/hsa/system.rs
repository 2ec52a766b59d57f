//! Finding and loading the runtime, and the process's `hsa_init` reference.

use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ffi::{self, Api, Status};
use crate::error::{Error, LoadAttempt, Result};
use aqueduct_abi::hsa_api::{SIM_KERNEL_STATS_SYMBOL, SimKernelStats, SimKernelStatsFn};

/// Environment variable naming the runtime library to load.
pub const LIB_ENV: &str = "AQUEDUCT_HSA_LIB";

/// File names tried in `$ROCM_PATH/lib` and on the system loader path.
pub const LIB_NAMES: [&str; 2] = ["libhsa-runtime64.so.1", "libhsa-runtime64.so"];

/// The KFD device node: present when the amdgpu kernel driver can run HSA.
pub const KFD_PATH: &str = "/dev/kfd";

/// Where to look for the runtime.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Load exactly this library (no fallback).
    pub library: Option<PathBuf>,
}

impl LoadOptions {
    /// Load exactly the library at `path` (no fallback to the search).
    pub fn library(path: impl Into<PathBuf>) -> Self {
        Self {
            library: Some(path.into()),
        }
    }

    /// The candidates in search order, each with where it came from:
    /// the explicit path, `AQUEDUCT_HSA_LIB`, `$ROCM_PATH/lib`, then the
    /// system loader path. An explicit path or the variable, when given, is
    /// the only candidate: a user who names a library gets that one or an
    /// error, never a silent substitute.
    pub fn candidates(&self, env: impl Fn(&str) -> Option<String>) -> Vec<(&'static str, String)> {
        if let Some(p) = &self.library {
            return vec![("explicit path", p.display().to_string())];
        }
        if let Some(p) = env(LIB_ENV).filter(|p| !p.is_empty()) {
            return vec![(LIB_ENV, p)];
        }
        let mut out = Vec::new();
        if let Some(root) = env("ROCM_PATH").filter(|p| !p.is_empty()) {
            for name in LIB_NAMES {
                out.push((
                    "$ROCM_PATH/lib",
                    Path::new(&root)
                        .join("lib")
                        .join(name)
                        .display()
                        .to_string(),
                ));
            }
        }
        for name in LIB_NAMES {
            out.push(("system loader path", name.to_string()));
        }
        out
    }
}

/// What the simulated runtime's dispatches of one kernel executed, summed
/// ([`Runtime::simulator_kernel_stats`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelStats {
    /// The kernel's name.
    pub name: String,
    /// Kernel dispatch packets of it processed.
    pub dispatches: u64,
    /// Waves run.
    pub waves: u64,
    /// Wave-instructions executed.
    pub instructions: u64,
    /// Sum over executed instructions of active lanes.
    pub lane_ops: u64,
    /// Wave-instructions executed that were matrix instructions (MFMA,
    /// SMFMAC, WMMA, SWMMAC).
    pub matrix_instructions: u64,
}

/// A loaded HSA runtime library with its resolved function table.
pub struct Runtime {
    api: Api,
    path: String,
    /// The simulator's statistics export, when the library is the
    /// simulator ([`aqueduct_abi::hsa_api::SIM_KERNEL_STATS_SYMBOL`]).
    sim_stats: Option<SimKernelStatsFn>,
    // Declared last: dropped after `api`, whose pointers point into it.
    // `None` only for the unit tests' in-process simulator (`testing`).
    _lib: Option<libloading::Library>,
}

impl Runtime {
    /// Loads the first candidate that exists and resolves every symbol of
    /// [`ffi::SYMBOLS`].
    pub fn load(options: &LoadOptions) -> Result<Self> {
        let mut tried = Vec::new();
        for (source, candidate) in options.candidates(|k| std::env::var(k).ok()) {
            // SAFETY: loading a shared library runs its initialisers. The
            // candidates are HSA runtimes by name or by the user's choice;
            // ROCr's and the simulator's initialisers are sound to run.
            let lib = match unsafe { libloading::Library::new(&candidate) } {
                Ok(lib) => lib,
                Err(e) => {
                    tried.push(LoadAttempt {
                        source,
                        candidate,
                        problem: e.to_string(),
                    });
                    continue;
                }
            };
            // SAFETY: the library is an HSA runtime (see above), so each
            // symbol has the C signature `Api` declares; `Runtime` keeps the
            // library loaded as long as the pointers live.
            let api = unsafe { ffi::resolve(&lib) }.map_err(|symbol| Error::MissingSymbol {
                path: candidate.clone(),
                symbol,
            })?;
            // SAFETY: a symbol of this name has `SimKernelStatsFn`'s
            // signature (the simulator's export; ROCr has none).
            let sim_stats = unsafe {
                lib.get::<SimKernelStatsFn>(SIM_KERNEL_STATS_SYMBOL.as_bytes())
                    .ok()
                    .map(|f| *f)
            };
            return Ok(Self {
                api,
                path: candidate,
                sim_stats,
                _lib: Some(lib),
            });
        }
        Err(Error::RuntimeNotFound { tried })
    }

    /// A runtime whose functions live in this process (the unit tests'
    /// simulator, `super::testing`).
    #[cfg(test)]
    pub(crate) fn from_api(api: Api, path: &str) -> Self {
        Self {
            api,
            path: path.to_string(),
            sim_stats: None,
            _lib: None,
        }
    }

    /// The function table.
    pub fn api(&self) -> &Api {
        &self.api
    }

    /// What the simulated runtime's dispatches executed so far, per kernel
    /// (totals since the process started); `None` on ROCr, which has no
    /// such counts.
    pub fn simulator_kernel_stats(&self) -> Option<Vec<KernelStats>> {
        let f = self.sim_stats?;
        let mut out = Vec::new();
        loop {
            // SAFETY: `out` has room for its capacity in records (the
            // export writes at most that many); it returns the total.
            let total = unsafe { f(out.as_mut_ptr(), out.capacity()) };
            if total <= out.capacity() {
                // SAFETY: the export wrote `total` records.
                unsafe { out.set_len(total) };
                break;
            }
            out.reserve(total);
        }
        Some(
            out.iter()
                .map(|r: &SimKernelStats| {
                    let end = r.name.iter().position(|&b| b == 0).unwrap_or(r.name.len());
                    KernelStats {
                        name: String::from_utf8_lossy(&r.name[..end]).into_owned(),
                        dispatches: r.dispatches,
                        waves: r.waves,
                        instructions: r.instructions,
                        lane_ops: r.lane_ops,
                        matrix_instructions: r.matrix_instructions,
                    }
                })
                .collect(),
        )
    }

    /// The path or name the library was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `hsa_status_string`'s text for `status`.
    pub fn status_message(&self, status: Status) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: hsa_status_string writes a pointer to a static string (or
        // fails); it is valid even before hsa_init.
        let rc = unsafe { (self.api.hsa_status_string)(status, &mut text) };
        if rc != ffi::HSA_STATUS_SUCCESS || text.is_null() {
            return format!("unknown HSA status {status:#x}");
        }
        // SAFETY: a non-null result is a NUL-terminated static string.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }

    /// Turns a status into `Ok(())` or an [`Error::Hsa`] naming `call`.
    pub fn check(&self, call: &'static str, status: Status) -> Result<()> {
        if status == ffi::HSA_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(Error::Hsa {
                call,
                status,
                message: self.status_message(status),
            })
        }
    }
}

/// One `hsa_init` reference: HSA is usable while a `System` (or anything
/// created from it, which holds a clone) is alive; the last drop calls
/// `hsa_shut_down`.
#[derive(Clone)]
pub struct System {
    inner: Arc<Inner>,
}

struct Inner {
    runtime: Runtime,
    /// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`, read on first use.
    timestamp_frequency: std::sync::OnceLock<u64>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: pairs the successful hsa_init of `System::open`; every
        // object that used HSA through this system holds the Arc and has
        // been dropped.
        let _ = unsafe { (self.runtime.api.hsa_shut_down)() };
    }
}

impl System {
    /// Loads the runtime (see [`LoadOptions::candidates`]) and initialises
    /// it. On a machine without an AMD GPU, ROCr's `hsa_init` fails; the
    /// error then says so plainly ([`Error::NoGpu`]).
    pub fn open(options: &LoadOptions) -> Result<Self> {
        Self::with_runtime(Runtime::load(options)?)
    }

    /// Initialises an already loaded runtime.
    pub fn with_runtime(runtime: Runtime) -> Result<Self> {
        // SAFETY: hsa_init takes no arguments and may be called any number
        // of times (HSA reference-counts it).
        let status = unsafe { (runtime.api.hsa_init)() };
        if status != ffi::HSA_STATUS_SUCCESS {
            let message = runtime.status_message(status);
            if !Path::new(KFD_PATH).exists() {
                return Err(Error::NoGpu {
                    path: runtime.path.clone(),
                    kfd: KFD_PATH,
                    status,
                    message,
                });
            }
            return Err(Error::Hsa {
                call: "hsa_init",
                status,
                message,
            });
        }
        Ok(Self {
            inner: Arc::new(Inner {
                runtime,
                timestamp_frequency: std::sync::OnceLock::new(),
            }),
        })
    }

    /// The loaded runtime library (ROCr or the simulator) this system holds
    /// an `hsa_init` reference on.
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// The function table: only the checked layer (`super::checked`) calls
    /// through it.
    pub(super) fn api(&self) -> &Api {
        &self.inner.runtime.api
    }

    /// Ticks per second of signal-wait timeout hints, read once per system.
    pub(crate) fn ticks_per_second(&self) -> Result<u64> {
        if let Some(&hz) = self.inner.timestamp_frequency.get() {
            return Ok(hz);
        }
        let hz = self.timestamp_frequency()?;
        Ok(*self.inner.timestamp_frequency.get_or_init(|| hz))
    }

    pub(crate) fn check(&self, call: &'static str, status: Status) -> Result<()> {
        self.inner.runtime.check(call, status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn search_order_is_explicit_env_rocm_path_system() {
        let all = [(LIB_ENV, "/env/libhsa.so"), ("ROCM_PATH", "/opt/rocm")];
        let c = LoadOptions::library("/explicit/libhsa.so").candidates(env(&all));
        assert_eq!(
            c,
            vec![("explicit path", "/explicit/libhsa.so".to_string())]
        );
        let c = LoadOptions::default().candidates(env(&all));
        assert_eq!(c, vec![(LIB_ENV, "/env/libhsa.so".to_string())]);
        let c = LoadOptions::default().candidates(env(&[("ROCM_PATH", "/opt/rocm")]));
        assert_eq!(
            c,
            vec![
                (
                    "$ROCM_PATH/lib",
                    "/opt/rocm/lib/libhsa-runtime64.so.1".to_string()
                ),
                (
                    "$ROCM_PATH/lib",
                    "/opt/rocm/lib/libhsa-runtime64.so".to_string()
                ),
                ("system loader path", "libhsa-runtime64.so.1".to_string()),
                ("system loader path", "libhsa-runtime64.so".to_string()),
            ]
        );
        // Empty variables count as unset.
        let c = LoadOptions::default().candidates(env(&[(LIB_ENV, ""), ("ROCM_PATH", "")]));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn a_missing_library_lists_what_was_tried() {
        let err = Runtime::load(&LoadOptions::library("/nonexistent/libhsa-runtime64.so.1"))
            .err()
            .expect("must fail");
        let text = err.to_string();
        assert!(
            matches!(err, Error::RuntimeNotFound { ref tried } if tried.len() == 1),
            "{text}"
        );
        assert!(
            text.contains("/nonexistent/libhsa-runtime64.so.1 (explicit path)"),
            "{text}"
        );
    }

    #[test]
    fn a_library_that_is_not_hsa_names_the_missing_symbol() {
        // libc loads but is no HSA runtime.
        let err = Runtime::load(&LoadOptions::library("libc.so.6"))
            .err()
            .expect("must fail");
        assert!(
            matches!(
                err,
                Error::MissingSymbol {
                    symbol: "hsa_init",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("libc.so.6"), "{err}");
    }
}
