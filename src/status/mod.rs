//! The daemon's state as one plain value, and the three ways it is shown.
//!
//! The pipeline builds a [`StatusSnapshot`] on its housekeeping tick and publishes it on a
//! `tokio::sync::watch` channel; nothing else reads the pipeline. `/status` is the snapshot as
//! JSON (serde), `/metrics` is [`metrics::render`] of it, and the `status` verb reads the
//! JSON back into the same type and prints [`table::render`]. All three are pure functions.
//!
//! A forward output's live counters ([`ForwardStats`]) are here too, beside their snapshot: the
//! daemon's forward tasks count into them and the HTTP port reads them, neither naming the other.

pub mod metrics;
pub mod table;

use crate::monitor::histogram::HistogramSnapshot;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatusSnapshot {
    pub utc: String,
    pub started_utc: String,
    pub version: String,
    /// The receiver's NTP state, when the kernel gave it.
    pub clock: Option<ClockSnapshot>,
    pub vehicles: Vec<VehicleSnapshot>,
    pub links: Vec<LinkSnapshot>,
    /// Every file stream: receive, tlog (when on), events.
    pub streams: Vec<StreamSnapshot>,
    pub open_gaps: usize,
    /// Receipts by link, system id and message name.
    pub receipts: Vec<MessageCount>,
    /// Frames missing from sequence numbers, by link and system id.
    pub sequence_lost: Vec<SequenceLoss>,
    #[serde(default)]
    pub webhooks: Vec<WebhookSnapshot>,
    /// The HTTP port's own counters, added by the HTTP layer when it answers.
    #[serde(default)]
    pub http: Option<HttpSnapshot>,
    /// Publishing to NATS JetStream, when `[publish]` is set.
    #[serde(default)]
    pub publish: Option<PublishSnapshot>,
    /// The forward outputs (`[[forward]]`), added by the HTTP layer when it answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forwards: Vec<ForwardSnapshot>,
    /// The `range` view's sites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<SiteSnapshot>,
    /// Every traffic track (ADS-B, Remote ID, SBS), ours included and marked, by key.
    #[serde(default)]
    pub traffic: Vec<TrafficSnapshot>,
    /// The traffic monitor's counts since start.
    #[serde(default)]
    pub traffic_totals: TrafficTotalsSnapshot,
    /// The `[traffic]` thresholds it judges by (the board's plan view draws them).
    #[serde(default)]
    pub traffic_limits: Option<TrafficLimits>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TrafficLimits {
    pub horizontal_m: f64,
    pub vertical_m: f64,
    pub stale_s: f64,
}

/// One traffic track as `/status` shows it (see [`crate::monitor::traffic`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrafficSnapshot {
    /// Its ICAO address (six hex digits) or its UAS ID.
    pub key: String,
    pub icao: Option<String>,
    pub uas_id: Option<String>,
    pub callsign: Option<String>,
    pub lat: Option<f64>,
    pub lon: Option<f64>,
    /// Metres, above what `altitude_ref` says (`pressure_standard`, `pressure_qnh`,
    /// `geometric`, `ellipsoid`).
    pub altitude_m: Option<f64>,
    pub altitude_ref: Option<String>,
    /// Course over ground (degrees from true north), ground speed and vertical rate (m/s,
    /// positive up).
    pub track_deg: Option<f64>,
    pub ground_speed_mps: Option<f64>,
    pub vertical_rate_mps: Option<f64>,
    pub squawk: Option<u16>,
    pub source: crate::monitor::event::TrafficSource,
    pub last_utc: String,
    /// Seconds since its last report.
    pub age_s: f64,
    pub reports: u64,
    /// One of our own vehicles (its system id): not traffic, never alerted on.
    pub own_sysid: Option<u8>,
    /// Our vehicles it has an open `traffic_proximity` with.
    pub proximity: Vec<u8>,
}

