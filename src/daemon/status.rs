//! What the daemon publishes about itself: the `/status` JSON (per vehicle and per link) and the
//! `/metrics` Prometheus text. Built from the pipeline's state on its housekeeping tick.

use super::pipeline::Pipeline;
use crate::wire::RejectReason;
use crate::monitor::format_utc_ms;
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering;

pub fn status_json(p: &Pipeline, now_ns: i64) -> serde_json::Value {
    let mut loss: BTreeMap<u8, (u64, u64)> = BTreeMap::new();
    for ((_, sysid, _), stats) in p.recorder.sequences().stats() {
        let e = loss.entry(sysid).or_default();
        e.0 += stats.received;
        e.1 += stats.lost;
    }
    let vehicles: Vec<serde_json::Value> = p
        .watch
        .gap
        .vehicles()
        .into_iter()
        .map(|v| {
            let latency = p.watch.latency.estimate(v.sysid, now_ns);
            let (received, lost) = loss.get(&v.sysid).copied().unwrap_or_default();
            json!({
                "sysid": v.sysid,
                "name": v.name,
                "links": v.links,
                "last_heard_utc": v.last_recv_ns.map(format_utc_ms),
                "heartbeat_age_s": v.last_recv_ns.map(|t| (now_ns - t) as f64 / 1e9),
                "expected_interval_s": v.expected_interval_ns as f64 / 1e9,
                "open_gap": v.open_gap.as_ref().map(|g| serde_json::to_value(g).unwrap_or_default()),
                "latency_p95_ms": latency.as_ref().and_then(|l| l.latency_p95_ns()).map(|ns| ns as f64 / 1e6),
                "clock_offset_ms": latency.as_ref().and_then(|l| l.clock_offset_ns).map(|ns| ns as f64 / 1e6),
                "loss_percent": if received + lost == 0 { 0.0 } else { 100.0 * lost as f64 / (received + lost) as f64 },
            })
        })
        .collect();
    let links: Vec<serde_json::Value> = p
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let c = p.recorder.counters(i as u16);
            let rejects: BTreeMap<&str, u64> = RejectReason::ALL
                .iter()
                .map(|r| (r.as_str(), c.rejects_of(*r)))
                .collect();
            json!({
                "name": p.recorder.link_name(i as u16),
                "up": l.up,
                "detail": l.last_change_detail,
                "receipts": c.receipts,
                "bytes": c.bytes,
                "bytes_skipped": c.bytes_skipped,
                "rejects": rejects,
                "denied": l.denied,
                "seq_lost": c.seq_lost,
                "downs": l.downs,
                "rate_per_s": l.rate_per_s,
            })
        })
        .collect();
    let receive = &p.sinks.receive.stats;
    json!({
        "utc": format_utc_ms(now_ns),
        "started_utc": format_utc_ms(p.started_utc_ns),
        "version": env!("CARGO_PKG_VERSION"),
        "clock": p.clock_watch.status().map(|c| json!({"synchronised": c.synchronised, "max_error_us": c.max_error_us})),
        "vehicles": vehicles,
        "links": links,
        "receive_log": {
            "lines_written": receive.lines_written.load(Ordering::Relaxed),
            "bytes_written": receive.bytes_written.load(Ordering::Relaxed),
            "pending_bytes": receive.pending_bytes.load(Ordering::Relaxed),
            "dropped_lines": receive.dropped_lines.load(Ordering::Relaxed),
            "write_errors": receive.write_errors.load(Ordering::Relaxed),
        },
    })
}

