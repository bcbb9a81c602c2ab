//! A parameter's value as an ingest report holds it, and a run's parameters at start: what
//! the catalog stores, compares between runs (`changes`) and labels (`labels`). Pure.

use serde::ser::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// One parameter value as a report holds it: PX4 parameters are `int32` or `float`; a float
/// that is not a number is written as text (`"nan"`).
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Text(String),
}

impl ParamValue {
    /// A value of a report's JSON (`parameters.initial`), if it is one a parameter can have.
    pub fn from_json(value: &serde_json::Value) -> Option<ParamValue> {
        match value {
            serde_json::Value::Number(n) => n
                .as_i64()
                .map(ParamValue::Int)
                .or_else(|| n.as_f64().map(ParamValue::Float)),
            serde_json::Value::String(s) => Some(ParamValue::Text(s.clone())),
            _ => None,
        }
    }

    /// The value as a whole number, when it is one (an action parameter's value).
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            ParamValue::Int(v) => Some(*v),
            ParamValue::Float(v) if v.fract() == 0.0 && v.abs() < 1e15 => Some(*v as i64),
            _ => None,
        }
    }

    /// Whether two runs hold the same setting: equal numbers are the same whether a firmware
    /// stored them as an integer or a float.
    pub fn same_as(&self, other: &ParamValue) -> bool {
        match (self, other) {
            (ParamValue::Int(a), ParamValue::Int(b)) => a == b,
            (ParamValue::Float(a), ParamValue::Float(b)) => a == b,
            (ParamValue::Int(a), ParamValue::Float(b))
            | (ParamValue::Float(b), ParamValue::Int(a)) => *a as f64 == *b,
            (ParamValue::Text(a), ParamValue::Text(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            // PX4 floats are 32-bit: the report widened them exactly, so the shortest 32-bit
            // form is the value as it was set (0.3, not 0.30000001192092896).
            ParamValue::Float(v) if f64::from(*v as f32) == *v => write!(f, "{}", *v as f32),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Text(s) => f.write_str(s),
        }
    }
}

impl Serialize for ParamValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ParamValue::Int(v) => s.serialize_i64(*v),
            ParamValue::Float(v) => s.serialize_f64(*v),
            ParamValue::Text(t) => s.serialize_str(t),
        }
    }
}

/// Parameters at start, by name.
pub type Parameters = BTreeMap<String, ParamValue>;
