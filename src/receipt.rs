//! The receive-log record: one JSON line per frame that passed its checks, with exactly the
//! schema of docs/design.md ("Receiver JSONL"): the nine keys in order, then the optional ones.
//! Writing is hand-rolled (one pass into a byte buffer) because it runs once per frame; reading a
//! line back goes through serde.

use crate::wire::fields::{self, FieldSelection};
use crate::wire::signing::Signature;
use crate::wire::Frame;
use serde::Deserialize;

/// How a receipt line is written: which optional keys, and which messages carry `fields`.
#[derive(Debug, Clone, Default)]
pub struct LineOptions {
    /// Messages whose decoded payload goes in `fields`.
    pub fields_for: FieldSelection,
    /// Write `sig` ("ok"/"bad") on signed frames: only meaningful when keys are configured.
    pub signatures_checked: bool,
}

/// When and where a frame arrived.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    /// Receiver UTC clock, nanoseconds since the Unix epoch.
    pub utc_ns: i64,
    /// `CLOCK_MONOTONIC` in nanoseconds; `None` for records converted from a `.tlog`.
    pub mono_ns: Option<u64>,
    /// The link name, already a JSON string literal with its quotes (see [`json_string`]).
    pub link_json: &'a str,
    /// The UDP peer or serial device, as a JSON string literal, when known.
    pub src_json: Option<&'a str>,
}

/// A JSON string literal, quotes included.
pub fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string always serialises")
}

pub use crate::utc::UtcMillis;

