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
use crate::link::LinkId;
use crate::utc::{UtcTime, NANOS_PER_SECOND};
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
    pub const ALL: [Reason; 3] = [
        Reason::InterleavedSequences,
        Reason::HeartbeatIdentity,
        Reason::Sources,
    ];

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

/// The last [`MIN_SWITCHES`] (or [`MIN_INTERLEAVED`]) instants of one kind of evidence: it
/// holds when the oldest of them is inside the window. Constant work per frame, whatever the
/// rate (a vehicle may send HEARTBEAT at hundreds a second).
#[derive(Debug, Default, Clone)]
struct Recent {
    times: VecDeque<i64>,
}

impl Recent {
    fn push(&mut self, utc_ns: i64, keep: usize) {
        if self.times.len() == keep {
            self.times.pop_front();
        }
        self.times.push_back(utc_ns);
    }

    fn holds(&self, keep: usize, now_ns: i64) -> bool {
        self.times.len() == keep && self.times.front().is_some_and(|&t| t >= now_ns - WINDOW_NS)
    }
}

/// A peer address heard on one link: its last heartbeat's time and number.
#[derive(Debug, Clone)]
struct Source {
    last_ns: i64,
    seq: u8,
}

/// The most peer addresses remembered per link and sender (the oldest is forgotten).
const MAX_SOURCES: usize = 8;

#[derive(Debug, Default)]
struct LinkSources {
    sources: BTreeMap<String, Source>,
    /// The source of the last heartbeat that was not a copy.
    last: Option<String>,
    switches: Recent,
}

#[derive(Debug, Default)]
struct Sender {
    interleaved: Recent,
    /// Per link: the two runs' last numbers and the interleaved count, for the evidence.
    runs: BTreeMap<LinkId, (String, [u8; 2], u64)>,
    identity: Option<(u8, u8)>,
    identity_switches: Recent,
    /// Every (type, autopilot) seen in the current window of evidence.
    identities: BTreeSet<(u8, u8)>,
    sources: BTreeMap<LinkId, LinkSources>,
    /// Every link this sender was heard on (names), for the evidence.
    link_names: BTreeMap<LinkId, String>,
    open: Option<SysidConflictEvent>,
    last_evidence_ns: i64,
    /// How long after the open its evidence is next refreshed.
    refreshed_ns: i64,
}

#[derive(Debug, Default)]
pub struct ConflictDetector {
    senders: BTreeMap<(u8, u8), Sender>,
    /// The senders with a conflict open, so polling costs nothing when there are none.
    open: BTreeSet<(u8, u8)>,
    names: BTreeMap<u8, String>,
}

impl ConflictDetector {
    pub fn new(names: BTreeMap<u8, String>) -> Self {
        Self {
            names,
            ..Self::default()
        }
    }

