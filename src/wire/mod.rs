//! MAVLink on the wire, with no I/O: the frame scanner, the dialect tables it checks frames
//! against, signature checking, payload fields, and per-sender sequence tracking.

#[cfg(any(test, feature = "testing"))]
pub mod build;
pub mod dialect;
pub mod fields;
pub mod scanner;
pub mod sequence;
pub mod signing;
pub mod table;
pub mod traffic;

pub use scanner::{DatagramScanner, Frame, Reject, RejectReason, ScanItem, StreamScanner, Version};
