//! A UDP link's receive task: one socket, read with `recvmmsg(2)` (what waits, up to a batch,
//! in one call); every datagram stamped on arrival and queued whole for the link's scanner
//! thread. It never blocks on the scanner: a datagram that does not fit
//! the link's byte-bounded queue is dropped and counted (`overload`). Datagrams the kernel
//! dropped because the socket buffer was full are counted too, from `SO_RXQ_OVFL`.

use super::input::LinkInput;
use super::link_queue::{Closed, LinkSender};
use crate::link::LinkChange;
use crate::receipt::json_string;
use ipnet::IpNet;
use nix::sys::socket::{
    self, sockopt, ControlMessageOwned, MsgFlags, MultiHeaders, SockaddrStorage,
};
use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::sync::watch;

/// Binds the link's socket with the receive buffer asked for, so bursts wait in the kernel,
/// and asks the kernel to report how many datagrams it dropped. Returns the socket and the
/// buffer the kernel actually gave (it caps the request at `net.core.rmem_max`, unless the
/// daemon may force it).
pub fn bind(addr: SocketAddr, rcvbuf_bytes: u64) -> std::io::Result<(UdpSocket, usize)> {
    let socket = std::net::UdpSocket::bind(addr)?;
    socket.set_nonblocking(true)?;
    let want = rcvbuf_bytes.min(i32::MAX as u64 / 2) as usize;
    // As root (CAP_NET_ADMIN) the buffer may pass rmem_max; otherwise the capped size is taken.
    if socket::setsockopt(&socket, sockopt::RcvBufForce, &want).is_err() {
        let _ = socket::setsockopt(&socket, sockopt::RcvBuf, &want);
    }
    socket::setsockopt(&socket, sockopt::RxqOvfl, &1)?;
    // The kernel reports twice what it books for the data (it counts its bookkeeping too).
    let got = socket::getsockopt(&socket, sockopt::RcvBuf).unwrap_or(0) / 2;
    Ok((UdpSocket::from_std(socket)?, got))
}

/// `SO_MEMINFO` (asm-generic/socket.h; the libc crate does not define it) and the index of the
/// socket's drop count in what it returns (`SK_MEMINFO_DROPS`).
const SO_MEMINFO: nix::libc::c_int = 55;
const SK_MEMINFO_DROPS: usize = nix::libc::SK_MEMINFO_DROPS as usize;

/// The kernel's count of datagrams this socket dropped (buffer full), read directly. The
/// `SO_RXQ_OVFL` count comes with the next datagram received after a drop; this one is there
/// even when nothing else arrives.
fn kernel_drop_count(socket: &UdpSocket) -> Option<u32> {
    let mut info = [0u32; 16];
    let mut len = std::mem::size_of_val(&info) as nix::libc::socklen_t;
    // SAFETY: `info` is a writable buffer of `len` bytes that outlives the call, and the
    // kernel writes at most `len` bytes into it and stores the length it wrote in `len`.
    let rc = unsafe {
        nix::libc::getsockopt(
            socket.as_raw_fd(),
            nix::libc::SOL_SOCKET,
            SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    let words = len as usize / std::mem::size_of::<u32>();
    (rc == 0 && words > SK_MEMINFO_DROPS).then_some(info[SK_MEMINFO_DROPS])
}

/// Datagrams read with one `recvmmsg(2)` at most: under load one system call takes what
/// waits in the socket instead of one call per datagram.
const BATCH: usize = 32;
/// Each datagram's buffer: the largest UDP payload fits, so nothing is ever cut short.
const DATAGRAM_MAX: usize = 65_536;

/// One received datagram: its length, sender, and the kernel's running count of drops.
type Received = (usize, SocketAddr, Option<u32>);

/// The buffers of one `recvmmsg(2)` and what it read into them.
struct Batch {
    buffers: Vec<Vec<u8>>,
    received: Vec<Received>,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            buffers: (0..BATCH).map(|_| vec![0u8; DATAGRAM_MAX]).collect(),
            received: Vec::with_capacity(BATCH),
        }
    }

    /// The bytes of the `i`th datagram read.
    fn bytes(&self, i: usize) -> &[u8] {
        &self.buffers[i][..self.received[i].0]
    }
}

