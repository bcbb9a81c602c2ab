//! The ground's receipts in the MCAP file, per vehicle and message: `/ground/<sysid>/<msg>`.
//!
//! Each message is the receipt as the ground recorded it: a receive log's line as it is (the
//! link, the stamps, and `fields`, the decoded payload, for the messages the daemon's `fields`
//! setting named); a `.tlog`'s frame as `tlog convert` writes it, with every message's fields
//! decoded (the bytes are there). The schema of a channel is the receipt's, with the fields of
//! its MAVLink message as the dialect defines them.
//!
//! Log time: the receipt's stamp placed on the sortie's axis as the timeline places the ground's
//! entries (through the record's own SYSTEM_TIME receipts, else its clock and the used anchor;
//! [`crate::sortie::axis`]). As on the timeline, receipts placed further than 60 s from the
//! flight log's first and last sample are left out (a day's receive log holds other sorties);
//! with no anchor at all, every receipt is written at its own stamp.
//!
//! Streamed: each file is read line by line, or record by record, once more.

use super::{McapError, McapOut};
use crate::monitor::parse_utc_ns;
use crate::receipt::{self, Arrival, LineOptions, ReceiptRecord, UtcMillis};
use crate::sortie::axis::{BootToUtc, StampToBoot};
use crate::sortie::timeline::{Sortie, SORTIE_MARGIN_NS};
use crate::tlog::read_tlog;
use crate::ulog::json::{float_schema, SCHEMA_DRAFT};
use crate::wire::fields::FieldSelection;
use crate::wire::signing::SigningKeys;
use crate::wire::table::{self, FieldType};
use crate::wire::ScanItem;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The channel of system `sysid`'s message `msg`.
pub fn ground_channel(sysid: u8, msg: &str) -> String {
    format!("/ground/{sysid}/{msg}")
}

/// One ground file and the record (in [`Sortie::records`]) it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroundFile {
    /// A receive log (receiver JSONL).
    Receipts { path: PathBuf, record: usize },
    /// A `.tlog`, its frames linked as `tlog convert` names them (the file's stem).
    Tlog {
        path: PathBuf,
        record: usize,
        link: String,
    },
}

/// What the ground part wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroundWritten {
    pub receipts: u64,
    /// Left out: placed outside the sortie.
    pub outside: u64,
    /// Receive-log lines that are no receipt (said on stderr by `sortie` already).
    pub unreadable: u64,
}

