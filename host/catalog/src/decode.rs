//! The decoder's state: the MessagePack reader, where in the tree it is (for
//! error messages), and the nesting budget.
//!
//! Catalog nodes are maps tagged by a `type` key. Tensile's writer puts
//! `type` first, which lets the decoder pick the variant and then read the
//! rest straight from the stream. A map written in another order (a
//! hand-written YAML catalog) is still accepted: the decoder passes over the
//! entries to find `type`, then rewinds and reads them in place. Nothing is
//! copied, so a hostile catalog of nested nodes with `type` last costs one
//! pass per level up to the nesting limit, not a copy of the rest of the
//! input per level.

use std::path::PathBuf;

use super::error::{CatalogError, Location, Result};
use super::msgpack::{Kind, MsgpackError, Reader};

/// Nesting limit for library nodes and predicates. Real catalogs nest about
/// ten deep; the limit keeps hostile input from exhausting the stack.
pub const MAX_DEPTH: usize = 64;

/// A map key, copied out of the reader's window without allocating when it
/// is short (they all are).
pub struct Key {
    inline: [u8; 48],
    len: usize,
    heap: Option<String>,
}

impl Key {
    /// The key as text; the one UTF-8 check a key gets.
    pub fn text(&self) -> Option<&str> {
        match &self.heap {
            Some(s) => Some(s),
            None => std::str::from_utf8(&self.inline[..self.len]).ok(),
        }
    }
}

#[derive(Debug, Clone)]
enum Seg {
    Key(&'static str),
    Index(usize),
    Name(Box<str>),
}

pub struct Decoder<'r> {
    pub r: Reader<'r>,
    /// Shared with every [`Decoder::sub`]: only errors copy it out.
    file: Option<std::sync::Arc<std::path::Path>>,
    path: Vec<Seg>,
    depth: usize,
    /// The keys claimed in the maps [`fields`] is inside, innermost last.
    /// A stack, so nested maps reuse one allocation.
    keys: Vec<SeenKey>,
    /// The bytes of claimed keys longer than [`SeenKey`] holds.
    long_keys: Vec<u8>,
}

/// A claimed map key as the duplicate check remembers it: its length and
/// its first and last 16 bytes, which is the whole key when it is at most
/// 32 bytes long (Tensile's keys are); a longer key's bytes are kept in
/// `Decoder::long_keys` from `start`.
#[derive(Clone, Copy)]
struct SeenKey {
    head: u128,
    tail: u128,
    len: u32,
    start: u32,
}

impl SeenKey {
    const WHOLE: usize = 32;

    #[inline]
    fn new(b: &[u8], start: usize) -> SeenKey {
        // Overlapping first and last words cover every byte of a key at
        // least one word long; with the length, that is the whole key.
        let (head, tail) = if let (Some(h), Some(t)) = (b.first_chunk(), b.last_chunk()) {
            (u128::from_le_bytes(*h), u128::from_le_bytes(*t))
        } else if let (Some(h), Some(t)) = (b.first_chunk(), b.last_chunk()) {
            (
                u64::from_le_bytes(*h) as u128,
                u64::from_le_bytes(*t) as u128,
            )
        } else if let (Some(h), Some(t)) = (b.first_chunk(), b.last_chunk()) {
            (
                u32::from_le_bytes(*h) as u128,
                u32::from_le_bytes(*t) as u128,
            )
        } else {
            (b.iter().fold(0, |w, &c| (w << 8) | u128::from(c)), 0)
        };
        SeenKey {
            head,
            tail,
            len: b.len() as u32,
            start: if b.len() > Self::WHOLE {
                start as u32
            } else {
                0
            },
        }
    }

    /// Its bit in a 1024-bit filter.
    #[inline]
    fn bit(&self) -> usize {
        let fold = |x: u128| (x as u64) ^ ((x >> 64) as u64).rotate_left(23);
        let h = fold(self.head) ^ fold(self.tail).rotate_left(41) ^ u64::from(self.len);
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize
    }
}

/// A tagged map whose `type` has been read; `len` entries remain.
pub struct Typed {
    pub ty: TypeName,
    pub len: usize,
}

/// A `type` value, held inline when short (every node and predicate type
/// name is): catalogs name a type per predicate leaf, tens of thousands
/// of times per file.
pub struct TypeName {
    inline: [u8; 40],
    len: u8,
    heap: Option<Box<str>>,
}

impl TypeName {
    fn read(d: &mut Decoder<'_>) -> Result<Self> {
        let mut name = TypeName {
            inline: [0; 40],
            len: 0,
            heap: None,
        };
        let s = match d.r.str() {
            Ok(s) => s,
            Err(e) => return Err(d.msgpack(e)),
        };
        match u8::try_from(s.len()) {
            Ok(n) if s.len() <= name.inline.len() => {
                name.inline[..s.len()].copy_from_slice(s.as_bytes());
                name.len = n;
            }
            _ => name.heap = Some(s.into()),
        }
        Ok(name)
    }

