//! The events stream's records: one JSON object per event, `utc` first, then `kind`
//! (`telemetry_gap`, `link_gap`, `sysid_conflict`, `stream`, `traffic_proximity`, `traffic`,
//! `latency`, `clock`, `link`, `receiver`, `dropped`, `retention`, and the `range` view's
//! `coverage`), then the kind's fields
//! in a fixed order (serde writes struct fields in declaration order).
//!
//! The monitors build `telemetry_gap`, `latency` and `clock` events; the `link`, `receiver`,
//! `dropped` and `retention` shapes are defined here so the daemon's events all share one type, [`Event`].
//!
//! Each struct's `kind` field is a zero-sized marker that serialises as the kind's name, so a
//! struct can never be written with the wrong kind, and [`Event`] deserialises back by kind.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::utc::UtcTime;

/// Defines a unit struct that serialises as one fixed string and only deserialises from it.
macro_rules! event_kind {
    ($(#[$doc:meta])* $marker:ident = $text:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $marker;

        impl $marker {
            /// The value of `kind` in the JSON object.
            pub const NAME: &'static str = $text;
        }

        impl Serialize for $marker {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($text)
            }
        }

        impl<'de> Deserialize<'de> for $marker {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                if text == $text {
                    Ok($marker)
                } else {
                    Err(serde::de::Error::custom(format!(
                        "kind {text:?} is not {:?}",
                        $text
                    )))
                }
            }
        }
    };
}

event_kind!(
    /// `kind: "telemetry_gap"`.
    TelemetryGapKind = "telemetry_gap"
);
event_kind!(
    /// `kind: "latency"`.
    LatencyKind = "latency"
);
event_kind!(
    /// `kind: "clock"`.
    ClockKind = "clock"
);
event_kind!(
    /// `kind: "link"`.
    LinkKind = "link"
);
event_kind!(
    /// `kind: "receiver"`.
    ReceiverKind = "receiver"
);
event_kind!(
    /// `kind: "dropped"`.
    DroppedKind = "dropped"
);
event_kind!(
    /// `kind: "retention"`.
    RetentionKind = "retention"
);
event_kind!(
    /// `kind: "coverage"` (the `range` view's, about sites).
    CoverageKind = "coverage"
);
event_kind!(
    /// `kind: "link_gap"`: a vehicle silent on one link while another hears it.
    LinkGapKind = "link_gap"
);
event_kind!(
    /// `kind: "sysid_conflict"`: two senders behind one (sysid, compid).
    SysidConflictKind = "sysid_conflict"
);
event_kind!(
    /// `kind: "stream"`: a steady message stream that stopped or slowed while heartbeats go on.
    StreamKind = "stream"
);
event_kind!(
    /// `kind: "traffic_proximity"`: other traffic within the thresholds of one of our vehicles.
    TrafficProximityKind = "traffic_proximity"
);
event_kind!(
    /// `kind: "traffic"`: a traffic track's life (`lost`).
    TrafficTrackKind = "traffic"
);

/// Whether a telemetry gap is still running (`open`) or ended by a heartbeat (`closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GapState {
    Open,
    Closed,
}

