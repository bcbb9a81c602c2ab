//! The TOML config: the file as written ([`raw`]) is checked once and turned into the validated
//! types of its sections ([`link`], [`forward`], [`monitors`], [`http`], [`signing`],
//! [`webhook`], [`publish`], [`retention`]), which every part of the daemon takes as they are. Every error
//! names the file and the key (and the line, where the TOML parser knows it). What
//! `check-config` prints is these types serialised ([`Config::effective`]); the checks of the
//! machine itself (devices, folders) are apart, in [`environment`].

mod environment;
mod forward;
mod http;
mod link;
mod monitors;
mod publish;
pub mod range;
pub mod ranges;
mod raw;
mod resources;
mod retention;
mod signing;
mod webhook;

pub use forward::{ForwardFilter, ForwardOutput, ForwardSettings};
pub use http::{ConnectionLimits, HttpSettings};
pub use link::{
    allowed, network_contains, Bauds, FlowControl, HostPort, LinkConfig, LinkTransport,
};
pub use monitors::{GapSettings, LatencySettings, TrafficSettings};
pub use publish::PublishSettings;
pub use retention::RetentionSettings;
pub use signing::SigningSettings;
pub use webhook::{WebhookFormat, WebhookSettings};

use crate::monitor::WatchSettings;
use crate::wire::fields::FieldSelection;
use raw::{RawConfig, RawFields};
use serde::Serialize;
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

/// Reads a config file, naming it when it cannot be read.
fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: path.display().to_string(),
        source,
    })
}

/// The TOML as written, into its raw serde types; a syntax error or an unknown key names the
/// file and the line.
fn from_toml<T: serde::de::DeserializeOwned>(text: &str, path: &Path) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        ConfigError::Parse {
            file: path.display().to_string(),
            message: match line {
                Some(n) => format!("line {n}: {}", e.message()),
                None => e.message().to_string(),
            },
        }
    })
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
    /// Read-only copies of the frames for ground stations.
    #[serde(rename = "forward")]
    pub forwards: Vec<ForwardSettings>,
    pub signing: SigningSettings,
    pub gap: GapSettings,
    pub latency: LatencySettings,
    pub traffic: TrafficSettings,
    pub http: HttpSettings,
    #[serde(rename = "webhook")]
    pub webhooks: Vec<WebhookSettings>,
    pub publish: Option<PublishSettings>,
    pub retention: RetentionSettings,
}

impl Config {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::parse(&read(path)?, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let raw: RawConfig = from_toml(text, path)?;
        let invalid = |key: &str, reason: String| ConfigError::Invalid {
            file: file.clone(),
            key: key.to_string(),
            reason,
        };
        // Every number against its documented range (ranges.rs), named as the file names it.
        for (key, value) in [
            ("fsync_interval_s", raw.fsync_interval_s),
            ("rotate_size_mb", raw.rotate_size_mb as f64),
            ("buffer_mb", raw.buffer_mb as f64),
        ] {
            ranges::check(key, value).map_err(|reason| invalid(key, reason))?;
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
        let mut links = link::parse_links(&raw.links, &invalid)?;
        let forwards = forward::parse_forwards(&raw.forwards, &links, &invalid)?;
        link::settle_read_windows(&mut links, &raw.links, |id| {
            forwards.iter().any(|f| f.filter.takes_link(id))
        });
        let mut gap = monitors::parse_gap(&raw.gap, &invalid)?;
        gap.link_thresholds = links
            .iter()
            .filter_map(|l| Some((l.name.clone(), l.gap_threshold_s?)))
            .collect();
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
            forwards,
            signing: signing::parse(&raw.signing, &invalid)?,
            gap,
            latency: monitors::parse_latency(&raw.latency, &invalid)?,
            traffic: monitors::parse_traffic(&raw.traffic, &invalid)?,
            http: http::parse(&raw.http, &invalid)?,
            webhooks: webhook::parse_webhooks(&raw.webhook.0, &invalid)?,
            publish: match &raw.publish {
                Some(p) => Some(publish::parse(p, &invalid)?),
                None => None,
            },
            retention: retention::parse(raw.retention.as_ref(), raw.rotate_size_mb, &invalid)?,
        })
    }

    /// The gap, latency and traffic settings, for the live daemon and `analyze` alike.
    pub fn watch_settings(&self) -> WatchSettings {
        monitors::watch_settings(&self.gap, &self.latency, &self.traffic)
    }

    /// The effective settings as JSON, for `check-config` and the `receiver` start event:
    /// the validated config itself, serialised (signing keys shown as a count).
    pub fn effective(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("the config serialises")
    }
}

