//! Sequence tracking per sender: MAVLink's 8-bit `seq` counts each sender's frames, so gaps
//! in it are frames lost on the way, repeats are duplicates, small steps backwards are late
//! frames and large ones a sender that started over (a reset). Every count only grows.
//!
//! Two senders behind one (sysid, compid), a mistake ranges make, interleave two runs of
//! numbers on one link. Read as one sequence, every switch between the runs is a jump forward
//! (loss) or back (reset), hundreds of lost frames a minute that never were. So the tracker
//! keeps the run a reset left behind: a frame that continues it, a few numbers on, is
//! [`SeqOutcome::Interleaved`], not loss. A single sender never continues its old run (after a
//! reboot it counts up from zero in its new one), so for it nothing changes.

use crate::link::LinkId;
use std::collections::hash_map::Entry;
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
    /// A little behind the last one (at most [`REORDER_WINDOW`]): late or reordered.
    Late,
    /// Far behind the last one: the sender started a new sequence (a reboot, a second
    /// counter). Neither loss nor reordering.
    Reset,
    /// A few numbers after the run a reset left behind: a second sender with the same ids
    /// interleaving its own sequence. Neither loss nor reordering.
    Interleaved,
}

/// Sequence counts of one sender, or summed over several (a link's senders, a system's
/// components). Every count only ever grows, so they can be exported as Prometheus `_total`
/// counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqStats {
    pub received: u64,
    /// Frames missing when a later one arrived.
    pub lost: u64,
    pub duplicates: u64,
    /// Frames that arrived behind a later one (some of them had been counted in `lost`).
    pub late: u64,
    /// New sequences started by the sender.
    pub resets: u64,
    /// Frames that continued the run a reset left behind: a second sender on the same ids.
    pub interleaved: u64,
}

impl SeqStats {
    /// Frames missing and never seen late: a late frame makes up for one counted lost, while
    /// `lost` itself never goes down.
    pub fn missing(&self) -> u64 {
        self.lost.saturating_sub(self.late)
    }

    /// [`missing`](Self::missing) as a share of the frames sent, in percent.
    pub fn loss_percent(&self) -> f64 {
        let sent = self.received + self.missing();
        if sent == 0 {
            0.0
        } else {
            100.0 * self.missing() as f64 / sent as f64
        }
    }

    /// Counts one received frame and what its sequence number showed.
    pub fn count(&mut self, outcome: SeqOutcome) {
        self.received += 1;
        match outcome {
            SeqOutcome::Lost(n) => self.lost += u64::from(n),
            SeqOutcome::Duplicate => self.duplicates += 1,
            SeqOutcome::Late => self.late += 1,
            SeqOutcome::Reset => self.resets += 1,
            SeqOutcome::Interleaved => self.interleaved += 1,
            SeqOutcome::First | SeqOutcome::InOrder => {}
        }
    }

    /// Adds another sender's counts (summing over senders).
    pub fn add(&mut self, other: &SeqStats) {
        self.received += other.received;
        self.lost += other.lost;
        self.duplicates += other.duplicates;
        self.late += other.late;
        self.resets += other.resets;
        self.interleaved += other.interleaved;
    }
}

/// Steps forward of at most this are taken as loss (half the sequence space, as is usual for
/// serial-number arithmetic); anything else is a step backwards across the u8 wrap.
const MAX_FORWARD_STEP: u8 = 128;

/// Steps backwards of at most this are late frames; farther back is a new sequence. Links
/// reorder a few frames at most; a sender that restarts jumps back by whatever it had reached.
pub const REORDER_WINDOW: u8 = 16;

/// Classifies a sequence number against the previous one from the same sender.
pub fn classify(previous: u8, seq: u8) -> SeqOutcome {
    match seq.wrapping_sub(previous) {
        0 => SeqOutcome::Duplicate,
        1 => SeqOutcome::InOrder,
        step if step <= MAX_FORWARD_STEP => SeqOutcome::Lost(step - 1),
        step if step.wrapping_neg() <= REORDER_WINDOW => SeqOutcome::Late,
        _ => SeqOutcome::Reset,
    }
}

