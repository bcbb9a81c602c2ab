//! foxborne-receiver: a live MAVLink ground receiver (receiver JSONL, telemetry_gap alerts)
//! and the post-sortie PX4 ULog ingest.
//!
//! The pure core (`wire`, `monitor`, `ulog`, `tlog`, `receipt`, `recorder`, `status`, `sniff`)
//! takes bytes and times as arguments and never reads a clock or opens a socket. `daemon`,
//! `sink` and `http` are the I/O shell; `cmd` holds the verbs; `config` is parsed once.

pub mod analyze;
pub mod cmd;
pub(crate) mod config;
pub(crate) mod daemon;
pub(crate) mod http;
pub mod link;
pub mod logging;
pub mod monitor;
pub mod publish;
pub mod range;
pub(crate) mod receipt;
pub mod recorder;
pub mod sink;
pub(crate) mod sniff;
pub(crate) mod status;
pub mod tlog;
pub mod ulog;
pub mod wire;
