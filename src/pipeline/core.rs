//! [`PipelineCore`]: the one owner of the monitors and the links' state. See the module
//! documentation of [`crate::pipeline`] for what it decides; every method takes the time it
//! needs as an argument and returns [`Action`]s.

use super::links::LinkStatus;
use super::snapshot::{self, Parts};
use super::{Action, Advance, Housekeeping, LinkBatch, Note, Stream};
use crate::link::LinkId;
use crate::monitor::driver::Judged;
use crate::monitor::event::DroppedKind;
use crate::monitor::{
    watermark, ClockWatch, DroppedEvent, Event, MonitorDriver, UtcTime, Watch, WatchSettings,
};
use crate::sink::writer::Batch;
use std::collections::{BTreeMap, HashMap};

/// What the core is made with.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    pub watch: WatchSettings,
    /// The configured links' names, in config order.
    pub links: Vec<String>,
    pub started_utc_ns: i64,
}

pub struct PipelineCore {
    driver: MonitorDriver,
    clock_watch: ClockWatch,
    links: Vec<LinkStatus>,
    started_utc_ns: i64,
    last_tick_ns: i64,
    receipts_by_message: BTreeMap<(LinkId, u8, &'static str), u64>,
    /// Per system: every link's drop total at its last heartbeat (for `receiver_dropped`).
    drops_at_heartbeat: HashMap<u8, Vec<u64>>,
    /// The kernel's NTP state could not be read (said once).
    clock_unreadable: bool,
    /// The watermark last passed on as [`Action::ReceiveLogThrough`].
    through_sent_ns: i64,
}

/// The receive log's completeness is passed on at most this often (of the watermark's time).
const THROUGH_EVERY_NS: i64 = 100_000_000;

impl PipelineCore {
    pub fn new(settings: PipelineSettings) -> Self {
        let watch = Watch::new(settings.watch, settings.started_utc_ns);
        Self {
            driver: MonitorDriver::new(watch, settings.links.clone()),
            clock_watch: ClockWatch::new(),
            links: settings.links.into_iter().map(LinkStatus::new).collect(),
            started_utc_ns: settings.started_utc_ns,
            last_tick_ns: settings.started_utc_ns,
            receipts_by_message: BTreeMap::new(),
            drops_at_heartbeat: HashMap::new(),
            clock_unreadable: false,
            through_sent_ns: i64::MIN,
        }
    }

    pub fn links(&self) -> &[LinkStatus] {
        &self.links
    }

    /// The earliest instant the monitors have something due: the shell's timer.
    pub fn next_deadline(&self) -> Option<i64> {
        self.driver.next_deadline()
    }

    /// One scanner batch: its state changes, its lines for the writers, its monitor input into
    /// event order, its counts into the link's status.
    pub fn take(&mut self, batch: LinkBatch) -> Vec<Action> {
        let LinkBatch {
            link,
            mut out,
            data_inputs,
            changes,
            counters,
            sequences,
        } = batch;
        let mut actions = Vec::new();
        let Some(status) = self.links.get_mut(link.index()) else {
            return actions;
        };
        for change in changes {
            let (event, note) = status.change(change);
            actions.extend(note.map(Action::Log));
            actions.extend(event.map(|e| Action::Emit(Event::from(e))));
        }
        status.counters = counters;
        status.sequences = sequences;
        for day in out.batches.drain(..) {
            if day.traffic_lines > 0 {
                actions.push(Action::Write(
                    Stream::Traffic,
                    Batch {
                        day: day.day,
                        first_utc_ns: day.first_utc_ns,
                        last_utc_ns: day.last_utc_ns,
                        lines: day.traffic_lines,
                        bytes: day.traffic,
                    },
                ));
            }
            if day.receipts == 0 {
                continue;
            }
            let batch = |bytes| Batch {
                day: day.day,
                first_utc_ns: day.first_utc_ns,
                last_utc_ns: day.last_utc_ns,
                lines: day.receipts,
                bytes,
            };
            if !day.tlog.is_empty() {
                actions.push(Action::Write(Stream::Tlog, batch(day.tlog)));
            }
            actions.push(Action::Write(Stream::Receive, batch(day.jsonl)));
        }
        for frame in out.frames_seen.drain(..) {
            *self
                .receipts_by_message
                .entry((frame.link, frame.sysid, frame.name))
                .or_default() += 1;
            // A conflict opened by a second sender's run is told as it is seen.
            if let Some(event) = self.driver.frame(&frame) {
                actions.push(Action::Emit(event));
            }
        }
        for input in out.observations.drain(..) {
            self.driver.push(input);
        }
        // Only now, with its monitor input in event order, is the link's input delivered:
        // until then its stamps hold the watermark back.
        actions.push(Action::Delivered {
            link,
            inputs: data_inputs,
        });
        actions
    }

