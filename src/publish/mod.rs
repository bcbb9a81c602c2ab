//! `[publish]`: this site's receive log and events, line for line, to NATS JetStream. The local
//! files stay the source of truth: the publisher follows them ([`follow`]) from a cursor it
//! persists under `<data_dir>/publish/`, and moves the cursor only past lines JetStream has
//! acknowledged. Each message carries a `Nats-Msg-Id` made of the site, the file and the byte
//! offset, the same after any restart, so a line published twice (an ack lost in an outage) is
//! dropped by the stream's dedupe window: exactly once in the stream. Receiving and alerting
//! never wait for NATS; while it is away the cursor waits and the files hold everything.
//!
//! Streams (created when missing, file storage): `FOXBORNE_RECEIPTS` with subjects
//! `foxborne.receipts.<site>.<sysid>`, `FOXBORNE_EVENTS` with `foxborne.events.<site>.<kind>`.
//!
//! **Progress marks.** A site that hears nothing publishes nothing, and a site whose publishing
//! stalls (NATS away, this site's network down) looks the same from the range; the range could
//! only guess, and a guess raises false gaps for every vehicle at the outage and closes them
//! absurdly short when the backlog comes. So the receipts stream also carries, on
//! `foxborne.receipts.<site>.progress`, marks `{"complete_through_utc": T}` that say: every
//! receipt this site stamped before T is in the stream, ahead of this mark. The publisher sends
//! one (at most every [`PROGRESS_EVERY`]) once it has read the receive log to its end and had
//! every line acknowledged, with T the instant the daemon's pipeline had handed every receipt
//! before it to the receive writer and the writer had written them
//! (`WriterStats::complete_through_ns`, read before the file was read). The range judges each
//! site only as far as its marks go.

pub mod follow;
pub mod subject;

use crate::config::PublishSettings;
use crate::monitor::event::{LinkKind, LinkState};
use crate::monitor::{Event, LinkEvent, UtcTime};
use crate::sink::writer::WriterStats;
use follow::{Cursor, Follower, Line};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

pub const RECEIPTS_STREAM: &str = "FOXBORNE_RECEIPTS";
pub const EVENTS_STREAM: &str = "FOXBORNE_EVENTS";
/// Publishes awaiting their ack at once, per stream.
const MAX_IN_FLIGHT: usize = 256;
/// How long JetStream remembers message ids: a redelivery within it is dropped.
const DEDUPE_WINDOW: Duration = Duration::from_secs(3600);
/// How often the follower looks for new lines when it has caught up.
const POLL: Duration = Duration::from_millis(100);
/// Progress marks go out at most this often (of the site's clock).
pub const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// A progress mark as the receipts stream carries it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ProgressMark {
    /// Every receipt this site stamped before this instant is in the stream before the mark.
    pub complete_through_utc: String,
}

/// How long the streams keep messages when the `range` creates them first.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 86_400);

/// A stream as the sites and the range create it when it is missing: file storage, `max_age`,
/// the dedupe window, subjects `foxborne.<receipts|events>.>`.
pub fn stream_config(name: &str, max_age: Duration) -> async_nats::jetstream::stream::Config {
    let subjects = if name == RECEIPTS_STREAM {
        subject::ALL_RECEIPTS
    } else {
        subject::ALL_EVENTS
    };
    async_nats::jetstream::stream::Config {
        name: name.to_string(),
        subjects: vec![subjects.to_string()],
        storage: async_nats::jetstream::stream::StorageType::File,
        max_age,
        duplicate_window: DEDUPE_WINDOW,
        ..Default::default()
    }
}

/// Retrying NATS (a stream to create, a batch not acknowledged): 0.2 s doubling to 5 s, with
/// jitter so sites that lost the same server do not return in step.
fn nats_backoff() -> crate::backoff::Backoff {
    crate::backoff::Backoff::new(Duration::from_millis(200), Duration::from_secs(5)).with_jitter()
}

/// One stream's counters, for `/status` and `/metrics`.
#[derive(Debug, Default)]
pub struct StreamStats {
    pub published: AtomicU64,
    pub acked: AtomicU64,
    pub pending_bytes: AtomicU64,
    pub failures: AtomicU64,
    /// UTC ns of the last ack (0: none yet).
    pub last_ack_utc_ns: AtomicI64,
}