/// One track near one of our vehicles, as that vehicle's board entry draws it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NearbyTraffic {
    pub key: String,
    pub callsign: Option<String>,
    pub horizontal_m: f64,
    /// Positive: the traffic is above.
    pub vertical_m: Option<f64>,
    pub vertical_basis: Option<String>,
    pub bearing_deg: f64,
    /// A `traffic_proximity` is open for it.
    pub proximity: bool,
}

/// Where one of our vehicles is, as last told.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PositionSnapshot {
    pub utc: String,
    pub lat: f64,
    pub lon: f64,
    pub msl_m: f64,
    /// `GLOBAL_POSITION_INT` or `GPS_RAW_INT`.
    pub from: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficTotalsSnapshot {
    pub reports: u64,
    pub own_reports: u64,
    pub refused_tracks: u64,
    pub lost: u64,
    pub proximities_opened: u64,
}

/// One site as the `range` view sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteSnapshot {
    pub name: String,
    /// Nothing received from it for longer than the gap threshold.
    pub silent: bool,
    /// Its receipt times are far from the range's clock (corrected, not trusted).
    pub clock_off: bool,
    /// Its receiver reported that its clock is not NTP-synchronised.
    #[serde(default)]
    pub unsynchronised: bool,
    /// The range's input from it is stalled (its progress marks stopped): its vehicles are
    /// not judged silent until it catches up.
    #[serde(default)]
    pub input_stalled: bool,
    /// Its messages refused since the range started: receipt lines, progress marks and clock
    /// reports that were not one (named in the range's log: the first, then every 10,000th).
    #[serde(default)]
    pub refused_messages: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublishSnapshot {
    pub site: String,
    pub connected: bool,
    /// `receipts` and `events`.
    pub streams: Vec<PublishStreamSnapshot>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublishStreamSnapshot {
    pub name: String,
    pub published: u64,
    pub acked: u64,
    /// Bytes written to the files and not yet acknowledged by JetStream.
    pub pending_bytes: u64,
    pub failures: u64,
    pub last_ack_utc: Option<String>,
}

impl PublishSnapshot {
    pub fn of(stats: &crate::publish::PublishStats) -> PublishSnapshot {
        use std::sync::atomic::Ordering::Relaxed;
        let stream = |name: &str, s: &crate::publish::StreamStats| PublishStreamSnapshot {
            name: name.to_string(),
            published: s.published.load(Relaxed),
            acked: s.acked.load(Relaxed),
            pending_bytes: s.pending_bytes.load(Relaxed),
            failures: s.failures.load(Relaxed),
            last_ack_utc: match s.last_ack_utc_ns.load(Relaxed) {
                0 => None,
                ns => Some(crate::monitor::format_utc_ms(ns)),
            },
        };
        PublishSnapshot {
            site: stats.site.clone(),
            connected: stats.connected.load(Relaxed),
            streams: vec![
                stream(crate::publish::Kind::Receipts.name(), &stats.receipts),
                stream(crate::publish::Kind::Events.name(), &stats.events),
            ],
        }
    }
}

impl StatusSnapshot {
    /// The receive log's writer, from `streams`.
    pub fn receive_log(&self) -> Option<&StreamSnapshot> {
        self.streams
            .iter()
            .find(|s| s.name == crate::sink::RECEIVE_LOG.folder)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockSnapshot {
    pub synchronised: bool,
    pub max_error_us: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VehicleSnapshot {
    pub sysid: u8,
    pub name: Option<String>,
    pub links: Vec<String>,
    pub last_heard_utc: Option<String>,
    pub heartbeat_age_s: Option<f64>,
    pub expected_interval_s: f64,
    /// The open `telemetry_gap` event, as the events stream carries it.
    pub open_gap: Option<crate::monitor::GapEvent>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p95_ms: Option<f64>,
    pub latency_max_ms: Option<f64>,
    /// The finest latency the samples can show, ms (the figures above are null under it).
    #[serde(default)]
    pub latency_resolution_ms: Option<f64>,
    pub clock_offset_ms: Option<f64>,
    pub loss_percent: f64,
    /// Every latency sample since start, cumulative (for `foxborne_latency_seconds`).
    #[serde(default)]
    pub latency_histogram: Option<HistogramSnapshot>,
    /// The first heartbeat since the receiver started.
    #[serde(default)]
    pub first_heard_utc: Option<String>,
    /// Frames from this system on each link that heard it, and their rate over the last
    /// housekeeping tick.
    #[serde(default)]
    pub per_link: Vec<VehicleLinkSnapshot>,
    /// What its (autopilot's) latest HEARTBEAT says.
    #[serde(default)]
    pub heartbeat: Option<HeartbeatSnapshot>,
    /// The silence that is a gap for this vehicle (its own threshold, or its links' longest).
    #[serde(default)]
    pub threshold_s: f64,
    /// What its links deliver, in percent of the frames its sequence numbers say were sent:
    /// per link by name, and `any` for the union (each frame counted once, whichever link
    /// brought it).
    #[serde(default)]
    pub delivery: BTreeMap<String, f64>,
    /// The counts behind `delivery`.
    #[serde(default)]
    pub delivery_frames: Option<DeliveryFrames>,
    /// A second sender on this system id is suspected (`sysid_conflict` open): its loss and
    /// delivery figures mix two senders' sequences and are not to be trusted.
    #[serde(default)]
    pub delivery_unreliable: bool,
    /// The open `link_gap` events: links silent for this vehicle while others hear it.
    #[serde(default)]
    pub link_gaps: Vec<crate::monitor::event::LinkGapEvent>,
    /// The open `sysid_conflict` events (one per component with two senders).
    #[serde(default)]
    pub conflicts: Vec<crate::monitor::event::SysidConflictEvent>,
    /// Its message streams: rate over the last 3 s, and an open `stream` event.
    #[serde(default)]
    pub streams: Vec<MessageStreamSnapshot>,
    /// Its own position, from its GLOBAL_POSITION_INT (or GPS_RAW_INT).
    #[serde(default)]
    pub position: Option<PositionSnapshot>,
    /// The traffic within five times `[traffic] horizontal_m` of it, nearest first.
    #[serde(default)]
    pub traffic: Vec<NearbyTraffic>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeliveryFrames {
    pub sent: u64,
    pub any: u64,
    pub links: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageStreamSnapshot {
    pub msgid: u32,
    pub msg: String,
    pub rate_hz: f64,
    pub last_utc: String,
    /// The open `stream` event (`stopped` or `slowed`), if any.
    pub event: Option<crate::monitor::event::StreamEvent>,
}

/// A radio's latest RADIO_STATUS on a link (see [`crate::monitor::radio`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RadioSnapshot {
    pub sysid: u8,
    pub compid: u8,
    pub utc: String,
    pub rssi: u8,
    pub remrssi: u8,
    pub rssi_dbm: Option<f64>,
    pub remrssi_dbm: Option<f64>,
    pub noise: u8,
    pub remnoise: u8,
    pub rxerrors: u16,
    pub fixed: u16,
    pub txbuf: u8,
    /// Reports kept (the last 10 minutes).
    pub reports: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VehicleLinkSnapshot {
    pub link: String,
    pub frames: u64,
    pub frames_per_s: f64,
}

/// A HEARTBEAT's fields as sent, and in words (see [`crate::monitor::heartbeat`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatSnapshot {
    pub utc: String,
    pub compid: u8,
    #[serde(rename = "type")]
    pub mav_type: u8,
    pub autopilot: u8,
    pub base_mode: u8,
    pub custom_mode: u32,
    pub system_status: u8,
    pub type_name: String,
    pub autopilot_name: String,
    /// The flight mode: `LOITER`, `AUTO.MISSION`, ...
    pub mode: String,
    /// MAV_STATE without its prefix: `ACTIVE`, `STANDBY`, `CRITICAL`, ...
    pub status: String,
    pub armed: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSnapshot {
    pub name: String,
    /// `None` until the link reported up or down.
    pub up: Option<bool>,
    pub detail: String,
    pub receipts: u64,
    pub bytes: u64,
    pub bytes_skipped: u64,
    /// Rejects by reason (every reason listed, zeros included).
    pub rejects: BTreeMap<String, u64>,
    pub denied: u64,
    /// Sequence counts over every sender on the link (each only grows): frames missing when
    /// a later one came, repeated, arriving behind a later one, and senders that started over.
    pub seq_lost: u64,
    #[serde(default)]
    pub seq_duplicates: u64,
    #[serde(default)]
    pub seq_late: u64,
    #[serde(default)]
    pub seq_resets: u64,
    pub downs: u64,
    pub rate_per_s: f64,
    /// Input the receiver itself dropped, by reason: `overload` (the link's queue was full),
    /// `kernel` (the socket buffer overflowed, `SO_RXQ_OVFL`).
    #[serde(default)]
    pub dropped: BTreeMap<String, u64>,
    /// Frames that continued a second run of sequence numbers (two senders on one id).
    #[serde(default)]
    pub seq_interleaved: u64,
    /// The radios reporting on this link (RADIO_STATUS), each its latest report.
    #[serde(default)]
    pub radios: Vec<RadioSnapshot>,
    /// Traffic reports made on this link, SBS lines read, and those refused by reason (every
    /// reason listed), when the link carried any traffic.
    #[serde(default)]
    pub traffic: Option<LinkTrafficSnapshot>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkTrafficSnapshot {
    pub reports: u64,
    pub sbs_lines: u64,
    pub rejects: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamSnapshot {
    pub name: String,
    pub lines_written: u64,
    pub bytes_written: u64,
    pub pending_bytes: u64,
    pub dropped_lines: u64,
    pub write_errors: u64,
    pub write_lag_s: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageCount {
    pub link: String,
    pub sysid: u8,
    pub msg: String,
    pub count: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SequenceLoss {
    pub link: String,
    pub sysid: u8,
    pub lost: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WebhookSnapshot {
    pub name: String,
    pub sent: u64,
    pub dropped: u64,
    pub failed_attempts: u64,
    /// Queued, not yet delivered or given up.
    pub pending: u64,
}

/// One forward output (`[[forward]]`): what its filters took, sent and dropped, its TCP peers,
/// and what ground stations sent to it (read and discarded, never passed on).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ForwardSnapshot {
    pub name: String,
    /// `udp` or `tcp_listen`.
    pub kind: String,
    pub address: String,
    /// Frames its filters took.
    pub frames: u64,
    /// Frames written (for a TCP listener, to each peer, summed).
    pub sent_frames: u64,
    pub sent_bytes: u64,
    /// Frames not sent, by reason: `queue_full` (the output fell behind), `peer_slow` (one TCP
    /// peer fell behind, per peer), `send_error` (refused by the network), `unreachable` (the
    /// address could not be resolved or reached).
    pub dropped: BTreeMap<String, u64>,
    /// TCP peers connected now, ever, and refused (outside `allow`, past `max_peers`).
    pub peers: u64,
    pub peers_total: u64,
    pub peers_refused: u64,
    /// What ground stations sent to the output: read and discarded.
    pub ignored_bytes: u64,
    pub ignored_datagrams: u64,
}

/// One forward output's live counters, shared by the scanners (what its filter took, what its
/// queue dropped), its task (what it sent, what came back) and the HTTP port, which shows them
/// as a [`ForwardSnapshot`] on `/status` and `/metrics`.
#[derive(Debug, Default)]
pub struct ForwardStats {
    pub name: String,
    /// `udp` or `tcp_listen`.
    pub kind: &'static str,
    /// The address it sends to or listens on.
    pub address: String,
    /// Frames its filters took.
    pub frames: AtomicU64,
    /// Frames written to the socket (for a TCP listener, to each peer: summed over peers).
    pub sent_frames: AtomicU64,
    pub sent_bytes: AtomicU64,
    /// Frames dropped because its queue was full (the output did not keep up).
    pub dropped_queue_full: AtomicU64,
    /// Frames dropped for one TCP peer whose own queue was full (summed over peers).
    pub dropped_peer_slow: AtomicU64,
    /// Frames the socket refused (a UDP destination that answered "port unreachable").
    pub dropped_send_error: AtomicU64,
    /// Frames taken while a UDP destination could not be resolved or reached.
    pub dropped_unreachable: AtomicU64,
    /// TCP peers connected now.
    pub peers: AtomicU64,
    pub peers_total: AtomicU64,
    /// TCP peers refused: from outside `allow`, or past `max_peers`.
    pub peers_refused: AtomicU64,
    /// What ground stations sent to the output, read and discarded.
    pub ignored_bytes: AtomicU64,
    pub ignored_datagrams: AtomicU64,
}

impl ForwardStats {
    pub fn snapshot(&self) -> ForwardSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ForwardSnapshot {
            name: self.name.clone(),
            kind: self.kind.to_string(),
            address: self.address.clone(),
            frames: get(&self.frames),
            sent_frames: get(&self.sent_frames),
            sent_bytes: get(&self.sent_bytes),
            dropped: [
                ("queue_full", get(&self.dropped_queue_full)),
                ("peer_slow", get(&self.dropped_peer_slow)),
                ("send_error", get(&self.dropped_send_error)),
                ("unreachable", get(&self.dropped_unreachable)),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            peers: get(&self.peers),
            peers_total: get(&self.peers_total),
            peers_refused: get(&self.peers_refused),
            ignored_bytes: get(&self.ignored_bytes),
            ignored_datagrams: get(&self.ignored_datagrams),
        }
    }
}

/// The HTTP port's counters (connections, refusals, event-stream clients).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HttpSnapshot {
    pub connections_open: u64,
    pub connections_max: u64,
    pub connections_total: u64,
    pub accept_errors: u64,
    /// Requests refused: `host` (421, a non-loopback Host on a loopback listener),
    /// `token` (401, a missing or wrong bearer token).
    pub refused: BTreeMap<String, u64>,
    pub event_clients: u64,
    /// The event streams' budget (`http.max_streams`).
    #[serde(default)]
    pub event_clients_max: u64,
    /// Event-stream clients cut off: `lagged` (fell further behind than the live buffer),
    /// `write_timeout` (a write waited too long), `peer_limit` (closed for a newer stream of
    /// the same peer past `http.max_streams_per_peer`).
    pub event_clients_dropped: BTreeMap<String, u64>,
    /// Event streams refused with 503: the budget was spent by other peers.
    #[serde(default)]
    pub event_clients_refused: u64,
    /// Connections between requests closed to make room, by reason: `peer_limit` (their peer
    /// at `http.max_connections_per_peer`), `cap` (the port at `http.max_connections`).
    #[serde(default)]
    pub connections_closed: BTreeMap<String, u64>,
    /// Connections closed at once because every one of their peer's was answering a request.
    #[serde(default)]
    pub connections_refused: u64,
}

#[cfg(test)]
pub(crate) fn example() -> StatusSnapshot {
    let stream = |name: &str, lines| StreamSnapshot {
        name: name.into(),
        lines_written: lines,
        bytes_written: lines * 150,
        write_lag_s: 0.002,
        ..Default::default()
    };
    StatusSnapshot {
        utc: "2026-09-24T14:32:10.000Z".into(),
        started_utc: "2026-09-24T14:00:00.000Z".into(),
        version: "0.1.0".into(),
        clock: Some(ClockSnapshot {
            synchronised: true,
            max_error_us: 12_000,
        }),
        vehicles: vec![
            VehicleSnapshot {
                sysid: 4,
                name: Some("UAS-04".into()),
                links: vec!["radio1".into()],
                last_heard_utc: Some("2026-09-24T14:32:03.912Z".into()),
                heartbeat_age_s: Some(6.088),
                expected_interval_s: 1.0,
                open_gap: {
                    let heard = crate::monitor::parse_utc_ns("2026-09-24T14:32:03.912Z").unwrap();
                    let mut gaps = crate::monitor::GapDetector::new(
                        crate::monitor::GapConfig::with_threshold_s(3.0),
                        heard,
                    );
                    gaps.on_heartbeat(4, "radio1", heard);
                    // As it reads back from JSON: whole milliseconds.
                    gaps.poll(heard + 6_088_000_000).pop().map(|mut g| {
                        g.utc =
                            crate::monitor::UtcTime(g.utc.ns() - g.utc.ns().rem_euclid(1_000_000));
                        g
                    })
                },
                latency_p50_ms: Some(41.0),
                latency_p95_ms: Some(87.5),
                latency_max_ms: Some(120.0),
                latency_resolution_ms: Some(0.001),
                clock_offset_ms: None,
                loss_percent: 2.5,
                latency_histogram: Some({
                    let mut h = crate::monitor::histogram::LatencyHistogram::default();
                    for ms in [41, 41, 87, 120] {
                        h.observe(ms * 1_000_000);
                    }
                    h.snapshot()
                }),
                first_heard_utc: Some("2026-09-24T14:01:00.000Z".into()),
                per_link: vec![VehicleLinkSnapshot {
                    link: "radio1".into(),
                    frames: 1100,
                    frames_per_s: 18.5,
                }],
                heartbeat: Some(HeartbeatSnapshot {
                    utc: "2026-09-24T14:32:03.912Z".into(),
                    compid: 1,
                    mav_type: 2,
                    autopilot: 3,
                    base_mode: 0x81 | 0x10,
                    custom_mode: 5,
                    system_status: 4,
                    type_name: "QUADROTOR".into(),
                    autopilot_name: "ARDUPILOTMEGA".into(),
                    mode: "LOITER".into(),
                    status: "ACTIVE".into(),
                    armed: true,
                }),
                threshold_s: 3.0,
                delivery: [("radio1".to_string(), 92.0), ("any".to_string(), 99.6)].into(),
                delivery_frames: Some(DeliveryFrames {
                    sent: 1000,
                    any: 996,
                    links: [("radio1".to_string(), 920)].into(),
                }),
                delivery_unreliable: false,
                link_gaps: Vec::new(),
                conflicts: Vec::new(),
                streams: vec![MessageStreamSnapshot {
                    msgid: 33,
                    msg: "GLOBAL_POSITION_INT".into(),
                    rate_hz: 10.0,
                    last_utc: "2026-09-24T14:32:03.900Z".into(),
                    event: None,
                }],
                position: Some(PositionSnapshot {
                    utc: "2026-09-24T14:32:09.900Z".into(),
                    lat: 47.397_742,
                    lon: 8.545_594,
                    msl_m: 488.1,
                    from: "GLOBAL_POSITION_INT".into(),
                }),
                traffic: vec![NearbyTraffic {
                    key: "A1B2C3".into(),
                    callsign: Some("N123AB".into()),
                    horizontal_m: 640.2,
                    vertical_m: Some(45.3),
                    vertical_basis: Some("pressure_qnh vs msl".into()),
                    bearing_deg: 271.5,
                    proximity: true,
                }],
            },
            VehicleSnapshot {
                sysid: 22,
                name: None,
                links: vec!["radio1".into(), "usb0".into()],
                last_heard_utc: Some("2026-09-24T14:32:09.990Z".into()),
                heartbeat_age_s: Some(0.01),
                expected_interval_s: 1.0,
                clock_offset_ms: Some(-4600.0),
                ..Default::default()
            },
        ],
        links: vec![LinkSnapshot {
            name: "radio1".into(),
            up: Some(true),
            detail: "bound 0.0.0.0:14550".into(),
            receipts: 1200,
            bytes: 40_000,
            rejects: [("bad_crc".to_string(), 3), ("junk".to_string(), 1)].into(),
            seq_lost: 7,
            seq_duplicates: 2,
            seq_late: 1,
            seq_resets: 1,
            rate_per_s: 20.0,
            dropped: [("overload".to_string(), 5), ("kernel".to_string(), 2)].into(),
            radios: vec![RadioSnapshot {
                sysid: 51,
                compid: 68,
                utc: "2026-09-24T14:32:09.500Z".into(),
                rssi: 190,
                remrssi: 100,
                rssi_dbm: Some(-27.0),
                remrssi_dbm: Some(-74.4),
                noise: 40,
                remnoise: 45,
                rxerrors: 3,
                fixed: 1,
                txbuf: 97,
                reports: 600,
            }],
            traffic: Some(LinkTrafficSnapshot {
                reports: 40,
                sbs_lines: 0,
                rejects: [("latitude".to_string(), 1), ("altitude".to_string(), 0)].into(),
            }),
            ..Default::default()
        }],
        streams: vec![stream("receive", 1200), stream("events", 9)],
        open_gaps: 1,
        receipts: vec![MessageCount {
            link: "radio1".into(),
            sysid: 4,
            msg: "HEARTBEAT".into(),
            count: 60,
        }],
        sequence_lost: vec![SequenceLoss {
            link: "radio1".into(),
            sysid: 4,
            lost: 7,
        }],
        webhooks: vec![WebhookSnapshot {
            name: "hooks.slack.com".into(),
            sent: 2,
            dropped: 0,
            failed_attempts: 1,
            pending: 0,
        }],
        http: Some(HttpSnapshot {
            connections_open: 3,
            connections_max: 256,
            connections_total: 40,
            accept_errors: 0,
            refused: [("host".to_string(), 1), ("token".to_string(), 0)].into(),
            event_clients: 2,
            event_clients_max: 64,
            event_clients_dropped: [("lagged".to_string(), 1), ("write_timeout".to_string(), 0)]
                .into(),
            event_clients_refused: 0,
            connections_closed: [("peer_limit".to_string(), 4), ("cap".to_string(), 0)].into(),
            connections_refused: 0,
        }),
        publish: Some(PublishSnapshot {
            site: "north".into(),
            connected: true,
            streams: vec![PublishStreamSnapshot {
                name: "receipts".into(),
                published: 1200,
                acked: 1190,
                pending_bytes: 1500,
                failures: 1,
                last_ack_utc: Some("2026-09-24T14:32:09.990Z".into()),
            }],
        }),
        sites: Vec::new(),
        forwards: vec![ForwardSnapshot {
            name: "gcs".into(),
            kind: "tcp_listen".into(),
            address: "0.0.0.0:5770".into(),
            frames: 1200,
            sent_frames: 1150,
            sent_bytes: 37_000,
            dropped: [
                ("queue_full".to_string(), 0),
                ("peer_slow".to_string(), 50),
                ("send_error".to_string(), 0),
                ("unreachable".to_string(), 0),
            ]
            .into(),
            peers: 1,
            peers_total: 2,
            peers_refused: 1,
            ignored_bytes: 21,
            ignored_datagrams: 0,
        }],
        traffic: vec![TrafficSnapshot {
            key: "A1B2C3".into(),
            icao: Some("A1B2C3".into()),
            uas_id: None,
            callsign: Some("N123AB".into()),
            lat: Some(47.397_8),
            lon: Some(8.537_1),
            altitude_m: Some(533.4),
            altitude_ref: Some("pressure_qnh".into()),
            track_deg: Some(90.0),
            ground_speed_mps: Some(51.4),
            vertical_rate_mps: Some(0.0),
            squawk: Some(7000),
            source: crate::monitor::event::TrafficSource {
                kind: "adsb".into(),
                link: "radio1".into(),
                relayed_by: Some(200),
            },
            last_utc: "2026-09-24T14:32:09.500Z".into(),
            age_s: 0.5,
            reports: 31,
            own_sysid: None,
            proximity: vec![4],
        }],
        traffic_totals: TrafficTotalsSnapshot {
            reports: 40,
            own_reports: 3,
            refused_tracks: 0,
            lost: 2,
            proximities_opened: 1,
        },
        traffic_limits: Some(TrafficLimits {
            horizontal_m: 1000.0,
            vertical_m: 150.0,
            stale_s: 20.0,
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_json_reads_back_as_the_same_snapshot() {
        let snapshot = super::example();
        let json = serde_json::to_string(&snapshot).unwrap();
        let back: super::StatusSnapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, snapshot);
    }
}
