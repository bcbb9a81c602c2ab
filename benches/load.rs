//! Load generator and load/soak harness. Plays a fleet over loopback UDP against the release
//! daemon: N vehicles, each with HEARTBEAT at 1 Hz, SYSTEM_TIME at 1 Hz and ATTITUDE at a chosen
//! rate; MAVLink 1 and 2 mixed, a share signed, a share corrupted on purpose (bad CRC). It knows
//! exactly which valid frames it sent, and at the end holds the daemon's receive log against that:
//! every valid frame must be a line, no corrupted one may be.
//!
//! It samples the daemon's CPU time and resident memory from /proc while it runs, can send SIGHUP
//! during the run (once in the middle, or as a storm), and can silence some vehicles near the end
//! to measure telemetry_gap alert latency (deadline to the SSE stream) under the load.
//!
//! cargo bench --bench load -- [--vehicles N] [--rate MSGS_PER_S_PER_VEHICLE] [--seconds S]
//!     [--sighup-mid] [--sighup-every-ms MS] [--quiet N] [--sample-s S] [--fields all]
//!
//! `--fields all` runs the daemon with `fields = "all"` (every payload decoded into `fields`);
//! without it the daemon's default (HEARTBEAT, SYSTEM_TIME, STATUSTEXT).

#[path = "harness/mod.rs"]
mod harness;

use foxborne_receiver::wire::build::{self, Header};
use std::collections::HashSet;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

