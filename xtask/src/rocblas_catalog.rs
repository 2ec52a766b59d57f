//! The real Tensile catalog aqueduct is tested and benchmarked against:
//! `TensileLibrary.dat` from Debian trixie's `librocblas0` (rocBLAS 5.5.1,
//! Tensile 4.36; 117 MB of MessagePack, 56 980 solutions for gfx803 to
//! gfx1102).
//!
//! These machines run bookworm, so the package is fetched with `apt-get
//! download` through a sources list of its own (trixie only, used for this
//! one download, with its own lists and cache directories: the system's
//! apt state is not touched and nothing is installed), and the package
//! is unpacked with `dpkg-deb -x` into a scratch directory (2.3 GB, removed
//! afterwards: only the catalog and a small code object of chosen gfx90a
//! GEMM kernels, `crate::rocblas_kernels`, are kept). apt checks the download against
//! trixie's signed Release file. The result is cached in
//! `$AQUEDUCT_CACHE_DIR` (default `$XDG_CACHE_HOME/aqueduct`, else
//! `~/.cache/aqueduct`), so a machine downloads it once.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The package version the tests' expectations were taken from; if the
/// mirror no longer has it, the current trixie version is used instead.
pub const VERSION: &str = "5.5.1+dfsg-7";
const PACKAGE: &str = "librocblas0";
const LIBRARY: &str = "./usr/lib/x86_64-linux-gnu/rocblas/2.47.0/library";
const SOURCES: &str = "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main\n";

pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AQUEDUCT_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("aqueduct");
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".cache").join("aqueduct")
}

/// Where the catalog lands.
pub fn path() -> PathBuf {
    cache_dir()
        .join("rocblas-trixie")
        .join("TensileLibrary.dat")
}

/// Where the chosen gfx90a GEMM kernels land (`crate::rocblas_kernels`).
pub fn gemm_kernels_path() -> PathBuf {
    cache_dir()
        .join("rocblas-trixie")
        .join("gemm-kernels-gfx90a.co")
}

/// Where the AMD kernels `cargo xtask gemm-report` compares ours with
/// land (`crate::gemm_report::amd_selected`). The number in the name goes
/// up whenever the choice changes, so an older cached set is taken out
/// again.
pub fn report_kernels_path() -> PathBuf {
    cache_dir()
        .join("rocblas-trixie")
        .join("gemm-report-kernels-2-gfx90a.co")
}

/// The path of a code object holding the AMD kernels of the GEMM report,
/// taken out of the package if not cached.
pub fn fetch_report_kernels() -> Result<PathBuf, String> {
    fetch_package()?;
    Ok(report_kernels_path())
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn apt(work: &Path, args: &[&str]) -> Command {
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
        .args(args);
    cmd
}

/// The catalog's path, downloading and extracting it if it is not cached.
pub fn fetch() -> Result<PathBuf, String> {
    fetch_package()?;
    Ok(path())
}

/// The path of a code object holding AMD's compiled gfx90a GEMM kernels
/// `crate::tensile_gemm::KERNELS`, taken out of the package if not cached.
pub fn fetch_gemm_kernels() -> Result<PathBuf, String> {
    let path = gemm_kernels_path();
    // A cached object from an older list of kernels is taken out again.
    let complete = std::fs::read(&path).is_ok_and(|bytes| {
        aqueduct_abi::code_object::CodeObject::parse(&bytes).is_ok_and(|co| {
            crate::tensile_gemm::KERNELS
                .iter()
                .all(|k| co.kernels.iter().any(|c| c.metadata.name == k.name))
        })
    });
    if !complete {
        let _ = std::fs::remove_file(&path);
    }
    fetch_package()?;
    Ok(path)
}

/// Downloads and unpacks the package once, keeping the catalog and the
/// chosen kernels, unless both are cached.
fn fetch_package() -> Result<(), String> {
    let (catalog, kernels, report) = (path(), gemm_kernels_path(), report_kernels_path());
    if catalog.is_file() && kernels.is_file() && report.is_file() {
        return Ok(());
    }
    let dir = catalog
        .parent()
        .ok_or("cache path has no parent")?
        .to_path_buf();
    let work = dir.join(format!("work-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    for sub in [
        "lists/partial",
        "cache/archives/partial",
        "sources.list.d",
        "root",
    ] {
        std::fs::create_dir_all(work.join(sub)).map_err(|e| format!("{}: {e}", work.display()))?;
    }
    std::fs::write(work.join("sources.list"), SOURCES).map_err(|e| e.to_string())?;
    eprintln!(
        "fetching {PACKAGE} from Debian trixie (one-off, cached in {})",
        dir.display()
    );
    let result = (|| {
        run(&mut apt(&work, &["update"]))?;
        let pinned = format!("{PACKAGE}={VERSION}");
        if let Err(e) = run(&mut apt(&work, &["download", &pinned])) {
            eprintln!("{pinned} is not available ({e}); taking trixie's current {PACKAGE}");
            run(&mut apt(&work, &["download", PACKAGE]))?;
        }
        let deb = std::fs::read_dir(&work)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "deb"))
            .ok_or("apt-get download left no .deb")?;
        run(Command::new("dpkg-deb")
            .arg("-x")
            .arg(&deb)
            .arg(work.join("root")))?;
        let library = work.join("root").join(LIBRARY);
        // Written beside, then renamed within the cache directory, so a
        // reader never sees half a file.
        let co = std::fs::read(library.join("TensileLibrary_gfx90a.co"))
            .map_err(|e| format!("the package's gfx90a kernels: {e}"))?;
        let names: Vec<&str> = crate::tensile_gemm::KERNELS
            .iter()
            .map(|k| k.name)
            .collect();
        let small = crate::rocblas_kernels::extract(&co, &names)?;
        let part = work.join("gemm-kernels.part");
        std::fs::write(&part, small).map_err(|e| format!("{}: {e}", part.display()))?;
        std::fs::rename(&part, &kernels).map_err(|e| format!("{}: {e}", kernels.display()))?;
        // The GEMM report's AMD kernels: those the package's catalog
        // selects, and by name for any type and tile it selects none of.
        let all = aqueduct_abi::code_object::CodeObject::parse(&co)
            .map_err(|e| format!("the package's gfx90a kernels: {e}"))?;
        let all: Vec<&str> = all
            .kernels
            .iter()
            .map(|k| k.metadata.name.as_str())
            .collect();
        let rocblas = aqueduct_catalog::Catalog::open(library.join("TensileLibrary.dat"))
            .map_err(|e| e.to_string())?;
        let mut chosen = crate::gemm_report::amd_selected(&rocblas)?;
        for (name, tile) in crate::gemm_report::amd_counterparts(&all) {
            let code = |n: &str| n.split("_MT").next().map(str::to_string);
            if !chosen
                .iter()
                .any(|(c, t)| *t == tile && code(c) == code(&name))
            {
                chosen.push((name, tile));
            }
        }
        let chosen: Vec<&str> = chosen
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| all.contains(n))
            .collect();
        let small = crate::rocblas_kernels::extract(&co, &chosen)?;
        let part = work.join("gemm-report-kernels.part");
        std::fs::write(&part, small).map_err(|e| format!("{}: {e}", part.display()))?;
        std::fs::rename(&part, &report).map_err(|e| format!("{}: {e}", report.display()))?;
        std::fs::rename(library.join("TensileLibrary.dat"), &catalog)
            .map_err(|e| format!("{}: {e}", catalog.display()))
    })();
    let _ = std::fs::remove_dir_all(&work);
    result
}
