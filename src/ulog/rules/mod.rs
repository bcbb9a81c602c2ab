//! The flight rules of the source document ("Topics Foxborne reads") and the two Flight Review
//! reports beside them, as pure functions over decoded samples ([`SignalSample`]s): each rule
//! says whether it could be evaluated (and if not, why), what it read, the thresholds it used
//! and where each came from, and one finding per episode with the values that crossed, each
//! cited by topic, instance, message number and byte offset.
//!
//! One file per rule or family: `failsafe` (failsafe_entered), `gps` (gps_quality_drop,
//! gnss_jamming), `battery` (battery_sag), `vibration` (vibration_high), `estimator`
//! (estimator_fault), `rc` (rc_lost); `episode` turns runs of bad samples into episodes and
//! `threshold` finds thresholds in the log's parameters.
//!
//! Rules run as the samples stream by (memory bounded by episodes, not samples): [`RuleSet`]
//! in the ingest, [`evaluate`] over a slice of samples for other callers.

pub mod battery;
pub mod episode;
pub mod estimator;
pub mod failsafe;
pub mod gps;
pub mod rc;
pub mod threshold;
pub mod vibration;

use crate::ulog::events::{Citation, Event};
use crate::ulog::signals::{Kind, Signal, SignalSample, Source};
use crate::ulog::value::Value;
use serde::Serialize;
use std::collections::BTreeMap;

/// The rules in report order, by the names the source document gives them.
pub const RULES: [&str; 7] = [
    "failsafe_entered",
    "gps_quality_drop",
    "gnss_jamming",
    "battery_sag",
    "vibration_high",
    "estimator_fault",
    "rc_lost",
];

/// One value read at one sample.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Reading {
    pub value: f64,
    pub timestamp: u64,
    pub citation: Citation,
}

/// A value that crossed its threshold: where it first did and where it was worst.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Crossed {
    /// `topic.field` as read.
    pub field: String,
    /// `>`: bad above the threshold; `<`: bad below it.
    pub comparison: &'static str,
    pub threshold: f64,
    pub unit: &'static str,
    pub first: Reading,
    pub extreme: Reading,
}

/// A threshold a rule used, and where the figure comes from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Threshold {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub source: String,
}

/// A failsafe condition flag that was true when a failsafe began.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cause {
    /// `failsafe_flags.fd_critical_failure`, or a `vehicle_status` field in older logs.
    pub flag: String,
    /// When it last became true (boot clock, µs), and the sample that says so.
    pub since: u64,
    pub citation: Citation,
    /// True already before the vehicle armed (a standing condition, such as no ground
    /// station on a vehicle flown without one).
    pub before_arming: bool,
}

/// One finding of a rule: one episode.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RuleFinding {
    pub rule: &'static str,
    pub title: String,
    /// When it began (boot clock, µs) and the sample that shows it.
    pub timestamp: u64,
    pub citation: Citation,
    /// When it cleared (the first sample without it); `None`: not before the log ends.
    pub end_timestamp: Option<u64>,
    pub duration_ms: f64,
    pub values: Vec<Crossed>,
    /// The failsafe rule: the PX4 event that announced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cause: Vec<Cause>,
    /// Navigation state before and after (failsafe_entered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nav_state: Option<String>,
}

/// What one rule concluded on one log.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RuleOutcome {
    pub rule: &'static str,
    pub evaluated: bool,
    /// Why not, when not: `not evaluated: no sensor_gps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `topic[instance].field` for every field read.
    pub read: Vec<String>,
    pub thresholds: Vec<Threshold>,
    /// How many findings it made (they are in the report's `findings`).
    pub found: usize,
    /// What else the reader should know (an instance that reads no battery, a receiver that
    /// never had a fix).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(skip)]
    pub findings: Vec<RuleFinding>,
}

impl RuleOutcome {
    pub fn not_evaluated(rule: &'static str, reason: String) -> Self {
        RuleOutcome {
            rule,
            evaluated: false,
            reason: Some(reason),
            read: Vec::new(),
            thresholds: Vec::new(),
            found: 0,
            notes: Vec::new(),
            findings: Vec::new(),
        }
    }

    pub fn evaluated(
        rule: &'static str,
        read: Vec<String>,
        thresholds: Vec<Threshold>,
        findings: Vec<RuleFinding>,
    ) -> Self {
        RuleOutcome {
            rule,
            evaluated: true,
            reason: None,
            read,
            thresholds,
            found: findings.len(),
            notes: Vec::new(),
            findings,
        }
    }
}