/// A `telemetry_gap` event. Every key is always present (null where it does not apply), so
/// `open` and `closed` lines have the same keys.
///
/// `utc` is when the finding happened on the receipts' own clock, never when a caller got round
/// to asking: for `open`, the first instant the gap exceeded the threshold (last receipt +
/// threshold + 1 ns); for `closed`, the next heartbeat's receipt time. That keeps live and
/// offline findings identical.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapEvent {
    pub utc: UtcTime,
    pub kind: TelemetryGapKind,
    pub sysid: u8,
    pub state: GapState,
    /// The last HEARTBEAT before the gap; null for an expected vehicle never heard since start.
    pub last_recv_utc: Option<UtcTime>,
    /// Where the finding sits: one expected interval after the last receipt (or after the
    /// detector's start for a vehicle never heard).
    pub due_utc: UtcTime,
    /// The HEARTBEAT that ended the gap (`closed` only).
    pub next_recv_utc: Option<UtcTime>,
    /// Seconds from `last_recv_utc` (or the start) to `next_recv_utc` (`closed` only; also null
    /// when the closing receipt is stamped before the last one, the receiving clock having
    /// stepped back, so the length is unknown).
    pub gap_s: Option<f64>,
    /// `Heartbeat due and not received. Nothing for 6.96 s` (`closed` with a known `gap_s`).
    pub title: Option<String>,
    /// Always [`super::title::OBSERVED`].
    pub observed: String,
    /// Links the system has been heard on since the detector started, sorted by name.
    pub links: Vec<String>,
    /// The vehicle's name from the config, when set.
    pub name: Option<String>,
    /// The expected heartbeat interval used for `due_utc`, learned from recent spacing.
    pub expected_interval_s: f64,
    /// The configured gap threshold.
    pub threshold_s: f64,
    /// Datagrams the receiver itself dropped (a full link queue, the kernel's socket buffer) on
    /// the links that carry this vehicle since its last heartbeat: set only when there were
    /// any, so an investigator can tell radio silence from receiver overload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_dropped: Option<u64>,
    /// `true` on a `closed` event whose closing HEARTBEAT is stamped inside the threshold: the
    /// receipt reached the detector after it had judged the system silent, so the `open` was
    /// an error and this close takes it back. Absent on every real gap, so a gap that was
    /// closed is never shorter than the threshold unless it says it was withdrawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdrawn: Option<bool>,
    /// What the radios on the vehicle's links reported before the last heartbeat and since
    /// (RADIO_STATUS), when any did: facts beside the gap, not a verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub radio: Vec<super::radio::RadioEvidence>,
}

/// A `link_gap` event: the vehicle silent on `link` while `hearing` still hear it. Opened and
/// closed like a telemetry_gap; never a telemetry_gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkGapEvent {
    pub utc: UtcTime,
    pub kind: LinkGapKind,
    pub sysid: u8,
    pub link: String,
    pub state: GapState,
    /// The vehicle's last HEARTBEAT on this link.
    pub last_recv_utc: UtcTime,
    /// The HEARTBEAT on this link that ended the silence (`closed` only).
    pub next_recv_utc: Option<UtcTime>,
    /// Seconds from `last_recv_utc` to `next_recv_utc` (`closed` only).
    pub gap_s: Option<f64>,
    /// The links hearing the vehicle at the event, sorted.
    pub hearing: Vec<String>,
    pub title: String,
    pub observed: String,
    pub name: Option<String>,
    pub threshold_s: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub radio: Vec<super::radio::RadioEvidence>,
}

/// A HEARTBEAT's (type, autopilot), as evidence of two kinds of vehicle on one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictIdentity {
    #[serde(rename = "type")]
    pub mav_type: u8,
    pub autopilot: u8,
}

/// The two runs of sequence numbers on one link: each run's last number, and how many frames
/// continued the second.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictRuns {
    pub link: String,
    pub runs: [u8; 2],
    pub interleaved: u64,
}

/// A `sysid_conflict` event: two senders behind one (sysid, compid), with the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SysidConflictEvent {
    pub utc: UtcTime,
    pub kind: SysidConflictKind,
    pub sysid: u8,
    pub compid: u8,
    pub state: GapState,
    pub name: Option<String>,
    /// `interleaved_sequences`, `heartbeat_identity`, `sources`.
    pub reasons: Vec<String>,
    pub links: Vec<String>,
    /// Peer addresses the id's heartbeats came from (UDP and TCP links).
    pub sources: Vec<String>,
    pub identities: Vec<ConflictIdentity>,
    pub sequences: Vec<ConflictRuns>,
    pub title: String,
    /// From the open to the last evidence (`closed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lasted_s: Option<f64>,
}