#[derive(Debug, Default)]
pub struct PublishStats {
    pub site: String,
    pub connected: AtomicBool,
    pub receipts: StreamStats,
    pub events: StreamStats,
}

/// What one followed file set is published as.
#[derive(Clone, Copy)]
pub enum Kind {
    Receipts,
    Events,
}

impl Kind {
    /// Its name on `/status` and in the metrics' `stream` label.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Receipts => "receipts",
            Kind::Events => "events",
        }
    }

    /// The subject for a line: by sysid for receipts, by kind for events.
    fn subject(self, site: &str, line: &[u8]) -> Option<String> {
        match self {
            Kind::Receipts => {
                let receipt: crate::receipt::ReceiptRecord = serde_json::from_slice(line).ok()?;
                Some(subject::receipt(site, receipt.sysid))
            }
            Kind::Events => {
                #[derive(serde::Deserialize)]
                struct EventKind {
                    kind: String,
                }
                let EventKind { kind } = serde_json::from_slice(line).ok()?;
                subject::event(site, &kind)
            }
        }
    }
}

/// The message id of a line: stable across restarts, unique across sites and files.
pub fn message_id(site: &str, kind: &str, line: &Line) -> String {
    format!("{site}/{kind}/{}/{}", line.file, line.offset)
}

/// The NATS connection's name in `link` events.
pub const NATS_LINK: &str = "nats";

/// Starts publishing. The NATS connection's `link` events (up, down) go to `link_events`, for
/// the events stream like any link's. `receive_log` is the receive writer's counters, for the
/// progress marks.
pub fn spawn(
    settings: PublishSettings,
    data_dir: PathBuf,
    stats: Arc<PublishStats>,
    receive_log: Arc<WriterStats>,
    link_events: mpsc::Sender<Event>,
    shutdown: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(
        settings,
        data_dir,
        stats,
        receive_log,
        link_events,
        shutdown,
    ))
}

async fn run(
    settings: PublishSettings,
    data_dir: PathBuf,
    stats: Arc<PublishStats>,
    receive_log: Arc<WriterStats>,
    link_events: mpsc::Sender<Event>,
    mut shutdown: watch::Receiver<bool>,
) {
    let state_dir = data_dir.join("publish");
    if let Err(e) = std::fs::create_dir_all(&state_dir) {
        tracing::error!(error = %e, dir = %state_dir.display(), "publish: cannot create the cursor folder; not publishing");
        return;
    }
    let client = tokio::select! {
        _ = shutdown.wait_for(|stop| *stop) => return,
        client = connect(&settings, stats.clone(), link_events) => client,
    };
    let Some(client) = client else { return };
    let js = async_nats::jetstream::new(client);
    let max_age = Duration::from_secs_f64(settings.max_age_days * 86_400.0);
    let mut backoff = nats_backoff();
    for name in [RECEIPTS_STREAM, EVENTS_STREAM] {
        loop {
            match js.get_or_create_stream(stream_config(name, max_age)).await {
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(stream = name, error = %e, "publish: cannot create or find the stream; retrying");
                    tokio::select! {
                        _ = shutdown.wait_for(|stop| *stop) => return,
                        _ = tokio::time::sleep(backoff.failed(crate::backoff::draw())) => {}
                    }
                }
            }
        }
    }
    tracing::info!(site = %settings.site, "publishing the receive log and events to NATS JetStream");
    let receipts = tokio::spawn(pump(
        js.clone(),
        settings.site.clone(),
        Kind::Receipts,
        data_dir.join(crate::sink::RECEIVE_LOG.folder),
        state_dir.join("receipts.cursor"),
        stats.clone(),
        Some(receive_log),
        shutdown.clone(),
    ));
    let events = tokio::spawn(pump(
        js,
        settings.site.clone(),
        Kind::Events,
        data_dir.join(crate::sink::EVENTS.folder),
        state_dir.join("events.cursor"),
        stats,
        None,
        shutdown,
    ));
    let _ = tokio::join!(receipts, events);
}

/// A `link` event for the NATS connection.
fn nats_link_event(state: LinkState, reason: String) -> Event {
    Event::from(LinkEvent {
        utc: UtcTime(crate::clock::utc_ns()),
        kind: LinkKind,
        link: NATS_LINK.to_string(),
        state,
        reason: Some(reason),
        counts: None,
    })
}

