//! Event fan-out: every event goes to the events file, the journal (structured fields), the
//! event log behind `/events`, the range board's history and the webhooks that take its kind. None of them can hold up the
//! caller: the file has its own writer thread, the event log never waits on a listener, each
//! webhook has its own bounded queue.

use crate::http::event_log::EventLog;
use crate::http::history::BoardHistory;
use crate::monitor::event::GapState;
use crate::monitor::Event;
use crate::sink::webhook::Webhook;
use crate::sink::writer::Batch;
use crate::sink::WriterHandle;
use std::sync::{Arc, Mutex};

pub struct EventSink {
    pub file: WriterHandle,
    pub sse: Arc<EventLog>,
    pub webhooks: Vec<Webhook>,
    /// Held only for the moment an event is added or the history is written out.
    pub history: Arc<Mutex<BoardHistory>>,
    /// The writer's own UTC clock, which picks the events file (day folder and name). An
    /// event's `utc` may be another clock's (a site's, a vehicle's, a day or a year off): filed
    /// by it, each such event would open a file of its own and move `current.jsonl`.
    pub filing_clock: fn() -> i64,
}

impl EventSink {
    pub fn emit(&self, event: &Event) {
        self.emit_line(event, event.to_json_line());
    }

    /// As [`EventSink::emit`], with the line as it is to be written (the `range` adds keys).
    pub fn emit_line(&self, event: &Event, line: String) {
        let line: Arc<str> = line.into();
        let filed_at = (self.filing_clock)();
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.file.offer(Batch {
            day: crate::utc::day_of(filed_at),
            first_utc_ns: filed_at,
            last_utc_ns: filed_at,
            lines: 1,
            bytes,
        });
        log_event(event);
        for webhook in &self.webhooks {
            webhook.offer(event, &line);
        }
        self.history
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record(event, &line);
        self.sse.push(line);
    }
}

/// One journal line per event, with its fields as structured journal fields.
fn log_event(event: &Event) {
    match event {
        Event::TelemetryGap(g) => {
            let name = g.name.as_deref().unwrap_or("");
            let links = g.links.join(",");
            let last = g
                .last_recv_utc
                .map(|u| crate::monitor::format_utc_ms(u.ns()))
                .unwrap_or_default();
            match g.state {
                GapState::Open => tracing::warn!(
                    kind = "telemetry_gap", state = "open", sysid = g.sysid, name, links = %links,
                    last_recv_utc = %last, due_utc = %crate::monitor::format_utc_ms(g.due_utc.ns()),
                    threshold_s = g.threshold_s, observed = %g.observed,
                    "telemetry_gap open: sysid {} {name} silent for more than {} s",
                    g.sysid, g.threshold_s
                ),
                GapState::Closed => tracing::warn!(
                    kind = "telemetry_gap", state = "closed", sysid = g.sysid, name, links = %links,
                    last_recv_utc = %last, gap_s = g.gap_s.unwrap_or(f64::NAN),
                    withdrawn = g.withdrawn.unwrap_or(false),
                    title = g.title.as_deref().unwrap_or(""), observed = %g.observed,
                    "telemetry_gap closed: sysid {} {name}: {}",
                    g.sysid, g.title.as_deref().unwrap_or("heard again")
                ),
            }
        }
        Event::LinkGap(g) => {
            let (state, hearing) = (format!("{:?}", g.state).to_lowercase(), g.hearing.join(","));
            tracing::warn!(
                kind = "link_gap", state = %state, sysid = g.sysid, link = %g.link,
                hearing = %hearing, name = g.name.as_deref().unwrap_or(""),
                last_recv_utc = %crate::monitor::format_utc_ms(g.last_recv_utc.ns()),
                gap_s = g.gap_s.unwrap_or(f64::NAN), threshold_s = g.threshold_s,
                title = %g.title, "link_gap {state}: sysid {} on {}: {}", g.sysid, g.link, g.title
            )
        }
        Event::SysidConflict(c) => {
            let state = format!("{:?}", c.state).to_lowercase();
            tracing::warn!(
                kind = "sysid_conflict", state = %state, sysid = c.sysid, compid = c.compid,
                reasons = %c.reasons.join(","), links = %c.links.join(","),
                sources = %c.sources.join(","), title = %c.title,
                "sysid_conflict {state}: {}", c.title
            )
        }
        Event::Stream(e) => {
            let state = format!("{:?}", e.state).to_lowercase();
            tracing::warn!(
                kind = "stream", state = %state, sysid = e.sysid, msg = %e.msg, msgid = e.msgid,
                reason = %e.reason, expected_hz = e.expected_hz, observed_hz = e.observed_hz,
                title = %e.title, "stream {state}: {}", e.title
            )
        }
        Event::TrafficProximity(p) => {
            let state = format!("{:?}", p.state).to_lowercase();
            let track = p.icao.as_deref().or(p.uas_id.as_deref()).unwrap_or("");
            tracing::warn!(
                kind = "traffic_proximity", state = %state, sysid = p.sysid,
                name = p.name.as_deref().unwrap_or(""), track, callsign = p.callsign.as_deref().unwrap_or(""),
                horizontal_m = p.horizontal_m, vertical_m = p.vertical_m.unwrap_or(f64::NAN),
                vertical_basis = p.vertical_basis.as_deref().unwrap_or(""),
                closest_horizontal_m = p.closest.horizontal_m, source = %p.source.kind,
                link = %p.source.link, reason = p.reason.as_deref().unwrap_or(""),
                title = %p.title, "traffic_proximity {state}: {}", p.title
            )
        }
        Event::Traffic(t) => {
            let track = t.icao.as_deref().or(t.uas_id.as_deref()).unwrap_or("");
            tracing::info!(
                kind = "traffic", state = "lost", track, callsign = t.callsign.as_deref().unwrap_or(""),
                reports = t.reports, source = %t.source.kind, link = %t.source.link,
                title = %t.title, "traffic lost: {}", t.title
            )
        }
        Event::Latency(l) => tracing::info!(
            kind = "latency",
            sysid = l.sysid,
            count = l.count,
            p50_ms = l.p50_ms.unwrap_or(f64::NAN),
            p95_ms = l.p95_ms.unwrap_or(f64::NAN),
            clock_offset_ms = l.clock_offset_ms.unwrap_or(f64::NAN),
            "latency sysid {}",
            l.sysid
        ),
        Event::Retention(r) => {
            let removed: Vec<&str> = r.removed.iter().map(|f| f.folder.as_str()).collect();
            let bytes: u64 = r.removed.iter().map(|f| f.bytes).sum();
            if let Some(over) = r.over_by_bytes {
                tracing::warn!(
                    kind = "retention", removed = %removed.join(","), removed_bytes = bytes,
                    total_bytes = r.total_bytes, over_by_bytes = over,
                    "retention: still {over} bytes over max_total_mb with only today's or open files left"
                );
            } else {
                tracing::info!(
                    kind = "retention", removed = %removed.join(","), removed_bytes = bytes,
                    total_bytes = r.total_bytes,
                    "retention: removed {} day folders ({bytes} bytes)", removed.len()
                );
            }
        }
        other => {
            tracing::info!(kind = other.kind(), event = %other.to_json_line(), "{}", other.kind())
        }
    }
}
