//! A link's scanner: records what the link reads (receipt lines, monitor input, counts) and
//! hands it to the pipeline in batches, and the link's valid frames to the forward outputs
//! ([`Taps::offer`], which never waits) before each batch goes. Scanning is the only per-byte
//! work, so it runs on the link's own OS thread and a flooded link uses its own share of the
//! machine, never the pipeline's, the alert timer's or another link's: a UDP link's receive
//! thread scans what it reads itself (its socket buffer is its queue, [`super::udp`]); a
//! stream link's receive task queues its reads for a scanner thread of its own ([`spawn`]).

use super::forward::Taps;
use super::input::LinkInput;
use super::link_queue::LinkShared;
use crate::link::Stamp;
use crate::pipeline::LinkBatch;
use crate::recorder::{LinkCounters, LinkRecorder, Output};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// A batch is handed over once it holds this many bytes of output or inputs, whichever first,
/// or when there is nothing more to read.
const MAX_BATCH_BYTES: usize = 1 << 20;
const MAX_BATCH_INPUTS: usize = 1024;

/// The pipeline is gone (the daemon is stopping): nothing more can be handed over.
#[derive(Debug)]
pub struct PipelineGone;

/// One link's recorder with where its batches and frames go.
pub struct Scanner {
    recorder: LinkRecorder,
    shared: Arc<LinkShared>,
    to_pipeline: mpsc::Sender<LinkBatch>,
    taps: Taps,
}

impl Scanner {
    pub fn new(
        recorder: LinkRecorder,
        shared: Arc<LinkShared>,
        to_pipeline: mpsc::Sender<LinkBatch>,
        taps: Taps,
    ) -> Scanner {
        Scanner {
            recorder,
            shared,
            to_pipeline,
            taps,
        }
    }

    pub fn shared(&self) -> &Arc<LinkShared> {
        &self.shared
    }

    /// An empty batch of this link.
    pub fn batch(&self) -> LinkBatch {
        LinkBatch {
            link: self.recorder.link(),
            out: Output::default(),
            data_inputs: 0,
            changes: Vec::new(),
            counters: LinkCounters::default(),
            sequences: BTreeMap::new(),
        }
    }

    /// Whether `batch` should go now rather than take more.
    pub fn is_full(batch: &LinkBatch) -> bool {
        batch.out.bytes() >= MAX_BATCH_BYTES || batch.data_inputs >= MAX_BATCH_INPUTS
    }

    /// Scans one UDP datagram into the batch.
    pub fn datagram(&mut self, at: Stamp, src_json: &str, bytes: &[u8], batch: &mut LinkBatch) {
        self.recorder.datagram(
            at.utc_ns,
            Some(at.mono_ns),
            Some(src_json),
            bytes,
            &mut batch.out,
        );
        batch.data_inputs += 1;
    }

    /// Scans one queued input into the batch; returns the queued bytes it accounted for.
    pub fn input(&mut self, input: LinkInput, batch: &mut LinkBatch) -> u64 {
        let recorder = &mut self.recorder;
        match input {
            LinkInput::Stream {
                at,
                conn,
                src_json,
                bytes,
            } => {
                recorder.stream_on(
                    conn,
                    at.utc_ns,
                    Some(at.mono_ns),
                    src_json.as_deref(),
                    &bytes,
                    &mut batch.out,
                );
                batch.data_inputs += 1;
                bytes.len() as u64
            }
            LinkInput::StreamEnd { at, conn } => {
                recorder.stream_end_on(conn, at.utc_ns, Some(at.mono_ns), &mut batch.out);
                batch.data_inputs += 1;
                0
            }
            LinkInput::Change(change) => {
                if let crate::link::LinkChange::Down { at, .. } = &change {
                    recorder.stream_end(at.utc_ns, Some(at.mono_ns), &mut batch.out);
                }
                batch.changes.push(change);
                0
            }
        }
    }

    /// Hands what `batch` holds over, leaving it empty: its frames to the forward outputs, then
    /// the batch with the link's counts to the pipeline, waiting while the pipeline is behind.
    pub fn hand_over(&mut self, batch: &mut LinkBatch) -> Result<(), PipelineGone> {
        let mut batch = std::mem::replace(batch, self.batch());
        let copies = std::mem::take(&mut batch.out.frames);
        self.taps.offer(&copies);
        batch.counters = self.recorder.counters().clone();
        for ((_, sysid, _), stats) in self.recorder.sequences().stats() {
            batch.sequences.entry(sysid).or_default().add(stats);
        }
        self.to_pipeline
            .blocking_send(batch)
            .map_err(|_| PipelineGone)
    }
}

/// Starts the scanner thread of a stream link (serial, TCP), fed by its queue. It ends when the
/// queue is closed and empty (its receive task ended) or the pipeline is gone.
pub fn spawn(
    mut scanner: Scanner,
    name: &str,
    mut queue: mpsc::Receiver<LinkInput>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("scan-{name}"))
        .spawn(move || {
            while let Some(first) = queue.blocking_recv() {
                let mut batch = scanner.batch();
                let mut taken_bytes = 0u64;
                let mut next = Some(first);
                while let Some(input) = next.take() {
                    taken_bytes += scanner.input(input, &mut batch);
                    if !Scanner::is_full(&batch) {
                        next = queue.try_recv().ok();
                    }
                }
                scanner.shared.dequeued(taken_bytes);
                if scanner.hand_over(&mut batch).is_err() {
                    break;
                }
            }
        })
}
