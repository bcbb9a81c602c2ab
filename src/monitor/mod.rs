//! Pure monitors over receipts: telemetry_gap detector and SYSTEM_TIME latency estimator. (Being written.)

pub mod event;
pub mod gap;
pub mod latency;
pub mod ntp;
pub mod title;
pub mod utc;
