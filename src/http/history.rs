//! The recent past the range board draws and `/board/history` serves: per vehicle, its gaps of
//! the last [`STRIP_NS`] (the strip) and its latency reports of the last [`SPARKLINE_NS`] (the
//! sparkline), and the latest events other than latency reports (the events list). Fed every
//! event as it is emitted, so a board opened (or reloaded) mid-sortie draws the same strip and
//! sparkline as one that was open all along; the page then extends them from `/events`.
//! Pure: time comes from the events themselves. Bounded: old entries are dropped as newer
//! events arrive, and no vehicle keeps more than [`MAX_GAPS`] gaps or [`MAX_LATENCY`] points.

use crate::monitor::event::GapState;
use crate::monitor::Event;
use serde::Serialize;
use serde_json::value::RawValue;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The strip shows the last 30 minutes.
pub const STRIP_NS: i64 = 30 * 60 * 1_000_000_000;
/// The sparkline shows the last 10 minutes.
pub const SPARKLINE_NS: i64 = 10 * 60 * 1_000_000_000;
/// Gaps kept per vehicle (a vehicle flapping at the threshold could otherwise keep hundreds).
pub const MAX_GAPS: usize = 120;
/// Latency points kept per vehicle (10 minutes of reports every 5 s).
pub const MAX_LATENCY: usize = 120;
/// Events kept for the list.
pub const MAX_EVENTS: usize = 50;

/// A silence: from the last heartbeat (or the receiver's start, for a vehicle never heard) to
/// the heartbeat that ended it, or still open.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GapSpan {
    pub start_ns: i64,
    pub end_ns: Option<i64>,
}

/// One latency report: p50/p95 in ms, or the vehicle clock's offset from UTC when it is off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyPoint {
    pub utc_ns: i64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub clock_offset_ms: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct VehicleHistory {
    pub gaps: VecDeque<GapSpan>,
    pub latency: VecDeque<LatencyPoint>,
}

#[derive(Debug, Default)]
pub struct BoardHistory {
    vehicles: BTreeMap<u8, VehicleHistory>,
    events: VecDeque<Arc<str>>,
    newest_ns: i64,
}

