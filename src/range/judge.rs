//! The range's judgement, pure: receipts from every site (as the sites published them) go
//! through the same monitor driver as the daemon's links and `analyze`, each site standing for
//! a link, so a vehicle heard by any site is not in a gap; and into the [`Coverage`] of the
//! sites (which site hears which vehicle, silent sites, sites whose clock is off; a flagged
//! site's times are corrected before they are judged). Time is judged only as far as every
//! site's input is complete ([`SiteInputs`]: the sites' progress marks), so an outage of NATS
//! or of a site's network neither raises a false gap nor hides a real one: the backlog is
//! judged by its own times when it comes. Its events are the receiver's own telemetry_gap
//! events with `scope: "range"` and the `sites` that have heard the vehicle, `coverage`
//! events, and the sites' `traffic_proximity` events merged by key ([`TrafficMerge`]).

use super::coverage::Coverage;
use super::input::{InputChange, SiteInputs};
use super::traffic::TrafficMerge;
use crate::monitor::driver::{self, MonitorDriver};
use crate::monitor::event::CoverageState;
use crate::monitor::{
    parse_utc_ns, CoverageEvent, Event, GapConfig, GapDetector, MonitorInput, Watch, WatchSettings,
};
use crate::receipt::ReceiptRecord;
use std::collections::BTreeMap;

/// Why a site's message (a receipt line, a progress mark, a clock report) was not judged. The
/// range goes on; the caller says so, naming the site and the message.
#[derive(Debug, thiserror::Error)]
pub enum RefusedMessage {
    #[error("not a {what}: {source}")]
    Malformed {
        what: &'static str,
        source: serde_json::Error,
    },
    #[error("a {what} whose time `{time}` is not an RFC 3339 time")]
    BadTime { what: &'static str, time: String },
}

const RECEIPT: &str = "receipt line";
const PROGRESS_MARK: &str = "progress mark";
const CLOCK_REPORT: &str = "clock report";
const TRAFFIC_PROXIMITY: &str = "traffic_proximity event";

pub struct RangeJudge {
    driver: MonitorDriver,
    coverage: Coverage,
    inputs: SiteInputs,
    /// How far the range has judged; never back.
    judged_ns: i64,
    /// The latest receipt time seen (the clock of sites without marks while catching up).
    latest_ns: i64,
    /// Messages refused per site since the start.
    refused: BTreeMap<String, u64>,
    traffic: TrafficMerge,
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
        let watch = Watch::new(
            WatchSettings {
                gap: config,
                ..WatchSettings::default()
            },
            start_ns,
        );
        RangeJudge {
            driver: MonitorDriver::new(watch, Vec::new()),
            coverage,
            inputs: SiteInputs::default(),
            judged_ns: start_ns,
            latest_ns: start_ns,
            refused: BTreeMap::new(),
            traffic: TrafficMerge::default(),
        }
    }

    /// One receipt from `site`. `now_ns` is the caller's clock when caught up, `None` while
    /// catching up on a backlog.
    /// A message that is not a receipt is refused, counted for its site, and judges nothing.
    pub fn receipt(
        &mut self,
        site: &str,
        line: &[u8],
        now_ns: Option<i64>,
    ) -> Result<Vec<Event>, RefusedMessage> {
        let (head, recv_ns) = self.read(site, RECEIPT, line, |r: &ReceiptRecord| &r.recv_utc)?;
        let heartbeat = head.msg == "HEARTBEAT";
        let (judged_ns, coverage) = self
            .coverage
            .receipt(site, head.sysid, heartbeat, recv_ns, now_ns);
        self.latest_ns = self.latest_ns.max(judged_ns);
        let mut events: Vec<Event> = coverage.into_iter().map(Event::from).collect();
        if heartbeat && self.inputs.admit(site, judged_ns, self.judged_ns) {
            if let Some(link) = self.driver.link(site) {
                self.driver.push(MonitorInput::Heartbeat {
                    link,
                    sysid: head.sysid,
                    compid: head.compid,
                    utc_ns: judged_ns,
                    fields: None,
                    seq: 0,
                    src: None,
                });
            }
        }
        events.extend(self.judge(now_ns));
        Ok(events)
    }

