//! `estimator_fault`: per estimator instance and per innovation (velocity, position, height,
//! heading), the test ratio of `estimator_status` above 1 (the innovation failed its
//! consistency gate, so the estimator rejects that measurement) for at least
//! [`MIN_FAULT_US`] (the duration at which flight-review-rs's `ekf_failure` warns). A ratio
//! back at or under 1 ends the episode.

use super::episode::{Crossing, Tracker};
use super::threshold::stated;
use super::{lasting, read_from, secs, Context, Rule, RuleOutcome, Vehicle};
use crate::ulog::signals::{cite, Kind, Signal, SignalSample, Source, ESTIMATOR_RATIOS};
use std::collections::HashMap;

pub const TEST_RATIO_LIMIT: f64 = 1.0;
pub const MIN_FAULT_US: u64 = 2_000_000;

#[derive(Default)]
pub struct EstimatorFault {
    trackers: HashMap<(usize, usize), Tracker>,
    fields: HashMap<usize, [Option<String>; 4]>,
}

/// The field a ratio was read from (`hdg_test_ratio` or `mag_test_ratio` for heading).
fn field_name(source: &Source, which: usize) -> Option<String> {
    let wanted = crate::ulog::signals::meaning::ESTIMATOR_RATIO_FIELDS[which];
    source
        .read
        .iter()
        .find(|r| {
            wanted
                .iter()
                .any(|(name, _)| r.ends_with(&format!(".{name}")))
        })
        .cloned()
}

impl Rule for EstimatorFault {
    fn observe(&mut self, sample: &SignalSample, source: &Source, _vehicle: &Vehicle) {
        let (Kind::Estimator, Signal::Estimator(ratios)) = (source.kind, &sample.signal) else {
            return;
        };
        let fields = self
            .fields
            .entry(sample.source)
            .or_insert_with(|| [0, 1, 2, 3].map(|w| field_name(source, w)));
        for (which, ratio) in ratios.iter().enumerate() {
            let Some(ratio) = ratio.filter(|r| r.is_finite()) else {
                continue;
            };
            let tracker = self
                .trackers
                .entry((sample.source, which))
                .or_insert_with(|| Tracker::new(0, MIN_FAULT_US));
            if ratio > TEST_RATIO_LIMIT {
                let crossing = Crossing::above(
                    fields[which].clone().unwrap_or_default(),
                    TEST_RATIO_LIMIT,
                    "",
                    ratio,
                );
                tracker.bad(sample.timestamp, &cite(source, sample), &[crossing]);
            } else {
                tracker.good(sample.timestamp);
            }
        }
    }

    fn finish(self: Box<Self>, sources: &[Source], _ctx: &Context<'_>) -> RuleOutcome {
        let rule = "estimator_fault";
        if self.trackers.is_empty() {
            return RuleOutcome::not_evaluated(
                rule,
                "not evaluated: no estimator_status (with innovation test ratios)".into(),
            );
        }
        let thresholds = vec![
            stated(
                "innovation test ratio",
                TEST_RATIO_LIMIT,
                "",
                "PX4 EKF2: a test ratio above 1 means the innovation failed its gate and the measurement is rejected",
            ),
            stated(
                "duration",
                MIN_FAULT_US as f64 / 1e6,
                "s",
                "flight-review-rs ekf_failure: sustained for 2 s is a warning",
            ),
        ];
        let mut keys: Vec<(usize, usize)> = self.trackers.keys().copied().collect();
        keys.sort_by_key(|(s, w)| (sources[*s].multi_id, *w));
        let mut trackers = self.trackers;
        let mut findings = Vec::new();
        for key in keys {
            let tracker = trackers.remove(&key).expect("listed above");
            findings.extend(tracker.findings(rule, |e| {
                let peak = e.crossed.first().map_or(0.0, |c| c.extreme.value);
                format!(
                    "Estimator {} innovation test ratio above 1 on {} from {} {} (up to {peak:.2})",
                    ESTIMATOR_RATIOS[key.1],
                    sources[key.0].instance(),
                    secs(e.start),
                    lasting(e),
                )
            }));
        }
        findings.sort_by_key(|f| f.timestamp);
        RuleOutcome::evaluated(
            rule,
            read_from(sources, |s| s.kind == Kind::Estimator),
            thresholds,
            findings,
        )
    }
}
