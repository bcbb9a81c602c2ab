//! Many logs in one export: refused whole when two would share a folder; small logs exported
//! as many at a time as there are cores, large ones alone.

use super::{export_file, ExportError, ExportSummary};
use crate::ulog::table::{Codec, FileFormat};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
