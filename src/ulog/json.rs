//! A topic's samples as JSON objects, and the JSON Schema of its format: what `--format mcap`
//! writes, so that Foxglove plots every field by its path (`/vehicle_attitude/0.q[3]`).
//!
//! The shape follows the format as written, not pyulog's flattened names:
//! - a format is an object of its fields, in format order; a nested format an object; an array
//!   a JSON array (of numbers, or of objects for an array of a nested format);
//! - a `char[n]` array is one string, up to its first NUL byte (bytes that are not UTF-8 left
//!   out, as the tables' text columns have them); a lone `char` a string of one;
//! - padding (`_padding*`, nested or not) is left out: it carries nothing;
//! - integers as integers (a `uint64_t` too); floats as the shortest text that reads back to the
//!   same value at their own width (a `float` 0.1 is `0.1`, not its `double` widening); NaN and
//!   the infinities, which JSON has no number for, as the strings `"NaN"`, `"Infinity"`,
//!   `"-Infinity"`, the receive log's spelling of the same.
//!
//! Pure: a format is compiled once into steps (literal text, or a value at an offset), and each
//! sample costs one pass over them, with no allocation but the output's.

use super::format::{BasicType, FieldType, FormatRegistry, LayoutError};
use super::value::text_lossy;
use serde_json::{json, Map, Value};

/// JSON Schema's draft the schemas declare (Foxglove and Python's `jsonschema` read it).
pub const SCHEMA_DRAFT: &str = "http://json-schema.org/draft-07/schema#";

/// One step of writing a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// `literals[start..end]` as it is (keys, brackets, commas).
    Literal {
        start: u32,
        end: u32,
    },
    Value {
        ty: BasicType,
        offset: u32,
    },
    /// A `char[len]` at `offset`, as a string.
    Text {
        offset: u32,
        len: u32,
    },
}

/// Writes the samples of one format as JSON objects.
#[derive(Debug, Clone)]
pub struct JsonEncoder {
    steps: Vec<Step>,
    literals: Vec<u8>,
}

/// Builds the steps and the schema together, walking the format.
struct Builder<'r> {
    formats: &'r FormatRegistry,
    steps: Vec<Step>,
    literals: Vec<u8>,
    /// Literal text not yet closed into a step.
    pending: usize,
}

impl Builder<'_> {
    fn literal(&mut self, text: &[u8]) {
        self.literals.extend_from_slice(text);
    }

    fn close_literal(&mut self) {
        if self.literals.len() > self.pending {
            self.steps.push(Step::Literal {
                start: self.pending as u32,
                end: self.literals.len() as u32,
            });
        }
        self.pending = self.literals.len();
    }

    fn step(&mut self, step: Step) {
        self.close_literal();
        self.steps.push(step);
    }

    /// The object of format `name` at `offset`; returns its schema and advances `offset` past
    /// the whole format.
    fn object(&mut self, name: &str, offset: &mut usize) -> Result<Value, LayoutError> {
        let format = self
            .formats
            .get(name)
            .ok_or_else(|| LayoutError::Missing(name.to_string()))?
            .clone();
        let mut properties = Map::new();
        let mut required = Vec::new();
        self.literal(b"{");
        let mut first = true;
        for field in &format.fields {
            let element = match &field.ty {
                FieldType::Basic(b) => b.size(),
                FieldType::Nested(inner) => self.formats.layout(inner)?.full_size,
            };
            let count = field.count() as usize;
            if field.is_padding() {
                *offset += element * count;
                continue;
            }
            if !first {
                self.literal(b",");
            }
            first = false;
            let mut key = Vec::new();
            serde_json::to_writer(&mut key, &field.name).expect("a String serialises");
            self.literal(&key);
            self.literal(b":");
            let declared = match (&field.ty, field.array_len) {
                (FieldType::Basic(b), Some(n)) => format!("{}[{n}]", b.name()),
                (FieldType::Basic(b), None) => b.name().to_string(),
                (FieldType::Nested(inner), Some(n)) => format!("{inner}[{n}]"),
                (FieldType::Nested(inner), None) => inner.clone(),
            };
            let mut schema = match (&field.ty, field.array_len) {
                (FieldType::Basic(BasicType::Char), Some(n)) => {
                    self.step(Step::Text {
                        offset: *offset as u32,
                        len: n,
                    });
                    *offset += count;
                    json!({"type": "string", "maxLength": n})
                }
                (FieldType::Basic(b), None) => {
                    self.value(*b, offset);
                    basic_schema(*b)
                }
                (FieldType::Basic(b), Some(n)) => {
                    self.literal(b"[");
                    for i in 0..count {
                        if i > 0 {
                            self.literal(b",");
                        }
                        self.value(*b, offset);
                    }
                    self.literal(b"]");
                    json!({"type": "array", "items": basic_schema(*b), "minItems": n, "maxItems": n})
                }
                (FieldType::Nested(inner), None) => self.object(inner, offset)?,
                (FieldType::Nested(inner), Some(n)) => {
                    self.literal(b"[");
                    let mut items = Value::Null;
                    for i in 0..count {
                        if i > 0 {
                            self.literal(b",");
                        }
                        items = self.object(inner, offset)?;
                    }
                    self.literal(b"]");
                    json!({"type": "array", "items": items, "minItems": n, "maxItems": n})
                }
            };
            schema["description"] = declared.into();
            properties.insert(field.name.clone(), schema);
            required.push(Value::from(field.name.clone()));
        }
        self.literal(b"}");
        Ok(json!({
            "type": "object",
            "title": name,
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }))
    }

    fn value(&mut self, ty: BasicType, offset: &mut usize) {
        if ty == BasicType::Char {
            self.step(Step::Text {
                offset: *offset as u32,
                len: 1,
            });
        } else {
            self.step(Step::Value {
                ty,
                offset: *offset as u32,
            });
        }
        *offset += ty.size();
    }
}

