//! What waits between a link's receive task and its scanner thread: bounded in bytes, with the
//! arrival stamps of everything not yet through the pipeline (the link's watermark), and the
//! count of what the receiver itself dropped (a full queue; the kernel's socket buffer).
//!
//! A UDP link has no queue here (its socket buffer is its queue, and it scans what it reads):
//! it only lists its datagrams' arrival stamps, the kernel's, which are older than the read
//! ([`LinkShared::list`]); while it waits for its next read window (`read_window_ms`) it tells
//! the pipeline the moment of its last emptying read ([`LinkShared::reading_since`]), so the
//! watermark waits for what the kernel holds. Every stamp the pipeline may already have judged
//! past is raised to the floor it was promised, so the monitors never see the past.
//!
//! Nothing here ever blocks a datagram or serial receive task: data that does not fit is
//! dropped and counted (`overload`), so one flooded link costs only its own input. A TCP link
//! waits for room instead ([`LinkSender::offer_waiting`]): TCP's own flow control then holds
//! the sender back, and nothing it sent is lost or cut out of the middle of its stream.

use super::input::LinkInput;
use crate::clock;
use crate::link::LinkChange;
use crate::link::Stamp;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, Notify};

/// Entries a link queue holds at most, whatever their size (the byte bound usually comes first).
const MAX_QUEUED_INPUTS: usize = 65_536;

/// Counters and watermark state of one link, shared by its receive task, its scanner thread
/// and the pipeline.
#[derive(Debug, Default)]
pub struct LinkShared {
    in_flight: Mutex<InFlight>,
    queued_bytes: AtomicU64,
    limit_bytes: u64,
    /// Datagrams (or serial reads) dropped because the queue was full.
    pub overload_drops: AtomicU64,
    pub overload_bytes: AtomicU64,
    /// Datagrams the kernel dropped for want of socket buffer (`SO_RXQ_OVFL`).
    pub kernel_drops: AtomicU64,
    /// Told whenever the scanner takes bytes off the queue (a TCP link waits for room on it).
    room: Notify,
}

/// What the pipeline may rely on about a link's data not yet through it.
#[derive(Debug, Default)]
struct InFlight {
    /// Arrival stamps (UTC ns) of data queued or being scanned and not yet handed to the
    /// monitors, oldest first.
    stamps: VecDeque<i64>,
    /// Set while a UDP link waits for its next read window or works through a backlog:
    /// everything it has not yet listed arrived at or after this.
    reading_since: Option<i64>,
    /// The earliest stamp the link may still list: the pipeline was told nothing older is in
    /// flight, so it may have judged up to just before it.
    floor: i64,
}

impl InFlight {
    /// `at`, or the floor when the pipeline may have judged past `at` already (the read came
    /// late): both clocks move by the same amount.
    fn not_before_floor(&self, at: Stamp) -> Stamp {
        let late = self.floor.saturating_sub(at.utc_ns);
        if late <= 0 {
            return at;
        }
        Stamp {
            utc_ns: self.floor,
            mono_ns: at.mono_ns.saturating_add(late as u64),
        }
    }
}

impl LinkShared {
    pub fn new(limit_bytes: u64) -> Arc<Self> {
        Arc::new(Self {
            limit_bytes,
            ..Self::default()
        })
    }

    /// The oldest stamp not yet through the pipeline (or the start of the last emptying read,
    /// while the link waits for its next read window); `None` when the link is idle. `now_ns` is
    /// the pipeline's now: from here on the link lists nothing it could already have judged.
    pub fn oldest_in_flight(&self, now_ns: i64) -> Option<i64> {
        let mut in_flight = self.in_flight.lock().expect("not poisoned");
        let oldest = in_flight
            .stamps
            .front()
            .copied()
            .or(in_flight.reading_since);
        let floor = oldest.unwrap_or(now_ns.saturating_add(1));
        in_flight.floor = in_flight.floor.max(floor);
        oldest
    }

    /// Lists the arrival stamps of what a UDP link just read, before it scans them: each the
    /// kernel's, raised to the floor when the pipeline may already have judged past it (the
    /// read came late), both clocks by the same amount.
    pub fn list(&self, arrivals: &mut [Stamp]) {
        let mut in_flight = self.in_flight.lock().expect("not poisoned");
        for at in arrivals {
            *at = in_flight.not_before_floor(*at);
            in_flight.stamps.push_back(at.utc_ns);
        }
    }

    /// What a UDP link promises of what it has not read yet: `Some(t)`, everything unread
    /// arrived at or after `t` (the start of its last read that emptied the socket, while it
    /// waits for its next window; the arrival of the last datagram read, while it works through
    /// a backlog); `None` once it found the socket empty and waits for data.
    pub fn reading_since(&self, since: Option<i64>) {
        self.in_flight.lock().expect("not poisoned").reading_since = since;
    }

