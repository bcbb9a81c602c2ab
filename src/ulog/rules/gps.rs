//! The GPS rules, per receiver instance of `sensor_gps` (or, in logs without it, of
//! `vehicle_gps_position`):
//!
//! - `gps_quality_drop`: `eph` above `COM_POS_FS_EPH` (the accuracy past which PX4 stops
//!   trusting the position) or `satellites_used` below `EKF2_REQ_NSATS` (the satellites the
//!   estimator needs to use GPS). Counted once the receiver had been good, or while armed (a
//!   vehicle flying on a receiver that never got a usable fix); before either it is still
//!   acquiring. Bad samples less than [`MERGE_GAP_US`] apart are one episode.
//! - `gnss_jamming`: `jamming_state` warning or critical (2, 3) or `jamming_indicator` at
//!   [`JAMMING_INDICATOR_HIGH`] or more.

use super::episode::{Crossing, Tracker};
use super::threshold::{from_parameters, stated};
use super::{lasting, read_from, secs, Context, Rule, RuleOutcome, Vehicle};
use crate::ulog::signals::meaning::GPS_TOPICS;
use crate::ulog::signals::{cite, GpsSample, Kind, Signal, SignalSample, Source};
use crate::ulog::value::Value;
use std::collections::{BTreeMap, HashMap};

/// Bad samples closer than this continue one episode.
pub const MERGE_GAP_US: u64 = 2_000_000;
/// PX4's default `COM_POS_FS_EPH` (metres), used when the log does not have it.
pub const DEFAULT_EPH_M: f64 = 5.0;
/// PX4's default `EKF2_REQ_NSATS`.
pub const DEFAULT_SATELLITES: f64 = 6.0;
/// PX4 User Guide, "Log Analysis using Flight Review", GPS Noise & Jamming: "around or below 40"
/// is normal, "around 80 or higher are too high and the setup must be inspected".
pub const JAMMING_INDICATOR_HIGH: f64 = 80.0;
/// u-blox's jamming monitor: 2 warning (PX4: mitigated), 3 critical (PX4: detected).
pub const JAMMING_STATE_WARNING: u8 = 2;

/// The GPS topic a rule reads: `sensor_gps` when the log has samples of it.
fn chosen_topic(samples: &HashMap<usize, u64>, sources: &[Source]) -> Option<&'static str> {
    GPS_TOPICS.into_iter().find(|t| {
        sources
            .iter()
            .enumerate()
            .any(|(i, s)| s.topic == *t && samples.get(&i).copied().unwrap_or(0) > 0)
    })
}

/// The receivers of `topic`, in instance order.
fn of_topic<T>(receivers: HashMap<usize, T>, sources: &[Source], topic: &str) -> Vec<(usize, T)> {
    let mut of: Vec<(usize, T)> = receivers
        .into_iter()
        .filter(|(i, _)| sources[*i].topic == topic)
        .collect();
    of.sort_by_key(|(i, _)| sources[*i].multi_id);
    of
}

/// The GPS reading of `sample`, counted among its source's `samples`; `None` for any other.
fn counted<'s>(
    samples: &mut HashMap<usize, u64>,
    sample: &'s SignalSample,
    source: &Source,
) -> Option<&'s GpsSample> {
    let (Kind::Gps, Signal::Gps(g)) = (source.kind, &sample.signal) else {
        return None;
    };
    *samples.entry(sample.source).or_default() += 1;
    Some(g)
}

fn no_gps() -> String {
    "not evaluated: no sensor_gps (nor vehicle_gps_position)".to_string()
}

#[derive(Debug)]
struct Receiver {
    tracker: Tracker,
    had_good: bool,
    /// Starts of episodes that began before the receiver was ever good (armed without a
    /// usable fix).
    never_good: Vec<u64>,
    /// Where each episode began (degrees), when the receiver reported a position.
    positions: Vec<(u64, f64, f64)>,
}

