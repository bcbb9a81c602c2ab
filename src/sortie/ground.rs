//! What one ground record says of one vehicle, on the record's own clock: its telemetry gaps
//! (from the watch `analyze` runs, see [`super::gaps`]), the receiver's links going up and down,
//! what the receiver dropped, the link's latency, the receiver's own clock state, the traffic
//! that came near it (its `traffic_proximity` events, each encounter one entry from its open
//! to its close), and the vehicle's SYSTEM_TIME receipts for the ground anchor.
//!
//! A record is the receiver (its receive logs and events files together: one clock) or one
//! `.tlog` (a ground station's clock). Pure: the shell feeds it receipts and events as values
//! with their citations, in file order.

use super::anchor::SystemTimeReceipt;
use super::entry::{Cite, Happening, SECOND};
use super::gaps::GapReplay;
use crate::monitor::event::{ClockState, LinkState, ReceiverState, TrafficProximityEvent};
use crate::monitor::{Event, GapEvent, GapState, MonitorInput, WatchSettings, OBSERVED};
use std::collections::{BTreeMap, BTreeSet};

/// What a record holds of one system id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Heard {
    pub receipts: u64,
    /// The whole seconds (of the record's UTC) in which any receipt of it came.
    pub seconds: BTreeSet<i64>,
}

/// One reading of the record's clock state (a `clock` or `latency` event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockReading {
    pub utc_ns: i64,
    pub synchronised: bool,
    pub max_error_us: i64,
}

/// A ground record being read.
pub struct GroundRecord {
    pub name: String,
    sysid: u8,
    replay: GapReplay,
    /// How finely the record stamps: a receipt at `t` happened within `[t, t + resolution)`.
    pub resolution_ns: i64,
    system_times: Vec<SystemTimeReceipt>,
    last_heartbeat: Option<Cite>,
    open_gap: Option<(GapEvent, Option<Cite>)>,
    happenings: Vec<Happening>,
    replayed_latency: Vec<Happening>,
    event_latency: Vec<Happening>,
    event_gaps: Vec<(GapEvent, Cite)>,
    link_events: Vec<(String, Happening)>,
    heard: BTreeMap<u8, Heard>,
    links_of_vehicle: BTreeSet<String>,
    clock: Vec<ClockReading>,
    receipt_files: BTreeSet<String>,
    events_files: BTreeSet<String>,
    /// The vehicle's open traffic encounters (by track key), from the events files: the
    /// receiver's live findings stand for them (an SBS feed is not in the receive log).
    traffic_open: BTreeMap<String, (TrafficProximityEvent, Cite)>,
}

/// A ground record read to its end.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundFacts {
    pub name: String,
    pub resolution_ns: i64,
    /// Everything the record says of the vehicle, on its own clock, in record order.
    pub happenings: Vec<Happening>,
    pub system_times: Vec<SystemTimeReceipt>,
    /// Receipts by system id (every system the record holds).
    pub heard: BTreeMap<u8, Heard>,
    pub clock: Vec<ClockReading>,
    pub receipt_files: Vec<String>,
    pub events_files: Vec<String>,
}

impl GroundFacts {
    /// The record's clock error, the largest its clock readings report, and what it is from;
    /// `None` when the record gives no clock state.
    pub fn stated_clock_error(&self) -> Option<(i64, String)> {
        let worst = self.clock.iter().max_by_key(|r| r.max_error_us)?;
        let synced = self.clock.iter().all(|r| r.synchronised);
        Some((
            worst.max_error_us * 1000,
            format!(
                "its events: {}, maximum error up to {:.3} ms",
                if synced {
                    "NTP-synchronised"
                } else {
                    "not synchronised at some point"
                },
                worst.max_error_us as f64 / 1000.0
            ),
        ))
    }
}

impl GroundRecord {
    /// A record of the vehicle `sysid`, its gaps judged with `settings` (as `analyze` would).
    pub fn new(name: &str, sysid: u8, settings: WatchSettings, resolution_ns: i64) -> Self {
        GroundRecord {
            name: name.to_string(),
            sysid,
            replay: GapReplay::new(settings),
            resolution_ns,
            system_times: Vec::new(),
            last_heartbeat: None,
            open_gap: None,
            happenings: Vec::new(),
            replayed_latency: Vec::new(),
            event_latency: Vec::new(),
            event_gaps: Vec::new(),
            link_events: Vec::new(),
            heard: BTreeMap::new(),
            links_of_vehicle: BTreeSet::new(),
            clock: Vec::new(),
            receipt_files: BTreeSet::new(),
            events_files: BTreeSet::new(),
            traffic_open: BTreeMap::new(),
        }
    }

