//! Typed column tables for `ulog export`: buffered column by column, and written to Parquet (with
//! the `parquet` crate's typed column writers) or CSV a row group at a time, so a table of any
//! length costs one row group of memory.
//!
//! Types follow the ULog format: `uint64_t` is a Parquet INT64 annotated unsigned 64-bit,
//! `uint8_t` an INT32 annotated unsigned 8-bit, `float` a FLOAT (never widened), `bool` a
//! BOOLEAN, a `char[n]` array one UTF-8 string (up to its first NUL byte).

use bytes::Bytes;
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

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
        let int = |bits, signed| Some(LogicalType::integer(bits, signed));
        match self {
            Kind::Int8 => (Physical::INT32, int(8, true)),
            Kind::UInt8 => (Physical::INT32, int(8, false)),
            Kind::Int16 => (Physical::INT32, int(16, true)),
            Kind::UInt16 => (Physical::INT32, int(16, false)),
            Kind::Int32 => (Physical::INT32, int(32, true)),
            Kind::UInt32 => (Physical::INT32, int(32, false)),
            Kind::Int64 => (Physical::INT64, int(64, true)),
            Kind::UInt64 => (Physical::INT64, int(64, false)),
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
    /// All values' bytes back to back, and where each ends.
    Text(Vec<u8>, Vec<usize>),
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
            Kind::Text => Values::Text(Vec::new(), Vec::new()),
        }
    }

    /// Empties the buffer and gives its memory back: a table that wrote a row group may not
    /// write another for long, and a log has a hundred tables.
    fn release(&mut self) {
        match self {
            Values::I32(v) => *v = Vec::new(),
            Values::I64(v) => *v = Vec::new(),
            Values::F32(v) => *v = Vec::new(),
            Values::F64(v) => *v = Vec::new(),
            Values::Bool(v) => *v = Vec::new(),
            Values::Text(bytes, ends) => {
                *bytes = Vec::new();
                *ends = Vec::new();
            }
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
    Parquet(Box<SerializedFileWriter<RowGroupFile>>),
    Csv(Box<csv::Writer<BufWriter<File>>>),
}

/// A Parquet table's file: what the writer writes is gathered in memory and written to the
/// file once per row group ([`RowGroupFile::write_out`]) or per [`GATHER_MAX`] bytes, instead of
/// once per column chunk (the crate flushes its writer as each column chunk closes): a flight log
/// has thousands of columns, most of them a few hundred values long.
/// The buffer is borrowed from the thread's spare one and given back after each row group, so
/// the hundred tables of a log hold no buffer between their row groups.
struct RowGroupFile {
    file: File,
    buf: Vec<u8>,
}

thread_local! {
    /// The thread's spare row-group buffer (at most one, at most `SPARE_MAX` bytes kept).
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Past this many gathered bytes they are written out at once (a large row group).
const GATHER_MAX: usize = 1 << 20;
/// A larger buffer is freed after use rather than kept as the spare.
const SPARE_MAX: usize = 2 * GATHER_MAX;

impl Write for RowGroupFile {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.capacity() == 0 {
            self.buf = SPARE.take();
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= GATHER_MAX {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(data.len())
    }

    /// Nothing: the bytes go to the file in [`RowGroupFile::write_out`].
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl RowGroupFile {
    /// Writes what was gathered to the file (call after the writer's own `flush`).
    fn write_out(&mut self) -> std::io::Result<()> {
        if self.buf.capacity() == 0 {
            return Ok(());
        }
        let result = self.file.write_all(&self.buf);
        let mut buf = std::mem::take(&mut self.buf);
        if buf.capacity() <= SPARE_MAX {
            buf.clear();
            SPARE.set(buf);
        }
        result
    }
}

/// The writer properties every Parquet table shares (one per codec, built once): plain
/// encoding, no dictionary, statistics, page index or bloom filter, as nothing downstream uses
/// them on tables this size and each costs time per column chunk; the time goes to the values.
fn properties(codec: Codec) -> Arc<WriterProperties> {
    static NONE: OnceLock<Arc<WriterProperties>> = OnceLock::new();
    static SNAPPY: OnceLock<Arc<WriterProperties>> = OnceLock::new();
    let (cell, compression) = match codec {
        Codec::None => (&NONE, Compression::UNCOMPRESSED),
        Codec::Snappy => (&SNAPPY, Compression::SNAPPY),
    };
    cell.get_or_init(|| {
        Arc::new(
            WriterProperties::builder()
                .set_writer_version(WriterVersion::PARQUET_1_0)
                .set_compression(compression)
                .set_dictionary_enabled(false)
                .set_statistics_enabled(EnabledStatistics::None)
                .set_write_page_header_statistics(false)
                .set_offset_index_disabled(true)
                .set_bloom_filter_enabled(false)
                // A row group holds at most ROW_GROUP_MAX_BYTES (4 MiB) of values: write a column in
                // one batch, and cut pages by size only (1 MiB, the default).
                .set_data_page_row_count_limit(1 << 20)
                .set_write_batch_size(1 << 20)
                .set_created_by(format!("foxborne-receiver {}", env!("CARGO_PKG_VERSION")))
                .build(),
        )
    })
    .clone()
}

/// The Parquet schema of a table: a flat group of required or optional primitive columns.
fn schema(columns: &[Column]) -> Result<Type, parquet::errors::ParquetError> {
    let mut fields = Vec::with_capacity(columns.len());
    for c in columns {
        let (physical, logical) = c.kind.physical();
        let field = Type::primitive_type_builder(&c.name, physical)
            .with_repetition(if c.nullable {
                Repetition::OPTIONAL
            } else {
                Repetition::REQUIRED
            })
            .with_logical_type(logical)
            .build()?;
        fields.push(Arc::new(field));
    }
    Type::group_type_builder("schema")
        .with_fields(fields)
        .build()
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

/// The typed buffer accessors of [`TableWriter`], one per physical type: `name: Variant(type)`.
macro_rules! typed_buffers {
    ($($name:ident: $variant:ident($t:ty)),*) => {
        $(
            /// Direct access for the hot path: the buffer of column `i` (integer kinds up to 32
            /// bits share the `i32` one). `None` when the column has another physical type or is
            /// nullable.
            #[inline]
            pub fn $name(&mut self, i: usize) -> Option<&mut Vec<$t>> {
                match &mut self.values[i] {
                    Values::$variant(v) if !self.columns[i].nullable => Some(v),
                    _ => None,
                }
            }
        )*
    };
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
        // Replace an existing file by unlinking it first: truncating a file that has data makes
        // ext4 flush it on close (its replace-via-truncate safeguard), 10 times slower here. In
        // a fresh folder (the usual case) that is one `open`, no `unlink`.
        let new = || File::options().write(true).create_new(true).open(path);
        let file = match new() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::remove_file(path).map_err(io)?;
                new()
            }
            other => other,
        }
        .map_err(io)?;
        let sink = match format {
            FileFormat::Parquet => {
                let pq = |source| TableError::Parquet {
                    path: path.to_path_buf(),
                    source,
                };
                let schema = Arc::new(schema(&columns).map_err(pq)?);
                let file = RowGroupFile {
                    file,
                    buf: Vec::new(),
                };
                let writer =
                    SerializedFileWriter::new(file, schema, properties(codec)).map_err(pq)?;
                Sink::Parquet(Box::new(writer))
            }
            FileFormat::Csv => {
                // RFC 4180 quoting (only when a field needs it), one `\n` per row.
                let mut out = csv::WriterBuilder::new()
                    .terminator(csv::Terminator::Any(b'\n'))
                    .from_writer(BufWriter::with_capacity(16 * 1024, file));
                out.write_record(columns.iter().map(|c| c.name.as_str()))
                    .map_err(|e| io(e.into()))?;
                Sink::Csv(Box::new(out))
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
            Values::Text(bytes, ends) => {
                if let Cell::Text(t) = cell {
                    bytes.extend_from_slice(t);
                }
                ends.push(bytes.len());
            }
        }
    }

    typed_buffers!(
        i32s: I32(i32),
        i64s: I64(i64),
        f32s: F32(f32),
        f64s: F64(f64),
        bools: Bool(bool)
    );

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
        self.write_out(false)
    }

    /// Writes the buffered rows; with `last`, the Parquet footer goes with them.
    fn write_out(&mut self, last: bool) -> Result<(), TableError> {
        if self.rows == 0 && !last {
            return Ok(());
        }
        match &mut self.sink {
            Sink::Parquet(writer) => {
                let pq = |source| TableError::Parquet {
                    path: self.path.clone(),
                    source,
                };
                let io = |source| TableError::Io {
                    path: self.path.clone(),
                    source,
                };
                if self.rows > 0 {
                    write_row_group(writer, &self.columns, &mut self.values, &self.defs)
                        .map_err(pq)?;
                }
                if last {
                    // The footer (and a flush of the crate's own buffer).
                    writer.finish().map_err(pq)?;
                } else {
                    writer.flush().map_err(io)?;
                }
                writer.inner_mut().write_out().map_err(io)?;
            }
            Sink::Csv(out) => {
                let io = |source| TableError::Io {
                    path: self.path.clone(),
                    source,
                };
                let csv_io = |e: csv::Error| io(e.into());
                let mut number = String::new();
                let mut cursors = vec![0usize; self.columns.len()];
                for row in 0..self.rows {
                    for (i, column) in self.columns.iter().enumerate() {
                        if column.nullable && self.defs[i][row] == 0 {
                            out.write_field([]).map_err(csv_io)?;
                            continue;
                        }
                        let at = cursors[i];
                        cursors[i] += 1;
                        number.clear();
                        let field = csv_field(&mut number, column.kind, &self.values[i], at);
                        out.write_field(field).map_err(csv_io)?;
                    }
                    out.write_record(None::<&[u8]>).map_err(csv_io)?;
                }
                if last {
                    out.flush().map_err(io)?;
                }
            }
        }
        for v in &mut self.values {
            v.release();
        }
        for d in &mut self.defs {
            *d = Vec::new();
        }
        self.rows_written += self.rows as u64;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last rows and closes the file; returns the rows written.
    pub fn finish(mut self) -> Result<u64, TableError> {
        self.write_out(true)?;
        Ok(self.rows_written)
    }
}

/// Writes the buffered values as one row group, a column chunk each through the typed writers.
/// Text goes over as slices of one shared buffer, no allocation per value.
fn write_row_group(
    writer: &mut SerializedFileWriter<RowGroupFile>,
    columns: &[Column],
    values: &mut [Values],
    defs: &[Vec<i16>],
) -> Result<(), parquet::errors::ParquetError> {
    let mut group = writer.next_row_group()?;
    let mut i = 0;
    while let Some(mut column) = group.next_column()? {
        let defs = columns[i].nullable.then_some(&defs[i][..]);
        match (column.untyped(), &mut values[i]) {
            (ColumnWriter::Int32ColumnWriter(w), Values::I32(v)) => w.write_batch(v, defs, None),
            (ColumnWriter::Int64ColumnWriter(w), Values::I64(v)) => w.write_batch(v, defs, None),
            (ColumnWriter::FloatColumnWriter(w), Values::F32(v)) => w.write_batch(v, defs, None),
            (ColumnWriter::DoubleColumnWriter(w), Values::F64(v)) => w.write_batch(v, defs, None),
            (ColumnWriter::BoolColumnWriter(w), Values::Bool(v)) => w.write_batch(v, defs, None),
            (ColumnWriter::ByteArrayColumnWriter(w), Values::Text(bytes, ends)) => {
                let all = Bytes::from(std::mem::take(bytes));
                let mut start = 0;
                let texts: Vec<ByteArray> = ends
                    .iter()
                    .map(|&end| {
                        let text = all.slice(start..end);
                        start = end;
                        ByteArray::from(text)
                    })
                    .collect();
                w.write_batch(&texts, defs, None)
            }
            _ => unreachable!("column buffers follow the schema"),
        }?;
        column.close()?;
        i += 1;
    }
    group.close()?;
    Ok(())
}

/// One CSV field: integers as integers (unsigned kinds unsigned), floats in their shortest form
/// that reads back to the same value (`NaN`, `inf`), text as it is (the writer quotes it when it
/// must). Numbers are written into `number`.
fn csv_field<'a>(number: &'a mut String, kind: Kind, values: &'a Values, at: usize) -> &'a [u8] {
    let _ = match values {
        Values::I32(v) => match kind {
            Kind::UInt32 => write!(number, "{}", v[at] as u32),
            _ => write!(number, "{}", v[at]),
        },
        Values::I64(v) => match kind {
            Kind::UInt64 => write!(number, "{}", v[at] as u64),
            _ => write!(number, "{}", v[at]),
        },
        Values::F32(v) => write!(number, "{}", v[at]),
        Values::F64(v) => write!(number, "{}", v[at]),
        Values::Bool(v) => write!(number, "{}", v[at]),
        Values::Text(bytes, ends) => {
            let start = if at == 0 { 0 } else { ends[at - 1] };
            let text = &bytes[start..ends[at]];
            if std::str::from_utf8(text).is_ok() {
                return text;
            }
            // Not UTF-8: the bytes that are not, as U+FFFD, as before.
            number.push_str(&String::from_utf8_lossy(text));
            Ok(())
        }
    };
    number.as_bytes()
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

    /// Every kind, a nullable column and a nullable text, over two row groups and a row count
    /// that is not a multiple of 8 (booleans and levels are bit-packed), read back with the
    /// `parquet` crate's reader: types, annotations, nulls and values as pushed.
    #[test]
    fn parquet_reads_back_with_another_reader() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::record::Field;

        let dir = std::env::temp_dir().join(format!("foxborne-pq-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kinds = [
            Kind::Int8,
            Kind::UInt8,
            Kind::Int16,
            Kind::UInt16,
            Kind::Int32,
            Kind::UInt32,
            Kind::Int64,
            Kind::UInt64,
            Kind::Float,
            Kind::Double,
            Kind::Bool,
            Kind::Text,
        ];
        let mut columns: Vec<Column> = kinds
            .iter()
            .map(|k| Column::new(format!("{k:?}[0].x"), *k))
            .collect();
        columns.push(Column::nullable("tag", Kind::UInt16));
        columns.push(Column::nullable("note", Kind::Text));
        let rows = 1003u64;
        let text = |r: u64| "é,\"x".repeat((r % 5) as usize);
        for codec in [Codec::None, Codec::Snappy] {
            let path = dir.join(format!("{codec:?}.parquet"));
            let mut t =
                TableWriter::create(&path, FileFormat::Parquet, codec, columns.clone()).unwrap();
            for r in 0..rows {
                let i = r as i64;
                t.push(0, Cell::Int(-i % 128));
                t.push(1, Cell::UInt(r % 256));
                t.push(2, Cell::Int(-i * 7));
                t.push(3, Cell::UInt(r * 60));
                t.push(4, Cell::Int(-i * 1_000_003));
                t.push(5, Cell::UInt(u64::from(u32::MAX) - r));
                t.push(6, Cell::Int(i64::MIN + i));
                t.push(7, Cell::UInt(u64::MAX - r));
                t.push(8, Cell::Float(r as f32 * 0.1));
                t.push(9, Cell::Double(-(r as f64) / 3.0));
                t.push(10, Cell::Bool(r % 3 == 0));
                t.push(11, Cell::Text(text(r).as_bytes()));
                t.push(
                    12,
                    if r % 4 == 1 {
                        Cell::Null
                    } else {
                        Cell::UInt(r)
                    },
                );
                let note = format!("n{r}");
                t.push(
                    13,
                    if r % 2 == 0 {
                        Cell::Null
                    } else {
                        Cell::Text(note.as_bytes())
                    },
                );
                t.end_row();
                if r == 500 {
                    t.flush().unwrap();
                }
            }
            assert_eq!(t.finish().unwrap(), rows);

            let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
            assert_eq!(reader.metadata().num_row_groups(), 2);
            assert_eq!(reader.metadata().file_metadata().num_rows(), rows as i64);
            let mut n = 0u64;
            for (r, row) in reader.get_row_iter(None).unwrap().enumerate() {
                let (r, i) = (r as u64, r as i64);
                let got: Vec<Field> = row
                    .unwrap()
                    .get_column_iter()
                    .map(|c| c.1.clone())
                    .collect();
                let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
                let want = vec![
                    Field::Byte((-i % 128) as i8),
                    Field::UByte((r % 256) as u8),
                    Field::Short((-i * 7) as i16),
                    Field::UShort((r * 60) as u16),
                    Field::Int((-i * 1_000_003) as i32),
                    Field::UInt(u32::MAX - r as u32),
                    Field::Long(i64::MIN + i),
                    Field::ULong(u64::MAX - r),
                    Field::Float(r as f32 * 0.1),
                    Field::Double(-(r as f64) / 3.0),
                    Field::Bool(r % 3 == 0),
                    Field::Str(text(r)),
                    if r % 4 == 1 {
                        Field::Null
                    } else {
                        Field::UShort(r as u16)
                    },
                    if r % 2 == 0 {
                        Field::Null
                    } else {
                        Field::Str(format!("n{r}"))
                    },
                ];
                assert_eq!(got, want, "row {r} of {codec:?} ({names:?})");
                n += 1;
            }
            assert_eq!(n, rows);
        }

        // A table without rows is a valid file with the schema and no row group.
        let path = dir.join("empty.parquet");
        let t = TableWriter::create(&path, FileFormat::Parquet, Codec::None, columns).unwrap();
        assert_eq!(t.finish().unwrap(), 0);
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(reader.metadata().num_row_groups(), 0);
        assert_eq!(
            reader
                .metadata()
                .file_metadata()
                .schema_descr()
                .num_columns(),
            14
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
