//! The airspace around each vehicle (pure): traffic tracks kept from ADS-B, Remote ID and SBS
//! reports, our vehicles' own positions, and `traffic_proximity` alerts when a track comes
//! within the thresholds of one of our vehicles.
//!
//! - A track is keyed by ICAO address (ADS-B, SBS) or UAS ID (Remote ID). A report updates the
//!   fields it carries; the rest keep their last value. A track not updated for `stale_s`
//!   (strictly more) is dropped with a `traffic` `lost` event, stamped where it fell due, as a
//!   gap's `open` is: the same findings live and replayed.
//! - Remote ID comes in pieces: `OPEN_DRONE_ID_BASIC_ID` gives the UAS ID, `LOCATION` the
//!   position. They are joined by the broadcaster (`id_or_mac`, or when that is empty the
//!   sender on its link); a location that comes before its ID waits (the latest one per
//!   broadcaster) and is applied when the ID comes.
//! - Our vehicles' positions come from `GLOBAL_POSITION_INT` (the autopilot's estimate), and
//!   from `GPS_RAW_INT` only while no estimate has come for [`ESTIMATE_PREFERRED_NS`]. A
//!   `GPS_RAW_INT` that gives `alt_ellipsoid` tells the vehicle's geoid separation, so an
//!   ellipsoidal traffic altitude is compared with our own on the ellipsoid.
//! - Our own vehicles are not traffic: a track whose ICAO address or UAS ID is configured for
//!   one of them, or one relayed by a vehicle of ours at that vehicle's own position (within
//!   `own_match_m`: its own ADS-B out or Remote ID, heard by its own receiver). The relay mark
//!   holds while the reports keep matching; a report of the track far from that vehicle (ten
//!   times `own_match_m`) takes it back, so a real intruder that once passed close to a
//!   vehicle is not hidden for good.
//! - Proximity, per (vehicle, track): open when the horizontal distance on the WGS-84
//!   ellipsoid is within `horizontal_m` and the vertical separation within `vertical_m` (a
//!   track with no altitude is judged on the horizontal alone, and the event says so with a
//!   null `vertical_m`); closed when either goes past its threshold by the hysteresis
//!   ([`TrafficConfig::hysteresis`], a tenth), when the track is lost, or when our vehicle's
//!   position is older than `stale_s`. Judged at every report of the track and every position
//!   of the vehicle, each at its own stamp. The closest point of the encounter is kept.
//! - Pairs plainly far apart are screened with a bound that is never more than the geodesic
//!   ([`crate::geodesy::certainly_beyond_m`]), so 500 tracks against 50 vehicles reporting ten times
//!   a second cost a few multiplications each, and the geodesic only for the near ones.

use super::event::{
    GapState, TrafficEvent, TrafficPoint, TrafficProximityEvent, TrafficProximityKind,
    TrafficSource, TrafficState, TrafficTrackKind,
};
use super::title::{traffic_closed_title, traffic_lost_title, traffic_title};
use crate::geodesy::{certainly_beyond_m, Wgs84};
use crate::link::LinkId;
use crate::traffic::{
    Altitude, AltitudeRef, LatLon, OwnFix, TrafficKey, TrafficKind, TrafficReport,
};
use crate::utc::{ns_to_seconds, UtcTime, NANOS_PER_SECOND};
use crate::wire::traffic::{RemoteIdSource, TrafficMessage};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A vehicle's `GPS_RAW_INT` stands in for its position only when no `GLOBAL_POSITION_INT`
/// came for this long.
pub const ESTIMATE_PREFERRED_NS: i64 = 3 * NANOS_PER_SECOND;
/// A relayed report matches its relaying vehicle's own position only against a fix this fresh.
const OWN_MATCH_FIX_AGE_NS: i64 = 2 * NANOS_PER_SECOND;
/// Tracks kept at most: a feed inventing addresses cannot grow the receiver without bound.
pub const MAX_TRACKS: usize = 10_000;
/// Remote ID locations waiting for their broadcaster's ID, at most.
const MAX_PENDING: usize = 1_024;

/// What the traffic monitor is configured with (`[traffic]`, and the vehicles of `[gap]`).
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficConfig {
    /// A track not updated for longer than this is lost (`stale_s`, default 20 s).
    pub stale_ns: i64,
    /// The proximity thresholds (`horizontal_m`, default 1,000; `vertical_m`, default 150).
    pub horizontal_m: f64,
    pub vertical_m: f64,
    /// A proximity closes only past the thresholds by this fraction of them (0.1: 1,100 m and
    /// 165 m with the defaults), so a track on the edge does not open and close at every report.
    pub hysteresis: f64,
    /// A report relayed by one of our vehicles within this of its own position is its own
    /// (`own_match_m`, default 30 m).
    pub own_match_m: f64,
    /// Vehicle names, for titles.
    pub vehicles: BTreeMap<u8, String>,
    /// Our vehicles' own ICAO addresses and UAS IDs (`[gap] vehicles` with `icao`, `uas_id`).
    pub own_icao: BTreeMap<u32, u8>,
    pub own_uas_ids: BTreeMap<String, u8>,
    /// Systems whose positions are not vehicles of ours (`[gap] ignore_sysids`: a GCS).
    pub ignore_sysids: BTreeSet<u8>,
}

impl Default for TrafficConfig {
    fn default() -> Self {
        TrafficConfig {
            stale_ns: 20 * NANOS_PER_SECOND,
            horizontal_m: 1_000.0,
            vertical_m: 150.0,
            hysteresis: 0.1,
            own_match_m: 30.0,
            vehicles: BTreeMap::new(),
            own_icao: BTreeMap::new(),
            own_uas_ids: BTreeMap::new(),
            ignore_sysids: BTreeSet::new(),
        }
    }
}

