//! YAML catalogs: Tensile writes the same tree as YAML (`--library-format
//! yaml`) or MessagePack (`.dat`). A YAML catalog is parsed into a
//! [`Value`] tree and re-encoded as MessagePack, so both formats go through
//! one decoder and cannot drift apart; YAML catalogs are the small,
//! hand-readable kind, so the extra pass costs nothing that matters.
//!
//! Writing goes the other way: MessagePack bytes, read back as a [`Value`]
//! tree, printed as block-style YAML that PyYAML and `yaml-rust2` both read
//! back to the same tree (strings that could be mistaken for numbers,
//! booleans or nulls are quoted; floats always carry a `.` or an exponent).

use std::fmt::Write as _;

use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::msgpack::{Reader, Value, Writer};

/// Nesting limit for YAML input, matching the MessagePack side's.
const MAX_DEPTH: usize = 128;

/// Parses YAML text into MessagePack bytes holding the same tree.
///
/// The tree is built from the parser's events rather than with
/// `YamlLoader`, because the loader expands aliases by copying: a few lines
/// of nested aliases ("billion laughs") would expand to gigabytes. Catalogs
/// never use aliases, so they are refused. Duplicate map keys are kept, so
/// that the catalog decoder refuses them as it does in MessagePack.
pub fn to_msgpack(text: &str) -> Result<Vec<u8>, String> {
    // Events are pulled one at a time rather than with `Parser::load`,
    // which recurses once per nesting level: a few kilobytes of nested
    // `- - - -` would overflow the stack before the depth limit below is
    // checked. Here the builder's explicit stack holds the nesting and the
    // first event past the limit ends the parse.
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    loop {
        let (event, mark) = parser.next_token().map_err(|e| e.to_string())?;
        let end = event == Event::StreamEnd;
        builder.on_event(event, mark);
        if let Some(e) = builder.error.take() {
            return Err(e);
        }
        if end {
            break;
        }
    }
    let value = match builder.docs.len() {
        1 => builder.docs.remove(0),
        0 => return Err("the text holds no YAML document".into()),
        n => return Err(format!("expected one YAML document, found {n}")),
    };
    let mut w = Writer::new();
    value.write(&mut w);
    Ok(w.out)
}

enum Frame {
    Seq(Vec<Value>),
    Map(Vec<(Value, Value)>, Option<Value>),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    docs: Vec<Value>,
    error: Option<String>,
}

impl Builder {
    fn fail(&mut self, message: String, mark: Marker) {
        if self.error.is_none() {
            self.error = Some(format!(
                "{message} (line {}, column {})",
                mark.line(),
                mark.col() + 1
            ));
        }
    }

    fn complete(&mut self, value: Value) {
        match self.stack.last_mut() {
            None => self.docs.push(value),
            Some(Frame::Seq(items)) => items.push(value),
            Some(Frame::Map(entries, key)) => match key.take() {
                None => *key = Some(value),
                Some(k) => entries.push((k, value)),
            },
        }
    }

    fn open(&mut self, frame: Frame, mark: Marker) {
        if self.stack.len() >= MAX_DEPTH {
            return self.fail(format!("nested deeper than {MAX_DEPTH} levels"), mark);
        }
        self.stack.push(frame);
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        match ev {
            Event::Alias(_) => self.fail("YAML aliases are not allowed in catalogs".into(), mark),
            Event::Scalar(text, style, _, tag) => {
                if let Some(tag) = tag {
                    return self.fail(
                        format!(
                            "YAML tag {}{} is not allowed in catalogs",
                            tag.handle, tag.suffix
                        ),
                        mark,
                    );
                }
                let value = if style == TScalarStyle::Plain {
                    match Yaml::from_str(&text) {
                        Yaml::Null => Value::Nil,
                        Yaml::Boolean(b) => Value::Bool(b),
                        Yaml::Integer(i) if i >= 0 => Value::UInt(i as u64),
                        Yaml::Integer(i) => Value::Int(i),
                        Yaml::Real(r) => match parse_real(&r) {
                            Some(f) => Value::Float(f),
                            None => return self.fail(format!("bad float {r:?}"), mark),
                        },
                        _ => Value::Str(text),
                    }
                } else {
                    Value::Str(text)
                };
                self.complete(value);
            }
            Event::SequenceStart(_, tag) | Event::MappingStart(_, tag) if tag.is_some() => {
                self.fail("YAML tags are not allowed in catalogs".into(), mark)
            }
            Event::SequenceStart(..) => self.open(Frame::Seq(Vec::new()), mark),
            Event::MappingStart(..) => self.open(Frame::Map(Vec::new(), None), mark),
            Event::SequenceEnd | Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Seq(items)) => self.complete(Value::Array(items)),
                Some(Frame::Map(entries, None)) => self.complete(Value::Map(entries)),
                Some(Frame::Map(_, Some(_))) | None => {
                    self.fail("unbalanced YAML collection".into(), mark)
                }
            },
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

fn parse_real(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        ".inf" | "+.inf" => Some(f64::INFINITY),
        "-.inf" => Some(f64::NEG_INFINITY),
        ".nan" => Some(f64::NAN),
        other => other.parse().ok(),
    }
}

