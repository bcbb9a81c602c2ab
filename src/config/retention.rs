//! `[retention]`: how long and how much of `receive/`, `events/` and `tlog/` is kept, checked at
//! load. Both bounds are optional; without either nothing is ever removed. What the bounds do
//! to the day folders is `sink::retention`.

use super::raw::RawRetention;
use super::{ranges, ConfigError};
use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RetentionSettings {
    /// Day folders dated more than this many days before today go.
    pub max_age_days: Option<u32>,
    /// The three streams together are kept under this many MiB, oldest day folders first.
    pub max_total_mb: Option<u64>,
}

impl RetentionSettings {
    pub fn max_total_bytes(&self) -> Option<u64> {
        self.max_total_mb.map(|mb| mb.saturating_mul(1024 * 1024))
    }

    /// Whether any bound is set (without one, the retention task never starts).
    pub fn is_set(&self) -> bool {
        self.max_age_days.is_some() || self.max_total_mb.is_some()
    }
}

pub(super) fn parse(
    raw: Option<&RawRetention>,
    rotate_size_mb: u64,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<RetentionSettings, ConfigError> {
    let Some(raw) = raw else {
        return Ok(RetentionSettings::default());
    };
    if let Some(days) = raw.max_age_days {
        ranges::check("retention.max_age_days", days as f64)
            .map_err(|r| invalid("retention.max_age_days", r))?;
    }
    if let Some(mb) = raw.max_total_mb {
        ranges::check("retention.max_total_mb", mb as f64)
            .map_err(|r| invalid("retention.max_total_mb", r))?;
        // The open files are never removed: a bound one of them alone can pass is no bound.
        if mb < rotate_size_mb.saturating_mul(2) {
            return Err(invalid(
                "retention.max_total_mb",
                format!(
                    "{mb} MiB of kept files is less than twice rotate_size_mb ({rotate_size_mb} MiB): \
                     the open files, which are never removed, could pass it alone"
                ),
            ));
        }
    }
    Ok(RetentionSettings {
        max_age_days: raw.max_age_days,
        max_total_mb: raw.max_total_mb,
    })
}
