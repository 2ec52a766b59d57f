//! TensileLite's lazy mapping file (`TensileLiteLibrary_lazy_Mapping.dat`,
//! hipBLASLt 7.x): which child catalog holds a solution, by its global
//! index.
//!
//! The file is one MessagePack map from the least solution index of each
//! child catalog to the child's file stem (no extension), over every
//! processor of the package; the child holding solution `i` is the entry
//! with the greatest key ≤ `i`. hipBLASLt reads keys written as positive
//! integers or as decimal strings. It uses the file only to find a
//! solution by index; selection reaches the children through the lazy
//! roots' `Placeholder` nodes (`TENSILELITE.md` §2.2, with the sources).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{CatalogError, Location, Result};
use crate::msgpack::{Kind, Reader};

/// The mapping: least solution index of each child → the child's stem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LazyMapping {
    children: BTreeMap<u32, String>,
}

impl LazyMapping {
    /// Reads the mapping file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| CatalogError::Io {
            file: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(&bytes, Some(path))
    }

    /// Parses a mapping from `bytes` (`file` names it in errors).
    pub fn parse(bytes: &[u8], file: Option<&Path>) -> Result<Self> {
        let at = |path: String| Location {
            file: file.map(Path::to_path_buf),
            path,
        };
        let mut r = Reader::from_bytes(bytes);
        // Errors name the byte where the value that failed starts.
        let malformed = |offset: u64, e| CatalogError::Msgpack {
            at: at(format!("byte {offset}")),
            source: e,
        };
        let len = r.map_len().map_err(|e| malformed(0, e))?;
        let mut children = BTreeMap::new();
        for entry in 0..len {
            let offset = r.offset();
            let key = match r.peek().map_err(|e| malformed(offset, e))? {
                Kind::Str => {
                    let text = r.str().map_err(|e| malformed(offset, e))?;
                    text.parse::<u32>().map_err(|_| CatalogError::Invalid {
                        at: at(format!("[{entry}]")),
                        problem: format!("key {text:?} is not a solution index"),
                    })?
                }
                _ => r.u32().map_err(|e| malformed(offset, e))?,
            };
            let offset = r.offset();
            let stem = r.str().map_err(|e| malformed(offset, e))?;
            if stem.is_empty() || stem.contains('/') {
                return Err(CatalogError::Invalid {
                    at: at(format!("[{key}]")),
                    problem: format!("{stem:?} is not a child catalog's file stem"),
                });
            }
            if children.insert(key, stem.to_string()).is_some() {
                return Err(CatalogError::DuplicateKey {
                    at: at(String::new()),
                    key: key.to_string(),
                });
            }
        }
        let offset = r.offset();
        r.finish().map_err(|e| malformed(offset, e))?;
        Ok(Self { children })
    }

    /// The stem of the child catalog holding solution `index`: the entry
    /// with the greatest key ≤ `index`; `None` below the first key.
    pub fn child_of(&self, index: u32) -> Option<&str> {
        self.children
            .range(..=index)
            .next_back()
            .map(|(_, stem)| stem.as_str())
    }

    /// Children: (least solution index, stem), by index.
    pub fn children(&self) -> impl Iterator<Item = (u32, &str)> {
        self.children.iter().map(|(&k, v)| (k, v.as_str()))
    }

    /// Number of child catalogs.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// No child at all.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MessagePack of a map with the given (key, value) byte encodings.
    fn map(entries: &[(&[u8], &str)]) -> Vec<u8> {
        let mut out = vec![0x80 | entries.len() as u8];
        for (key, value) in entries {
            out.extend_from_slice(key);
            out.push(0xa0 | value.len() as u8);
            out.extend_from_slice(value.as_bytes());
        }
        out
    }

    #[test]
    fn integer_and_string_keys_map_an_index_to_its_child() {
        // 0 → "a", 10 (uint8) → "b", "300" (a string key) → "c".
        let m = LazyMapping::parse(
            &map(&[(&[0x00], "a"), (&[0xcc, 10], "b"), (b"\xa3300", "c")]),
            None,
        )
        .expect("parses");
        assert_eq!(m.len(), 3);
        assert_eq!(m.child_of(0), Some("a"));
        assert_eq!(m.child_of(9), Some("a"));
        assert_eq!(m.child_of(10), Some("b"));
        assert_eq!(m.child_of(299), Some("b"));
        assert_eq!(m.child_of(300), Some("c"));
        assert_eq!(m.child_of(u32::MAX), Some("c"));
        let starts: Vec<u32> = m.children().map(|(k, _)| k).collect();
        assert_eq!(starts, [0, 10, 300]);
    }

    #[test]
    fn bad_mappings_are_refused() {
        let first_at_5 = LazyMapping::parse(&map(&[(&[0x05], "a")]), None).expect("parses");
        assert_eq!(first_at_5.child_of(4), None);
        for (bytes, want) in [
            (map(&[(&[0x01], "a"), (&[0x01], "b")]), "appears twice"),
            (map(&[(b"\xa2x1", "a")]), "not a solution index"),
            (map(&[(&[0x01], "../a")]), "not a child catalog"),
            (map(&[(&[0xff], "a")]), "MessagePack"), // a negative key
            (vec![0x91, 0x00], "MessagePack"),       // an array, not a map
            (map(&[(&[0x01], "a")])[..3].to_vec(), "MessagePack"), // cut short
        ] {
            let e = LazyMapping::parse(&bytes, None)
                .expect_err(want)
                .to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
