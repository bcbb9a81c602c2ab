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
use super::format::{BasicType, FlatField};
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

/// One record rendered, without its "message N of M" and "offset" lines (the total is only
/// known once the whole file has been read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    message: u64,
    offset: u64,
    head: String,
    tail: String,
}

impl Rendered {
    /// The full text, with the place lines between head and tail.
    pub fn with_total(&self, total: u64) -> String {
        let mut out = self.head.clone();
        line(
            &mut out,
            "message",
            format!("{} of {}", grouped(self.message), grouped(total)),
        );
        line(&mut out, "offset", format!("byte {}", grouped(self.offset)));
        out.push_str(&self.tail);
        out
    }
}

/// Renders one record: what it is and its values; a data sample's fields are named from its
/// format.
pub fn render(located: &Located<'_>) -> Rendered {
    let mut head = String::new();
    let mut tail = String::new();
    match &located.record {
        Record::Data(sample) => {
            let sub = sample.subscription;
            line(
                &mut head,
                "topic",
                format!("{} (multi_id {})", sub.topic, sub.multi_id),
            );
            if let Some(ts) = sample.timestamp {
                line(&mut head, "timestamp", boot_time(ts));
            }
            match sample.formats.flatten(&sub.layout.format_name) {
                Ok(fields) => render_fields(&mut tail, &fields, sample.payload),
                Err(e) => line(&mut tail, "fields", format!("(format not available: {e})")),
            }
        }
        other => {
            let kind = format!(
                "{} ({})",
                message_type_name(located.msg_type),
                printable(located.msg_type)
            );
            line(
                &mut head,
                "type",
                if located.message == 0 {
                    "file header".to_string()
                } else {
                    kind
                },
            );
            render_other(&mut tail, other);
        }
    }
    line(&mut tail, "size", format!("{} bytes", located.size));
    if let Record::Unknown { .. } = located.record {
        hex_dump(&mut tail, located.bytes);
    }
    Rendered {
        message: located.message,
        offset: located.offset,
        head,
        tail,
    }
}

/// Bytes shown per line of a hex dump, and lines shown at most.
const HEX_PER_LINE: usize = 16;
const HEX_LINES: usize = 8;

/// A hex dump of the first bytes of `raw`, one `bytes` line per 16 bytes.
fn hex_dump(out: &mut String, raw: &[u8]) {
    for (i, chunk) in raw.chunks(HEX_PER_LINE).take(HEX_LINES).enumerate() {
        let text: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        line(out, if i == 0 { "bytes" } else { "" }, text.join(" "));
    }
    if raw.len() > HEX_PER_LINE * HEX_LINES {
        line(
            out,
            "",
            format!("... {} more bytes", raw.len() - HEX_PER_LINE * HEX_LINES),
        );
    }
}

/// A message the reader could frame but not decode: what was wrong and its raw bytes.
fn render_malformed(
    message: u64,
    offset: u64,
    size: u64,
    kind: &str,
    detail: &str,
    raw: &[u8],
) -> Rendered {
    let mut head = String::new();
    let mut tail = String::new();
    match raw.get(2) {
        Some(t) if kind != "zero run" => line(
            &mut head,
            "type",
            format!("{kind} ({}), MALFORMED", printable(*t)),
        ),
        _ => line(&mut head, "type", format!("{kind}, MALFORMED")),
    }
    line(&mut head, "problem", detail);
    if raw.len() >= 5 && raw[2] == b'D' {
        line(&mut tail, "msg_id", u16::from_le_bytes([raw[3], raw[4]]));
    }
    line(&mut tail, "size", format!("{size} bytes"));
    hex_dump(&mut tail, raw);
    Rendered {
        message,
        offset,
        head,
        tail,
    }
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
        match f.array {
            Some((n, base_len)) if fields[i..].len() >= n as usize => {
                let base = &f.name[..base_len];
                let group = &fields[i..i + n as usize];
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
                i += n as usize;
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
/// "message N of M" line. A fatal problem before the target is an error; one after it only ends
/// the count, and a note says so.
pub fn inspect<R: std::io::Read>(input: R, target: Target) -> Result<String, InspectError> {
    let mut reader = super::reader::StreamReader::new(input);
    let mut found: Option<Rendered> = None;
    let mut note = String::new();
    while let Some(item) = reader.next_record() {
        let located = match item {
            Ok(l) => l,
            Err(super::ReadError::Malformed {
                offset,
                message,
                size,
                kind,
                detail,
            }) => {
                // A malformed message a report cites must be shown too, from its raw bytes.
                let hit = found.is_none()
                    && match target {
                        Target::Message(n) => message == n && size > 0 && kind != "zero run",
                        Target::Offset(b) => offset <= b && b < offset + size.max(1),
                    };
                if hit {
                    let raw = reader.last_message_bytes().to_vec();
                    found = Some(render_malformed(
                        message, offset, size, &kind, &detail, &raw,
                    ));
                    if let Target::Offset(b) = target {
                        if b != offset {
                            note = format!(
                                "(byte {} is inside this message, which starts at byte {})\n",
                                grouped(b),
                                grouped(offset)
                            );
                        }
                    }
                }
                continue;
            }
            Err(e) if found.is_none() && e.is_fatal() => return Err(e.into()),
            Err(e) if e.is_fatal() => {
                note.push_str(&format!(
                    "(the count stops at a problem after this message: {e})\n"
                ));
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
            found = Some(render(&located));
        }
    }
    let total = reader.decoder().message_count();
    match found {
        Some(rendered) => Ok(format!("{note}{}", rendered.with_total(total))),
        None => Err(match target {
            Target::Message(wanted) => InspectError::NoSuchMessage { wanted, total },
            Target::Offset(wanted) => InspectError::NoSuchOffset {
                wanted,
                size: reader.position(),
            },
        }),
    }
}
