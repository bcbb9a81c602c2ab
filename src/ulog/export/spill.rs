//! The spill file: where rows wait when the buffers together are over budget, so the row groups
//! stay large and the memory bound holds.

use super::rows::Rows;
use super::ExportError;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Rows of one table in the spill file: where they start and how many bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segment {
    pub(super) at: u64,
    pub(super) len: usize,
}

/// The file rows wait in when the buffers are over budget. Created on first use in the output
/// folder and unlinked at once, so nothing is left behind whatever happens; appended to, read
/// back one table's row group at a time (from the threads finishing the tables too).
pub(super) struct Spill {
    pub(super) dir: PathBuf,
    pub(super) file: Option<File>,
    pub(super) len: u64,
}

impl Spill {
    pub(super) fn new(dir: &Path) -> Spill {
        Spill {
            dir: dir.to_path_buf(),
            file: None,
            len: 0,
        }
    }

    pub(super) fn io(&self, source: std::io::Error) -> ExportError {
        ExportError::Io {
            path: self.dir.join(".export-spill"),
            source,
        }
    }

    /// Appends `rows`; returns where they are.
    pub(super) fn append(&mut self, rows: &Rows) -> Result<Segment, ExportError> {
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
pub(super) fn read_segments(file: &File, segments: &[Segment]) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; segments.iter().map(|s| s.len).sum()];
    let mut filled = 0;
    for s in segments {
        file.read_exact_at(&mut bytes[filled..filled + s.len], s.at)?;
        filled += s.len;
    }
    Ok(bytes)
}
