//! The receiver's links: for each configured link, its scanner (which records what the link
//! reads and hands batches to the pipeline and frames to the forward outputs) and what reads the
//! transport: a UDP link's receive thread, which scans what it reads; for a serial, TCP client
//! or server link, or an SBS feed (read as a TCP client is), a task that queues its reads for
//! a scanner thread.
//! Every socket binds before anything runs, so a port in use is a clear, immediate error
//! naming the link. Stopped in data order: the reading tasks first, then the scanners, which
//! finish what is queued.

use super::forward::Taps;
use super::link_queue::{link_queue, LinkSender, LinkShared};
use super::scan::Scanner;
use super::{scan, serial, tcp_client, tcp_listen, udp};
use crate::config::{Config, LinkConfig, LinkTransport};
use crate::link::LinkId;
use crate::pipeline::LinkBatch;
use crate::recorder::{LinkRecorder, RecorderSettings};
use crate::service::stop::Stop;
use anyhow::Context;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub struct Links {
    /// Each link's queue counters, in config order (the pipeline reads them).
    pub shares: Vec<Arc<LinkShared>>,
    readers: Vec<JoinHandle<()>>,
    scanners: Vec<std::thread::JoinHandle<()>>,
}

impl Links {
    /// Starts every link of `config`; its scanners send to `to_pipeline` and hand frames to the
    /// forward outputs among `taps` that take the link.
    pub fn start(
        config: &Config,
        taps: &Taps,
        to_pipeline: mpsc::Sender<LinkBatch>,
        shutdown: &watch::Receiver<bool>,
    ) -> anyhow::Result<Links> {
        let recorder_settings = RecorderSettings {
            fields_for: config.fields_for.clone(),
            signing_keys: config.signing.keys.clone(),
            reject_bad_signatures: config.signing.reject_bad,
            capture_tlog: config.tlog,
            capture_frames: false,
            sbs: false,
        };
        let mut links = Links {
            shares: Vec::new(),
            readers: Vec::new(),
            scanners: Vec::new(),
        };
        for (id, link) in LinkId::all(config.links.len()).zip(&config.links) {
            let shared = LinkShared::new(link.queue_bytes);
            let taps = taps.for_link(id);
            let recorder = LinkRecorder::new(
                id,
                &link.name,
                RecorderSettings {
                    capture_frames: !taps.is_empty(),
                    sbs: matches!(link.kind, LinkTransport::Sbs { .. }),
                    ..recorder_settings.clone()
                },
            );
            let scanner = Scanner::new(recorder, shared.clone(), to_pipeline.clone(), taps);
            links.shares.push(shared.clone());
            if let LinkTransport::Udp {
                bind,
                allow,
                rcvbuf_bytes,
                read_window_ms,
            } = &link.kind
            {
                // Read and scanned in one thread: the socket buffer is its queue.
                let socket = UdpLink {
                    bind: *bind,
                    allow: allow.clone(),
                    rcvbuf_bytes: *rcvbuf_bytes,
                    read_window: std::time::Duration::from_millis(*read_window_ms),
                };
                links
                    .readers
                    .push(spawn_udp(&link.name, socket, scanner, shutdown.clone())?);
                continue;
            }
            let (queue, queue_rx) = link_queue(shared);
            links.scanners.push(
                scan::spawn(scanner, &link.name, queue_rx)
                    .with_context(|| format!("link {}: cannot start its scanner", link.name))?,
            );
            links
                .readers
                .push(spawn_reader(link, queue, shutdown.clone())?);
        }
        Ok(links)
    }

    /// Waits for the reading tasks (shutdown already signalled), then for the scanners to hand
    /// over what was queued.
    pub async fn stop(self, stop: &mut Stop) {
        stop.drain("links", futures_util::future::join_all(self.readers))
            .await;
        stop.drain(
            "scanners",
            futures_util::future::join_all(
                self.scanners
                    .into_iter()
                    .map(|scanner| tokio::task::spawn_blocking(move || scanner.join())),
            ),
        )
        .await;
    }
}

