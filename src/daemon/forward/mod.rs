//! Forward outputs (`[[forward]]`): read-only copies of the valid frames for ground stations.
//!
//! Each link's scanner hands every output the frames its filter takes ([`Taps::offer`]), byte
//! for byte as received, into that output's queue: bounded in bytes, and never waited on, so a
//! slow or dead output drops frames for itself only (counted, `queue_full`) and never slows
//! receiving, the receive log or the alerts. Each output's task sends from its queue: [`udp`]
//! a datagram per frame to one address, [`tcp`] the byte stream to every peer of a listener
//! (each peer with its own bounded queue). The outputs run on a thread and runtime of their
//! own. Whatever a ground station sends back is read and discarded, and counted: nothing
//! reaches a link, and the receiver never transmits to a vehicle.

pub mod tcp;
pub mod udp;

use crate::config::{ForwardFilter, ForwardOutput, ForwardSettings};
use crate::recorder::FrameCopies;
use crate::status::ForwardStats;
use anyhow::Context;
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// Chunks an output's queue holds at most, whatever their size (the byte bound usually first).
const MAX_QUEUED_CHUNKS: usize = 4096;

/// Whole frames for an output, one after another, with where each ends.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub bytes: Bytes,
    pub ends: Arc<[u32]>,
}

impl Chunk {
    pub fn frames(&self) -> u64 {
        self.ends.len() as u64
    }

    /// Each frame's bytes, in order.
    pub fn each_frame(&self) -> impl Iterator<Item = Bytes> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&end| {
            let frame = self.bytes.slice(start..end as usize);
            start = end as usize;
            frame
        })
    }
}

/// The scanners' end of a queue bounded in bytes: offering never waits.
#[derive(Debug, Clone)]
pub struct ChunkSender {
    tx: mpsc::Sender<Chunk>,
    queued: Arc<AtomicU64>,
    limit: u64,
}

/// The output's end.
#[derive(Debug)]
pub struct ChunkReceiver {
    rx: mpsc::Receiver<Chunk>,
    queued: Arc<AtomicU64>,
}

pub fn chunk_queue(limit_bytes: u64) -> (ChunkSender, ChunkReceiver) {
    let (tx, rx) = mpsc::channel(MAX_QUEUED_CHUNKS);
    let queued = Arc::new(AtomicU64::new(0));
    (
        ChunkSender {
            tx,
            queued: queued.clone(),
            limit: limit_bytes,
        },
        ChunkReceiver { rx, queued },
    )
}

