//! The telemetry_gap detector: per MAVLink system id, across all links, it notices when no
//! HEARTBEAT has been received for more than the threshold (default 3 s) and says so.
//!
//! It has no clock and no I/O. The caller tells it of each HEARTBEAT receipt
//! ([`GapDetector::on_heartbeat`]), asks when something next falls due
//! ([`GapDetector::next_deadline`]) and asks what is due at a given time ([`GapDetector::poll`]).
//! Every call returns the events it produced; the caller writes them. The live daemon sleeps
//! until the next deadline and polls, so an `open` alert is raised when the deadline passes, not
//! when the next heartbeat happens to arrive. Offline, a receipt that ends a gap nobody polled
//! for returns the `open` and then the `closed`, so replaying a recording gives the same findings,
//! with the same times, as the live daemon gave. To get them in the live order too (one system's
//! `open` before another's `closed`), `analyze` calls `poll(t)` before feeding each receipt
//! stamped `t`, and `poll(end)` at the last record so a gap still open at the end is reported.
//!
//! Rules, in the words of the product: a gap is two consecutive HEARTBEATs from one system id
//! more than the threshold apart (strictly more: exactly 3 s is not a gap). The finding sits
//! where the next heartbeat was due, one expected interval after the last receipt.
//!
//! Decisions worth knowing:
//! - An expected vehicle (config `vehicles`) that has not been heard since the detector started
//!   is silent from the start: it opens a gap at start + threshold, with `last_recv_utc: null`
//!   and `due_utc` one expected interval after the start; its first heartbeat closes it with
//!   `gap_s` counted from the start.
//! - Ignored system ids are not tracked at all, even when also listed as expected vehicles.
//! - The expected interval is the median of the last spacings between heartbeats of the system
//!   *on the same link* (so one heartbeat heard on two links a few ms apart does not teach a
//!   few-ms interval); spacings above the threshold are gaps, not cadence, and are not learned.
//!   Until enough spacings are known the default (1 s) is used; the result is clamped to
//!   `[min_interval, threshold]`.
//! - Consecutive means in arrival order, as the rule and the corpus oracle read a record: each
//!   receipt becomes the system's last, even when its stamp is older than the previous one (a
//!   timestamp race between link tasks, or the receiving clock stepped back, as in
//!   `olivieri_20211208-151717.tlog` where the ground clock goes back twice). A negative spacing
//!   is never a gap. Measuring from the newest stamp instead would, after a clock step back, leave
//!   the system unwatched until the clock caught up. When such a receipt closes a gap already
//!   reported open, the gap's length is unknown: the `closed` event has `gap_s` and `title` null.
//! - For live and offline findings to match exactly, feed the same times that the receive log
//!   records (`recv_utc` is written to the millisecond), and feed every receipt stamped at or
//!   before `now` before calling `poll(now)`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::event::{GapEvent, GapState, TelemetryGapKind};
use super::title::{gap_title, withdrawn_title, OBSERVED};
use crate::utc::{ns_to_seconds, seconds_to_ns, UtcTime, NANOS_PER_SECOND};

/// Settings of the gap detector (config section `[gap]` plus tuning with sensible defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct GapConfig {
    /// A gap is a silence strictly longer than this (config `threshold_s`, default 3 s).
    pub threshold_ns: i64,
    /// System ids never tracked or alerted on (config `ignore_sysids`, e.g. a GCS's 255).
    pub ignore_sysids: BTreeSet<u8>,
    /// Expected vehicles, system id to name (config `vehicles`): names go into events, and an
    /// expected vehicle never heard since start is flagged.
    pub vehicles: BTreeMap<u8, String>,
    /// How many recent heartbeat spacings the expected interval is the median of (default 16).
    pub interval_window: usize,
    /// Spacings needed before the learned interval replaces the default (default 3).
    pub interval_min_samples: usize,
    /// The expected interval before enough spacings are known (default 1 s, MAVLink's usual rate).
    pub default_interval_ns: i64,
    /// The learned interval is never reported below this (default 50 ms).
    pub min_interval_ns: i64,
    /// Per vehicle, its own threshold (config `thresholds`): a HIGH_LATENCY2 vehicle beats far
    /// more slowly than 1 Hz. It replaces every other threshold for that vehicle's own gaps.
    pub vehicle_thresholds_ns: BTreeMap<u8, i64>,
    /// Per link name, the link's own threshold (config `[[link]] gap_threshold_s`, a satellite
    /// link): a vehicle heard on it is judged by the longest threshold of its links.
    pub link_thresholds_ns: BTreeMap<String, i64>,
}

impl Default for GapConfig {
    fn default() -> Self {
        GapConfig {
            threshold_ns: 3 * NANOS_PER_SECOND,
            ignore_sysids: BTreeSet::new(),
            vehicles: BTreeMap::new(),
            interval_window: 16,
            interval_min_samples: 3,
            default_interval_ns: NANOS_PER_SECOND,
            min_interval_ns: 50_000_000,
            vehicle_thresholds_ns: BTreeMap::new(),
            link_thresholds_ns: BTreeMap::new(),
        }
    }
}