/// The receipt's JSON Schema for MAVLink message `msg` (`msgid`): the receive log's keys, and
/// `fields` as the dialect defines the message.
pub fn receipt_schema(msgid: u32, msg: &str) -> Value {
    let integer = |min: i64, max: u64| json!({"type": "integer", "minimum": min, "maximum": max});
    let fields = match table::lookup(msgid) {
        Some(def) => {
            let mut properties = Map::new();
            for f in def.fields {
                let one = match f.ty {
                    FieldType::U8 => integer(0, u8::MAX.into()),
                    FieldType::I8 => integer(i8::MIN.into(), i8::MAX as u64),
                    FieldType::U16 => integer(0, u16::MAX.into()),
                    FieldType::I16 => integer(i16::MIN.into(), i16::MAX as u64),
                    FieldType::U32 => integer(0, u32::MAX.into()),
                    FieldType::I32 => integer(i32::MIN.into(), i32::MAX as u64),
                    FieldType::U64 => integer(0, u64::MAX),
                    FieldType::I64 => integer(i64::MIN, i64::MAX as u64),
                    FieldType::F32 | FieldType::F64 => float_schema(),
                    FieldType::Char => json!({"type": "string"}),
                };
                let mut schema = match (f.ty, f.count) {
                    (FieldType::Char, n) => {
                        json!({"type": "string", "maxLength": u32::from(n).max(1)})
                    }
                    (_, 0) => one,
                    (_, n) => json!({"type": "array", "items": one, "minItems": n, "maxItems": n}),
                };
                let declared = match f.count {
                    0 => f.ty.xml_name().to_string(),
                    n => format!("{}[{n}]", f.ty.xml_name()),
                };
                schema["description"] = match f.enum_name {
                    Some(e) => format!("{declared} ({e})").into(),
                    None => declared.into(),
                };
                properties.insert(f.name.to_string(), schema);
            }
            let required: Vec<&str> = def.fields.iter().map(|f| f.name).collect();
            json!({
                "type": "object",
                "title": msg,
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            })
        }
        None => json!({"type": "object"}),
    };
    json!({
        "$schema": SCHEMA_DRAFT,
        "title": format!("foxborne.receipt.{msg}"),
        "description": "One receipt of the receive log (docs/receive-log.md)",
        "type": "object",
        "properties": {
            "recv_utc": {"type": "string", "description": "arrival, receiver's UTC clock (RFC 3339, ms)"},
            "mono_ns": {"type": ["integer", "null"]},
            "link": {"type": "string"},
            "sysid": integer(0, 255),
            "compid": integer(0, 255),
            "msgid": {"const": msgid},
            "msg": {"const": msg},
            "seq": integer(0, 255),
            "len": integer(0, 255),
            "ver": {"enum": [1, 2]},
            "signed": {"type": "boolean"},
            "sig": {"enum": ["ok", "bad"]},
            "src": {"type": "string"},
            "fields": fields,
        },
        "required": ["recv_utc", "mono_ns", "link", "sysid", "compid", "msgid", "msg", "seq", "len"],
        "additionalProperties": false,
    })
}

/// Receipts onto channels, created as systems and messages appear.
struct Channels<'o, 'a> {
    out: &'o mut McapOut,
    /// (sysid, msgid) to channel and sequence.
    by_message: HashMap<(u8, u32), (u16, u32)>,
    axis: BootToUtc<'a>,
    /// The flight log's span on the boot clock, widened by the sortie margin.
    span: Option<(i64, i64)>,
    written: GroundWritten,
}

impl Channels<'_, '_> {
    /// Writes one receipt line (`data`, without its newline) stamped `stamp` on its record's
    /// clock, placed by `place`.
    fn receipt(
        &mut self,
        place: &mut StampToBoot<'_>,
        sysid: u8,
        msgid: u32,
        msg: &str,
        stamp: i64,
        data: &[u8],
    ) -> Result<(), McapError> {
        let log_time = match place.boot(stamp) {
            Some(boot) => {
                if self.span.is_some_and(|(lo, hi)| boot < lo || boot > hi) {
                    self.written.outside += 1;
                    return Ok(());
                }
                self.axis.utc(boot).unwrap_or(stamp)
            }
            None => stamp,
        };
        let (channel, sequence) = match self.by_message.get(&(sysid, msgid)) {
            Some(c) => *c,
            None => {
                let schema = self.out.schema(
                    &format!("foxborne.receipt.{msg}"),
                    &receipt_schema(msgid, msg),
                )?;
                let metadata = BTreeMap::from([("sysid".to_string(), sysid.to_string())]);
                let id = self
                    .out
                    .channel(&ground_channel(sysid, msg), schema, &metadata)?;
                (id, 0)
            }
        };
        self.out.write(channel, sequence, log_time, data)?;
        self.by_message
            .insert((sysid, msgid), (channel, sequence.wrapping_add(1)));
        self.written.receipts += 1;
        Ok(())
    }
}

fn read_error(path: &Path, at: String, source: std::io::Error) -> McapError {
    McapError::Read {
        path: path.to_path_buf(),
        at,
        source,
    }
}

