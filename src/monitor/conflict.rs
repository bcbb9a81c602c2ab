//! Two vehicles on one system id: two senders behind one (sysid, compid), a mistake ranges
//! make (two airframes flashed from one parameter file). Raised as a `sysid_conflict` event
//! with the evidence, and while it lasts the id's loss and delivery figures are marked
//! unreliable (they mix two senders' sequences).
//!
//! Evidence, each judged over the last [`WINDOW_NS`]:
//! - `interleaved_sequences`: frames continuing a second run of sequence numbers on one link
//!   ([`crate::wire::sequence::SeqOutcome::Interleaved`]), at least [`MIN_INTERLEAVED`];
//! - `heartbeat_identity`: HEARTBEATs alternating between two (type, autopilot) pairs;
//! - `sources`: HEARTBEATs on one link alternating between two peer addresses, and not as
//!   copies (a router that sends every frame twice, from two ports, sends the same sequence
//!   number twice; two senders do not).
//!
//! Alternating means at least [`MIN_SWITCHES`] changes, so a vehicle that reconnects from a
//! new port, or changes type once (a VTOL's transition is not a type change in PX4), is not a
//! conflict. The conflict closes once no evidence has come for [`WINDOW_NS`]. Pure.

use super::event::{
    ConflictIdentity, ConflictRuns, GapState, SysidConflictEvent, SysidConflictKind,
};
use super::utc::{UtcTime, NANOS_PER_SECOND};
use crate::link::LinkId;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub const WINDOW_NS: i64 = 10 * NANOS_PER_SECOND;
pub const MIN_INTERLEAVED: usize = 10;
pub const MIN_SWITCHES: usize = 3;
/// A heartbeat with the number another source sent this recently is a copy of it.
const COPY_WITHIN_NS: i64 = 2 * NANOS_PER_SECOND;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    InterleavedSequences,
    HeartbeatIdentity,
    Sources,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::InterleavedSequences => "interleaved_sequences",
            Reason::HeartbeatIdentity => "heartbeat_identity",
            Reason::Sources => "sources",
        }
    }
}

/// A heartbeat as the conflict detector needs it.
#[derive(Debug, Clone, Copy)]
pub struct HeartbeatSeen<'a> {
    pub link: LinkId,
    pub link_name: &'a str,
    pub sysid: u8,
    pub compid: u8,
    pub seq: u8,
    pub src: Option<&'a str>,
    pub mav_type: u8,
    pub autopilot: u8,
    pub utc_ns: i64,
}

#[derive(Debug, Default)]
struct Sender {
    /// Interleaved frames: (time, link).
    interleaved: VecDeque<(i64, LinkId)>,
    /// Per link: the two runs' last numbers and the interleaved count, for the evidence.
    runs: BTreeMap<LinkId, (String, [u8; 2], u64)>,
    /// Heartbeats' identities: (time, type, autopilot).
    identities: VecDeque<(i64, u8, u8)>,
    /// Per link, heartbeats' sources: (time, source, seq, a copy of another source's).
    sources: BTreeMap<LinkId, VecDeque<(i64, String, u8, bool)>>,
    /// Every link this sender was heard on (names), for the evidence.
    link_names: BTreeMap<LinkId, String>,
    open: Option<SysidConflictEvent>,
    last_evidence_ns: i64,
}

#[derive(Debug, Default)]
pub struct ConflictDetector {
    senders: BTreeMap<(u8, u8), Sender>,
    names: BTreeMap<u8, String>,
}

impl ConflictDetector {
    pub fn new(names: BTreeMap<u8, String>) -> Self {
        Self {
            senders: BTreeMap::new(),
            names,
        }
    }

    /// A frame that continued a second run of sequence numbers: `seq`, while the first run
    /// was at `primary_seq`.
    pub fn interleaved(
        &mut self,
        link: LinkId,
        link_name: &str,
        sysid: u8,
        compid: u8,
        runs: [u8; 2],
        utc_ns: i64,
    ) -> Option<SysidConflictEvent> {
        let sender = self.senders.entry((sysid, compid)).or_default();
        sender.interleaved.push_back((utc_ns, link));
        let entry = sender
            .runs
            .entry(link)
            .or_insert_with(|| (link_name.to_string(), runs, 0));
        entry.1 = runs;
        entry.2 += 1;
        sender
            .link_names
            .entry(link)
            .or_insert_with(|| link_name.to_string());
        self.judge(sysid, compid, utc_ns)
    }

    pub fn heartbeat(&mut self, hb: HeartbeatSeen<'_>) -> Option<SysidConflictEvent> {
        let sender = self.senders.entry((hb.sysid, hb.compid)).or_default();
        sender
            .identities
            .push_back((hb.utc_ns, hb.mav_type, hb.autopilot));
        if let Some(src) = hb.src {
            let seen = sender.sources.entry(hb.link).or_default();
            let copy = seen.iter().any(|(t, other, seq, _)| {
                *seq == hb.seq && other != src && hb.utc_ns - t <= COPY_WITHIN_NS
            });
            seen.push_back((hb.utc_ns, src.to_string(), hb.seq, copy));
        }
        sender
            .link_names
            .entry(hb.link)
            .or_insert_with(|| hb.link_name.to_string());
        self.judge(hb.sysid, hb.compid, hb.utc_ns)
    }

