//! The pipeline task: the one owner of the monitors. It takes what the links' scanner threads
//! made of their input (receipt lines for the writers, monitor input, counts), hands the lines to
//! the writers (never waiting on a disk), and feeds the monitors in event time: in stamp order,
//! up to the watermark before which every link has been scanned (`monitor::merge`). It sleeps
//! until the monitors' next deadline, so a telemetry_gap opens live, when its deadline passes,
//! not when the next heartbeat happens to arrive; and since no link is scanned here, no link's
//! input can delay the alert timer or the watchdog ping.

use super::clock;
use super::events::EventSink;
use super::kernel_clock;
use super::link_queue::LinkShared;
use super::notify::Notifier;
use super::scan::{LinkBatch, LinkNote, SequenceFigures};
use crate::link::LinkId;
use crate::monitor::event::{DroppedKind, LinkKind as LinkEventKind, LinkState as LinkEventState};
use crate::monitor::heartbeat::{describe, LastHeartbeat};
use crate::monitor::latency::LatencyEstimate;
use crate::monitor::{
    format_utc_ms, watermark, ClockWatch, DroppedEvent, Event, EventOrder, LinkEvent, UtcTime,
    Watch,
};
use crate::recorder::{LinkCounters, Output};
use crate::sink::writer::Batch;
use crate::sink::WriterHandle;
use crate::status::{
    ClockSnapshot, HeartbeatSnapshot, LinkSnapshot, MessageCount, SequenceLoss, StatusSnapshot,
    StreamSnapshot, VehicleLinkSnapshot, VehicleSnapshot, WebhookSnapshot,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch, Notify};

/// How many batches one pass takes before feeding the monitors and polling.
const MAX_BATCHES_PER_PASS: usize = 64;
/// Clock status, drop reports and the published status are refreshed this often.
const HOUSEKEEPING: Duration = Duration::from_millis(500);
/// A link's rejects and drops are summarised as a `link` event at most this often.
const ERROR_REPORT_NS: i64 = 10_000_000_000;

pub struct Sinks {
    pub receive: WriterHandle,
    pub tlog: Option<WriterHandle>,
    pub events: EventSink,
}

/// One link as the pipeline knows it: its name, the state its scanner reported, and its
/// shared queue counters.
#[derive(Debug)]
pub struct LinkStatus {
    pub name: String,
    pub shared: Arc<LinkShared>,
    pub up: Option<bool>,
    pub denied: u64,
    pub last_change_detail: String,
    pub downs: u64,
    pub counters: LinkCounters,
    pub sequences: BTreeMap<u8, SequenceFigures>,
    /// Reject counts by reason at the last `errors` event, and when it was.
    pub reported_rejects: [u64; crate::wire::RejectReason::COUNT],
    pub reported_at_ns: i64,
    /// Drops (overload, kernel) at the last `dropped` event, and when it was.
    pub reported_drops: (u64, u64),
    pub drops_reported_at_ns: i64,
    /// Receipts at the last housekeeping tick, and the rate since the one before.
    pub receipts_at_tick: u64,
    pub rate_per_s: f64,
    /// Frames per system at the last housekeeping tick, and each system's rate since the one
    /// before (the range board's frames/s per vehicle and link).
    pub frames_at_tick: BTreeMap<u8, u64>,
    pub frame_rates: BTreeMap<u8, f64>,
}

impl LinkStatus {
    pub fn new(name: String, shared: Arc<LinkShared>) -> Self {
        Self {
            name,
            shared,
            up: None,
            denied: 0,
            last_change_detail: String::new(),
            downs: 0,
            counters: LinkCounters::default(),
            sequences: BTreeMap::new(),
            reported_rejects: Default::default(),
            reported_at_ns: 0,
            reported_drops: (0, 0),
            drops_reported_at_ns: 0,
            receipts_at_tick: 0,
            rate_per_s: 0.0,
            frames_at_tick: BTreeMap::new(),
            frame_rates: BTreeMap::new(),
        }
    }

    fn drops(&self) -> (u64, u64) {
        (
            self.shared.overload_drops.load(Ordering::Relaxed),
            self.shared.kernel_drops.load(Ordering::Relaxed),
        )
    }
}