/// One traffic message as the monitor is told of it.
#[derive(Debug, Clone, Copy)]
pub struct Heard<'a> {
    pub link: LinkId,
    pub link_name: &'a str,
    /// The MAVLink sender (system, component); `None` for an SBS feed.
    pub sender: Option<(u8, u8)>,
    pub utc_ns: i64,
}

/// One of our vehicles' position as last told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnPosition {
    pub fix: OwnFix,
    pub utc_ns: i64,
    /// The last `GLOBAL_POSITION_INT`.
    estimate_ns: Option<i64>,
    /// Ellipsoid minus mean sea level at the vehicle, from its GNSS (`GPS_RAW_INT`).
    pub geoid_separation_m: Option<f64>,
}

/// A traffic track: the latest of each thing its reports said.
#[derive(Debug, Clone, PartialEq)]
pub struct Track {
    pub key: TrafficKey,
    pub kind: TrafficKind,
    pub callsign: Option<Box<str>>,
    pub position: Option<LatLon>,
    pub position_ns: Option<i64>,
    pub altitude: Option<Altitude>,
    pub track_deg: Option<f64>,
    pub ground_speed_mps: Option<f64>,
    pub vertical_rate_mps: Option<f64>,
    pub squawk: Option<u16>,
    pub operator: Option<LatLon>,
    pub first_ns: i64,
    pub last_ns: i64,
    pub link: String,
    pub relayed_by: Option<u8>,
    pub reports: u64,
    /// One of our own vehicles (this system id): not traffic.
    pub own_sysid: Option<u8>,
    /// ... because the config names it so (else because it was relayed at its position).
    own_configured: bool,
}

impl Track {
    /// How titles name it: callsign, else ICAO address or UAS ID.
    pub fn label(&self) -> String {
        match &self.callsign {
            Some(c) => c.to_string(),
            None => self.key.to_string(),
        }
    }

    pub fn source(&self) -> TrafficSource {
        TrafficSource {
            kind: self.kind.as_str().to_string(),
            link: self.link.clone(),
            relayed_by: self.relayed_by,
        }
    }
}

/// Where a track is from one of our vehicles.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    pub horizontal_m: f64,
    pub bearing_deg: f64,
    /// Positive: the traffic is above.
    pub vertical_m: Option<f64>,
    pub own_altitude_m: f64,
    pub own_altitude_ref: AltitudeRef,
    /// `pressure_standard vs msl`: what `vertical_m` compares.
    pub vertical_basis: Option<String>,
}

impl Measure {
    /// The straight-line distance where the altitude is known, else the horizontal one.
    fn slant_m(&self) -> f64 {
        self.horizontal_m.hypot(self.vertical_m.unwrap_or(0.0))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Proximity {
    opened_ns: i64,
    closest: TrafficPoint,
    closest_slant_m: f64,
}

/// What a Remote ID broadcaster is told apart by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Broadcaster {
    Mac([u8; 20]),
    Sender(LinkId, u8, u8),
}

/// A Remote ID location heard before its broadcaster's ID.
#[derive(Debug, Clone)]
struct Waiting {
    utc_ns: i64,
    report: TrafficReport,
    link_name: String,
    sender: Option<(u8, u8)>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    Track(TrafficKey),
    Own(u8),
}

/// Counts since the monitor started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrafficTotals {
    /// Reports that made or updated a track.
    pub reports: u64,
    /// Reports of our own vehicles (not traffic).
    pub own_reports: u64,
    /// New tracks refused past [`MAX_TRACKS`].
    pub refused_tracks: u64,
    pub lost: u64,
    pub proximities_opened: u64,
}

pub struct TrafficMonitor {
    config: TrafficConfig,
    wgs84: Wgs84,
    own: BTreeMap<u8, OwnPosition>,
    tracks: HashMap<TrafficKey, Track>,
    broadcasters: HashMap<Broadcaster, Box<str>>,
    waiting: HashMap<Broadcaster, Waiting>,
    open: BTreeMap<(u8, TrafficKey), Proximity>,
    due: BTreeSet<(i64, Due)>,
    totals: TrafficTotals,
}

impl TrafficMonitor {
    pub fn new(config: TrafficConfig) -> Self {
        TrafficMonitor {
            config,
            wgs84: Wgs84::default(),
            own: BTreeMap::new(),
            tracks: HashMap::new(),
            broadcasters: HashMap::new(),
            waiting: HashMap::new(),
            open: BTreeMap::new(),
            due: BTreeSet::new(),
            totals: TrafficTotals::default(),
        }
    }

    pub fn config(&self) -> &TrafficConfig {
        &self.config
    }

    pub fn totals(&self) -> TrafficTotals {
        self.totals
    }

    /// Every track, in no order.
    pub fn tracks(&self) -> impl Iterator<Item = &Track> {
        self.tracks.values()
    }

    /// Our vehicles' positions.
    pub fn own_positions(&self) -> &BTreeMap<u8, OwnPosition> {
        &self.own
    }

    /// The open proximities: (vehicle, track key).
    pub fn open_proximities(&self) -> impl Iterator<Item = &(u8, TrafficKey)> {
        self.open.keys()
    }

    pub fn is_open(&self, sysid: u8, key: &TrafficKey) -> bool {
        self.open.contains_key(&(sysid, key.clone()))
    }

