//! What a link's receive task queues for its scanner thread: bytes with their arrival stamp,
//! and state changes. Each link has its own queue, so nothing here names the link.

use super::clock::Stamp;
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
    /// The device is open and readable (a UDP link: its socket is bound).
    Up { at: Stamp, detail: String },
    /// The device went away (or could not be opened); the link keeps retrying.
    Down { at: Stamp, reason: String },
    /// A datagram from a source outside the link's allow-list.
    Denied { peer: String },
}
