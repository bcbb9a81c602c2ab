//! The event definitions a PX4 log embeds: the `metadata_events` multi-information value
//! (xz-compressed libevents JSON) checked against `metadata_events_sha256` (the SHA-256 of the
//! compressed bytes, in hex), decompressed and indexed by event ID.
//!
//! Pure: bytes in, definitions out. Nothing is fetched: a log without them has none.

use super::number::ArgValue;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Largest decompressed definitions accepted (PX4's are about 160 kB): a bound on what a
/// damaged or hostile log can make the reader allocate.
pub const MAX_DECOMPRESSED: usize = 64 << 20;

/// Why embedded definitions cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionsError {
    #[error("metadata_events_sha256 is not a SHA-256 in hex: {0:?}")]
    BadHash(String),
    #[error("the definitions' SHA-256 is {actual}, but metadata_events_sha256 says {expected}")]
    HashMismatch { expected: String, actual: String },
    #[error("the definitions do not decompress as xz: {0}")]
    Decompress(String),
    #[error("the decompressed definitions are larger than {MAX_DECOMPRESSED} bytes")]
    TooLarge,
    #[error("the definitions are not JSON: {0}")]
    Json(String),
    #[error("the definitions have version {0}; libevents reads version 1 and later")]
    Version(i64),
    #[error("the definitions are not shaped as libevents writes them: {0}")]
    Shape(String),
}

/// The fixed-size types an event argument can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
}

impl BaseType {
    pub fn parse(name: &str) -> Option<BaseType> {
        Some(match name {
            "uint8_t" => BaseType::U8,
            "int8_t" => BaseType::I8,
            "uint16_t" => BaseType::U16,
            "int16_t" => BaseType::I16,
            "uint32_t" => BaseType::U32,
            "int32_t" => BaseType::I32,
            "uint64_t" => BaseType::U64,
            "int64_t" => BaseType::I64,
            "float" => BaseType::F32,
            _ => return None,
        })
    }

    pub fn size(self) -> usize {
        match self {
            BaseType::U8 | BaseType::I8 => 1,
            BaseType::U16 | BaseType::I16 => 2,
            BaseType::U32 | BaseType::I32 | BaseType::F32 => 4,
            BaseType::U64 | BaseType::I64 => 8,
        }
    }

    /// Reads one little-endian value from the start of `b` (at least `size()` bytes).
    pub fn read(self, b: &[u8]) -> Option<ArgValue> {
        let b = b.get(..self.size())?;
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        let u = u64::from_le_bytes(w);
        Some(match self {
            BaseType::U8 | BaseType::U16 | BaseType::U32 | BaseType::U64 => ArgValue::UInt(u),
            BaseType::I8 => ArgValue::Int(i64::from(b[0] as i8)),
            BaseType::I16 => ArgValue::Int(i64::from(u as u16 as i16)),
            BaseType::I32 => ArgValue::Int(i64::from(u as u32 as i32)),
            BaseType::I64 => ArgValue::Int(u as i64),
            BaseType::F32 => ArgValue::Float(f64::from(f32::from_bits(u as u32))),
        })
    }
}

/// An enum or bitfield used by event arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumDef {
    pub base: BaseType,
    pub bitfield: bool,
    /// Between the names of set bits (`|` unless the definition says otherwise).
    pub separator: String,
    /// Entry value and description, in the order the JSON lists them.
    pub entries: Vec<(i128, String)>,
}

/// How one argument is read: a plain number, or a number shown through an enum.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgType {
    Basic(BaseType),
    /// The enum's full name, `namespace::name`.
    Enum(String),
}

/// One event's definition.
#[derive(Debug, Clone, PartialEq)]
pub struct EventDef {
    pub name: String,
    pub message: String,
    pub description: Option<String>,
    /// The event group: only `default` events are shown in logs (as Flight Review does).
    pub group: String,
    /// libevents' `type`: `append_health_and_arming_messages` for a failsafe announcement
    /// that a ground station completes with the health reports sent with it.
    pub kind: Option<String>,
    pub namespace: String,
    pub arguments: Vec<ArgType>,
}

/// Definitions indexed by event ID (component ID in the top byte, the event's sub-ID below).
#[derive(Debug, Clone, Default)]
pub struct Definitions {
    events: HashMap<u32, EventDef>,
    enums: HashMap<String, EnumDef>,
}

