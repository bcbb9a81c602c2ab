//! Clock anchors: where the vehicle's boot instant lies in UTC, each with its bound, and the
//! cross-check between them. Three sources, each independent of the others:
//!
//! - `gps`: the flight log's GPS anchor (`crate::ulog::gps`, the median of
//!   `time_utc_usec - (timestamp + timestamp_time_relative)`), bounded by its spread (every
//!   fix's offset lies within the spread of the median), and never tighter than
//!   [`GPS_LEAST_BOUND_NS`];
//! - `boot_time_utc_us`: the information key PX4 writes from its own clock, bounded by
//!   [`BOOT_TIME_INFO_BOUND_NS`];
//! - `ground`: a ground record's SYSTEM_TIME receipts of the vehicle ([`fit_ground`]). Each says
//!   the message was sent within `[recv - latency, recv]` on the record's clock, when
//!   `time_boot_ms` read what it says; so the boot instant lies within
//!   `[recv - latency - time_boot, recv - time_boot]` (widened by the stamps' resolution). The
//!   intersection over the receipts bounds the boot instant on the record's clock: the fastest
//!   delivery gives the late side, the receipts within the link's p95 latency the early side
//!   (the latency measured as `recv - time_unix_usec`; without a usable `time_unix_usec`, every
//!   delivery is taken to be under the latency estimator's 2 s bound for a clock offset).
//!   The record's clock error then widens both sides for UTC. Because the boot clock and a ground
//!   clock run at rates that may differ by up to [`DRIFT_PPM`], the intersection is taken for one
//!   moment at a time, each receipt's window widened by the drift since it.
//!
//! Anchors that do not overlap are a [`Conflict`]: reported, never averaged. The used anchor is
//! the tightest that conflicts with none ([`choose`]).
//!
//! Pure: receipts and values in, anchors out; unit-tested with plain numbers.

use super::entry::{format_utc_us, millis_value, seconds_value, MS, SECOND};
use crate::monitor::latency::VEHICLE_CLOCK_RESOLUTION_NS;
use crate::monitor::{LatencyConfig, LatencyEstimator};
use crate::ulog::gps::GpsAnchor;
use crate::ulog::value::Value as UlogValue;
use serde::Serialize;
use serde_json::{Map, Value};

/// The least bound of the GPS anchor. GPS time reaches the flight controller over a serial
/// link, with latency and jitter the spread of a few fixes can understate; the source documents
/// carry ±40 ms on flight logs for that reason (seed "PX4 ULog", "The GPS time anchor").
pub const GPS_LEAST_BOUND_NS: i64 = 40 * MS;
/// The bound of `boot_time_utc_us`: PX4 writes it from its own clock, which its GPS driver sets
/// again only once it is more than 500 ms off GPS time (`SET_CLOCK_DRIFT_TIME_NS` in PX4's
/// `gps` driver). A clock set from a ground station's SYSTEM_TIME instead is as good as that
/// station's clock, which the log does not say.
pub const BOOT_TIME_INFO_BOUND_NS: i64 = 500 * MS;
/// How far the boot clock's rate may differ from a ground clock's, parts per million: two
/// crystal oscillators of ±50 ppm, the common tolerance class of flight-controller and PC clocks.
pub const DRIFT_PPM: i64 = 100;
/// The error of a ground clock whose state no record gives: the largest the Linux kernel
/// reports (its `maxerror` is capped at 16 s, which is also what an unsynchronised clock reads).
pub const UNKNOWN_CLOCK_ERROR_NS: i64 = 16 * SECOND;
/// Receipts of the flight's boot further than this from the flight log's span are left out of a
/// ground fit: they add little (their windows widen by the drift) and cost every placement.
const FIT_MARGIN_NS: i64 = 60 * SECOND;
/// The resolution of `time_boot_ms`.
const BOOT_MS_RESOLUTION_NS: i64 = MS;

/// A closed interval of instants, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub lo: i64,
    pub hi: i64,
}

impl Interval {
    pub fn around(mid: i64, half: i64) -> Interval {
        Interval {
            lo: mid - half,
            hi: mid + half,
        }
    }

    pub fn mid(&self) -> i64 {
        self.lo + (self.hi - self.lo) / 2
    }

    /// Half the width, rounded up, so `mid ± half_width` covers the interval.
    pub fn half_width(&self) -> i64 {
        (self.hi - self.lo + 1) / 2
    }

    pub fn widened(self, by: i64) -> Interval {
        Interval {
            lo: self.lo - by,
            hi: self.hi + by,
        }
    }

    pub fn overlaps(&self, other: &Interval) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }

    pub fn contains(&self, t: i64) -> bool {
        self.lo <= t && t <= self.hi
    }
}

