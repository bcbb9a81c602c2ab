//! The report's ground lane from the sortie timeline: the ground entries placed on the boot
//! clock, with the used anchor's UTC for the lane's ticks.

use super::entry::{Side, MS};
use super::timeline::Sortie;
use crate::ulog::lane::{GroundLane, LaneItem, LaneKind};

/// The ground entries that have a place on the boot clock, as lane items.
pub fn ground_lane(sortie: &Sortie) -> GroundLane {
    let items = sortie
        .entries
        .iter()
        .filter(|e| e.side == Side::Ground)
        .filter_map(|e| {
            let start = u64::try_from(e.boot_start? / 1000).ok()?;
            let kind = match e.kind.as_str() {
                "telemetry_gap" => LaneKind::Gap,
                "link" => LaneKind::Link,
                "receiver_drop" => LaneKind::Drop,
                _ => LaneKind::Other,
            };
            let observed = e
                .detail
                .get("observed")
                .and_then(|v| v.as_str())
                .map(|o| format!(". {o}"))
                .unwrap_or_default();
            let bound = e.bound_ns.unwrap_or(0);
            Some(LaneItem {
                kind,
                start_us: start,
                end_us: e.boot_end.and_then(|t| u64::try_from(t / 1000).ok()),
                bound_us: u64::try_from(bound / 1000).unwrap_or(0),
                text: format!(
                    "{}{observed} (±{:.1} ms; {})",
                    e.title,
                    bound as f64 / MS as f64,
                    e.cite.short()
                ),
            })
        })
        .collect();
    let records: Vec<String> = sortie
        .anchors
        .iter()
        .filter_map(|a| a.record.clone())
        .collect();
    let caption = match sortie.used_anchor() {
        Some(a) => {
            let line = a.to_json(true);
            format!(
                "{}; UTC by the {} anchor (±{} ms)",
                records.join(", "),
                line["source"].as_str().unwrap_or(""),
                line["bound_ms"]
            )
        }
        None => format!(
            "{}; elapsed time only: nothing ties the boot clock to UTC",
            records.join(", ")
        ),
    };
    GroundLane {
        caption,
        boot_utc_ns: sortie
            .used_anchor()
            .and_then(|a| a.boot_at(a.reference_boot_ns().unwrap_or(0)))
            .map(|i| i.mid()),
        items,
    }
}