/// The task that reads `link`'s transport into `queue` until shutdown. Sockets are bound here,
/// before the task runs.
fn spawn_reader(
    link: &LinkConfig,
    queue: LinkSender,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<JoinHandle<()>> {
    let name = link.name.clone();
    Ok(match &link.kind {
        LinkTransport::Udp { .. } => unreachable!("UDP links are read by spawn_udp"),
        LinkTransport::Serial {
            path,
            baud,
            flow_control,
        } => {
            let settings = serial::SerialSettings {
                path: path.clone(),
                baud: baud.clone(),
                flow_control: *flow_control,
            };
            tokio::spawn(serial::run(name, settings, queue, shutdown))
        }
        // An SBS feed is read as a TCP client link is (its recorder reads the lines).
        LinkTransport::TcpClient { peer } | LinkTransport::Sbs { peer } => {
            tracing::info!(link = %name, %peer, "connecting");
            tokio::spawn(tcp_client::run(name, peer.clone(), queue, shutdown))
        }
        LinkTransport::TcpListen {
            bind,
            allow,
            max_peers,
        } => {
            let listener = tcp_listen::bind(*bind)
                .with_context(|| format!("link {name}: cannot listen on tcp {bind}"))?;
            let local = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default();
            tracing::info!(link = %name, %local, "listening");
            tokio::spawn(tcp_listen::run(
                name,
                listener,
                allow.clone(),
                *max_peers,
                queue,
                shutdown,
            ))
        }
    })
}

/// A UDP link's settings, from its `[[link]]`.
struct UdpLink {
    bind: std::net::SocketAddr,
    allow: Vec<ipnet::IpNet>,
    rcvbuf_bytes: u64,
    read_window: std::time::Duration,
}

/// The receive thread of a UDP link, which scans what it reads, until shutdown; the returned
/// task ends with it. The socket is bound here, before anything runs.
fn spawn_udp(
    name: &str,
    link: UdpLink,
    scanner: Scanner,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<JoinHandle<()>> {
    let name = name.to_string();
    let UdpLink {
        bind,
        allow,
        rcvbuf_bytes,
        read_window,
    } = link;
    let (socket, rcvbuf) = udp::bind(bind, rcvbuf_bytes)
        .with_context(|| format!("link {name}: cannot listen on udp {bind}"))?;
    let local = socket
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!(link = %name, %local, rcvbuf_bytes = rcvbuf, "listening");
    if (rcvbuf as u64) < rcvbuf_bytes {
        tracing::warn!(
            link = %name,
            asked = rcvbuf_bytes,
            got = rcvbuf,
            "the kernel capped the socket receive buffer (net.core.rmem_max); bursts past it are dropped by the kernel and counted"
        );
    }
    // The receive thread waits in poll(2) on its socket and this stop socket, which a
    // task writes to when the daemon stops; the returned handle ends with the thread.
    let (stop_tx, stop_rx) = std::os::unix::net::UnixDatagram::pair()
        .with_context(|| format!("link {name}: cannot make its stop socket"))?;
    let mut shutdown = shutdown;
    tokio::spawn(async move {
        let _ = shutdown.changed().await;
        let _ = stop_tx.send(&[1]);
    });
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
    #[cfg(feature = "testing")]
    let stall = std::env::var_os("FOXBORNE_TEST_STALL_UDP_FILE").map(std::path::PathBuf::from);
    std::thread::Builder::new()
        .name(format!("udp-{name}"))
        .spawn(move || {
            udp::run(
                name,
                socket,
                allow,
                read_window,
                scanner,
                stop_rx.into(),
                #[cfg(feature = "testing")]
                stall,
            );
            let _ = ended_tx.send(());
        })
        .context("cannot start a link's receive thread")?;
    Ok(tokio::spawn(async move {
        let _ = ended_rx.await;
    }))
}
