//! What a vehicle says about itself in its HEARTBEAT (type, autopilot, armed, flight mode,
//! system status), in words an operator reads off the range board, and which of its heartbeats
//! speaks for it. Pure: the names come from the pinned dialect's enums (ardupilotmega, which
//! includes common), PX4's mode numbering is written out here because no dialect carries it.
//!
//! One system id can send heartbeats from several components (the autopilot, a companion
//! computer, a camera, a gimbal); only the autopilot's carry the vehicle's mode. The
//! [`HeartbeatTracker`] therefore keeps the latest heartbeat whose autopilot is not
//! `MAV_AUTOPILOT_INVALID` (the value every non-flight-controller component sends), and falls
//! back to another component's only while no autopilot has been heard.

use crate::wire::fields::Heartbeat;
use mavlink::dialects::ardupilotmega::{
    CopterMode, MavAutopilot, MavState, MavType, PlaneMode, RoverMode, SubMode, TrackerMode,
};
use num_traits::FromPrimitive;
use std::collections::BTreeMap;

/// `MAV_AUTOPILOT_INVALID`: the component is not a flight controller.
const AUTOPILOT_INVALID: u8 = 8;
const AUTOPILOT_ARDUPILOT: u8 = 3;
const AUTOPILOT_PX4: u8 = 12;
/// `MAV_MODE_FLAG_SAFETY_ARMED`.
const FLAG_ARMED: u8 = 0x80;
/// `MAV_MODE_FLAG_CUSTOM_MODE_ENABLED`: `custom_mode` is the autopilot's own mode number.
const FLAG_CUSTOM_MODE: u8 = 0x01;

/// A heartbeat in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// `QUADROTOR`, `FIXED_WING`, ... or `type 77` for a value the dialect does not name.
    pub vehicle_type: String,
    /// `ARDUPILOTMEGA`, `PX4`, ...
    pub autopilot: String,
    /// `LOITER` (ArduPilot), `AUTO.MISSION` (PX4), `custom 123456` when unknown.
    pub mode: String,
    /// `ACTIVE`, `STANDBY`, `CRITICAL`, `EMERGENCY`, ...
    pub status: String,
    pub armed: bool,
}

/// The dialect's name of an enum value without its prefix, or `<what> <n>`.
fn name_of<T: std::fmt::Debug>(value: Option<T>, prefix: &str, what: &str, n: u32) -> String {
    match value {
        Some(v) => {
            let full = format!("{v:?}");
            full.strip_prefix(prefix).unwrap_or(&full).to_string()
        }
        None => format!("{what} {n}"),
    }
}

pub fn describe(hb: &Heartbeat) -> Described {
    Described {
        vehicle_type: name_of(
            MavType::from_u8(hb.mav_type),
            "MAV_TYPE_",
            "type",
            hb.mav_type.into(),
        ),
        autopilot: name_of(
            MavAutopilot::from_u8(hb.autopilot),
            "MAV_AUTOPILOT_",
            "autopilot",
            hb.autopilot.into(),
        ),
        mode: mode_name(hb),
        status: name_of(
            MavState::from_u8(hb.system_status),
            "MAV_STATE_",
            "status",
            hb.system_status.into(),
        ),
        armed: hb.base_mode & FLAG_ARMED != 0,
    }
}

/// The flight mode: the autopilot's own (custom) mode when the custom-mode flag says it is
/// meaningful, else what the standard `base_mode` flags say.
pub fn mode_name(hb: &Heartbeat) -> String {
    let m = hb.custom_mode;
    if hb.base_mode & FLAG_CUSTOM_MODE == 0 {
        return base_mode_name(hb.base_mode);
    }
    let named = match hb.autopilot {
        AUTOPILOT_ARDUPILOT => ardupilot_mode(hb.mav_type, m),
        AUTOPILOT_PX4 => px4_mode(m),
        _ => None,
    };
    named.unwrap_or_else(|| format!("custom {m}"))
}

