//! PX4 ULog: streaming reader, ingest report, and the `ulog` verbs. (Being written.)

pub mod cmd;
