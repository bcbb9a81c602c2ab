//! The names each meaning has had across PX4 releases, newest first: the first a log has is
//! read. `docs/ulog.md` ("Every PX4 version") lists the same table with the releases.

/// Topics with GPS fixes, preferred first (`sensor_gps` is each receiver; older logs have only
/// the selected or blended `vehicle_gps_position`).
pub const GPS_TOPICS: [&str; 2] = ["sensor_gps", "vehicle_gps_position"];

/// Latitude and longitude in degrees: a `double` since v1.14, an `int32` in 1e-7 degrees before.
pub const LATITUDE: &[(&str, f64)] = &[("latitude_deg", 1.0), ("lat", 1e-7)];
pub const LONGITUDE: &[(&str, f64)] = &[("longitude_deg", 1.0), ("lon", 1e-7)];
/// Altitude above mean sea level in metres: a `double` since v1.14, `int32` millimetres before.
pub const ALTITUDE_MSL: &[(&str, f64)] = &[("altitude_msl_m", 1.0), ("alt", 1e-3)];

pub const EPH: &[(&str, f64)] = &[("eph", 1.0)];
pub const SATELLITES: &[(&str, f64)] = &[("satellites_used", 1.0)];
pub const FIX_TYPE: &[(&str, f64)] = &[("fix_type", 1.0)];
/// Only since v1.13; older logs have the indicator alone.
pub const JAMMING_STATE: &[(&str, f64)] = &[("jamming_state", 1.0)];
pub const JAMMING_INDICATOR: &[(&str, f64)] = &[("jamming_indicator", 1.0)];

pub const BATTERY_TOPIC: &str = "battery_status";
pub const BATTERY_VOLTAGE: &[(&str, f64)] = &[("voltage_v", 1.0), ("voltage_filtered_v", 1.0)];
pub const BATTERY_CURRENT: &[(&str, f64)] = &[("current_a", 1.0), ("current_filtered_a", 1.0)];
/// Cell count as the battery reported it; releases without it have the parameter only.
pub const BATTERY_CELLS: &[(&str, f64)] = &[("cell_count", 1.0)];
/// The cell-count parameter per battery (`BAT1_N_CELLS` since v1.10) or for all (`BAT_N_CELLS`).
pub fn cell_count_parameters(battery: u8) -> [String; 2] {
    [format!("BAT{battery}_N_CELLS"), "BAT_N_CELLS".to_string()]
}
/// The empty-cell voltage parameter, the same way.
pub fn empty_voltage_parameters(battery: u8) -> [String; 2] {
    [format!("BAT{battery}_V_EMPTY"), "BAT_V_EMPTY".to_string()]
}

pub const STATUS_TOPIC: &str = "vehicle_status";
/// The failsafe causes of `vehicle_status` before `failsafe_flags` (v1.14) took them over.
pub const STATUS_CAUSES: [&str; 7] = [
    "rc_signal_lost",
    "data_link_lost",
    "high_latency_data_link_lost",
    "engine_failure",
    "mission_failure",
    "geofence_violated",
    "gcs_connection_lost",
];
pub const FAILSAFE_FLAGS_TOPIC: &str = "failsafe_flags";
/// `failsafe_flags` fields that are the modes' requirements, not conditions.
pub const FLAG_REQUIREMENT_PREFIX: &str = "mode_req_";

pub const ESTIMATOR_TOPIC: &str = "estimator_status";
/// Innovation test ratios, in [`super::ESTIMATOR_RATIOS`] order; the heading one was
/// `mag_test_ratio` before v1.14.
pub const ESTIMATOR_RATIO_FIELDS: [&[(&str, f64)]; 4] = [
    &[("vel_test_ratio", 1.0)],
    &[("pos_test_ratio", 1.0)],
    &[("hgt_test_ratio", 1.0)],
    &[("hdg_test_ratio", 1.0), ("mag_test_ratio", 1.0)],
];

pub const IMU_STATUS_TOPIC: &str = "vehicle_imu_status";
pub const IMU_VIBRATION: &str = "accel_vibration_metric";
/// The field only the pre-v1.13 format of `vehicle_imu_status` has, whose vibration metric is
/// a change of velocity (m/s) rather than an acceleration.
pub const IMU_DELTA_VELOCITY_ERA: &str = "gyro_coning_vibration";
/// The estimator's delta-velocity vibration, which Flight Review plotted before
/// `vehicle_imu_status` existed.
pub const ESTIMATOR_VIBRATION: &str = "vibe[2]";

pub const RC_TOPIC: &str = "input_rc";
pub const RC_LOST: &str = "rc_lost";