/// A `stream` event: a steady stream of one message from one vehicle that stopped or fell
/// below half its rate while its heartbeats go on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamEvent {
    pub utc: UtcTime,
    pub kind: StreamKind,
    pub sysid: u8,
    pub name: Option<String>,
    pub msgid: u32,
    pub msg: String,
    pub state: GapState,
    /// `stopped` or `slowed`.
    pub reason: String,
    /// The steady rate before, frames per second.
    pub expected_hz: f64,
    /// The rate over the last 3 s at the event.
    pub observed_hz: f64,
    /// The stream's last frame before the event.
    pub last_recv_utc: UtcTime,
    pub title: String,
}

/// A `latency` event: one-way latency from SYSTEM_TIME over the sliding window, or the vehicle's
/// clock offset when its clock is plainly not on UTC (then the latency figures are null).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyEvent {
    pub utc: UtcTime,
    pub kind: LatencyKind,
    pub sysid: u8,
    /// Samples in the window.
    pub count: usize,
    /// Median of `recv_utc - time_unix_usec`, ms (null when `clock_offset_ms` is set).
    pub p50_ms: Option<f64>,
    /// 95th percentile, ms (null when `clock_offset_ms` is set).
    pub p95_ms: Option<f64>,
    /// Largest sample, ms (null when `clock_offset_ms` is set).
    pub max_ms: Option<f64>,
    /// The window's median when it says the vehicle clock is off UTC; null otherwise.
    pub clock_offset_ms: Option<f64>,
    /// The finest latency the samples can show, ms: 1 from a receive log's millisecond stamps,
    /// 0.001 live (the vehicle's `time_unix_usec` counts microseconds).
    pub resolution_ms: f64,
    /// The figures (`p50_ms`, `p95_ms`, `max_ms`) under the resolution: null above, since a
    /// message cannot arrive before it was sent and the stamps cannot tell less.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub below_resolution: Vec<String>,
    /// The configured window length in seconds.
    pub window_s: f64,
    /// The receiver's kernel clock: synchronised by NTP or not (when known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronised: Option<bool>,
    /// The receiver's kernel clock maximum error, µs (when known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_us: Option<i64>,
}

/// What changed in the receiver's clock synchronisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockState {
    /// Was synchronised, now is not.
    Lost,
    /// Was not synchronised, now is.
    Regained,
    /// The first reading after start was already unsynchronised.
    UnsynchronisedAtStart,
}

/// A `clock` event: the receiver's NTP synchronisation was lost or regained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockEvent {
    pub utc: UtcTime,
    pub kind: ClockKind,
    pub state: ClockState,
    pub synchronised: bool,
    pub max_error_us: i64,
}

/// A link's state change or error report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkState {
    Up,
    Down,
    Errors,
    /// The receiver itself dropped input on this link (a full link queue, `overload`; the
    /// kernel's socket buffer, `kernel`), counted since the last such event.
    Dropped,
}

/// A `link` event (built by the daemon).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkEvent {
    pub utc: UtcTime,
    pub kind: LinkKind,
    pub link: String,
    pub state: LinkState,
    /// Why the link went down, e.g. the I/O error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Counters for `errors`, e.g. `crc_errors`, `unknown_msgid`, `bad_signature`, `junk_bytes`
    /// (a sorted map, so the key order is deterministic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<BTreeMap<String, u64>>,
}

/// The receiver's own lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiverState {
    Start,
    Stop,
    Config,
}

/// A `receiver` event (built by the daemon).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReceiverEvent {
    pub utc: UtcTime,
    pub kind: ReceiverKind,
    pub state: ReceiverState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Free-form detail, e.g. the effective config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

