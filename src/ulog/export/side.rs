//! The small tables beside the topics: parameters (initial, changed and defaults), logged
//! messages, information (multi-part values joined) and dropouts, gathered while the log is read
//! and written at its end.

use super::ExportError;
use crate::ulog::record::{level_name, KeyValue, Record};
use crate::ulog::table::{Cell, Codec, Column, FileFormat, Kind, TableWriter};
use crate::ulog::value::Value;
use std::collections::HashMap;
use std::path::Path;

/// Where a side table's row was read: its record's message number and byte offset, the two
/// columns every side table but info ends with.
#[derive(Clone, Copy)]
pub(crate) struct Citation {
    message: u64,
    offset: u64,
}

/// A row of a side table with its citation.
type Cited<T> = (T, Citation);

/// A parameter: kind, timestamp, name, type, value.
type ParameterRow = (String, u64, String, String, f64);

/// A logged message: timestamp, level, tag, text.
type LoggedRow = (u64, u8, Option<u16>, String);

/// Rows of the side tables, gathered while reading (they are small: a few thousand rows).
#[derive(Default)]
pub(crate) struct Side {
    pub(crate) parameters: Vec<Cited<ParameterRow>>,
    pub(crate) logged: Vec<Cited<LoggedRow>>,
    /// key, type, value, is multi, index
    pub(crate) info: Vec<(String, String, String, bool, u32)>,
    /// timestamp, duration
    pub(crate) dropouts: Vec<Cited<(u64, u16)>>,
    /// The next index of each multi-info key.
    pub(crate) multi_index: HashMap<String, u32>,
}

impl Side {
    /// Takes the record if it belongs to a side table (`clock`: the log's time so far; the
    /// record's message number and byte offset, for the tables' citations).
    pub(crate) fn take(&mut self, record: &Record, clock: u64, message: u64, offset: u64) {
        let at = Citation { message, offset };
        let parameter = |kind: &str, kv: &KeyValue| {
            (
                (
                    kind.to_string(),
                    clock,
                    kv.key.to_string(),
                    kv.type_name.to_string(),
                    param_value(&kv.decode()),
                ),
                at,
            )
        };
        match record {
            Record::Parameter { initial, kv } => self
                .parameters
                .push(parameter(if *initial { "initial" } else { "change" }, kv)),
            Record::DefaultParameter { default_types, kv } => {
                for (bit, kind) in [(0, "default_system"), (1, "default_current_setup")] {
                    if default_types & (1 << bit) != 0 {
                        self.parameters.push(parameter(kind, kv));
                    }
                }
            }
            Record::Logged(l) => self
                .logged
                .push(((l.timestamp, l.level, l.tag, l.text()), at)),
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
            Record::Dropout { duration_ms } => self.dropouts.push(((clock, *duration_ms), at)),
            _ => {}
        }
    }
}

pub(crate) fn param_value(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

pub(crate) fn write_side_tables(
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
            ],
        )
        .write_cited(&side.parameters, |(kind, ts, name, ty, value)| {
            vec![
                Cell::Text(kind.as_bytes()),
                Cell::UInt(*ts),
                Cell::Text(name.as_bytes()),
                Cell::Text(ty.as_bytes()),
                Cell::Double(*value),
            ]
        })?,
        table(
            "logged_messages",
            vec![
                Column::new("timestamp", Kind::UInt64),
                Column::new("level", Kind::UInt8),
                Column::new("level_name", Kind::Text),
                Column::nullable("tag", Kind::UInt16),
                Column::new("text", Kind::Text),
            ],
        )
        .write_cited(&side.logged, |(ts, level, tag, text)| {
            vec![
                Cell::UInt(*ts),
                Cell::UInt(u64::from(*level)),
                Cell::Text(level_name(*level).as_bytes()),
                tag.map_or(Cell::Null, |g| Cell::UInt(u64::from(g))),
                Cell::Text(text.as_bytes()),
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
            ],
        )
        .write_cited(&side.dropouts, |(ts, duration)| {
            vec![Cell::UInt(*ts), Cell::UInt(u64::from(*duration))]
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

    /// Writes cited rows: the cells `cells` makes of each, then its message and offset columns.
    fn write_cited<'r, R>(
        mut self,
        rows: &'r [Cited<R>],
        cells: impl Fn(&'r R) -> Vec<Cell<'r>>,
    ) -> Result<String, ExportError> {
        self.columns.push(Column::new("message", Kind::UInt64));
        self.columns.push(Column::new("offset", Kind::UInt64));
        self.write(rows, |(row, at)| {
            let mut c = cells(row);
            c.extend([Cell::UInt(at.message), Cell::UInt(at.offset)]);
            c
        })
    }
}
