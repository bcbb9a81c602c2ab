//! `replay`'s pure part: which of a recording's frames are sent, when each is due, where they
//! go, and the words of the progress line and the summary. The verb (`crate::cmd::replay`) is
//! the shell: it reads the `.tlog` files, sleeps until the instant [`Pacer::due_ns`] gives and
//! sends; nothing here reads a clock or opens a socket.
//!
//! The pace: a `.tlog` record carries the ground station's UTC stamp (µs). The spacing between
//! two frames sent one after the other is the spacing of their stamps divided by the speed. A
//! stamp older than the one before (the ground station's clock stepped back, as
//! `olivieri_20211208-151717.tlog`'s does twice) counts as no time: that frame follows the one
//! before at once and the pace goes on from its stamp, so a step back never sends a burst and a
//! step forward is waited out as recorded. Due instants are counted from the first frame sent
//! over the recorded time so far (not from the previous frame's actual sending), so a frame
//! sent late never delays the ones after it.

use std::fmt;
use std::str::FromStr;

/// How fast the recording is replayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// The recorded pace times this factor (1: as recorded, 10: ten times faster).
    Times(f64),
    /// As fast as the peer takes the frames.
    Max,
}

/// The largest factor `--speed` takes: past it every spacing of a real recording is below a
/// microsecond, which is `max`.
pub const MAX_FACTOR: f64 = 1e6;

impl FromStr for Speed {
    type Err = String;

    fn from_str(text: &str) -> Result<Speed, String> {
        if text == "max" {
            return Ok(Speed::Max);
        }
        match text.parse::<f64>() {
            Ok(k) if k.is_finite() && k > 0.0 && k <= MAX_FACTOR => Ok(Speed::Times(k)),
            _ => Err(format!(
                "`{text}` is not a speed: a factor above 0 and up to {MAX_FACTOR} (1 is the recorded pace), or `max`"
            )),
        }
    }
}

impl fmt::Display for Speed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Speed::Times(k) => write!(f, "{k}x"),
            Speed::Max => f.write_str("max"),
        }
    }
}

/// When each frame is due: fed the stamps of the frames sent, in order.
#[derive(Debug, Clone)]
pub struct Pacer {
    speed: Speed,
    last_us: Option<u64>,
    /// Recorded time since the first frame, steps back counted as none.
    elapsed_us: u64,
}

impl Pacer {
    pub fn new(speed: Speed) -> Pacer {
        Pacer {
            speed,
            last_us: None,
            elapsed_us: 0,
        }
    }

    /// When the frame stamped `recorded_us` is due, in nanoseconds after the first frame's
    /// sending; `None` at `--speed max` (at once).
    pub fn due_ns(&mut self, recorded_us: u64) -> Option<u64> {
        if let Some(last) = self.last_us {
            self.elapsed_us += recorded_us.saturating_sub(last);
        }
        self.last_us = Some(recorded_us);
        match self.speed {
            Speed::Max => None,
            Speed::Times(k) => Some((self.elapsed_us as f64 * 1000.0 / k).round() as u64),
        }
    }

    /// The recorded time the frames so far span, steps back counted as none (µs).
    pub fn recorded_elapsed_us(&self) -> u64 {
        self.elapsed_us
    }
}

/// Which frames are sent: `--from`/`--to-utc` on the recording's clock, `--sysid`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Selection {
    /// UTC nanoseconds, inclusive.
    pub from_ns: Option<i64>,
    pub to_ns: Option<i64>,
    pub sysid: Option<u8>,
}

/// What becomes of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Send,
    /// Stamped outside `--from`/`--to-utc`.
    OutsideSpan,
    /// From another system than `--sysid`.
    OtherSystem,
}

impl Selection {
    pub fn judge(&self, recorded_us: u64, sysid: u8) -> Verdict {
        let t = i128::from(recorded_us) * 1000;
        let before = self.from_ns.is_some_and(|from| t < i128::from(from));
        let after = self.to_ns.is_some_and(|to| t > i128::from(to));
        if before || after {
            Verdict::OutsideSpan
        } else if self.sysid.is_some_and(|s| s != sysid) {
            Verdict::OtherSystem
        } else {
            Verdict::Send
        }
    }

    pub fn has_span(&self) -> bool {
        self.from_ns.is_some() || self.to_ns.is_some()
    }
}

/// Where the frames go (`--to`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// `udp:HOST:PORT`: one datagram per frame to a ground station or a receiver's UDP link.
    Udp(String),
    /// `tcp_listen:ADDR`: a TCP server on ADDR, as a vehicle's telemetry server is; every
    /// connected peer gets every frame.
    TcpListen(String),
}

impl FromStr for Destination {
    type Err = String;

