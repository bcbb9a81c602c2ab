//! What redundant links deliver: per sender (sysid, compid), the frames its sequence numbers
//! say were sent, how many of them each link brought and how many any link brought (the union
//! of the copies, each frame counted once). "radio1 92 %, radio2 88 %, together 99.6 %".
//!
//! The sender's 8-bit sequence is unwrapped into a frame index by the newest frame heard on
//! any link: a frame at most 127 numbers ahead is new (the ones skipped are missing until some
//! link brings them), one up to 128 behind is a copy or a late frame and fills its place. Each
//! recent index remembers which links brought it, so a link's second copy is not counted twice.
//!
//! Limits, said where the figures are shown: a link whose copies trail the newest by more than
//! 128 frames (an LTE path 10 s behind at 20 frames/s) cannot be placed by sequence alone and
//! its late copies count as missing for it; across a sender's reset the figures are
//! approximate for a moment. Pure: frames in, counts out.

use crate::link::LinkId;
use std::collections::HashMap;

/// Recent frame indexes remembered per sender: copies up to this far behind are placed.
const RING: usize = 256;
/// Links with a per-link count (the union counts every link).
pub const COUNTED_LINKS: usize = 64;

/// How one frame counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// The first copy of this frame heard on any link.
    New,
    /// Another link's copy of a frame already heard (or this link's repeat of it).
    Copy,
}

/// The counts of one sender, or of a vehicle (its senders summed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    /// Frames the sequence numbers say were sent, from the first heard to the newest.
    pub sent: u64,
    /// Frames heard on at least one link.
    pub any: u64,
    /// Frames heard on each link, by link index (the first [`COUNTED_LINKS`] links).
    pub by_link: Vec<u64>,
}

impl DeliveryCounts {
    pub fn add(&mut self, other: &DeliveryCounts) {
        self.sent += other.sent;
        self.any += other.any;
        if self.by_link.len() < other.by_link.len() {
            self.by_link.resize(other.by_link.len(), 0);
        }
        for (mine, theirs) in self.by_link.iter_mut().zip(&other.by_link) {
            *mine += theirs;
        }
    }

    /// `part` of the frames sent, in percent (100 when nothing was sent yet).
    pub fn percent(&self, part: u64) -> f64 {
        if self.sent == 0 {
            100.0
        } else {
            (100.0 * part as f64 / self.sent as f64 * 100.0).round() / 100.0
        }
    }
}

#[derive(Debug)]
struct Sender {
    counts: DeliveryCounts,
    newest: u64,
    newest_seq: u8,
    /// Per recent index (`index % RING`): which links brought it (bit = link index).
    heard_by: Box<[u64; RING]>,
    /// Per recent index: any link brought it (links past [`COUNTED_LINKS`] too).
    heard: Box<[bool; RING]>,
}

/// Every sender's delivery.
#[derive(Debug, Default)]
pub struct Delivery {
    senders: HashMap<(u8, u8), Sender>,
}

impl Delivery {
    /// One frame of (sysid, compid) with sequence number `seq`, heard on `link`.
    pub fn observe(&mut self, link: LinkId, sysid: u8, compid: u8, seq: u8) -> Delivered {
        let bit = link_bit(link);
        let sender = self
            .senders
            .entry((sysid, compid))
            .or_insert_with(|| Sender {
                counts: DeliveryCounts::default(),
                // Far from zero, so indexes behind the first frame need no care.
                newest: 1 << 32,
                newest_seq: seq.wrapping_sub(1),
                heard_by: Box::new([0; RING]),
                heard: Box::new([false; RING]),
            });
        let first = sender.counts.sent == 0;
        let step = seq.wrapping_sub(sender.newest_seq) as i8;
        if first || step > 0 {
            let step = if first { 1 } else { step as u64 };
            // The numbers skipped are missing until a link brings them.
            for skipped in 1..step {
                let slot = ((sender.newest + skipped) % RING as u64) as usize;
                sender.heard_by[slot] = 0;
                sender.heard[slot] = false;
            }
            sender.newest += step;
            sender.newest_seq = seq;
            sender.counts.sent += step;
            let slot = (sender.newest % RING as u64) as usize;
            sender.heard_by[slot] = 0;
            sender.heard[slot] = false;
        }
        let back = if first || step > 0 {
            0
        } else {
            u64::from(step.unsigned_abs())
        };
        if back >= sender.counts.sent {
            // Behind the first frame heard (a slower link's first copies): the sender's
            // first frame was earlier than we knew. Only at the start, where the ring is
            // still fresh.
            for earlier in sender.counts.sent..=back {
                let slot = ((sender.newest - earlier) % RING as u64) as usize;
                sender.heard_by[slot] = 0;
                sender.heard[slot] = false;
            }
            sender.counts.sent = back + 1;
        }
        let slot = ((sender.newest - back) % RING as u64) as usize;
        let new = !sender.heard[slot];
        sender.heard[slot] = true;
        if new {
            sender.counts.any += 1;
        }
        if let Some(bit) = bit {
            if sender.heard_by[slot] & bit == 0 {
                sender.heard_by[slot] |= bit;
                let index = link.index();
                if sender.counts.by_link.len() <= index {
                    sender.counts.by_link.resize(index + 1, 0);
                }
                sender.counts.by_link[index] += 1;
            }
        }
        if new {
            Delivered::New
        } else {
            Delivered::Copy
        }
    }

