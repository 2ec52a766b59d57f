//! ROCr's C headers and runtime library, for the tests that hold aqueduct
//! against the real thing: `tests/tests/rocr_headers.rs` compiles a probe
//! against the headers, `host/tests/real_rocr.rs` loads the library.
//!
//! Each is looked for in turn, the first found wins:
//!
//! | what      | explicit                 | ROCm                | Debian, installed                                      |
//! |-----------|--------------------------|---------------------|--------------------------------------------------------|
//! | `hsa/hsa.h` | `$AQUEDUCT_ROCR_INCLUDE` | `/opt/rocm/include` | `/usr/include` (`libhsa-runtime-dev`)                |
//! | `libhsa-runtime64.so.1` | `$AQUEDUCT_ROCR_LIB` | `/opt/rocm/lib` | `/usr/lib/x86_64-linux-gnu` (`libhsa-runtime64-1`) |
//!
//! and where none has it, Debian bookworm's packages are fetched once with
//! `crate::debian` (nothing installed, no root) into
//! `<cache>/rocr-bookworm`. `AQUEDUCT_ROCR_FETCH=1` skips the table and
//! always takes the fetched packages: how the fetch path is tested on a
//! machine that has ROCr.
//!
//! Why bookworm: its ROCr 5.2.3-3 is what the tests' expectations were
//! taken from (the `amd_queue_t` generation the header test reports, the
//! runtime's status strings), and it is built for bookworm's glibc;
//! trixie's ROCr 6.1 needs glibc 2.38, newer than these machines have.
//!
//! The fetched library needs libraries a fresh machine may lack
//! (`libhsakmt`, `libdrm`, `libdrm_amdgpu`, `libnuma`, `libelf`), so they
//! are fetched too; the rest it needs (`libstdc++`, `libgcc_s`, `libz`) are
//! apt's own dependencies, present wherever the fetch can run. The system
//! loader does not look in the cache, so [`Runtime`] says how to make it
//! find them: a process loads [`Runtime::preload`] by absolute path first
//! (the loader then satisfies the library's `DT_NEEDED` entries with the
//! already loaded objects, matched by soname), and a child process gets
//! their directory on `LD_LIBRARY_PATH` ([`Runtime::find_dependencies`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::debian::{Download, Package, cache_dir};

/// A directory holding `hsa/hsa.h`, used instead of any other.
pub const INCLUDE_ENV: &str = "AQUEDUCT_ROCR_INCLUDE";
/// A directory holding `libhsa-runtime64.so.1`, used instead of any other.
pub const LIB_ENV: &str = "AQUEDUCT_ROCR_LIB";
/// Set (not empty, not `0`): take Debian's fetched packages, whatever the
/// system has.
pub const FETCH_ENV: &str = "AQUEDUCT_ROCR_FETCH";
/// ROCr's soname.
pub const LIBRARY: &str = "libhsa-runtime64.so.1";
const HEADER: &str = "hsa/hsa.h";

const SUITE: &str = "bookworm";
/// The ROCr version the tests' expectations were taken from.
const VERSION: &str = "5.2.3-3";
/// Where the packages put their files, under the unpacked root.
const INCLUDE_DIR: &str = "usr/include";
const LIB_DIR: &str = "usr/lib/x86_64-linux-gnu";

/// Debian's packages (name, pinned version, the library the runtime needs
/// from it). The libraries are in load order, each after those it needs
/// (`dpkg -s <package>`'s Depends): libhsakmt needs libdrm, libdrm_amdgpu
/// and libnuma; ROCr needs libhsakmt and libelf.
const PACKAGES: [(&str, Option<&str>, Option<&str>); 7] = [
    ("libnuma1", None, Some("libnuma.so.1")),
    ("libdrm2", None, Some("libdrm.so.2")),
    ("libdrm-amdgpu1", None, Some("libdrm_amdgpu.so.1")),
    ("libhsakmt1", None, Some("libhsakmt.so.1")),
    ("libelf1", None, Some("libelf.so.1")),
    ("libhsa-runtime64-1", Some(VERSION), Some(LIBRARY)),
    ("libhsa-runtime-dev", Some(VERSION), None),
];

/// The directory holding `hsa/hsa.h`.
#[derive(Clone, Debug)]
pub struct Headers {
    pub include: PathBuf,
    /// Where it came from, for messages.
    pub origin: String,
}

/// ROCr's runtime library and what it takes to load it.
#[derive(Clone, Debug)]
pub struct Runtime {
    /// `libhsa-runtime64.so.1`, by absolute path.
    pub library: PathBuf,
    /// Libraries to load by absolute path, in this order, before
    /// `library`: the fetched dependencies; empty for a system's ROCr.
    pub preload: Vec<PathBuf>,
    /// Where it came from, for messages.
    pub origin: String,
}

impl Runtime {
    /// Lets `cmd`'s dynamic loader find the fetched dependencies (their
    /// directory first on `LD_LIBRARY_PATH`), for a child process that
    /// loads [`Runtime::library`]; a system's ROCr needs nothing.
    pub fn find_dependencies<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        let Some(dir) = self.preload.first().and_then(|p| p.parent()) else {
            return cmd;
        };
        let mut path = dir.as_os_str().to_owned();
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(old);
        }
        cmd.env("LD_LIBRARY_PATH", path)
    }
}