/// A `dropped` event: records the daemon finally had to drop, with their count and time span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedEvent {
    pub utc: UtcTime,
    pub kind: DroppedKind,
    /// Which stream lost records, e.g. `receive`, `events`, `webhook`.
    pub stream: String,
    pub count: u64,
    pub first_utc: UtcTime,
    pub last_utc: UtcTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One day folder that retention removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemovedFolder {
    /// The folder under `data_dir`, e.g. `receive/2026-06-01`.
    pub folder: String,
    pub files: u64,
    pub bytes: u64,
    /// The limit that removed it: `max_age_days` or `max_total_mb`.
    pub reason: String,
}

/// A `retention` event (built by the daemon): the day folders removed by one check, oldest
/// first, and what the three streams hold after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetentionEvent {
    pub utc: UtcTime,
    pub kind: RetentionKind,
    pub removed: Vec<RemovedFolder>,
    /// Bytes in `receive/`, `events/` and `tlog/` after the removals.
    pub total_bytes: u64,
    pub max_age_days: Option<u32>,
    pub max_total_mb: Option<u64>,
    /// Set when the streams are still over `max_total_mb` with nothing left that may go (what
    /// is left is today's or open), with the bytes over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_by_bytes: Option<u64>,
}

/// What changed in the range's coverage: which sites hear a vehicle, whether a site is heard
/// at all, whether a site's clock is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverageState {
    /// A vehicle already heard by other sites is now heard by this one too.
    SiteJoined,
    /// This site no longer hears a vehicle that other sites still hear (with `site_joined`,
    /// a vehicle moving from one site's coverage to another's).
    SiteLeft,
    /// Nothing at all has come from this site for longer than the gap threshold.
    SiteSilent,
    /// A silent site is heard again.
    SiteHeard,
    /// This site's receipt times are far from the range's clock: they are corrected by the
    /// measured offset, not trusted as stamped.
    ClockOff,
    /// A flagged site's receipt times agree with the range's clock again.
    ClockOk,
    /// The site's receiver says its own clock is not NTP-synchronised (its `clock` event): its
    /// times are checked against the range's, as every site's are.
    SiteUnsynchronised,
    /// The site's receiver says its clock is synchronised again.
    SiteSynchronised,
    /// The range's input from this site is stalled (its progress marks stopped: NATS away, the
    /// site's network down, the range's consumer behind): its vehicles are not judged silent
    /// from it until the input catches up, then by the receipts' own times.
    SiteInputStalled,
    /// The site's input caught up again.
    SiteInputResumed,
    /// Stalled for so long that the range judges without it: its vehicles heard nowhere else
    /// may be in a gap, as far as the range can hear.
    SiteInputLost,
}

/// A `coverage` event (built by the `range` view).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageEvent {
    pub utc: UtcTime,
    pub kind: CoverageKind,
    pub state: CoverageState,
    pub site: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysid: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The sites that hear the vehicle now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sites: Option<Vec<String>>,
    /// How long the site was silent (`site_heard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silent_s: Option<f64>,
    /// The site's clock minus the range's, as measured (`clock_off`, `clock_ok`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_s: Option<f64>,
    /// The site receiver's own estimate of its clock error (`site_unsynchronised`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_us: Option<i64>,
    /// How far the site's input was behind the range's clock (`site_input_*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_s: Option<f64>,
    /// Receipts that came after the range had judged their time without them
    /// (`site_input_resumed` after `site_input_lost`): kept in the coverage, not re-judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_receipts: Option<u64>,
    pub title: String,
}

/// Where a traffic report came from: its kind (`adsb`, `remote_id`, `sbs`), the link, and the
/// system that sent it over MAVLink (a ground ADS-B receiver, or one of our vehicles relaying
/// what its ADS-B-in or Remote ID receiver hears); null for an SBS feed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficSource {
    pub kind: String,
    pub link: String,
    pub relayed_by: Option<u8>,
}

/// One moment of a proximity: the horizontal distance (on the WGS-84 ellipsoid) and the
/// vertical separation (positive: the traffic is above), metres.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrafficPoint {
    pub utc: UtcTime,
    pub horizontal_m: f64,
    pub vertical_m: Option<f64>,
}