    /// When an open conflict closes for want of evidence.
    pub fn next_deadline(&self) -> Option<i64> {
        self.senders
            .values()
            .filter(|s| s.open.is_some())
            .map(|s| s.last_evidence_ns + WINDOW_NS + 1)
            .min()
    }

    /// Closes the conflicts with no evidence for a whole window by `now_ns`.
    pub fn poll(&mut self, now_ns: i64) -> Vec<SysidConflictEvent> {
        let mut events = Vec::new();
        for s in self.senders.values_mut() {
            let due = s.last_evidence_ns + WINDOW_NS + 1;
            if s.open.is_some() && due <= now_ns {
                let open = s.open.take().expect("checked");
                let lasted_ns = s.last_evidence_ns - open.utc.ns();
                events.push(SysidConflictEvent {
                    utc: UtcTime(due),
                    state: GapState::Closed,
                    title: format!(
                        "One sender again on system id {}, component {}: no evidence of a second for {} s",
                        open.sysid,
                        open.compid,
                        WINDOW_NS / NANOS_PER_SECOND
                    ),
                    lasted_s: Some(lasted_ns.max(0) as f64 / 1e9),
                    ..open
                });
            }
        }
        events.sort_by_key(|e| (e.utc, e.sysid, e.compid));
        events
    }

    /// The system ids with a conflict open now.
    pub fn conflicted(&self) -> BTreeSet<u8> {
        self.senders
            .iter()
            .filter(|(_, s)| s.open.is_some())
            .map(|(&(sysid, _), _)| sysid)
            .collect()
    }

    pub fn open_conflicts(&self) -> Vec<&SysidConflictEvent> {
        self.senders
            .values()
            .filter_map(|s| s.open.as_ref())
            .collect()
    }

    fn judge(&mut self, sysid: u8, compid: u8, now_ns: i64) -> Option<SysidConflictEvent> {
        let name = self.names.get(&sysid).cloned();
        let sender = self.senders.get_mut(&(sysid, compid))?;
        forget_before(sender, now_ns - WINDOW_NS);
        let reasons = reasons(sender);
        if reasons.is_empty() {
            return None;
        }
        sender.last_evidence_ns = now_ns;
        if sender.open.is_some() {
            return None;
        }
        let event = evidence(sender, sysid, compid, name, &reasons, now_ns);
        sender.open = Some(event.clone());
        Some(event)
    }
}

fn forget_before(s: &mut Sender, from_ns: i64) {
    while s.interleaved.front().is_some_and(|(t, _)| *t < from_ns) {
        s.interleaved.pop_front();
    }
    while s.identities.front().is_some_and(|(t, _, _)| *t < from_ns) {
        s.identities.pop_front();
    }
    for seen in s.sources.values_mut() {
        while seen.front().is_some_and(|(t, _, _, _)| *t < from_ns) {
            seen.pop_front();
        }
    }
}

fn switches<T: PartialEq>(values: impl Iterator<Item = T>) -> usize {
    let mut previous: Option<T> = None;
    let mut count = 0;
    for v in values {
        if previous.as_ref().is_some_and(|p| *p != v) {
            count += 1;
        }
        previous = Some(v);
    }
    count
}

fn reasons(s: &Sender) -> Vec<Reason> {
    let mut reasons = Vec::new();
    if s.interleaved.len() >= MIN_INTERLEAVED {
        reasons.push(Reason::InterleavedSequences);
    }
    if switches(s.identities.iter().map(|&(_, t, a)| (t, a))) >= MIN_SWITCHES {
        reasons.push(Reason::HeartbeatIdentity);
    }
    // Copies (another source's number again) are passed over: a router's second copy.
    let sources_alternate = s.sources.values().any(|seen| {
        switches(
            seen.iter()
                .filter(|(_, _, _, copy)| !copy)
                .map(|(_, src, _, _)| src),
        ) >= MIN_SWITCHES
    });
    if sources_alternate {
        reasons.push(Reason::Sources);
    }
    reasons
}