    /// One receipt of any message from `sysid`, stamped `utc_ns`, with the monitors' input when
    /// it is a HEARTBEAT or a SYSTEM_TIME.
    pub fn receipt(
        &mut self,
        sysid: u8,
        utc_ns: i64,
        input: Option<&MonitorInput>,
        link: &str,
        cite: Cite,
    ) {
        let file = match &cite {
            Cite::Line { file, .. }
            | Cite::TlogRecord { file, .. }
            | Cite::Message { file, .. } => file.clone(),
        };
        self.receipt_files.insert(file);
        let heard = self.heard.entry(sysid).or_default();
        heard.receipts += 1;
        heard.seconds.insert(utc_ns.div_euclid(SECOND));
        if sysid == self.sysid {
            self.links_of_vehicle.insert(link.to_string());
        }
        let Some(input) = input else {
            return;
        };
        for event in self.replay.receipt(input, link) {
            self.replayed(event, Some(&cite));
        }
        if sysid != self.sysid {
            return;
        }
        match *input {
            MonitorInput::Heartbeat { .. } => self.last_heartbeat = Some(cite),
            MonitorInput::SystemTime {
                utc_ns,
                resolution_ns,
                time_unix_usec,
                time_boot_ms,
                ..
            } => self.system_times.push(SystemTimeReceipt {
                recv_ns: utc_ns,
                resolution_ns,
                time_boot_ms,
                time_unix_usec,
            }),
            MonitorInput::RadioStatus { .. } | MonitorInput::Traffic { .. } => {}
        }
    }

    /// A finding of the replay. `current` is the receipt that settled it (the heartbeat that
    /// closes a gap), `None` at the end of the record.
    fn replayed(&mut self, event: Event, current: Option<&Cite>) {
        match event {
            Event::TelemetryGap(gap) if gap.sysid == self.sysid => match gap.state {
                GapState::Open => self.open_gap = Some((gap, self.last_heartbeat.clone())),
                GapState::Closed => {
                    let last = self
                        .open_gap
                        .take()
                        .and_then(|(_, cite)| cite)
                        .or_else(|| self.last_heartbeat.clone());
                    let happening = gap_happening(&gap, last, current.cloned());
                    self.happenings.extend(happening);
                }
            },
            Event::Latency(latency) if latency.sysid == self.sysid => {
                if let Some(cite) = current {
                    self.replayed_latency.push(
                        latency_happening(&latency, cite.clone())
                            .with("from", "recomputed from the receipts"),
                    );
                }
            }
            _ => {}
        }
    }