    /// The name (read as UTF-8 text).
    pub fn as_str(&self) -> &str {
        match &self.heap {
            Some(s) => s,
            None => std::str::from_utf8(&self.inline[..self.len as usize]).unwrap_or_default(),
        }
    }
}

impl std::ops::Deref for TypeName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<&str> for TypeName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<'r> Decoder<'r> {
    pub fn new(r: Reader<'r>, file: Option<PathBuf>) -> Self {
        Decoder {
            r,
            file: file.map(std::sync::Arc::from),
            path: Vec::new(),
            depth: 0,
            keys: Vec::new(),
            long_keys: Vec::new(),
        }
    }

    /// A decoder over `bytes` captured at this decoder's position: same
    /// file, path and depth, so its errors say where the bytes came from.
    pub fn sub<'s>(&self, bytes: &[u8]) -> Decoder<'s> {
        Decoder {
            r: Reader::from_bytes(bytes),
            file: self.file.clone(),
            path: self.path.clone(),
            depth: self.depth,
            keys: Vec::new(),
            long_keys: Vec::new(),
        }
    }

    /// `read` over `bytes` captured at this decoder's position (through
    /// [`Decoder::sub`]), which must take them whole.
    pub fn decode_captured<T>(
        &self,
        bytes: &[u8],
        read: impl FnOnce(&mut Decoder<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut sub = self.sub(bytes);
        let value = read(&mut sub)?;
        sub.r.finish().map_err(|e| sub.msgpack(e))?;
        Ok(value)
    }

    pub fn file(&self) -> Option<&std::path::Path> {
        self.file.as_deref()
    }

    /// Where the decoder is, for an error.
    pub fn at(&self) -> Location {
        let mut path = String::new();
        for seg in &self.path {
            match seg {
                Seg::Key(k) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                }
                Seg::Index(i) => path.push_str(&format!("[{i}]")),
                Seg::Name(n) => path.push_str(&format!("[{n:?}]")),
            }
        }
        Location {
            file: self.file().map(std::path::Path::to_path_buf),
            path,
        }
    }

    pub fn push_key(&mut self, key: &'static str) {
        self.path.push(Seg::Key(key));
    }
    pub fn push_index(&mut self, i: usize) {
        self.path.push(Seg::Index(i));
    }
    pub fn push_name(&mut self, name: &str) {
        self.path.push(Seg::Name(name.into()));
    }
    pub fn pop(&mut self) {
        self.path.pop();
    }