    fn from_str(text: &str) -> Result<Destination, String> {
        let bad = || {
            format!("`{text}` is not udp:HOST:PORT or tcp_listen:ADDR (e.g. udp:127.0.0.1:14550, tcp_listen:0.0.0.0:5760)")
        };
        let (kind, address) = text.split_once(':').ok_or_else(bad)?;
        let has_port = address
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !has_port {
            return Err(bad());
        }
        match kind {
            "udp" => Ok(Destination::Udp(address.to_string())),
            "tcp_listen" => Ok(Destination::TcpListen(address.to_string())),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Udp(a) => write!(f, "udp:{a}"),
            Destination::TcpListen(a) => write!(f, "tcp_listen:{a}"),
        }
    }
}

/// What a replay did, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub files: usize,
    pub sent: u64,
    pub bytes: u64,
    /// Records that are no frame (bad CRC, unknown id, junk, cut): skipped, never sent.
    pub rejected: u64,
    pub outside_span: u64,
    pub other_systems: u64,
    /// Stamps of the first and last frame sent, µs.
    pub first_us: Option<u64>,
    pub last_us: Option<u64>,
    /// The recorded time the frames sent span (steps back counted as none), µs.
    pub recorded_us: u64,
    /// The most a frame was sent after its due instant, ns.
    pub max_lag_ns: u64,
}

