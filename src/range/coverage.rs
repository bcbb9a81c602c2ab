//! The range's view of its sites, pure: which sites hear each vehicle (a vehicle moving from one
//! site's coverage to another's is a `site_joined` then a `site_left`), whether a site is heard
//! at all (`site_silent`, `site_heard`), and whether a site's clock can be trusted
//! (`clock_off`, `clock_ok`). Times are arguments; nothing here reads a clock.
//!
//! A site's clock is judged from the delay between a receipt's `recv_utc` and its arrival at the
//! range, measured only while the range is caught up. Over each window the smallest delay is
//! the best estimate of the clock difference (the network and the publisher only ever add
//! delay), so a site is `clock_off` when every receipt of a window arrived more than the
//! tolerance late, or when even the latest one claims to be from the future. A flagged site's
//! receipts are corrected by the measured offset before they are judged, so a site with a wrong
//! clock can neither hide a gap nor raise a false one.

use crate::monitor::event::{CoverageKind, CoverageState};
use crate::monitor::{CoverageEvent, UtcTime};
use std::collections::{BTreeMap, BTreeSet};

/// How far a site's receipt times may be from the range's clock before they are not trusted.
pub const CLOCK_TOLERANCE_NS: i64 = 2_000_000_000;
/// How long the receipts of one site are watched before its clock is judged.
pub const CLOCK_WINDOW_NS: i64 = 10_000_000_000;

/// One site's clock, judged window by window from receipt delays.
#[derive(Debug, Default)]
struct SiteClock {
    window_start_ns: Option<i64>,
    min_delay_ns: i64,
    max_delay_ns: i64,
    /// The site's clock minus the range's, while flagged.
    offset_ns: Option<i64>,
}

impl SiteClock {
    /// One receipt stamped `recv_ns` by the site that reached the range at `arrival_ns`.
    /// Returns the new verdict at the end of a window, if it changed: `Some(Some(offset))` for
    /// off, `Some(None)` for back in agreement.
    fn observe(&mut self, recv_ns: i64, arrival_ns: i64) -> Option<Option<i64>> {
        let delay = arrival_ns - recv_ns;
        let Some(start) = self.window_start_ns else {
            self.window_start_ns = Some(arrival_ns);
            (self.min_delay_ns, self.max_delay_ns) = (delay, delay);
            return None;
        };
        self.min_delay_ns = self.min_delay_ns.min(delay);
        self.max_delay_ns = self.max_delay_ns.max(delay);
        if arrival_ns - start < CLOCK_WINDOW_NS {
            return None;
        }
        let verdict = if self.min_delay_ns > CLOCK_TOLERANCE_NS {
            Some(-self.min_delay_ns)
        } else if self.max_delay_ns < -CLOCK_TOLERANCE_NS {
            Some(-self.max_delay_ns)
        } else {
            None
        };
        self.window_start_ns = None;
        let changed = verdict.is_some() != self.offset_ns.is_some();
        self.offset_ns = verdict;
        changed.then_some(verdict)
    }
}

#[derive(Debug, Default)]
struct Site {
    /// The latest (corrected) receipt time from this site.
    last_ns: i64,
    silent_since_ns: Option<i64>,
    clock: SiteClock,
    /// The site's receiver said its clock is not NTP-synchronised.
    unsynchronised: bool,
}

#[derive(Debug, Default)]
struct Vehicle {
    first_heard_ns: i64,
    /// Each site's latest (corrected) heartbeat time.
    last_by_site: BTreeMap<String, i64>,
    /// The sites that heard it within the threshold at the last look.
    hearing: BTreeSet<String>,
}

/// One site as `/status` shows it.
pub struct SiteView<'a> {
    pub name: &'a str,
    /// Nothing received from it for longer than the threshold.
    pub silent: bool,
    /// Its receipt times are far from the range's clock (corrected, not trusted).
    pub clock_off: bool,
    /// Its receiver reported its clock is not NTP-synchronised.
    pub unsynchronised: bool,
}

pub struct Coverage {
    threshold_ns: i64,
    names: BTreeMap<u8, String>,
    ignore: BTreeSet<u8>,
    sites: BTreeMap<String, Site>,
    vehicles: BTreeMap<u8, Vehicle>,
}