impl ChunkSender {
    /// Queues the chunk, or refuses it (false) when it does not fit. A chunk larger than the
    /// whole bound is taken when the queue is empty.
    pub fn offer(&self, chunk: Chunk) -> bool {
        let len = chunk.bytes.len() as u64;
        let queued = self.queued.load(Ordering::Relaxed);
        if queued > 0 && queued + len > self.limit {
            return false;
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        if self.tx.try_send(chunk).is_err() {
            self.queued.fetch_sub(len, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// The output (or peer) is gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl ChunkReceiver {
    /// The next chunk; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Chunk> {
        let chunk = self.rx.recv().await?;
        self.queued
            .fetch_sub(chunk.bytes.len() as u64, Ordering::Relaxed);
        Some(chunk)
    }
}

/// One output as the scanners see it.
#[derive(Debug, Clone)]
struct Tap {
    filter: ForwardFilter,
    queue: ChunkSender,
    stats: Arc<ForwardStats>,
    /// A TCP listener: frames go nowhere while no peer is connected, so none are queued.
    needs_peers: bool,
}

/// The outputs a link's scanner feeds.
#[derive(Debug, Clone, Default)]
pub struct Taps(Vec<Tap>);

impl Taps {
    /// The outputs whose filters take any frame of `link`.
    pub fn for_link(&self, link: crate::link::LinkId) -> Taps {
        Taps(
            self.0
                .iter()
                .filter(|t| t.filter.takes_link(link))
                .cloned()
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Offers one batch of a link's frames to every output: what its filter takes, queued
    /// without waiting, or dropped for that output and counted.
    pub fn offer(&self, copies: &FrameCopies) {
        if copies.is_empty() {
            return;
        }
        // The whole batch, built once and shared by the outputs that take every frame.
        let mut whole: Option<Chunk> = None;
        for tap in &self.0 {
            let chunk = if tap.filter.takes_every_frame() {
                whole
                    .get_or_insert_with(|| Chunk {
                        bytes: Bytes::copy_from_slice(&copies.bytes),
                        ends: copies.frames.iter().map(|f| f.end).collect(),
                    })
                    .clone()
            } else {
                let mut bytes = Vec::new();
                let mut ends = Vec::new();
                for (frame, info) in copies.iter() {
                    if tap.filter.takes(info.sysid, info.msgid) {
                        bytes.extend_from_slice(frame);
                        ends.push(bytes.len() as u32);
                    }
                }
                if ends.is_empty() {
                    continue;
                }
                Chunk {
                    bytes: Bytes::from(bytes),
                    ends: ends.into(),
                }
            };
            let n = chunk.frames();
            tap.stats.frames.fetch_add(n, Ordering::Relaxed);
            if tap.needs_peers && tap.stats.peers.load(Ordering::Relaxed) == 0 {
                continue;
            }
            if !tap.queue.offer(chunk) {
                tap.stats.dropped_queue_full.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}

/// The running outputs: what the scanners feed, the counters for `/status`, and when they are
/// done at the stop.
pub struct Forwards {
    pub taps: Taps,
    pub stats: Vec<Arc<ForwardStats>>,
    /// Fires once every output has sent what it held at the stop and ended.
    pub done: oneshot::Receiver<()>,
}

/// Binds every TCP listener (a port in use is a start-up error naming the output) and starts
/// every output's task, on a thread and runtime of their own ("forward"): sending to ground
/// stations never takes the receive tasks' or the pipeline's runtime time.
pub fn start(
    settings: &[ForwardSettings],
    shutdown: &watch::Receiver<bool>,
) -> anyhow::Result<Forwards> {
    let (done_tx, done) = oneshot::channel();
    if settings.is_empty() {
        let _ = done_tx.send(());
        return Ok(Forwards {
            taps: Taps::default(),
            stats: Vec::new(),
            done,
        });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("forward")
        .build()
        .context("cannot start the forward outputs' runtime")?;
    let spawned = {
        // Sockets register with, and tasks are spawned on, the forwards' own runtime.
        let _inside = runtime.enter();
        spawn_outputs(settings, shutdown)
    };
    let (forwards, tasks) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            // Dropping a runtime may block, which an async caller must not.
            runtime.shutdown_background();
            return Err(e);
        }
    };
    std::thread::Builder::new()
        .name("forward".to_string())
        .spawn(move || {
            runtime.block_on(futures_util::future::join_all(tasks));
            let _ = done_tx.send(());
        })
        .context("cannot start the forward outputs' thread")?;
    Ok(Forwards {
        taps: forwards.0,
        stats: forwards.1,
        done,
    })
}

type Spawned = ((Taps, Vec<Arc<ForwardStats>>), Vec<JoinHandle<()>>);

/// Every output's task on the current runtime, with the taps that feed them.
fn spawn_outputs(
    settings: &[ForwardSettings],
    shutdown: &watch::Receiver<bool>,
) -> anyhow::Result<Spawned> {
    let (mut taps, mut stats_all, mut tasks) = (Taps::default(), Vec::new(), Vec::new());
    for f in settings {
        let (queue, rx) = chunk_queue(f.queue_bytes);
        let (kind, address, needs_peers) = match &f.output {
            ForwardOutput::Udp { to } => ("udp", to.to_string(), false),
            ForwardOutput::TcpListen { bind, .. } => ("tcp_listen", bind.to_string(), true),
        };
        let stats = Arc::new(ForwardStats {
            name: f.name.clone(),
            kind,
            address,
            ..Default::default()
        });
        let task = match &f.output {
            ForwardOutput::Udp { to } => {
                tokio::spawn(udp::run(stats.clone(), to.clone(), rx, shutdown.clone()))
            }
            ForwardOutput::TcpListen {
                bind,
                allow,
                max_peers,
            } => {
                let listener = tcp::bind(*bind)
                    .with_context(|| format!("forward {}: cannot listen on tcp {bind}", f.name))?;
                let local = listener
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                tracing::info!(forward = %f.name, %local, "forward listening");
                tokio::spawn(tcp::run(
                    stats.clone(),
                    listener,
                    tcp::PeerRules {
                        allow: allow.clone(),
                        max_peers: *max_peers,
                        queue_bytes: f.queue_bytes,
                    },
                    rx,
                    shutdown.clone(),
                ))
            }
        };
        taps.0.push(Tap {
            filter: f.filter.clone(),
            queue,
            stats: stats.clone(),
            needs_peers,
        });
        tasks.push(task);
        stats_all.push(stats);
    }
    Ok(((taps, stats_all), tasks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{LinkRecorder, Output, RecorderSettings};
    use crate::wire::build::heartbeat_v2 as hb;

    fn copies(frames: &[Vec<u8>]) -> FrameCopies {
        let mut r = LinkRecorder::new(
            crate::link::LinkId::FIRST,
            "l",
            RecorderSettings {
                capture_frames: true,
                ..Default::default()
            },
        );
        let mut out = Output::default();
        for f in frames {
            r.datagram(1, None, None, f, &mut out);
        }
        out.frames
    }

    fn tap(filter: ForwardFilter, limit: u64) -> (Taps, ChunkReceiver, Arc<ForwardStats>) {
        let (queue, rx) = chunk_queue(limit);
        let stats = Arc::new(ForwardStats::default());
        let taps = Taps(vec![Tap {
            filter,
            queue,
            stats: stats.clone(),
            needs_peers: false,
        }]);
        (taps, rx, stats)
    }

    #[tokio::test]
    async fn a_full_queue_drops_for_its_output_only_and_counts_the_frames() {
        let frames: Vec<Vec<u8>> = (0..4).map(|s| hb(7, s)).collect();
        let batch = copies(&frames);
        let len = batch.bytes.len() as u64;
        let (taps, mut rx, stats) = tap(ForwardFilter::default(), len + 1);
        taps.offer(&batch);
        // The second batch does not fit beside the first: dropped, counted, nothing waits.
        taps.offer(&batch);
        assert_eq!(stats.frames.load(Ordering::Relaxed), 8);
        assert_eq!(stats.dropped_queue_full.load(Ordering::Relaxed), 4);
        let chunk = rx.recv().await.unwrap();
        let got: Vec<Vec<u8>> = chunk.each_frame().map(|b| b.to_vec()).collect();
        assert_eq!(got, frames, "byte for byte, in order");
        // Taken: there is room again.
        taps.offer(&batch);
        assert_eq!(rx.recv().await.unwrap().frames(), 4);
        assert_eq!(stats.dropped_queue_full.load(Ordering::Relaxed), 4);
    }

    #[tokio::test]
    async fn a_chunk_larger_than_the_bound_passes_an_empty_queue() {
        let batch = copies(&[hb(1, 1), hb(1, 2)]);
        let (taps, mut rx, stats) = tap(ForwardFilter::default(), 4);
        taps.offer(&batch);
        assert_eq!(rx.recv().await.unwrap().frames(), 2);
        assert_eq!(stats.dropped_queue_full.load(Ordering::Relaxed), 0);
    }
}