    /// A site's progress mark (`foxborne.receipts.<site>.progress`): every receipt it stamped
    /// before the mark's time has come. `read_at_ns` is the caller's clock as it reads the mark
    /// (whether a stalled site has caught up), `now_ns` as [`RangeJudge::receipt`]'s.
    pub fn progress(
        &mut self,
        site: &str,
        line: &[u8],
        read_at_ns: i64,
        now_ns: Option<i64>,
    ) -> Result<Vec<Event>, RefusedMessage> {
        let (_, through_ns) = self.read(
            site,
            PROGRESS_MARK,
            line,
            |m: &crate::publish::ProgressMark| &m.complete_through_utc,
        )?;
        // On the range's corrected time, like the site's receipts, and never from the future.
        let through_ns = self.coverage.judged_time(site, through_ns);
        let through_ns = now_ns.map_or(through_ns, |now| through_ns.min(now));
        let mut events = Vec::new();
        if let Some(change) = self.inputs.mark(site, through_ns, read_at_ns) {
            events.push(self.input_event(site, change, through_ns));
        }
        events.extend(self.judge(now_ns));
        Ok(events)
    }

    /// A site receiver's own `clock` event, as published to the events stream.
    pub fn site_clock_event(
        &mut self,
        site: &str,
        line: &[u8],
    ) -> Result<Vec<Event>, RefusedMessage> {
        let (report, utc_ns) = self.read(site, CLOCK_REPORT, line, |r: &ClockReport| &r.utc)?;
        Ok(self
            .coverage
            .site_clock_report(site, report.synchronised, report.max_error_us, utc_ns)
            .into_iter()
            .map(Event::from)
            .collect())
    }

    /// A site's `traffic_proximity` event: the range's own, when it opens or closes one (the
    /// first site's open, the last site's close).
    pub fn site_traffic_event(
        &mut self,
        site: &str,
        line: &[u8],
    ) -> Result<Vec<Event>, RefusedMessage> {
        let event = serde_json::from_slice::<crate::monitor::event::TrafficProximityEvent>(line)
            .map_err(|source| {
                *self.refused.entry(site.to_string()).or_default() += 1;
                RefusedMessage::Malformed {
                    what: TRAFFIC_PROXIMITY,
                    source,
                }
            })?;
        Ok(self
            .traffic
            .site_event(site, event)
            .map(Event::from)
            .into_iter()
            .collect())
    }

    /// A site's message of kind `what` and its time (the field `time_of` names), or its refusal,
    /// counted for the site.
    fn read<T: serde::de::DeserializeOwned>(
        &mut self,
        site: &str,
        what: &'static str,
        line: &[u8],
        time_of: impl Fn(&T) -> &String,
    ) -> Result<(T, i64), RefusedMessage> {
        let read = serde_json::from_slice::<T>(line)
            .map_err(|source| RefusedMessage::Malformed { what, source })
            .and_then(|message| match parse_utc_ns(time_of(&message)) {
                Some(utc_ns) => Ok((message, utc_ns)),
                None => Err(RefusedMessage::BadTime {
                    what,
                    time: time_of(&message).clone(),
                }),
            });
        if read.is_err() {
            *self.refused.entry(site.to_string()).or_default() += 1;
        }
        read
    }

    /// The live timer at `now_ns`: sites whose input stalled, and what falls due as far as the
    /// input is complete (the clock counting for sites without marks only when `caught_up`).
    pub fn poll(&mut self, now_ns: i64, caught_up: bool) -> Vec<Event> {
        let mut events: Vec<Event> = self
            .inputs
            .poll(now_ns)
            .into_iter()
            .map(|(site, change)| self.input_event(&site, change, now_ns))
            .collect();
        events.extend(self.judge(caught_up.then_some(now_ns)));
        events
    }

    /// Judges as far as every site's input is complete (`now_ns`, the range's clock when caught
    /// up, for sites without marks; their latest receipt while catching up).
    fn judge(&mut self, now_ns: Option<i64>) -> Vec<Event> {
        let legacy = now_ns.unwrap_or(self.latest_ns);
        let complete = self.inputs.complete_through(legacy).unwrap_or(legacy);
        let mark = now_ns.map_or(complete, |now| complete.min(now));
        self.judged_ns = self.judged_ns.max(mark);
        // A site that stops hearing a vehicle another site hears is the coverage event
        // `site_left`, said once in the range's words: its link gap would say it again.
        let mut events: Vec<Event> = driver::events(self.driver.advance(self.judged_ns, None))
            .filter(|e| !matches!(e, Event::LinkGap(_)))
            .collect();
        events.extend(
            self.coverage
                .poll(self.judged_ns)
                .into_iter()
                .map(Event::from),
        );
        events
    }

