//! The range's judgement, pure: receipts from every site (as the sites published them) go into
//! one gap detector per system id, each site standing for a link, so a vehicle heard by any site
//! is not in a gap, and into the [`Coverage`] of the sites (which site hears which vehicle,
//! silent sites, sites whose clock is off; a flagged site's times are corrected before they are
//! judged). Its events are the receiver's own telemetry_gap events with `scope: "range"` and the
//! `sites` that have heard the vehicle, and `coverage` events. While the consumer is catching up
//! on a backlog, time is the receipts' own (as `analyze` replays a log); once caught up, the
//! caller's clock.

use super::coverage::Coverage;
use crate::monitor::{parse_utc_ns, Event, GapConfig, GapDetector};

/// The part of a receipt line the range reads.
#[derive(Debug, serde::Deserialize)]
pub struct ReceiptHead {
    pub recv_utc: String,
    pub sysid: u8,
    pub msg: String,
}

pub struct RangeJudge {
    detector: GapDetector,
    coverage: Coverage,
    /// The latest receipt time seen (the clock while catching up).
    latest_ns: i64,
}

/// The site of a receipt subject `foxborne.receipts.<site>.<sysid>`.
pub fn site_of(subject: &str) -> Option<&str> {
    let mut tokens = subject.split('.');
    match (tokens.next(), tokens.next(), tokens.next()) {
        (Some("foxborne"), Some("receipts"), Some(site)) if !site.is_empty() => Some(site),
        _ => None,
    }
}

/// The site of an event subject `foxborne.events.<site>.<kind>`, when the kind is `clock`.
pub fn clock_site_of(subject: &str) -> Option<&str> {
    let mut tokens = subject.split('.');
    match (tokens.next(), tokens.next(), tokens.next(), tokens.next()) {
        (Some("foxborne"), Some("events"), Some(site), Some("clock")) if !site.is_empty() => {
            Some(site)
        }
        _ => None,
    }
}

/// The part of a site's `clock` event the range reads.
#[derive(Debug, serde::Deserialize)]
struct ClockReport {
    utc: String,
    synchronised: bool,
    max_error_us: Option<i64>,
}

impl RangeJudge {
    pub fn new(config: GapConfig, start_ns: i64) -> RangeJudge {
        let coverage = Coverage::new(
            config.threshold_ns,
            config.vehicles.clone(),
            config.ignore_sysids.clone(),
        );
        RangeJudge {
            detector: GapDetector::new(config, start_ns),
            coverage,
            latest_ns: start_ns,
        }
    }

    /// One receipt from `site`. `now_ns` is the caller's clock when caught up, `None` while
    /// catching up on a backlog.
    pub fn receipt(&mut self, site: &str, line: &[u8], now_ns: Option<i64>) -> Vec<Event> {
        let Ok(head) = serde_json::from_slice::<ReceiptHead>(line) else {
            return Vec::new();
        };
        let Some(recv_ns) = parse_utc_ns(&head.recv_utc) else {
            return Vec::new();
        };
        let heartbeat = head.msg == "HEARTBEAT";
        let (judged_ns, coverage) = self
            .coverage
            .receipt(site, head.sysid, heartbeat, recv_ns, now_ns);
        self.latest_ns = self.latest_ns.max(judged_ns);
        let mut events = self.poll(now_ns.unwrap_or(self.latest_ns));
        events.extend(coverage.into_iter().map(Event::from));
        if heartbeat {
            events.extend(
                self.detector
                    .on_heartbeat(head.sysid, site, judged_ns)
                    .into_iter()
                    .map(Event::from),
            );
        }
        events
    }

    /// A site receiver's own `clock` event, as published to the events stream.
    pub fn site_clock_event(&mut self, site: &str, line: &[u8]) -> Vec<Event> {
        let Ok(report) = serde_json::from_slice::<ClockReport>(line) else {
            return Vec::new();
        };
        let Some(utc_ns) = parse_utc_ns(&report.utc) else {
            return Vec::new();
        };
        self.coverage
            .site_clock_report(site, report.synchronised, report.max_error_us, utc_ns)
            .into_iter()
            .map(Event::from)
            .collect()
    }

    /// What falls due at `now_ns` (the live timer).
    pub fn poll(&mut self, now_ns: i64) -> Vec<Event> {
        let mut events: Vec<Event> = self
            .detector
            .poll(now_ns)
            .into_iter()
            .map(Event::from)
            .collect();
        events.extend(self.coverage.poll(now_ns).into_iter().map(Event::from));
        events
    }

