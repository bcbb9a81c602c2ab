//! The state band: `vehicle_status` navigation state, arming and failsafe flag over time, as a
//! list of changes (bounded by the number of changes, not samples), with PX4's names for the
//! navigation states and the colours Flight Review draws them in.
//!
//! Pure: decoded samples in, changes out.

use crate::ulog::events::Citation;
use crate::ulog::signals::{cite, Kind, Signal, SignalSample, Source};
use serde::Serialize;

/// Changes kept at most (the rest are counted).
pub const MAX_CHANGES: usize = 10_000;

/// PX4's name for a navigation state (`vehicle_status.nav_state`), as Flight Review labels
/// them. Numbers PX4 has retired read `nav_state N`.
pub fn nav_state_name(n: u8) -> String {
    let name = match n {
        0 => "Manual",
        1 => "Altitude",
        2 => "Position",
        3 => "Mission",
        4 => "Loiter",
        5 => "Return to Land",
        6 => "Position (Slow)",
        8 => "Altitude Cruise",
        10 => "Acro",
        12 => "Descend",
        13 => "Terminate",
        14 => "Offboard",
        15 => "Stabilized",
        17 => "Takeoff",
        18 => "Land",
        19 => "Follow Target",
        20 => "Precision Land",
        21 => "Orbit",
        22 => "VTOL Takeoff",
        23..=30 => return format!("External {}", n - 22),
        _ => return format!("nav_state {n}"),
    };
    name.to_string()
}

/// Flight Review's colour for a navigation state (manual red, altitude yellow, position green,
/// auto modes purple, ...); grey for one it has none for.
pub fn nav_state_color(n: u8) -> &'static str {
    match n {
        0 => "#cc0000",
        1 | 8 => "#eecc00",
        2 | 6 => "#00cc33",
        10 => "#66cc00",
        14 => "#00cccc",
        15 => "#0033cc",
        3 | 4 | 5 | 12 | 13 | 17..=22 => "#6600cc",
        23..=30 => "#9700cc",
        _ => "#999999",
    }
}

/// One change of the vehicle's state.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModeChange {
    /// Boot clock, microseconds.
    pub timestamp: u64,
    pub nav_state: u8,
    pub nav_state_name: String,
    pub armed: bool,
    /// `vehicle_status.failsafe` (false when the release did not log it).
    pub failsafe: bool,
    pub citation: Citation,
}

#[derive(Debug, Default)]
pub struct ModeTracker {
    changes: Vec<ModeChange>,
    last: Option<(u8, bool, bool)>,
    pub dropped: u64,
}

impl ModeTracker {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn observe(&mut self, sample: &SignalSample, source: &Source) {
        let (Kind::Status, 0, Signal::Status(s)) = (source.kind, source.multi_id, &sample.signal)
        else {
            return;
        };
        let state = (s.nav_state, s.armed(), s.failsafe.unwrap_or(false));
        if self.last == Some(state) {
            return;
        }
        self.last = Some(state);
        if self.changes.len() >= MAX_CHANGES {
            self.dropped += 1;
            return;
        }
        self.changes.push(ModeChange {
            timestamp: sample.timestamp,
            nav_state: s.nav_state,
            nav_state_name: nav_state_name(s.nav_state),
            armed: s.armed(),
            failsafe: state.2,
            citation: cite(source, sample),
        });
    }

    pub fn finish(self) -> Vec<ModeChange> {
        self.changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_colours() {
        assert_eq!(nav_state_name(2), "Position");
        assert_eq!(nav_state_name(24), "External 2");
        assert_eq!(nav_state_name(9), "nav_state 9");
        assert_eq!(nav_state_color(5), "#6600cc");
    }
}
