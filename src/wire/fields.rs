//! Payload fields read from the raw frame.
//!
//! HEARTBEAT, SYSTEM_TIME and STATUSTEXT are decoded here byte by byte, so a value newer than
//! our dialect (an enum the crate does not know) still gives a receipt with its fields; the gap
//! and latency monitors read them from here too. Any other message named in the config is
//! decoded through the `mavlink` crate's dialect.

use super::Version;
use mavlink::dialects::ardupilotmega::MavMessage;
use mavlink::{MavlinkVersion, Message};
use std::io::Write;

pub const HEARTBEAT: u32 = 0;
pub const SYSTEM_TIME: u32 = 2;
pub const STATUSTEXT: u32 = 253;

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

/// Writes the payload's fields as one JSON object. Returns false (and writes nothing) when the
/// crate's dialect cannot decode it.
pub fn write_json(out: &mut Vec<u8>, version: Version, msgid: u32, payload: &[u8]) -> bool {
    match msgid {
        HEARTBEAT => {
            let h = heartbeat(payload);
            let _ = write!(
                out,
                r#"{{"custom_mode":{},"type":{},"autopilot":{},"base_mode":{},"system_status":{},"mavlink_version":{}}}"#,
                h.custom_mode,
                h.mav_type,
                h.autopilot,
                h.base_mode,
                h.system_status,
                h.mavlink_version
            );
            true
        }
        SYSTEM_TIME => {
            let t = system_time(payload);
            let _ = write!(
                out,
                r#"{{"time_unix_usec":{},"time_boot_ms":{}}}"#,
                t.time_unix_usec, t.time_boot_ms
            );
            true
        }
        STATUSTEXT => {
            let p: [u8; 54] = extended(payload);
            let text_bytes = &p[1..51];
            let end = text_bytes.iter().position(|&b| b == 0).unwrap_or(50);
            let text = String::from_utf8_lossy(&text_bytes[..end]);
            let _ = write!(out, r#"{{"severity":{},"text":"#, p[0]);
            let _ = serde_json::to_writer(&mut *out, &text);
            let _ = write!(
                out,
                r#","id":{},"chunk_seq":{}}}"#,
                u16::from_le_bytes([p[51], p[52]]),
                p[53]
            );
            true
        }
        _ => write_dialect_json(out, version, msgid, payload),
    }
}

fn write_dialect_json(out: &mut Vec<u8>, version: Version, msgid: u32, payload: &[u8]) -> bool {
    let version = match version {
        Version::V1 => MavlinkVersion::V1,
        Version::V2 => MavlinkVersion::V2,
    };
    let Ok(message) = MavMessage::parse(version, msgid, payload) else {
        return false;
    };
    // The crate tags each message with `"type": NAME` and renames MAVLink fields called `type`
    // to `mavtype`; the receipt already names the message, so give the field its MAVLink name.
    let Ok(serde_json::Value::Object(mut map)) = serde_json::to_value(&message) else {
        return false;
    };
    map.remove("type");
    if let Some(v) = map.remove("mavtype") {
        map.insert("type".to_string(), v);
    }
    serde_json::to_writer(out, &map).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_extends_truncated_payloads() {
        // time_boot_ms = 0 cut off by MAVLink 2 trailing-zero truncation.
        let t = system_time(&1_700_000_000_000_000u64.to_le_bytes());
        assert_eq!(t.time_unix_usec, 1_700_000_000_000_000);
        assert_eq!(t.time_boot_ms, 0);
        let h = heartbeat(&[5, 0, 0, 0, 2]);
        assert_eq!((h.custom_mode, h.mav_type, h.autopilot), (5, 2, 0));
    }

    #[test]
    fn heartbeat_with_an_enum_newer_than_the_dialect_still_decodes() {
        let mut out = Vec::new();
        assert!(write_json(
            &mut out,
            Version::V2,
            0,
            &[0, 0, 0, 0, 250, 250, 0, 3, 3]
        ));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["type"], 250);
        assert_eq!(v["autopilot"], 250);
    }

    #[test]
    fn statustext_text_stops_at_nul_and_is_escaped() {
        let mut payload = vec![4u8];
        payload.extend_from_slice(b"PreArm: \"GPS\" bad");
        let mut out = Vec::new();
        write_json(&mut out, Version::V2, STATUSTEXT, &payload);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["severity"], 4);
        assert_eq!(v["text"], "PreArm: \"GPS\" bad");
        assert_eq!(v["id"], 0);
    }

    #[test]
    fn other_messages_decode_through_the_dialect() {
        // ATTITUDE (30): time_boot_ms then six floats.
        let mut payload = 1234u32.to_le_bytes().to_vec();
        for x in [0.5f32, -0.25, 1.0, 0.0, 0.0, 0.0] {
            payload.extend_from_slice(&x.to_le_bytes());
        }
        let mut out = Vec::new();
        assert!(write_json(&mut out, Version::V2, 30, &payload));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["time_boot_ms"], 1234);
        assert_eq!(v["roll"], 0.5);
        assert!(v.get("type").is_none());
    }
}
