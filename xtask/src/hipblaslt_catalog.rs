//! hipBLASLt's TensileLite catalogs, the real input of the catalog tests
//! and of `catalog-bench`: the `.dat` files of Debian
//! sid's `libhipblaslt1` (hipBLASLt 7.1.1: a lazy root per processor —
//! gfx908, gfx90a, gfx1100–1103, gfx1150/1151, gfx1200/1201 — their 717
//! child catalogs and the lazy mapping file; `host/catalog/TENSILELITE.md`
//! surveys them), fetched with `crate::debian` (nothing installed) and
//! kept in the cache as `<cache>/hipblaslt-sid/`, with the package
//! version in `VERSION`. Of the package's code objects (`.co`, `.hsaco`)
//! only a few gfx1100 and gfx1201 GEMM kernels are kept, as one small
//! code object per processor (`crate::tensile_gemm::HIPBLASLT_GFX1100`,
//! `HIPBLASLT_GFX1201`).

use std::path::{Path, PathBuf};

use crate::debian::{Package, cache_dir, lock_entry, unpack_one};

/// The package version the tests' expectations were taken from; if sid no
/// longer has it, its current version is taken (and recorded in
/// `VERSION`, so tests can tell).
pub const VERSION: &str = "7.1.1+dfsg-4";
const PACKAGE: &str = "libhipblaslt1";
const LIBRARY: &str = "usr/lib/x86_64-linux-gnu/hipblaslt/library";
const SUITE: &str = "sid";
/// The lazy mapping file's name.
pub const MAPPING: &str = "TensileLiteLibrary_lazy_Mapping.dat";

/// The processors the package has a lazy root for.
pub const PROCESSORS: [&str; 10] = [
    "gfx908", "gfx90a", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151",
    "gfx1200", "gfx1201",
];

/// `gfx`'s lazy root in `dir`.
pub fn root(dir: &Path, gfx: &str) -> PathBuf {
    dir.join(format!("TensileLibrary_lazy_{gfx}.dat"))
}

/// The GPU the tests and the benchmark pose for `gfx`: an MI210's 104 CUs
/// on gfx90a, so its `_CU104_` rows are tried too; 60 elsewhere (no row of
/// the package names another count).
pub fn hardware(gfx: &str) -> aqueduct_catalog::Hardware {
    aqueduct_catalog::Hardware::new(gfx, if gfx == "gfx90a" { 104 } else { 60 }, None)
}

/// Where the catalogs land.
pub fn dir() -> PathBuf {
    cache_dir().join("hipblaslt-sid")
}

/// The directory of the catalogs, downloaded and unpacked first unless
/// cached; and the package version they came from.
pub fn fetch() -> Result<(PathBuf, String), String> {
    let dir = dir();
    let _one = lock_entry(&dir)?;
    if let Some(version) = complete(&dir) {
        return Ok((dir, version));
    }
    // An entry cut short (its VERSION is written last) goes.
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let unpacked = unpack_one(
        SUITE,
        Package {
            name: PACKAGE,
            version: Some(VERSION),
        },
        &dir,
    )?;
    let version = deb_version(unpacked.work())?;
    let library = unpacked.root().join(LIBRARY);
    let staged = unpacked.work().join("catalogs");
    std::fs::create_dir_all(&staged).map_err(|e| format!("{}: {e}", staged.display()))?;
    let mut kept = 0;
    for entry in std::fs::read_dir(&library).map_err(|e| format!("{}: {e}", library.display()))? {
        let path = entry
            .map_err(|e| format!("{}: {e}", library.display()))?
            .path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("Tensile") && name.ends_with(".dat") {
            std::fs::rename(&path, staged.join(&*name))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            kept += 1;
        }
    }
    if !staged.join(MAPPING).is_file() {
        return Err(format!(
            "{PACKAGE} {version} has no {MAPPING} in {LIBRARY} ({kept} catalogs)"
        ));
    }
    // The GEMM kernels the simulator runs, out of their bundles.
    for (gfx, kernels) in GEMM_KERNELS {
        let co = gemm_kernels(&library, gfx, kernels)?;
        let to = staged.join(kernels_file(gfx));
        std::fs::write(&to, co).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    std::fs::write(staged.join("VERSION"), &version)
        .map_err(|e| format!("{}: {e}", staged.display()))?;
    std::fs::rename(&staged, &dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok((dir, version))
}

/// The version of a complete cache entry.
fn complete(dir: &Path) -> Option<String> {
    let version = std::fs::read_to_string(dir.join("VERSION")).ok()?;
    let kernels = GEMM_KERNELS
        .iter()
        .all(|(gfx, _)| dir.join(kernels_file(gfx)).is_file());
    (dir.join(MAPPING).is_file() && kernels).then(|| version.trim().to_string())
}

/// The GEMM kernels kept per processor, as one small code object each.
const GEMM_KERNELS: [(&str, &[crate::tensile_gemm::Kernel]); 2] = [
    ("gfx1100", crate::tensile_gemm::HIPBLASLT_GFX1100),
    ("gfx1201", crate::tensile_gemm::HIPBLASLT_GFX1201),
];

/// The name of `gfx`'s GEMM kernels in the cache entry. The number in it
/// goes up whenever [`GEMM_KERNELS`] changes, so that an older cache entry
/// is taken out again.
fn kernels_file(gfx: &str) -> String {
    format!("gemm-kernels-2-{gfx}.co")
}

/// One code object of `kernels`, each taken out of its package file's
/// bundle for `gfx`.
fn gemm_kernels(
    library: &Path,
    gfx: &str,
    kernels: &[crate::tensile_gemm::Kernel],
) -> Result<Vec<u8>, String> {
    let mut elves = Vec::new();
    for kernel in kernels {
        let path = library.join(kernel.file);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let elf = crate::offload_bundle::device_elf(&bytes, gfx)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        elves.push((elf, [kernel.name]));
    }
    let sources: Vec<(&[u8], &[&str])> = elves.iter().map(|(e, n)| (&e[..], &n[..])).collect();
    crate::rocblas_kernels::extract_from(&sources)
}

/// The path of a code object holding hipBLASLt's compiled GEMM kernels
/// for `gfx` (gfx1100: `crate::tensile_gemm::HIPBLASLT_GFX1100`, gfx1201:
/// `HIPBLASLT_GFX1201`), fetched with the catalogs unless cached.
pub fn fetch_gemm_kernels(gfx: &str) -> Result<PathBuf, String> {
    if !GEMM_KERNELS.iter().any(|(g, _)| *g == gfx) {
        return Err(format!("no hipBLASLt GEMM kernels are kept for {gfx}"));
    }
    Ok(fetch()?.0.join(kernels_file(gfx)))
}

/// The version in the name of the one `.deb` apt downloaded into `work`
/// (`<package>_<version>_<arch>.deb`, the epoch's colon written `%3a`).
fn deb_version(work: &Path) -> Result<String, String> {
    let debs: Vec<String> = std::fs::read_dir(work)
        .map_err(|e| format!("{}: {e}", work.display()))?
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with(&format!("{PACKAGE}_")) && n.ends_with(".deb"))
        .collect();
    match debs.as_slice() {
        [one] => Ok(one
            .split('_')
            .nth(1)
            .unwrap_or_default()
            .replace("%3a", ":")),
        other => Err(format!(
            "expected one {PACKAGE} .deb in {}, found {other:?}",
            work.display()
        )),
    }
}