async fn connect(
    settings: &PublishSettings,
    stats: Arc<PublishStats>,
    link_events: mpsc::Sender<Event>,
) -> Option<async_nats::Client> {
    let url = settings.nats_url.clone();
    let server = redacted(&url);
    let mut options = async_nats::ConnectOptions::new()
        .name(format!("foxborne-receiver {}", settings.site))
        .retry_on_initial_connect()
        .event_callback(move |event| {
            let (stats, link_events, server) = (stats.clone(), link_events.clone(), server.clone());
            async move {
                let (state, detail) = match event {
                    async_nats::Event::Connected => {
                        tracing::info!("publish: connected to NATS");
                        (LinkState::Up, format!("connected to {server}"))
                    }
                    async_nats::Event::Disconnected => {
                        tracing::warn!("publish: NATS connection lost; the files keep everything and publishing resumes where it stopped");
                        (
                            LinkState::Down,
                            format!("connection to {server} lost; publishing resumes from the cursor"),
                        )
                    }
                    other => {
                        tracing::debug!(event = %other, "publish: NATS");
                        return;
                    }
                };
                stats
                    .connected
                    .store(state == LinkState::Up, Ordering::Relaxed);
                // A full queue (the pipeline far behind) loses the event, never blocks NATS.
                let _ = link_events.try_send(nats_link_event(state, detail));
            }
        });
    if let Some(creds) = &settings.creds_file {
        options = match options.credentials_file(creds).await {
            Ok(o) => o,
            Err(e) => {
                tracing::error!(error = %e, file = %creds.display(), "publish: cannot read the NATS credentials; not publishing");
                return None;
            }
        };
    }
    match options.connect(url.as_str()).await {
        Ok(client) => Some(client),
        Err(e) => {
            tracing::error!(error = %e, url = %url, "publish: cannot connect to NATS; not publishing");
            None
        }
    }
}

/// Publishes one file set from its persisted cursor, forever (until shutdown), with progress
/// marks when `complete` (the receive log's writer) is given.
#[allow(clippy::too_many_arguments)]
async fn pump(
    js: async_nats::jetstream::Context,
    site: String,
    kind: Kind,
    root: PathBuf,
    cursor_file: PathBuf,
    stats: Arc<PublishStats>,
    complete: Option<Arc<WriterStats>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut marked_through = 0i64;
    let counters = match kind {
        Kind::Receipts => &stats.receipts,
        Kind::Events => &stats.events,
    };
    let mut acked = follow::load_cursor(&cursor_file);
    let mut saved = acked.clone();
    let mut follower = Follower::new(&root, "jsonl", acked.clone());
    let mut backoff = nats_backoff();
    loop {
        if *shutdown.borrow() {
            break;
        }
        counters
            .pending_bytes
            .store(follower.pending_bytes(), Ordering::Relaxed);
        // Read before the files: every receipt stamped before it is in them now.
        let through = complete
            .as_ref()
            .map(|c| c.complete_through_ns.load(Ordering::Acquire));
        let read = tokio::task::block_in_place(|| follower.read(MAX_IN_FLIGHT, 4 << 20));
        let read_ok = read.is_ok();
        let lines = read.unwrap_or_else(|e| {
            tracing::warn!(error = %e, root = %root.display(), "publish: cannot read the files");
            Vec::new()
        });
        let read_to_the_end = read_ok && follower.pending_bytes() == 0;
        if lines.is_empty() {
            if let Some(t) = through.filter(|&t| {
                read_to_the_end && t - marked_through >= PROGRESS_EVERY.as_nanos() as i64
            }) {
                if publish_progress(&js, &site, t).await.is_ok() {
                    marked_through = t;
                }
            }
            if saved != acked {
                persist(&cursor_file, &acked);
                saved = acked.clone();
            }
            tokio::select! {
                _ = shutdown.wait_for(|stop| *stop) => break,
                _ = tokio::time::sleep(POLL) => continue,
            }
        }
        match publish_batch(&js, &site, kind, &lines, counters).await {
            Ok(()) => {
                acked = lines.last().map(Line::end).unwrap_or(acked);
                backoff.succeeded();
                // Under steady load a read seldom comes back empty: this batch reached the end
                // of what was written, so the mark holds after it too.
                if let Some(t) = through.filter(|&t| {
                    read_to_the_end && t - marked_through >= PROGRESS_EVERY.as_nanos() as i64
                }) {
                    if publish_progress(&js, &site, t).await.is_ok() {
                        marked_through = t;
                    }
                }
                persist(&cursor_file, &acked);
                saved = acked.clone();
            }
            Err(e) => {
                counters.failures.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(stream = kind.name(), error = %e, "publish: batch not acknowledged; retrying from the last acknowledged line");
                follower.rewind(acked.clone());
                tokio::select! {
                    _ = shutdown.wait_for(|stop| *stop) => break,
                    _ = tokio::time::sleep(backoff.failed(crate::backoff::draw())) => {}
                }
            }
        }
    }
    persist(&cursor_file, &acked);
}