/// Writes the receipts of `files` into `out`, placed on `sortie`'s axis.
pub fn write_ground(
    out: &mut McapOut,
    sortie: &Sortie,
    files: &[GroundFile],
) -> Result<GroundWritten, McapError> {
    let mut channels = Channels {
        out,
        by_message: HashMap::new(),
        axis: BootToUtc::new(sortie.used_anchor()),
        span: sortie
            .flight_span
            .map(|(a, b)| (a - SORTIE_MARGIN_NS, b + SORTIE_MARGIN_NS)),
        written: GroundWritten::default(),
    };
    for file in files {
        match file {
            GroundFile::Receipts { path, record } => {
                let mut place = StampToBoot::new(sortie.placement(*record));
                let input = std::fs::File::open(path)
                    .map_err(|e| read_error(path, "its start".into(), e))?;
                let mut reader = std::io::BufReader::with_capacity(1 << 20, input);
                let mut line = Vec::new();
                let mut n = 0u64;
                loop {
                    line.clear();
                    n += 1;
                    let read = reader
                        .read_until(b'\n', &mut line)
                        .map_err(|e| read_error(path, format!("line {n}"), e))?;
                    if read == 0 {
                        break;
                    }
                    let text = line.trim_ascii_end();
                    if text.is_empty() {
                        continue;
                    }
                    let parsed = serde_json::from_slice::<ReceiptRecord>(text)
                        .ok()
                        .and_then(|r| Some((parse_utc_ns(&r.recv_utc)?, r)));
                    let Some((stamp, r)) = parsed else {
                        channels.written.unreadable += 1;
                        continue;
                    };
                    channels.receipt(&mut place, r.sysid, r.msgid, &r.msg, stamp, text)?;
                }
            }
            GroundFile::Tlog { path, record, link } => {
                let mut place = StampToBoot::new(sortie.placement(*record));
                let input = std::fs::File::open(path)
                    .map_err(|e| read_error(path, "its start".into(), e))?;
                let link_json = receipt::json_string(link);
                let options = LineOptions {
                    fields_for: FieldSelection::All,
                    signatures_checked: false,
                };
                let mut clock = UtcMillis::default();
                let mut line = Vec::with_capacity(1024);
                let mut failed: Option<McapError> = None;
                let read = read_tlog(
                    std::io::BufReader::with_capacity(1 << 20, input),
                    &SigningKeys::default(),
                    |r| {
                        let ScanItem::Frame(frame) = r.item else {
                            return Ok(());
                        };
                        let stamp = r.utc_us as i64 * 1000;
                        let arrival = Arrival {
                            utc_ns: stamp,
                            mono_ns: None,
                            link_json: &link_json,
                            src_json: None,
                        };
                        line.clear();
                        receipt::write_line(&mut line, &mut clock, &arrival, &frame, &options);
                        let text = line.trim_ascii_end();
                        channels
                            .receipt(
                                &mut place,
                                frame.sysid,
                                frame.msgid,
                                frame.name,
                                stamp,
                                text,
                            )
                            .map_err(|e| {
                                failed = Some(e);
                                std::io::Error::other("writing the MCAP file failed")
                            })
                    },
                );
                if let Some(e) = failed {
                    return Err(e);
                }
                read.map_err(|e| read_error(path, "a record".into(), e))?;
            }
        }
    }
    Ok(channels.written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receipt_schema_has_the_message_s_fields_as_the_dialect_defines_them() {
        let schema = receipt_schema(0, "HEARTBEAT");
        let fields = &schema["properties"]["fields"];
        assert_eq!(fields["title"], "HEARTBEAT");
        assert_eq!(fields["properties"]["custom_mode"]["maximum"], u32::MAX);
        assert_eq!(
            fields["properties"]["type"]["description"],
            "uint8_t (MAV_TYPE)"
        );
        assert_eq!(schema["properties"]["msg"]["const"], "HEARTBEAT");
        let statustext = receipt_schema(253, "STATUSTEXT");
        assert_eq!(
            statustext["properties"]["fields"]["properties"]["text"]["maxLength"],
            50
        );
        assert_eq!(
            receipt_schema(2, "SYSTEM_TIME")["properties"]["fields"]["required"],
            json!(["time_unix_usec", "time_boot_ms"])
        );
    }
}
