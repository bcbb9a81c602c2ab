//! The SYSTEM_TIME latency estimator: per MAVLink system id, the one-way latency of the link as
//! receipt time minus the vehicle's `time_unix_usec`, over a sliding window; and the send window
//! of a receipt, `[t - clock_error - latency_p95, t + clock_error]`.
//!
//! Pure: the caller passes each SYSTEM_TIME receipt with its receive time, and asks for reports
//! at times it chooses ([`LatencyEstimator::report`]). No clock, no I/O.
//!
//! Rules and decisions:
//! - A sample is `recv_utc - time_unix_usec`, exact in nanoseconds; `time_unix_usec == 0` (the
//!   vehicle has no time yet) is skipped. A receipt stamp recorded to a resolution (whole
//!   milliseconds in a receive log, microseconds in a `.tlog`, nanoseconds live) stands for the
//!   interval that follows it, so the sample takes its middle. A sample can be no finer than the
//!   coarser of that resolution and `time_unix_usec`'s microsecond: the window's
//!   **resolution**, stated in every report.
//! - The window keeps the newest `window_max_samples` samples received within `window_ns` of the
//!   newest receipt (or of the report time when reporting).
//! - Quantiles are nearest-rank on the sorted window, index `min(n-1, floor(p*(n-1) + 0.5))`,
//!   the same as the corpus oracle (`tools/tlog_oracle.py`), so figures compare with the
//!   `system_time_recv_minus_unix_ms` of `corpus/tlog/expected-pymavlink/*.json`.
//! - A vehicle clock plainly off UTC is reported as `clock_offset_ms` (the window's median) with
//!   the latency figures null: when the median is above `offset_bound_ns` (default 2 s: no radio
//!   link takes that long, while real logs show vehicle clocks 4.6 s, 1,705 s and 3 days off), or
//!   below minus the resolution (a message cannot arrive before it was sent: a median that says
//!   it did, by more than the stamps can blur, says the two clocks disagree).
//! - A report never shows a negative latency as latency: a figure under the resolution (a
//!   negative one within it included) is `null` and named in `below_resolution`.
//! - The window restarts for a system when it reboots and when its clock steps: samples from
//!   before describe a different clock. A reboot is `time_boot_ms` going back by more than
//!   `reboot_tolerance_ms` (default 10 s: `nodemavlink_vtol.tlog` delivers SYSTEM_TIME up to
//!   1.4 s out of order, which is not a reboot). A clock step is the vehicle's implied boot
//!   instant, `time_unix_usec - time_boot_ms`, moving by more than `clock_step_bound_ns`
//!   (default 2 s), e.g. GPS time arriving mid-flight; a reordered copy keeps that instant, while
//!   a reboot moves it by the uptime, so this also catches a reboot after a short uptime (then
//!   reported as a reboot, since `time_boot_ms` went back).
//! - Every sample also goes into the system's cumulative [`LatencyHistogram`] (never reset, so
//!   `/metrics` counters only grow; one below zero within the resolution as zero), unless the
//!   sample alone is outside the bounds a link can have (above `offset_bound_ns`, below minus
//!   the resolution): that is a clock offset.

use std::collections::{BTreeMap, VecDeque};

use super::event::{LatencyEvent, LatencyKind};
use super::histogram::LatencyHistogram;
use super::ntp::ClockStatus;
use crate::utc::{ns_to_millis, ns_to_seconds, UtcTime, NANOS_PER_MILLI, NANOS_PER_SECOND};

/// Settings of the latency estimator.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyConfig {
    /// At most this many samples per system (default 600).
    pub window_max_samples: usize,
    /// Samples older than this before the newest time are dropped (default 60 s).
    pub window_ns: i64,
    /// A median above this is a vehicle clock offset, not latency (default 2 s).
    pub offset_bound_ns: i64,
    /// `time_boot_ms` must go back by more than this to count as a reboot (default 10 s).
    pub reboot_tolerance_ms: u32,
    /// The vehicle's implied boot time moving by more than this is a clock step (default 2 s).
    pub clock_step_bound_ns: i64,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        LatencyConfig {
            window_max_samples: 600,
            window_ns: 60 * NANOS_PER_SECOND,
            offset_bound_ns: 2 * NANOS_PER_SECOND,
            reboot_tolerance_ms: 10_000,
            clock_step_bound_ns: 2 * NANOS_PER_SECOND,
        }
    }
}

