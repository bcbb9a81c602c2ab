//! One link as the pipeline knows it: its state (up, down, denials), its scanner's counters,
//! its rates, and its reports, which are rate limited: a link's rejects and its drops are each
//! summarised as a `link` event at most every [`REPORT_EVERY_NS`], so operators see bad data
//! or overload without a line per frame. Pure.

use super::Note;
use crate::link::LinkChange;
use crate::monitor::event::{LinkKind, LinkState as LinkEventState};
use crate::monitor::{LinkEvent, UtcTime};
use crate::recorder::LinkCounters;
use crate::wire::sequence::SeqStats;
use crate::wire::RejectReason;
use std::collections::BTreeMap;

/// A link's rejects and drops are each summarised as a `link` event at most this often.
pub const REPORT_EVERY_NS: i64 = 10_000_000_000;

#[derive(Debug, Clone, Default)]
pub struct LinkStatus {
    pub name: String,
    /// `None` until the link first reported its state.
    pub up: Option<bool>,
    pub denied: u64,
    pub last_change_detail: String,
    pub downs: u64,
    pub counters: LinkCounters,
    pub sequences: BTreeMap<u8, SeqStats>,
    /// `(overload, kernel)` drops as last read.
    pub drops: (u64, u64),
    /// Receipts per second since the tick before the last.
    pub rate_per_s: f64,
    /// Each system's frames per second since the tick before the last.
    pub frame_rates: BTreeMap<u8, f64>,
    reported_rejects: [u64; RejectReason::COUNT],
    rejects_reported_at_ns: i64,
    reported_drops: (u64, u64),
    drops_reported_at_ns: i64,
    receipts_at_tick: u64,
    frames_at_tick: BTreeMap<u8, u64>,
}

impl LinkStatus {
    pub fn new(name: String) -> Self {
        Self {
            name,
            ..Default::default()
        }
    }

    /// A state change: the `link` event it is, when it is one, and what to log.
    pub fn change(&mut self, change: LinkChange) -> (Option<LinkEvent>, Option<Note>) {
        let link = self.name.clone();
        let (at, state, detail, note) = match change {
            LinkChange::Up { at, detail } => {
                self.up = Some(true);
                let note = Note::LinkUp {
                    link,
                    detail: detail.clone(),
                };
                (at, LinkEventState::Up, detail, note)
            }
            LinkChange::Down { at, reason } => {
                self.up = Some(false);
                self.downs += 1;
                let note = Note::LinkDown {
                    link,
                    reason: reason.clone(),
                };
                (at, LinkEventState::Down, reason, note)
            }
            LinkChange::Denied { peer } => {
                self.denied += 1;
                let note = (self.denied == 1).then_some(Note::FirstDenied { link, peer });
                return (None, note);
            }
        };
        self.last_change_detail = detail.clone();
        (
            Some(self.event(at.utc_ns, state, Some(detail), None)),
            Some(note),
        )
    }

    fn event(
        &self,
        utc_ns: i64,
        state: LinkEventState,
        reason: Option<String>,
        counts: Option<BTreeMap<String, u64>>,
    ) -> LinkEvent {
        LinkEvent {
            utc: UtcTime(utc_ns),
            kind: LinkKind,
            link: self.name.clone(),
            state,
            reason,
            counts,
        }
    }

    /// An `errors` event when the rejects grew since the last one and it was at least
    /// [`REPORT_EVERY_NS`] ago, with the counts by reason since then.
    pub fn report_rejects(&mut self, now_ns: i64) -> Option<LinkEvent> {
        let rejects = self.counters.rejects;
        if rejects == self.reported_rejects
            || now_ns - self.rejects_reported_at_ns < REPORT_EVERY_NS
        {
            return None;
        }
        let counts = RejectReason::ALL
            .iter()
            .enumerate()
            .filter(|(k, _)| rejects[*k] > self.reported_rejects[*k])
            .map(|(k, r)| {
                (
                    r.as_str().to_string(),
                    rejects[k] - self.reported_rejects[k],
                )
            })
            .collect();
        self.reported_rejects = rejects;
        self.rejects_reported_at_ns = now_ns;
        Some(self.event(
            now_ns,
            LinkEventState::Errors,
            Some("frames rejected since the last report".to_string()),
            Some(counts),
        ))
    }

