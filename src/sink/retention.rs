//! Retention: which day folders of `receive/`, `events/`, `tlog/` and `traffic/` go, and going. The plan is
//! pure ([`plan`]: folders with their day and size, today, the bounds in; what to remove, oldest
//! first, out), so it is tested with plain numbers; [`scan`] and [`remove`] are the file-system
//! side the daemon's retention task calls at start and hourly.
//!
//! A folder goes whole or not at all. Never removed: a folder holding an open file (the one a
//! stream's `current.<ext>` points at), today's folders (a writer may open a file in one at any
//! moment), and anything that is not a `YYYY-MM-DD` folder (`current.*`, `publish/`, strays).

use std::fs;
use std::io;
use std::path::Path;

/// The file sets under `data_dir` that retention bounds.
pub const STREAMS: [super::FileSet; 4] = [
    super::RECEIVE_LOG,
    super::EVENTS,
    super::TLOG,
    super::TRAFFIC_LOG,
];

/// One day folder of one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayFolder {
    pub stream: String,
    /// UTC days since 1970-01-01 (the folder's name).
    pub day: i64,
    pub files: u64,
    pub bytes: u64,
    /// Holds the stream's open file.
    pub open: bool,
}

impl DayFolder {
    /// `receive/2026-06-01`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.stream, day_name(self.day))
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    pub max_age_days: Option<u32>,
    pub max_total_bytes: Option<u64>,
}

/// Which bound removed a folder (named as the config key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    MaxAge,
    MaxTotal,
}