    fn input_event(&self, site: &str, change: InputChange, at_ns: i64) -> Event {
        let (state, title, behind, late) = match change {
            InputChange::Stalled { behind_ns } => (
                CoverageState::SiteInputStalled,
                format!(
                    "site {site}: the range's input from it is stalled ({:.1} s behind); its vehicles are judged when it catches up, by their own times",
                    behind_ns as f64 / 1e9
                ),
                Some(behind_ns),
                None,
            ),
            InputChange::Lost { behind_ns } => (
                CoverageState::SiteInputLost,
                format!(
                    "site {site}: no input from it for {:.0} s; judging without it (its vehicles heard nowhere else may be in a gap, as far as the range hears)",
                    behind_ns as f64 / 1e9
                ),
                Some(behind_ns),
                None,
            ),
            InputChange::Resumed { late } => (
                CoverageState::SiteInputResumed,
                if late > 0 {
                    format!("site {site}: input caught up; {late} heartbeats came for times already judged without it")
                } else {
                    format!("site {site}: input caught up")
                },
                None,
                (late > 0).then_some(late),
            ),
        };
        let event: CoverageEvent = self.coverage.site_event(at_ns, state, site, title, |e| {
            e.behind_s = behind.map(|ns| ns as f64 / 1e9);
            e.late_receipts = late;
        });
        Event::from(event)
    }

