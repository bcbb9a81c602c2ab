//! A UDP forward: each frame from the output's queue sent as one datagram to its address, from
//! a socket connected to that address, up to [`BATCH`] datagrams a system call (`sendmmsg`). The address is resolved when the output starts, and
//! again with back-off while it cannot be (frames taken meanwhile are counted `unreachable`).
//! Datagrams the ground station sends back arrive on the same socket and are read, counted and
//! discarded: nothing it sends reaches a link.

use super::ChunkReceiver;
use crate::backoff::{self, Backoff};
use crate::config::HostPort;
use crate::status::ForwardStats;
use bytes::Bytes;
use nix::sys::socket::{sendmmsg, ControlMessage, MsgFlags, MultiHeaders, SockaddrStorage};
use std::io::IoSlice;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::sync::watch;

/// Datagrams one `sendmmsg(2)` sends at most: at 200,000 frames/s a call a datagram cost more
/// than the receiving itself.
pub const BATCH: usize = 256;

const FIRST_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(30);
/// After the stop, what is still queued is sent for at most this long.
const FLUSH_AT_STOP: Duration = Duration::from_secs(1);

/// A socket connected to `to` (the first address it resolves to).
async fn connect(to: &HostPort) -> std::io::Result<UdpSocket> {
    let addr = tokio::net::lookup_host(to.as_str())
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other("resolves to no address"))?;
    let local: std::net::SocketAddr = if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local).await?;
    socket.connect(addr).await?;
    Ok(socket)
}

pub async fn run(
    stats: Arc<ForwardStats>,
    to: HostPort,
    mut queue: ChunkReceiver,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut retry = Backoff::new(FIRST_RETRY, MAX_RETRY).with_jitter();
    let mut warned = false;
    let socket = loop {
        match connect(&to).await {
            Ok(socket) => break socket,
            Err(e) => {
                if !warned {
                    tracing::warn!(forward = %stats.name, to = %to, error = %e, "forward cannot reach its address; retrying");
                    warned = true;
                }
                let wait = tokio::time::sleep(retry.failed(backoff::draw()));
                tokio::pin!(wait);
                loop {
                    tokio::select! {
                        _ = &mut wait => break,
                        _ = shutdown.changed() => return,
                        chunk = queue.recv() => match chunk {
                            Some(c) => {
                                stats.dropped_unreachable.fetch_add(c.frames(), Ordering::Relaxed);
                            }
                            None => return,
                        },
                    }
                }
            }
        }
    };
    let peer = socket
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!(forward = %stats.name, to = %peer, "forward sending");
    let mut back = vec![0u8; 65_536];
    let mut stop_by: Option<tokio::time::Instant> = None;
    loop {
        let deadline = stop_by.unwrap_or_else(|| tokio::time::Instant::now() + MAX_RETRY);
        tokio::select! {
            biased;
            chunk = queue.recv() => {
                let Some(chunk) = chunk else { break };
                let frames: Vec<Bytes> = chunk.each_frame().collect();
                send_all(&socket, &frames, &stats).await;
            }
            received = socket.recv(&mut back) => {
                // What the ground station sends is never passed on: counted and dropped.
                if let Ok(n) = received {
                    tracing::trace!(forward = %stats.name, bytes = n, "ignored datagram");
                    stats.ignored_datagrams.fetch_add(1, Ordering::Relaxed);
                    stats.ignored_bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
            _ = shutdown.changed(), if stop_by.is_none() => {
                // The queue closes once the scanners have handed over their last frames.
                stop_by = Some(tokio::time::Instant::now() + FLUSH_AT_STOP);
            }
            _ = tokio::time::sleep_until(deadline), if stop_by.is_some() => break,
        }
    }
}

/// Sends every frame as its own datagram, a batch a system call, waiting while the socket's
/// buffer is full.
async fn send_all(socket: &UdpSocket, frames: &[Bytes], stats: &ForwardStats) {
    let mut at = 0;
    while at < frames.len() {
        let batch = &frames[at..frames.len().min(at + BATCH)];
        match socket
            .async_io(Interest::WRITABLE, || send_batch(socket, batch))
            .await
        {
            Ok(sent) => {
                let bytes: usize = batch[..sent].iter().map(Bytes::len).sum();
                stats.sent_frames.fetch_add(sent as u64, Ordering::Relaxed);
                stats.sent_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
                at += sent.max(1);
            }
            // The destination answered "port unreachable" (nobody listening yet): the first
            // frame of the batch is lost for it, the next is tried.
            Err(e) => {
                tracing::trace!(forward = %stats.name, error = %e, "send");
                stats.dropped_send_error.fetch_add(1, Ordering::Relaxed);
                at += 1;
            }
        }
    }
}

/// One `sendmmsg(2)` of `frames` on the connected socket: how many were sent.
fn send_batch(socket: &UdpSocket, frames: &[Bytes]) -> std::io::Result<usize> {
    // Not `Send`, so made for each call rather than kept across the task's awaits.
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(frames.len(), None);
    let slices: Vec<[IoSlice<'_>; 1]> = frames.iter().map(|f| [IoSlice::new(f)]).collect();
    // Connected: no address per datagram.
    let to: Vec<Option<SockaddrStorage>> = vec![None; frames.len()];
    let sent = sendmmsg(
        socket.as_raw_fd(),
        &mut headers,
        &slices,
        &to,
        [] as [ControlMessage<'_>; 0],
        MsgFlags::MSG_DONTWAIT,
    )?;
    Ok(sent.count())
}
