//! The catalog file: SQLite in WAL mode (readers never wait for a writer), each write one
//! `BEGIN IMMEDIATE` transaction with a busy timeout (two ingests at once take turns instead of
//! failing), `synchronous = NORMAL` (a power cut may lose the last runs recorded, never the file:
//! the reports hold them and a rebuild brings them back). Only this module touches SQLite.

use super::changes::{diff, Diff};
use super::facts::{order_key, RunFacts, RunSummary};
use super::lock::{self, CatalogLock};
use super::params::{ParamValue, Parameters};
use super::schema::{self, PrepareError, SchemaError};
use super::vehicle::Vehicle;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params, Connection, OptionalExtension, ToSql, TransactionBehavior};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a write waits for another process's write to finish. A run is recorded in a few
/// milliseconds; this is room for a slow disk, not a wait anyone should see.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the catalog could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("catalog {file}: {source}")]
    Sqlite {
        file: String,
        #[source]
        source: rusqlite::Error,
    },
    /// SQLite found the file damaged or not a database at all.
    #[error("catalog {file} is damaged: {detail}")]
    Corrupt { file: String, detail: String },
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("catalog {file}: {what}: {source}")]
    Io {
        file: String,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("catalog {file} cannot use WAL mode (journal mode stays {mode}): keep it on a local file system")]
    NoWal { file: String, mode: String },
}

impl StoreError {
    pub fn is_corrupt(&self) -> bool {
        matches!(self, StoreError::Corrupt { .. })
    }

    fn io(file: &Path, what: impl Into<String>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            file: file.display().to_string(),
            what: what.into(),
            source,
        }
    }
}

fn sql_error(file: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    match e.sqlite_error_code() {
        Some(DatabaseCorrupt | NotADatabase) => StoreError::Corrupt {
            file: file.display().to_string(),
            detail: e.to_string(),
        },
        _ => StoreError::Sqlite {
            file: file.display().to_string(),
            source: e,
        },
    }
}

impl ToSql for ParamValue {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            ParamValue::Int(v) => ToSqlOutput::from(*v),
            ParamValue::Float(v) => ToSqlOutput::from(*v),
            ParamValue::Text(t) => ToSqlOutput::from(t.as_str()),
        })
    }
}

fn param_from_sql(v: ValueRef<'_>) -> Option<ParamValue> {
    match v {
        ValueRef::Integer(i) => Some(ParamValue::Int(i)),
        ValueRef::Real(f) => Some(ParamValue::Float(f)),
        ValueRef::Text(t) => Some(ParamValue::Text(String::from_utf8_lossy(t).into_owned())),
        _ => None,
    }
}

/// One catalogued run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub summary: RunSummary,
    pub ingested_utc_us: i64,
    pub sort_utc_us: i64,
    pub report: Option<String>,
}

const RUN_COLUMNS: &str = "id, sha256, file, file_name, size_bytes, status, reason, vehicle, \
    vehicle_identity, sys_uuid, ver_hw, mav_sys_id, named_by, start_utc_us, duration_s, \
    ingested_utc_us, sort_utc_us, report";

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    let vehicle = match r.get::<_, Option<String>>(7)? {
        Some(name) => Some(Vehicle {
            name,
            identity: r.get::<_, Option<String>>(8)?.unwrap_or_default(),
            sys_uuid: r.get(9)?,
            ver_hw: r.get(10)?,
            mav_sys_id: r.get(11)?,
            named_by: r.get(12)?,
        }),
        None => None,
    };
    Ok(RunRow {
        id: r.get(0)?,
        summary: RunSummary {
            sha256: r.get(1)?,
            file: r.get(2)?,
            file_name: r.get(3)?,
            size_bytes: u64::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
            status: r.get(5)?,
            reason: r.get(6)?,
            vehicle,
            start_utc_us: r.get(13)?,
            duration_s: r.get(14)?,
        },
        ingested_utc_us: r.get(15)?,
        sort_utc_us: r.get(16)?,
        report: r.get(17)?,
    })
}

