//! The `range` verb's config: `data_dir`, `[range]` (the NATS server, the consumer's name),
//! `[gap]`, `[http]`, `[[webhook]]`, validated as the receiver's own keys are.

use super::raw::RawRangeConfig;
use super::{
    from_toml, http, monitors, publish, ranges, read, webhook, ConfigError, GapSettings,
    HttpSettings, WebhookSettings,
};
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize)]
pub struct RangeConfig {
    #[serde(rename = "config")]
    pub file: PathBuf,
    pub data_dir: PathBuf,
    pub fsync_interval_s: f64,
    pub nats_url: String,
    pub creds_file: Option<PathBuf>,
    /// The durable consumer's name (`range-<name>`), so a restart resumes where it stopped.
    pub name: String,
    pub gap: GapSettings,
    pub http: HttpSettings,
    #[serde(rename = "webhook")]
    pub webhooks: Vec<WebhookSettings>,
}

impl RangeConfig {
    pub fn load(path: &Path) -> Result<RangeConfig, ConfigError> {
        let file = path.display().to_string();
        let raw: RawRangeConfig = from_toml(&read(path)?, path)?;
        let invalid = |key: &str, reason: String| ConfigError::Invalid {
            file: file.clone(),
            key: key.to_string(),
            reason,
        };
        ranges::check("fsync_interval_s", raw.fsync_interval_s)
            .map_err(|r| invalid("fsync_interval_s", r))?;
        publish::check_nats_url(&raw.range.nats_url).map_err(|r| invalid("range.nats_url", r))?;
        let name = raw.range.name.clone().unwrap_or_else(|| "range".into());
        publish::check_site(&name).map_err(|r| invalid("range.name", r))?;
        Ok(RangeConfig {
            file: path.to_path_buf(),
            data_dir: raw.data_dir,
            fsync_interval_s: raw.fsync_interval_s,
            nats_url: raw.range.nats_url,
            creds_file: raw.range.creds_file,
            name,
            gap: monitors::parse_gap(&raw.gap, &invalid)?,
            http: http::parse(&raw.http, &invalid)?,
            webhooks: webhook::parse_webhooks(&raw.webhook.0, &invalid)?,
        })
    }

    pub fn effective(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("the config serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/config/range.toml");

    #[test]
    fn the_shipped_range_config_loads_as_it_says() {
        let config = RangeConfig::load(Path::new(SHIPPED)).unwrap();
        assert_eq!(config.data_dir, Path::new("./range-data"));
        assert_eq!(config.nats_url, "nats://127.0.0.1:4222");
        assert_eq!(config.name, "range");
        assert_eq!(config.http.listen.to_string(), "127.0.0.1:9138");
        assert!(config.webhooks.is_empty());
    }

    #[test]
    fn the_shipped_range_config_loads_with_its_examples_uncommented() {
        let shipped = std::fs::read_to_string(SHIPPED).unwrap();
        // Every commented `key = value` line (and table header) below the first table, as an
        // operator would uncomment it.
        let body = shipped.find("\n[").unwrap();
        let uncommented: String = shipped[..body]
            .lines()
            .chain(shipped[body..].lines().map(|l| {
                let rest = l.strip_prefix("# ").unwrap_or(l);
                let example = rest.starts_with('[')
                    || rest.split_once(" = ").is_some_and(|(key, _)| {
                        key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    });
                if example {
                    rest
                } else {
                    l
                }
            }))
            .map(|l| format!("{l}\n"))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("range.toml");
        std::fs::write(&path, &uncommented).unwrap();
        let config = RangeConfig::load(&path).unwrap_or_else(|e| panic!("{e}\n{uncommented}"));
        assert_eq!(config.gap.vehicles.len(), 2);
        assert_eq!(config.webhooks.len(), 1);
        assert_eq!(config.webhooks[0].kinds, ["telemetry_gap", "coverage"]);
        assert!(config.http.token.is_some() && config.creds_file.is_some());
    }
}
