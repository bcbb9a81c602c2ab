//! `ulog export`: every field of every logged message, one table per topic instance
//! (`<topic>_<multi_id>.parquet` or `.csv`), and small tables beside them for parameters, logged
//! messages, information and dropouts.
//!
//! Columns are named as pyulog flattens a format (`timestamp`, `q[0]`, `esc[3].esc_rpm`, nested
//! padding included, trailing padding left out as it is not written) and typed as the format
//! declares ([`super::table`]); a `char[n]` array is one text column named without `[i]`.
//!
//! Memory: each topic instance buffers at most [`ROW_GROUP_BYTES`] of raw rows before writing a
//! row group, and all of them together at most [`BUFFER_BUDGET`]. Past the budget the largest
//! buffer goes to a spill file (unlinked, in the output folder) rather than into a small row
//! group: the `parquet` writer keeps about 0.7 KiB per column chunk until its file closes, so a
//! log of many busy wide topics written in small row groups would grow that without bound. Every
//! row group but a table's last is thus at least [`row_group_bytes`] of rows.

use super::error::ReadError;
use super::format::{BasicType, FlatField, FormatRegistry, TopicLayout};
use super::reader::StreamReader;
use super::record::{level_name, Record};
use super::table::{Cell, Codec, Column, FileFormat, Kind, TableError, TableWriter};
use super::value::Value;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A topic instance writes a row group once this many bytes of rows are pending, or more for a
/// wide one (see [`row_group_bytes`]).
pub const ROW_GROUP_BYTES: usize = 2 << 20;
/// A row group of a wide table holds this much per column, up to [`ROW_GROUP_MAX_BYTES`].
pub const ROW_GROUP_BYTES_PER_COLUMN: usize = 64 << 10;
pub const ROW_GROUP_MAX_BYTES: usize = 4 << 20;
/// All topic instances together hold at most this much in memory (the rest is spilled).
pub const BUFFER_BUDGET: usize = 8 << 20;

/// Bytes of rows in one row group of a table of `columns` columns: the `parquet` writer keeps
/// about 0.7 KiB per column chunk until the file closes, so a wide table writes fewer, larger
/// row groups: a 63-column table 4 MiB, at most 16,128 column chunks (about 11 MiB of footer)
/// per GiB of its rows. Past 64 columns the row group stays at 4 MiB (a row group is held twice
/// while it is written, by each thread finishing tables), so the footer of a very wide table of
/// one-byte fields grows faster: 1 GiB of 256 `uint8_t` fields makes 65,536 column chunks.
pub fn row_group_bytes(columns: usize) -> usize {
    (columns * ROW_GROUP_BYTES_PER_COLUMN).clamp(ROW_GROUP_BYTES, ROW_GROUP_MAX_BYTES)
}
/// Threads finishing the tables at the end of a log, at most.
pub const MAX_THREADS: usize = 4;

/// Why an export stopped.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error("reading the log: {0}")]
    Read(ReadError),
    #[error("creating {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How one column is read from a sample's payload.
#[derive(Debug, Clone, Copy)]
enum Source {
    Basic {
        ty: BasicType,
        offset: usize,
    },
    /// A `char[len]` array at `offset`.
    Text {
        offset: usize,
        len: usize,
    },
}

/// The columns of a format: names and where their values are.
fn topic_columns(fields: &[FlatField]) -> (Vec<Column>, Vec<Source>) {
    let mut columns = Vec::with_capacity(fields.len());
    let mut sources = Vec::with_capacity(fields.len());
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        match f.array {
            Some((n, base_len)) if f.ty == BasicType::Char && fields[i..].len() >= n as usize => {
                columns.push(Column::new(&f.name[..base_len], Kind::Text));
                sources.push(Source::Text {
                    offset: f.offset,
                    len: n as usize,
                });
                i += n as usize;
            }
            _ => {
                let kind = match f.ty {
                    BasicType::Int8 => Kind::Int8,
                    BasicType::UInt8 => Kind::UInt8,
                    BasicType::Int16 => Kind::Int16,
                    BasicType::UInt16 => Kind::UInt16,
                    BasicType::Int32 => Kind::Int32,
                    BasicType::UInt32 => Kind::UInt32,
                    BasicType::Int64 => Kind::Int64,
                    BasicType::UInt64 => Kind::UInt64,
                    BasicType::Float => Kind::Float,
                    BasicType::Double => Kind::Double,
                    BasicType::Bool => Kind::Bool,
                    BasicType::Char => Kind::Text,
                };
                columns.push(Column::new(&f.name, kind));
                sources.push(match f.ty {
                    BasicType::Char => Source::Text {
                        offset: f.offset,
                        len: 1,
                    },
                    ty => Source::Basic {
                        ty,
                        offset: f.offset,
                    },
                });
                i += 1;
            }
        }
    }
    (columns, sources)
}

