//! What link tasks send the pipeline: bytes with their arrival stamp, and link state changes.

use super::clock::Stamp;
use crate::link::LinkId;
use std::sync::Arc;

#[derive(Debug)]
pub enum LinkInput {
    /// One UDP datagram, scanned on its own.
    Datagram {
        link: LinkId,
        at: Stamp,
        src_json: Arc<str>,
        bytes: Vec<u8>,
    },
    /// Bytes read from a serial device; frames may continue in the next read.
    Stream {
        link: LinkId,
        at: Stamp,
        bytes: Vec<u8>,
    },
    /// The device is open and readable.
    Up {
        link: LinkId,
        at: Stamp,
        detail: String,
    },
    /// The device went away (or could not be opened); the link keeps retrying.
    Down {
        link: LinkId,
        at: Stamp,
        reason: String,
    },
    /// A datagram from a source outside the link's allow-list.
    Denied { link: LinkId, peer: String },
}
