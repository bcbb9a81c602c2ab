//! Decoded values: basic ULog fields and information/parameter values, with the text forms the
//! report and the inspector print.

use super::format::BasicType;
use serde::ser::{Serialize, Serializer};
use std::fmt;

/// One decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    UInt(u64),
    /// Kept as `f64`; `float` fields widen exactly.
    Float(f64),
    Bool(bool),
    Text(String),
    /// Values of a type with no simpler reading (arrays in info messages): hex in reports.
    Bytes(Vec<u8>),
}

impl Value {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::UInt(v) => Some(*v as f64),
            Value::Float(v) => Some(*v),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            Value::UInt(v) => i64::try_from(*v).ok(),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::UInt(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Text(s) => write!(f, "{s}"),
            Value::Bytes(b) => f.write_str(&hex(b)),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Int(v) => s.serialize_i64(*v),
            Value::UInt(v) => s.serialize_u64(*v),
            // JSON has no NaN or infinity; write them as text rather than as a misleading null.
            Value::Float(v) if !v.is_finite() => s.serialize_str(&format!("{v}").to_lowercase()),
            Value::Float(v) => s.serialize_f64(*v),
            Value::Bool(v) => s.serialize_bool(*v),
            Value::Text(t) => s.serialize_str(t),
            Value::Bytes(b) => s.serialize_str(&hex(b)),
        }
    }
}

/// Lower-case hex without separators.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Decodes one basic value from exactly `ty.size()` bytes (the caller slices them).
pub fn decode_basic(ty: BasicType, b: &[u8]) -> Value {
    fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&b[..N]);
        a
    }
    match ty {
        BasicType::Int8 => Value::Int(i64::from(b[0] as i8)),
        BasicType::UInt8 => Value::UInt(u64::from(b[0])),
        BasicType::Int16 => Value::Int(i64::from(i16::from_le_bytes(arr(b)))),
        BasicType::UInt16 => Value::UInt(u64::from(u16::from_le_bytes(arr(b)))),
        BasicType::Int32 => Value::Int(i64::from(i32::from_le_bytes(arr(b)))),
        BasicType::UInt32 => Value::UInt(u64::from(u32::from_le_bytes(arr(b)))),
        BasicType::Int64 => Value::Int(i64::from_le_bytes(arr(b))),
        BasicType::UInt64 => Value::UInt(u64::from_le_bytes(arr(b))),
        BasicType::Float => Value::Float(f64::from(f32::from_le_bytes(arr(b)))),
        BasicType::Double => Value::Float(f64::from_le_bytes(arr(b))),
        BasicType::Bool => Value::Bool(b[0] != 0),
        BasicType::Char => Value::Text(text_lossy(&b[..1])),
    }
}

/// Text from bytes the way PX4 tools read it: invalid UTF-8 sequences are dropped, not replaced.
pub fn text_lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
    }
    out
}

/// Decodes the value of an information or parameter message from its declared type
/// (`char[12]`, `int32_t`, `float`, `uint8_t[16]`, ...).
pub fn decode_typed(type_name: &str, bytes: &[u8]) -> Value {
    if type_name.starts_with("char[") {
        return Value::Text(text_lossy(bytes));
    }
    match BasicType::parse(type_name) {
        Some(ty) if bytes.len() == ty.size() => decode_basic(ty, bytes),
        _ => Value::Bytes(bytes.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_typed_values() {
        assert_eq!(
            decode_typed("int32_t", &(-5i32).to_le_bytes()),
            Value::Int(-5)
        );
        assert_eq!(
            decode_typed("float", &1.5f32.to_le_bytes()),
            Value::Float(1.5)
        );
        assert_eq!(
            decode_typed("char[3]", b"P\xffX4"),
            Value::Text("PX4".into())
        );
        assert_eq!(
            decode_typed("uint8_t[2]", &[1, 0xab]),
            Value::Bytes(vec![1, 0xab])
        );
        // A declared type whose bytes do not fit stays raw rather than being guessed at.
        assert_eq!(decode_typed("int32_t", &[1, 2]), Value::Bytes(vec![1, 2]));
        let json = serde_json::to_string(&Value::Float(f64::NAN)).unwrap();
        assert_eq!(json, "\"nan\"");
    }
}