/// Where an anchor comes from (the `source` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum AnchorSource {
    #[serde(rename = "gps")]
    Gps,
    #[serde(rename = "boot_time_utc_us")]
    BootTimeUtc,
    #[serde(rename = "ground")]
    Ground,
}

impl AnchorSource {
    fn words(self) -> &'static str {
        match self {
            AnchorSource::Gps => "GPS anchor",
            AnchorSource::BootTimeUtc => "boot_time_utc_us anchor",
            AnchorSource::Ground => "ground anchor",
        }
    }
}

/// One SYSTEM_TIME receipt of the vehicle, as a ground record stamped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemTimeReceipt {
    /// The record's stamp (its own UTC), nanoseconds.
    pub recv_ns: i64,
    /// How finely the stamp was recorded: the receipt happened within `[recv, recv + resolution)`.
    pub resolution_ns: i64,
    pub time_boot_ms: u32,
    /// The vehicle's UTC when it sent the message (0: none), for the link's latency.
    pub time_unix_usec: u64,
}

/// One receipt's window for the boot instant, on the record's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    boot_ns: i64,
    /// The boot instant is no later than this (the receipt came after the sending).
    latest: i64,
    /// And no earlier than this, when the receipt's latency is within the link's p95.
    earliest: Option<i64>,
}

/// What a ground record's SYSTEM_TIME receipts say of the boot instant on the record's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundFit {
    windows: Vec<Window>,
    /// The record's clock error against UTC (its clock state, or the assumption).
    pub clock_error_ns: i64,
    /// The latency every receipt on the early side is taken to be within.
    pub latency: Latency,
    /// The moment the anchor line states: the median `time_boot_ms` of the receipts used.
    pub reference_boot_ns: i64,
    pub receipts_used: usize,
    /// Of those, the ones within the latency bound, which give the early side.
    pub receipts_early_side: usize,
    /// Receipts left out because they belong to another boot of the vehicle.
    pub receipts_other_boot: usize,
}

/// The latency bound of a ground anchor's early side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latency {
    /// The link's p95 latency over the receipts used (`recv - time_unix_usec`, by the daemon's
    /// latency estimator); only the receipts within it give the early side.
    Measured(i64),
    /// No usable `time_unix_usec`: the estimator's bound for a clock offset (2 s) is taken as
    /// every delivery's upper bound.
    Assumed(i64),
}

impl Latency {
    pub fn bound_ns(self) -> i64 {
        match self {
            Latency::Measured(ns) | Latency::Assumed(ns) => ns,
        }
    }
}

/// Why a ground record gives no anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoGroundFit {
    NoReceipts,
    /// Receipts there are, but none whose `time_boot_ms` falls within the flight log.
    NotDuringFlight {
        receipts: usize,
    },
    /// The receipts' windows do not overlap: a reboot not seen as one, deliveries slower than the
    /// latency figure, or clocks drifting apart faster than allowed.
    Disagree {
        receipts: usize,
        by_ns: i64,
    },
}

/// The boot instant's windows do not overlap at a moment, by this much.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disagreement {
    pub by_ns: i64,
}

/// The most two clocks drift apart over `span_ns` at [`DRIFT_PPM`].
pub fn drift_ns(span_ns: i64) -> i64 {
    (i128::from(span_ns).abs() * i128::from(DRIFT_PPM) / 1_000_000) as i64
}

impl GroundFit {
    /// The boot instant on the record's own clock, for a moment at boot time `boot_ns`: the
    /// intersection of every receipt's window, each widened by the drift between the two clocks
    /// since that receipt.
    pub fn on_record_clock(&self, boot_ns: i64) -> Result<Interval, Disagreement> {
        let mut latest = i64::MAX;
        let mut earliest = i64::MIN;
        for w in &self.windows {
            let drift = drift_ns(w.boot_ns - boot_ns);
            latest = latest.min(w.latest + drift);
            if let Some(e) = w.earliest {
                earliest = earliest.max(e - drift);
            }
        }
        if earliest > latest {
            return Err(Disagreement {
                by_ns: earliest - latest,
            });
        }
        Ok(Interval {
            lo: earliest,
            hi: latest,
        })
    }

    /// The boot instant in UTC for a moment at `boot_ns`: the record's clock error added.
    pub fn utc(&self, boot_ns: i64) -> Result<Interval, Disagreement> {
        self.on_record_clock(boot_ns)
            .map(|i| i.widened(self.clock_error_ns))
    }
}