    /// The counts of every component of `sysid`, summed.
    pub fn vehicle(&self, sysid: u8) -> Option<DeliveryCounts> {
        let mut total: Option<DeliveryCounts> = None;
        for ((s, _), sender) in &self.senders {
            if *s == sysid {
                total
                    .get_or_insert_with(DeliveryCounts::default)
                    .add(&sender.counts);
            }
        }
        total
    }
}

fn link_bit(link: LinkId) -> Option<u64> {
    (link.index() < COUNTED_LINKS).then(|| 1u64 << link.index())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::lost;

    fn link(i: usize) -> LinkId {
        LinkId::new(i).unwrap()
    }

    /// 3,000 frames (the sequence wraps eleven times) over two links losing 8 % and 12 %,
    /// radio2 a few frames behind radio1: each link's count and the union are exactly what
    /// was delivered.
    #[test]
    fn two_lossy_links_and_their_union_are_counted_exactly() {
        let mut d = Delivery::default();
        let n = 3000u64;
        let (mut on1, mut on2, mut any) = (0u64, 0u64, 0u64);
        let mut pending2 = std::collections::VecDeque::new();
        for i in 0..n {
            let seq = i as u8;
            let (a, b) = (!lost(i, 1, 8), !lost(i, 2, 12));
            if a {
                on1 += 1;
                d.observe(link(0), 9, 1, seq);
            }
            if b {
                on2 += 1;
                pending2.push_back(seq);
            }
            if a || b {
                any += 1;
            }
            // radio2 delivers 5 frames late.
            while pending2.len() > 5 {
                d.observe(link(1), 9, 1, pending2.pop_front().unwrap());
            }
        }
        while let Some(seq) = pending2.pop_front() {
            d.observe(link(1), 9, 1, seq);
        }
        let c = d.vehicle(9).unwrap();
        // The first frame heard and the last: every frame in between was sent.
        let first = (0..n).find(|&i| !lost(i, 1, 8) || !lost(i, 2, 12)).unwrap();
        let last = (0..n)
            .rev()
            .find(|&i| !lost(i, 1, 8) || !lost(i, 2, 12))
            .unwrap();
        assert_eq!(c.sent, last - first + 1);
        assert_eq!((c.by_link[0], c.by_link[1], c.any), (on1, on2, any));
        assert!(c.percent(c.any) > c.percent(c.by_link[0]));
    }

    #[test]
    fn a_repeat_on_the_same_link_counts_once_and_copies_are_copies() {
        let mut d = Delivery::default();
        assert_eq!(d.observe(link(0), 1, 1, 10), Delivered::New);
        assert_eq!(d.observe(link(0), 1, 1, 10), Delivered::Copy);
        assert_eq!(d.observe(link(1), 1, 1, 10), Delivered::Copy);
        assert_eq!(d.observe(link(1), 1, 1, 12), Delivered::New);
        // 11 arrives late on link 0: it fills its place.
        assert_eq!(d.observe(link(0), 1, 1, 11), Delivered::New);
        let c = d.vehicle(1).unwrap();
        assert_eq!((c.sent, c.any, c.by_link.clone()), (3, 3, vec![2, 2]));
        assert_eq!(c.percent(c.any), 100.0);
        // A component of its own is summed into the vehicle.
        d.observe(link(0), 1, 2, 200);
        assert_eq!(d.vehicle(1).unwrap().sent, 4);
        assert!(d.vehicle(2).is_none());
    }
}