#[inline]
fn le<const N: usize>(p: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&p[at..at + N]);
    a
}

/// Raw rows of one size, in blocks that are never moved once filled (a growing `Vec` copies
/// everything each time it doubles): the first block is small, then each twice the last, up to
/// [`Rows::MAX_BLOCK`] bytes.
struct Rows {
    size: usize,
    blocks: Vec<Vec<u8>>,
    bytes: usize,
}

impl Rows {
    const FIRST_BLOCK: usize = 4 << 10;
    const MAX_BLOCK: usize = 128 << 10;

    fn new(size: usize) -> Rows {
        Rows {
            size,
            blocks: Vec::new(),
            bytes: 0,
        }
    }

    #[inline]
    fn push(&mut self, row: &[u8]) {
        match self.blocks.last_mut() {
            Some(b) if b.capacity() - b.len() >= row.len() => b.extend_from_slice(row),
            _ => self.push_cold(row),
        }
        self.bytes += row.len();
    }

    #[cold]
    fn push_cold(&mut self, row: &[u8]) {
        let target = self.blocks.last().map_or(Self::FIRST_BLOCK, |b| {
            (2 * b.capacity()).min(Self::MAX_BLOCK)
        });
        let rows = (target / self.size.max(1)).max(1);
        let mut block = Vec::with_capacity(rows * self.size);
        block.extend_from_slice(row);
        self.blocks.push(block);
    }

    /// The rows, block by block.
    fn blocks(&self) -> impl Iterator<Item = std::slice::ChunksExact<'_, u8>> {
        let size = self.size.max(1);
        self.blocks.iter().map(move |b| b.chunks_exact(size))
    }

    fn count(&self) -> usize {
        self.bytes.checked_div(self.size).unwrap_or(0)
    }

    fn clear(&mut self) {
        self.blocks.clear();
        self.bytes = 0;
    }
}

/// One topic instance being exported. Samples are kept as the raw rows they arrived as (one
/// copy per sample) and turned into columns a row group at a time, one tight loop per column.
struct TopicTable {
    /// The layout and flattened fields of the subscription that made the table: a later
    /// subscription of the same topic instance to a different format (the format redefined in
    /// between) is not written to it.
    layout: Arc<TopicLayout>,
    fields: Vec<FlatField>,
    sources: Vec<Source>,
    table: Sink,
    /// Bytes of a row: the format's written size (the columns lie within it).
    row_size: usize,
    rows: Rows,
    /// Samples whose subscription used another format than the first (not written).
    mismatched: u64,
    /// Bytes of rows that make a row group ([`row_group_bytes`]).
    row_group_bytes: usize,
    /// Rows moved to the spill file, oldest first (they precede `rows`), and their bytes.
    spilled: Vec<Segment>,
    spilled_bytes: usize,
}

/// Rows of one table in the spill file: where they start and how many bytes.
#[derive(Debug, Clone, Copy)]
struct Segment {
    at: u64,
    len: usize,
}

/// The file rows wait in when the buffers are over budget. Created on first use in the output
/// folder and unlinked at once, so nothing is left behind whatever happens; appended to, read
/// back one table's row group at a time (from the threads finishing the tables too).
struct Spill {
    dir: PathBuf,
    file: Option<File>,
    len: u64,
}