pub struct GpsQualityDrop {
    eph: super::Threshold,
    satellites: super::Threshold,
    receivers: HashMap<usize, Receiver>,
    samples: HashMap<usize, u64>,
}

impl GpsQualityDrop {
    pub fn new(params: &BTreeMap<String, Value>) -> Self {
        GpsQualityDrop {
            eph: from_parameters(
                params,
                "eph",
                &["COM_POS_FS_EPH".to_string()],
                DEFAULT_EPH_M,
                "PX4's default",
                "m",
            ),
            satellites: from_parameters(
                params,
                "satellites_used",
                &["EKF2_REQ_NSATS".to_string()],
                DEFAULT_SATELLITES,
                "PX4's default",
                "",
            ),
            receivers: HashMap::new(),
            samples: HashMap::new(),
        }
    }
}

impl Rule for GpsQualityDrop {
    fn observe(&mut self, sample: &SignalSample, source: &Source, vehicle: &Vehicle) {
        let Some(g) = counted(&mut self.samples, sample, source) else {
            return;
        };
        let r = self
            .receivers
            .entry(sample.source)
            .or_insert_with(|| Receiver {
                tracker: Tracker::new(MERGE_GAP_US, 0),
                had_good: false,
                never_good: Vec::new(),
                positions: Vec::new(),
            });
        let mut crossings = Vec::new();
        if let Some(eph) = g.eph.filter(|e| *e > self.eph.value) {
            crossings.push(Crossing::above(
                format!("{}.eph", source.topic),
                self.eph.value,
                "m",
                eph,
            ));
        }
        if let Some(n) = g
            .satellites
            .filter(|n| f64::from(*n) < self.satellites.value)
        {
            crossings.push(Crossing::below(
                format!("{}.satellites_used", source.topic),
                self.satellites.value,
                "",
                f64::from(n),
            ));
        }
        if crossings.is_empty() {
            if g.eph.is_some() || g.satellites.is_some() {
                r.had_good = true;
                r.tracker.good(sample.timestamp);
            }
        } else if r.had_good || vehicle.armed || r.tracker.is_open() {
            if !r.tracker.is_open() {
                if !r.had_good {
                    r.never_good.push(sample.timestamp);
                }
                if let (Some(lat), Some(lon)) = (g.latitude, g.longitude) {
                    r.positions.push((sample.timestamp, lat, lon));
                }
            }
            r.tracker
                .bad(sample.timestamp, &cite(source, sample), &crossings);
        }
    }

    fn finish(self: Box<Self>, sources: &[Source], _ctx: &Context<'_>) -> RuleOutcome {
        let rule = "gps_quality_drop";
        let Some(topic) = chosen_topic(&self.samples, sources) else {
            return RuleOutcome::not_evaluated(rule, no_gps());
        };
        let read = read_from(sources, |s| s.topic == topic);
        if !read
            .iter()
            .any(|r| r.ends_with(".eph") || r.ends_with(".satellites_used"))
        {
            return RuleOutcome::not_evaluated(
                rule,
                format!("not evaluated: {topic} has no eph or satellites_used"),
            );
        }
        let mut findings = Vec::new();
        for (i, r) in of_topic(self.receivers, sources, topic) {
            let never_good = r.never_good;
            let positions = r.positions;
            findings.extend(r.tracker.findings(rule, |e| {
                let what: Vec<String> = e
                    .crossed
                    .iter()
                    .map(|c| {
                        let name = c.field.rsplit('.').next().unwrap_or(&c.field);
                        match c.comparison {
                            "<" => format!("{name} down to {}", c.extreme.value),
                            _ => format!("{name} up to {:.1} m", c.extreme.value),
                        }
                    })
                    .collect();
                let what_happened = if never_good.contains(&e.start) {
                    "GPS not usable while armed (no good fix before)"
                } else {
                    "GPS quality dropped"
                };
                // A receiver without a fix reports 0, 0: no position to give.
                let near = positions
                    .iter()
                    .find(|p| p.0 == e.start && (p.1 != 0.0 || p.2 != 0.0))
                    .map_or(String::new(), |p| format!(" near {:.6}, {:.6}", p.1, p.2));
                format!(
                    "{what_happened} on {}[{}] at {}{near} {}: {}",
                    topic,
                    sources[i].multi_id,
                    secs(e.start),
                    lasting(e),
                    what.join(", ")
                )
            }));
        }
        RuleOutcome::evaluated(rule, read, vec![self.eph, self.satellites], findings)
    }
}