/// A `traffic_proximity` event: a traffic track within `threshold_horizontal_m` and
/// `threshold_vertical_m` of one of our vehicles (`open`), or out of them again, lost, or no
/// longer judged (`closed`, with `reason`). Every key is always present (null where it does
/// not apply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficProximityEvent {
    pub utc: UtcTime,
    pub kind: TrafficProximityKind,
    pub sysid: u8,
    pub name: Option<String>,
    pub state: GapState,
    /// The track's key: its ICAO address (six hex digits) or its Remote ID UAS ID.
    pub icao: Option<String>,
    pub uas_id: Option<String>,
    pub callsign: Option<String>,
    /// At the event: the distance on the ellipsoid, the vertical separation (null when the
    /// traffic gave no altitude: then judged on the horizontal alone), the bearing from our
    /// vehicle to it (degrees from true north).
    pub horizontal_m: f64,
    pub vertical_m: Option<f64>,
    pub bearing_deg: f64,
    /// The traffic's altitude and what it is measured from (`pressure_standard`,
    /// `pressure_qnh`, `geometric`, `ellipsoid`), and ours (`msl`, or `ellipsoid` when the
    /// vehicle's GNSS gave its geoid separation): `vertical_basis` says which two
    /// `vertical_m` compares, e.g. `pressure_standard vs msl`.
    pub altitude_m: Option<f64>,
    pub altitude_ref: Option<String>,
    pub own_altitude_m: f64,
    pub own_altitude_ref: String,
    pub vertical_basis: Option<String>,
    /// The nearest the track has come to the vehicle since the proximity opened (smallest
    /// slant distance, or horizontal where no altitude is known).
    pub closest: TrafficPoint,
    pub threshold_horizontal_m: f64,
    pub threshold_vertical_m: f64,
    pub source: TrafficSource,
    /// When it opened, and for how long (`closed` only).
    pub opened_utc: Option<UtcTime>,
    pub lasted_s: Option<f64>,
    /// Why it closed: `left` (out of the thresholds and their hysteresis), `lost` (the track
    /// aged out), `own_position_lost` (no position of our vehicle for `stale_s`).
    pub reason: Option<String>,
    /// `Traffic N123AB 640 m and 45 m above UAS-04`.
    pub title: String,
    /// The `range` view only: the sites whose own proximity events made this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<String>,
}

/// What happened to a track.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrafficState {
    /// Not updated for `stale_s`: dropped.
    Lost,
}

/// A `traffic` event: a track that aged out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficEvent {
    pub utc: UtcTime,
    pub kind: TrafficTrackKind,
    pub state: TrafficState,
    pub icao: Option<String>,
    pub uas_id: Option<String>,
    pub callsign: Option<String>,
    /// Its last report, and how many it had.
    pub last_utc: UtcTime,
    pub reports: u64,
    pub source: TrafficSource,
    pub stale_s: f64,
    pub title: String,
}

/// Any event of the events stream. Serialises as the inner struct alone (no wrapper), and
/// deserialises by its `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Event {
    TelemetryGap(GapEvent),
    Latency(LatencyEvent),
    Clock(ClockEvent),
    Link(LinkEvent),
    Receiver(ReceiverEvent),
    Dropped(DroppedEvent),
    Retention(RetentionEvent),
    Coverage(CoverageEvent),
    LinkGap(LinkGapEvent),
    SysidConflict(SysidConflictEvent),
    Stream(StreamEvent),
    /// Boxed: the largest event by far (the track and the closest point), which would make
    /// every event, and every pipeline action, twice the size.
    TrafficProximity(Box<TrafficProximityEvent>),
    Traffic(TrafficEvent),
}

