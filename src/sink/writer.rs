//! The writer thread behind each rotating file. The pipeline hands it batches without ever
//! waiting: the queue is bounded in bytes at the sender ([`WriterHandle::offer`]), so when the disk
//! is slow or full, batches wait in memory up to that bound and what would pass it is dropped and
//! counted (lines and time span), never lost silently. The thread retries failed writes, fsyncs
//! on its interval, reopens on request and, when the sender goes away, drains, fsyncs and ends.

use super::rotating::RotatingFile;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One day's worth of whole lines (or records).
#[derive(Debug)]
pub struct Batch {
    pub day: i64,
    pub first_utc_ns: i64,
    pub last_utc_ns: i64,
    pub lines: u64,
    pub bytes: Vec<u8>,
}

impl Batch {
    /// Takes `later`'s lines after its own when both are of the same day and the two together
    /// stay within `max_bytes`; gives `later` back otherwise.
    pub fn join(&mut self, later: Batch, max_bytes: usize) -> Result<(), Batch> {
        if later.day != self.day || self.bytes.len() + later.bytes.len() > max_bytes {
            return Err(later);
        }
        self.bytes.extend_from_slice(&later.bytes);
        self.lines += later.lines;
        self.first_utc_ns = self.first_utc_ns.min(later.first_utc_ns);
        self.last_utc_ns = self.last_utc_ns.max(later.last_utc_ns);
        Ok(())
    }
}

enum Message {
    Batch(Batch),
    Reopen,
    /// Every line stamped before this instant has been handed over (see
    /// [`WriterHandle::complete_through`]).
    Through(i64),
}

/// What waits in the writer thread's queue, in order.
enum Queued {
    Lines(Batch),
    Through(i64),
}

/// What was dropped because the buffer was full: count and the receipt times it spans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    pub lines: u64,
    pub first_utc_ns: i64,
    pub last_utc_ns: i64,
}

#[derive(Debug, Default)]
pub struct WriterStats {
    pub lines_written: AtomicU64,
    pub bytes_written: AtomicU64,
    pub pending_bytes: AtomicU64,
    pub write_errors: AtomicU64,
    pub dropped_lines: AtomicU64,
    /// Of those, lines still queued at shutdown that a failing disk never took.
    pub dropped_at_close: AtomicU64,
    /// Nanoseconds from a batch's last receipt to its write, for the last batch written.
    pub last_write_lag_ns: AtomicU64,
    pub last_error: Mutex<Option<String>>,
    /// Drops not yet reported as a `dropped` event; taken by the pipeline.
    pub unreported_drops: Mutex<Option<Dropped>>,
    /// UTC ns before which every line is in the file (0: not known yet): the last
    /// [`WriterHandle::complete_through`] whose lines before it are all written. The publisher
    /// reads it to say how far the receive log it published is complete.
    pub complete_through_ns: AtomicI64,
}

pub struct WriterHandle {
    tx: Option<mpsc::Sender<Message>>,
    thread: Option<JoinHandle<()>>,
    pub stats: Arc<WriterStats>,
    max_pending: u64,
    name: String,
}

impl WriterHandle {
    /// Queues a batch unless that would pass the buffer bound; a batch that does not fit is
    /// dropped and counted. Never blocks.
    pub fn offer(&self, batch: Batch) -> bool {
        let size = batch.bytes.len() as u64;
        let pending = self.stats.pending_bytes.load(Ordering::Acquire);
        if pending + size > self.max_pending {
            self.record_drop(&batch);
            return false;
        }
        self.stats.pending_bytes.fetch_add(size, Ordering::AcqRel);
        match self.tx.as_ref().map(|tx| tx.send(Message::Batch(batch))) {
            Some(Ok(())) => true,
            Some(Err(mpsc::SendError(Message::Batch(batch)))) => {
                self.stats.pending_bytes.fetch_sub(size, Ordering::AcqRel);
                self.record_drop(&batch);
                false
            }
            _ => false,
        }
    }

    fn record_drop(&self, batch: &Batch) {
        self.stats
            .dropped_lines
            .fetch_add(batch.lines, Ordering::Relaxed);
        let mut unreported = self.stats.unreported_drops.lock().expect("not poisoned");
        let d = unreported.get_or_insert(Dropped {
            lines: 0,
            first_utc_ns: batch.first_utc_ns,
            last_utc_ns: batch.last_utc_ns,
        });
        d.lines += batch.lines;
        d.first_utc_ns = d.first_utc_ns.min(batch.first_utc_ns);
        d.last_utc_ns = d.last_utc_ns.max(batch.last_utc_ns);
    }

    /// Drops since the last call, to report as one `dropped` event.
    pub fn take_drops(&self) -> Option<Dropped> {
        self.stats
            .unreported_drops
            .lock()
            .expect("not poisoned")
            .take()
    }

