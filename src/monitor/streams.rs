//! Message rates per (sysid, msgid), and streams that stop: a steady stream that stops, or falls
//! below half its rate, while the vehicle's heartbeats go on is a `stream` event. A position
//! stream stopping before the heartbeat does is how a companion computer or a link starts to
//! fail; a stream that stops together with the heartbeat is the vehicle's telemetry_gap and is
//! not reported again here.
//!
//! Rates are counted in whole seconds of receipt time (each frame once, whichever link brought
//! it first: [`super::delivery`]), and judged only when a second is complete (the watermark has
//! passed it), so a receiver backlog neither stops a stream nor hides a stop.
//!
//! Rules:
//! - Judged over a recent window long enough to expect [`MIN_EXPECTED`] frames at the steady
//!   rate (3 s at least, 10 s at most: a 2/s stream is judged over 4 s), so a radio that loses
//!   a burst of a slow stream's frames does not make it "stop".
//! - Steady: over the [`BASELINE_S`] seconds before the recent window, at least [`MIN_RATE`]
//!   frames/s by the median second, and no second below half the median or above twice it.
//! - Opens when the recent window carries less than half the steady rate, no second of it at
//!   the steady rate (`stopped` when its last two seconds carried none, `slowed` otherwise),
//!   while the heartbeats go on (one came in the last two seconds).
//! - Closes when the recent window carries half the rate it had again.
//! - Messages sent in answer to a request (parameters, missions, logs, commands, text) are not
//!   streams: a parameter download at 25/s that ends is not a stream stopping ([`REQUESTED`]).
//!
//! Pure: counts and times in, events out.

use super::event::{GapState, StreamEvent, StreamKind};
use crate::utc::{UtcTime, NANOS_PER_SECOND};
use std::collections::BTreeMap;

pub const BASELINE_S: usize = 10;
/// The rate shown on `/status` is over this many seconds; the shortest recent window too.
pub const RECENT_S: usize = 3;
const MAX_RECENT_S: i64 = 10;
/// The recent window is long enough to expect this many frames at the steady rate.
pub const MIN_EXPECTED: u32 = 8;
pub const MIN_RATE: u32 = 2;

/// Answers to a request, not streams: PARAM_REQUEST_READ, PARAM_REQUEST_LIST, PARAM_VALUE,
/// PARAM_SET, MISSION_ITEM, MISSION_REQUEST, MISSION_REQUEST_LIST, MISSION_COUNT, MISSION_ACK,
/// MISSION_REQUEST_INT, MISSION_ITEM_INT, COMMAND_INT, COMMAND_LONG, COMMAND_ACK, LOG_ENTRY,
/// LOG_REQUEST_DATA, LOG_DATA, FILE_TRANSFER_PROTOCOL, TIMESYNC, DATA_TRANSMISSION_HANDSHAKE,
/// ENCAPSULATED_DATA, PARAM_EXT_VALUE, STATUSTEXT; and HEARTBEAT, RADIO_STATUS and RADIO, which
/// have rules of their own (the gaps, the radio watch).
pub const REQUESTED: [u32; 26] = [
    20, 21, 22, 23, 39, 40, 43, 44, 47, 51, 73, 75, 76, 77, 118, 119, 120, 110, 111, 130, 131, 322,
    253, 0, 109, 166,
];
/// Seconds of counts kept per stream (the baseline and recent windows, and frames stamped
/// ahead of the judged second while the watermark is held back).
const RING_S: usize = 64;

#[derive(Debug, Clone)]
struct Stream {
    /// Frames per second of receipt time, by `second % RING_S`.
    counts: [u16; RING_S],
    /// The newest second counted into `counts`.
    newest_s: i64,
    /// The last second judged.
    judged_s: i64,
    last_ns: i64,
    name: &'static str,
    open: Option<StreamEvent>,
}

impl Stream {
    fn count(&self, second: i64) -> u32 {
        if second > self.newest_s || second <= self.newest_s - RING_S as i64 {
            0
        } else {
            u32::from(self.counts[second.rem_euclid(RING_S as i64) as usize])
        }
    }
}

/// A stream's rate as `/status` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamRate {
    pub sysid: u8,
    pub msgid: u32,
    pub msg: &'static str,
    /// Frames per second over the last [`RECENT_S`] complete seconds.
    pub rate_hz: f64,
    pub last_ns: i64,
    pub open: Option<StreamEvent>,
}

