//! Per link, per vehicle: a vehicle silent on one link while another link still hears it is a
//! `link_gap` of its own, opened and closed like a telemetry_gap but naming the link and the
//! links still hearing the vehicle. It is never a telemetry_gap: the vehicle is not silent,
//! one of its paths is. The vehicle-level gap ([`super::gap`]) is unchanged.
//!
//! Rules:
//! - A link is silent for a vehicle when no HEARTBEAT of the vehicle came on it for more than
//!   its threshold (the vehicle's, or the link's own when longer: a satellite link beats more
//!   slowly than a radio).
//! - The link's gap opens when it falls silent while another link has brought a heartbeat of
//!   the vehicle since the silent link's last one, by more than `margin` (half the vehicle's
//!   heartbeat interval: two copies of one heartbeat a few ms apart prove nothing about either
//!   link). It opens at the instant the silence passed the threshold.
//! - A link that falls silent together with every other link is the vehicle's telemetry_gap,
//!   not a link gap. If the vehicle then comes back on another link only (the silent link
//!   brings no copy of that heartbeat within `margin`), the still-silent link opens its gap at
//!   that heartbeat.
//! - The link's next heartbeat closes it, with the silence's length.
//!
//! Pure: heartbeats and times in, events out; the caller polls at the deadlines.

use super::event::{GapState, LinkGapEvent, LinkGapKind};
use super::title::{seconds_to_three_significant_figures, OBSERVED};
use crate::link::LinkId;
use crate::utc::{ns_to_seconds, UtcTime};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Track {
    Hearing,
    /// Silent past its threshold while the vehicle was silent everywhere: its gap opens when
    /// another link hears the vehicle.
    Waiting,
    /// Another link heard the vehicle again at this instant: unless this link brings its copy
    /// within the margin, its gap opens from then.
    Returning(i64),
    Open(LinkGapEvent),
}

#[derive(Debug, Clone)]
struct LinkTrack {
    name: String,
    last_ns: i64,
    threshold_ns: i64,
    track: Track,
}

impl LinkTrack {
    fn deadline(&self) -> i64 {
        self.last_ns
            .saturating_add(self.threshold_ns)
            .saturating_add(1)
    }
}

#[derive(Debug, Clone, Default)]
struct System {
    links: BTreeMap<LinkId, LinkTrack>,
    margin_ns: i64,
    name: Option<String>,
}

/// What the caller knows of the heartbeat beyond its link and time.
#[derive(Debug, Clone, Copy)]
pub struct Beat<'a> {
    pub sysid: u8,
    pub link: LinkId,
    pub link_name: &'a str,
    pub utc_ns: i64,
    /// The silence on this link that is a gap for this vehicle.
    pub threshold_ns: i64,
    /// Copies of one heartbeat on two links arrive closer than this (half its interval).
    pub margin_ns: i64,
    pub vehicle_name: Option<&'a str>,
}

#[derive(Debug, Clone, Default)]
pub struct LinkGapDetector {
    systems: BTreeMap<u8, System>,
}

impl LinkGapDetector {
    /// A heartbeat on a link: closes that link's gap, and opens the gaps of links that fell
    /// silent while the vehicle was silent everywhere.
    pub fn on_heartbeat(&mut self, beat: Beat<'_>) -> Vec<LinkGapEvent> {
        let system = self.systems.entry(beat.sysid).or_default();
        system.margin_ns = beat.margin_ns;
        if system.name.is_none() {
            system.name = beat.vehicle_name.map(str::to_string);
        }
        let mut events = Vec::new();
        let track = system.links.entry(beat.link).or_insert_with(|| LinkTrack {
            name: beat.link_name.to_string(),
            last_ns: beat.utc_ns,
            threshold_ns: beat.threshold_ns,
            track: Track::Hearing,
        });
        track.threshold_ns = beat.threshold_ns;
        let previous = std::mem::replace(&mut track.track, Track::Hearing);
        let silent_since = std::mem::replace(&mut track.last_ns, beat.utc_ns);
        if let Track::Open(open) = previous {
            events.push(closed(open, silent_since, beat.utc_ns));
        }
        for (&id, t) in system.links.iter_mut() {
            if id != beat.link && matches!(t.track, Track::Waiting) {
                t.track = Track::Returning(beat.utc_ns);
            }
        }
        if !events.is_empty() {
            let now_hearing = hearing(system, beat.utc_ns);
            for e in &mut events {
                e.hearing = now_hearing.clone();
            }
        }
        events
    }

    /// The earliest instant a link of a vehicle heard on two or more links falls silent, or
    /// a link that brought no copy of the vehicle's return opens its gap.
    pub fn next_deadline(&self) -> Option<i64> {
        self.systems
            .values()
            .filter(|s| s.links.len() > 1)
            .flat_map(|s| s.links.values().map(|t| (t, s.margin_ns)))
            .filter_map(|(t, margin)| match t.track {
                Track::Hearing => Some(t.deadline()),
                Track::Returning(since) => Some(since.saturating_add(margin).saturating_add(1)),
                _ => None,
            })
            .min()
    }