/// Prints MessagePack bytes as YAML.
pub fn from_msgpack(bytes: &[u8]) -> Result<String, String> {
    let mut r = Reader::from_bytes(bytes);
    let value = r.value(MAX_DEPTH).map_err(|e| e.to_string())?;
    r.finish().map_err(|e| e.to_string())?;
    let mut out = String::new();
    emit(&value, &mut out);
    Ok(out)
}

fn is_collection(v: &Value) -> bool {
    match v {
        Value::Array(items) => !items.is_empty(),
        Value::Map(entries) => !entries.is_empty(),
        _ => false,
    }
}

/// Emits a document.
fn emit(v: &Value, out: &mut String) {
    if is_collection(v) {
        block(v, 0, false, out);
    } else {
        out.push_str(&scalar(v));
        out.push('\n');
    }
}

/// Emits the non-empty collection `v` in block style at `indent`; with
/// `first_inline` the first line continues a `- ` already written.
fn block(v: &Value, indent: usize, first_inline: bool, out: &mut String) {
    let pad = " ".repeat(indent);
    let line = |i: usize, out: &mut String| {
        if i > 0 || !first_inline {
            out.push_str(&pad);
        }
    };
    match v {
        Value::Map(entries) => {
            for (i, (k, val)) in entries.iter().enumerate() {
                line(i, out);
                out.push_str(&scalar(k));
                out.push(':');
                if is_collection(val) {
                    out.push('\n');
                    // PyYAML's layout: a list under a key starts at the key's
                    // column, a map two columns in.
                    let inner = if matches!(val, Value::Array(_)) {
                        indent
                    } else {
                        indent + 2
                    };
                    block(val, inner, false, out);
                } else {
                    out.push(' ');
                    out.push_str(&scalar(val));
                    out.push('\n');
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                line(i, out);
                out.push_str("- ");
                if is_collection(item) {
                    block(item, indent + 2, true, out);
                } else {
                    out.push_str(&scalar(item));
                    out.push('\n');
                }
            }
        }
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

/// A scalar (or an empty collection) in flow form.
fn scalar(v: &Value) -> String {
    match v {
        Value::Nil => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float(*f),
        Value::Str(s) => string(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(scalar).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Map(entries) => {
            let inner: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(k), scalar(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

fn float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    // `{:?}` is the shortest text that parses back to the same f64; YAML 1.1
    // readers need a `.` before any exponent, and a signed exponent.
    let s = format!("{f:?}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let mantissa = if mantissa.contains('.') {
                mantissa.to_string()
            } else {
                format!("{mantissa}.0")
            };
            let exp = if exp.starts_with('-') {
                exp.to_string()
            } else {
                format!("+{exp}")
            };
            format!("{mantissa}e{exp}")
        }
        None => s,
    }
}

/// Plain when unambiguous, double-quoted otherwise.
fn string(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> Value {
        let s = |x: &str| Value::Str(x.into());
        Value::Map(vec![
            (
                s("library"),
                Value::Map(vec![
                    (s("type"), s("Hardware")),
                    (
                        s("rows"),
                        Value::Array(vec![Value::Map(vec![
                            (
                                s("predicate"),
                                Value::Map(vec![
                                    (s("type"), s("And")),
                                    (
                                        s("value"),
                                        Value::Array(vec![
                                            Value::Map(vec![
                                                (s("type"), s("Processor")),
                                                (s("value"), s("gfx950")),
                                            ]),
                                            Value::Map(vec![
                                                (s("type"), s("PciChipId")),
                                                (s("value"), Value::UInt(0x75a3)),
                                            ]),
                                        ]),
                                    ),
                                ]),
                            ),
                            (
                                s("library"),
                                Value::Map(vec![
                                    (s("type"), s("Single")),
                                    (s("index"), Value::Int(-3)),
                                ]),
                            ),
                        ])]),
                    ),
                ]),
            ),
            (
                s("odd strings"),
                Value::Array(vec![
                    s("true"),
                    s("12"),
                    s(""),
                    s("a: b"),
                    s("quote\"back\\slash\nline"),
                    s("- dash"),
                ]),
            ),
            (
                s("numbers"),
                Value::Array(vec![
                    Value::Float(0.0),
                    Value::Float(1e-7),
                    Value::Float(2.5e300),
                    Value::Float(-1.0),
                    Value::Float(f64::INFINITY),
                ]),
            ),
            (s("empty"), Value::Map(vec![])),
            (s("none"), Value::Array(vec![])),
            (
                s("nested lists"),
                Value::Array(vec![
                    Value::Array(vec![Value::UInt(1), Value::UInt(2)]),
                    Value::Nil,
                ]),
            ),
            (s("flag"), Value::Bool(false)),
        ])
    }

    #[test]
    fn yaml_written_from_msgpack_reads_back_to_the_same_tree() {
        let mut w = Writer::new();
        tree().write(&mut w);
        let text = from_msgpack(&w.out).unwrap();
        let back = to_msgpack(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let round = Reader::from_bytes(&back).value(64).unwrap();
        assert_eq!(round, tree(), "{text}");
        assert!(text.contains("- type: Processor"), "{text}");
    }

    #[test]
    fn tensile_style_yaml_reads_as_its_tree() {
        let text = "library:\n  rows:\n  - library: {type: Placeholder, value: TensileLibrary_Type_SS_fallback}\n    predicate:\n      type: And\n      value:\n      - type: TypesEqual\n        value: [Float, Float, Float, Float]\n      - {type: HighPrecisionAccumulate, value: false}\n  type: Problem\nsolutions: []\n";
        let bytes = to_msgpack(text).unwrap();
        let v = Reader::from_bytes(&bytes).value(64).unwrap();
        let Value::Map(top) = v else { panic!() };
        assert_eq!(
            top[1],
            (Value::Str("solutions".into()), Value::Array(vec![]))
        );
    }

    #[test]
    fn bad_yaml_is_an_error() {
        assert!(to_msgpack("a: [1, 2").is_err());
        let aliased = to_msgpack("a: &x 1\nb: *x\n").unwrap_err();
        assert!(aliased.contains("aliases"), "{aliased}");
        assert!(to_msgpack("a: !!binary aGk=\n").is_err());
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        assert!(to_msgpack(&deep).unwrap_err().contains("deeper"));
        assert!(to_msgpack("").is_err());
    }

    /// 20,000 nested block sequences (40 KB) overflowed the stack inside
    /// the YAML parser's recursive loader before the depth limit was
    /// checked, aborting the process. The limit now ends the parse; run on
    /// a small stack so the test would fail long before 20,000 levels.
    #[test]
    fn deep_block_nesting_is_refused_without_recursion() {
        let text = format!("{}1\n", "- ".repeat(20_000));
        let outcome = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || to_msgpack(&text))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(outcome.unwrap_err().contains("deeper than 128"));
    }

    /// Duplicate keys reach the decoder, which refuses them (YAML loaders
    /// that keep the last one would hide a second solution list).
    #[test]
    fn duplicate_keys_are_kept_for_the_decoder() {
        let bytes = to_msgpack("a: 1\na: 2\n").unwrap();
        let mut r = Reader::from_bytes(&bytes);
        match r.value(MAX_DEPTH).unwrap() {
            Value::Map(entries) => assert_eq!(entries.len(), 2),
            other => panic!("{other:?}"),
        }
    }
}
