//! The small tables beside the topics: parameters (initial, changed and defaults), logged
//! messages, information (multi-part values joined) and dropouts, gathered while the log is read
//! and written at its end.

use super::ExportError;
use crate::ulog::record::{level_name, Record};
use crate::ulog::table::{Cell, Codec, Column, FileFormat, Kind, TableWriter};
use crate::ulog::value::Value;
use std::collections::HashMap;
use std::path::Path;

/// Rows of the side tables, gathered while reading (they are small: a few thousand rows).
#[derive(Default)]
pub(super) struct Side {
    /// kind, timestamp, name, type, value, message, offset
    pub(super) parameters: Vec<(String, u64, String, String, f64, u64, u64)>,
    /// timestamp, level, tag, text, message, offset
    pub(super) logged: Vec<(u64, u8, Option<u16>, String, u64, u64)>,
    /// key, type, value, is multi, index
    pub(super) info: Vec<(String, String, String, bool, u32)>,
    /// timestamp, duration, message, offset
    pub(super) dropouts: Vec<(u64, u16, u64, u64)>,
    /// The next index of each multi-info key.
    pub(super) multi_index: HashMap<String, u32>,
}

impl Side {
    /// Takes the record if it belongs to a side table (`clock`: the log's time so far; the
    /// record's message number and byte offset, for the tables' citations).
    pub(super) fn take(&mut self, record: &Record, clock: u64, message: u64, offset: u64) {
        match record {
            Record::Parameter { initial, kv } => self.parameters.push((
                if *initial { "initial" } else { "change" }.into(),
                clock,
                kv.key.to_string(),
                kv.type_name.to_string(),
                param_value(&kv.decode()),
                message,
                offset,
            )),
            Record::DefaultParameter { default_types, kv } => {
                for (bit, kind) in [(0, "default_system"), (1, "default_current_setup")] {
                    if default_types & (1 << bit) != 0 {
                        self.parameters.push((
                            kind.into(),
                            clock,
                            kv.key.to_string(),
                            kv.type_name.to_string(),
                            param_value(&kv.decode()),
                            message,
                            offset,
                        ));
                    }
                }
            }
            Record::Logged(l) => {
                self.logged
                    .push((l.timestamp, l.level, l.tag, l.text(), message, offset))
            }
            Record::Info(kv) => self.info.push((
                kv.key.to_string(),
                kv.type_name.to_string(),
                kv.decode().to_string(),
                false,
                0,
            )),
            Record::MultiInfo { is_continued, kv } => {
                let n = self.multi_index.entry(kv.key.to_string()).or_insert(0);
                let value = if kv.type_name.starts_with("char[") {
                    crate::ulog::value::text_lossy(kv.value)
                } else {
                    kv.decode().to_string()
                };
                match self.info.last_mut() {
                    Some(last) if *is_continued && last.3 && last.0 == kv.key => {
                        last.2.push_str(&value)
                    }
                    _ => {
                        self.info.push((
                            kv.key.to_string(),
                            kv.type_name.to_string(),
                            value,
                            true,
                            *n,
                        ));
                        *n += 1;
                    }
                }
            }
            Record::Dropout { duration_ms } => {
                self.dropouts.push((clock, *duration_ms, message, offset))
            }
            _ => {}
        }
    }
}

pub(super) fn param_value(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

pub(super) fn write_side_tables(
    dir: &Path,
    format: FileFormat,
    codec: Codec,
    side: &Side,
) -> Result<Vec<String>, ExportError> {
    let ext = format.extension();
    let mut written = Vec::new();

    let name = format!("parameters.{ext}");
    let mut t = TableWriter::create(
        &dir.join(&name),
        format,
        codec,
        vec![
            Column::new("kind", Kind::Text),
            Column::new("timestamp", Kind::UInt64),
            Column::new("name", Kind::Text),
            Column::new("type", Kind::Text),
            Column::new("value", Kind::Double),
            Column::new("message", Kind::UInt64),
            Column::new("offset", Kind::UInt64),
        ],
    )?;
    for (kind, ts, pname, ty, value, message, offset) in &side.parameters {
        t.push(0, Cell::Text(kind.as_bytes()));
        t.push(1, Cell::UInt(*ts));
        t.push(2, Cell::Text(pname.as_bytes()));
        t.push(3, Cell::Text(ty.as_bytes()));
        t.push(4, Cell::Double(*value));
        t.push(5, Cell::UInt(*message));
        t.push(6, Cell::UInt(*offset));
        t.end_row();
    }
    t.finish()?;
    written.push(name);

    let name = format!("logged_messages.{ext}");
    let mut t = TableWriter::create(
        &dir.join(&name),
        format,
        codec,
        vec![
            Column::new("timestamp", Kind::UInt64),
            Column::new("level", Kind::UInt8),
            Column::new("level_name", Kind::Text),
            Column::nullable("tag", Kind::UInt16),
            Column::new("text", Kind::Text),
            Column::new("message", Kind::UInt64),
            Column::new("offset", Kind::UInt64),
        ],
    )?;
    for (ts, level, tag, text, message, offset) in &side.logged {
        t.push(0, Cell::UInt(*ts));
        t.push(1, Cell::UInt(u64::from(*level)));
        t.push(2, Cell::Text(level_name(*level).as_bytes()));
        t.push(3, tag.map_or(Cell::Null, |g| Cell::UInt(u64::from(g))));
        t.push(4, Cell::Text(text.as_bytes()));
        t.push(5, Cell::UInt(*message));
        t.push(6, Cell::UInt(*offset));
        t.end_row();
    }
    t.finish()?;
    written.push(name);

    let name = format!("info.{ext}");
    let mut t = TableWriter::create(
        &dir.join(&name),
        format,
        codec,
        vec![
            Column::new("key", Kind::Text),
            Column::new("type", Kind::Text),
            Column::new("value", Kind::Text),
            Column::new("multi", Kind::Bool),
            Column::new("index", Kind::UInt32),
        ],
    )?;
    for (key, ty, value, multi, index) in &side.info {
        t.push(0, Cell::Text(key.as_bytes()));
        t.push(1, Cell::Text(ty.as_bytes()));
        t.push(2, Cell::Text(value.as_bytes()));
        t.push(3, Cell::Bool(*multi));
        t.push(4, Cell::UInt(u64::from(*index)));
        t.end_row();
    }
    t.finish()?;
    written.push(name);

    let name = format!("dropouts.{ext}");
    let mut t = TableWriter::create(
        &dir.join(&name),
        format,
        codec,
        vec![
            Column::new("timestamp", Kind::UInt64),
            Column::new("duration_ms", Kind::UInt16),
            Column::new("message", Kind::UInt64),
            Column::new("offset", Kind::UInt64),
        ],
    )?;
    for (ts, duration, message, offset) in &side.dropouts {
        t.push(0, Cell::UInt(*ts));
        t.push(1, Cell::UInt(u64::from(*duration)));
        t.push(2, Cell::UInt(*message));
        t.push(3, Cell::UInt(*offset));
        t.end_row();
    }
    t.finish()?;
    written.push(name);
    Ok(written)
}