fn ardupilot_mode(mav_type: u8, m: u32) -> Option<String> {
    let strip = |full: String, prefix: &str| full.strip_prefix(prefix).map(str::to_string);
    match mav_type {
        // Copters and helicopters (quad, coax, heli, hexa, octo, tri, dodeca, decarotor).
        2 | 3 | 4 | 13 | 14 | 15 | 29 | 35 => {
            strip(format!("{:?}", CopterMode::from_u32(m)?), "COPTER_MODE_")
        }
        // Fixed wing and the VTOL types ArduPlane flies.
        1 | 19..=25 => strip(format!("{:?}", PlaneMode::from_u32(m)?), "PLANE_MODE_"),
        10 | 11 => strip(format!("{:?}", RoverMode::from_u32(m)?), "ROVER_MODE_"),
        12 => strip(format!("{:?}", SubMode::from_u32(m)?), "SUB_MODE_"),
        5 => strip(format!("{:?}", TrackerMode::from_u32(m)?), "TRACKER_MODE_"),
        _ => None,
    }
}

/// PX4 packs its mode as main mode in bits 16..24 and sub mode in bits 24..32.
fn px4_mode(m: u32) -> Option<String> {
    let main = (m >> 16) & 0xff;
    let sub = (m >> 24) & 0xff;
    let main_name = match main {
        1 => "MANUAL",
        2 => "ALTCTL",
        3 => "POSCTL",
        4 => "AUTO",
        5 => "ACRO",
        6 => "OFFBOARD",
        7 => "STABILIZED",
        8 => "RATTITUDE",
        9 => "SIMPLE",
        10 => "TERMINATION",
        _ => return None,
    };
    let sub_name = match (main, sub) {
        (4, 1) => "READY",
        (4, 2) => "TAKEOFF",
        (4, 3) => "LOITER",
        (4, 4) => "MISSION",
        (4, 5) => "RTL",
        (4, 6) => "LAND",
        (4, 8) => "FOLLOW_TARGET",
        (4, 9) => "PRECLAND",
        (4, 10) => "VTOL_TAKEOFF",
        (3, 1) => "ORBIT",
        (3, 2) => "SLOW",
        (_, 0) => return Some(main_name.to_string()),
        _ => return Some(format!("{main_name}.{sub}")),
    };
    Some(format!("{main_name}.{sub_name}"))
}

fn base_mode_name(base_mode: u8) -> String {
    // The most specific flag wins: auto over guided over stabilised over manual.
    for (flag, name) in [
        (0x04, "AUTO"),
        (0x08, "GUIDED"),
        (0x10, "STABILIZE"),
        (0x40, "MANUAL"),
    ] {
        if base_mode & flag != 0 {
            return name.to_string();
        }
    }
    "none".to_string()
}

/// The heartbeat that speaks for one system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastHeartbeat {
    pub compid: u8,
    pub utc_ns: i64,
    pub fields: Heartbeat,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemHeartbeats {
    /// The first heartbeat from any component.
    pub first_heard_ns: Option<i64>,
    /// The autopilot's latest heartbeat (another component's while no autopilot is heard).
    pub latest: Option<LastHeartbeat>,
}

/// Per system id: when it was first heard, and the heartbeat that speaks for it.
#[derive(Debug, Clone, Default)]
pub struct HeartbeatTracker {
    systems: BTreeMap<u8, SystemHeartbeats>,
}

impl HeartbeatTracker {
    /// A heartbeat from `sysid`/`compid` at `utc_ns`; `fields` is `None` when only the receipt
    /// is known (a receive-log line written without `fields`).
    pub fn observe(&mut self, sysid: u8, compid: u8, utc_ns: i64, fields: Option<Heartbeat>) {
        let system = self.systems.entry(sysid).or_default();
        if system.first_heard_ns.is_none_or(|first| utc_ns < first) {
            system.first_heard_ns = Some(utc_ns);
        }
        let Some(fields) = fields else { return };
        let from_autopilot = fields.autopilot != AUTOPILOT_INVALID;
        let replaces = match &system.latest {
            None => true,
            Some(kept) => from_autopilot || kept.fields.autopilot == AUTOPILOT_INVALID,
        };
        if replaces {
            system.latest = Some(LastHeartbeat {
                compid,
                utc_ns,
                fields,
            });
        }
    }