impl Event {
    /// The event's `utc`.
    pub fn utc(&self) -> UtcTime {
        match self {
            Event::TelemetryGap(event) => event.utc,
            Event::Latency(event) => event.utc,
            Event::Clock(event) => event.utc,
            Event::Link(event) => event.utc,
            Event::Receiver(event) => event.utc,
            Event::Dropped(event) => event.utc,
            Event::Retention(event) => event.utc,
            Event::Coverage(event) => event.utc,
            Event::LinkGap(event) => event.utc,
            Event::SysidConflict(event) => event.utc,
            Event::Stream(event) => event.utc,
            Event::TrafficProximity(event) => event.utc,
            Event::Traffic(event) => event.utc,
        }
    }

    /// The event's `kind` string.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::TelemetryGap(_) => TelemetryGapKind::NAME,
            Event::Latency(_) => LatencyKind::NAME,
            Event::Clock(_) => ClockKind::NAME,
            Event::Link(_) => LinkKind::NAME,
            Event::Receiver(_) => ReceiverKind::NAME,
            Event::Dropped(_) => DroppedKind::NAME,
            Event::Retention(_) => RetentionKind::NAME,
            Event::Coverage(_) => CoverageKind::NAME,
            Event::LinkGap(_) => LinkGapKind::NAME,
            Event::SysidConflict(_) => SysidConflictKind::NAME,
            Event::Stream(_) => StreamKind::NAME,
            Event::TrafficProximity(_) => TrafficProximityKind::NAME,
            Event::Traffic(_) => TrafficTrackKind::NAME,
        }
    }

    /// The event as one JSON line, without the trailing newline.
    pub fn to_json_line(&self) -> String {
        // Serialising these plain structs (strings, numbers, bools, string-keyed maps, JSON
        // values) into memory has no failure path in serde_json; non-finite floats become null.
        serde_json::to_string(self).expect("event serialisation into memory cannot fail")
    }
}

impl From<GapEvent> for Event {
    fn from(event: GapEvent) -> Self {
        Event::TelemetryGap(event)
    }
}

impl From<LatencyEvent> for Event {
    fn from(event: LatencyEvent) -> Self {
        Event::Latency(event)
    }
}

impl From<ClockEvent> for Event {
    fn from(event: ClockEvent) -> Self {
        Event::Clock(event)
    }
}

impl From<LinkEvent> for Event {
    fn from(event: LinkEvent) -> Self {
        Event::Link(event)
    }
}

impl From<ReceiverEvent> for Event {
    fn from(event: ReceiverEvent) -> Self {
        Event::Receiver(event)
    }
}

impl From<DroppedEvent> for Event {
    fn from(event: DroppedEvent) -> Self {
        Event::Dropped(event)
    }
}

impl From<RetentionEvent> for Event {
    fn from(event: RetentionEvent) -> Self {
        Event::Retention(event)
    }
}

impl From<CoverageEvent> for Event {
    fn from(event: CoverageEvent) -> Self {
        Event::Coverage(event)
    }
}

impl From<LinkGapEvent> for Event {
    fn from(event: LinkGapEvent) -> Self {
        Event::LinkGap(event)
    }
}

impl From<SysidConflictEvent> for Event {
    fn from(event: SysidConflictEvent) -> Self {
        Event::SysidConflict(event)
    }
}

impl From<StreamEvent> for Event {
    fn from(event: StreamEvent) -> Self {
        Event::Stream(event)
    }
}

impl From<TrafficProximityEvent> for Event {
    fn from(event: TrafficProximityEvent) -> Self {
        Event::TrafficProximity(Box::new(event))
    }
}

impl From<TrafficEvent> for Event {
    fn from(event: TrafficEvent) -> Self {
        Event::Traffic(event)
    }
}

/// The design's example events, for tests across the crate.
#[cfg(test)]
pub mod examples {
    use super::*;
    use crate::monitor::title::OBSERVED;
    use crate::utc::parse_utc_ns;

    fn at(text: &str) -> UtcTime {
        UtcTime(parse_utc_ns(text).unwrap())
    }