impl Spill {
    fn new(dir: &Path) -> Spill {
        Spill {
            dir: dir.to_path_buf(),
            file: None,
            len: 0,
        }
    }

    fn io(&self, source: std::io::Error) -> ExportError {
        ExportError::Io {
            path: self.dir.join(".export-spill"),
            source,
        }
    }

    /// Appends `rows`; returns where they are.
    fn append(&mut self, rows: &Rows) -> Result<Segment, ExportError> {
        if self.file.is_none() {
            let path = self
                .dir
                .join(format!(".export-spill-{}", std::process::id()));
            let file = File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| self.io(e))?;
            std::fs::remove_file(&path).map_err(|e| self.io(e))?;
            self.file = Some(file);
        }
        let file = self.file.as_ref().expect("opened above");
        let at = self.len;
        for block in &rows.blocks {
            file.write_all_at(block, self.len).map_err(|e| self.io(e))?;
            self.len += block.len() as u64;
        }
        Ok(Segment {
            at,
            len: rows.bytes,
        })
    }
}

/// Reads `segments` back from `file`, in order, into one buffer.
fn read_segments(file: &File, segments: &[Segment]) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; segments.iter().map(|s| s.len).sum()];
    let mut filled = 0;
    for s in segments {
        file.read_exact_at(&mut bytes[filled..filled + s.len], s.at)?;
        filled += s.len;
    }
    Ok(bytes)
}

impl TopicTable {
    /// Whether samples of `subscription` (same topic and multi_id) fit this table's columns.
    fn fits(&self, subscription: &super::record::Subscription, formats: &FormatRegistry) -> bool {
        Arc::ptr_eq(&self.layout, &subscription.layout)
            || (self.layout.written_size == subscription.layout.written_size
                && formats
                    .flatten(&subscription.layout.format_name)
                    .is_ok_and(|f| f == self.fields))
    }
}

/// A topic's file: created when its first row group is written (most topics of a short log are
/// written once, at the end, where the tables are finished in parallel).
enum Sink {
    Pending {
        path: PathBuf,
        format: FileFormat,
        codec: Codec,
        columns: Vec<Column>,
    },
    Open(TableWriter),
}

impl Sink {
    fn open(&mut self) -> Result<&mut TableWriter, TableError> {
        if let Sink::Pending {
            path,
            format,
            codec,
            columns,
        } = self
        {
            let table = TableWriter::create(path, *format, *codec, std::mem::take(columns))?;
            *self = Sink::Open(table);
        }
        match self {
            Sink::Open(table) => Ok(table),
            Sink::Pending { .. } => unreachable!("opened above"),
        }
    }
}

/// Values of one column from raw rows: `read` gets each row from `offset` on.
fn column<T>(rows: &Rows, offset: usize, out: &mut Vec<T>, read: impl Fn(&[u8]) -> T) {
    out.reserve(rows.count());
    for block in rows.blocks() {
        out.extend(block.map(|r| read(&r[offset..])));
    }
}

impl TopicTable {
    /// Appends one sample (its payload is at least the written size, checked by the decoder).
    #[inline]
    fn push(&mut self, payload: &[u8]) {
        self.rows.push(&payload[..self.row_size]);
    }

    /// Bytes of rows held in memory.
    fn buffered_bytes(&self) -> usize {
        self.rows.bytes
    }

    /// Bytes of rows not written yet, in memory or spilled.
    fn pending_bytes(&self) -> usize {
        self.rows.bytes + self.spilled_bytes
    }

    /// Moves the rows held in memory to the spill file.
    fn spill(&mut self, spill: &mut Spill) -> Result<(), ExportError> {
        let segment = spill.append(&self.rows)?;
        self.spilled.push(segment);
        self.spilled_bytes += segment.len;
        self.rows.clear();
        Ok(())
    }

    /// Turns the pending rows (spilled ones first) into columns and writes them as one row
    /// group, and frees them.
    fn flush(&mut self, spill: Option<&File>) -> Result<(), TableError> {
        self.write_row_group(spill)?;
        self.rows.clear();
        Ok(())
    }

