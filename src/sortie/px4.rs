//! PX4's numbers in words, for the air side's titles: navigation states (named as the report
//! names them) and arming states as `vehicle_status.msg` numbers them, the topics PX4 fills from
//! a companion computer's MAVLink, and command names from the pinned MAVLink dialect (PX4's
//! `vehicle_command` uses `MAV_CMD` numbers).

use crate::ulog::modes::nav_state_name;
use mavlink::dialects::ardupilotmega::MavCmd;
use num_traits::FromPrimitive;

/// `Flight mode Position (nav_state 2)`, named as the report's state band names it
/// ([`crate::ulog::modes::nav_state_name`]: Flight Review's labels).
pub fn flight_mode_title(n: u8) -> String {
    let name = nav_state_name(n);
    if name == format!("nav_state {n}") {
        format!("Flight mode {name}")
    } else {
        format!("Flight mode {name} (nav_state {n})")
    }
}

/// `vehicle_status.arming_state` in words: 1 was STANDBY before PX4 1.14 and is DISARMED since.
pub fn arming_state_name(n: u64) -> &'static str {
    match n {
        0 => "init",
        1 => "disarmed",
        2 => "armed",
        3 => "standby error",
        4 => "shutdown",
        5 => "in-air restore",
        _ => "unknown arming state",
    }
}

/// Topics PX4 fills from MAVLink messages a companion computer sends, and the message.
pub const COMPANION_FED: [(&str, &str); 7] = [
    ("obstacle_distance", "OBSTACLE_DISTANCE"),
    (
        "vehicle_visual_odometry",
        "ODOMETRY or VISION_POSITION_ESTIMATE",
    ),
    ("vehicle_mocap_odometry", "ODOMETRY or ATT_POS_MOCAP"),
    ("trajectory_setpoint", "SET_POSITION_TARGET_LOCAL_NED"),
    (
        "offboard_control_mode",
        "SET_POSITION_TARGET_* or SET_ATTITUDE_TARGET",
    ),
    (
        "vehicle_trajectory_waypoint",
        "TRAJECTORY_REPRESENTATION_WAYPOINTS",
    ),
    ("onboard_computer_status", "ONBOARD_COMPUTER_STATUS"),
];

/// The MAVLink message a companion computer feeds `topic` with, when it is such a topic.
pub fn companion_message(topic: &str) -> Option<&'static str> {
    COMPANION_FED
        .iter()
        .find(|(t, _)| *t == topic)
        .map(|(_, m)| *m)
}

/// `DO_SET_MODE (176)`, or `command 65000` for a number the dialect does not name (PX4's
/// internal ones).
pub fn command_name(n: u64) -> String {
    let named = u32::try_from(n)
        .ok()
        .and_then(MavCmd::from_u32)
        .map(|c| format!("{c:?}"))
        .and_then(|s| s.strip_prefix("MAV_CMD_").map(str::to_string));
    match named {
        Some(name) => format!("{name} ({n})"),
        None => format!("command {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_px4_and_mavlink_name_them() {
        assert_eq!(flight_mode_title(2), "Flight mode Position (nav_state 2)");
        assert_eq!(
            flight_mode_title(24),
            "Flight mode External 2 (nav_state 24)"
        );
        assert_eq!(flight_mode_title(7), "Flight mode nav_state 7");
        assert_eq!(command_name(176), "DO_SET_MODE (176)");
        assert_eq!(command_name(400), "COMPONENT_ARM_DISARM (400)");
        assert_eq!(command_name(65000), "command 65000");
        assert_eq!(arming_state_name(2), "armed");
        assert_eq!(
            companion_message("obstacle_distance"),
            Some("OBSTACLE_DISTANCE")
        );
        assert_eq!(companion_message("sensor_gps"), None);
    }
}
