//! PX4 ULog: the streaming reader (pure: bytes in, located records out), the ingest report built
//! from it, and the `ulog` verbs.
//!
//! Layering:
//! - the format: `format` (F messages, layouts), `value` (decoded values), `record` (what the
//!   reader yields), `error` (why it stops);
//! - the reader: `decoder` (the pure state machine), `reader` (fed from a slice or a `Read`),
//!   `writer` (makes logs for tests and benchmarks; only with the `testing` feature);
//! - the report: `report` (its schema), `collect` (records to report content), with `periods`
//!   (topic_stall), `gps` (the time anchor), `profile` (expected topics, failsafe parameters) and
//!   `display` (number formats);
//! - the shell: `ingest` (validate, quarantine, reject; file I/O) with `digest` (the file's
//!   SHA-256 in the same pass), `inspect` (one record shown),
//!   `summary` (`ulog info`). The verbs themselves are in `crate::cmd::ulog`;
//! - after the ingest: `export` with `table` (Parquet/CSV tables; with the `full` feature
//!   only), `html` with `series` (the report with plots) and `lane` (the ground lane drawn on
//!   its time axis by `ulog report --ground`).

pub mod analysis;
pub mod band;
pub mod collect;
pub mod decoder;
pub mod digest;
pub mod display;
pub mod error;
pub mod events;
#[cfg(feature = "full")]
pub mod export;
pub mod format;
pub mod gps;
pub mod html;
pub mod ingest;
pub mod inspect;
pub mod json;
pub mod lane;
pub mod modes;
pub mod periods;
pub mod profile;
pub mod reader;
pub mod record;
pub mod report;
#[cfg(any(test, feature = "testing"))]
pub mod rewrite;
pub mod rules;
pub mod series;
pub mod signals;
pub mod summary;
#[cfg(feature = "full")]
pub mod table;
pub mod value;
#[cfg(any(test, feature = "testing"))]
pub mod writer;

pub use decoder::{Decoder, Section};
pub use error::{CutInside, ReadError};
pub use reader::{SliceReader, StreamReader};
pub use record::{Located, Record};
