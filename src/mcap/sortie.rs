//! One sortie in one MCAP file: the flight log's channels, the ground's receipts and the
//! timeline's entries, all on the sortie's UTC axis (the used anchor's; docs/sortie.md).
//!
//! - `/sortie/entries`: every timeline entry (gaps, link gaps, failsafes, the rules' findings,
//!   proximity when present, ...) as the JSON timeline writes it (`kind`, `side`, `utc`,
//!   `utc_start`, `utc_end`, `boot_s`, `bound_ms`, `title`, `cite`, ...), at its `utc`;
//! - metadata `time_anchor`: the used anchor (its source, `boot_utc`, `bound_ms`, title) and how
//!   the log times are made; `sortie_anchors`: every anchor and conflict, as the JSON lines.

use super::ground::{write_ground, GroundFile, GroundWritten};
use super::{metadata_of, McapError, McapOut, Written};
use crate::mcap::flight::write_ulog;
use crate::sortie::anchor::{conflict_json, Anchor};
use crate::sortie::axis::BootToUtc;
use crate::sortie::timeline::Sortie;
use crate::ulog::export::{ExportError, ExportSummary};
use crate::ulog::json::SCHEMA_DRAFT;
use crate::ulog::report::Report;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

pub const ENTRIES_CHANNEL: &str = "/sortie/entries";

/// Why a sortie's MCAP file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SortieMcapError {
    #[error(transparent)]
    Mcap(#[from] McapError),
    #[error("{file}: {source}")]
    FlightLog { file: String, source: ExportError },
}

/// What went into the file.
#[derive(Debug)]
pub struct SortieWritten {
    pub flight: ExportSummary,
    pub ground: GroundWritten,
    pub entries: usize,
    pub file: Written,
}

/// The schema of a timeline entry: the keys every entry has, and any of its kind's own.
pub fn entry_schema() -> Value {
    let utc = json!({"type": ["string", "null"], "description": "RFC 3339, µs"});
    let number = json!({"type": ["number", "null"]});
    let cite = json!({
        "type": "object",
        "properties": {
            "file": {"type": "string"},
            "line": {"type": "integer", "minimum": 1},
            "offset": {"type": "integer", "minimum": 0},
            "message": {"type": "integer", "minimum": 0},
        },
        "required": ["file"],
        "additionalProperties": false,
    });
    json!({
        "$schema": SCHEMA_DRAFT,
        "title": "foxborne.sortie_entry",
        "description": "One entry of the sortie's timeline (docs/sortie.md)",
        "type": "object",
        "properties": {
            "kind": {"type": "string"},
            "side": {"enum": ["ground", "air"]},
            "utc": utc,
            "utc_start": utc,
            "utc_end": utc,
            "boot_s": number,
            "boot_end_s": number,
            "bound_ms": number,
            "title": {"type": "string"},
            "cite": cite,
            "cite_end": cite,
            "in_window": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string"},
                        "boot_s": number,
                        "title": {"type": "string"},
                        "cite": cite,
                    },
                    "required": ["kind", "boot_s", "title", "cite"],
                },
            },
        },
        "required": ["kind", "side", "utc", "utc_start", "utc_end", "boot_s", "boot_end_s", "bound_ms", "title", "cite"],
    })
}

/// The `time_anchor` metadata: the used anchor, or why there is none. `ground`: the file holds
/// a sortie's ground receipts and timeline too.
pub fn time_anchor_metadata(
    anchor: Option<&Anchor>,
    elapsed_only: Option<&str>,
    ground: bool,
) -> BTreeMap<String, String> {
    match anchor {
        Some(a) => {
            let mut m = metadata_of(&a.to_json(true));
            m.remove("kind");
            m.remove("used");
            let mut how =
                "UTC: the flight log's boot clock plus this anchor's boot_utc (within bound_ms)"
                    .to_string();
            if ground {
                how += "; ground receipts and timeline entries placed as the sortie places them";
            }
            m.insert("log_time".into(), how);
            m
        }
        None => BTreeMap::from([
            ("source".to_string(), "none".to_string()),
            (
                "title".to_string(),
                elapsed_only
                    .unwrap_or("Elapsed time only: nothing ties the flight log's boot clock to UTC")
                    .to_string(),
            ),
            (
                "log_time".to_string(),
                "the flight log's boot clock (ns since boot); ground receipts at their own record's stamps: the two cannot be compared".to_string(),
            ),
        ]),
    }
}

/// Writes `path`: the flight log (`flight`, whose ingest report is `report`) read once more,
/// the ground files' receipts, the timeline's entries and the anchors.
pub fn write_sortie_file(
    path: &Path,
    flight: &Path,
    report: &Report,
    sortie: &Sortie,
    ground: &[GroundFile],
) -> Result<SortieWritten, SortieMcapError> {
    let mut out = McapOut::create(path)?;
    let name = flight.file_name().map_or_else(
        || flight.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let flight_error = |source| SortieMcapError::FlightLog {
        file: flight.display().to_string(),
        source,
    };
    let input = std::fs::File::open(flight).map_err(|source| McapError::Read {
        path: flight.to_path_buf(),
        at: "its start".into(),
        source,
    })?;
    let summary = write_ulog(
        input,
        &name,
        report,
        BootToUtc::new(sortie.used_anchor()),
        &mut out,
    )
    .map_err(flight_error)?;
    let ground_written = write_ground(&mut out, sortie, ground)?;
    let schema = out.schema("foxborne.sortie_entry", &entry_schema())?;
    let channel = out.channel(ENTRIES_CHANNEL, schema, &BTreeMap::new())?;
    for (n, entry) in sortie.entries.iter().enumerate() {
        let (utc, boot) = entry.at();
        let log_time = utc.or(boot).unwrap_or(0);
        let data = serde_json::to_vec(&entry.to_json()).expect("a JSON value serialises");
        out.write(channel, n as u32, log_time, &data)?;
    }
    out.metadata(
        "time_anchor",
        time_anchor_metadata(sortie.used_anchor(), sortie.elapsed_only.as_deref(), true),
    )?;
    let mut anchors = BTreeMap::new();
    for (i, a) in sortie.anchors.iter().enumerate() {
        anchors.insert(
            format!("anchor {i}"),
            a.to_json(sortie.used == Some(i)).to_string(),
        );
    }
    for (i, c) in sortie.conflicts.iter().enumerate() {
        anchors.insert(
            format!("conflict {i}"),
            conflict_json(&sortie.anchors, c, sortie.used).to_string(),
        );
    }
    out.metadata("sortie_anchors", anchors)?;
    let file = out.finish()?;
    Ok(SortieWritten {
        flight: summary,
        ground: ground_written,
        entries: sortie.entries.len(),
        file,
    })
}
