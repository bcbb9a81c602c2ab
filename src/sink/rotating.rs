//! A file set that rotates at UTC midnight and past a size limit:
//! `<root>/YYYY-MM-DD/<prefix>-YYYYMMDDTHHMMSSZ.<ext>` (a second file in the same second gets
//! `_001`, which sorts after the first, so name order is time order), with `<root>/current.<ext>` a symlink to
//! the open file so `tail -F` follows rotation.
//!
//! Writes carry whole lines (or whole records) only: a batch is cut at line ends into writes of at
//! most [`MAX_WRITE`] bytes, and if a write fails part way the file is cut back to the last whole
//! line, so a reader never sees half a line and the caller knows exactly what was written.

use chrono::{DateTime, Utc};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

const MAX_WRITE: usize = 1 << 20;

/// How a batch's bytes divide into records that must not be split across writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Newline-terminated lines.
    Lines,
    /// Opaque records (raw `.tlog`): the caller's batch is written as one unit.
    Whole,
}

pub struct RotatingFile {
    root: PathBuf,
    prefix: String,
    ext: String,
    max_bytes: u64,
    framing: Framing,
    open: Option<OpenFile>,
    reopen_requested: bool,
}

struct OpenFile {
    file: File,
    day: i64,
    size: u64,
    path: PathBuf,
    dirty: bool,
}

/// A failed write: how many bytes of the batch did reach the file (whole lines only), and why
/// the rest did not.
#[derive(Debug)]
pub struct PartialWrite {
    pub written: usize,
    pub error: io::Error,
}

impl RotatingFile {
    pub fn new(
        root: impl Into<PathBuf>,
        prefix: &str,
        ext: &str,
        max_bytes: u64,
        framing: Framing,
    ) -> Self {
        Self {
            root: root.into(),
            prefix: prefix.to_string(),
            ext: ext.to_string(),
            max_bytes,
            framing,
            open: None,
            reopen_requested: false,
        }
    }

    /// The file being written, if one is open.
    pub fn current_path(&self) -> Option<&Path> {
        self.open.as_ref().map(|o| o.path.as_path())
    }

    /// Closes the current file; the next write opens a new one (SIGHUP, logrotate).
    pub fn reopen(&mut self) {
        self.reopen_requested = true;
    }

    /// Writes a batch of one UTC day. `first_utc_ns` names a new file if one is opened.
    pub fn write(&mut self, day: i64, first_utc_ns: i64, bytes: &[u8]) -> Result<(), PartialWrite> {
        let mut written = 0;
        while written < bytes.len() {
            let needs_new = match &self.open {
                None => true,
                Some(o) => self.reopen_requested || o.day != day || o.size >= self.max_bytes,
            };
            if needs_new {
                self.open_new(day, first_utc_ns)
                    .map_err(|error| PartialWrite { written, error })?;
            }
            let rest = &bytes[written..];
            let chunk = match self.framing {
                Framing::Whole => rest.len(),
                Framing::Lines if rest.len() <= MAX_WRITE => rest.len(),
                Framing::Lines => rest[..MAX_WRITE]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(rest.len(), |i| i + 1),
            };
            let open = self.open.as_mut().expect("opened above");
            if let Err(error) = write_whole(open, &rest[..chunk]) {
                return Err(PartialWrite { written, error });
            }
            written += chunk;
        }
        Ok(())
    }

    /// fsync the open file if anything was written since the last sync.
    pub fn sync(&mut self) -> io::Result<()> {
        if let Some(open) = self.open.as_mut().filter(|o| o.dirty) {
            open.file.sync_data()?;
            open.dirty = false;
        }
        Ok(())
    }

