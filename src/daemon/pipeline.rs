//! The pipeline task: the thin shell around [`crate::pipeline::PipelineCore`]. It reads the
//! world (the clock, the links' in-flight stamps and drop counters, the kernel clock, the
//! writers' and webhooks' counters), hands it to the core, and carries out what the core
//! returns: lines to the writers (held a little so each writer wakes once for several passes,
//! [`super::held_lines`], and never waiting on a disk), events to the sinks, the status
//! snapshot, systemd's status and watchdog. It sleeps until the monitors' next deadline, so a
//! telemetry_gap opens live, when its deadline passes; and since no link is scanned here, no
//! link's input can delay the alert timer or the watchdog ping. While batches come often it
//! takes them at a pace ([`PASS_PACE`]) rather than as each comes.

use super::held_lines::HeldLines;
use super::kernel_clock;
use super::link_queue::LinkShared;
use crate::clock;
use crate::monitor::Event;
use crate::pipeline::{
    Action, Advance, Housekeeping, LinkBatch, Note, PipelineCore, Stream, WriterDrops, HOUSEKEEPING,
};
use crate::service::events::EventSink;
use crate::service::notify::Notifier;
use crate::sink::WriterHandle;
use crate::status::{StatusSnapshot, StreamSnapshot, WebhookSnapshot};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch, Notify};

/// How many batches one pass takes before judging and polling.
const MAX_BATCHES_PER_PASS: usize = 64;

/// While batches come more often than this (a pass took more than one, or came within half
/// this of the last), the loop waits this long after a pass (or to the monitors' next
/// deadline, if sooner) before it takes more: the links' batches meanwhile wait in the queue,
/// and a link that hands one over does not wake a pipeline that is not waiting on the queue.
/// So the thread wakes this often instead of once for each link's read window; frames are
/// still forwarded at each link's read, and an alert's deadline is still met on time. Batches
/// that come this far apart anyway (one UDP link at its default window) are taken as they
/// come: a wait would only add a wake-up. A pass that took a full [`MAX_BATCHES_PER_PASS`] is
/// behind, so it goes on at once.
pub const PASS_PACE: Duration = Duration::from_millis(20);

pub struct Sinks {
    pub receive: WriterHandle,
    pub tlog: Option<WriterHandle>,
    /// The SBS feeds' traffic log, when a link is one.
    pub traffic: Option<WriterHandle>,
    pub events: EventSink,
}

impl Sinks {
    /// The writer of a stream of lines, if this configuration writes it.
    fn writer(&self, stream: Stream) -> Option<&WriterHandle> {
        match stream {
            Stream::Receive => Some(&self.receive),
            Stream::Tlog => self.tlog.as_ref(),
            Stream::Traffic => self.traffic.as_ref(),
        }
    }

    /// Every writer, with the stream of lines it takes (`None`: the events file, whose lines
    /// are not held).
    fn writers(&self) -> impl Iterator<Item = (Option<Stream>, &WriterHandle)> {
        [
            (Some(Stream::Receive), Some(&self.receive)),
            (Some(Stream::Tlog), self.tlog.as_ref()),
            (Some(Stream::Traffic), self.traffic.as_ref()),
            (None, Some(&self.events.file)),
        ]
        .into_iter()
        .filter_map(|(stream, writer)| Some((stream, writer?)))
    }
}

pub struct Pipeline {
    pub core: PipelineCore,
    pub sinks: Sinks,
    /// Each link's queue counters, in config order.
    pub links: Vec<Arc<LinkShared>>,
    /// Where the status snapshot is published for `/status`, `/metrics` and the `status` verb.
    pub published: watch::Sender<Arc<StatusSnapshot>>,
    /// The service's STATUS= and WATCHDOG=1, sent from this loop (a wedged pipeline stops the
    /// pings).
    pub notifier: Notifier,
    /// Lines on their way to the writers.
    pub held: HeldLines,
}

impl Pipeline {
    /// Scanned input into the monitors. That the link's input is delivered counts at once
    /// (the pass's watermark must not wait for it); the rest is carried out with the pass's
    /// [`advance`](Self::advance).
    fn take(&mut self, batch: LinkBatch, pass: &mut Vec<Action>) {
        for action in self.core.take(batch) {
            match action {
                Action::Delivered { .. } => self.carry_out(vec![action]),
                _ => pass.push(action),
            }
        }
    }