    /// Judges what the links allow: the monitors are fed in stamp order up to the watermark
    /// and polled there, as `analyze` replays a recording. A gap event says how many inputs the
    /// receiver itself dropped on the vehicle's links since its last heartbeat, when any.
    pub fn advance(&mut self, tick: Advance<'_>) -> Vec<Action> {
        let mark = watermark(tick.now_ns, tick.oldest_in_flight.iter().copied());
        let clock = self.clock_watch.status();
        let mut actions = Vec::new();
        for judged in self.driver.advance(mark, clock) {
            match judged {
                Judged::Event(event) => {
                    let mut event = *event;
                    if let Event::TelemetryGap(gap) = &mut event {
                        let dropped =
                            self.dropped_since_heartbeat(gap.sysid, &gap.links, tick.dropped);
                        if dropped > 0 {
                            gap.receiver_dropped = Some(dropped);
                        }
                    }
                    actions.push(Action::Emit(event));
                }
                // The gap this heartbeat closed was judged against the drops before it.
                Judged::Heartbeat(sysid) => {
                    self.drops_at_heartbeat.insert(sysid, tick.dropped.to_vec());
                }
            }
        }
        // Every batch taken so far was written before this: the receive log holds every
        // receipt stamped up to the watermark once the writer has them.
        if mark.saturating_sub(self.through_sent_ns) >= THROUGH_EVERY_NS {
            self.through_sent_ns = mark;
            actions.push(Action::ReceiveLogThrough(mark));
        }
        actions
    }

    fn dropped_since_heartbeat(&self, sysid: u8, links: &[String], now: &[u64]) -> u64 {
        let Some(before) = self.drops_at_heartbeat.get(&sysid) else {
            return 0;
        };
        self.links
            .iter()
            .enumerate()
            .filter(|(_, l)| links.contains(&l.name))
            .map(|(i, _)| {
                now.get(i)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(before.get(i).copied().unwrap_or(0))
            })
            .sum()
    }

