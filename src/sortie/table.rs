//! The sortie as text for a terminal (`sortie --format table`): the anchors, any conflict, then
//! one timeline row per entry (UTC time of day, boot seconds, bound, side, kind, title,
//! citation), each ground gap followed by what the flight log shows in its window.

use super::entry::{format_utc_us, Entry, SECOND};
use super::timeline::Sortie;
use serde_json::Value;
use std::fmt::Write as _;

fn time_of_day(utc_ns: Option<i64>) -> String {
    match utc_ns {
        // `2026-09-24T14:32:03.912500Z` to `14:32:03.912500`.
        Some(t) => {
            let full = format_utc_us(t);
            full.get(11..26).unwrap_or(&full).to_string()
        }
        None => "-".to_string(),
    }
}

fn boot(ns: Option<i64>) -> String {
    ns.map_or("-".to_string(), |t| {
        format!("{:.3}", t as f64 / SECOND as f64)
    })
}

fn bound(entry: &Entry) -> String {
    entry
        .bound_ns
        .map_or("-".to_string(), |b| format!("±{:.1} ms", b as f64 / 1e6))
}

/// The whole sortie as a table.
pub fn render(sortie: &Sortie) -> String {
    let mut out = String::new();
    out.push_str("ANCHORS\n");
    for (i, anchor) in sortie.anchors.iter().enumerate() {
        let line = anchor.to_json(sortie.used == Some(i));
        let name = match &anchor.record {
            Some(r) => format!("ground ({r})"),
            None => line["source"].as_str().unwrap_or("").to_string(),
        };
        let at = line["boot_utc"].as_str().unwrap_or("-");
        let b = match &line["bound_ms"] {
            Value::Number(n) => format!("±{n} ms"),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            out,
            "  {:<22} {:<28} {:<16} {:<5} {}",
            name,
            at,
            b,
            if sortie.used == Some(i) { "used" } else { "" },
            anchor.title
        );
    }
    let conflicts = sortie.lines();
    for c in conflicts.iter().filter(|l| l["kind"] == "anchor_conflict") {
        let _ = writeln!(out, "CONFLICT {}", c["title"].as_str().unwrap_or(""));
    }
    if let Some(note) = &sortie.elapsed_only {
        let _ = writeln!(out, "{note}");
    }
    out.push_str("\nTIMELINE\n");
    let _ = writeln!(
        out,
        "  {:<15} {:>10} {:>12}  {:<6} {:<16} what (evidence)",
        "UTC", "boot s", "bound", "side", "kind"
    );
    for e in &sortie.entries {
        let side = match e.side {
            super::entry::Side::Ground => "ground",
            super::entry::Side::Air => "air",
        };
        let (utc, boot_at) = e.at();
        let _ = writeln!(
            out,
            "  {:<15} {:>10} {:>12}  {:<6} {:<16} {} ({})",
            time_of_day(utc),
            boot(boot_at),
            bound(e),
            side,
            e.kind,
            e.title,
            e.cite.short()
        );
        if let Some(observed) = e.detail.get("observed").and_then(Value::as_str) {
            let _ = writeln!(out, "  {:>58}{observed}", "");
        }
        for f in e.in_window.iter().flatten() {
            let _ = writeln!(
                out,
                "  {:>58}in the gap: {} ({})",
                "",
                f.title,
                f.cite.short()
            );
        }
    }
    out
}
