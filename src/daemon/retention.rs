//! The retention task: at start and hourly, plans (`sink::retention::plan`) and removes the
//! oldest day folders of `receive/`, `events/` and `tlog/` past `[retention]`'s bounds, off the
//! async threads, and hands the pipeline a `retention` event listing what went (and whether the
//! streams are still over `max_total_mb` with nothing left that may go).

use crate::clock;
use crate::config::RetentionSettings;
use crate::monitor::event::RetentionKind;
use crate::monitor::{Event, RemovedFolder, RetentionEvent, UtcTime};
use crate::sink::retention::{self, Bounds};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How often the bounds are checked after the one at start.
pub const INTERVAL: Duration = Duration::from_secs(3600);

/// Checks once now, then every [`INTERVAL`] until shutdown; each check with something to say
/// sends its event to `events`.
pub async fn run(
    data_dir: PathBuf,
    settings: RetentionSettings,
    events: mpsc::Sender<Event>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut ticks = tokio::time::interval(INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = shutdown.changed() => return,
        }
        let dir = data_dir.clone();
        match tokio::task::spawn_blocking(move || check(&dir, settings, clock::utc_ns())).await {
            Ok(Ok(Some(event))) => {
                if events.send(Event::from(event)).await.is_err() {
                    return;
                }
            }
            Ok(Ok(None)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "retention: cannot read the data folders"),
            Err(e) => tracing::warn!(error = %e, "retention check failed"),
        }
    }
}

/// One check at `now_ns`: the event to send, if anything went or the streams are still over.
pub fn check(
    data_dir: &Path,
    settings: RetentionSettings,
    now_ns: i64,
) -> std::io::Result<Option<RetentionEvent>> {
    let folders = retention::scan(data_dir)?;
    let bounds = Bounds {
        max_age_days: settings.max_age_days,
        max_total_bytes: settings.max_total_bytes(),
    };
    let plan = retention::plan(&folders, crate::utc::day_of(now_ns), bounds);
    if plan.remove.is_empty() && plan.over_by.is_none() {
        return Ok(None);
    }
    let gone = retention::remove(data_dir, &plan);
    // What could not be removed still counts.
    let not_gone: u64 = plan
        .remove
        .iter()
        .filter(|(f, _)| !gone.iter().any(|(g, _)| g == f))
        .map(|(f, _)| f.bytes)
        .sum();
    let total_bytes = plan.total_after + not_gone;
    let over_by_bytes = settings
        .max_total_bytes()
        .filter(|max| total_bytes > *max)
        .map(|max| total_bytes - max);
    Ok(Some(RetentionEvent {
        utc: UtcTime(now_ns),
        kind: RetentionKind,
        removed: gone
            .into_iter()
            .map(|(folder, reason)| RemovedFolder {
                folder: folder.name(),
                files: folder.files,
                bytes: folder.bytes,
                reason: reason.key().to_string(),
            })
            .collect(),
        total_bytes,
        max_age_days: settings.max_age_days,
        max_total_mb: settings.max_total_mb,
        over_by_bytes,
    }))
}