/// The vehicle's state as the samples go by, shared by the rules (from `vehicle_status`
/// instance 0).
#[derive(Debug, Clone, Copy, Default)]
pub struct Vehicle {
    pub armed: bool,
    /// When it first armed.
    pub first_armed: Option<u64>,
}

/// What the rules need besides the samples.
pub struct Context<'a> {
    /// Parameters at log start.
    pub parameters: &'a BTreeMap<String, Value>,
    /// Every decoded PX4 event, in file order (health reports included).
    pub events: &'a [Event],
    /// The last believable timestamp of the log.
    pub log_end: u64,
}

/// One rule, fed sample by sample.
pub trait Rule {
    fn observe(&mut self, sample: &SignalSample, source: &Source, vehicle: &Vehicle);
    fn finish(self: Box<Self>, sources: &[Source], ctx: &Context<'_>) -> RuleOutcome;
}

/// Every rule, run over one stream of samples.
pub struct RuleSet {
    rules: Vec<Box<dyn Rule>>,
    vehicle: Vehicle,
}

impl RuleSet {
    /// The rules with their thresholds from `parameters` (the values at log start).
    pub fn new(parameters: &BTreeMap<String, Value>) -> Self {
        RuleSet {
            rules: vec![
                Box::new(failsafe::FailsafeEntered::default()),
                Box::new(gps::GpsQualityDrop::new(parameters)),
                Box::new(gps::GnssJamming::default()),
                Box::new(battery::BatterySag::new(parameters)),
                Box::new(vibration::VibrationHigh::default()),
                Box::new(estimator::EstimatorFault::default()),
                Box::new(rc::RcLost::new(parameters)),
            ],
            vehicle: Vehicle::default(),
        }
    }

    pub fn observe(&mut self, sample: &SignalSample, sources: &[Source]) {
        let source = &sources[sample.source];
        if let (Kind::Status, Signal::Status(s), 0) = (source.kind, &sample.signal, source.multi_id)
        {
            self.vehicle.armed = s.armed();
            if s.armed() && self.vehicle.first_armed.is_none() {
                self.vehicle.first_armed = Some(sample.timestamp);
            }
        }
        for rule in &mut self.rules {
            rule.observe(sample, source, &self.vehicle);
        }
    }

    pub fn finish(self, sources: &[Source], ctx: &Context<'_>) -> Vec<RuleOutcome> {
        self.rules
            .into_iter()
            .map(|r| r.finish(sources, ctx))
            .collect()
    }
}

/// Runs every rule over `samples` (in file order) from `sources`.
pub fn evaluate(
    samples: &[SignalSample],
    sources: &[Source],
    ctx: &Context<'_>,
) -> Vec<RuleOutcome> {
    let mut set = RuleSet::new(ctx.parameters);
    for s in samples {
        set.observe(s, sources);
    }
    set.finish(sources, ctx)
}

/// `topic[i].field` for every field read from the sources of `kind` (those in `topics`, if
/// given), and whether there were any.
pub fn read_from(sources: &[Source], keep: impl Fn(&Source) -> bool) -> Vec<String> {
    sources
        .iter()
        .filter(|s| keep(s))
        .flat_map(|s| {
            s.read.iter().map(move |r| match r.split_once('.') {
                Some((topic, field)) => format!("{topic}[{}].{field}", s.multi_id),
                None => format!("{}[{}]: {r}", s.topic, s.multi_id),
            })
        })
        .collect()
}

/// Seconds on the boot clock, for titles.
pub fn secs(t: u64) -> String {
    format!("{:.2} s", t as f64 / 1e6)
}

/// "for 2.2 s" or "until the log ends (2.2 s)".
pub fn lasting(e: &episode::Episode) -> String {
    let d = e.duration_us() as f64 / 1e6;
    match e.end {
        Some(_) => format!("for {d:.1} s"),
        None => format!("until the log ends ({d:.1} s)"),
    }
}

/// A finding from an episode of `source`.
fn finding(rule: &'static str, title: String, e: episode::Episode) -> RuleFinding {
    RuleFinding {
        rule,
        title,
        timestamp: e.start,
        citation: e.citation.clone(),
        end_timestamp: e.end,
        duration_ms: e.duration_us() as f64 / 1000.0,
        values: e.crossed,
        reason: None,
        cause: Vec::new(),
        nav_state: None,
    }
}
