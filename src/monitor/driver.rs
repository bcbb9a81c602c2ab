//! The one loop that drives the monitors, for the live pipeline, `analyze` and the range view
//! alike: inputs are queued ([`MonitorDriver::push`]) and judged in stamp order up to a
//! watermark ([`MonitorDriver::advance`]), each after a poll at its own stamp (what fell due
//! before it, as a timer would have seen it), then a poll at the watermark itself. Live, the
//! watermark is the instant before which every link has been scanned ([`super::merge`]);
//! offline, each receipt's own stamp.
//!
//! The driver also names the links: the inputs carry a [`LinkId`], the monitors' events name
//! links in words. The live daemon registers its configured links in order; `analyze` and the
//! range learn theirs from the input ([`MonitorDriver::link`]).

use super::event::Event;
use super::input::{FrameSeen, MonitorInput};
use super::merge::EventOrder;
use super::ntp::ClockStatus;
use super::watch::Watch;
use crate::link::LinkId;

/// What judging released input produced, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    /// Boxed: a heartbeat mark is one byte, an event a few hundred.
    Event(Box<Event>),
    /// A heartbeat of `sysid` was judged, after the events it settled: whatever the caller
    /// attributes to a system's heartbeats (the receiver's own drops since, say) starts again.
    Heartbeat(u8),
}

pub struct MonitorDriver {
    watch: Watch,
    order: EventOrder,
    link_names: Vec<String>,
}

impl MonitorDriver {
    /// A driver around `watch`, with `link_names` the links known from the start, by index.
    pub fn new(watch: Watch, link_names: Vec<String>) -> Self {
        Self {
            watch,
            order: EventOrder::default(),
            link_names,
        }
    }

    pub fn watch(&self) -> &Watch {
        &self.watch
    }

    /// The id of the link called `name`, added when it is new. `None` past [`crate::link::MAX_LINKS`].
    pub fn link(&mut self, name: &str) -> Option<LinkId> {
        if let Some(index) = self.link_names.iter().position(|n| n == name) {
            return LinkId::new(index);
        }
        let id = LinkId::new(self.link_names.len())?;
        self.link_names.push(name.to_string());
        Some(id)
    }

    pub fn link_name(&self, link: LinkId) -> &str {
        self.link_names.get(link.index()).map_or("", String::as_str)
    }

    /// Counts one receipt now (delivery, rates: counts need no order); a second sender's run
    /// on its link may open a conflict.
    pub fn frame(&mut self, frame: &FrameSeen) -> Option<Event> {
        let name = self
            .link_names
            .get(frame.link.index())
            .map_or("", String::as_str);
        self.watch.frame(frame, name)
    }

    /// Queues one input until a watermark passes its stamp.
    pub fn push(&mut self, input: MonitorInput) {
        self.order.push(input);
    }

    /// Inputs queued and not yet judged.
    pub fn pending(&self) -> usize {
        self.order.len()
    }

    /// Judges every queued input stamped at or before `mark_ns`, in stamp order, each after a
    /// poll at its stamp; then polls at `mark_ns`.
    pub fn advance(&mut self, mark_ns: i64, clock: Option<ClockStatus>) -> Vec<Judged> {
        let mut judged = Vec::new();
        for input in self.order.release(mark_ns) {
            judged.extend(
                self.watch
                    .poll(input.utc_ns(), clock)
                    .into_iter()
                    .map(|e| Judged::Event(Box::new(e))),
            );
            let name = self
                .link_names
                .get(input.link().index())
                .map_or("", String::as_str);
            judged.extend(
                self.watch
                    .observe(&input, name)
                    .into_iter()
                    .map(|e| Judged::Event(Box::new(e))),
            );
            if let MonitorInput::Heartbeat { sysid, .. } = input {
                judged.push(Judged::Heartbeat(sysid));
            }
        }
        judged.extend(
            self.watch
                .poll(mark_ns, clock)
                .into_iter()
                .map(|e| Judged::Event(Box::new(e))),
        );
        judged
    }

    /// The earliest instant something is due (see [`Watch::next_deadline`]).
    pub fn next_deadline(&self) -> Option<i64> {
        self.watch.next_deadline()
    }
}

