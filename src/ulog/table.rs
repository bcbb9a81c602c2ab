//! Typed column tables for `ulog export`: buffered column by column, and written to Parquet (with
//! the `parquet` crate's column writer) or CSV a row group at a time, so a table of any length
//! costs one row group of memory.
//!
//! Types follow the ULog format: `uint64_t` is a Parquet INT64 annotated unsigned 64-bit,
//! `uint8_t` an INT32 annotated unsigned 8-bit, `float` a FLOAT (never widened), `bool` a
//! BOOLEAN, a `char[n]` array one UTF-8 string (up to its first NUL byte).

use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a table could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("writing {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Parquet {
        path: PathBuf,
        source: parquet::errors::ParquetError,
    },
}

/// The file formats `ulog export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FileFormat {
    Parquet,
    Csv,
}

impl FileFormat {
    pub fn extension(self) -> &'static str {
        match self {
            FileFormat::Parquet => "parquet",
            FileFormat::Csv => "csv",
        }
    }
}

/// How Parquet pages are compressed (CSV is never compressed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Codec {
    /// Fastest to write and read; about the size of the log.
    #[default]
    None,
    /// About half the size on flight logs, about 1.5 times the export time.
    Snappy,
}

/// A column's type, as the ULog format declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float,
    Double,
    Bool,
    Text,
}

impl Kind {
    fn physical(self) -> (Physical, Option<LogicalType>) {
        match self {
            Kind::Int8 => (Physical::INT32, Some(LogicalType::integer(8, true))),
            Kind::UInt8 => (Physical::INT32, Some(LogicalType::integer(8, false))),
            Kind::Int16 => (Physical::INT32, Some(LogicalType::integer(16, true))),
            Kind::UInt16 => (Physical::INT32, Some(LogicalType::integer(16, false))),
            Kind::Int32 => (Physical::INT32, Some(LogicalType::integer(32, true))),
            Kind::UInt32 => (Physical::INT32, Some(LogicalType::integer(32, false))),
            Kind::Int64 => (Physical::INT64, Some(LogicalType::integer(64, true))),
            Kind::UInt64 => (Physical::INT64, Some(LogicalType::integer(64, false))),
            Kind::Float => (Physical::FLOAT, None),
            Kind::Double => (Physical::DOUBLE, None),
            Kind::Bool => (Physical::BOOLEAN, None),
            Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
        }
    }

    /// Bytes one value takes in the buffer (strings: a guess for the memory bound).
    fn width(self) -> usize {
        match self {
            Kind::Int8 | Kind::UInt8 | Kind::Bool => 1,
            Kind::Int16 | Kind::UInt16 => 2,
            Kind::Int32 | Kind::UInt32 | Kind::Float => 4,
            Kind::Int64 | Kind::UInt64 | Kind::Double => 8,
            Kind::Text => 32,
        }
    }
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
    /// Whether a row may have no value (written as a Parquet null, an empty CSV cell).
    pub nullable: bool,
}

impl Column {
    pub fn new(name: impl Into<String>, kind: Kind) -> Column {
        Column {
            name: name.into(),
            kind,
            nullable: false,
        }
    }

    pub fn nullable(name: impl Into<String>, kind: Kind) -> Column {
        Column {
            nullable: true,
            ..Column::new(name, kind)
        }
    }
}

/// The buffered values of one column, in its physical type.
#[derive(Debug)]
enum Values {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Text(Vec<ByteArray>),
}

impl Values {
    fn for_kind(kind: Kind) -> Values {
        match kind {
            Kind::Int8 | Kind::UInt8 | Kind::Int16 | Kind::UInt16 | Kind::Int32 | Kind::UInt32 => {
                Values::I32(Vec::new())
            }
            Kind::Int64 | Kind::UInt64 => Values::I64(Vec::new()),
            Kind::Float => Values::F32(Vec::new()),
            Kind::Double => Values::F64(Vec::new()),
            Kind::Bool => Values::Bool(Vec::new()),
            Kind::Text => Values::Text(Vec::new()),
        }
    }

