//! What the catalog holds of one run, read from its ingest report's JSON: the same function
//! serves the ingest (on the report it is about to write) and `ulog catalog rebuild` (on the
//! reports on disk), so the catalog never holds anything the reports do not.

use super::params::{ParamValue, Parameters};
use super::vehicle::Vehicle;
use serde_json::Value;
use std::collections::BTreeMap;

/// What the catalog lists of a run: its file, vehicle and time.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub sha256: String,
    /// The path as given to the ingest.
    pub file: String,
    /// Its last component: a different file of the same name is a new run, said so.
    pub file_name: String,
    pub size_bytes: u64,
    /// `complete`, `quarantined` or `rejected`.
    pub status: String,
    pub reason: Option<String>,
    /// `None` when the log does not say (a quarantined or rejected log shows nothing).
    pub vehicle: Option<Vehicle>,
    /// The first believable sample in UTC, microseconds, when the log has a GPS anchor.
    pub start_utc_us: Option<i64>,
    pub duration_s: Option<f64>,
}

/// One run as the catalog records it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    pub summary: RunSummary,
    /// Findings counted by kind.
    pub findings: BTreeMap<String, u64>,
    /// Parameters at start.
    pub parameters: Parameters,
}

/// Why a report cannot be catalogued.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FactsError {
    #[error("it has no `{0}` (not an ingest report, or one written before the catalog existed)")]
    Missing(&'static str),
}

fn text(report: &Value, key: &'static str) -> Result<String, FactsError> {
    report[key]
        .as_str()
        .map(String::from)
        .ok_or(FactsError::Missing(key))
}

impl RunFacts {
    /// The facts of the report `report`; its `vehicle` (as the ingest added it) is taken as is.
    pub fn from_report(report: &Value) -> Result<RunFacts, FactsError> {
        let file = text(report, "file")?;
        let file_name = std::path::Path::new(&file)
            .file_name()
            .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
        let span = logged_span(report);
        let boot_offset = report["gps_anchor"]["boot_offset_us"].as_i64();
        let mut findings = BTreeMap::new();
        for f in report["findings"].as_array().into_iter().flatten() {
            if let Some(kind) = f["kind"].as_str() {
                *findings.entry(kind.to_string()).or_insert(0) += 1;
            }
        }
        let parameters = report["parameters"]["initial"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| ParamValue::from_json(v).map(|v| (k.clone(), v)))
            .collect();
        Ok(RunFacts {
            summary: RunSummary {
                sha256: text(report, "sha256")?,
                file,
                file_name,
                size_bytes: report["size_bytes"]
                    .as_u64()
                    .ok_or(FactsError::Missing("size_bytes"))?,
                status: text(report, "status")?,
                reason: report["reason"].as_str().map(String::from),
                vehicle: serde_json::from_value(report["vehicle"].clone()).ok(),
                start_utc_us: span
                    .zip(boot_offset)
                    .and_then(|((t0, _), off)| off.checked_add(i64::try_from(t0).ok()?)),
                duration_s: span.map(|(t0, t1)| (t1 - t0) as f64 / 1e6),
            },
            findings,
            parameters,
        })
    }
}

/// From the first to the last believable sample on the boot clock: topics with a
/// `timestamp_outlier` finding are left out (one bogus sample would stretch the run by
/// minutes), and samples stamped before logging started count from its start. The HTML
/// report's time axis spans the same.
pub fn logged_span(report: &Value) -> Option<(u64, u64)> {
    let outliers: Vec<&str> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["kind"] == "timestamp_outlier")
        .filter_map(|f| f["topic"].as_str())
        .collect();
    let (mut t0, mut t1) = (u64::MAX, 0u64);
    for t in report["topics"].as_array().into_iter().flatten() {
        if t["topic"]
            .as_str()
            .is_some_and(|name| outliers.contains(&name))
        {
            continue;
        }
        if let (Some(a), Some(b)) = (t["first_timestamp"].as_u64(), t["last_timestamp"].as_u64()) {
            t0 = t0.min(a);
            t1 = t1.max(b);
        }
    }
    if let Some(start) = report["header"]["start_timestamp"].as_u64() {
        if start < t1 {
            t0 = t0.max(start);
        }
    }
    (t0 <= t1).then_some((t0, t1))
}

