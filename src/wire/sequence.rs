//! Sequence tracking per sender: MAVLink's 8-bit `seq` counts each sender's frames, so gaps
//! in it are frames lost on the way, repeats are duplicates, and steps backwards are reordering.
//! Keyed by (link, sysid, compid) because each link is its own path with its own losses.

use crate::link::LinkId;
use std::collections::HashMap;

/// What one frame's sequence number says, relative to the previous frame from the same sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqOutcome {
    /// The first frame heard from this sender on this link.
    First,
    InOrder,
    /// This many frames were skipped before this one.
    Lost(u8),
    Duplicate,
    /// An earlier sequence number than the last one: late or reordered.
    OutOfOrder,
}

/// Totals for one sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqStats {
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    last_seq: u8,
}

impl SeqStats {
    /// Lost frames as a share of those sent (received plus lost), in percent.
    pub fn loss_percent(&self) -> f64 {
        let sent = self.received + self.lost;
        if sent == 0 {
            0.0
        } else {
            100.0 * self.lost as f64 / sent as f64
        }
    }
}

/// Steps forward of more than this are taken as loss; larger ones are a step backwards
/// (late or reordered frames) across the u8 wrap. Half the sequence space, as is usual for
/// serial-number arithmetic.
const MAX_FORWARD_STEP: u8 = 128;

/// Classifies a sequence number against the previous one from the same sender.
pub fn classify(previous: u8, seq: u8) -> SeqOutcome {
    match seq.wrapping_sub(previous) {
        0 => SeqOutcome::Duplicate,
        1 => SeqOutcome::InOrder,
        step if step <= MAX_FORWARD_STEP => SeqOutcome::Lost(step - 1),
        _ => SeqOutcome::OutOfOrder,
    }
}

#[derive(Debug, Default)]
pub struct SequenceTracker {
    senders: HashMap<(LinkId, u8, u8), SeqStats>,
}

impl SequenceTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a frame from `(link, sysid, compid)` and says what its sequence number shows.
    pub fn observe(&mut self, link: LinkId, sysid: u8, compid: u8, seq: u8) -> SeqOutcome {
        let mut first = false;
        let stats = self
            .senders
            .entry((link, sysid, compid))
            .or_insert_with(|| {
                first = true;
                SeqStats::default()
            });
        stats.received += 1;
        if first {
            stats.last_seq = seq;
            return SeqOutcome::First;
        }
        let outcome = classify(stats.last_seq, seq);
        match outcome {
            SeqOutcome::InOrder | SeqOutcome::First => stats.last_seq = seq,
            SeqOutcome::Lost(n) => {
                stats.lost += n as u64;
                stats.last_seq = seq;
            }
            SeqOutcome::Duplicate => stats.duplicates += 1,
            // A late frame was already counted as lost when the gap was seen; take it back.
            SeqOutcome::OutOfOrder => {
                stats.out_of_order += 1;
                stats.lost = stats.lost.saturating_sub(1);
            }
        }
        outcome
    }

    pub fn stats(&self) -> impl Iterator<Item = ((LinkId, u8, u8), &SeqStats)> {
        self.senders.iter().map(|(k, v)| (*k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_steps_across_the_wrap() {
        assert_eq!(classify(10, 11), SeqOutcome::InOrder);
        assert_eq!(classify(255, 0), SeqOutcome::InOrder);
        assert_eq!(classify(254, 1), SeqOutcome::Lost(2));
        assert_eq!(classify(7, 7), SeqOutcome::Duplicate);
        assert_eq!(classify(10, 9), SeqOutcome::OutOfOrder);
        assert_eq!(classify(0, 255), SeqOutcome::OutOfOrder);
        assert_eq!(classify(0, 128), SeqOutcome::Lost(127));
        assert_eq!(classify(0, 129), SeqOutcome::OutOfOrder);
    }

    #[test]
    fn counts_loss_duplicates_and_reordering_per_sender() {
        let (l0, l1) = (LinkId::FIRST, LinkId::new(1).unwrap());
        let mut t = SequenceTracker::new();
        assert_eq!(t.observe(l0, 1, 1, 250), SeqOutcome::First);
        for seq in [251u8, 252, 255, 0, 0, 1, 254] {
            t.observe(l0, 1, 1, seq);
        }
        // Another sender and the same sender on another link are tracked apart.
        t.observe(l0, 2, 1, 3);
        t.observe(l1, 1, 1, 9);
        let stats: HashMap<_, _> = t.stats().map(|(k, v)| (k, *v)).collect();
        let s = stats[&(l0, 1, 1)];
        assert_eq!((s.received, s.duplicates, s.out_of_order), (8, 1, 1));
        // 253 and 254 missing, then 254 arrives late: one lost in the end.
        assert_eq!(s.lost, 1);
        assert_eq!(stats[&(l0, 2, 1)].received, 1);
        assert_eq!(stats[&(l1, 1, 1)].lost, 0);
        assert!((s.loss_percent() - 100.0 / 9.0).abs() < 1e-9);
    }
}