/// Where a run goes: the id a report gave it (a rebuild) or a new one, and when it was ingested.
#[derive(Debug, Clone)]
pub struct Placement {
    pub id: Option<i64>,
    pub ingested_utc_us: i64,
    pub report: Option<String>,
}

/// What recording a run found.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub run: RunRow,
    /// False when these bytes were catalogued already: nothing was changed.
    pub new: bool,
    /// Other runs from a file of the same name (other bytes).
    pub same_name: Vec<RunRow>,
    /// The vehicle's run before this one, and what changed since.
    pub previous: Option<(RunRow, Diff)>,
    /// The vehicle's run after this one when it was ingested before it: its changes are now
    /// counted from this run.
    pub overtaken: Option<RunRow>,
}

/// What a rebuild did with one report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inserted {
    Added,
    /// The same bytes are catalogued already (two reports of one log).
    SameBytes {
        run: i64,
    },
    /// Another log holds this run id (reports from two catalogs).
    IdTaken {
        run: i64,
        sha256: String,
    },
}

/// One step of a vehicle's history.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub previous: RunRow,
    pub run: RunRow,
    pub diff: Diff,
}

/// An open catalog.
pub struct Catalog {
    conn: Connection,
    path: PathBuf,
    _lock: Option<CatalogLock>,
}