impl GapConfig {
    /// The threshold of `sysid`'s telemetry_gap when heard on `links`: its own, or the longest
    /// of the threshold and its links' own.
    pub fn vehicle_threshold_ns<'a>(
        &self,
        sysid: u8,
        links: impl Iterator<Item = &'a String>,
    ) -> i64 {
        if let Some(&own) = self.vehicle_thresholds_ns.get(&sysid) {
            return own;
        }
        links
            .filter_map(|l| self.link_thresholds_ns.get(l).copied())
            .fold(self.threshold_ns, i64::max)
    }

    /// The threshold of `sysid`'s silence on one link (its link_gap): the vehicle's own (or
    /// the threshold), or the link's own when that is longer.
    pub fn link_threshold_ns(&self, sysid: u8, link: &str) -> i64 {
        let vehicle = self
            .vehicle_thresholds_ns
            .get(&sysid)
            .copied()
            .unwrap_or(self.threshold_ns);
        self.link_thresholds_ns
            .get(link)
            .map_or(vehicle, |&own| own.max(vehicle))
    }

    /// The defaults with the threshold given in seconds, as the config file states it.
    pub fn with_threshold_s(threshold_s: f64) -> Self {
        GapConfig {
            threshold_ns: seconds_to_ns(threshold_s),
            ..GapConfig::default()
        }
    }
}

/// What the detector knows about one system, for the `status` verb and `/status`.
#[derive(Debug, Clone, PartialEq)]
pub struct VehicleStatus {
    pub sysid: u8,
    pub name: Option<String>,
    /// Last HEARTBEAT receipt, `None` for an expected vehicle not heard yet.
    pub last_recv_ns: Option<i64>,
    /// Links heard on, sorted.
    pub links: Vec<String>,
    /// The expected interval currently learned.
    pub expected_interval_ns: i64,
    /// The open gap, if one is open.
    pub open_gap: Option<GapEvent>,
    /// The silence that is a gap for it.
    pub threshold_ns: i64,
}

/// One system's heartbeat history, as much as the rules need.
#[derive(Debug, Clone, Default)]
struct SystemState {
    /// Last HEARTBEAT receipt; `None` while an expected vehicle has not been heard.
    last_recv_ns: Option<i64>,
    /// The instant the current silence counts from: the last receipt, or the detector's start
    /// for an expected vehicle not heard yet.
    silent_since_ns: i64,
    /// Every link the system was heard on, with its last receipt there (for per-link spacing).
    last_recv_by_link: BTreeMap<String, i64>,
    /// Recent per-link spacings, newest last.
    spacings_ns: VecDeque<i64>,
    /// The `open` event already emitted for the current silence, if any.
    open_gap: Option<GapEvent>,
    /// This system's threshold (see [`GapConfig::vehicle_threshold_ns`]), as of its links.
    threshold_ns: i64,
}

/// The telemetry_gap detector. See the module documentation for the rules.
#[derive(Debug, Clone)]
pub struct GapDetector {
    config: GapConfig,
    systems: BTreeMap<u8, SystemState>,
}

impl GapDetector {
    /// A detector started at `start_utc_ns`: expected vehicles are silent from then on.
    pub fn new(config: GapConfig, start_utc_ns: i64) -> Self {
        let systems = config
            .vehicles
            .keys()
            .filter(|sysid| !config.ignore_sysids.contains(sysid))
            .map(|&sysid| {
                let state = SystemState {
                    silent_since_ns: start_utc_ns,
                    threshold_ns: config.vehicle_threshold_ns(sysid, std::iter::empty()),
                    ..SystemState::default()
                };
                (sysid, state)
            })
            .collect();
        GapDetector { config, systems }
    }

    /// The settings in use.
    pub fn config(&self) -> &GapConfig {
        &self.config
    }

    /// A HEARTBEAT from `sysid` was received on `link` at `recv_utc_ns`. Returns the events it
    /// settles: nothing in the usual case; `closed` when it ends a gap already reported open;
    /// `open` then `closed` when it ends a gap longer than the threshold that no `poll` reported.
    pub fn on_heartbeat(&mut self, sysid: u8, link: &str, recv_utc_ns: i64) -> Vec<GapEvent> {
        if self.config.ignore_sysids.contains(&sysid) {
            return Vec::new();
        }
        let config = &self.config;
        let state = self.systems.entry(sysid).or_insert_with(|| SystemState {
            silent_since_ns: recv_utc_ns,
            ..SystemState::default()
        });
        if !state.last_recv_by_link.contains_key(link) || state.threshold_ns == 0 {
            let links = state
                .last_recv_by_link
                .keys()
                .chain(std::iter::once(&link.to_string()))
                .cloned()
                .collect::<Vec<_>>();
            state.threshold_ns = config.vehicle_threshold_ns(sysid, links.iter());
        }

        let mut events = Vec::new();
        // A system first heard just now starts with no silence; an expected one counts from start.
        let is_gap = recv_utc_ns - state.silent_since_ns > state.threshold_ns;
        // An open already reported must be closed even if this receipt is, by its stamp, inside
        // the threshold (it was stamped before the poll but reached us after it).
        if state.open_gap.is_some() || is_gap {
            let open = match state.open_gap.take() {
                Some(open) => open,
                None => {
                    let open = open_event(config, sysid, state);
                    events.push(open.clone());
                    open
                }
            };
            learn_link(config, state, link, recv_utc_ns);
            events.push(closed_event(open, state, recv_utc_ns, state.threshold_ns));
        } else {
            learn_link(config, state, link, recv_utc_ns);
        }
        state.last_recv_ns = Some(recv_utc_ns);
        state.silent_since_ns = recv_utc_ns;
        events
    }