/// Fits a ground record's SYSTEM_TIME receipts of one vehicle (in the record's order).
/// `flight_boot` is the flight log's span on the boot clock: the receipts of the boot whose
/// `time_boot_ms` falls in it most often are used (a reboot is `time_boot_ms` going back by more
/// than the latency estimator's reboot tolerance).
pub fn fit_ground(
    receipts: &[SystemTimeReceipt],
    flight_boot: Option<(i64, i64)>,
    clock_error_ns: i64,
) -> Result<GroundFit, NoGroundFit> {
    if receipts.is_empty() {
        return Err(NoGroundFit::NoReceipts);
    }
    let config = LatencyConfig::default();
    let boot_ns = |r: &SystemTimeReceipt| i64::from(r.time_boot_ms) * MS;
    let in_flight = |r: &SystemTimeReceipt| {
        flight_boot.is_none_or(|(first, last)| (first..=last).contains(&boot_ns(r)))
    };
    // Split at reboots, then take the boot the flight log belongs to.
    let mut segments: Vec<Vec<SystemTimeReceipt>> = vec![Vec::new()];
    let mut highest: Option<u32> = None;
    for r in receipts {
        if highest.is_some_and(|h| r.time_boot_ms.saturating_add(config.reboot_tolerance_ms) < h) {
            segments.push(Vec::new());
            highest = None;
        }
        highest = Some(highest.map_or(r.time_boot_ms, |h| h.max(r.time_boot_ms)));
        segments.last_mut().expect("one segment").push(*r);
    }
    let (best, in_span) = segments
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s.iter().filter(|r| in_flight(r)).count()))
        .max_by_key(|&(i, n)| (n, std::cmp::Reverse(i)))
        .expect("one segment");
    if in_span == 0 {
        return Err(NoGroundFit::NotDuringFlight {
            receipts: receipts.len(),
        });
    }
    // Of that boot, the receipts near the flight: those further away only widen by the drift.
    let near_flight = |r: &SystemTimeReceipt| {
        flight_boot.is_none_or(|(first, last)| {
            (first - FIT_MARGIN_NS..=last + FIT_MARGIN_NS).contains(&boot_ns(r))
        })
    };
    let used: Vec<SystemTimeReceipt> = segments[best]
        .iter()
        .filter(|r| near_flight(r))
        .copied()
        .collect();
    let other_boot = receipts.len() - segments[best].len();
    let used = &used;

    // The link's latency, by the daemon's own estimator over every receipt used.
    let mut estimator = LatencyEstimator::new(LatencyConfig {
        window_ns: i64::MAX / 4,
        window_max_samples: usize::MAX,
        ..config.clone()
    });
    let received = |r: &SystemTimeReceipt| r.recv_ns + r.resolution_ns / 2;
    for r in used {
        estimator.observe(
            0,
            r.recv_ns,
            r.resolution_ns,
            r.time_unix_usec,
            r.time_boot_ms,
        );
    }
    let last = used.iter().map(received).max().expect("receipts");
    let latest_of = |r: &SystemTimeReceipt| r.recv_ns + r.resolution_ns - boot_ns(r);
    // Without the vehicle's UTC (or with a vehicle clock plainly off the ground's), the latency
    // cannot be measured: every delivery is then taken to be faster than the estimator's own
    // bound for a clock offset (no radio link takes that long).
    let measured_p95 = estimator.estimate(0, last).and_then(|e| e.latency_p95_ns());
    let latency = match measured_p95 {
        Some(p95) => Latency::Measured(p95),
        None => Latency::Assumed(config.offset_bound_ns),
    };
    let windows: Vec<Window> = used
        .iter()
        .map(|r| {
            let covered = match latency {
                Latency::Measured(p95) => {
                    let measured = i128::from(received(r)) - i128::from(r.time_unix_usec) * 1000;
                    // Earlier than minus the stamps' resolution is the two clocks disagreeing,
                    // as the estimator judges it, not a delivery.
                    let resolution = r.resolution_ns.max(VEHICLE_CLOCK_RESOLUTION_NS);
                    r.time_unix_usec != 0
                        && measured >= -i128::from(resolution)
                        && measured <= i128::from(p95)
                }
                Latency::Assumed(_) => true,
            };
            // The true latency is under the measured one plus half the stamp's resolution.
            let latency_bound = latency.bound_ns() + r.resolution_ns / 2;
            Window {
                boot_ns: boot_ns(r),
                latest: latest_of(r),
                earliest: covered
                    .then(|| r.recv_ns - latency_bound - boot_ns(r) - BOOT_MS_RESOLUTION_NS),
            }
        })
        .collect();
    let mut flight_boots: Vec<i64> = used.iter().filter(|r| in_flight(r)).map(boot_ns).collect();
    flight_boots.sort_unstable();
    let fit = GroundFit {
        receipts_used: used.len(),
        receipts_early_side: windows.iter().filter(|w| w.earliest.is_some()).count(),
        receipts_other_boot: other_boot,
        windows,
        clock_error_ns,
        latency,
        reference_boot_ns: flight_boots[flight_boots.len() / 2],
    };
    match fit.on_record_clock(fit.reference_boot_ns) {
        Ok(_) => Ok(fit),
        Err(d) => Err(NoGroundFit::Disagree {
            receipts: used.len(),
            by_ns: d.by_ns,
        }),
    }
}

