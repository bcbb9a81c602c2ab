//! Follows a rotating file set (`<root>/YYYY-MM-DD/<name>.<ext>`, name order is time order; see
//! `sink::rotating`) from a cursor: whole lines only, in order, across rotations. A file is left
//! for the next only once the next exists and this one has no more whole lines: the writer never
//! returns to a file after rotating, and closes each on a whole line. A cursor whose file is gone (retention) moves on to
//! the next file that is still there. The cursor is the publisher's persisted position.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// A position in the file set: a file (relative to the root, `YYYY-MM-DD/name.ext`) and a byte
/// offset in it. The empty file name is "before the first file".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub file: String,
    pub offset: u64,
}

/// One whole line (without its newline) and where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub file: String,
    pub offset: u64,
    pub text: Vec<u8>,
}

impl Line {
    /// The position just after this line.
    pub fn end(&self) -> Cursor {
        Cursor {
            file: self.file.clone(),
            offset: self.offset + self.text.len() as u64 + 1,
        }
    }
}

pub struct Follower {
    root: PathBuf,
    ext: String,
    at: Cursor,
}

impl Follower {
    pub fn new(root: &Path, ext: &str, from: Cursor) -> Follower {
        Follower {
            root: root.to_path_buf(),
            ext: ext.to_string(),
            at: from,
        }
    }

    /// Where the next read starts.
    pub fn position(&self) -> &Cursor {
        &self.at
    }

    pub fn rewind(&mut self, to: Cursor) {
        self.at = to;
    }

    /// Every file of the set, in order, relative to the root.
    pub fn files(&self) -> io::Result<Vec<String>> {
        crate::sink::listing::files(&self.root, &self.ext)
    }

    /// Up to `max_lines` whole lines (and about `max_bytes`) from the cursor on; empty when
    /// there is nothing new. Moves the cursor past what it returns.
    pub fn read(&mut self, max_lines: usize, max_bytes: usize) -> io::Result<Vec<Line>> {
        let files = self.files()?;
        let mut lines = Vec::new();
        loop {
            // The cursor's file, or the first file after it (it was removed, or none yet).
            let Some(index) = files.iter().position(|f| *f >= self.at.file) else {
                return Ok(lines);
            };
            if files[index] != self.at.file {
                self.at = Cursor {
                    file: files[index].clone(),
                    offset: 0,
                };
            }
            let got = self.read_whole_lines(max_lines - lines.len(), max_bytes)?;
            let none = got.is_empty();
            lines.extend(got);
            if lines.len() >= max_lines || !none {
                return Ok(lines);
            }
            // Nothing more here: move on only when a later file exists.
            match files.get(index + 1) {
                Some(next) => {
                    self.at = Cursor {
                        file: next.clone(),
                        offset: 0,
                    }
                }
                None => return Ok(lines),
            }
        }
    }

    fn read_whole_lines(&mut self, max_lines: usize, max_bytes: usize) -> io::Result<Vec<Line>> {
        let path = self.root.join(&self.at.file);
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        file.seek(SeekFrom::Start(self.at.offset))?;
        let mut buf = Vec::new();
        file.take(max_bytes.max(1) as u64).read_to_end(&mut buf)?;
        let mut lines = Vec::new();
        let mut start = 0;
        while lines.len() < max_lines {
            let Some(newline) = buf[start..].iter().position(|&b| b == b'\n') else {
                break;
            };
            lines.push(Line {
                file: self.at.file.clone(),
                offset: self.at.offset + start as u64,
                text: buf[start..start + newline].to_vec(),
            });
            start += newline + 1;
        }
        if let Some(last) = lines.last() {
            self.at = last.end();
        }
        Ok(lines)
    }

    /// Bytes written after the cursor (what is still to publish).
    pub fn pending_bytes(&self) -> u64 {
        let Ok(files) = self.files() else { return 0 };
        files
            .iter()
            .filter(|f| **f >= self.at.file)
            .filter_map(|f| {
                std::fs::metadata(self.root.join(f))
                    .ok()
                    .map(|m| (f, m.len()))
            })
            .map(|(f, len)| {
                if *f == self.at.file {
                    len.saturating_sub(self.at.offset)
                } else {
                    len
                }
            })
            .sum()
    }
}

/// Reads a persisted cursor (none yet: the start).
pub fn load_cursor(path: &Path) -> Cursor {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Writes a cursor so a crash leaves the old one or the new one, never half of one.
pub fn save_cursor(path: &Path, cursor: &Cursor) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec(cursor).expect("a cursor serialises"),
    )?;
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(root: &Path, file: &str, text: &str) {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }

    fn texts(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| String::from_utf8(l.text.clone()).unwrap())
            .collect()
    }

    #[test]
    fn whole_lines_in_order_across_rotations_and_days() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut f = Follower::new(root, "jsonl", Cursor::default());
        assert!(f.read(100, 1 << 20).unwrap().is_empty(), "no files yet");
        append(root, "2026-12-01/r-1.jsonl", "a\nb\npart");
        assert_eq!(texts(&f.read(100, 1 << 20).unwrap()), ["a", "b"]);
        // A half-written line in the newest file waits for its end.
        assert!(f.read(100, 1 << 20).unwrap().is_empty());
        append(root, "2026-12-01/r-1.jsonl", "ial\n");
        append(root, "2026-12-01/r-2.jsonl", "c\n");
        append(root, "2026-12-02/r-1.jsonl", "d\ne\n");
        append(root, "2026-12-02/current.txt", "not ours\n");
        let lines = f.read(100, 1 << 20).unwrap();
        assert_eq!(texts(&lines), ["partial"]);
        let lines = f.read(100, 1 << 20).unwrap();
        assert_eq!(texts(&lines), ["c"]);
        assert_eq!(texts(&f.read(1, 1 << 20).unwrap()), ["d"]);
        let saved = f.position().clone();
        assert_eq!(
            saved,
            Cursor {
                file: "2026-12-02/r-1.jsonl".into(),
                offset: 2
            }
        );
        assert_eq!(f.pending_bytes(), 2);
        assert_eq!(texts(&f.read(100, 1 << 20).unwrap()), ["e"]);
        // Rewound to an acknowledged position, it gives the same lines again.
        f.rewind(saved);
        let again = f.read(100, 1 << 20).unwrap();
        assert_eq!(texts(&again), ["e"]);
        assert_eq!(again[0].offset, 2);
        assert!(f.read(100, 1 << 20).unwrap().is_empty());
    }

    #[test]
    fn a_removed_file_is_skipped_and_cursors_persist() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        append(root, "2026-12-01/r-1.jsonl", "a\n");
        append(root, "2026-12-03/r-1.jsonl", "z\n");
        let mut f = Follower::new(
            root,
            "jsonl",
            Cursor {
                file: "2026-12-02/r-9.jsonl".into(),
                offset: 40,
            },
        );
        assert_eq!(texts(&f.read(100, 1 << 20).unwrap()), ["z"]);
        let path = root.join("cursor.json");
        assert_eq!(load_cursor(&path), Cursor::default());
        save_cursor(&path, f.position()).unwrap();
        assert_eq!(load_cursor(&path), *f.position());
    }

    #[test]
    fn reads_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), "2026-12-01/r-1.jsonl", "aaaa\nbbbb\ncccc\n");
        let mut f = Follower::new(dir.path(), "jsonl", Cursor::default());
        assert_eq!(texts(&f.read(100, 10).unwrap()), ["aaaa", "bbbb"]);
        assert_eq!(texts(&f.read(100, 10).unwrap()), ["cccc"]);
    }
}
