//! The real Tensile catalog aqueduct is tested and benchmarked against:
//! `TensileLibrary.dat` from Debian trixie's `librocblas0` (rocBLAS 5.5.1,
//! Tensile 4.36; 117 MB of MessagePack, 56 980 solutions for gfx803 to
//! gfx1102).
//!
//! An installed `librocblas0` of exactly [`VERSION`] is read where it is
//! (untested: bookworm machines cannot install trixie's package).
//! Otherwise — these machines run bookworm — the package is fetched from
//! trixie with `crate::debian` (nothing installed) and unpacked into a scratch
//! directory (2.3 GB, removed afterwards: only the catalog and small code
//! objects of chosen gfx90a and gfx1100 GEMM kernels,
//! `crate::rocblas_kernels`, are kept in the cache, `crate::debian::cache_dir`), so a machine downloads
//! it once.

use std::path::PathBuf;

use crate::debian::{Package, cache_dir, unpack_one};

/// The package version the tests' expectations were taken from; if the
/// mirror no longer has it, the current trixie version is used instead.
pub const VERSION: &str = "5.5.1+dfsg-7";
const PACKAGE: &str = "librocblas0";
const LIBRARY: &str = "./usr/lib/x86_64-linux-gnu/rocblas/2.47.0/library";
const SUITE: &str = "trixie";

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

/// Where the chosen gfx1100 GEMM kernels land
/// (`crate::tensile_gemm::KERNELS_GFX1100`).
pub fn gfx1100_gemm_kernels_path() -> PathBuf {
    cache_dir()
        .join("rocblas-trixie")
        .join("gemm-kernels-gfx1100.co")
}

/// The path of a code object holding AMD's compiled gfx1100 GEMM kernels
/// `crate::tensile_gemm::KERNELS_GFX1100`, taken out of the package if
/// not cached.
pub fn fetch_gfx1100_gemm_kernels() -> Result<PathBuf, String> {
    fetch_package()?;
    Ok(gfx1100_gemm_kernels_path())
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
    let rdna = gfx1100_gemm_kernels_path();
    let dir = catalog
        .parent()
        .ok_or("cache path has no parent")?
        .to_path_buf();
    // One fetch at a time, across threads and processes: tests that need
    // the package run in parallel threads, and the first fetch on a fresh
    // machine once ran in two of them at once and failed. The later caller
    // finds the cache filled.
    let _one = crate::debian::lock_entry(&dir)?;
    if catalog.is_file() && kernels.is_file() && report.is_file() && rdna.is_file() {
        return Ok(());
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // The installed package if it is this version, else a download.
    let unpacked;
    let (library, work) = match installed_library() {
        Some(library) => {
            eprintln!(
                "using the installed {PACKAGE} {VERSION} ({}), cached in {}",
                library.display(),
                dir.display()
            );
            (library, dir.clone())
        }
        None => {
            unpacked = unpack_one(
                SUITE,
                Package {
                    name: PACKAGE,
                    version: Some(VERSION),
                },
                &dir,
            )?;
            (unpacked.root().join(LIBRARY), unpacked.work().to_path_buf())
        }
    };
    // Written beside, then renamed within the cache directory, so a
    // reader never sees half a file.
    // The gfx1100 kernels, out of the 223 MB code object of all 4844.
    let co = std::fs::read(library.join("TensileLibrary_gfx1100.co"))
        .map_err(|e| format!("the package's gfx1100 kernels: {e}"))?;
    keep(&co, crate::tensile_gemm::KERNELS_GFX1100, &work, &rdna)?;
    let co = std::fs::read(library.join("TensileLibrary_gfx90a.co"))
        .map_err(|e| format!("the package's gfx90a kernels: {e}"))?;
    keep(&co, crate::tensile_gemm::KERNELS, &work, &kernels)?;
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
    // Copied, not moved: an installed package's file stays where it is.
    let part = work.join("TensileLibrary.dat.part");
    std::fs::copy(library.join("TensileLibrary.dat"), &part)
        .map_err(|e| format!("{}: {e}", part.display()))?;
    std::fs::rename(&part, &catalog).map_err(|e| format!("{}: {e}", catalog.display()))
}

/// Writes a code object of `kernels`, taken out of the package's `co`,
/// to `to`: beside it in `work` first, then renamed, so a reader never
/// sees half a file.
fn keep(
    co: &[u8],
    kernels: &[crate::tensile_gemm::Kernel],
    work: &std::path::Path,
    to: &std::path::Path,
) -> Result<(), String> {
    let names: Vec<&str> = kernels.iter().map(|k| k.name).collect();
    let small = crate::rocblas_kernels::extract(co, &names)?;
    let part = work.join("gemm-kernels.part");
    std::fs::write(&part, small).map_err(|e| format!("{}: {e}", part.display()))?;
    std::fs::rename(&part, to).map_err(|e| format!("{}: {e}", to.display()))
}

/// The library directory of an installed `librocblas0` of exactly
/// [`VERSION`] (the tests' expectations are that version's), if the
/// system has one.
fn installed_library() -> Option<PathBuf> {
    let out = std::process::Command::new("dpkg-query")
        .args(["-W", "-f=${Version} ${db:Status-Abbrev}", PACKAGE])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace();
    let installed = fields.next() == Some(VERSION) && fields.next() == Some("ii");
    let library = PathBuf::from("/").join(LIBRARY.trim_start_matches("./"));
    (out.status.success() && installed && library.join("TensileLibrary.dat").is_file())
        .then_some(library)
}
