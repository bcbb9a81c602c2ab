//! `[gap]`, `[latency]` and `[traffic]`: what the gap detector, the latency estimator and the
//! traffic monitor are told, validated once, and the one translation from them to the
//! monitors' own settings, so `run`, `analyze` and `range` judge by the same rules.

use super::raw::{RawGap, RawLatency, RawTraffic, RawVehicle};
use super::{ranges, ConfigError};
use crate::monitor::traffic::TrafficConfig;
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
    /// Per vehicle, its own transponder's ICAO address and Remote ID UAS ID, when given.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub identities: BTreeMap<u8, VehicleIdentity>,
}

/// What a vehicle of ours broadcasts as: not traffic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VehicleIdentity {
    /// Six hex digits, as configured (upper case).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icao: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uas_id: Option<String>,
}

/// `[traffic]`, validated.
#[derive(Debug, Clone, Serialize)]
pub struct TrafficSettings {
    pub stale_s: f64,
    pub horizontal_m: f64,
    pub vertical_m: f64,
    pub own_match_m: f64,
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
    let mut identities: BTreeMap<u8, VehicleIdentity> = BTreeMap::new();
    for (sysid, vehicle) in &raw.vehicles {
        let key = format!("gap.vehicles.{sysid}");
        let id: u8 = sysid
            .parse()
            .map_err(|_| invalid(&key, "a vehicle key is a system id, 0 to 255".into()))?;
        match vehicle {
            RawVehicle::Name(name) => {
                vehicles.insert(id, name.clone());
            }
            RawVehicle::Full(v) => {
                vehicles.insert(id, v.name.clone());
                let icao = match &v.icao {
                    Some(text) => match crate::traffic::parse_icao(text) {
                        Some(a) if text.trim().len() == 6 => Some(format!("{a:06X}")),
                        _ => {
                            return Err(invalid(
                                &format!("{key}.icao"),
                                format!(
                                "`{text}` is not an ICAO address: six hex digits, e.g. \"A1B2C3\""
                            ),
                            ))
                        }
                    },
                    None => None,
                };
                let uas_id = match &v.uas_id {
                    Some(text) if text.trim().is_empty() || text.len() > 40 => {
                        return Err(invalid(
                            &format!("{key}.uas_id"),
                            "a UAS ID is 1 to 20 characters (or 40 hex digits)".into(),
                        ))
                    }
                    other => other.as_ref().map(|t| t.trim().to_string()),
                };
                if icao.is_some() || uas_id.is_some() {
                    identities.insert(id, VehicleIdentity { icao, uas_id });
                }
            }
        }
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
        identities,
    })
}

/// `[traffic]`, validated.
pub(super) fn parse_traffic(
    raw: &RawTraffic,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<TrafficSettings, ConfigError> {
    for (key, value) in [
        ("traffic.stale_s", raw.stale_s),
        ("traffic.horizontal_m", raw.horizontal_m),
        ("traffic.vertical_m", raw.vertical_m),
        ("traffic.own_match_m", raw.own_match_m),
    ] {
        ranges::check(key, value).map_err(|reason| invalid(key, reason))?;
    }
    Ok(TrafficSettings {
        stale_s: raw.stale_s,
        horizontal_m: raw.horizontal_m,
        vertical_m: raw.vertical_m,
        own_match_m: raw.own_match_m,
    })
}

impl TrafficSettings {
    /// The traffic monitor's settings, with the vehicles' names and identities from `[gap]`.
    pub fn traffic_config(&self, gap: &GapSettings) -> TrafficConfig {
        let mut config = TrafficConfig {
            stale_ns: seconds_to_ns(self.stale_s),
            horizontal_m: self.horizontal_m,
            vertical_m: self.vertical_m,
            own_match_m: self.own_match_m,
            vehicles: gap.vehicles.clone(),
            ignore_sysids: gap.ignore_sysids.iter().copied().collect(),
            ..TrafficConfig::default()
        };
        for (&sysid, identity) in &gap.identities {
            if let Some(a) = identity
                .icao
                .as_deref()
                .and_then(crate::traffic::parse_icao)
            {
                config.own_icao.insert(a, sysid);
            }
            if let Some(id) = &identity.uas_id {
                config.own_uas_ids.insert(id.clone(), sysid);
            }
        }
        config
    }
}

impl Default for TrafficSettings {
    fn default() -> Self {
        TrafficSettings {
            stale_s: 20.0,
            horizontal_m: 1_000.0,
            vertical_m: 150.0,
            own_match_m: 30.0,
        }
    }
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

/// The gap, latency and traffic settings, for the live daemon and `analyze` alike: the one
/// translation from config to monitors, so offline findings follow the live rules.
pub fn watch_settings(
    gap: &GapSettings,
    latency: &LatencySettings,
    traffic: &TrafficSettings,
) -> WatchSettings {
    WatchSettings {
        traffic: traffic.traffic_config(gap),
        gap: gap.gap_config(),
        latency: LatencyConfig {
            window_ns: (latency.window_s * 1e9) as i64,
            ..LatencyConfig::default()
        },
        report_interval_s: latency.report_interval_s,
    }
}