    pub fn closed_gap() -> GapEvent {
        GapEvent {
            utc: at("2026-09-24T14:32:10.874Z"),
            kind: TelemetryGapKind,
            sysid: 4,
            state: GapState::Closed,
            last_recv_utc: Some(at("2026-09-24T14:32:03.912Z")),
            due_utc: at("2026-09-24T14:32:04.912Z"),
            next_recv_utc: Some(at("2026-09-24T14:32:10.874Z")),
            gap_s: Some(6.962),
            title: Some("Heartbeat due and not received. Nothing for 6.96 s".into()),
            observed: OBSERVED.into(),
            links: vec!["radio1".into(), "usb0".into()],
            name: Some("UAS-04".into()),
            expected_interval_s: 1.0,
            threshold_s: 3.0,
            receiver_dropped: None,
            withdrawn: None,
            radio: Vec::new(),
        }
    }

    /// [`closed_gap`] while it was open: nothing of its end known.
    pub fn open_gap() -> GapEvent {
        GapEvent {
            state: GapState::Open,
            next_recv_utc: None,
            gap_s: None,
            title: None,
            ..closed_gap()
        }
    }

    /// An aircraft 640 m from UAS-04 and 45 m above it, by ADS-B from a ground receiver.
    pub fn traffic_proximity() -> TrafficProximityEvent {
        TrafficProximityEvent {
            utc: at("2026-09-24T14:40:01.250Z"),
            kind: TrafficProximityKind,
            sysid: 4,
            name: Some("UAS-04".into()),
            state: GapState::Open,
            icao: Some("A1B2C3".into()),
            uas_id: None,
            callsign: Some("N123AB".into()),
            horizontal_m: 640.21,
            vertical_m: Some(45.3),
            bearing_deg: 271.5,
            altitude_m: Some(533.4),
            altitude_ref: Some("pressure_qnh".into()),
            own_altitude_m: 488.1,
            own_altitude_ref: "msl".into(),
            vertical_basis: Some("pressure_qnh vs msl".into()),
            closest: TrafficPoint {
                utc: at("2026-09-24T14:40:01.250Z"),
                horizontal_m: 640.21,
                vertical_m: Some(45.3),
            },
            threshold_horizontal_m: 1000.0,
            threshold_vertical_m: 150.0,
            source: TrafficSource {
                kind: "adsb".into(),
                link: "radio1".into(),
                relayed_by: Some(200),
            },
            opened_utc: None,
            lasted_s: None,
            reason: None,
            title: "Traffic N123AB 640 m and 45 m above UAS-04".into(),
            sites: Vec::new(),
        }
    }

