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
//!
//! The parts: [`topic`] (a topic instance's table: its columns, raw rows and row groups),
//! [`rows`] (the raw-row buffer), [`spill`] (the spill file), [`side`] (the parameter, logged
//! message, info and dropout tables) and [`batch`] (many logs at once, sharing the cores).

mod batch;
mod rows;
pub(crate) mod side;
mod spill;
mod topic;
pub(crate) mod walk;

pub use batch::{export_dir, export_files, BatchError, CONCURRENT_MAX_BYTES};

use super::error::ReadError;
use super::format::FormatRegistry;
use super::record::{Located, Sample, Subscription};
use super::table::{Codec, FileFormat, TableError};
use side::{write_side_tables, Side};
use spill::Spill;
use std::fs::File;
use std::path::{Path, PathBuf};
use topic::{open_topic, spill_largest, TopicTable};
use walk::{walk, Exporter};

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
    /// What the samples are written to other than tables (an MCAP file) failed.
    #[error(transparent)]
    Sink(Box<dyn std::error::Error + Send + Sync>),
    #[error("topic {topic}: {source}")]
    Layout {
        topic: String,
        source: super::format::LayoutError,
    },
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

/// The Parquet/CSV tables as the walk fills them: a topic instance's samples buffered as raw
/// rows, written a row group at a time, the largest buffer spilled past the budget.
struct Tables<'a> {
    folder: Folder<'a>,
    format: FileFormat,
    codec: Codec,
    side: Side,
    buffered_total: usize,
    spill: Spill,
}

impl Exporter for Tables<'_> {
    type Instance = TopicTable;

    fn open(
        &mut self,
        key: &(String, u8),
        formats: &FormatRegistry,
        subscription: &Subscription,
    ) -> Result<TopicTable, ExportError> {
        open_topic(
            self.folder.dir,
            self.format,
            self.codec,
            key,
            formats,
            subscription,
        )
    }

    fn sample(
        &mut self,
        tables: &mut [TopicTable],
        index: usize,
        sample: &Sample<'_>,
        _message: u64,
        _clock: u64,
    ) -> Result<(), ExportError> {
        let t = &mut tables[index];
        t.push(sample.payload);
        self.buffered_total += t.row_size;
        if t.pending_bytes() >= t.row_group_bytes {
            self.folder.make()?;
            self.buffered_total -= t.buffered_bytes();
            t.flush(self.spill.file.as_ref())?;
        }
        if self.buffered_total > BUFFER_BUDGET {
            self.folder.make()?;
            self.buffered_total -= spill_largest(tables, &mut self.spill)?;
        }
        Ok(())
    }

    fn other(&mut self, located: &Located<'_>, clock: u64) -> Result<(), ExportError> {
        self.side
            .take(&located.record, clock, located.message, located.offset);
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
    let mut summary = ExportSummary {
        dir: dir.to_path_buf(),
        ..ExportSummary::default()
    };
    let mut exporter = Tables {
        folder: Folder { dir, made: false },
        format,
        codec,
        side: Side::default(),
        buffered_total: 0,
        spill: Spill::new(dir),
    };
    let walked = walk(input, &mut exporter, &mut summary)?;
    if summary.rejected.is_some() {
        // Rejected on its first bytes: no table, no folder.
        return Ok(summary);
    }
    exporter.folder.make()?;
    let names: Vec<String> = walked
        .keys
        .iter()
        .map(|key| format!("{}_{}.{}", key.0, key.1, format.extension()))
        .collect();
    let tables = walked.instances;
    let skipped: Vec<u64> = tables.iter().map(|t| t.mismatched).collect();
    let side = &exporter.side;
    let (rows, side_tables) = finish_all(tables, exporter.spill.file.as_ref(), || {
        write_side_tables(dir, format, codec, side)
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