    /// One event of the receiver's events stream.
    pub fn event(&mut self, event: &Event, cite: Cite) {
        if let Cite::Line { file, .. } = &cite {
            self.events_files.insert(file.clone());
        }
        let t = event.utc().ns();
        match event {
            Event::Clock(c) => {
                self.clock.push(ClockReading {
                    utc_ns: t,
                    synchronised: c.synchronised,
                    max_error_us: c.max_error_us,
                });
                let state = match c.state {
                    ClockState::Lost => "lost its NTP synchronisation",
                    ClockState::Regained => "regained its NTP synchronisation",
                    ClockState::UnsynchronisedAtStart => "was not NTP-synchronised at start",
                };
                self.happenings.push(
                    Happening::new(
                        "receiver_clock",
                        t,
                        format!(
                            "The receiver's clock {state} (maximum error {:.3} ms)",
                            c.max_error_us as f64 / 1000.0
                        ),
                        cite,
                    )
                    .with("synchronised", c.synchronised)
                    .with("max_error_us", c.max_error_us),
                );
            }
            Event::Latency(l) => {
                if let (Some(synchronised), Some(max_error_us)) = (l.synchronised, l.max_error_us) {
                    self.clock.push(ClockReading {
                        utc_ns: t,
                        synchronised,
                        max_error_us,
                    });
                }
                if l.sysid == self.sysid {
                    self.event_latency.push(latency_happening(l, cite));
                }
            }
            Event::Link(l) => {
                let title = match l.state {
                    LinkState::Up => format!("Link {} up", l.link),
                    LinkState::Down => format!(
                        "Link {} down{}",
                        l.link,
                        l.reason
                            .as_deref()
                            .map(|r| format!(": {r}"))
                            .unwrap_or_default()
                    ),
                    LinkState::Errors => format!("Link {} errors: {}", l.link, counts(l)),
                    LinkState::Dropped => {
                        format!(
                            "The receiver dropped input on link {}: {}",
                            l.link,
                            counts(l)
                        )
                    }
                };
                let kind = if l.state == LinkState::Dropped {
                    "receiver_drop"
                } else {
                    "link"
                };
                let state = serde_json::to_value(l.state).expect("enum");
                self.link_events.push((
                    l.link.clone(),
                    Happening::new(kind, t, title, cite)
                        .with("link", l.link.clone())
                        .with("state", state),
                ));
            }
            Event::Dropped(d) => self.happenings.push(
                Happening::new(
                    "receiver_drop",
                    d.first_utc.ns(),
                    format!(
                        "The receiver dropped {} {} records{}",
                        d.count,
                        d.stream,
                        d.reason
                            .as_deref()
                            .map(|r| format!(" ({r})"))
                            .unwrap_or_default()
                    ),
                    cite,
                )
                .ending(d.last_utc.ns())
                .with("stream", d.stream.clone())
                .with("count", d.count),
            ),
            Event::Receiver(r) if r.state != ReceiverState::Config => {
                let what = match r.state {
                    ReceiverState::Start => "started",
                    _ => "stopped",
                };
                self.happenings.push(Happening::new(
                    "receiver",
                    t,
                    format!("The receiver {what}"),
                    cite,
                ));
            }
            Event::TelemetryGap(g) if g.sysid == self.sysid => {
                self.event_gaps.push((g.clone(), cite));
            }
            Event::TrafficProximity(p) if p.sysid == self.sysid => {
                let key = p
                    .icao
                    .clone()
                    .or_else(|| p.uas_id.clone())
                    .unwrap_or_default();
                match p.state {
                    GapState::Open => {
                        self.traffic_open.insert(key, ((**p).clone(), cite));
                    }
                    GapState::Closed => {
                        let open = self.traffic_open.remove(&key);
                        self.happenings
                            .push(traffic_happening(open, Some((p, cite))));
                    }
                }
            }
            _ => {}
        }
    }

    /// The end of the record.
    pub fn finish(mut self) -> GroundFacts {
        for event in self.replay.finish() {
            self.replayed(event, None);
        }
        if let Some((open, last)) = self.open_gap.take() {
            self.happenings.extend(gap_happening(&open, last, None));
        }
        let has_receipts = !self.receipt_files.is_empty();
        if !has_receipts {
            // Only events files: the daemon's own live findings are all there is.
            let mut opens: BTreeMap<i64, GapEvent> = BTreeMap::new();
            for (gap, cite) in std::mem::take(&mut self.event_gaps) {
                let key = gap.last_recv_utc.map_or(gap.due_utc.ns(), |t| t.ns());
                match gap.state {
                    GapState::Open => {
                        opens.insert(key, gap);
                    }
                    GapState::Closed => {
                        opens.remove(&key);
                        self.happenings.extend(
                            gap_happening(&gap, Some(cite.clone()), Some(cite))
                                .map(|h| h.with("from", "the receiver's live finding")),
                        );
                    }
                }
            }
            for gap in opens.into_values() {
                let cite = Cite::Line {
                    file: self.events_files.iter().next().cloned().unwrap_or_default(),
                    line: 0,
                };
                self.happenings
                    .extend(gap_happening(&gap, Some(cite), None));
            }
        }
        for open in std::mem::take(&mut self.traffic_open).into_values() {
            self.happenings.push(traffic_happening(Some(open), None));
        }
        let latency = if self.event_latency.is_empty() {
            std::mem::take(&mut self.replayed_latency)
        } else {
            std::mem::take(&mut self.event_latency)
        };
        self.happenings.extend(latency);
        let links = &self.links_of_vehicle;
        self.happenings.extend(
            std::mem::take(&mut self.link_events)
                .into_iter()
                .filter(|(link, _)| links.is_empty() || links.contains(link))
                .map(|(_, h)| h),
        );
        self.happenings.sort_by_key(|h| h.start_ns);
        GroundFacts {
            name: self.name,
            resolution_ns: self.resolution_ns,
            happenings: self.happenings,
            system_times: self.system_times,
            heard: self.heard,
            clock: self.clock,
            receipt_files: self.receipt_files.into_iter().collect(),
            events_files: self.events_files.into_iter().collect(),
        }
    }
}