/// What the unit tests of every section share.
#[cfg(test)]
mod testing {
    use super::{Config, ConfigError};
    use std::path::Path;

    /// `text` parsed as a config file named `test.toml`.
    pub(super) fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("test.toml"))
    }

    /// Why `text` is refused (it must be).
    pub(super) fn refusal(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{parse, refusal};
    use super::*;

    #[test]
    fn traffic_thresholds_and_our_vehicles_broadcast_identities() {
        let c = parse(
            "[[link]]\nname = \"adsb\"\nsbs = \"127.0.0.1:30003\"\n[gap]\nvehicles = { 4 = { name = \"UAS-04\", icao = \"a1b2c3\", uas_id = \"FOX-UAS-04\" }, 22 = \"UGV-02\" }\n[traffic]\nstale_s = 30.0\nhorizontal_m = 500.0\n",
        )
        .unwrap();
        assert_eq!(c.gap.vehicles[&4], "UAS-04");
        assert_eq!(c.gap.identities[&4].icao.as_deref(), Some("A1B2C3"));
        let t = c.watch_settings().traffic;
        assert_eq!(
            (t.stale_ns, t.horizontal_m, t.vertical_m),
            (30_000_000_000, 500.0, 150.0)
        );
        assert_eq!(t.own_icao[&0xA1B2C3], 4);
        assert_eq!(t.own_uas_ids["FOX-UAS-04"], 4);
        assert_eq!(t.vehicles[&22], "UGV-02");
        assert_eq!(c.effective()["gap"]["identities"]["4"]["icao"], "A1B2C3");
        for (text, key) in [
            ("[traffic]\nstale_s = 0.0\n", "traffic.stale_s"),
            ("[traffic]\nhorizontal_m = 1e6\n", "traffic.horizontal_m"),
            ("[traffic]\nnearby_m = 3\n", "nearby_m"),
            (
                "[gap]\nvehicles = { 4 = { name = \"a\", icao = \"XYZ\" } }\n",
                "gap.vehicles.4.icao",
            ),
        ] {
            let err = refusal(&format!(
                "[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n{text}"
            ));
            assert!(err.contains(key), "{text}: {err}");
        }
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
        assert_eq!(
            c.fields_for,
            FieldSelection::Only(vec![0, 2, 253, 109, 166, 33, 24, 246, 12900, 12901, 12904])
        );
        assert_eq!(c.traffic.horizontal_m, 1000.0);
        assert!(c.gap.identities.is_empty());
        assert!(matches!(
            c.links[1].kind,
            LinkTransport::Serial { ref baud, .. } if baud.all() == [57600]
        ));
    }

    #[test]
    fn errors_name_the_key() {
        let err = refusal("[[link]]\nname = \"a\"\nudp = \"0.0.0.0:99999\"\n");
        assert!(
            err.contains("link[0].udp") && err.contains("test.toml"),
            "{err}"
        );
        let err = refusal("bogus = 1\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n");
        assert!(err.contains("bogus"), "{err}");
        let err = refusal("fields = [\"NOPE\"]\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n");
        assert!(err.contains("`fields`") && err.contains("NOPE"), "{err}");
        let err = refusal("fields = \"some\"\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n");
        assert!(err.contains("`fields`") && err.contains("some"), "{err}");
        let all = parse("fields = \"all\"\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n").unwrap();
        assert_eq!(all.fields_for, FieldSelection::All);
        assert_eq!(all.effective()["fields"], "all");
        let err = refusal(
            "[gap]\nvehicles = { x = \"a\" }\n[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n",
        );
        assert!(err.contains("gap.vehicles.x"), "{err}");
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
            let err = refusal(&format!("{text}{link}"));
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
            let err = refusal(&format!("{text}{link}"));
            assert!(err.contains(&format!("`{key}`")), "{text}: {err}");
        }
        for (extra, key) in [
            ("baud = 0\n", "link[0].baud"),
            ("queue_mb = 0\n", "link[0].queue_mb"),
        ] {
            let text = format!("[[link]]\nname = \"s\"\nserial = \"/dev/ttyS9\"\n{extra}");
            let err = refusal(&text);
            assert!(
                err.contains(key) && err.contains("out of range"),
                "{extra}: {err}"
            );
        }
        let err = refusal(&format!("{link}rcvbuf_kb = 1\n"));
        assert!(err.contains("link[0].rcvbuf_kb"), "{err}");
    }

    /// Issue 28: a threshold per vehicle and per link, checked at load, and how a vehicle's
    /// threshold follows from them.
    #[test]
    fn thresholds_per_vehicle_and_per_link() {
        let c = parse(
            "[gap]\nthreshold_s = 3.0\nthresholds = { 22 = 60.0 }\n\
             [[link]]\nname = \"radio1\"\nudp = \"0.0.0.0:1\"\n\
             [[link]]\nname = \"satcom\"\nudp = \"0.0.0.0:2\"\ngap_threshold_s = 120.0\n",
        )
        .unwrap();
        let gap = c.watch_settings().gap;
        let radio1 = ["radio1".to_string()];
        let both = ["radio1".to_string(), "satcom".to_string()];
        assert_eq!(gap.vehicle_threshold_ns(4, radio1.iter()), 3_000_000_000);
        // Heard on the satellite link: the longest of its links' thresholds.
        assert_eq!(gap.vehicle_threshold_ns(4, both.iter()), 120_000_000_000);
        // Its own threshold replaces the rest.
        assert_eq!(gap.vehicle_threshold_ns(22, both.iter()), 60_000_000_000);
        assert_eq!(gap.link_threshold_ns(22, "radio1"), 60_000_000_000);
        assert_eq!(gap.link_threshold_ns(22, "satcom"), 120_000_000_000);
        assert_eq!(gap.link_threshold_ns(4, "radio1"), 3_000_000_000);
        let e = c.effective();
        assert_eq!(e["gap"]["thresholds"]["22"], 60.0);
        assert_eq!(e["link"][1]["gap_threshold_s"], 120.0);
        let link = "[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n";
        for (text, key, why) in [
            (
                "[gap]\nthresholds = { x = 5.0 }\n",
                "gap.thresholds.x",
                "system id",
            ),
            (
                "[gap]\nthresholds = { 4 = 0.01 }\n",
                "gap.thresholds.4",
                "out of range",
            ),
            (
                "[gap]\nignore_sysids = [255]\nthresholds = { 255 = 9.0 }\n",
                "gap.thresholds.255",
                "ignore_sysids",
            ),
        ] {
            let err = refusal(&format!("{text}{link}"));
            assert!(err.contains(key) && err.contains(why), "{text}: {err}");
        }
        let err = refusal(&format!("{link}gap_threshold_s = 1e9\n"));
        assert!(err.contains("link[0].gap_threshold_s"), "{err}");
        let err = refusal("[[link]]\nname = \"any\"\nudp = \"0.0.0.0:1\"\n");
        assert!(
            err.contains("link[0].name") && err.contains("union"),
            "{err}"
        );
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
            let err = refusal(&format!("{link}{text}"));
            assert!(err.contains(key), "{text}: {err}");
        }
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
        let err = refusal(&format!("{link}[retention]\nmax_age_days = 0\n"));
        assert!(
            err.contains("retention.max_age_days") && err.contains("1 to 36500 days"),
            "{err}"
        );
        // Distinct from the NATS streams' own max_age_days.
        let err = refusal(&format!(
            "{link}[publish]\nnats_url = \"nats://127.0.0.1:4222\"\nsite = \"n\"\nmax_age_days = 0\n"
        ));
        assert!(err.contains("publish.max_age_days"), "{err}");
        let err = refusal(&format!(
            "rotate_size_mb = 256\n{link}[retention]\nmax_total_mb = 300\n"
        ));
        assert!(
            err.contains("retention.max_total_mb") && err.contains("rotate_size_mb"),
            "{err}"
        );
        assert!(parse(&format!("{link}[retention]\nmax_days = 3\n")).is_err());
    }
}
