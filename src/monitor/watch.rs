//! The watch: every monitor together, fed receipts and asked what is due, so the live pipeline
//! and `analyze` run exactly the same rules: the telemetry_gap detector, the per-link gaps, the
//! latency estimator, the radios, what redundant links deliver, two senders on one id and
//! streams that stop, and the traffic around our vehicles. Latency reports are scheduled on the receipts' clock (every
//! `report_interval`, from the first SYSTEM_TIME), so a recording replayed gives its reports at
//! the same instants the live daemon did.
//!
//! A gap (telemetry or link) carries the radios' numbers of its links (`radio`), from the
//! window before its last heartbeat and during it.

use super::conflict::{ConflictDetector, HeartbeatSeen};
use super::delivery::{Delivered, Delivery};
use super::event::Event;
use super::gap::{GapConfig, GapDetector};
use super::heartbeat::HeartbeatTracker;
use super::input::{FrameSeen, MonitorInput};
use super::latency::{LatencyConfig, LatencyEstimator};
use super::link_gap::{Beat, LinkGapDetector};
use super::ntp::ClockStatus;
use super::radio::{RadioKey, RadioWatch};
use super::streams::StreamWatch;
use super::traffic::{Heard, TrafficConfig, TrafficMonitor};
use crate::link::LinkId;
use crate::utc::{seconds_to_ns, NANOS_PER_MILLI};
use std::collections::BTreeMap;

/// Everything the watch is configured with. The daemon and `analyze` both get theirs from
/// [`crate::config::Config::watch_settings`], so offline findings follow the live rules.
#[derive(Debug, Clone)]
pub struct WatchSettings {
    pub gap: GapConfig,
    pub latency: LatencyConfig,
    pub report_interval_s: f64,
    pub traffic: TrafficConfig,
}

impl Default for WatchSettings {
    fn default() -> Self {
        Self {
            gap: GapConfig::default(),
            latency: LatencyConfig::default(),
            report_interval_s: 10.0,
            traffic: TrafficConfig::default(),
        }
    }
}

pub struct Watch {
    pub gap: GapDetector,
    pub latency: LatencyEstimator,
    /// What each system's heartbeats say (mode, status), for the status snapshot.
    pub heartbeats: HeartbeatTracker,
    pub link_gaps: LinkGapDetector,
    pub radios: RadioWatch,
    pub delivery: Delivery,
    pub conflicts: ConflictDetector,
    pub streams: StreamWatch,
    pub traffic: TrafficMonitor,
    /// Link names as the inputs gave them, for the radios of a gap's links.
    link_ids: BTreeMap<String, LinkId>,
    report_interval_ns: i64,
    next_report_ns: Option<i64>,
}

impl Watch {
    pub fn new(settings: WatchSettings, start_utc_ns: i64) -> Self {
        let names = settings.gap.vehicles.clone();
        Self {
            gap: GapDetector::new(settings.gap, start_utc_ns),
            latency: LatencyEstimator::new(settings.latency),
            heartbeats: HeartbeatTracker::default(),
            link_gaps: LinkGapDetector::default(),
            radios: RadioWatch::default(),
            delivery: Delivery::default(),
            conflicts: ConflictDetector::new(names.clone()),
            streams: StreamWatch::new(names),
            traffic: TrafficMonitor::new(settings.traffic),
            link_ids: BTreeMap::new(),
            report_interval_ns: seconds_to_ns(settings.report_interval_s).max(1),
            next_report_ns: None,
        }
    }

