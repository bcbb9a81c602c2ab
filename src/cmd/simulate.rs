//! `simulate`: a small fleet of simulated vehicles sending MAVLink 2 over UDP, to see a receiver
//! work without a vehicle (README "Try it"). Each vehicle sends a HEARTBEAT and a SYSTEM_TIME
//! (its clock on UTC) every `--interval-s`; `--quiet SYSID:AT:FOR` silences one vehicle for a
//! while, which the receiver reports as a telemetry_gap. Frames are encoded by the `mavlink`
//! crate, an implementation independent of the receiver's own scanner.

use super::{Exit, UsageError};
use anyhow::Context;
use clap::Args;
use mavlink::dialects::ardupilotmega::{MavMessage, HEARTBEAT_DATA, SYSTEM_TIME_DATA};
use mavlink::{MavHeader, MavlinkVersion};
use std::net::UdpSocket;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Where to send (the receiver's UDP link).
    #[arg(long, default_value = "127.0.0.1:14550")]
    pub to: String,
    /// How many vehicles, with system ids from --first-sysid up.
    #[arg(long, default_value_t = 3)]
    pub vehicles: u8,
    /// The first vehicle's system id.
    #[arg(long, default_value_t = 1)]
    pub first_sysid: u8,
    /// Seconds between one vehicle's heartbeats.
    #[arg(long, default_value_t = 1.0)]
    pub interval_s: f64,
    /// Silence a vehicle: SYSID:AT:FOR, seconds after the start (e.g. 2:10:5). Repeatable.
    #[arg(long, value_parser = parse_quiet)]
    pub quiet: Vec<Quiet>,
    /// Stop after this many seconds (default: run until interrupted).
    #[arg(long)]
    pub duration_s: Option<f64>,
}

/// A vehicle silent from `at` to `at + for` after the start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quiet {
    pub sysid: u8,
    pub at: Duration,
    pub length: Duration,
}

impl Quiet {
    fn silences(&self, sysid: u8, since_start: Duration) -> bool {
        sysid == self.sysid && since_start >= self.at && since_start < self.at + self.length
    }
}

fn parse_quiet(text: &str) -> Result<Quiet, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let [sysid, at, length] = parts[..] else {
        return Err(format!("`{text}`: use SYSID:AT:FOR, e.g. 2:10:5"));
    };
    let seconds = |s: &str| {
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e9)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| format!("`{s}` is not a number of seconds"))
    };
    Ok(Quiet {
        sysid: sysid
            .parse()
            .map_err(|_| format!("`{sysid}` is not a system id (0 to 255)"))?,
        at: seconds(at)?,
        length: seconds(length)?,
    })
}

/// The frames one vehicle sends at one beat: HEARTBEAT and SYSTEM_TIME, MAVLink 2.
pub fn beat(sysid: u8, seq: &mut u8, utc_us: u64, boot_ms: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let heartbeat = MavMessage::HEARTBEAT(HEARTBEAT_DATA {
        custom_mode: 0,
        mavlink_version: 3,
        ..HEARTBEAT_DATA::default()
    });
    let system_time = MavMessage::SYSTEM_TIME(SYSTEM_TIME_DATA {
        time_unix_usec: utc_us,
        time_boot_ms: boot_ms,
    });
    for message in [heartbeat, system_time] {
        let header = MavHeader {
            system_id: sysid.into(),
            component_id: 1,
            sequence: *seq,
        };
        *seq = seq.wrapping_add(1);
        mavlink::write_versioned_msg(&mut out, MavlinkVersion::V2, header, &message)
            .expect("writing to a Vec cannot fail");
    }
    out
}

pub fn run(args: SimulateArgs) -> anyhow::Result<Exit> {
    if args.vehicles == 0 || !(args.interval_s > 0.001 && args.interval_s < 3600.0) {
        return Err(UsageError(
            "simulate: --vehicles at least 1, --interval-s between 0.001 and 3600".into(),
        )
        .into());
    }
    let socket = UdpSocket::bind("0.0.0.0:0").context("cannot open a UDP socket")?;
    socket
        .connect(&args.to)
        .with_context(|| format!("cannot send to {}", args.to))?;
    let sysids: Vec<u8> = (0..args.vehicles)
        .map(|i| args.first_sysid.wrapping_add(i))
        .collect();
    eprintln!(
        "simulating {} vehicles (sysid {}..={}) to {}, a heartbeat every {} s{}",
        sysids.len(),
        sysids[0],
        sysids[sysids.len() - 1],
        args.to,
        args.interval_s,
        if args.quiet.is_empty() {
            ""
        } else {
            "; quiet as asked"
        }
    );
    let start = Instant::now();
    let interval = Duration::from_secs_f64(args.interval_s);
    let mut seqs = vec![0u8; sysids.len()];
    let mut silent = vec![false; sysids.len()];
    // Every beat is a HEARTBEAT and a SYSTEM_TIME in one datagram.
    let mut frames_sent = 0u64;
    for tick in 0u64.. {
        let since_start = start.elapsed();
        if args
            .duration_s
            .is_some_and(|d| since_start.as_secs_f64() >= d)
        {
            break;
        }
        let utc_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        for (i, &sysid) in sysids.iter().enumerate() {
            let quiet = args.quiet.iter().any(|q| q.silences(sysid, since_start));
            if quiet != silent[i] {
                silent[i] = quiet;
                eprintln!(
                    "{:.1} s: sysid {sysid} {}",
                    since_start.as_secs_f64(),
                    if quiet { "goes quiet" } else { "beats again" }
                );
            }
            if !quiet {
                let frames = beat(sysid, &mut seqs[i], utc_us, since_start.as_millis() as u32);
                socket.send(&frames).context("sending")?;
                frames_sent += 2;
            }
        }
        // Paced against the start, so the beat does not drift with the time spent sending.
        let next = start + interval * (tick as u32 + 1);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    // What was sent, so a check can count the receive log against it.
    eprintln!("simulate: sent {frames_sent} frames");
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::signing::SigningKeys;
    use crate::wire::{DatagramScanner, ScanItem};

    #[test]
    fn a_beat_is_a_heartbeat_and_a_system_time_our_scanner_accepts() {
        let mut seq = 254;
        let bytes = beat(7, &mut seq, 1_790_000_000_000_000, 1234);
        let keys = SigningKeys::default();
        let frames: Vec<(u32, u8, u8)> = DatagramScanner::new(&bytes, &keys)
            .map(|item| match item {
                ScanItem::Frame(f) => (f.msgid, f.sysid, f.seq),
                ScanItem::Reject(r) => panic!("{r:?}"),
            })
            .collect();
        assert_eq!(frames, vec![(0, 7, 254), (2, 7, 255)]);
        assert_eq!(seq, 0);
    }

    #[test]
    fn quiet_windows_parse_and_apply() {
        let q = parse_quiet("2:10:5").unwrap();
        assert!(!q.silences(2, Duration::from_secs(9)));
        assert!(q.silences(2, Duration::from_secs(10)));
        assert!(!q.silences(3, Duration::from_secs(12)));
        assert!(!q.silences(2, Duration::from_secs(15)));
        assert!(parse_quiet("2:10").is_err());
        assert!(parse_quiet("300:1:1").is_err());
        assert!(parse_quiet("2:x:1").is_err());
    }
}
