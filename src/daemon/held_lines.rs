//! Lines the pipeline holds for its writers between passes. Each pass hands its lines over
//! here instead of to the writer threads, and they are handed on together once the oldest has
//! waited [`HOLD`]: a writer thread then wakes (and `write(2)`s) once for several passes, not
//! once for each, which at a few thousand frames a second is most of what writing costs. The
//! receive log's mark (every receipt before an instant is handed over) is held with the lines
//! and goes after them. Events are not held: they go to their file as they are judged.
//!
//! Time is passed in, so the rules are tested with plain numbers.

use crate::pipeline::Stream;
use crate::sink::writer::Batch;
use std::time::{Duration, Instant};

/// How long the first line held waits for more before the lines go to the writers: what a
/// line in a file waits beyond its link's read window.
pub const HOLD: Duration = Duration::from_millis(50);

/// Held lines of one stream past this size go on at once, whatever their age.
const MAX_HELD_BYTES: usize = 4 << 20;

/// What the pipeline holds for its writers: each stream's lines, in order (a new batch only
/// when the day changes), and the latest receive-log mark.
#[derive(Debug, Default)]
pub struct HeldLines {
    batches: Vec<(Stream, Batch)>,
    receive_through: Option<i64>,
    since: Option<Instant>,
    full: bool,
}

/// What is handed on to the writers, in this order: the lines, then the mark.
#[derive(Debug, Default)]
pub struct Handed {
    pub batches: Vec<(Stream, Batch)>,
    pub receive_through: Option<i64>,
}

impl HeldLines {
    /// Holds `lines` after the stream's lines already held.
    pub fn hold(&mut self, stream: Stream, lines: Batch, now: Instant) {
        self.since.get_or_insert(now);
        let last = self
            .batches
            .iter_mut()
            .rev()
            .find_map(|(s, held)| (*s == stream).then_some(held));
        let unjoined = match last {
            Some(held) => match held.join(lines, MAX_HELD_BYTES) {
                Ok(()) => {
                    self.full |= held.bytes.len() >= MAX_HELD_BYTES / 2;
                    None
                }
                Err(lines) => Some(lines),
            },
            None => Some(lines),
        };
        if let Some(lines) = unjoined {
            self.full |= lines.bytes.len() >= MAX_HELD_BYTES / 2;
            self.batches.push((stream, lines));
        }
    }

    /// Every receipt stamped before `utc_ns` has been held or handed on.
    pub fn receive_through(&mut self, utc_ns: i64, now: Instant) {
        self.since.get_or_insert(now);
        self.receive_through = Some(self.receive_through.map_or(utc_ns, |t| t.max(utc_ns)));
    }

    /// Bytes of `stream`'s lines held.
    pub fn bytes(&self, stream: Stream) -> u64 {
        self.batches
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, b)| b.bytes.len() as u64)
            .sum()
    }

    /// When what is held is due: [`HOLD`] after the first of it.
    pub fn due(&self) -> Option<Instant> {
        self.since.map(|since| since + HOLD)
    }

    /// Whether what is held should go on at `now`: it is due, or a stream's lines grew large.
    pub fn is_due(&self, now: Instant) -> bool {
        self.full || self.due().is_some_and(|due| now >= due)
    }

    /// Everything held, to hand on now.
    pub fn take(&mut self) -> Handed {
        let taken = std::mem::take(self);
        Handed {
            batches: taken.batches,
            receive_through: taken.receive_through,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(day: i64, first: i64, text: &str) -> Batch {
        Batch {
            day,
            first_utc_ns: first,
            last_utc_ns: first,
            lines: text.matches('\n').count() as u64,
            bytes: text.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_streams_lines_join_in_order_and_a_new_day_starts_a_batch() {
        let t0 = Instant::now();
        let mut held = HeldLines::default();
        held.hold(Stream::Receive, lines(1, 10, "a\n"), t0);
        held.hold(Stream::Tlog, lines(1, 10, "T"), t0);
        held.hold(Stream::Receive, lines(1, 20, "b\nc\n"), t0);
        held.hold(Stream::Receive, lines(2, 30, "d\n"), t0);
        held.hold(Stream::Receive, lines(2, 40, "e\n"), t0);
        held.receive_through(35, t0);
        held.receive_through(25, t0);
        assert_eq!(
            (
                held.bytes(Stream::Receive),
                held.bytes(Stream::Tlog),
                held.bytes(Stream::Traffic)
            ),
            (10, 1, 0)
        );
        let handed = held.take();
        let got: Vec<(Stream, i64, u64, &str, i64, i64)> = handed
            .batches
            .iter()
            .map(|(s, b)| {
                (
                    *s,
                    b.day,
                    b.lines,
                    std::str::from_utf8(&b.bytes).unwrap(),
                    b.first_utc_ns,
                    b.last_utc_ns,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Stream::Receive, 1, 3, "a\nb\nc\n", 10, 20),
                (Stream::Tlog, 1, 0, "T", 10, 10),
                (Stream::Receive, 2, 2, "d\ne\n", 30, 40),
            ]
        );
        assert_eq!(handed.receive_through, Some(35));
        assert!(held.take().batches.is_empty() && held.due().is_none());
        assert_eq!(held.bytes(Stream::Receive), 0);
    }

    #[test]
    fn what_is_held_is_due_a_hold_after_the_first_of_it_or_once_it_grows_large() {
        let t0 = Instant::now();
        let mut held = HeldLines::default();
        assert!(!held.is_due(t0 + HOLD * 10) && held.due().is_none());
        held.receive_through(5, t0);
        held.hold(Stream::Receive, lines(1, 10, "a\n"), t0 + HOLD / 2);
        assert_eq!(held.due(), Some(t0 + HOLD));
        assert!(!held.is_due(t0 + HOLD - Duration::from_millis(1)));
        assert!(held.is_due(t0 + HOLD));
        held.take();
        held.hold(Stream::Tlog, lines(1, 10, "x"), t0);
        assert!(!held.is_due(t0));
        let big = "y".repeat(MAX_HELD_BYTES / 2);
        held.hold(Stream::Tlog, lines(1, 11, &big), t0);
        assert!(
            held.is_due(t0),
            "a stream's lines past half the bound go on at once"
        );
        let handed = held.take();
        assert_eq!(handed.batches.len(), 1);
        assert_eq!(handed.batches[0].1.bytes.len(), 1 + MAX_HELD_BYTES / 2);
    }
}
