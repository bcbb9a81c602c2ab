//! foxborne-receiver: a live MAVLink ground receiver (receiver JSONL, telemetry_gap alerts)
//! and the post-sortie PX4 ULog ingest.
//!
//! The pure core (`mavlink`, `monitor`, `ulog`, `tlog`, `receipt`) takes bytes and times as
//! arguments and never reads a clock or opens a socket. `daemon` and `sink` are the I/O shell.

pub mod analyze;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod http;
pub mod logging;
pub mod wire;
pub mod monitor;
pub mod receipt;
pub mod recorder;
pub mod sink;
pub mod status_cmd;
pub mod tlog;
pub mod tlog_convert;
pub mod ulog;
