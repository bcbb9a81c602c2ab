//! `ulog report`: the post-sortie report as one self-contained HTML file. Plots are hand-written
//! inline SVG on one shared time axis; nothing is fetched (no scripts, fonts or images from
//! anywhere), so the file opens offline and can be archived with the log.
//!
//! Sections: summary (vehicle, duration, UTC start from the GPS anchor, status), altitude, the
//! local position track, roll/pitch/yaw with setpoints, battery voltage and current, GPS fix
//! and satellites, CPU load, vibration; dropouts, logged warnings and errors and findings as
//! markers on every time plot; then the findings, each with the `ulog record` command that shows
//! its evidence.
//!
//! Given the ground's records (`--ground`), a ground lane (`super::lane`) sits above the plots on
//! the same axis, with UTC beside the boot seconds, and each ground gap is marked on every plot.
//!
//! Rendering ([`render`]) is pure: a report and series in, text out. [`report_file`] is the shell
//! that reads the file (twice: once for the ingest report, once for the series).
//!
//! The parts: [`specs`] (which lines each plot draws), [`markers`] (what sits on the time axis),
//! [`plot`] (the SVG plots and their axes) and [`tables`] (the rules, messages and events).

mod markers;
mod plot;
mod specs;
mod tables;

pub use markers::{Marker, MarkerKind};
pub use specs::default_specs;
pub use tables::record_command;

use plot::{time_plot, track_plot, Axis, PlotExtras, LEFT, RIGHT, WIDTH};
use tables::{events_table, message_row, rules_table, shell_quote};

use crate::ulog::band;
use crate::ulog::display::esc;
use crate::ulog::ingest::{ingest_file, IngestOptions};
use crate::ulog::lane::{GroundLane, LaneAxis, LaneKind};
use crate::ulog::profile::Profile;
use crate::ulog::reader::StreamReader;
use crate::ulog::report::{Report, Status};
use crate::ulog::series::{Series, SeriesCollector, SeriesSpec};
use anyhow::Context;
use std::fmt::Write as _;
use std::path::Path;

/// The written report and the log's status (for the exit code).
pub struct HtmlReport {
    pub html: String,
    pub status: Status,
}

/// Reads the log at `path` and renders its report, with the ground lane when given.
pub fn report_file(
    path: &Path,
    profile: Option<&Profile>,
    ground: Option<&GroundLane>,
) -> anyhow::Result<HtmlReport> {
    let report = ingest_file(
        path,
        IngestOptions {
            profile: profile.cloned(),
            quarantine_dir: None,
            progress: None,
        },
    )?;
    let outliers = report.outlier_messages();
    let mut collector = SeriesCollector::new(default_specs(), &outliers);
    let mut markers = Vec::new();
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = StreamReader::new(file);
    let mut clock = 0u64;
    while let Some(item) = reader.next_record() {
        let Ok(located) = item else {
            continue;
        };
        collector.observe(&located);
        match &located.record {
            crate::ulog::record::Record::Data(s) => {
                if let Some(t) = s.timestamp {
                    if !outliers.contains(&located.message) {
                        clock = clock.max(t);
                    }
                }
            }
            crate::ulog::record::Record::Logged(l) => {
                let level = if l.level >= b'0' {
                    l.level - b'0'
                } else {
                    l.level
                };
                if level <= 4 {
                    markers.push(Marker {
                        t: l.timestamp,
                        kind: if level <= 3 {
                            MarkerKind::Error
                        } else {
                            MarkerKind::Warning
                        },
                        text: format!("{}: {}", crate::ulog::record::level_name(l.level), l.text()),
                        message: located.message,
                        label: None,
                    });
                }
            }
            crate::ulog::record::Record::Dropout { duration_ms } => markers.push(Marker {
                t: clock,
                kind: MarkerKind::Dropout,
                text: format!("dropout of {duration_ms} ms"),
                message: located.message,
                label: None,
            }),
            _ => {}
        }
    }
    let html = render(
        &report,
        collector.specs(),
        &collector.series,
        &markers,
        ground,
    );
    Ok(HtmlReport {
        html,
        status: report.status,
    })
}

