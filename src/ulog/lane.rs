//! The report's ground lane (`ulog report --ground`): what the ground's records say, drawn on the
//! flight plots' own time axis, with UTC beside the boot seconds when an anchor ties them.
//! Gaps are bands from the last heartbeat received to the next, their bound shaded either side;
//! links, drops and the receiver's clock are ticks. Pure: the lane in, SVG text out; the lane is
//! made from the sortie timeline by `crate::sortie::lane`.

use super::display::esc;
use std::fmt::Write as _;

/// What a lane item is, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneKind {
    Gap,
    Link,
    Drop,
    Other,
}

impl LaneKind {
    pub fn color(self) -> &'static str {
        match self {
            LaneKind::Gap => "#0c8599",
            LaneKind::Link => "#5c7cfa",
            LaneKind::Drop => "#e67e22",
            LaneKind::Other => "#868e96",
        }
    }
}

/// One thing the ground recorded, on the boot clock (microseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct LaneItem {
    pub kind: LaneKind,
    pub start_us: u64,
    /// `None`: an instant, or a gap still open where the record ends.
    pub end_us: Option<u64>,
    pub bound_us: u64,
    pub text: String,
}

/// The lane: a caption, the UTC of boot when known, and the items.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroundLane {
    /// What the records are and how they are tied to the flight log.
    pub caption: String,
    /// The boot instant in UTC by the used anchor (nanoseconds), for the UTC ticks.
    pub boot_utc_ns: Option<i64>,
    pub items: Vec<LaneItem>,
}

/// Where the plots' axis sits: boot-clock microseconds `t0..t1` over pixels `left..width-right`.
#[derive(Debug, Clone, Copy)]
pub struct LaneAxis {
    pub t0: u64,
    pub t1: u64,
    pub width: f64,
    pub left: f64,
    pub right: f64,
}

impl LaneAxis {
    fn x(&self, t: u64) -> f64 {
        let span = self.t1.saturating_sub(self.t0).max(1) as f64;
        let t = t.clamp(self.t0, self.t1);
        self.left + (t - self.t0) as f64 / span * (self.width - self.left - self.right)
    }
}

/// `HH:MM:SS` of a UTC instant.
fn clock(utc_ns: i64) -> String {
    let s = utc_ns.div_euclid(1_000_000_000);
    let day = s.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", day / 3600, day / 60 % 60, day % 60)
}

/// Draws the lane as one SVG figure.
pub fn draw(out: &mut String, lane: &GroundLane, axis: LaneAxis) {
    const TOP: f64 = 30.0;
    const BAND: f64 = 34.0;
    let h = TOP + BAND + 44.0;
    let _ = write!(
        out,
        r##"<figure class="ground-lane"><svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="Ground lane"><text x="{l}" y="18" font-size="14" font-weight="bold" fill="#222">Ground: {c}</text><rect x="{l}" y="{TOP}" width="{bw}" height="{BAND}" fill="#f3f9fa" stroke="#ccc"/>"##,
        w = axis.width,
        l = axis.left,
        c = esc(&lane.caption),
        bw = axis.width - axis.left - axis.right,
    );
    for item in &lane.items {
        if item.start_us > axis.t1 || item.end_us.unwrap_or(item.start_us) < axis.t0 {
            continue;
        }
        let x0 = axis.x(item.start_us);
        let title = esc(&item.text);
        match (item.kind, item.end_us) {
            (LaneKind::Gap, end) => {
                let x1 = axis.x(end.unwrap_or(axis.t1));
                let lo = axis.x(item.start_us.saturating_sub(item.bound_us));
                let hi = axis.x(end.unwrap_or(axis.t1).saturating_add(item.bound_us));
                let _ = write!(
                    out,
                    r#"<rect x="{lo:.1}" y="{TOP}" width="{bw:.1}" height="{BAND}" fill="{c}" opacity="0.18"/><rect x="{x0:.1}" y="{y}" width="{gw:.1}" height="{gh}" fill="{c}" opacity="0.85"><title>{title}</title></rect>"#,
                    bw = (hi - lo).max(1.0),
                    y = TOP + 6.0,
                    gw = (x1 - x0).max(2.0),
                    gh = BAND - 12.0,
                    c = item.kind.color(),
                );
                if let Some(end) = end.filter(|_| x1 - x0 > 60.0) {
                    let _ = write!(
                        out,
                        r##"<text x="{x:.1}" y="{y}" font-size="11" text-anchor="middle" fill="#fff">{s:.2} s</text>"##,
                        x = (x0 + x1) / 2.0,
                        y = TOP + BAND / 2.0 + 4.0,
                        s = end.saturating_sub(item.start_us) as f64 / 1e6,
                    );
                }
            }
            (kind, _) => {
                let _ = write!(
                    out,
                    r#"<line x1="{x0:.1}" x2="{x0:.1}" y1="{TOP}" y2="{y2}" stroke="{c}" stroke-width="2"><title>{title}</title></line>"#,
                    y2 = TOP + BAND,
                    c = kind.color(),
                );
            }
        }
    }
    // Ticks: boot seconds above the band's bottom edge, UTC below when an anchor ties them.
    let span_s = axis.t1.saturating_sub(axis.t0) as f64 / 1e6;
    let step = [
        1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
    ]
    .into_iter()
    .find(|s| span_s / s <= 10.0)
    .unwrap_or(7200.0);
    let mut s = (axis.t0 as f64 / 1e6 / step).ceil() * step;
    while s * 1e6 <= axis.t1 as f64 {
        let t = (s * 1e6) as u64;
        let x = axis.x(t);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{b}" stroke="#dde"/><text x="{x:.1}" y="{ty}" font-size="11" text-anchor="middle" fill="#555">{s:.0} s</text>"##,
            b = TOP + BAND,
            ty = TOP + BAND + 14.0,
        );
        if let Some(boot) = lane.boot_utc_ns {
            let _ = write!(
                out,
                r##"<text x="{x:.1}" y="{ty}" font-size="11" text-anchor="middle" fill="#0c8599">{}</text>"##,
                clock(boot + t as i64 * 1000),
                ty = TOP + BAND + 28.0,
            );
        }
        s += step;
    }
    out.push_str("</svg></figure>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_is_a_band_with_its_bound_and_utc_ticks_follow_the_anchor() {
        let lane = GroundLane {
            caption: "receiver".into(),
            boot_utc_ns: Some(1_790_259_191_286_000_000),
            items: vec![
                LaneItem {
                    kind: LaneKind::Gap,
                    start_us: 1_132_626_000,
                    end_us: Some(1_139_588_000),
                    bound_us: 55_000,
                    text: "Heartbeat due and not received. Nothing for 6.96 s".into(),
                },
                LaneItem {
                    kind: LaneKind::Link,
                    start_us: 1_100_000_000,
                    end_us: None,
                    bound_us: 0,
                    text: "Link radio1 up".into(),
                },
            ],
        };
        let mut out = String::new();
        let axis = LaneAxis {
            t0: 1_090_000_000,
            t1: 1_150_000_000,
            width: 1300.0,
            left: 70.0,
            right: 20.0,
        };
        draw(&mut out, &lane, axis);
        assert!(out.contains("Nothing for 6.96 s"));
        assert!(out.contains("Link radio1 up"));
        assert!(out.contains(">1100 s<"), "{out}");
        // boot 14:13:11.286 + 1100 s = 14:31:31.
        assert!(out.contains(">14:31:31<"), "{out}");
        assert_eq!(
            out.matches("<rect").count(),
            3,
            "the band, the bound, the gap"
        );
    }
}
