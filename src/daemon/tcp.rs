//! One TCP connection of a link (a client link's, or a peer of a listening link) read into the
//! link's queue: each read stamped as the queue takes it, as a serial read is, and scanned as a
//! stream of its own (frames split across reads are joined; two connections never mix). The
//! queue is waited on when full, so TCP's flow control holds the sender back and nothing it
//! sent is lost. At the stop, what the kernel already holds for the connection is still read.

use super::input::{Conn, LinkInput};
use super::link_queue::LinkSender;
use crate::receipt::json_string;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::watch;

/// How a connection's reading ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The peer went away (or the connection failed): why, in words.
    Closed(String),
    /// The receiver is stopping; what the kernel held was read.
    Stopping,
    /// The link's scanner is gone (the receiver is stopping).
    QueueClosed,
}

/// Reads `stream` into the link's queue until it ends.
pub async fn read_connection(
    link: &str,
    stream: &mut TcpStream,
    conn: Conn,
    peer: SocketAddr,
    queue: &LinkSender,
    shutdown: &mut watch::Receiver<bool>,
) -> Ended {
    let src_json: Arc<str> = json_string(&peer.to_string()).into();
    let mut buf = vec![0u8; 65_536];
    loop {
        let read = tokio::select! {
            biased;
            _ = shutdown.changed() => return drain(link, stream, conn, &src_json, queue, &mut buf).await,
            r = stream.read(&mut buf) => r,
        };
        match read {
            Ok(0) => return Ended::Closed("closed by the peer".to_string()),
            Ok(n) => {
                if offer(link, conn, &src_json, &buf[..n], queue)
                    .await
                    .is_err()
                {
                    return Ended::QueueClosed;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Ended::Closed(format!("read failed: {e}")),
        }
    }
}

async fn offer(
    link: &str,
    conn: Conn,
    src_json: &Arc<str>,
    bytes: &[u8],
    queue: &LinkSender,
) -> Result<(), super::link_queue::Closed> {
    tracing::trace!(link, conn, bytes = bytes.len(), "tcp read");
    let bytes = bytes.to_vec();
    let src_json = Some(src_json.clone());
    queue
        .offer_waiting(bytes.len(), |at| LinkInput::Stream {
            at,
            conn,
            src_json,
            bytes,
        })
        .await
        .map(|_| ())
}

/// Stopping: what the kernel already holds for this connection was received before the stop,
/// so it is recorded too.
async fn drain(
    link: &str,
    stream: &mut TcpStream,
    conn: Conn,
    src_json: &Arc<str>,
    queue: &LinkSender,
    buf: &mut [u8],
) -> Ended {
    loop {
        match stream.try_read(buf) {
            Ok(0) => return Ended::Stopping,
            Ok(n) => {
                if offer(link, conn, src_json, &buf[..n], queue).await.is_err() {
                    return Ended::QueueClosed;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Ended::Stopping,
        }
    }
}