/// Reads what waits in the socket, up to [`BATCH`] datagrams, without waiting; `WouldBlock`
/// when nothing does.
fn receive(socket: &UdpSocket, batch: &mut Batch) -> std::io::Result<usize> {
    batch.received.clear();
    // Made for each call: nix's headers hold raw pointers, so they cannot live in the task
    // (which must be `Send`) across its awaits.
    let mut headers =
        MultiHeaders::<SockaddrStorage>::preallocate(BATCH, Some(nix::cmsg_space!(u32)));
    let mut slices: Vec<[IoSliceMut; 1]> = batch
        .buffers
        .iter_mut()
        .map(|b| [IoSliceMut::new(b)])
        .collect();
    let messages = socket::recvmmsg(
        socket.as_raw_fd(),
        &mut headers,
        slices.iter_mut(),
        MsgFlags::MSG_DONTWAIT,
        None,
    )
    .map_err(std::io::Error::from)?;
    for msg in messages {
        let mut overflow = None;
        for c in msg.cmsgs().map_err(std::io::Error::from)? {
            if let ControlMessageOwned::RxqOvfl(n) = c {
                overflow = Some(n);
            }
        }
        let peer = msg
            .address
            .and_then(|a| {
                a.as_sockaddr_in()
                    .map(|v4| SocketAddr::from(std::net::SocketAddrV4::from(*v4)))
                    .or_else(|| {
                        a.as_sockaddr_in6()
                            .map(|v6| SocketAddr::from(std::net::SocketAddrV6::from(*v6)))
                    })
            })
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
        batch.received.push((msg.bytes, peer, overflow));
    }
    Ok(batch.received.len())
}

pub async fn run(
    name: String,
    socket: UdpSocket,
    allow: Vec<IpNet>,
    queue: LinkSender,
    mut shutdown: watch::Receiver<bool>,
    #[cfg(feature = "testing")] stall_file: Option<std::path::PathBuf>,
) {
    let local = socket
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let up = LinkChange::Up {
        at: crate::clock::stamp(),
        detail: format!("listening on udp {local}"),
    };
    if queue.note(up).await.is_err() {
        return;
    }
    let mut batch = Batch::new();
    let mut last_peer: Option<(SocketAddr, Arc<str>)> = None;
    let kernel_drops = &queue.shared().kernel_drops;
    let mut drop_check = tokio::time::interval(std::time::Duration::from_millis(500));
    drop_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping = false;
    'link: loop {
        #[cfg(feature = "testing")]
        while stall_file.as_ref().is_some_and(|p| p.exists()) && !stopping {
            // Fault injection for the kernel-drop test: the socket is not read while the file
            // exists, so its buffer overflows.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let received = if stopping {
            // Stopping: what the kernel already holds was received before the stop, so it is
            // recorded; then the link ends.
            match receive(&socket, &mut batch) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                r => r,
            }
        } else {
            tokio::select! {
                biased;
                _ = shutdown.changed() => {
                    stopping = true;
                    continue;
                }
                _ = drop_check.tick() => {
                    if let Some(total) = kernel_drop_count(&socket) {
                        kernel_drops.fetch_max(total as u64, Ordering::Relaxed);
                    }
                    continue;
                }
                r = socket.async_io(Interest::READABLE, || receive(&socket, &mut batch)) => r,
            }
        };
        let count = match received {
            Ok(n) => n,
            Err(e) => {
                // ICMP errors and the like: nothing was received, the socket is still good.
                tracing::debug!(link = %name, error = %e, "recvmmsg");
                continue;
            }
        };
        for i in 0..count {
            let (n, peer, overflow) = batch.received[i];
            // Both counts are the socket's running total: the larger is the latest.
            if let Some(total) = overflow {
                kernel_drops.fetch_max(total as u64, Ordering::Relaxed);
            }
            if !allow.is_empty()
                && !allow
                    .iter()
                    .any(|net| crate::config::network_contains(net, peer.ip()))
            {
                let denied = LinkChange::Denied {
                    peer: peer.to_string(),
                };
                if queue.note(denied).await.is_err() {
                    break 'link;
                }
                continue;
            }
            let src_json = match &last_peer {
                Some((p, json)) if *p == peer => json.clone(),
                _ => {
                    let json: Arc<str> = json_string(&peer.to_string()).into();
                    last_peer = Some((peer, json.clone()));
                    json
                }
            };
            tracing::trace!(link = %name, bytes = n, %peer, "datagram");
            let bytes = batch.bytes(i).to_vec();
            let offered = queue.offer(n, |at| LinkInput::Datagram {
                at,
                src_json,
                bytes,
            });
            if let Err(Closed) = offered {
                break 'link;
            }
        }
    }
    // What the kernel dropped up to the end is counted too.
    if let Some(total) = kernel_drop_count(&socket) {
        kernel_drops.fetch_max(total as u64, Ordering::Relaxed);
    }
}
