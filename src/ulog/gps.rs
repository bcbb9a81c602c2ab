//! The GPS time anchor: ties the boot clock to UTC from `sensor_gps` (or `vehicle_gps_position`
//! in older logs). Each fix with a non-zero `time_utc_usec` gives one offset
//! `time_utc_usec - (timestamp + timestamp_time_relative)`; the anchor is their median.
//!
//! Memory is bounded: past [`MAX_KEPT`] offsets the list is thinned to every other one and from
//! then on only every other fix is kept (doubling as often as needed), so the median stays exact
//! for any realistic flight and a close estimate beyond that.

use super::display::grouped;
use super::format::{BasicType, FormatRegistry};
use serde::Serialize;

/// Offsets kept per GPS instance before thinning.
pub const MAX_KEPT: usize = 1 << 20;

/// Topics that carry GPS UTC, preferred first.
pub const GPS_TOPICS: [&str; 2] = ["sensor_gps", "vehicle_gps_position"];

/// Where the needed fields sit in one GPS topic's samples.
#[derive(Debug, Clone, Copy)]
pub struct GpsFields {
    timestamp: usize,
    utc: usize,
    relative: Option<usize>,
}

impl GpsFields {
    /// Finds `timestamp`, `time_utc_usec` and (optionally) `timestamp_time_relative`.
    pub fn find(formats: &FormatRegistry, format_name: &str) -> Option<GpsFields> {
        let fields = formats.flatten(format_name).ok()?;
        let find = |name: &str, ty: BasicType| {
            fields
                .iter()
                .find(|f| f.name == name && f.ty == ty)
                .map(|f| f.offset)
        };
        Some(GpsFields {
            timestamp: find("timestamp", BasicType::UInt64)?,
            utc: find("time_utc_usec", BasicType::UInt64)?,
            relative: find("timestamp_time_relative", BasicType::Int32),
        })
    }
}

/// Offsets collected for one GPS instance.
#[derive(Debug, Clone)]
pub struct GpsInstance {
    pub topic: String,
    pub multi_id: u8,
    fields: GpsFields,
    offsets: Vec<i64>,
    stride: u64,
    seen_utc: u64,
    zero_utc: u64,
}

impl GpsInstance {
    pub fn new(topic: &str, multi_id: u8, fields: GpsFields) -> Self {
        GpsInstance {
            topic: topic.to_string(),
            multi_id,
            fields,
            offsets: Vec::new(),
            stride: 1,
            seen_utc: 0,
            zero_utc: 0,
        }
    }

    /// Takes one sample's payload.
    pub fn add(&mut self, payload: &[u8]) {
        let read_u64 = |at: usize| {
            payload
                .get(at..at + 8)
                .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        };
        let (Some(timestamp), Some(utc)) =
            (read_u64(self.fields.timestamp), read_u64(self.fields.utc))
        else {
            return;
        };
        if utc == 0 {
            self.zero_utc += 1;
            return;
        }
        let relative = self
            .fields
            .relative
            .and_then(|at| payload.get(at..at + 4))
            .map_or(0, |s| i32::from_le_bytes(s.try_into().expect("4 bytes")));
        let boot_clock = i128::from(timestamp) + i128::from(relative);
        let offset =
            (i128::from(utc) - boot_clock).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        self.seen_utc += 1;
        if !(self.seen_utc - 1).is_multiple_of(self.stride) {
            return;
        }
        self.offsets.push(offset);
        if self.offsets.len() >= MAX_KEPT {
            let thinned: Vec<i64> = self.offsets.iter().step_by(2).copied().collect();
            self.offsets = thinned;
            self.stride *= 2;
        }
    }

    pub fn fixes_used(&self) -> u64 {
        self.seen_utc
    }
}

/// The anchor as the report shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GpsAnchor {
    /// `GPS time from sensor_gps, 1,081 fixes` or `Elapsed time only`.
    pub title: String,
    pub source: Option<String>,
    pub multi_id: Option<u8>,
    pub fixes_used: u64,
    /// Fixes left out because `time_utc_usec` was 0 (no UTC yet).
    pub fixes_without_utc: u64,
    /// Median of `time_utc_usec - (timestamp + timestamp_time_relative)`, microseconds.
    pub boot_offset_us: Option<i64>,
    /// Largest minus smallest offset over the fixes used, milliseconds.
    pub spread_ms: Option<f64>,
    /// The flight controller's boot instant in UTC (RFC 3339, milliseconds).
    pub boot_utc: Option<String>,
}