    /// Tells the monitors of one receipt; returns the events it settles (a gap's `closed`, or
    /// its `open` and `closed` when no poll saw it; a link's gap; a conflict).
    pub fn observe(&mut self, observation: &MonitorInput, link_name: &str) -> Vec<Event> {
        let link = observation.link();
        if !self.link_ids.contains_key(link_name) {
            self.link_ids.insert(link_name.to_string(), link);
        }
        match *observation {
            MonitorInput::Heartbeat {
                sysid,
                compid,
                utc_ns,
                fields,
                seq,
                ref src,
                ..
            } => {
                if self.gap.config().ignore_sysids.contains(&sysid) {
                    return Vec::new();
                }
                self.heartbeats.observe(sysid, compid, utc_ns, fields);
                let mut events: Vec<Event> = self
                    .gap
                    .on_heartbeat(sysid, link_name, utc_ns)
                    .into_iter()
                    .map(Event::from)
                    .collect();
                let config = self.gap.config();
                // Half the heartbeat interval, worked out only for a vehicle on two links.
                let margin_ns = if self.link_gaps.heard_elsewhere(sysid, link) {
                    self.gap
                        .cadence(sysid)
                        .map_or(0, |(interval, _)| interval / 2)
                } else {
                    0
                };
                let beat = Beat {
                    sysid,
                    link,
                    link_name,
                    utc_ns,
                    threshold_ns: config.link_threshold_ns(sysid, link_name),
                    margin_ns,
                    vehicle_name: config.vehicles.get(&sysid).map(String::as_str),
                };
                events.extend(
                    self.link_gaps
                        .on_heartbeat(beat)
                        .into_iter()
                        .map(Event::from),
                );
                if let Some(f) = fields {
                    let seen = HeartbeatSeen {
                        link,
                        link_name,
                        sysid,
                        compid,
                        seq,
                        src: src.as_deref(),
                        mav_type: f.mav_type,
                        autopilot: f.autopilot,
                        utc_ns,
                    };
                    events.extend(self.conflicts.heartbeat(seen).map(Event::from));
                }
                self.with_radios(events)
            }
            MonitorInput::RadioStatus {
                link,
                sysid,
                compid,
                utc_ns,
                report,
            } => {
                self.radios.observe(
                    RadioKey {
                        link,
                        sysid,
                        compid,
                    },
                    utc_ns,
                    report,
                );
                Vec::new()
            }
            MonitorInput::SystemTime {
                sysid,
                utc_ns,
                resolution_ns,
                time_unix_usec,
                time_boot_ms,
                ..
            } => {
                let o = self.latency.observe(
                    sysid,
                    utc_ns,
                    resolution_ns,
                    time_unix_usec,
                    time_boot_ms,
                );
                if o.recorded && self.next_report_ns.is_none() {
                    // On the whole millisecond, so the daemon (nanosecond stamps) and `analyze`
                    // over its receive log (millisecond stamps) report at the same instants
                    // over the same samples.
                    let first_ms = utc_ns - utc_ns.rem_euclid(NANOS_PER_MILLI);
                    self.next_report_ns = Some(first_ms + self.report_interval_ns);
                }
                Vec::new()
            }
            MonitorInput::Traffic {
                link,
                sender,
                utc_ns,
                ref message,
            } => {
                let heard = Heard {
                    link,
                    link_name,
                    sender,
                    utc_ns,
                };
                self.traffic.heard(heard, message)
            }
        }
    }

    /// One receipt of any message, counted as it comes (not in stamp order: these are counts,
    /// judged only at complete seconds). A second sender's run may open a conflict.
    pub fn frame(&mut self, frame: &FrameSeen, link_name: &str) -> Option<Event> {
        if self.gap.config().ignore_sysids.contains(&frame.sysid) {
            return None;
        }
        let delivered = self
            .delivery
            .observe(frame.link, frame.sysid, frame.compid, frame.seq);
        if delivered == Delivered::New {
            self.streams
                .frame(frame.sysid, frame.msgid, frame.name, frame.utc_ns);
        }
        let runs = frame.interleaved?;
        self.conflicts
            .interleaved(
                frame.link,
                link_name,
                frame.sysid,
                frame.compid,
                runs,
                frame.utc_ns,
            )
            .map(Event::from)
    }

    /// The earliest instant something is due: a gap opening, a link's gap, a conflict
    /// closing, a second of rates complete, a traffic track aging out, a latency report.
    pub fn next_deadline(&self) -> Option<i64> {
        [
            self.gap.next_deadline(),
            self.link_gaps.next_deadline(),
            self.conflicts.next_deadline(),
            self.streams.next_deadline(),
            self.traffic.next_deadline(),
            self.next_report_ns,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Everything due at `now_ns`: gaps that opened, links' gaps, conflicts that ended, streams
    /// judged, and latency reports whose time has come (stamped at their scheduled instant).
    pub fn poll(&mut self, now_ns: i64, clock: Option<ClockStatus>) -> Vec<Event> {
        let mut events: Vec<Event> = self.gap.poll(now_ns).into_iter().map(Event::from).collect();
        events.extend(self.link_gaps.poll(now_ns).into_iter().map(Event::from));
        events.extend(self.conflicts.poll(now_ns).into_iter().map(Event::from));
        let gap = &self.gap;
        let last_heartbeat = |sysid: u8| gap.cadence(sysid).and_then(|(_, last)| last);
        events.extend(
            self.streams
                .poll(now_ns, &last_heartbeat)
                .into_iter()
                .map(Event::from),
        );
        events.extend(self.traffic.poll(now_ns));
        while let Some(due) = self.next_report_ns.filter(|&due| due <= now_ns) {
            events.extend(self.latency.report(due, clock).into_iter().map(Event::from));
            self.next_report_ns = Some(due + self.report_interval_ns);
        }
        self.with_radios(events)
    }

    /// The gaps among `events` with their links' radio numbers.
    fn with_radios(&self, mut events: Vec<Event>) -> Vec<Event> {
        for event in &mut events {
            match event {
                // Up to the event: the open's instant, or the heartbeat that closed it.
                Event::TelemetryGap(g) => {
                    let (Some(last), until) = (g.last_recv_utc, g.utc) else {
                        continue;
                    };
                    g.radio = g
                        .links
                        .iter()
                        .filter_map(|name| Some((self.link_ids.get(name)?, name)))
                        .flat_map(|(&id, name)| {
                            self.radios.evidence(id, name, last.ns(), until.ns())
                        })
                        .collect();
                }
                Event::LinkGap(g) => {
                    if let Some(&id) = self.link_ids.get(&g.link) {
                        g.radio =
                            self.radios
                                .evidence(id, &g.link, g.last_recv_utc.ns(), g.utc.ns());
                    }
                }
                _ => {}
            }
        }
        events
    }
}