    fn open_new(&mut self, day: i64, first_utc_ns: i64) -> io::Result<()> {
        if let Some(mut old) = self.open.take() {
            if old.dirty {
                old.file.sync_data()?;
                old.dirty = false;
            }
        }
        self.reopen_requested = false;
        let started = DateTime::<Utc>::from_timestamp_nanos(first_utc_ns);
        let day_dir = self.root.join(crate::utc::day_name(day));
        fs::create_dir_all(&day_dir)?;
        let stem = format!("{}-{}", self.prefix, started.format("%Y%m%dT%H%M%SZ"));
        let mut n = 0;
        let (file, path) = loop {
            let name = if n == 0 {
                format!("{stem}.{}", self.ext)
            } else {
                format!("{stem}_{n:03}.{}", self.ext)
            };
            let path = day_dir.join(&name);
            match OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o644)
                .open(&path)
            {
                Ok(file) => break (file, path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(e),
            }
        };
        self.point_current_at(&path)?;
        self.open = Some(OpenFile {
            file,
            day,
            size: 0,
            path,
            dirty: true,
        });
        Ok(())
    }

    /// Moves `current.<ext>` to the new file atomically (a temporary link renamed over it).
    fn point_current_at(&self, path: &Path) -> io::Result<()> {
        let target = path.strip_prefix(&self.root).unwrap_or(path);
        let link = self.root.join(format!("current.{}", self.ext));
        let tmp = self.root.join(format!(".current.{}.tmp", self.ext));
        let _ = fs::remove_file(&tmp);
        std::os::unix::fs::symlink(target, &tmp)?;
        fs::rename(&tmp, &link)
    }
}

/// One write(2) per call where the kernel allows; on failure the file is cut back to where it
/// was, so a partial line never stays in it.
fn write_whole(open: &mut OpenFile, bytes: &[u8]) -> io::Result<()> {
    let before = open.size;
    let mut done = 0;
    while done < bytes.len() {
        match open.file.write(&bytes[done..]) {
            Ok(0) => {
                let _ = open.file.set_len(before);
                return Err(io::Error::new(io::ErrorKind::WriteZero, "write returned 0"));
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                if done > 0 {
                    let _ = open.file.set_len(before);
                }
                return Err(e);
            }
        }
    }
    open.size += bytes.len() as u64;
    open.dirty = true;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400 * 1_000_000_000;

    fn temp_root(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("foxborne-rot-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn rotates_by_day_size_and_reopen_and_keeps_current_link() {
        let root = temp_root("a");
        let mut f = RotatingFile::new(&root, "receive", "jsonl", 20, Framing::Lines);
        let t0 = 20_000 * DAY + 3_600_000_000_000;
        f.write(20_000, t0, b"{\"a\":1}\n").unwrap();
        let first = f.current_path().unwrap().to_path_buf();
        assert!(
            first.ends_with("2024-10-04/receive-20241004T010000Z.jsonl"),
            "{}",
            first.display()
        );
        f.write(20_000, t0, b"{\"a\":2}\n").unwrap();
        // Past 20 bytes: a new file, named for the same second, so with a suffix.
        f.write(20_000, t0, b"{\"a\":3}\n{\"a\":4}\n").unwrap();
        f.write(20_000, t0, b"{\"a\":5}\n").unwrap();
        let second = f.current_path().unwrap().to_path_buf();
        assert!(
            second.ends_with("receive-20241004T010000Z_001.jsonl"),
            "{}",
            second.display()
        );
        f.write(20_001, t0 + DAY, b"{\"a\":6}\n").unwrap();
        assert!(f
            .current_path()
            .unwrap()
            .starts_with(root.join("2024-10-05")));
        f.reopen();
        f.write(20_001, t0 + DAY + 1_000_000_000, b"{\"a\":7}\n")
            .unwrap();
        let last = f.current_path().unwrap().to_path_buf();
        f.sync().unwrap();
        assert_eq!(
            fs::read_to_string(root.join("current.jsonl")).unwrap(),
            "{\"a\":7}\n"
        );
        assert_eq!(
            fs::read_link(root.join("current.jsonl")).unwrap(),
            last.strip_prefix(&root).unwrap()
        );
        assert_eq!(
            fs::read_to_string(&first).unwrap(),
            "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n{\"a\":4}\n"
        );
        assert_eq!(fs::read_to_string(&second).unwrap(), "{\"a\":5}\n");
        let _ = fs::remove_dir_all(&root);
    }
}
