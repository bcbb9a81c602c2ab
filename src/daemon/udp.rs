//! A UDP link's receive thread: one socket, read with `recvmmsg(2)` (what waits, up to a batch,
//! in one call); every datagram stamped by the kernel on arrival (`SO_TIMESTAMPNS`), scanned
//! in this thread and handed to the pipeline a read (or a full batch) at a time. The socket's
//! buffer (`rcvbuf_kb`) is the link's queue: while the pipeline is behind, the thread waits and
//! the kernel holds what comes, and what it cannot hold it drops and counts. A busy link is
//! read once per window (`read_window_ms`): the first datagram after a quiet spell wakes the
//! thread, which then reads what came meanwhile every window until a read finds the socket
//! empty. At a few thousand datagrams a second that is one wake-up of each stage per window
//! instead of per datagram, and the stamps stay the kernel's, so nothing but the hand-off
//! waits (see `link_queue` for the watermark).
//!
//! It is an OS thread blocked in `poll(2)`, not a task on the runtime's reactor: the reactor
//! keeps every socket in its epoll set, and each datagram arriving would wake a runtime worker
//! even while the link waits for its next window. It never blocks on the scanner: a datagram that does not fit
//! the link's byte-bounded queue is dropped and counted (`overload`). Datagrams the kernel
//! dropped because the socket buffer was full are counted too, from `SO_RXQ_OVFL`.