fn evidence(
    s: &Sender,
    sysid: u8,
    compid: u8,
    name: Option<String>,
    reasons: &[Reason],
    now_ns: i64,
) -> SysidConflictEvent {
    let identities: BTreeSet<(u8, u8)> = s.identities.iter().map(|&(_, t, a)| (t, a)).collect();
    let sources: BTreeSet<String> = s
        .sources
        .values()
        .flat_map(|seen| seen.iter().map(|(_, src, _, _)| src.clone()))
        .collect();
    let said: Vec<&str> = reasons
        .iter()
        .map(|r| match r {
            Reason::InterleavedSequences => "interleaved sequence numbers",
            Reason::HeartbeatIdentity => "heartbeats of two kinds of vehicle",
            Reason::Sources => "two peer addresses at once",
        })
        .collect();
    SysidConflictEvent {
        utc: UtcTime(now_ns),
        kind: SysidConflictKind,
        sysid,
        compid,
        state: GapState::Open,
        name,
        reasons: reasons.iter().map(|r| r.as_str().to_string()).collect(),
        links: s.link_names.values().cloned().collect(),
        sources: sources.into_iter().collect(),
        identities: identities
            .into_iter()
            .map(|(mav_type, autopilot)| ConflictIdentity {
                mav_type,
                autopilot,
            })
            .collect(),
        sequences: s
            .runs
            .values()
            .map(|(link, runs, interleaved)| ConflictRuns {
                link: link.clone(),
                runs: *runs,
                interleaved: *interleaved,
            })
            .collect(),
        title: format!(
            "Two senders on system id {sysid}, component {compid}: {}. Its loss figures are unreliable while this lasts",
            said.join(", ")
        ),
        lasted_s: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = NANOS_PER_SECOND;
    const MS: i64 = 1_000_000;
    const T0: i64 = 1_790_000_000 * S;

    fn hb<'a>(src: &'a str, seq: u8, mav_type: u8, t: i64) -> HeartbeatSeen<'a> {
        HeartbeatSeen {
            link: LinkId::FIRST,
            link_name: "radio1",
            sysid: 7,
            compid: 1,
            seq,
            src: Some(src),
            mav_type,
            autopilot: 12,
            utc_ns: t,
        }
    }

    #[test]
    fn interleaved_runs_raise_one_conflict_that_closes_when_they_stop() {
        let mut c = ConflictDetector::default();
        let mut events = Vec::new();
        for i in 0..40u8 {
            events.extend(c.interleaved(
                LinkId::FIRST,
                "radio1",
                7,
                1,
                [i, 200 + i],
                T0 + i64::from(i) * 100 * MS,
            ));
        }
        assert_eq!(events.len(), 1);
        let open = &events[0];
        assert_eq!(open.reasons, ["interleaved_sequences"]);
        assert_eq!(open.utc, UtcTime(T0 + 9 * 100 * MS));
        assert_eq!(c.conflicted(), BTreeSet::from([7]));
        assert_eq!(c.next_deadline(), Some(T0 + 3900 * MS + WINDOW_NS + 1));
        assert!(c.poll(T0 + 3900 * MS + WINDOW_NS).is_empty());
        let closed = c.poll(T0 + 3900 * MS + WINDOW_NS + 1);
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].state, GapState::Closed);
        assert!(c.conflicted().is_empty());
    }

    #[test]
    fn two_sources_alternating_are_a_conflict_and_a_router_s_copies_are_not() {
        let mut c = ConflictDetector::default();
        let mut events = Vec::new();
        for i in 0..4u8 {
            let t = T0 + i64::from(i) * S;
            events.extend(c.heartbeat(hb("10.0.0.1:5000", i, 2, t)));
            events.extend(c.heartbeat(hb("10.0.0.2:5000", 100 + i, 2, t + 300 * MS)));
        }
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].reasons, ["sources"]);
        assert_eq!(events[0].sources, ["10.0.0.1:5000", "10.0.0.2:5000"]);

        // A router forwarding each heartbeat from two ports: the same number twice.
        let mut c = ConflictDetector::default();
        for i in 0..10u8 {
            let t = T0 + i64::from(i) * S;
            assert!(c.heartbeat(hb("10.0.0.1:5000", i, 2, t)).is_none());
            assert!(c.heartbeat(hb("10.0.0.1:5001", i, 2, t + MS)).is_none());
        }
    }

    #[test]
    fn two_kinds_of_vehicle_on_one_id_and_a_single_reconnect_is_none() {
        let mut c = ConflictDetector::default();
        let mut events = Vec::new();
        for i in 0..4u8 {
            let t = T0 + i64::from(i) * S;
            events.extend(c.heartbeat(hb("a", i, 2, t)));
            events.extend(c.heartbeat(hb("a", i + 1, 1, t + 500 * MS)));
        }
        assert_eq!(events.len(), 1);
        assert!(events[0]
            .reasons
            .contains(&"heartbeat_identity".to_string()));
        assert_eq!(events[0].identities.len(), 2);

        // One vehicle that comes back from a new port: one change, no conflict.
        let mut c = ConflictDetector::default();
        for i in 0..20u8 {
            let src = if i < 10 {
                "10.0.0.1:5000"
            } else {
                "10.0.0.1:5007"
            };
            assert!(c.heartbeat(hb(src, i, 2, T0 + i64::from(i) * S)).is_none());
        }
    }
}
