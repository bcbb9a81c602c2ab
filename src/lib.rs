//! foxborne-receiver: a live MAVLink ground receiver (receiver JSONL, telemetry_gap alerts)
//! and the post-sortie PX4 ULog ingest.
//!
//! The pure core (`wire`, `monitor`, `ulog`, `tlog`, `receipt`, `recorder`, `status`, `sniff`,
//! `sortie`, all on the time axis of `utc`) takes bytes and times as arguments and never reads a
//! clock or opens a socket.
//! `daemon`, `sink`, `http`, `publish` and `range` are the I/O shell, reading the host's clocks
//! through `clock`; `service` is the systemd shell `run` and `range` share; `cmd` holds the
//! verbs; `config` is parsed once; `catalog` keeps every ingested run in SQLite (its change
//! computation is pure).
//!
//! Without the default `full` feature only the parsers and the rules remain (`wire`, `monitor`,
//! `ulog` without its export, `tlog`, `receipt`, `utc`, `recorder`, `sniff`, `analyze`, `sortie`; no
//! tokio, HTTP, NATS or Parquet, and `status`, which encodes /metrics, is left out too): what
//! the fuzz targets build.

pub mod analyze;
pub mod backoff;
#[cfg(feature = "full")]
pub mod catalog;
#[cfg(feature = "full")]
pub(crate) mod clock;
#[cfg(feature = "full")]
pub mod cmd;
#[cfg(feature = "full")]
pub(crate) mod config;
#[cfg(feature = "full")]
pub(crate) mod daemon;
pub mod geodesy;
#[cfg(feature = "full")]
pub(crate) mod http;
pub mod link;
#[cfg(feature = "full")]
pub mod logging;
#[cfg(feature = "full")]
pub mod mcap;
pub mod monitor;
#[cfg(feature = "full")]
pub mod pipeline;
#[cfg(feature = "full")]
pub mod publish;
#[cfg(feature = "full")]
pub mod range;
pub(crate) mod receipt;
pub mod recorder;
pub mod replay;
pub mod sbs;
#[cfg(feature = "full")]
pub(crate) mod service;
#[cfg(feature = "full")]
pub mod sink;
pub(crate) mod sniff;
pub mod sortie;
#[cfg(feature = "full")]
pub(crate) mod status;
#[cfg(test)]
pub(crate) mod test_support;
pub mod tlog;
pub mod traffic;
pub mod ulog;
pub mod utc;
pub mod wire;