    fn clear(&mut self) {
        match self {
            Values::I32(v) => v.clear(),
            Values::I64(v) => v.clear(),
            Values::F32(v) => v.clear(),
            Values::F64(v) => v.clear(),
            Values::Bool(v) => v.clear(),
            Values::Text(v) => v.clear(),
        }
    }
}

/// One value handed to [`TableWriter::push`]: the integer kinds take `Int`/`UInt` (the bits of
/// an unsigned 32- or 64-bit value are kept as they are).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'a> {
    Int(i64),
    UInt(u64),
    Float(f32),
    Double(f64),
    Bool(bool),
    Text(&'a [u8]),
    Null,
}

enum Sink {
    Parquet(Box<SerializedFileWriter<BufWriter<File>>>),
    Csv(BufWriter<File>),
}

/// A table being written: values are buffered per column and written out a row group at a
/// time (call [`TableWriter::flush`] when [`TableWriter::buffered_bytes`] is large enough).
pub struct TableWriter {
    path: PathBuf,
    columns: Vec<Column>,
    values: Vec<Values>,
    /// Definition levels of nullable columns (1 = a value, 0 = null).
    defs: Vec<Vec<i16>>,
    rows: usize,
    row_width: usize,
    rows_written: u64,
    sink: Sink,
}

