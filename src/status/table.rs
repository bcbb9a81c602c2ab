//! The `status` verb's table: per vehicle and per link, for a person at a glance (pure).

use super::StatusSnapshot;
use std::fmt::Write;

fn opt(v: Option<f64>, fmt: impl Fn(f64) -> String) -> String {
    v.map(fmt).unwrap_or_else(|| "-".to_string())
}

/// Left-aligned columns two spaces apart, each as wide as its widest cell.
fn columns(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "  {}", cells.join("  ").trim_end());
    }
    out
}

/// `HH:MM:SS.mmm` of an RFC 3339 time, or the whole text when it is not one.
fn time_of_day(utc: &str) -> &str {
    utc.get(11..23).unwrap_or(utc)
}

pub fn render(s: &StatusSnapshot) -> String {
    let mut out = String::new();
    let clock = match s.clock {
        None => "clock status unknown".to_string(),
        Some(c) if c.synchronised => format!(
            "clock synchronised (max error {} ms)",
            c.max_error_us / 1000
        ),
        Some(_) => "CLOCK NOT SYNCHRONISED".to_string(),
    };
    let _ = writeln!(
        out,
        "foxborne-receiver {} at {}, up since {}, {clock}",
        s.version, s.utc, s.started_utc
    );
    let _ = writeln!(out, "\nVehicles");
    out.push_str(&columns(&vehicle_rows(s)));
    let _ = writeln!(out, "\nLinks");
    out.push_str(&columns(&link_rows(s)));
    if !s.forwards.is_empty() {
        let _ = writeln!(out, "\nForwards");
        out.push_str(&columns(&forward_rows(s)));
    }
    if let Some(r) = s.receive_log() {
        let _ = writeln!(
            out,
            "\nReceive log: {} lines written, {} pending bytes, {} dropped, {} write errors",
            r.lines_written, r.pending_bytes, r.dropped_lines, r.write_errors
        );
    }
    out
}

fn header(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn vehicle_rows(s: &StatusSnapshot) -> Vec<Vec<String>> {
    let mut rows = vec![header(&[
        "SYSID",
        "NAME",
        "LINKS",
        "LAST HEARD (UTC)",
        "HB AGE",
        "OPEN GAP",
        "LAT P95",
        "LOSS",
    ])];
    for v in &s.vehicles {
        let gap = match &v.open_gap {
            None => "-".to_string(),
            Some(g) => {
                let since = g
                    .last_recv_utc
                    .map(|t| crate::monitor::format_utc_ms(t.ns()));
                format!(
                    "OPEN since {}",
                    since.as_deref().map(time_of_day).unwrap_or("start")
                )
            }
        };
        rows.push(vec![
            v.sysid.to_string(),
            v.name.clone().unwrap_or_else(|| "-".into()),
            v.links.join(","),
            v.last_heard_utc
                .as_deref()
                .map(|t| time_of_day(t).to_string())
                .unwrap_or_else(|| "never".into()),
            opt(v.heartbeat_age_s, |a| format!("{a:.1} s")),
            gap,
            match (v.latency_p95_ms, v.clock_offset_ms) {
                (Some(l), _) => format!("{l:.1} ms"),
                (None, Some(o)) => format!("clock off {:.1} s", o / 1000.0),
                _ => "-".into(),
            },
            format!("{:.1} %", v.loss_percent),
        ]);
    }
    rows
}

fn link_rows(s: &StatusSnapshot) -> Vec<Vec<String>> {
    let mut rows = vec![header(&[
        "LINK", "STATE", "RECEIPTS", "RATE", "REJECTS", "DROPPED", "DETAIL",
    ])];
    for l in &s.links {
        rows.push(vec![
            l.name.clone(),
            match l.up {
                Some(true) => "up".into(),
                Some(false) => "DOWN".into(),
                None => "starting".into(),
            },
            l.receipts.to_string(),
            format!("{:.0}/s", l.rate_per_s),
            l.rejects.values().sum::<u64>().to_string(),
            l.dropped.values().sum::<u64>().to_string(),
            l.detail.clone(),
        ]);
    }
    rows
}

fn forward_rows(s: &StatusSnapshot) -> Vec<Vec<String>> {
    let mut rows = vec![header(&[
        "FORWARD", "OUTPUT", "FRAMES", "SENT", "DROPPED", "PEERS", "IGNORED",
    ])];
    for f in &s.forwards {
        rows.push(vec![
            f.name.clone(),
            format!("{} {}", f.kind, f.address),
            f.frames.to_string(),
            f.sent_frames.to_string(),
            f.dropped.values().sum::<u64>().to_string(),
            if f.kind == "udp" {
                "-".to_string()
            } else {
                format!("{} ({} refused)", f.peers, f.peers_refused)
            },
            format!("{} B", f.ignored_bytes),
        ]);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vehicles_and_links_are_rows_with_their_figures() {
        let text = render(&crate::status::example());
        assert!(
            text.contains("clock synchronised (max error 12 ms)"),
            "{text}"
        );
        let uas = text.lines().find(|l| l.contains("UAS-04")).unwrap();
        for want in [
            "14:32:03.912",
            "6.1 s",
            "OPEN since 14:32:03.912",
            "87.5 ms",
            "2.5 %",
        ] {
            assert!(uas.contains(want), "{want} not in {uas}");
        }
        let other = text
            .lines()
            .find(|l| l.trim_start().starts_with("22 "))
            .unwrap();
        assert!(
            other.contains("radio1,usb0") && other.contains("clock off -4.6 s"),
            "{other}"
        );
        let link = text
            .lines()
            .find(|l| l.contains("bound 0.0.0.0:14550"))
            .unwrap();
        assert!(
            link.contains("up") && link.contains("1200") && link.contains("20/s"),
            "{link}"
        );
        assert!(
            link.split_whitespace().any(|w| w == "4"),
            "4 rejects: {link}"
        );
        assert!(text.contains("Receive log: 1200 lines written"));
        let forward = text.lines().find(|l| l.contains("gcs")).unwrap();
        for want in [
            "tcp_listen 0.0.0.0:5770",
            "1200",
            "1150",
            "50",
            "1 (1 refused)",
            "21 B",
        ] {
            assert!(forward.contains(want), "{want} not in {forward}");
        }
    }

    #[test]
    fn an_unsynchronised_clock_is_shouted() {
        let mut s = crate::status::example();
        s.clock = Some(crate::status::ClockSnapshot {
            synchronised: false,
            max_error_us: 16_000_000,
        });
        assert!(render(&s).contains("CLOCK NOT SYNCHRONISED"));
    }
}