    /// A frame that continued a second run of sequence numbers on `link`: `runs` is the first
    /// run's last number and this frame's.
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
        sender.interleaved.push(utc_ns, MIN_INTERLEAVED);
        match sender.runs.get_mut(&link) {
            Some(entry) => {
                entry.1 = runs;
                entry.2 += 1;
            }
            None => {
                sender.runs.insert(link, (link_name.to_string(), runs, 1));
                sender.link_names.insert(link, link_name.to_string());
            }
        }
        self.judge(sysid, compid, utc_ns)
    }

    pub fn heartbeat(&mut self, hb: HeartbeatSeen<'_>) -> Option<SysidConflictEvent> {
        let sender = self.senders.entry((hb.sysid, hb.compid)).or_default();
        let identity = (hb.mav_type, hb.autopilot);
        if sender.identity.is_some_and(|i| i != identity) {
            sender.identity_switches.push(hb.utc_ns, MIN_SWITCHES);
        }
        sender.identity = Some(identity);
        if sender.identities.len() < MAX_SOURCES {
            sender.identities.insert(identity);
        }
        if let Some(src) = hb.src {
            let seen = sender.sources.entry(hb.link).or_default();
            let copy = seen.sources.iter().any(|(other, last)| {
                last.seq == hb.seq && other != src && hb.utc_ns - last.last_ns <= COPY_WITHIN_NS
            });
            match seen.sources.get_mut(src) {
                Some(known) => {
                    known.last_ns = hb.utc_ns;
                    known.seq = hb.seq;
                }
                None => {
                    if seen.sources.len() == MAX_SOURCES {
                        let oldest = seen
                            .sources
                            .iter()
                            .min_by_key(|(_, s)| s.last_ns)
                            .map(|(k, _)| k.clone());
                        if let Some(oldest) = oldest {
                            seen.sources.remove(&oldest);
                        }
                    }
                    seen.sources.insert(
                        src.to_string(),
                        Source {
                            last_ns: hb.utc_ns,
                            seq: hb.seq,
                        },
                    );
                }
            }
            if !copy {
                if seen.last.as_deref().is_some_and(|last| last != src) {
                    seen.switches.push(hb.utc_ns, MIN_SWITCHES);
                }
                if seen.last.as_deref() != Some(src) {
                    seen.last = Some(src.to_string());
                }
            }
        }
        sender
            .link_names
            .entry(hb.link)
            .or_insert_with(|| hb.link_name.to_string());
        self.judge(hb.sysid, hb.compid, hb.utc_ns)
    }

    /// When an open conflict closes for want of evidence.
    pub fn next_deadline(&self) -> Option<i64> {
        self.open
            .iter()
            .filter_map(|key| self.senders.get(key))
            .map(|s| s.last_evidence_ns + WINDOW_NS + 1)
            .min()
    }

    /// Closes the conflicts with no evidence for a whole window by `now_ns`.
    pub fn poll(&mut self, now_ns: i64) -> Vec<SysidConflictEvent> {
        let mut events = Vec::new();
        let open: Vec<(u8, u8)> = self.open.iter().copied().collect();
        for key in open {
            let Some(s) = self.senders.get_mut(&key) else {
                continue;
            };
            let due = s.last_evidence_ns + WINDOW_NS + 1;
            if due > now_ns {
                continue;
            }
            let Some(open) = s.open.take() else { continue };
            self.open.remove(&key);
            s.refreshed_ns = 0;
            let lasted_ns = s.last_evidence_ns - open.utc.ns();
            s.identities.clear();
            if let Some(identity) = s.identity {
                s.identities.insert(identity);
            }
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
        events.sort_by_key(|e| (e.utc, e.sysid, e.compid));
        events
    }

    /// The system ids with a conflict open now.
    pub fn conflicted(&self) -> BTreeSet<u8> {
        self.open.iter().map(|&(sysid, _)| sysid).collect()
    }

    pub fn open_conflicts(&self) -> Vec<&SysidConflictEvent> {
        self.open
            .iter()
            .filter_map(|key| self.senders.get(key)?.open.as_ref())
            .collect()
    }

    fn judge(&mut self, sysid: u8, compid: u8, now_ns: i64) -> Option<SysidConflictEvent> {
        let sender = self.senders.get_mut(&(sysid, compid))?;
        let reasons = reasons(sender, now_ns);
        if reasons.is_empty() {
            return None;
        }
        sender.last_evidence_ns = now_ns;
        let name = self.names.get(&sysid).cloned();
        if let Some(open) = &sender.open {
            // The open conflict's evidence on /status grows as more comes (every reason seen
            // while it lasts), at most once a second.
            if now_ns - open.utc.ns() >= sender.refreshed_ns {
                let mut seen: Vec<Reason> = open
                    .reasons
                    .iter()
                    .filter_map(|r| Reason::ALL.into_iter().find(|k| k.as_str() == r))
                    .chain(reasons)
                    .collect();
                seen.sort();
                seen.dedup();
                let refreshed = SysidConflictEvent {
                    utc: open.utc,
                    ..evidence(sender, sysid, compid, name, &seen, now_ns)
                };
                sender.refreshed_ns = now_ns - open.utc.ns() + NANOS_PER_SECOND;
                sender.open = Some(refreshed);
            }
            return None;
        }
        let event = evidence(sender, sysid, compid, name, &reasons, now_ns);
        sender.open = Some(event.clone());
        self.open.insert((sysid, compid));
        Some(event)
    }
}

fn reasons(s: &Sender, now_ns: i64) -> Vec<Reason> {
    let mut reasons = Vec::new();
    if s.interleaved.holds(MIN_INTERLEAVED, now_ns) {
        reasons.push(Reason::InterleavedSequences);
    }
    if s.identity_switches.holds(MIN_SWITCHES, now_ns) {
        reasons.push(Reason::HeartbeatIdentity);
    }
    // Copies (another source's number again) are not switches: a router's second copy.
    if s.sources
        .values()
        .any(|seen| seen.switches.holds(MIN_SWITCHES, now_ns))
    {
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
    let sources: BTreeSet<String> = s
        .sources
        .values()
        .flat_map(|seen| {
            seen.sources
                .iter()
                .filter(|(_, src)| src.last_ns >= now_ns - WINDOW_NS)
                .map(|(addr, _)| addr.clone())
        })
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
        identities: s
            .identities
            .iter()
            .map(|&(mav_type, autopilot)| ConflictIdentity {
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
        // The open conflict's evidence grows: a third address, seen a second later.
        let t = T0 + 5 * S;
        assert!(c.heartbeat(hb("10.0.0.3:5000", 200, 2, t)).is_none());
        assert_eq!(
            c.open_conflicts()[0].sources,
            ["10.0.0.1:5000", "10.0.0.2:5000", "10.0.0.3:5000"]
        );
        assert_eq!(c.open_conflicts()[0].utc, events[0].utc);

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