    /// Runs `f` one nesting level deeper, refusing to go past [`MAX_DEPTH`].
    pub fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(CatalogError::TooDeep {
                at: self.at(),
                limit: MAX_DEPTH,
            });
        }
        self.depth += 1;
        let out = f(self);
        self.depth -= 1;
        out
    }

    pub fn msgpack(&self, e: MsgpackError) -> CatalogError {
        CatalogError::Msgpack {
            at: self.at(),
            source: e,
        }
    }

    pub fn invalid(&self, problem: impl Into<String>) -> CatalogError {
        CatalogError::Invalid {
            at: self.at(),
            problem: problem.into(),
        }
    }

    pub fn unknown(&self, what: &'static str, name: &str) -> CatalogError {
        CatalogError::UnknownType {
            at: self.at(),
            what,
            name: name.to_string(),
        }
    }

    pub fn missing(&self, key: &'static str) -> CatalogError {
        CatalogError::MissingKey { at: self.at(), key }
    }

    pub fn map_len(&mut self) -> Result<usize> {
        self.r.map_len().map_err(|e| self.msgpack(e))
    }
    pub fn array_len(&mut self) -> Result<usize> {
        self.r.array_len().map_err(|e| self.msgpack(e))
    }
    pub fn string(&mut self) -> Result<String> {
        match self.r.str() {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(self.msgpack(e)),
        }
    }
    pub fn boxed_str(&mut self) -> Result<Box<str>> {
        match self.r.str() {
            Ok(s) => Ok(s.into()),
            Err(e) => Err(self.msgpack(e)),
        }
    }
    pub fn u64(&mut self) -> Result<u64> {
        self.r.u64().map_err(|e| self.msgpack(e))
    }
    pub fn u32(&mut self) -> Result<u32> {
        self.r.u32().map_err(|e| self.msgpack(e))
    }
    pub fn i64(&mut self) -> Result<i64> {
        self.r.i64().map_err(|e| self.msgpack(e))
    }
    pub fn i32(&mut self) -> Result<i32> {
        self.r.i32().map_err(|e| self.msgpack(e))
    }
    pub fn f64(&mut self) -> Result<f64> {
        self.r.f64().map_err(|e| self.msgpack(e))
    }
    pub fn bool(&mut self) -> Result<bool> {
        self.r.bool().map_err(|e| self.msgpack(e))
    }
    pub fn skip(&mut self) -> Result<()> {
        self.r.skip().map_err(|e| self.msgpack(e))
    }
    pub fn peek(&mut self) -> Result<Kind> {
        self.r.peek().map_err(|e| self.msgpack(e))
    }

    /// A map key: a string, or a non-negative integer (which Tensile turns
    /// into its decimal text).
    pub fn key(&mut self) -> Result<Key> {
        let mut key = Key {
            inline: [0; 48],
            len: 0,
            heap: None,
        };
        if self.peek()? == Kind::Int {
            key.heap = Some(self.u64()?.to_string());
            return Ok(key);
        }
        let s = match self.r.str_bytes() {
            Ok(s) => s,
            Err(e) => return Err(self.msgpack(e)),
        };
        if s.len() <= key.inline.len() {
            key.inline[..s.len()].copy_from_slice(s);
            key.len = s.len();
        } else {
            key.heap = Some(
                String::from_utf8(s.to_vec())
                    .map_err(|_| self.invalid("a map key is not UTF-8"))?,
            );
        }
        Ok(key)
    }

    /// A map key as owned text.
    pub fn key_string(&mut self) -> Result<String> {
        let key = self.key()?;
        key.text()
            .map(str::to_string)
            .ok_or_else(|| self.invalid("a map key is not UTF-8"))
    }

    /// Reads a map key: whether it is `want` (no allocation).
    fn key_is(&mut self, want: &str) -> Result<bool> {
        let key = self.key()?;
        match key.text() {
            Some(k) => Ok(k == want),
            None => Err(self.invalid("a map key is not UTF-8")),
        }
    }

    /// Opens a map tagged by `type` (see the module doc): the type, and how
    /// many entries the caller reads next. When `type` is not first, the
    /// entries before it are passed over once to find it and then read
    /// again in place (the reader rewinds; nothing is copied), and the
    /// `type` entry itself is among the entries the caller reads (and
    /// skips, as it claims no such key).
    pub fn typed(&mut self) -> Result<Typed> {
        let len = self.map_len()?;
        if len == 0 {
            return Err(self.missing("type"));
        }
        self.r.mark();
        if self.key_is("type")? {
            self.r.unmark();
            let ty = TypeName::read(self)?;
            return Ok(Typed { ty, len: len - 1 });
        }
        let found = (|| {
            self.skip()?;
            for _ in 1..len {
                if self.key_is("type")? {
                    return TypeName::read(self).map(Some);
                }
                self.skip()?;
            }
            Ok(None)
        })();
        self.r.rewind();
        match found? {
            Some(ty) => Ok(Typed { ty, len }),
            None => Err(self.missing("type")),
        }
    }
}

impl<'r> Decoder<'r> {
    /// Reads the array under `key`, each element with `f`, keeping the
    /// path (`key[i]`) for errors.
    pub fn array<T>(
        &mut self,
        key: &'static str,
        mut f: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.push_key(key);
        let n = self.array_len()?;
        // `n` is the input's claim; elements arrive only as bytes do.
        let mut v = Vec::with_capacity(self.r.reservation(n).min(1024));
        for i in 0..n {
            self.push_index(i);
            v.push(f(self)?);
            self.pop();
        }
        self.pop();
        Ok(v)
    }
}

/// Reads the fields of a map with a closure per key; keys the closure does
/// not claim (it returns `false`) are skipped, as Tensile ignores them. A
/// claimed key that appears twice is an error
/// ([`CatalogError::DuplicateKey`]).
#[inline]
pub fn fields<'r>(
    d: &mut Decoder<'r>,
    len: usize,
    f: impl FnMut(&mut Decoder<'r>, &str) -> Result<bool>,
) -> Result<()> {
    fields_after(d, len, &[], f)
}

