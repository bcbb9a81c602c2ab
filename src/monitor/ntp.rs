//! The receiver's own clock: a pure watch over the kernel's NTP state that turns readings into a
//! `clock` event when synchronisation is lost or regained, and remembers the latest reading for
//! the `latency` events and the send window.
//!
//! The daemon makes the `adjtimex` call (synchronised: `STA_UNSYNC` clear and the state not
//! `TIME_ERROR`; maximum error: `maxerror`, µs) and passes the reading in; nothing here touches
//! the kernel or a clock.

use super::event::{ClockEvent, ClockKind, ClockState};
use crate::utc::UtcTime;

/// One reading of the kernel's clock discipline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockStatus {
    /// The kernel considers the clock synchronised (NTP or PTP discipline active).
    pub synchronised: bool,
    /// The kernel's maximum error estimate, microseconds.
    pub max_error_us: i64,
}

impl ClockStatus {
    /// The maximum error in nanoseconds, for [`super::latency::send_window`].
    pub fn max_error_ns(&self) -> i64 {
        self.max_error_us.saturating_mul(1_000)
    }
}

/// Watches successive clock readings and reports changes of synchronisation.
#[derive(Debug, Clone, Default)]
pub struct ClockWatch {
    latest: Option<ClockStatus>,
}

impl ClockWatch {
    pub fn new() -> Self {
        ClockWatch::default()
    }

    /// A reading taken at `utc_ns`. Returns a `clock` event when synchronisation was lost or
    /// regained since the previous reading, or when the very first reading is unsynchronised
    /// (the receiver started without a disciplined clock, which the operator must know).
    /// Changes of the maximum error alone are not events; they travel in `latency` events.
    pub fn observe(
        &mut self,
        synchronised: bool,
        max_error_us: i64,
        utc_ns: i64,
    ) -> Option<ClockEvent> {
        let previous = self.latest.replace(ClockStatus {
            synchronised,
            max_error_us,
        });
        let state = match (previous.map(|status| status.synchronised), synchronised) {
            (None, false) => ClockState::UnsynchronisedAtStart,
            (Some(true), false) => ClockState::Lost,
            (Some(false), true) => ClockState::Regained,
            _ => return None,
        };
        Some(ClockEvent {
            utc: UtcTime(utc_ns),
            kind: ClockKind,
            state,
            synchronised,
            max_error_us,
        })
    }

    /// The latest reading, if any.
    pub fn status(&self) -> Option<ClockStatus> {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_only_when_synchronisation_changes() {
        let mut watch = ClockWatch::new();
        assert_eq!(watch.status(), None);
        assert_eq!(
            watch.observe(true, 15_000, 1),
            None,
            "synchronised at start: quiet"
        );
        assert_eq!(
            watch.observe(true, 20_000, 2),
            None,
            "error drift alone: quiet"
        );

        let lost = watch.observe(false, 16_000_000, 3).unwrap();
        assert_eq!(
            (lost.state, lost.synchronised, lost.max_error_us, lost.utc),
            (ClockState::Lost, false, 16_000_000, UtcTime(3))
        );
        assert_eq!(
            watch.observe(false, 16_500_000, 4),
            None,
            "still lost: reported once"
        );

        let regained = watch.observe(true, 9_000, 5).unwrap();
        assert_eq!(regained.state, ClockState::Regained);
        assert_eq!(
            watch.status(),
            Some(ClockStatus {
                synchronised: true,
                max_error_us: 9_000
            })
        );
        assert_eq!(watch.status().unwrap().max_error_ns(), 9_000_000);
    }

    #[test]
    fn unsynchronised_first_reading_is_reported() {
        let mut watch = ClockWatch::new();
        let event = watch.observe(false, 16_000_000, 7).unwrap();
        assert_eq!(event.state, ClockState::UnsynchronisedAtStart);
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(
            line,
            r#"{"utc":"1970-01-01T00:00:00.000Z","kind":"clock","state":"unsynchronised_at_start","synchronised":false,"max_error_us":16000000}"#
        );
    }
}