    /// The periodic tick: the watchdog, the clock watch, the writers' and links' drop reports
    /// (rate limited), the rates, the status snapshot and systemd's status line.
    pub fn housekeeping(&mut self, tick: Housekeeping) -> Vec<Action> {
        let now = tick.now_ns;
        let mut actions = vec![Action::WatchdogPing];
        match tick.kernel_clock {
            Ok(status) => {
                if let Some(event) =
                    self.clock_watch
                        .observe(status.synchronised, status.max_error_us, now)
                {
                    actions.push(Action::Emit(Event::from(event)));
                }
            }
            Err(errno) if !self.clock_unreadable => {
                self.clock_unreadable = true;
                actions.push(Action::Log(Note::ClockUnreadable { errno }));
            }
            Err(_) => {}
        }
        for w in tick.writer_drops {
            actions.push(Action::Log(Note::RecordsDropped {
                stream: w.stream.clone(),
                count: w.dropped.lines,
            }));
            actions.push(Action::Emit(Event::from(DroppedEvent {
                utc: UtcTime(now),
                kind: DroppedKind,
                stream: w.stream,
                count: w.dropped.lines,
                first_utc: UtcTime(w.dropped.first_utc_ns),
                last_utc: UtcTime(w.dropped.last_utc_ns),
                reason: w.reason,
            })));
        }
        for (link, drops) in self.links.iter_mut().zip(&tick.link_drops) {
            link.drops = *drops;
        }
        let dt_s = (now - self.last_tick_ns) as f64 / 1e9;
        for link in &mut self.links {
            if let Some(event) = link.report_rejects(now) {
                actions.push(Action::Emit(Event::from(event)));
            }
            if let Some((event, note)) = link.report_drops(now) {
                actions.push(Action::Log(note));
                actions.push(Action::Emit(Event::from(event)));
            }
            link.tick(dt_s);
        }
        self.last_tick_ns = now;
        actions.push(Action::Publish(Box::new(snapshot::snapshot(Parts {
            now_ns: now,
            started_utc_ns: self.started_utc_ns,
            watch: self.driver.watch(),
            clock: self.clock_watch.status(),
            links: &self.links,
            receipts_by_message: &self.receipts_by_message,
            streams: tick.streams,
            webhooks: tick.webhooks,
        }))));
        actions.push(Action::Status(snapshot::summary(
            now,
            self.driver.watch(),
            &self.links,
        )));
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{LinkChange, Stamp};
    use crate::monitor::event::GapState;
    use crate::monitor::GapEvent;
    use crate::recorder::{LinkRecorder, Output, RecorderSettings};
    use crate::wire::build::{self, Header};

    const S: i64 = 1_000_000_000;
    const T0: i64 = 1_790_000_000 * S;

    fn core(links: &[&str]) -> PipelineCore {
        PipelineCore::new(PipelineSettings {
            watch: WatchSettings::default(),
            links: links.iter().map(|l| l.to_string()).collect(),
            started_utc_ns: T0,
        })
    }

    /// A batch of heartbeats from `sysid` on `link`, stamped `times`.
    fn heartbeats(link: usize, sysid: u8, times: &[i64]) -> LinkBatch {
        let id = LinkId::new(link).unwrap();
        let mut recorder = LinkRecorder::new(id, "radio", RecorderSettings::default());
        let mut out = Output::default();
        for (seq, &t) in times.iter().enumerate() {
            let frame = build::v2(
                Header {
                    sysid,
                    compid: 1,
                    seq: seq as u8,
                },
                0,
                &build::heartbeat_payload(2, 3),
            );
            recorder.datagram(t, Some(1), None, &frame, &mut out);
        }
        LinkBatch {
            link: id,
            out,
            data_inputs: times.len(),
            changes: Vec::new(),
            counters: recorder.counters().clone(),
            sequences: BTreeMap::new(),
        }
    }

    fn gaps(actions: &[Action]) -> Vec<&GapEvent> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Emit(Event::TelemetryGap(g)) => Some(g),
                _ => None,
            })
            .collect()
    }

    fn advance(
        core: &mut PipelineCore,
        now_ns: i64,
        busy: &[Option<i64>],
        dropped: &[u64],
    ) -> Vec<Action> {
        core.advance(Advance {
            now_ns,
            oldest_in_flight: busy,
            dropped,
        })
    }

    #[test]
    fn a_batch_becomes_writes_then_its_delivery() {
        let mut c = core(&["radio0"]);
        let actions = c.take(heartbeats(0, 7, &[T0, T0 + S]));
        assert!(matches!(&actions[0], Action::Write(Stream::Receive, b) if b.lines == 2));
        assert!(matches!(
            actions.last(),
            Some(Action::Delivered { inputs: 2, .. })
        ));
        assert_eq!(c.links()[0].counters.receipts, 2);
    }

    #[test]
    fn a_backlog_that_drains_late_gives_no_gap() {
        let mut c = core(&["radio0", "radio1"]);
        c.take(heartbeats(1, 7, &[T0]));
        assert!(gaps(&advance(&mut c, T0, &[None, None], &[0, 0])).is_empty());
        // Link 1 is busy with input stamped from T0+1 on while the clock runs to T0+7.
        for s in 1..=7 {
            let actions = advance(&mut c, T0 + s * S, &[None, Some(T0 + S)], &[0, 0]);
            assert!(gaps(&actions).is_empty(), "at +{s} s");
        }
        let backlog: Vec<i64> = (1..=8).map(|s| T0 + s * S).collect();
        c.take(heartbeats(1, 7, &backlog));
        assert!(gaps(&advance(&mut c, T0 + 8 * S, &[None, None], &[0, 0])).is_empty());
    }

    #[test]
    fn a_silence_behind_a_backlog_opens_at_its_true_time() {
        let mut c = core(&["radio0"]);
        c.take(heartbeats(0, 7, &[T0, T0 + S]));
        for s in 2..=9 {
            let actions = advance(&mut c, T0 + s * S, &[Some(T0 + 2 * S)], &[0]);
            assert!(gaps(&actions).is_empty(), "held back at +{s} s");
        }
        let actions = advance(&mut c, T0 + 10 * S, &[None], &[0]);
        let open = gaps(&actions);
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].state, GapState::Open);
        // Past the 3 s threshold after the last heartbeat (T0 + 1 s), not when it was noticed.
        let at = open[0].utc.ns();
        assert!((T0 + 4 * S..T0 + 4 * S + S / 10).contains(&at), "{at}");
    }

    #[test]
    fn a_drop_is_attributed_to_the_vehicles_whose_links_dropped() {
        let mut c = core(&["radio0", "radio1"]);
        c.take(heartbeats(0, 7, &[T0]));
        c.take(heartbeats(1, 8, &[T0]));
        advance(&mut c, T0, &[None, None], &[0, 0]);
        // Link 0 drops 5 inputs; link 1 none. Both vehicles go quiet.
        let actions = advance(&mut c, T0 + 5 * S, &[None, None], &[5, 0]);
        let by_sysid: BTreeMap<u8, Option<u64>> = gaps(&actions)
            .iter()
            .map(|g| (g.sysid, g.receiver_dropped))
            .collect();
        assert_eq!(by_sysid, [(7, Some(5)), (8, None)].into());
        // Vehicle 7 heard again: its closing gap carries the drops; the next count from here.
        c.take(heartbeats(0, 7, &[T0 + 6 * S]));
        let actions = advance(&mut c, T0 + 6 * S, &[None, None], &[6, 0]);
        let closed = gaps(&actions);
        assert_eq!(
            (closed[0].state, closed[0].receiver_dropped),
            (GapState::Closed, Some(6))
        );
        let actions = advance(&mut c, T0 + 20 * S, &[None, None], &[6, 0]);
        let reopened = gaps(&actions).into_iter().find(|g| g.sysid == 7).unwrap();
        assert_eq!(reopened.receiver_dropped, None);
    }

    fn tick(now_ns: i64, link_drops: Vec<(u64, u64)>) -> Housekeeping {
        Housekeeping {
            now_ns,
            kernel_clock: Err(1),
            link_drops,
            streams: Vec::new(),
            writer_drops: Vec::new(),
            webhooks: Vec::new(),
        }
    }

    fn link_events(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Emit(Event::Link(l)) => Some(format!("{:?}", l.state)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_link_report_is_rate_limited_and_the_snapshot_published() {
        let mut c = core(&["radio0"]);
        let first = c.housekeeping(tick(T0 + S, vec![(3, 0)]));
        assert!(matches!(first[0], Action::WatchdogPing));
        assert_eq!(link_events(&first), ["Dropped"]);
        // Said once: the kernel clock could not be read.
        assert_eq!(
            first
                .iter()
                .filter(|a| matches!(a, Action::Log(Note::ClockUnreadable { .. })))
                .count(),
            1
        );
        let second = c.housekeeping(tick(T0 + 2 * S, vec![(9, 0)]));
        assert!(
            link_events(&second).is_empty(),
            "within 10 s of the last report"
        );
        assert!(!second
            .iter()
            .any(|a| matches!(a, Action::Log(Note::ClockUnreadable { .. }))));
        let later = c.housekeeping(tick(T0 + 12 * S, vec![(9, 0)]));
        assert_eq!(link_events(&later), ["Dropped"]);
        let published = later
            .iter()
            .find_map(|a| match a {
                Action::Publish(s) => Some(s),
                _ => None,
            })
            .unwrap();
        assert_eq!(published.links[0].dropped["overload"], 9);
        assert!(later
            .iter()
            .any(|a| matches!(a, Action::Status(s) if s.starts_with("links up 1/1"))));
    }

    #[test]
    fn link_changes_are_events_in_their_place() {
        let mut c = core(&["usb0"]);
        let mut batch = heartbeats(0, 7, &[]);
        batch.changes.push(LinkChange::Up {
            at: Stamp {
                utc_ns: T0,
                mono_ns: 1,
            },
            detail: "/dev/ttyUSB0 at 57600 baud".into(),
        });
        let actions = c.take(batch);
        assert_eq!(link_events(&actions), ["Up"]);
        assert!(matches!(&actions[0], Action::Log(Note::LinkUp { .. })));
    }
}