use super::input::LinkInput;
use super::scan::Scanner;
use crate::clock;
use crate::link::{LinkChange, Stamp};
use crate::receipt::json_string;
use ipnet::IpNet;
use nix::sys::socket::{
    self, sockopt, ControlMessageOwned, MsgFlags, MultiHeaders, SockaddrStorage,
};
use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Binds the link's socket with the receive buffer asked for, so bursts wait in the kernel,
/// and asks the kernel to report how many datagrams it dropped and when each arrived. Returns
/// the socket and the buffer the kernel actually gave (it caps the request at
/// `net.core.rmem_max`, unless the daemon may force it).
pub fn bind(addr: SocketAddr, rcvbuf_bytes: u64) -> std::io::Result<(UdpSocket, usize)> {
    let socket = std::net::UdpSocket::bind(addr)?;
    socket.set_nonblocking(true)?;
    let want = rcvbuf_bytes.min(i32::MAX as u64 / 2) as usize;
    // As root (CAP_NET_ADMIN) the buffer may pass rmem_max; otherwise the capped size is taken.
    if socket::setsockopt(&socket, sockopt::RcvBufForce, &want).is_err() {
        let _ = socket::setsockopt(&socket, sockopt::RcvBuf, &want);
    }
    socket::setsockopt(&socket, sockopt::RxqOvfl, &1)?;
    socket::setsockopt(&socket, sockopt::ReceiveTimestampns, &true)?;
    // The kernel reports twice what it books for the data (it counts its bookkeeping too).
    let got = socket::getsockopt(&socket, sockopt::RcvBuf).unwrap_or(0) / 2;
    Ok((socket, got))
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

/// One received datagram: its length, sender, the kernel's running count of drops, and when
/// the kernel took it.
type Received = (usize, SocketAddr, Option<u32>, Option<Stamp>);

/// The buffers of one `recvmmsg(2)` and what it read into them.
struct Batch {
    buffers: Vec<Vec<u8>>,
    /// The call's headers (addresses, control messages), kept from call to call.
    headers: MultiHeaders<SockaddrStorage>,
    received: Vec<Received>,
    /// UTC just before the call: when it took fewer than [`BATCH`], everything left in the
    /// socket arrived after this.
    started_utc_ns: i64,
}

impl Batch {
    fn new() -> Batch {
        Batch {
            buffers: (0..BATCH).map(|_| vec![0u8; DATAGRAM_MAX]).collect(),
            headers: MultiHeaders::preallocate(
                BATCH,
                Some(nix::cmsg_space!(u32, nix::sys::time::TimeSpec)),
            ),
            received: Vec::with_capacity(BATCH),
            started_utc_ns: 0,
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
    batch.started_utc_ns = clock::utc_ns();
    let mut slices: Vec<[IoSliceMut; 1]> = batch
        .buffers
        .iter_mut()
        .map(|b| [IoSliceMut::new(b)])
        .collect();
    let messages = socket::recvmmsg(
        socket.as_raw_fd(),
        &mut batch.headers,
        slices.iter_mut(),
        MsgFlags::MSG_DONTWAIT,
        None,
    )
    .map_err(std::io::Error::from)?;
    let read = clock::stamp();
    for msg in messages {
        let mut overflow = None;
        let mut arrived = None;
        for c in msg.cmsgs().map_err(std::io::Error::from)? {
            match c {
                ControlMessageOwned::RxqOvfl(n) => overflow = Some(n),
                ControlMessageOwned::ScmTimestampns(t) => {
                    arrived = Some(kernel_stamp(t.tv_sec() * 1_000_000_000 + t.tv_nsec(), read));
                }
                _ => {}
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
        batch.received.push((msg.bytes, peer, overflow, arrived));
    }
    Ok(batch.received.len())
}

/// The kernel's arrival time (`CLOCK_REALTIME`) as a stamp: its monotonic twin is the read's,
/// less the time the datagram waited. A kernel time after the read (the clock was stepped) is
/// taken as the read.
fn kernel_stamp(arrived_utc_ns: i64, read: Stamp) -> Stamp {
    let waited = read.utc_ns.saturating_sub(arrived_utc_ns);
    if waited < 0 {
        return read;
    }
    Stamp {
        utc_ns: arrived_utc_ns,
        mono_ns: read.mono_ns.saturating_sub(waited as u64),
    }
}

/// How the receive thread reads: as data comes, or in windows while the link is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// The last read found the socket empty: wait for the next datagram.
    AsItComes,
    /// The last read took a whole batch: more waits, read again at once.
    AtOnce,
    /// Busy: read what came meanwhile at this instant.
    At(Instant),
}

/// How often the kernel's drop count is read while datagrams come (it is read once more when
/// they stop, and at the end).
const DROP_CHECK: Duration = Duration::from_millis(500);

/// A quiet link's wait once its drop count was read: a day at most (a poll timeout is
/// bounded; waking once a day costs nothing).
const QUIET: Duration = Duration::from_secs(86_400);

/// What one wait of the receive thread ended with.
enum Woken {
    /// The socket has data (or an error to take).
    Readable,
    /// The stop was asked for.
    Stop,
    /// The wait's time ran out.
    Timeout,
}

/// Waits until `socket` is readable (when `for_socket`), `stop` is, or `timeout` passes
/// (`None`: no limit).
fn wait(socket: &UdpSocket, stop: &OwnedFd, for_socket: bool, timeout: Option<Duration>) -> Woken {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut both = [
        PollFd::new(stop.as_fd(), PollFlags::POLLIN),
        PollFd::new(socket.as_fd(), PollFlags::POLLIN),
    ];
    let fds = if for_socket {
        &mut both[..]
    } else {
        &mut both[..1]
    };
    let timeout = match timeout {
        None => PollTimeout::NONE,
        // Rounded up, so a wait never ends just before its instant and spins.
        Some(t) => PollTimeout::from(t.as_micros().div_ceil(1000).min(60_000) as u16),
    };
    match poll(fds, timeout) {
        Ok(0) => Woken::Timeout,
        Ok(_) if fds[0].any() == Some(true) => Woken::Stop,
        Ok(_) => Woken::Readable,
        // EINTR and the like: look again.
        Err(_) => Woken::Timeout,
    }
}

/// The receive thread of one UDP link, until `stop` becomes readable (the daemon's stop), then
/// what the kernel already holds; returns once the pipeline has it all (or is gone).
pub fn run(
    name: String,
    socket: UdpSocket,
    allow: Vec<IpNet>,
    read_window: Duration,
    mut scanner: Scanner,
    stop: OwnedFd,
    #[cfg(feature = "testing")] stall_file: Option<std::path::PathBuf>,
) {
    let local = socket
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    // What was scanned and not yet handed over: reads that took a whole batch add to it.
    let mut pending = scanner.batch();
    let up = LinkChange::Up {
        at: clock::stamp(),
        detail: format!("listening on udp {local}"),
    };
    scanner.input(LinkInput::Change(up), &mut pending);
    if scanner.hand_over(&mut pending).is_err() {
        return;
    }
    let mut batch = Batch::new();
    let mut last_peer: Option<(SocketAddr, Arc<str>)> = None;
    let shared = scanner.shared().clone();
    let check_drops = || {
        if let Some(total) = kernel_drop_count(&socket) {
            shared
                .kernel_drops
                .fetch_max(total as u64, Ordering::Relaxed);
        }
    };
    let mut next_drop_check = Instant::now() + DROP_CHECK;
    let mut stopping = false;
    let mut reading = Reading::AsItComes;
    // This read's allowed datagrams (their index in the batch) and their arrival stamps.
    let mut kept = Vec::with_capacity(BATCH);
    let mut arrivals = Vec::with_capacity(BATCH);
    'link: loop {
        #[cfg(feature = "testing")]
        while stall_file.as_ref().is_some_and(|p| p.exists()) && !stopping {
            // Fault injection for the kernel-drop test: the socket is not read while the file
            // exists, so its buffer overflows.
            std::thread::sleep(Duration::from_millis(20));
        }
        if !stopping {
            let woken = match reading {
                // Quiet: no limit, except one look at the drop count half a second after the
                // last datagram (a drop is otherwise reported with the next datagram).
                Reading::AsItComes => {
                    let until_check = next_drop_check.saturating_duration_since(Instant::now());
                    wait(&socket, &stop, true, Some(until_check))
                }
                Reading::AtOnce => Woken::Readable,
                // Busy: only the stop ends the wait early; what comes meanwhile waits in the
                // socket for the window's read.
                Reading::At(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => wait(&socket, &stop, false, Some(left)),
                    _ => Woken::Readable,
                },
            };
            match woken {
                Woken::Stop => {
                    stopping = true;
                    continue;
                }
                Woken::Timeout if reading == Reading::AsItComes => {
                    check_drops();
                    next_drop_check = Instant::now() + QUIET;
                    continue;
                }
                Woken::Timeout | Woken::Readable => {}
            }
            if Instant::now() >= next_drop_check {
                check_drops();
                next_drop_check = Instant::now() + DROP_CHECK;
            }
        }
        let count = match receive(&socket, &mut batch) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Nothing more waits: what was scanned goes now.
                let scanned = pending.data_inputs > 0 || !pending.changes.is_empty();
                if scanned && scanner.hand_over(&mut pending).is_err() {
                    break 'link;
                }
                if stopping {
                    break;
                }
                // Quiet again: the next datagram wakes the thread, and until it is listed the
                // link holds nothing back.
                reading = Reading::AsItComes;
                shared.reading_since(None);
                next_drop_check = next_drop_check.min(Instant::now() + DROP_CHECK);
                continue;
            }
            Err(e) => {
                // ICMP errors and the like: nothing was received, the socket is still good.
                tracing::debug!(link = %name, error = %e, "recvmmsg");
                continue;
            }
        };
        arrivals.clear();
        kept.clear();
        for (i, &(_, peer, overflow, arrived)) in batch.received[..count].iter().enumerate() {
            // Both counts are the socket's running total: the larger is the latest.
            if let Some(total) = overflow {
                shared
                    .kernel_drops
                    .fetch_max(total as u64, Ordering::Relaxed);
            }
            if !allow.is_empty()
                && !allow
                    .iter()
                    .any(|net| crate::config::network_contains(net, peer.ip()))
            {
                let denied = LinkChange::Denied {
                    peer: peer.to_string(),
                };
                scanner.input(LinkInput::Change(denied), &mut pending);
                continue;
            }
            kept.push(i);
            arrivals.push(arrived.unwrap_or_else(clock::stamp));
        }
        // Listed before they are scanned, so the watermark waits for them.
        shared.list(&mut arrivals);
        for (&i, at) in kept.iter().zip(&arrivals) {
            let (n, peer, _, _) = batch.received[i];
            let src_json = match &last_peer {
                Some((p, json)) if *p == peer => json.clone(),
                _ => {
                    let json: Arc<str> = json_string(&peer.to_string()).into();
                    last_peer = Some((peer, json.clone()));
                    json
                }
            };
            tracing::trace!(link = %name, bytes = n, %peer, "datagram");
            scanner.datagram(*at, &src_json, batch.bytes(i), &mut pending);
        }
        // A read that emptied the socket goes now; so does a batch grown large.
        let goes_now = count < BATCH || Scanner::is_full(&pending);
        if goes_now && scanner.hand_over(&mut pending).is_err() {
            break 'link;
        }
        if !stopping {
            // What the pipeline may rely on for what is still unread (set once this read's
            // datagrams are listed, or the floor would be raised past their stamps).
            reading = if count == BATCH {
                // More waits: the socket is first in, first out, so what is left arrived no
                // earlier than the last datagram read, however long the backlog takes to scan.
                shared.reading_since(batch.received[count - 1].3.map(|at| at.utc_ns));
                Reading::AtOnce
            } else if read_window.is_zero() {
                shared.reading_since(None);
                Reading::AsItComes
            } else {
                // This read emptied the socket: whatever is in it at the next window arrived
                // after the read began.
                shared.reading_since(Some(batch.started_utc_ns));
                Reading::At(Instant::now() + read_window)
            };
        }
    }
    shared.reading_since(None);
    // What the kernel dropped up to the end is counted too.
    check_drops();
}