    pub fn next_deadline(&self) -> Option<i64> {
        [
            self.driver.next_deadline(),
            self.coverage.next_deadline(),
            self.inputs.next_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    pub fn detector(&self) -> &GapDetector {
        &self.driver.watch().gap
    }

    pub fn coverage(&self) -> &Coverage {
        &self.coverage
    }

    pub fn input_stalled(&self, site: &str) -> bool {
        self.inputs.stalled(site)
    }

    /// Messages refused from `site` since the start (see [`RefusedMessage`]).
    pub fn refused(&self, site: &str) -> u64 {
        self.refused.get(site).copied().unwrap_or(0)
    }

    /// Every site that had a message refused, with how many.
    pub fn refused_sites(&self) -> impl Iterator<Item = (&str, u64)> {
        self.refused.iter().map(|(site, n)| (site.as_str(), *n))
    }
}

/// The range's JSON line for an event: the receiver's keys, then `scope`, and for a gap the
/// `sites` that heard the vehicle (a traffic proximity has its `sites` already).
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
            r#"{{"recv_utc":"{}","mono_ns":1,"link":"radio1","sysid":{sysid},"compid":1,"msgid":0,"msg":"HEARTBEAT","seq":0,"len":9}}"#,
            crate::monitor::format_utc_ms(t_ns)
        )
        .into_bytes()
    }

    /// A message on a receipt subject that is not a receipt (a line missing `msgid` and `len`,
    /// or a time that is not one) is refused with its reason, counted for its site only, and
    /// neither judges nor hides anything: the site's real heartbeats still count.
    #[test]
    fn what_is_not_a_receipt_is_refused_and_counted_per_site() {
        let mut judge = RangeJudge::new(GapConfig::with_threshold_s(3.0), T0);
        let partial = br#"{"recv_utc":"2026-12-01T00:00:00.000Z","mono_ns":0,"link":"radio","sysid":7,"compid":1,"seq":0,"msg":"HEARTBEAT"}"#;
        let refused = judge.receipt("north", partial, None).unwrap_err();
        assert!(refused.to_string().contains("msgid"), "{refused}");
        let bad_time = String::from_utf8(hb(T0, 7))
            .unwrap()
            .replace(&crate::monitor::format_utc_ms(T0), "yesterday");
        let refused = judge
            .receipt("north", bad_time.as_bytes(), None)
            .unwrap_err();
        assert!(
            matches!(refused, RefusedMessage::BadTime { ref time, .. } if time == "yesterday"),
            "{refused}"
        );
        // A progress mark and a clock report that are not one count too.
        assert!(judge.progress("north", b"{}", T0, None).is_err());
        assert!(judge.site_clock_event("north", b"[]").is_err());
        assert!(judge.receipt("north", b"\x00\xff", None).is_err());
        assert_eq!((judge.refused("north"), judge.refused("south")), (5, 0));
        assert!(
            judge.detector().vehicles().is_empty(),
            "nothing refused was judged"
        );
        judge.receipt("south", &hb(T0, 7), None).unwrap();
        assert_eq!(judge.detector().vehicles().len(), 1);
        assert_eq!(judge.refused("south"), 0);
    }

    #[test]
    fn a_vehicle_heard_by_any_site_is_not_in_a_gap() {
        let mut judge = RangeJudge::new(GapConfig::with_threshold_s(3.0), T0);
        // 41 at 1 Hz: both sites for 5 s, then only "south".
        for k in 0..20 {
            let t = T0 + k * S;
            if k < 5 {
                assert!(gaps(judge.receipt("north", &hb(t, 41), Some(t)).unwrap()).is_empty());
            }
            assert!(
                gaps(judge.receipt("south", &hb(t, 41), Some(t)).unwrap()).is_empty(),
                "{k}"
            );
        }
        // Then silent everywhere: one gap, naming both sites.
        let opened = gaps(judge.poll(T0 + 25 * S, true));
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
            assert!(judge
                .receipt("north", &hb(T0 + k * S, 7), None)
                .unwrap()
                .is_empty());
        }
        // A real 6 s hole in the backlog is a gap, opened and closed at the recorded times.
        let events = gaps(judge.receipt("north", &hb(T0 + 15 * S, 7), None).unwrap());
        let states: Vec<GapState> = events.iter().map(|e| e.state).collect();
        assert_eq!(states, [GapState::Open, GapState::Closed]);
        assert!((events[1].gap_s.unwrap() - 6.0).abs() < 1e-9);
        let flagged = judge
            .site_clock_event(
                "north",
                br#"{"utc":"2025-12-01T00:00:20.000Z","kind":"clock","state":"lost","synchronised":false,"max_error_us":16000000}"#,
            )
            .unwrap();
        assert_eq!(flagged.len(), 1);
        let line: serde_json::Value = serde_json::from_str(&range_line(&flagged[0])).unwrap();
        assert_eq!(line["state"], "site_unsynchronised");
        assert_eq!(line["scope"], "range");
        assert_eq!(line["max_error_us"], 16_000_000);
    }

    fn mark(t_ns: i64) -> Vec<u8> {
        format!(
            r#"{{"complete_through_utc":"{}"}}"#,
            crate::monitor::format_utc_ms(t_ns)
        )
        .into_bytes()
    }

    /// Two sites, NATS away for 5 s (no receipts and no marks reach the range; the range's
    /// timer runs on). 41 is heard by both sites throughout, 42 by north throughout, 43 by
    /// north until it really goes quiet in the outage. When the backlog comes: one gap, 43's,
    /// at its true time; none for 41 or 42; and both sites said stalled, then resumed.
    #[test]
    fn an_outage_of_the_input_is_no_gap_and_a_real_silence_in_it_still_is() {
        let mut judge = RangeJudge::new(GapConfig::with_threshold_s(3.0), T0);
        let mut events = Vec::new();
        // One site's second of receipts at `t` (as the sites stamped them), then its mark.
        let beat = |judge: &mut RangeJudge,
                    t: i64,
                    read_at: i64,
                    now: Option<i64>,
                    events: &mut Vec<Event>| {
            let quiet_43 = t >= T0 + 12 * S;
            events.extend(judge.receipt("north", &hb(t, 41), now).unwrap());
            events.extend(judge.receipt("south", &hb(t, 41), now).unwrap());
            events.extend(judge.receipt("north", &hb(t, 42), now).unwrap());
            if !quiet_43 {
                events.extend(judge.receipt("north", &hb(t, 43), now).unwrap());
            }
            events.extend(judge.progress("north", &mark(t + 1), read_at, now).unwrap());
            events.extend(judge.progress("south", &mark(t + 1), read_at, now).unwrap());
        };
        for k in 0..10 {
            let t = T0 + k * S;
            beat(&mut judge, t, t + 1, Some(t + 1), &mut events);
            events.extend(judge.poll(t + S / 2, true));
        }
        // The outage: 10 s to 15 s; the range's timer fires every half second and hears nothing.
        for k in 20..31 {
            events.extend(judge.poll(T0 + k * S / 2, true));
        }
        assert!(
            gaps(events.clone()).is_empty(),
            "a gap during the outage: {:#?}",
            gaps(events.clone())
        );
        // NATS is back: the backlog 10..15 s arrives at once (the consumer behind), then live.
        for k in 10..15 {
            beat(&mut judge, T0 + k * S, T0 + 15 * S, None, &mut events);
        }
        for k in 15..20 {
            let t = T0 + k * S;
            beat(&mut judge, t, t + 1, Some(t + 1), &mut events);
            events.extend(judge.poll(t + S / 2, true));
        }
        let gaps = gaps(events.clone());
        assert!(gaps.iter().all(|g| g.sysid == 43), "{gaps:#?}");
        assert_eq!(gaps.len(), 1, "{gaps:#?}");
        assert_eq!(gaps[0].state, GapState::Open);
        // Last heard at 11 s; open once the 3 s threshold passed after it, at 14 s (+1 ns).
        assert!((T0 + 14 * S..T0 + 14 * S + S / 10).contains(&gaps[0].utc.ns()));
        let input: Vec<(String, String)> = events
            .iter()
            .filter_map(|e| match e {
                Event::Coverage(c) if format!("{:?}", c.state).starts_with("SiteInput") => {
                    Some((c.site.clone(), format!("{:?}", c.state)))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            input,
            [
                ("north", "SiteInputStalled"),
                ("south", "SiteInputStalled"),
                ("north", "SiteInputResumed"),
                ("south", "SiteInputResumed")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }
}