/// The schema of one basic value.
fn basic_schema(ty: BasicType) -> Value {
    let integer = |min: i128, max: i128| json!({"type": "integer", "minimum": min, "maximum": max});
    match ty {
        BasicType::Int8 => integer(i8::MIN.into(), i8::MAX.into()),
        BasicType::UInt8 => integer(0, u8::MAX.into()),
        BasicType::Int16 => integer(i16::MIN.into(), i16::MAX.into()),
        BasicType::UInt16 => integer(0, u16::MAX.into()),
        BasicType::Int32 => integer(i32::MIN.into(), i32::MAX.into()),
        BasicType::UInt32 => integer(0, u32::MAX.into()),
        BasicType::Int64 => integer(i64::MIN.into(), i64::MAX.into()),
        BasicType::UInt64 => integer(0, u64::MAX.into()),
        BasicType::Float | BasicType::Double => float_schema(),
        BasicType::Bool => json!({"type": "boolean"}),
        BasicType::Char => json!({"type": "string", "maxLength": 1}),
    }
}

/// A float: a number, or one of the three strings JSON has no number for.
pub fn float_schema() -> Value {
    json!({"anyOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}]})
}

impl JsonEncoder {
    /// The encoder for the samples of format `name`, and its JSON Schema (titled `name`).
    pub fn new(formats: &FormatRegistry, name: &str) -> Result<(JsonEncoder, Value), LayoutError> {
        // Resolves the whole format first: a cycle or a missing format is refused here, so the
        // walk below is bounded.
        formats.layout(name)?;
        let mut builder = Builder {
            formats,
            steps: Vec::new(),
            literals: Vec::new(),
            pending: 0,
        };
        let mut offset = 0;
        let mut schema = builder.object(name, &mut offset)?;
        builder.close_literal();
        schema["$schema"] = SCHEMA_DRAFT.into();
        Ok((
            JsonEncoder {
                steps: builder.steps,
                literals: builder.literals,
            },
            schema,
        ))
    }

    /// Appends the sample as one JSON object. `payload` holds at least the format's written
    /// size (the decoder checks every sample against it).
    pub fn encode(&self, payload: &[u8], out: &mut Vec<u8>) {
        for step in &self.steps {
            match *step {
                Step::Literal { start, end } => {
                    out.extend_from_slice(&self.literals[start as usize..end as usize])
                }
                Step::Value { ty, offset } => write_value(out, ty, &payload[offset as usize..]),
                Step::Text { offset, len } => {
                    let raw = &payload[offset as usize..(offset + len) as usize];
                    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                    write_text(out, &raw[..end]);
                }
            }
        }
    }
}

#[inline]
fn le<const N: usize>(at: &[u8]) -> [u8; N] {
    at[..N]
        .try_into()
        .expect("the field lies inside the payload")
}

#[inline]
fn write_value(out: &mut Vec<u8>, ty: BasicType, at: &[u8]) {
    let mut ints = itoa::Buffer::new();
    let text = match ty {
        BasicType::Int8 => ints.format(at[0] as i8),
        BasicType::UInt8 => ints.format(at[0]),
        BasicType::Int16 => ints.format(i16::from_le_bytes(le(at))),
        BasicType::UInt16 => ints.format(u16::from_le_bytes(le(at))),
        BasicType::Int32 => ints.format(i32::from_le_bytes(le(at))),
        BasicType::UInt32 => ints.format(u32::from_le_bytes(le(at))),
        BasicType::Int64 => ints.format(i64::from_le_bytes(le(at))),
        BasicType::UInt64 => ints.format(u64::from_le_bytes(le(at))),
        BasicType::Float => return write_float(out, f32::from_le_bytes(le(at))),
        BasicType::Double => return write_float(out, f64::from_le_bytes(le(at))),
        BasicType::Bool => {
            out.extend_from_slice(if at[0] != 0 { b"true" } else { b"false" });
            return;
        }
        BasicType::Char => return write_text(out, &at[..1]),
    };
    out.extend_from_slice(text.as_bytes());
}

/// A float in its shortest round-trip form at its own width; NaN and the infinities as strings.
#[inline]
pub fn write_float<F: zmij::Float + Into<f64> + Copy>(out: &mut Vec<u8>, x: F) {
    let wide: f64 = x.into();
    if wide.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(x).as_bytes());
    } else if wide.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if wide > 0.0 {
        out.extend_from_slice(b"\"Infinity\"");
    } else {
        out.extend_from_slice(b"\"-Infinity\"");
    }
}

