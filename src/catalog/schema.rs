//! The catalog's tables and their version, kept in SQLite's `user_version`: a new file gets the
//! current schema; a catalog of this version is used as it is; one from an older version is
//! migrated when a migration is known and refused otherwise; one from a newer version, or an
//! SQLite file that is no catalog, is refused. Each refusal says what to do: the catalog is a
//! cache of the reports, so `ulog catalog rebuild` can always make a current one.

use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;

/// The schema this build writes and reads.
pub const VERSION: i64 = 1;

/// Version 1: one row per run, its findings counted by kind and its parameters at start.
/// `sort_utc_us` places a run in its vehicle's history (its start, else when it was ingested).
const V1: &str = "
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    file TEXT NOT NULL,
    file_name TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    vehicle TEXT,
    vehicle_identity TEXT,
    sys_uuid TEXT,
    ver_hw TEXT,
    mav_sys_id INTEGER,
    named_by TEXT,
    start_utc_us INTEGER,
    duration_s REAL,
    ingested_utc_us INTEGER NOT NULL,
    sort_utc_us INTEGER NOT NULL,
    report TEXT
);
CREATE INDEX runs_by_vehicle ON runs (vehicle, sort_utc_us, id);
CREATE INDEX runs_by_file_name ON runs (file_name);
CREATE TABLE findings (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (run_id, kind)
) WITHOUT ROWID;
CREATE TABLE parameters (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value NOT NULL,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
";

/// `MIGRATIONS[k]` takes a catalog from version `k + 1` to `k + 2`. Version 1 is the first, so
/// there are none yet.
const MIGRATIONS: &[&str] = &[];

/// Why a catalog's schema is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchemaError {
    #[error("catalog {file} is schema version {found}, written by a newer foxborne-receiver (this one reads version {VERSION}): use that version, or rebuild the catalog for this one from the reports with `ulog catalog rebuild`")]
    Newer { file: String, found: i64 },
    #[error("catalog {file} is schema version {found}, older than this foxborne-receiver's {VERSION}, and there is no migration from it: rebuild it from the reports with `ulog catalog rebuild`")]
    Older { file: String, found: i64 },
    #[error("{file} is an SQLite database but not a Foxborne catalog (it has tables and no catalog version): give another --catalog")]
    Foreign { file: String },
}

/// Brings the catalog in `conn` to [`VERSION`]: creates it when the file is new, migrates it when
/// it can. Concurrent callers on one new file are safe: the check and the creation happen in one
/// write transaction.
pub fn prepare(conn: &mut Connection, file: &Path) -> Result<(), PrepareError> {
    if version(conn)? == VERSION {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = version(&tx)?;
    let file = file.display().to_string();
    match found {
        VERSION => {}
        0 => {
            let tables: i64 =
                tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
            if tables > 0 {
                return Err(SchemaError::Foreign { file }.into());
            }
            tx.execute_batch(V1)?;
        }
        newer if newer > VERSION => return Err(SchemaError::Newer { file, found }.into()),
        older => {
            let steps = usize::try_from(older - 1)
                .ok()
                .and_then(|from| MIGRATIONS.get(from..))
                .filter(|steps| steps.len() == usize::try_from(VERSION - older).unwrap_or(0));
            let Some(steps) = steps else {
                return Err(SchemaError::Older { file, found }.into());
            };
            for step in steps {
                tx.execute_batch(step)?;
            }
        }
    }
    tx.pragma_update(None, "user_version", VERSION)?;
    tx.commit()?;
    Ok(())
}

fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// A schema refusal, or SQLite failing underneath.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_gets_the_schema_and_other_versions_are_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        prepare(&mut conn, Path::new("c.sqlite")).unwrap();
        assert_eq!(version(&conn).unwrap(), VERSION);
        prepare(&mut conn, Path::new("c.sqlite")).unwrap();

        conn.pragma_update(None, "user_version", 7).unwrap();
        let err = prepare(&mut conn, Path::new("c.sqlite")).unwrap_err();
        assert!(
            matches!(
                &err,
                PrepareError::Schema(SchemaError::Newer { found: 7, .. })
            ),
            "{err}"
        );
        assert!(err.to_string().contains("ulog catalog rebuild"));

        let mut foreign = Connection::open_in_memory().unwrap();
        foreign.execute_batch("CREATE TABLE t (x)").unwrap();
        let err = prepare(&mut foreign, Path::new("f.db")).unwrap_err();
        assert!(matches!(
            err,
            PrepareError::Schema(SchemaError::Foreign { .. })
        ));
    }
}
