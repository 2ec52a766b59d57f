//! A streaming MessagePack reader and a writer, for solution catalogs.
//!
//! The code-object reader in `aqueduct-abi` decodes its small metadata note
//! into a tree. A Tensile catalog is another matter: rocBLAS's is 117 MB of
//! MessagePack describing ~57 000 solutions, and a tree of it costs several
//! times the file (Python's `msgpack.unpackb` peaks near 750 MB). So catalogs
//! are read with a pull parser: the model's decoder asks for "a map header",
//! "a string", "an integer" in the order it expects them, and builds its own
//! compact structures straight from the bytes. Nothing but the model stays.
//!
//! The input is read through a window that refills from any [`Read`]er, so a
//! file is never held whole in memory either; a string is borrowed from the
//! window until the next call. Every read is bounds-checked and every error
//! carries the byte offset where it happened. Skipping a value is iterative,
//! so hostile nesting cannot exhaust the stack; the model's own recursion is
//! bounded by its caller.
//!
//! Format reference: the MessagePack specification, "Formats".

use std::fmt;
use std::io::{self, Read};

/// What went wrong while reading MessagePack, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MsgpackError {
    /// Byte offset of the value that could not be read.
    pub offset: u64,
    /// What was wrong there.
    pub kind: MsgpackErrorKind,
}

/// The ways reading MessagePack fails ([`MsgpackError::kind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MsgpackErrorKind {
    /// The input ended inside a value.
    Truncated,
    /// A value of another type stood where `expected` was needed.
    Unexpected {
        /// What the decoder asked for, e.g. "a map".
        expected: &'static str,
        /// What the input holds, e.g. "a string".
        found: &'static str,
    },
    /// An integer does not fit the type asked for.
    OutOfRange {
        /// The type asked for, e.g. "an unsigned 32-bit integer".
        expected: &'static str,
    },
    /// A string is not UTF-8.
    InvalidUtf8,
    /// The reserved marker byte 0xc1.
    Reserved,
    /// Bytes follow the last value.
    TrailingBytes,
    /// The underlying reader failed.
    Io(String),
}

impl fmt::Display for MsgpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            MsgpackErrorKind::Truncated => write!(f, "input ends inside a value"),
            MsgpackErrorKind::Unexpected { expected, found } => {
                write!(f, "expected {expected}, found {found}")
            }
            MsgpackErrorKind::OutOfRange { expected } => {
                write!(f, "integer out of range for {expected}")
            }
            MsgpackErrorKind::InvalidUtf8 => write!(f, "string is not valid UTF-8"),
            MsgpackErrorKind::Reserved => write!(f, "reserved marker byte 0xc1"),
            MsgpackErrorKind::TrailingBytes => write!(f, "bytes follow the last value"),
            MsgpackErrorKind::Io(e) => write!(f, "read failed: {e}"),
        }?;
        write!(f, " (at byte {})", self.offset)
    }
}

impl std::error::Error for MsgpackError {}

/// The type of the next value, as far as a decoder needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `nil` (0xc0).
    Nil,
    /// `true` or `false`.
    Bool,
    /// Any integer encoding (fixint, `uint 8..64`, `int 8..64`).
    Int,
    /// `float 32` or `float 64`.
    Float,
    /// A `str` family value.
    Str,
    /// A `bin` family value.
    Bin,
    /// An `array` family value.
    Array,
    /// A `map` family value.
    Map,
    /// An `ext` family value.
    Ext,
}

impl Kind {
    /// The kind with an article, for error messages: "a map", "nil", ...
    pub fn name(self) -> &'static str {
        match self {
            Kind::Nil => "nil",
            Kind::Bool => "a boolean",
            Kind::Int => "an integer",
            Kind::Float => "a float",
            Kind::Str => "a string",
            Kind::Bin => "binary data",
            Kind::Array => "an array",
            Kind::Map => "a map",
            Kind::Ext => "an extension value",
        }
    }
}

/// Classifies a marker byte; `None` for the reserved 0xc1.
fn kind_of(marker: u8) -> Option<Kind> {
    Some(match marker {
        0x00..=0x7f | 0xe0..=0xff | 0xcc..=0xd3 => Kind::Int,
        0x80..=0x8f | 0xde | 0xdf => Kind::Map,
        0x90..=0x9f | 0xdc | 0xdd => Kind::Array,
        0xa0..=0xbf | 0xd9..=0xdb => Kind::Str,
        0xc0 => Kind::Nil,
        0xc2 | 0xc3 => Kind::Bool,
        0xc4..=0xc6 => Kind::Bin,
        0xc7..=0xc9 | 0xd4..=0xd8 => Kind::Ext,
        0xca | 0xcb => Kind::Float,
        0xc1 => return None,
    })
}

/// Bytes kept in the window when reading from a stream. Big enough that
/// refills are rare, small enough not to matter next to the model.
const WINDOW: usize = 1 << 20;

/// Elements of a collection read from a stream that room is made for up
/// front (see [`Reader::reservation`]).
pub const STREAM_RESERVE: usize = 1 << 16;