/// What an anchor knows of the boot instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Estimate {
    Unavailable,
    /// One interval for the whole flight.
    Fixed(Interval),
    /// A ground record's fit, evaluated moment by moment.
    Ground(GroundFit),
}

/// One anchor: its source, what it says and how it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub source: AnchorSource,
    /// Ground anchors: which record (`receiver`, or a `.tlog` path).
    pub record: Option<String>,
    pub estimate: Estimate,
    pub title: String,
}

impl Anchor {
    pub fn is_available(&self) -> bool {
        !matches!(self.estimate, Estimate::Unavailable)
    }

    /// The boot instant in UTC, for a moment at boot time `boot_ns`.
    pub fn boot_at(&self, boot_ns: i64) -> Option<Interval> {
        match &self.estimate {
            Estimate::Unavailable => None,
            Estimate::Fixed(i) => Some(*i),
            Estimate::Ground(fit) => fit.utc(boot_ns).ok(),
        }
    }

    /// The moment the anchor line states and the cross-check compares at.
    pub fn reference_boot_ns(&self) -> Option<i64> {
        match &self.estimate {
            Estimate::Ground(fit) => Some(fit.reference_boot_ns),
            _ => None,
        }
    }

    fn stated(&self) -> Option<Interval> {
        self.boot_at(self.reference_boot_ns().unwrap_or(0))
    }

    /// The anchor's JSON line.
    pub fn to_json(&self, used: bool) -> Value {
        let mut out = Map::new();
        out.insert("kind".into(), "anchor".into());
        out.insert(
            "source".into(),
            serde_json::to_value(self.source).expect("enum"),
        );
        insert_boot(&mut out, "", self.stated());
        out.insert("used".into(), used.into());
        out.insert("title".into(), self.title.clone().into());
        if let Some(record) = &self.record {
            out.insert("record".into(), record.clone().into());
        }
        if let Estimate::Ground(fit) = &self.estimate {
            let own = fit.on_record_clock(fit.reference_boot_ns).ok();
            insert_boot(&mut out, "record_", own);
            out.insert(
                "clock_error_ms".into(),
                millis_value(Some(fit.clock_error_ns)),
            );
            let (key, ns) = match fit.latency {
                Latency::Measured(ns) => ("latency_p95_ms", ns),
                Latency::Assumed(ns) => ("latency_assumed_ms", ns),
            };
            out.insert(key.into(), millis_value(Some(ns)));
            out.insert("receipts".into(), fit.receipts_used.into());
            out.insert(
                "reference_boot_s".into(),
                seconds_value(Some(fit.reference_boot_ns)),
            );
        }
        Value::Object(out)
    }
}

/// The boot's UTC time (`{prefix}boot_utc`, its middle) and its bound (`{prefix}bound_ms`, half
/// its width), null when there is none.
fn insert_boot(out: &mut Map<String, Value>, prefix: &str, boot: Option<Interval>) {
    out.insert(
        format!("{prefix}boot_utc"),
        boot.map_or(Value::Null, |i| format_utc_us(i.mid()).into()),
    );
    out.insert(
        format!("{prefix}bound_ms"),
        millis_value(boot.map(|i| i.half_width())),
    );
}

/// The flight log's GPS anchor, bounded by its spread (at least [`GPS_LEAST_BOUND_NS`]).
pub fn gps_anchor(gps: Option<&GpsAnchor>) -> Anchor {
    let (estimate, title) = match gps.and_then(|g| Some((g, g.boot_offset_us?))) {
        Some((g, offset_us)) => {
            let spread_ns = (g.spread_ms.unwrap_or(0.0) * MS as f64).round() as i64;
            let bound = spread_ns.max(GPS_LEAST_BOUND_NS);
            (
                Estimate::Fixed(Interval::around(offset_us * 1000, bound)),
                format!(
                    "{}, spread {:.1} ms: bound {:.1} ms (the spread, and never under {} ms)",
                    g.title,
                    g.spread_ms.unwrap_or(0.0),
                    bound as f64 / MS as f64,
                    GPS_LEAST_BOUND_NS / MS
                ),
            )
        }
        None => (
            Estimate::Unavailable,
            match gps {
                Some(g) if g.fixes_without_utc > 0 => format!(
                    "No GPS time: {} fixes, all with time_utc_usec 0",
                    g.fixes_without_utc
                ),
                _ => "No GPS time: no GPS fix in the log".to_string(),
            },
        ),
    };
    Anchor {
        source: AnchorSource::Gps,
        record: None,
        estimate,
        title,
    }
}