    /// The traffic (not ours, with a position) within `within_m` of vehicle `sysid`, nearest
    /// first, measured now.
    pub fn nearby(&self, sysid: u8, within_m: f64) -> Vec<(&Track, Measure)> {
        let Some(own) = self.own.get(&sysid) else {
            return Vec::new();
        };
        let mut near: Vec<(&Track, Measure)> = self
            .tracks
            .values()
            .filter(|t| t.own_sysid.is_none())
            .filter_map(|t| {
                let at = t.position?;
                (!certainly_beyond_m(own.fix.position, at, within_m))
                    .then(|| (t, self.measure(own, t, at)))
            })
            .filter(|(_, m)| m.horizontal_m <= within_m)
            .collect();
        near.sort_by(|a, b| a.1.horizontal_m.total_cmp(&b.1.horizontal_m));
        near
    }

    /// The earliest instant something is due: a track aging out, a vehicle's position too old.
    pub fn next_deadline(&self) -> Option<i64> {
        self.due.first().map(|(at, _)| *at)
    }

    /// One traffic message heard (or one of our vehicles' positions): the events it settles.
    pub fn heard(&mut self, heard: Heard<'_>, message: &TrafficMessage) -> Vec<super::Event> {
        match message {
            TrafficMessage::Report(report) => self.report(heard, report.clone()),
            TrafficMessage::OwnFix(fix) => match heard.sender {
                Some((sysid, _)) => self.own_fix(sysid, heard.utc_ns, *fix),
                None => Vec::new(),
            },
            TrafficMessage::RemoteIdBasic { source, uas_id } => {
                let broadcaster = broadcaster(*source, heard);
                self.broadcasters
                    .insert(broadcaster.clone(), uas_id.clone());
                let key = TrafficKey::UasId(uas_id.clone());
                match self.waiting.remove(&broadcaster) {
                    // The location was heard first: the track starts there, judged now that
                    // it can be named.
                    Some(w) if heard.utc_ns - w.utc_ns <= self.config.stale_ns => {
                        let mut report = w.report;
                        report.key = key;
                        self.report(
                            Heard {
                                link_name: &w.link_name,
                                sender: w.sender,
                                ..heard
                            },
                            report,
                        )
                    }
                    _ => self.report(heard, TrafficReport::bare(key, TrafficKind::RemoteId)),
                }
            }
            TrafficMessage::RemoteIdLocation { source, report } => {
                let broadcaster = broadcaster(*source, heard);
                match self.broadcasters.get(&broadcaster) {
                    Some(id) => {
                        let mut report = (**report).clone();
                        report.key = TrafficKey::UasId(id.clone());
                        self.report(heard, report)
                    }
                    None => {
                        if self.waiting.len() >= MAX_PENDING {
                            let oldest = heard.utc_ns - self.config.stale_ns;
                            self.waiting.retain(|_, w| w.utc_ns >= oldest);
                            if self.waiting.len() >= MAX_PENDING {
                                self.waiting.clear();
                            }
                        }
                        self.waiting.insert(
                            broadcaster,
                            Waiting {
                                utc_ns: heard.utc_ns,
                                report: (**report).clone(),
                                link_name: heard.link_name.to_string(),
                                sender: heard.sender,
                            },
                        );
                        Vec::new()
                    }
                }
            }
            TrafficMessage::RemoteIdSystem { source, operator } => {
                let Some(id) = self.broadcasters.get(&broadcaster(*source, heard)).cloned() else {
                    return Vec::new();
                };
                let mut report = TrafficReport::bare(TrafficKey::UasId(id), TrafficKind::RemoteId);
                report.operator = *operator;
                self.report(heard, report)
            }
        }
    }