    /// The pipeline has handed `n` inputs of this link to the monitors.
    pub fn delivered(&self, n: usize) {
        let stamps = &mut self.in_flight.lock().expect("not poisoned").stamps;
        let n = n.min(stamps.len());
        stamps.drain(..n);
    }

    /// The scanner has taken `bytes` off the queue.
    pub fn dequeued(&self, bytes: u64) {
        self.queued_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.room.notify_waiters();
    }

    /// Every datagram this receiver dropped on the link, for whatever reason.
    pub fn dropped(&self) -> u64 {
        self.overload_drops.load(Ordering::Relaxed) + self.kernel_drops.load(Ordering::Relaxed)
    }
}

/// The receive task's end of a link queue.
#[derive(Clone)]
pub struct LinkSender {
    tx: mpsc::Sender<LinkInput>,
    shared: Arc<LinkShared>,
}

/// The queue refused nothing but is gone: the scanner stopped (shutdown).
#[derive(Debug)]
pub struct Closed;

pub fn link_queue(shared: Arc<LinkShared>) -> (LinkSender, mpsc::Receiver<LinkInput>) {
    let (tx, rx) = mpsc::channel(MAX_QUEUED_INPUTS);
    (LinkSender { tx, shared }, rx)
}

impl LinkSender {
    /// Stamps and queues received bytes, or drops and counts them when the queue is full.
    /// `make` builds the input from the arrival stamp. The stamp is read while the in-flight
    /// list is held, so the pipeline can never see this link idle after the stamp was taken
    /// and before the stamp is listed (see `monitor::merge`).
    pub fn offer(
        &self,
        len: usize,
        make: impl FnOnce(Stamp) -> LinkInput,
    ) -> Result<Option<Stamp>, Closed> {
        let len = len as u64;
        if self.shared.queued_bytes.load(Ordering::Relaxed) + len > self.shared.limit_bytes {
            self.count_overload(len);
            return Ok(None);
        }
        let mut in_flight = self.shared.in_flight.lock().expect("not poisoned");
        let at = in_flight.not_before_floor(clock::stamp());
        match self.tx.try_send(make(at)) {
            Ok(()) => {
                in_flight.stamps.push_back(at.utc_ns);
                self.shared.queued_bytes.fetch_add(len, Ordering::Relaxed);
                Ok(Some(at))
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                drop(in_flight);
                self.count_overload(len);
                Ok(None)
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Closed),
        }
    }

    /// Stamps and queues received bytes, waiting while the queue is full (a TCP link: the
    /// kernel's buffer and then the sender hold what comes meanwhile). A read larger than the
    /// whole bound is taken once the queue is empty. The stamp is the moment the queue takes the
    /// bytes: at once, unless the receiver is behind.
    pub async fn offer_waiting(
        &self,
        len: usize,
        make: impl FnOnce(Stamp) -> LinkInput,
    ) -> Result<Stamp, Closed> {
        let len = len as u64;
        loop {
            let room = self.shared.room.notified();
            tokio::pin!(room);
            // Registered before looking, so a dequeue between the look and the wait is seen.
            room.as_mut().enable();
            let queued = self.shared.queued_bytes.load(Ordering::Relaxed);
            if queued == 0 || queued + len <= self.shared.limit_bytes {
                let mut in_flight = self.shared.in_flight.lock().expect("not poisoned");
                match self.tx.try_reserve() {
                    Ok(permit) => {
                        let at = in_flight.not_before_floor(clock::stamp());
                        permit.send(make(at));
                        in_flight.stamps.push_back(at.utc_ns);
                        self.shared.queued_bytes.fetch_add(len, Ordering::Relaxed);
                        return Ok(at);
                    }
                    Err(mpsc::error::TrySendError::Closed(())) => return Err(Closed),
                    Err(mpsc::error::TrySendError::Full(())) => {}
                }
            }
            if self.tx.is_closed() {
                return Err(Closed);
            }
            // Woken by the scanner's next dequeue; checked again at least every 50 ms in case
            // the queue was full by entry count rather than bytes.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(50), room).await;
        }
    }

    /// A state change (up, down, denied): rare, never dropped, waits for room.
    pub async fn note(&self, change: LinkChange) -> Result<(), Closed> {
        self.tx
            .send(LinkInput::Change(change))
            .await
            .map_err(|_| Closed)
    }