impl TableWriter {
    /// Creates `path` (replacing it) for a table with these columns.
    pub fn create(
        path: &Path,
        format: FileFormat,
        codec: Codec,
        columns: Vec<Column>,
    ) -> Result<Self, TableError> {
        let io = |source| TableError::Io {
            path: path.to_path_buf(),
            source,
        };
        let pq = |source| TableError::Parquet {
            path: path.to_path_buf(),
            source,
        };
        // Replace an existing file by unlinking it first: truncating a file that has data makes
        // ext4 flush it on close (its replace-via-truncate safeguard), 10 times slower here.
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
        let file = BufWriter::with_capacity(16 * 1024, File::create(path).map_err(io)?);
        let sink = match format {
            FileFormat::Parquet => {
                let mut fields = Vec::with_capacity(columns.len());
                for c in &columns {
                    let (physical, logical) = c.kind.physical();
                    let field = Type::primitive_type_builder(&c.name, physical)
                        .with_repetition(if c.nullable {
                            Repetition::OPTIONAL
                        } else {
                            Repetition::REQUIRED
                        })
                        .with_logical_type(logical)
                        .build()
                        .map_err(pq)?;
                    fields.push(Arc::new(field));
                }
                let schema = Type::group_type_builder("schema")
                    .with_fields(fields)
                    .build()
                    .map_err(pq)?;
                // Plain encoding, no statistics or page index: the writer's time goes to the
                // values.
                let props = WriterProperties::builder()
                    .set_compression(match codec {
                        Codec::None => Compression::UNCOMPRESSED,
                        Codec::Snappy => Compression::SNAPPY,
                    })
                    .set_dictionary_enabled(false)
                    .set_statistics_enabled(EnabledStatistics::None)
                    .set_offset_index_disabled(true)
                    .set_created_by(format!("foxborne-receiver {}", env!("CARGO_PKG_VERSION")))
                    .build();
                let writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props))
                    .map_err(pq)?;
                Sink::Parquet(Box::new(writer))
            }
            FileFormat::Csv => {
                let mut file = file;
                let header: Vec<String> = columns.iter().map(|c| csv_text(&c.name)).collect();
                writeln!(file, "{}", header.join(",")).map_err(io)?;
                Sink::Csv(file)
            }
        };
        let row_width = columns.iter().map(|c| c.kind.width()).sum::<usize>().max(1);
        Ok(TableWriter {
            path: path.to_path_buf(),
            values: columns.iter().map(|c| Values::for_kind(c.kind)).collect(),
            defs: columns.iter().map(|_| Vec::new()).collect(),
            columns,
            rows: 0,
            row_width,
            rows_written: 0,
            sink,
        })
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// Bytes of values waiting for the next row group (strings estimated).
    pub fn buffered_bytes(&self) -> usize {
        self.rows * self.row_width
    }

    /// Rows written so far, buffered ones included.
    pub fn rows(&self) -> u64 {
        self.rows_written + self.rows as u64
    }

    /// Appends a value to column `i`; call once per column, in order, for each row, then
    /// [`TableWriter::end_row`]. A value of the wrong kind is stored as the column's zero.
    #[inline]
    pub fn push(&mut self, i: usize, cell: Cell<'_>) {
        if self.columns[i].nullable {
            self.defs[i].push(i16::from(cell != Cell::Null));
            if cell == Cell::Null {
                return;
            }
        }
        match &mut self.values[i] {
            Values::I32(v) => v.push(match cell {
                Cell::Int(x) => x as i32,
                Cell::UInt(x) => x as u32 as i32,
                _ => 0,
            }),
            Values::I64(v) => v.push(match cell {
                Cell::Int(x) => x,
                Cell::UInt(x) => x as i64,
                _ => 0,
            }),
            Values::F32(v) => v.push(match cell {
                Cell::Float(x) => x,
                _ => 0.0,
            }),
            Values::F64(v) => v.push(match cell {
                Cell::Double(x) => x,
                _ => 0.0,
            }),
            Values::Bool(v) => v.push(matches!(cell, Cell::Bool(true))),
            Values::Text(v) => v.push(match cell {
                Cell::Text(t) => ByteArray::from(t.to_vec()),
                _ => ByteArray::from(Vec::new()),
            }),
        }
    }

    /// Direct access for the hot path: the `i32` buffer of column `i` (integer kinds up to 32
    /// bits), and so on. `None` when the column has another physical type or is nullable.
    #[inline]
    pub fn i32s(&mut self, i: usize) -> Option<&mut Vec<i32>> {
        match &mut self.values[i] {
            Values::I32(v) if !self.columns[i].nullable => Some(v),
            _ => None,
        }
    }

    #[inline]
    pub fn i64s(&mut self, i: usize) -> Option<&mut Vec<i64>> {
        match &mut self.values[i] {
            Values::I64(v) if !self.columns[i].nullable => Some(v),
            _ => None,
        }
    }

    #[inline]
    pub fn f32s(&mut self, i: usize) -> Option<&mut Vec<f32>> {
        match &mut self.values[i] {
            Values::F32(v) if !self.columns[i].nullable => Some(v),
            _ => None,
        }
    }

    #[inline]
    pub fn f64s(&mut self, i: usize) -> Option<&mut Vec<f64>> {
        match &mut self.values[i] {
            Values::F64(v) if !self.columns[i].nullable => Some(v),
            _ => None,
        }
    }

    #[inline]
    pub fn bools(&mut self, i: usize) -> Option<&mut Vec<bool>> {
        match &mut self.values[i] {
            Values::Bool(v) if !self.columns[i].nullable => Some(v),
            _ => None,
        }
    }

    /// Counts `n` rows whose values were appended column by column through the typed buffers.
    pub fn add_rows(&mut self, n: usize) {
        self.rows += n;
    }

    /// Marks the row pushed since the last call as complete.
    #[inline]
    pub fn end_row(&mut self) {
        self.rows += 1;
    }

    /// Writes the buffered rows out (one Parquet row group, or CSV lines).
    pub fn flush(&mut self) -> Result<(), TableError> {
        if self.rows == 0 {
            return Ok(());
        }
        let path = self.path.clone();
        let pq = |source| TableError::Parquet {
            path: path.clone(),
            source,
        };
        match &mut self.sink {
            Sink::Parquet(writer) => {
                let mut group = writer.next_row_group().map_err(pq)?;
                let mut i = 0;
                while let Some(mut column) = group.next_column().map_err(pq)? {
                    let defs = self.columns[i].nullable.then_some(&self.defs[i][..]);
                    match (column.untyped(), &self.values[i]) {
                        (ColumnWriter::Int32ColumnWriter(w), Values::I32(v)) => {
                            w.write_batch(v, defs, None).map(drop)
                        }
                        (ColumnWriter::Int64ColumnWriter(w), Values::I64(v)) => {
                            w.write_batch(v, defs, None).map(drop)
                        }
                        (ColumnWriter::FloatColumnWriter(w), Values::F32(v)) => {
                            w.write_batch(v, defs, None).map(drop)
                        }
                        (ColumnWriter::DoubleColumnWriter(w), Values::F64(v)) => {
                            w.write_batch(v, defs, None).map(drop)
                        }
                        (ColumnWriter::BoolColumnWriter(w), Values::Bool(v)) => {
                            w.write_batch(v, defs, None).map(drop)
                        }
                        (ColumnWriter::ByteArrayColumnWriter(w), Values::Text(v)) => {
                            w.write_batch(v, defs, None).map(drop)
                        }
                        _ => unreachable!("column buffers follow the schema"),
                    }
                    .map_err(pq)?;
                    column.close().map_err(pq)?;
                    i += 1;
                }
                group.close().map_err(pq)?;
            }
            Sink::Csv(out) => {
                let mut line = String::new();
                let mut cursors = vec![0usize; self.columns.len()];
                for row in 0..self.rows {
                    line.clear();
                    for (i, column) in self.columns.iter().enumerate() {
                        if i > 0 {
                            line.push(',');
                        }
                        if column.nullable && self.defs[i][row] == 0 {
                            continue;
                        }
                        let at = cursors[i];
                        cursors[i] += 1;
                        csv_cell(&mut line, column.kind, &self.values[i], at);
                    }
                    line.push('\n');
                    out.write_all(line.as_bytes())
                        .map_err(|source| TableError::Io {
                            path: path.clone(),
                            source,
                        })?;
                }
            }
        }
        for v in &mut self.values {
            v.clear();
        }
        for d in &mut self.defs {
            d.clear();
        }
        self.rows_written += self.rows as u64;
        self.rows = 0;
        Ok(())
    }

    /// Flushes and closes the file.
    pub fn finish(mut self) -> Result<u64, TableError> {
        self.flush()?;
        let path = self.path.clone();
        match self.sink {
            Sink::Parquet(writer) => {
                writer.close().map_err(|source| TableError::Parquet {
                    path: path.clone(),
                    source,
                })?;
            }
            Sink::Csv(mut out) => out
                .flush()
                .map_err(|source| TableError::Io { path, source })?,
        }
        Ok(self.rows_written)
    }
}