impl BoardHistory {
    /// Takes one emitted event, with its JSON line as `/events` sends it.
    pub fn record(&mut self, event: &Event, line: &Arc<str>) {
        let utc = event.utc().ns();
        self.newest_ns = self.newest_ns.max(utc);
        match event {
            Event::Latency(l) => {
                let v = self.vehicles.entry(l.sysid).or_default();
                if v.latency.len() == MAX_LATENCY {
                    v.latency.pop_front();
                }
                v.latency.push_back(LatencyPoint {
                    utc_ns: utc,
                    p50_ms: l.p50_ms,
                    p95_ms: l.p95_ms,
                    clock_offset_ms: l.clock_offset_ms,
                });
            }
            Event::TelemetryGap(g) => {
                // The silence began at the last heartbeat; for a vehicle never heard, the open
                // event falls due one threshold (and 1 ns) after the silence began.
                let threshold_ns = (g.threshold_s * 1e9).round() as i64;
                let v = self.vehicles.entry(g.sysid).or_default();
                match g.state {
                    GapState::Open => {
                        let start_ns = g.last_recv_utc.map_or(utc - threshold_ns - 1, |t| t.ns());
                        if v.gaps.len() == MAX_GAPS {
                            v.gaps.pop_front();
                        }
                        v.gaps.push_back(GapSpan {
                            start_ns,
                            end_ns: None,
                        });
                    }
                    // A withdrawn close takes its open back: that silence was no gap.
                    GapState::Closed if g.withdrawn == Some(true) => {
                        if v.gaps.back().is_some_and(|open| open.end_ns.is_none()) {
                            v.gaps.pop_back();
                        }
                    }
                    GapState::Closed => {
                        let end_ns = g.next_recv_utc.map_or(utc, |t| t.ns());
                        match v.gaps.back_mut() {
                            Some(open) if open.end_ns.is_none() => open.end_ns = Some(end_ns),
                            // Its open came before this history began.
                            _ => {
                                let start_ns = g.last_recv_utc.map_or_else(
                                    || end_ns - g.gap_s.map_or(0, |s| (s * 1e9).round() as i64),
                                    |t| t.ns(),
                                );
                                if v.gaps.len() == MAX_GAPS {
                                    v.gaps.pop_front();
                                }
                                v.gaps.push_back(GapSpan {
                                    start_ns,
                                    end_ns: Some(end_ns),
                                });
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        if !matches!(event, Event::Latency(_)) {
            if self.events.len() == MAX_EVENTS {
                self.events.pop_front();
            }
            self.events.push_back(line.clone());
        }
        self.trim();
    }

    /// Drops what has left the strip and the sparkline, measured from the newest event.
    fn trim(&mut self) {
        let strip_from = self.newest_ns - STRIP_NS;
        let spark_from = self.newest_ns - SPARKLINE_NS;
        for v in self.vehicles.values_mut() {
            while v
                .gaps
                .front()
                .is_some_and(|g| g.end_ns.is_some_and(|end| end < strip_from))
            {
                v.gaps.pop_front();
            }
            while v.latency.front().is_some_and(|p| p.utc_ns < spark_from) {
                v.latency.pop_front();
            }
        }
    }

    #[cfg(test)]
    pub fn vehicle(&self, sysid: u8) -> Option<&VehicleHistory> {
        self.vehicles.get(&sysid)
    }

    /// As JSON: `{"vehicles":{"4":{"gaps":[[start_ms,end_ms|null]],"latency":[[utc_ms,p50,p95,
    /// offset]]}},"events":[<event lines, oldest first>]}`, times in ms since the Unix epoch
    /// (what a page's `Date` takes).
    pub fn to_json(&self) -> String {
        /// `[utc_ms, p50_ms, p95_ms, clock_offset_ms]`.
        type Point = (i64, Option<f64>, Option<f64>, Option<f64>);
        #[derive(Serialize)]
        struct Vehicle {
            gaps: Vec<(i64, Option<i64>)>,
            latency: Vec<Point>,
        }
        #[derive(Serialize)]
        struct Out<'a> {
            vehicles: BTreeMap<u8, Vehicle>,
            events: Vec<&'a RawValue>,
        }
        let ms = |ns: i64| ns.div_euclid(1_000_000);
        let out = Out {
            vehicles: self
                .vehicles
                .iter()
                .map(|(sysid, v)| {
                    let vehicle = Vehicle {
                        gaps: v
                            .gaps
                            .iter()
                            .map(|g| (ms(g.start_ns), g.end_ns.map(ms)))
                            .collect(),
                        latency: v
                            .latency
                            .iter()
                            .map(|p| (ms(p.utc_ns), p.p50_ms, p.p95_ms, p.clock_offset_ms))
                            .collect(),
                    };
                    (*sysid, vehicle)
                })
                .collect(),
            // Each line is the event as `/events` sends it, already JSON: embedded as it is.
            events: self
                .events
                .iter()
                .filter_map(|line| serde_json::from_str(line).ok())
                .collect(),
        };
        serde_json::to_string(&out).unwrap_or_else(|_| "{}".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::{GapConfig, GapDetector};

    const S: i64 = 1_000_000_000;
    const T0: i64 = 1_790_000_000 * S;

    fn feed<E: Into<Event>>(history: &mut BoardHistory, events: impl IntoIterator<Item = E>) {
        for e in events {
            let e: Event = e.into();
            let line: Arc<str> = e.to_json_line().into();
            history.record(&e, &line);
        }
    }

    fn latency(sysid: u8, utc_ns: i64, p50: f64) -> Event {
        Event::from(crate::monitor::event::examples::latency(sysid, utc_ns, p50))
    }

    /// A gap raised and then withdrawn (its heartbeat was stamped inside the threshold but
    /// came late) leaves no span: the strip shows no gap that never was.
    #[test]
    fn a_withdrawn_gap_leaves_no_span() {
        let mut gaps = GapDetector::new(GapConfig::with_threshold_s(3.0), T0);
        let mut h = BoardHistory::default();
        feed(&mut h, gaps.on_heartbeat(4, "radio1", T0));
        feed(&mut h, gaps.poll(T0 + 4 * S));
        assert_eq!(h.vehicle(4).unwrap().gaps.len(), 1, "the open drew a span");
        let late = gaps.on_heartbeat(4, "radio1", T0 + 2 * S);
        assert_eq!(late[0].withdrawn, Some(true));
        feed(&mut h, late);
        assert!(h.vehicle(4).unwrap().gaps.is_empty());
    }

    #[test]
    fn gaps_from_the_detector_become_spans_and_age_out_of_the_strip() {
        let mut config = GapConfig::with_threshold_s(3.0);
        config.vehicles.insert(9, "never".into());
        let mut gaps = GapDetector::new(config, T0);
        let mut h = BoardHistory::default();
        feed(&mut h, gaps.on_heartbeat(4, "radio1", T0));
        // Silent from T0 + 0 to T0 + 10 s: opens at T0 + 3 s, closes at T0 + 10 s.
        feed(&mut h, gaps.poll(T0 + 5 * S));
        // Sysid 9 was expected and never heard: silent since the start.
        let nine = h.vehicle(9).unwrap().gaps[0];
        assert_eq!(
            nine,
            GapSpan {
                start_ns: T0,
                end_ns: None
            }
        );
        assert_eq!(h.vehicle(4).unwrap().gaps[0].end_ns, None);
        feed(&mut h, gaps.on_heartbeat(4, "radio1", T0 + 10 * S));
        assert_eq!(
            h.vehicle(4).unwrap().gaps[0],
            GapSpan {
                start_ns: T0,
                end_ns: Some(T0 + 10 * S)
            }
        );
        // A closed gap whose open this history never saw (open and closed at once).
        feed(&mut h, gaps.on_heartbeat(4, "radio1", T0 + 20 * S));
        let spans: Vec<GapSpan> = h.vehicle(4).unwrap().gaps.iter().copied().collect();
        assert_eq!(spans.len(), 2, "{spans:?}");
        assert_eq!(spans[1].start_ns, T0 + 10 * S);
        assert_eq!(spans[1].end_ns, Some(T0 + 20 * S));
        // Half an hour on, the closed gaps have left the strip; the open one stays.
        feed(&mut h, [latency(4, T0 + 20 * S + STRIP_NS + S, 40.0)]);
        assert!(h.vehicle(4).unwrap().gaps.is_empty());
        assert_eq!(h.vehicle(9).unwrap().gaps.len(), 1);
        // Gap events are listed, latency reports are not.
        assert_eq!(h.events.len(), 5);
        assert!(h.events.iter().all(|l| l.contains("telemetry_gap")));
    }

    #[test]
    fn latency_keeps_ten_minutes_and_everything_is_bounded() {
        let mut h = BoardHistory::default();
        for i in 0..200 {
            feed(&mut h, [latency(3, T0 + i * 10 * S, i as f64)]);
        }
        let points = &h.vehicle(3).unwrap().latency;
        // Reports every 10 s: the last 10 minutes hold 61 (both ends included).
        assert_eq!(points.len(), 61);
        assert_eq!(points.back().unwrap().p50_ms, Some(199.0));
        for i in 0..(MAX_GAPS as i64 + 30) {
            let mut config = GapConfig::with_threshold_s(3.0);
            config.vehicles.insert(5, "flappy".into());
            let mut g = GapDetector::new(config, T0 + i * 5 * S);
            feed(&mut h, g.poll(T0 + i * 5 * S + 4 * S));
        }
        assert_eq!(h.vehicle(5).unwrap().gaps.len(), MAX_GAPS);
        assert_eq!(h.events.len(), MAX_EVENTS);
    }

    #[test]
    fn the_json_has_spans_points_and_event_lines() {
        let mut h = BoardHistory::default();
        let mut gaps = GapDetector::new(GapConfig::with_threshold_s(3.0), T0);
        feed(&mut h, gaps.on_heartbeat(4, "radio1", T0));
        feed(&mut h, gaps.poll(T0 + 4 * S));
        feed(&mut h, [latency(4, T0 + 5 * S, 41.5)]);
        let json: serde_json::Value = serde_json::from_str(&h.to_json()).unwrap();
        let four = &json["vehicles"]["4"];
        assert_eq!(four["gaps"][0][0], T0 / 1_000_000);
        assert!(four["gaps"][0][1].is_null());
        assert_eq!(four["latency"][0][1], 41.5);
        assert_eq!(four["latency"][0][2], 83.0);
        assert!(four["latency"][0][3].is_null());
        assert_eq!(json["events"][0]["kind"], "telemetry_gap");
        assert_eq!(json["events"][0]["state"], "open");
    }
}