/// Why a system's window was emptied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowRestart {
    /// `time_boot_ms` went back: the vehicle rebooted.
    Reboot,
    /// The vehicle's UTC moved against its boot clock: its clock was set or stepped.
    VehicleClockStep,
}

/// What [`LatencyEstimator::observe`] did with a SYSTEM_TIME receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleOutcome {
    /// The receipt became a sample (false when `time_unix_usec` was zero).
    pub recorded: bool,
    /// The system's window was emptied before this receipt, and why.
    pub restarted: Option<WindowRestart>,
}

/// `time_unix_usec` counts microseconds: no sample is finer than that.
pub const VEHICLE_CLOCK_RESOLUTION_NS: i64 = 1_000;

/// The window's figures for one system, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatencyEstimate {
    pub count: usize,
    pub min_ns: i64,
    pub p50_ns: i64,
    pub p95_ns: i64,
    pub max_ns: i64,
    /// `Some(median)` when the median says the vehicle clock is off UTC: then the other figures
    /// measure that offset, not latency.
    pub clock_offset_ns: Option<i64>,
    /// The finest difference the window's samples can show (see the module documentation).
    pub resolution_ns: i64,
}

impl LatencyEstimate {
    /// A figure as latency: `None` when the figures are a clock offset or the figure is under
    /// the resolution (which a negative one within it is).
    pub fn as_latency_ns(&self, figure_ns: i64) -> Option<i64> {
        (self.clock_offset_ns.is_none() && figure_ns >= self.resolution_ns).then_some(figure_ns)
    }

    /// The latency at the 95th percentile for a send window, unless the figures are a clock
    /// offset: never below zero (under the resolution it is as good as none).
    pub fn latency_p95_ns(&self) -> Option<i64> {
        match self.clock_offset_ns {
            Some(_) => None,
            None => Some(self.p95_ns.max(0)),
        }
    }
}

/// When a receipt can have been sent: `[t - clock_error - latency_p95, t + clock_error]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendWindow {
    pub earliest_ns: i64,
    pub latest_ns: i64,
}

/// The send window of a receipt at `t_ns`, given the receiver's clock error and the link's p95
/// latency: a receipt comes after its transmission by the latency, and both ends widen by the
/// clock error.
pub fn send_window(t_ns: i64, clock_error_ns: i64, latency_p95_ns: i64) -> SendWindow {
    SendWindow {
        earliest_ns: t_ns - clock_error_ns - latency_p95_ns,
        latest_ns: t_ns + clock_error_ns,
    }
}

/// One system's SYSTEM_TIME history.
#[derive(Debug, Clone, Default)]
struct SystemClock {
    /// `(recv_utc_ns, latency_ns)`, oldest first.
    samples: VecDeque<(i64, i64)>,
    /// Highest `time_boot_ms` seen since the last reboot.
    boot_ms: Option<u32>,
    /// The vehicle's implied boot instant, `time_unix_usec/1000 - time_boot_ms`, in ms.
    boot_epoch_ms: Option<i64>,
    /// The coarsest receipt-stamp resolution among the window's samples.
    stamp_resolution_ns: i64,
}

/// The SYSTEM_TIME latency estimator. See the module documentation for the rules.
#[derive(Debug, Clone, Default)]
pub struct LatencyEstimator {
    config: LatencyConfig,
    systems: BTreeMap<u8, SystemClock>,
    histograms: BTreeMap<u8, LatencyHistogram>,
}