    /// Every link silence that passed its threshold by `now_ns`: an `open` where another link
    /// hears the vehicle, otherwise the link waits for the vehicle to come back elsewhere.
    pub fn poll(&mut self, now_ns: i64) -> Vec<LinkGapEvent> {
        let mut due: Vec<(i64, u8, LinkId)> = self
            .systems
            .iter()
            .filter(|(_, s)| s.links.len() > 1)
            .flat_map(|(&sysid, s)| {
                s.links
                    .iter()
                    .filter(|(_, t)| matches!(t.track, Track::Hearing))
                    .map(move |(&id, t)| (t.deadline(), sysid, id))
            })
            .filter(|&(deadline, _, _)| deadline <= now_ns)
            .collect();
        let returning: Vec<(i64, u8, LinkId)> = self
            .systems
            .iter()
            .flat_map(|(&sysid, s)| {
                s.links.iter().filter_map(move |(&id, t)| match t.track {
                    Track::Returning(since)
                        if since.saturating_add(s.margin_ns).saturating_add(1) <= now_ns =>
                    {
                        Some((since, sysid, id))
                    }
                    _ => None,
                })
            })
            .collect();
        due.sort_unstable();
        let mut events = Vec::new();
        for (since, sysid, id) in returning {
            let system = self.systems.get_mut(&sysid).expect("listed");
            let mut event = open(system, sysid, id, since);
            event.hearing = hearing(system, since);
            events.push(event);
        }
        for (deadline, sysid, id) in due {
            let system = self.systems.get_mut(&sysid).expect("listed");
            let silent = &system.links[&id];
            let heard_elsewhere = system
                .links
                .iter()
                .filter(|(&other, _)| other != id)
                .map(|(_, t)| t.last_ns)
                .filter(|&last| last >= silent.last_ns.saturating_add(system.margin_ns))
                .max();
            match heard_elsewhere {
                Some(last) => {
                    // Polled at every deadline, the other link's heartbeat is before it; a
                    // caller that polls late gets the gap from when another link was heard.
                    let at = deadline.max(last);
                    let mut event = open(system, sysid, id, at);
                    event.hearing = hearing(system, at);
                    events.push(event);
                }
                None => {
                    if let Some(t) = system.links.get_mut(&id) {
                        t.track = Track::Waiting;
                    }
                }
            }
        }
        events
    }

    /// Whether `sysid` has been heard on a link other than `link` (only then can it have a
    /// link gap, and only then is the margin worth working out).
    pub fn heard_elsewhere(&self, sysid: u8, link: LinkId) -> bool {
        self.systems
            .get(&sysid)
            .is_some_and(|s| s.links.keys().any(|&l| l != link))
    }