impl Coverage {
    /// `threshold_ns`: the gap threshold; a site that has not heard a vehicle for longer no
    /// longer covers it, and a site that sent nothing for longer is silent.
    pub fn new(threshold_ns: i64, names: BTreeMap<u8, String>, ignore: BTreeSet<u8>) -> Coverage {
        Coverage {
            threshold_ns,
            names,
            ignore,
            sites: BTreeMap::new(),
            vehicles: BTreeMap::new(),
        }
    }

    /// The time a receipt of `site` stamped `recv_ns` is judged at: as stamped, or corrected
    /// by the site's measured clock offset while its clock is flagged.
    pub fn judged_time(&self, site: &str, recv_ns: i64) -> i64 {
        match self.sites.get(site).and_then(|s| s.clock.offset_ns) {
            Some(offset) => recv_ns - offset,
            None => recv_ns,
        }
    }

    /// Whether `site`'s clock is flagged.
    pub fn clock_off(&self, site: &str) -> bool {
        self.sites
            .get(site)
            .is_some_and(|s| s.clock.offset_ns.is_some())
    }

    /// The sites as `/status` shows them.
    pub fn sites(&self) -> impl Iterator<Item = SiteView<'_>> {
        self.sites.iter().map(|(name, s)| SiteView {
            name,
            silent: s.silent_since_ns.is_some(),
            clock_off: s.clock.offset_ns.is_some(),
            unsynchronised: s.unsynchronised,
        })
    }

    /// The sites that hear `sysid` now (heard within the threshold at the last look).
    pub fn hearing(&self, sysid: u8) -> Vec<String> {
        self.vehicles
            .get(&sysid)
            .map(|v| v.hearing.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// A site receiver's own `clock` event (from the events stream): whether its clock is
    /// NTP-synchronised. An event only when that changes.
    pub fn site_clock_report(
        &mut self,
        site: &str,
        synchronised: bool,
        max_error_us: Option<i64>,
        utc_ns: i64,
    ) -> Option<CoverageEvent> {
        let entry = self.sites.entry(site.to_string()).or_insert_with(|| Site {
            // Known from its events before any receipt: not silent until it has been heard.
            last_ns: utc_ns,
            ..Default::default()
        });
        if entry.unsynchronised != synchronised {
            return None;
        }
        entry.unsynchronised = !synchronised;
        let (state, title) = if synchronised {
            (
                CoverageState::SiteSynchronised,
                format!("site {site}: its receiver's clock is NTP-synchronised again"),
            )
        } else {
            (
                CoverageState::SiteUnsynchronised,
                format!(
                    "site {site}: its receiver's clock is not NTP-synchronised; its times are checked against the range's"
                ),
            )
        };
        Some(self.site_event(utc_ns, state, site, title, |e| {
            e.max_error_us = max_error_us
        }))
    }

    /// One receipt from `site`: `recv_ns` as the site stamped it, `heartbeat` when it is one,
    /// `arrival_ns` the range's clock when caught up (`None` while catching up on a backlog,
    /// when arrival says nothing about the site's clock). Returns the coverage events, with the
    /// time the receipt is judged at.
    pub fn receipt(
        &mut self,
        site: &str,
        sysid: u8,
        heartbeat: bool,
        recv_ns: i64,
        arrival_ns: Option<i64>,
    ) -> (i64, Vec<CoverageEvent>) {
        let mut events = Vec::new();
        let entry = self.sites.entry(site.to_string()).or_default();
        if let Some(arrival) = arrival_ns {
            if let Some(verdict) = entry.clock.observe(recv_ns, arrival) {
                let (state, title) = match verdict {
                    Some(offset) => (
                        CoverageState::ClockOff,
                        format!(
                            "site {site}: receipt times {:.1} s {} the range's clock; corrected, not trusted",
                            (offset.abs() as f64) / 1e9,
                            if offset < 0 { "behind" } else { "ahead of" }
                        ),
                    ),
                    None => (
                        CoverageState::ClockOk,
                        format!("site {site}: receipt times agree with the range's clock again"),
                    ),
                };
                events.push(self.site_event(arrival, state, site, title, |e| {
                    e.offset_s = verdict.map(|o| o as f64 / 1e9);
                }));
            }
        }
        // A time from the future (a site clock ahead, before its verdict) could hide a gap.
        let judged = self.judged_time(site, recv_ns);
        let judged = arrival_ns.map_or(judged, |arrival| judged.min(arrival));
        let entry = self.sites.get_mut(site).expect("inserted above");
        entry.last_ns = entry.last_ns.max(judged);
        if let Some(since) = entry.silent_since_ns.take() {
            let silent_s = (judged - since) as f64 / 1e9;
            events.push(self.site_event(
                judged,
                CoverageState::SiteHeard,
                site,
                format!("site {site} heard again after {silent_s:.1} s of silence"),
                |e| e.silent_s = Some(silent_s),
            ));
        }
        if heartbeat && !self.ignore.contains(&sysid) {
            events.extend(self.heartbeat(site, sysid, judged));
        }
        (judged, events)
    }

    fn heartbeat(&mut self, site: &str, sysid: u8, at_ns: i64) -> Option<CoverageEvent> {
        let threshold = self.threshold_ns;
        let vehicle = self.vehicles.entry(sysid).or_insert_with(|| Vehicle {
            first_heard_ns: at_ns,
            ..Default::default()
        });
        let last = vehicle
            .last_by_site
            .entry(site.to_string())
            .or_insert(at_ns);
        *last = (*last).max(at_ns);
        if !vehicle.hearing.insert(site.to_string()) {
            return None;
        }
        // A vehicle first heard by several sites at once, or back from a gap, has not moved.
        let moved = vehicle.hearing.len() > 1 && at_ns - vehicle.first_heard_ns > threshold;
        if !moved {
            return None;
        }
        let sites: Vec<String> = vehicle.hearing.iter().cloned().collect();
        let title = format!(
            "{} now heard by {site} (sites: {})",
            self.vehicle_label(sysid),
            sites.join(", ")
        );
        Some(self.vehicle_event(at_ns, CoverageState::SiteJoined, site, sysid, sites, title))
    }

    /// What falls due at `now_ns`: sites that stopped hearing a vehicle, sites silent as a whole.
    pub fn poll(&mut self, now_ns: i64) -> Vec<CoverageEvent> {
        let threshold = self.threshold_ns;
        let mut left = Vec::new();
        for (sysid, vehicle) in &mut self.vehicles {
            let stale: Vec<String> = vehicle
                .hearing
                .iter()
                .filter(|site| now_ns - vehicle.last_by_site[*site] > threshold)
                .cloned()
                .collect();
            for site in &stale {
                vehicle.hearing.remove(site);
            }
            // The last sites going quiet is a telemetry gap, not a move.
            if vehicle.hearing.is_empty() {
                continue;
            }
            for site in stale {
                let at = vehicle.last_by_site[&site] + threshold;
                left.push((*sysid, site, at, vehicle.hearing.iter().cloned().collect()));
            }
        }
        let mut events: Vec<CoverageEvent> = left
            .into_iter()
            .map(|(sysid, site, at, sites): (u8, String, i64, Vec<String>)| {
                let title = format!(
                    "{} no longer heard by {site} (sites: {})",
                    self.vehicle_label(sysid),
                    sites.join(", ")
                );
                self.vehicle_event(at, CoverageState::SiteLeft, &site, sysid, sites, title)
            })
            .collect();
        let silent: Vec<(String, i64)> = self
            .sites
            .iter_mut()
            .filter(|(_, s)| s.silent_since_ns.is_none() && now_ns - s.last_ns > threshold)
            .map(|(name, s)| {
                s.silent_since_ns = Some(s.last_ns);
                (name.clone(), s.last_ns + threshold)
            })
            .collect();
        for (site, at) in silent {
            let title = format!(
                "site {site} silent: nothing received from it for more than {} s",
                threshold as f64 / 1e9
            );
            events.push(self.site_event(at, CoverageState::SiteSilent, &site, title, |_| {}));
        }
        events
    }

    /// When the next `site_left` or `site_silent` falls due.
    pub fn next_deadline(&self) -> Option<i64> {
        let vehicles = self.vehicles.values().flat_map(|v| {
            v.hearing
                .iter()
                .map(|site| v.last_by_site[site] + self.threshold_ns + 1)
        });
        let sites = self
            .sites
            .values()
            .filter(|s| s.silent_since_ns.is_none())
            .map(|s| s.last_ns + self.threshold_ns + 1);
        vehicles.chain(sites).min()
    }

    fn vehicle_label(&self, sysid: u8) -> String {
        match self.names.get(&sysid) {
            Some(name) => format!("sysid {sysid} {name}"),
            None => format!("sysid {sysid}"),
        }
    }

    fn vehicle_event(
        &self,
        at_ns: i64,
        state: CoverageState,
        site: &str,
        sysid: u8,
        sites: Vec<String>,
        title: String,
    ) -> CoverageEvent {
        CoverageEvent {
            utc: UtcTime(at_ns),
            kind: CoverageKind,
            state,
            site: site.to_string(),
            sysid: Some(sysid),
            name: self.names.get(&sysid).cloned(),
            sites: Some(sites),
            silent_s: None,
            offset_s: None,
            max_error_us: None,
            behind_s: None,
            late_receipts: None,
            title,
        }
    }

    pub fn site_event(
        &self,
        at_ns: i64,
        state: CoverageState,
        site: &str,
        title: String,
        fill: impl FnOnce(&mut CoverageEvent),
    ) -> CoverageEvent {
        let mut event = CoverageEvent {
            utc: UtcTime(at_ns),
            kind: CoverageKind,
            state,
            site: site.to_string(),
            sysid: None,
            name: None,
            sites: None,
            silent_s: None,
            offset_s: None,
            max_error_us: None,
            behind_s: None,
            late_receipts: None,
            title,
        };
        fill(&mut event);
        event
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const T0: i64 = 1_764_547_200 * S;

    fn coverage() -> Coverage {
        Coverage::new(
            3 * S,
            BTreeMap::from([(41, "UAS-41".to_string())]),
            BTreeSet::from([255]),
        )
    }

    fn states(events: &[CoverageEvent]) -> Vec<(CoverageState, String)> {
        events.iter().map(|e| (e.state, e.site.clone())).collect()
    }

    #[test]
    fn a_vehicle_flying_from_north_to_south_joins_one_site_then_leaves_the_other() {
        let mut c = coverage();
        let mut events = Vec::new();
        // 41 beats at 1 Hz: north only for 10 s, both for 5 s, south only after.
        for k in 0..30 {
            let t = T0 + k * S;
            events.extend(c.poll(t));
            if k < 15 {
                events.extend(c.receipt("north", 41, true, t, Some(t)).1);
            }
            if k >= 10 {
                events.extend(c.receipt("south", 41, true, t, Some(t)).1);
            }
        }
        assert_eq!(
            states(&events),
            [
                (CoverageState::SiteJoined, "south".into()),
                (CoverageState::SiteLeft, "north".into()),
                // North heard nothing else: as a site, it is silent too.
                (CoverageState::SiteSilent, "north".into()),
            ]
        );
        assert_eq!(
            events[0].sites.as_deref(),
            Some(&["north".into(), "south".into()][..])
        );
        assert_eq!(events[0].name.as_deref(), Some("UAS-41"));
        assert_eq!(events[0].utc, UtcTime(T0 + 10 * S));
        // North's last heartbeat at 14 s, gone once 3 s have passed.
        assert_eq!(events[1].utc, UtcTime(T0 + 17 * S));
        assert_eq!(events[1].sites.as_deref(), Some(&["south".into()][..]));
        assert_eq!(c.hearing(41), ["south"]);
        assert!(c.hearing(42).is_empty());
        assert!(events[1]
            .title
            .contains("sysid 41 UAS-41 no longer heard by north"));
    }

    #[test]
    fn the_last_site_going_quiet_is_a_gap_not_a_move_and_a_start_is_not_a_move() {
        let mut c = coverage();
        let mut events = Vec::new();
        for k in 0..5 {
            let t = T0 + k * S;
            // Heard by both sites from the start, and an ignored GCS: no coverage event.
            events.extend(c.receipt("north", 41, true, t, Some(t)).1);
            events.extend(c.receipt("south", 41, true, t, Some(t)).1);
            events.extend(c.receipt("south", 255, true, t, Some(t)).1);
        }
        assert!(events.is_empty(), "{events:?}");
        // Both go quiet at once: the vehicle is in a gap (the gap detector's business), the
        // sites are silent.
        let events = c.poll(T0 + 10 * S);
        assert_eq!(
            states(&events),
            [
                (CoverageState::SiteSilent, "north".into()),
                (CoverageState::SiteSilent, "south".into()),
            ]
        );
        assert_eq!(events[0].utc, UtcTime(T0 + 7 * S));
        assert!(c.poll(T0 + 11 * S).is_empty());
        assert_eq!(c.next_deadline(), None);
        let (_, events) = c.receipt("north", 41, true, T0 + 12 * S, Some(T0 + 12 * S));
        assert_eq!(
            states(&events),
            [(CoverageState::SiteHeard, "north".into())]
        );
        assert_eq!(events[0].silent_s, Some(8.0));
        assert_eq!(c.next_deadline(), Some(T0 + 15 * S + 1));
    }

    #[test]
    fn a_site_whose_clock_is_behind_is_flagged_and_corrected_a_backlog_is_not() {
        let mut c = coverage();
        let mut events = Vec::new();
        // "east" stamps its receipts 30 s behind the range; "west" is right, but its first
        // receipts come from a backlog (4 s late) and arrive while catching up.
        for k in 0..25 {
            let arrival = T0 + k * S;
            events.extend(
                c.receipt("east", 41, true, arrival - 30 * S, Some(arrival))
                    .1,
            );
            let late = if k < 3 { 4 * S } else { 50_000_000 };
            events.extend(c.receipt("west", 41, true, arrival - late, Some(arrival)).1);
        }
        let flagged: Vec<_> = events
            .iter()
            .filter(|e| e.state == CoverageState::ClockOff)
            .collect();
        assert_eq!(flagged.len(), 1, "{events:?}");
        assert_eq!(flagged[0].site, "east");
        assert_eq!(flagged[0].offset_s, Some(-30.0));
        assert!(
            flagged[0].title.contains("30.0 s behind"),
            "{}",
            flagged[0].title
        );
        assert!(c.clock_off("east") && !c.clock_off("west"));
        // East's receipts are now judged at the range's time, not 30 s in the past.
        assert_eq!(c.judged_time("east", T0 + 70 * S), T0 + 100 * S);
        assert_eq!(c.judged_time("west", T0 + 70 * S), T0 + 70 * S);
        // East's clock is fixed: one window later it is trusted again.
        let mut events = Vec::new();
        for k in 25..40 {
            let arrival = T0 + k * S;
            events.extend(c.receipt("east", 41, true, arrival, Some(arrival)).1);
        }
        let ok: Vec<_> = events
            .iter()
            .filter(|e| e.state == CoverageState::ClockOk)
            .collect();
        assert_eq!(ok.len(), 1, "{events:?}");
        assert!(!c.clock_off("east"));
    }

    #[test]
    fn a_site_receivers_own_clock_reports_flag_it_once_per_change() {
        let mut c = coverage();
        let lost = c
            .site_clock_report("north", false, Some(250_000), T0)
            .unwrap();
        assert_eq!(lost.state, CoverageState::SiteUnsynchronised);
        assert_eq!(lost.max_error_us, Some(250_000));
        assert!(c
            .site_clock_report("north", false, Some(300_000), T0 + S)
            .is_none());
        assert!(c
            .sites()
            .any(|s| s.name == "north" && s.unsynchronised && !s.silent));
        let back = c
            .site_clock_report("north", true, None, T0 + 2 * S)
            .unwrap();
        assert_eq!(back.state, CoverageState::SiteSynchronised);
        assert!(c.sites().all(|s| !s.unsynchronised));
        // A synchronised report from a site never flagged says nothing.
        assert!(c.site_clock_report("south", true, None, T0).is_none());
    }

    #[test]
    fn a_site_stamping_the_future_is_flagged_and_catching_up_judges_no_clock() {
        let mut c = coverage();
        let mut events = Vec::new();
        for k in 0..12 {
            let arrival = T0 + k * S;
            events.extend(
                c.receipt("ahead", 7, false, arrival + 5 * S, Some(arrival))
                    .1,
            );
            // A backlog hours old, read while catching up: no arrival, no verdict.
            events.extend(c.receipt("old", 7, false, arrival - 7_200 * S, None).1);
        }
        assert_eq!(states(&events), [(CoverageState::ClockOff, "ahead".into())]);
        assert_eq!(events[0].offset_s, Some(5.0));
        assert!(events[0].title.contains("ahead of"));
        assert!(!c.clock_off("old"));
    }
}
