//! The config file as written: serde structs with the defaults, before any checking. Unknown
//! keys are errors, so a typo never silently does nothing. [`super::Config::parse`] turns these
//! into the validated types, once.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn default_data_dir() -> PathBuf {
    PathBuf::from("./data")
}
fn default_fsync() -> f64 {
    1.0
}
fn default_rotate_mb() -> u64 {
    256
}
fn default_buffer_mb() -> u64 {
    256
}
fn default_fields() -> RawFields {
    RawFields::Names(
        crate::wire::fields::DEFAULT_FIELDS
            .map(String::from)
            .to_vec(),
    )
}

/// `fields = "all"` or `fields = ["HEARTBEAT", ...]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawFields {
    One(String),
    Names(Vec<String>),
}
fn default_true() -> bool {
    true
}
fn default_threshold() -> f64 {
    3.0
}
fn default_http() -> String {
    "127.0.0.1:9137".to_string()
}
fn default_latency_window_s() -> f64 {
    60.0
}
fn default_latency_report_s() -> f64 {
    10.0
}

/// The file as written. Unknown keys are errors, so a typo never silently does nothing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default = "default_data_dir")]
    pub(super) data_dir: PathBuf,
    #[serde(default = "default_fsync")]
    pub(super) fsync_interval_s: f64,
    #[serde(default = "default_rotate_mb")]
    pub(super) rotate_size_mb: u64,
    #[serde(default = "default_buffer_mb")]
    pub(super) buffer_mb: u64,
    #[serde(default)]
    pub(super) tlog: bool,
    #[serde(default = "default_fields")]
    pub(super) fields: RawFields,
    #[serde(default, rename = "link")]
    pub(super) links: Vec<RawLink>,
    #[serde(default, rename = "forward")]
    pub(super) forwards: Vec<RawForward>,
    #[serde(default)]
    pub(super) signing: RawSigning,
    #[serde(default)]
    pub(super) gap: RawGap,
    #[serde(default)]
    pub(super) latency: RawLatency,
    #[serde(default)]
    pub(super) traffic: RawTraffic,
    #[serde(default)]
    pub(super) http: RawHttp,
    #[serde(default)]
    pub(super) webhook: RawWebhooks,
    pub(super) publish: Option<RawPublish>,
    pub(super) retention: Option<RawRetention>,
}

/// `[retention]`: bounds on the kept day folders (both optional).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetention {
    pub(super) max_age_days: Option<u32>,
    pub(super) max_total_mb: Option<u64>,
}

/// `[publish]`: this site's receive log and events to NATS JetStream.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPublish {
    pub(super) nats_url: String,
    pub(super) site: String,
    pub(super) creds_file: Option<PathBuf>,
    pub(super) max_age_days: Option<f64>,
}

/// The `range` verb's file: no links; the sites' receipts come from NATS.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRangeConfig {
    #[serde(default = "default_data_dir")]
    pub(super) data_dir: PathBuf,
    #[serde(default = "default_fsync")]
    pub(super) fsync_interval_s: f64,
    pub(super) range: RawRange,
    #[serde(default)]
    pub(super) gap: RawGap,
    #[serde(default)]
    pub(super) http: RawHttp,
    #[serde(default)]
    pub(super) webhook: RawWebhooks,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRange {
    pub(super) nats_url: String,
    pub(super) creds_file: Option<PathBuf>,
    /// The durable consumer's name: one per range view.
    pub(super) name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLink {
    pub(super) name: String,
    pub(super) udp: Option<String>,
    pub(super) tcp: Option<String>,
    pub(super) tcp_listen: Option<String>,
    pub(super) sbs: Option<String>,
    #[serde(default)]
    pub(super) allow: Vec<String>,
    pub(super) max_peers: Option<u64>,
    pub(super) serial: Option<PathBuf>,
    pub(super) baud: Option<RawBaud>,
    pub(super) flow_control: Option<String>,
    pub(super) queue_mb: Option<u64>,
    pub(super) rcvbuf_kb: Option<u64>,
    pub(super) read_window_ms: Option<u64>,
    pub(super) gap_threshold_s: Option<f64>,
}

/// `baud = 57600` or `baud = [57600, 115200, 921600]` (tried in turn until frames arrive).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawBaud {
    One(u64),
    Many(Vec<u64>),
}

/// `[[forward]]`: a read-only copy of the valid frames for a ground station.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawForward {
    pub(super) name: Option<String>,
    pub(super) udp: Option<String>,
    pub(super) tcp_listen: Option<String>,
    #[serde(default)]
    pub(super) allow: Vec<String>,
    pub(super) max_peers: Option<u64>,
    pub(super) links: Option<Vec<String>>,
    pub(super) sysids: Option<Vec<u64>>,
    pub(super) msgs: Option<Vec<RawMessage>>,
    pub(super) queue_kb: Option<u64>,
}