    /// The earliest instant at which [`poll`](Self::poll) would report a new gap, or `None` when
    /// no system is being watched or every watched system already has its gap reported open.
    pub fn next_deadline(&self) -> Option<i64> {
        self.systems
            .values()
            .filter(|state| state.open_gap.is_none())
            .map(|state| self.deadline(state))
            .min()
    }

    /// Reports, as `open` events, every silence that has become longer than the threshold at
    /// `now_ns` and was not yet reported; each silence is reported once. Events are ordered by
    /// when they fell due, then by system id. Each event's `utc` is when it fell due, not `now`.
    pub fn poll(&mut self, now_ns: i64) -> Vec<GapEvent> {
        let mut due: Vec<(i64, u8)> = self
            .systems
            .iter()
            .filter(|(_, state)| state.open_gap.is_none())
            .map(|(&sysid, state)| (self.deadline(state), sysid))
            .filter(|&(deadline, _)| deadline <= now_ns)
            .collect();
        due.sort_unstable();
        let mut events = Vec::with_capacity(due.len());
        for (_, sysid) in due {
            let config = &self.config;
            if let Some(state) = self.systems.get_mut(&sysid) {
                let open = open_event(config, sysid, state);
                state.open_gap = Some(open.clone());
                events.push(open);
            }
        }
        events
    }

    /// The expected heartbeat interval of `sysid` now, and its last heartbeat.
    pub fn cadence(&self, sysid: u8) -> Option<(i64, Option<i64>)> {
        self.systems.get(&sysid).map(|state| {
            (
                expected_interval_ns(&self.config, state),
                state.last_recv_ns,
            )
        })
    }

    /// The gaps currently reported open, by system id.
    pub fn open_gaps(&self) -> Vec<&GapEvent> {
        self.systems
            .values()
            .filter_map(|state| state.open_gap.as_ref())
            .collect()
    }

    /// Every tracked system (heard, or expected), by system id.
    pub fn vehicles(&self) -> Vec<VehicleStatus> {
        self.systems
            .iter()
            .map(|(&sysid, state)| VehicleStatus {
                sysid,
                name: self.config.vehicles.get(&sysid).cloned(),
                last_recv_ns: state.last_recv_ns,
                links: state.last_recv_by_link.keys().cloned().collect(),
                expected_interval_ns: expected_interval_ns(&self.config, state),
                open_gap: state.open_gap.clone(),
                threshold_ns: if state.threshold_ns > 0 {
                    state.threshold_ns
                } else {
                    self.config.threshold_ns
                },
            })
            .collect()
    }

    /// The first instant at which the system's silence is strictly longer than the threshold.
    fn deadline(&self, state: &SystemState) -> i64 {
        state
            .silent_since_ns
            .saturating_add(state.threshold_ns)
            .saturating_add(1)
    }
}

/// Records a receipt on `link` and learns the spacing since the previous receipt on that link.
fn learn_link(config: &GapConfig, state: &mut SystemState, link: &str, recv_utc_ns: i64) {
    // The name is copied only the first time a system is heard on a link, not per heartbeat.
    let previous = match state.last_recv_by_link.get_mut(link) {
        Some(last) => Some(std::mem::replace(last, recv_utc_ns)),
        None => {
            state
                .last_recv_by_link
                .insert(link.to_string(), recv_utc_ns);
            None
        }
    };
    if let Some(previous) = previous {
        let spacing = recv_utc_ns - previous;
        // Zero is a duplicate stamp; above the threshold is a gap (on this link at least).
        if spacing > 0 && spacing <= state.threshold_ns && config.interval_window > 0 {
            if state.spacings_ns.len() == config.interval_window {
                state.spacings_ns.pop_front();
            }
            state.spacings_ns.push_back(spacing);
        }
    }
}

/// The median recent spacing, or the default before enough are known, clamped to
/// `[min_interval, threshold]`.
fn expected_interval_ns(config: &GapConfig, state: &SystemState) -> i64 {
    let learned = if state.spacings_ns.len() >= config.interval_min_samples.max(1) {
        let mut sorted: Vec<i64> = state.spacings_ns.iter().copied().collect();
        sorted.sort_unstable();
        // Upper median for an even count: one rule for every count, no averaging.
        sorted[sorted.len() / 2]
    } else {
        config.default_interval_ns
    };
    learned.clamp(
        config.min_interval_ns.min(state.threshold_ns),
        state.threshold_ns,
    )
}

