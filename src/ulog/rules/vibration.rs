//! `vibration_high`: per IMU, the accelerometer's high-frequency vibration metric in Flight
//! Review's bands: green below [`ACCEL_HIGH`], orange (high) from it, red (severe) from
//! [`ACCEL_SEVERE`] (0.5 g and 1 g, in m/s²), for `vehicle_imu_status.accel_vibration_metric`
//! since PX4 v1.13. Logs before that carry a delta-velocity metric (m/s) instead, which Flight
//! Review plotted from `estimator_status.vibe[2]` with the bands [`DELTA_V_HIGH`] and
//! [`DELTA_V_SEVERE`]: those logs are read that way (`vibe[2]` when logged, else the old
//! `vehicle_imu_status` metric, which is the same kind of figure). An episode is every sample
//! in the orange band or above, samples less than [`MERGE_GAP_US`] apart joined.

use super::episode::{Crossing, Tracker};
use super::threshold::stated;
use super::{lasting, read_from, secs, Context, Rule, RuleOutcome, Vehicle};
use crate::ulog::signals::meaning::{ESTIMATOR_TOPIC, IMU_STATUS_TOPIC};
use crate::ulog::signals::{cite, Kind, Signal, SignalSample, Source, VibrationUnit};
use std::collections::HashMap;

/// Flight Review's orange and red bands for `accel_vibration_metric` (m/s²).
pub const ACCEL_HIGH: f64 = 4.905;
pub const ACCEL_SEVERE: f64 = 9.81;
/// Flight Review's orange and red bands for `estimator_status.vibe[2]` (m/s).
pub const DELTA_V_HIGH: f64 = 0.02;
pub const DELTA_V_SEVERE: f64 = 0.04;
pub const MERGE_GAP_US: u64 = 2_000_000;

fn bands(unit: VibrationUnit) -> (f64, f64, &'static str) {
    match unit {
        VibrationUnit::Acceleration => (ACCEL_HIGH, ACCEL_SEVERE, "m/s²"),
        VibrationUnit::DeltaVelocity => (DELTA_V_HIGH, DELTA_V_SEVERE, "m/s"),
    }
}

#[derive(Default)]
pub struct VibrationHigh {
    imus: HashMap<usize, Tracker>,
    samples: HashMap<usize, u64>,
}

/// Which vibration sources to read: the newest kind of figure the log has samples of.
fn chosen(sources: &[Source], samples: &HashMap<usize, u64>) -> Vec<usize> {
    let has = |i: &usize| samples.get(i).copied().unwrap_or(0) > 0;
    let of = |topic: &str, unit: VibrationUnit| -> Vec<usize> {
        (0..sources.len())
            .filter(|i| {
                let s = &sources[*i];
                s.kind == Kind::Vibration
                    && s.topic == topic
                    && s.vibration_unit == Some(unit)
                    && has(i)
            })
            .collect()
    };
    for (topic, unit) in [
        (IMU_STATUS_TOPIC, VibrationUnit::Acceleration),
        (ESTIMATOR_TOPIC, VibrationUnit::DeltaVelocity),
        (IMU_STATUS_TOPIC, VibrationUnit::DeltaVelocity),
    ] {
        let found = of(topic, unit);
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

impl Rule for VibrationHigh {
    fn observe(&mut self, sample: &SignalSample, source: &Source, _vehicle: &Vehicle) {
        let (Kind::Vibration, Signal::Vibration(v), Some(unit)) =
            (source.kind, &sample.signal, source.vibration_unit)
        else {
            return;
        };
        *self.samples.entry(sample.source).or_default() += 1;
        let (high, _, unit_name) = bands(unit);
        let tracker = self
            .imus
            .entry(sample.source)
            .or_insert_with(|| Tracker::new(MERGE_GAP_US, 0));
        if *v >= high {
            let field = source.read.first().cloned().unwrap_or_default();
            let crossing = Crossing::above(field, high, unit_name, *v);
            tracker.bad(sample.timestamp, &cite(source, sample), &[crossing]);
        } else {
            tracker.good(sample.timestamp);
        }
    }

    fn finish(self: Box<Self>, sources: &[Source], _ctx: &Context<'_>) -> RuleOutcome {
        let rule = "vibration_high";
        let ids = chosen(sources, &self.samples);
        if ids.is_empty() {
            return RuleOutcome::not_evaluated(
                rule,
                "not evaluated: no vehicle_imu_status (nor estimator_status.vibe)".into(),
            );
        }
        let unit = sources[ids[0]]
            .vibration_unit
            .expect("vibration sources have a unit");
        let (high, severe, unit_name) = bands(unit);
        let figure = match unit {
            VibrationUnit::Acceleration => "Flight Review's bands for accel_vibration_metric",
            VibrationUnit::DeltaVelocity => {
                "Flight Review's bands for the delta-velocity metric (estimator_status.vibe[2]) of logs before PX4 v1.13"
            }
        };
        let thresholds = vec![
            stated("high (orange band)", high, unit_name, figure),
            stated("severe (red band)", severe, unit_name, figure),
        ];
        let read = read_from(sources, |s| {
            ids.iter().any(|i| std::ptr::eq(s, &sources[*i]))
        });
        let mut imus = self.imus;
        let mut findings = Vec::new();
        for i in ids {
            let Some(tracker) = imus.remove(&i) else {
                continue;
            };
            findings.extend(tracker.findings(rule, |e| {
                let peak = e.crossed.first().map_or(0.0, |c| c.extreme.value);
                let band = if peak >= severe { "severe" } else { "high" };
                format!(
                    "Vibration {band} on {} at {} {}: up to {peak:.3} {unit_name} (high from {high}, severe from {severe})",
                    sources[i].instance(),
                    secs(e.start),
                    lasting(e),
                )
            }));
        }
        RuleOutcome::evaluated(rule, read, thresholds, findings)
    }
}
