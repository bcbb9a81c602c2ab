//! A file set's files as they lie on disk (`<root>/YYYY-MM-DD/<prefix>-YYYYMMDDTHHMMSSZ.<ext>`,
//! name order is time order, see [`super::rotating`]), and which of them hold a span of UTC:
//! each file's name carries the writer's clock when its first line was written, and it runs
//! until the next file starts. The publisher follows the listing; `sortie` takes a data dir and
//! reads only the files that hold the flight.

use std::io;
use std::path::Path;

/// Every file of the set with this extension, in order, relative to the root
/// (`YYYY-MM-DD/name.ext`). No root yet is no files.
pub fn files(root: &Path, ext: &str) -> io::Result<Vec<String>> {
    let mut files = Vec::new();
    let days = match std::fs::read_dir(root) {
        Ok(days) => days,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(files),
        Err(e) => return Err(e),
    };
    let mut days: Vec<String> = days
        .filter_map(Result::ok)
        .filter(|d| d.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|d| d.file_name().into_string().ok())
        .filter(|d| !d.starts_with('.'))
        .collect();
    days.sort();
    let suffix = format!(".{ext}");
    for day in days {
        let mut names: Vec<String> = std::fs::read_dir(root.join(&day))?
            .filter_map(Result::ok)
            .filter(|f| f.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|f| f.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.') && n.ends_with(&suffix))
            .collect();
        names.sort();
        files.extend(names.into_iter().map(|n| format!("{day}/{n}")));
    }
    Ok(files)
}

/// When a file was opened, from its name (`receive-20261202T143203Z_001.jsonl`), in UTC
/// nanoseconds; `None` for a name the writer did not make.
pub fn opened_at(file: &str) -> Option<i64> {
    let name = file.rsplit('/').next()?;
    let stamp = name.split('-').nth(1)?.get(..16)?;
    let opened = chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ").ok()?;
    opened.and_utc().timestamp_nanos_opt()
}

/// The files (in the order of [`files`]) that may hold a line stamped within `[from_ns,
/// to_ns]`: a file runs from its opening to the next file's opening. The stamp in a name is
/// to the second and the lines inside to the millisecond, so a file opened within the same
/// second as `to_ns` is kept. A file whose name carries no time is kept: what it holds cannot
/// be told from its name, and the reader skips what is out of the span anyway.
pub fn covering(files: &[String], from_ns: i64, to_ns: i64) -> Vec<String> {
    const SECOND: i64 = 1_000_000_000;
    let opened: Vec<Option<i64>> = files.iter().map(|f| opened_at(f)).collect();
    files
        .iter()
        .enumerate()
        .filter(|&(i, _)| {
            let Some(start) = opened[i] else {
                return true;
            };
            let next = opened[i + 1..].iter().flatten().next().copied();
            let starts_in_time = start < to_ns.saturating_add(SECOND);
            let ends_in_time = next.is_none_or(|next| next > from_ns);
            starts_in_time && ends_in_time
        })
        .map(|(_, f)| f.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        crate::monitor::parse_utc_ns(text).unwrap()
    }

    #[test]
    fn a_name_says_when_its_file_was_opened() {
        assert_eq!(
            opened_at("2026-12-02/receive-20261202T143203Z.jsonl"),
            Some(at("2026-12-02T14:32:03Z"))
        );
        assert_eq!(
            opened_at("events-20261202T143203Z_001.jsonl"),
            Some(at("2026-12-02T14:32:03Z"))
        );
        assert_eq!(opened_at("2026-12-02/notes.jsonl"), None);
        assert_eq!(opened_at("receive-2026.jsonl"), None);
    }

    #[test]
    fn a_span_takes_the_files_that_run_through_it() {
        let files: Vec<String> = [
            "2026-12-01/receive-20261201T220000Z.jsonl",
            "2026-12-02/receive-20261202T000000Z.jsonl",
            "2026-12-02/receive-20261202T140000Z.jsonl",
            "2026-12-02/receive-20261202T140000Z_001.jsonl",
            "2026-12-02/receive-20261202T150000Z.jsonl",
        ]
        .map(String::from)
        .to_vec();
        // Inside the third file: the one opened before the span runs into it.
        assert_eq!(
            covering(
                &files,
                at("2026-12-02T14:10:00Z"),
                at("2026-12-02T14:20:00Z")
            ),
            files[3..4]
        );
        // Across midnight: the last file of one day and the first of the next.
        assert_eq!(
            covering(
                &files,
                at("2026-12-01T23:59:00Z"),
                at("2026-12-02T00:01:00Z")
            ),
            files[0..2]
        );
        // A span ending in the second the last file opened keeps it (names are to the second).
        assert_eq!(
            covering(
                &files,
                at("2026-12-02T14:50:00Z"),
                at("2026-12-02T15:00:00.400Z")
            ),
            files[3..5]
        );
        // After the last file opened: the last file, which runs on.
        assert_eq!(
            covering(
                &files,
                at("2026-12-03T00:00:00Z"),
                at("2026-12-03T01:00:00Z")
            ),
            files[4..5]
        );
        // Before the first: nothing.
        assert!(covering(
            &files,
            at("2026-11-30T00:00:00Z"),
            at("2026-11-30T01:00:00Z")
        )
        .is_empty());
    }

    #[test]
    fn a_file_not_named_by_the_writer_is_kept() {
        let files = vec![
            "2026-12-02/copied-by-hand.jsonl".to_string(),
            "2026-12-02/receive-20261202T000000Z.jsonl".to_string(),
        ];
        assert_eq!(
            covering(
                &files,
                at("2026-11-30T00:00:00Z"),
                at("2026-11-30T01:00:00Z")
            ),
            files[0..1]
        );
    }

    #[test]
    fn the_listing_is_in_time_order_across_day_folders() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "2026-12-02/receive-20261202T000000Z.jsonl",
            "2026-12-01/receive-20261201T220000Z.jsonl",
            "2026-12-02/receive-20261202T000000Z_001.jsonl",
            "2026-12-02/current.txt",
            "2026-12-02/.hidden.jsonl",
        ] {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
        std::os::unix::fs::symlink("x", dir.path().join("current.jsonl")).unwrap();
        assert_eq!(
            files(dir.path(), "jsonl").unwrap(),
            [
                "2026-12-01/receive-20261201T220000Z.jsonl",
                "2026-12-02/receive-20261202T000000Z.jsonl",
                "2026-12-02/receive-20261202T000000Z_001.jsonl",
            ]
        );
        assert!(files(&dir.path().join("none"), "jsonl").unwrap().is_empty());
    }
}