/// RFC 3339 with milliseconds, or the number itself for a stamp no calendar holds.
fn utc(us: u64) -> String {
    i64::try_from(us)
        .ok()
        .and_then(crate::utc::format_utc_ms_of_us)
        .unwrap_or_else(|| format!("{us} µs"))
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// The progress line on a terminal: frames sent, the last one's recorded UTC, how late it went.
pub fn progress_line(sent: u64, recorded_us: u64, lag_ns: Option<u64>) -> String {
    let lag = lag_ns.map_or(String::new(), |l| format!(", lag {}", ms(l)));
    format!("{sent} frames sent, recorded {}{lag}", utc(recorded_us))
}

impl Tally {
    /// The summary printed at the end.
    pub fn summary(
        &self,
        destination: &Destination,
        speed: Speed,
        selection: &Selection,
        wall_ns: u64,
        interrupted: bool,
    ) -> String {
        let mut out = format!(
            "replay: sent {} frames ({} bytes) from {} file{} to {destination} at {speed}{}\n",
            self.sent,
            self.bytes,
            self.files,
            if self.files == 1 { "" } else { "s" },
            if interrupted {
                ", then stopped by a signal before the end"
            } else {
                ""
            }
        );
        if let (Some(first), Some(last)) = (self.first_us, self.last_us) {
            out += &format!(
                "recorded {} to {} ({:.3} s of recording), sent over {:.3} s",
                utc(first),
                utc(last),
                self.recorded_us as f64 / 1e6,
                wall_ns as f64 / 1e9
            );
            if matches!(speed, Speed::Times(_)) {
                out += &format!(
                    "; lag at most {} behind the recorded pace",
                    ms(self.max_lag_ns)
                );
            }
            out.push('\n');
        }
        out += &format!(
            "rejected records: {} (skipped, never sent; counted as `tlog convert` counts them)\n",
            self.rejected
        );
        if selection.has_span() {
            out += &format!(
                "not sent: {} frames stamped outside --from/--to-utc\n",
                self.outside_span
            );
        }
        if let Some(sysid) = selection.sysid {
            out += &format!(
                "not sent: {} frames from other systems than --sysid {sysid}\n",
                self.other_systems
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    #[test]
    fn frames_are_due_at_their_recorded_spacing_divided_by_the_speed() {
        let mut pacer = Pacer::new(Speed::Times(10.0));
        let t0 = 1_533_737_000 * S;
        let due: Vec<Option<u64>> = [t0, t0 + S, t0 + 4_423_000 + S, t0 + 6 * S]
            .iter()
            .map(|&t| pacer.due_ns(t))
            .collect();
        // 1 s recorded is 100 ms at 10x; the 4.423 s gap 442.3 ms.
        assert_eq!(
            due,
            [
                Some(0),
                Some(100_000_000),
                Some(542_300_000),
                Some(600_000_000)
            ]
        );
        assert_eq!(pacer.recorded_elapsed_us(), 6 * S);
    }

    #[test]
    fn a_step_back_of_the_recording_clock_is_no_time_and_the_pace_goes_on_from_it() {
        let mut pacer = Pacer::new(Speed::Times(1.0));
        let t0 = 1_639_000_000 * S;
        assert_eq!(pacer.due_ns(t0), Some(0));
        assert_eq!(pacer.due_ns(t0 + 2 * S), Some(2_000_000_000));
        // The clock steps back 60 s: at once after the one before, not a burst of a minute.
        assert_eq!(pacer.due_ns(t0 - 58 * S), Some(2_000_000_000));
        assert_eq!(pacer.due_ns(t0 - 57 * S), Some(3_000_000_000));
        // A step forward of an hour is waited out, as recorded.
        assert_eq!(pacer.due_ns(t0 + 3543 * S), Some(3_603_000_000_000));
    }

    #[test]
    fn due_instants_do_not_drift_over_a_long_recording() {
        // A frame every 3 µs for a day at 7x: each due instant rounded from the total, never
        // accumulated from rounded steps.
        let mut pacer = Pacer::new(Speed::Times(7.0));
        let mut last = None;
        for n in 0..(86_400 * S / 3 / 1000) {
            last = pacer.due_ns(n * 3000);
        }
        let total_us = (86_400 * S / 3 / 1000 - 1) * 3000;
        assert_eq!(last, Some((total_us as f64 * 1000.0 / 7.0).round() as u64));
    }

    #[test]
    fn at_max_speed_every_frame_is_due_at_once() {
        let mut pacer = Pacer::new(Speed::Max);
        assert_eq!(pacer.due_ns(5), None);
        assert_eq!(pacer.due_ns(5 + 3600 * S), None);
        assert_eq!(pacer.recorded_elapsed_us(), 3600 * S);
    }

    #[test]
    fn speeds_parse_and_nonsense_is_refused() {
        assert_eq!("10".parse(), Ok(Speed::Times(10.0)));
        assert_eq!("0.5".parse(), Ok(Speed::Times(0.5)));
        assert_eq!("max".parse(), Ok(Speed::Max));
        for bad in ["0", "-2", "inf", "NaN", "fast", "", "2e6"] {
            assert!(bad.parse::<Speed>().is_err(), "{bad}");
        }
        assert_eq!(Speed::Times(10.0).to_string(), "10x");
    }

    #[test]
    fn the_span_and_the_system_choose_the_frames() {
        let selection = Selection {
            from_ns: Some(10_000_000),
            to_ns: Some(20_000_000),
            sysid: Some(4),
        };
        assert_eq!(selection.judge(9_999, 4), Verdict::OutsideSpan);
        assert_eq!(selection.judge(10_000, 4), Verdict::Send);
        assert_eq!(selection.judge(20_000, 4), Verdict::Send);
        assert_eq!(selection.judge(20_001, 4), Verdict::OutsideSpan);
        assert_eq!(selection.judge(15_000, 255), Verdict::OtherSystem);
        assert_eq!(Selection::default().judge(u64::MAX, 1), Verdict::Send);
    }

    #[test]
    fn destinations_parse_and_say_what_they_take() {
        assert_eq!(
            "udp:127.0.0.1:14550".parse(),
            Ok(Destination::Udp("127.0.0.1:14550".into()))
        );
        assert_eq!(
            "tcp_listen:[::1]:5760".parse(),
            Ok(Destination::TcpListen("[::1]:5760".into()))
        );
        assert_eq!(
            "udp:gcs.range.example:14550".parse::<Destination>(),
            Ok(Destination::Udp("gcs.range.example:14550".into()))
        );
        for bad in [
            "udp:14550",
            "tcp:1.2.3.4:5",
            "udp:host:port",
            "127.0.0.1:14550",
        ] {
            let e = bad.parse::<Destination>().unwrap_err();
            assert!(e.contains("udp:HOST:PORT or tcp_listen:ADDR"), "{e}");
        }
        assert_eq!(
            Destination::TcpListen("0.0.0.0:5760".into()).to_string(),
            "tcp_listen:0.0.0.0:5760"
        );
    }

    #[test]
    fn the_summary_says_what_was_sent_and_what_was_not() {
        let tally = Tally {
            files: 1,
            sent: 23_894,
            bytes: 1_000_000,
            rejected: 2,
            outside_span: 0,
            other_systems: 7,
            first_us: Some(1_533_737_000_000_000),
            last_us: Some(1_533_737_207_600_000),
            recorded_us: 207_600_000,
            max_lag_ns: 1_300_000,
        };
        let selection = Selection {
            sysid: Some(1),
            ..Selection::default()
        };
        let text = tally.summary(
            &Destination::Udp("127.0.0.1:14550".into()),
            Speed::Times(10.0),
            &selection,
            20_760_000_000,
            false,
        );
        assert_eq!(
            text,
            "replay: sent 23894 frames (1000000 bytes) from 1 file to udp:127.0.0.1:14550 at 10x\n\
             recorded 2018-08-08T14:03:20.000Z to 2018-08-08T14:06:47.600Z (207.600 s of recording), sent over 20.760 s; lag at most 1.3 ms behind the recorded pace\n\
             rejected records: 2 (skipped, never sent; counted as `tlog convert` counts them)\n\
             not sent: 7 frames from other systems than --sysid 1\n"
        );
        assert_eq!(
            progress_line(12, 1_533_737_000_000_000, Some(3_000_000)),
            "12 frames sent, recorded 2018-08-08T14:03:20.000Z, lag 3.0 ms"
        );
    }
}