/// One progress mark, acknowledged: every line read before it was acknowledged already.
async fn publish_progress(
    js: &async_nats::jetstream::Context,
    site: &str,
    complete_through_ns: i64,
) -> Result<(), String> {
    let mark = ProgressMark {
        complete_through_utc: crate::monitor::format_utc_ms(complete_through_ns),
    };
    let publish = async_nats::jetstream::context::Publish::build()
        .payload(serde_json::to_vec(&mark).expect("a mark serialises").into())
        .message_id(format!(
            "{site}/{}/{complete_through_ns}",
            subject::PROGRESS_TOKEN
        ));
    js.send_publish(subject::progress(site), publish)
        .await
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Sends every line, then awaits every ack in order: all acknowledged, or an error.
async fn publish_batch(
    js: &async_nats::jetstream::Context,
    site: &str,
    kind: Kind,
    lines: &[Line],
    counters: &StreamStats,
) -> Result<(), String> {
    let mut in_flight = VecDeque::with_capacity(lines.len());
    for line in lines {
        let Some(subject) = kind.subject(site, &line.text) else {
            tracing::warn!(file = %line.file, offset = line.offset, "publish: a line without sysid/kind is not published");
            continue;
        };
        let publish = async_nats::jetstream::context::Publish::build()
            .payload(line.text.clone().into())
            .message_id(message_id(site, kind.name(), line));
        let ack = js
            .send_publish(subject, publish)
            .await
            .map_err(|e| e.to_string())?;
        counters.published.fetch_add(1, Ordering::Relaxed);
        in_flight.push_back(ack);
    }
    while let Some(ack) = in_flight.pop_front() {
        ack.await.map_err(|e| e.to_string())?;
        counters.acked.fetch_add(1, Ordering::Relaxed);
        counters
            .last_ack_utc_ns
            .store(crate::clock::utc_ns(), Ordering::Relaxed);
    }
    Ok(())
}

/// The server's address for events and logs: a user and password in it left out.
fn redacted(nats_url: &str) -> String {
    match url::Url::parse(nats_url) {
        Ok(mut shown) if shown.has_host() => {
            let _ = shown.set_username("");
            let _ = shown.set_password(None);
            shown.to_string()
        }
        _ => nats_url.rsplit('@').next().unwrap_or(nats_url).to_string(),
    }
}

fn persist(path: &Path, cursor: &Cursor) {
    if let Err(e) = follow::save_cursor(path, cursor) {
        tracing::warn!(error = %e, file = %path.display(), "publish: cannot save the cursor");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_and_ids() {
        assert_eq!(
            Kind::Receipts.subject(
                "north",
                br#"{"recv_utc":"x","mono_ns":1,"link":"radio1","sysid":42,"compid":1,"msgid":0,"msg":"HEARTBEAT","seq":0,"len":9}"#
            ),
            Some("foxborne.receipts.north.42".into())
        );
        assert_eq!(
            Kind::Events.subject("north", br#"{"utc":"x","kind":"telemetry_gap","sysid":4}"#),
            Some("foxborne.events.north.telemetry_gap".into())
        );
        assert_eq!(Kind::Events.subject("north", br#"{"kind":"a.b"}"#), None);
        assert_eq!(Kind::Receipts.subject("north", b"not json"), None);
        let line = Line {
            file: "2026-12-01/receive-20261201T000000Z.jsonl".into(),
            offset: 1234,
            text: Vec::new(),
        };
        assert_eq!(
            redacted("nats://range:secret@nats.range.example:4222"),
            "nats://nats.range.example:4222"
        );
        assert_eq!(redacted("user:pw@10.0.0.5:4222"), "10.0.0.5:4222");
        assert_eq!(
            message_id("north", "receipts", &line),
            "north/receipts/2026-12-01/receive-20261201T000000Z.jsonl/1234"
        );
    }
}