fn escape(label: &str) -> String {
    label
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub fn metrics_text(p: &Pipeline) -> String {
    let mut m = String::new();
    let family = |m: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(m, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    family(
        &mut m,
        "foxborne_receipts_total",
        "counter",
        "Frames received and written as receipts, by link, system id and message.",
    );
    for ((link, sysid, msg), n) in &p.receipts_by_message {
        let _ = writeln!(
            m,
            "foxborne_receipts_total{{link=\"{}\",sysid=\"{sysid}\",msg=\"{msg}\"}} {n}",
            escape(p.recorder.link_name(*link))
        );
    }
    family(
        &mut m,
        "foxborne_rejects_total",
        "counter",
        "Frame candidates and byte runs that were not receipts, by link and reason.",
    );
    for (i, _) in p.links.iter().enumerate() {
        let c = p.recorder.counters(i as u16);
        let name = escape(p.recorder.link_name(i as u16));
        for r in RejectReason::ALL {
            let _ = writeln!(
                m,
                "foxborne_rejects_total{{link=\"{name}\",reason=\"{}\"}} {}",
                r.as_str(),
                c.rejects_of(r)
            );
        }
    }
    family(
        &mut m,
        "foxborne_link_bytes_total",
        "counter",
        "Bytes received per link.",
    );
    for (i, _) in p.links.iter().enumerate() {
        let _ = writeln!(
            m,
            "foxborne_link_bytes_total{{link=\"{}\"}} {}",
            escape(p.recorder.link_name(i as u16)),
            p.recorder.counters(i as u16).bytes
        );
    }
    family(
        &mut m,
        "foxborne_link_up",
        "gauge",
        "1 when the link is up, 0 when down (UDP links are up once bound).",
    );
    for (i, l) in p.links.iter().enumerate() {
        let up = l.up.unwrap_or(true) as u8;
        let _ = writeln!(
            m,
            "foxborne_link_up{{link=\"{}\"}} {up}",
            escape(p.recorder.link_name(i as u16))
        );
    }
    family(
        &mut m,
        "foxborne_sequence_lost_total",
        "counter",
        "Frames missing from sequence numbers, by link and system id.",
    );
    let mut lost: BTreeMap<(u16, u8), u64> = BTreeMap::new();
    for ((link, sysid, _), s) in p.recorder.sequences().stats() {
        *lost.entry((link, sysid)).or_default() += s.lost;
    }
    for ((link, sysid), n) in lost {
        let _ = writeln!(
            m,
            "foxborne_sequence_lost_total{{link=\"{}\",sysid=\"{sysid}\"}} {n}",
            escape(p.recorder.link_name(link))
        );
    }
    family(
        &mut m,
        "foxborne_open_gaps",
        "gauge",
        "Systems with an open telemetry_gap.",
    );
    let _ = writeln!(m, "foxborne_open_gaps {}", p.watch.gap.open_gaps().len());
    family(
        &mut m,
        "foxborne_latency_ms",
        "gauge",
        "SYSTEM_TIME one-way latency over the window, by system id and quantile.",
    );
    let now = super::clock::utc_ns();
    for v in p.watch.gap.vehicles() {
        if let Some(e) = p
            .watch
            .latency
            .estimate(v.sysid, now)
            .filter(|e| e.clock_offset_ns.is_none())
        {
            for (q, ns) in [("0.5", e.p50_ns), ("0.95", e.p95_ns), ("1", e.max_ns)] {
                let _ = writeln!(
                    m,
                    "foxborne_latency_ms{{sysid=\"{}\",quantile=\"{q}\"}} {}",
                    v.sysid,
                    ns as f64 / 1e6
                );
            }
        }
    }
    let writers = [
        Some(&p.sinks.receive),
        p.sinks.tlog.as_ref(),
        Some(&p.sinks.events.file),
    ];
    family(
        &mut m,
        "foxborne_lines_written_total",
        "counter",
        "Lines (records) written, by stream.",
    );
    for w in writers.iter().flatten() {
        let _ = writeln!(
            m,
            "foxborne_lines_written_total{{stream=\"{}\"}} {}",
            w.name(),
            w.stats.lines_written.load(Ordering::Relaxed)
        );
    }
    family(
        &mut m,
        "foxborne_bytes_written_total",
        "counter",
        "Bytes written, by stream.",
    );
    for w in writers.iter().flatten() {
        let _ = writeln!(
            m,
            "foxborne_bytes_written_total{{stream=\"{}\"}} {}",
            w.name(),
            w.stats.bytes_written.load(Ordering::Relaxed)
        );
    }
    family(
        &mut m,
        "foxborne_dropped_total",
        "counter",
        "Records dropped because the disk did not keep up and the buffer was full, by stream.",
    );
    for w in writers.iter().flatten() {
        let _ = writeln!(
            m,
            "foxborne_dropped_total{{stream=\"{}\"}} {}",
            w.name(),
            w.stats.dropped_lines.load(Ordering::Relaxed)
        );
    }
    family(
        &mut m,
        "foxborne_write_lag_seconds",
        "gauge",
        "Receipt to write, for the last batch written, by stream.",
    );
    for w in writers.iter().flatten() {
        let _ = writeln!(
            m,
            "foxborne_write_lag_seconds{{stream=\"{}\"}} {}",
            w.name(),
            w.stats.last_write_lag_ns.load(Ordering::Relaxed) as f64 / 1e9
        );
    }
    if let Some(hook) = &p.sinks.events.webhook {
        family(
            &mut m,
            "foxborne_webhook_total",
            "counter",
            "Webhook deliveries by outcome.",
        );
        let _ = writeln!(
            m,
            "foxborne_webhook_total{{outcome=\"sent\"}} {}",
            hook.stats.sent.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            m,
            "foxborne_webhook_total{{outcome=\"dropped\"}} {}",
            hook.stats.dropped.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            m,
            "foxborne_webhook_total{{outcome=\"failed_attempt\"}} {}",
            hook.stats.failed_attempts.load(Ordering::Relaxed)
        );
    }
    m
}
