//! A bounds-checked MessagePack decoder for code-object metadata.
//!
//! `NT_AMDGPU_METADATA` (code object v3 and later) is one MessagePack map. The
//! decoder borrows strings and binaries from the input and rejects anything
//! malformed with a [`MsgpackError`]: truncation, invalid UTF-8, nesting
//! deeper than [`MAX_DEPTH`], trailing bytes, or the reserved byte 0xc1.
//! Container lengths are checked against the bytes left before any
//! allocation, so a forged length cannot make it allocate more than the input
//! could describe. Format reference: the MessagePack specification, "Formats".

use alloc::vec::Vec;
use core::fmt;

/// Nesting limit; metadata nests four deep, so this is generous and keeps the
/// recursion bounded on hostile input.
pub const MAX_DEPTH: usize = 64;

/// A decoded MessagePack value borrowing from the input.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// `nil` (0xc0).
    Nil,
    /// `true` or `false` (0xc3, 0xc2).
    Bool(bool),
    /// Any non-negative integer (positive fixint, uint 8..64, or a signed
    /// encoding that holds a non-negative value).
    UInt(u64),
    /// A negative integer.
    Int(i64),
    /// `float 32`.
    F32(f32),
    /// `float 64`.
    F64(f64),
    /// A `str` family value, checked to be UTF-8.
    Str(&'a str),
    /// A `bin` family value.
    Bin(&'a [u8]),
    /// An `array` family value, elements in order.
    Array(Vec<Value<'a>>),
    /// A `map` family value: key-value pairs in document order, duplicate
    /// keys kept.
    Map(Vec<(Value<'a>, Value<'a>)>),
    /// An `ext` family value: its type and its data.
    Ext(i8, &'a [u8]),
}

impl<'a> Value<'a> {
    /// The string, if the value is one.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if the value is a non-negative one.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::UInt(v) => Some(v),
            _ => None,
        }
    }

    /// The boolean, if the value is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The elements, if the value is an array.
    pub fn as_array(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The key-value pairs, if the value is a map.
    pub fn as_map(&self) -> Option<&[(Value<'a>, Value<'a>)]> {
        match self {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The value under string key `key` of a map (first match), if any.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// A short name of the value's kind, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "bool",
            Value::UInt(_) | Value::Int(_) => "integer",
            Value::F32(_) | Value::F64(_) => "float",
            Value::Str(_) => "string",
            Value::Bin(_) => "binary",
            Value::Array(_) => "array",
            Value::Map(_) => "map",
            Value::Ext(..) => "extension",
        }
    }
}

/// Why a MessagePack document was rejected; `offset` is the byte offset in
/// the document where decoding stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MsgpackError {
    /// The document ends inside a value.
    Truncated {
        /// Where the read that ran out of bytes started.
        offset: usize,
    },
    /// A string is not valid UTF-8.
    InvalidUtf8 {
        /// Where the string's bytes start.
        offset: usize,
    },
    /// The reserved byte 0xc1, which no value starts with.
    ReservedByte {
        /// Where it is.
        offset: usize,
    },
    /// Containers nest deeper than [`MAX_DEPTH`].
    TooDeep {
        /// Where the value nested too deep starts.
        offset: usize,
    },
    /// Bytes follow the document's one top-level value.
    TrailingBytes {
        /// Where the first of them is.
        offset: usize,
    },
}

impl fmt::Display for MsgpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated { offset } => write!(f, "msgpack truncated at byte {offset}"),
            Self::InvalidUtf8 { offset } => {
                write!(f, "msgpack string at byte {offset} is not UTF-8")
            }
            Self::ReservedByte { offset } => {
                write!(f, "msgpack reserved byte 0xc1 at byte {offset}")
            }
            Self::TooDeep { offset } => {
                write!(f, "msgpack nests deeper than {MAX_DEPTH} at byte {offset}")
            }
            Self::TrailingBytes { offset } => {
                write!(
                    f,
                    "msgpack document ends at byte {offset} but more bytes follow"
                )
            }
        }
    }
}

impl core::error::Error for MsgpackError {}

/// Decodes exactly one value spanning all of `bytes`.
pub fn decode(bytes: &[u8]) -> Result<Value<'_>, MsgpackError> {
    let mut decoder = Decoder { bytes, pos: 0 };
    let value = decoder.value(0)?;
    if decoder.pos != bytes.len() {
        return Err(MsgpackError::TrailingBytes {
            offset: decoder.pos,
        });
    }
    Ok(value)
}

struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], MsgpackError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
            .ok_or(MsgpackError::Truncated { offset: self.pos })?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], MsgpackError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, MsgpackError> {
        Ok(self.take(1)?[0])
    }

    fn len16(&mut self) -> Result<usize, MsgpackError> {
        Ok(usize::from(u16::from_be_bytes(self.array()?)))
    }

    fn len32(&mut self) -> Result<usize, MsgpackError> {
        // u32 always fits usize on the 32- and 64-bit hosts aqueduct supports.
        Ok(u32::from_be_bytes(self.array()?) as usize)
    }

    fn str(&mut self, len: usize) -> Result<Value<'a>, MsgpackError> {
        let offset = self.pos;
        let raw = self.take(len)?;
        core::str::from_utf8(raw)
            .map(Value::Str)
            .map_err(|_| MsgpackError::InvalidUtf8 { offset })
    }

    fn ext(&mut self, len: usize) -> Result<Value<'a>, MsgpackError> {
        let tag = self.u8()? as i8;
        Ok(Value::Ext(tag, self.take(len)?))
    }

    fn signed(v: i64) -> Value<'a> {
        if v < 0 {
            Value::Int(v)
        } else {
            Value::UInt(v as u64)
        }
    }

    fn items(&mut self, len: usize, depth: usize) -> Result<Vec<Value<'a>>, MsgpackError> {
        // Every element takes at least one byte: a larger count is a lie.
        if len > self.bytes.len() - self.pos {
            return Err(MsgpackError::Truncated { offset: self.pos });
        }
        let mut items = Vec::with_capacity(len);
        for _ in 0..len {
            items.push(self.value(depth + 1)?);
        }
        Ok(items)
    }

    fn entries(
        &mut self,
        len: usize,
        depth: usize,
    ) -> Result<Vec<(Value<'a>, Value<'a>)>, MsgpackError> {
        if len > (self.bytes.len() - self.pos) / 2 {
            return Err(MsgpackError::Truncated { offset: self.pos });
        }
        let mut entries = Vec::with_capacity(len);
        for _ in 0..len {
            let key = self.value(depth + 1)?;
            let value = self.value(depth + 1)?;
            entries.push((key, value));
        }
        Ok(entries)
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, MsgpackError> {
        if depth >= MAX_DEPTH {
            return Err(MsgpackError::TooDeep { offset: self.pos });
        }
        let offset = self.pos;
        let marker = self.u8()?;
        Ok(match marker {
            0x00..=0x7f => Value::UInt(u64::from(marker)),
            0x80..=0x8f => Value::Map(self.entries(usize::from(marker & 0x0f), depth)?),
            0x90..=0x9f => Value::Array(self.items(usize::from(marker & 0x0f), depth)?),
            0xa0..=0xbf => self.str(usize::from(marker & 0x1f))?,
            0xc0 => Value::Nil,
            0xc1 => return Err(MsgpackError::ReservedByte { offset }),
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4 => {
                let len = usize::from(self.u8()?);
                Value::Bin(self.take(len)?)
            }
            0xc5 => {
                let len = self.len16()?;
                Value::Bin(self.take(len)?)
            }
            0xc6 => {
                let len = self.len32()?;
                Value::Bin(self.take(len)?)
            }
            0xc7 => {
                let len = usize::from(self.u8()?);
                self.ext(len)?
            }
            0xc8 => {
                let len = self.len16()?;
                self.ext(len)?
            }
            0xc9 => {
                let len = self.len32()?;
                self.ext(len)?
            }
            0xca => Value::F32(f32::from_be_bytes(self.array()?)),
            0xcb => Value::F64(f64::from_be_bytes(self.array()?)),
            0xcc => Value::UInt(u64::from(self.u8()?)),
            0xcd => Value::UInt(u64::from(u16::from_be_bytes(self.array()?))),
            0xce => Value::UInt(u64::from(u32::from_be_bytes(self.array()?))),
            0xcf => Value::UInt(u64::from_be_bytes(self.array()?)),
            0xd0 => Self::signed(i64::from(self.u8()? as i8)),
            0xd1 => Self::signed(i64::from(i16::from_be_bytes(self.array()?))),
            0xd2 => Self::signed(i64::from(i32::from_be_bytes(self.array()?))),
            0xd3 => Self::signed(i64::from_be_bytes(self.array()?)),
            0xd4 => self.ext(1)?,
            0xd5 => self.ext(2)?,
            0xd6 => self.ext(4)?,
            0xd7 => self.ext(8)?,
            0xd8 => self.ext(16)?,
            0xd9 => {
                let len = usize::from(self.u8()?);
                self.str(len)?
            }
            0xda => {
                let len = self.len16()?;
                self.str(len)?
            }
            0xdb => {
                let len = self.len32()?;
                self.str(len)?
            }
            0xdc => {
                let len = self.len16()?;
                Value::Array(self.items(len, depth)?)
            }
            0xdd => {
                let len = self.len32()?;
                Value::Array(self.items(len, depth)?)
            }
            0xde => {
                let len = self.len16()?;
                Value::Map(self.entries(len, depth)?)
            }
            0xdf => {
                let len = self.len32()?;
                Value::Map(self.entries(len, depth)?)
            }
            0xe0..=0xff => Value::Int(i64::from(marker as i8)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn decodes_every_scalar_width() {
        // Byte strings written from the MessagePack specification's formats.
        let cases: &[(&[u8], Value)] = &[
            (&[0x05], Value::UInt(5)),
            (&[0xff], Value::Int(-1)),
            (&[0xcc, 0xfe], Value::UInt(254)),
            (&[0xcd, 0x12, 0x34], Value::UInt(0x1234)),
            (&[0xce, 0, 1, 0, 0], Value::UInt(65536)),
            (&[0xcf, 0, 0, 0, 1, 0, 0, 0, 0], Value::UInt(1 << 32)),
            (&[0xd0, 0x80], Value::Int(-128)),
            (&[0xd1, 0x00, 0x10], Value::UInt(16)),
            (
                &[0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe],
                Value::Int(-2),
            ),
            (&[0xca, 0x3f, 0x80, 0, 0], Value::F32(1.0)),
            (&[0xcb, 0x40, 0, 0, 0, 0, 0, 0, 0], Value::F64(2.0)),
            (&[0xc0], Value::Nil),
            (&[0xc3], Value::Bool(true)),
            (&[0xa2, b'h', b'i'], Value::Str("hi")),
            (&[0xd9, 1, b'x'], Value::Str("x")),
            (&[0xc4, 2, 9, 8], Value::Bin(&[9, 8])),
            (&[0xd4, 0x07, 0xaa], Value::Ext(7, &[0xaa])),
        ];
        for (bytes, expected) in cases {
            assert_eq!(decode(bytes).as_ref(), Ok(expected), "{bytes:x?}");
        }
    }

    #[test]
    fn decodes_nested_containers_and_looks_up_keys() {
        // {"a": [1, {"b": true}]}
        let bytes = [0x81, 0xa1, b'a', 0x92, 0x01, 0x81, 0xa1, b'b', 0xc3];
        let value = decode(&bytes).unwrap();
        let a = value.get("a").unwrap().as_array().unwrap();
        assert_eq!(a[0], Value::UInt(1));
        assert_eq!(a[1].get("b"), Some(&Value::Bool(true)));
    }

    #[test]
    fn rejects_malformed_documents() {
        let cases: &[(&[u8], MsgpackError)] = &[
            (&[], MsgpackError::Truncated { offset: 0 }),
            (&[0xcd, 0x12], MsgpackError::Truncated { offset: 1 }),
            (&[0xa3, b'a'], MsgpackError::Truncated { offset: 1 }),
            (&[0xc1], MsgpackError::ReservedByte { offset: 0 }),
            (&[0xa2, 0xff, 0xfe], MsgpackError::InvalidUtf8 { offset: 1 }),
            (&[0x01, 0x02], MsgpackError::TrailingBytes { offset: 1 }),
            // An array claiming 2^32-1 elements in a 5-byte document.
            (
                &[0xdd, 0xff, 0xff, 0xff, 0xff],
                MsgpackError::Truncated { offset: 5 },
            ),
        ];
        for (bytes, expected) in cases {
            assert_eq!(decode(bytes).as_ref(), Err(expected), "{bytes:x?}");
        }
    }

    #[test]
    fn rejects_nesting_beyond_the_limit() {
        let deep = vec![0x91u8; MAX_DEPTH + 1];
        assert!(matches!(decode(&deep), Err(MsgpackError::TooDeep { .. })));
    }
}
