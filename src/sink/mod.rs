//! Where output goes: files that rotate by UTC day and size (receive log, raw `.tlog`, events),
//! each written by its own thread so a slow or full disk never stalls receiving; and retention,
//! which removes their oldest day folders.

pub mod retention;
pub mod rotating;
pub mod webhook;
pub mod writer;

pub use rotating::RotatingFile;
pub use writer::{spawn_writer, WriterHandle, WriterStats};
