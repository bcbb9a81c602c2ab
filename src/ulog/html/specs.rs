//! The plots' lines, by panel: which topic and field each line reads.

use crate::ulog::series::{Extract, SeriesSpec};

/// The plots' lines, by panel. A panel shows whichever of its lines the log has.
pub fn default_specs() -> Vec<SeriesSpec> {
    use Extract::{Euler, Field};
    let s = |panel, label, topic, extract| SeriesSpec {
        panel,
        label,
        topic,
        extract,
    };
    vec![
        s(
            "Altitude (m)",
            "global position alt",
            "vehicle_global_position",
            Field("alt", 1.0),
        ),
        s(
            "Altitude (m)",
            "GPS altitude",
            "sensor_gps",
            Field("altitude_msl_m", 1.0),
        ),
        s(
            "Altitude (m)",
            "GPS altitude",
            "vehicle_gps_position",
            Field("altitude_msl_m", 1.0),
        ),
        s(
            "Altitude (m)",
            "GPS altitude",
            "vehicle_gps_position",
            Field("alt", 1e-3),
        ),
        s(
            "Altitude (m)",
            "barometer",
            "vehicle_air_data",
            Field("baro_alt_meter", 1.0),
        ),
        s(
            "Altitude (m)",
            "local position -z",
            "vehicle_local_position",
            Field("z", -1.0),
        ),
        s(
            "Track",
            "north x (m)",
            "vehicle_local_position",
            Field("x", 1.0),
        ),
        s(
            "Track",
            "east y (m)",
            "vehicle_local_position",
            Field("y", 1.0),
        ),
        s("Roll (deg)", "estimate", "vehicle_attitude", Euler("q", 0)),
        s(
            "Roll (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Euler("q_d", 0),
        ),
        s(
            "Roll (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Field("roll_body", 57.29577951308232),
        ),
        s("Pitch (deg)", "estimate", "vehicle_attitude", Euler("q", 1)),
        s(
            "Pitch (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Euler("q_d", 1),
        ),
        s(
            "Pitch (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Field("pitch_body", 57.29577951308232),
        ),
        s("Yaw (deg)", "estimate", "vehicle_attitude", Euler("q", 2)),
        s(
            "Yaw (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Euler("q_d", 2),
        ),
        s(
            "Yaw (deg)",
            "setpoint",
            "vehicle_attitude_setpoint",
            Field("yaw_body", 57.29577951308232),
        ),
        s(
            "Battery voltage (V)",
            "voltage",
            "battery_status",
            Field("voltage_v", 1.0),
        ),
        s(
            "Battery voltage (V)",
            "voltage filtered",
            "battery_status",
            Field("voltage_filtered_v", 1.0),
        ),
        s(
            "Battery current (A)",
            "current",
            "battery_status",
            Field("current_a", 1.0),
        ),
        s(
            "Battery current (A)",
            "current filtered",
            "battery_status",
            Field("current_filtered_a", 1.0),
        ),
        // Since v1.14 the torque and thrust setpoints have their own topics; before, they were
        // actuator_controls_0.control[0..3] (thrust positive up; vehicle_thrust_setpoint's z
        // is negative up).
        s(
            "Torque and thrust setpoints",
            "roll torque",
            "vehicle_torque_setpoint",
            Field("xyz[0]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "roll torque",
            "actuator_controls_0",
            Field("control[0]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "pitch torque",
            "vehicle_torque_setpoint",
            Field("xyz[1]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "pitch torque",
            "actuator_controls_0",
            Field("control[1]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "yaw torque",
            "vehicle_torque_setpoint",
            Field("xyz[2]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "yaw torque",
            "actuator_controls_0",
            Field("control[2]", 1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "thrust",
            "vehicle_thrust_setpoint",
            Field("xyz[2]", -1.0),
        ),
        s(
            "Torque and thrust setpoints",
            "thrust",
            "actuator_controls_0",
            Field("control[3]", 1.0),
        ),
        // Motor commands: actuator_motors (0 to 1) since v1.13; before, the outputs as the
        // mixer wrote them (actuator_outputs, PWM in µs for most vehicles).
        s(
            "Motor outputs",
            "motor 1",
            "actuator_motors",
            Field("control[0]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 1",
            "actuator_outputs",
            Field("output[0]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 2",
            "actuator_motors",
            Field("control[1]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 2",
            "actuator_outputs",
            Field("output[1]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 3",
            "actuator_motors",
            Field("control[2]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 3",
            "actuator_outputs",
            Field("output[2]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 4",
            "actuator_motors",
            Field("control[3]", 1.0),
        ),
        s(
            "Motor outputs",
            "motor 4",
            "actuator_outputs",
            Field("output[3]", 1.0),
        ),
        s(
            "GPS fix and satellites",
            "fix type",
            "sensor_gps",
            Field("fix_type", 1.0),
        ),
        s(
            "GPS fix and satellites",
            "satellites used",
            "sensor_gps",
            Field("satellites_used", 1.0),
        ),
        s(
            "GPS fix and satellites",
            "fix type",
            "vehicle_gps_position",
            Field("fix_type", 1.0),
        ),
        s(
            "GPS fix and satellites",
            "satellites used",
            "vehicle_gps_position",
            Field("satellites_used", 1.0),
        ),
        s("GPS accuracy (m)", "eph", "sensor_gps", Field("eph", 1.0)),
        s(
            "GPS accuracy (m)",
            "eph",
            "vehicle_gps_position",
            Field("eph", 1.0),
        ),
        s(
            "GPS noise and jamming",
            "jamming indicator",
            "sensor_gps",
            Field("jamming_indicator", 1.0),
        ),
        s(
            "GPS noise and jamming",
            "jamming indicator",
            "vehicle_gps_position",
            Field("jamming_indicator", 1.0),
        ),
        s(
            "GPS noise and jamming",
            "noise per ms",
            "sensor_gps",
            Field("noise_per_ms", 1.0),
        ),
        s(
            "GPS noise and jamming",
            "noise per ms",
            "vehicle_gps_position",
            Field("noise_per_ms", 1.0),
        ),
        s("CPU load (%)", "CPU load", "cpuload", Field("load", 100.0)),
        s(
            "CPU load (%)",
            "RAM usage",
            "cpuload",
            Field("ram_usage", 100.0),
        ),
        s(
            "Vibration",
            "accel vibration (m/s²)",
            "vehicle_imu_status",
            Field("accel_vibration_metric", 1.0),
        ),
        s(
            "Vibration",
            "gyro vibration (rad/s)",
            "vehicle_imu_status",
            Field("gyro_vibration_metric", 1.0),
        ),
        s(
            "Vibration",
            "vibe[0]",
            "estimator_status",
            Field("vibe[0]", 1.0),
        ),
        s(
            "Vibration",
            "vibe[1]",
            "estimator_status",
            Field("vibe[1]", 1.0),
        ),
        s(
            "Vibration",
            "vibe[2]",
            "estimator_status",
            Field("vibe[2]", 1.0),
        ),
    ]
}
