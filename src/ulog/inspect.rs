//! The evidence inspector: one record decoded and laid out like the "Original record" example,
//! so anyone holding the file can find message N at byte B and check the values.
//!
//! ```text
//! topic        obstacle_distance (multi_id 0)
//! timestamp    1,132,793,000 µs   boot + 1132.793 s
//! message      1,146,099 of 1,388,540
//! offset       byte 53,503,302
//! distances[0..7] 412 406 399 401 388 1999 1999 1999
//! ```

use super::display::grouped;
use super::format::{BasicType, FlatField, FormatRegistry};
use super::record::{level_name, message_type_name, Located, Record};
use super::value::{decode_basic, hex, text_lossy, Value};

/// Width of the label column.
const LABEL: usize = 12;

fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    out.push_str(&format!("{label:<LABEL$} {value}\n"));
}

/// `1,132,793,000 µs   boot + 1132.793 s`
pub fn boot_time(micros: u64) -> String {
    format!(
        "{} µs   boot + {:.3} s",
        grouped(micros),
        micros as f64 / 1e6
    )
}

/// Renders one record. `total` is the number of messages in the file; `formats` names the
/// fields of a data sample.
pub fn render(located: &Located<'_>, total: u64, formats: &FormatRegistry) -> String {
    let mut out = String::new();
    let place = |out: &mut String| {
        line(
            out,
            "message",
            format!("{} of {}", grouped(located.message), grouped(total)),
        );
        line(out, "offset", format!("byte {}", grouped(located.offset)));
    };
    match &located.record {
        Record::Data(sample) => {
            let sub = sample.subscription;
            line(
                &mut out,
                "topic",
                format!("{} (multi_id {})", sub.topic, sub.multi_id),
            );
            if let Some(ts) = sample.timestamp {
                line(&mut out, "timestamp", boot_time(ts));
            }
            place(&mut out);
            match formats.flatten(&sub.layout.format_name) {
                Ok(fields) => render_fields(&mut out, &fields, sample.payload),
                Err(e) => line(&mut out, "fields", format!("(format not available: {e})")),
            }
        }
        other => {
            line(
                &mut out,
                "type",
                format!(
                    "{} ({})",
                    message_type_name(located.msg_type),
                    printable(located.msg_type)
                ),
            );
            place(&mut out);
            render_other(&mut out, other);
        }
    }
    line(&mut out, "size", format!("{} bytes", located.size));
    out
}

fn printable(t: u8) -> String {
    if t.is_ascii_graphic() {
        (t as char).to_string()
    } else {
        format!("0x{t:02X}")
    }
}

fn render_other(out: &mut String, record: &Record<'_>) {
    match record {
        Record::FileHeader(h) => {
            line(out, "version", h.version);
            line(out, "timestamp", boot_time(h.timestamp));
        }
        Record::FlagBits(b) => {
            line(out, "compat", hex(&b.compat));
            line(out, "incompat", hex(&b.incompat));
            line(out, "appended", format!("{:?}", b.appended_offsets));
        }
        Record::Format { name } => line(out, "format", name),
        Record::Info(kv)
        | Record::MultiInfo { kv, .. }
        | Record::Parameter { kv, .. }
        | Record::DefaultParameter { kv, .. } => {
            if let Record::MultiInfo { is_continued, .. } = record {
                line(out, "continued", is_continued);
            }
            if let Record::Parameter { initial, .. } = record {
                line(
                    out,
                    "section",
                    if *initial {
                        "definitions (value at log start)"
                    } else {
                        "data (a change)"
                    },
                );
            }
            if let Record::DefaultParameter { default_types, .. } = record {
                line(out, "defaults", format!("0b{default_types:08b}"));
            }
            line(out, "key", kv.key);
            line(out, "type", kv.type_name);
            line(out, "value", kv.decode());
        }
        Record::Subscription { subscription, .. } => {
            line(
                out,
                "topic",
                format!(
                    "{} (multi_id {})",
                    subscription.topic, subscription.multi_id
                ),
            );
            line(out, "msg_id", subscription.msg_id);
        }
        Record::Unsubscription { msg_id } => line(out, "msg_id", msg_id),
        Record::Logged(l) => {
            line(
                out,
                "level",
                format!("{} ({})", printable(l.level), level_name(l.level)),
            );
            if let Some(tag) = l.tag {
                line(out, "tag", tag);
            }
            line(out, "timestamp", boot_time(l.timestamp));
            line(out, "text", l.text());
        }
        Record::Sync { valid } => line(out, "valid", valid),
        Record::Dropout { duration_ms } => line(out, "duration", format!("{duration_ms} ms")),
        Record::Unknown { .. } | Record::Data(_) => {}
    }
}

/// Field values, arrays grouped on one line (`q[0..3] 1 0 0 0`), char arrays as text, padding
/// and the timestamp (shown above) left out.
fn render_fields(out: &mut String, fields: &[FlatField], payload: &[u8]) {
    let value_at = |f: &FlatField| -> Option<Value> {
        payload
            .get(f.offset..f.offset + f.ty.size())
            .map(|b| decode_basic(f.ty, b))
    };
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        if f.name == "timestamp" || f.name.contains("_padding") {
            i += 1;
            continue;
        }
        match &f.array {
            Some((base, n)) if fields[i..].len() >= *n as usize => {
                let group = &fields[i..i + *n as usize];
                if f.ty == BasicType::Char {
                    let bytes: Vec<u8> = group
                        .iter()
                        .filter_map(|g| payload.get(g.offset).copied())
                        .take_while(|b| *b != 0)
                        .collect();
                    line(out, base, format!("\"{}\"", text_lossy(&bytes)));
                } else {
                    let values: Vec<String> = group
                        .iter()
                        .map(|g| value_at(g).map_or("?".into(), |v| v.to_string()))
                        .collect();
                    line(out, &format!("{base}[0..{}]", n - 1), values.join(" "));
                }
                i += *n as usize;
            }
            _ => {
                line(
                    out,
                    &f.name,
                    value_at(f).map_or("?".into(), |v| v.to_string()),
                );
                i += 1;
            }
        }
    }
}

