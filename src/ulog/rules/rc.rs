//! `rc_lost`: the RC receiver losing the transmitter while armed (`input_rc.rc_lost`; in logs
//! without `input_rc`, `vehicle_status.rc_signal_lost` of releases before v1.14), for at least
//! `COM_RC_LOSS_T` (PX4's own RC loss timeout, from the log). A receiver that never had a
//! signal (no RC on this vehicle) has nothing to lose and is said so. The episode ends when the
//! signal returns or the vehicle disarms.

use super::episode::{Crossing, Tracker};
use super::threshold::from_parameters;
use super::{lasting, read_from, secs, Context, Rule, RuleOutcome, Vehicle};
use crate::ulog::signals::{cite, Kind, Signal, SignalSample, Source};
use crate::ulog::value::Value;
use std::collections::{BTreeMap, HashMap};

/// PX4's default `COM_RC_LOSS_T` (seconds).
pub const DEFAULT_LOSS_S: f64 = 0.5;

#[derive(Debug)]
struct Receiver {
    tracker: Tracker,
    had_signal: bool,
    samples: u64,
}

pub struct RcLost {
    timeout: super::Threshold,
    receivers: HashMap<usize, Receiver>,
}

impl RcLost {
    pub fn new(params: &BTreeMap<String, Value>) -> Self {
        RcLost {
            timeout: from_parameters(
                params,
                "loss lasting",
                &["COM_RC_LOSS_T".to_string()],
                DEFAULT_LOSS_S,
                "PX4's default",
                "s",
            ),
            receivers: HashMap::new(),
        }
    }
}

impl Rule for RcLost {
    fn observe(&mut self, sample: &SignalSample, source: &Source, vehicle: &Vehicle) {
        let (lost, field) = match (source.kind, &sample.signal) {
            (Kind::Rc, Signal::Rc { lost }) => (*lost, "input_rc.rc_lost"),
            (Kind::Status, Signal::Status(s)) if s.rc_signal_lost.is_some() => (
                s.rc_signal_lost == Some(true),
                "vehicle_status.rc_signal_lost",
            ),
            _ => return,
        };
        let min = (self.timeout.value.max(0.0) * 1e6) as u64;
        let r = self
            .receivers
            .entry(sample.source)
            .or_insert_with(|| Receiver {
                tracker: Tracker::new(0, min),
                had_signal: false,
                samples: 0,
            });
        r.samples += 1;
        if lost && vehicle.armed && r.had_signal {
            let crossing = Crossing::above(field.to_string(), 0.0, "", 1.0);
            r.tracker
                .bad(sample.timestamp, &cite(source, sample), &[crossing]);
        } else {
            r.had_signal |= !lost;
            r.tracker.good(sample.timestamp);
        }
    }

    fn finish(self: Box<Self>, sources: &[Source], _ctx: &Context<'_>) -> RuleOutcome {
        let rule = "rc_lost";
        let with_samples = |kind: Kind| -> Vec<usize> {
            let mut ids: Vec<usize> = self
                .receivers
                .iter()
                .filter(|(i, r)| sources[**i].kind == kind && r.samples > 0)
                .map(|(i, _)| *i)
                .collect();
            ids.sort_by_key(|i| sources[*i].multi_id);
            ids
        };
        let mut ids = with_samples(Kind::Rc);
        let legacy = ids.is_empty();
        if legacy {
            ids = with_samples(Kind::Status);
        }
        if ids.is_empty() {
            return RuleOutcome::not_evaluated(
                rule,
                "not evaluated: no input_rc (nor vehicle_status.rc_signal_lost)".into(),
            );
        }
        let read: Vec<String> = if legacy {
            read_from(sources, |s| s.kind == Kind::Status)
                .into_iter()
                .filter(|r| r.ends_with(".rc_signal_lost"))
                .collect()
        } else {
            read_from(sources, |s| s.kind == Kind::Rc)
        };
        let mut receivers = self.receivers;
        let mut notes = Vec::new();
        let mut findings = Vec::new();
        for i in ids {
            let r = receivers.remove(&i).expect("listed above");
            if !r.had_signal {
                notes.push(format!(
                    "{}: the RC signal was never there (lost in all {} samples): no RC to lose",
                    sources[i].instance(),
                    r.samples
                ));
            }
            findings.extend(r.tracker.findings(rule, |e| {
                format!(
                    "RC signal lost on {} while armed at {} {}",
                    sources[i].instance(),
                    secs(e.start),
                    lasting(e),
                )
            }));
        }
        let mut out = RuleOutcome::evaluated(rule, read, vec![self.timeout], findings);
        out.notes = notes;
        out
    }
}
