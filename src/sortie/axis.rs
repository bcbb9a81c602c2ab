//! The sortie's UTC axis for a great many stamps (every sample and receipt of the MCAP file),
//! where the timeline places a few entries exactly.
//!
//! An anchor that rests on a ground record's SYSTEM_TIME receipts is evaluated moment by
//! moment (each receipt's window widened by the drift allowed since it, `super::anchor`), at a
//! cost in proportion to the receipts. Here it is evaluated once per second of the clock being
//! converted and reused within that second: the 100 ppm drift allowance moves the intersection,
//! and so the boot instant, by at most 0.1 ms in a second, which is what a stamp converted here
//! may differ from the timeline's exact placement of the same stamp. A fixed anchor (GPS,
//! `boot_time_utc_us`) is the same at every moment and converts exactly.
//!
//! Pure: stamps in, stamps out.

use super::anchor::Anchor;
use super::entry::SECOND;
use super::timeline::RecordPlacement;

/// The boot clock onto UTC by one anchor.
pub struct BootToUtc<'a> {
    anchor: Option<&'a Anchor>,
    /// The second of the boot clock last evaluated, and the boot instant there.
    memo: Option<(i64, Option<i64>)>,
}

impl<'a> BootToUtc<'a> {
    /// `None`: no anchor ties the boot clock to UTC (every conversion is `None`).
    pub fn new(anchor: Option<&'a Anchor>) -> BootToUtc<'a> {
        BootToUtc { anchor, memo: None }
    }

    /// The UTC of boot-clock time `boot_ns`.
    pub fn utc(&mut self, boot_ns: i64) -> Option<i64> {
        let second = boot_ns.div_euclid(SECOND);
        let boot = match self.memo {
            Some((s, boot)) if s == second => boot,
            _ => {
                let anchor = self.anchor?;
                let boot = anchor.boot_at(second * SECOND).map(|i| i.mid());
                self.memo = Some((second, boot));
                boot
            }
        };
        boot.map(|b| b + boot_ns)
    }
}

/// A ground record's stamps onto the boot clock, as [`RecordPlacement::place`] places them.
pub struct StampToBoot<'a> {
    placement: RecordPlacement<'a>,
    /// The second of the record's clock last evaluated, and the boot instant there.
    memo: Option<(i64, Option<i64>)>,
}

impl<'a> StampToBoot<'a> {
    pub fn new(placement: RecordPlacement<'a>) -> StampToBoot<'a> {
        StampToBoot {
            placement,
            memo: None,
        }
    }

    /// The boot-clock time of a record stamp.
    pub fn boot(&mut self, stamp: i64) -> Option<i64> {
        let t = self.placement.moment(stamp);
        let second = t.div_euclid(SECOND);
        let at = match self.memo {
            Some((s, at)) if s == second => at,
            _ => {
                let at = self
                    .placement
                    .boot_instant(second * SECOND)
                    .map(|(at, _)| at);
                self.memo = Some((second, at));
                at
            }
        };
        at.map(|at| t - at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sortie::anchor::{
        fit_ground, gps_anchor, ground_anchor, Interval, SystemTimeReceipt,
    };
    use crate::sortie::entry::MS;

    #[test]
    fn a_fixed_anchor_converts_exactly() {
        let gps = crate::ulog::gps::GpsAnchor {
            title: "GPS".into(),
            source: Some("sensor_gps".into()),
            multi_id: Some(0),
            fixes_used: 10,
            fixes_without_utc: 0,
            boot_offset_us: Some(1_790_000_000_000_000),
            spread_ms: Some(5.0),
            boot_utc: None,
        };
        let anchor = gps_anchor(Some(&gps));
        let mut axis = BootToUtc::new(Some(&anchor));
        for boot in [0, 999_999_999, 1_000_000_001, 1_132_793_000_000] {
            assert_eq!(axis.utc(boot), Some(1_790_000_000_000_000_000 + boot));
        }
        assert_eq!(BootToUtc::new(None).utc(5), None);
    }

    /// A ground anchor from receipts 100 s apart: stamps converted per second stay within
    /// 0.1 ms of the exact placement, over the flight and beyond it.
    #[test]
    fn a_ground_anchor_per_second_stays_within_a_tenth_of_a_millisecond() {
        let boot_on_record = 1_790_000_000_000_000_000i64;
        let receipts: Vec<SystemTimeReceipt> = (0..20)
            .map(|k| {
                let boot_ms = 100_000 + k * 100_000;
                let delivery = [12, 230, 40, 95, 410][k as usize % 5] * MS;
                let recv = boot_on_record + boot_ms as i64 * MS + delivery;
                SystemTimeReceipt {
                    recv_ns: recv,
                    resolution_ns: MS,
                    time_boot_ms: boot_ms as u32,
                    time_unix_usec: ((recv - delivery) / 1000) as u64,
                }
            })
            .collect();
        let fit = fit_ground(&receipts, Some((0, 2_100 * SECOND)), 15 * MS).unwrap();
        let anchor = ground_anchor("receiver", 1, Ok(fit), "as given");
        let placement = RecordPlacement::new(&anchor, 15 * MS, MS, Some(&anchor));
        let mut fast = StampToBoot::new(RecordPlacement::new(&anchor, 15 * MS, MS, Some(&anchor)));
        let mut axis = BootToUtc::new(Some(&anchor));
        for k in 0..3000 {
            let stamp = boot_on_record + k * 777 * MS + 123;
            let exact = placement.place(stamp).unwrap().0;
            let boot = fast.boot(stamp).unwrap();
            assert!((boot - exact).abs() <= 100_000, "{k}: {boot} vs {exact}");
            let exact_utc = anchor.boot_at(exact).map(|i: Interval| i.mid() + exact);
            let utc = axis.utc(exact).unwrap();
            assert!((utc - exact_utc.unwrap()).abs() <= 100_000);
        }
    }
}