pub struct Pipeline {
    pub watch: Watch,
    pub clock_watch: ClockWatch,
    pub sinks: Sinks,
    pub links: Vec<LinkStatus>,
    /// Where the status snapshot is published for `/status`, `/metrics` and the `status` verb.
    pub published: watch::Sender<Arc<StatusSnapshot>>,
    pub started_utc_ns: i64,
    pub receipts_by_message: BTreeMap<(LinkId, u8, &'static str), u64>,
    pub notifier: Notifier,
    pub last_tick_ns: i64,
    /// The kernel's NTP state could not be read (said once).
    pub clock_unreadable: bool,
    /// Monitor input waiting for the watermark.
    pub order: EventOrder,
    /// Per system: every link's drop total at its last heartbeat (for `receiver_dropped`).
    pub drops_at_heartbeat: HashMap<u8, Vec<u64>>,
    /// Fault injection for the watchdog test (`testing` feature only): while this file exists
    /// the pipeline is wedged.
    #[cfg(feature = "testing")]
    pub stall_file: Option<std::path::PathBuf>,
}

impl Pipeline {
    /// Takes one scanner batch: lines to the writers, monitor input into event order, state
    /// changes and counts into the link's status.
    fn take(&mut self, batch: LinkBatch) {
        let LinkBatch {
            link,
            mut out,
            data_inputs,
            notes,
            counters,
            sequences,
        } = batch;
        for note in notes {
            self.note(link, note);
        }
        self.write(&mut out);
        for (link, sysid, name) in out.messages.drain(..) {
            *self
                .receipts_by_message
                .entry((link, sysid, name))
                .or_default() += 1;
        }
        for input in out.observations.drain(..) {
            self.order.push(input);
        }
        let status = &mut self.links[link.index()];
        status.counters = counters;
        status.sequences = sequences;
        // Only now, with its monitor input in event order, is the link's input delivered: until
        // then its stamps hold the watermark back.
        status.shared.delivered(data_inputs);
    }

    fn note(&mut self, link: LinkId, note: LinkNote) {
        let name = self.links[link.index()].name.clone();
        match note {
            LinkNote::Up { at, detail } => {
                tracing::info!(link = %name, %detail, "link up");
                let status = &mut self.links[link.index()];
                status.up = Some(true);
                status.last_change_detail = detail.clone();
                self.emit_link(link, at.utc_ns, LinkEventState::Up, Some(detail), None);
            }
            LinkNote::Down { at, reason } => {
                tracing::warn!(link = %name, %reason, "link down");
                let status = &mut self.links[link.index()];
                status.up = Some(false);
                status.downs += 1;
                status.last_change_detail = reason.clone();
                self.emit_link(link, at.utc_ns, LinkEventState::Down, Some(reason), None);
            }
            LinkNote::Denied { peer } => {
                let status = &mut self.links[link.index()];
                if status.denied == 0 {
                    tracing::warn!(link = %name, %peer, "datagram from outside the allow-list dropped (further ones counted only)");
                }
                status.denied += 1;
            }
        }
    }

    fn emit_link(
        &self,
        link: LinkId,
        utc_ns: i64,
        state: LinkEventState,
        reason: Option<String>,
        counts: Option<BTreeMap<String, u64>>,
    ) {
        let event = LinkEvent {
            utc: UtcTime(utc_ns),
            kind: LinkEventKind,
            link: self.links[link.index()].name.clone(),
            state,
            reason,
            counts,
        };
        self.sinks.events.emit(&Event::from(event));
    }

    /// Hands a batch's lines to the writers.
    fn write(&mut self, out: &mut Output) {
        for day in out.batches.drain(..) {
            if day.receipts == 0 {
                continue;
            }
            let (first, last) = (day.first_utc_ns, day.last_utc_ns);
            if let Some(tlog) = &self.sinks.tlog {
                tlog.offer(Batch {
                    day: day.day,
                    first_utc_ns: first,
                    last_utc_ns: last,
                    lines: day.receipts,
                    bytes: day.tlog,
                });
            }
            self.sinks.receive.offer(Batch {
                day: day.day,
                first_utc_ns: first,
                last_utc_ns: last,
                lines: day.receipts,
                bytes: day.jsonl,
            });
        }
    }

    /// Every link's drop total, in link order.
    fn drop_totals(&self) -> Vec<u64> {
        self.links.iter().map(|l| l.shared.dropped()).collect()
    }