/// A JSON string of `bytes` (UTF-8; other bytes left out): copied as they are when plain ASCII
/// with nothing to escape, the usual case.
pub fn write_text(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes
        .iter()
        .all(|&b| (0x20..0x7F).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, &text_lossy(bytes)).expect("writing to a Vec");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ulog::format::parse_format;

    fn registry(formats: &[&str]) -> FormatRegistry {
        let mut reg = FormatRegistry::default();
        for f in formats {
            reg.insert(parse_format(f).unwrap());
        }
        reg
    }

    #[test]
    fn a_sample_is_an_object_as_its_format_nests_without_padding() {
        let reg = registry(&[
            "inner:float[2] v;uint8_t[3] _padding0;",
            "t:uint64_t timestamp;char[4] name;inner[2] i;bool ok;int8_t s;uint8_t[6] _padding0;",
        ]);
        let (encoder, schema) = JsonEncoder::new(&reg, "t").unwrap();
        let mut laid = Vec::new();
        laid.extend_from_slice(&1_234_567u64.to_le_bytes());
        laid.extend_from_slice(b"ab\0z");
        for pair in [[0.1f32, -2.5], [f32::NAN, f32::NEG_INFINITY]] {
            for v in pair {
                laid.extend_from_slice(&v.to_le_bytes());
            }
            laid.extend_from_slice(&[0xAA; 3]); // the inner format's padding
        }
        laid.push(1);
        laid.push(0xFE);
        let mut out = Vec::new();
        encoder.encode(&laid, &mut out);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"timestamp":1234567,"name":"ab","i":[{"v":[0.1,-2.5]},{"v":["NaN","-Infinity"]}],"ok":true,"s":-2}"#
        );
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(schema["title"], "t");
        assert_eq!(schema["$schema"], SCHEMA_DRAFT);
        assert_eq!(
            schema["required"],
            json!(["timestamp", "name", "i", "ok", "s"])
        );
        assert_eq!(schema["properties"]["i"]["maxItems"], 2);
        assert_eq!(
            schema["properties"]["i"]["items"]["properties"]["v"]["description"],
            "float[2]"
        );
        assert_eq!(schema["properties"]["s"]["minimum"], -128);
        assert!(value["i"][1]["v"][0].is_string());
    }

    #[test]
    fn integers_keep_every_digit_and_floats_their_own_width() {
        let reg = registry(&["t:uint64_t a;int64_t b;uint32_t c;int16_t d;double e;float f;"]);
        let (encoder, _) = JsonEncoder::new(&reg, "t").unwrap();
        let mut p = Vec::new();
        p.extend_from_slice(&u64::MAX.to_le_bytes());
        p.extend_from_slice(&i64::MIN.to_le_bytes());
        p.extend_from_slice(&u32::MAX.to_le_bytes());
        p.extend_from_slice(&(-300i16).to_le_bytes());
        p.extend_from_slice(&0.1f64.to_le_bytes());
        p.extend_from_slice(&1.1f32.to_le_bytes());
        let mut out = Vec::new();
        encoder.encode(&p, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":18446744073709551615,"b":-9223372036854775808,"c":4294967295,"d":-300,"e":0.1,"f":1.1}"#
        );
    }

    #[test]
    fn text_that_needs_escaping_is_escaped_and_bytes_that_are_not_utf8_are_left_out() {
        let reg = registry(&["t:char[8] s;char c;"]);
        let (encoder, _) = JsonEncoder::new(&reg, "t").unwrap();
        let mut out = Vec::new();
        encoder.encode(b"a\"b\\\xffc\0\0x", &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"s":"a\"b\\c","c":"x"}"#
        );
    }

    #[test]
    fn a_missing_or_cyclic_format_is_refused() {
        let reg = registry(&["t:uint64_t timestamp;nope n;", "a:a x;"]);
        assert!(JsonEncoder::new(&reg, "t").is_err());
        assert!(JsonEncoder::new(&reg, "a").is_err());
    }
}