    /// A window's latency for `sysid`: p95 twice the median, the maximum three times.
    pub fn latency(sysid: u8, utc_ns: i64, p50: f64) -> LatencyEvent {
        LatencyEvent {
            utc: UtcTime(utc_ns),
            kind: LatencyKind,
            sysid,
            count: 10,
            p50_ms: Some(p50),
            p95_ms: Some(p50 * 2.0),
            max_ms: Some(p50 * 3.0),
            clock_offset_ms: None,
            resolution_ms: 0.001,
            below_resolution: Vec::new(),
            window_s: 60.0,
            synchronised: None,
            max_error_us: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::examples::{closed_gap, latency, open_gap, traffic_proximity};
    use super::*;

    #[test]
    fn gap_event_serialises_with_utc_first_and_fixed_key_order() {
        let line = Event::from(closed_gap()).to_json_line();
        assert_eq!(
            line,
            concat!(
                r#"{"utc":"2026-09-24T14:32:10.874Z","kind":"telemetry_gap","sysid":4,"state":"closed","#,
                r#""last_recv_utc":"2026-09-24T14:32:03.912Z","due_utc":"2026-09-24T14:32:04.912Z","#,
                r#""next_recv_utc":"2026-09-24T14:32:10.874Z","gap_s":6.962,"#,
                r#""title":"Heartbeat due and not received. Nothing for 6.96 s","#,
                r#""observed":"Observed: telemetry receive gap, not necessarily radio failure","#,
                r#""links":["radio1","usb0"],"name":"UAS-04","expected_interval_s":1.0,"threshold_s":3.0}"#
            )
        );
    }

    #[test]
    fn open_gap_keeps_every_key_with_nulls() {
        let value: serde_json::Value = serde_json::to_value(open_gap()).unwrap();
        let keys = crate::test_support::json_keys(&value);
        assert_eq!(keys.len(), 14);
        assert_eq!(value["state"], "open");
        assert!(value["next_recv_utc"].is_null() && value["title"].is_null());
    }

    #[test]
    fn a_traffic_proximity_has_every_key_in_order_and_reads_back() {
        let event = Event::from(traffic_proximity());
        let line = event.to_json_line();
        assert!(
            line.starts_with(r#"{"utc":"2026-09-24T14:40:01.250Z","kind":"traffic_proximity","sysid":4,"name":"UAS-04","state":"open","icao":"A1B2C3","uas_id":null,"callsign":"N123AB","horizontal_m":640.21,"vertical_m":45.3,"#),
            "{line}"
        );
        assert!(line.ends_with(r#""title":"Traffic N123AB 640 m and 45 m above UAS-04"}"#));
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, event);
        let lost = Event::from(TrafficEvent {
            utc: UtcTime(20_001_000_000),
            kind: TrafficTrackKind,
            state: TrafficState::Lost,
            icao: Some("A1B2C3".into()),
            uas_id: None,
            callsign: None,
            last_utc: UtcTime(0),
            reports: 7,
            source: traffic_proximity().source,
            stale_s: 20.0,
            title: "Traffic A1B2C3 lost: not heard for 20.0 s".into(),
        });
        let back: Event = serde_json::from_str(&lost.to_json_line()).unwrap();
        assert_eq!((back.kind(), back), ("traffic", lost));
    }

    #[test]
    fn latency_event_omits_unknown_clock_status() {
        assert_eq!(
            Event::from(latency(1, 0, 12.5)).to_json_line(),
            concat!(
                r#"{"utc":"1970-01-01T00:00:00.000Z","kind":"latency","sysid":1,"count":10,"#,
                r#""p50_ms":12.5,"p95_ms":25.0,"max_ms":37.5,"clock_offset_ms":null,"resolution_ms":0.001,"window_s":60.0}"#
            )
        );
    }

    #[test]
    fn events_deserialise_back_by_kind() {
        let gap = Event::from(closed_gap());
        let clock = Event::from(ClockEvent {
            utc: UtcTime(1_000_000),
            kind: ClockKind,
            state: ClockState::Lost,
            synchronised: false,
            max_error_us: 16_000_000,
        });
        let link = Event::from(LinkEvent {
            utc: UtcTime(2_000_000),
            kind: LinkKind,
            link: "usb0".into(),
            state: LinkState::Down,
            reason: Some("EIO".into()),
            counts: None,
        });
        let retention = Event::from(RetentionEvent {
            utc: UtcTime(3_000_000),
            kind: RetentionKind,
            removed: vec![RemovedFolder {
                folder: "receive/1970-01-01".into(),
                files: 2,
                bytes: 4096,
                reason: "max_age_days".into(),
            }],
            total_bytes: 1 << 20,
            max_age_days: Some(90),
            max_total_mb: None,
            over_by_bytes: None,
        });
        for event in [gap, clock, link, retention] {
            let back: Event = serde_json::from_str(&event.to_json_line()).unwrap();
            assert_eq!(back, event);
            assert_eq!(back.kind(), event.kind());
        }
        assert!(
            serde_json::from_str::<Event>(r#"{"utc":"1970-01-01T00:00:00Z","kind":"nope"}"#)
                .is_err()
        );
    }
}