/// A frame continues the run a reset left behind when it is at most this far past that run's
/// last number (a second sender loses a few frames too).
pub const OTHER_RUN_STEP: u8 = 8;

/// The run a reset left behind is forgotten after this many frames that do not continue it.
const OTHER_RUN_PATIENCE: u16 = 64;

/// Per sender: (link, sysid, compid). Each link is its own path with its own losses.
pub type SenderKey = (LinkId, u8, u8);

#[derive(Debug, Default)]
struct Sender {
    stats: SeqStats,
    last_seq: u8,
    /// The run a reset left behind, while it may still be a second sender's.
    other_run: Option<OtherRun>,
}

#[derive(Debug, Clone, Copy)]
struct OtherRun {
    last_seq: u8,
    /// Frames since it was last continued.
    idle: u16,
}

impl Sender {
    /// Classifies `seq`, with the run a reset left behind taken into account, and moves the
    /// runs on.
    fn observe(&mut self, seq: u8) -> SeqOutcome {
        let outcome = classify(self.last_seq, seq);
        if let Some(other) = &mut self.other_run {
            let step = seq.wrapping_sub(other.last_seq);
            let continues = (1..=OTHER_RUN_STEP).contains(&step);
            if continues && !matches!(outcome, SeqOutcome::InOrder | SeqOutcome::Duplicate) {
                other.last_seq = seq;
                other.idle = 0;
                return SeqOutcome::Interleaved;
            }
            other.idle += 1;
            if other.idle > OTHER_RUN_PATIENCE {
                self.other_run = None;
            }
        }
        match outcome {
            SeqOutcome::Reset => {
                self.other_run = Some(OtherRun {
                    last_seq: self.last_seq,
                    idle: 0,
                });
                self.last_seq = seq;
            }
            SeqOutcome::InOrder | SeqOutcome::Lost(_) => self.last_seq = seq,
            SeqOutcome::First
            | SeqOutcome::Duplicate
            | SeqOutcome::Late
            | SeqOutcome::Interleaved => {}
        }
        outcome
    }
}

#[derive(Debug, Default)]
pub struct SequenceTracker {
    senders: HashMap<SenderKey, Sender>,
}