impl Definitions {
    pub fn event(&self, id: u32) -> Option<&EventDef> {
        self.events.get(&id)
    }

    pub fn enum_def(&self, full_name: &str) -> Option<&EnumDef> {
        self.enums.get(full_name)
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Checks `compressed` against `sha256_hex`, decompresses it and reads the JSON.
    pub fn load(compressed: &[u8], sha256_hex: &str) -> Result<Definitions, DefinitionsError> {
        let expected = sha256_hex.trim_end_matches('\0').to_ascii_lowercase();
        if expected.len() != 64 || !expected.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(DefinitionsError::BadHash(sha256_hex.to_string()));
        }
        let actual = hex(&Sha256::digest(compressed));
        if actual != expected {
            return Err(DefinitionsError::HashMismatch { expected, actual });
        }
        let json = decompress(compressed)?;
        let doc: Json =
            serde_json::from_slice(&json).map_err(|e| DefinitionsError::Json(e.to_string()))?;
        Self::from_json(&doc)
    }

    /// Indexes libevents JSON (`version`, `components` by ID, each with `namespace`, `enums`
    /// and `event_groups` of `events` by sub-ID).
    pub fn from_json(doc: &Json) -> Result<Definitions, DefinitionsError> {
        let shape = |what: &str| DefinitionsError::Shape(what.to_string());
        let version = doc.get("version").and_then(Json::as_i64).unwrap_or(0);
        if version < 1 {
            return Err(DefinitionsError::Version(version));
        }
        let mut defs = Definitions::default();
        let Some(components) = doc.get("components").and_then(Json::as_object) else {
            return Ok(defs);
        };
        for (comp_key, comp) in components {
            let comp_id: u32 = comp_key
                .parse()
                .map_err(|_| shape(&format!("component ID {comp_key:?}")))?;
            let namespace = comp
                .get("namespace")
                .and_then(Json::as_str)
                .ok_or_else(|| shape(&format!("component {comp_key} has no namespace")))?;
            if let Some(enums) = comp.get("enums").and_then(Json::as_object) {
                for (name, e) in enums {
                    defs.enums
                        .insert(format!("{namespace}::{name}"), enum_def(name, e)?);
                }
            }
            let Some(groups) = comp.get("event_groups").and_then(Json::as_object) else {
                continue;
            };
            for (group, g) in groups {
                let Some(events) = g.get("events").and_then(Json::as_object) else {
                    continue;
                };
                for (sub_key, ev) in events {
                    let sub: u32 = sub_key
                        .parse()
                        .map_err(|_| shape(&format!("event ID {sub_key:?}")))?;
                    let id = ((comp_id & 0xff) << 24) | (sub & 0xff_ffff);
                    // The first group that has the ID wins, as libevents searches them.
                    if let std::collections::hash_map::Entry::Vacant(slot) = defs.events.entry(id) {
                        slot.insert(event_def(ev, group, namespace)?);
                    }
                }
            }
        }
        Ok(defs)
    }
}

fn event_def(ev: &Json, group: &str, namespace: &str) -> Result<EventDef, DefinitionsError> {
    let text = |key: &str| ev.get(key).and_then(Json::as_str).map(str::to_string);
    let name = text("name").unwrap_or_default();
    let message = text("message")
        .ok_or_else(|| DefinitionsError::Shape(format!("event {name:?} has no message")))?;
    let mut arguments = Vec::new();
    for arg in ev
        .get("arguments")
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let ty = arg.get("type").and_then(Json::as_str).ok_or_else(|| {
            DefinitionsError::Shape(format!("an argument of {name:?} has no type"))
        })?;
        arguments.push(match BaseType::parse(ty) {
            Some(b) => ArgType::Basic(b),
            None if ty.contains("::") => ArgType::Enum(ty.to_string()),
            None => ArgType::Enum(format!("{namespace}::{ty}")),
        });
    }
    Ok(EventDef {
        name,
        message,
        description: text("description"),
        group: group.to_string(),
        kind: text("type"),
        namespace: namespace.to_string(),
        arguments,
    })
}

