//! Making the catalog again from the reports on disk (`ulog catalog rebuild`, and an ingest that
//! finds its catalog damaged): the catalog is a cache of the reports, never the only copy. A
//! damaged catalog is set aside (renamed, with its WAL), never deleted.

use super::changes::parse_run_id;
use super::facts::{parse_utc, RunFacts};
use super::lock;
use super::store::{Catalog, Inserted, Placement, StoreError};
use super::vehicle::{Identity, Names};
use std::path::{Path, PathBuf};

/// What a rebuild read and did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Rebuilt {
    /// Report files read.
    pub reports: usize,
    /// Runs in the new catalog.
    pub runs: usize,
    /// Reports of bytes catalogued from another report already.
    pub same_bytes: usize,
    /// Reports left out, each with why.
    pub skipped: Vec<(PathBuf, String)>,
}

/// The folder's `*.report.json` files, sorted.
fn report_files(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let entries = std::fs::read_dir(dir).map_err(|e| StoreError::Io {
        file: dir.display().to_string(),
        what: "reading the report folder".into(),
        source: e,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".report.json"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// A report's facts and where it goes, or why it cannot be catalogued.
fn read_report(path: &Path, names: Option<&Names>) -> Result<(RunFacts, Placement), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot be read: {e}"))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("is not JSON: {e}"))?;
    let mut facts = RunFacts::from_report(&json).map_err(|e| e.to_string())?;
    let run = &json["run"];
    let id = run["id"].as_str().and_then(parse_run_id).ok_or(
        "has no run id (it was written without a catalog, or rejected before it was read)",
    )?;
    let ingested = run["ingested_utc"]
        .as_str()
        .and_then(parse_utc)
        .ok_or("has no run.ingested_utc")?;
    if let Some(names) = names {
        facts.summary.vehicle = Identity::from_report(&json).map(|id| names.resolve(&id));
    }
    let report = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    Ok((
        facts,
        Placement {
            id: Some(id),
            ingested_utc_us: ingested,
            report: Some(report.display().to_string()),
        },
    ))
}

/// `<catalog>.<suffix>`.
fn beside(catalog: &Path, suffix: &str) -> PathBuf {
    let mut name = catalog.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Builds a catalog from the reports in `dirs` at `target`, which must not be in use.
fn build(target: &Path, dirs: &[PathBuf], names: Option<&Names>) -> Result<Rebuilt, StoreError> {
    let mut rebuilt = Rebuilt::default();
    let mut runs = Vec::new();
    for dir in dirs {
        for path in report_files(dir)? {
            rebuilt.reports += 1;
            match read_report(&path, names) {
                Ok(run) => runs.push(run),
                Err(why) => rebuilt.skipped.push((path, why)),
            }
        }
    }
    // The lowest id first, so that of two claims on one id the earlier run keeps it.
    runs.sort_by_key(|(_, p)| (p.id, p.ingested_utc_us));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(beside(target, suffix));
    }
    let mut catalog = Catalog::open_unlocked(target)?;
    for (facts, placement) in &runs {
        match catalog.insert_rebuilt(facts, placement)? {
            Inserted::Added => rebuilt.runs += 1,
            Inserted::SameBytes { .. } => rebuilt.same_bytes += 1,
            Inserted::IdTaken { run, sha256 } => rebuilt.skipped.push((
                PathBuf::from(placement.report.clone().unwrap_or_default()),
                format!(
                    "claims run {}, which the report of another file (SHA-256 {sha256}) holds: ingest its log again to give it a run",
                    super::changes::run_id(run)
                ),
            )),
        }
    }
    catalog.close()?;
    Ok(rebuilt)
}

/// Replaces the catalog at `catalog` with one built from the reports in `dirs` (with `names`,
/// when given, naming the vehicles again). The new catalog is built beside it and renamed over
/// it while no one uses it.
pub fn rebuild(
    catalog: &Path,
    dirs: &[PathBuf],
    names: Option<&Names>,
) -> Result<Rebuilt, StoreError> {
    if let Some(dir) = catalog.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Io {
            file: catalog.display().to_string(),
            what: "creating its folder".into(),
            source: e,
        })?;
    }
    let _alone = lock::exclusive(catalog).map_err(|e| StoreError::Io {
        file: catalog.display().to_string(),
        what: "locking it".into(),
        source: e,
    })?;
    replace(catalog, dirs, names)
}

/// [`rebuild`] with the exclusive lock held by the caller.
fn replace(catalog: &Path, dirs: &[PathBuf], names: Option<&Names>) -> Result<Rebuilt, StoreError> {
    let staging = beside(catalog, &format!(".rebuild-{}", std::process::id()));
    let rebuilt = build(&staging, dirs, names);
    let rebuilt = match rebuilt {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_file(&staging);
            return Err(e);
        }
    };
    // The old file's WAL must not be applied to the new file.
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(beside(catalog, suffix));
    }
    std::fs::rename(&staging, catalog).map_err(|e| StoreError::Io {
        file: catalog.display().to_string(),
        what: format!(
            "putting the rebuilt catalog {} in its place",
            staging.display()
        ),
        source: e,
    })?;
    Ok(rebuilt)
}

/// What happened to a damaged catalog.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovery {
    /// Another process had set it aside and rebuilt it already.
    AlreadyDone,
    /// Renamed to `set_aside` and rebuilt from the reports.
    Rebuilt {
        set_aside: PathBuf,
        rebuilt: Rebuilt,
    },
}

/// Sets the damaged catalog aside (`<catalog>.corrupt-N`, its WAL beside it as
/// `<catalog>.corrupt-N-wal`) and rebuilds it from the reports in `dirs`. The caller must not
/// hold the catalog open.
pub fn recover(
    catalog: &Path,
    dirs: &[PathBuf],
    names: Option<&Names>,
) -> Result<Recovery, StoreError> {
    let io = |what: String, e| StoreError::Io {
        file: catalog.display().to_string(),
        what,
        source: e,
    };
    let _alone = lock::exclusive(catalog).map_err(|e| io("locking it".into(), e))?;
    // While this process waited for the lock, another may have done this already.
    match Catalog::open_unlocked(catalog) {
        Ok(c) => {
            c.close()?;
            return Ok(Recovery::AlreadyDone);
        }
        Err(e) if e.is_corrupt() => {}
        Err(e) => return Err(e),
    }
    let set_aside = (1..)
        .map(|n| beside(catalog, &format!(".corrupt-{n}")))
        .find(|p| !p.exists())
        .expect("a free name");
    std::fs::rename(catalog, &set_aside)
        .map_err(|e| io(format!("setting it aside as {}", set_aside.display()), e))?;
    if beside(catalog, "-wal").exists() {
        std::fs::rename(beside(catalog, "-wal"), beside(&set_aside, "-wal"))
            .map_err(|e| io("setting its WAL aside".into(), e))?;
    }
    let rebuilt = replace(catalog, dirs, names)?;
    Ok(Recovery::Rebuilt { set_aside, rebuilt })
}