    fn count_overload(&self, bytes: u64) {
        self.shared.overload_drops.fetch_add(1, Ordering::Relaxed);
        self.shared
            .overload_bytes
            .fetch_add(bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tcp_read_waits_for_room_instead_of_being_dropped() {
        let shared = LinkShared::new(1000);
        let (tx, mut rx) = link_queue(shared.clone());
        tx.offer_waiting(600, |at| datagram(at, 600)).await.unwrap();
        let waiting = {
            let tx = tx.clone();
            tokio::spawn(async move { tx.offer_waiting(600, |at| datagram(at, 600)).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "600 + 600 > 1000: it waits");
        assert_eq!(shared.overload_drops.load(Ordering::Relaxed), 0);
        // The scanner takes the first: the second goes in.
        assert!(rx.recv().await.is_some());
        shared.dequeued(600);
        waiting.await.unwrap().unwrap();
        assert!(rx.recv().await.is_some());
        // Larger than the whole bound: taken once the queue is empty.
        shared.dequeued(600);
        tx.offer_waiting(5000, |at| datagram(at, 5000))
            .await
            .unwrap();
        assert_eq!(shared.dropped(), 0);
        drop(rx);
        assert!(tx.offer_waiting(1, |at| datagram(at, 1)).await.is_err());
    }

    fn datagram(at: Stamp, n: usize) -> LinkInput {
        LinkInput::Stream {
            at,
            conn: 0,
            src_json: None,
            bytes: vec![0; n],
        }
    }

    #[test]
    fn input_past_the_byte_bound_is_dropped_and_counted_and_the_watermark_follows() {
        let shared = LinkShared::new(1000);
        let (tx, mut rx) = link_queue(shared.clone());
        assert_eq!(shared.oldest_in_flight(0), None);
        let first = tx.offer(600, |at| datagram(at, 600)).unwrap().unwrap();
        assert_eq!(shared.oldest_in_flight(0), Some(first.utc_ns));
        // 600 + 600 > 1000: dropped, counted; the queue still holds the first.
        assert!(tx.offer(600, |at| datagram(at, 600)).unwrap().is_none());
        assert_eq!(shared.overload_drops.load(Ordering::Relaxed), 1);
        assert_eq!(shared.overload_bytes.load(Ordering::Relaxed), 600);
        let second = tx.offer(300, |at| datagram(at, 300)).unwrap().unwrap();
        assert!(second.utc_ns >= first.utc_ns);
        // The scanner takes the first; the pipeline delivers it: the watermark moves on.
        assert!(rx.try_recv().is_ok());
        shared.dequeued(600);
        shared.delivered(1);
        assert_eq!(shared.oldest_in_flight(0), Some(second.utc_ns));
        shared.dequeued(300);
        shared.delivered(1);
        assert_eq!(shared.oldest_in_flight(0), None);
        assert_eq!(shared.dropped(), 1);
        drop(rx);
        assert!(tx.offer(1, |at| datagram(at, 1)).is_err());
    }

    fn stamp(utc_ns: i64) -> Stamp {
        Stamp {
            utc_ns,
            mono_ns: 5_000,
        }
    }

    #[test]
    fn a_kernel_stamp_the_pipeline_may_have_judged_past_is_raised_to_its_floor() {
        let shared = LinkShared::new(1000);
        // The pipeline, at 1_000, saw the link idle: it may judge up to 1_000.
        assert_eq!(shared.oldest_in_flight(1_000), None);
        // A read of two: one the kernel took at 900 but the link read only now is listed at
        // 1_001, the monotonic clock moved by the same 101 ns; one taken after the floor keeps
        // the kernel's stamp.
        let mut read = [stamp(900), stamp(1_500)];
        shared.list(&mut read);
        assert_eq!(
            read,
            [
                Stamp {
                    utc_ns: 1_001,
                    mono_ns: 5_101
                },
                stamp(1_500)
            ]
        );
        assert_eq!(shared.oldest_in_flight(2_000), Some(1_001));
        shared.delivered(1);
        assert_eq!(shared.oldest_in_flight(2_000), Some(1_500));
        shared.delivered(1);
        assert_eq!(shared.oldest_in_flight(2_000), None);
    }

    #[test]
    fn a_link_between_read_windows_holds_the_watermark_at_its_last_emptying_read() {
        let shared = LinkShared::new(1000);
        shared.reading_since(Some(700));
        // Nothing listed, but the kernel may hold datagrams from 700 on: not idle.
        assert_eq!(shared.oldest_in_flight(1_000), Some(700));
        // So what the next window lists keeps its own stamps (nothing was judged past 699).
        let mut read = [stamp(750)];
        shared.list(&mut read);
        assert_eq!(read, [stamp(750)]);
        assert_eq!(shared.oldest_in_flight(1_000), Some(750));
        // The socket found empty, the link waits for data: idle once its list is through.
        shared.reading_since(None);
        shared.delivered(1);
        assert_eq!(shared.oldest_in_flight(1_200), None);
    }
}