/// Picks the instance with the most UTC fixes (on a tie `sensor_gps` over
/// `vehicle_gps_position`, then the lower `multi_id`) and computes the anchor; `Elapsed time only` when no fix had UTC.
pub fn anchor(instances: &mut [GpsInstance]) -> GpsAnchor {
    let zero_total: u64 = instances.iter().map(|i| i.zero_utc).sum();
    let best = instances
        .iter_mut()
        .filter(|i| i.seen_utc > 0)
        .min_by_key(|i| {
            let rank = GPS_TOPICS
                .iter()
                .position(|t| *t == i.topic)
                .unwrap_or(GPS_TOPICS.len());
            (std::cmp::Reverse(i.seen_utc), rank, i.multi_id)
        });
    let Some(best) = best else {
        return GpsAnchor {
            title: "Elapsed time only".into(),
            source: None,
            multi_id: None,
            fixes_used: 0,
            fixes_without_utc: zero_total,
            boot_offset_us: None,
            spread_ms: None,
            boot_utc: None,
        };
    };
    best.offsets.sort_unstable();
    let n = best.offsets.len();
    let median = if n % 2 == 1 {
        best.offsets[n / 2]
    } else {
        ((i128::from(best.offsets[n / 2 - 1]) + i128::from(best.offsets[n / 2])) / 2) as i64
    };
    let spread = (i128::from(best.offsets[n - 1]) - i128::from(best.offsets[0])) as f64 / 1000.0;
    let boot_utc = crate::utc::format_utc_ms_of_us(median);
    GpsAnchor {
        title: format!(
            "GPS time from {}, {} fixes",
            best.topic,
            grouped(best.seen_utc)
        ),
        source: Some(best.topic.clone()),
        multi_id: Some(best.multi_id),
        fixes_used: best.seen_utc,
        fixes_without_utc: best.zero_utc,
        boot_offset_us: Some(median),
        spread_ms: Some(spread),
        boot_utc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ts: u64, rel: i32, utc: u64) -> Vec<u8> {
        let mut p = ts.to_le_bytes().to_vec();
        p.extend(utc.to_le_bytes());
        p.extend(rel.to_le_bytes());
        p
    }

    #[test]
    fn median_offset_skips_zero_utc() {
        let fields = GpsFields {
            timestamp: 0,
            utc: 8,
            relative: Some(16),
        };
        let mut inst = GpsInstance::new("sensor_gps", 0, fields);
        inst.add(&sample(1_000_000, 0, 0));
        let boot = 1_790_000_000_000_000u64;
        inst.add(&sample(2_000_000, -500, boot + 2_000_000 - 500 + 40_000));
        inst.add(&sample(3_000_000, 0, boot + 3_000_000 - 10_000));
        inst.add(&sample(4_000_000, 0, boot + 4_000_000));
        let a = anchor(&mut [inst]);
        assert_eq!(a.fixes_used, 3);
        assert_eq!(a.fixes_without_utc, 1);
        assert_eq!(a.boot_offset_us, Some(boot as i64));
        assert_eq!(a.spread_ms, Some(50.0));
        assert_eq!(a.title, "GPS time from sensor_gps, 3 fixes");
        assert_eq!(anchor(&mut []).title, "Elapsed time only");
    }

    #[test]
    fn the_instance_with_the_most_fixes_wins_over_the_preferred_topic() {
        let fields = GpsFields {
            timestamp: 0,
            utc: 8,
            relative: Some(16),
        };
        let boot = 1_790_000_000_000_000u64;
        let mut few = GpsInstance::new("sensor_gps", 0, fields);
        few.add(&sample(1_000_000, 0, boot + 1_000_000));
        let mut many = GpsInstance::new("vehicle_gps_position", 0, fields);
        for i in 1..=10u64 {
            many.add(&sample(i * 1_000_000, 0, boot + 7 + i * 1_000_000));
        }
        let a = anchor(&mut [few.clone(), many]);
        assert_eq!(a.source.as_deref(), Some("vehicle_gps_position"));
        assert_eq!(a.fixes_used, 10);
        assert_eq!(a.boot_offset_us, Some(boot as i64 + 7));
        // On a tie, sensor_gps is preferred.
        let mut other = GpsInstance::new("vehicle_gps_position", 0, fields);
        other.add(&sample(1_000_000, 0, boot + 1_000_000 + 5));
        let a = anchor(&mut [other, few]);
        assert_eq!(a.source.as_deref(), Some("sensor_gps"));
    }
}
