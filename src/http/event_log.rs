//! The recent events, numbered, for `/events`: every event gets the next sequence number of
//! this run, is kept in a ring of the last [`RING_EVENTS`], and is sent to the live listeners.
//! A client that reconnects with `Last-Event-ID` is replayed what it missed from the ring; an
//! id from another run (the receiver restarted), or older than the ring, gets a `resync`
//! instead, so a client never silently misses an alert. Ids are `<run>-<seq>`, `<run>` being
//! this process's start time, so ids from before a restart cannot be taken for new ones.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// How many recent events a reconnecting client can be replayed.
pub const RING_EVENTS: usize = 16_384;
/// How far a live listener may fall behind before it is cut off (it can then reconnect and
/// be replayed from the ring).
pub const LIVE_BUFFER: usize = 1_024;

/// One event with its sequence number.
#[derive(Debug)]
pub struct Numbered {
    pub seq: u64,
    pub line: Arc<str>,
}

struct Ring {
    /// The sequence number the next event gets (the first is 1).
    next_seq: u64,
    events: VecDeque<Arc<Numbered>>,
}

pub struct EventLog {
    run: String,
    capacity: usize,
    ring: Mutex<Ring>,
    live: broadcast::Sender<Arc<Numbered>>,
}

/// Where a client's stream starts, from its `Last-Event-ID` (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// No id: from now on.
    Live,
    /// Replay from this sequence number.
    From(u64),
    /// The id cannot be resumed from; the reason, for the `resync` event.
    Resync(String),
}

/// `last_event_id` against this run's id prefix and the ring's `[oldest, next)` numbers.
pub fn resume(run: &str, last_event_id: Option<&str>, oldest: u64, next: u64) -> Resume {
    let Some(id) = last_event_id.map(str::trim) else {
        return Resume::Live;
    };
    let seq = match id.rsplit_once('-') {
        Some((id_run, seq)) if id_run == run => seq.parse::<u64>().ok(),
        _ => {
            return Resume::Resync(format!(
                "event id `{id}` is not from this run of the receiver (started as {run}); events in between may be missed: read /status for the current state"
            ))
        }
    };
    match seq {
        Some(seq) if seq < next && seq + 1 >= oldest => Resume::From(seq + 1),
        Some(seq) if seq < next => Resume::Resync(format!(
            "event id `{id}` is older than the {} events kept; {} events in between are missed: read /status for the current state",
            next - oldest,
            oldest - seq - 1
        )),
        _ => Resume::Resync(format!(
            "event id `{id}` was never sent by this run; read /status for the current state"
        )),
    }
}

/// What a new client is given: events to replay, or a resync, then the live feed.
pub struct Subscription {
    pub replay: Vec<Arc<Numbered>>,
    pub resync: Option<String>,
    /// The newest event's sequence number at subscription (0 before any).
    pub latest_seq: u64,
    pub live: broadcast::Receiver<Arc<Numbered>>,
}

impl EventLog {
    pub fn new(run: String, capacity: usize) -> EventLog {
        let (live, _) = broadcast::channel(LIVE_BUFFER);
        EventLog {
            run,
            capacity: capacity.max(1),
            ring: Mutex::new(Ring {
                next_seq: 1,
                events: VecDeque::new(),
            }),
            live,
        }
    }

    /// This run's id prefix.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// The SSE id of an event.
    pub fn id(&self, seq: u64) -> String {
        format!("{}-{seq}", self.run)
    }

    /// Numbers and keeps `line`, and sends it to the live listeners. Never waits on a listener.
    pub fn push(&self, line: Arc<str>) -> u64 {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let event = Arc::new(Numbered {
            seq: ring.next_seq,
            line,
        });
        ring.next_seq += 1;
        if ring.events.len() == self.capacity {
            ring.events.pop_front();
        }
        ring.events.push_back(event.clone());
        // Sent under the lock, so a subscriber sees each event either in the ring or live,
        // never both and never neither.
        let _ = self.live.send(event.clone());
        event.seq
    }

    pub fn subscribe(&self, last_event_id: Option<&str>) -> Subscription {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let live = self.live.subscribe();
        let oldest = ring.events.front().map_or(ring.next_seq, |e| e.seq);
        let (replay, resync) = match resume(&self.run, last_event_id, oldest, ring.next_seq) {
            Resume::Live => (Vec::new(), None),
            Resume::From(from) => (
                ring.events
                    .iter()
                    .skip((from - oldest) as usize)
                    .cloned()
                    .collect(),
                None,
            ),
            Resume::Resync(reason) => (Vec::new(), Some(reason)),
        };
        Subscription {
            replay,
            resync,
            latest_seq: ring.next_seq - 1,
            live,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_replays_within_the_ring_and_resyncs_otherwise() {
        assert_eq!(resume("r1", None, 1, 10), Resume::Live);
        assert_eq!(resume("r1", Some("r1-4"), 1, 10), Resume::From(5));
        assert_eq!(resume("r1", Some("r1-9"), 1, 10), Resume::From(10));
        assert_eq!(resume("r1", Some("r1-0"), 1, 10), Resume::From(1));
        assert_eq!(resume("r1", Some("r1-0"), 1, 1), Resume::From(1));
        // Event 5 was the oldest kept: an id of 4 still resumes, 3 has missed event 4.
        assert_eq!(resume("r1", Some("r1-4"), 5, 10), Resume::From(5));
        assert!(
            matches!(resume("r1", Some("r1-3"), 5, 10), Resume::Resync(r) if r.contains("1 events in between"))
        );
        for foreign in ["r0-4", "4", "", "r1-", "r1-x", "r1-10", "r1-99"] {
            assert!(
                matches!(resume("r1", Some(foreign), 1, 10), Resume::Resync(_)),
                "{foreign}"
            );
        }
    }

    #[test]
    fn a_subscriber_gets_each_event_once_from_the_ring_or_live() {
        let log = EventLog::new("r7".into(), 4);
        for n in 1..=6 {
            assert_eq!(log.push(format!("e{n}").into()), n);
        }
        // Ring holds 3..=6.
        let sub = log.subscribe(Some("r7-3"));
        let replayed: Vec<u64> = sub.replay.iter().map(|e| e.seq).collect();
        assert_eq!(replayed, [4, 5, 6]);
        assert_eq!(sub.latest_seq, 6);
        let mut live = sub.live;
        log.push("e7".into());
        assert_eq!(live.try_recv().unwrap().seq, 7);
        assert!(live.try_recv().is_err());
        // Ring holds 4..=7 now.
        assert!(log.subscribe(Some("r7-2")).resync.is_some());
        assert_eq!(log.subscribe(Some("r7-3")).replay.len(), 4);
        assert!(log.subscribe(None).replay.is_empty());
        assert_eq!(log.id(7), "r7-7");
    }
}
