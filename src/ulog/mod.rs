//! PX4 ULog: the streaming reader (pure: bytes in, located records out), the ingest report built
//! from it, and the `ulog` verbs.
//!
//! Layering: `format`, `value`, `record`, `error` describe the format; `decoder` is the pure state
//! machine; `reader` feeds it from a slice or a `Read`; `writer` makes logs for tests and
//! benchmarks; the report lives in `report` and is filled by `collect`; `ingest` is the file-level
//! shell (validate, quarantine, reject); `cmd` wires the verbs.

pub mod cmd;
pub mod collect;
pub mod decoder;
pub mod display;
pub mod error;
pub mod format;
pub mod gps;
pub mod ingest;
pub mod inspect;
pub mod periods;
pub mod profile;
pub mod reader;
pub mod record;
pub mod report;
pub mod summary;
pub mod value;
pub mod writer;

pub use decoder::{Decoder, Section};
pub use error::{CutInside, ReadError};
pub use reader::{SliceReader, StreamReader};
pub use record::{Located, Record};