/// Which record to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// By message number (0 is the file header).
    Message(u64),
    /// By byte offset: the message that starts at, or contains, this byte.
    Offset(u64),
}

/// Why a record could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    #[error("the log has no message {wanted} (it has {total})")]
    NoSuchMessage { wanted: u64, total: u64 },
    #[error("byte {wanted} is past the last message (the log has {size} bytes of messages)")]
    NoSuchOffset { wanted: u64, size: u64 },
    #[error(transparent)]
    Read(#[from] super::error::ReadError),
}

/// Reads the log from `input`, renders the target record, and counts all messages for the
/// "message N of M" line. Reading stops with an error at a fatal problem before the target; a
/// problem after it only ends the count (the total then says "at least").
pub fn inspect<R: std::io::Read>(input: R, target: Target) -> Result<String, InspectError> {
    let mut reader = super::reader::StreamReader::new(input);
    let mut found: Option<Captured> = None;
    let mut note = String::new();
    while let Some(item) = reader.next_record() {
        let located = match item {
            Ok(l) => l,
            Err(e) if found.is_none() && e.is_fatal() => return Err(e.into()),
            Err(e) if e.is_fatal() => {
                note = format!("(reading stopped after it: {e})\n");
                break;
            }
            Err(_) => continue,
        };
        if found.is_some() {
            continue;
        }
        let end = located.offset + u64::from(located.size);
        let hit = match target {
            Target::Message(n) => located.message == n,
            Target::Offset(b) => located.offset <= b && b < end,
        };
        if hit {
            if let Target::Offset(b) = target {
                if b != located.offset {
                    note = format!(
                        "(byte {} is inside this message, which starts at byte {})\n",
                        grouped(b),
                        grouped(located.offset)
                    );
                }
            }
            let initial_parameter =
                matches!(located.record, Record::Parameter { initial: true, .. });
            found = Some(Captured {
                bytes: located.bytes.to_vec(),
                message: located.message,
                offset: located.offset,
                initial_parameter,
            });
        }
    }
    let total = reader.decoder().message_count();
    let Some(captured) = found else {
        return Err(match target {
            Target::Message(wanted) => InspectError::NoSuchMessage { wanted, total },
            Target::Offset(wanted) => InspectError::NoSuchOffset {
                wanted,
                size: reader.position(),
            },
        });
    };
    // Decode the captured bytes again against the final decoder state (its subscriptions and
    // formats; PX4 does not redefine them mid-log).
    let rendered = render_captured(&captured, total, reader.decoder());
    Ok(format!("{note}{rendered}"))
}

/// A found record's bytes and place, kept while the rest of the file is counted.
struct Captured {
    bytes: Vec<u8>,
    message: u64,
    offset: u64,
    initial_parameter: bool,
}

fn render_captured(captured: &Captured, total: u64, decoder: &super::decoder::Decoder) -> String {
    use super::record::{FileHeader, Sample};
    let (bytes, message, offset) = (&captured.bytes[..], captured.message, captured.offset);
    if message == 0 {
        let header = decoder.header().unwrap_or(FileHeader {
            version: bytes[7],
            timestamp: 0,
        });
        let located = Located {
            message,
            offset,
            size: bytes.len() as u32,
            msg_type: 0,
            bytes,
            record: Record::FileHeader(header),
        };
        return render(&located, total, decoder.formats());
    }
    let msg_type = bytes[2];
    if msg_type == b'D' {
        let msg_id = u16::from_le_bytes([bytes[3], bytes[4]]);
        if let Some(subscription) = decoder.subscription(msg_id) {
            let payload = &bytes[5..];
            let timestamp = subscription
                .layout
                .timestamp_offset
                .and_then(|o| payload.get(o..o + 8))
                .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")));
            let located = Located {
                message,
                offset,
                size: bytes.len() as u32,
                msg_type,
                bytes,
                record: Record::Data(Sample {
                    subscription,
                    payload,
                    timestamp,
                }),
            };
            return render(&located, total, decoder.formats());
        }
    }
    // Everything but data decodes without state: run a fresh decoder over a one-message log.
    let mut decoder_for_one = super::decoder::Decoder::new();
    let mut header = super::decoder::MAGIC.to_vec();
    header.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0]);
    let mut one = header;
    one.extend_from_slice(bytes);
    let _ = decoder_for_one.advance(&one, true);
    let _ = decoder_for_one.decode(&one[..16]);
    match decoder_for_one.advance(&one[16..], true) {
        super::decoder::Advance::Message(n) => match decoder_for_one.decode(&one[16..16 + n]) {
            Ok(mut located) => {
                located.message = message;
                located.offset = offset;
                if let Record::Parameter { initial, .. } = &mut located.record {
                    *initial = captured.initial_parameter;
                }
                render(&located, total, decoder.formats())
            }
            Err(e) => format!("message {message} at byte {offset}: {e}\n"),
        },
        _ => format!("message {message} at byte {offset}: could not be decoded on its own\n"),
    }
}
