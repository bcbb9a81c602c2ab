//! Payload fields read from the raw frame, for every message of the dialect, driven by the
//! generated field table ([`super::table`]): one shape for every message, true to the wire.
//!
//! - Field names and order as the message definition gives them (XML order, not wire order).
//! - Integers as integers, enums and bitmasks included, so a value newer than our dialect still
//!   decodes.
//! - `char[N]` as a string cut at the first NUL, one character per byte: ASCII as itself, a byte
//!   above 0x7F as the character of the same value (U+0080..U+00FF), so `text.encode("latin-1")`
//!   in Python gives the bytes back (some messages carry binary data in `char[]`, e.g.
//!   PARAM_EXT_VALUE); any other array as a JSON array.
//! - Floats as the shortest text that reads back to the same `f32` (or `f64`); NaN and the
//!   infinities, which JSON has no number for, as the strings `"NaN"`, `"Infinity"`,
//!   `"-Infinity"` (pymavlink's spelling; `float()` in Python reads them back).
//! - A MAVLink 2 payload cut of its trailing zeros is read as zero-extended to the full length,
//!   so extension fields are always present (zero when the frame did not carry them).
//!
//! Also the typed readers the monitors use ([`heartbeat`], [`system_time`]) and the selection
//! of messages whose fields a receipt carries ([`FieldSelection`]).

use super::table::{self, FieldDef, FieldType};

pub const HEARTBEAT: u32 = 0;
pub const SYSTEM_TIME: u32 = 2;
pub const STATUSTEXT: u32 = 253;
pub const RADIO_STATUS: u32 = 109;
/// ardupilotmega's RADIO, which SiK firmware sent before RADIO_STATUS existed (the corpus's
/// 2013 tlogs): the same fields in the same wire order, read alike.
pub const RADIO: u32 = 166;

/// The messages a receipt carries `fields` for unless the config says otherwise (and `tlog
/// convert` unless `--fields` does): what the monitors read from a receive log replayed
/// (`analyze`, `sortie`): heartbeats, clocks, radios, and the traffic and our vehicles'
/// positions (issue 42), with STATUSTEXT for the investigator.
pub const DEFAULT_FIELDS: [&str; 11] = [
    "HEARTBEAT",
    "SYSTEM_TIME",
    "STATUSTEXT",
    "RADIO_STATUS",
    "RADIO",
    "GLOBAL_POSITION_INT",
    "GPS_RAW_INT",
    "ADSB_VEHICLE",
    "OPEN_DRONE_ID_BASIC_ID",
    "OPEN_DRONE_ID_LOCATION",
    "OPEN_DRONE_ID_SYSTEM",
];
/// [`DEFAULT_FIELDS`] as one comma-separated argument (clap's default for `--fields`).
pub const DEFAULT_FIELDS_ARG: &str = "HEARTBEAT,SYSTEM_TIME,STATUSTEXT,RADIO_STATUS,RADIO,GLOBAL_POSITION_INT,GPS_RAW_INT,ADSB_VEHICLE,OPEN_DRONE_ID_BASIC_ID,OPEN_DRONE_ID_LOCATION,OPEN_DRONE_ID_SYSTEM";

/// A MAVLink 2 payload with its trailing zeros cut, extended back to `len` bytes.
fn extended<const N: usize>(payload: &[u8]) -> [u8; N] {
    let mut full = [0u8; N];
    let n = payload.len().min(N);
    full[..n].copy_from_slice(&payload[..n]);
    full
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    pub custom_mode: u32,
    pub mav_type: u8,
    pub autopilot: u8,
    pub base_mode: u8,
    pub system_status: u8,
    pub mavlink_version: u8,
}

pub fn heartbeat(payload: &[u8]) -> Heartbeat {
    let p: [u8; 9] = extended(payload);
    Heartbeat {
        custom_mode: u32::from_le_bytes([p[0], p[1], p[2], p[3]]),
        mav_type: p[4],
        autopilot: p[5],
        base_mode: p[6],
        system_status: p[7],
        mavlink_version: p[8],
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemTime {
    pub time_unix_usec: u64,
    pub time_boot_ms: u32,
}

pub fn system_time(payload: &[u8]) -> SystemTime {
    let p: [u8; 12] = extended(payload);
    SystemTime {
        time_unix_usec: u64::from_le_bytes(p[..8].try_into().expect("8 bytes")),
        time_boot_ms: u32::from_le_bytes(p[8..12].try_into().expect("4 bytes")),
    }
}

/// RADIO_STATUS, as a SiK radio (and compatible: RFD, mLRS) reports its own link: the local
/// and remote signal and noise in the radio's units, its receive errors and corrected packets
/// (counters that wrap at 65,536), and its transmit buffer's free space in percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RadioStatus {
    pub rxerrors: u16,
    pub fixed: u16,
    pub rssi: u8,
    pub remrssi: u8,
    pub txbuf: u8,
    pub noise: u8,
    pub remnoise: u8,
}

pub fn radio_status(payload: &[u8]) -> RadioStatus {
    let p: [u8; 9] = extended(payload);
    RadioStatus {
        rxerrors: u16::from_le_bytes([p[0], p[1]]),
        fixed: u16::from_le_bytes([p[2], p[3]]),
        rssi: p[4],
        remrssi: p[5],
        txbuf: p[6],
        noise: p[7],
        remnoise: p[8],
    }
}

/// Which messages a receipt carries `fields` for: `fields = "all"`, or a list of names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldSelection {
    All,
    Only(Vec<u32>),
}