    /// Writes the pending rows (spilled ones first) as one row group; they stay in `rows`.
    fn write_row_group(&mut self, spill: Option<&File>) -> Result<(), TableError> {
        if !self.spilled.is_empty() {
            let file = spill.expect("a table with spilled rows has a spill file");
            let bytes = read_segments(file, &self.spilled).map_err(|source| TableError::Io {
                path: PathBuf::from("the export's spill file (unlinked)"),
                source,
            })?;
            self.rows.bytes += bytes.len();
            self.rows.blocks.insert(0, bytes);
            self.spilled.clear();
            self.spilled_bytes = 0;
        }
        if self.rows.bytes == 0 {
            return Ok(());
        }
        let table = self.table.open()?;
        let rows = &self.rows;
        let n = rows.count();
        for (i, source) in self.sources.iter().enumerate() {
            match *source {
                Source::Basic { ty, offset: o } => match ty {
                    BasicType::Float => column(rows, o, table.f32s(i).expect("float"), |b| {
                        f32::from_le_bytes(le(b, 0))
                    }),
                    BasicType::Double => column(rows, o, table.f64s(i).expect("double"), |b| {
                        f64::from_le_bytes(le(b, 0))
                    }),
                    BasicType::UInt64 | BasicType::Int64 => {
                        column(rows, o, table.i64s(i).expect("int64"), |b| {
                            i64::from_le_bytes(le(b, 0))
                        })
                    }
                    BasicType::Bool => {
                        column(rows, o, table.bools(i).expect("bool"), |b| b[0] != 0)
                    }
                    BasicType::Int8 => column(rows, o, table.i32s(i).expect("int"), |b| {
                        i32::from(b[0] as i8)
                    }),
                    BasicType::UInt8 => {
                        column(rows, o, table.i32s(i).expect("int"), |b| i32::from(b[0]))
                    }
                    BasicType::Int16 => column(rows, o, table.i32s(i).expect("int"), |b| {
                        i32::from(i16::from_le_bytes(le(b, 0)))
                    }),
                    BasicType::UInt16 => column(rows, o, table.i32s(i).expect("int"), |b| {
                        i32::from(u16::from_le_bytes(le(b, 0)))
                    }),
                    BasicType::Int32 | BasicType::UInt32 => {
                        column(rows, o, table.i32s(i).expect("int"), |b| {
                            i32::from_le_bytes(le(b, 0))
                        })
                    }
                    BasicType::Char => unreachable!("char columns are text"),
                },
                Source::Text { offset, len } => {
                    for r in rows.blocks().flatten() {
                        let raw = &r[offset..offset + len];
                        let end = raw.iter().position(|b| *b == 0).unwrap_or(len);
                        let text = super::value::text_lossy(&raw[..end]);
                        table.push(i, Cell::Text(text.as_bytes()));
                    }
                }
            }
        }
        table.add_rows(n);
        table.flush()
    }

    /// Writes the last row group and closes the file; returns the rows written, and the last
    /// rows themselves, so that the caller frees them on the thread that read them (see
    /// [`finish_all`]). Rows read back from the spill file are freed here: they were allocated
    /// here, and keeping them until every table is finished would break the memory bound.
    fn finish(mut self, spill: Option<&File>) -> (Result<u64, TableError>, Rows) {
        let from_spill = !self.spilled.is_empty();
        let written = self
            .write_row_group(spill)
            .and_then(|()| self.table.open().map(|_| ()));
        if from_spill {
            self.rows.clear();
        }
        let rows = std::mem::replace(&mut self.rows, Rows::new(0));
        let result = written.and_then(|()| match self.table {
            Sink::Open(table) => table.finish(),
            Sink::Pending { .. } => unreachable!("opened above"),
        });
        (result, rows)
    }
}