fn counts(l: &crate::monitor::LinkEvent) -> String {
    l.counts
        .as_ref()
        .map(|c| {
            c.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// A gap as the timeline shows it: from the last heartbeat to the next (open-ended while the
/// record ends in it), the detector's title and its `Observed:` sentence.
fn gap_happening(gap: &GapEvent, last: Option<Cite>, next: Option<Cite>) -> Option<Happening> {
    let start = gap.last_recv_utc.unwrap_or(gap.due_utc).ns();
    let cite = last.or_else(|| next.clone())?;
    let title = match (&gap.title, gap.state) {
        (Some(t), _) => t.clone(),
        (None, GapState::Open) => format!(
            "{} Nothing since, to the end of the record",
            crate::monitor::title::TITLE_PREFIX
        ),
        (None, GapState::Closed) => format!(
            "{} The closing heartbeat is stamped before the last one: the length is unknown",
            crate::monitor::title::TITLE_PREFIX
        ),
    };
    let mut h = Happening::new("telemetry_gap", start, title, cite)
        .with("state", serde_json::to_value(gap.state).expect("enum"))
        .with("sysid", gap.sysid)
        .with("observed", OBSERVED)
        .with(
            "gap_s",
            gap.gap_s.map_or(serde_json::Value::Null, Into::into),
        )
        .with("threshold_s", gap.threshold_s)
        .with("expected_interval_s", gap.expected_interval_s)
        .with("links", gap.links.clone());
    if let Some(dropped) = gap.receiver_dropped {
        h = h.with("receiver_dropped", dropped);
    }
    if let Some(next_utc) = gap.next_recv_utc {
        h.end_ns = Some(next_utc.ns());
    }
    h.cite_end = next.filter(|_| gap.state == GapState::Closed);
    Some(h)
}

/// One traffic encounter as the timeline shows it: from its open to its close (open-ended when
/// the record ends in it; from the close's `opened_utc` when the record began after the open),
/// the alert's title, then the close's, with the closest point and how it was measured.
fn traffic_happening(
    open: Option<(TrafficProximityEvent, Cite)>,
    closed: Option<(&TrafficProximityEvent, Cite)>,
) -> Happening {
    let (first, cite) = match (&open, &closed) {
        (Some((o, c)), _) => (o, c.clone()),
        (None, Some((c, cite))) => (*c, cite.clone()),
        (None, None) => unreachable!("an encounter has an open or a close"),
    };
    let start = match (&open, &closed) {
        (Some((o, _)), _) => o.utc.ns(),
        (None, Some((c, _))) => c.opened_utc.unwrap_or(c.utc).ns(),
        _ => first.utc.ns(),
    };
    let last = closed.as_ref().map_or(first, |(c, _)| *c);
    let title = match (&open, &closed) {
        (Some((o, _)), Some((c, _))) => format!("{}; {}", o.title, c.title),
        (Some((o, _)), None) => format!(
            "{}; still within the thresholds at the end of the record",
            o.title
        ),
        (None, Some((c, _))) => c.title.clone(),
        (None, None) => String::new(),
    };
    let mut h = Happening::new("traffic_proximity", start, title, cite)
        .with("sysid", first.sysid)
        .with(
            "icao",
            first
                .icao
                .clone()
                .map_or(serde_json::Value::Null, Into::into),
        )
        .with(
            "uas_id",
            first
                .uas_id
                .clone()
                .map_or(serde_json::Value::Null, Into::into),
        )
        .with(
            "callsign",
            first
                .callsign
                .clone()
                .map_or(serde_json::Value::Null, Into::into),
        )
        .with(
            "closest",
            serde_json::to_value(last.closest).expect("a point serialises"),
        )
        .with(
            "vertical_basis",
            last.vertical_basis
                .clone()
                .map_or(serde_json::Value::Null, Into::into),
        )
        .with(
            "source",
            serde_json::to_value(&last.source).expect("a source serialises"),
        );
    if let Some((c, cite)) = closed {
        h.end_ns = Some(c.utc.ns());
        h.cite_end = Some(cite);
        h = h.with(
            "reason",
            c.reason.clone().map_or(serde_json::Value::Null, Into::into),
        );
    }
    h
}

fn latency_happening(l: &crate::monitor::LatencyEvent, cite: Cite) -> Happening {
    // A figure under the stamps' resolution is null in the event: say so, not nothing.
    let figure = |v: Option<f64>| match v {
        Some(ms) => format!("{ms:.1} ms"),
        None => format!("under {} ms", l.resolution_ms),
    };
    let title = match l.clock_offset_ms {
        Some(off) => format!(
            "Vehicle clock {:.3} s off the receiver's: the link's latency is not measurable ({} SYSTEM_TIME in {:.0} s)",
            off / 1000.0,
            l.count,
            l.window_s
        ),
        None => format!(
            "Latency p50 {}, p95 {}, max {} ({} SYSTEM_TIME in {:.0} s)",
            figure(l.p50_ms),
            figure(l.p95_ms),
            figure(l.max_ms),
            l.count,
            l.window_s
        ),
    };
    let ms = |v: Option<f64>| v.map_or(serde_json::Value::Null, Into::into);
    Happening::new("latency", l.utc.ns(), title, cite)
        .with("sysid", l.sysid)
        .with("p50_ms", ms(l.p50_ms))
        .with("p95_ms", ms(l.p95_ms))
        .with("max_ms", ms(l.max_ms))
        .with("clock_offset_ms", ms(l.clock_offset_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkId;
    use crate::monitor::parse_utc_ns;
    use crate::sortie::entry::MS;

    /// The first happening of `kind`.
    fn happening<'a>(facts: &'a GroundFacts, kind: &str) -> &'a Happening {
        facts.happenings.iter().find(|h| h.kind == kind).unwrap()
    }

    fn hb(t: i64) -> MonitorInput {
        MonitorInput::bare_heartbeat(LinkId::FIRST, 4, 1, t)
    }

    fn line(n: u64) -> Cite {
        Cite::Line {
            file: "receive.jsonl".into(),
            line: n,
        }
    }

    /// The source documents' INC-0142: heartbeats once a second up to 14:32:03.912, then
    /// nothing until 14:32:10.874; the gap cites both heartbeats' lines.
    #[test]
    fn a_gap_comes_from_the_detector_with_both_heartbeats_cited() {
        let last = parse_utc_ns("2026-09-24T14:32:03.912Z").unwrap();
        let next = parse_utc_ns("2026-09-24T14:32:10.874Z").unwrap();
        let mut record = GroundRecord::new("receiver", 4, WatchSettings::default(), MS);
        let mut n = 0;
        for k in (0..10).rev() {
            n += 1;
            let t = last - k * SECOND;
            record.receipt(4, t, Some(&hb(t)), "radio1", line(n));
        }
        // Another vehicle goes on beating: it does not hide the gap.
        record.receipt(22, last + 2 * SECOND, None, "radio1", line(n + 1));
        record.receipt(4, next, Some(&hb(next)), "radio1", line(n + 2));
        let facts = record.finish();
        let gaps: Vec<&Happening> = facts
            .happenings
            .iter()
            .filter(|h| h.kind == "telemetry_gap")
            .collect();
        assert_eq!(gaps.len(), 1);
        let gap = gaps[0];
        assert_eq!((gap.start_ns, gap.end_ns), (last, Some(next)));
        assert_eq!(
            gap.title,
            "Heartbeat due and not received. Nothing for 6.96 s"
        );
        assert_eq!(gap.cite, line(10));
        assert_eq!(gap.cite_end, Some(line(12)));
        assert_eq!(gap.detail["observed"], OBSERVED);
        assert_eq!(facts.heard[&4].receipts, 11);
        assert_eq!(facts.heard[&22].receipts, 1);
    }

    #[test]
    fn a_record_ending_in_silence_keeps_the_gap_open() {
        let t0 = parse_utc_ns("2026-09-24T15:41:00Z").unwrap();
        let mut record = GroundRecord::new("receiver", 4, WatchSettings::default(), MS);
        for k in 0..5 {
            let t = t0 + k * SECOND;
            record.receipt(4, t, Some(&hb(t)), "radio1", line(k as u64 + 1));
        }
        // A later receipt of another system moves the record's end past the threshold.
        let other = MonitorInput::bare_heartbeat(LinkId::FIRST, 255, 190, t0 + 20 * SECOND);
        record.receipt(255, t0 + 20 * SECOND, Some(&other), "radio1", line(6));
        let facts = record.finish();
        let gap = happening(&facts, "telemetry_gap");
        assert_eq!(gap.end_ns, None);
        assert_eq!(gap.detail["state"], "open");
        assert_eq!(gap.cite, line(5));
    }

    #[test]
    fn the_clock_state_comes_from_clock_and_latency_events() {
        let mut record = GroundRecord::new("receiver", 4, WatchSettings::default(), MS);
        let clock: Event = serde_json::from_str(
            r#"{"utc":"2026-09-24T14:00:00.000Z","kind":"clock","state":"unsynchronised_at_start","synchronised":false,"max_error_us":16000000}"#,
        )
        .unwrap();
        record.event(&clock, line(1));
        let latency: Event = serde_json::from_str(
            r#"{"utc":"2026-09-24T14:00:10.000Z","kind":"latency","sysid":4,"count":9,"p50_ms":40.0,"p95_ms":412.0,"max_ms":450.0,"clock_offset_ms":null,"resolution_ms":1.0,"window_s":60.0,"synchronised":true,"max_error_us":15000}"#,
        )
        .unwrap();
        record.event(&latency, line(2));
        let facts = record.finish();
        let (error, why) = facts.stated_clock_error().unwrap();
        assert_eq!(error, 16 * SECOND);
        assert!(why.contains("not synchronised"), "{why}");
        let lat = happening(&facts, "latency");
        assert_eq!(
            lat.title,
            "Latency p50 40.0 ms, p95 412.0 ms, max 450.0 ms (9 SYSTEM_TIME in 60 s)"
        );
        assert!(facts.happenings.iter().any(|h| h.kind == "receiver_clock"));
    }

    /// The vehicle's traffic encounters from the events files: one entry each from its open to
    /// its close, citing both lines; another vehicle's are not its; one still open at the end
    /// of the record is open-ended.
    #[test]
    fn each_traffic_encounter_is_one_entry_from_open_to_close() {
        use crate::monitor::event::examples::traffic_proximity;
        let mut record = GroundRecord::new("receiver", 4, WatchSettings::default(), MS);
        let open = traffic_proximity();
        let t0 = open.utc.ns();
        let closed = TrafficProximityEvent {
            utc: crate::utc::UtcTime(t0 + 30 * SECOND),
            state: GapState::Closed,
            reason: Some("left".into()),
            title: "Traffic N123AB clear of UAS-04 at 1150 m; closest 212 m and 30 m above".into(),
            ..open.clone()
        };
        let other = TrafficProximityEvent {
            sysid: 22,
            ..open.clone()
        };
        let later = TrafficProximityEvent {
            utc: crate::utc::UtcTime(t0 + 60 * SECOND),
            icao: Some("C0FFEE".into()),
            ..open.clone()
        };
        record.event(&Event::from(open), line(1));
        record.event(&Event::from(other), line(2));
        record.event(&Event::from(closed), line(3));
        record.event(&Event::from(later), line(4));
        let facts = record.finish();
        let traffic: Vec<&Happening> = facts
            .happenings
            .iter()
            .filter(|h| h.kind == "traffic_proximity")
            .collect();
        assert_eq!(traffic.len(), 2, "{traffic:#?}");
        let first = traffic[0];
        assert_eq!((first.start_ns, first.end_ns), (t0, Some(t0 + 30 * SECOND)));
        assert_eq!((&first.cite, &first.cite_end), (&line(1), &Some(line(3))));
        assert_eq!(
            first.title,
            "Traffic N123AB 640 m and 45 m above UAS-04; Traffic N123AB clear of UAS-04 at 1150 m; closest 212 m and 30 m above"
        );
        assert_eq!(first.detail["icao"], "A1B2C3");
        assert_eq!(first.detail["reason"], "left");
        assert_eq!(traffic[1].end_ns, None);
        assert!(traffic[1]
            .title
            .ends_with("still within the thresholds at the end of the record"));
    }
}
