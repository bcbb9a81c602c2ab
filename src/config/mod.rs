//! The TOML config: the file as written ([`raw`]) is checked once and turned into the validated
//! types below (addresses, networks, URLs and durations parsed), which every part of the daemon
//! takes as they are. Every error names the file and the key (and the line, where the TOML
//! parser knows it). What `check-config` prints is these types serialised ([`Config::effective`]);
//! the checks of the machine itself (devices, folders) are apart, in [`environment`].

mod environment;
mod publish;
pub mod range;
pub mod ranges;
mod raw;
mod retention;
mod webhook;

pub use publish::PublishSettings;
pub use retention::RetentionSettings;

pub use webhook::{WebhookFormat, WebhookSettings};

use crate::monitor::{GapConfig, LatencyConfig, WatchSettings};
use crate::wire::fields::FieldSelection;
use crate::wire::signing::parse_key_hex;
use ipnet::IpNet;
use raw::{RawConfig, RawFields};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{file}: key `{key}`: {reason}")]
    Invalid {
        file: String,
        key: String,
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowControl {
    None,
    Hardware,
    Software,
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum LinkTransport {
    Udp {
        #[serde(rename = "udp")]
        bind: SocketAddr,
        /// Source networks allowed to send; empty allows any.
        allow: Vec<IpNet>,
        /// The socket receive buffer asked of the kernel.
        #[serde(rename = "rcvbuf_kb", serialize_with = "as_kib")]
        rcvbuf_bytes: u64,
    },
    Serial {
        #[serde(rename = "serial")]
        path: PathBuf,
        baud: u32,
        flow_control: FlowControl,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkConfig {
    pub name: String,
    #[serde(flatten)]
    pub kind: LinkTransport,
    /// Bytes that may wait for this link's scanner; past it input is dropped and counted.
    #[serde(rename = "queue_mb", serialize_with = "as_mib")]
    pub queue_bytes: u64,
}

/// Per-link defaults: 16 MiB may wait for a link's scanner; 8 MiB of socket buffer.
pub const DEFAULT_LINK_QUEUE_MB: u64 = 16;
pub const DEFAULT_RCVBUF_KB: u64 = 8192;

#[derive(Debug, Clone, Serialize)]
pub struct GapSettings {
    pub threshold_s: f64,
    pub ignore_sysids: Vec<u8>,
    pub vehicles: BTreeMap<u8, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencySettings {
    pub window_s: f64,
    pub report_interval_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct HttpSettings {
    pub listen: SocketAddr,
    /// The bearer token every request must carry (required off loopback); shown as whether
    /// it is set, never the token.
    #[serde(serialize_with = "set_or_not")]
    pub token: Option<String>,
    pub max_connections: usize,
    /// Connections one client address may hold besides its event streams.
    pub max_connections_per_peer: usize,
    /// Event streams (`/events`, the board's) at once: below `max_connections`, so short
    /// requests always have room.
    pub max_streams: usize,
    pub max_streams_per_peer: usize,
}

impl HttpSettings {
    /// The default cap on open connections (`http.max_connections`).
    pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
    /// The default streams per peer: a control-room PC's wall display and a few board tabs,
    /// with room for reloads that leave their old stream behind.
    pub const DEFAULT_MAX_STREAMS_PER_PEER: usize = 16;

    /// The port's limits once the connection cap is known (`max_connections` lowered to fit
    /// the descriptor limit): the others shrink with it, keeping streams below the cap.
    pub fn limits(&self, cap: usize) -> crate::http::connections::Limits {
        let cap = cap.max(1);
        // In proportion to the cap as configured: a stream budget of a quarter stays a quarter.
        let scaled = |n: usize| (n * cap / self.max_connections.max(1)).clamp(1, cap);
        let max_streams = scaled(self.max_streams).min(cap.saturating_sub(1)).max(1);
        crate::http::connections::Limits {
            max_connections: cap,
            max_connections_per_peer: scaled(self.max_connections_per_peer),
            max_streams,
            max_streams_per_peer: self.max_streams_per_peer.min(max_streams),
        }
    }
    /// The shortest token accepted: long enough that guessing it over the network is hopeless.
    pub const MIN_TOKEN_LEN: usize = 16;
}

fn set_or_not<S: serde::Serializer>(secret: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => s.serialize_str("(set)"),
        None => s.serialize_none(),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SigningSettings {
    /// The keys themselves are secrets: `check-config` shows how many there are.
    #[serde(rename = "keys", serialize_with = "count_of")]
    pub keys: Vec<[u8; 32]>,
    pub reject_bad: bool,
}

fn count_of<S: serde::Serializer>(keys: &[[u8; 32]], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(keys.len() as u64)
}

fn fields_as_written<S: serde::Serializer>(fields: &[String], s: S) -> Result<S::Ok, S::Error> {
    if fields == ["all"] {
        s.serialize_str("all")
    } else {
        fields.serialize(s)
    }
}

fn as_mib<S: serde::Serializer>(bytes: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(bytes / (1024 * 1024))
}

fn as_kib<S: serde::Serializer>(bytes: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(bytes / 1024)
}

/// Scanner batches waiting for the pipeline: 64 of at most about 1 MiB (`daemon::BATCH_QUEUE`).
const RESOURCE_BATCH_QUEUE_MB: u64 = 64;
/// Everything else: code, runtime, HTTP connections, webhook queues, the `/events` ring. The
/// daemon's RSS at 20,000 frames/s is 7.7 MB (BENCHMARKS.md, load); this leaves room for 256
/// busy HTTP connections and full webhook queues.
const RESOURCE_BASE_MB: u64 = 128;

/// The most memory and descriptors a config can use (`check-config` prints it as `needs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResourceBounds {
    /// For `MemoryMax`: every buffer full at once.
    pub memory_mb: u64,
    /// For `LimitNOFILE`: every HTTP connection open, plus the reserve for links and files.
    pub descriptors: u64,
}

/// The validated settings the daemon runs with.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    #[serde(rename = "config")]
    pub file: PathBuf,
    pub data_dir: PathBuf,
    pub fsync_interval_s: f64,
    #[serde(rename = "rotate_size_mb", serialize_with = "as_mib")]
    pub rotate_size_bytes: u64,
    #[serde(rename = "buffer_mb", serialize_with = "as_mib")]
    pub buffer_bytes: u64,
    pub tlog: bool,
    /// `fields` as written: `["all"]` or message names (shown as "all" or the list).
    #[serde(serialize_with = "fields_as_written")]
    pub fields: Vec<String>,
    #[serde(skip)]
    pub fields_for: FieldSelection,
    #[serde(rename = "link")]
    pub links: Vec<LinkConfig>,
    pub signing: SigningSettings,
    pub gap: GapSettings,
    pub latency: LatencySettings,
    pub http: HttpSettings,
    #[serde(rename = "webhook")]
    pub webhooks: Vec<WebhookSettings>,
    pub publish: Option<PublishSettings>,
    pub retention: RetentionSettings,
}

impl Config {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: file.clone(),
            source,
        })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            ConfigError::Parse {
                file: file.clone(),
                message: match line {
                    Some(n) => format!("line {n}: {}", e.message()),
                    None => e.message().to_string(),
                },
            }
        })?;
        let invalid = |key: &str, reason: String| ConfigError::Invalid {
            file: file.clone(),
            key: key.to_string(),
            reason,
        };
        // Every number against its documented range (ranges.rs), named as the file names it.
        let in_range = |key: &str, range_key: &str, value: f64| {
            ranges::check(range_key, value).map_err(|reason| invalid(key, reason))
        };
        in_range("fsync_interval_s", "fsync_interval_s", raw.fsync_interval_s)?;
        in_range(
            "rotate_size_mb",
            "rotate_size_mb",
            raw.rotate_size_mb as f64,
        )?;
        in_range("buffer_mb", "buffer_mb", raw.buffer_mb as f64)?;
        in_range("latency.window_s", "latency.window_s", raw.latency.window_s)?;
        in_range(
            "latency.report_interval_s",
            "latency.report_interval_s",
            raw.latency.report_interval_s,
        )?;
        if raw.links.len() > crate::link::MAX_LINKS {
            return Err(invalid(
                "link",
                format!("at most {} links", crate::link::MAX_LINKS),
            ));
        }
        let fields = match raw.fields {
            RawFields::One(one) if one == "all" => vec![one],
            RawFields::One(other) => {
                return Err(invalid(
                    "fields",
                    format!("`{other}`: give \"all\" or a list of message names"),
                ))
            }
            RawFields::Names(names) => names,
        };
        let fields_for =
            FieldSelection::parse(&fields).map_err(|e| invalid("fields", e.to_string()))?;
        if raw.links.is_empty() {
            return Err(invalid("link", "at least one [[link]] is needed".into()));
        }
        let mut links: Vec<LinkConfig> = Vec::new();
        for (i, link) in raw.links.iter().enumerate() {
            let key = |k: &str| format!("link[{i}].{k}");
            if link.name.is_empty()
                || !link
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(invalid(
                    &key("name"),
                    format!("`{}`: use letters, digits, '-', '_' or '.'", link.name),
                ));
            }
            if links.iter().any(|l| l.name == link.name) {
                return Err(invalid(
                    &key("name"),
                    format!("`{}` is used by two links", link.name),
                ));
            }
            let kind = match (&link.udp, &link.serial) {
                (Some(udp), None) => {
                    if link.baud.is_some() || link.flow_control.is_some() {
                        return Err(invalid(
                            &key("baud"),
                            "baud and flow_control are for serial links".into(),
                        ));
                    }
                    let bind = parse_bind(udp).ok_or_else(|| {
                        invalid(
                            &key("udp"),
                            format!("`{udp}` is not an address:port (e.g. \"0.0.0.0:14550\")"),
                        )
                    })?;
                    let allow = link
                        .allow
                        .iter()
                        .map(|n| {
                            parse_network(n).ok_or_else(|| {
                                invalid(
                                    &key("allow"),
                                    format!("`{n}` is not a network like \"10.0.0.0/8\""),
                                )
                            })
                        })
                        .collect::<Result<_, _>>()?;
                    let rcvbuf_kb = link.rcvbuf_kb.unwrap_or(DEFAULT_RCVBUF_KB);
                    in_range(&key("rcvbuf_kb"), "link.rcvbuf_kb", rcvbuf_kb as f64)?;
                    LinkTransport::Udp {
                        bind,
                        allow,
                        rcvbuf_bytes: rcvbuf_kb * 1024,
                    }
                }
                (None, Some(path)) => {
                    if !link.allow.is_empty() || link.rcvbuf_kb.is_some() {
                        return Err(invalid(
                            &key("allow"),
                            "allow and rcvbuf_kb are for UDP links".into(),
                        ));
                    }
                    let baud = link.baud.unwrap_or(57600);
                    in_range(&key("baud"), "link.baud", baud as f64)?;
                    let flow_control = match link.flow_control.as_deref().unwrap_or("none") {
                        "none" => FlowControl::None,
                        "hardware" | "rtscts" => FlowControl::Hardware,
                        "software" | "xonxoff" => FlowControl::Software,
                        other => {
                            return Err(invalid(
                                &key("flow_control"),
                                format!("`{other}`: use none, hardware or software"),
                            ))
                        }
                    };
                    LinkTransport::Serial {
                        path: path.clone(),
                        baud,
                        flow_control,
                    }
                }
                (Some(_), Some(_)) => {
                    return Err(invalid(
                        &key("udp"),
                        "a link is either udp or serial, not both".into(),
                    ))
                }
                (None, None) => {
                    return Err(invalid(
                        &key("udp"),
                        "a link needs `udp = \"addr:port\"` or `serial = \"/dev/...\"`".into(),
                    ))
                }
            };
            let queue_mb = link.queue_mb.unwrap_or(DEFAULT_LINK_QUEUE_MB);
            in_range(&key("queue_mb"), "link.queue_mb", queue_mb as f64)?;
            links.push(LinkConfig {
                name: link.name.clone(),
                kind,
                queue_bytes: queue_mb * 1024 * 1024,
            });
        }
        let signing_keys = raw
            .signing
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                parse_key_hex(k).ok_or_else(|| {
                    invalid(
                        &format!("signing.keys[{i}]"),
                        "a key is 64 hex digits (32 bytes)".into(),
                    )
                })
            })
            .collect::<Result<_, _>>()?;
        let gap = gap_settings(&raw.gap, &invalid)?;
        let http = http_settings(&raw.http, &invalid)?;
        let publish = match &raw.publish {
            Some(p) => Some(publish::parse(p, &invalid)?),
            None => None,
        };
        let webhooks = webhook::parse_webhooks(&raw.webhook.0, &invalid)?;
        let retention = retention::parse(raw.retention.as_ref(), raw.rotate_size_mb, &invalid)?;
        Ok(Config {
            file: path.to_path_buf(),
            data_dir: raw.data_dir,
            fsync_interval_s: raw.fsync_interval_s,
            rotate_size_bytes: raw.rotate_size_mb * 1024 * 1024,
            buffer_bytes: raw.buffer_mb * 1024 * 1024,
            tlog: raw.tlog,
            fields,
            fields_for,
            links,
            signing: SigningSettings {
                keys: signing_keys,
                reject_bad: raw.signing.reject_bad,
            },
            gap,
            latency: LatencySettings {
                window_s: raw.latency.window_s,
                report_interval_s: raw.latency.report_interval_s,
            },
            http,
            webhooks,
            publish,
            retention,
        })
    }

    /// The gap and latency settings, for the live daemon and `analyze` alike: the one
    /// translation from config to monitors, so offline findings follow the live rules.
    pub fn watch_settings(&self) -> WatchSettings {
        let mut gap = GapConfig::with_threshold_s(self.gap.threshold_s);
        gap.ignore_sysids = self.gap.ignore_sysids.iter().copied().collect();
        gap.vehicles = self.gap.vehicles.clone();
        WatchSettings {
            gap,
            latency: LatencyConfig {
                window_ns: (self.latency.window_s * 1e9) as i64,
                ..LatencyConfig::default()
            },
            report_interval_s: self.latency.report_interval_s,
        }
    }

    /// What this config may need at most, for the unit's `MemoryMax` and `LimitNOFILE`
    /// (`check-config` prints it; a test holds the shipped unit against the shipped config).
    pub fn resource_bounds(&self) -> ResourceBounds {
        const MIB: u64 = 1024 * 1024;
        // Receive log, events and (when on) the .tlog each buffer up to buffer_mb for a slow disk.
        let streams = if self.tlog { 3 } else { 2 };
        // Each link: its scanner queue, and the kernel's socket buffer (charged to the cgroup).
        let links: u64 = self
            .links
            .iter()
            .map(|l| {
                l.queue_bytes
                    + match l.kind {
                        LinkTransport::Udp { rcvbuf_bytes, .. } => rcvbuf_bytes,
                        LinkTransport::Serial { .. } => 0,
                    }
            })
            .sum();
        let memory_bytes = streams * self.buffer_bytes
            + links
            + RESOURCE_BATCH_QUEUE_MB * MIB
            + RESOURCE_BASE_MB * MIB;
        ResourceBounds {
            memory_mb: memory_bytes.div_ceil(MIB),
            descriptors: self.http.max_connections as u64 + crate::http::server::RESERVED_FDS,
        }
    }

    /// The effective settings as JSON, for `check-config` and the `receiver` start event:
    /// the validated config itself, serialised (signing keys shown as a count).
    pub fn effective(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("the config serialises")
    }
}

