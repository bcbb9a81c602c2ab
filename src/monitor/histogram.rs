//! A cumulative latency histogram per system, in Prometheus' shape: fixed upper bounds, counts
//! that only grow, a sample count and a sum. Pure; the latency estimator feeds it and the
//! status snapshot carries it to `/metrics` as `foxborne_latency_seconds`.

use crate::utc::{NANOS_PER_MILLI, NANOS_PER_SECOND};
use serde::{Deserialize, Serialize};

/// Upper bounds of the buckets, in nanoseconds: radio links take milliseconds to a couple of
/// seconds (2 s is also the bound past which a median is a clock offset, not latency).
pub const BUCKET_BOUNDS_NS: [i64; 11] = [
    5 * NANOS_PER_MILLI,
    10 * NANOS_PER_MILLI,
    25 * NANOS_PER_MILLI,
    50 * NANOS_PER_MILLI,
    100 * NANOS_PER_MILLI,
    250 * NANOS_PER_MILLI,
    500 * NANOS_PER_MILLI,
    NANOS_PER_SECOND,
    3 * NANOS_PER_SECOND / 2,
    2 * NANOS_PER_SECOND,
    5 * NANOS_PER_SECOND,
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// Samples per bucket (not cumulative); the last entry is above every bound.
    per_bucket: [u64; BUCKET_BOUNDS_NS.len() + 1],
    sum_ns: i128,
}

impl LatencyHistogram {
    /// Counts one latency. A negative sample (the two clocks' errors together exceed the
    /// latency) counts as zero: a message cannot arrive before it was sent.
    pub fn observe(&mut self, latency_ns: i64) {
        let latency_ns = latency_ns.max(0);
        let bucket = BUCKET_BOUNDS_NS
            .iter()
            .position(|&bound| latency_ns <= bound)
            .unwrap_or(BUCKET_BOUNDS_NS.len());
        self.per_bucket[bucket] += 1;
        self.sum_ns += i128::from(latency_ns);
    }

    pub fn count(&self) -> u64 {
        self.per_bucket.iter().sum()
    }

    /// In seconds, with cumulative counts per finite upper bound.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0;
        let mut buckets = Vec::with_capacity(BUCKET_BOUNDS_NS.len());
        for (bound_ns, n) in BUCKET_BOUNDS_NS.iter().zip(&self.per_bucket) {
            cumulative += n;
            buckets.push((*bound_ns as f64 / NANOS_PER_SECOND as f64, cumulative));
        }
        HistogramSnapshot {
            count: self.count(),
            sum_s: self.sum_ns as f64 / NANOS_PER_SECOND as f64,
            buckets,
        }
    }
}

/// A histogram as `/metrics` shows it: cumulative counts by upper bound in seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistogramSnapshot {
    pub count: u64,
    pub sum_s: f64,
    /// `(upper bound in seconds, samples at or below it)`, finite bounds only: the `+Inf`
    /// bucket is `count` (JSON has no infinity).
    pub buckets: Vec<(f64, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_land_in_the_first_bucket_that_holds_them_and_counts_are_cumulative() {
        let mut h = LatencyHistogram::default();
        for ms in [3, 5, 6, 40, 120, 120, 4_000, 9_000] {
            h.observe(ms * NANOS_PER_MILLI);
        }
        h.observe(-20 * NANOS_PER_MILLI);
        let s = h.snapshot();
        assert_eq!(s.count, 9);
        assert_eq!(h.count(), 9);
        assert!((s.sum_s - 13.294).abs() < 1e-9, "{}", s.sum_s);
        let at = |bound: f64| s.buckets.iter().find(|b| b.0 == bound).unwrap().1;
        assert_eq!(
            at(0.005),
            3,
            "3 ms, 5 ms (inclusive bound) and the negative sample"
        );
        assert_eq!(at(0.01), 4);
        assert_eq!(at(0.05), 5);
        assert_eq!(at(0.25), 7);
        assert_eq!(at(5.0), 8);
        assert_eq!(s.buckets.last().unwrap(), &(5.0, 8));
        assert!(s
            .buckets
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }
}
