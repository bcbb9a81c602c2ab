//! Where output goes: files that rotate by UTC day and size (receive log, raw `.tlog`, the SBS
//! feeds' traffic log, events),
//! each written by its own thread so a slow or full disk never stalls receiving; and retention,
//! which removes their oldest day folders.

pub mod listing;
pub mod retention;
pub mod rotating;
pub mod webhook;
pub mod writer;

pub use rotating::RotatingFile;

/// One file set under `data_dir`: its folder, its files' name prefix and extension. Named once
/// here for the writers, retention and the publisher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSet {
    pub folder: &'static str,
    pub prefix: &'static str,
    pub ext: &'static str,
    pub framing: rotating::Framing,
}

impl FileSet {
    /// The link to the open file that `tail -F` follows.
    pub fn current(&self) -> String {
        format!("current.{}", self.ext)
    }
}

/// The receive log: `receive/YYYY-MM-DD/receive-*.jsonl`.
pub const RECEIVE_LOG: FileSet = FileSet {
    folder: "receive",
    prefix: "receive",
    ext: "jsonl",
    framing: rotating::Framing::Lines,
};
/// The raw capture of the same frames: `tlog/YYYY-MM-DD/receive-*.tlog`.
pub const TLOG: FileSet = FileSet {
    folder: "tlog",
    prefix: "receive",
    ext: "tlog",
    framing: rotating::Framing::Whole,
};
/// The SBS feeds' accepted lines, each with its receipt stamp:
/// `traffic/YYYY-MM-DD/traffic-*.jsonl` (opened only when a link is an SBS feed).
pub const TRAFFIC_LOG: FileSet = FileSet {
    folder: "traffic",
    prefix: "traffic",
    ext: "jsonl",
    framing: rotating::Framing::Lines,
};
/// The events: `events/YYYY-MM-DD/events-*.jsonl`.
pub const EVENTS: FileSet = FileSet {
    folder: "events",
    prefix: "events",
    ext: "jsonl",
    framing: rotating::Framing::Lines,
};
pub use writer::{spawn_writer, WriterHandle, WriterStats};