impl Catalog {
    /// Opens (creating when missing) the catalog at `path`, holding its shared lock.
    pub fn open(path: &Path) -> Result<Catalog, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::io(path, "creating its folder", e))?;
        }
        let lock = lock::shared(path).map_err(|e| StoreError::io(path, "locking it", e))?;
        let mut catalog = Catalog::open_unlocked(path)?;
        catalog._lock = Some(lock);
        Ok(catalog)
    }

    /// Opens the catalog without the lock (the caller holds it, or the file is its own).
    pub(crate) fn open_unlocked(path: &Path) -> Result<Catalog, StoreError> {
        let e = |err| sql_error(path, err);
        let mut conn = Connection::open(path).map_err(e)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(e)?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(e)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::NoWal {
                file: path.display().to_string(),
                mode,
            });
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(e)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(e)?;
        schema::prepare(&mut conn, path).map_err(|err| match err {
            PrepareError::Schema(s) => StoreError::Schema(s),
            PrepareError::Sqlite(s) => sql_error(path, s),
        })?;
        // Reading every table once finds a file cut short (SQLite checks the page count
        // against the file when a read begins) or a damaged table root before anything relies
        // on it.
        conn.query_row(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM findings), \
             (SELECT count(*) FROM parameters WHERE run_id = (SELECT max(id) FROM runs))",
            [],
            |_| Ok(()),
        )
        .map_err(e)?;
        Ok(Catalog {
            conn,
            path: path.to_path_buf(),
            _lock: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |e| sql_error(&self.path, e)
    }

    /// Records the run `facts` describe, unless its bytes are catalogued already (then nothing
    /// changes), and finds its neighbours in its vehicle's history.
    pub fn record(
        &mut self,
        facts: &RunFacts,
        placement: &Placement,
    ) -> Result<Recorded, StoreError> {
        let path = self.path.clone();
        let e = |err| sql_error(&path, err);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(e)?;
        let existing = by_sha256(&tx, &facts.summary.sha256).map_err(e)?;
        let new = existing.is_none();
        let run = match existing {
            Some(run) => run,
            None => {
                let id = match placement.id {
                    Some(id) => id,
                    None => tx
                        .query_row("SELECT coalesce(max(id), 0) + 1 FROM runs", [], |r| {
                            r.get(0)
                        })
                        .map_err(e)?,
                };
                insert(&tx, id, facts, placement).map_err(e)?;
                by_sha256(&tx, &facts.summary.sha256)
                    .map_err(e)?
                    .expect("the row just inserted")
            }
        };
        let same_name = select_runs(
            &tx,
            "file_name = ?1 AND sha256 != ?2 ORDER BY id",
            params![run.summary.file_name, run.summary.sha256],
        )
        .map_err(e)?;
        let (previous, overtaken) = neighbours(&tx, &run).map_err(e)?;
        let previous = match previous {
            Some(p) => {
                let before = parameters(&tx, p.id).map_err(e)?;
                let d = diff(&before, &facts.parameters);
                Some((p, d))
            }
            None => None,
        };
        tx.commit().map_err(e)?;
        Ok(Recorded {
            run,
            new,
            same_name,
            previous,
            overtaken,
        })
    }

    /// Adds a run read back from its report, under the id the report gives it.
    pub fn insert_rebuilt(
        &mut self,
        facts: &RunFacts,
        placement: &Placement,
    ) -> Result<Inserted, StoreError> {
        let path = self.path.clone();
        let e = |err| sql_error(&path, err);
        let id = placement.id.expect("a rebuilt run keeps its id");
        let tx = self.conn.transaction().map_err(e)?;
        if let Some(run) = by_sha256(&tx, &facts.summary.sha256).map_err(e)? {
            return Ok(Inserted::SameBytes { run: run.id });
        }
        if let Some(other) = select_runs(&tx, "id = ?1", params![id]).map_err(e)?.pop() {
            return Ok(Inserted::IdTaken {
                run: id,
                sha256: other.summary.sha256,
            });
        }
        insert(&tx, id, facts, placement).map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(Inserted::Added)
    }

    /// Every run in history order (by start, else by ingest; then by id), of one vehicle when
    /// `vehicle` is given: its range name, its identity text or its `sys_uuid`.
    pub fn runs(&self, vehicle: Option<&str>) -> Result<Vec<RunRow>, StoreError> {
        match vehicle {
            Some(v) => select_runs(
                &self.conn,
                "vehicle = ?1 OR vehicle_identity = ?1 OR sys_uuid = lower(?1) \
                 ORDER BY sort_utc_us, id",
                params![v],
            ),
            None => select_runs(&self.conn, "1 ORDER BY sort_utc_us, id", []),
        }
        .map_err(self.err())
    }

    /// Findings by kind and the number of parameters at start, of one run.
    pub fn run_counts(&self, id: i64) -> Result<(BTreeMap<String, u64>, u64), StoreError> {
        let e = self.err();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT kind, count FROM findings WHERE run_id = ?1 ORDER BY kind")
            .map_err(&e)?;
        let findings = stmt
            .query_map(params![id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })
            .map_err(&e)?
            .map(|row| row.map(|(k, n)| (k, u64::try_from(n).unwrap_or(0))))
            .collect::<rusqlite::Result<_>>()
            .map_err(&e)?;
        let parameters: i64 = self
            .conn
            .query_row(
                "SELECT count(*) FROM parameters WHERE run_id = ?1",
                params![id],
                |r| r.get(0),
            )
            .map_err(&e)?;
        Ok((findings, u64::try_from(parameters).unwrap_or(0)))
    }

    /// Each complete run of `vehicle` after its first, with what changed from the one before.
    pub fn history(&self, vehicle: &str) -> Result<Vec<Step>, StoreError> {
        let e = self.err();
        let runs: Vec<RunRow> = self
            .runs(Some(vehicle))?
            .into_iter()
            .filter(|r| r.summary.status == "complete")
            .collect();
        let mut steps = Vec::new();
        let mut before: Option<(RunRow, Parameters)> = None;
        for run in runs {
            let now = parameters(&self.conn, run.id).map_err(&e)?;
            if let Some((previous, then)) = before.take() {
                steps.push(Step {
                    diff: diff(&then, &now),
                    previous,
                    run: run.clone(),
                });
            }
            before = Some((run, now));
        }
        Ok(steps)
    }

    /// Makes SQLite write everything into the main file and close it (the rebuild renames it).
    pub fn close(self) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.conn.close().map_err(|(_, err)| sql_error(&path, err))
    }
}

fn by_sha256(conn: &Connection, sha256: &str) -> rusqlite::Result<Option<RunRow>> {
    conn.query_row(
        &format!("SELECT {RUN_COLUMNS} FROM runs WHERE sha256 = ?1"),
        params![sha256],
        run_row,
    )
    .optional()
}

fn select_runs(
    conn: &Connection,
    condition: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<RunRow>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE {condition}"))?;
    let rows = stmt.query_map(params, run_row)?;
    rows.collect()
}