/// Renders the whole report.
pub fn render(
    report: &Report,
    specs: &[SeriesSpec],
    series: &[Series],
    log_markers: &[Marker],
    ground: Option<&GroundLane>,
) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let name = Path::new(&report.file)
        .file_name()
        .map_or_else(|| report.file.clone(), |n| n.to_string_lossy().into_owned());
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Flight report: {n}</title>
<style>
body{{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;background:#fff;max-width:1340px}}
h1{{font-size:22px;margin:0 0 8px}} h2{{font-size:17px;margin:26px 0 6px;border-bottom:1px solid #ddd;padding-bottom:3px}}
table{{border-collapse:collapse;font-size:13px}} td,th{{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}}
th{{background:#f4f4f6}} code{{font-size:12px;background:#f4f4f6;padding:1px 4px}}
figure{{margin:6px 0}} figcaption{{margin:0 0 0 70px}} .status{{display:inline-block;padding:3px 10px;border-radius:4px;font-weight:bold;color:#fff}}
.complete{{background:#27ae60}} .quarantined{{background:#e67e22}} .rejected{{background:#c0392b}}
.legend span{{display:inline-block;margin-right:16px;font-size:12px}} .top{{display:flex;gap:28px;align-items:flex-start}} .note{{color:#555;font-size:13px}}
</style></head><body>
"#,
        n = esc(&name)
    );
    let _ = writeln!(out, "<h1>Flight report: {}</h1>", esc(&name));

    let axis = time_axis(report, series);
    summary(&mut out, report, specs, series, axis);
    let markers = axis_markers(report, log_markers, ground);
    flight(&mut out, report, specs, series, axis, &markers, ground);
    findings(&mut out, report);
    rules_table(&mut out, report);
    events_table(&mut out, report);
    logged_warnings(&mut out, report);
    out.push_str("<p class=\"note\">Written by foxborne-receiver ulog report. Self-contained: nothing is fetched.</p>\n</body></html>\n");
    out
}

/// The shared time axis: from the first to the last believable data timestamp.
fn time_axis(report: &Report, series: &[Series]) -> Axis {
    let mut t0 = u64::MAX;
    let mut t1 = 0u64;
    for s in series {
        if let (Some(a), Some(b)) = (s.points.first(), s.points.last()) {
            t0 = t0.min(a.0);
            t1 = t1.max(b.0);
        }
    }
    let outlier_topics: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.kind == "timestamp_outlier")
        .filter_map(|f| f.topic.as_deref())
        .collect();
    for t in &report.topics {
        if outlier_topics.contains(&t.topic.as_str()) {
            continue;
        }
        if let (Some(a), Some(b)) = (t.first_timestamp, t.last_timestamp) {
            t0 = t0.min(a);
            t1 = t1.max(b);
        }
    }
    // Samples stamped before logging started are stale values written at the start: the axis
    // begins where logging began.
    if let Some(h) = &report.header {
        if h.start_timestamp < t1 {
            t0 = t0.max(h.start_timestamp);
        }
    }
    if t0 == u64::MAX {
        t0 = 0;
    }
    if t1 <= t0 {
        t1 = t0 + 1_000_000;
    }
    Axis { t0, t1 }
}

/// The summary table (status, file, vehicle, duration, UTC start, contents), with the track
/// beside it.
fn summary(out: &mut String, report: &Report, specs: &[SeriesSpec], series: &[Series], axis: Axis) {
    let Axis { t0, t1 } = axis;
    let status = match report.status {
        Status::Complete => "complete",
        Status::Quarantined => "quarantined",
        Status::Rejected => "rejected",
    };
    out.push_str("<h2>Summary</h2><div class=\"top\"><table>\n");
    let row = |out: &mut String, k: &str, v: &str| {
        let _ = writeln!(out, "<tr><th>{}</th><td>{v}</td></tr>", esc(k));
    };
    row(
        out,
        "Status",
        &format!(
            r#"<span class="status {status}">{status}</span> {}"#,
            report.reason.as_deref().map(esc).unwrap_or_default()
        ),
    );
    row(out, "File", &esc(&report.file));
    let info = |k: &str| report.info.get(k).map(|v| v.to_string());
    let vehicle = [
        info("sys_name"),
        info("ver_hw").map(|v| format!("hardware {v}")),
        info("ver_sw_release")
            .or(info("ver_sw"))
            .map(|v| format!("software {v}")),
        info("sys_uuid").map(|v| format!("uuid {v}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    row(
        out,
        "Vehicle",
        &esc(if vehicle.is_empty() {
            "not in the log"
        } else {
            &vehicle
        }),
    );
    let duration = (t1 - t0) as f64 / 1e6;
    row(
        out,
        "Duration",
        &format!(
            "{duration:.1} s ({}:{:04.1}), boot + {:.3} s to boot + {:.3} s",
            (duration / 60.0).floor(),
            duration % 60.0,
            t0 as f64 / 1e6,
            t1 as f64 / 1e6
        ),
    );
    let start = match &report.gps_anchor {
        Some(a) => match a.boot_offset_us {
            Some(off) => {
                let utc = crate::utc::format_utc_ms_of_us(off + t0 as i64).unwrap_or_default();
                format!(
                    "{utc} ({}, spread {:.0} ms)",
                    a.title,
                    a.spread_ms.unwrap_or(0.0)
                )
            }
            None => a.title.clone(),
        },
        None => "Elapsed time only (no report content: the log is not complete)".into(),
    };
    row(out, "UTC start", &esc(&start));
    row(
        out,
        "Contents",
        &esc(&format!(
            "{} messages, {} topic instances, {} dropouts, {} logged messages, {} findings",
            report.messages,
            report.topics.len(),
            report.dropouts.len(),
            report.logged_messages.len() + report.tagged_logged_messages.len(),
            report.findings.len()
        )),
    );
    out.push_str("</table>\n");
    // The track sits beside the summary.
    let track: Vec<&Series> = specs
        .iter()
        .zip(series)
        .filter(|(s, data)| s.panel == "Track" && !data.points.is_empty())
        .map(|(_, data)| data)
        .collect();
    if let [north, east] = track[..] {
        track_plot(out, north, east);
    }
    out.push_str("</div>\n");
    if report.status != Status::Complete {
        out.push_str("<p class=\"note\">This log is not complete: the plots below show what could be read before the problem, and none of it is to be taken as a complete record.</p>\n");
    }
}

/// What sits on the time axis: the log's own markers, the findings, the ground's gaps and the
/// PX4 events.
fn axis_markers(
    report: &Report,
    log_markers: &[Marker],
    ground: Option<&GroundLane>,
) -> Vec<Marker> {
    let mut markers: Vec<Marker> = log_markers.to_vec();
    for f in &report.findings {
        markers.push(Marker {
            t: f.timestamp,
            kind: MarkerKind::Finding,
            text: f.title.clone(),
            message: f.message,
            label: (f.kind == "failsafe_entered").then(|| {
                // The announcement up to its first appended health message.
                let reason = f.evidence.as_ref().and_then(|e| e.reason.as_deref());
                match reason.map(|r| r.split(';').next().unwrap_or(r).trim()) {
                    Some(r) if r.to_lowercase().contains("failsafe") => r.to_string(),
                    Some(r) => format!("failsafe: {r}"),
                    None => f.title.clone(),
                }
            }),
        });
    }
    if let Some(lane) = ground {
        for item in lane.items.iter().filter(|i| i.kind == LaneKind::Gap) {
            for t in [Some(item.start_us), item.end_us].into_iter().flatten() {
                markers.push(Marker {
                    t,
                    kind: MarkerKind::GroundGap,
                    text: format!("ground: {}", item.text),
                    message: 0,
                    label: None,
                });
            }
        }
    }
    for e in &report.events {
        let level = e.level.as_str();
        let kind = match level {
            "EMERGENCY" | "ALERT" | "CRITICAL" | "ERROR" => MarkerKind::Error,
            "WARNING" => MarkerKind::Warning,
            _ => MarkerKind::Event,
        };
        markers.push(Marker {
            t: e.timestamp,
            kind,
            text: format!("event {level}: {}", e.message),
            message: e.citation.message,
            label: (kind == MarkerKind::Error).then(|| e.message.clone()),
        });
    }
    markers
}

/// The flight section: the legend, the flight-mode band, the ground lane and one plot per
/// panel, every plot with the markers.
fn flight(
    out: &mut String,
    report: &Report,
    specs: &[SeriesSpec],
    series: &[Series],
    axis: Axis,
    markers: &[Marker],
    ground: Option<&GroundLane>,
) {
    let band_segments = band::segments(&report.flight_modes, axis.t1);
    out.push_str("<h2>Flight</h2>\n<p class=\"legend\">");
    let mut legend = vec![
        (MarkerKind::Dropout, "dropout"),
        (MarkerKind::Warning, "logged warning or warning event"),
        (MarkerKind::Error, "logged error or error event"),
        (MarkerKind::Event, "PX4 event"),
        (MarkerKind::Finding, "finding"),
    ];
    if ground.is_some() {
        legend.push((
            MarkerKind::GroundGap,
            "ground gap (last and next heartbeat)",
        ));
    }
    for (kind, label) in legend {
        let _ = write!(
            out,
            r#"<span><svg width="22" height="10"><line x1="0" x2="22" y1="5" y2="5" stroke="{}" stroke-width="2" stroke-dasharray="4 3"/></svg> {label}</span>"#,
            kind.color()
        );
    }
    out.push_str("<span>time axis: seconds since boot; hover a marker for its text</span></p>\n");
    if band_segments.is_empty() {
        out.push_str(
            "<p class=\"note\">Flight modes: no vehicle_status in the log, so no state band.</p>\n",
        );
    } else {
        out.push_str("<p class=\"legend\">Flight modes (vehicle_status.nav_state, arming_state, failsafe), as a band across every plot: ");
        band::legend(out, &band_segments);
        out.push_str("</p>\n");
    }
    if let Some(lane) = ground {
        super::lane::draw(
            out,
            lane,
            LaneAxis {
                t0: axis.t0,
                t1: axis.t1,
                width: WIDTH,
                left: LEFT,
                right: RIGHT,
            },
        );
    }
    let mut first_plot = true;

    let mut panels: Vec<&str> = Vec::new();
    for s in specs {
        if !panels.contains(&s.panel) {
            panels.push(s.panel);
        }
    }
    for panel in panels {
        // Lines of the same label are alternatives (older and newer field names): the first
        // the log has is drawn.
        let mut lines: Vec<(&str, &Series)> = Vec::new();
        let mut read: Vec<String> = Vec::new();
        for (s, data) in specs.iter().zip(series) {
            if s.panel == panel && !data.points.is_empty() && !lines.iter().any(|l| l.0 == s.label)
            {
                lines.push((s.label, data));
                read.push(s.describe());
            }
        }
        if panel == "Track" {
            continue;
        }
        if lines.is_empty() {
            let _ = writeln!(
                out,
                "<p class=\"note\"><b>{}</b>: not logged.</p>",
                esc(panel)
            );
            continue;
        }
        let extras = PlotExtras {
            band: &band_segments,
            labels: first_plot,
            read,
        };
        time_plot(out, panel, &lines, axis, markers, &extras);
        first_plot = false;
    }
}

/// The findings, with their evidence commands.
fn findings(out: &mut String, report: &Report) {
    out.push_str("<h2>Findings</h2>\n");
    let mut cited: Vec<(String, String, u64, u64)> = report
        .findings
        .iter()
        .map(|f| (f.kind.clone(), f.title.clone(), f.message, f.offset))
        .collect();
    for m in &report.malformed {
        cited.push(("malformed".into(), m.detail.clone(), m.message, m.offset));
    }
    if cited.is_empty() && report.truncation.is_none() {
        out.push_str("<p>No findings.</p>\n");
    } else {
        out.push_str(
            "<table><tr><th>kind</th><th>finding</th><th>time</th><th>evidence</th></tr>\n",
        );
        if let Some(t) = &report.truncation {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td></td><td><code>{}</code></td></tr>",
                esc(&t.inside),
                esc(report.reason.as_deref().unwrap_or("")),
                esc(&format!(
                    "foxborne-receiver ulog record {} --offset {}",
                    shell_quote(&report.file),
                    t.offset.saturating_sub(1)
                ))
            );
        }
        for (kind, title, message, offset) in &cited {
            let finding = report.findings.iter().find(|f| f.message == *message);
            let time = finding
                .map(|f| format!("{:.3} s", f.timestamp as f64 / 1e6))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code><br><span class=\"note\">message {}, byte {}</span></td></tr>",
                esc(kind),
                esc(title),
                time,
                esc(&record_command(&report.file, *message)),
                message,
                offset
            );
        }
        out.push_str("</table>\n");
    }
}

/// Logged warnings and errors (the first 200).
fn logged_warnings(out: &mut String, report: &Report) {
    let serious: Vec<_> = report
        .logged_messages
        .iter()
        .chain(&report.tagged_logged_messages)
        .filter(|m| {
            let l = if m.level >= b'0' {
                m.level - b'0'
            } else {
                m.level
            };
            l <= 4
        })
        .collect();
    if !serious.is_empty() {
        out.push_str("<h2>Logged warnings and errors</h2>\n<table><tr><th>time</th><th>level</th><th>text</th><th>evidence</th></tr>\n");
        for m in serious.iter().take(200) {
            message_row(
                out,
                &report.file,
                m.timestamp,
                &m.level_name,
                &m.text,
                m.message,
            );
        }
        out.push_str("</table>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::plot::tick_step;
    use super::*;

    #[test]
    fn commands_are_quoted_and_ticks_are_round() {
        assert_eq!(
            record_command("logs/a b.ulg", 7),
            "foxborne-receiver ulog record 'logs/a b.ulg' --message 7"
        );
        assert_eq!(tick_step(10.0, 5.0), 2.0);
        assert_eq!(tick_step(27.0, 10.0), 2.0);
    }

    #[test]
    fn an_empty_report_renders_without_plots_or_fetches() {
        let report = Report::empty("x.ulg", Status::Quarantined, Some("why".into()));
        let html = render(
            &report,
            &default_specs(),
            &vec![Series::default(); default_specs().len()],
            &[],
            None,
        );
        assert!(html.contains("quarantined"));
        assert!(html.contains("not logged"));
        assert!(!html.contains("src=\"http"));
        assert!(!html.contains("<script"));
    }
}
