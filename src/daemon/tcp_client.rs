//! A TCP client link (`tcp = "host:port"`): connects to a MAVLink server (a router, SITL, a
//! companion computer), reads it as a stream, and when the peer goes away (refused, closed,
//! reset, unreachable) reports `link down` once, tries again with the project's back-off, and
//! reports `link up` when connected again. Everything read before a drop is scanned and
//! recorded; the new connection starts a new stream. Never fatal to the daemon.

use super::link_queue::LinkSender;
use super::tcp::{read_connection, Ended};
use crate::backoff::{self, Backoff};
use crate::clock;
use crate::config::HostPort;
use crate::link::LinkChange;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::watch;

const FIRST_RETRY: Duration = Duration::from_millis(200);
const MAX_RETRY: Duration = Duration::from_secs(5);
/// A connect that neither succeeds nor fails within this long is given up and tried again.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

async fn connect(peer: &HostPort) -> Result<TcpStream, String> {
    match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(peer.as_str())).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(format!("cannot connect to tcp {peer}: {e}")),
        Err(_) => Err(format!(
            "cannot connect to tcp {peer}: no answer within {} s",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

pub async fn run(
    name: String,
    peer: HostPort,
    queue: LinkSender,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut retry = Backoff::new(FIRST_RETRY, MAX_RETRY).with_jitter();
    // `true` once `down` was reported for this outage, so a peer that stays away is said once.
    let mut reported_down = false;
    // Each connection is its own stream for the scanner.
    let mut conn = 0u64;
    loop {
        let connecting = tokio::select! {
            biased;
            _ = shutdown.changed() => return,
            c = connect(&peer) => c,
        };
        let failure = match connecting {
            Err(reason) => reason,
            Ok(mut stream) => {
                conn += 1;
                let remote = stream
                    .peer_addr()
                    .unwrap_or_else(|_| std::net::SocketAddr::from(([0, 0, 0, 0], 0)));
                let local = stream
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                let detail = format!("connected to tcp {peer} ({remote}) from {local}");
                let up = LinkChange::Up {
                    at: clock::stamp(),
                    detail,
                };
                if queue.note(up).await.is_err() {
                    return;
                }
                reported_down = false;
                retry.succeeded();
                match read_connection(&name, &mut stream, conn, remote, &queue, &mut shutdown).await
                {
                    Ended::Closed(reason) => format!("tcp {peer}: {reason}"),
                    Ended::Stopping | Ended::QueueClosed => return,
                }
            }
        };
        if !reported_down {
            tracing::warn!(link = %name, reason = %failure, "tcp link down; reconnecting");
            // The scanner ends every connection's stream at a down: a frame cut by the drop is
            // a reject, and the next connection starts afresh.
            let down = LinkChange::Down {
                at: clock::stamp(),
                reason: failure,
            };
            if queue.note(down).await.is_err() {
                return;
            }
            reported_down = true;
        }
        tokio::select! {
            biased;
            _ = shutdown.changed() => return,
            _ = tokio::time::sleep(retry.failed(backoff::draw())) => {}
        }
    }
}
