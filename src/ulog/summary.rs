//! `ulog info`: a human summary of an ingest report, a screenful an operator can read.

use super::display::{grouped, human_size};
use super::inspect::boot_time;
use super::report::{Report, Status};
use std::fmt::Write;

fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{label:<12} {value}");
}

/// Renders the summary.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    line(&mut out, "file", &r.file);
    line(&mut out, "status", format!("{:?}", r.status).to_lowercase());
    if let Some(reason) = &r.reason {
        line(&mut out, "reason", reason);
    }
    for v in &r.validation {
        line(&mut out, "validation", v);
    }
    line(
        &mut out,
        "size",
        format!(
            "{} ({} bytes)",
            human_size(r.size_bytes),
            grouped(r.size_bytes)
        ),
    );
    if r.status != Status::Complete {
        if let Some(q) = &r.quarantine {
            line(&mut out, "quarantined", &q.copy);
        }
        return out;
    }
    line(&mut out, "messages", grouped(r.messages));
    if let Some(h) = &r.header {
        line(&mut out, "started", boot_time(h.start_timestamp));
        if !h.flag_bits {
            line(&mut out, "flag bits", "none (a version 0 log)");
        }
    }
    for key in ["sys_name", "ver_hw", "ver_sw", "ver_sw_branch", "sys_uuid"] {
        if let Some(v) = r.info.get(key) {
            line(&mut out, key, v);
        }
    }
    if let Some(g) = &r.gps_anchor {
        let mut text = g.title.clone();
        if let (Some(boot), Some(spread)) = (&g.boot_utc, g.spread_ms) {
            let _ = write!(text, ": boot at {boot}, spread {spread:.0} ms");
        }
        line(&mut out, "clock", text);
    }
    line(
        &mut out,
        "topics",
        format!("{} with samples", r.topics.len()),
    );
    for t in &r.topics {
        let rate = t.rate_hz.map_or(String::new(), |h| format!(", {h:.1} Hz"));
        let _ = writeln!(
            out,
            "  {:<40} {:>9} samples{rate}",
            format!("{}[{}]", t.topic, t.multi_id),
            grouped(t.samples)
        );
    }
    if let Some(e) = &r.expected_topics {
        line(
            &mut out,
            "expected",
            format!("{}: {}", e.profile, e.summary),
        );
        for t in e.topics.iter().filter(|t| t.status != "Logged") {
            let _ = writeln!(out, "  {:<40} {}", t.topic, t.status);
        }
    }
    line(
        &mut out,
        "parameters",
        format!(
            "{} at start, {} changes",
            r.parameters.initial.len(),
            r.parameters.changes.len()
        ),
    );
    for p in &r.parameters.failsafe {
        let v = p.value.as_ref().map_or(p.status.clone(), |v| v.to_string());
        let _ = writeln!(out, "  {:<40} {v}", p.name);
    }
    line(
        &mut out,
        "dropouts",
        format!(
            "{} ({} ms in all)",
            r.dropouts.len(),
            r.dropouts
                .iter()
                .map(|d| u64::from(d.duration_ms))
                .sum::<u64>()
        ),
    );
    line(
        &mut out,
        "rules",
        format!(
            "{} of {} evaluated",
            r.rules.iter().filter(|x| x.evaluated).count(),
            r.rules.len()
        ),
    );
    for x in &r.rules {
        let what = match (&x.reason, x.found) {
            (Some(reason), _) => reason.clone(),
            (None, 0) => "nothing found".to_string(),
            (None, 1) => "1 finding".to_string(),
            (None, n) => format!("{n} findings"),
        };
        let _ = writeln!(out, "  {:<40} {what}", x.rule);
    }
    line(&mut out, "findings", r.findings.len());
    for f in &r.findings {
        let _ = writeln!(
            out,
            "  {} (message {}, byte {})",
            f.title,
            grouped(f.message),
            grouped(f.offset)
        );
    }
    if let Some(d) = &r.event_definitions {
        line(
            &mut out,
            "events",
            format!("{} shown; {}", r.events.len(), d.detail),
        );
    }
    for e in r.events.iter().take(30) {
        let _ = writeln!(
            out,
            "  {:>14} {:<8} {} (message {})",
            grouped(e.timestamp),
            e.level,
            e.message,
            grouped(e.citation.message)
        );
    }
    line(
        &mut out,
        "console",
        format!(
            "{} logged, {} tagged",
            r.logged_messages.len(),
            r.tagged_logged_messages.len()
        ),
    );
    for m in r
        .logged_messages
        .iter()
        .chain(&r.tagged_logged_messages)
        .take(30)
    {
        let _ = writeln!(
            out,
            "  {:>14} {:<8} {}",
            grouped(m.timestamp),
            m.level_name,
            m.text
        );
    }
    out
}
