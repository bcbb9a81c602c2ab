//! A TCP server link (`tcp_listen = "addr:port"`): accepts MAVLink peers (a router's TCP
//! client, a companion computer) from its allow-list, at most `max_peers` at once, and reads
//! each as a stream of its own (one scanner per connection; the receipt's `src` is the peer).
//! A peer from outside `allow` or past the cap is closed at once and counted as `denied`. The
//! link is up while it listens; peers come and go in the log, and a peer's partial frame at its
//! hang-up is a reject.

use super::input::LinkInput;
use super::link_queue::LinkSender;
use super::tcp::{read_connection, Ended};
use crate::clock;
use crate::link::LinkChange;
use ipnet::IpNet;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

pub async fn run(
    name: String,
    listener: TcpListener,
    allow: Vec<IpNet>,
    max_peers: usize,
    queue: LinkSender,
    mut shutdown: watch::Receiver<bool>,
) {
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let up = LinkChange::Up {
        at: clock::stamp(),
        detail: format!("listening on tcp {local}"),
    };
    if queue.note(up).await.is_err() {
        return;
    }
    let mut peers = JoinSet::new();
    let mut conn = 0u64;
    // A failing accept (no descriptors left) backs off, said once per outage.
    let mut backoff = crate::backoff::accept_backoff();
    loop {
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            Some(_) = peers.join_next(), if !peers.is_empty() => {}
            accepted = listener.accept() => {
                let (mut stream, peer) = match accepted {
                    Ok(a) => {
                        if backoff.failures() > 0 {
                            tracing::info!(link = %name, "accepting again");
                        }
                        backoff.succeeded();
                        a
                    }
                    Err(e) => {
                        if backoff.failures() == 0 {
                            tracing::warn!(link = %name, error = %e, "accept failing; backing off");
                        }
                        tokio::time::sleep(backoff.failed(0.0)).await;
                        continue;
                    }
                };
                let refusal = if !crate::config::allowed(&allow, peer.ip()) {
                    Some(format!("{peer} (outside the allow-list)"))
                } else if peers.len() >= max_peers {
                    Some(format!("{peer} (past max_peers {max_peers})"))
                } else {
                    None
                };
                if let Some(peer) = refusal {
                    tracing::debug!(link = %name, %peer, "tcp peer refused");
                    drop(stream);
                    if queue.note(LinkChange::Denied { peer }).await.is_err() {
                        break;
                    }
                    continue;
                }
                conn += 1;
                tracing::info!(link = %name, %peer, conn, "tcp peer connected");
                let (name, queue, mut shutdown) = (name.clone(), queue.clone(), shutdown.clone());
                let this = conn;
                peers.spawn(async move {
                    let ended =
                        read_connection(&name, &mut stream, this, peer, &queue, &mut shutdown).await;
                    if let Ended::Closed(reason) = &ended {
                        tracing::info!(link = %name, %peer, conn = this, %reason, "tcp peer gone");
                    }
                    if ended != Ended::QueueClosed {
                        // Its own partial frame is a reject; the other peers go on.
                        let _ = queue
                            .offer_waiting(0, |at| LinkInput::StreamEnd { at, conn: this })
                            .await;
                    }
                });
            }
        }
    }
    // Stopping: every peer reads what the kernel holds for it, then ends.
    while peers.join_next().await.is_some() {}
}