    /// A report of a track: kept, then judged against every vehicle of ours if it moved.
    fn report(&mut self, heard: Heard<'_>, report: TrafficReport) -> Vec<super::Event> {
        let now = heard.utc_ns;
        if !self.tracks.contains_key(&report.key) {
            if self.tracks.len() >= MAX_TRACKS {
                self.totals.refused_tracks += 1;
                return Vec::new();
            }
            let own = match &report.key {
                TrafficKey::Icao(a) => self.config.own_icao.get(a),
                TrafficKey::UasId(id) => self.config.own_uas_ids.get(&**id),
            }
            .copied();
            self.tracks.insert(
                report.key.clone(),
                Track {
                    key: report.key.clone(),
                    kind: report.kind,
                    callsign: None,
                    position: None,
                    position_ns: None,
                    altitude: None,
                    track_deg: None,
                    ground_speed_mps: None,
                    vertical_rate_mps: None,
                    squawk: None,
                    operator: None,
                    first_ns: now,
                    last_ns: now,
                    link: String::new(),
                    relayed_by: None,
                    reports: 0,
                    own_sysid: own,
                    own_configured: own.is_some(),
                },
            );
        }
        let relay_fix = heard
            .sender
            .and_then(|(sysid, _)| Some((sysid, *self.own.get(&sysid)?)));
        let track = self.tracks.get_mut(&report.key).expect("inserted above");
        let old_due = track.last_ns + self.config.stale_ns + 1;
        track.kind = report.kind;
        track.last_ns = track.last_ns.max(now);
        track.reports += 1;
        if track.link != heard.link_name {
            track.link = heard.link_name.to_string();
        }
        track.relayed_by = heard.sender.map(|(sysid, _)| sysid);
        let moved = report.position.is_some();
        if let Some(c) = report.callsign {
            track.callsign = Some(c);
        }
        if let Some(p) = report.position {
            track.position = Some(p);
            track.position_ns = Some(now);
        }
        track.altitude = report.altitude.or(track.altitude);
        track.track_deg = report.track_deg.or(track.track_deg);
        track.ground_speed_mps = report.ground_speed_mps.or(track.ground_speed_mps);
        track.vertical_rate_mps = report.vertical_rate_mps.or(track.vertical_rate_mps);
        track.squawk = report.squawk.or(track.squawk);
        track.operator = report.operator.or(track.operator);
        // Our own vehicle's own broadcast, relayed by it at its own position?
        if !track.own_configured {
            if let (Some(at), Some((sysid, own))) = (report.position, relay_fix) {
                let fresh = now - own.utc_ns <= OWN_MATCH_FIX_AGE_NS;
                let apart = self.wgs84.between(own.fix.position, at).distance_m;
                if fresh && apart <= self.config.own_match_m {
                    track.own_sysid = Some(sysid);
                }
            }
            if let (Some(sysid), Some(at)) = (track.own_sysid, report.position) {
                if let Some(own) = self.own.get(&sysid) {
                    let apart = self.wgs84.between(own.fix.position, at).distance_m;
                    if apart > 10.0 * self.config.own_match_m {
                        track.own_sysid = None;
                    }
                }
            }
        }
        let key = track.key.clone();
        let own_track = track.own_sysid.is_some();
        let new_due = track.last_ns + self.config.stale_ns + 1;
        self.due.remove(&(old_due, Due::Track(key.clone())));
        self.due.insert((new_due, Due::Track(key.clone())));
        self.totals.reports += 1;
        if own_track {
            self.totals.own_reports += 1;
            // Open as traffic before it was known for ours: no longer judged.
            let sysids: Vec<u8> = self.open_of_track(&key);
            return sysids
                .into_iter()
                .filter_map(|sysid| self.close(sysid, &key, now, "own_vehicle"))
                .map(super::Event::from)
                .collect();
        }
        if !moved {
            return Vec::new();
        }
        let sysids: Vec<u8> = self.own.keys().copied().collect();
        sysids
            .into_iter()
            .filter_map(|sysid| self.judge(sysid, &key, now))
            .map(super::Event::from)
            .collect()
    }

    /// One of our vehicles' own position: kept, then every track judged against it.
    pub fn own_fix(&mut self, sysid: u8, utc_ns: i64, fix: OwnFix) -> Vec<super::Event> {
        if self.config.ignore_sysids.contains(&sysid) {
            return Vec::new();
        }
        let before = self.own.get(&sysid).copied();
        let separation = fix.ellipsoid_m.map(|e| e - fix.msl_m);
        if !fix.estimate {
            if let Some(before) = before {
                let estimated = before
                    .estimate_ns
                    .is_some_and(|t| utc_ns - t <= ESTIMATE_PREFERRED_NS);
                if estimated {
                    // The estimate stands; the GNSS still tells the geoid separation.
                    if let Some(own) = self.own.get_mut(&sysid) {
                        own.geoid_separation_m = separation.or(own.geoid_separation_m);
                    }
                    return Vec::new();
                }
            }
        }
        let position = OwnPosition {
            fix,
            utc_ns,
            estimate_ns: if fix.estimate {
                Some(utc_ns)
            } else {
                before.and_then(|b| b.estimate_ns)
            },
            geoid_separation_m: separation.or(before.and_then(|b| b.geoid_separation_m)),
        };
        if let Some(b) = before {
            self.due
                .remove(&(b.utc_ns + self.config.stale_ns + 1, Due::Own(sysid)));
        }
        self.due
            .insert((utc_ns + self.config.stale_ns + 1, Due::Own(sysid)));
        self.own.insert(sysid, position);
        let horizon = self.config.horizontal_m * (1.0 + self.config.hysteresis);
        let near: Vec<TrafficKey> = self
            .tracks
            .values()
            .filter(|t| t.own_sysid.is_none())
            .filter(|t| {
                // The screen before the look-up: the look-up clones the key.
                t.position.is_some_and(|at| {
                    !certainly_beyond_m(fix.position, at, horizon)
                        || self.open.contains_key(&(sysid, t.key.clone()))
                })
            })
            .map(|t| t.key.clone())
            .collect();
        near.into_iter()
            .filter_map(|key| self.judge(sysid, &key, utc_ns))
            .map(super::Event::from)
            .collect()
    }

    /// Everything due by `now_ns`, in the order it fell due: tracks lost (and their
    /// proximities closed), vehicles whose position is too old (their proximities closed).
    pub fn poll(&mut self, now_ns: i64) -> Vec<super::Event> {
        let mut events = Vec::new();
        while let Some((at, due)) = self.due.first().cloned() {
            if at > now_ns {
                break;
            }
            self.due.pop_first();
            match due {
                Due::Track(key) => {
                    for sysid in self.open_of_track(&key) {
                        events.extend(self.close(sysid, &key, at, "lost").map(super::Event::from));
                    }
                    if let Some(track) = self.tracks.remove(&key) {
                        self.totals.lost += 1;
                        if let TrafficKey::UasId(id) = &key {
                            self.broadcasters.retain(|_, v| v != id);
                        }
                        events.push(super::Event::from(self.lost_event(&track, at)));
                    }
                }
                Due::Own(sysid) => {
                    let keys: Vec<TrafficKey> = self
                        .open
                        .keys()
                        .filter(|(s, _)| *s == sysid)
                        .map(|(_, k)| k.clone())
                        .collect();
                    for key in keys {
                        events.extend(
                            self.close(sysid, &key, at, "own_position_lost")
                                .map(super::Event::from),
                        );
                    }
                    self.own.remove(&sysid);
                }
            }
        }
        events
    }

