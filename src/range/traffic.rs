//! The range's traffic, pure: every site's `traffic_proximity` events merged by key (our vehicle
//! and the track's ICAO address or UAS ID), so one encounter seen by several sites is one
//! range alert. The first site to open it opens the range's (with that site's figures); other
//! sites' opens and closes while it lasts only add to it (their sites, a nearer closest point);
//! the range's closes when every site that had it open has closed it, with the last site's
//! closing figures, the nearest closest point of them all, and from the range's own open.

use crate::monitor::event::{GapState, TrafficProximityEvent};
use crate::utc::{ns_to_seconds, UtcTime};
use std::collections::{BTreeMap, BTreeSet};

/// One encounter as the range knows it.
#[derive(Debug, Clone)]
struct Encounter {
    opened: UtcTime,
    open_at: BTreeSet<String>,
    sites: BTreeSet<String>,
    closest: crate::monitor::event::TrafficPoint,
}

#[derive(Debug, Default)]
pub struct TrafficMerge {
    encounters: BTreeMap<(u8, String), Encounter>,
}

/// The straight-line distance of a point, or its horizontal one without an altitude.
fn slant(p: &crate::monitor::event::TrafficPoint) -> f64 {
    p.horizontal_m.hypot(p.vertical_m.unwrap_or(0.0))
}

impl TrafficMerge {
    /// One site's event: the range's event it makes, if any (with `sites`).
    pub fn site_event(
        &mut self,
        site: &str,
        event: TrafficProximityEvent,
    ) -> Option<TrafficProximityEvent> {
        let track = event.icao.clone().or_else(|| event.uas_id.clone())?;
        let key = (event.sysid, track);
        match event.state {
            GapState::Open => {
                if let Some(e) = self.encounters.get_mut(&key) {
                    e.open_at.insert(site.to_string());
                    e.sites.insert(site.to_string());
                    if slant(&event.closest) < slant(&e.closest) {
                        e.closest = event.closest;
                    }
                    return None;
                }
                let encounter = Encounter {
                    opened: event.utc,
                    open_at: [site.to_string()].into(),
                    sites: [site.to_string()].into(),
                    closest: event.closest,
                };
                let sites = encounter.sites.iter().cloned().collect();
                self.encounters.insert(key, encounter);
                Some(TrafficProximityEvent { sites, ..event })
            }
            GapState::Closed => {
                let e = self.encounters.get_mut(&key)?;
                e.open_at.remove(site);
                e.sites.insert(site.to_string());
                if slant(&event.closest) < slant(&e.closest) {
                    e.closest = event.closest;
                }
                if !e.open_at.is_empty() {
                    return None;
                }
                let e = self.encounters.remove(&key)?;
                Some(TrafficProximityEvent {
                    closest: e.closest,
                    opened_utc: Some(e.opened),
                    lasted_s: Some(ns_to_seconds(event.utc.ns() - e.opened.ns())),
                    sites: e.sites.into_iter().collect(),
                    ..event
                })
            }
        }
    }

    /// Encounters open at the range now.
    pub fn open(&self) -> usize {
        self.encounters.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::event::{examples, TrafficPoint};

    fn event(state: GapState, utc_s: i64, horizontal_m: f64) -> TrafficProximityEvent {
        let point = TrafficPoint {
            utc: UtcTime(utc_s * 1_000_000_000),
            horizontal_m,
            vertical_m: Some(45.0),
        };
        TrafficProximityEvent {
            utc: point.utc,
            state,
            horizontal_m,
            closest: point,
            ..examples::traffic_proximity()
        }
    }

    /// North opens, south opens (nearer), north closes, south closes: one open and one close
    /// at the range, the close with both sites and the nearest point.
    #[test]
    fn two_sites_one_encounter() {
        let mut m = TrafficMerge::default();
        let open = m
            .site_event("north", event(GapState::Open, 100, 990.0))
            .unwrap();
        assert_eq!(
            (open.state, open.sites.clone()),
            (GapState::Open, vec!["north".to_string()])
        );
        assert!(m
            .site_event("south", event(GapState::Open, 101, 400.0))
            .is_none());
        assert!(m
            .site_event("north", event(GapState::Closed, 120, 1_150.0))
            .is_none());
        let closed = m
            .site_event("south", event(GapState::Closed, 125, 1_120.0))
            .unwrap();
        assert_eq!(closed.sites, ["north", "south"]);
        assert_eq!(closed.closest.horizontal_m, 400.0);
        assert_eq!(closed.opened_utc, Some(UtcTime(100_000_000_000)));
        assert_eq!(closed.lasted_s, Some(25.0));
        assert_eq!(m.open(), 0);
        // A close with no open (the range started after it opened) makes nothing.
        assert!(m
            .site_event("north", event(GapState::Closed, 130, 1_200.0))
            .is_none());
        // Another vehicle, or another track, is another encounter.
        let mut other = event(GapState::Open, 140, 500.0);
        other.sysid = 5;
        assert!(m.site_event("north", other).is_some());
        let mut other = event(GapState::Open, 140, 500.0);
        other.icao = Some("C0FFEE".into());
        assert!(m.site_event("north", other).is_some());
        assert_eq!(m.open(), 2);
    }
}
