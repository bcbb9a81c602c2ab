//! A TCP forward: a listener ground stations connect to (from `allow`, at most `max_peers` at
//! once). The frames from the output's queue go to every peer as one byte stream; each peer has
//! its own queue, bounded in bytes, so a peer that stops reading loses frames for itself only
//! (whole chunks of whole frames, so its stream stays frame-aligned; counted, `peer_slow`) and
//! is closed when it takes nothing for a minute. What a peer sends is read and discarded
//! (counted): nothing reaches a link.

use super::{chunk_queue, ChunkReceiver, ChunkSender};
use crate::status::ForwardStats;
use ipnet::IpNet;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A peer that takes no byte for this long is closed (its slot freed for another).
const STALLED_PEER: Duration = Duration::from_secs(60);
/// After the stop, peers get this long to take what is still queued for them.
const FLUSH_AT_STOP: Duration = Duration::from_secs(1);

/// Who may connect, and how much may wait for each.
#[derive(Debug, Clone)]
pub struct PeerRules {
    pub allow: Vec<IpNet>,
    pub max_peers: usize,
    pub queue_bytes: u64,
}

pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}

struct Peer {
    queue: ChunkSender,
    task: JoinHandle<()>,
}

pub async fn run(
    stats: Arc<ForwardStats>,
    listener: TcpListener,
    rules: PeerRules,
    mut queue: ChunkReceiver,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut peers: Vec<Peer> = Vec::new();
    let mut stop_by: Option<tokio::time::Instant> = None;
    // A failing accept (no descriptors left) backs off, said once per outage.
    let mut backoff = crate::backoff::accept_backoff();
    loop {
        let deadline = stop_by.unwrap_or_else(|| tokio::time::Instant::now() + STALLED_PEER);
        tokio::select! {
            biased;
            chunk = queue.recv() => {
                let Some(chunk) = chunk else { break };
                peers.retain(|p| !p.queue.is_closed());
                for peer in &peers {
                    if !peer.queue.offer(chunk.clone()) {
                        stats.dropped_peer_slow.fetch_add(chunk.frames(), Ordering::Relaxed);
                    }
                }
            }
            accepted = listener.accept(), if stop_by.is_none() => {
                let (stream, addr) = match accepted {
                    Ok(a) => {
                        if backoff.failures() > 0 {
                            tracing::info!(forward = %stats.name, "accepting again");
                        }
                        backoff.succeeded();
                        a
                    }
                    Err(e) => {
                        if backoff.failures() == 0 {
                            tracing::warn!(forward = %stats.name, error = %e, "accept failing; backing off");
                        }
                        tokio::time::sleep(backoff.failed(0.0)).await;
                        continue;
                    }
                };
                peers.retain(|p| !p.queue.is_closed());
                if !crate::config::allowed(&rules.allow, addr.ip()) {
                    stats.peers_refused.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(forward = %stats.name, peer = %addr, "forward peer outside the allow-list refused");
                    continue;
                }
                if peers.len() >= rules.max_peers {
                    stats.peers_refused.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(forward = %stats.name, peer = %addr, max_peers = rules.max_peers, "forward peer refused: max_peers reached");
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let (tx, rx) = chunk_queue(rules.queue_bytes);
                stats.peers_total.fetch_add(1, Ordering::Relaxed);
                stats.peers.fetch_add(1, Ordering::Relaxed);
                tracing::info!(forward = %stats.name, peer = %addr, "forward peer connected");
                let task = tokio::spawn(serve_peer(stats.clone(), stream, addr, rx));
                peers.push(Peer { queue: tx, task });
            }
            _ = shutdown.changed(), if stop_by.is_none() => {
                // The queue closes once the scanners have handed over their last frames.
                stop_by = Some(tokio::time::Instant::now() + FLUSH_AT_STOP);
            }
            _ = tokio::time::sleep_until(deadline), if stop_by.is_some() => break,
        }
    }
    // Each peer's queue closes: it sends what it holds, within the stop's flush time.
    let until = tokio::time::Instant::now() + FLUSH_AT_STOP;
    for peer in peers {
        drop(peer.queue);
        let mut task = peer.task;
        if tokio::time::timeout_at(until, &mut task).await.is_err() {
            task.abort();
        }
    }
}

/// One ground station: the chunks queued for it written in order; what it sends read and
/// discarded. Ends when it hangs up, stalls for [`STALLED_PEER`], or its queue closes.
async fn serve_peer(
    stats: Arc<ForwardStats>,
    stream: TcpStream,
    addr: SocketAddr,
    mut queue: ChunkReceiver,
) {
    // Counted out however the peer ends, an abort at the stop included.
    struct Connected(Arc<ForwardStats>);
    impl Drop for Connected {
        fn drop(&mut self) {
            self.0.peers.fetch_sub(1, Ordering::Relaxed);
        }
    }
    let _connected = Connected(stats.clone());
    let (mut reader, mut writer) = stream.into_split();
    let mut ignored = vec![0u8; 4096];
    let why = loop {
        tokio::select! {
            chunk = queue.recv() => {
                let Some(chunk) = chunk else { break "the receiver is stopping".to_string() };
                match tokio::time::timeout(STALLED_PEER, writer.write_all(&chunk.bytes)).await {
                    Ok(Ok(())) => {
                        stats.sent_frames.fetch_add(chunk.frames(), Ordering::Relaxed);
                        stats.sent_bytes.fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
                    }
                    Ok(Err(e)) => break format!("write failed: {e}"),
                    Err(_) => break format!("took nothing for {} s", STALLED_PEER.as_secs()),
                }
            }
            read = reader.read(&mut ignored) => match read {
                Ok(0) => break "closed by the peer".to_string(),
                Ok(n) => {
                    tracing::trace!(forward = %stats.name, peer = %addr, bytes = n, "ignored bytes");
                    stats.ignored_bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) => break format!("read failed: {e}"),
            },
        }
    };
    tracing::info!(forward = %stats.name, peer = %addr, reason = %why, "forward peer gone");
}