    pub fn reopen(&self) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Message::Reopen);
        }
    }

    /// Every line stamped before `utc_ns` has been offered: once the lines offered before this
    /// call are written, the file is complete up to that instant
    /// ([`WriterStats::complete_through_ns`]).
    pub fn complete_through(&self, utc_ns: i64) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Message::Through(utc_ns));
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Ends the thread after it has written (or, with the disk still failing after
    /// `give_up_after`, counted as dropped) everything queued, and fsynced.
    pub fn close(mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for WriterHandle {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How long the thread keeps retrying a failing disk once told to close.
const CLOSE_RETRY_FOR: Duration = Duration::from_secs(5);
const RETRY_EVERY: Duration = Duration::from_millis(500);

/// `now_utc_ns` is the shell's clock, passed in so lag can be measured without this module
/// reading a clock of its own choosing.
pub fn spawn_writer(
    name: &str,
    mut file: RotatingFile,
    fsync_interval: Duration,
    max_pending_bytes: u64,
    now_utc_ns: fn() -> i64,
) -> std::io::Result<WriterHandle> {
    let (tx, rx) = mpsc::channel::<Message>();
    let stats = Arc::new(WriterStats::default());
    let thread_stats = stats.clone();
    let thread_name = name.to_string();
    let thread = std::thread::Builder::new().name(format!("write-{name}")).spawn(move || {
        let stats = thread_stats;
        let mut queue: VecDeque<Queued> = VecDeque::new();
        let mut last_sync = Instant::now();
        let mut failing_since: Option<Instant> = None;
        let mut closing_since: Option<Instant> = None;
        loop {
            let wait = if failing_since.is_some() { RETRY_EVERY } else { fsync_interval.saturating_sub(last_sync.elapsed()) };
            if closing_since.is_none() {
                match rx.recv_timeout(wait) {
                    Ok(Message::Batch(b)) => queue.push_back(Queued::Lines(b)),
                    Ok(Message::Through(t)) => queue.push_back(Queued::Through(t)),
                    Ok(Message::Reopen) => {
                        write_queue(&mut file, &mut queue, &stats, &thread_name, &mut failing_since, now_utc_ns);
                        file.reopen();
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => closing_since = Some(Instant::now()),
                }
                // Take whatever else is already queued so it goes out in the same pass.
                while let Ok(msg) = rx.try_recv() {
                    match msg {
                        Message::Batch(b) => queue.push_back(Queued::Lines(b)),
                        Message::Through(t) => queue.push_back(Queued::Through(t)),
                        Message::Reopen => {
                            write_queue(&mut file, &mut queue, &stats, &thread_name, &mut failing_since, now_utc_ns);
                            file.reopen();
                        }
                    }
                }
            } else if failing_since.is_some() {
                std::thread::sleep(RETRY_EVERY);
            }
            write_queue(&mut file, &mut queue, &stats, &thread_name, &mut failing_since, now_utc_ns);
            if last_sync.elapsed() >= fsync_interval || closing_since.is_some() {
                if let Err(e) = file.sync() {
                    tracing::warn!(file = %thread_name, error = %e, "fsync failed");
                }
                last_sync = Instant::now();
            }
            if let Some(since) = closing_since {
                if queue.is_empty() {
                    break;
                }
                if since.elapsed() > CLOSE_RETRY_FOR {
                    for b in queue.drain(..).filter_map(|q| match q {
                        Queued::Lines(b) => Some(b),
                        Queued::Through(_) => None,
                    }) {
                        stats.dropped_lines.fetch_add(b.lines, Ordering::Relaxed);
                        stats.dropped_at_close.fetch_add(b.lines, Ordering::Relaxed);
                        tracing::error!(file = %thread_name, lines = b.lines, "disk still failing at shutdown: lines dropped");
                    }
                    break;
                }
            }
        }
    })?;
    Ok(WriterHandle {
        tx: Some(tx),
        thread: Some(thread),
        stats,
        max_pending: max_pending_bytes,
        name: name.to_string(),
    })
}

fn write_queue(
    file: &mut RotatingFile,
    queue: &mut VecDeque<Queued>,
    stats: &WriterStats,
    name: &str,
    failing_since: &mut Option<Instant>,
    now_utc_ns: fn() -> i64,
) {
    while let Some(queued) = queue.front_mut() {
        let batch = match queued {
            Queued::Lines(batch) => batch,
            Queued::Through(t) => {
                stats.complete_through_ns.fetch_max(*t, Ordering::Release);
                queue.pop_front();
                continue;
            }
        };
        match file.write(batch.day, batch.first_utc_ns, &batch.bytes) {
            Ok(()) => {
                let size = batch.bytes.len() as u64;
                stats
                    .lines_written
                    .fetch_add(batch.lines, Ordering::Relaxed);
                stats.bytes_written.fetch_add(size, Ordering::Relaxed);
                stats.pending_bytes.fetch_sub(size, Ordering::AcqRel);
                let lag = (now_utc_ns() - batch.last_utc_ns).max(0) as u64;
                stats.last_write_lag_ns.store(lag, Ordering::Relaxed);
                queue.pop_front();
                if failing_since.take().is_some() {
                    tracing::info!(file = %name, "writing again");
                }
            }
            Err(partial) => {
                // Keep what did not reach the disk; lines that did are counted now.
                if partial.written > 0 {
                    let done = &batch.bytes[..partial.written];
                    let lines = done.iter().filter(|&&b| b == b'\n').count() as u64;
                    stats.lines_written.fetch_add(lines, Ordering::Relaxed);
                    stats
                        .bytes_written
                        .fetch_add(partial.written as u64, Ordering::Relaxed);
                    stats
                        .pending_bytes
                        .fetch_sub(partial.written as u64, Ordering::AcqRel);
                    batch.bytes.drain(..partial.written);
                    batch.lines = batch.lines.saturating_sub(lines);
                }
                stats.write_errors.fetch_add(1, Ordering::Relaxed);
                if failing_since.is_none() {
                    tracing::error!(file = %name, error = %partial.error, "write failed; keeping lines in memory and retrying");
                    *failing_since = Some(Instant::now());
                }
                *stats.last_error.lock().expect("not poisoned") = Some(partial.error.to_string());
                return;
            }
        }
    }
}
