//! `/metrics`: the snapshot in the Prometheus text exposition format (pure). Rendered when
//! scraped, not on a timer.

use super::{StatusSnapshot, StreamSnapshot};
use std::fmt::Write;

fn escape(label: &str) -> String {
    label
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn family(m: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(m, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

pub fn render(s: &StatusSnapshot) -> String {
    let mut m = String::new();
    family(
        &mut m,
        "foxborne_receipts_total",
        "counter",
        "Frames received and written as receipts, by link, system id and message.",
    );
    for r in &s.receipts {
        let _ = writeln!(
            m,
            "foxborne_receipts_total{{link=\"{}\",sysid=\"{}\",msg=\"{}\"}} {}",
            escape(&r.link),
            r.sysid,
            escape(&r.msg),
            r.count
        );
    }
    family(
        &mut m,
        "foxborne_rejects_total",
        "counter",
        "Frame candidates and byte runs that were not receipts, by link and reason.",
    );
    for l in &s.links {
        for (reason, n) in &l.rejects {
            let _ = writeln!(
                m,
                "foxborne_rejects_total{{link=\"{}\",reason=\"{}\"}} {n}",
                escape(&l.name),
                escape(reason)
            );
        }
    }
    family(
        &mut m,
        "foxborne_receiver_dropped_total",
        "counter",
        "Datagrams the receiver itself dropped, by link and reason (overload: the link's queue was full; kernel: the socket buffer overflowed).",
    );
    for l in &s.links {
        for (reason, n) in &l.dropped {
            let _ = writeln!(
                m,
                "foxborne_receiver_dropped_total{{link=\"{}\",reason=\"{}\"}} {n}",
                escape(&l.name),
                escape(reason)
            );
        }
    }
    family(
        &mut m,
        "foxborne_link_bytes_total",
        "counter",
        "Bytes received per link.",
    );
    for l in &s.links {
        let _ = writeln!(
            m,
            "foxborne_link_bytes_total{{link=\"{}\"}} {}",
            escape(&l.name),
            l.bytes
        );
    }
    family(
        &mut m,
        "foxborne_link_up",
        "gauge",
        "1 when the link is up, 0 when down.",
    );
    for l in &s.links {
        let _ = writeln!(
            m,
            "foxborne_link_up{{link=\"{}\"}} {}",
            escape(&l.name),
            l.up.unwrap_or(true) as u8
        );
    }
    family(
        &mut m,
        "foxborne_sequence_lost_total",
        "counter",
        "Frames missing from sequence numbers, by link and system id.",
    );
    for l in &s.sequence_lost {
        let _ = writeln!(
            m,
            "foxborne_sequence_lost_total{{link=\"{}\",sysid=\"{}\"}} {}",
            escape(&l.link),
            l.sysid,
            l.lost
        );
    }
    family(
        &mut m,
        "foxborne_open_gaps",
        "gauge",
        "Systems with an open telemetry_gap.",
    );
    let _ = writeln!(m, "foxborne_open_gaps {}", s.open_gaps);
    family(
        &mut m,
        "foxborne_latency_ms",
        "gauge",
        "SYSTEM_TIME one-way latency over the window, by system id and quantile.",
    );
    for v in &s.vehicles {
        for (q, value) in [
            ("0.5", v.latency_p50_ms),
            ("0.95", v.latency_p95_ms),
            ("1", v.latency_max_ms),
        ] {
            if let Some(ms) = value {
                let _ = writeln!(
                    m,
                    "foxborne_latency_ms{{sysid=\"{}\",quantile=\"{q}\"}} {ms}",
                    v.sysid
                );
            }
        }
    }
    /// A per-stream family: name, type, help, and the value it takes from a stream.
    type StreamFamily = (
        &'static str,
        &'static str,
        &'static str,
        fn(&StreamSnapshot) -> f64,
    );
    let streams: [StreamFamily; 4] = [
        (
            "foxborne_lines_written_total",
            "counter",
            "Lines (records) written, by stream.",
            |w| w.lines_written as f64,
        ),
        (
            "foxborne_bytes_written_total",
            "counter",
            "Bytes written, by stream.",
            |w| w.bytes_written as f64,
        ),
        (
            "foxborne_dropped_total",
            "counter",
            "Records dropped because the disk did not keep up and the buffer was full, by stream.",
            |w| w.dropped_lines as f64,
        ),
        (
            "foxborne_write_lag_seconds",
            "gauge",
            "Receipt to write, for the last batch written, by stream.",
            |w| w.write_lag_s,
        ),
    ];
    for (name, kind, help, value) in streams {
        family(&mut m, name, kind, help);
        for w in &s.streams {
            let _ = writeln!(m, "{name}{{stream=\"{}\"}} {}", escape(&w.name), value(w));
        }
    }
    if let Some(hook) = &s.webhook {
        family(
            &mut m,
            "foxborne_webhook_total",
            "counter",
            "Webhook deliveries by outcome.",
        );
        for (outcome, n) in [
            ("sent", hook.sent),
            ("dropped", hook.dropped),
            ("failed_attempt", hook.failed_attempts),
        ] {
            let _ = writeln!(m, "foxborne_webhook_total{{outcome=\"{outcome}\"}} {n}");
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_declared_once_with_its_samples() {
        let text = render(&crate::status::example());
        for line in [
            "foxborne_receipts_total{link=\"radio1\",sysid=\"4\",msg=\"HEARTBEAT\"} 60",
            "foxborne_rejects_total{link=\"radio1\",reason=\"bad_crc\"} 3",
            "foxborne_sequence_lost_total{link=\"radio1\",sysid=\"4\"} 7",
            "foxborne_open_gaps 1",
            "foxborne_latency_ms{sysid=\"4\",quantile=\"0.95\"} 87.5",
            "foxborne_lines_written_total{stream=\"events\"} 9",
            "foxborne_webhook_total{outcome=\"failed_attempt\"} 1",
            "foxborne_receiver_dropped_total{link=\"radio1\",reason=\"kernel\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
        // A vehicle whose clock is off UTC has no latency samples.
        assert!(!text.contains("sysid=\"22\",quantile"));
        let mut types = std::collections::HashSet::new();
        for l in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            assert!(types.insert(l.to_string()), "declared twice: {l}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        let mut s = crate::status::example();
        s.links[0].name = "a\"b\\c".into();
        assert!(render(&s).contains("link=\"a\\\"b\\\\c\""));
    }
}