/// A pull parser over a byte slice or a stream.
pub struct Reader<'r> {
    source: Option<Box<dyn Read + 'r>>,
    buf: Vec<u8>,
    pos: usize,
    /// Bytes of `buf` that hold input (the rest is spare room).
    end: usize,
    /// Offset of `buf[0]` in the whole input.
    base: u64,
    /// While capturing: the bytes consumed so far that have left the
    /// window, and where in the window the rest starts.
    capture: Option<(Vec<u8>, usize)>,
    /// A position [`Reader::rewind`] returns to: the window keeps every
    /// byte from here on (see [`Reader::mark`]).
    mark: Option<usize>,
}

impl<'r> Reader<'r> {
    /// Reads from bytes already in memory (they are copied once).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Reader {
            source: None,
            buf: bytes.to_vec(),
            pos: 0,
            end: bytes.len(),
            base: 0,
            capture: None,
            mark: None,
        }
    }

    /// Reads from a stream through a window of about a megabyte.
    pub fn from_reader(source: impl Read + 'r) -> Self {
        Reader {
            source: Some(Box::new(source)),
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            capture: None,
            mark: None,
        }
    }

    /// Remembers the current position, so that what is read next can be
    /// read again after [`Reader::rewind`]. While the mark is set the window
    /// keeps every byte from it, so it grows only by bytes that really
    /// arrived. One mark at a time: a second one replaces the first.
    pub fn mark(&mut self) {
        self.mark = Some(self.pos);
    }

    /// Returns to the mark and clears it; without a mark, nothing happens.
    pub fn rewind(&mut self) {
        if let Some(mark) = self.mark.take() {
            self.pos = mark;
        }
    }

    /// Clears the mark without moving.
    pub fn unmark(&mut self) {
        self.mark = None;
    }

    /// How many elements of a collection claiming `claimed` of them to make
    /// room for up front: no more than the input could still hold (each
    /// element takes at least a byte), so a forged length costs nothing
    /// before its elements arrive. A stream's length is unknown: room for
    /// [`STREAM_RESERVE`] elements, and growth as they arrive.
    pub fn reservation(&self, claimed: usize) -> usize {
        let left = match self.source {
            None => self.end - self.pos,
            Some(_) => STREAM_RESERVE,
        };
        claimed.min(left)
    }

    /// Offset of the next byte to be read.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn error(&self, kind: MsgpackErrorKind) -> MsgpackError {
        MsgpackError {
            offset: self.offset(),
            kind,
        }
    }

    /// Makes at least `n` bytes available at `pos`, or reports truncation.
    #[inline]
    fn ensure(&mut self, n: usize) -> Result<(), MsgpackError> {
        if self.end - self.pos >= n {
            return Ok(());
        }
        self.refill(n)
    }

    #[cold]
    fn refill(&mut self, n: usize) -> Result<(), MsgpackError> {
        let Some(source) = self.source.as_mut() else {
            return Err(self.error(MsgpackErrorKind::Truncated));
        };
        // Slide the unread tail (from the mark, if one is set) to the front,
        // then read until `n` bytes are there (a string longer than the
        // window grows it) or the input ends.
        let keep = self.mark.unwrap_or(self.pos);
        if let Some((out, start)) = &mut self.capture {
            out.extend_from_slice(&self.buf[*start..self.pos]);
            *start = self.pos - keep;
        }
        self.buf.copy_within(keep..self.end, 0);
        self.end -= keep;
        self.base += keep as u64;
        self.pos -= keep;
        if let Some(mark) = &mut self.mark {
            *mark = 0;
        }
        while self.end - self.pos < n {
            // Grow by at most a window at a time, so that a forged length
            // costs memory only as fast as real bytes arrive.
            if self.buf.len() == self.end {
                self.buf.resize(self.buf.len() + WINDOW, 0);
            }
            let read = loop {
                match source.read(&mut self.buf[self.end..]) {
                    Ok(r) => break r,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(self.error(MsgpackErrorKind::Io(e.to_string()))),
                }
            };
            if read == 0 {
                return Err(self.error(MsgpackErrorKind::Truncated));
            }
            self.end += read;
        }
        Ok(())
    }

    #[inline]
    fn byte(&mut self) -> Result<u8, MsgpackError> {
        self.ensure(1)?;
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn array_of<const N: usize>(&mut self) -> Result<[u8; N], MsgpackError> {
        self.ensure(N)?;
        let mut out = [0; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    /// The bytes ahead, `want` of them when the input has that many (all
    /// that is left otherwise): for a caller that parses a run of small
    /// values itself and [`Reader::consume`]s what it used.
    #[inline]
    pub fn ahead(&mut self, want: usize) -> &[u8] {
        // Short only at the input's end (or on a read error, which the
        // next ordinary read reports).
        let _ = self.ensure(want);
        &self.buf[self.pos..self.end]
    }

    /// Consumes `n` bytes of what [`Reader::ahead`] returned.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        assert!(n <= self.end - self.pos, "consumed past the bytes ahead");
        self.pos += n;
    }

    /// Consumes `literal` if the input continues with exactly those bytes
    /// (a fast path for keys the writer always puts in the same order).
    #[inline]
    pub fn literal(&mut self, literal: &[u8]) -> bool {
        if self.ensure(literal.len()).is_err() {
            return false;
        }
        if &self.buf[self.pos..self.pos + literal.len()] == literal {
            self.pos += literal.len();
            return true;
        }
        false
    }

    /// The kind of the next value, without consuming it.
    pub fn peek(&mut self) -> Result<Kind, MsgpackError> {
        self.ensure(1)?;
        kind_of(self.buf[self.pos]).ok_or_else(|| self.error(MsgpackErrorKind::Reserved))
    }

    fn unexpected(&self, expected: &'static str, marker: u8) -> MsgpackError {
        // The marker was consumed; point at it.
        let offset = self.offset() - 1;
        match kind_of(marker) {
            Some(kind) => MsgpackError {
                offset,
                kind: MsgpackErrorKind::Unexpected {
                    expected,
                    found: kind.name(),
                },
            },
            None => MsgpackError {
                offset,
                kind: MsgpackErrorKind::Reserved,
            },
        }
    }

    /// True when the input is exhausted (only a stream needs to look).
    pub fn at_end(&mut self) -> Result<bool, MsgpackError> {
        match self.ensure(1) {
            Ok(()) => Ok(false),
            Err(MsgpackError {
                kind: MsgpackErrorKind::Truncated,
                ..
            }) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Fails unless the input is exhausted.
    pub fn finish(&mut self) -> Result<(), MsgpackError> {
        if self.at_end()? {
            Ok(())
        } else {
            Err(self.error(MsgpackErrorKind::TrailingBytes))
        }
    }

    /// Consumes a nil if one is next.
    pub fn nil(&mut self) -> Result<bool, MsgpackError> {
        self.ensure(1)?;
        if self.buf[self.pos] == 0xc0 {
            self.pos += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// Reads a map header: the number of key-value pairs that follow.
    pub fn map_len(&mut self) -> Result<usize, MsgpackError> {
        let m = self.byte()?;
        match m {
            0x80..=0x8f => Ok((m & 0x0f) as usize),
            0xde => Ok(u16::from_be_bytes(self.array_of()?) as usize),
            0xdf => Ok(u32::from_be_bytes(self.array_of()?) as usize),
            _ => Err(self.unexpected("a map", m)),
        }
    }

    /// Reads an array header: the number of elements that follow.
    pub fn array_len(&mut self) -> Result<usize, MsgpackError> {
        let m = self.byte()?;
        match m {
            0x90..=0x9f => Ok((m & 0x0f) as usize),
            0xdc => Ok(u16::from_be_bytes(self.array_of()?) as usize),
            0xdd => Ok(u32::from_be_bytes(self.array_of()?) as usize),
            _ => Err(self.unexpected("an array", m)),
        }
    }

    fn str_len(&mut self) -> Result<usize, MsgpackError> {
        let m = self.byte()?;
        match m {
            0xa0..=0xbf => Ok((m & 0x1f) as usize),
            0xd9 => Ok(self.byte()? as usize),
            0xda => Ok(u16::from_be_bytes(self.array_of()?) as usize),
            0xdb => Ok(u32::from_be_bytes(self.array_of()?) as usize),
            _ => Err(self.unexpected("a string", m)),
        }
    }

    /// A string's bytes, not checked for UTF-8 (for map keys, which are
    /// compared with known names and checked once by the caller).
    pub fn str_bytes(&mut self) -> Result<&[u8], MsgpackError> {
        let len = self.str_len()?;
        self.ensure(len)?;
        let bytes = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(bytes)
    }

    /// A string, borrowed from the window until the next call.
    pub fn str(&mut self) -> Result<&str, MsgpackError> {
        let start = self.offset();
        let len = self.str_len()?;
        self.ensure(len)?;
        let bytes = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        std::str::from_utf8(bytes).map_err(|_| MsgpackError {
            offset: start,
            kind: MsgpackErrorKind::InvalidUtf8,
        })
    }

    /// Reads a boolean.
    pub fn bool(&mut self) -> Result<bool, MsgpackError> {
        match self.byte()? {
            0xc2 => Ok(false),
            0xc3 => Ok(true),
            m => Err(self.unexpected("a boolean", m)),
        }
    }

    /// Any integer encoding, widened to i128 so that every u64 and i64 fits.
    fn int_wide(&mut self, expected: &'static str) -> Result<i128, MsgpackError> {
        let m = self.byte()?;
        Ok(match m {
            0x00..=0x7f => m as i128,
            0xe0..=0xff => (m as i8) as i128,
            0xcc => self.byte()? as i128,
            0xcd => u16::from_be_bytes(self.array_of()?) as i128,
            0xce => u32::from_be_bytes(self.array_of()?) as i128,
            0xcf => u64::from_be_bytes(self.array_of()?) as i128,
            0xd0 => (self.byte()? as i8) as i128,
            0xd1 => i16::from_be_bytes(self.array_of()?) as i128,
            0xd2 => i32::from_be_bytes(self.array_of()?) as i128,
            0xd3 => i64::from_be_bytes(self.array_of()?) as i128,
            _ => return Err(self.unexpected(expected, m)),
        })
    }

    fn int_as<T: TryFrom<i128>>(&mut self, expected: &'static str) -> Result<T, MsgpackError> {
        let start = self.offset();
        let v = self.int_wide(expected)?;
        T::try_from(v).map_err(|_| MsgpackError {
            offset: start,
            kind: MsgpackErrorKind::OutOfRange { expected },
        })
    }

    /// Reads an integer of any encoding that fits an `i64`
    /// (`OutOfRange` otherwise).
    pub fn i64(&mut self) -> Result<i64, MsgpackError> {
        self.int_as("a 64-bit signed integer")
    }

    /// Reads an integer of any encoding that fits a `u64`.
    pub fn u64(&mut self) -> Result<u64, MsgpackError> {
        self.int_as("an unsigned 64-bit integer")
    }

    /// Reads an integer of any encoding that fits a `u32`.
    pub fn u32(&mut self) -> Result<u32, MsgpackError> {
        self.int_as("an unsigned 32-bit integer")
    }

    /// Reads an integer of any encoding that fits an `i32`.
    pub fn i32(&mut self) -> Result<i32, MsgpackError> {
        self.int_as("a 32-bit signed integer")
    }

    /// A float; integers are accepted too (YAML writes `1` for `1.0`).
    pub fn f64(&mut self) -> Result<f64, MsgpackError> {
        self.ensure(1)?;
        match self.buf[self.pos] {
            0xca => {
                self.pos += 1;
                Ok(f32::from_be_bytes(self.array_of()?) as f64)
            }
            0xcb => {
                self.pos += 1;
                Ok(f64::from_be_bytes(self.array_of()?))
            }
            _ => Ok(self.int_wide("a number")? as f64),
        }
    }

    /// Skips one whole value, however deeply nested, without recursion.
    pub fn skip(&mut self) -> Result<(), MsgpackError> {
        let mut pending: u64 = 1;
        while pending > 0 {
            pending -= 1;
            let m = self.byte()?;
            let skip_bytes = match m {
                0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => 0,
                0x80..=0x8f => {
                    pending += 2 * (m & 0x0f) as u64;
                    0
                }
                0x90..=0x9f => {
                    pending += (m & 0x0f) as u64;
                    0
                }
                0xa0..=0xbf => (m & 0x1f) as usize,
                0xc1 => {
                    self.pos -= 1;
                    return Err(self.error(MsgpackErrorKind::Reserved));
                }
                0xc4 | 0xd9 => self.byte()? as usize,
                0xc5 | 0xda => u16::from_be_bytes(self.array_of()?) as usize,
                0xc6 | 0xdb => u32::from_be_bytes(self.array_of()?) as usize,
                0xc7 => 1 + self.byte()? as usize,
                0xc8 => 1 + u16::from_be_bytes(self.array_of()?) as usize,
                0xc9 => 1 + u32::from_be_bytes(self.array_of()?) as usize,
                0xca => 4,
                0xcb => 8,
                0xcc | 0xd0 => 1,
                0xcd | 0xd1 => 2,
                0xce | 0xd2 => 4,
                0xcf | 0xd3 => 8,
                0xd4 => 2,
                0xd5 => 3,
                0xd6 => 5,
                0xd7 => 9,
                0xd8 => 17,
                0xdc => {
                    pending += u16::from_be_bytes(self.array_of()?) as u64;
                    0
                }
                0xdd => {
                    pending += u32::from_be_bytes(self.array_of()?) as u64;
                    0
                }
                0xde => {
                    pending += 2 * u16::from_be_bytes(self.array_of()?) as u64;
                    0
                }
                0xdf => {
                    pending += 2 * u32::from_be_bytes(self.array_of()?) as u64;
                    0
                }
            };
            self.skip_bytes(skip_bytes)?;
        }
        Ok(())
    }

    /// Consumes one whole value and returns its encoded bytes.
    pub fn capture(&mut self) -> Result<Vec<u8>, MsgpackError> {
        let mut out = Vec::new();
        self.capture_into(&mut out)?;
        Ok(out)
    }

    /// Like [`Reader::capture`], appending to `out` (whose allocation a
    /// caller can reuse).
    pub fn capture_into(&mut self, out: &mut Vec<u8>) -> Result<(), MsgpackError> {
        self.capture = Some((std::mem::take(out), self.pos));
        let skipped = self.skip();
        let (taken, start) = self.capture.take().unwrap_or_default();
        *out = taken;
        skipped?;
        out.extend_from_slice(&self.buf[start..self.pos]);
        Ok(())
    }

    fn skip_bytes(&mut self, mut n: usize) -> Result<(), MsgpackError> {
        // Skip in window-sized steps so a forged length cannot make the
        // window grow to it.
        while n > 0 {
            let step = n.min(WINDOW);
            self.ensure(step)?;
            self.pos += step;
            n -= step;
        }
        Ok(())
    }

    /// Reads one whole value as a [`Value`] tree (for small subtrees only:
    /// YAML output and diagnostics).
    pub fn value(&mut self, depth: usize) -> Result<Value, MsgpackError> {
        if depth == 0 {
            return Err(self.error(MsgpackErrorKind::Unexpected {
                expected: "shallower nesting",
                found: "a value nested too deeply",
            }));
        }
        Ok(match self.peek()? {
            Kind::Nil => {
                self.pos += 1;
                Value::Nil
            }
            Kind::Bool => Value::Bool(self.bool()?),
            Kind::Int => {
                let start = self.offset();
                let v = self.int_wide("an integer")?;
                if v < 0 {
                    Value::Int(v as i64)
                } else {
                    Value::UInt(u64::try_from(v).map_err(|_| MsgpackError {
                        offset: start,
                        kind: MsgpackErrorKind::OutOfRange {
                            expected: "a 64-bit integer",
                        },
                    })?)
                }
            }
            Kind::Float => Value::Float(self.f64()?),
            Kind::Str => Value::Str(self.str()?.to_owned()),
            Kind::Array => {
                let n = self.array_len()?;
                let mut items = Vec::with_capacity(self.reservation(n).min(4096));
                for _ in 0..n {
                    items.push(self.value(depth - 1)?);
                }
                Value::Array(items)
            }
            Kind::Map => {
                let n = self.map_len()?;
                let mut entries = Vec::with_capacity(self.reservation(n).min(4096));
                for _ in 0..n {
                    let k = self.value(depth - 1)?;
                    let v = self.value(depth - 1)?;
                    entries.push((k, v));
                }
                Value::Map(entries)
            }
            kind @ (Kind::Bin | Kind::Ext) => {
                return Err(self.error(MsgpackErrorKind::Unexpected {
                    expected: "a catalog value",
                    found: kind.name(),
                }));
            }
        })
    }
}

/// An owned MessagePack value: what YAML and small subtrees map onto.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `nil`.
    Nil,
    /// A boolean.
    Bool(bool),
    /// A non-negative integer.
    UInt(u64),
    /// A negative integer (read values); written with the smallest signed
    /// encoding.
    Int(i64),
    /// A float (`float 32` read values are widened); written as `float 64`.
    Float(f64),
    /// A string.
    Str(String),
    /// An array, elements in order.
    Array(Vec<Value>),
    /// A map: key-value pairs in document order.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The value under string key `key` in a map (the first, if repeated);
    /// `None` for a missing key or a value that is no map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Encodes the value.
    pub fn write(&self, w: &mut Writer) {
        match self {
            Value::Nil => w.nil(),
            Value::Bool(b) => w.bool(*b),
            Value::UInt(v) => w.u64(*v),
            Value::Int(v) => w.i64(*v),
            Value::Float(v) => w.f64(*v),
            Value::Str(s) => w.str(s),
            Value::Array(items) => {
                w.array(items.len());
                for item in items {
                    item.write(w);
                }
            }
            Value::Map(entries) => {
                w.map(entries.len());
                for (k, v) in entries {
                    k.write(w);
                    v.write(w);
                }
            }
        }
    }
}

/// A MessagePack encoder with the smallest encoding for every integer, and
/// float64 for every float, as Python's `msgpack.packb` writes them.
#[derive(Default)]
pub struct Writer {
    /// The encoded bytes so far.
    pub out: Vec<u8>,
}

impl Writer {
    /// An empty output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `nil`.
    pub fn nil(&mut self) {
        self.out.push(0xc0);
    }

    /// Appends a boolean.
    pub fn bool(&mut self, b: bool) {
        self.out.push(if b { 0xc3 } else { 0xc2 });
    }

    /// Appends `v` in its smallest encoding (positive fixint up to 127).
    pub fn u64(&mut self, v: u64) {
        match v {
            0..=0x7f => self.out.push(v as u8),
            0x80..=0xff => self.out.extend_from_slice(&[0xcc, v as u8]),
            0x100..=0xffff => {
                self.out.push(0xcd);
                self.out.extend_from_slice(&(v as u16).to_be_bytes());
            }
            0x1_0000..=0xffff_ffff => {
                self.out.push(0xce);
                self.out.extend_from_slice(&(v as u32).to_be_bytes());
            }
            _ => {
                self.out.push(0xcf);
                self.out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }

    /// Appends `v` in its smallest encoding (as unsigned when
    /// non-negative, negative fixint down to -32).
    pub fn i64(&mut self, v: i64) {
        if v >= 0 {
            return self.u64(v as u64);
        }
        if v >= -32 {
            self.out.push(v as i8 as u8);
        } else if v >= i8::MIN as i64 {
            self.out.extend_from_slice(&[0xd0, v as i8 as u8]);
        } else if v >= i16::MIN as i64 {
            self.out.push(0xd1);
            self.out.extend_from_slice(&(v as i16).to_be_bytes());
        } else if v >= i32::MIN as i64 {
            self.out.push(0xd2);
            self.out.extend_from_slice(&(v as i32).to_be_bytes());
        } else {
            self.out.push(0xd3);
            self.out.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// Appends `v` as `float 64`.
    pub fn f64(&mut self, v: f64) {
        self.out.push(0xcb);
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    /// Appends a string in the smallest `str` encoding.
    pub fn str(&mut self, s: &str) {
        let n = s.len();
        if n < 32 {
            self.out.push(0xa0 | n as u8);
        } else if n <= 0xff {
            self.out.extend_from_slice(&[0xd9, n as u8]);
        } else if n <= 0xffff {
            self.out.push(0xda);
            self.out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.out.push(0xdb);
            self.out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        self.out.extend_from_slice(s.as_bytes());
    }

    /// Appends an array header; the `n` elements are written next.
    pub fn array(&mut self, n: usize) {
        self.container(n, 0x90, 0xdc, 0xdd);
    }

    /// Appends a map header; the `n` key-value pairs are written next, key
    /// first.
    pub fn map(&mut self, n: usize) {
        self.container(n, 0x80, 0xde, 0xdf);
    }

    fn container(&mut self, n: usize, fix: u8, m16: u8, m32: u8) {
        if n < 16 {
            self.out.push(fix | n as u8);
        } else if n <= 0xffff {
            self.out.push(m16);
            self.out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.out.push(m32);
            self.out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
}

/// An integer at the start of `b`, read as [`Reader::i64`] reads one (any
/// encoding whose value fits an `i64`): its value and the bytes it takes.
/// `None` for any other value, or when `b` ends first. For callers that
/// parse a run of small values from [`Reader::ahead`].
#[inline]
pub fn i64_prefix(b: &[u8]) -> Option<(i64, usize)> {
    let (&m, rest) = b.split_first()?;
    fn be<const N: usize>(rest: &[u8]) -> Option<[u8; N]> {
        rest.get(..N)?.try_into().ok()
    }
    Some(match m {
        0x00..=0x7f => (i64::from(m), 1),
        0xe0..=0xff => (i64::from(m as i8), 1),
        0xcc => (i64::from(*rest.first()?), 2),
        0xcd => (i64::from(u16::from_be_bytes(be(rest)?)), 3),
        0xce => (i64::from(u32::from_be_bytes(be(rest)?)), 5),
        0xcf => (i64::try_from(u64::from_be_bytes(be(rest)?)).ok()?, 9),
        0xd0 => (i64::from(*rest.first()? as i8), 2),
        0xd1 => (i64::from(i16::from_be_bytes(be(rest)?)), 3),
        0xd2 => (i64::from(i32::from_be_bytes(be(rest)?)), 5),
        0xd3 => (i64::from_be_bytes(be(rest)?), 9),
        _ => return None,
    })
}

/// A float32 or float64 at the start of `b` (as an `f64`) and the bytes it
/// takes; `None` for anything else (where [`Reader::f64`] would also
/// take an integer) or when `b` ends first.
#[inline]
pub fn float_prefix(b: &[u8]) -> Option<(f64, usize)> {
    match *b.first()? {
        0xcb => Some((f64::from_be_bytes(b.get(1..9)?.try_into().ok()?), 9)),
        0xca => Some((f32::from_be_bytes(b.get(1..5)?.try_into().ok()?) as f64, 5)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_read_what_the_reader_reads() {
        // The writer's encodings of integers across every width and sign,
        // a u64 past i64, floats of both widths, the encodings the writer
        // does not use for these values (unsigned 8-bit for 5, signed for
        // 256), other values, and each of them cut short.
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for v in [
            i64::MIN,
            -(1 << 31) - 1,
            -129,
            -33,
            -32,
            -1,
            0,
            127,
            128,
            256,
            65_536,
            1 << 32,
            i64::MAX,
        ] {
            let mut w = Writer::new();
            w.i64(v);
            cases.push(w.out);
        }
        let mut w = Writer::new();
        w.u64(u64::MAX);
        cases.push(w.out);
        let mut w = Writer::new();
        w.f64(2.5);
        cases.push(w.out);
        cases.extend([
            vec![0xca, 0x40, 0x20, 0, 0],
            vec![0xcc, 0x05],
            vec![0xd1, 0x01, 0x00],
            vec![0xc0],
            vec![0xa1, b'x'],
        ]);
        for case in &cases {
            for cut in 1..=case.len() {
                let b = &case[..cut];
                let mut r = Reader::from_bytes(b);
                let want = r.i64().ok().map(|v| (v, r.offset() as usize));
                assert_eq!(i64_prefix(b), want, "{b:x?}");
                let mut r = Reader::from_bytes(b);
                let want = matches!(b[0], 0xca | 0xcb)
                    .then(|| r.f64().ok().map(|v| (v, r.offset() as usize)))
                    .flatten();
                assert_eq!(float_prefix(b), want, "{b:x?}");
            }
        }
    }

    /// A reader that hands out at most 3 bytes per call, to push every
    /// value across window refills.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(out.len()).min(3);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn sample() -> Vec<u8> {
        let mut w = Writer::new();
        w.map(3);
        w.str("name");
        w.str(&"x".repeat(300));
        w.str("ints");
        w.array(9);
        for v in [
            0,
            127,
            128,
            65_535,
            65_536,
            u32::MAX as i64 + 1,
            -1,
            -33,
            i64::MIN,
        ] {
            w.i64(v);
        }
        w.str("nested");
        w.array(2);
        w.f64(0.25);
        w.map(1);
        w.str("b");
        w.bool(true);
        w.out
    }

    #[test]
    fn values_round_trip_through_slices_and_trickling_streams() {
        let bytes = sample();
        let from_slice = Reader::from_bytes(&bytes).value(8).unwrap();
        let mut streamed = Reader::from_reader(Trickle(&bytes));
        let from_stream = streamed.value(8).unwrap();
        streamed.finish().unwrap();
        assert_eq!(from_slice, from_stream);
        let mut w = Writer::new();
        from_slice.write(&mut w);
        assert_eq!(w.out, bytes, "re-encoding must give the same bytes");
        let Value::Map(entries) = from_slice else {
            panic!("not a map")
        };
        assert_eq!(
            entries[1].1,
            Value::Array(vec![
                Value::UInt(0),
                Value::UInt(127),
                Value::UInt(128),
                Value::UInt(65_535),
                Value::UInt(65_536),
                Value::UInt(u32::MAX as u64 + 1),
                Value::Int(-1),
                Value::Int(-33),
                Value::Int(i64::MIN),
            ])
        );
    }

    #[test]
    fn capture_returns_the_exact_bytes_of_one_value_across_refills() {
        let bytes = sample();
        let mut twice = bytes.clone();
        twice.extend_from_slice(&bytes);
        let mut r = Reader::from_reader(Trickle(&twice));
        assert_eq!(r.capture().unwrap(), bytes);
        assert_eq!(r.capture().unwrap(), bytes);
        r.finish().unwrap();
    }

    #[test]
    fn integer_encodings_are_the_smallest_ones() {
        let enc = |v: i64| {
            let mut w = Writer::new();
            w.i64(v);
            w.out
        };
        assert_eq!(enc(5), [0x05]);
        assert_eq!(enc(-5), [0xfb]);
        assert_eq!(enc(200), [0xcc, 200]);
        assert_eq!(enc(-100), [0xd0, 0x9c]);
        assert_eq!(enc(1000), [0xcd, 0x03, 0xe8]);
        assert_eq!(enc(-1000), [0xd1, 0xfc, 0x18]);
    }

    #[test]
    fn skip_passes_over_every_kind_in_a_stream() {
        let bytes = sample();
        let mut r = Reader::from_reader(Trickle(&bytes));
        r.skip().unwrap();
        assert!(r.at_end().unwrap());
        // Extension and binary values are skipped too.
        let odd = [0x92, 0xd6, 0x01, 1, 2, 3, 4, 0xc4, 0x02, 0xaa, 0xbb];
        let mut r = Reader::from_bytes(&odd);
        r.skip().unwrap();
        r.finish().unwrap();
    }

    /// One value for each marker, from the MessagePack specification's
    /// format table: a length field says 2, elements are fixints, and the
    /// payload bytes are 0x55. None for the reserved 0xc1.
    fn example(m: u8) -> Option<Vec<u8>> {
        let payload = |n: usize| vec![0x55u8; n];
        let mut v = vec![m];
        match m {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => {}
            0x80..=0x8f => v.extend(std::iter::repeat_n(1, 2 * (m as usize & 0x0f))),
            0x90..=0x9f => v.extend(std::iter::repeat_n(1, m as usize & 0x0f)),
            0xa0..=0xbf => v.extend(payload(m as usize & 0x1f)),
            0xc1 => return None,
            // bin 8/16/32, str 8/16/32: length, bytes.
            0xc4 | 0xd9 => v.extend([2, 0x55, 0x55]),
            0xc5 | 0xda => v.extend([0, 2, 0x55, 0x55]),
            0xc6 | 0xdb => v.extend([0, 0, 0, 2, 0x55, 0x55]),
            // ext 8/16/32: length, type, bytes.
            0xc7 => v.extend([2, 7, 0x55, 0x55]),
            0xc8 => v.extend([0, 2, 7, 0x55, 0x55]),
            0xc9 => v.extend([0, 0, 0, 2, 7, 0x55, 0x55]),
            0xca => v.extend(payload(4)),
            0xcb => v.extend(payload(8)),
            0xcc | 0xd0 => v.extend(payload(1)),
            0xcd | 0xd1 => v.extend(payload(2)),
            0xce | 0xd2 => v.extend(payload(4)),
            0xcf | 0xd3 => v.extend(payload(8)),
            // fixext 1/2/4/8/16: type, bytes.
            0xd4 => v.extend([7, 0x55]),
            0xd5 => v.extend([7, 0x55, 0x55]),
            0xd6 => v.extend([7, 0x55, 0x55, 0x55, 0x55]),
            0xd7 => v.extend([7].into_iter().chain(payload(8))),
            0xd8 => v.extend([7].into_iter().chain(payload(16))),
            // array 16/32, map 16/32: count, elements.
            0xdc => v.extend([0, 2, 1, 1]),
            0xdd => v.extend([0, 0, 0, 2, 1, 1]),
            0xde => v.extend([0, 2, 1, 1, 1, 1]),
            0xdf => v.extend([0, 0, 0, 2, 1, 1, 1, 1]),
        }
        Some(v)
    }

    #[test]
    fn skip_passes_over_exactly_one_value_of_every_marker() {
        // Each marker's value inside an array, then a fixint 0x2a: from a
        // slice (window whole) and trickled (values cut by refills).
        for m in 0..=255u8 {
            let Some(one) = example(m) else { continue };
            let mut bytes = vec![0x93];
            for _ in 0..3 {
                bytes.extend_from_slice(&one);
            }
            bytes.push(0x2a);
            for mut r in [
                Reader::from_bytes(&bytes),
                Reader::from_reader(Trickle(&bytes)),
            ] {
                r.skip().unwrap_or_else(|e| panic!("{m:#04x}: {e}"));
                assert_eq!(r.offset(), bytes.len() as u64 - 1, "marker {m:#04x}");
                assert_eq!(r.u64().unwrap(), 0x2a, "marker {m:#04x}");
                r.finish().unwrap();
            }
            // Cut short by one byte, the input is truncated.
            if one.len() > 1 {
                let cut = &one[..one.len() - 1];
                for mut r in [Reader::from_bytes(cut), Reader::from_reader(Trickle(cut))] {
                    let e = r.skip().expect_err("truncated");
                    assert_eq!(e.kind, MsgpackErrorKind::Truncated, "marker {m:#04x}");
                }
            }
        }
        let mut r = Reader::from_bytes(&[0x92, 0x01, 0xc1]);
        let e = r.skip().expect_err("reserved");
        assert_eq!((e.offset, e.kind), (2, MsgpackErrorKind::Reserved));
    }

    #[test]
    fn malformed_input_gives_typed_errors_with_offsets() {
        let mut r = Reader::from_bytes(&[0x92, 0x01]);
        assert_eq!(r.skip().unwrap_err().kind, MsgpackErrorKind::Truncated);

        let mut r = Reader::from_bytes(&[0x91, 0xc1]);
        let e = r.skip().unwrap_err();
        assert_eq!((e.kind, e.offset), (MsgpackErrorKind::Reserved, 1));

        let mut r = Reader::from_bytes(&[0xa2, 0xff, 0xfe]);
        assert_eq!(r.str().unwrap_err().kind, MsgpackErrorKind::InvalidUtf8);

        let mut r = Reader::from_bytes(&[0xa1, b'x']);
        let e = r.map_len().unwrap_err();
        assert_eq!(
            (e.kind, e.offset),
            (
                MsgpackErrorKind::Unexpected {
                    expected: "a map",
                    found: "a string"
                },
                0
            )
        );

        let mut r = Reader::from_bytes(&[0xcd, 0x01, 0x00]);
        assert_eq!(
            r.i32(),
            Ok(256),
            "a uint16 is a valid 32-bit signed integer"
        );
        let mut r = Reader::from_bytes(&[0xff]);
        assert!(matches!(
            r.u32().unwrap_err().kind,
            MsgpackErrorKind::OutOfRange { .. }
        ));

        // A forged 4 GiB string length ends in truncation, not an allocation.
        let forged = [0xdb, 0xff, 0xff, 0xff, 0xff, 0x00];
        let mut r = Reader::from_reader(Trickle(&forged));
        assert_eq!(r.skip().unwrap_err().kind, MsgpackErrorKind::Truncated);
        let mut r = Reader::from_reader(Trickle(&forged));
        assert_eq!(r.str().unwrap_err().kind, MsgpackErrorKind::Truncated);

        let mut r = Reader::from_bytes(&[0xc0, 0xc0]);
        r.skip().unwrap();
        assert_eq!(
            r.finish().unwrap_err().kind,
            MsgpackErrorKind::TrailingBytes
        );
    }

    #[test]
    fn deep_nesting_is_refused_by_value_and_skipped_without_recursion() {
        let deep = vec![0x91u8; 100_000];
        let mut r = Reader::from_bytes(&deep);
        assert!(r.value(64).is_err());
        let mut bytes = deep.clone();
        bytes.push(0xc0);
        let mut r = Reader::from_bytes(&bytes);
        r.skip().unwrap();
        r.finish().unwrap();
    }

    #[test]
    fn a_rewind_reads_the_same_bytes_again_across_refills() {
        let bytes = sample();
        for mut r in [
            Reader::from_bytes(&bytes),
            Reader::from_reader(Trickle(&bytes)),
        ] {
            assert_eq!(r.map_len().unwrap(), 3);
            r.mark();
            let first = r.value(8).unwrap();
            let second = (r.value(8).unwrap(), r.value(8).unwrap());
            r.rewind();
            assert_eq!(r.value(8).unwrap(), first, "the same value again");
            assert_eq!((r.value(8).unwrap(), r.value(8).unwrap()), second);
            // The `ints` array, the `nested` key and its value remain.
            for _ in 0..3 {
                r.skip().unwrap();
            }
            r.finish().unwrap();
        }
    }

    #[test]
    fn a_forged_length_reserves_only_what_the_input_can_hold() {
        // An array header claiming 2^32 - 1 elements, and nothing after it.
        let mut r = Reader::from_bytes(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
        let n = r.array_len().unwrap();
        assert_eq!(n, u32::MAX as usize);
        assert_eq!(r.reservation(n), 0);
        let mut r = Reader::from_bytes(&[0xdd, 0, 0, 0, 3, 1, 2, 3]);
        let n = r.array_len().unwrap();
        assert_eq!(r.reservation(n), 3);
        let r = Reader::from_reader(Trickle(&[]));
        assert_eq!(r.reservation(usize::MAX), STREAM_RESERVE);
    }
}
