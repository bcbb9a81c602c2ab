//! The crate's time axis: UTC as `i64` nanoseconds since the Unix epoch, and its text form
//! (RFC 3339, millisecond precision, `Z`) in the receive log's `recv_utc`, the events, `/status`
//! and the reports; the UTC day that names the day folders. A leaf below the receive log
//! (`receipt`), the monitors and everything that writes a time.
//!
//! Nothing here reads a clock: callers pass the time in.

use chrono::DateTime;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Nanoseconds in one second, for converting between the `i64` axis and seconds.
pub const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// Nanoseconds in one millisecond.
pub const NANOS_PER_MILLI: i64 = 1_000_000;

/// Formats UTC nanoseconds as RFC 3339 with milliseconds and `Z`, e.g. `2026-09-24T14:32:03.912Z`:
/// the one rule for every time the receiver writes (events, `/status`, reports; the receive log
/// through [`UtcMillis`], which caches the part that changes once a second).
///
/// Sub-millisecond digits are truncated, not rounded, so an instant never prints as later than it
/// was.
pub fn format_utc_ms(utc_ns: i64) -> String {
    let mut out = Vec::with_capacity(24);
    UtcMillis::default().write(&mut out, utc_ns);
    String::from_utf8(out).expect("ASCII")
}

/// Microseconds since the epoch (a flight log's GPS time, the catalog's times) in the same form
/// as [`format_utc_ms`]. A time past what nanoseconds hold (after 2262, before 1677: only a
/// corrupt GPS time gets there) is still written, through chrono, so the report shows the
/// corrupt year rather than nothing; `None` only past chrono's own range.
pub fn format_utc_ms_of_us(utc_us: i64) -> Option<String> {
    match utc_us.checked_mul(1_000) {
        Some(utc_ns) => Some(format_utc_ms(utc_ns)),
        None => DateTime::from_timestamp_micros(utc_us)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
    }
}

/// Formats UTC nanoseconds as RFC 3339 with milliseconds and `Z`, caching the part that changes
/// once a second so the per-frame cost is a few digits.
#[derive(Debug, Default)]
pub struct UtcMillis {
    second: Option<i64>,
    prefix: String,
}

impl UtcMillis {
    pub fn write(&mut self, out: &mut Vec<u8>, utc_ns: i64) {
        let second = utc_ns.div_euclid(1_000_000_000);
        let millis = (utc_ns.rem_euclid(1_000_000_000) / 1_000_000) as u32;
        if self.second != Some(second) {
            self.second = Some(second);
            self.prefix = DateTime::<chrono::Utc>::from_timestamp(second, 0)
                .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
                .unwrap_or_else(|| "1970-01-01T00:00:00".to_string());
        }
        out.extend_from_slice(self.prefix.as_bytes());
        out.extend_from_slice(&[
            b'.',
            b'0' + (millis / 100) as u8,
            b'0' + (millis / 10 % 10) as u8,
            b'0' + (millis % 10) as u8,
            b'Z',
        ]);
    }
}

/// Nanoseconds in one UTC day.
pub const NANOS_PER_DAY: i64 = 86_400 * NANOS_PER_SECOND;

/// The UTC day (days since the Unix epoch) of an instant: what names the day folders.
pub fn day_of(utc_ns: i64) -> i64 {
    utc_ns.div_euclid(NANOS_PER_DAY)
}

/// Days from 0001-01-01 (chrono's day 1) to 1970-01-01.
const EPOCH_CE_DAYS: i64 = 719_163;

/// `2026-06-01`: the day folder of a UTC day, the one rule for the files' folders and
/// retention.
pub fn day_name(day: i64) -> String {
    chrono::NaiveDate::from_num_days_from_ce_opt((day + EPOCH_CE_DAYS) as i32)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| format!("day{day}"))
}

/// The day of a `YYYY-MM-DD` folder name, or `None` for anything else.
pub fn parse_day(name: &str) -> Option<i64> {
    if name.len() != 10 {
        return None;
    }
    let date = chrono::NaiveDate::parse_from_str(name, "%Y-%m-%d").ok()?;
    Some(i64::from(chrono::Datelike::num_days_from_ce(&date)) - EPOCH_CE_DAYS)
}

