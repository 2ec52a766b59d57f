//! Where the device crates' code objects are, without the caller passing
//! paths.
//!
//! `cargo xtask build` writes `<dir>/<gfx>/<crate>.hsaco` with `<dir>` =
//! `target/amdgpu` of this workspace; `AQUEDUCT_DEVICE_DIR` overrides it at
//! run time (for an installed program whose code objects live elsewhere).
//! The test crate's build script runs the same build, so tests always see
//! code objects that match the device sources.

use std::fmt;
use std::path::{Path, PathBuf};

use aqueduct_abi::code_object::{ABI_VERSION_SYMBOL, CodeObject, CodeObjectError};

/// Environment variable that overrides the code-object directory.
pub const DIR_ENV: &str = "AQUEDUCT_DEVICE_DIR";

/// The workspace's `target/amdgpu`, fixed when this crate was compiled.
const WORKSPACE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/amdgpu");

/// The directory that holds one sub-directory of code objects per gfx target.
pub fn dir() -> PathBuf {
    match std::env::var_os(DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(WORKSPACE_DIR),
    }
}

/// Path of `crate_name`'s code object for `gfx` (it may not exist).
pub fn path(gfx: &str, crate_name: &str) -> PathBuf {
    dir().join(gfx).join(format!("{crate_name}.hsaco"))
}

/// Why a code object could not be had.
#[derive(Debug)]
pub enum DeviceCodeError {
    /// The file is not there: the device code was not built for that target.
    NotBuilt {
        /// Where it was looked for.
        path: PathBuf,
        /// The processor it is wanted for (`cargo xtask build --gfx <gfx>`).
        gfx: String,
    },
    /// The file exists but could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not a code object the shared reader accepts.
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why the reader refused it.
        source: CodeObjectError,
    },
    /// The device library was built against other shared layouts than this
    /// host (`found` is `None` when it records no version at all).
    AbiMismatch {
        /// The file.
        path: PathBuf,
        /// The `aqueduct_abi_version` it records.
        found: Option<u32>,
        /// This host's [`aqueduct_abi::ABI_VERSION`].
        expected: u32,
    },
}

impl fmt::Display for DeviceCodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotBuilt { path, gfx } => write!(
                f,
                "no code object at {}: run `cargo xtask build --gfx {gfx}` (or set {DIR_ENV})",
                path.display()
            ),
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::Invalid { path, source } => write!(f, "{}: {source}", path.display()),
            Self::AbiMismatch {
                path,
                found: Some(found),
                expected,
            } => write!(
                f,
                "{}: device library built for aqueduct ABI {found}, this host speaks ABI {expected}; rebuild it with `cargo xtask build`",
                path.display()
            ),
            Self::AbiMismatch {
                path,
                found: None,
                expected,
            } => write!(
                f,
                "{}: not an aqueduct device library (no {ABI_VERSION_SYMBOL} symbol; expected ABI {expected})",
                path.display()
            ),
        }
    }
}

impl std::error::Error for DeviceCodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NotBuilt { .. } | Self::AbiMismatch { .. } => None,
            Self::Io { source, .. } => Some(source),
            Self::Invalid { source, .. } => Some(source),
        }
    }
}

/// Reads and parses `crate_name`'s code object for `gfx`; returns the bytes
/// (what a loader hands to HSA) with the parsed view.
pub fn load(gfx: &str, crate_name: &str) -> Result<(Vec<u8>, CodeObject), DeviceCodeError> {
    load_path(&path(gfx, crate_name), gfx)
}

/// Package name of aqueduct's device library.
pub const DEVICE_LIBRARY: &str = "aqueduct-device";

/// Loads the device library for `gfx` and checks that it was built against
/// this host's [`aqueduct_abi::ABI_VERSION`]: the command, queue-entry and
/// semaphore layouts the two exchange must be the same.
pub fn load_device_library(gfx: &str) -> Result<(Vec<u8>, CodeObject), DeviceCodeError> {
    let path = path(gfx, DEVICE_LIBRARY);
    let (bytes, parsed) = load_path(&path, gfx)?;
    check_abi(&path, &parsed)?;
    Ok((bytes, parsed))
}

/// Refuses a device library whose recorded ABI version is not this host's.
pub fn check_abi(path: &Path, code_object: &CodeObject) -> Result<(), DeviceCodeError> {
    match code_object.abi_version {
        Some(v) if v == aqueduct_abi::ABI_VERSION => Ok(()),
        found => Err(DeviceCodeError::AbiMismatch {
            path: path.to_owned(),
            found,
            expected: aqueduct_abi::ABI_VERSION,
        }),
    }
}

fn load_path(path: &Path, gfx: &str) -> Result<(Vec<u8>, CodeObject), DeviceCodeError> {
    let bytes = std::fs::read(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => DeviceCodeError::NotBuilt {
            path: path.to_owned(),
            gfx: gfx.to_owned(),
        },
        _ => DeviceCodeError::Io {
            path: path.to_owned(),
            source,
        },
    })?;
    let parsed = CodeObject::parse(&bytes).map_err(|source| DeviceCodeError::Invalid {
        path: path.to_owned(),
        source,
    })?;
    Ok((bytes, parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_code_object_says_how_to_build_it() {
        let dir = std::env::temp_dir().join("aqueduct-device-code-missing");
        let err = load_path(&dir.join("gfx942/nothing.hsaco"), "gfx942").unwrap_err();
        assert!(matches!(err, DeviceCodeError::NotBuilt { .. }));
        assert!(
            err.to_string().contains("cargo xtask build --gfx gfx942"),
            "{err}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_code_object_is_invalid() {
        let file = std::env::temp_dir().join(format!("aqueduct-not-elf-{}", std::process::id()));
        std::fs::write(&file, b"not an ELF file").unwrap();
        let err = load_path(&file, "gfx942").unwrap_err();
        std::fs::remove_file(&file).ok();
        assert!(matches!(
            err,
            DeviceCodeError::Invalid {
                source: CodeObjectError::NotElf,
                ..
            }
        ));
    }
}