/// `[gap]`, validated (shared with the `range` config).
fn gap_settings(
    raw: &raw::RawGap,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<GapSettings, ConfigError> {
    ranges::check("gap.threshold_s", raw.threshold_s)
        .map_err(|reason| invalid("gap.threshold_s", reason))?;
    let mut vehicles = BTreeMap::new();
    for (sysid, name) in &raw.vehicles {
        let id: u8 = sysid.parse().map_err(|_| {
            invalid(
                &format!("gap.vehicles.{sysid}"),
                "a vehicle key is a system id, 0 to 255".into(),
            )
        })?;
        vehicles.insert(id, name.clone());
    }
    Ok(GapSettings {
        threshold_s: raw.threshold_s,
        ignore_sysids: raw.ignore_sysids.clone(),
        vehicles,
    })
}

/// `[http]`, validated (shared with the `range` config): a token is required off loopback.
fn http_settings(
    raw: &raw::RawHttp,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<HttpSettings, ConfigError> {
    if let Some(max) = raw.max_connections {
        ranges::check("http.max_connections", max as f64)
            .map_err(|reason| invalid("http.max_connections", reason))?;
    }
    let listen = parse_bind(&raw.listen).ok_or_else(|| {
        invalid(
            "http.listen",
            format!("`{}` is not an address:port", raw.listen),
        )
    })?;
    let token = match &raw.token {
        Some(token)
            if token.len() < HttpSettings::MIN_TOKEN_LEN
                || !token.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            return Err(invalid(
                "http.token",
                format!(
                    "give at least {} visible ASCII characters, no spaces (e.g. the output of `openssl rand -hex 24`)",
                    HttpSettings::MIN_TOKEN_LEN
                ),
            ));
        }
        other => other.clone(),
    };
    if !listen.ip().is_loopback() && token.is_none() {
        return Err(invalid(
            "http.token",
            format!(
                "http.listen {listen} is reachable from other machines, which could then read every vehicle's state and alerts: set http.token (clients send `Authorization: Bearer <token>`), or listen on 127.0.0.1"
            ),
        ));
    }
    let max_connections = raw
        .max_connections
        .map_or(HttpSettings::DEFAULT_MAX_CONNECTIONS, |m| m as usize);
    let optional = |key: &str, value: Option<u64>| -> Result<Option<usize>, ConfigError> {
        match value {
            None => Ok(None),
            Some(v) => ranges::check(key, v as f64)
                .map(|()| Some(v as usize))
                .map_err(|reason| invalid(key, reason)),
        }
    };
    let max_connections_per_peer = optional(
        "http.max_connections_per_peer",
        raw.max_connections_per_peer,
    )?
    .unwrap_or((max_connections / 2).max(1));
    if max_connections_per_peer > max_connections {
        return Err(invalid(
            "http.max_connections_per_peer",
            format!(
                "{max_connections_per_peer} is more than http.max_connections ({max_connections})"
            ),
        ));
    }
    let max_streams =
        optional("http.max_streams", raw.max_streams)?.unwrap_or((max_connections / 4).max(1));
    if max_connections > 1 && max_streams >= max_connections {
        return Err(invalid(
            "http.max_streams",
            format!("{max_streams} leaves no room for short requests: give less than http.max_connections ({max_connections})"),
        ));
    }
    let max_streams_per_peer = optional("http.max_streams_per_peer", raw.max_streams_per_peer)?
        .unwrap_or(HttpSettings::DEFAULT_MAX_STREAMS_PER_PEER.min(max_streams));
    if max_streams_per_peer > max_streams {
        return Err(invalid(
            "http.max_streams_per_peer",
            format!("{max_streams_per_peer} is more than http.max_streams ({max_streams})"),
        ));
    }
    Ok(HttpSettings {
        listen,
        token,
        max_connections,
        max_connections_per_peer,
        max_streams,
        max_streams_per_peer,
    })
}

fn parse_bind(text: &str) -> Option<SocketAddr> {
    text.parse().ok()
}

/// A network (`10.0.0.0/8`) or a single address (`10.0.0.4`, taken as `/32` or `/128`).
fn parse_network(text: &str) -> Option<IpNet> {
    text.parse::<IpNet>()
        .ok()
        .or_else(|| text.parse::<std::net::IpAddr>().ok().map(IpNet::from))
}

/// Whether a UDP peer is inside an allow-list network (IPv4 peers seen through an IPv6 socket
/// as `::ffff:a.b.c.d` included).
pub fn network_contains(net: &IpNet, peer: std::net::IpAddr) -> bool {
    let peer = match peer {
        std::net::IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(std::net::IpAddr::V4)
            .unwrap_or(peer),
        v4 => v4,
    };
    net.contains(&peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("test.toml"))
    }

    #[test]
    fn the_design_example_parses() {
        let c = parse(
            r#"
data_dir = "./data"
fsync_interval_s = 1.0
[[link]]
name = "radio1"
udp = "0.0.0.0:14550"
allow = ["10.0.0.0/8"]
[[link]]
name = "usb0"
serial = "/dev/serial/by-id/usb-FTDI_FT231X-if00-port0"
baud = 57600
[gap]
threshold_s = 3.0
ignore_sysids = [255]
vehicles = { 4 = "UAS-04", 22 = "UGV-02" }
[http]
listen = "127.0.0.1:9137"
[webhook]
url = "http://127.0.0.1:9000/alerts"
"#,
        )
        .unwrap();
        assert_eq!(c.links.len(), 2);
        assert_eq!(c.gap.vehicles[&22], "UGV-02");
        assert_eq!(c.fields_for, FieldSelection::Only(vec![0, 2, 253]));
        assert!(matches!(
            c.links[1].kind,
            LinkTransport::Serial { baud: 57600, .. }
        ));
    }

    #[test]
    fn errors_name_the_key() {
        let err = parse("[[link]]\nname = \"a\"\nudp = \"0.0.0.0:99999\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("link[0].udp") && err.contains("test.toml"),
            "{err}"
        );
        let err = parse("bogus = 1\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus"), "{err}");
        let err = parse("fields = [\"NOPE\"]\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`fields`") && err.contains("NOPE"), "{err}");
        let err = parse("fields = \"some\"\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`fields`") && err.contains("some"), "{err}");
        let all = parse("fields = \"all\"\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n").unwrap();
        assert_eq!(all.fields_for, FieldSelection::All);
        assert_eq!(all.effective()["fields"], "all");
        let err =
            parse("[gap]\nvehicles = { x = \"a\" }\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n")
                .unwrap_err()
                .to_string();
        assert!(err.contains("gap.vehicles.x"), "{err}");
    }

    #[test]
    fn allow_lists_match_networks() {
        let n = parse_network("10.0.0.0/8").unwrap();
        assert!(network_contains(&n, "10.1.2.3".parse().unwrap()));
        assert!(!network_contains(&n, "11.0.0.1".parse().unwrap()));
        assert!(network_contains(&n, "::ffff:10.9.9.9".parse().unwrap()));
        let one = parse_network("127.0.0.1").unwrap();
        assert!(network_contains(&one, "127.0.0.1".parse().unwrap()));
        assert!(network_contains(
            &parse_network("0.0.0.0/0").unwrap(),
            "8.8.8.8".parse().unwrap()
        ));
        assert!(parse_network("10.0.0.0/33").is_none());
    }

    /// The values the issue found passing check-config and failing at run time.
    #[test]
    fn numbers_out_of_range_are_refused_naming_the_key() {
        let link = "[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n";
        for (text, key) in [
            ("fsync_interval_s = 1e300\n", "fsync_interval_s"),
            ("buffer_mb = 0\n", "buffer_mb"),
            ("buffer_mb = 17592186044416\n", "buffer_mb"),
            ("rotate_size_mb = 17592186044416\n", "rotate_size_mb"),
            ("[gap]\nthreshold_s = 1e-12\n", "gap.threshold_s"),
            (
                "[latency]\nreport_interval_s = 1e-9\n",
                "latency.report_interval_s",
            ),
            (
                "[webhook]\nurl = \"http://h/a\"\nqueue = 9000000000000000000\n",
                "webhook.queue",
            ),
            ("[http]\nmax_connections = 0\n", "http.max_connections"),
        ] {
            let err = parse(&format!("{text}{link}")).unwrap_err().to_string();
            assert!(
                err.contains(&format!("`{key}`")) && err.contains("out of range"),
                "{text}: {err}"
            );
        }
        // Within range, but inconsistent with each other.
        for (text, key) in [
            ("[http]\nmax_streams = 256\n", "http.max_streams"),
            (
                "[http]\nmax_streams = 8\nmax_streams_per_peer = 9\n",
                "http.max_streams_per_peer",
            ),
            (
                "[http]\nmax_connections_per_peer = 257\n",
                "http.max_connections_per_peer",
            ),
        ] {
            let err = parse(&format!("{text}{link}")).unwrap_err().to_string();
            assert!(err.contains(&format!("`{key}`")), "{text}: {err}");
        }
        for (extra, key) in [
            ("baud = 0\n", "link[0].baud"),
            ("queue_mb = 0\n", "link[0].queue_mb"),
        ] {
            let text = format!("[[link]]\nname = \"s\"\nserial = \"/dev/ttyS9\"\n{extra}");
            let err = parse(&text).unwrap_err().to_string();
            assert!(
                err.contains(key) && err.contains("out of range"),
                "{extra}: {err}"
            );
        }
        let err = parse(&format!("{link}rcvbuf_kb = 1\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("link[0].rcvbuf_kb"), "{err}");
    }

    #[test]
    fn webhooks_are_one_table_or_many() {
        let link = "[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n";
        let one = parse(&format!(
            "{link}[webhook]\nurl = \"http://127.0.0.1:9000/alerts\"\n"
        ))
        .unwrap();
        assert_eq!(one.webhooks.len(), 1);
        assert_eq!(one.webhooks[0].kinds, ["telemetry_gap"]);
        assert_eq!(one.webhooks[0].format, WebhookFormat::Json);
        let two = parse(&format!(
            "{link}[[webhook]]\nurl = \"https://chat.example/hooks/x\"\nformat = \"slack\"\nheaders = {{ X-Range = \"north\" }}\n[[webhook]]\nurl = \"http://127.0.0.1:9000/a\"\nkinds = [\"telemetry_gap\", \"link\"]\ntimeout_s = 2\n"
        ))
        .unwrap();
        assert_eq!(two.webhooks.len(), 2);
        assert_eq!(two.webhooks[0].name, "chat.example");
        assert_eq!(
            two.webhooks[0].headers,
            [("X-Range".to_string(), "north".to_string())]
        );
        assert_eq!(two.webhooks[1].kinds, ["telemetry_gap", "link"]);
        assert_eq!(two.webhooks[1].timeout_s, 2.0);
        for (text, key) in [
            ("[webhook]\nurl = \"http://user:pw@h/a\"\n", "webhook.url"),
            (
                "[[webhook]]\nurl = \"http://h/a\"\n[[webhook]]\nurl = \"gopher://h/a\"\n",
                "webhook[1].url",
            ),
            (
                "[webhook]\nurl = \"http://h/a\"\nformat = \"xml\"\n",
                "webhook.format",
            ),
            (
                "[webhook]\nurl = \"http://h/a\"\nkinds = [\"gap\"]\n",
                "webhook.kinds",
            ),
            (
                "[webhook]\nurl = \"http://h/a\"\nheaders = { \"Bad Name\" = \"x\" }\n",
                "webhook.headers",
            ),
            (
                "[webhook]\nurl = \"http://h/a\"\nca_file = \"/nonexistent/ca.pem\"\n",
                "webhook.ca_file",
            ),
            (
                "[webhook]\nurl = \"http://h/a\"\ntimeout_s = 0\n",
                "webhook.timeout_s",
            ),
            ("[webhook]\nurl = \"http://h/a\"\nbogus = 1\n", "bogus"),
        ] {
            let err = parse(&format!("{link}{text}")).unwrap_err().to_string();
            assert!(err.contains(key), "{text}: {err}");
        }
    }

    #[test]
    fn a_listener_off_loopback_needs_a_token() {
        let link = "[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n";
        let err = parse(&format!("{link}[http]\nlisten = \"0.0.0.0:9137\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("http.token") && err.contains("0.0.0.0:9137"),
            "{err}"
        );
        let err = parse(&format!(
            "{link}[http]\nlisten = \"0.0.0.0:9137\"\ntoken = \"short\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("http.token") && err.contains("16"), "{err}");
        let ok = parse(&format!(
            "{link}[http]\nlisten = \"0.0.0.0:9137\"\ntoken = \"0123456789abcdef0123\"\n"
        ))
        .unwrap();
        assert_eq!(ok.http.token.as_deref(), Some("0123456789abcdef0123"));
        assert_eq!(ok.effective()["http"]["token"], "(set)");
        let local = parse(&format!("{link}[http]\nlisten = \"[::1]:9137\"\n")).unwrap();
        assert!(local.http.token.is_none());
        assert_eq!(local.http.max_connections, 256);
    }

    #[test]
    fn check_config_prints_the_validated_types() {
        let c = parse("[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\nallow = [\"10.0.0.0/8\"]\n[signing]\nkeys = [\"0001020304050607080910111213141516171819202122232425262728293031\"]\n").unwrap();
        let e = c.effective();
        assert_eq!(e["link"][0]["udp"], "0.0.0.0:1");
        assert_eq!(e["link"][0]["allow"][0], "10.0.0.0/8");
        assert_eq!(
            e["signing"]["keys"], 1,
            "keys are shown as a count, never the key"
        );
        assert_eq!(e["rotate_size_mb"], 256);
        assert_eq!(e["http"]["listen"], "127.0.0.1:9137");
        assert!(e.get("field_ids").is_none());
    }

    #[test]
    fn retention_bounds_are_checked_and_printed() {
        let link = "[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n";
        let none = parse(link).unwrap();
        assert!(!none.retention.is_set());
        let c = parse(&format!(
            "{link}[retention]\nmax_age_days = 90\nmax_total_mb = 50000\n"
        ))
        .unwrap();
        assert_eq!(c.retention.max_age_days, Some(90));
        assert_eq!(c.retention.max_total_bytes(), Some(50_000 * 1024 * 1024));
        let e = c.effective();
        assert_eq!(e["retention"]["max_age_days"], 90);
        assert_eq!(e["retention"]["max_total_mb"], 50000);
        let err = parse(&format!("{link}[retention]\nmax_age_days = 0\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("retention.max_age_days") && err.contains("1 to 36500 days"),
            "{err}"
        );
        // Distinct from the NATS streams' own max_age_days.
        let err = parse(&format!(
            "{link}[publish]\nnats_url = \"nats://127.0.0.1:4222\"\nsite = \"n\"\nmax_age_days = 0\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("publish.max_age_days"), "{err}");
        let err = parse(&format!(
            "rotate_size_mb = 256\n{link}[retention]\nmax_total_mb = 300\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("retention.max_total_mb") && err.contains("rotate_size_mb"),
            "{err}"
        );
        assert!(parse(&format!("{link}[retention]\nmax_days = 3\n")).is_err());
    }

    /// The shipped unit's MemoryMax and LimitNOFILE cover what the shipped config can use, with
    /// the .tlog on and the most links the unit's memory comment allows for.
    #[test]
    fn the_shipped_unit_covers_the_shipped_configs_bounds() {
        let unit = include_str!("../../systemd/foxborne-receiver.service");
        let setting = |key: &str| -> u64 {
            let line = unit
                .lines()
                .find(|l| l.starts_with(&format!("{key}=")))
                .unwrap_or_else(|| panic!("the unit sets no {key}"));
            let value = &line[key.len() + 1..];
            match value.strip_suffix('M') {
                Some(mb) => mb.parse().unwrap(),
                None => value.parse().unwrap(),
            }
        };
        let shipped = include_str!("../../config/receiver.toml");
        let mut c = parse(shipped).unwrap();
        c.tlog = true;
        let needs = c.resource_bounds();
        assert_eq!(
            needs.memory_mb, 984,
            "the unit's comment states this figure"
        );
        assert_eq!(
            needs.descriptors, 384,
            "the unit's comment states this figure"
        );
        assert!(setting("MemoryMax") >= needs.memory_mb + 4 * 24);
        assert!(setting("LimitNOFILE") >= needs.descriptors);
        let twice = parse(&shipped.replace("buffer_mb = 256", "buffer_mb = 512")).unwrap();
        assert_eq!(twice.resource_bounds().memory_mb, 2 * 512 + 24 + 64 + 128);
    }

    #[test]
    fn http_limits_keep_streams_below_the_cap_when_it_is_lowered() {
        let config = parse(
            "[[link]]\nname = \"r\"\nudp = \"127.0.0.1:0\"\n[http]\nmax_connections = 4096\n",
        )
        .unwrap();
        let h = &config.http;
        assert_eq!(
            (
                h.max_connections_per_peer,
                h.max_streams,
                h.max_streams_per_peer
            ),
            (2048, 1024, 16)
        );
        // The descriptor limit lowered the cap to 896: a quarter stays a quarter.
        let limits = h.limits(896);
        assert_eq!(
            (
                limits.max_connections,
                limits.max_connections_per_peer,
                limits.max_streams,
                limits.max_streams_per_peer
            ),
            (896, 448, 224, 16)
        );
        assert_eq!(h.limits(1).max_streams, 1);
    }
}
