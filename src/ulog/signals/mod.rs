//! Decoded samples of what the rules and the state band read, with one meaning across PX4
//! versions: topics and fields renamed between releases (`vehicle_gps_position` and
//! `sensor_gps`, `lat` in 1e-7 degrees and `latitude_deg` in degrees, `mag_test_ratio` and
//! `hdg_test_ratio`, the vibration metric in m/s and in m/s², the failsafe causes of
//! `vehicle_status` and of `failsafe_flags`) are read into the same typed sample, and each
//! source says which fields it read.
//!
//! - `meaning`: the table of names per release;
//! - `field`: a field found by name and read as a number;
//! - `decoder`: subscriptions and samples in, [`SignalSample`]s out.
//!
//! Pure: records in, samples out.

pub mod decoder;
pub mod field;
pub mod meaning;

pub use decoder::SignalDecoder;

use crate::ulog::events::Citation;
use serde::Serialize;

/// What a source's samples mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `vehicle_status`: arming, navigation state, the failsafe flag (and, before
    /// `failsafe_flags` existed, its own failsafe causes).
    Status,
    /// `failsafe_flags`: the conditions the failsafe framework acts on.
    FailsafeFlags,
    /// `sensor_gps` or `vehicle_gps_position`.
    Gps,
    /// `battery_status`.
    Battery,
    /// `vehicle_imu_status.accel_vibration_metric` or `estimator_status.vibe[2]`.
    Vibration,
    /// `estimator_status` innovation test ratios.
    Estimator,
    /// `input_rc.rc_lost`.
    Rc,
}

/// How a vibration source's values are scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VibrationUnit {
    /// An acceleration (m/s²): `vehicle_imu_status` since PX4 v1.13 (the format that has
    /// `delta_angle_coning_metric`).
    Acceleration,
    /// A change of velocity over one IMU interval (m/s): `estimator_status.vibe[2]`, and
    /// `vehicle_imu_status` before v1.13 (the format that has `gyro_coning_vibration`).
    DeltaVelocity,
}

/// One topic instance a rule reads, and what was read from it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    pub topic: String,
    pub multi_id: u8,
    pub kind: Kind,
    /// `topic.field` for every field read (with its scale when it is converted).
    pub read: Vec<String>,
    /// Names of the flags a [`Signal::Flags`] mask is over (failsafe causes).
    pub flags: Vec<String>,
    /// For [`Kind::Vibration`].
    pub vibration_unit: Option<VibrationUnit>,
}

impl Source {
    /// `topic[multi_id]`.
    pub fn instance(&self) -> String {
        format!("{}[{}]", self.topic, self.multi_id)
    }
}

/// `vehicle_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusSample {
    /// PX4's `arming_state`; 2 is armed in every release.
    pub arming_state: u8,
    pub nav_state: u8,
    pub failsafe: Option<bool>,
    /// `rc_signal_lost`, which `vehicle_status` carried before PX4 v1.14.
    pub rc_signal_lost: Option<bool>,
    /// The failsafe causes `vehicle_status` itself carried before `failsafe_flags` (a mask
    /// over the source's `flags`).
    pub causes: u64,
}

impl StatusSample {
    pub fn armed(&self) -> bool {
        self.arming_state == ARMED
    }
}

/// `arming_state` of an armed vehicle.
pub const ARMED: u8 = 2;

/// `sensor_gps` / `vehicle_gps_position`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GpsSample {
    /// Horizontal position accuracy, metres.
    pub eph: Option<f64>,
    pub satellites: Option<u8>,
    pub fix_type: Option<u8>,
    /// u-blox's monitor: 0 unknown, 1 OK, 2 warning (mitigated), 3 critical (detected).
    pub jamming_state: Option<u8>,
    /// 0 (none) to 255 (strong continuous-wave jamming).
    pub jamming_indicator: Option<f64>,
    /// Degrees, whichever way the release logged them.
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
}

/// `battery_status`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BatterySample {
    pub voltage: Option<f64>,
    pub current: Option<f64>,
    pub connected: Option<bool>,
    pub cell_count: Option<u8>,
    /// PX4's battery warning: 0 none, 1 low, 2 critical, 3 emergency, 4 failed.
    pub warning: Option<u8>,
}

/// The innovation test ratios the estimator rule reads, in [`ESTIMATOR_RATIOS`] order.
pub type EstimatorSample = [Option<f64>; 4];

/// What the ratios measure, in the order of [`EstimatorSample`].
pub const ESTIMATOR_RATIOS: [&str; 4] = ["velocity", "position", "height", "heading"];

/// One decoded sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Signal {
    Status(StatusSample),
    /// A mask over the source's `flags`.
    Flags(u64),
    Gps(GpsSample),
    Battery(BatterySample),
    Vibration(f64),
    Estimator(EstimatorSample),
    Rc {
        lost: bool,
    },
}

/// A decoded sample with where it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignalSample {
    /// Index into the decoder's sources.
    pub source: usize,
    /// Boot clock, microseconds.
    pub timestamp: u64,
    pub message: u64,
    pub offset: u64,
    pub signal: Signal,
}

/// The citation of a sample of `source` (topic, instance, message number, byte offset): how
/// the rules' findings and the state band's changes point at their evidence.
pub fn cite(source: &Source, sample: &SignalSample) -> Citation {
    Citation {
        topic: source.topic.clone(),
        multi_id: source.multi_id,
        message: sample.message,
        offset: sample.offset,
    }
}
