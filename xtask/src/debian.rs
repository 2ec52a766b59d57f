//! Debian packages taken apart without installing them: the one way
//! aqueduct gets AMD's files that a machine may lack (trixie's rocBLAS,
//! `crate::rocblas_catalog`; bookworm's ROCr, `crate::rocr`).
//!
//! `apt-get download` runs with a sources list of its own (one suite,
//! `main` only) and its own lists and cache directories, so the system's
//! apt state is not touched, nothing is installed and no root is needed;
//! apt checks every package against the suite's signed Release file (the
//! keyring that comes with apt). Each package is then unpacked with
//! `dpkg-deb -x` into a scratch directory beside the cache entry it feeds,
//! so the caller can move what it keeps into place with a rename (a reader
//! never sees half a file) and the rest goes when the scratch directory is
//! dropped. Cached results live in `$AQUEDUCT_CACHE_DIR` (default
//! `$XDG_CACHE_HOME/aqueduct`, else `~/.cache/aqueduct`), so a machine
//! downloads each package once.
//!
//! The cost is the suite's package index (about 9 MB for `main`, amd64)
//! on top of the packages themselves; translations and AppStream metadata
//! are not fetched.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The Debian archive, checked with the keyring apt itself depends on.
const ARCHIVE: &str =
    "[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian";

/// Where fetched files are cached: `$AQUEDUCT_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/aqueduct`, else `~/.cache/aqueduct`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AQUEDUCT_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("aqueduct");
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".cache").join("aqueduct")
}

/// One package to fetch.
#[derive(Clone, Copy, Debug)]
pub struct Package {
    pub name: &'static str,
    /// The version the tests' expectations were taken from, or `None` for
    /// whatever the suite has. If the mirror no longer has a pinned version
    /// (a point release replaced it), the suite's current one is taken.
    pub version: Option<&'static str>,
}

/// Packages to fetch from one suite.
pub struct Download<'a> {
    /// The Debian suite (`bookworm`, `trixie`).
    pub suite: &'a str,
    pub packages: &'a [Package],
    /// The cache entry the result is for: named in the one line printed,
    /// and the scratch directory sits beside it.
    pub cached_in: &'a Path,
}

/// The scratch directory of one download: the unpacked packages in
/// [`Unpacked::root`], room for the caller's own files in
/// [`Unpacked::work`]. Removed when dropped.
pub struct Unpacked {
    work: PathBuf,
}

impl Unpacked {
    /// The packages' files, as `dpkg-deb -x` lays them out (`usr/lib/...`).
    pub fn root(&self) -> PathBuf {
        self.work.join("root")
    }

