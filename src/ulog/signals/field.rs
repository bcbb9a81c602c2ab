//! One field of a sample, found by name (first of a list of alternatives) in a subscription's
//! flattened format, and read from a payload as a number.

use crate::ulog::format::{BasicType, FlatField};
use crate::ulog::value::decode_basic;

/// A field's place and type in a payload, and the scale that turns it into the meaning's unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    ty: BasicType,
    offset: usize,
    scale: f64,
}

impl Field {
    /// The first of `alternatives` (name, scale) the format has, as a number (not `char`).
    pub fn find(fields: &[FlatField], alternatives: &[(&str, f64)]) -> Option<Field> {
        alternatives.iter().find_map(|(name, scale)| {
            fields
                .iter()
                .find(|f| f.name == *name && f.ty != BasicType::Char)
                .map(|f| Field {
                    name: f.name.clone(),
                    ty: f.ty,
                    offset: f.offset,
                    scale: *scale,
                })
        })
    }

    /// [`Field::find`] with a single name and no scaling.
    pub fn named(fields: &[FlatField], name: &str) -> Option<Field> {
        Self::find(fields, &[(name, 1.0)])
    }

    /// The value, scaled (`None` when the payload is too short).
    pub fn f64(&self, payload: &[u8]) -> Option<f64> {
        let bytes = payload.get(self.offset..self.offset + self.ty.size())?;
        decode_basic(self.ty, bytes)
            .as_f64()
            .map(|v| v * self.scale)
    }

    /// The value as a small unsigned integer (states, counts, enums).
    pub fn u8(&self, payload: &[u8]) -> Option<u8> {
        self.f64(payload).map(|v| v.clamp(0.0, 255.0) as u8)
    }

    /// The value as a flag (non-zero is true).
    pub fn bool(&self, payload: &[u8]) -> Option<bool> {
        self.f64(payload).map(|v| v != 0.0)
    }

    /// `topic.field`, for saying what was read.
    pub fn describe(&self, topic: &str) -> String {
        if self.scale == 1.0 {
            format!("{topic}.{}", self.name)
        } else {
            format!("{topic}.{} × {}", self.name, self.scale)
        }
    }
}

/// Every flag of a format whose name passes `keep`, in order: its `bool` fields and its
/// `uint8_t` ones (`failsafe_flags.battery_warning` is a level, set when not zero).
pub fn flag_fields(fields: &[FlatField], keep: impl Fn(&str) -> bool) -> Vec<Field> {
    fields
        .iter()
        .filter(|f| matches!(f.ty, BasicType::Bool | BasicType::UInt8) && keep(&f.name))
        .take(64)
        .map(|f| Field {
            name: f.name.clone(),
            ty: f.ty,
            offset: f.offset,
            scale: 1.0,
        })
        .collect()
}

/// The flags set in a payload, as a bit mask over `flags`.
pub fn flag_mask(flags: &[Field], payload: &[u8]) -> u64 {
    flags
        .iter()
        .enumerate()
        .filter(|(_, f)| f.bool(payload) == Some(true))
        .fold(0, |mask, (i, _)| mask | (1 << i))
}