/// The `open` event for the system's current silence, timed at the instant it fell due.
fn open_event(config: &GapConfig, sysid: u8, state: &SystemState) -> GapEvent {
    let interval_ns = expected_interval_ns(config, state);
    let fell_due_ns = state
        .silent_since_ns
        .saturating_add(state.threshold_ns)
        .saturating_add(1);
    GapEvent {
        utc: UtcTime(fell_due_ns),
        kind: TelemetryGapKind,
        sysid,
        state: GapState::Open,
        last_recv_utc: state.last_recv_ns.map(UtcTime),
        due_utc: UtcTime(state.silent_since_ns.saturating_add(interval_ns)),
        next_recv_utc: None,
        gap_s: None,
        title: None,
        observed: OBSERVED.to_string(),
        links: state.last_recv_by_link.keys().cloned().collect(),
        name: config.vehicles.get(&sysid).cloned(),
        expected_interval_s: ns_to_seconds(interval_ns),
        threshold_s: ns_to_seconds(state.threshold_ns),
        receiver_dropped: None,
        withdrawn: None,
        radio: Vec::new(),
    }
}

/// The `closed` event: the `open` event's facts plus the heartbeat that ended the silence.
/// A closing heartbeat stamped inside the threshold withdraws the `open` instead: the silence
/// was never a gap, and the close says so rather than report a gap shorter than its threshold.
fn closed_event(
    open: GapEvent,
    state: &SystemState,
    next_recv_ns: i64,
    threshold_ns: i64,
) -> GapEvent {
    // Negative only when the closing receipt is stamped before the last one (the receiving clock
    // stepped back): then the length of the gap is unknown, and no figure is better than a wrong one.
    let gap_ns = Some(next_recv_ns - state.silent_since_ns).filter(|&gap| gap >= 0);
    let withdrawn = gap_ns.is_some_and(|gap| gap <= threshold_ns);
    GapEvent {
        utc: UtcTime(next_recv_ns),
        state: GapState::Closed,
        next_recv_utc: Some(UtcTime(next_recv_ns)),
        gap_s: gap_ns.map(ns_to_seconds),
        title: gap_ns.map(|gap| {
            if withdrawn {
                withdrawn_title(gap, threshold_ns)
            } else {
                gap_title(gap)
            }
        }),
        withdrawn: withdrawn.then_some(true),
        // Links as of the close, so the link that brought the system back is listed.
        links: state.last_recv_by_link.keys().cloned().collect(),
        ..open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::utc::parse_utc_ns;

    const SECOND: i64 = NANOS_PER_SECOND;
    const MS: i64 = 1_000_000;
    /// An arbitrary start: 2026-09-24T14:32:00Z.
    const T0: i64 = 1_790_260_320 * SECOND;

    fn detector() -> GapDetector {
        GapDetector::new(GapConfig::default(), T0)
    }

    /// Feeds heartbeats at `T0 + seconds` for each entry.
    fn feed(detector: &mut GapDetector, sysid: u8, link: &str, seconds: &[i64]) -> Vec<GapEvent> {
        seconds
            .iter()
            .flat_map(|&s| detector.on_heartbeat(sysid, link, T0 + s * SECOND))
            .collect()
    }

    /// What the live daemon does: before each receipt, sleep until every deadline up to the
    /// receipt's time and poll there; then feed the receipt.
    fn replay_live(detector: &mut GapDetector, receipts: &[(u8, &str, i64)]) -> Vec<GapEvent> {
        let mut events = Vec::new();
        for &(sysid, link, at) in receipts {
            while let Some(deadline) = detector.next_deadline().filter(|&d| d <= at) {
                events.extend(detector.poll(deadline));
            }
            events.extend(detector.on_heartbeat(sysid, link, at));
        }
        events
    }

    /// What `analyze` does: receipts only, no polls.
    fn replay_offline(detector: &mut GapDetector, receipts: &[(u8, &str, i64)]) -> Vec<GapEvent> {
        receipts
            .iter()
            .flat_map(|&(sysid, link, at)| detector.on_heartbeat(sysid, link, at))
            .collect()
    }

    #[test]
    fn gap_opens_when_its_deadline_passes_once_and_closes_with_the_gap() {
        let mut gaps = detector();
        assert!(feed(&mut gaps, 4, "radio1", &[0, 1, 2, 3, 4]).is_empty());
        let deadline = gaps.next_deadline().unwrap();
        assert_eq!(deadline, T0 + 7 * SECOND + 1);

        assert!(
            gaps.poll(deadline - 1).is_empty(),
            "exactly 3 s is not a gap"
        );
        let opened = gaps.poll(deadline);
        assert_eq!(opened.len(), 1);
        let open = &opened[0];
        assert_eq!(open.state, GapState::Open);
        assert_eq!(open.sysid, 4);
        assert_eq!(open.utc, UtcTime(deadline));
        assert_eq!(open.last_recv_utc, Some(UtcTime(T0 + 4 * SECOND)));
        assert_eq!(open.due_utc, UtcTime(T0 + 5 * SECOND));
        assert_eq!(open.expected_interval_s, 1.0);
        assert_eq!(open.threshold_s, 3.0);
        assert_eq!(open.links, vec!["radio1".to_string()]);
        assert_eq!(open.observed, OBSERVED);
        assert!(open.next_recv_utc.is_none() && open.gap_s.is_none() && open.title.is_none());

        assert!(gaps.poll(deadline).is_empty(), "reported once");
        assert!(
            gaps.poll(deadline + 60 * SECOND).is_empty(),
            "and only once"
        );
        assert_eq!(gaps.next_deadline(), None, "nothing left to wait for");
        assert_eq!(gaps.open_gaps().len(), 1);

        let next = T0 + 4 * SECOND + 6_962 * MS;
        let closed = gaps.on_heartbeat(4, "radio1", next);
        assert_eq!(closed.len(), 1);
        let closed = &closed[0];
        assert_eq!(closed.state, GapState::Closed);
        assert_eq!(closed.utc, UtcTime(next));
        assert_eq!(closed.next_recv_utc, Some(UtcTime(next)));
        assert_eq!(closed.gap_s, Some(6.962));
        assert_eq!(
            closed.title.as_deref(),
            Some("Heartbeat due and not received. Nothing for 6.96 s")
        );
        assert_eq!(closed.last_recv_utc, open.last_recv_utc);
        assert_eq!(closed.due_utc, open.due_utc);
        assert_eq!(closed.observed, OBSERVED);
        assert!(gaps.open_gaps().is_empty());
        assert_eq!(gaps.next_deadline(), Some(next + 3 * SECOND + 1));
    }

    #[test]
    fn design_worked_examples_close_with_their_titles_offline() {
        for (last, next, title) in [
            (
                "2026-09-24T14:32:03.912Z",
                "2026-09-24T14:32:10.874Z",
                "6.96 s",
            ),
            (
                "2026-09-24T15:41:02.713Z",
                "2026-09-24T15:41:33.689Z",
                "31.0 s",
            ),
        ] {
            let (last, next) = (parse_utc_ns(last).unwrap(), parse_utc_ns(next).unwrap());
            let mut gaps = GapDetector::new(GapConfig::default(), last - 10 * SECOND);
            assert!(gaps.on_heartbeat(4, "radio1", last).is_empty());
            let events = gaps.on_heartbeat(4, "radio1", next);
            let states: Vec<GapState> = events.iter().map(|e| e.state).collect();
            assert_eq!(states, [GapState::Open, GapState::Closed]);
            assert_eq!(
                events[1].title.as_deref(),
                Some(format!("Heartbeat due and not received. Nothing for {title}").as_str())
            );
        }
    }

    /// A slow-beating vehicle with its own threshold, and one heard on a satellite link with
    /// the link's own: each judged by its own, the rest by the default.
    #[test]
    fn a_vehicle_or_a_link_with_its_own_threshold_is_judged_by_it() {
        let mut config = GapConfig::default();
        config.vehicle_thresholds_ns.insert(22, 60 * SECOND);
        config
            .link_thresholds_ns
            .insert("satcom".to_string(), 120 * SECOND);
        let mut gaps = GapDetector::new(config, T0);
        // 22 beats every 30 s; 4 is heard on the satellite link every 90 s; 5 once, then silent.
        let mut events = Vec::new();
        for s in (0..=180).step_by(30) {
            events.extend(gaps.poll(T0 + s * SECOND));
            events.extend(gaps.on_heartbeat(22, "radio1", T0 + s * SECOND));
            if s % 90 == 0 {
                events.extend(gaps.on_heartbeat(4, "satcom", T0 + s * SECOND));
            }
            if s == 0 {
                events.extend(gaps.on_heartbeat(5, "radio1", T0 + s * SECOND));
            }
        }
        let gapped: Vec<(u8, f64)> = events.iter().map(|e| (e.sysid, e.threshold_s)).collect();
        assert_eq!(gapped, [(5, 3.0)], "{events:?}");
        let vehicles = gaps.vehicles();
        let threshold = |sysid: u8| {
            vehicles
                .iter()
                .find(|v| v.sysid == sysid)
                .map(|v| v.threshold_ns)
        };
        assert_eq!(threshold(22), Some(60 * SECOND));
        assert_eq!(threshold(4), Some(120 * SECOND));
        assert_eq!(threshold(5), Some(3 * SECOND));
    }

    #[test]
    fn silence_of_exactly_the_threshold_is_not_a_gap() {
        let mut gaps = detector();
        assert!(feed(&mut gaps, 1, "radio1", &[0, 3, 6]).is_empty());
        assert!(gaps.poll(T0 + 9 * SECOND).is_empty());
        let just_over = gaps.on_heartbeat(1, "radio1", T0 + 9 * SECOND + 1);
        assert_eq!(just_over.len(), 2);
        assert_eq!(just_over[1].gap_s, Some(3.000000001));
    }

    #[test]
    fn two_vehicles_on_two_links_do_not_mask_each_other() {
        let mut gaps = detector();
        let mut events = Vec::new();
        // Sysid 4 on radio1 every second for 20 s; sysid 22 on usb0 until 5 s, then silent.
        for tick in 0..=20 {
            let now = T0 + tick * SECOND;
            events.extend(gaps.poll(now));
            events.extend(gaps.on_heartbeat(4, "radio1", now));
            if tick <= 5 {
                events.extend(gaps.on_heartbeat(22, "usb0", now + 500 * MS));
            }
            events.extend(gaps.poll(now + 500 * MS));
        }
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].sysid, 22);
        assert_eq!(events[0].state, GapState::Open);
        assert_eq!(events[0].links, vec!["usb0".to_string()]);
        assert_eq!(events[0].utc, UtcTime(T0 + 8_500 * MS + 1));
        assert_eq!(
            gaps.next_deadline(),
            Some(T0 + 23 * SECOND + 1),
            "sysid 4 still watched"
        );
    }

    #[test]
    fn one_vehicle_heard_on_two_links_counts_once() {
        let mut gaps = detector();
        let mut events = Vec::new();
        // The same heartbeats on both links (usb0 12 ms behind), then radio1 drops out for 10 s
        // while usb0 carries on: the vehicle was never silent.
        for tick in 0..30 {
            let now = T0 + tick * SECOND;
            events.extend(gaps.poll(now));
            if !(10..20).contains(&tick) {
                events.extend(gaps.on_heartbeat(7, "radio1", now));
            }
            events.extend(gaps.on_heartbeat(7, "usb0", now + 12 * MS));
        }
        assert!(events.is_empty(), "{events:?}");
        let opened = gaps.poll(T0 + 40 * SECOND);
        assert_eq!(opened.len(), 1);
        assert_eq!(
            opened[0].links,
            vec!["radio1".to_string(), "usb0".to_string()]
        );
        // Per-link spacing: the 12 ms between the two copies is not the cadence.
        assert_eq!(opened[0].expected_interval_s, 1.0);
        assert_eq!(
            opened[0].last_recv_utc,
            Some(UtcTime(T0 + 29 * SECOND + 12 * MS))
        );
        assert_eq!(gaps.vehicles().len(), 1);
    }

    #[test]
    fn ignored_sysids_never_alert_and_expected_silent_vehicles_are_flagged() {
        let config = GapConfig {
            ignore_sysids: [255, 9].into_iter().collect(),
            vehicles: [
                (4, "UAS-04".to_string()),
                (22, "UGV-02".to_string()),
                (9, "X".to_string()),
            ]
            .into_iter()
            .collect(),
            ..GapConfig::default()
        };
        let mut gaps = GapDetector::new(config, T0);
        assert_eq!(
            gaps.next_deadline(),
            Some(T0 + 3 * SECOND + 1),
            "22 and 4 expected from start"
        );
        let mut events = feed(&mut gaps, 255, "radio1", &[0, 1, 30, 100]);
        events.extend(feed(&mut gaps, 9, "radio1", &[0, 50]));
        events.extend(feed(&mut gaps, 4, "radio1", &[0, 1, 2, 3, 4, 5]));
        events.extend(gaps.poll(T0 + 5 * SECOND));
        assert_eq!(events.len(), 1, "{events:?}");
        let open = &events[0];
        assert_eq!((open.sysid, open.state), (22, GapState::Open));
        assert_eq!(open.name.as_deref(), Some("UGV-02"));
        assert_eq!(open.last_recv_utc, None, "never heard");
        assert_eq!(
            open.due_utc,
            UtcTime(T0 + SECOND),
            "first heartbeat due one interval after start"
        );
        assert_eq!(open.utc, UtcTime(T0 + 3 * SECOND + 1));
        assert!(open.links.is_empty());

        let closed = gaps.on_heartbeat(22, "usb0", T0 + 10 * SECOND);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].gap_s, Some(10.0), "counted from the start");
        assert_eq!(closed[0].name.as_deref(), Some("UGV-02"));
        assert_eq!(closed[0].links, vec!["usb0".to_string()]);
        assert!(gaps
            .vehicles()
            .iter()
            .all(|v| v.sysid != 255 && v.sysid != 9));
    }

    #[test]
    fn unexpected_vehicle_is_only_watched_once_heard() {
        let mut gaps = detector();
        assert_eq!(gaps.next_deadline(), None);
        assert!(gaps.poll(T0 + 100 * SECOND).is_empty());
        assert!(gaps.on_heartbeat(3, "radio1", T0 + 100 * SECOND).is_empty());
        assert_eq!(gaps.next_deadline(), Some(T0 + 103 * SECOND + 1));
    }

    #[test]
    fn offline_replay_gives_the_same_findings_as_live_polling() {
        // Two systems, interleaved, with gaps of several lengths, one system quiet at the end.
        let mut receipts: Vec<(u8, &str, i64)> = Vec::new();
        let beats_1: Vec<i64> = (0..10)
            .chain(16..20)
            .chain([24, 25])
            .chain(57..60)
            .collect();
        let beats_2: Vec<i64> = (0..30).chain(34..40).collect();
        for s in beats_1 {
            receipts.push((1, "radio1", T0 + s * SECOND + 250 * MS));
        }
        for s in beats_2 {
            receipts.push((2, "usb0", T0 + s * SECOND + 700 * MS));
        }
        receipts.sort_by_key(|&(_, _, at)| at);
        let end = receipts.last().unwrap().2;

        let mut live = GapDetector::new(GapConfig::default(), T0);
        let mut live_events = replay_live(&mut live, &receipts);
        live_events.extend(live.poll(end));

        // Receipts only, then one poll at the end of the input: the same findings, with the
        // same times; only the order of interleaved systems can differ.
        let mut offline = GapDetector::new(GapConfig::default(), T0);
        let mut offline_events = replay_offline(&mut offline, &receipts);
        offline_events.extend(offline.poll(end));

        // Polling at each receipt's time before feeding it (what `analyze` should do) gives the
        // live sequence exactly, order included.
        let mut polled = GapDetector::new(GapConfig::default(), T0);
        let mut polled_events = Vec::new();
        for &(sysid, link, at) in &receipts {
            polled_events.extend(polled.poll(at));
            polled_events.extend(polled.on_heartbeat(sysid, link, at));
        }
        polled_events.extend(polled.poll(end));
        assert_eq!(polled_events, live_events);

        let sorted = |events: &mut Vec<GapEvent>| {
            events.sort_by_key(|e| (e.utc, e.sysid, e.state == GapState::Closed));
        };
        sorted(&mut live_events);
        sorted(&mut offline_events);
        assert_eq!(offline_events, live_events);

        let summary: Vec<(u8, GapState, Option<f64>)> = live_events
            .iter()
            .map(|e| (e.sysid, e.state, e.gap_s))
            .collect();
        assert_eq!(
            summary,
            [
                (1, GapState::Open, None),
                (1, GapState::Closed, Some(7.0)),
                (1, GapState::Open, None),
                (1, GapState::Closed, Some(5.0)),
                (1, GapState::Open, None),
                (2, GapState::Open, None),
                (2, GapState::Closed, Some(5.0)),
                (2, GapState::Open, None),
                (1, GapState::Closed, Some(32.0)),
            ]
        );
        // The gap still open at the end of the input stays reported open.
        assert_eq!(offline.open_gaps().len(), 1);
        assert_eq!(offline.open_gaps()[0].sysid, 2);
    }

    #[test]
    fn out_of_order_heartbeats_never_give_negative_gaps() {
        let mut gaps = detector();
        assert!(feed(&mut gaps, 5, "radio1", &[0, 1, 2]).is_empty());
        // Stamped before the last receipt: consecutive in arrival order, spacing negative, no gap.
        assert!(gaps.on_heartbeat(5, "usb0", T0 + 1_500 * MS).is_empty());
        assert_eq!(gaps.next_deadline(), Some(T0 + 4_500 * MS + 1));
        // The receiving clock steps back 100 s: the system stays watched on the new clock.
        assert!(gaps.on_heartbeat(5, "radio1", T0 - 100 * SECOND).is_empty());
        assert_eq!(gaps.next_deadline(), Some(T0 - 97 * SECOND + 1));
        assert!(gaps.on_heartbeat(5, "radio1", T0 - 99 * SECOND).is_empty());
        let events = gaps.on_heartbeat(5, "radio1", T0 - 94 * SECOND);
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].gap_s, Some(5.0));
        assert_eq!(
            events[1].links,
            vec!["radio1".to_string(), "usb0".to_string()]
        );
        assert!(events.iter().all(|e| e.gap_s.is_none_or(|gap| gap >= 0.0)));
    }

    #[test]
    fn clock_stepped_back_during_a_reported_gap_closes_it_without_a_length() {
        let mut gaps = detector();
        feed(&mut gaps, 5, "radio1", &[10]);
        assert_eq!(gaps.poll(T0 + 14 * SECOND).len(), 1);
        let events = gaps.on_heartbeat(5, "radio1", T0);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].state, GapState::Closed);
        assert_eq!((events[0].gap_s, events[0].title.as_deref()), (None, None));
        assert_eq!(events[0].next_recv_utc, Some(UtcTime(T0)));
    }

    /// The shape of `olivieri_20211208-151717.tlog`: the ground clock goes back ~7 min while
    /// heartbeats continue, then jumps forward by 3,369 s. pymavlink's reading (consecutive
    /// receipts in file order) finds one gap, from the last receipt before the jump.
    #[test]
    fn ground_clock_steps_are_read_in_arrival_order_like_the_oracle() {
        let mut gaps = detector();
        let mut receipts: Vec<i64> = (0..=420).collect(); // 0..7 min
        receipts.extend(0..=50); // clock back to 0, heartbeats go on
        receipts.extend(3_419..3_425); // clock jumps forward
        let mut events = Vec::new();
        for s in receipts {
            let at = T0 + s * SECOND;
            events.extend(gaps.poll(at));
            events.extend(gaps.on_heartbeat(10, "radio1", at));
        }
        let found: Vec<(GapState, Option<UtcTime>, Option<f64>)> = events
            .iter()
            .map(|e| (e.state, e.last_recv_utc, e.gap_s))
            .collect();
        assert_eq!(
            found,
            [
                (GapState::Open, Some(UtcTime(T0 + 50 * SECOND)), None),
                (
                    GapState::Closed,
                    Some(UtcTime(T0 + 50 * SECOND)),
                    Some(3_369.0)
                ),
            ]
        );
    }

    #[test]
    fn receipt_stamped_inside_the_threshold_withdraws_a_reported_gap() {
        let mut gaps = detector();
        feed(&mut gaps, 5, "radio1", &[0]);
        assert_eq!(gaps.poll(T0 + 3 * SECOND + 1).len(), 1);
        // Stamped before the deadline but handed over after the poll: the alert must still
        // close, and say it was no gap rather than report one shorter than the threshold.
        let events = gaps.on_heartbeat(5, "radio1", T0 + 2_900 * MS);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].state, GapState::Closed);
        assert_eq!(events[0].gap_s, Some(2.9));
        assert_eq!(events[0].withdrawn, Some(true));
        assert_eq!(
            events[0].title.as_deref(),
            Some("Heartbeat due and not received. Withdrawn: heard again after 2.90 s, inside the 3.00 s threshold")
        );
        // Exactly the threshold is no gap either (a gap is strictly longer).
        let mut gaps = detector();
        feed(&mut gaps, 5, "radio1", &[0]);
        gaps.poll(T0 + 3 * SECOND + 1);
        assert_eq!(
            gaps.on_heartbeat(5, "radio1", T0 + 3 * SECOND)[0].withdrawn,
            Some(true)
        );
        // One nanosecond past it is a real gap: not withdrawn, the contract title.
        let mut gaps = detector();
        feed(&mut gaps, 5, "radio1", &[0]);
        gaps.poll(T0 + 3 * SECOND + 1);
        let real = gaps.on_heartbeat(5, "radio1", T0 + 3 * SECOND + 1);
        assert_eq!(real[0].withdrawn, None);
        assert_eq!(
            real[0].title.as_deref(),
            Some("Heartbeat due and not received. Nothing for 3.00 s")
        );
    }

    #[test]
    fn expected_interval_is_learned_from_recent_spacing() {
        let mut gaps = detector();
        feed(&mut gaps, 8, "radio1", &[0]);
        gaps.on_heartbeat(8, "radio1", T0 + 500 * MS);
        gaps.on_heartbeat(8, "radio1", T0 + 1_000 * MS);
        // Two spacings: still the 1 s default.
        assert_eq!(gaps.vehicles()[0].expected_interval_ns, SECOND);
        gaps.on_heartbeat(8, "radio1", T0 + 1_500 * MS);
        gaps.on_heartbeat(8, "radio1", T0 + 3_500 * MS);
        // Spacings 0.5, 0.5, 0.5, 2.0: median 0.5 s.
        assert_eq!(gaps.vehicles()[0].expected_interval_ns, 500 * MS);
        let events = gaps.on_heartbeat(8, "radio1", T0 + 8_500 * MS);
        assert_eq!(events[0].due_utc, UtcTime(T0 + 4_000 * MS));
        assert_eq!(events[0].expected_interval_s, 0.5);

        // A burst of 10 ms spacings is clamped to the 50 ms floor.
        let mut fast = detector();
        for k in 0..10 {
            fast.on_heartbeat(9, "radio1", T0 + k * 10 * MS);
        }
        assert_eq!(fast.vehicles()[0].expected_interval_ns, 50 * MS);
    }

    /// Heartbeat times shaped like `nodemavlink_vtol.tlog` (sysid 1): about 1 Hz with the five
    /// gaps pymavlink finds over 3 s, plus near misses of 3.000 s and 2.999 s that are not gaps.
    #[test]
    fn replay_of_a_vtol_like_sequence_finds_exactly_its_gaps() {
        let ms = |epoch_ms: i64| epoch_ms * MS;
        let expected_gaps = [
            (1_533_737_172_785, 1_533_737_177_208, "4.42"),
            (1_533_737_257_793, 1_533_737_263_893, "6.10"),
            (1_533_737_264_055, 1_533_737_267_562, "3.51"),
            (1_533_737_306_161, 1_533_737_309_396, "3.24"),
            (1_533_737_351_296, 1_533_737_354_665, "3.37"),
        ];
        let first = 1_533_737_100_000;
        let end = 1_533_737_400_000;
        let mut beats = Vec::new();
        let mut t = first;
        for &(last, next, _) in &expected_gaps {
            // From the previous gap's `next`, about 1 Hz (jitter 0..60 ms), ending exactly on `last`.
            beats.push(t);
            while t + 1_000 < last {
                t += 1_000 + (t % 7) * 10;
                beats.push(t);
            }
            if t != last {
                beats.push(last);
            }
            t = next;
        }
        while t < end {
            beats.push(t);
            t += 1_000;
        }
        // Near misses: exactly 3 s apart, then 2.999 s apart.
        let tail = *beats.last().unwrap();
        beats.extend([tail + 3_000, tail + 5_999]);

        let mut gaps = GapDetector::new(GapConfig::default(), ms(first));
        let events: Vec<GapEvent> = beats
            .iter()
            .flat_map(|&b| gaps.on_heartbeat(1, "vtol", ms(b)))
            .collect();
        let closed: Vec<(Option<UtcTime>, Option<UtcTime>, String)> = events
            .iter()
            .filter(|e| e.state == GapState::Closed)
            .map(|e| (e.last_recv_utc, e.next_recv_utc, e.title.clone().unwrap()))
            .collect();
        let expected: Vec<(Option<UtcTime>, Option<UtcTime>, String)> = expected_gaps
            .iter()
            .map(|&(last, next, figure)| {
                (
                    Some(UtcTime(ms(last))),
                    Some(UtcTime(ms(next))),
                    format!("Heartbeat due and not received. Nothing for {figure} s"),
                )
            })
            .collect();
        assert_eq!(closed, expected);
        assert_eq!(events.len(), 10, "each gap once open, once closed");
        let gap_s: Vec<f64> = events.iter().filter_map(|e| e.gap_s).collect();
        assert_eq!(gap_s, [4.423, 6.1, 3.507, 3.235, 3.369]);
    }
}
