//! Event time for links scanned in parallel (pure).
//!
//! Each link is scanned on its own thread, so the monitor input of one link can reach the
//! pipeline before older input of another that is still being scanned. The monitors judge
//! arrival stamps, not processing time, so they are fed in stamp order and only up to a
//! watermark: the instant before which every link has been scanned. A link with nothing in
//! flight is idle and holds nothing back (whatever it receives next is stamped later than
//! now); a busy link holds the watermark just before the oldest stamp it has not yet delivered.
//! A backlog therefore neither raises a false gap (the deadline waits for the backlog) nor
//! hides a real one (once scanned, the silence is judged at its true time). The loop that feeds
//! the monitors from here is [`super::driver`].

use super::input::MonitorInput;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The instant up to which the monitors may judge: `now`, or just before the oldest stamp a
/// busy link still holds.
pub fn watermark(now_ns: i64, oldest_in_flight: impl IntoIterator<Item = Option<i64>>) -> i64 {
    oldest_in_flight
        .into_iter()
        .flatten()
        .map(|oldest| oldest - 1)
        .fold(now_ns, i64::min)
}

/// Monitor input waiting for the watermark to pass its stamp.
#[derive(Debug, Default)]
pub struct EventOrder {
    pending: BinaryHeap<Reverse<Pending>>,
    next_seq: u64,
}

#[derive(Debug)]
struct Pending {
    utc_ns: i64,
    /// Arrival order among equal stamps.
    seq: u64,
    input: MonitorInput,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.utc_ns, self.seq) == (other.utc_ns, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.utc_ns, self.seq).cmp(&(other.utc_ns, other.seq))
    }
}

impl EventOrder {
    pub fn push(&mut self, input: MonitorInput) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pending.push(Reverse(Pending {
            utc_ns: input.utc_ns(),
            seq,
            input,
        }));
    }

    /// The inputs stamped at or before `watermark_ns`, oldest first.
    pub fn release(&mut self, watermark_ns: i64) -> Vec<MonitorInput> {
        let mut out = Vec::new();
        while self
            .pending
            .peek()
            .is_some_and(|p| p.0.utc_ns <= watermark_ns)
        {
            out.push(self.pending.pop().expect("peeked").0.input);
        }
        out
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::input::test_support::{hb, S, T0};

    #[test]
    fn the_watermark_is_now_unless_a_busy_link_holds_it_back() {
        assert_eq!(watermark(T0, [None, None]), T0);
        assert_eq!(watermark(T0, [None, Some(T0 - 5 * S)]), T0 - 5 * S - 1);
        assert_eq!(
            watermark(T0, [Some(T0 - S), Some(T0 - 5 * S)]),
            T0 - 5 * S - 1
        );
        assert_eq!(watermark(T0, [Some(T0 + S)]), T0);
    }

    #[test]
    fn inputs_come_out_in_stamp_order_up_to_the_watermark() {
        let mut order = EventOrder::default();
        order.push(hb(0, 1, T0 + 2 * S));
        order.push(hb(1, 2, T0 + S));
        order.push(hb(0, 3, T0 + 3 * S));
        let out: Vec<i64> = order
            .release(T0 + 2 * S)
            .iter()
            .map(|i| i.utc_ns())
            .collect();
        assert_eq!(out, vec![T0 + S, T0 + 2 * S]);
        assert_eq!(order.len(), 1);
        assert_eq!(order.release(i64::MAX).len(), 1);
        assert!(order.is_empty());
    }
}
