//! A link's scanner: its own OS thread, taking the link's queue and handing the pipeline what it
//! made of it (receipt lines, monitor input, counts) in batches. Scanning is the only per-byte
//! work, so with one thread per link a flooded link uses its own share of the machine and never
//! the pipeline's, the alert timer's or another link's. The link's valid frames are handed to
//! the forward outputs from here too ([`Taps::offer`], which never waits), before the batch goes
//! to the pipeline.

use super::forward::Taps;
use super::input::LinkInput;
use super::link_queue::LinkShared;
use crate::pipeline::LinkBatch;
use crate::recorder::{LinkCounters, LinkRecorder, Output};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;

/// A batch is handed over once it holds this many bytes of output or inputs, whichever first,
/// or when the queue is empty.
const MAX_BATCH_BYTES: usize = 1 << 20;
const MAX_BATCH_INPUTS: usize = 1024;

/// Starts the scanner thread of one link. It ends when the link's queue is closed and empty
/// (its receive task ended) or the pipeline is gone.
pub fn spawn(
    mut recorder: LinkRecorder,
    name: &str,
    mut queue: mpsc::Receiver<LinkInput>,
    shared: Arc<LinkShared>,
    to_pipeline: mpsc::Sender<LinkBatch>,
    taps: Taps,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("scan-{name}"))
        .spawn(move || {
            while let Some(first) = queue.blocking_recv() {
                let mut batch = LinkBatch {
                    link: recorder.link(),
                    out: Output::default(),
                    data_inputs: 0,
                    changes: Vec::new(),
                    counters: LinkCounters::default(),
                    sequences: BTreeMap::new(),
                };
                let mut taken_bytes = 0u64;
                let mut next = Some(first);
                while let Some(input) = next.take() {
                    taken_bytes += handle(&mut recorder, input, &mut batch);
                    if batch.out.bytes() < MAX_BATCH_BYTES && batch.data_inputs < MAX_BATCH_INPUTS {
                        next = queue.try_recv().ok();
                    }
                }
                shared.dequeued(taken_bytes);
                let copies = std::mem::take(&mut batch.out.frames);
                taps.offer(&copies);
                batch.counters = recorder.counters().clone();
                for ((_, sysid, _), stats) in recorder.sequences().stats() {
                    batch.sequences.entry(sysid).or_default().add(stats);
                }
                if to_pipeline.blocking_send(batch).is_err() {
                    break;
                }
            }
        })
}

/// Scans one input into the batch; returns the queued bytes it accounted for.
fn handle(recorder: &mut LinkRecorder, input: LinkInput, batch: &mut LinkBatch) -> u64 {
    match input {
        LinkInput::Datagrams(datagrams) => {
            let mut bytes = 0;
            for d in &datagrams {
                recorder.datagram(
                    d.at.utc_ns,
                    Some(d.at.mono_ns),
                    Some(&d.src_json),
                    &d.bytes,
                    &mut batch.out,
                );
                bytes += d.bytes.len() as u64;
            }
            batch.data_inputs += datagrams.len();
            bytes
        }
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