/// A message named (`"HEARTBEAT"`) or numbered (`0`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawMessage {
    Id(u64),
    Name(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSigning {
    #[serde(default)]
    pub(super) keys: Vec<String>,
    #[serde(default = "default_true")]
    pub(super) reject_bad: bool,
}

impl Default for RawSigning {
    fn default() -> Self {
        Self {
            keys: Vec::new(),
            reject_bad: default_true(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGap {
    #[serde(default = "default_threshold")]
    pub(super) threshold_s: f64,
    #[serde(default)]
    pub(super) ignore_sysids: Vec<u8>,
    #[serde(default)]
    pub(super) vehicles: BTreeMap<String, RawVehicle>,
    #[serde(default)]
    pub(super) thresholds: BTreeMap<String, f64>,
}

/// A `[gap] vehicles` entry: its name (`4 = "UAS-04"`), or its name with its own transponder's
/// ICAO address and its Remote ID UAS ID (`4 = { name = "UAS-04", icao = "A1B2C3" }`), so the
/// traffic monitor knows its own broadcasts for what they are.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawVehicle {
    Name(String),
    Full(RawVehicleIds),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVehicleIds {
    pub(super) name: String,
    pub(super) icao: Option<String>,
    pub(super) uas_id: Option<String>,
}

fn default_stale_s() -> f64 {
    20.0
}
fn default_horizontal_m() -> f64 {
    1_000.0
}
fn default_vertical_m() -> f64 {
    150.0
}
fn default_own_match_m() -> f64 {
    30.0
}

/// `[traffic]`: when a track ages out and what is near.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTraffic {
    #[serde(default = "default_stale_s")]
    pub(super) stale_s: f64,
    #[serde(default = "default_horizontal_m")]
    pub(super) horizontal_m: f64,
    #[serde(default = "default_vertical_m")]
    pub(super) vertical_m: f64,
    #[serde(default = "default_own_match_m")]
    pub(super) own_match_m: f64,
}

impl Default for RawTraffic {
    fn default() -> Self {
        Self {
            stale_s: default_stale_s(),
            horizontal_m: default_horizontal_m(),
            vertical_m: default_vertical_m(),
            own_match_m: default_own_match_m(),
        }
    }
}

impl Default for RawGap {
    fn default() -> Self {
        Self {
            threshold_s: default_threshold(),
            ignore_sysids: Vec::new(),
            vehicles: BTreeMap::new(),
            thresholds: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLatency {
    #[serde(default = "default_latency_window_s")]
    pub(super) window_s: f64,
    #[serde(default = "default_latency_report_s")]
    pub(super) report_interval_s: f64,
}

impl Default for RawLatency {
    fn default() -> Self {
        Self {
            window_s: default_latency_window_s(),
            report_interval_s: default_latency_report_s(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp {
    #[serde(default = "default_http")]
    pub(super) listen: String,
    pub(super) token: Option<String>,
    pub(super) max_connections: Option<u64>,
    pub(super) max_connections_per_peer: Option<u64>,
    pub(super) max_streams: Option<u64>,
    pub(super) max_streams_per_peer: Option<u64>,
}

impl Default for RawHttp {
    fn default() -> Self {
        Self {
            listen: default_http(),
            token: None,
            max_connections: None,
            max_connections_per_peer: None,
            max_streams: None,
            max_streams_per_peer: None,
        }
    }
}

/// `[webhook]` (one table, as configs written before `[[webhook]]` have it) or `[[webhook]]`
/// (any number of them).
#[derive(Debug, Default)]
pub(super) struct RawWebhooks(pub(super) Vec<RawWebhook>);

impl<'de> Deserialize<'de> for RawWebhooks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OneOrMany;
        impl<'de> serde::de::Visitor<'de> for OneOrMany {
            type Value = RawWebhooks;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a [webhook] table or [[webhook]] tables")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<RawWebhooks, A::Error> {
                let one =
                    RawWebhook::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RawWebhooks(vec![one]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<RawWebhooks, A::Error> {
                let many = Vec::<RawWebhook>::deserialize(
                    serde::de::value::SeqAccessDeserializer::new(seq),
                )?;
                Ok(RawWebhooks(many))
            }
        }
        deserializer.deserialize_any(OneOrMany)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWebhook {
    pub(super) url: String,
    pub(super) name: Option<String>,
    pub(super) format: Option<String>,
    pub(super) kinds: Option<Vec<String>>,
    #[serde(default)]
    pub(super) headers: BTreeMap<String, String>,
    pub(super) ca_file: Option<PathBuf>,
    pub(super) timeout_s: Option<f64>,
    pub(super) queue: Option<usize>,
}
