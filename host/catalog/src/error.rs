//! Catalog errors: every way a catalog can fail to load or to answer, typed,
//! with the file and the place in it.

use std::path::PathBuf;

use super::msgpack::MsgpackError;

/// Where in a catalog an error was found: the file, and the path of keys and
/// row numbers leading to the node (`library.rows[3].library.map[...]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    pub file: Option<PathBuf>,
    pub path: String,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}", file.display())?,
            None => write!(f, "<memory>")?,
        }
        if !self.path.is_empty() {
            write!(f, " at {}", self.path)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    /// The file could not be opened or read.
    #[error("{file}: {message}")]
    Io { file: PathBuf, message: String },

    /// The bytes are not valid MessagePack (truncated, corrupt, ...).
    #[error("{at}: malformed MessagePack: {source}")]
    Msgpack { at: Location, source: MsgpackError },

    /// The YAML text does not parse, or uses what a catalog cannot hold.
    #[error("{at}: malformed YAML: {message}")]
    Yaml { at: Location, message: String },

    /// A node, predicate, property or distance type this reader does not
    /// know. Never treated as "true": the catalog is refused.
    #[error("{at}: unknown {what} type {name:?}")]
    UnknownType {
        at: Location,
        what: &'static str,
        name: String,
    },

    /// A required key is absent.
    #[error("{at}: missing key {key:?}")]
    MissingKey { at: Location, key: &'static str },

    /// A value has the wrong shape or an impossible value.
    #[error("{at}: {problem}")]
    Invalid { at: Location, problem: String },

    /// A library node names a solution index the catalog does not hold.
    #[error("{at}: solution index {index} is not in the catalog's solution list")]
    MissingSolution { at: Location, index: i64 },

    /// Two solutions share an index.
    #[error("{at}: solution index {index} appears twice")]
    DuplicateSolution { at: Location, index: i64 },

    /// A map holds a key twice: which value counts would be a guess (a
    /// second `solutions` list would silently replace the one the library
    /// was read against).
    #[error("{at}: key {key:?} appears twice in one map")]
    DuplicateKey { at: Location, key: String },

    /// Nesting deeper than the reader's limit.
    #[error("{at}: nested deeper than {limit} levels")]
    TooDeep { at: Location, limit: usize },

    /// A lazy catalog's placeholder names a child file that is absent.
    #[error("{parent}: placeholder {name:?} names a child catalog that does not exist (looked for {})", format_paths(.tried))]
    MissingChild {
        parent: PathBuf,
        name: String,
        tried: Vec<PathBuf>,
    },

    /// A placeholder leads back to a file already being loaded above it.
    #[error("placeholder cycle: {}", format_paths(.chain))]
    PlaceholderCycle { chain: Vec<PathBuf> },

    /// The catalog has no file to resolve placeholders against.
    #[error("placeholder {name:?} cannot be resolved: the catalog was not read from a file")]
    NoDirectory { name: String },

    /// A code object behind a solution could not be loaded.
    #[error("code object {file} for solution {solution:?}: {message}")]
    CodeObject {
        file: PathBuf,
        solution: String,
        message: String,
    },
}

fn format_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" -> ")
}

pub type Result<T, E = CatalogError> = std::result::Result<T, E>;