impl Default for FieldSelection {
    fn default() -> Self {
        FieldSelection::Only(Vec::new())
    }
}

/// A `fields` setting that names no selection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error("`{0}` is not a message of the ardupilotmega dialect")]
    UnknownMessage(String),
    #[error("`all` stands alone: it cannot be combined with message names")]
    AllWithNames,
}

impl FieldSelection {
    /// `["all"]` is every message; otherwise each name must be a message of the dialect.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Self, SelectionError> {
        if names.iter().any(|n| n.as_ref() == "all") {
            return if names.len() == 1 {
                Ok(FieldSelection::All)
            } else {
                Err(SelectionError::AllWithNames)
            };
        }
        names
            .iter()
            .map(|n| {
                super::dialect::id_of(n.as_ref())
                    .ok_or_else(|| SelectionError::UnknownMessage(n.as_ref().to_string()))
            })
            .collect::<Result<Vec<u32>, _>>()
            .map(FieldSelection::Only)
    }

    pub fn includes(&self, msgid: u32) -> bool {
        match self {
            FieldSelection::All => true,
            FieldSelection::Only(ids) => ids.contains(&msgid),
        }
    }
}

/// Writes the payload's fields as one JSON object. Returns false (and writes nothing) when the
/// dialect does not define `msgid`.
pub fn write_json(out: &mut Vec<u8>, msgid: u32, payload: &[u8]) -> bool {
    let Some(message) = table::lookup(msgid) else {
        return false;
    };
    if payload.len() >= message.len as usize {
        write_fields(out, message.fields, payload);
    } else {
        // Cut of its trailing zeros (MAVLink 2), or a MAVLink 1 payload without extensions.
        let mut extended = [0u8; 256];
        extended[..payload.len()].copy_from_slice(payload);
        write_fields(out, message.fields, &extended);
    }
    true
}

/// The object of `fields` read from `full`, at least as long as the message's payload.
fn write_fields(out: &mut Vec<u8>, fields: &[FieldDef], full: &[u8]) {
    out.push(b'{');
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(field.key.as_bytes());
        write_field(out, field, &full[field.offset as usize..]);
    }
    out.push(b'}');
}

/// A u8 as decimal digits, without a formatter.
#[inline(always)]
fn put_u8(out: &mut Vec<u8>, v: u8) {
    if v >= 100 {
        out.push(b'0' + v / 100);
    }
    if v >= 10 {
        out.push(b'0' + v / 10 % 10);
    }
    out.push(b'0' + v % 10);
}

fn write_field(out: &mut Vec<u8>, field: &FieldDef, at: &[u8]) {
    if field.ty == FieldType::Char {
        let len = (field.count as usize).max(1);
        let text = &at[..len];
        let end = text.iter().position(|&b| b == 0).unwrap_or(len);
        write_string(out, &text[..end]);
    } else if field.count == 0 {
        write_scalar(out, field.ty, at);
    } else {
        out.push(b'[');
        let size = field.ty.size();
        for k in 0..field.count as usize {
            if k > 0 {
                out.push(b',');
            }
            write_scalar(out, field.ty, &at[k * size..]);
        }
        out.push(b']');
    }
}

fn write_scalar(out: &mut Vec<u8>, ty: FieldType, at: &[u8]) {
    let mut ints = itoa::Buffer::new();
    let text = match ty {
        FieldType::U8 | FieldType::Char => return put_u8(out, at[0]),
        FieldType::I8 => ints.format(at[0] as i8),
        FieldType::U16 => ints.format(u16::from_le_bytes([at[0], at[1]])),
        FieldType::I16 => ints.format(i16::from_le_bytes([at[0], at[1]])),
        FieldType::U32 => ints.format(u32::from_le_bytes(le(at))),
        FieldType::I32 => ints.format(i32::from_le_bytes(le(at))),
        FieldType::U64 => ints.format(u64::from_le_bytes(le(at))),
        FieldType::I64 => ints.format(i64::from_le_bytes(le(at))),
        FieldType::F32 => return write_float(out, f32::from_le_bytes(le(at))),
        FieldType::F64 => return write_float(out, f64::from_le_bytes(le(at))),
    };
    out.extend_from_slice(text.as_bytes());
}

