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
    let table = |stem: &str, columns: Vec<Column>| SideTable {
        dir,
        format,
        codec,
        stem: stem.to_string(),
        columns,
    };
    Ok(vec![
        table(
            "parameters",
            vec![
                Column::new("kind", Kind::Text),
                Column::new("timestamp", Kind::UInt64),
                Column::new("name", Kind::Text),
                Column::new("type", Kind::Text),
                Column::new("value", Kind::Double),
                Column::new("message", Kind::UInt64),
                Column::new("offset", Kind::UInt64),
            ],
        )
        .write(
            &side.parameters,
            |(kind, ts, name, ty, value, message, offset)| {
                vec![
                    Cell::Text(kind.as_bytes()),
                    Cell::UInt(*ts),
                    Cell::Text(name.as_bytes()),
                    Cell::Text(ty.as_bytes()),
                    Cell::Double(*value),
                    Cell::UInt(*message),
                    Cell::UInt(*offset),
                ]
            },
        )?,
        table(
            "logged_messages",
            vec![
                Column::new("timestamp", Kind::UInt64),
                Column::new("level", Kind::UInt8),
                Column::new("level_name", Kind::Text),
                Column::nullable("tag", Kind::UInt16),
                Column::new("text", Kind::Text),
                Column::new("message", Kind::UInt64),
                Column::new("offset", Kind::UInt64),
            ],
        )
        .write(&side.logged, |(ts, level, tag, text, message, offset)| {
            vec![
                Cell::UInt(*ts),
                Cell::UInt(u64::from(*level)),
                Cell::Text(level_name(*level).as_bytes()),
                tag.map_or(Cell::Null, |g| Cell::UInt(u64::from(g))),
                Cell::Text(text.as_bytes()),
                Cell::UInt(*message),
                Cell::UInt(*offset),
            ]
        })?,
        table(
            "info",
            vec![
                Column::new("key", Kind::Text),
                Column::new("type", Kind::Text),
                Column::new("value", Kind::Text),
                Column::new("multi", Kind::Bool),
                Column::new("index", Kind::UInt32),
            ],
        )
        .write(&side.info, |(key, ty, value, multi, index)| {
            vec![
                Cell::Text(key.as_bytes()),
                Cell::Text(ty.as_bytes()),
                Cell::Text(value.as_bytes()),
                Cell::Bool(*multi),
                Cell::UInt(u64::from(*index)),
            ]
        })?,
        table(
            "dropouts",
            vec![
                Column::new("timestamp", Kind::UInt64),
                Column::new("duration_ms", Kind::UInt16),
                Column::new("message", Kind::UInt64),
                Column::new("offset", Kind::UInt64),
            ],
        )
        .write(&side.dropouts, |(ts, duration, message, offset)| {
            vec![
                Cell::UInt(*ts),
                Cell::UInt(u64::from(*duration)),
                Cell::UInt(*message),
                Cell::UInt(*offset),
            ]
        })?,
    ])
}

/// One side table to write: where, how, and its columns.
struct SideTable<'a> {
    dir: &'a Path,
    format: FileFormat,
    codec: Codec,
    stem: String,
    columns: Vec<Column>,
}

impl SideTable<'_> {
    /// Writes `rows`, each as the cells `cells` makes of it; returns the file name.
    fn write<'r, R>(
        self,
        rows: &'r [R],
        cells: impl Fn(&'r R) -> Vec<Cell<'r>>,
    ) -> Result<String, ExportError> {
        let name = format!("{}.{}", self.stem, self.format.extension());
        let mut t =
            TableWriter::create(&self.dir.join(&name), self.format, self.codec, self.columns)?;
        for row in rows {
            for (i, cell) in cells(row).into_iter().enumerate() {
                t.push(i, cell);
            }
            t.end_row();
        }
        t.finish()?;
        Ok(name)
    }
}