/// One CSV cell: integers as integers (unsigned kinds unsigned), floats in their shortest form
/// that reads back to the same value (`NaN`, `inf`), text quoted when it must be.
fn csv_cell(line: &mut String, kind: Kind, values: &Values, at: usize) {
    let _ = match values {
        Values::I32(v) => match kind {
            Kind::UInt32 => write!(line, "{}", v[at] as u32),
            _ => write!(line, "{}", v[at]),
        },
        Values::I64(v) => match kind {
            Kind::UInt64 => write!(line, "{}", v[at] as u64),
            _ => write!(line, "{}", v[at]),
        },
        Values::F32(v) => write!(line, "{}", v[at]),
        Values::F64(v) => write!(line, "{}", v[at]),
        Values::Bool(v) => write!(line, "{}", v[at]),
        Values::Text(v) => {
            line.push_str(&csv_text(&String::from_utf8_lossy(v[at].data())));
            Ok(())
        }
    };
}

/// RFC 4180 quoting: only when the text has a comma, quote or line break.
fn csv_text(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_keep_types_nulls_and_quotes() {
        let dir = std::env::temp_dir().join(format!("foxborne-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        let mut t = TableWriter::create(
            &path,
            FileFormat::Csv,
            Codec::None,
            vec![
                Column::new("timestamp", Kind::UInt64),
                Column::new("q[0]", Kind::Float),
                Column::nullable("tag", Kind::UInt16),
                Column::new("text", Kind::Text),
            ],
        )
        .unwrap();
        t.push(0, Cell::UInt(u64::MAX));
        t.push(1, Cell::Float(0.1));
        t.push(2, Cell::Null);
        t.push(3, Cell::Text(b"a, \"b\""));
        t.end_row();
        t.push(0, Cell::UInt(1));
        t.push(1, Cell::Float(f32::NAN));
        t.push(2, Cell::UInt(7));
        t.push(3, Cell::Text(b"x"));
        t.end_row();
        assert_eq!(t.finish().unwrap(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "timestamp,q[0],tag,text\n18446744073709551615,0.1,,\"a, \"\"b\"\"\"\n1,NaN,7,x\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