    /// Judges up to the watermark, then carries out the pass's actions in order.
    fn advance(&mut self, mut pass: Vec<Action>) {
        let now_ns = clock::utc_ns();
        let oldest: Vec<Option<i64>> = self
            .links
            .iter()
            .map(|l| l.oldest_in_flight(now_ns))
            .collect();
        let dropped: Vec<u64> = self.links.iter().map(|l| l.dropped()).collect();
        pass.extend(self.core.advance(Advance {
            now_ns,
            oldest_in_flight: &oldest,
            dropped: &dropped,
        }));
        self.carry_out(pass);
    }

    fn housekeeping(&mut self) {
        let tick = Housekeeping {
            now_ns: clock::utc_ns(),
            kernel_clock: kernel_clock::read().map_err(|errno| errno as i32),
            link_drops: self
                .links
                .iter()
                .map(|l| {
                    (
                        l.overload_drops.load(Ordering::Relaxed),
                        l.kernel_drops.load(Ordering::Relaxed),
                    )
                })
                .collect(),
            streams: self.stream_snapshots(),
            writer_drops: self
                .sinks
                .writers()
                .filter_map(|(_, w)| {
                    Some(WriterDrops {
                        stream: w.name().to_string(),
                        dropped: w.take_drops()?,
                        reason: w.stats.last_error.lock().expect("not poisoned").clone(),
                    })
                })
                .collect(),
            webhooks: self
                .sinks
                .events
                .webhooks
                .iter()
                .map(|h| WebhookSnapshot {
                    name: h.name.clone(),
                    sent: h.stats.sent.load(Ordering::Relaxed),
                    dropped: h.stats.dropped.load(Ordering::Relaxed),
                    failed_attempts: h.stats.failed_attempts.load(Ordering::Relaxed),
                    pending: h.stats.pending.load(Ordering::Relaxed),
                })
                .collect(),
        };
        let actions = self.core.housekeeping(tick);
        self.carry_out(actions);
    }

