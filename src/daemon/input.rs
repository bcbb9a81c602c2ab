//! What a link's receive task queues for its scanner thread: bytes with their arrival stamp,
//! and state changes. Each link has its own queue, so nothing here names the link.

use crate::link::{LinkChange, Stamp};
use std::sync::Arc;

#[derive(Debug)]
pub enum LinkInput {
    /// One UDP datagram, scanned on its own.
    Datagram {
        at: Stamp,
        src_json: Arc<str>,
        bytes: Vec<u8>,
    },
    /// Bytes read from a serial device; frames may continue in the next read.
    Stream { at: Stamp, bytes: Vec<u8> },
    /// The link's state changed.
    Change(LinkChange),
}