/// Microseconds since the epoch as RFC 3339 with milliseconds (`2026-09-22T14:13:19.000Z`).
pub use crate::utc::format_utc_ms_of_us as utc_text;

/// The inverse of [`utc_text`] (any RFC 3339 time).
pub fn parse_utc(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_micros())
}

/// Where a run stands in its vehicle's history: its start when its log is anchored, else the
/// moment it was ingested (a log without GPS time has no other clock to place it by).
pub fn order_key(start_utc_us: Option<i64>, ingested_utc_us: i64) -> i64 {
    start_utc_us.unwrap_or(ingested_utc_us)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        json!({
            "file": "logs/2026-09-22/14_13_19.ulg",
            "status": "complete",
            "reason": null,
            "size_bytes": 1234,
            "sha256": "ab".repeat(32),
            "header": {"start_timestamp": 1_000_000},
            "topics": [
                {"topic": "att", "first_timestamp": 900_000, "last_timestamp": 61_000_000},
                {"topic": "sensor_gps", "first_timestamp": 2_000_000, "last_timestamp": 60_000_000},
                {"topic": "mission", "first_timestamp": 5_000_000, "last_timestamp": 1_194_000_000},
            ],
            "findings": [
                {"kind": "log_dropout", "topic": "att"},
                {"kind": "log_dropout", "topic": "att"},
                {"kind": "timestamp_outlier", "topic": "mission"},
            ],
            "parameters": {"initial": {"NAV_DLL_ACT": 2, "COM_OF_LOSS_T": 1.0, "MAV_SYS_ID": 4}},
            "gps_anchor": {"boot_offset_us": 1_790_086_398_000_000i64},
            "vehicle": {"name": "UAS-04", "identity": "MAV_SYS_ID 4", "sys_uuid": null,
                        "ver_hw": null, "mav_sys_id": 4, "named_by": "n.toml line 1"},
        })
    }

    #[test]
    fn a_report_gives_its_runs_facts() {
        let facts = RunFacts::from_report(&report()).unwrap();
        let f = &facts.summary;
        assert_eq!(f.file_name, "14_13_19.ulg");
        assert_eq!(f.size_bytes, 1234);
        // From logging start (1 s, not the stale 0.9 s sample) to 61 s; the outlier topic
        // (1,194 s) is left out.
        assert_eq!(f.duration_s, Some(60.0));
        assert_eq!(f.start_utc_us, Some(1_790_086_399_000_000));
        assert_eq!(
            utc_text(f.start_utc_us.unwrap()).unwrap(),
            "2026-09-22T14:13:19.000Z"
        );
        assert_eq!(facts.findings["log_dropout"], 2);
        assert_eq!(facts.findings["timestamp_outlier"], 1);
        assert_eq!(facts.parameters["NAV_DLL_ACT"], ParamValue::Int(2));
        assert_eq!(facts.parameters["COM_OF_LOSS_T"], ParamValue::Float(1.0));
        assert_eq!(f.vehicle.as_ref().unwrap().name, "UAS-04");
    }

    #[test]
    fn a_quarantined_report_has_no_span_and_an_old_report_is_refused() {
        let mut r = report();
        r["topics"] = json!([]);
        r["findings"] = json!([]);
        r["vehicle"] = Value::Null;
        let f = RunFacts::from_report(&r).unwrap().summary;
        assert_eq!(
            (f.start_utc_us, f.duration_s, f.vehicle),
            (None, None, None)
        );
        r.as_object_mut().unwrap().remove("sha256");
        assert_eq!(
            RunFacts::from_report(&r),
            Err(FactsError::Missing("sha256"))
        );
    }

    #[test]
    fn runs_are_placed_by_start_else_by_ingest_and_times_read_back() {
        assert_eq!(order_key(Some(5), 9), 5);
        assert_eq!(order_key(None, 9), 9);
        let t = 1_790_086_399_123_000;
        assert_eq!(parse_utc(&utc_text(t).unwrap()), Some(t));
    }
}