impl LatencyEstimator {
    pub fn new(config: LatencyConfig) -> Self {
        LatencyEstimator {
            config,
            systems: BTreeMap::new(),
            histograms: BTreeMap::new(),
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &LatencyConfig {
        &self.config
    }

    /// A SYSTEM_TIME from `sysid` was received at `recv_utc_ns`, a stamp recorded to
    /// `resolution_ns` (the receipt happened in `[recv_utc_ns, recv_utc_ns + resolution_ns)`).
    pub fn observe(
        &mut self,
        sysid: u8,
        recv_utc_ns: i64,
        resolution_ns: i64,
        time_unix_usec: u64,
        time_boot_ms: u32,
    ) -> SampleOutcome {
        let resolution_ns = resolution_ns.max(1);
        // The middle of the interval the stamp stands for: taking its start read a loopback
        // latency off a millisecond receive log as -0.4 ms.
        let recv_utc_ns = recv_utc_ns.saturating_add(resolution_ns / 2);
        let config = &self.config;
        let clock = self.systems.entry(sysid).or_default();
        let mut restarted = None;

        let boot_went_back = clock
            .boot_ms
            .is_some_and(|previous| time_boot_ms < previous);
        match clock.boot_ms {
            Some(previous)
                if time_boot_ms.saturating_add(config.reboot_tolerance_ms) < previous =>
            {
                *clock = SystemClock::default();
                restarted = Some(WindowRestart::Reboot);
                clock.boot_ms = Some(time_boot_ms);
            }
            // A copy reordered a little between links must not lower the high-water mark.
            Some(previous) => clock.boot_ms = Some(previous.max(time_boot_ms)),
            None => clock.boot_ms = Some(time_boot_ms),
        }

        if time_unix_usec == 0 {
            return SampleOutcome {
                recorded: false,
                restarted,
            };
        }

        let unix_ms = (time_unix_usec / 1_000).min(i64::MAX as u64) as i64;
        let boot_epoch_ms = unix_ms - i64::from(time_boot_ms);
        if let Some(previous) = clock.boot_epoch_ms {
            let step_ns = i128::from(boot_epoch_ms - previous) * i128::from(NANOS_PER_MILLI);
            if step_ns.abs() > i128::from(config.clock_step_bound_ns) {
                clock.samples.clear();
                let reason = if boot_went_back {
                    // A reboot within the reordering tolerance: start the boot clock afresh too.
                    clock.boot_ms = Some(time_boot_ms);
                    WindowRestart::Reboot
                } else {
                    WindowRestart::VehicleClockStep
                };
                restarted = restarted.or(Some(reason));
            }
        }
        clock.boot_epoch_ms = Some(boot_epoch_ms);

        // i128: a garbage time_unix_usec must saturate, not wrap.
        let latency = i128::from(recv_utc_ns) - i128::from(time_unix_usec) * 1_000;
        let latency_ns = latency.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        if clock.samples.is_empty() {
            clock.stamp_resolution_ns = 0;
        }
        clock.stamp_resolution_ns = clock.stamp_resolution_ns.max(resolution_ns);
        clock.samples.push_back((recv_utc_ns, latency_ns));
        prune(config, clock, recv_utc_ns);
        let sample_resolution_ns = resolution_ns.max(VEHICLE_CLOCK_RESOLUTION_NS);
        if latency_ns <= config.offset_bound_ns && latency_ns >= -sample_resolution_ns {
            self.histograms
                .entry(sysid)
                .or_default()
                .observe(latency_ns.max(0));
        }
        SampleOutcome {
            recorded: true,
            restarted,
        }
    }

    /// `sysid`'s cumulative latency histogram, when it has had a sample within bounds.
    pub fn histogram(&self, sysid: u8) -> Option<&LatencyHistogram> {
        self.histograms.get(&sysid)
    }

    /// The figures of `sysid`'s window as it stands at `now_ns` (samples received within the
    /// window length before `now_ns`), or `None` without samples.
    pub fn estimate(&self, sysid: u8, now_ns: i64) -> Option<LatencyEstimate> {
        let clock = self.systems.get(&sysid)?;
        let oldest_kept = now_ns.saturating_sub(self.config.window_ns);
        let mut latencies: Vec<i64> = clock
            .samples
            .iter()
            .filter(|&&(recv, _)| recv >= oldest_kept)
            .map(|&(_, latency)| latency)
            .collect();
        if latencies.is_empty() {
            return None;
        }
        latencies.sort_unstable();
        let p50_ns = nearest_rank(&latencies, 0.5);
        let resolution_ns = clock.stamp_resolution_ns.max(VEHICLE_CLOCK_RESOLUTION_NS);
        let off_utc = p50_ns > self.config.offset_bound_ns || p50_ns < -resolution_ns;
        Some(LatencyEstimate {
            count: latencies.len(),
            min_ns: latencies[0],
            p50_ns,
            p95_ns: nearest_rank(&latencies, 0.95),
            max_ns: latencies[latencies.len() - 1],
            clock_offset_ns: off_utc.then_some(p50_ns),
            resolution_ns,
        })
    }

    /// One `latency` event per system with samples in its window at `now_ns`, by system id,
    /// stamped `now_ns`, with the receiver's clock status when the caller knows it. Drops samples
    /// that have left the window.
    pub fn report(&mut self, now_ns: i64, clock: Option<ClockStatus>) -> Vec<LatencyEvent> {
        let config = &self.config;
        for system in self.systems.values_mut() {
            prune(config, system, now_ns);
        }
        let sysids: Vec<u8> = self.systems.keys().copied().collect();
        sysids
            .into_iter()
            .filter_map(|sysid| {
                let estimate = self.estimate(sysid, now_ns)?;
                let latency_ms = |ns: i64| estimate.as_latency_ns(ns).map(ns_to_millis);
                let below_resolution = [
                    ("p50_ms", estimate.p50_ns),
                    ("p95_ms", estimate.p95_ns),
                    ("max_ms", estimate.max_ns),
                ]
                .into_iter()
                .filter(|&(_, ns)| {
                    estimate.clock_offset_ns.is_none() && ns < estimate.resolution_ns
                })
                .map(|(name, _)| name.to_string())
                .collect();
                Some(LatencyEvent {
                    utc: UtcTime(now_ns),
                    kind: LatencyKind,
                    sysid,
                    count: estimate.count,
                    p50_ms: latency_ms(estimate.p50_ns),
                    p95_ms: latency_ms(estimate.p95_ns),
                    max_ms: latency_ms(estimate.max_ns),
                    clock_offset_ms: estimate.clock_offset_ns.map(ns_to_millis),
                    resolution_ms: ns_to_millis(estimate.resolution_ns),
                    below_resolution,
                    window_s: ns_to_seconds(self.config.window_ns),
                    synchronised: clock.map(|status| status.synchronised),
                    max_error_us: clock.map(|status| status.max_error_us),
                })
            })
            .collect()
    }

    /// The send window of a receipt from `sysid` at `t_ns` with the current p95 latency, or
    /// `None` while there is no latency figure (no samples, or the vehicle clock is off UTC).
    pub fn send_window(&self, sysid: u8, t_ns: i64, clock_error_ns: i64) -> Option<SendWindow> {
        let p95 = self.estimate(sysid, t_ns)?.latency_p95_ns()?;
        Some(send_window(t_ns, clock_error_ns, p95))
    }
}

/// Drops samples beyond the count limit and older than the window before `now_ns`.
fn prune(config: &LatencyConfig, clock: &mut SystemClock, now_ns: i64) {
    while clock.samples.len() > config.window_max_samples {
        clock.samples.pop_front();
    }
    let oldest_kept = now_ns.saturating_sub(config.window_ns);
    while clock
        .samples
        .front()
        .is_some_and(|&(recv, _)| recv < oldest_kept)
    {
        clock.samples.pop_front();
    }
}

/// Nearest-rank quantile of sorted, non-empty values: `sorted[min(n-1, floor(p*(n-1) + 0.5))]`,
/// computed in `f64` exactly as the Python oracle does so the chosen index always agrees.
fn nearest_rank(sorted: &[i64], p: f64) -> i64 {
    let last = sorted.len() - 1;
    let index = (p * last as f64 + 0.5) as usize;
    sorted[index.min(last)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::utc::parse_utc_ns;

    const MS: i64 = NANOS_PER_MILLI;
    const SECOND: i64 = NANOS_PER_SECOND;
    /// 2021-12-08T14:59:44Z, an arbitrary receive time in the corpus's era.
    const T0: i64 = 1_638_975_584 * SECOND;

    /// Feeds one SYSTEM_TIME a second whose latency (ms) is given, on a steady boot clock.
    fn feed_latencies(estimator: &mut LatencyEstimator, sysid: u8, latencies_ms: &[i64]) -> i64 {
        let mut recv = T0;
        for (k, &latency_ms) in latencies_ms.iter().enumerate() {
            recv = T0 + k as i64 * SECOND;
            let sent_us = (recv - latency_ms * MS) / 1_000;
            let boot_ms = 100_000 + k as u32 * 1_000;
            let seen = estimator.observe(sysid, recv, 1, sent_us as u64, boot_ms);
            assert_eq!(seen.restarted, None, "sample {k}");
        }
        recv
    }

    #[test]
    fn quantiles_are_nearest_rank_like_the_oracle() {
        // A window long enough for 100 samples at 1 Hz.
        let mut estimator = LatencyEstimator::new(LatencyConfig {
            window_ns: 1_000 * SECOND,
            ..LatencyConfig::default()
        });
        // 1..=100 ms, shuffled by a fixed stride so order does not matter.
        let latencies: Vec<i64> = (0..100).map(|k| (k * 37) % 100 + 1).collect();
        let now = feed_latencies(&mut estimator, 1, &latencies);
        let estimate = estimator.estimate(1, now).unwrap();
        // p50: floor(0.5*99 + 0.5) = 50 -> 51 ms; p95: floor(0.95*99 + 0.5) = 94 -> 95 ms.
        assert_eq!(
            (
                estimate.count,
                estimate.min_ns,
                estimate.p50_ns,
                estimate.p95_ns,
                estimate.max_ns
            ),
            (100, MS, 51 * MS, 95 * MS, 100 * MS)
        );
        assert_eq!(estimate.clock_offset_ns, None);

        let mut small = LatencyEstimator::default();
        let now = feed_latencies(&mut small, 2, &[40, 10, 30, 20]);
        let estimate = small.estimate(2, now).unwrap();
        // n=4: p50 index floor(2.0) = 2 -> 30 ms; p95 index floor(3.35) = 3 -> 40 ms.
        assert_eq!((estimate.p50_ns, estimate.p95_ns), (30 * MS, 40 * MS));
    }

    #[test]
    fn the_histogram_counts_samples_within_bounds_and_survives_a_reboot() {
        let mut estimator = LatencyEstimator::default();
        feed_latencies(&mut estimator, 1, &[40, 10, 20]);
        // A sample 3 s late, and one 500 ms early, are clock offsets, not latency.
        for offset_ms in [3_000, -500] {
            let recv = T0 + 5 * SECOND;
            estimator.observe(
                1,
                recv,
                1,
                ((recv - offset_ms * MS) / 1_000) as u64,
                105_000,
            );
        }
        let h = estimator.histogram(1).unwrap().snapshot();
        assert_eq!(h.count, 3);
        assert!((h.sum_s - 0.070).abs() < 1e-9);
        // A reboot empties the window, never the counters.
        let seen = estimator.observe(
            1,
            T0 + 10 * SECOND,
            1,
            ((T0 + 10 * SECOND) / 1_000) as u64 - 30_000,
            5,
        );
        assert_eq!(seen.restarted, Some(WindowRestart::Reboot));
        assert_eq!(estimator.histogram(1).unwrap().count(), 4);
        assert!(estimator.histogram(2).is_none());
    }

    #[test]
    fn report_gives_milliseconds_and_the_receiver_clock_status() {
        let mut estimator = LatencyEstimator::default();
        let now = feed_latencies(&mut estimator, 10, &[60, 70, 66, 115, 64]);
        let clock = ClockStatus {
            synchronised: true,
            max_error_us: 15_000,
        };
        let events = estimator.report(now, Some(clock));
        assert_eq!(events.len(), 1);
        let event = &events[0];
        assert_eq!((event.sysid, event.count), (10, 5));
        assert_eq!(
            (
                event.p50_ms,
                event.p95_ms,
                event.max_ms,
                event.clock_offset_ms
            ),
            (Some(66.0), Some(115.0), Some(115.0), None)
        );
        assert_eq!(event.window_s, 60.0);
        assert_eq!(
            (event.synchronised, event.max_error_us),
            (Some(true), Some(15_000))
        );
        assert_eq!(event.utc, UtcTime(now));
        assert!(estimator.report(now, None)[0].synchronised.is_none());
    }

    #[test]
    fn vehicle_clocks_off_utc_are_reported_as_offset_not_latency() {
        // Offsets seen in the corpus: 4.6 s ahead of receipt, 1,705 s behind, 3 days behind.
        for offset_ms in [4_612, -1_705_798, -261_784_438] {
            let mut estimator = LatencyEstimator::default();
            let now = feed_latencies(&mut estimator, 10, &[offset_ms; 20]);
            let estimate = estimator.estimate(10, now).unwrap();
            assert_eq!(
                estimate.clock_offset_ns,
                Some(offset_ms * MS),
                "{offset_ms} ms"
            );
            assert_eq!(estimate.latency_p95_ns(), None);
            let event = &estimator.report(now, None)[0];
            assert_eq!(event.clock_offset_ms, Some(offset_ms as f64));
            assert_eq!(
                (event.p50_ms, event.p95_ms, event.max_ms),
                (None, None, None)
            );
            assert_eq!(estimator.send_window(10, now, 15 * MS), None);
        }
        // Real latencies stay latency.
        for latency_ms in [412, 1_900] {
            let mut estimator = LatencyEstimator::default();
            let now = feed_latencies(&mut estimator, 10, &[latency_ms; 20]);
            assert_eq!(
                estimator.estimate(10, now).unwrap().clock_offset_ns,
                None,
                "{latency_ms} ms"
            );
        }
        // A message cannot arrive before it was sent: 50 ms early is the clocks disagreeing.
        let mut estimator = LatencyEstimator::default();
        let now = feed_latencies(&mut estimator, 10, &[-50; 20]);
        let event = &estimator.report(now, None)[0];
        assert_eq!(event.clock_offset_ms, Some(-50.0));
        assert_eq!(event.p50_ms, None);
    }

    /// One SYSTEM_TIME a second, sent `latency_us` before it was received at `recv`, stamped
    /// to `resolution_ns` (the stamp is the receipt time rounded down to it).
    fn feed_stamped(
        estimator: &mut LatencyEstimator,
        latencies_us: &[i64],
        resolution_ns: i64,
    ) -> i64 {
        let mut now = T0;
        for (k, &latency_us) in latencies_us.iter().enumerate() {
            // Received 0.9 ms into a millisecond: the worst case for a millisecond stamp.
            let recv = T0 + k as i64 * SECOND + 900_000;
            let stamp = recv - recv.rem_euclid(resolution_ns);
            let sent_us = (recv - latency_us * 1_000) / 1_000;
            estimator.observe(
                1,
                stamp,
                resolution_ns,
                sent_us as u64,
                100_000 + k as u32 * 1_000,
            );
            now = stamp;
        }
        now
    }

    #[test]
    fn a_report_never_shows_a_negative_latency_as_latency() {
        // Loopback: 50 to 300 µs. From nanosecond stamps: the figures, at a microsecond's
        // resolution.
        let latencies_us = [50, 120, 300, 80, 200];
        let mut live = LatencyEstimator::default();
        let now = feed_stamped(&mut live, &latencies_us, 1);
        let event = &live.report(now, None)[0];
        assert_eq!(
            (
                event.p50_ms,
                event.p95_ms,
                event.max_ms,
                event.resolution_ms
            ),
            (Some(0.12), Some(0.3), Some(0.3), 0.001)
        );
        assert!(event.below_resolution.is_empty());
        // From the receive log's whole milliseconds the same traffic reads 0.4 ms low (the
        // stamp's middle, 0.5 ms, against a receipt 0.9 ms in), -0.35 to -0.1 ms: under the
        // resolution, said so, never shown negative, never a clock offset.
        let mut logged = LatencyEstimator::default();
        let now = feed_stamped(&mut logged, &latencies_us, MS);
        let estimate = logged.estimate(1, now).unwrap();
        assert!(estimate.min_ns < 0, "{estimate:?}");
        let event = &logged.report(now, None)[0];
        assert_eq!(
            (
                event.p50_ms,
                event.p95_ms,
                event.max_ms,
                event.clock_offset_ms
            ),
            (None, None, None, None)
        );
        assert_eq!(event.resolution_ms, 1.0);
        assert_eq!(event.below_resolution, ["p50_ms", "p95_ms", "max_ms"]);
        // The live figures and the logged ones agree within the logged resolution.
        assert!((live.estimate(1, now).unwrap().p50_ns - estimate.p50_ns).abs() < MS);
        // A send window never widens by a negative latency.
        assert_eq!(estimate.latency_p95_ns(), Some(estimate.p95_ns.max(0)));
        // The histogram counts them all, none below zero.
        let h = logged.histogram(1).unwrap().snapshot();
        assert_eq!(h.count, 5);
        assert!(h.sum_s >= 0.0);
        // Beyond the resolution, early is a clock offset.
        let mut early = LatencyEstimator::default();
        let now = feed_stamped(&mut early, &[-3_000; 5], MS);
        let event = &early.report(now, None)[0];
        assert!(
            event.clock_offset_ms.is_some_and(|ms| ms < -1.0),
            "{event:?}"
        );
        assert!(event.below_resolution.is_empty());
    }

    #[test]
    fn zero_time_unix_usec_is_skipped() {
        let mut estimator = LatencyEstimator::default();
        let seen = estimator.observe(3, T0, 1, 0, 5_000);
        assert_eq!(
            seen,
            SampleOutcome {
                recorded: false,
                restarted: None
            }
        );
        assert_eq!(estimator.estimate(3, T0), None);
        let sent_us = (T0 - 20 * MS) as u64 / 1_000;
        assert!(estimator.observe(3, T0, 1, sent_us, 6_000).recorded);
        assert!(!estimator.observe(3, T0 + SECOND, 1, 0, 7_000).recorded);
        assert_eq!(estimator.estimate(3, T0 + SECOND).unwrap().count, 1);
        assert!(estimator.report(T0 + SECOND, None).len() == 1);
    }

    #[test]
    fn a_reboot_restarts_the_window() {
        let mut estimator = LatencyEstimator::default();
        let now = feed_latencies(&mut estimator, 1, &[900; 10]);
        assert_eq!(estimator.estimate(1, now).unwrap().count, 10);
        // A copy reordered in delivery (boot time 1.441 s back, as in nodemavlink_vtol.tlog,
        // stamped with the same vehicle clock) is not a reboot.
        let sent_us = (now - 900 * MS - 1_441 * MS) / 1_000;
        let reordered = estimator.observe(1, now + 10 * MS, 1, sent_us as u64, 107_559);
        assert_eq!(reordered.restarted, None);
        assert_eq!(estimator.estimate(1, now + 10 * MS).unwrap().count, 11);
        // time_boot_ms back to 2 s: rebooted; the old 900 ms samples are gone.
        let recv = now + SECOND;
        let sent_us = (recv - 30 * MS) / 1_000;
        let seen = estimator.observe(1, recv, 1, sent_us as u64, 2_000);
        assert_eq!(seen.restarted, Some(WindowRestart::Reboot));
        let estimate = estimator.estimate(1, recv).unwrap();
        assert_eq!((estimate.count, estimate.max_ns), (1, 30 * MS));
    }

    #[test]
    fn a_reboot_after_a_short_uptime_is_caught_by_the_vehicle_clock() {
        let mut estimator = LatencyEstimator::default();
        // Up for 8 s (boot 1..8 s), then reboots and sends boot 2 s: only 6 s back.
        for k in 1..=8u32 {
            let recv = T0 + i64::from(k) * SECOND;
            let sent_us = (recv - 500 * MS) / 1_000;
            assert_eq!(
                estimator
                    .observe(1, recv, 1, sent_us as u64, k * 1_000)
                    .restarted,
                None
            );
        }
        let recv = T0 + 20 * SECOND;
        let sent_us = (recv - 40 * MS) / 1_000;
        let seen = estimator.observe(1, recv, 1, sent_us as u64, 2_000);
        assert_eq!(seen.restarted, Some(WindowRestart::Reboot));
        assert_eq!(estimator.estimate(1, recv).unwrap().max_ns, 40 * MS);
        // The new boot clock runs on without further restarts.
        let recv = T0 + 21 * SECOND;
        let sent_us = (recv - 40 * MS) / 1_000;
        assert_eq!(
            estimator
                .observe(1, recv, 1, sent_us as u64, 3_000)
                .restarted,
            None
        );
        assert_eq!(estimator.estimate(1, recv).unwrap().count, 2);
    }

    #[test]
    fn a_vehicle_clock_step_restarts_the_window() {
        // The vehicle runs 1,705 s behind, then its clock is set (GPS time) without a reboot.
        let mut estimator = LatencyEstimator::default();
        let now = feed_latencies(&mut estimator, 10, &[1_705_798; 10]);
        let recv = now + SECOND;
        let sent_us = (recv - 60 * MS) / 1_000;
        let seen = estimator.observe(10, recv, 1, sent_us as u64, 110_000);
        assert_eq!(seen.restarted, Some(WindowRestart::VehicleClockStep));
        let estimate = estimator.estimate(10, recv).unwrap();
        assert_eq!(
            (estimate.count, estimate.p50_ns, estimate.clock_offset_ns),
            (1, 60 * MS, None)
        );
    }

    #[test]
    fn window_slides_by_count_and_by_time() {
        let config = LatencyConfig {
            window_max_samples: 5,
            window_ns: 4 * SECOND,
            ..LatencyConfig::default()
        };
        let mut estimator = LatencyEstimator::new(config);
        let now = feed_latencies(&mut estimator, 1, &[100, 1, 2, 3, 4, 5, 6]);
        // Samples at 0..=6 s; the last 4 s before 6 s keeps 2..=6 s: latencies 2..=6 ms.
        let estimate = estimator.estimate(1, now).unwrap();
        assert_eq!(
            (estimate.count, estimate.min_ns, estimate.max_ns),
            (5, 2 * MS, 6 * MS)
        );
        // Reporting later, the window at that time holds what was received in the last 4 s.
        let later = estimator.report(now + 3 * SECOND, None);
        assert_eq!(later[0].count, 2);
        assert!(estimator.report(now + 10 * SECOND, None).is_empty());
    }

    #[test]
    fn systems_are_estimated_separately() {
        let mut estimator = LatencyEstimator::default();
        feed_latencies(&mut estimator, 1, &[10, 10, 10]);
        let now = feed_latencies(&mut estimator, 2, &[4_600, 4_600, 4_600]);
        let events = estimator.report(now, None);
        assert_eq!(events.len(), 2);
        assert_eq!((events[0].sysid, events[0].p50_ms), (1, Some(10.0)));
        assert_eq!(
            (events[1].sysid, events[1].clock_offset_ms),
            (2, Some(4_600.0))
        );
    }

    #[test]
    fn send_window_of_the_inc_0142_example() {
        // ±15 ms clock error, 412 ms latency at p95: 14:32:03.485 to 14:32:03.927.
        let t = parse_utc_ns("2026-09-24T14:32:03.912Z").unwrap();
        let window = send_window(t, 15 * MS, 412 * MS);
        assert_eq!(
            window.earliest_ns,
            parse_utc_ns("2026-09-24T14:32:03.485Z").unwrap()
        );
        assert_eq!(
            window.latest_ns,
            parse_utc_ns("2026-09-24T14:32:03.927Z").unwrap()
        );

        let mut estimator = LatencyEstimator::default();
        let now = feed_latencies(&mut estimator, 4, &[412; 5]);
        assert_eq!(
            estimator.send_window(4, now, 15 * MS),
            Some(SendWindow {
                earliest_ns: now - 427 * MS,
                latest_ns: now + 15 * MS
            })
        );
        assert_eq!(
            estimator.send_window(5, now, 15 * MS),
            None,
            "no SYSTEM_TIME from 5"
        );
    }
}
