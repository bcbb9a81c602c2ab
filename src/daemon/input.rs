//! What a stream link's receive task (serial, TCP) queues for its scanner thread: bytes with
//! their arrival stamp, and state changes. Each link has its own queue, so nothing here names
//! the link. (A UDP link scans what it reads in its receive thread.)

use crate::link::{LinkChange, Stamp};
use std::sync::Arc;

/// Which connection of a stream link bytes came on: each has its own scanner, so two TCP peers'
/// bytes never mix. A serial device is connection 0.
pub type Conn = u64;

#[derive(Debug)]
pub enum LinkInput {
    /// Bytes read from a stream (a serial device, a TCP connection); frames may continue in
    /// the same connection's next read.
    Stream {
        at: Stamp,
        conn: Conn,
        /// The peer, as the receipt's `src` (TCP), as a JSON string.
        src_json: Option<Arc<str>>,
        bytes: Vec<u8>,
    },
    /// One connection of a stream link ended (a TCP peer hung up) while the link stays up: a
    /// partial frame it left is a reject, and its scanner goes.
    StreamEnd { at: Stamp, conn: Conn },
    /// The link's state changed.
    Change(LinkChange),
}
