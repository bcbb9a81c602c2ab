//! The state band of the report's plots, as Flight Review draws it: each navigation state a
//! faint background across the plot in its colour, and above the plot a strip of the states
//! with one of arming beneath (grey while armed, red while `vehicle_status.failsafe` is set).
//! Hovering a segment names it.
//!
//! Pure: state changes in, SVG text out.

use super::display::esc;
use super::modes::{nav_state_color, nav_state_name, ModeChange};
use std::fmt::Write as _;

/// One stretch of constant state.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    pub nav_state: u8,
    pub armed: bool,
    pub failsafe: bool,
}

/// The stretches from the changes, the last one lasting to `end`.
pub fn segments(changes: &[ModeChange], end: u64) -> Vec<Segment> {
    changes
        .iter()
        .enumerate()
        .map(|(i, c)| Segment {
            start: c.timestamp,
            end: changes
                .get(i + 1)
                .map_or(end, |n| n.timestamp)
                .max(c.timestamp),
            nav_state: c.nav_state,
            armed: c.armed,
            failsafe: c.failsafe,
        })
        .collect()
}

fn label(s: &Segment) -> String {
    format!(
        "{}, {}{} ({:.1} s to {:.1} s)",
        nav_state_name(s.nav_state),
        if s.armed { "armed" } else { "disarmed" },
        if s.failsafe { ", failsafe" } else { "" },
        s.start as f64 / 1e6,
        s.end as f64 / 1e6
    )
}

/// Where the band goes on one plot, and how times map to x.
pub struct Frame<'a> {
    pub x: &'a dyn Fn(u64) -> f64,
    pub t0: u64,
    pub t1: u64,
    /// The plot area's top and height (the background), and the strip's top (above it).
    pub top: f64,
    pub height: f64,
    pub strip_top: f64,
}

/// The faint background and the strips above the plot.
pub fn draw(out: &mut String, segments: &[Segment], f: &Frame<'_>) {
    for s in segments {
        if s.end < f.t0 || s.start > f.t1 {
            continue;
        }
        let x0 = (f.x)(s.start.max(f.t0));
        let x1 = (f.x)(s.end.min(f.t1));
        let w = (x1 - x0).max(0.5);
        let color = nav_state_color(s.nav_state);
        let title = esc(&label(s));
        let _ = write!(
            out,
            r#"<rect class="mode" x="{x0:.1}" y="{top}" width="{w:.1}" height="{h}" fill="{color}" fill-opacity="0.09"><title>{title}</title></rect><rect class="mode-strip" x="{x0:.1}" y="{sy}" width="{w:.1}" height="6" fill="{color}" fill-opacity="0.75"><title>{title}</title></rect>"#,
            top = f.top,
            h = f.height,
            sy = f.strip_top,
        );
        if s.armed || s.failsafe {
            let arm_color = if s.failsafe { "#c0392b" } else { "#555555" };
            let _ = write!(
                out,
                r#"<rect class="arming" x="{x0:.1}" y="{ay}" width="{w:.1}" height="3" fill="{arm_color}"><title>{title}</title></rect>"#,
                ay = f.strip_top + 7.0,
            );
        }
    }
}

/// The legend: the states the log has, in order of first appearance, and the arming strip.
pub fn legend(out: &mut String, segments: &[Segment]) {
    let mut seen: Vec<u8> = Vec::new();
    for s in segments {
        if !seen.contains(&s.nav_state) {
            seen.push(s.nav_state);
        }
    }
    for n in seen {
        let _ = write!(
            out,
            r#"<span><svg width="14" height="10"><rect width="14" height="10" fill="{}" fill-opacity="0.75"/></svg> {}</span>"#,
            nav_state_color(n),
            esc(&nav_state_name(n))
        );
    }
    out.push_str(r##"<span><svg width="14" height="10"><rect y="4" width="14" height="3" fill="#555555"/></svg> armed</span><span><svg width="14" height="10"><rect y="4" width="14" height="3" fill="#c0392b"/></svg> failsafe</span>"##);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ulog::events::Citation;

    fn change(t: u64, nav: u8, armed: bool, failsafe: bool) -> ModeChange {
        ModeChange {
            timestamp: t,
            nav_state: nav,
            nav_state_name: nav_state_name(nav),
            armed,
            failsafe,
            citation: Citation {
                topic: "vehicle_status".into(),
                multi_id: 0,
                message: 1,
                offset: 1,
            },
        }
    }

    #[test]
    fn segments_cover_the_log_and_draw_with_their_state() {
        let changes = [
            change(0, 2, false, false),
            change(10, 2, true, false),
            change(20, 5, true, true),
        ];
        let segs = segments(&changes, 30);
        assert_eq!(segs.len(), 3);
        assert_eq!((segs[2].start, segs[2].end), (20, 30));
        let x = |t: u64| t as f64;
        let mut svg = String::new();
        draw(
            &mut svg,
            &segs,
            &Frame {
                x: &x,
                t0: 0,
                t1: 30,
                top: 40.0,
                height: 100.0,
                strip_top: 30.0,
            },
        );
        assert_eq!(svg.matches("class=\"mode\"").count(), 3);
        assert_eq!(svg.matches("class=\"arming\"").count(), 2, "armed twice");
        assert!(svg.contains("#c0392b"), "failsafe drawn red");
        assert!(svg.contains("Return to Land, armed, failsafe (0.0 s to 0.0 s)"));
        let mut l = String::new();
        legend(&mut l, &segs);
        assert!(l.contains("Position") && l.contains("Return to Land"));
    }
}
