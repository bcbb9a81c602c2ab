//! The inline SVG plots: the shared time axis, its ticks, a time plot with its markers and
//! the state band, and the local position track.

use super::markers::{Marker, MarkerKind};
use crate::ulog::band;
use crate::ulog::display::esc;
use crate::ulog::series::Series;
use std::fmt::Write as _;

pub(super) const PALETTE: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
];
pub(super) const WIDTH: f64 = 1300.0;
pub(super) const PLOT_H: f64 = 190.0;
pub(super) const LEFT: f64 = 70.0;
pub(super) const RIGHT: f64 = 20.0;
pub(super) const TOP: f64 = 40.0;
/// The state band's strip sits above the plot area.
pub(super) const STRIP_TOP: f64 = 27.0;
pub(super) const BOTTOM: f64 = 26.0;

/// A "nice" tick step for a range: 1, 2 or 5 times a power of ten.
pub(super) fn tick_step(span: f64, target: f64) -> f64 {
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

pub(super) fn fmt_tick(v: f64, step: f64) -> String {
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
pub(super) struct Axis {
    pub(super) t0: u64,
    pub(super) t1: u64,
}

impl Axis {
    pub(super) fn x(&self, t: u64) -> f64 {
        let span = (self.t1.saturating_sub(self.t0)).max(1) as f64;
        LEFT + (t.saturating_sub(self.t0) as f64 / span) * (WIDTH - LEFT - RIGHT)
    }
}

/// One time plot: its lines, markers and axes, as an inline SVG.
pub(super) fn time_plot(
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
pub(super) struct PlotExtras<'a> {
    pub(super) band: &'a [band::Segment],
    /// Write the labels of labelled markers (on the first plot only, to keep the rest clear).
    pub(super) labels: bool,
    /// `topic.field` of each line drawn.
    pub(super) read: Vec<String>,
}

/// Seconds-since-boot ticks along the bottom of a plot.
pub(super) fn time_ticks(out: &mut String, axis: Axis, base: f64) {
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
pub(super) fn track_plot(out: &mut String, north: &Series, east: &Series) {
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