#[derive(Debug, Default)]
pub struct StreamWatch {
    streams: BTreeMap<(u8, u32), Stream>,
    names: BTreeMap<u8, String>,
    /// The last second every stream was judged through.
    judged_s: Option<i64>,
}

impl StreamWatch {
    pub fn new(names: BTreeMap<u8, String>) -> Self {
        Self {
            names,
            ..Self::default()
        }
    }

    /// One frame, the first copy of it heard (on any link).
    pub fn frame(&mut self, sysid: u8, msgid: u32, name: &'static str, utc_ns: i64) {
        if REQUESTED.contains(&msgid) {
            return;
        }
        let second = utc_ns.div_euclid(NANOS_PER_SECOND);
        let stream = self
            .streams
            .entry((sysid, msgid))
            .or_insert_with(|| Stream {
                counts: [0; RING_S],
                newest_s: second,
                judged_s: second - 1,
                last_ns: utc_ns,
                name,
                open: None,
            });
        if second > stream.newest_s {
            for s in (stream.newest_s + 1)..=second.min(stream.newest_s + RING_S as i64) {
                stream.counts[s.rem_euclid(RING_S as i64) as usize] = 0;
            }
            stream.newest_s = second;
        }
        if second > stream.newest_s - RING_S as i64 && second > stream.judged_s {
            let slot = &mut stream.counts[second.rem_euclid(RING_S as i64) as usize];
            *slot = slot.saturating_add(1);
        }
        stream.last_ns = stream.last_ns.max(utc_ns);
    }

    /// The next instant a second completes, while any stream is counted.
    pub fn next_deadline(&self) -> Option<i64> {
        let judged = self.judged_s?;
        (!self.streams.is_empty()).then_some((judged + 2) * NANOS_PER_SECOND)
    }

    /// Judges every second complete at `now_ns`. `last_heartbeat(sysid)` is the vehicle's last
    /// HEARTBEAT: a stream that stops with it is its telemetry_gap, not a stream event.
    pub fn poll(
        &mut self,
        now_ns: i64,
        last_heartbeat: &dyn Fn(u8) -> Option<i64>,
    ) -> Vec<StreamEvent> {
        // The second containing `now` is not complete.
        let through = now_ns.div_euclid(NANOS_PER_SECOND) - 1;
        if self.judged_s.is_some_and(|j| j >= through) {
            return Vec::new();
        }
        let mut events = Vec::new();
        for (&(sysid, msgid), stream) in &mut self.streams {
            // A backlog of seconds (a long pause in judging) is judged second by second, from
            // at most the ring back.
            let from = (stream.judged_s + 1).max(through - RING_S as i64 + BASELINE_S as i64);
            for second in from..=through {
                let beating =
                    last_heartbeat(sysid).is_some_and(|hb| hb >= (second - 1) * NANOS_PER_SECOND);
                if let Some(e) = judge(stream, sysid, msgid, second, beating, &self.names) {
                    events.push(e);
                }
            }
            stream.judged_s = through;
        }
        self.judged_s = Some(through);
        events.sort_by_key(|e| (e.utc, e.sysid, e.msgid));
        events
    }

    /// The streams of `sysid` (a range of the map: the snapshot asks per vehicle).
    pub fn rates_of(&self, sysid: u8) -> Vec<StreamRate> {
        self.streams
            .range((sysid, 0)..=(sysid, u32::MAX))
            .map(|(&(sysid, msgid), s)| {
                let recent: u32 = (0..RECENT_S as i64).map(|k| s.count(s.judged_s - k)).sum();
                StreamRate {
                    sysid,
                    msgid,
                    msg: s.name,
                    rate_hz: f64::from(recent) / RECENT_S as f64,
                    last_ns: s.last_ns,
                    open: s.open.clone(),
                }
            })
            .collect()
    }

    pub fn open_events(&self) -> Vec<&StreamEvent> {
        self.streams
            .values()
            .filter_map(|s| s.open.as_ref())
            .collect()
    }
}

/// The recent window for a stream at `rate` frames/s: long enough to expect
/// [`MIN_EXPECTED`] frames.
fn recent_window_s(rate: u32) -> i64 {
    i64::from(MIN_EXPECTED.div_ceil(rate.max(1))).clamp(RECENT_S as i64, MAX_RECENT_S)
}