/// ROCr's headers, fetched from Debian if the system has none.
pub fn headers() -> Result<Headers, String> {
    match HEADERS.choose(
        std::env::var_os(INCLUDE_ENV).as_deref(),
        forced(),
        Path::exists,
    )? {
        Choice::System { dir, origin } => Ok(Headers {
            include: dir,
            origin,
        }),
        Choice::Fetch => Ok(fetch(&cache_dir())?.headers),
    }
}

/// ROCr's runtime library, fetched from Debian if the system has none.
pub fn runtime() -> Result<Runtime, String> {
    match RUNTIME.choose(std::env::var_os(LIB_ENV).as_deref(), forced(), Path::exists)? {
        Choice::System { dir, origin } => Ok(Runtime {
            library: dir.join(LIBRARY),
            preload: Vec::new(),
            origin,
        }),
        Choice::Fetch => Ok(fetch(&cache_dir())?.runtime),
    }
}

/// Debian's ROCr unpacked in `cache`.
#[derive(Clone, Debug)]
pub struct Fetched {
    pub headers: Headers,
    pub runtime: Runtime,
}

/// Debian bookworm's ROCr packages in `<cache>/rocr-bookworm`, downloaded
/// and unpacked unless they are there already, whatever the system has.
pub fn fetch(cache: &Path) -> Result<Fetched, String> {
    let root = entry(cache);
    // One fetch at a time, across threads and processes: another must not
    // take out an entry one just published and is loading from.
    let _one = crate::debian::lock_entry(&root)?;
    let fetched = fetch_layout(cache);
    let complete = || {
        fetched.headers.include.join(HEADER).is_file()
            && fetched.runtime.library.is_file()
            && fetched.runtime.preload.iter().all(|p| p.is_file())
    };
    if complete() {
        return Ok(fetched);
    }
    let packages: Vec<Package> = PACKAGES
        .iter()
        .map(|&(name, version, _)| Package { name, version })
        .collect();
    let names: Vec<&str> = packages.iter().map(|p| p.name).collect();
    let failed = |e: String| {
        format!(
            "cannot fetch ROCr from Debian {SUITE} ({}) into {}: {e}\n\
             To use a ROCr of the system instead, install Debian's packages \
             (apt-get install libhsa-runtime-dev libhsa-runtime64-1), or set \
             {INCLUDE_ENV} to a directory holding {HEADER} and {LIB_ENV} to one \
             holding {LIBRARY} (e.g. /opt/rocm/include and /opt/rocm/lib){}",
            names.join(" "),
            root.display(),
            if forced() {
                format!(", and unset {FETCH_ENV}")
            } else {
                String::new()
            }
        )
    };
    // An entry from an older package list, or one cut short by hand.
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| failed(format!("{}: {e}", root.display())))?;
    }
    std::fs::create_dir_all(cache).map_err(|e| failed(format!("{}: {e}", cache.display())))?;
    let unpacked = Download {
        suite: SUITE,
        packages: &packages,
        cached_in: &root,
    }
    .unpack()
    .map_err(failed)?;
    // One rename publishes the whole entry; if another process published
    // its own first, that one is used.
    if let Err(e) = std::fs::rename(unpacked.root(), &root)
        && !complete()
    {
        return Err(failed(format!("{}: {e}", root.display())));
    }
    if !complete() {
        return Err(failed(format!(
            "the packages lack {HEADER}, {LIBRARY} or one of its libraries"
        )));
    }
    Ok(fetched)
}

/// The cache entry in `cache`.
fn entry(cache: &Path) -> PathBuf {
    cache.join(format!("rocr-{SUITE}"))
}

/// Where the packages' files are once unpacked in `cache`.
fn fetch_layout(cache: &Path) -> Fetched {
    let root = entry(cache);
    let origin = format!("Debian {SUITE}'s packages in {}", root.display());
    Fetched {
        headers: Headers {
            include: root.join(INCLUDE_DIR),
            origin: origin.clone(),
        },
        runtime: Runtime {
            library: root.join(LIB_DIR).join(LIBRARY),
            preload: PACKAGES
                .iter()
                .filter_map(|&(_, _, library)| library)
                .filter(|&l| l != LIBRARY)
                .map(|l| root.join(LIB_DIR).join(l))
                .collect(),
            origin,
        },
    }
}