    pub fn next_deadline(&self) -> Option<i64> {
        match (self.detector.next_deadline(), self.coverage.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn detector(&self) -> &GapDetector {
        &self.detector
    }

    pub fn coverage(&self) -> &Coverage {
        &self.coverage
    }
}

/// The range's JSON line for an event: the receiver's keys, then `scope`, and for a gap the
/// `sites` that heard the vehicle.
pub fn range_line(event: &Event) -> String {
    let mut value = serde_json::to_value(event).expect("an event serialises");
    if let Some(object) = value.as_object_mut() {
        object.insert("scope".into(), "range".into());
        if let Event::TelemetryGap(gap) = event {
            object.insert("sites".into(), serde_json::json!(gap.links));
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::event::GapState;

    fn gaps(events: Vec<Event>) -> Vec<crate::monitor::GapEvent> {
        events
            .into_iter()
            .filter_map(|e| match e {
                Event::TelemetryGap(g) => Some(g),
                _ => None,
            })
            .collect()
    }

    const S: i64 = 1_000_000_000;
    const T0: i64 = 1_764_547_200 * S;

    fn hb(t_ns: i64, sysid: u8) -> Vec<u8> {
        format!(
            r#"{{"recv_utc":"{}","sysid":{sysid},"compid":1,"msg":"HEARTBEAT"}}"#,
            crate::monitor::format_utc_ms(t_ns)
        )
        .into_bytes()
    }

    #[test]
    fn a_vehicle_heard_by_any_site_is_not_in_a_gap() {
        let mut judge = RangeJudge::new(GapConfig::with_threshold_s(3.0), T0);
        // 41 at 1 Hz: both sites for 5 s, then only "south".
        for k in 0..20 {
            let t = T0 + k * S;
            if k < 5 {
                assert!(gaps(judge.receipt("north", &hb(t, 41), Some(t))).is_empty());
            }
            assert!(
                gaps(judge.receipt("south", &hb(t, 41), Some(t))).is_empty(),
                "{k}"
            );
        }
        // Then silent everywhere: one gap, naming both sites.
        let opened = gaps(judge.poll(T0 + 25 * S));
        assert_eq!(opened.len(), 1);
        assert_eq!(opened[0].state, GapState::Open);
        let line: serde_json::Value =
            serde_json::from_str(&range_line(&Event::from(opened[0].clone()))).unwrap();
        assert_eq!(line["scope"], "range");
        assert_eq!(line["sites"], serde_json::json!(["north", "south"]));
        assert_eq!(line["kind"], "telemetry_gap");
        assert_eq!(line["sysid"], 41);
    }

    #[test]
    fn a_backlog_is_judged_on_its_own_times() {
        let mut judge = RangeJudge::new(GapConfig::with_threshold_s(3.0), T0);
        // Catching up (no clock): receipts 1 s apart raise nothing even if "now" is far later.
        for k in 0..10 {
            assert!(judge.receipt("north", &hb(T0 + k * S, 7), None).is_empty());
        }
        // A real 6 s hole in the backlog is a gap, opened and closed at the recorded times.
        let events = gaps(judge.receipt("north", &hb(T0 + 15 * S, 7), None));
        let states: Vec<GapState> = events.iter().map(|e| e.state).collect();
        assert_eq!(states, [GapState::Open, GapState::Closed]);
        assert!((events[1].gap_s.unwrap() - 6.0).abs() < 1e-9);
        assert_eq!(site_of("foxborne.receipts.north.7"), Some("north"));
        assert_eq!(clock_site_of("foxborne.events.north.clock"), Some("north"));
        assert_eq!(clock_site_of("foxborne.events.north.link"), None);
        let flagged = judge.site_clock_event(
            "north",
            br#"{"utc":"2025-12-01T00:00:20.000Z","kind":"clock","state":"lost","synchronised":false,"max_error_us":16000000}"#,
        );
        assert_eq!(flagged.len(), 1);
        let line: serde_json::Value = serde_json::from_str(&range_line(&flagged[0])).unwrap();
        assert_eq!(line["state"], "site_unsynchronised");
        assert_eq!(line["scope"], "range");
        assert_eq!(line["max_error_us"], 16_000_000);
        assert_eq!(site_of("foxborne.events.north.link"), None);
    }
}