#[derive(Default)]
pub struct GnssJamming {
    receivers: HashMap<usize, Tracker>,
    samples: HashMap<usize, u64>,
}

impl Rule for GnssJamming {
    fn observe(&mut self, sample: &SignalSample, source: &Source, _vehicle: &Vehicle) {
        let Some(g) = counted(&mut self.samples, sample, source) else {
            return;
        };
        let tracker = self
            .receivers
            .entry(sample.source)
            .or_insert_with(|| Tracker::new(MERGE_GAP_US, 0));
        let mut crossings = Vec::new();
        if let Some(state) = g.jamming_state.filter(|s| *s >= JAMMING_STATE_WARNING) {
            crossings.push(Crossing::above(
                format!("{}.jamming_state", source.topic),
                f64::from(JAMMING_STATE_WARNING) - 1.0,
                "",
                f64::from(state),
            ));
        }
        if let Some(ind) = g.jamming_indicator.filter(|v| *v >= JAMMING_INDICATOR_HIGH) {
            crossings.push(Crossing::above(
                format!("{}.jamming_indicator", source.topic),
                JAMMING_INDICATOR_HIGH,
                "",
                ind,
            ));
        }
        if crossings.is_empty() {
            tracker.good(sample.timestamp);
        } else {
            tracker.bad(sample.timestamp, &cite(source, sample), &crossings);
        }
    }

    fn finish(self: Box<Self>, sources: &[Source], _ctx: &Context<'_>) -> RuleOutcome {
        let rule = "gnss_jamming";
        let Some(topic) = chosen_topic(&self.samples, sources) else {
            return RuleOutcome::not_evaluated(rule, no_gps());
        };
        let read: Vec<String> = read_from(sources, |s| s.topic == topic)
            .into_iter()
            .filter(|r| r.contains(".jamming_"))
            .collect();
        if read.is_empty() {
            return RuleOutcome::not_evaluated(
                rule,
                format!("not evaluated: {topic} has no jamming_state or jamming_indicator"),
            );
        }
        let thresholds = vec![
            stated(
                "jamming_state",
                f64::from(JAMMING_STATE_WARNING),
                "",
                "u-blox jamming monitor states 2 (warning; PX4: mitigated) and 3 (critical; PX4: detected)",
            ),
            stated(
                "jamming_indicator",
                JAMMING_INDICATOR_HIGH,
                "",
                "PX4 User Guide, Log Analysis using Flight Review (GPS Noise & Jamming): around or below 40 is normal, around 80 or higher is too high",
            ),
        ];
        let mut findings = Vec::new();
        for (i, tracker) in of_topic(self.receivers, sources, topic) {
            findings.extend(tracker.findings(rule, |e| {
                let worst: Vec<String> = e
                    .crossed
                    .iter()
                    .map(|c| {
                        let name = c.field.rsplit('.').next().unwrap_or(&c.field);
                        format!("{name} {}", c.extreme.value)
                    })
                    .collect();
                format!(
                    "GNSS jamming on {}[{}] at {} {}: {}",
                    topic,
                    sources[i].multi_id,
                    secs(e.start),
                    lasting(e),
                    worst.join(", ")
                )
            }));
        }
        RuleOutcome::evaluated(rule, read, thresholds, findings)
    }
}