/// The steady rate (median second) of the baseline before `second`'s recent window, and that
/// window's length, when the stream was steady then.
fn steady(stream: &Stream, second: i64) -> Option<(u32, i64)> {
    let first_guess = steady_rate(stream, second - RECENT_S as i64)?;
    let window = recent_window_s(first_guess);
    Some((steady_rate(stream, second - window)?, window))
}

/// The median second of the [`BASELINE_S`] seconds up to `end`, when the stream was steady
/// then.
fn steady_rate(stream: &Stream, end: i64) -> Option<u32> {
    let mut base: Vec<u32> = (0..BASELINE_S as i64)
        .map(|k| stream.count(end - k))
        .collect();
    base.sort_unstable();
    let median = base[BASELINE_S / 2];
    let steady = median >= MIN_RATE && base[0] * 2 >= median && base[BASELINE_S - 1] <= 2 * median;
    steady.then_some(median)
}

fn judge(
    stream: &mut Stream,
    sysid: u8,
    msgid: u32,
    second: i64,
    heartbeats_go_on: bool,
    names: &BTreeMap<u8, String>,
) -> Option<StreamEvent> {
    let recent = |window: i64| -> u32 { (0..window).map(|k| stream.count(second - k)).sum() };
    let at = UtcTime((second + 1) * NANOS_PER_SECOND);
    match &stream.open {
        Some(open) => {
            let expected = open.expected_hz;
            let window = recent_window_s(expected as u32);
            let observed_hz = f64::from(recent(window)) / window as f64;
            if observed_hz * 2.0 >= expected {
                let open = stream.open.take().expect("matched");
                return Some(StreamEvent {
                    utc: at,
                    state: GapState::Closed,
                    observed_hz,
                    title: format!(
                        "{} from system {sysid} back to {observed_hz:.1}/s (it was {expected:.1}/s)",
                        stream.name
                    ),
                    ..open
                });
            }
            None
        }
        None => {
            let (rate, window) = steady(stream, second)?;
            // Every second of the window below the steady rate, not a fall still under way.
            let below = (0..window).all(|k| stream.count(second - k) < rate);
            let recent = recent(window);
            if !below || recent * 2 >= rate * window as u32 || !heartbeats_go_on {
                return None;
            }
            let observed_hz = f64::from(recent) / window as f64;
            let last_frame_ns = stream.last_ns.min(at.ns());
            // Stopped: nothing in its last two seconds (a stream that stops a moment into a
            // second still has that second's first frames in the window).
            let stopped = stream.count(second) == 0 && stream.count(second - 1) == 0;
            let expected_hz = f64::from(rate);
            let event = StreamEvent {
                utc: at,
                kind: StreamKind,
                sysid,
                name: names.get(&sysid).cloned(),
                msgid,
                msg: stream.name.to_string(),
                state: GapState::Open,
                reason: if stopped { "stopped" } else { "slowed" }.to_string(),
                expected_hz,
                observed_hz,
                last_recv_utc: UtcTime(last_frame_ns),
                title: if stopped {
                    format!(
                        "{} from system {sysid} stopped ({expected_hz:.1}/s before) while its heartbeats go on",
                        stream.name
                    )
                } else {
                    format!(
                        "{} from system {sysid} fell to {observed_hz:.1}/s from {expected_hz:.1}/s while its heartbeats go on",
                        stream.name
                    )
                },
            };
            stream.open = Some(event.clone());
            Some(event)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = NANOS_PER_SECOND;
    const MS: i64 = 1_000_000;
    const T0: i64 = 1_790_000_000 * S;

    /// Frames of GLOBAL_POSITION_INT (33) from sysid 7 at `hz` over `[from, to)` seconds.
    fn feed(w: &mut StreamWatch, hz: i64, from: i64, to: i64) {
        for k in from * hz..to * hz {
            w.frame(7, 33, "GLOBAL_POSITION_INT", T0 + k * S / hz + 3 * MS);
        }
    }

    /// Polls at each whole second; the heartbeats go on (one just now) unless `silent`.
    fn poll_each_second(w: &mut StreamWatch, from: i64, to: i64, silent: bool) -> Vec<StreamEvent> {
        (from..=to)
            .flat_map(|s| {
                let now = T0 + s * S;
                w.poll(now, &|_| (!silent).then_some(now - 1))
            })
            .collect()
    }

    #[test]
    fn a_position_stream_that_stops_while_heartbeats_go_on_opens_then_closes() {
        let mut w = StreamWatch::default();
        feed(&mut w, 10, 0, 20);
        assert!(poll_each_second(&mut w, 1, 20, false).is_empty());
        // Nothing from 20 s to 30 s, then 10/s again.
        let events = poll_each_second(&mut w, 21, 30, false);
        assert_eq!(events.len(), 1, "{events:?}");
        let open = &events[0];
        assert_eq!(
            (open.state, open.reason.as_str()),
            (GapState::Open, "stopped")
        );
        assert_eq!(open.expected_hz, 10.0);
        // Seconds 20, 21 and 22 empty (10/s is judged over 3 s): once second 22 is complete.
        assert_eq!(open.utc, UtcTime(T0 + 23 * S));
        assert_eq!(open.last_recv_utc, UtcTime(T0 + 19 * S + 900 * MS + 3 * MS));
        feed(&mut w, 10, 30, 40);
        let events = poll_each_second(&mut w, 31, 40, false);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].state, GapState::Closed);
        assert_eq!(events[0].utc, UtcTime(T0 + 32 * S));
    }

    #[test]
    fn half_the_rate_is_slowed_and_a_silent_vehicle_is_not_a_stream_event() {
        let mut w = StreamWatch::default();
        feed(&mut w, 10, 0, 20);
        feed(&mut w, 4, 20, 30);
        poll_each_second(&mut w, 1, 19, false);
        let events = poll_each_second(&mut w, 20, 30, false);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].reason, "slowed");

        let mut w = StreamWatch::default();
        feed(&mut w, 10, 0, 20);
        assert!(poll_each_second(&mut w, 1, 30, true).is_empty());
    }

    #[test]
    fn an_irregular_or_slow_stream_is_never_judged() {
        let mut w = StreamWatch::default();
        // 1/s: below the rate worth judging.
        feed(&mut w, 1, 0, 20);
        // A burst now and then.
        for s in [0, 5, 10, 15] {
            for k in 0..20 {
                w.frame(7, 253, "STATUSTEXT", T0 + s * S + k * MS);
            }
        }
        assert!(poll_each_second(&mut w, 1, 40, false).is_empty());
    }

    /// What the corpus's SiK tlogs showed: a 2/s stream that loses a burst on the radio is not
    /// a stream stopping, and a parameter download at 25/s that ends is no stream at all.
    #[test]
    fn a_slow_stream_s_lost_burst_and_a_parameter_download_are_not_streams_stopping() {
        let mut w = StreamWatch::default();
        for k in 0..100 {
            // 2/s for 50 s, except that the radio lost frames 40..44 (2 s of them).
            if !(40..44).contains(&k) {
                w.frame(7, 24, "GPS_RAW_INT", T0 + k * S / 2);
            }
        }
        for k in 0..25 * 20 {
            w.frame(7, 22, "PARAM_VALUE", T0 + k * S / 25);
        }
        assert!(poll_each_second(&mut w, 1, 45, false).is_empty());
        assert!(w.rates_of(7).iter().all(|r| r.msg != "PARAM_VALUE"));
        assert_eq!(w.rates_of(7).len(), 1);
        assert!(w.rates_of(8).is_empty());
    }

    #[test]
    fn a_backlog_judged_late_gives_the_same_events() {
        let mut live = StreamWatch::default();
        feed(&mut live, 10, 0, 20);
        feed(&mut live, 10, 30, 40);
        let mut late = StreamWatch::default();
        feed(&mut late, 10, 0, 20);
        feed(&mut late, 10, 30, 40);
        let a = poll_each_second(&mut live, 1, 40, false);
        // Judged at 10 and then only at 40.
        // The heartbeats went on throughout.
        let mut b = late.poll(T0 + 10 * S, &|_| Some(T0 + 10 * S));
        b.extend(late.poll(T0 + 40 * S, &|_| Some(T0 + 40 * S)));
        assert_eq!(a, b);
        assert_eq!(a.len(), 2);
    }
}