/// Appends one receipt line, newline included.
pub fn write_line(
    out: &mut Vec<u8>,
    clock: &mut UtcMillis,
    arrival: &Arrival<'_>,
    frame: &Frame<'_>,
    options: &LineOptions,
) {
    out.extend_from_slice(br#"{"recv_utc":""#);
    clock.write(out, arrival.utc_ns);
    out.extend_from_slice(br#"","mono_ns":"#);
    let mut digits = itoa::Buffer::new();
    match arrival.mono_ns {
        Some(ns) => out.extend_from_slice(digits.format(ns).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","link":"#);
    out.extend_from_slice(arrival.link_json.as_bytes());
    // Integers written by itoa: core::fmt's `write!` cost a fifth of the line.
    put_int(out, &mut digits, br#","sysid":"#, frame.sysid.into());
    put_int(out, &mut digits, br#","compid":"#, frame.compid.into());
    put_int(out, &mut digits, br#","msgid":"#, frame.msgid);
    out.extend_from_slice(br#","msg":""#);
    out.extend_from_slice(frame.name.as_bytes());
    put_int(out, &mut digits, br#"","seq":"#, frame.seq.into());
    put_int(out, &mut digits, br#","len":"#, frame.payload.len() as u32);
    put_int(
        out,
        &mut digits,
        br#","ver":"#,
        frame.version.number().into(),
    );
    if frame.signature != Signature::Absent {
        out.extend_from_slice(br#","signed":true"#);
        if options.signatures_checked {
            out.extend_from_slice(match frame.signature {
                Signature::Ok => br#","sig":"ok""#,
                _ => br#","sig":"bad""#,
            });
        }
    }
    if let Some(src) = arrival.src_json {
        out.extend_from_slice(br#","src":"#);
        out.extend_from_slice(src.as_bytes());
    }
    if options.fields_for.includes(frame.msgid) {
        let mark = out.len();
        out.extend_from_slice(br#","fields":"#);
        if !fields::write_json(out, frame.msgid, frame.payload) {
            out.truncate(mark);
        }
    }
    out.extend_from_slice(b"}\n");
}

fn put_int(out: &mut Vec<u8>, digits: &mut itoa::Buffer, key: &[u8], value: u32) {
    out.extend_from_slice(key);
    out.extend_from_slice(digits.format(value).as_bytes());
}

/// A receipt line read back: the one reader of the receive log's lines (`analyze`, the range,
/// the publisher's subjects, tests). The decoded payload is kept as it was written and parsed
/// only when asked for ([`ReceiptRecord::fields`]), so routing a line costs little.
#[derive(Debug, Clone, Deserialize)]
pub struct ReceiptRecord {
    pub recv_utc: String,
    pub mono_ns: Option<u64>,
    pub link: String,
    pub sysid: u8,
    pub compid: u8,
    pub msgid: u32,
    pub msg: String,
    pub seq: u8,
    pub len: u8,
    #[serde(default)]
    pub ver: Option<u8>,
    #[serde(default)]
    pub signed: Option<bool>,
    #[serde(default)]
    pub sig: Option<String>,
    #[serde(default)]
    pub src: Option<String>,
    #[serde(default, rename = "fields")]
    pub fields_json: Option<Box<serde_json::value::RawValue>>,
}

impl ReceiptRecord {
    /// The decoded payload (`fields`), when the line has it.
    pub fn fields(&self) -> Option<serde_json::Value> {
        serde_json::from_str(self.fields_json.as_ref()?.get()).ok()
    }
}

/// The nine keys every receipt starts with, in order.
#[cfg(test)]
const REQUIRED_KEYS: [&str; 9] = [
    "recv_utc", "mono_ns", "link", "sysid", "compid", "msgid", "msg", "seq", "len",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::signing::SigningKeys;
    use crate::wire::{DatagramScanner, ScanItem};

    /// The receipt line of a v2 HEARTBEAT (sysid 4, compid 1, seq 17, quadrotor/ardupilot)
    /// arriving as `arrival` says.
    fn heartbeat_line(arrival: &Arrival, options: &LineOptions) -> String {
        let mut bytes = vec![0xFD, 9, 0, 0, 17, 4, 1, 0, 0, 0];
        bytes.extend_from_slice(&[0, 0, 0, 0, 2, 3, 81, 4, 3]);
        let crc = mavlink::calculate_crc(&bytes[1..], 50);
        bytes.extend_from_slice(&crc.to_le_bytes());
        let keys = SigningKeys::default();
        let Some(ScanItem::Frame(frame)) = DatagramScanner::new(&bytes, &keys).next() else {
            panic!("no frame");
        };
        let mut out = Vec::new();
        write_line(
            &mut out,
            &mut UtcMillis::default(),
            arrival,
            &frame,
            options,
        );
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn writes_the_design_example_line_with_keys_in_order() {
        let utc_ns = crate::utc::parse_utc_ns("2026-09-24T14:32:03.912Z").unwrap() + 345_678;
        let link = json_string("radio1");
        let arrival = Arrival {
            utc_ns,
            mono_ns: Some(81234567890123),
            link_json: &link,
            src_json: None,
        };
        assert_eq!(
            heartbeat_line(&arrival, &LineOptions::default()),
            "{\"recv_utc\":\"2026-09-24T14:32:03.912Z\",\"mono_ns\":81234567890123,\"link\":\"radio1\",\"sysid\":4,\"compid\":1,\"msgid\":0,\"msg\":\"HEARTBEAT\",\"seq\":17,\"len\":9,\"ver\":2}\n"
        );
    }

    #[test]
    fn optional_keys_follow_and_the_line_reads_back() {
        let link = json_string("usb \"0\"");
        let src = json_string("127.0.0.1:5000");
        let arrival = Arrival {
            utc_ns: -1,
            mono_ns: None,
            link_json: &link,
            src_json: Some(&src),
        };
        let options = LineOptions {
            fields_for: FieldSelection::Only(vec![0]),
            signatures_checked: false,
        };
        let text = heartbeat_line(&arrival, &options);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let keys = crate::test_support::json_keys(&value);
        assert_eq!(&keys[..9], &REQUIRED_KEYS);
        let record: ReceiptRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(record.recv_utc, "1969-12-31T23:59:59.999Z");
        assert_eq!(record.mono_ns, None);
        assert_eq!(record.link, "usb \"0\"");
        assert_eq!(record.src.as_deref(), Some("127.0.0.1:5000"));
        assert_eq!(record.fields().unwrap()["base_mode"], 81);
    }
}