impl SequenceTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a frame from a sender and says what its sequence number shows.
    pub fn observe(&mut self, sender: SenderKey, seq: u8) -> SeqOutcome {
        // One hash lookup per frame: this runs for every frame received.
        let (outcome, known) = match self.senders.entry(sender) {
            Entry::Occupied(entry) => {
                let known = entry.into_mut();
                (known.observe(seq), known)
            }
            Entry::Vacant(entry) => (
                SeqOutcome::First,
                entry.insert(Sender {
                    last_seq: seq,
                    ..Sender::default()
                }),
            ),
        };
        known.stats.count(outcome);
        outcome
    }

    /// For a frame `observe` found [`SeqOutcome::Interleaved`]: the first run's last number
    /// and the frame's own, the evidence of two runs.
    pub fn interleaved_runs(
        &self,
        sender: SenderKey,
        seq: u8,
        outcome: SeqOutcome,
    ) -> Option<[u8; 2]> {
        (outcome == SeqOutcome::Interleaved)
            .then(|| [self.senders.get(&sender).map_or(0, |s| s.last_seq), seq])
    }

    pub fn stats(&self) -> impl Iterator<Item = (SenderKey, &SeqStats)> {
        self.senders.iter().map(|(k, v)| (*k, &v.stats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two senders on one (sysid, compid), one at 57.., the other at 200..: read as one
    /// sequence every switch is 57 or 143 frames lost. Kept apart, nothing is lost.
    #[test]
    fn two_interleaved_senders_are_no_loss_storm() {
        let mut t = SequenceTracker::new();
        let key = (LinkId::FIRST, 7, 1);
        for i in 0..200u8 {
            t.observe(key, 57u8.wrapping_add(i));
            if i % 3 != 2 {
                t.observe(key, 200u8.wrapping_add(i));
            }
        }
        let s = *t.stats().next().unwrap().1;
        // The second sender's own 66 skipped frames are its real loss; the first's 199 frames
        // after its first continue the run the reset left behind.
        assert_eq!(
            (s.received, s.resets, s.lost, s.interleaved),
            (200 + 134, 1, 66, 199)
        );
    }

    /// A single sender that reboots and counts from zero again never continues its old run.
    #[test]
    fn a_reboot_is_one_reset_and_never_interleaved() {
        let mut t = SequenceTracker::new();
        let key = (LinkId::FIRST, 7, 1);
        for seq in 0u8..=120 {
            t.observe(key, seq);
        }
        for i in 0u32..600 {
            // Every tenth frame lost after the reboot.
            if i % 10 != 9 {
                t.observe(key, i as u8);
            }
        }
        let s = *t.stats().next().unwrap().1;
        assert_eq!((s.resets, s.interleaved), (1, 0), "{s:?}");
        assert_eq!(s.lost, 59);
    }

    #[test]
    fn classifies_steps_across_the_wrap() {
        assert_eq!(classify(10, 11), SeqOutcome::InOrder);
        assert_eq!(classify(255, 0), SeqOutcome::InOrder);
        assert_eq!(classify(254, 1), SeqOutcome::Lost(2));
        assert_eq!(classify(7, 7), SeqOutcome::Duplicate);
        assert_eq!(classify(10, 9), SeqOutcome::Late);
        assert_eq!(classify(0, 255), SeqOutcome::Late);
        assert_eq!(classify(20, 4), SeqOutcome::Late);
        assert_eq!(classify(20, 3), SeqOutcome::Reset);
        assert_eq!(classify(0, 128), SeqOutcome::Lost(127));
        assert_eq!(classify(0, 129), SeqOutcome::Reset);
    }

    #[test]
    fn counts_loss_duplicates_and_late_frames_per_sender() {
        let (l0, l1) = (LinkId::FIRST, LinkId::new(1).unwrap());
        let mut t = SequenceTracker::new();
        assert_eq!(t.observe((l0, 1, 1), 250), SeqOutcome::First);
        for seq in [251u8, 252, 255, 0, 0, 1, 254] {
            t.observe((l0, 1, 1), seq);
        }
        // Another sender and the same sender on another link are tracked apart.
        t.observe((l0, 2, 1), 3);
        t.observe((l1, 1, 1), 9);
        let stats: HashMap<_, _> = t.stats().map(|(k, v)| (k, *v)).collect();
        let s = stats[&(l0, 1, 1)];
        assert_eq!((s.received, s.duplicates, s.late, s.resets), (8, 1, 1, 0));
        // 253 and 254 missing (2 lost, never taken back), then 254 arrives late.
        assert_eq!(s.lost, 2);
        assert!((s.loss_percent() - 100.0 / 9.0).abs() < 1e-9);
        assert_eq!(stats[&(l0, 2, 1)].received, 1);
        assert_eq!(stats[&(l1, 1, 1)].lost, 0);
    }

    /// The repro from the issue: 0..99 with 9 missing, then the sender restarts at 0 and sends
    /// 0..59. The loss stays 9 (it went to 0 before, and a `_total` counter went down).
    #[test]
    fn a_sender_that_restarts_its_sequence_is_a_reset_and_loss_never_decreases() {
        let mut t = SequenceTracker::new();
        let key = (LinkId::FIRST, 7, 1);
        let mut lost_seen = Vec::new();
        for seq in (0u8..100).filter(|s| s % 11 != 5) {
            t.observe(key, seq);
            lost_seen.push(t.stats().next().unwrap().1.lost);
        }
        for seq in 0u8..60 {
            t.observe(key, seq);
            lost_seen.push(t.stats().next().unwrap().1.lost);
        }
        let s = *t.stats().next().unwrap().1;
        assert_eq!((s.lost, s.resets, s.late, s.received), (9, 1, 0, 151));
        assert!(lost_seen.windows(2).all(|w| w[0] <= w[1]), "lost went down");
    }
}