    fn carry_out(&mut self, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Write(stream, batch) => self.held.hold(stream, batch, Instant::now()),
                Action::Emit(event) => self.sinks.events.emit(&event),
                Action::Delivered { link, inputs } => {
                    if let Some(shared) = self.links.get(link.index()) {
                        shared.delivered(inputs);
                    }
                }
                Action::ReceiveLogThrough(utc_ns) => {
                    self.held.receive_through(utc_ns, Instant::now())
                }
                Action::Publish(snapshot) => {
                    self.published.send_replace(Arc::from(snapshot));
                }
                Action::Status(line) => self.notifier.status(&line),
                Action::WatchdogPing => self.notifier.watchdog_tick(),
                Action::Log(note) => log(note),
            }
        }
    }

    /// Each written file's figures. A stream's lines held here ([`HeldLines`]) are pending as
    /// much as those in its writer's queue, so they count in its `pending_bytes`.
    fn stream_snapshots(&self) -> Vec<StreamSnapshot> {
        self.sinks
            .writers()
            .map(|(stream, w)| stream_snapshot(w, stream.map_or(0, |s| self.held.bytes(s))))
            .collect()
    }

    /// Hands the held lines to their writers, then the receive log's mark.
    fn hand_on_held(&mut self) {
        let handed = self.held.take();
        for (stream, batch) in handed.batches {
            if let Some(writer) = self.sinks.writer(stream) {
                writer.offer(batch);
            }
        }
        if let Some(utc_ns) = handed.receive_through {
            self.sinks.receive.complete_through(utc_ns);
        }
    }

    /// When the loop must run again without input: the monitors' next deadline, or the next
    /// housekeeping if sooner.
    /// Held lines wake it only a pace after they are due: while batches keep coming, a pass
    /// comes first and takes them along.
    fn next_wake(&self, next_housekeeping: tokio::time::Instant) -> tokio::time::Instant {
        let mut wake = next_housekeeping;
        if let Some(deadline) = self.core.next_deadline() {
            let left = (deadline - clock::utc_ns()).max(0) as u64;
            wake = wake.min(tokio::time::Instant::now() + Duration::from_nanos(left));
        }
        if let Some(due) = self.held.due() {
            wake = wake.min(tokio::time::Instant::from_std(due + PASS_PACE));
        }
        wake
    }

    /// Runs until every link's scanner has ended (their senders dropped), then flushes.
    /// `side_events` are events made outside the links (the NATS connection's, retention's),
    /// written as they come.
    pub async fn run(
        mut self,
        mut rx: mpsc::Receiver<LinkBatch>,
        mut side_events: mpsc::Receiver<Event>,
        reopen: Arc<Notify>,
    ) -> Pipeline {
        let mut next_housekeeping = tokio::time::Instant::now();
        let mut pass = Vec::new();
        let mut last_pass: Option<tokio::time::Instant> = None;
        loop {
            let wake = self.next_wake(next_housekeeping);
            let mut taken = 0;
            tokio::select! {
                biased;
                _ = reopen.notified() => {
                    self.hand_on_held();
                    for (_, writer) in self.sinks.writers() {
                        writer.reopen();
                    }
                    tracing::info!("SIGHUP: files reopened");
                }
                batch = rx.recv() => {
                    let Some(batch) = batch else { break };
                    self.take(batch, &mut pass);
                    taken = 1;
                    while taken < MAX_BATCHES_PER_PASS {
                        match rx.try_recv() {
                            Ok(batch) => self.take(batch, &mut pass),
                            Err(_) => break,
                        }
                        taken += 1;
                    }
                }
                Some(event) = side_events.recv() => self.sinks.events.emit(&event),
                _ = tokio::time::sleep_until(wake) => {}
            }
            // After every pass, so a busy pipeline still raises alerts on time.
            self.advance(std::mem::take(&mut pass));
            if self.held.is_due(Instant::now()) {
                self.hand_on_held();
            }
            if tokio::time::Instant::now() >= next_housekeeping {
                self.housekeeping();
                next_housekeeping = tokio::time::Instant::now() + HOUSEKEEPING;
            }
            if taken > 0 {
                let now = tokio::time::Instant::now();
                let often = taken > 1 || last_pass.is_some_and(|t| now - t < PASS_PACE / 2);
                last_pass = Some(now);
                if often && taken < MAX_BATCHES_PER_PASS {
                    let until = (now + PASS_PACE).min(self.next_wake(next_housekeeping));
                    tokio::time::sleep_until(until).await;
                }
            }
        }
        // Every link has stopped, so none holds the watermark back: whatever still waits is
        // judged, in order.
        self.advance(Vec::new());
        self.hand_on_held();
        self.housekeeping();
        self
    }
}

/// `held_bytes`: the stream's lines the pipeline still holds, not yet in the writer's queue.
fn stream_snapshot(w: &WriterHandle, held_bytes: u64) -> StreamSnapshot {
    StreamSnapshot {
        name: w.name().to_string(),
        lines_written: w.stats.lines_written.load(Ordering::Relaxed),
        bytes_written: w.stats.bytes_written.load(Ordering::Relaxed),
        pending_bytes: w.stats.pending_bytes.load(Ordering::Relaxed) + held_bytes,
        dropped_lines: w.stats.dropped_lines.load(Ordering::Relaxed),
        write_errors: w.stats.write_errors.load(Ordering::Relaxed),
        write_lag_s: w.stats.last_write_lag_ns.load(Ordering::Relaxed) as f64 / 1e9,
    }
}

fn log(note: Note) {
    match note {
        Note::LinkUp { link, detail } => tracing::info!(%link, %detail, "link up"),
        Note::LinkDown { link, reason } => tracing::warn!(%link, %reason, "link down"),
        Note::FirstDenied { link, peer } => {
            tracing::warn!(%link, %peer, "datagram from outside the allow-list dropped (further ones counted only)")
        }
        Note::ClockUnreadable { errno } => {
            let errno = nix::errno::Errno::from_raw(errno);
            tracing::warn!(error = %errno, "cannot read the kernel's NTP state (adjtimex: {errno}); no clock events and no receiver clock error until it can")
        }
        Note::RecordsDropped { stream, count } => tracing::error!(
            %stream,
            count,
            "records dropped: the disk did not keep up and the buffer is full"
        ),
        Note::LinkDropped { link, counts } => {
            tracing::warn!(%link, ?counts, "the receiver dropped input on this link")
        }
    }
}