/// The events of what was judged, without the heartbeat marks.
pub fn events(judged: Vec<Judged>) -> impl Iterator<Item = Event> {
    judged.into_iter().filter_map(|j| match j {
        Judged::Event(e) => Some(*e),
        Judged::Heartbeat(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::event::GapState;
    use crate::monitor::input::test_support::{hb, S, T0};
    use crate::monitor::merge::watermark;
    use crate::monitor::WatchSettings;

    /// Steps of (now, inputs arriving, the oldest stamp a busy link still holds): the gap
    /// events the driver judges.
    fn run(steps: &[(i64, Vec<MonitorInput>, Option<i64>)]) -> Vec<Event> {
        let watch = Watch::new(WatchSettings::default(), T0);
        let mut driver = MonitorDriver::new(watch, vec!["radio0".into(), "radio1".into()]);
        let mut out = Vec::new();
        for (now, inputs, busy_oldest) in steps {
            for i in inputs {
                driver.push(i.clone());
            }
            out.extend(events(
                driver.advance(watermark(*now, [*busy_oldest]), None),
            ));
        }
        out.into_iter()
            .filter(|e| matches!(e, Event::TelemetryGap(_)))
            .collect()
    }

    /// Vehicle 7 beats every second on link 1. Link 1 falls 6 s behind (its scanner is busy
    /// with a flood), then catches up: the heartbeats were there all along, so no gap.
    #[test]
    fn a_backlog_that_drains_late_gives_no_gap() {
        let mut steps = vec![(T0, vec![hb(1, 7, T0)], None)];
        for s in 1..=7 {
            steps.push((T0 + s * S, vec![], Some(T0 + S)));
        }
        let backlog: Vec<MonitorInput> = (1..=8).map(|s| hb(1, 7, T0 + s * S)).collect();
        steps.push((T0 + 8 * S, backlog, None));
        assert!(run(&steps).is_empty(), "{:?}", run(&steps));
    }

    /// Vehicle 7 really goes quiet at T0+1 while link 1 is busy: the gap opens once the
    /// backlog is scanned, stamped at its true due time, not when the pipeline noticed.
    #[test]
    fn a_real_silence_behind_a_backlog_still_opens_at_its_true_time() {
        let mut steps = vec![(T0, vec![hb(1, 7, T0), hb(1, 7, T0 + S)], None)];
        for s in 2..=9 {
            steps.push((T0 + s * S, vec![], Some(T0 + 2 * S)));
        }
        steps.push((T0 + 10 * S, vec![], None));
        let events = run(&steps);
        let Event::TelemetryGap(open) = &events[0] else {
            panic!()
        };
        assert_eq!(open.state, GapState::Open);
        // Past the 3 s threshold after the last heartbeat: at T0 + 1 + 3 s, not at T0 + 10.
        assert!(open.utc.ns() >= T0 + 4 * S && open.utc.ns() <= T0 + 4 * S + S / 10);
        assert_eq!(events.len(), 1);
        assert_eq!(open.links, ["radio1"]);
    }

    #[test]
    fn a_heartbeat_is_marked_after_the_events_it_settles() {
        let watch = Watch::new(WatchSettings::default(), T0);
        let mut driver = MonitorDriver::new(watch, vec!["radio0".into()]);
        driver.push(hb(0, 7, T0));
        driver.push(hb(0, 7, T0 + 10 * S));
        let judged = driver.advance(T0 + 10 * S, None);
        let kinds: Vec<String> = judged
            .iter()
            .map(|j| match j {
                Judged::Event(e) => match &**e {
                    Event::TelemetryGap(g) => format!("{:?}", g.state),
                    e => e.kind().to_string(),
                },
                Judged::Heartbeat(sysid) => format!("hb {sysid}"),
            })
            .collect();
        assert_eq!(kinds, ["hb 7", "Open", "Closed", "hb 7"]);
    }

    #[test]
    fn links_are_named_once_and_learned_from_the_input() {
        let watch = Watch::new(WatchSettings::default(), T0);
        let mut driver = MonitorDriver::new(watch, vec!["radio0".into()]);
        assert_eq!(driver.link("radio0"), LinkId::new(0));
        assert_eq!(driver.link("north"), LinkId::new(1));
        assert_eq!(driver.link("north"), LinkId::new(1));
        assert_eq!(driver.link_name(LinkId::new(1).unwrap()), "north");
    }
}
