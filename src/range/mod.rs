//! `range`: one view of the whole range. A durable JetStream consumer reads every site's
//! receipts (`foxborne.receipts.>`); [`judge::RangeJudge`] decides, per system id across sites,
//! whether a vehicle is silent; its events (`scope: "range"`, with `sites`) go to the range's own
//! events file, the journal, `/events` and the webhooks, as the receiver's do, and `/status`
//! shows the vehicles. The consumer is acknowledged as receipts are judged, so a restart resumes
//! where it stopped without re-alerting what was already alerted. A second durable consumer
//! reads the sites' own `clock` events from `FOXBORNE_EVENTS`, a third their
//! `traffic_proximity` events, merged by key into the range's own ([`traffic`]). The sites' progress marks, in the
//! receipts stream, tell the judge how far each site's input is complete ([`input`]). It runs
//! in the service shell it shares with `run` ([`crate::service`]).

mod consumer;
pub mod coverage;
pub mod input;
pub mod judge;
pub mod traffic;

use crate::clock;
use crate::config::range::RangeConfig;
use crate::monitor::{format_utc_ms, Event};
use crate::pipeline::HOUSEKEEPING;
use crate::publish::subject;
use crate::service::events::EventSink;
use crate::service::files::{self, FileSettings};
use crate::service::notify::Notifier;
use crate::service::stop;
use crate::service::{Asked, Service};
use crate::sink::rotating::Framing;
use crate::sink::FileSet;
use crate::status::{SiteSnapshot, StatusSnapshot, VehicleSnapshot};
use futures_util::StreamExt;
use judge::{range_line, RangeJudge};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Acknowledge at least this often in receipts, besides every housekeeping tick.
const ACK_EVERY: u64 = 4_096;
/// The range's events: `events/YYYY-MM-DD/range-events-*.jsonl`, beside a receiver's own.
const RANGE_EVENTS: FileSet = FileSet {
    folder: crate::sink::EVENTS.folder,
    prefix: "range-events",
    ext: "jsonl",
    framing: Framing::Lines,
};
const RANGE_EVENTS_ROTATE_BYTES: u64 = 256 << 20;
/// What the events writer may hold while the disk is slow (events are few; this is hours).
const RANGE_EVENTS_BUFFER_BYTES: u64 = 64 << 20;
/// A vehicle heard this recently counts as heard in `STATUS=` (as in the receiver's line).
const HEARD_WITHIN_S: f64 = 60.0;

/// The range as a service ([`crate::service`], the shell `run` shares): READY=1 once its NATS
/// consumers are made, WATCHDOG=1 and STATUS= from the judging loop, SIGHUP reopens the events
/// file, SIGTERM stops it in two phases within one deadline.
pub async fn run(config: RangeConfig) -> anyhow::Result<()> {
    let mut service = Service::start()?;
    let started_ns = clock::utc_ns();

    // The range board (`GET /`) draws the range's own gap events.
    let face = crate::http::start(
        &config.http,
        started_ns,
        Default::default(),
        service.shutdown(),
    )
    .await?;

    let files = FileSettings {
        data_dir: &config.data_dir,
        rotate_size_bytes: RANGE_EVENTS_ROTATE_BYTES,
        fsync_interval: Duration::from_secs_f64(config.fsync_interval_s),
        buffer_bytes: RANGE_EVENTS_BUFFER_BYTES,
        clock: clock::utc_ns,
    };
    let sink = files::open_events(
        &files,
        RANGE_EVENTS,
        &config.webhooks,
        &face,
        started_ns,
        format!("range {} from {}", config.name, config.nats_url),
        config.effective(),
    )?;

    let mut notifier = service.loop_notifier();
    notifier.status(&format!("connecting to {}", config.nats_url));
    let judged = match service.unless_stopped(consumer::connect(&config)).await {
        Some(Ok(consumers)) => {
            let judging = Judging {
                judge: RangeJudge::new(config.gap.gap_config(), started_ns),
                sink: &sink,
                published: &face.status,
                notifier,
                started_ns,
            };
            tracing::info!(consumer = %consumers.durable, nats = %config.nats_url, "range started");
            service.ready();
            judging.run(&mut service, consumers).await
        }
        Some(Err(cannot_connect)) => Judged {
            failed: Some(cannot_connect),
            ..Judged::default()
        },
        None => Judged::default(),
    };

    tracing::info!("range stopping");
    let mut stop = service.begin_stop();
    if let Some(message) = judged.unacked {
        stop.drain("consumer ack", message.ack()).await;
    }
    stop.drain("http", face.task).await;
    let why = judged.failed.as_ref().map(|e| format!("{e:#}"));
    stop::close_events(&mut stop, sink, why).await;
    stop.finish()?;
    // Not a stop anyone asked for: exit 1, so that systemd restarts the range.
    judged.failed.map_or(Ok(()), Err)
}