fn parameters(conn: &Connection, run: i64) -> rusqlite::Result<Parameters> {
    let mut stmt = conn.prepare_cached("SELECT name, value FROM parameters WHERE run_id = ?1")?;
    let rows = stmt.query_map(params![run], |r| {
        Ok((r.get::<_, String>(0)?, param_from_sql(r.get_ref(1)?)))
    })?;
    let mut out = Parameters::new();
    for row in rows {
        let (name, value) = row?;
        if let Some(v) = value {
            out.insert(name, v);
        }
    }
    Ok(out)
}

/// The vehicle's complete runs just before and just after `run` in history order; the one after
/// only when it was ingested before `run`.
fn neighbours(
    conn: &Connection,
    run: &RunRow,
) -> rusqlite::Result<(Option<RunRow>, Option<RunRow>)> {
    let complete = run.summary.status == "complete";
    let Some(vehicle) = run.summary.vehicle.as_ref().filter(|_| complete) else {
        return Ok((None, None));
    };
    let previous = select_runs(
        conn,
        "vehicle = ?1 AND status = 'complete' AND (sort_utc_us < ?2 OR (sort_utc_us = ?2 AND id < ?3)) \
         ORDER BY sort_utc_us DESC, id DESC LIMIT 1",
        params![vehicle.name, run.sort_utc_us, run.id],
    )?
    .pop();
    let next = select_runs(
        conn,
        "vehicle = ?1 AND status = 'complete' AND (sort_utc_us > ?2 OR (sort_utc_us = ?2 AND id > ?3)) \
         ORDER BY sort_utc_us, id LIMIT 1",
        params![vehicle.name, run.sort_utc_us, run.id],
    )?
    .pop()
    .filter(|next| next.id < run.id);
    Ok((previous, next))
}

