//! Pure monitors over receipts: telemetry_gap detector and SYSTEM_TIME latency estimator. (Being written.)

pub mod event;
pub mod gap;
pub mod title;
pub mod utc;
