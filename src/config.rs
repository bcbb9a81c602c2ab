//! The TOML config: parsed, validated, and turned into the settings the daemon runs with.
//! Every error names the file and the key (and the line, where the TOML parser knows it).

use crate::mavlink::fields::FieldSelection;
use crate::mavlink::signing::parse_key_hex;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
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
        ["HEARTBEAT", "SYSTEM_TIME", "STATUSTEXT"]
            .map(String::from)
            .to_vec(),
    )
}

/// `fields = "all"` or `fields = ["HEARTBEAT", ...]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawFields {
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
struct RawConfig {
    #[serde(default = "default_data_dir")]
    data_dir: PathBuf,
    #[serde(default = "default_fsync")]
    fsync_interval_s: f64,
    #[serde(default = "default_rotate_mb")]
    rotate_size_mb: u64,
    #[serde(default = "default_buffer_mb")]
    buffer_mb: u64,
    #[serde(default)]
    tlog: bool,
    #[serde(default = "default_fields")]
    fields: RawFields,
    #[serde(default, rename = "link")]
    links: Vec<RawLink>,
    #[serde(default)]
    signing: RawSigning,
    #[serde(default)]
    gap: RawGap,
    #[serde(default)]
    latency: RawLatency,
    #[serde(default)]
    http: RawHttp,
    #[serde(default)]
    webhook: Option<RawWebhook>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    name: String,
    udp: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    serial: Option<PathBuf>,
    baud: Option<u32>,
    flow_control: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSigning {
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default = "default_true")]
    reject_bad: bool,
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
struct RawGap {
    #[serde(default = "default_threshold")]
    threshold_s: f64,
    #[serde(default)]
    ignore_sysids: Vec<u8>,
    #[serde(default)]
    vehicles: BTreeMap<String, String>,
}

