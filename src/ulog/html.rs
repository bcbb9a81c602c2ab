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

use super::band;
use super::ingest::{ingest_file, IngestOptions};
use super::lane::{GroundLane, LaneAxis, LaneKind};
use super::profile::Profile;
use super::reader::StreamReader;
use super::report::{Report, Status};
use super::series::{Extract, Series, SeriesCollector, SeriesSpec};
use anyhow::Context;
use std::fmt::Write as _;
use std::path::Path;

/// The plots' lines, by panel. A panel shows whichever of its lines the log has.
pub fn default_specs() -> Vec<SeriesSpec> {
    use Extract::{Euler, Field};
    let s = |panel, label, topic, extract| SeriesSpec {
        panel,
        label,
        topic,
        extract,
    };
    vec![
        s(
            "Altitude (m)",
            "global position alt",
            "vehicle_global_position",
            Field("alt", 1.0),
        ),
        s(
            "Altitude (m)",
            "GPS altitude",
            "sensor_gps",
            Field("altitude_msl_m", 1.0),
        ),
        s(
            "Altitude (m)",
            "GPS altitude",
            "vehicle_gps_position",
            Field("altitude_msl_m", 1.0),
        ),
        s(
            "Altitude (m)",
            "GPS altitude",
            "vehicle_gps_position",
            Field("alt", 1e-3),
        ),
        s(
            "Altitude (m)",
            "barometer",
            "vehicle_air_data",
            Field("baro_alt_meter", 1.0),
        ),
        s(
            "Altitude (m)",
            "local position -z",
            "vehicle_local_position",
            Field("z", -1.0),
        ),
        s(
            "Track",
            "north x (m)",
            "vehicle_local_position",
            Field("x", 1.0),
        ),
        s(
            "Track",
            "east y (m)",
            "vehicle_local_position",
            Field("y", 1.0),
        ),
        s("Roll (deg)", "estimate", "vehicle_attitude", Euler("q", 0)),
        s(
            "Roll (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Euler("q_d", 0),
        ),
        s(
            "Roll (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Field("roll_body", 57.29577951308232),
        ),
        s("Pitch (deg)", "estimate", "vehicle_attitude", Euler("q", 1)),
        s(
            "Pitch (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Euler("q_d", 1),
        ),
        s(
            "Pitch (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Field("pitch_body", 57.29577951308232),
        ),
        s("Yaw (deg)", "estimate", "vehicle_attitude", Euler("q", 2)),
        s(
            "Yaw (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Euler("q_d", 2),
        ),
        s(
            "Yaw (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Field("yaw_body", 57.29577951308232),
        ),
        s(
            "Battery voltage (V)",
            "voltage",
            "battery_status",
            Field("voltage_v", 1.0),
        ),
        s(
            "Battery voltage (V)",
            "voltage filtered",
            "battery_status",
            Field("voltage_filtered_v", 1.0),
        ),
        s(
            "Battery current (A)",
            "current",
            "battery_status",
            Field("current_a", 1.0),
        ),
        s(
            "Battery current (A)",
            "current filtered",
            "battery_status",
            Field("current_filtered_a", 1.0),
        ),
        // Since v1.14 the torque and thrust setpoints have their own topics; before, they were
        // actuator_controls_0.control[0..3] (thrust positive up; vehicle_thrust_setpoint's z
        // is negative up).
        s(
            "Torque and thrust setpoints",
            "roll torque",
            "vehicle_torque_setpoint",
            Field("xyz[0]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "roll torque",
            "actuator_controls_0",
            Field("control[0]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "pitch torque",
            "vehicle_torque_setpoint",
            Field("xyz[1]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "pitch torque",
            "actuator_controls_0",
            Field("control[1]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "yaw torque",
            "vehicle_torque_setpoint",
            Field("xyz[2]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "yaw torque",
            "actuator_controls_0",
            Field("control[2]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "thrust",
            "vehicle_thrust_setpoint",
            Field("xyz[2]", -1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "thrust",
            "actuator_controls_0",
            Field("control[3]", 1.0),
        ),
        // Motor commands: actuator_motors (0 to 1) since v1.13; before, the outputs as the
        // mixer wrote them (actuator_outputs, PWM in µs for most vehicles).
        s(
            "Motor outputs",
            "motor 1",
            "actuator_motors",
            Field("control[0]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 1",
            "actuator_outputs",
            Field("output[0]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 2",
            "actuator_motors",
            Field("control[1]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 2",
            "actuator_outputs",
            Field("output[1]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 3",
            "actuator_motors",
            Field("control[2]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 3",
            "actuator_outputs",
            Field("output[2]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 4",
            "actuator_motors",
            Field("control[3]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 4",
            "actuator_outputs",
            Field("output[3]", 1.0),
        ),
        s(
            "GPS fix and satellites",
            "fix type",
            "sensor_gps",
            Field("fix_type", 1.0),
        ),
        s(
            "GPS fix and satellites",
            "satellites used",
            "sensor_gps",
            Field("satellites_used", 1.0),
        ),
        s(
            "GPS fix and satellites",
            "fix type",
            "vehicle_gps_position",
            Field("fix_type", 1.0),
        ),
        s(
            "GPS fix and satellites",
            "satellites used",
            "vehicle_gps_position",
            Field("satellites_used", 1.0),
        ),
        s("GPS accuracy (m)", "eph", "sensor_gps", Field("eph", 1.0)),
        s(
            "GPS accuracy (m)",
            "eph",
            "vehicle_gps_position",
            Field("eph", 1.0),
        ),
        s(
            "GPS noise and jamming",
            "jamming indicator",
            "sensor_gps",
            Field("jamming_indicator", 1.0),
        ),
        s(
            "GPS noise and jamming",
            "jamming indicator",
            "vehicle_gps_position",
            Field("jamming_indicator", 1.0),
        ),
        s(
            "GPS noise and jamming",
            "noise per ms",
            "sensor_gps",
            Field("noise_per_ms", 1.0),
        ),
        s(
            "GPS noise and jamming",
            "noise per ms",
            "vehicle_gps_position",
            Field("noise_per_ms", 1.0),
        ),
        s("CPU load (%)", "CPU load", "cpuload", Field("load", 100.0)),
        s(
            "CPU load (%)",
            "RAM usage",
            "cpuload",
            Field("ram_usage", 100.0),
        ),
        s(
            "Vibration",
            "accel vibration (m/s²)",
            "vehicle_imu_status",
            Field("accel_vibration_metric", 1.0),
        ),
        s(
            "Vibration",
            "gyro vibration (rad/s)",
            "vehicle_imu_status",
            Field("gyro_vibration_metric", 1.0),
        ),
        s(
            "Vibration",
            "vibe[0]",
            "estimator_status",
            Field("vibe[0]", 1.0),
        ),
        s(
            "Vibration",
            "vibe[1]",
            "estimator_status",
            Field("vibe[1]", 1.0),
        ),
        s(
            "Vibration",
            "vibe[2]",
            "estimator_status",
            Field("vibe[2]", 1.0),
        ),
    ]
}

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
            super::record::Record::Data(s) => {
                if let Some(t) = s.timestamp {
                    if !outliers.contains(&located.message) {
                        clock = clock.max(t);
                    }
                }
            }
            super::record::Record::Logged(l) => {
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
                        text: format!("{}: {}", super::record::level_name(l.level), l.text()),
                        message: located.message,
                        label: None,
                    });
                }
            }
            super::record::Record::Dropout { duration_ms } => markers.push(Marker {
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

/// What a marker on the time axis stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    Dropout,
    Warning,
    Error,
    Finding,
    /// The start or end of a ground gap (`--ground`).
    GroundGap,
    /// A PX4 event at notice or info level (warnings and errors are drawn as such).
    Event,
}

impl MarkerKind {
    fn color(self) -> &'static str {
        match self {
            MarkerKind::Dropout => "#e67e22",
            MarkerKind::Warning => "#d4ac0d",
            MarkerKind::Error => "#c0392b",
            MarkerKind::Finding => "#8e44ad",
            MarkerKind::GroundGap => LaneKind::Gap.color(),
            MarkerKind::Event => "#16a085",
        }
    }
}

/// One event on the shared time axis.
#[derive(Debug, Clone)]
pub struct Marker {
    pub t: u64,
    pub kind: MarkerKind,
    pub text: String,
    pub message: u64,
    /// Written beside the marker on the first plot (failsafes, and events at error level or
    /// worse), not only on hover.
    pub label: Option<String>,
}

const PALETTE: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
];
const WIDTH: f64 = 1300.0;
const PLOT_H: f64 = 190.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
/// The state band's strip sits above the plot area.
const STRIP_TOP: f64 = 27.0;
const BOTTOM: f64 = 26.0;

/// Escapes text for HTML and SVG.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A "nice" tick step for a range: 1, 2 or 5 times a power of ten.
fn tick_step(span: f64, target: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / target;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm < 1.5 {
        1.0
    } else if norm < 3.5 {
        2.0
    } else if norm < 7.5 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn fmt_tick(v: f64, step: f64) -> String {
    // Snap to the step so a tick near zero reads 0, not -0 or 1e-17.
    let v = (v / step).round() * step + 0.0;
    if step >= 1.0 {
        format!("{v:.0}")
    } else {
        let digits = (-step.log10().floor()) as usize;
        format!("{v:.digits$}")
    }
}

/// The shared time axis: boot-clock microseconds to x pixels.
#[derive(Debug, Clone, Copy)]
struct Axis {
    t0: u64,
    t1: u64,
}

impl Axis {
    fn x(&self, t: u64) -> f64 {
        let span = (self.t1.saturating_sub(self.t0)).max(1) as f64;
        LEFT + (t.saturating_sub(self.t0) as f64 / span) * (WIDTH - LEFT - RIGHT)
    }
}

/// One time plot: its lines, markers and axes, as an inline SVG.
fn time_plot(
    out: &mut String,
    title: &str,
    lines: &[(&str, &Series)],
    axis: Axis,
    markers: &[Marker],
    plot: &PlotExtras<'_>,
) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for (_, s) in lines {
        for (t, v) in &s.points {
            if *t >= axis.t0 && *t <= axis.t1 {
                lo = lo.min(*v);
                hi = hi.max(*v);
            }
        }
    }
    if !lo.is_finite() {
        lo = 0.0;
        hi = 1.0;
    }
    if hi - lo < 1e-9 {
        lo -= 0.5;
        hi += 0.5;
    }
    let pad = (hi - lo) * 0.05;
    let (lo, hi) = (lo - pad, hi + pad);
    let h = TOP + PLOT_H + BOTTOM;
    let y = |v: f64| TOP + PLOT_H - (v - lo) / (hi - lo) * PLOT_H;
    let _ = write!(
        out,
        r#"<figure><svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h}" viewBox="0 0 {WIDTH} {h}" role="img" aria-label="{t}">"#,
        t = esc(title)
    );
    let _ = write!(
        out,
        r##"<rect x="{LEFT}" y="{TOP}" width="{w}" height="{PLOT_H}" fill="#fbfbfd" stroke="#ccc"/>"##,
        w = WIDTH - LEFT - RIGHT
    );
    let _ = write!(
        out,
        r##"<text x="{LEFT}" y="18" font-size="14" font-weight="bold" fill="#222">{}</text>"##,
        esc(title)
    );
    // Value ticks.
    let step = tick_step(hi - lo, 4.0);
    let mut v = (lo / step).ceil() * step;
    while v <= hi {
        let yy = y(v);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{x2}" y1="{yy:.1}" y2="{yy:.1}" stroke="#e3e3e3"/><text x="{tx}" y="{ty:.1}" font-size="11" text-anchor="end" fill="#555">{label}</text>"##,
            x2 = WIDTH - RIGHT,
            tx = LEFT - 6.0,
            ty = yy + 4.0,
            label = fmt_tick(v, step)
        );
        v += step;
    }
    time_ticks(out, axis, TOP + PLOT_H);
    let to_x = |t: u64| axis.x(t);
    band::draw(
        out,
        plot.band,
        &band::Frame {
            x: &to_x,
            t0: axis.t0,
            t1: axis.t1,
            top: TOP,
            height: PLOT_H,
            strip_top: STRIP_TOP,
        },
    );
    // Markers behind the lines.
    let mut labelled = 0usize;
    for m in markers {
        if m.t < axis.t0 || m.t > axis.t1 {
            continue;
        }
        let x = axis.x(m.t);
        let _ = write!(
            out,
            r#"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{y2}" stroke="{c}" stroke-width="1.5" stroke-dasharray="4 3" opacity="{o}"><title>{t}</title></line>"#,
            y2 = TOP + PLOT_H,
            c = m.kind.color(),
            o = if m.kind == MarkerKind::Finding {
                0.45
            } else {
                0.9
            },
            t = esc(&if m.kind == MarkerKind::GroundGap {
                format!("{:.3} s: {}", m.t as f64 / 1e6, m.text)
            } else {
                format!(
                    "{:.3} s: {} (message {})",
                    m.t as f64 / 1e6,
                    m.text,
                    m.message
                )
            })
        );
        if let (true, Some(label)) = (plot.labels, &m.label) {
            let short: String = label.chars().take(60).collect();
            // Right of the line, or left of it near the right edge; a row per label.
            let (lx, anchor) = if x > WIDTH - RIGHT - 330.0 {
                (x - 4.0, "end")
            } else {
                (x + 4.0, "start")
            };
            let _ = write!(
                out,
                r##"<text class="marker-label" x="{lx:.1}" y="{ly}" font-size="11" font-weight="bold" text-anchor="{anchor}" fill="{c}" stroke="#fff" stroke-width="3" paint-order="stroke">{t}</text>"##,
                ly = TOP + 14.0 + 14.0 * (labelled % 4) as f64,
                c = m.kind.color(),
                t = esc(&short)
            );
            labelled += 1;
        }
    }
    let mut legend_x = LEFT + 260.0;
    for (i, (label, s)) in lines.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut d = String::with_capacity(s.points.len() * 14);
        let mut pen_up = true;
        let mut last_t = None;
        // Lift the pen over gaps of more than 2 s (a stall is shown as a gap, not a ramp).
        for (t, v) in &s.points {
            if *t < axis.t0 || *t > axis.t1 {
                pen_up = true;
                continue;
            }
            if last_t.is_some_and(|l: u64| t.saturating_sub(l) > 2_000_000) {
                pen_up = true;
            }
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if pen_up { "M" } else { "L" },
                axis.x(*t),
                y(*v)
            );
            pen_up = false;
            last_t = Some(*t);
        }
        let _ = write!(
            out,
            r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.3"/>"#
        );
        let _ = write!(
            out,
            r##"<rect x="{legend_x}" y="8" width="14" height="4" fill="{color}"/><text x="{tx}" y="14" font-size="12" fill="#333">{l}</text>"##,
            tx = legend_x + 18.0,
            l = esc(label)
        );
        legend_x += 30.0 + 7.0 * label.len() as f64;
    }
    out.push_str("</svg>");
    let _ = write!(
        out,
        r#"<figcaption class="note">read: {}</figcaption>"#,
        esc(&plot.read.join(", "))
    );
    out.push_str("</figure>\n");
}

/// What a time plot draws besides its lines.
struct PlotExtras<'a> {
    band: &'a [band::Segment],
    /// Write the labels of labelled markers (on the first plot only, to keep the rest clear).
    labels: bool,
    /// `topic.field` of each line drawn.
    read: Vec<String>,
}

/// Seconds-since-boot ticks along the bottom of a plot.
fn time_ticks(out: &mut String, axis: Axis, base: f64) {
    let span_s = axis.t1.saturating_sub(axis.t0) as f64 / 1e6;
    let step = tick_step(span_s, 10.0);
    let start = (axis.t0 as f64 / 1e6 / step).ceil() * step;
    let mut s = start;
    while s * 1e6 <= axis.t1 as f64 {
        let x = axis.x((s * 1e6) as u64);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{base}" stroke="#eee"/><text x="{x:.1}" y="{ty}" font-size="11" text-anchor="middle" fill="#555">{label}</text>"##,
            ty = base + 15.0,
            label = fmt_tick(s, step)
        );
        s += step;
    }
}

/// The local position track (north up, east right), equal scales.
fn track_plot(out: &mut String, north: &Series, east: &Series) {
    let n = north.points.len().min(east.points.len());
    if n == 0 {
        return;
    }
    let pts: Vec<(f64, f64)> = (0..n)
        .map(|i| (east.points[i].1, north.points[i].1))
        .collect();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in &pts {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    let span = (x1 - x0).max(y1 - y0).max(1.0) * 1.1;
    let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
    let size = 300.0;
    let px = |x: f64| 40.0 + (x - cx + span / 2.0) / span * size;
    let py = |y: f64| 30.0 + size - (y - cy + span / 2.0) / span * size;
    let _ = write!(
        out,
        r##"<figure><svg xmlns="http://www.w3.org/2000/svg" width="460" height="350" viewBox="0 0 460 350" role="img" aria-label="Track"><text x="40" y="18" font-size="14" font-weight="bold" fill="#222">Local position track, north up ({s:.0} m across)</text><rect x="40" y="30" width="{size}" height="{size}" fill="#fbfbfd" stroke="#ccc"/>"##,
        s = span
    );
    let mut d = String::new();
    for (i, (x, y)) in pts.iter().enumerate() {
        let _ = write!(
            d,
            "{}{:.1},{:.1}",
            if i == 0 { "M" } else { "L" },
            px(*x),
            py(*y)
        );
    }
    let _ = write!(
        out,
        r##"<path d="{d}" fill="none" stroke="#1f77b4" stroke-width="1.5"/><circle cx="{sx:.1}" cy="{sy:.1}" r="5" fill="#2ca02c"><title>start</title></circle><circle cx="{ex:.1}" cy="{ey:.1}" r="5" fill="#d62728"><title>end</title></circle></svg></figure>"##,
        sx = px(pts[0].0),
        sy = py(pts[0].1),
        ex = px(pts[n - 1].0),
        ey = py(pts[n - 1].1)
    );
    out.push('\n');
}

/// Each rule: evaluated or why not, what it read, its thresholds and where they come from.
fn rules_table(out: &mut String, report: &Report) {
    if report.rules.is_empty() {
        return;
    }
    out.push_str("<h2>Rules</h2>\n<table><tr><th>rule</th><th>outcome</th><th>read</th><th>thresholds</th></tr>\n");
    for r in &report.rules {
        let outcome = match (&r.reason, r.found) {
            (Some(reason), _) => reason.clone(),
            (None, 0) => "evaluated: nothing found".to_string(),
            (None, n) => format!("evaluated: {n} finding{}", if n == 1 { "" } else { "s" }),
        };
        let mut outcome = esc(&outcome);
        for note in &r.notes {
            let _ = write!(outcome, "<br><span class=\"note\">{}</span>", esc(note));
        }
        let thresholds: Vec<String> = r
            .thresholds
            .iter()
            .map(|t| {
                esc(&format!(
                    "{} {} {}: {}",
                    t.name,
                    super::rules::threshold::trim(t.value),
                    t.unit,
                    t.source
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{outcome}</td><td class=\"note\">{}</td><td class=\"note\">{}</td></tr>",
            esc(r.rule),
            esc(&r.read.join(", ")),
            thresholds.join("<br>")
        );
    }
    out.push_str("</table>\n");
}

/// One row of a table of messages: time, level, text and the command that shows it.
fn message_row(out: &mut String, file: &str, t: u64, level: &str, text: &str, message: u64) {
    let _ = writeln!(
        out,
        "<tr><td>{:.3} s</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
        t as f64 / 1e6,
        esc(level),
        esc(text),
        esc(&record_command(file, message))
    );
}

/// PX4's events, decoded with the log's definitions, each with its evidence command.
fn events_table(out: &mut String, report: &Report) {
    let Some(d) = &report.event_definitions else {
        return;
    };
    let _ = writeln!(
        out,
        "<h2>PX4 events</h2>\n<p class=\"note\">{}</p>",
        esc(&d.detail)
    );
    if report.events.is_empty() {
        out.push_str("<p>No events.</p>\n");
        return;
    }
    out.push_str("<table><tr><th>time</th><th>level</th><th>message</th><th>evidence</th></tr>\n");
    for e in report.events.iter().take(500) {
        message_row(
            out,
            &report.file,
            e.timestamp,
            &e.level,
            &e.message,
            e.citation.message,
        );
    }
    out.push_str("</table>\n");
}

/// The `ulog record` command that shows a cited message.
pub fn record_command(file: &str, message: u64) -> String {
    format!(
        "foxborne-receiver ulog record {} --message {message}",
        shell_quote(file)
    )
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
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

    // Time axis: from the first to the last believable data timestamp.
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
    let axis = Axis { t0, t1 };

    // Summary.
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
        &mut out,
        "Status",
        &format!(
            r#"<span class="status {status}">{status}</span> {}"#,
            report.reason.as_deref().map(esc).unwrap_or_default()
        ),
    );
    row(&mut out, "File", &esc(&report.file));
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
        &mut out,
        "Vehicle",
        &esc(if vehicle.is_empty() {
            "not in the log"
        } else {
            &vehicle
        }),
    );
    let duration = (t1 - t0) as f64 / 1e6;
    row(
        &mut out,
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
                let utc = chrono::DateTime::from_timestamp_micros(off + t0 as i64)
                    .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
                    .unwrap_or_default();
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
    row(&mut out, "UTC start", &esc(&start));
    row(
        &mut out,
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
        track_plot(&mut out, north, east);
    }
    out.push_str("</div>\n");
    if report.status != Status::Complete {
        out.push_str("<p class=\"note\">This log is not complete: the plots below show what could be read before the problem, and none of it is to be taken as a complete record.</p>\n");
    }

    // Markers: the log's own events plus the findings.
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
        band::legend(&mut out, &band_segments);
        out.push_str("</p>\n");
    }
    if let Some(lane) = ground {
        super::lane::draw(
            &mut out,
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
        time_plot(&mut out, panel, &lines, axis, &markers, &extras);
        first_plot = false;
    }

    // Findings, with their evidence commands.
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

    rules_table(&mut out, report);
    events_table(&mut out, report);

    // Logged warnings and errors.
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
                &mut out,
                &report.file,
                m.timestamp,
                &m.level_name,
                &m.text,
                m.message,
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("<p class=\"note\">Written by foxborne-receiver ulog report. Self-contained: nothing is fetched.</p>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_quotes() {
        assert_eq!(esc("<a&'\">"), "&lt;a&amp;&#39;&quot;&gt;");
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