impl Reason {
    pub fn key(self) -> &'static str {
        match self {
            Reason::MaxAge => "max_age_days",
            Reason::MaxTotal => "max_total_mb",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Oldest first (then by stream name).
    pub remove: Vec<(DayFolder, Reason)>,
    /// Bytes of the folders that stay.
    pub total_after: u64,
    /// Bytes still over `max_total_bytes` with nothing left that may go.
    pub over_by: Option<u64>,
}

/// What to remove from `folders` on `today` (UTC days since 1970-01-01): first every folder
/// dated more than `max_age_days` before today, then, oldest first, as many more as bring the
/// total to `max_total_bytes` or under; never an open or a current (today or later) folder.
pub fn plan(folders: &[DayFolder], today: i64, bounds: Bounds) -> Plan {
    let mut order: Vec<&DayFolder> = folders.iter().collect();
    order.sort_by(|a, b| (a.day, &a.stream).cmp(&(b.day, &b.stream)));
    let may_go = |f: &DayFolder| !f.open && f.day < today;
    let mut remove = Vec::new();
    let mut keep = Vec::new();
    for folder in order {
        let too_old = bounds
            .max_age_days
            .is_some_and(|max| today - folder.day > i64::from(max));
        if too_old && may_go(folder) {
            remove.push((folder.clone(), Reason::MaxAge));
        } else {
            keep.push(folder);
        }
    }
    let mut total: u64 = keep.iter().map(|f| f.bytes).sum();
    let mut over_by = None;
    if let Some(max) = bounds.max_total_bytes {
        for folder in keep {
            if total > max && may_go(folder) {
                total -= folder.bytes;
                remove.push((folder.clone(), Reason::MaxTotal));
            }
        }
        if total > max {
            over_by = Some(total - max);
        }
    }
    Plan {
        remove,
        total_after: total,
        over_by,
    }
}

pub use crate::utc::{day_name, parse_day};

/// The day folders of every stream under `data_dir` (a missing stream has none), with the
/// folder its `current.<ext>` link points into marked open.
pub fn scan(data_dir: &Path) -> io::Result<Vec<DayFolder>> {
    let mut folders = Vec::new();
    for set in STREAMS {
        let (stream, current) = (set.folder, set.current());
        let root = data_dir.join(stream);
        let entries = match fs::read_dir(&root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        // `YYYY-MM-DD/name.ext`, relative to the stream's root.
        let open_day = fs::read_link(root.join(current))
            .ok()
            .and_then(|target| first_component(&target));
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(day) = parse_day(&name) else {
                continue;
            };
            if !entry.file_type()?.is_dir() {
                continue;
            }
            let (files, bytes) = folder_size(&entry.path())?;
            folders.push(DayFolder {
                stream: stream.to_string(),
                day,
                files,
                bytes,
                open: open_day.as_deref() == Some(name.as_str()),
            });
        }
    }
    Ok(folders)
}

fn first_component(target: &Path) -> Option<String> {
    target
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
}

/// Files and bytes directly in a day folder (the writers make no deeper ones).
fn folder_size(dir: &Path) -> io::Result<(u64, u64)> {
    let (mut files, mut bytes) = (0, 0);
    for entry in fs::read_dir(dir)? {
        let meta = entry?.metadata()?;
        if meta.is_file() {
            files += 1;
            bytes += meta.len();
        }
    }
    Ok((files, bytes))
}

/// Removes the planned folders, in order; each one that could not go is left out of the
/// returned list and logged with its error.
pub fn remove(data_dir: &Path, plan: &Plan) -> Vec<(DayFolder, Reason)> {
    let mut gone = Vec::new();
    for (folder, reason) in &plan.remove {
        let path = data_dir.join(folder.name());
        match fs::remove_dir_all(&path) {
            Ok(()) => gone.push((folder.clone(), *reason)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(folder = %path.display(), error = %e, "retention: cannot remove")
            }
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(stream: &str, day: i64, bytes: u64) -> DayFolder {
        DayFolder {
            stream: stream.into(),
            day,
            files: 1,
            bytes,
            open: false,
        }
    }

    fn names(plan: &Plan) -> Vec<(String, i64, Reason)> {
        plan.remove
            .iter()
            .map(|(f, r)| (f.stream.clone(), f.day, *r))
            .collect()
    }

    #[test]
    fn no_bounds_remove_nothing() {
        let folders = [folder("receive", 1, 100), folder("events", 2, 100)];
        let plan = plan(&folders, 1000, Bounds::default());
        assert!(plan.remove.is_empty());
        assert_eq!(plan.total_after, 200);
        assert_eq!(plan.over_by, None);
    }

    #[test]
    fn age_removes_folders_more_than_max_days_before_today_oldest_first() {
        let folders = [
            folder("receive", 97, 10),
            folder("tlog", 90, 10),
            folder("receive", 90, 10),
            folder("events", 89, 10),
            folder("receive", 100, 10),
        ];
        let bounds = Bounds {
            max_age_days: Some(7),
            max_total_bytes: None,
        };
        let plan = plan(&folders, 100, bounds);
        assert_eq!(
            names(&plan),
            vec![
                ("events".into(), 89, Reason::MaxAge),
                ("receive".into(), 90, Reason::MaxAge),
                ("tlog".into(), 90, Reason::MaxAge),
            ]
        );
        // Day 93 is exactly 7 days before today: it stays.
        let edge = [folder("receive", 93, 10)];
        assert!(super::plan(&edge, 100, bounds).remove.is_empty());
        assert_eq!(plan.total_after, 20);
    }

    #[test]
    fn size_removes_oldest_until_under_the_bound() {
        let folders = [
            folder("receive", 10, 400),
            folder("receive", 11, 300),
            folder("events", 11, 50),
            folder("receive", 12, 200),
            folder("receive", 13, 100),
        ];
        let bounds = Bounds {
            max_age_days: None,
            max_total_bytes: Some(500),
        };
        let plan = plan(&folders, 13, bounds);
        // 1050 -> 650 (day 10) -> 600 (events 11) -> 300 (receive 11): under 500, day 12 stays.
        assert_eq!(
            names(&plan),
            vec![
                ("receive".into(), 10, Reason::MaxTotal),
                ("events".into(), 11, Reason::MaxTotal),
                ("receive".into(), 11, Reason::MaxTotal),
            ]
        );
        assert_eq!(plan.total_after, 300);
        assert_eq!(plan.over_by, None);
    }

    #[test]
    fn age_first_then_size_on_what_is_left() {
        let folders = [
            folder("receive", 1, 1000),
            folder("receive", 50, 300),
            folder("receive", 60, 300),
        ];
        let bounds = Bounds {
            max_age_days: Some(30),
            max_total_bytes: Some(400),
        };
        let plan = plan(&folders, 61, bounds);
        assert_eq!(
            names(&plan),
            vec![
                ("receive".into(), 1, Reason::MaxAge),
                ("receive".into(), 50, Reason::MaxTotal),
            ]
        );
        assert_eq!(plan.total_after, 300);
    }

    #[test]
    fn never_the_open_folder_nor_today_and_says_how_far_over() {
        let mut open_old = folder("receive", 5, 500);
        open_old.open = true;
        let folders = [
            open_old,
            folder("events", 5, 100),
            folder("receive", 9, 700),
            folder("tlog", 12, 50),
        ];
        let bounds = Bounds {
            max_age_days: Some(1),
            max_total_bytes: Some(600),
        };
        let plan = plan(&folders, 9, bounds);
        // The open receive/day 5 stays though old (a writer that has not rotated since);
        // today's 700 bytes stay though over; a future-dated folder stays.
        assert_eq!(names(&plan), vec![("events".into(), 5, Reason::MaxAge)]);
        assert_eq!(plan.total_after, 1250);
        assert_eq!(plan.over_by, Some(650));
    }

    #[test]
    fn day_names_round_trip() {
        assert_eq!(parse_day("1970-01-01"), Some(0));
        assert_eq!(parse_day("2024-10-04"), Some(20_000));
        assert_eq!(day_name(20_000), "2024-10-04");
        for bad in [
            "current.jsonl",
            "2024-1-04",
            "2024-13-01",
            "x2024-10-04",
            "",
        ] {
            assert_eq!(parse_day(bad), None, "{bad}");
        }
    }

    #[test]
    fn scan_and_remove_on_a_real_folder() {
        let dir = std::env::temp_dir().join(format!("foxborne-retention-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for (stream, day, file, len) in [
            ("receive", "2024-10-01", "receive-a.jsonl", 10),
            ("receive", "2024-10-04", "receive-b.jsonl", 20),
            ("events", "2024-10-01", "events-a.jsonl", 5),
        ] {
            fs::create_dir_all(dir.join(stream).join(day)).unwrap();
            fs::write(dir.join(stream).join(day).join(file), vec![b'x'; len]).unwrap();
        }
        fs::create_dir_all(dir.join("receive/not-a-day")).unwrap();
        std::os::unix::fs::symlink(
            "2024-10-04/receive-b.jsonl",
            dir.join("receive/current.jsonl"),
        )
        .unwrap();
        let mut found = scan(&dir).unwrap();
        found.sort_by_key(|f| f.name());
        assert_eq!(
            found
                .iter()
                .map(|f| (f.name(), f.bytes, f.open))
                .collect::<Vec<_>>(),
            vec![
                ("events/2024-10-01".to_string(), 5, false),
                ("receive/2024-10-01".to_string(), 10, false),
                ("receive/2024-10-04".to_string(), 20, true),
            ]
        );
        let bounds = Bounds {
            max_age_days: Some(1),
            max_total_bytes: None,
        };
        let planned = plan(&found, 20_005, bounds);
        let gone = remove(&dir, &planned);
        assert_eq!(gone.len(), 2);
        assert!(!dir.join("receive/2024-10-01").exists());
        assert!(!dir.join("events/2024-10-01").exists());
        assert!(dir.join("receive/2024-10-04/receive-b.jsonl").exists());
        assert!(dir.join("receive/not-a-day").exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