/// What an export wrote and how the log read.
#[derive(Debug, Default)]
pub struct ExportSummary {
    /// The folder the tables went to.
    pub dir: PathBuf,
    /// Topic tables: file name and rows.
    pub topics: Vec<(String, u64)>,
    /// Side tables written (parameters, logged messages, info, dropouts).
    pub side_tables: Vec<String>,
    /// Messages read.
    pub messages: u64,
    /// Malformed messages skipped, and the first one's text.
    pub malformed: u64,
    pub first_malformed: Option<String>,
    /// A problem that ended reading early (truncation): the data before it was exported.
    pub stopped: Option<String>,
    /// The log could not be read at all (not a ULog, encrypted, unknown flags): nothing written,
    /// not even the folder.
    pub rejected: Option<String>,
    /// Samples not exported because their subscription's format differs from the one the topic
    /// instance's table was made with (the format was redefined in between): table file name
    /// and samples skipped, for each table that skipped any.
    pub skipped: Vec<(String, u64)>,
}

impl ExportSummary {
    /// Samples skipped in all tables (see [`ExportSummary::skipped`]).
    pub fn skipped_samples(&self) -> u64 {
        self.skipped.iter().map(|(_, n)| n).sum()
    }
}

/// Rows of the side tables, gathered while reading (they are small: a few thousand rows).
#[derive(Default)]
struct Side {
    /// kind, timestamp, name, type, value, message, offset
    parameters: Vec<(String, u64, String, String, f64, u64, u64)>,
    /// timestamp, level, tag, text, message, offset
    logged: Vec<(u64, u8, Option<u16>, String, u64, u64)>,
    /// key, type, value, is multi, index
    info: Vec<(String, String, String, bool, u32)>,
    /// timestamp, duration, message, offset
    dropouts: Vec<(u64, u16, u64, u64)>,
}

fn param_value(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// Exports the log at `path` into `<out>/<log name>/` (the file name without `.ulg`).
pub fn export_file(
    path: &Path,
    out: &Path,
    format: FileFormat,
    codec: Codec,
) -> Result<ExportSummary, ExportError> {
    let file = std::fs::File::open(path).map_err(|source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    export_reader(file, &export_dir(path, out), format, codec)
}

/// A log at most this large may be exported beside another one (see [`export_files`]); a larger
/// one is exported alone, so that the memory bound of one export holds.
pub const CONCURRENT_MAX_BYTES: u64 = 64 << 20;

/// Why a batch of logs was not exported at all.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// Two logs have the same file name: their tables would go to the same folder, and the
    /// second would replace the first's.
    #[error("{first} and {second} would both export to {dir}: rename one, or export them to different --out folders")]
    SameFolder {
        first: PathBuf,
        second: PathBuf,
        dir: PathBuf,
    },
}

/// The folder `export_file` writes the tables of `path` to.
pub fn export_dir(path: &Path, out: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "log".into(), |s| s.to_string_lossy().into_owned());
    out.join(stem)
}

/// Exports several logs into `<out>/<log name>/`, as [`export_file`] does one, and hands each
/// result to `done` in the order the logs were given. Logs of up to [`CONCURRENT_MAX_BYTES`] are
/// exported as many at a time as there are cores, so that reading one (a serial pass) overlaps
/// writing another's tables; a larger log is exported alone. Refuses the whole batch, before
/// writing anything, when two logs would export to the same folder.
pub fn export_files(
    paths: &[PathBuf],
    out: &Path,
    format: FileFormat,
    codec: Codec,
    mut done: impl FnMut(usize, Result<ExportSummary, ExportError>),
) -> Result<(), BatchError> {
    let mut folders: HashMap<PathBuf, &PathBuf> = HashMap::new();
    for path in paths {
        let dir = export_dir(path, out);
        if let Some(first) = folders.get(&dir) {
            return Err(BatchError::SameFolder {
                first: (*first).clone(),
                second: path.clone(),
                dir,
            });
        }
        folders.insert(dir, path);
    }
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let small = |p: &PathBuf| std::fs::metadata(p).is_ok_and(|m| m.len() <= CONCURRENT_MAX_BYTES);
    let mut start = 0;
    while start < paths.len() {
        // A run of small logs shares the cores; a large one (or one that cannot be read: its
        // export reports why) goes alone.
        let end = start
            + paths[start..]
                .iter()
                .take_while(|p| small(p))
                .count()
                .max(1);
        let run = &paths[start..end];
        if run.len() == 1 || workers == 1 {
            for (i, path) in run.iter().enumerate() {
                done(start + i, export_file(path, out, format, codec));
            }
        } else {
            export_concurrently(run, start, workers, out, format, codec, &mut done);
        }
        start = end;
    }
    Ok(())
}