/// Parses an RFC 3339 time (any offset, any number of fractional digits) into UTC nanoseconds.
/// Returns `None` when the text is not RFC 3339 or falls outside the `i64` nanosecond range.
pub fn parse_utc_ns(text: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(text)
        .ok()?
        .timestamp_nanos_opt()
}

/// Converts seconds (as configured, e.g. `threshold_s = 3.0`) to nanoseconds, rounding to the
/// nearest nanosecond so `3.0` is exactly `3_000_000_000`.
pub fn seconds_to_ns(seconds: f64) -> i64 {
    (seconds * NANOS_PER_SECOND as f64).round() as i64
}

/// Converts a nanosecond span to seconds for an event field (`gap_s`, `threshold_s`, ...).
///
/// Division of an exact integer gives the nearest `f64`, so 6_962_000_000 ns prints as `6.962`.
pub fn ns_to_seconds(span_ns: i64) -> f64 {
    span_ns as f64 / NANOS_PER_SECOND as f64
}

/// Converts a nanosecond span to milliseconds for an event field (`p50_ms`, ...).
pub fn ns_to_millis(span_ns: i64) -> f64 {
    span_ns as f64 / NANOS_PER_MILLI as f64
}

/// An instant on the UTC axis that serialises as an RFC 3339 millisecond string.
///
/// Events keep the exact nanoseconds (so tests and callers compare numbers) and only the JSON
/// form is rounded to the millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UtcTime(pub i64);

impl UtcTime {
    /// Nanoseconds since the Unix epoch.
    pub fn ns(self) -> i64 {
        self.0
    }
}

impl std::fmt::Display for UtcTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_utc_ms(self.0))
    }
}

impl Serialize for UtcTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_utc_ms(self.0))
    }
}

impl<'de> Deserialize<'de> for UtcTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_utc_ns(&text)
            .map(UtcTime)
            .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 time: {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_are_written_as_nanoseconds_are_and_a_corrupt_year_still_shows() {
        let us = 1_758_724_323_912_345;
        assert_eq!(format_utc_ms_of_us(us).unwrap(), format_utc_ms(us * 1_000));
        assert_eq!(format_utc_ms_of_us(us).unwrap(), "2025-09-24T14:32:03.912Z");
        // Year 3000: past i64 nanoseconds, still a date.
        assert_eq!(
            format_utc_ms_of_us(32_503_680_000_000_000).unwrap(),
            "3000-01-01T00:00:00.000Z"
        );
        assert_eq!(format_utc_ms_of_us(i64::MAX), None);
    }

    #[test]
    fn formats_with_milliseconds_and_z_truncating_below_the_millisecond() {
        let ns = parse_utc_ns("2026-09-24T14:32:03.912Z").unwrap();
        assert_eq!(format_utc_ms(ns), "2026-09-24T14:32:03.912Z");
        assert_eq!(format_utc_ms(ns + 999_999), "2026-09-24T14:32:03.912Z");
        assert_eq!(format_utc_ms(ns + 1_000_000), "2026-09-24T14:32:03.913Z");
        assert_eq!(format_utc_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_utc_ms(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_offsets_and_microseconds() {
        assert_eq!(
            parse_utc_ns("1970-01-01T00:00:01.000001Z"),
            Some(1_000_001_000)
        );
        assert_eq!(parse_utc_ns("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_utc_ns("yesterday"), None);
    }

    #[test]
    fn utc_round_trips_through_json_at_millisecond_precision() {
        let json = serde_json::to_string(&UtcTime(1_500_000_000_123_456_789)).unwrap();
        assert_eq!(json, "\"2017-07-14T02:40:00.123Z\"");
        let back: UtcTime = serde_json::from_str(&json).unwrap();
        assert_eq!(back, UtcTime(1_500_000_000_123_000_000));
    }

    #[test]
    fn seconds_convert_exactly() {
        assert_eq!(seconds_to_ns(3.0), 3_000_000_000);
        assert_eq!(seconds_to_ns(0.001), 1_000_000);
        assert_eq!(ns_to_seconds(6_962_000_000).to_string(), "6.962");
        assert_eq!(ns_to_millis(15_939_285_000).to_string(), "15939.285");
    }
}