    /// A `dropped` event when the receiver dropped input here since the last one and it was at
    /// least [`REPORT_EVERY_NS`] ago, with the counts by reason (`overload`, `kernel`).
    pub fn report_drops(&mut self, now_ns: i64) -> Option<(LinkEvent, Note)> {
        let (overload, kernel) = self.drops;
        let (was_overload, was_kernel) = self.reported_drops;
        if self.drops == self.reported_drops || now_ns - self.drops_reported_at_ns < REPORT_EVERY_NS
        {
            return None;
        }
        let counts: BTreeMap<String, u64> = [
            ("overload".to_string(), overload - was_overload),
            ("kernel".to_string(), kernel - was_kernel),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
        self.reported_drops = self.drops;
        self.drops_reported_at_ns = now_ns;
        let note = Note::LinkDropped {
            link: self.name.clone(),
            counts: counts.clone(),
        };
        let event = self.event(
            now_ns,
            LinkEventState::Dropped,
            Some("datagrams the receiver dropped since the last report".to_string()),
            Some(counts),
        );
        Some((event, note))
    }

    /// The rates since the last tick, `dt_s` seconds ago.
    pub fn tick(&mut self, dt_s: f64) {
        if dt_s > 0.0 {
            self.rate_per_s =
                self.counters.receipts.saturating_sub(self.receipts_at_tick) as f64 / dt_s;
            self.frame_rates = frame_rates(&self.frames_at_tick, &self.sequences, dt_s);
        }
        self.receipts_at_tick = self.counters.receipts;
        self.frames_at_tick = self
            .sequences
            .iter()
            .map(|(&sysid, f)| (sysid, f.received))
            .collect();
    }
}

/// Each system's frames per second on a link since the last tick, `dt` seconds ago. A system
/// first seen since then counts from zero; a count that went back (never expected, the
/// scanner's counters only grow) gives zero rather than a negative rate.
fn frame_rates(
    before: &BTreeMap<u8, u64>,
    now: &BTreeMap<u8, SeqStats>,
    dt: f64,
) -> BTreeMap<u8, f64> {
    now.iter()
        .map(|(&sysid, f)| {
            let was = before.get(&sysid).copied().unwrap_or(0);
            (sysid, f.received.saturating_sub(was) as f64 / dt)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Stamp;

    const S: i64 = 1_000_000_000;
    const T0: i64 = 1_790_000_000 * S;

    fn received(n: u64) -> SeqStats {
        SeqStats {
            received: n,
            ..Default::default()
        }
    }

    #[test]
    fn frame_rates_are_per_system_since_the_last_tick() {
        let before: BTreeMap<u8, u64> = [(1, 100), (2, 40)].into();
        let now: BTreeMap<u8, SeqStats> =
            [(1, received(125)), (2, received(40)), (3, received(5))].into();
        let rates = frame_rates(&before, &now, 0.5);
        assert_eq!(rates, [(1, 50.0), (2, 0.0), (3, 10.0)].into());
        // Counters never go back; if they did, no negative rate.
        let rates = frame_rates(&[(1, 200)].into(), &now, 0.5);
        assert_eq!(rates[&1], 0.0);
    }

    #[test]
    fn rejects_are_reported_at_most_every_ten_seconds_with_what_came_since() {
        let mut link = LinkStatus::new("radio1".into());
        let junk = RejectReason::ALL
            .iter()
            .position(|r| *r == RejectReason::Junk)
            .unwrap();
        link.counters.rejects[junk] = 3;
        let first = link.report_rejects(T0).expect("the first rejects");
        assert_eq!(first.counts.unwrap()["junk"], 3);
        link.counters.rejects[junk] = 5;
        assert!(link.report_rejects(T0 + 9 * S).is_none(), "within 10 s");
        let second = link.report_rejects(T0 + 10 * S).expect("10 s on");
        assert_eq!(second.counts.unwrap()["junk"], 2);
        assert!(link.report_rejects(T0 + 30 * S).is_none(), "nothing new");
    }

    #[test]
    fn drops_are_reported_by_reason_rate_limited() {
        let mut link = LinkStatus::new("radio1".into());
        link.drops = (4, 0);
        let (event, note) = link.report_drops(T0).unwrap();
        assert_eq!(event.counts.unwrap(), [("overload".to_string(), 4)].into());
        assert!(matches!(note, Note::LinkDropped { .. }));
        link.drops = (4, 7);
        assert!(link.report_drops(T0 + S).is_none());
        let (event, _) = link.report_drops(T0 + 11 * S).unwrap();
        assert_eq!(event.counts.unwrap(), [("kernel".to_string(), 7)].into());
    }

    #[test]
    fn changes_are_events_and_only_the_first_denial_is_logged() {
        let mut link = LinkStatus::new("usb0".into());
        let at = Stamp {
            utc_ns: T0,
            mono_ns: 1,
        };
        let (event, note) = link.change(LinkChange::Down {
            at,
            reason: "EIO".into(),
        });
        assert_eq!(event.unwrap().state, LinkEventState::Down);
        assert!(matches!(note, Some(Note::LinkDown { .. })));
        assert_eq!((link.up, link.downs), (Some(false), 1));
        let peer = || LinkChange::Denied {
            peer: "10.9.9.9:1".into(),
        };
        assert!(matches!(
            link.change(peer()),
            (None, Some(Note::FirstDenied { .. }))
        ));
        assert!(matches!(link.change(peer()), (None, None)));
        assert_eq!(link.denied, 2);
    }
}