    /// Emits a monitor event; a gap event says how many datagrams the receiver itself dropped
    /// on the vehicle's links since its last heartbeat, when there were any.
    fn emit(&self, mut event: Event) {
        if let Event::TelemetryGap(gap) = &mut event {
            if let Some(before) = self.drops_at_heartbeat.get(&gap.sysid) {
                let now = self.drop_totals();
                let dropped: u64 = self
                    .links
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| gap.links.contains(&l.name))
                    .map(|(i, _)| now[i].saturating_sub(before.get(i).copied().unwrap_or(0)))
                    .sum();
                if dropped > 0 {
                    gap.receiver_dropped = Some(dropped);
                }
            }
        }
        self.sinks.events.emit(&event);
    }

    /// Feeds the monitors what the watermark allows, in stamp order, and polls them there: the
    /// same sequence `analyze` runs over the recorded receipts.
    fn advance(&mut self) {
        let now = clock::utc_ns();
        let mark = watermark(now, self.links.iter().map(|l| l.shared.oldest_in_flight()));
        let clock = self.clock_watch.status();
        for input in self.order.release(mark) {
            let events = self.watch.poll(input.utc_ns(), clock);
            for event in events {
                self.emit(event);
            }
            let link = self.links[input.link().index()].name.clone();
            let events = self.watch.observe(&input, &link);
            if let crate::monitor::MonitorInput::Heartbeat { sysid, .. } = input {
                // The gap this heartbeat closes is judged against the drops before it.
                for event in events {
                    self.emit(event);
                }
                let totals = self.drop_totals();
                self.drops_at_heartbeat.insert(sysid, totals);
            } else {
                for event in events {
                    self.emit(event);
                }
            }
        }
        for event in self.watch.poll(mark, clock) {
            self.emit(event);
        }
    }