    fn open_of_track(&self, key: &TrafficKey) -> Vec<u8> {
        self.open
            .keys()
            .filter(|(_, k)| k == key)
            .map(|(s, _)| *s)
            .collect()
    }

    /// Where the track is from the vehicle.
    fn measure(&self, own: &OwnPosition, track: &Track, at: LatLon) -> Measure {
        let separation = self.wgs84.between(own.fix.position, at);
        let msl = own.fix.msl_m;
        let (own_altitude_m, own_altitude_ref, vertical_m, vertical_basis) = match track.altitude {
            Some(a) => {
                let ellipsoidal =
                    matches!(a.reference, AltitudeRef::Ellipsoid | AltitudeRef::Geometric);
                let (own_m, own_ref) = match own.geoid_separation_m {
                    Some(n) if ellipsoidal => (msl + n, AltitudeRef::Ellipsoid),
                    _ => (msl, AltitudeRef::MeanSeaLevel),
                };
                (
                    own_m,
                    own_ref,
                    Some(a.m - own_m),
                    Some(format!("{} vs {}", a.reference.as_str(), own_ref.as_str())),
                )
            }
            None => (msl, AltitudeRef::MeanSeaLevel, None, None),
        };
        Measure {
            horizontal_m: separation.distance_m,
            bearing_deg: separation.bearing_deg,
            vertical_m,
            own_altitude_m,
            own_altitude_ref,
            vertical_basis,
        }
    }

    /// Judges one (vehicle, track) pair at `now`: an open or a close, or nothing.
    fn judge(&mut self, sysid: u8, key: &TrafficKey, now: i64) -> Option<TrafficProximityEvent> {
        let stale = self.config.stale_ns;
        let own = *self.own.get(&sysid)?;
        let track = self.tracks.get(key)?;
        let at = track.position?;
        let open = self.open.contains_key(&(sysid, key.clone()));
        let fresh = |t: i64| now - t <= stale;
        if !fresh(own.utc_ns) || !track.position_ns.is_some_and(fresh) {
            return None;
        }
        let (h, v) = (self.config.horizontal_m, self.config.vertical_m);
        let widen = 1.0 + self.config.hysteresis;
        if !open && certainly_beyond_m(own.fix.position, at, h) {
            return None;
        }
        let m = self.measure(&own, track, at);
        let inside = m.horizontal_m <= h && m.vertical_m.is_none_or(|dv| dv.abs() <= v);
        let outside =
            m.horizontal_m > h * widen || m.vertical_m.is_some_and(|dv| dv.abs() > v * widen);
        let point = TrafficPoint {
            utc: UtcTime(now),
            horizontal_m: m.horizontal_m,
            vertical_m: m.vertical_m,
        };
        if open {
            let proximity = self.open.get_mut(&(sysid, key.clone()))?;
            if m.slant_m() < proximity.closest_slant_m {
                proximity.closest = point;
                proximity.closest_slant_m = m.slant_m();
            }
            if outside {
                return self.close(sysid, key, now, "left");
            }
            return None;
        }
        if !inside {
            return None;
        }
        let proximity = Proximity {
            opened_ns: now,
            closest: point,
            closest_slant_m: m.slant_m(),
        };
        self.open.insert((sysid, key.clone()), proximity);
        self.totals.proximities_opened += 1;
        let track = self.tracks.get(key)?;
        Some(self.proximity_event(sysid, track, &m, proximity, now, None))
    }

    /// Closes the open proximity of `key` and `sysid`, measured at `now` where both positions
    /// are known.
    fn close(
        &mut self,
        sysid: u8,
        key: &TrafficKey,
        now: i64,
        reason: &str,
    ) -> Option<TrafficProximityEvent> {
        let proximity = self.open.remove(&(sysid, key.clone()))?;
        let track = self.tracks.get(key)?;
        let m = match (self.own.get(&sysid), track.position) {
            (Some(own), Some(at)) => self.measure(own, track, at),
            _ => Measure {
                horizontal_m: proximity.closest.horizontal_m,
                bearing_deg: 0.0,
                vertical_m: proximity.closest.vertical_m,
                own_altitude_m: 0.0,
                own_altitude_ref: AltitudeRef::MeanSeaLevel,
                vertical_basis: None,
            },
        };
        Some(self.proximity_event(sysid, track, &m, proximity, now, Some(reason)))
    }

    fn vehicle_name(&self, sysid: u8) -> String {
        self.config
            .vehicles
            .get(&sysid)
            .cloned()
            .unwrap_or_else(|| format!("sysid {sysid}"))
    }