struct Args {
    vehicles: usize,
    rate: f64,
    seconds: f64,
    sighup_mid: bool,
    sighup_every_ms: Option<u64>,
    quiet: usize,
    sample_s: f64,
    fields_all: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        vehicles: 50,
        rate: 50.0,
        seconds: 20.0,
        sighup_mid: false,
        sighup_every_ms: None,
        quiet: 0,
        sample_s: 5.0,
        fields_all: false,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let next = || argv.get(i + 1).cloned().unwrap_or_default();
        match argv[i].as_str() {
            "--vehicles" => a.vehicles = next().parse().unwrap(),
            "--rate" => a.rate = next().parse().unwrap(),
            "--seconds" => a.seconds = next().parse().unwrap(),
            "--quiet" => a.quiet = next().parse().unwrap(),
            "--sample-s" => a.sample_s = next().parse().unwrap(),
            "--fields" => {
                assert_eq!(next(), "all", "--fields takes `all`");
                a.fields_all = true;
            }
            "--sighup-every-ms" => a.sighup_every_ms = Some(next().parse().unwrap()),
            "--sighup-mid" => {
                a.sighup_mid = true;
                i += 1;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    a.vehicles = a.vehicles.clamp(1, 250);
    a
}

/// What one vehicle sends, frame by frame; remembers its sequence number.
struct Vehicle {
    sysid: u8,
    seq: u8,
    key: [u8; 32],
}

impl Vehicle {
    /// A frame of the given kind; `variant` picks v1/v2/signed and corruption deterministically.
    fn frame(&mut self, msgid: u32, payload: &[u8], variant: u64) -> (Vec<u8>, bool) {
        // Mixed, not `variant % n`: with a fixed number of frames per second a plain modulus would
        // pick the same vehicle's heartbeat every second (e.g. always corrupted, so never heard).
        let mix = variant.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let h = Header {
            sysid: self.sysid,
            compid: 1,
            seq: self.seq,
        };
        self.seq = self.seq.wrapping_add(1);
        let mut f = match mix % 10 {
            0..=2 => build::v1(h, msgid as u8, payload),
            3 => build::v2_signed(h, msgid, payload, &self.key, 1, variant),
            _ => build::v2(h, msgid, payload),
        };
        // One frame in 50 is corrupted on purpose: a payload bit flipped, so its CRC fails.
        let corrupt = mix % 50 == 7;
        if corrupt {
            let i = f.len() - 3;
            f[i] ^= 0x40;
        }
        (f, !corrupt)
    }
}

fn main() {
    let a = parse_args();
    let top = if a.fields_all {
        "fields = \"all\"\n"
    } else {
        ""
    };
    let mut daemon =
        harness::BenchDaemon::start_with_top("load", top, "[gap]\nthreshold_s = 3.0\n");
    let (udp, pid) = (daemon.udp, daemon.pid());
    let alerts = daemon.gap_alert_latencies();

    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut fleet: Vec<Vehicle> = (0..a.vehicles)
        .map(|i| Vehicle {
            sysid: (i + 1) as u8,
            seq: 0,
            key: [i as u8; 32],
        })
        .collect();
    let mut expected: HashSet<(u8, u8, u32, u64)> = HashSet::new(); // (sysid, seq, msgid, nth)
    let (mut valid, mut corrupted) = (0u64, 0u64);
    let tick = Duration::from_millis(10);
    let total = Duration::from_secs_f64(a.seconds);
    let quiet_from = total.mul_f64(0.75);
    let started = Instant::now();
    let (cpu0, _, _) = harness::proc_stat(pid);
    let mut samples: Vec<(f64, u64)> = Vec::new();
    let mut next_sample = Duration::ZERO;
    let mut next_hup = a.sighup_every_ms.map(Duration::from_millis);
    let mut hup_sent = 0u32;
    let mut n = 0u64;
    let mut variant = 0u64;
    let per_tick = a.rate / 100.0;
    let mut nth_by_key: std::collections::HashMap<(u8, u8, u32), u64> = Default::default();
    while started.elapsed() < total {
        let t = started.elapsed();
        for (i, v) in fleet.iter_mut().enumerate() {
            let silenced = i < a.quiet && t >= quiet_from + Duration::from_millis(100 * i as u64);
            if silenced {
                continue;
            }
            let mut send = |v: &mut Vehicle, msgid: u32, payload: &[u8]| {
                variant += 1;
                let seq = v.seq;
                let (f, ok) = v.frame(msgid, payload, variant);
                socket.send_to(&f, udp).unwrap();
                if ok {
                    valid += 1;
                    let nth = nth_by_key.entry((v.sysid, seq, msgid)).or_default();
                    *nth += 1;
                    expected.insert((v.sysid, seq, msgid, *nth));
                } else {
                    corrupted += 1;
                }
            };
            if (n + i as u64).is_multiple_of(100) {
                send(v, 0, &build::heartbeat_payload(2, 3));
                let unix = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_micros() as u64;
                send(v, 2, &build::system_time_payload(unix, (n * 10) as u32));
            }
            let due = ((n + 1) as f64 * per_tick) as u64 - (n as f64 * per_tick) as u64;
            for _ in 0..due {
                send(v, 30, &build::attitude_payload(n as u32, 0.1));
            }
        }
        n += 1;
        if a.sighup_mid && hup_sent == 0 && t >= total / 2 {
            daemon.signal(nix::sys::signal::Signal::SIGHUP);
            hup_sent += 1;
        }
        if let Some(at) = next_hup.filter(|at| t >= *at) {
            daemon.signal(nix::sys::signal::Signal::SIGHUP);
            hup_sent += 1;
            next_hup = Some(at + Duration::from_millis(a.sighup_every_ms.unwrap()));
        }
        if t >= next_sample {
            let (_, rss, _) = harness::proc_stat(pid);
            samples.push((t.as_secs_f64(), rss));
            next_sample += Duration::from_secs_f64(a.sample_s);
        }
        if let Some(wait) = (started + tick * n as u32).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let (cpu1, rss_end, hwm) = harness::proc_stat(pid);
    let status = daemon.stop();

    // Hold the receive log against what was sent.
    let mut got: HashSet<(u8, u8, u32, u64)> = HashSet::new();
    let mut nth_got: std::collections::HashMap<(u8, u8, u32), u64> = Default::default();
    let mut lines = 0u64;
    let mut with_fields = 0u64;
    let mut files = 0;
    let paths = daemon.receive_files();
    for path in paths {
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{} ends inside a line",
            path.display()
        );
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("every line is JSON");
            let key = (
                v["sysid"].as_u64().unwrap() as u8,
                v["seq"].as_u64().unwrap() as u8,
                v["msgid"].as_u64().unwrap() as u32,
            );
            let nth = nth_got.entry(key).or_default();
            *nth += 1;
            got.insert((key.0, key.1, key.2, *nth));
            lines += 1;
            with_fields += u64::from(v.get("fields").is_some());
        }
    }
    let missing = expected.difference(&got).count();
    let extra = got.difference(&expected).count();
    let fps = (valid + corrupted) as f64 / wall;
    let cpu = cpu1 - cpu0;
    println!("load: {} vehicles x ({} msgs/s + HEARTBEAT + SYSTEM_TIME at 1 Hz) for {wall:.1} s: {fps:.0} frames/s offered", a.vehicles, a.rate);
    println!("sent: {valid} valid, {corrupted} corrupted on purpose; SIGHUP sent {hup_sent} times; daemon exit {status}");
    println!("receive log: {lines} lines in {files} files; missing {missing}, extra {extra}; {with_fields} lines carry `fields` (fields = {})", if a.fields_all { "\"all\"" } else { "default" });
    println!(
        "daemon CPU: {cpu:.2} s over {wall:.1} s = {:.1} % of one core; {:.2} % of a core per 1,000 frames/s",
        100.0 * cpu / wall,
        100.0 * cpu / wall / (fps / 1000.0)
    );
    let rss: Vec<String> = samples
        .iter()
        .map(|(t, kb)| format!("{t:.0}s:{:.1}MB", *kb as f64 / 1024.0))
        .collect();
    println!("daemon RSS samples: {}", rss.join(" "));
    println!(
        "daemon RSS at end {:.1} MB, peak (VmHWM) {:.1} MB",
        rss_end as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    let mut lat: Vec<f64> = alerts.try_iter().collect();
    if !lat.is_empty() {
        lat.sort_by(|x, y| x.partial_cmp(y).unwrap());
        let q = |p: f64| harness::quantile(&lat, p);
        println!("gap alerts: {} of {} silenced vehicles; latency deadline to SSE p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms", lat.len(), a.quiet, q(0.5), q(0.99), q(1.0));
    }
    println!(
        "{}",
        if missing == 0 && extra == 0 {
            "RESULT: zero receipts lost"
        } else {
            "RESULT: LOSS"
        }
    );
    if missing != 0 || extra != 0 {
        std::process::exit(1);
    }
}