impl Default for RawGap {
    fn default() -> Self {
        Self {
            threshold_s: default_threshold(),
            ignore_sysids: Vec::new(),
            vehicles: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLatency {
    #[serde(default = "default_latency_window_s")]
    window_s: f64,
    #[serde(default = "default_latency_report_s")]
    report_interval_s: f64,
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
struct RawHttp {
    #[serde(default = "default_http")]
    listen: String,
}

impl Default for RawHttp {
    fn default() -> Self {
        Self {
            listen: default_http(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebhook {
    url: String,
    #[serde(default)]
    queue: Option<usize>,
}

/// A source network for a UDP allow-list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Network {
    pub fn parse(text: &str) -> Option<Self> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a.parse::<IpAddr>().ok()?, Some(p.parse::<u8>().ok()?)),
            None => (text.parse::<IpAddr>().ok()?, None),
        };
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(Self { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowControl {
    None,
    Hardware,
    Software,
}

#[derive(Debug, Clone)]
pub enum LinkKind {
    Udp {
        bind: SocketAddr,
        allow: Vec<Network>,
    },
    Serial {
        path: PathBuf,
        baud: u32,
        flow_control: FlowControl,
    },
}

#[derive(Debug, Clone)]
pub struct LinkConfig {
    pub name: String,
    pub kind: LinkKind,
}

#[derive(Debug, Clone)]
pub struct GapSettings {
    pub threshold_s: f64,
    pub ignore_sysids: Vec<u8>,
    pub vehicles: BTreeMap<u8, String>,
}

#[derive(Debug, Clone)]
pub struct LatencySettings {
    pub window_s: f64,
    pub report_interval_s: f64,
}

/// The validated settings the daemon runs with.
#[derive(Debug, Clone)]
pub struct Config {
    pub file: PathBuf,
    pub data_dir: PathBuf,
    pub fsync_interval_s: f64,
    pub rotate_size_bytes: u64,
    pub buffer_bytes: u64,
    pub tlog: bool,
    /// `fields` as written: `["all"]` or message names.
    pub fields: Vec<String>,
    pub fields_for: FieldSelection,
    pub links: Vec<LinkConfig>,
    pub signing_keys: Vec<[u8; 32]>,
    pub reject_bad_signatures: bool,
    pub gap: GapSettings,
    pub latency: LatencySettings,
    pub http_listen: SocketAddr,
    pub webhook_url: Option<String>,
    pub webhook_queue: usize,
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
        if !(raw.fsync_interval_s > 0.0 && raw.fsync_interval_s.is_finite()) {
            return Err(invalid(
                "fsync_interval_s",
                "must be a positive number of seconds".into(),
            ));
        }
        if raw.rotate_size_mb == 0 {
            return Err(invalid("rotate_size_mb", "must be at least 1".into()));
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
                            Network::parse(n).ok_or_else(|| {
                                invalid(
                                    &key("allow"),
                                    format!("`{n}` is not a network like \"10.0.0.0/8\""),
                                )
                            })
                        })
                        .collect::<Result<_, _>>()?;
                    LinkKind::Udp { bind, allow }
                }
                (None, Some(path)) => {
                    if !link.allow.is_empty() {
                        return Err(invalid(&key("allow"), "allow is for UDP links".into()));
                    }
                    let baud = link.baud.unwrap_or(57600);
                    if baud == 0 {
                        return Err(invalid(&key("baud"), "must be positive".into()));
                    }
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
                    LinkKind::Serial {
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
            links.push(LinkConfig {
                name: link.name.clone(),
                kind,
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
        if !(raw.gap.threshold_s > 0.0 && raw.gap.threshold_s.is_finite()) {
            return Err(invalid(
                "gap.threshold_s",
                "must be a positive number of seconds".into(),
            ));
        }
        let mut vehicles = BTreeMap::new();
        for (sysid, name) in &raw.gap.vehicles {
            let id: u8 = sysid.parse().map_err(|_| {
                invalid(
                    &format!("gap.vehicles.{sysid}"),
                    "a vehicle key is a system id, 0 to 255".into(),
                )
            })?;
            vehicles.insert(id, name.clone());
        }
        if !(raw.latency.window_s > 0.0 && raw.latency.report_interval_s > 0.0) {
            return Err(invalid(
                "latency",
                "window_s and report_interval_s must be positive".into(),
            ));
        }
        let http_listen = parse_bind(&raw.http.listen).ok_or_else(|| {
            invalid(
                "http.listen",
                format!("`{}` is not an address:port", raw.http.listen),
            )
        })?;
        let webhook_url = match raw.webhook {
            Some(ref w) if !w.url.starts_with("http://") => {
                return Err(invalid(
                    "webhook.url",
                    format!("`{}`: only http:// URLs are supported", w.url),
                ))
            }
            Some(ref w) => Some(w.url.clone()),
            None => None,
        };
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
            signing_keys,
            reject_bad_signatures: raw.signing.reject_bad,
            gap: GapSettings {
                threshold_s: raw.gap.threshold_s,
                ignore_sysids: raw.gap.ignore_sysids,
                vehicles,
            },
            latency: LatencySettings {
                window_s: raw.latency.window_s,
                report_interval_s: raw.latency.report_interval_s,
            },
            http_listen,
            webhook_queue: raw.webhook.as_ref().and_then(|w| w.queue).unwrap_or(1024),
            webhook_url,
        })
    }

    /// What `check-config` looks at beyond the file itself: serial paths and the data directory.
    /// Returns warnings (things the daemon copes with) or the first error.
    pub fn check_environment(&self) -> Result<Vec<String>, ConfigError> {
        use std::os::unix::fs::FileTypeExt;
        let file = self.file.display().to_string();
        let mut warnings = Vec::new();
        for (i, link) in self.links.iter().enumerate() {
            if let LinkKind::Serial { path, .. } = &link.kind {
                match std::fs::metadata(path) {
                    Ok(m) if m.file_type().is_char_device() => {
                        if let Err(e) = std::fs::OpenOptions::new().read(true).open(path) {
                            return Err(ConfigError::Invalid { file, key: format!("link[{i}].serial"), reason: format!("{}: cannot open: {e}", path.display()) });
                        }
                    }
                    Ok(_) => {
                        return Err(ConfigError::Invalid { file, key: format!("link[{i}].serial"), reason: format!("{} is not a character device", path.display()) })
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => warnings.push(format!(
                        "link[{i}].serial: {} does not exist now; the daemon reports the link down and waits for it",
                        path.display()
                    )),
                    Err(e) => {
                        return Err(ConfigError::Invalid { file, key: format!("link[{i}].serial"), reason: format!("{}: {e}", path.display()) })
                    }
                }
            }
        }
        if self.data_dir.exists()
            && std::fs::metadata(&self.data_dir)
                .map(|m| m.permissions().readonly())
                .unwrap_or(false)
        {
            return Err(ConfigError::Invalid {
                file,
                key: "data_dir".into(),
                reason: format!("{} is read-only", self.data_dir.display()),
            });
        }
        Ok(warnings)
    }

    /// The effective settings as JSON, for `check-config`.
    pub fn effective(&self) -> serde_json::Value {
        let links: Vec<serde_json::Value> = self
            .links
            .iter()
            .map(|l| match &l.kind {
                LinkKind::Udp { bind, allow } => serde_json::json!({
                    "name": l.name, "udp": bind.to_string(),
                    "allow": allow.iter().map(|n| format!("{}/{}", n.addr, n.prefix)).collect::<Vec<_>>(),
                }),
                LinkKind::Serial { path, baud, flow_control } => serde_json::json!({
                    "name": l.name, "serial": path, "baud": baud, "flow_control": flow_control,
                }),
            })
            .collect();
        serde_json::json!({
            "config": self.file,
            "data_dir": self.data_dir,
            "fsync_interval_s": self.fsync_interval_s,
            "rotate_size_mb": self.rotate_size_bytes / (1024 * 1024),
            "buffer_mb": self.buffer_bytes / (1024 * 1024),
            "tlog": self.tlog,
            "fields": match self.fields_for {
                FieldSelection::All => serde_json::json!("all"),
                FieldSelection::Only(_) => serde_json::json!(self.fields),
            },
            "link": links,
            "signing": { "keys": self.signing_keys.len(), "reject_bad": self.reject_bad_signatures },
            "gap": {
                "threshold_s": self.gap.threshold_s,
                "ignore_sysids": self.gap.ignore_sysids,
                "vehicles": self.gap.vehicles.iter().map(|(k, v)| (k.to_string(), v.clone())).collect::<BTreeMap<_, _>>(),
            },
            "latency": { "window_s": self.latency.window_s, "report_interval_s": self.latency.report_interval_s },
            "http": { "listen": self.http_listen.to_string() },
            "webhook": self.webhook_url.as_ref().map(|u| serde_json::json!({"url": u, "queue": self.webhook_queue})),
        })
    }
}

fn parse_bind(text: &str) -> Option<SocketAddr> {
    text.parse().ok()
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
            LinkKind::Serial { baud: 57600, .. }
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
        let n = Network::parse("10.0.0.0/8").unwrap();
        assert!(n.contains("10.1.2.3".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        assert!(n.contains("::ffff:10.9.9.9".parse().unwrap()));
        assert!(Network::parse("127.0.0.1")
            .unwrap()
            .contains("127.0.0.1".parse().unwrap()));
        assert!(Network::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        assert!(Network::parse("10.0.0.0/33").is_none());
    }
}