/// The `boot_time_utc_us` information key, when the log has it (and it is not 0).
pub fn boot_time_info_anchor(value: Option<&UlogValue>) -> Anchor {
    let boot_us = value.and_then(|v| v.as_i64()).filter(|&v| v > 0);
    let (estimate, title) = match boot_us {
        Some(us) => (
            Estimate::Fixed(Interval::around(us * 1000, BOOT_TIME_INFO_BOUND_NS)),
            format!(
                "boot_time_utc_us {us}, from PX4's own clock: bound {} ms (PX4 sets its clock from GPS again only past 500 ms off)",
                BOOT_TIME_INFO_BOUND_NS / MS
            ),
        ),
        None => (
            Estimate::Unavailable,
            "No boot_time_utc_us in the log".to_string(),
        ),
    };
    Anchor {
        source: AnchorSource::BootTimeUtc,
        record: None,
        estimate,
        title,
    }
}

/// A ground record's anchor. `clock` says where its clock error comes from, for the title.
pub fn ground_anchor(
    record: &str,
    sysid: u8,
    fit: Result<GroundFit, NoGroundFit>,
    clock: &str,
) -> Anchor {
    let ms = |ns: i64| ns as f64 / MS as f64;
    let (estimate, title) = match fit {
        Ok(fit) => {
            let own = fit
                .on_record_clock(fit.reference_boot_ns)
                .expect("checked when fitted");
            let latency = match fit.latency {
                Latency::Measured(ns) => format!(
                    "{} within the link's p95 latency of {:.3} ms",
                    fit.receipts_early_side,
                    ms(ns)
                ),
                Latency::Assumed(ns) => format!(
                    "no usable time_unix_usec, so each taken to have come within {:.0} ms, the latency estimator's bound for a clock offset",
                    ms(ns)
                ),
            };
            let title = format!(
                "SYSTEM_TIME of system {sysid}: {} receipts ({latency}{}) put the boot instant within ±{:.3} ms on the clock of the {record}, itself good to ±{:.3} ms ({clock})",
                fit.receipts_used,
                if fit.receipts_other_boot > 0 {
                    format!("; {} receipts of another boot left out", fit.receipts_other_boot)
                } else {
                    String::new()
                },
                ms(own.half_width()),
                ms(fit.clock_error_ns),
            );
            (Estimate::Ground(fit), title)
        }
        Err(why) => (
            Estimate::Unavailable,
            match why {
                NoGroundFit::NoReceipts => {
                    format!("No SYSTEM_TIME receipts of system {sysid} in the {record}")
                }
                NoGroundFit::NotDuringFlight { receipts } => format!(
                    "{receipts} SYSTEM_TIME receipts of system {sysid} in the {record}, none with a time_boot_ms inside the flight log"
                ),
                NoGroundFit::Disagree { receipts, by_ns } => format!(
                    "{receipts} SYSTEM_TIME receipts of system {sysid} in the {record} disagree among themselves by {:.3} ms (a reboot, deliveries slower than the p95 latency, or clocks drifting apart): no anchor from them",
                    ms(by_ns)
                ),
            },
        ),
    };
    Anchor {
        source: AnchorSource::Ground,
        record: Some(record.to_string()),
        estimate,
        title,
    }
}

/// Two anchors that do not overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict {
    pub first: usize,
    pub second: usize,
    /// `first`'s boot instant minus `second`'s.
    pub difference_ns: i64,
    /// The two bounds together: what they may differ by.
    pub allowed_ns: i64,
}

/// Every pair of available anchors whose intervals do not overlap. Ground anchors are compared
/// at their reference moment.
pub fn cross_check(anchors: &[Anchor]) -> Vec<Conflict> {
    let stated: Vec<Option<Interval>> = anchors.iter().map(Anchor::stated).collect();
    let mut out = Vec::new();
    for i in 0..anchors.len() {
        for j in i + 1..anchors.len() {
            let (Some(a), Some(b)) = (stated[i], stated[j]) else {
                continue;
            };
            if !a.overlaps(&b) {
                out.push(Conflict {
                    first: i,
                    second: j,
                    difference_ns: a.mid() - b.mid(),
                    allowed_ns: a.half_width() + b.half_width(),
                });
            }
        }
    }
    out
}

/// The anchor to use: the tightest of those in no conflict; when every one is in a conflict,
/// the flight log's own (GPS, then `boot_time_utc_us`), since a ground clock is the one no other
/// record checks; `None` when there is no anchor at all (elapsed time only).
pub fn choose(anchors: &[Anchor], conflicts: &[Conflict]) -> Option<usize> {
    let in_conflict = |i: usize| conflicts.iter().any(|c| c.first == i || c.second == i);
    let width = |i: usize| anchors[i].stated().map_or(i64::MAX, |s| s.half_width());
    (0..anchors.len())
        .filter(|&i| anchors[i].is_available() && !in_conflict(i))
        .min_by_key(|&i| (width(i), i))
        .or_else(|| {
            [
                AnchorSource::Gps,
                AnchorSource::BootTimeUtc,
                AnchorSource::Ground,
            ]
            .iter()
            .find_map(|source| {
                (0..anchors.len())
                    .find(|&i| anchors[i].source == *source && anchors[i].is_available())
            })
        })
}

