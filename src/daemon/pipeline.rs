//! The pipeline task: the one owner of the recorder (and the monitors). It takes link input,
//! turns it into receipt lines and hands them to the writers without ever waiting on a disk.
//! Under load it batches naturally: everything already queued goes out in one pass.

use super::input::LinkInput;
use crate::recorder::{Output, Recorder};
use crate::sink::writer::Batch;
use crate::sink::WriterHandle;
use std::sync::Arc;
use tokio::sync::mpsc;

/// How many inputs one pass takes before handing output to the writers.
const MAX_INPUTS_PER_PASS: usize = 512;

pub struct Sinks {
    pub receive: WriterHandle,
    pub tlog: Option<WriterHandle>,
}

/// Counters the pipeline keeps beside the recorder's.
#[derive(Debug, Default, Clone)]
pub struct LinkStatus {
    pub up: Option<bool>,
    pub denied: u64,
    pub last_change_detail: String,
}

pub struct Pipeline {
    pub recorder: Recorder,
    pub sinks: Sinks,
    pub links: Vec<LinkStatus>,
}

impl Pipeline {
    fn handle(&mut self, input: LinkInput, out: &mut Output) {
        match input {
            LinkInput::Datagram {
                link,
                at,
                src_json,
                bytes,
            } => self.recorder.datagram(
                link,
                at.utc_ns,
                Some(at.mono_ns),
                Some(&src_json),
                &bytes,
                out,
            ),
            LinkInput::Stream { link, at, bytes } => {
                self.recorder
                    .stream(link, at.utc_ns, Some(at.mono_ns), None, &bytes, out)
            }
            LinkInput::Up { link, detail, .. } => {
                tracing::info!(link = %self.recorder.link_name(link), %detail, "link up");
                self.links[link as usize].up = Some(true);
                self.links[link as usize].last_change_detail = detail;
            }
            LinkInput::Down { link, at, reason } => {
                self.recorder
                    .stream_end(link, at.utc_ns, Some(at.mono_ns), out);
                tracing::warn!(link = %self.recorder.link_name(link), %reason, "link down");
                self.links[link as usize].up = Some(false);
                self.links[link as usize].last_change_detail = reason;
            }
            LinkInput::Denied { link, peer, .. } => {
                let status = &mut self.links[link as usize];
                if status.denied == 0 {
                    tracing::warn!(link = %self.recorder.link_name(link), %peer, "datagram from outside the allow-list dropped (further ones counted only)");
                }
                status.denied += 1;
            }
        }
    }

    fn flush(&mut self, out: &mut Output) {
        for day in out.batches.drain(..) {
            if day.receipts == 0 {
                continue;
            }
            let last_utc_ns = day.last_utc_ns;
            if let Some(tlog) = &self.sinks.tlog {
                tlog.offer(Batch {
                    day: day.day,
                    first_utc_ns: day.first_utc_ns,
                    last_utc_ns,
                    lines: day.receipts,
                    bytes: day.tlog,
                });
            }
            self.sinks.receive.offer(Batch {
                day: day.day,
                first_utc_ns: day.first_utc_ns,
                last_utc_ns,
                lines: day.receipts,
                bytes: day.jsonl,
            });
        }
        out.observations.clear();
    }

    /// Runs until every link task has ended (their senders dropped), then flushes.
    pub async fn run(
        mut self,
        mut rx: mpsc::Receiver<LinkInput>,
        reopen: Arc<tokio::sync::Notify>,
    ) -> Pipeline {
        let mut out = Output::default();
        loop {
            tokio::select! {
                biased;
                _ = reopen.notified() => {
                    self.flush(&mut out);
                    self.sinks.receive.reopen();
                    if let Some(t) = &self.sinks.tlog { t.reopen(); }
                    tracing::info!("SIGHUP: files reopened");
                }
                input = rx.recv() => {
                    let Some(input) = input else { break };
                    self.handle(input, &mut out);
                    for _ in 1..MAX_INPUTS_PER_PASS {
                        match rx.try_recv() {
                            Ok(input) => self.handle(input, &mut out),
                            Err(_) => break,
                        }
                    }
                    self.flush(&mut out);
                }
            }
        }
        self.flush(&mut out);
        self
    }
}
