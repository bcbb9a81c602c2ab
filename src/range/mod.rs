//! `range`: one view of the whole range. A durable JetStream consumer reads every site's
//! receipts (`foxborne.receipts.>`); [`judge::RangeJudge`] decides, per system id across sites,
//! whether a vehicle is silent; its events (`scope: "range"`, with `sites`) go to the range's own
//! events file, the journal, `/events` and the webhooks, as the receiver's do, and `/status`
//! shows the vehicles. The consumer is acknowledged as receipts are judged, so a restart resumes
//! where it stopped without re-alerting what was already alerted. A second durable consumer
//! reads the sites' own `clock` events from `FOXBORNE_EVENTS`. The sites' progress marks, in the
//! receipts stream, tell the judge how far each site's input is complete ([`input`]).

mod consumer;
pub mod coverage;
pub mod input;
pub mod judge;

use crate::clock;
use crate::config::range::RangeConfig;
use crate::daemon::events::EventSink;
use crate::daemon::service::{self, Asked, FileSettings, Signals};
use crate::daemon::shutdown::{Stop, STOP_BUDGET};
use crate::monitor::{format_utc_ms, Event};
use crate::pipeline::HOUSEKEEPING;
use crate::publish::subject;
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

pub async fn run(config: RangeConfig) -> anyhow::Result<()> {
    let started_ns = clock::utc_ns();
    let (shutdown_tx, shutdown_rx) = watch::channel(false);

    // The range board (`GET /`) draws the range's own gap events.
    let face = crate::http::start(
        &config.http,
        started_ns,
        Default::default(),
        shutdown_rx.clone(),
    )
    .await?;

    let files = FileSettings {
        data_dir: &config.data_dir,
        rotate_size_bytes: RANGE_EVENTS_ROTATE_BYTES,
        fsync_interval: Duration::from_secs_f64(config.fsync_interval_s),
        buffer_bytes: RANGE_EVENTS_BUFFER_BYTES,
    };
    let sink = service::open_events(
        &files,
        RANGE_EVENTS,
        &config.webhooks,
        &face,
        started_ns,
        format!("range {} from {}", config.name, config.nats_url),
        config.effective(),
    )?;

    let consumer::Consumers {
        durable,
        receipts: mut messages,
        mut clock_reports,
    } = consumer::connect(&config).await?;

    let mut judge = RangeJudge::new(config.gap.gap_config(), started_ns);
    let mut signals = Signals::install()?;
    let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
    let mut unacked: Option<async_nats::jetstream::Message> = None;
    let mut unacked_count = 0u64;
    let mut caught_up = true;
    tracing::info!(consumer = %durable, nats = %config.nats_url, "range started");
    crate::daemon::notify::Notifier::from_env().ready();
    let emit = |sink: &EventSink, events: Vec<Event>| {
        for event in events {
            let line = range_line(&event);
            sink.emit_line(&event, line);
        }
    };
    loop {
        let until_due = judge
            .next_deadline()
            .map(|due| Duration::from_nanos((due - clock::utc_ns()).max(0) as u64));
        tokio::select! {
            asked = signals.next() => match asked {
                Asked::Stop => break,
                Asked::Reopen => tracing::info!("range: SIGHUP ignored (the range's files are reopened by rotation alone)"),
            },
            _ = tokio::time::sleep(until_due.unwrap_or(HOUSEKEEPING)), if until_due.is_some() => {
                emit(&sink, judge.poll(clock::utc_ns(), caught_up));
            }
            _ = housekeeping.tick() => {
                unacked_count = 0;
                if let Some(message) = unacked.take() {
                    consumer::ack_receipts(message).await;
                }
                face.status.send_replace(Arc::new(snapshot(&judge, started_ns)));
            }
            Some(report) = clock_reports.next() => match report {
                Ok(report) => {
                    if let Some(site) = subject::clock_site(&report.subject).map(str::to_string) {
                        match judge.site_clock_event(&site, &report.payload) {
                            Ok(events) => emit(&sink, events),
                            Err(refused) => say_refused(&judge, &site, &report, &refused),
                        }
                    }
                    if let Err(e) = report.ack().await {
                        tracing::warn!(error = %e, "range: cannot acknowledge a site's clock report");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "range: clock report consumer"),
            },
            next = messages.next() => match next {
                Some(Ok(message)) => {
                    let Some(site) = subject::receipt_site(&message.subject).map(str::to_string) else {
                        continue;
                    };
                    caught_up = message.info().map(|i| i.pending == 0).unwrap_or(true);
                    let now = caught_up.then(clock::utc_ns);
                    let judged = if subject::is_progress(&message.subject) {
                        judge.progress(&site, &message.payload, now)
                    } else {
                        judge.receipt(&site, &message.payload, now)
                    };
                    match judged {
                        Ok(events) => emit(&sink, events),
                        Err(refused) => say_refused(&judge, &site, &message, &refused),
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
                    break;
                }
            },
        }
    }
    tracing::info!("range stopping");
    let mut stop = Stop::begin(STOP_BUDGET);
    if let Some(message) = unacked.take() {
        stop.drain("consumer ack", message.ack()).await;
    }
    let _ = shutdown_tx.send(true);
    stop.drain("http", face.task).await;
    crate::daemon::shutdown::close_events(&mut stop, sink, None).await;
    stop.finish()?;
    Ok(())
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

/// The range's vehicles for `/status` (and the board).
fn snapshot(judge: &RangeJudge, started_ns: i64) -> StatusSnapshot {
    let now = clock::utc_ns();
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