/// The judging loop's state: the judge, where its events and its status go.
struct Judging<'a> {
    judge: RangeJudge,
    sink: &'a EventSink,
    published: &'a watch::Sender<Arc<StatusSnapshot>>,
    notifier: Notifier,
    started_ns: i64,
}

/// How the range's work ended, for its stop.
#[derive(Default)]
struct Judged {
    /// The last receipt judged and not yet acknowledged (its ack covers every one before it).
    unacked: Option<async_nats::jetstream::Message>,
    /// Why it ended when no stop was asked: the consumers could not be made, or one ended.
    failed: Option<anyhow::Error>,
}

impl Judging<'_> {
    /// Judges every site's receipts until a stop is asked or the consumer ends. Each
    /// housekeeping tick acknowledges, publishes `/status`, pings the watchdog and sends
    /// STATUS=: from this loop, so a loop that stalls stops the pings.
    async fn run(mut self, service: &mut Service, consumers: consumer::Consumers) -> Judged {
        let consumer::Consumers {
            receipts: mut messages,
            mut clock_reports,
            mut traffic_events,
            ..
        } = consumers;
        let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
        let mut unacked: Option<async_nats::jetstream::Message> = None;
        let mut unacked_count = 0u64;
        let mut caught_up = true;
        let mut failed = None;
        loop {
            let until_due = self
                .judge
                .next_deadline()
                .map(|due| Duration::from_nanos((due - clock::utc_ns()).max(0) as u64));
            tokio::select! {
                asked = service.next() => match asked {
                    Asked::Stop => break,
                    Asked::Reopen => {
                        self.sink.file.reopen();
                        tracing::info!("SIGHUP: files reopened");
                    }
                },
                _ = tokio::time::sleep(until_due.unwrap_or(HOUSEKEEPING)), if until_due.is_some() => {
                    let events = self.judge.poll(clock::utc_ns(), caught_up);
                    self.emit(events);
                }
                _ = housekeeping.tick() => {
                    unacked_count = 0;
                    if let Some(message) = unacked.take() {
                        consumer::ack_receipts(message).await;
                    }
                    self.housekeeping();
                }
                Some(report) = clock_reports.next() => match report {
                    Ok(report) => {
                        if let Some(site) = subject::clock_site(&report.subject).map(str::to_string) {
                            match self.judge.site_clock_event(&site, &report.payload) {
                                Ok(events) => self.emit(events),
                                Err(refused) => say_refused(&self.judge, &site, &report, &refused),
                            }
                        }
                        if let Err(e) = report.ack().await {
                            tracing::warn!(error = %e, "range: cannot acknowledge a site's clock report");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "range: clock report consumer"),
                },
                Some(message) = traffic_events.next() => match message {
                    Ok(message) => {
                        if let Some(site) = subject::traffic_proximity_site(&message.subject).map(str::to_string) {
                            match self.judge.site_traffic_event(&site, &message.payload) {
                                Ok(events) => self.emit(events),
                                Err(refused) => say_refused(&self.judge, &site, &message, &refused),
                            }
                        }
                        if let Err(e) = message.ack().await {
                            tracing::warn!(error = %e, "range: cannot acknowledge a site's traffic event");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "range: traffic event consumer"),
                },
                next = messages.next() => match next {
                    Some(Ok(message)) => {
                        let Some(site) = subject::receipt_site(&message.subject).map(str::to_string) else {
                            continue;
                        };
                        caught_up = message.info().map(|i| i.pending == 0).unwrap_or(true);
                        let read_at = clock::utc_ns();
                        let now = caught_up.then_some(read_at);
                        let judged = if subject::is_progress(&message.subject) {
                            self.judge.progress(&site, &message.payload, read_at, now)
                        } else {
                            self.judge.receipt(&site, &message.payload, now)
                        };
                        match judged {
                            Ok(events) => self.emit(events),
                            Err(refused) => say_refused(&self.judge, &site, &message, &refused),
                        }
                        unacked_count += 1;
                        if unacked_count >= ACK_EVERY {
                            unacked_count = 0;
                            consumer::ack_receipts(message).await;
                        } else {
                            unacked = Some(message);
                        }
                    }
                    Some(Err(e)) => tracing::warn!(error = %e, "range: consumer"),
                    None => {
                        tracing::error!("range: the consumer ended");
                        failed = Some(anyhow::anyhow!("the NATS consumer ended"));
                        break;
                    }
                },
            }
        }
        Judged { unacked, failed }
    }

    fn emit(&self, events: Vec<Event>) {
        for event in events {
            let line = range_line(&event);
            self.sink.emit_line(&event, line);
        }
    }

    /// The periodic tick's share of the service: `/status`, the watchdog, STATUS=.
    fn housekeeping(&mut self) {
        let snapshot = snapshot(&self.judge, self.started_ns, clock::utc_ns());
        self.notifier.watchdog_tick();
        self.notifier.status(&status_line(&snapshot));
        self.published.send_replace(Arc::new(snapshot));
    }
}

/// A site's refused message is logged the first time for its site, then every 10,000th, naming
/// the site, the subject and the message's place in its stream.
fn say_refused(
    judge: &RangeJudge,
    site: &str,
    message: &async_nats::jetstream::Message,
    refused: &judge::RefusedMessage,
) {
    let count = judge.refused(site);
    if count == 1 || count.is_multiple_of(10_000) {
        let stream_sequence = message.info().map(|i| i.stream_sequence).unwrap_or(0);
        tracing::warn!(
            %site,
            subject = %message.subject,
            stream_sequence,
            refused_so_far = count,
            reason = %refused,
            "range: a site's message is not what its subject carries; skipped"
        );
    }
}

/// The range's vehicles and sites for `/status` (and the board) at `now`.
fn snapshot(judge: &RangeJudge, started_ns: i64, now: i64) -> StatusSnapshot {
    StatusSnapshot {
        utc: format_utc_ms(now),
        started_utc: format_utc_ms(started_ns),
        version: env!("CARGO_PKG_VERSION").to_string(),
        vehicles: judge
            .detector()
            .vehicles()
            .into_iter()
            .map(|v| VehicleSnapshot {
                sysid: v.sysid,
                name: v.name.clone(),
                // The sites that hear it now (a site that lost it is not listed).
                links: judge.coverage().hearing(v.sysid),
                last_heard_utc: v.last_recv_ns.map(format_utc_ms),
                heartbeat_age_s: v.last_recv_ns.map(|t| (now - t) as f64 / 1e9),
                expected_interval_s: v.expected_interval_ns as f64 / 1e9,
                open_gap: v.open_gap.clone(),
                ..Default::default()
            })
            .collect(),
        open_gaps: judge.detector().open_gaps().len(),
        sites: sites(judge),
        ..Default::default()
    }
}

/// The sites the range knows: those its coverage holds (heard, or clock reports), and those
/// whose every message so far was refused (so `/status` shows them too).
fn sites(judge: &RangeJudge) -> Vec<SiteSnapshot> {
    let mut sites: Vec<SiteSnapshot> = judge
        .coverage()
        .sites()
        .map(|site| SiteSnapshot {
            name: site.name.to_string(),
            silent: site.silent,
            clock_off: site.clock_off,
            unsynchronised: site.unsynchronised,
            input_stalled: judge.input_stalled(site.name),
            refused_messages: judge.refused(site.name),
        })
        .collect();
    for (name, refused) in judge.refused_sites() {
        if !sites.iter().any(|s| s.name == name) {
            sites.push(SiteSnapshot {
                name: name.to_string(),
                refused_messages: refused,
                ..SiteSnapshot::default()
            });
        }
    }
    sites
}

/// The range's one-line `STATUS=`, from its `/status` snapshot: the sites heard (not silent) of
/// those it knows, the vehicles heard in the last minute of those it judges, and the open gaps.
fn status_line(snapshot: &StatusSnapshot) -> String {
    let heard_sites = snapshot.sites.iter().filter(|s| !s.silent).count();
    let heard_vehicles = snapshot
        .vehicles
        .iter()
        .filter(|v| v.heartbeat_age_s.is_some_and(|age| age < HEARD_WITHIN_S))
        .count();
    format!(
        "sites heard {heard_sites}/{}, vehicles heard {heard_vehicles}/{}, open gaps {}",
        snapshot.sites.len(),
        snapshot.vehicles.len(),
        snapshot.open_gaps
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(name: &str, silent: bool) -> SiteSnapshot {
        SiteSnapshot {
            name: name.to_string(),
            silent,
            ..SiteSnapshot::default()
        }
    }

    fn vehicle(sysid: u8, heartbeat_age_s: Option<f64>) -> VehicleSnapshot {
        VehicleSnapshot {
            sysid,
            heartbeat_age_s,
            ..VehicleSnapshot::default()
        }
    }

    #[test]
    fn status_line_counts_sites_heard_vehicles_heard_and_open_gaps() {
        let snapshot = StatusSnapshot {
            sites: vec![
                site("north", false),
                site("south", true),
                site("east", false),
            ],
            vehicles: vec![
                vehicle(4, Some(0.4)),
                vehicle(22, Some(12.0)),
                // Heard 61 s ago: known, in a gap, not heard.
                vehicle(41, Some(61.0)),
                // Named in the config, never heard.
                vehicle(42, None),
            ],
            open_gaps: 2,
            ..StatusSnapshot::default()
        };
        assert_eq!(
            status_line(&snapshot),
            "sites heard 2/3, vehicles heard 2/4, open gaps 2"
        );
    }

    #[test]
    fn status_line_of_a_range_that_has_heard_nothing_yet() {
        assert_eq!(
            status_line(&StatusSnapshot::default()),
            "sites heard 0/0, vehicles heard 0/0, open gaps 0"
        );
    }
}