/// Exports `run` on `workers` threads; results go to `done` in order as soon as every earlier
/// log's has.
fn export_concurrently(
    run: &[PathBuf],
    first_index: usize,
    workers: usize,
    out: &Path,
    format: FileFormat,
    codec: Codec,
    done: &mut impl FnMut(usize, Result<ExportSummary, ExportError>),
) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers.min(run.len()) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = run.get(i) else { break };
                if tx.send((i, export_file(path, out, format, codec))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut waiting: std::collections::BTreeMap<usize, _> = Default::default();
        let mut reported = 0;
        for (i, result) in rx {
            waiting.insert(i, result);
            while let Some(result) = waiting.remove(&reported) {
                done(first_index + reported, result);
                reported += 1;
            }
        }
    });
}

/// Creates `dir` (and its parents) the first time a table is about to be written, so that a
/// rejected file leaves no folder behind.
struct Folder<'a> {
    dir: &'a Path,
    made: bool,
}

impl Folder<'_> {
    fn make(&mut self) -> Result<(), ExportError> {
        if !self.made {
            std::fs::create_dir_all(self.dir).map_err(|source| ExportError::Io {
                path: self.dir.to_path_buf(),
                source,
            })?;
            self.made = true;
        }
        Ok(())
    }
}

/// Exports the log read from `input` into `dir` (created if missing, unless the log is
/// rejected).
pub fn export_reader<R: std::io::Read>(
    input: R,
    dir: &Path,
    format: FileFormat,
    codec: Codec,
) -> Result<ExportSummary, ExportError> {
    let mut folder = Folder { dir, made: false };
    let mut summary = ExportSummary {
        dir: dir.to_path_buf(),
        ..ExportSummary::default()
    };
    let mut reader = StreamReader::new(input);
    let mut tables: Vec<TopicTable> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut by_key: HashMap<(String, u8), usize> = HashMap::new();
    // msg_id to table index and whether its samples fit the table, for the per-sample path.
    let mut by_msg_id: Vec<Option<(usize, bool)>> = Vec::new();
    let mut side = Side::default();
    let mut clock = 0u64;
    let mut multi_index: HashMap<String, u32> = HashMap::new();
    let mut buffered_total = 0usize;
    let mut spill = Spill::new(dir);
    while let Some(item) = reader.next_record() {
        let located = match item {
            Ok(l) => l,
            Err(e @ ReadError::Malformed { .. }) => {
                summary.malformed += 1;
                summary.first_malformed.get_or_insert_with(|| e.to_string());
                continue;
            }
            Err(
                e @ (ReadError::NotUlog { .. }
                | ReadError::Encrypted { .. }
                | ReadError::UnsupportedIncompatFlags { .. }),
            ) => {
                summary.rejected = Some(e.to_string());
                break;
            }
            Err(e @ ReadError::Truncated { .. }) => {
                summary.stopped = Some(e.to_string());
                break;
            }
            Err(e) => return Err(ExportError::Read(e)),
        };
        summary.messages = located.message;
        match &located.record {
            Record::Data(sample) => {
                if let Some(ts) = sample.timestamp {
                    clock = clock.max(ts);
                }
                let Some(Some((index, fits))) =
                    by_msg_id.get(usize::from(sample.subscription.msg_id))
                else {
                    continue;
                };
                let t = &mut tables[*index];
                if !fits {
                    t.mismatched += 1;
                    continue;
                }
                t.push(sample.payload);
                buffered_total += t.row_size;
                if t.pending_bytes() >= t.row_group_bytes {
                    folder.make()?;
                    buffered_total -= t.buffered_bytes();
                    t.flush(spill.file.as_ref())?;
                }
                if buffered_total > BUFFER_BUDGET {
                    folder.make()?;
                    buffered_total -= spill_largest(&mut tables, &mut spill)?;
                }
            }
            Record::Subscription {
                subscription,
                formats,
            } => {
                let key = (subscription.topic.to_string(), subscription.multi_id);
                let target = match by_key.get(&key) {
                    Some(i) => (*i, tables[*i].fits(subscription, formats)),
                    None => {
                        let table = open_topic(dir, format, codec, &key, formats, subscription)?;
                        names.push(format!("{}_{}.{}", key.0, key.1, format.extension()));
                        tables.push(table);
                        by_key.insert(key, tables.len() - 1);
                        (tables.len() - 1, true)
                    }
                };
                let id = usize::from(subscription.msg_id);
                if by_msg_id.len() <= id {
                    by_msg_id.resize(id + 1, None);
                }
                by_msg_id[id] = Some(target);
            }
            Record::Unsubscription { msg_id } => {
                if let Some(slot) = by_msg_id.get_mut(usize::from(*msg_id)) {
                    *slot = None;
                }
            }
            Record::FileHeader(h) => clock = h.timestamp,
            Record::Parameter { initial, kv } => side.parameters.push((
                if *initial { "initial" } else { "change" }.into(),
                clock,
                kv.key.to_string(),
                kv.type_name.to_string(),
                param_value(&kv.decode()),
                located.message,
                located.offset,
            )),
            Record::DefaultParameter { default_types, kv } => {
                for (bit, kind) in [(0, "default_system"), (1, "default_current_setup")] {
                    if default_types & (1 << bit) != 0 {
                        side.parameters.push((
                            kind.into(),
                            clock,
                            kv.key.to_string(),
                            kv.type_name.to_string(),
                            param_value(&kv.decode()),
                            located.message,
                            located.offset,
                        ));
                    }
                }
            }
            Record::Logged(l) => side.logged.push((
                l.timestamp,
                l.level,
                l.tag,
                l.text(),
                located.message,
                located.offset,
            )),
            Record::Info(kv) => side.info.push((
                kv.key.to_string(),
                kv.type_name.to_string(),
                kv.decode().to_string(),
                false,
                0,
            )),
            Record::MultiInfo { is_continued, kv } => {
                let n = multi_index.entry(kv.key.to_string()).or_insert(0);
                let value = if kv.type_name.starts_with("char[") {
                    super::value::text_lossy(kv.value)
                } else {
                    kv.decode().to_string()
                };
                match side.info.last_mut() {
                    Some(last) if *is_continued && last.3 && last.0 == kv.key => {
                        last.2.push_str(&value)
                    }
                    _ => {
                        side.info.push((
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
                side.dropouts
                    .push((clock, *duration_ms, located.message, located.offset))
            }
            Record::FlagBits(_)
            | Record::Format { .. }
            | Record::Sync { .. }
            | Record::Unknown { .. } => {}
        }
    }
    if summary.rejected.is_some() {
        // Rejected on its first bytes: no table, no folder.
        return Ok(summary);
    }
    folder.make()?;
    let skipped: Vec<u64> = tables.iter().map(|t| t.mismatched).collect();
    let (rows, side_tables) = finish_all(tables, spill.file.as_ref(), || {
        write_side_tables(dir, format, codec, &side)
    });
    for ((rows, name), skipped) in rows?.into_iter().zip(names).zip(skipped) {
        if skipped > 0 {
            summary.skipped.push((name.clone(), skipped));
        }
        summary.topics.push((name, rows));
    }
    summary.side_tables = side_tables?;
    Ok(summary)
}

fn open_topic(
    dir: &Path,
    format: FileFormat,
    codec: Codec,
    key: &(String, u8),
    formats: &FormatRegistry,
    subscription: &super::record::Subscription,
) -> Result<TopicTable, ExportError> {
    // The decoder resolved this format's layout, so flattening it succeeds and is bounded.
    let fields = formats
        .flatten(&subscription.layout.format_name)
        .unwrap_or_default();
    let (columns, sources) = topic_columns(&fields);
    let group_bytes = row_group_bytes(sources.len());
    let path = dir.join(format!("{}_{}.{}", key.0, key.1, format.extension()));
    Ok(TopicTable {
        layout: subscription.layout.clone(),
        fields,
        sources,
        table: Sink::Pending {
            path,
            format,
            codec,
            columns,
        },
        row_size: subscription.layout.written_size,
        rows: Rows::new(subscription.layout.written_size),
        mismatched: 0,
        row_group_bytes: group_bytes,
        spilled: Vec::new(),
        spilled_bytes: 0,
    })
}

/// Finishes every table (creating the files not created yet) and runs `side` (the side
/// tables), on up to [`MAX_THREADS`] threads, this one included: the tables are independent, and
/// most of a short log's work is here. Threads take the largest tables first; a log of a few
/// small tables is finished on this thread alone, where starting a thread would cost more than
/// it saves. Returns each table's rows, in order, and what `side` returned.
fn finish_all<S: Send>(
    tables: Vec<TopicTable>,
    spill: Option<&File>,
    side: impl FnOnce() -> S + Send,
) -> (Result<Vec<u64>, TableError>, S) {
    let bytes: usize = tables.iter().map(|t| t.pending_bytes()).sum();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
        .min(1 + tables.len() / 16)
        .min(1 + bytes / (64 << 10))
        .max(1);
    let mut rows: Vec<Result<u64, TableError>> = tables.iter().map(|_| Ok(0)).collect();
    let mut order: Vec<(usize, TopicTable)> = tables.into_iter().enumerate().collect();
    order.sort_by_key(|(_, t)| std::cmp::Reverse(t.pending_bytes()));
    let queue = std::sync::Mutex::new(order.into_iter());
    let work = || {
        let mut done = Vec::new();
        loop {
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, table)) = next else { break done };
            let (result, read_rows) = table.finish(spill);
            done.push((i, result, read_rows));
        }
    };
    let side = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let side = side();
        let mut done = work();
        for h in helpers {
            done.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        // The read rows are freed here, on the thread that allocated them, once every helper is
        // done: a helper freeing them would take this thread's allocator arena lock while this
        // thread allocates for its own tables (glibc; futex waits in the profile), and the
        // finishing scaled worse.
        for (i, r, read_rows) in done {
            rows[i] = r;
            drop(read_rows);
        }
        side
    });
    (rows.into_iter().collect(), side)
}

/// Moves the rows of the topic table with the most bytes in memory to the spill file; returns
/// how many bytes that freed.
fn spill_largest(tables: &mut [TopicTable], spill: &mut Spill) -> Result<usize, ExportError> {
    let Some(t) = tables.iter_mut().max_by_key(|t| t.buffered_bytes()) else {
        return Ok(0);
    };
    let n = t.buffered_bytes();
    t.spill(spill)?;
    Ok(n)
}

fn write_side_tables(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ulog::format::{parse_format, FormatRegistry};

    #[test]
    fn char_arrays_become_one_text_column_and_names_follow_pyulog() {
        let mut reg = FormatRegistry::default();
        reg.insert(parse_format("inner:float[2] v;uint8_t[3] _padding0;").unwrap());
        reg.insert(
            parse_format(
                "t:uint64_t timestamp;char[4] name;inner[2] i;bool ok;uint8_t[7] _padding0;",
            )
            .unwrap(),
        );
        let fields = reg.flatten("t").unwrap();
        let (columns, _) = topic_columns(&fields);
        let names: Vec<_> = columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "timestamp",
                "name",
                "i[0].v[0]",
                "i[0].v[1]",
                "i[0]._padding0[0]",
                "i[0]._padding0[1]",
                "i[0]._padding0[2]",
                "i[1].v[0]",
                "i[1].v[1]",
                "i[1]._padding0[0]",
                "i[1]._padding0[1]",
                "i[1]._padding0[2]",
                "ok"
            ]
        );
        assert_eq!(columns[0].kind, Kind::UInt64);
        assert_eq!(columns[1].kind, Kind::Text);
        assert_eq!(columns[2].kind, Kind::Float);
        assert_eq!(columns[12].kind, Kind::Bool);
    }
}