/// The conflict's JSON line.
pub fn conflict_json(anchors: &[Anchor], conflict: &Conflict, used: Option<usize>) -> Value {
    let name = |i: usize| {
        let a = &anchors[i];
        match &a.record {
            Some(r) => format!("{} ({r})", a.source.words()),
            None => a.source.words().to_string(),
        }
    };
    let s = |ns: i64| ns as f64 / SECOND as f64;
    let mut out = Map::new();
    out.insert("kind".into(), "anchor_conflict".into());
    for (key, i) in [("first", conflict.first), ("second", conflict.second)] {
        out.insert(
            key.into(),
            serde_json::to_value(anchors[i].source).expect("enum"),
        );
        if let Some(r) = &anchors[i].record {
            out.insert(format!("{key}_record"), r.clone().into());
        }
    }
    out.insert(
        "difference_ms".into(),
        millis_value(Some(conflict.difference_ns)),
    );
    out.insert("allowed_ms".into(), millis_value(Some(conflict.allowed_ns)));
    out.insert(
        "title".into(),
        format!(
            "The {} and the {} disagree by {:.3} s{}, beyond their bounds together ({:.3} s): a wrong log, a wrong system id, a reboot or a bad clock. Not averaged: {}",
            name(conflict.first),
            name(conflict.second),
            s(conflict.difference_ns.abs()),
            match s(conflict.difference_ns.abs()) / 86_400.0 {
                days if days >= 1.0 => format!(" ({days:.1} days)"),
                _ => String::new(),
            },
            s(conflict.allowed_ns),
            match used {
                Some(u) => format!("the {} is used", name(u)),
                None => "no anchor is used".to_string(),
            }
        )
        .into(),
    );
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::parse_utc_ns;

    fn at(text: &str) -> i64 {
        parse_utc_ns(text).unwrap()
    }

    /// A SYSTEM_TIME sent at boot time `boot_ms` from a vehicle that booted at `boot_ns` (on
    /// the ground clock), delivered after `latency_ns`, stamped to the millisecond, with the
    /// vehicle's own UTC `vehicle_off_ns` off the ground clock.
    fn receipt(
        boot_ns: i64,
        boot_ms: u32,
        latency_ns: i64,
        vehicle_off_ns: i64,
    ) -> SystemTimeReceipt {
        let sent = boot_ns + i64::from(boot_ms) * MS;
        let recv = sent + latency_ns;
        SystemTimeReceipt {
            recv_ns: recv - recv.rem_euclid(MS),
            resolution_ns: MS,
            time_boot_ms: boot_ms,
            time_unix_usec: ((sent + vehicle_off_ns) / 1000) as u64,
        }
    }

    #[test]
    fn the_fastest_delivery_bounds_the_late_side_and_the_truth_is_inside() {
        let boot = at("2026-09-24T14:13:11.286Z");
        // One message a second for a minute; latencies from 30 to 450 ms, one of 2 s.
        let latencies: Vec<i64> = (0..60)
            .map(|i| if i == 17 { 2000 } else { 30 + (i * 37 % 421) })
            .collect();
        let receipts: Vec<SystemTimeReceipt> = latencies
            .iter()
            .enumerate()
            .map(|(i, ms)| receipt(boot, 1_000_000 + i as u32 * 1000, ms * MS, 0))
            .collect();
        let fit = fit_ground(&receipts, None, 15 * MS).unwrap();
        assert_eq!(fit.receipts_used, 60);
        // p95 of the measured latencies (the stamps' millisecond taken at its middle).
        let Latency::Measured(p95) = fit.latency else {
            panic!("{:?}", fit.latency)
        };
        assert!(p95 > 400 * MS && p95 < 460 * MS);
        assert!(
            fit.receipts_early_side < 60,
            "the 2 s delivery gives no early side"
        );
        let own = fit.on_record_clock(fit.reference_boot_ns).unwrap();
        assert!(own.contains(boot), "{own:?} should hold {boot}");
        // The late side is within the fastest delivery (30 ms) and the stamp's resolution.
        assert!(own.hi - boot <= 31 * MS + drift_ns(30 * SECOND), "{own:?}");
        // Much tighter than one receipt's window (15 + 15 ms of clock, 450 ms of latency).
        assert!(own.half_width() < 100 * MS);
        let utc = fit.utc(fit.reference_boot_ns).unwrap();
        assert_eq!(utc.lo, own.lo - 15 * MS);
        assert_eq!(utc.hi, own.hi + 15 * MS);
        // Away from the reference the bound grows by the drift allowed.
        let far = fit
            .on_record_clock(fit.reference_boot_ns + 1000 * SECOND)
            .unwrap();
        assert!(far.half_width() > own.half_width());
    }

    #[test]
    fn without_vehicle_utc_every_delivery_is_taken_to_be_under_2_s() {
        let boot = at("2026-09-24T14:13:11.286Z");
        let receipts: Vec<SystemTimeReceipt> = (0..10)
            .map(|i| SystemTimeReceipt {
                time_unix_usec: 0,
                ..receipt(boot, 5000 + i * 1000, (20 + 5 * i64::from(i)) * MS, 0)
            })
            .collect();
        let fit = fit_ground(&receipts, None, 15 * MS).unwrap();
        assert_eq!(fit.latency, Latency::Assumed(2 * SECOND));
        assert_eq!(fit.receipts_early_side, 10);
        let own = fit.on_record_clock(fit.reference_boot_ns).unwrap();
        assert!(own.contains(boot));
        // The late side from the fastest (20 ms), the early side 2 s before the slowest (65 ms).
        assert!(own.hi - boot <= 21 * MS + drift_ns(5 * SECOND));
        assert!(boot - own.lo <= 2 * SECOND - 60 * MS);
        assert_eq!(fit_ground(&[], None, 0), Err(NoGroundFit::NoReceipts));
    }

    #[test]
    fn the_boot_the_flight_log_belongs_to_is_used_after_a_reboot() {
        let first = at("2026-09-24T14:00:00Z");
        let second = first + 3600 * SECOND;
        let mut receipts: Vec<SystemTimeReceipt> = (0..20)
            .map(|i| receipt(first, 100_000 + i * 1000, 40 * MS, 0))
            .collect();
        receipts.extend((0..30).map(|i| receipt(second, 20_000 + i * 1000, 40 * MS, 0)));
        // The flight log spans boot + 15 s to boot + 60 s: the second boot.
        let fit = fit_ground(&receipts, Some((15 * SECOND, 60 * SECOND)), MS).unwrap();
        assert_eq!((fit.receipts_used, fit.receipts_other_boot), (30, 20));
        assert!(fit
            .on_record_clock(fit.reference_boot_ns)
            .unwrap()
            .contains(second));
        // A flight log outside every boot's receipts.
        assert!(matches!(
            fit_ground(&receipts, Some((500 * SECOND, 600 * SECOND)), MS),
            Err(NoGroundFit::NotDuringFlight { receipts: 50 })
        ));
    }

    #[test]
    fn receipts_that_cannot_all_be_true_give_no_anchor() {
        let boot = at("2026-09-24T14:00:00Z");
        // A second system on the same id: its boot clock is 5 s off the first's, and its
        // receipts carry a vehicle clock consistent with their own latency.
        let receipts: Vec<SystemTimeReceipt> = (0..20)
            .flat_map(|i| {
                [
                    receipt(boot, 100_000 + i * 2000, 40 * MS, 0),
                    receipt(boot + 5 * SECOND, 101_000 + i * 2000, 40 * MS, 0),
                ]
            })
            .collect();
        assert!(matches!(
            fit_ground(&receipts, None, MS),
            Err(NoGroundFit::Disagree { receipts: 40, .. })
        ));
    }

    fn fixed(source: AnchorSource, mid: i64, half: i64) -> Anchor {
        Anchor {
            source,
            record: None,
            estimate: Estimate::Fixed(Interval::around(mid, half)),
            title: String::new(),
        }
    }

    #[test]
    fn a_clock_30_s_off_is_a_conflict_and_the_flight_logs_anchor_is_used() {
        let boot = at("2026-09-24T14:13:11.286Z");
        let gps = fixed(AnchorSource::Gps, boot, 40 * MS);
        let receipts: Vec<SystemTimeReceipt> = (0..30)
            .map(|i| receipt(boot + 30 * SECOND, 10_000 + i * 1000, 50 * MS, 0))
            .collect();
        let fit = fit_ground(&receipts, None, 15 * MS).unwrap();
        let ground = ground_anchor("receiver", 4, Ok(fit), "its events");
        let anchors = vec![gps, boot_time_info_anchor(None), ground];
        let conflicts = cross_check(&anchors);
        assert_eq!(conflicts.len(), 1);
        let c = conflicts[0];
        assert_eq!((c.first, c.second), (0, 2));
        assert!((c.difference_ns + 30 * SECOND).abs() < 60 * MS, "{c:?}");
        assert_eq!(choose(&anchors, &conflicts), Some(0));
        let line = conflict_json(&anchors, &c, Some(0));
        assert_eq!(line["kind"], "anchor_conflict");
        assert_eq!(line["second_record"], "receiver");
        assert!(line["title"].as_str().unwrap().contains("disagree by 30.0"));
    }

    /// The worked example of `docs/sortie.md`: five SYSTEM_TIME receipts of R-0931's vehicle
    /// (boot 14:13:11.286), delivered in 12 to 410 ms, on a receiver good to ±15 ms.
    #[test]
    fn docs_worked_example_of_the_ground_anchor() {
        let boot = at("2026-09-24T14:13:11.286Z");
        let sent = [
            (1_100_000, 12),
            (1_101_000, 230),
            (1_102_000, 40),
            (1_103_000, 95),
            (1_104_000, 410),
        ];
        let receipts: Vec<SystemTimeReceipt> = sent
            .iter()
            .map(|&(boot_ms, latency_ms)| receipt(boot, boot_ms, latency_ms * MS, 0))
            .collect();
        assert_eq!(receipts[0].recv_ns, at("2026-09-24T14:31:31.298Z"));
        let fit = fit_ground(&receipts, None, 15 * MS).unwrap();
        assert_eq!(fit.latency, Latency::Measured(410 * MS + MS / 2));
        assert_eq!(fit.receipts_early_side, 5);
        // At the receipts' median moment (boot + 1102 s) on the receiver's clock:
        let own = fit.on_record_clock(fit.reference_boot_ns).unwrap();
        assert_eq!(fit.reference_boot_ns, 1_102 * SECOND);
        assert_eq!(
            own.hi - boot,
            13_200_000,
            "12 ms, 1 ms of stamp, 0.2 ms of drift"
        );
        // The 410 ms delivery, less the p95 latency (410.5 ms measured, the stamp's millisecond
        // taken at its middle), half the stamp's millisecond, time_boot_ms's millisecond.
        assert_eq!(boot - own.lo, 2_200_000, "2 ms, 0.2 ms of drift");
        assert_eq!(own.half_width(), 7_700_000);
        assert_eq!(
            fit.utc(fit.reference_boot_ns).unwrap().half_width(),
            22_700_000
        );
        // At the gap of INC-0142 (boot + 1132.6 s), 30 s on: the drift allowed widens it.
        let later = fit.on_record_clock(1_132_626 * MS).unwrap();
        assert_eq!(later.hi - boot, 16_262_600);
        assert_eq!(boot - later.lo, 4_862_600);
        assert_eq!(later.half_width(), 10_562_600);
        // The last heartbeat (stamped 14:32:03.912, so within that millisecond) on the boot
        // clock, and the obstacle_distance stall at boot + 1132.793 s after it.
        let heartbeat = at("2026-09-24T14:32:03.912Z") + MS / 2 - later.mid();
        assert_eq!(heartbeat, 1_132_620_800_000);
        assert_eq!(1_132_793_000_000 - heartbeat, 172_200_000);
    }

    #[test]
    fn anchors_that_agree_give_the_tightest_and_none_gives_elapsed_time_only() {
        let boot = at("2026-09-24T14:13:11.286Z");
        let anchors = vec![
            fixed(AnchorSource::Gps, boot + 10 * MS, 40 * MS),
            fixed(AnchorSource::BootTimeUtc, boot - 200 * MS, 500 * MS),
        ];
        let conflicts = cross_check(&anchors);
        assert!(conflicts.is_empty());
        assert_eq!(choose(&anchors, &conflicts), Some(0));
        let none = vec![gps_anchor(None), boot_time_info_anchor(None)];
        assert_eq!(choose(&none, &cross_check(&none)), None);
        assert_eq!(none[0].to_json(false)["boot_utc"], Value::Null);
    }

    #[test]
    fn the_gps_anchor_is_bounded_by_its_spread_and_never_under_40_ms() {
        let boot_us = at("2026-09-24T14:13:11.286Z") / 1000;
        let mut gps = GpsAnchor {
            title: "GPS time from sensor_gps, 1,081 fixes".into(),
            source: Some("sensor_gps".into()),
            multi_id: Some(0),
            fixes_used: 1081,
            fixes_without_utc: 0,
            boot_offset_us: Some(boot_us),
            spread_ms: Some(12.0),
            boot_utc: None,
        };
        let line = gps_anchor(Some(&gps)).to_json(true);
        assert_eq!(line["boot_utc"], "2026-09-24T14:13:11.286000Z");
        assert_eq!(line["bound_ms"], 40.0);
        assert_eq!(line["used"], true);
        gps.spread_ms = Some(49.8);
        assert_eq!(gps_anchor(Some(&gps)).to_json(true)["bound_ms"], 49.8);
        let info = boot_time_info_anchor(Some(&UlogValue::UInt(boot_us as u64)));
        assert_eq!(info.to_json(false)["bound_ms"], 500.0);
    }
}