    pub fn get(&self, sysid: u8) -> Option<&SystemHeartbeats> {
        self.systems.get(&sysid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb(mav_type: u8, autopilot: u8, base_mode: u8, custom_mode: u32, status: u8) -> Heartbeat {
        Heartbeat {
            custom_mode,
            mav_type,
            autopilot,
            base_mode,
            system_status: status,
            mavlink_version: 3,
        }
    }

    #[test]
    fn ardupilot_modes_are_named_by_vehicle_type() {
        // Armed copter in LOITER (5), ACTIVE.
        let d = describe(&hb(2, 3, 0x81 | 0x10, 5, 4));
        assert_eq!(d.mode, "LOITER");
        assert_eq!(d.vehicle_type, "QUADROTOR");
        assert_eq!(d.autopilot, "ARDUPILOTMEGA");
        assert_eq!(d.status, "ACTIVE");
        assert!(d.armed);
        // The same number is a different mode on a plane: 5 is FLY_BY_WIRE_A.
        assert_eq!(mode_name(&hb(1, 3, 0x01, 5, 3)), "FLY_BY_WIRE_A");
        assert_eq!(mode_name(&hb(10, 3, 0x01, 4, 3)), "HOLD");
        assert_eq!(mode_name(&hb(12, 3, 0x01, 19, 3)), "MANUAL");
        // A number the dialect does not know.
        assert_eq!(mode_name(&hb(2, 3, 0x01, 999, 3)), "custom 999");
    }

    #[test]
    fn px4_packs_main_and_sub_mode() {
        let mission = (4 << 16) | (4 << 24);
        assert_eq!(mode_name(&hb(2, 12, 0x9d, mission, 4)), "AUTO.MISSION");
        assert_eq!(mode_name(&hb(2, 12, 0x01, 3 << 16, 4)), "POSCTL");
        assert_eq!(
            mode_name(&hb(2, 12, 0x01, (4 << 16) | (77 << 24), 4)),
            "AUTO.77"
        );
        assert_eq!(mode_name(&hb(2, 12, 0x01, 200 << 16, 4)), "custom 13107200");
    }

    #[test]
    fn without_the_custom_flag_the_base_mode_speaks() {
        // build::heartbeat_payload's base_mode 81 = 0x51: custom, stabilize, manual input.
        assert_eq!(mode_name(&hb(2, 3, 0x50, 0, 4)), "STABILIZE");
        assert_eq!(mode_name(&hb(2, 0, 0x04 | 0x08, 0, 4)), "AUTO");
        assert_eq!(mode_name(&hb(2, 0, 0, 0, 4)), "none");
        let d = describe(&hb(200, 99, 0, 0, 42));
        assert_eq!(
            (
                d.vehicle_type.as_str(),
                d.autopilot.as_str(),
                d.status.as_str(),
                d.armed
            ),
            ("type 200", "autopilot 99", "status 42", false)
        );
    }

    #[test]
    fn the_autopilot_speaks_for_the_system_and_first_heard_is_kept() {
        let mut t = HeartbeatTracker::default();
        let camera = hb(30, AUTOPILOT_INVALID, 0, 0, 4);
        let autopilot = hb(2, 3, 0x81, 5, 4);
        // A camera first: it is all there is.
        t.observe(7, 100, 10, Some(camera));
        assert_eq!(t.get(7).unwrap().latest.unwrap().compid, 100);
        t.observe(7, 1, 20, Some(autopilot));
        t.observe(7, 100, 30, Some(camera));
        let s = t.get(7).unwrap();
        assert_eq!(s.first_heard_ns, Some(10));
        assert_eq!(s.latest.unwrap().compid, 1);
        assert_eq!(s.latest.unwrap().utc_ns, 20);
        // A heartbeat without fields counts as heard but leaves the mode as it was.
        t.observe(7, 1, 5, None);
        assert_eq!(t.get(7).unwrap().first_heard_ns, Some(5));
        assert_eq!(t.get(7).unwrap().latest.unwrap().utc_ns, 20);
        t.observe(8, 1, 40, None);
        assert_eq!(t.get(8).unwrap().latest, None);
        assert!(t.get(9).is_none());
    }
}