fn le<const N: usize>(at: &[u8]) -> [u8; N] {
    at[..N].try_into().expect("field inside the payload")
}

/// A float in its shortest round-trip form, at its own width (an f32 is not widened first, which
/// would print its binary error: 0.1f32 is `0.1`, not `0.10000000149011612`).
#[inline]
fn write_float<F: zmij::Float + Into<f64> + Copy>(out: &mut Vec<u8>, x: F) {
    // Widening only to ask what kind of value it is: exact for every f32.
    let wide: f64 = x.into();
    if wide.is_finite() {
        out.extend_from_slice(zmij::Buffer::new().format_finite(x).as_bytes());
    } else {
        write_non_finite(out, wide.is_nan(), wide.is_sign_negative());
    }
}

fn write_non_finite(out: &mut Vec<u8>, nan: bool, negative: bool) {
    out.extend_from_slice(match (nan, negative) {
        (true, _) => b"\"NaN\"",
        (false, false) => b"\"Infinity\"",
        (false, true) => b"\"-Infinity\"",
    });
}

/// A JSON string of `bytes`, one character per byte (the character of the same value, so a
/// byte above 0x7F is U+0080..U+00FF and nothing is lost): copied as they are when plain ASCII
/// with nothing to escape (the usual case), else through serde_json's escaping.
fn write_string(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes
        .iter()
        .all(|&b| (0x20..0x7F).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        let text: String = bytes.iter().map(|&b| char::from(b)).collect();
        serde_json::to_writer(&mut *out, &text).expect("writing to a Vec cannot fail");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn decode(msgid: u32, payload: &[u8]) -> Value {
        let mut out = Vec::new();
        assert!(write_json(&mut out, msgid, payload));
        serde_json::from_slice(&out).expect("valid JSON")
    }

    #[test]
    fn the_default_selection_is_one_list_in_two_spellings() {
        assert_eq!(DEFAULT_FIELDS.join(","), DEFAULT_FIELDS_ARG);
        assert!(FieldSelection::parse(&DEFAULT_FIELDS).is_ok());
    }

    #[test]
    fn zero_extends_truncated_payloads() {
        // time_boot_ms = 0 cut off by MAVLink 2 trailing-zero truncation.
        let t = system_time(&1_700_000_000_000_000u64.to_le_bytes());
        assert_eq!(t.time_unix_usec, 1_700_000_000_000_000);
        assert_eq!(t.time_boot_ms, 0);
        let h = heartbeat(&[5, 0, 0, 0, 2]);
        assert_eq!((h.custom_mode, h.mav_type, h.autopilot), (5, 2, 0));
        assert_eq!(
            decode(SYSTEM_TIME, &1_700_000_000_000_000u64.to_le_bytes()),
            json!({"time_unix_usec": 1_700_000_000_000_000u64, "time_boot_ms": 0})
        );
        // Longer than our definition (a newer dialect's extensions): the known fields only.
        let mut longer = build_system_time(7, 9).to_vec();
        longer.extend_from_slice(&[1, 2, 3]);
        assert_eq!(
            decode(SYSTEM_TIME, &longer),
            json!({"time_unix_usec": 7, "time_boot_ms": 9})
        );
    }

    fn build_system_time(time_unix_usec: u64, time_boot_ms: u32) -> [u8; 12] {
        let mut p = [0u8; 12];
        p[..8].copy_from_slice(&time_unix_usec.to_le_bytes());
        p[8..].copy_from_slice(&time_boot_ms.to_le_bytes());
        p
    }

    #[test]
    fn typed_readers_agree_with_the_table() {
        let hb = table::lookup(HEARTBEAT).unwrap();
        let offset = |name: &str| hb.fields.iter().find(|f| f.name == name).unwrap().offset;
        assert_eq!(
            [offset("custom_mode"), offset("type"), offset("autopilot")],
            [0, 4, 5]
        );
        assert_eq!(
            [
                offset("base_mode"),
                offset("system_status"),
                offset("mavlink_version")
            ],
            [6, 7, 8]
        );
        let st = table::lookup(SYSTEM_TIME).unwrap();
        assert_eq!(st.fields[0].name, "time_unix_usec");
        assert_eq!((st.fields[0].offset, st.fields[1].offset), (0, 8));
    }

    #[test]
    fn heartbeat_in_definition_order_with_enums_newer_than_the_dialect() {
        let mut out = Vec::new();
        assert!(write_json(
            &mut out,
            HEARTBEAT,
            &[7, 0, 0, 0, 250, 250, 0, 3, 3]
        ));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"type":250,"autopilot":250,"base_mode":0,"custom_mode":7,"system_status":3,"mavlink_version":3}"#
        );
    }

    #[test]
    fn statustext_text_stops_at_nul_and_is_escaped_and_extensions_are_present() {
        let mut payload = vec![4u8];
        payload.extend_from_slice(b"PreArm: \"GPS\" bad\0junk");
        let v = decode(STATUSTEXT, &payload);
        assert_eq!(
            v,
            json!({"severity": 4, "text": "PreArm: \"GPS\" bad", "id": 0, "chunk_seq": 0})
        );
        let mut full = [0u8; 54];
        full[0] = 2;
        full[1..51].fill(b'x');
        full[51..53].copy_from_slice(&513u16.to_le_bytes());
        full[53] = 9;
        let v = decode(STATUSTEXT, &full);
        assert_eq!(v["text"].as_str().unwrap().len(), 50);
        assert_eq!(
            (v["id"].as_u64(), v["chunk_seq"].as_u64()),
            (Some(513), Some(9))
        );
    }

    #[test]
    fn char_bytes_above_ascii_keep_their_value() {
        // PARAM_EXT_VALUE (322) carries binary values in param_value: char[128] after two u16
        // and param_id: char[16].
        let mut payload = vec![0u8; 20];
        payload.extend_from_slice(&[0xE2, 0x82, 0x11, b'"', 0xFF]);
        let v = decode(322, &payload);
        let text = v["param_value"].as_str().unwrap();
        let bytes: Vec<u8> = text.chars().map(|c| c as u32 as u8).collect();
        assert!(text.chars().all(|c| (c as u32) < 256));
        assert_eq!(bytes, [0xE2, 0x82, 0x11, b'"', 0xFF]);
    }

    #[test]
    fn floats_are_shortest_round_trip_and_non_finite_is_a_string() {
        // ATTITUDE (30): time_boot_ms then six floats.
        let mut payload = 1234u32.to_le_bytes().to_vec();
        let values = [-0.000_698_194_3f32, 0.1, 1.0, f32::NAN, f32::INFINITY, 3e38];
        for x in values {
            payload.extend_from_slice(&x.to_le_bytes());
        }
        let mut out = Vec::new();
        assert!(write_json(&mut out, 30, &payload));
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(r#""roll":-0.0006981943,"#), "{text}");
        assert!(text.contains(r#""pitch":0.1,"yaw":1.0,"#), "{text}");
        assert!(
            text.contains(r#""rollspeed":"NaN","pitchspeed":"Infinity","yawspeed":3e+38"#),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["roll"].as_f64().unwrap() as f32, values[0]);
        assert_eq!(v["yawspeed"].as_f64().unwrap() as f32, 3e38);
    }

    #[test]
    fn arrays_are_arrays_and_signed_integers_keep_their_sign() {
        // SERVO_OUTPUT_RAW is scalars; RC_CHANNELS_OVERRIDE too; use GPS_INJECT_DATA (123):
        // target_system, target_component, len, data: uint8_t[110].
        let mut payload = vec![1u8, 2, 3];
        payload.extend_from_slice(&[9, 8, 7]);
        let v = decode(123, &payload);
        let data = v["data"].as_array().unwrap();
        assert_eq!(data.len(), 110);
        assert_eq!((data[0].as_u64(), data[2].as_u64()), (Some(9), Some(7)));
        assert_eq!(data[109], 0);
        // SCALED_PRESSURE (29): time_boot_ms, press_abs, press_diff, temperature: int16.
        let mut payload = vec![0u8; 12];
        payload.extend_from_slice(&(-1234i16).to_le_bytes());
        assert_eq!(decode(29, &payload)["temperature"], -1234);
    }

    #[test]
    fn every_message_gives_valid_json_with_every_field_even_from_random_bytes() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for message in table::messages() {
            let mut payload = vec![0u8; message.len as usize];
            for b in payload.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                *b = seed as u8;
            }
            let v = decode(message.id, &payload);
            let keys = crate::test_support::json_keys(&v);
            let names: Vec<&str> = message.fields.iter().map(|f| f.name).collect();
            assert_eq!(keys, names, "{}", message.name);
        }
        assert!(!write_json(&mut Vec::new(), 3, &[]));
    }

    #[test]
    fn selection_parses_all_and_names() {
        assert_eq!(FieldSelection::parse(&["all"]), Ok(FieldSelection::All));
        assert_eq!(
            FieldSelection::parse(&["HEARTBEAT", "STATUSTEXT"]),
            Ok(FieldSelection::Only(vec![0, 253]))
        );
        assert_eq!(
            FieldSelection::parse(&["all", "HEARTBEAT"]),
            Err(SelectionError::AllWithNames)
        );
        assert_eq!(
            FieldSelection::parse(&["NOPE"]),
            Err(SelectionError::UnknownMessage("NOPE".into()))
        );
        assert!(FieldSelection::All.includes(42000));
        assert!(!FieldSelection::default().includes(0));
    }
}
