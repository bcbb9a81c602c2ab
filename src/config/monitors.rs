//! `[gap]` and `[latency]`: what the gap detector and the latency estimator are told, validated
//! once, and the one translation from them to the monitors' own settings, so `run`, `analyze`
//! and `range` judge by the same rules.

use super::raw::{RawGap, RawLatency};
use super::{ranges, ConfigError};
use crate::monitor::{GapConfig, LatencyConfig, WatchSettings};
use serde::Serialize;
use std::collections::BTreeMap;

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

impl GapSettings {
    /// The gap detector's settings: the one translation, for the daemon, `analyze` and the
    /// range view alike.
    pub fn gap_config(&self) -> GapConfig {
        let mut config = GapConfig::with_threshold_s(self.threshold_s);
        config.ignore_sysids = self.ignore_sysids.iter().copied().collect();
        config.vehicles = self.vehicles.clone();
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
    Ok(GapSettings {
        threshold_s: raw.threshold_s,
        ignore_sysids: raw.ignore_sysids.clone(),
        vehicles,
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
