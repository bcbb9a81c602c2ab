//! What the two services, `run` (the receiver) and `range` (the range view), bring up alike: a
//! rotating file set with its own writer thread under the data folder, the events sink (the
//! events file, the webhooks, the HTTP face's `/events` log and board history) and the
//! `receiver` start event that opens every events file. One bring-up, so the range cannot drift
//! from the receiver in how it files, delivers or announces its events.

use super::events::EventSink;
use crate::config::WebhookSettings;
use crate::http::Face;
use crate::monitor::event::{ReceiverKind, ReceiverState};
use crate::monitor::{Event, ReceiverEvent, UtcTime};
use crate::sink::webhook::Webhook;
use crate::sink::{spawn_writer, FileSet, RotatingFile, WriterHandle};
use anyhow::Context;
use std::path::Path;
use std::time::Duration;

/// How a service's files are written: where, when a file is rotated, how often it is fsynced,
/// how much a writer may hold before it drops (and counts) what it cannot write, and the UTC
/// clock (nanoseconds) that picks each line's day folder and file.
#[derive(Debug, Clone, Copy)]
pub struct FileSettings<'a> {
    pub data_dir: &'a Path,
    pub rotate_size_bytes: u64,
    pub fsync_interval: Duration,
    pub buffer_bytes: u64,
    pub clock: fn() -> i64,
}

impl FileSettings<'_> {
    /// One rotating file set under `<data_dir>/<folder>`, with its own writer thread.
    pub fn open(&self, set: FileSet) -> anyhow::Result<WriterHandle> {
        let dir = self.data_dir.join(set.folder);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let file = RotatingFile::new(
            &dir,
            set.prefix,
            set.ext,
            self.rotate_size_bytes,
            set.framing,
        );
        Ok(spawn_writer(
            set.folder,
            file,
            self.fsync_interval,
            self.buffer_bytes,
            self.clock,
        )?)
    }
}

/// The events sink: `set` opened with `files`, every configured webhook started, and the HTTP
/// face's event log and board history; then the `receiver` start event written first, with
/// `message` (what was started) and `detail` (the effective config).
pub fn open_events(
    files: &FileSettings<'_>,
    set: FileSet,
    webhooks: &[WebhookSettings],
    face: &Face,
    started_utc_ns: i64,
    message: String,
    detail: serde_json::Value,
) -> anyhow::Result<EventSink> {
    let file = files.open(set)?;
    let webhooks = webhooks
        .iter()
        .map(Webhook::spawn)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let sink = EventSink {
        file,
        sse: face.events.clone(),
        webhooks,
        history: face.history.clone(),
        filing_clock: files.clock,
    };
    sink.emit(&Event::from(ReceiverEvent {
        utc: UtcTime(started_utc_ns),
        kind: ReceiverKind,
        state: ReceiverState::Start,
        version: Some(env!("CARGO_PKG_VERSION").to_string()),
        message: Some(message),
        detail: Some(detail),
    }));
    Ok(sink)
}