/// [`fields`] for the rest of a map whose first entries, `read`, the
/// caller has already read (by their bytes): a repeat of one of those is
/// an error too.
pub fn fields_after<'r>(
    d: &mut Decoder<'r>,
    len: usize,
    read: &[&str],
    mut f: impl FnMut(&mut Decoder<'r>, &str) -> Result<bool>,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    // A map of one entry cannot repeat a key (predicates and most library
    // nodes have one left after `type`).
    let check = len + read.len() > 1;
    let outer = (d.keys.len(), d.long_keys.len());
    // A 1024-bit filter over the claimed keys: a key whose bit is clear is
    // new without looking at the others.
    let mut filter = [0u64; 16];
    for k in read {
        d.note_key(k.as_bytes(), &mut filter, outer.0);
    }
    let result = (|| {
        for _ in 0..len {
            let key = d.key()?;
            let Some(k) = key.text() else {
                return Err(d.invalid("a map key is not UTF-8"));
            };
            // Only a key the closure claims can matter twice (a skipped
            // one is skipped again), so only those are remembered; a
            // repeat is refused after its value was read, before anything
            // the load built is used.
            if f(d, k)? {
                if check && d.note_key(k.as_bytes(), &mut filter, outer.0) {
                    return Err(CatalogError::DuplicateKey {
                        at: d.at(),
                        key: k.to_string(),
                    });
                }
            } else {
                d.skip()?;
            }
        }
        Ok(())
    })();
    d.keys.truncate(outer.0);
    d.long_keys.truncate(outer.1);
    result
}

impl Decoder<'_> {
    /// Records `key` as claimed in the current map (whose keys start at
    /// `first` in the stack); true if it was claimed there already.
    #[inline]
    fn note_key(&mut self, key: &[u8], filter: &mut [u64; 16], first: usize) -> bool {
        let seen = SeenKey::new(key, self.long_keys.len());
        let bit = seen.bit();
        let (word, mask) = (bit / 64, 1u64 << (bit % 64));
        if filter[word] & mask != 0 {
            let long = &self.long_keys;
            let same = |k: &SeenKey| {
                (k.head, k.tail, k.len) == (seen.head, seen.tail, seen.len)
                    && (key.len() <= SeenKey::WHOLE
                        || &long[k.start as usize..k.start as usize + key.len()] == key)
            };
            if self.keys[first..].iter().any(same) {
                return true;
            }
        }
        filter[word] |= mask;
        self.keys.push(seen);
        if key.len() > SeenKey::WHOLE {
            self.long_keys.extend_from_slice(key);
        }
        false
    }
}

/// Reads a map's remaining `len` entries for the one field `key` (others
/// are skipped); a missing `key` is an error naming it.
pub fn field<'r, T>(
    d: &mut Decoder<'r>,
    len: usize,
    key: &'static str,
    mut read: impl FnMut(&mut Decoder<'r>) -> Result<T>,
) -> Result<T> {
    let mut out = None;
    fields(d, len, |d, k| {
        if k != key {
            return Ok(false);
        }
        out = Some(read(d)?);
        Ok(true)
    })?;
    out.ok_or_else(|| d.missing(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msgpack::Writer;

    /// Keys of every length up to 70, many sharing their first and last
    /// 16 bytes (those longer than 32 differ only in the middle, which
    /// the remembered form does not hold).
    fn keys() -> Vec<String> {
        let mut keys = Vec::new();
        for len in 0..=70usize {
            for c in ['x', 'y'] {
                let mut k: Vec<char> = vec!['a'; len];
                if len > 0 {
                    k[len / 2] = c;
                }
                keys.push(k.into_iter().collect());
            }
        }
        keys.dedup();
        keys
    }

    /// Claims every key of a map of `keys` (each with value 0).
    fn claim_all(keys: &[&str], read: &[&str]) -> Result<usize> {
        let mut w = Writer::new();
        for k in keys {
            w.str(k);
            w.u64(0);
        }
        let mut d = Decoder::new(Reader::from_bytes(&w.out), None);
        let mut n = 0;
        fields_after(&mut d, keys.len(), read, |d, _| {
            d.skip()?;
            n += 1;
            Ok(true)
        })?;
        Ok(n)
    }

    #[test]
    fn distinct_keys_pass_and_each_repeat_is_refused() {
        let keys = keys();
        let all: Vec<&str> = keys.iter().map(String::as_str).collect();
        assert_eq!(claim_all(&all, &[]).expect("distinct keys"), all.len());
        for (i, k) in all.iter().enumerate() {
            let mut repeated = all.clone();
            repeated.insert((i * 7) % repeated.len(), k);
            match claim_all(&repeated, &[]) {
                Err(CatalogError::DuplicateKey { key, .. }) => assert_eq!(key, *k),
                other => panic!("{k:?} twice: {other:?}"),
            }
        }
    }

    #[test]
    fn keys_read_before_count_and_one_entry_cannot_repeat() {
        assert_eq!(claim_all(&["index"], &[]).expect("one entry"), 1);
        assert_eq!(claim_all(&["speed"], &["key", "index"]).expect("new"), 1);
        assert!(matches!(
            claim_all(&["index"], &["key", "index"]),
            Err(CatalogError::DuplicateKey { key, .. }) if key == "index"
        ));
    }
}
