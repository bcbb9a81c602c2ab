//! `[gap]` and `[latency]`: what the gap detector and the latency estimator are told, validated
//! once, and the one translation from them to the monitors' own settings, so `run`, `analyze`
//! and `range` judge by the same rules.

use super::raw::{RawGap, RawLatency};
use super::{ranges, ConfigError};
use crate::monitor::{GapConfig, LatencyConfig, WatchSettings};
use crate::utc::seconds_to_ns;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct GapSettings {
    pub threshold_s: f64,
    pub ignore_sysids: Vec<u8>,
    pub vehicles: BTreeMap<u8, String>,
    /// Per vehicle, its own threshold (`thresholds = { 4 = 60.0 }`).
    pub thresholds: BTreeMap<u8, f64>,
    /// Per link, its own threshold (`[[link]] gap_threshold_s`), filled in from the links.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub link_thresholds: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencySettings {
    pub window_s: f64,
    pub report_interval_s: f64,
}

impl GapSettings {
    /// The gap detector's settings: the one translation, for the daemon, `analyze` and the
    /// range view alike.
    pub fn gap_config(&self) -> GapConfig {
        let mut config = GapConfig::with_threshold_s(self.threshold_s);
        config.ignore_sysids = self.ignore_sysids.iter().copied().collect();
        config.vehicles = self.vehicles.clone();
        config.vehicle_thresholds_ns = self
            .thresholds
            .iter()
            .map(|(&sysid, &s)| (sysid, seconds_to_ns(s)))
            .collect();
        config.link_thresholds_ns = self
            .link_thresholds
            .iter()
            .map(|(link, &s)| (link.clone(), seconds_to_ns(s)))
            .collect();
        config
    }
}

/// `[gap]`, validated (shared with the `range` config).
pub(super) fn parse_gap(
    raw: &RawGap,
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
    let mut thresholds = BTreeMap::new();
    for (sysid, &seconds) in &raw.thresholds {
        let key = format!("gap.thresholds.{sysid}");
        let id: u8 = sysid
            .parse()
            .map_err(|_| invalid(&key, "a threshold's key is a system id, 0 to 255".into()))?;
        ranges::check("gap.thresholds", seconds).map_err(|reason| invalid(&key, reason))?;
        if raw.ignore_sysids.contains(&id) {
            return Err(invalid(
                &key,
                format!("system id {id} is in gap.ignore_sysids: it is never judged"),
            ));
        }
        thresholds.insert(id, seconds);
    }
    Ok(GapSettings {
        threshold_s: raw.threshold_s,
        ignore_sysids: raw.ignore_sysids.clone(),
        vehicles,
        thresholds,
        link_thresholds: BTreeMap::new(),
    })
}

/// `[latency]`, validated.
pub(super) fn parse_latency(
    raw: &RawLatency,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<LatencySettings, ConfigError> {
    for (key, value) in [
        ("latency.window_s", raw.window_s),
        ("latency.report_interval_s", raw.report_interval_s),
    ] {
        ranges::check(key, value).map_err(|reason| invalid(key, reason))?;
    }
    Ok(LatencySettings {
        window_s: raw.window_s,
        report_interval_s: raw.report_interval_s,
    })
}

/// The gap and latency settings, for the live daemon and `analyze` alike: the one
/// translation from config to monitors, so offline findings follow the live rules.
pub fn watch_settings(gap: &GapSettings, latency: &LatencySettings) -> WatchSettings {
    WatchSettings {
        gap: gap.gap_config(),
        latency: LatencyConfig {
            window_ns: (latency.window_s * 1e9) as i64,
            ..LatencyConfig::default()
        },
        report_interval_s: latency.report_interval_s,
    }
}
