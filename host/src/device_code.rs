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

use aqueduct_abi::code_object::{CodeObject, CodeObjectError};

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
    NotBuilt { path: PathBuf, gfx: String },
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Invalid {
        path: PathBuf,
        source: CodeObjectError,
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
        }
    }
}

impl std::error::Error for DeviceCodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NotBuilt { .. } => None,
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