    fn proximity_event(
        &self,
        sysid: u8,
        track: &Track,
        m: &Measure,
        proximity: Proximity,
        now: i64,
        closed: Option<&str>,
    ) -> TrafficProximityEvent {
        let vehicle = self.vehicle_name(sysid);
        let label = track.label();
        let title = match closed {
            None => traffic_title(&label, m.horizontal_m, m.vertical_m, &vehicle),
            Some(reason) => traffic_closed_title(
                &label,
                &vehicle,
                reason,
                m.horizontal_m,
                proximity.closest.horizontal_m,
                proximity.closest.vertical_m,
            ),
        };
        TrafficProximityEvent {
            utc: UtcTime(now),
            kind: TrafficProximityKind,
            sysid,
            name: self.config.vehicles.get(&sysid).cloned(),
            state: if closed.is_some() {
                GapState::Closed
            } else {
                GapState::Open
            },
            icao: track.key.icao(),
            uas_id: track.key.uas_id().map(str::to_string),
            callsign: track.callsign.as_deref().map(str::to_string),
            horizontal_m: round_cm(m.horizontal_m),
            vertical_m: m.vertical_m.map(round_cm),
            bearing_deg: (m.bearing_deg * 10.0).round() / 10.0,
            altitude_m: track.altitude.map(|a| round_cm(a.m)),
            altitude_ref: track.altitude.map(|a| a.reference.as_str().to_string()),
            own_altitude_m: round_cm(m.own_altitude_m),
            own_altitude_ref: m.own_altitude_ref.as_str().to_string(),
            vertical_basis: m.vertical_basis.clone(),
            closest: TrafficPoint {
                horizontal_m: round_cm(proximity.closest.horizontal_m),
                vertical_m: proximity.closest.vertical_m.map(round_cm),
                ..proximity.closest
            },
            threshold_horizontal_m: self.config.horizontal_m,
            threshold_vertical_m: self.config.vertical_m,
            source: track.source(),
            opened_utc: closed.map(|_| UtcTime(proximity.opened_ns)),
            lasted_s: closed.map(|_| ns_to_seconds(now - proximity.opened_ns)),
            reason: closed.map(str::to_string),
            title,
            sites: Vec::new(),
        }
    }

    fn lost_event(&self, track: &Track, at: i64) -> TrafficEvent {
        TrafficEvent {
            utc: UtcTime(at),
            kind: TrafficTrackKind,
            state: TrafficState::Lost,
            icao: track.key.icao(),
            uas_id: track.key.uas_id().map(str::to_string),
            callsign: track.callsign.as_deref().map(str::to_string),
            last_utc: UtcTime(track.last_ns),
            reports: track.reports,
            source: track.source(),
            stale_s: ns_to_seconds(self.config.stale_ns),
            title: traffic_lost_title(&track.label(), at - track.last_ns),
        }
    }
}

/// Distances to the centimetre in events: the geodesic is exact far below that, the
/// positions themselves (1e-7 degrees, about 1 cm) are not.
fn round_cm(m: f64) -> f64 {
    (m * 100.0).round() / 100.0
}

