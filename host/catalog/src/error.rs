//! Catalog errors: every way a catalog can fail to load or to answer, typed,
//! with the file and the place in it.

use std::path::PathBuf;

use super::msgpack::MsgpackError;

/// Where in a catalog an error was found: the file, and the path of keys and
/// row numbers leading to the node (`library.rows[3].library.map[...]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Location {
    /// The catalog file; `None` for a catalog read from memory.
    pub file: Option<PathBuf>,
    /// Keys and row numbers from the file's root to the node, e.g.
    /// `library.rows[3].library.map[...]`; empty at the root.
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

/// Why a catalog could not be read, or a selection could not be answered;
/// each carries where (file and node path) and what was found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    /// The file could not be opened or read.
    #[error("{file}: {message}")]
    Io {
        /// The file.
        file: PathBuf,
        /// The operating system's error text.
        message: String,
    },

    /// The bytes are not valid MessagePack (truncated, corrupt, ...).
    #[error("{at}: malformed MessagePack: {source}")]
    Msgpack {
        /// Where decoding stopped.
        at: Location,
        /// What the decoder found.
        source: MsgpackError,
    },

    /// The YAML text does not parse, or uses what a catalog cannot hold.
    #[error("{at}: malformed YAML: {message}")]
    Yaml {
        /// Where in the document.
        at: Location,
        /// What the parser found.
        message: String,
    },

    /// A node, predicate, property or distance type this reader does not
    /// know. Never treated as "true": the catalog is refused.
    #[error("{at}: unknown {what} type {name:?}")]
    UnknownType {
        /// The node holding the type name.
        at: Location,
        /// Which kind of type: `library node`, `predicate`, `property`,
        /// `distance`, `data`, ...
        what: &'static str,
        /// The type name found.
        name: String,
    },

    /// A required key is absent.
    #[error("{at}: missing key {key:?}")]
    MissingKey {
        /// The map that lacks it.
        at: Location,
        /// The key.
        key: &'static str,
    },

    /// A value has the wrong shape or an impossible value.
    #[error("{at}: {problem}")]
    Invalid {
        /// The value.
        at: Location,
        /// What is wrong with it.
        problem: String,
    },

    /// A library node names a solution index the catalog does not hold.
    #[error("{at}: solution index {index} is not in the catalog's solution list")]
    MissingSolution {
        /// The library node.
        at: Location,
        /// The index it names.
        index: i64,
    },

    /// Two solutions share an index.
    #[error("{at}: solution index {index} appears twice")]
    DuplicateSolution {
        /// The second solution with the index.
        at: Location,
        /// The shared index.
        index: i64,
    },

    /// A map holds a key twice: which value counts would be a guess (a
    /// second `solutions` list would silently replace the one the library
    /// was read against).
    #[error("{at}: key {key:?} appears twice in one map")]
    DuplicateKey {
        /// The map.
        at: Location,
        /// The repeated key.
        key: String,
    },

    /// Nesting deeper than the reader's limit.
    #[error("{at}: nested deeper than {limit} levels")]
    TooDeep {
        /// The node at which the limit was reached.
        at: Location,
        /// The limit, in levels.
        limit: usize,
    },

    /// A lazy catalog's placeholder names a child file that is absent.
    #[error("{parent}: placeholder {name:?} names a child catalog that does not exist (looked for {})", format_paths(.tried))]
    MissingChild {
        /// The catalog file holding the placeholder.
        parent: PathBuf,
        /// The placeholder's name: the child file's name without the
        /// parent's extension.
        name: String,
        /// The paths looked at.
        tried: Vec<PathBuf>,
    },

    /// A placeholder leads back to a file already being loaded above it.
    #[error("placeholder cycle: {}", format_paths(.chain))]
    PlaceholderCycle {
        /// The files from the root catalog down to the repeated one.
        chain: Vec<PathBuf>,
    },

    /// The catalog has no file to resolve placeholders against.
    #[error("placeholder {name:?} cannot be resolved: the catalog was not read from a file")]
    NoDirectory {
        /// The placeholder's name.
        name: String,
    },

    /// A code object behind a solution could not be loaded.
    #[error("code object {file} for solution {solution:?}: {message}")]
    CodeObject {
        /// The code object's path (empty when the solution names none).
        file: PathBuf,
        /// The solution's kernel name.
        solution: String,
        /// Why the loader failed.
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

/// A result whose error is a [`CatalogError`].
pub type Result<T, E = CatalogError> = std::result::Result<T, E>;