fn forced() -> bool {
    std::env::var_os(FETCH_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Where one of the two is looked for.
struct Lookup {
    env: &'static str,
    file: &'static str,
    /// System directories, in order, with what they are.
    system: [(&'static str, &'static str); 2],
}

const HEADERS: Lookup = Lookup {
    env: INCLUDE_ENV,
    file: HEADER,
    system: [
        ("/opt/rocm/include", "ROCm in /opt/rocm"),
        ("/usr/include", "Debian's libhsa-runtime-dev"),
    ],
};

const RUNTIME: Lookup = Lookup {
    env: LIB_ENV,
    file: LIBRARY,
    system: [
        ("/opt/rocm/lib", "ROCm in /opt/rocm"),
        ("/usr/lib/x86_64-linux-gnu", "Debian's libhsa-runtime64-1"),
    ],
};

#[derive(Debug, PartialEq, Eq)]
enum Choice {
    System { dir: PathBuf, origin: String },
    Fetch,
}

impl Lookup {
    /// The directory to use, given the variable's value, whether the fetch
    /// is forced and which files exist. A variable naming a directory
    /// without the file is an error, not a reason to look elsewhere.
    fn choose(
        &self,
        explicit: Option<&OsStr>,
        forced: bool,
        exists: impl Fn(&Path) -> bool,
    ) -> Result<Choice, String> {
        if forced {
            return Ok(Choice::Fetch);
        }
        if let Some(dir) = explicit.filter(|d| !d.is_empty()).map(PathBuf::from) {
            if !exists(&dir.join(self.file)) {
                return Err(format!(
                    "{} is {} but {} does not exist",
                    self.env,
                    dir.display(),
                    dir.join(self.file).display()
                ));
            }
            let origin = format!("${}", self.env);
            return Ok(Choice::System { dir, origin });
        }
        Ok(self
            .system
            .iter()
            .find(|(dir, _)| exists(&Path::new(dir).join(self.file)))
            .map_or(Choice::Fetch, |&(dir, origin)| Choice::System {
                dir: PathBuf::from(dir),
                origin: origin.to_string(),
            }))
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn system(dir: &str, origin: &str) -> Result<Choice, String> {
        Ok(Choice::System {
            dir: PathBuf::from(dir),
            origin: origin.to_string(),
        })
    }

    /// Only the files named exist.
    fn only(files: &'static [&'static str]) -> impl Fn(&Path) -> bool {
        move |p: &Path| files.iter().any(|f| Path::new(f) == p)
    }

    #[test]
    fn an_explicit_directory_wins_over_the_system() {
        let all = |_: &Path| true;
        let dir = OsString::from("/my/rocr/include");
        assert_eq!(
            HEADERS.choose(Some(&dir), false, all),
            system("/my/rocr/include", "$AQUEDUCT_ROCR_INCLUDE")
        );
    }

    #[test]
    fn an_explicit_directory_without_the_file_is_an_error() {
        let dir = OsString::from("/my/rocr/lib");
        let e = RUNTIME
            .choose(
                Some(&dir),
                false,
                only(&["/opt/rocm/lib/libhsa-runtime64.so.1"]),
            )
            .unwrap_err();
        assert!(
            e.contains("AQUEDUCT_ROCR_LIB") && e.contains("/my/rocr/lib/libhsa-runtime64.so.1"),
            "{e}"
        );
    }

    #[test]
    fn rocm_comes_before_debians_packages_and_an_empty_variable_is_unset() {
        let both = only(&[
            "/opt/rocm/lib/libhsa-runtime64.so.1",
            "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1",
        ]);
        let empty = OsString::new();
        assert_eq!(
            RUNTIME.choose(Some(&empty), false, both),
            system("/opt/rocm/lib", "ROCm in /opt/rocm")
        );
        assert_eq!(
            HEADERS.choose(None, false, only(&["/usr/include/hsa/hsa.h"])),
            system("/usr/include", "Debian's libhsa-runtime-dev")
        );
    }

    #[test]
    fn nothing_on_the_system_means_the_fetch() {
        assert_eq!(HEADERS.choose(None, false, only(&[])), Ok(Choice::Fetch));
        assert_eq!(RUNTIME.choose(None, false, only(&[])), Ok(Choice::Fetch));
    }

    #[test]
    fn a_forced_fetch_ignores_the_variable_and_the_system() {
        let dir = OsString::from("/my/rocr/include");
        assert_eq!(
            HEADERS.choose(Some(&dir), true, |_: &Path| true),
            Ok(Choice::Fetch)
        );
    }

    #[test]
    fn the_fetched_libraries_are_preloaded_before_rocr_in_dependency_order() {
        let fetched = fetch_layout(Path::new("/cache"));
        let names: Vec<&str> = fetched
            .runtime
            .preload
            .iter()
            .filter_map(|p| p.file_name()?.to_str())
            .collect();
        assert_eq!(
            names,
            [
                "libnuma.so.1",
                "libdrm.so.2",
                "libdrm_amdgpu.so.1",
                "libhsakmt.so.1",
                "libelf.so.1"
            ]
        );
        assert!(
            fetched
                .runtime
                .preload
                .iter()
                .all(|p| p.parent() == fetched.runtime.library.parent())
        );
        let mut cmd = Command::new("true");
        fetched.runtime.find_dependencies(&mut cmd);
        let path = cmd
            .get_envs()
            .find(|(k, _)| *k == "LD_LIBRARY_PATH")
            .and_then(|(_, v)| v);
        assert!(
            path.is_some_and(|p| p
                .to_string_lossy()
                .starts_with("/cache/rocr-bookworm/usr/lib/x86_64-linux-gnu")),
            "{path:?}"
        );
    }
}