    /// The link gaps open now.
    pub fn open_gaps(&self) -> Vec<&LinkGapEvent> {
        self.systems
            .values()
            .flat_map(|s| s.links.values())
            .filter_map(|t| match &t.track {
                Track::Open(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    /// Per link of `sysid`: its name and last heartbeat there.
    pub fn links_of(&self, sysid: u8) -> Vec<(LinkId, &str, i64)> {
        self.systems.get(&sysid).map_or_else(Vec::new, |s| {
            s.links
                .iter()
                .map(|(&id, t)| (id, t.name.as_str(), t.last_ns))
                .collect()
        })
    }
}

/// Links whose last heartbeat of the vehicle is within their threshold at `at_ns`.
fn hearing(system: &System, at_ns: i64) -> Vec<String> {
    let mut names: Vec<String> = system
        .links
        .values()
        .filter(|t| {
            matches!(t.track, Track::Hearing) && at_ns.saturating_sub(t.last_ns) <= t.threshold_ns
        })
        .map(|t| t.name.clone())
        .collect();
    names.sort();
    names
}

/// Opens the gap of link `id` at `utc_ns`.
fn open(system: &mut System, sysid: u8, id: LinkId, utc_ns: i64) -> LinkGapEvent {
    let name = system.name.clone();
    let track = system.links.get_mut(&id).expect("known link");
    let event = LinkGapEvent {
        utc: UtcTime(utc_ns),
        kind: LinkGapKind,
        sysid,
        link: track.name.clone(),
        state: GapState::Open,
        last_recv_utc: UtcTime(track.last_ns),
        next_recv_utc: None,
        gap_s: None,
        hearing: Vec::new(),
        title: format!(
            "Heartbeat due on {} and not received there; the vehicle is heard on other links",
            track.name
        ),
        observed: OBSERVED.to_string(),
        name,
        threshold_s: ns_to_seconds(track.threshold_ns),
        radio: Vec::new(),
    };
    track.track = Track::Open(event.clone());
    event
}

fn closed(open: LinkGapEvent, silent_since_ns: i64, next_ns: i64) -> LinkGapEvent {
    let gap_ns = Some(next_ns - silent_since_ns).filter(|&g| g >= 0);
    LinkGapEvent {
        utc: UtcTime(next_ns),
        state: GapState::Closed,
        next_recv_utc: Some(UtcTime(next_ns)),
        gap_s: gap_ns.map(ns_to_seconds),
        title: match gap_ns {
            Some(gap) => format!(
                "Heard again on {}. Nothing there for {} s",
                open.link,
                seconds_to_three_significant_figures(gap)
            ),
            None => format!("Heard again on {}", open.link),
        },
        radio: Vec::new(),
        ..open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const MS: i64 = 1_000_000;
    const T0: i64 = 1_790_000_000 * S;

    fn link(i: usize) -> LinkId {
        LinkId::new(i).unwrap()
    }

    fn beat(d: &mut LinkGapDetector, sysid: u8, l: usize, t: i64) -> Vec<LinkGapEvent> {
        let name = format!("radio{}", l + 1);
        d.on_heartbeat(Beat {
            sysid,
            link: link(l),
            link_name: &name,
            utc_ns: t,
            threshold_ns: 3 * S,
            margin_ns: 500 * MS,
            vehicle_name: None,
        })
    }

    /// What the live pipeline does: poll every deadline up to each heartbeat, then feed it.
    fn run(d: &mut LinkGapDetector, beats: &[(usize, i64)], until: i64) -> Vec<LinkGapEvent> {
        let mut out = Vec::new();
        for &(l, t) in beats {
            while let Some(deadline) = d.next_deadline().filter(|&x| x <= t) {
                out.extend(d.poll(deadline));
            }
            out.extend(beat(d, 7, l, t));
        }
        while let Some(deadline) = d.next_deadline().filter(|&x| x <= until) {
            out.extend(d.poll(deadline));
        }
        out
    }

    #[test]
    fn a_link_cut_while_the_other_hears_is_one_link_gap() {
        let mut d = LinkGapDetector::default();
        let mut beats = Vec::new();
        for s in 0..20 {
            beats.push((0, T0 + s * S));
            // radio2's copy 15 ms later, and none from 5 s to 12 s.
            if !(5..12).contains(&s) {
                beats.push((1, T0 + s * S + 15 * MS));
            }
        }
        let events = run(&mut d, &beats, T0 + 20 * S);
        assert_eq!(events.len(), 2, "{events:?}");
        let (open, close) = (&events[0], &events[1]);
        assert_eq!((open.state, open.link.as_str()), (GapState::Open, "radio2"));
        assert_eq!(open.utc, UtcTime(T0 + 4 * S + 15 * MS + 3 * S + 1));
        assert_eq!(open.hearing, ["radio1"]);
        assert_eq!(open.last_recv_utc, UtcTime(T0 + 4 * S + 15 * MS));
        assert_eq!(close.state, GapState::Closed);
        assert_eq!(close.gap_s, Some(8.0));
        assert_eq!(
            close.title,
            "Heard again on radio2. Nothing there for 8.00 s"
        );
        assert!(d.open_gaps().is_empty());
    }

    /// Heard on both links (radio2's copy 12 ms later) every second to T0+4, then silent on
    /// both: the vehicle's telemetry_gap.
    fn both_then_silent() -> Vec<(usize, i64)> {
        (0..5)
            .flat_map(|s| [(0, T0 + s * S), (1, T0 + s * S + 12 * MS)])
            .collect()
    }

    #[test]
    fn both_links_silent_together_is_no_link_gap() {
        let mut d = LinkGapDetector::default();
        let mut beats = both_then_silent();
        // Back on both at T0+15.
        beats.push((0, T0 + 15 * S));
        beats.push((1, T0 + 15 * S + 12 * MS));
        assert!(run(&mut d, &beats, T0 + 16 * S).is_empty());
    }

    #[test]
    fn back_on_one_link_only_opens_the_other_at_that_heartbeat() {
        let mut d = LinkGapDetector::default();
        let mut beats = both_then_silent();
        // Back on radio1 only at T0+15.
        beats.push((0, T0 + 15 * S));
        beats.push((0, T0 + 16 * S));
        let events = run(&mut d, &beats, T0 + 17 * S);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].link, "radio2");
        assert_eq!(events[0].utc, UtcTime(T0 + 15 * S));
        assert_eq!(events[0].hearing, ["radio1"]);
        assert_eq!(d.open_gaps().len(), 1);
    }

    #[test]
    fn a_vehicle_on_one_link_never_has_link_gaps() {
        let mut d = LinkGapDetector::default();
        let events = run(&mut d, &[(0, T0), (0, T0 + 10 * S)], T0 + 30 * S);
        assert!(events.is_empty());
        assert_eq!(d.next_deadline(), None);
    }
}