fn enum_def(name: &str, e: &Json) -> Result<EnumDef, DefinitionsError> {
    let base = e
        .get("type")
        .and_then(Json::as_str)
        .and_then(BaseType::parse)
        .ok_or_else(|| DefinitionsError::Shape(format!("enum {name:?} has no integer type")))?;
    let mut entries = Vec::new();
    if let Some(map) = e.get("entries").and_then(Json::as_object) {
        for (key, entry) in map {
            let Ok(value) = key.trim().parse::<i128>() else {
                return Err(DefinitionsError::Shape(format!(
                    "enum {name:?} has an entry {key:?} that is not a number"
                )));
            };
            let description = entry
                .get("description")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string();
            entries.push((value, description));
        }
    }
    Ok(EnumDef {
        base,
        bitfield: e
            .get("is_bitfield")
            .and_then(Json::as_bool)
            .unwrap_or(false),
        separator: e
            .get("separator")
            .and_then(Json::as_str)
            .unwrap_or("|")
            .to_string(),
        entries,
    })
}

/// Decompresses xz data into at most [`MAX_DECOMPRESSED`] bytes.
fn decompress(compressed: &[u8]) -> Result<Vec<u8>, DefinitionsError> {
    struct Capped(Vec<u8>);
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0.len() + buf.len() > MAX_DECOMPRESSED {
                return Err(std::io::Error::other("too large"));
            }
            self.0.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Capped(Vec::new());
    let mut input = compressed;
    match lzma_rs::xz_decompress(&mut input, &mut out) {
        Ok(()) => Ok(out.0),
        Err(_) if out.0.len() >= MAX_DECOMPRESSED - (1 << 16) => Err(DefinitionsError::TooLarge),
        Err(e) => Err(DefinitionsError::Decompress(e.to_string())),
    }
}

fn hex(bytes: &[u8]) -> String {
    crate::ulog::value::hex(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Json {
        serde_json::json!({
            "version": 2,
            "components": {
                "1": {
                    "namespace": "px4",
                    "enums": {
                        "sensor_t": {"type": "uint8_t", "entries": {"0": {"description": "Accelerometer"}}},
                    },
                    "event_groups": {
                        "health": {"events": {"5": {"name": "h", "message": "first"}}},
                        "default": {"events": {
                            "5": {"name": "d", "message": "second"},
                            "7": {"name": "s", "message": "{1} failed",
                                  "arguments": [{"name": "a", "type": "sensor_t"}]},
                        }},
                    },
                },
            },
        })
    }

    #[test]
    fn indexes_events_by_component_and_sub_id() {
        let defs = Definitions::from_json(&doc()).unwrap();
        let first = defs.event((1 << 24) | 5).unwrap();
        assert_eq!((first.name.as_str(), first.group.as_str()), ("h", "health"));
        let s = defs.event((1 << 24) | 7).unwrap();
        assert_eq!(s.arguments, vec![ArgType::Enum("px4::sensor_t".into())]);
        assert_eq!(defs.enum_def("px4::sensor_t").unwrap().base, BaseType::U8);
        assert!(defs.event(7).is_none(), "component 0 has no such event");
        let old = serde_json::json!({"version": 0});
        assert_eq!(
            Definitions::from_json(&old).unwrap_err(),
            DefinitionsError::Version(0)
        );
    }

    #[test]
    fn the_hash_is_checked_before_anything_is_decompressed() {
        let bytes = b"not xz";
        let right = hex(&Sha256::digest(bytes));
        assert!(matches!(
            Definitions::load(bytes, &"0".repeat(64)),
            Err(DefinitionsError::HashMismatch { .. })
        ));
        assert!(matches!(
            Definitions::load(bytes, "abc"),
            Err(DefinitionsError::BadHash(_))
        ));
        assert!(matches!(
            Definitions::load(bytes, &right.to_uppercase()),
            Err(DefinitionsError::Decompress(_))
        ));
    }

    #[test]
    fn arguments_read_little_endian() {
        assert_eq!(BaseType::I16.read(&[0xfe, 0xff]), Some(ArgValue::Int(-2)));
        assert_eq!(
            BaseType::F32.read(&1.5f32.to_le_bytes()),
            Some(ArgValue::Float(1.5))
        );
        assert_eq!(BaseType::U32.read(&[1, 2]), None, "too short");
    }
}
