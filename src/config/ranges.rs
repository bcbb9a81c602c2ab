//! The range of every number in the config, checked at load: a value outside it is refused
//! (exit 78) with the key, the value and the range, instead of panicking, spinning or dropping
//! everything at run time. The example config (config/receiver.toml) and the README state the
//! same table; a test checks both ends of each.

/// One numeric key's accepted range, inclusive.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub key: &'static str,
    pub min: f64,
    pub max: f64,
    pub unit: &'static str,
}

const fn range(key: &'static str, min: f64, max: f64, unit: &'static str) -> Range {
    Range {
        key,
        min,
        max,
        unit,
    }
}

pub const RANGES: &[Range] = &[
    range("fsync_interval_s", 0.01, 3600.0, "s"),
    range("rotate_size_mb", 1.0, 65_536.0, "MiB"),
    range("buffer_mb", 1.0, 16_384.0, "MiB"),
    range("link.baud", 50.0, 12_000_000.0, "baud"),
    range("link.queue_mb", 1.0, 1024.0, "MiB"),
    range("link.rcvbuf_kb", 64.0, 1_048_576.0, "KiB"),
    range("link.read_window_ms", 0.0, 100.0, "ms"),
    range("link.max_peers", 1.0, 1024.0, "peers"),
    range("forward.max_peers", 1.0, 1024.0, "peers"),
    range("forward.queue_kb", 64.0, 1_048_576.0, "KiB"),
    range("gap.threshold_s", 0.1, 86_400.0, "s"),
    range("gap.thresholds", 0.1, 86_400.0, "s"),
    range("link.gap_threshold_s", 0.1, 86_400.0, "s"),
    range("latency.window_s", 1.0, 86_400.0, "s"),
    range("latency.report_interval_s", 1.0, 86_400.0, "s"),
    range("traffic.stale_s", 1.0, 3_600.0, "s"),
    range("traffic.horizontal_m", 10.0, 100_000.0, "m"),
    range("traffic.vertical_m", 1.0, 10_000.0, "m"),
    range("traffic.own_match_m", 1.0, 1_000.0, "m"),
    range("http.max_connections", 1.0, 65_536.0, "connections"),
    range(
        "http.max_connections_per_peer",
        1.0,
        65_536.0,
        "connections",
    ),
    range("http.max_streams", 1.0, 65_535.0, "streams"),
    range("http.max_streams_per_peer", 1.0, 65_535.0, "streams"),
    range("webhook.queue", 1.0, 100_000.0, "events"),
    range("webhook.timeout_s", 0.1, 300.0, "s"),
    range("publish.max_age_days", 0.01, 3650.0, "days"),
    range("retention.max_age_days", 1.0, 36_500.0, "days"),
    range("retention.max_total_mb", 1.0, 1_073_741_824.0, "MiB"),
];

/// Checks `value` for `key` (its name in [`RANGES`]); the reason when it is outside.
pub fn check(key: &str, value: f64) -> Result<(), String> {
    let r = RANGES
        .iter()
        .find(|r| r.key == key)
        .unwrap_or_else(|| panic!("no range for {key}"));
    if value.is_finite() && value >= r.min && value <= r.max {
        Ok(())
    } else {
        Err(format!(
            "{value} is out of range: {} to {} {}",
            r.min, r.max, r.unit
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ends_are_in_and_beyond_them_out() {
        for r in RANGES {
            assert!(
                check(r.key, r.min).is_ok() && check(r.key, r.max).is_ok(),
                "{}",
                r.key
            );
            assert!(
                check(r.key, r.min * 0.99 - 1e-9).is_err(),
                "{} below",
                r.key
            );
            assert!(check(r.key, r.max * 1.01 + 1.0).is_err(), "{} above", r.key);
            assert!(check(r.key, f64::NAN).is_err() && check(r.key, f64::INFINITY).is_err());
        }
    }

    /// Every range is stated in the example config, so an operator sees it where they edit.
    #[test]
    fn the_example_config_states_every_range() {
        let example = include_str!("../../config/receiver.toml");
        for r in RANGES {
            let name = r.key.rsplit('.').next().unwrap();
            let stated = format!("{name}: {} to {} {}", r.min, r.max, r.unit);
            assert!(
                example.contains(&stated),
                "config/receiver.toml does not say `{stated}`"
            );
        }
    }
}