    /// Scratch space on the cache's file system, for files renamed into
    /// the cache.
    pub fn work(&self) -> &Path {
        &self.work
    }
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

/// An exclusive lock on the cache entry `entry` (a file `<entry>.lock`
/// beside it), held until dropped: fetches into one entry, from threads of
/// one process or from several processes, run one at a time, so a later
/// one finds the entry complete. Taking it also removes scratch
/// directories an interrupted fetch left beside the entry (`<entry>.work-*`:
/// with the lock held, no other fetch can be using one).
pub fn lock_entry(entry: &Path) -> Result<std::fs::File, String> {
    let mut name = entry.as_os_str().to_owned();
    name.push(".lock");
    let path = PathBuf::from(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.lock()
        .map_err(|e| format!("lock {}: {e}", path.display()))?;
    if let (Some(parent), Some(stem)) = (entry.parent(), entry.file_name()) {
        let prefix = format!("{}.work-", stem.to_string_lossy());
        for stale in std::fs::read_dir(parent).into_iter().flatten().flatten() {
            if stale.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(stale.path());
            }
        }
    }
    Ok(file)
}

/// Downloads and unpacks the one package `package` of `suite` for the
/// cache entry `cached_in` ([`Download::unpack`]).
pub fn unpack_one(suite: &str, package: Package, cached_in: &Path) -> Result<Unpacked, String> {
    Download {
        suite,
        packages: &[package],
        cached_in,
    }
    .unpack()
}

impl Download<'_> {
    /// Downloads the packages and unpacks them all into one root,
    /// printing one line that says what is fetched and where it is cached.
    pub fn unpack(&self) -> Result<Unpacked, String> {
        // Unique per process and call: threads of one test binary may
        // fetch at the same time.
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let mut name = self.cached_in.as_os_str().to_owned();
        name.push(format!(
            ".work-{}-{}",
            std::process::id(),
            CALLS.fetch_add(1, Ordering::Relaxed)
        ));
        let unpacked = Unpacked {
            work: PathBuf::from(name),
        };
        let work = unpacked.work();
        let _ = std::fs::remove_dir_all(work);
        for sub in [
            "lists/partial",
            "cache/archives/partial",
            "sources.list.d",
            "root",
        ] {
            let dir = work.join(sub);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let sources = work.join("sources.list");
        std::fs::write(&sources, format!("deb {ARCHIVE} {} main\n", self.suite))
            .map_err(|e| format!("{}: {e}", sources.display()))?;
        let names: Vec<&str> = self.packages.iter().map(|p| p.name).collect();
        let names = names.join(" ");
        eprintln!(
            "fetching {names} from Debian {} (one-off, cached in {})",
            self.suite,
            self.cached_in.display()
        );
        let update = run(&mut apt(work, &["update"]))?;
        // apt-get update only warns when it cannot reach the mirror.
        let lists = std::fs::read_dir(work.join("lists"))
            .map_err(|e| format!("{}: {e}", work.join("lists").display()))?;
        if !lists
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().contains("_Packages"))
        {
            return Err(format!(
                "apt-get update fetched no package index of Debian {}:\n{update}",
                self.suite
            ));
        }
        let download = |pinned: bool| {
            let mut args = vec!["download".to_string()];
            args.extend(self.packages.iter().map(|p| match p.version {
                Some(v) if pinned => format!("{}={v}", p.name),
                _ => p.name.to_string(),
            }));
            args
        };
        if let Err(e) = run(&mut apt(work, &download(true))) {
            if self.packages.iter().all(|p| p.version.is_none()) {
                return Err(e);
            }
            eprintln!(
                "the pinned versions are not available ({e}); taking {}'s current {names}",
                self.suite
            );
            run(&mut apt(work, &download(false)))?;
        }
        let debs: Vec<PathBuf> = std::fs::read_dir(work)
            .map_err(|e| format!("{}: {e}", work.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "deb"))
            .collect();
        if debs.len() != self.packages.len() {
            return Err(format!(
                "apt-get download of {names} left {} .deb files in {}",
                debs.len(),
                work.display()
            ));
        }
        for deb in debs {
            run(Command::new("dpkg-deb")
                .arg("-x")
                .arg(&deb)
                .arg(unpacked.root()))?;
        }
        Ok(unpacked)
    }
}

/// Runs `cmd`; its output (stdout and stderr), or an error that shows the
/// command and what it said.
fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{cmd:?} failed ({}):\n{text}", out.status))
    }
}

/// `apt-get` on `work`'s own sources list, lists and cache.
fn apt<S: AsRef<str>>(work: &Path, args: &[S]) -> Command {
    let mut cmd = Command::new("apt-get");
    let opt = |k: &str, v: &Path| format!("-o{k}={}", v.display());
    cmd.current_dir(work)
        .arg("-q")
        .arg(opt("Dir::Etc::SourceList", &work.join("sources.list")))
        .arg(opt("Dir::Etc::SourceParts", &work.join("sources.list.d")))
        .arg(opt("Dir::State::Lists", &work.join("lists")))
        .arg(opt("Dir::Cache", &work.join("cache")))
        .arg("-oAPT::Architecture=amd64")
        .arg("-oDebug::NoLocking=1")
        // Only the package index: no translations, no AppStream metadata.
        .arg("-oAcquire::Languages=none")
        .arg("-oAcquire::IndexTargets::deb::DEP-11::DefaultEnabled=false")
        .args(args.iter().map(AsRef::as_ref));
    cmd
}