fn insert(conn: &Connection, id: i64, facts: &RunFacts, p: &Placement) -> rusqlite::Result<()> {
    let f = &facts.summary;
    let v = f.vehicle.as_ref();
    conn.execute(
        "INSERT INTO runs (id, sha256, file, file_name, size_bytes, status, reason, vehicle, \
         vehicle_identity, sys_uuid, ver_hw, mav_sys_id, named_by, start_utc_us, duration_s, \
         ingested_utc_us, sort_utc_us, report) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        params![
            id,
            f.sha256,
            f.file,
            f.file_name,
            i64::try_from(f.size_bytes).unwrap_or(i64::MAX),
            f.status,
            f.reason,
            v.map(|v| &v.name),
            v.map(|v| &v.identity),
            v.and_then(|v| v.sys_uuid.as_ref()),
            v.and_then(|v| v.ver_hw.as_ref()),
            v.and_then(|v| v.mav_sys_id),
            v.and_then(|v| v.named_by.as_ref()),
            f.start_utc_us,
            f.duration_s,
            p.ingested_utc_us,
            order_key(f.start_utc_us, p.ingested_utc_us),
            p.report,
        ],
    )?;
    let mut finding =
        conn.prepare_cached("INSERT INTO findings (run_id, kind, count) VALUES (?1, ?2, ?3)")?;
    for (kind, count) in &facts.findings {
        finding.execute(params![id, kind, i64::try_from(*count).unwrap_or(i64::MAX)])?;
    }
    let mut parameter =
        conn.prepare_cached("INSERT INTO parameters (run_id, name, value) VALUES (?1, ?2, ?3)")?;
    for (name, value) in &facts.parameters {
        parameter.execute(params![id, name, value])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(sha: char, vehicle: Option<&str>, start: Option<i64>, nav_dll_act: i64) -> RunFacts {
        RunFacts {
            summary: RunSummary {
                sha256: sha.to_string().repeat(64),
                file: format!("logs/{sha}.ulg"),
                file_name: format!("{sha}.ulg"),
                size_bytes: 100,
                status: "complete".into(),
                reason: None,
                vehicle: vehicle.map(|name| Vehicle {
                    name: name.into(),
                    identity: "MAV_SYS_ID 4".into(),
                    sys_uuid: None,
                    ver_hw: None,
                    mav_sys_id: Some(4),
                    named_by: None,
                }),
                start_utc_us: start,
                duration_s: Some(60.0),
            },
            findings: BTreeMap::from([("log_dropout".to_string(), 2)]),
            parameters: Parameters::from([
                ("NAV_DLL_ACT".to_string(), ParamValue::Int(nav_dll_act)),
                ("COM_OF_LOSS_T".to_string(), ParamValue::Float(1.0)),
            ]),
        }
    }

    fn at(ingested: i64) -> Placement {
        Placement {
            id: None,
            ingested_utc_us: ingested,
            report: None,
        }
    }

    #[test]
    fn runs_are_recorded_once_and_changes_follow_the_order_they_flew_in() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(&dir.path().join("c.sqlite")).unwrap();
        let day = 86_400_000_000i64;
        let first = c
            .record(&facts('a', Some("UAS-04"), Some(10 * day), 2), &at(1))
            .unwrap();
        assert!(first.new && first.previous.is_none());
        assert_eq!(first.run.id, 1);
        let third = c
            .record(&facts('c', Some("UAS-04"), Some(12 * day), 1), &at(2))
            .unwrap();
        let (prev, d) = third.previous.clone().unwrap();
        assert_eq!(prev.id, 1);
        assert_eq!(d.failsafe.len(), 1);
        // Flown between the two, ingested last: its previous run is the first, and the third
        // now counts its changes from it.
        let second = c
            .record(&facts('b', Some("UAS-04"), Some(11 * day), 0), &at(3))
            .unwrap();
        assert_eq!(second.run.id, 3);
        assert_eq!(second.previous.as_ref().unwrap().0.id, 1);
        assert_eq!(second.overtaken.as_ref().unwrap().id, 2);
        // The same bytes again: nothing changes.
        let again = c
            .record(&facts('b', Some("UAS-04"), Some(11 * day), 0), &at(4))
            .unwrap();
        assert!(!again.new);
        assert_eq!(again.run, second.run);
        assert_eq!(c.runs(None).unwrap().len(), 3);
        let history = c.history("UAS-04").unwrap();
        let ids: Vec<(i64, i64)> = history.iter().map(|s| (s.previous.id, s.run.id)).collect();
        assert_eq!(ids, [(1, 3), (3, 2)]);
        assert_eq!(
            history[1].diff.failsafe[0].from,
            Some(ParamValue::Int(0)),
            "NAV_DLL_ACT 0 to 1 from the second-flown run to the third"
        );
        assert!(history.iter().all(|s| s.diff.other.is_empty()));
        let (findings, parameters) = c.run_counts(1).unwrap();
        assert_eq!((findings["log_dropout"], parameters), (2, 2));
        // Another vehicle and a run without one stay out of this history.
        c.record(&facts('d', Some("UGV-02"), Some(11 * day), 1), &at(5))
            .unwrap();
        c.record(&facts('e', None, None, 1), &at(6)).unwrap();
        assert_eq!(c.history("UAS-04").unwrap().len(), 2);
        assert_eq!(c.runs(Some("UGV-02")).unwrap().len(), 1);
        assert_eq!(c.runs(Some("MAV_SYS_ID 4")).unwrap().len(), 4);
    }

    #[test]
    fn a_rebuild_keeps_ids_and_reports_clashes() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Catalog::open(&dir.path().join("c.sqlite")).unwrap();
        let keep = |id| Placement {
            id: Some(id),
            ingested_utc_us: 1,
            report: Some("r.json".into()),
        };
        assert_eq!(
            c.insert_rebuilt(&facts('a', None, None, 0), &keep(7))
                .unwrap(),
            Inserted::Added
        );
        assert_eq!(
            c.insert_rebuilt(&facts('a', None, None, 0), &keep(7))
                .unwrap(),
            Inserted::SameBytes { run: 7 }
        );
        assert!(matches!(
            c.insert_rebuilt(&facts('b', None, None, 0), &keep(7))
                .unwrap(),
            Inserted::IdTaken { run: 7, .. }
        ));
        // New runs continue after the highest id.
        assert_eq!(
            c.record(&facts('c', None, None, 0), &at(2)).unwrap().run.id,
            8
        );
    }
}