fn broadcaster(source: RemoteIdSource, heard: Heard<'_>) -> Broadcaster {
    match source {
        Some(mac) => Broadcaster::Mac(mac),
        None => {
            let (sysid, compid) = heard.sender.unwrap_or((0, 0));
            Broadcaster::Sender(heard.link, sysid, compid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::event::TrafficProximityEvent;
    use crate::monitor::input::test_support::{S, T0};
    use crate::monitor::Event;
    use geographiclib_rs::{DirectGeodesic, Geodesic};

    const HOME: LatLon = LatLon {
        lat: 47.397_742,
        lon: 8.545_594,
    };
    const VEHICLE: u8 = 4;
    const PLANE: u32 = 0xA1B2C3;

    /// The point `m` metres from HOME towards `bearing`.
    fn from_home(bearing: f64, m: f64) -> LatLon {
        let (lat, lon) = Geodesic::wgs84().direct(HOME.lat, HOME.lon, bearing, m);
        LatLon { lat, lon }
    }

    fn monitor() -> TrafficMonitor {
        let mut config = TrafficConfig::default();
        config.vehicles.insert(VEHICLE, "UAS-04".into());
        TrafficMonitor::new(config)
    }

    fn heard(sender: Option<(u8, u8)>, utc_ns: i64) -> Heard<'static> {
        Heard {
            link: LinkId::FIRST,
            link_name: "radio1",
            sender,
            utc_ns,
        }
    }

    fn fix(position: LatLon, msl_m: f64) -> OwnFix {
        OwnFix {
            position,
            msl_m,
            ellipsoid_m: None,
            estimate: true,
        }
    }

    fn plane(at: LatLon, altitude_m: Option<f64>) -> TrafficMessage {
        let mut r = TrafficReport::bare(TrafficKey::Icao(PLANE), TrafficKind::Adsb);
        r.callsign = Some("N123AB".into());
        r.position = Some(at);
        r.altitude = altitude_m.map(|m| Altitude {
            m,
            reference: AltitudeRef::PressureQnh,
        });
        TrafficMessage::Report(r)
    }

    /// A ground receiver (sysid 200) reports the plane.
    fn report(m: &mut TrafficMonitor, t: i64, at: LatLon, alt: Option<f64>) -> Vec<Event> {
        m.heard(heard(Some((200, 1)), t), &plane(at, alt))
    }

    fn proximities(events: &[Event]) -> Vec<&TrafficProximityEvent> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::TrafficProximity(p) => Some(&**p),
                _ => None,
            })
            .collect()
    }

    /// The plane crosses 400 m north of the vehicle, 45 m above it, at 50 m/s from 2 km west to
    /// 2 km east, reported every second: one open as it comes within 1 km, one close past
    /// 1.1 km, the closest point abeam.
    #[test]
    fn a_crossing_opens_once_and_closes_once_with_its_closest_point() {
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        let abeam = from_home(0.0, 400.0);
        let mut events = Vec::new();
        for s in 0..=80 {
            let x = -2_000.0 + 50.0 * s as f64;
            let (lat, lon) = Geodesic::wgs84().direct(abeam.lat, abeam.lon, 90.0, x);
            let t = T0 + s * S;
            // The vehicle keeps reporting its position too.
            events.extend(m.own_fix(VEHICLE, t, fix(HOME, 500.0)));
            events.extend(report(&mut m, t, LatLon { lat, lon }, Some(545.0)));
        }
        let p = proximities(&events);
        assert_eq!(p.len(), 2, "{p:#?}");
        let (open, closed) = (p[0], p[1]);
        assert_eq!(
            (open.state, closed.state),
            (GapState::Open, GapState::Closed)
        );
        assert!(
            open.horizontal_m <= 1_000.0 && open.horizontal_m > 950.0,
            "{}",
            open.horizontal_m
        );
        assert_eq!(open.vertical_m, Some(45.0));
        assert_eq!(open.vertical_basis.as_deref(), Some("pressure_qnh vs msl"));
        assert_eq!(
            open.title,
            format!(
                "Traffic N123AB {:.0} m and 45 m above UAS-04",
                open.horizontal_m
            )
        );
        assert!(closed.horizontal_m > 1_100.0 && closed.horizontal_m < 1_160.0);
        assert_eq!(closed.reason.as_deref(), Some("left"));
        assert!(
            (closed.closest.horizontal_m - 400.0).abs() < 0.01,
            "{:?}",
            closed.closest
        );
        assert_eq!(closed.closest.utc, UtcTime(T0 + 40 * S));
        assert_eq!(closed.opened_utc, Some(open.utc));
        assert_eq!(closed.icao.as_deref(), Some("A1B2C3"));
        assert_eq!(closed.source.relayed_by, Some(200));
        assert!(
            closed
                .title
                .starts_with("Traffic N123AB clear of UAS-04 at 11"),
            "{}",
            closed.title
        );
        assert!(
            closed.title.ends_with("closest 400 m and 45 m above"),
            "{}",
            closed.title
        );
        assert_eq!(m.totals().proximities_opened, 1);
    }

    #[test]
    fn on_the_edge_it_stays_open_until_past_the_hysteresis() {
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        let steps = [
            (990.0, 1),
            (1_050.0, 0),
            (995.0, 0),
            (1_099.0, 0),
            (1_101.0, 1),
            (1_050.0, 0),
            (999.0, 1),
        ];
        for (i, (distance, expected)) in steps.into_iter().enumerate() {
            let events = report(
                &mut m,
                T0 + i as i64 * S,
                from_home(45.0, distance),
                Some(500.0),
            );
            assert_eq!(
                proximities(&events).len(),
                expected,
                "step {i} at {distance} m"
            );
        }
        // Vertically too: 150 m opens, 160 m holds, past 165 m closes.
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        let near = from_home(180.0, 300.0);
        for (i, (above, expected)) in [(200.0, 0), (150.0, 1), (160.0, 0), (-164.0, 0), (-166.0, 1)]
            .into_iter()
            .enumerate()
        {
            let events = report(&mut m, T0 + i as i64 * S, near, Some(500.0 + above));
            assert_eq!(proximities(&events).len(), expected, "{above} m above");
        }
    }

    #[test]
    fn a_track_without_altitude_is_judged_on_the_horizontal_and_says_so() {
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        let events = report(&mut m, T0, from_home(90.0, 500.0), None);
        let p = proximities(&events);
        assert_eq!(
            (p.len(), p[0].vertical_m, p[0].vertical_basis.clone()),
            (1, None, None)
        );
        assert_eq!(
            p[0].title,
            "Traffic N123AB 500 m, altitude unknown, from UAS-04"
        );
    }

    /// Not updated for more than `stale_s`: the open proximity closes (`lost`) and the track
    /// goes with a `traffic` `lost`, both stamped where it fell due.
    #[test]
    fn a_stale_track_is_lost_and_its_proximity_closed() {
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        report(&mut m, T0, from_home(0.0, 300.0), Some(500.0));
        // The vehicle keeps reporting; the plane goes quiet.
        for s in 1..=19 {
            m.own_fix(VEHICLE, T0 + s * S, fix(HOME, 500.0));
        }
        assert!(
            m.poll(T0 + 20 * S).is_empty(),
            "exactly stale_s is not stale"
        );
        assert_eq!(m.next_deadline(), Some(T0 + 20 * S + 1));
        m.own_fix(VEHICLE, T0 + 20 * S, fix(HOME, 500.0));
        let events = m.poll(T0 + 21 * S);
        let kinds: Vec<&str> = events.iter().map(Event::kind).collect();
        assert_eq!(kinds, ["traffic_proximity", "traffic"]);
        let Event::TrafficProximity(closed) = &events[0] else {
            panic!()
        };
        assert_eq!(
            (closed.reason.as_deref(), closed.utc),
            (Some("lost"), UtcTime(T0 + 20 * S + 1))
        );
        let Event::Traffic(lost) = &events[1] else {
            panic!()
        };
        assert_eq!(lost.title, "Traffic N123AB lost: not heard for 20.0 s");
        assert_eq!((lost.reports, lost.last_utc), (1, UtcTime(T0)));
        assert_eq!(m.tracks().count(), 0);
        // The vehicle's own position ages out as well, with nothing open to close.
        assert!(m.poll(T0 + 60 * S).is_empty());
        assert!(m.own_positions().is_empty());
    }

    #[test]
    fn a_vehicle_without_position_no_longer_judges_its_proximities() {
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        let mut events = Vec::new();
        for s in 0..=25 {
            let t = T0 + s * S;
            events.extend(m.poll(t));
            events.extend(report(&mut m, t, from_home(0.0, 300.0), Some(500.0)));
        }
        let p = proximities(&events);
        assert_eq!(p.len(), 2, "{p:#?}");
        assert_eq!(p[1].reason.as_deref(), Some("own_position_lost"));
        assert_eq!(p[1].utc, UtcTime(T0 + 20 * S + 1));
    }

    #[test]
    fn our_own_vehicles_are_not_traffic() {
        // Configured: the vehicle's transponder, heard by a ground receiver, next to it.
        let mut config = TrafficConfig::default();
        config.own_icao.insert(PLANE, VEHICLE);
        let mut m = TrafficMonitor::new(config);
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        assert!(report(&mut m, T0, from_home(0.0, 10.0), Some(500.0)).is_empty());
        assert_eq!(m.tracks().next().unwrap().own_sysid, Some(VEHICLE));
        // Relayed: vehicle 4 relays its own ADS-B out, at its own position (GNSS jitter of 8 m).
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        let own = m.heard(
            heard(Some((VEHICLE, 1)), T0 + S / 2),
            &plane(from_home(30.0, 8.0), Some(480.0)),
        );
        assert!(own.is_empty(), "{own:?}");
        assert_eq!(m.tracks().next().unwrap().own_sysid, Some(VEHICLE));
        assert_eq!(m.totals().own_reports, 1);
        // ... while an intruder it relays from 200 m away is traffic.
        let mut intruder = plane(from_home(30.0, 200.0), Some(520.0));
        if let TrafficMessage::Report(r) = &mut intruder {
            r.key = TrafficKey::Icao(0x123456);
        }
        let events = m.heard(heard(Some((VEHICLE, 1)), T0 + S), &intruder);
        assert_eq!(proximities(&events).len(), 1);
        // The relayed own track later far from the vehicle (ten times own_match_m): not ours.
        let far = m.heard(
            heard(Some((VEHICLE, 1)), T0 + 2 * S),
            &plane(from_home(0.0, 600.0), Some(500.0)),
        );
        assert_eq!(proximities(&far).len(), 1, "{far:?}");
    }

    #[test]
    fn remote_id_location_waits_for_its_basic_id() {
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        let mut location = TrafficReport::bare(TrafficKey::UasId("".into()), TrafficKind::RemoteId);
        location.position = Some(from_home(270.0, 150.0));
        location.altitude = Some(Altitude {
            m: 560.0,
            reference: AltitudeRef::Ellipsoid,
        });
        let rid = Some((77, 1));
        let loc = TrafficMessage::RemoteIdLocation {
            source: None,
            report: Box::new(location),
        };
        assert!(m.heard(heard(rid, T0), &loc).is_empty());
        assert_eq!(m.tracks().count(), 0);
        let basic = TrafficMessage::RemoteIdBasic {
            source: None,
            uas_id: "FOX-RID-77".into(),
        };
        let events = m.heard(heard(rid, T0 + S / 2), &basic);
        let p = proximities(&events);
        assert_eq!(p.len(), 1, "{events:?}");
        assert_eq!(p[0].uas_id.as_deref(), Some("FOX-RID-77"));
        assert_eq!(p[0].icao, None);
        // An ellipsoidal height against our mean-sea-level one: said so.
        assert_eq!(p[0].vertical_basis.as_deref(), Some("ellipsoid vs msl"));
        assert_eq!(p[0].vertical_m, Some(60.0));
        // The vehicle's GNSS says the geoid is 48 m above the ellipsoid here: compared on the
        // ellipsoid from then on.
        let gnss = OwnFix {
            position: HOME,
            msl_m: 500.0,
            ellipsoid_m: Some(548.0),
            estimate: false,
        };
        m.own_fix(VEHICLE, T0 + S, gnss);
        let near = m.nearby(VEHICLE, 1_000.0);
        assert_eq!(
            near[0].1.vertical_basis.as_deref(),
            Some("ellipsoid vs ellipsoid")
        );
        assert!((near[0].1.vertical_m.unwrap() - 12.0).abs() < 1e-9);
        // Later locations go straight to the track.
        let events = m.heard(heard(rid, T0 + 2 * S), &loc);
        assert!(events.is_empty());
        assert_eq!(m.tracks().next().unwrap().reports, 2);
    }

    #[test]
    fn gps_raw_int_stands_in_only_while_no_estimate_comes() {
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        let raw = OwnFix {
            position: from_home(0.0, 50.0),
            msl_m: 510.0,
            ellipsoid_m: None,
            estimate: false,
        };
        m.own_fix(VEHICLE, T0 + S, raw);
        assert_eq!(m.own_positions()[&VEHICLE].fix.msl_m, 500.0);
        m.own_fix(VEHICLE, T0 + 4 * S, raw);
        assert_eq!(m.own_positions()[&VEHICLE].fix.msl_m, 510.0);
    }

    #[test]
    fn far_traffic_is_screened_and_nearby_is_sorted() {
        let mut m = monitor();
        m.own_fix(VEHICLE, T0, fix(HOME, 500.0));
        for (i, d) in [4_000.0, 2_500.0, 30_000.0].into_iter().enumerate() {
            let mut r = TrafficReport::bare(TrafficKey::Icao(i as u32 + 1), TrafficKind::Sbs);
            r.position = Some(from_home(10.0 * i as f64, d));
            assert!(m
                .heard(heard(None, T0), &TrafficMessage::Report(r))
                .is_empty());
        }
        let near: Vec<f64> = m
            .nearby(VEHICLE, 5_000.0)
            .iter()
            .map(|(_, m)| m.horizontal_m.round())
            .collect();
        assert_eq!(near, [2_500.0, 4_000.0]);
    }
}
