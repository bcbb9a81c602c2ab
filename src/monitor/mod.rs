//! Pure monitors over receipts: telemetry_gap detector and SYSTEM_TIME latency estimator. (Being written.)

pub mod utc;
pub mod title;
pub mod event;