    fn housekeeping(&mut self) {
        #[cfg(feature = "testing")]
        if let Some(path) = &self.stall_file {
            while path.exists() {
                // Deliberately blocks the pipeline task (test fault injection only).
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        self.notifier.watchdog_tick();
        let now = clock::utc_ns();
        match kernel_clock::read() {
            Ok(status) => {
                if let Some(event) =
                    self.clock_watch
                        .observe(status.synchronised, status.max_error_us, now)
                {
                    self.sinks.events.emit(&Event::from(event));
                }
            }
            Err(errno) if !self.clock_unreadable => {
                // Once: without it there are no clock events and no receiver clock error.
                self.clock_unreadable = true;
                tracing::warn!(error = %errno, "cannot read the kernel's NTP state (adjtimex: {errno}); no clock events and no receiver clock error until it can");
            }
            Err(_) => {}
        }
        for writer in [
            Some(&self.sinks.receive),
            self.sinks.tlog.as_ref(),
            Some(&self.sinks.events.file),
        ]
        .into_iter()
        .flatten()
        {
            if let Some(d) = writer.take_drops() {
                tracing::error!(
                    stream = writer.name(),
                    count = d.lines,
                    "records dropped: the disk did not keep up and the buffer is full"
                );
                let event = DroppedEvent {
                    utc: UtcTime(now),
                    kind: DroppedKind,
                    stream: writer.name().to_string(),
                    count: d.lines,
                    first_utc: UtcTime(d.first_utc_ns),
                    last_utc: UtcTime(d.last_utc_ns),
                    reason: writer
                        .stats
                        .last_error
                        .lock()
                        .expect("not poisoned")
                        .clone(),
                };
                self.sinks.events.emit(&Event::from(event));
            }
        }
        self.report_link_errors(now);
        self.report_link_drops(now);
        let dt = (now - self.last_tick_ns) as f64 / 1e9;
        for link in LinkId::all(self.links.len()) {
            let receipts = self.links[link.index()].counters.receipts;
            let status = &mut self.links[link.index()];
            if dt > 0.0 {
                status.rate_per_s = (receipts - status.receipts_at_tick) as f64 / dt;
                status.frame_rates = frame_rates(&status.frames_at_tick, &status.sequences, dt);
            }
            status.receipts_at_tick = receipts;
            status.frames_at_tick = status
                .sequences
                .iter()
                .map(|(&sysid, f)| (sysid, f.received))
                .collect();
        }
        self.last_tick_ns = now;
        self.published.send_replace(Arc::new(self.snapshot(now)));
        let summary = self.summary(now);
        self.notifier.status(&summary);
    }

    /// The daemon's state as one plain value (see [`crate::status`]).
    fn snapshot(&self, now_ns: i64) -> StatusSnapshot {
        let link_names: Vec<String> = self.links.iter().map(|l| l.name.clone()).collect();
        let mut loss_by_sysid: BTreeMap<u8, (u64, u64)> = BTreeMap::new();
        let mut lost_by_link: BTreeMap<(LinkId, u8), u64> = BTreeMap::new();
        for (link, status) in LinkId::all(self.links.len()).zip(&self.links) {
            for (&sysid, f) in &status.sequences {
                let e = loss_by_sysid.entry(sysid).or_default();
                e.0 += f.received;
                // Frames still missing (lost and never seen late) for the gauge; the counter
                // below is the monotonic `lost`.
                e.1 += f.lost.saturating_sub(f.late);
                *lost_by_link.entry((link, sysid)).or_default() += f.lost;
            }
        }
        let ms = |ns: i64| ns as f64 / 1e6;
        let vehicles = self
            .watch
            .gap
            .vehicles()
            .into_iter()
            .map(|v| {
                let latency = self.watch.latency.estimate(v.sysid, now_ns);
                let as_latency = |figure: fn(&LatencyEstimate) -> i64| {
                    latency.and_then(|l| l.as_latency_ns(figure(&l))).map(ms)
                };
                let (received, lost) = loss_by_sysid.get(&v.sysid).copied().unwrap_or_default();
                let heartbeats = self.watch.heartbeats.get(v.sysid);
                VehicleSnapshot {
                    sysid: v.sysid,
                    name: v.name.clone(),
                    links: v.links.clone(),
                    last_heard_utc: v.last_recv_ns.map(format_utc_ms),
                    heartbeat_age_s: v.last_recv_ns.map(|t| (now_ns - t) as f64 / 1e9),
                    expected_interval_s: v.expected_interval_ns as f64 / 1e9,
                    open_gap: v
                        .open_gap
                        .as_ref()
                        .and_then(|g| serde_json::to_value(g).ok()),
                    latency_p50_ms: as_latency(|l| l.p50_ns),
                    latency_p95_ms: as_latency(|l| l.p95_ns),
                    latency_max_ms: as_latency(|l| l.max_ns),
                    latency_resolution_ms: latency.map(|l| ms(l.resolution_ns)),
                    clock_offset_ms: latency.and_then(|l| l.clock_offset_ns).map(ms),
                    latency_histogram: self.watch.latency.histogram(v.sysid).map(|h| h.snapshot()),
                    loss_percent: if received + lost == 0 {
                        0.0
                    } else {
                        100.0 * lost as f64 / (received + lost) as f64
                    },
                    first_heard_utc: heartbeats.and_then(|h| h.first_heard_ns).map(format_utc_ms),
                    per_link: self
                        .links
                        .iter()
                        .filter_map(|l| {
                            let figures = l.sequences.get(&v.sysid)?;
                            Some(VehicleLinkSnapshot {
                                link: l.name.clone(),
                                frames: figures.received,
                                frames_per_s: l.frame_rates.get(&v.sysid).copied().unwrap_or(0.0),
                            })
                        })
                        .collect(),
                    heartbeat: heartbeats.and_then(|h| h.latest).map(heartbeat_snapshot),
                }
            })
            .collect();
        let links = LinkId::all(self.links.len())
            .map(|link| {
                let c = &self.links[link.index()].counters;
                let l = &self.links[link.index()];
                LinkSnapshot {
                    name: link_names[link.index()].clone(),
                    up: l.up,
                    detail: l.last_change_detail.clone(),
                    receipts: c.receipts,
                    bytes: c.bytes,
                    bytes_skipped: c.bytes_skipped,
                    rejects: crate::wire::RejectReason::ALL
                        .iter()
                        .map(|r| (r.as_str().to_string(), c.rejects_of(*r)))
                        .collect(),
                    denied: l.denied,
                    seq_lost: c.seq_lost,
                    downs: l.downs,
                    rate_per_s: l.rate_per_s,
                    dropped: [
                        ("overload".to_string(), l.drops().0),
                        ("kernel".to_string(), l.drops().1),
                    ]
                    .into(),
                }
            })
            .collect();
        let stream = |w: &WriterHandle| StreamSnapshot {
            name: w.name().to_string(),
            lines_written: w.stats.lines_written.load(Ordering::Relaxed),
            bytes_written: w.stats.bytes_written.load(Ordering::Relaxed),
            pending_bytes: w.stats.pending_bytes.load(Ordering::Relaxed),
            dropped_lines: w.stats.dropped_lines.load(Ordering::Relaxed),
            write_errors: w.stats.write_errors.load(Ordering::Relaxed),
            write_lag_s: w.stats.last_write_lag_ns.load(Ordering::Relaxed) as f64 / 1e9,
        };
        let streams = [
            Some(&self.sinks.receive),
            self.sinks.tlog.as_ref(),
            Some(&self.sinks.events.file),
        ]
        .into_iter()
        .flatten()
        .map(stream)
        .collect();
        StatusSnapshot {
            utc: format_utc_ms(now_ns),
            started_utc: format_utc_ms(self.started_utc_ns),
            version: env!("CARGO_PKG_VERSION").to_string(),
            clock: self.clock_watch.status().map(|c| ClockSnapshot {
                synchronised: c.synchronised,
                max_error_us: c.max_error_us,
            }),
            vehicles,
            links,
            streams,
            open_gaps: self.watch.gap.open_gaps().len(),
            receipts: self
                .receipts_by_message
                .iter()
                .map(|((link, sysid, msg), n)| MessageCount {
                    link: link_names[link.index()].clone(),
                    sysid: *sysid,
                    msg: msg.to_string(),
                    count: *n,
                })
                .collect(),
            sequence_lost: lost_by_link
                .into_iter()
                .map(|((link, sysid), lost)| SequenceLoss {
                    link: link_names[link.index()].clone(),
                    sysid,
                    lost,
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
            http: None,
            publish: None,
            sites: Vec::new(),
        }
    }

    /// The one-line STATUS= summary: links up, vehicles heard, open gaps.
    fn summary(&self, now: i64) -> String {
        let up = self.links.iter().filter(|l| l.up != Some(false)).count();
        let vehicles = self.watch.gap.vehicles();
        let heard = vehicles
            .iter()
            .filter(|v| v.last_recv_ns.is_some_and(|t| now - t < 60_000_000_000))
            .count();
        let gaps = self.watch.gap.open_gaps().len();
        let receipts: u64 = LinkId::all(self.links.len())
            .map(|link| self.links[link.index()].counters.receipts)
            .sum();
        format!(
            "links up {up}/{}, vehicles heard {heard}, open gaps {gaps}, receipts {receipts}",
            self.links.len()
        )
    }

    /// One `link` event with state `errors` per link whose reject counts grew since its last one,
    /// at most every [`ERROR_REPORT_NS`]: operators see bad data arriving without a line per frame.
    fn report_link_errors(&mut self, now: i64) {
        for link in LinkId::all(self.links.len()) {
            let counters = self.links[link.index()].counters.clone();
            let status = &mut self.links[link.index()];
            if counters.rejects == status.reported_rejects
                || now - status.reported_at_ns < ERROR_REPORT_NS
            {
                continue;
            }
            let counts: std::collections::BTreeMap<String, u64> = crate::wire::RejectReason::ALL
                .iter()
                .enumerate()
                .filter(|(k, _)| counters.rejects[*k] > status.reported_rejects[*k])
                .map(|(k, r)| {
                    (
                        r.as_str().to_string(),
                        counters.rejects[k] - status.reported_rejects[k],
                    )
                })
                .collect();
            status.reported_rejects = counters.rejects;
            status.reported_at_ns = now;
            let event = LinkEvent {
                utc: UtcTime(now),
                kind: LinkEventKind,
                link: self.links[link.index()].name.clone(),
                state: LinkEventState::Errors,
                reason: Some("frames rejected since the last report".to_string()),
                counts: Some(counts),
            };
            self.sinks.events.emit(&Event::from(event));
        }
    }

    /// One `link` event with state `dropped` per link where the receiver itself dropped input
    /// since its last one, at most every [`ERROR_REPORT_NS`], with the counts by reason.
    fn report_link_drops(&mut self, now: i64) {
        for link in LinkId::all(self.links.len()) {
            let status = &self.links[link.index()];
            let (overload, kernel) = status.drops();
            let (was_overload, was_kernel) = status.reported_drops;
            if (overload, kernel) == (was_overload, was_kernel)
                || now - status.drops_reported_at_ns < ERROR_REPORT_NS
            {
                continue;
            }
            let counts: BTreeMap<String, u64> = [
                ("overload".to_string(), overload - was_overload),
                ("kernel".to_string(), kernel - was_kernel),
            ]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect();
            tracing::warn!(link = %status.name, ?counts, "the receiver dropped input on this link");
            let status = &mut self.links[link.index()];
            status.reported_drops = (overload, kernel);
            status.drops_reported_at_ns = now;
            self.emit_link(
                link,
                now,
                LinkEventState::Dropped,
                Some("datagrams the receiver dropped since the last report".to_string()),
                Some(counts),
            );
        }
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
        loop {
            let now_utc = clock::utc_ns();
            let wake = match self.watch.next_deadline() {
                Some(deadline) => {
                    let until = tokio::time::Instant::now()
                        + Duration::from_nanos((deadline - now_utc).max(0) as u64);
                    until.min(next_housekeeping)
                }
                None => next_housekeeping,
            };
            tokio::select! {
                biased;
                _ = reopen.notified() => {
                    self.sinks.receive.reopen();
                    self.sinks.events.file.reopen();
                    if let Some(t) = &self.sinks.tlog { t.reopen(); }
                    tracing::info!("SIGHUP: files reopened");
                }
                batch = rx.recv() => {
                    let Some(batch) = batch else { break };
                    self.take(batch);
                    for _ in 1..MAX_BATCHES_PER_PASS {
                        match rx.try_recv() {
                            Ok(batch) => self.take(batch),
                            Err(_) => break,
                        }
                    }
                }
                Some(event) = side_events.recv() => self.sinks.events.emit(&event),
                _ = tokio::time::sleep_until(wake) => {}
            }
            // After every pass, so a busy pipeline still raises alerts on time.
            self.advance();
            if tokio::time::Instant::now() >= next_housekeeping {
                self.housekeeping();
                next_housekeeping = tokio::time::Instant::now() + HOUSEKEEPING;
            }
        }
        // Every link has stopped, so none holds the watermark back: whatever still waits is
        // judged, in order.
        self.advance();
        self.housekeeping();
        self
    }
}

/// Each system's frames per second on a link since the last tick, `dt` seconds ago. A system
/// first seen since then counts from zero; a count that went back (never expected, the
/// scanner's counters only grow) gives zero rather than a negative rate.
fn frame_rates(
    before: &BTreeMap<u8, u64>,
    now: &BTreeMap<u8, SequenceFigures>,
    dt: f64,
) -> BTreeMap<u8, f64> {
    now.iter()
        .map(|(&sysid, f)| {
            let was = before.get(&sysid).copied().unwrap_or(0);
            (sysid, f.received.saturating_sub(was) as f64 / dt)
        })
        .collect()
}

fn heartbeat_snapshot(last: LastHeartbeat) -> HeartbeatSnapshot {
    let f = last.fields;
    let words = describe(&f);
    HeartbeatSnapshot {
        utc: format_utc_ms(last.utc_ns),
        compid: last.compid,
        mav_type: f.mav_type,
        autopilot: f.autopilot,
        base_mode: f.base_mode,
        custom_mode: f.custom_mode,
        system_status: f.system_status,
        type_name: words.vehicle_type,
        autopilot_name: words.autopilot,
        mode: words.mode,
        status: words.status,
        armed: words.armed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(received: u64) -> SequenceFigures {
        SequenceFigures {
            received,
            lost: 0,
            late: 0,
        }
    }

    #[test]
    fn frame_rates_are_per_system_since_the_last_tick() {
        let before: BTreeMap<u8, u64> = [(1, 100), (2, 40)].into();
        let now: BTreeMap<u8, SequenceFigures> =
            [(1, figures(125)), (2, figures(40)), (3, figures(5))].into();
        let rates = frame_rates(&before, &now, 0.5);
        assert_eq!(rates, [(1, 50.0), (2, 0.0), (3, 10.0)].into());
        // Counters never go back; if they did, no negative rate.
        let rates = frame_rates(&[(1, 200)].into(), &now, 0.5);
        assert_eq!(rates[&1], 0.0);
    }

    #[test]
    fn a_heartbeat_snapshot_carries_the_fields_and_their_words() {
        let last = LastHeartbeat {
            compid: 1,
            utc_ns: 1_790_000_000_000_000_000,
            fields: crate::wire::fields::Heartbeat {
                custom_mode: 6,
                mav_type: 2,
                autopilot: 3,
                base_mode: 0x81,
                system_status: 5,
                mavlink_version: 3,
            },
        };
        let s = heartbeat_snapshot(last);
        assert_eq!(
            (
                s.mode.as_str(),
                s.status.as_str(),
                s.type_name.as_str(),
                s.armed
            ),
            ("RTL", "CRITICAL", "QUADROTOR", true)
        );
        assert_eq!((s.mav_type, s.custom_mode, s.compid), (2, 6, 1));
        assert_eq!(s.utc, format_utc_ms(last.utc_ns));
    }
}
