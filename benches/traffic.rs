//! Benchmark (issue 42): the traffic monitor at a busy range's load. The release daemon receives,
//! over loopback UDP, `VEHICLES` of our vehicles (HEARTBEAT at 1 Hz, GLOBAL_POSITION_INT at
//! 10 Hz, each holding its own spot on a grid 5 km apart) and `TRACKS` aircraft reported by a
//! ground ADS-B receiver (ADSB_VEHICLE at 1 Hz each, spread over the second). Each aircraft flies
//! east at 100 m/s past one vehicle, abeam at 0 to 900 m, from 3 km west: within 1 km of it
//! between 20 and 40 s, so nearly every one opens a `traffic_proximity` during the run.
//!
//! Reported: the daemon's CPU per traffic report (ADSB_VEHICLE and GLOBAL_POSITION_INT), over
//! the run, and the alert delay: each `traffic_proximity` open's arrival on the SSE stream minus
//! its `utc` (the receipt stamp of the report that brought the aircraft in, as logged: whole
//! milliseconds, so the delay reads up to 1 ms long). With `baseline` among the arguments, the
//! same frames go out as ATTITUDE (same count and rate, no traffic), for the cost of the
//! traffic monitor alone.
//!
//! cargo bench --bench traffic [-- TRACKS VEHICLES SECONDS] [baseline]

#[path = "harness/mod.rs"]
mod harness;

use foxborne_receiver::wire::build::{self, Header};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// Metres per degree of latitude near 47° N, and of longitude there (close enough to lay out
/// the geometry; the daemon measures on the ellipsoid).
const M_PER_DEG_LAT: f64 = 111_200.0;
const M_PER_DEG_LON: f64 = 75_900.0;

fn vehicle_at(v: usize) -> (f64, f64) {
    (
        47.0 + (v / 10) as f64 * 0.045,
        8.0 + (v % 10) as f64 * 0.066,
    )
}

fn e7(deg: f64) -> i32 {
    (deg * 1e7).round() as i32
}

fn main() {
    let args = harness::numeric_args();
    let tracks = *args.first().unwrap_or(&500) as usize;
    let vehicles = (*args.get(1).unwrap_or(&50) as usize).min(100);
    let seconds = *args.get(2).unwrap_or(&40);
    let baseline = std::env::args().any(|a| a == "baseline");
    let mut daemon = harness::BenchDaemon::start("traffic", "[gap]\nthreshold_s = 3.0\n");
    let udp = daemon.udp;
    let delays = harness::open_event_delays(&daemon.http, "traffic_proximity");
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut seq = vec![0u8; 256];
    let mut send = |sysid: u8, msgid: u32, payload: &[u8]| {
        let header = Header {
            sysid,
            compid: 1,
            seq: seq[sysid as usize],
        };
        seq[sysid as usize] = seq[sysid as usize].wrapping_add(1);
        // The baseline sends the same number of frames, as ATTITUDE.
        let frame = if baseline && msgid != 0 {
            build::v2(header, 30, &build::attitude_payload(0, 0.1))
        } else {
            build::v2(header, msgid, payload)
        };
        socket.send_to(&frame, udp).unwrap();
    };
    let cpu_before = harness::proc_stat(daemon.pid()).0;
    let started = Instant::now();
    let total = Duration::from_secs(seconds);
    let tick = Duration::from_millis(10);
    let mut n_tick = 0u64;
    let (mut adsb, mut positions) = (0u64, 0u64);
    while started.elapsed() < total {
        let t = started.elapsed().as_secs_f64();
        for v in 0..vehicles {
            let sysid = (v + 1) as u8;
            if (n_tick + v as u64).is_multiple_of(100) {
                send(sysid, 0, &build::heartbeat_payload(2, 3));
            }
            // 10 Hz, spread over the ticks.
            if (n_tick + v as u64).is_multiple_of(10) {
                let (lat, lon) = vehicle_at(v);
                send(
                    sysid,
                    33,
                    &build::global_position_int_payload(e7(lat), e7(lon), 500_000),
                );
                positions += 1;
            }
        }
        for i in 0..tracks {
            // Each track once a second, in its own tick.
            if !(n_tick + i as u64).is_multiple_of(100) {
                continue;
            }
            let v = i % vehicles;
            let (lat, lon) = vehicle_at(v);
            let abeam_m = (i / vehicles) as f64 * 900.0 / (tracks / vehicles).max(1) as f64;
            let east_m = -3_000.0 + 100.0 * t;
            let payload = build::adsb_vehicle_payload(
                0x100000 + i as u32,
                e7(lat + abeam_m / M_PER_DEG_LAT),
                e7(lon + east_m / M_PER_DEG_LON),
                550_000,
                "BENCH",
            );
            send(200, 246, &payload);
            adsb += 1;
        }
        n_tick += 1;
        if let Some(wait) = (started + tick * n_tick as u32).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // What is in flight settles, then the CPU is read.
    std::thread::sleep(Duration::from_millis(500));
    let cpu_s = harness::proc_stat(daemon.pid()).0 - cpu_before;
    let mut latencies: Vec<f64> = delays.try_iter().collect();
    daemon.stop();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let reports = adsb + positions;
    println!(
        "{}: {tracks} tracks at 1 Hz + {vehicles} vehicles at 10 Hz for {elapsed:.1} s: {adsb} ADSB_VEHICLE + {positions} GLOBAL_POSITION_INT ({:.0}/s) + heartbeats",
        if baseline { "baseline (the same frames as ATTITUDE)" } else { "traffic" },
        reports as f64 / elapsed
    );
    println!(
        "daemon CPU {cpu_s:.2} s over the run ({:.1} % of a core): {:.1} µs per report",
        100.0 * cpu_s / elapsed,
        cpu_s * 1e6 / reports as f64
    );
    if !baseline {
        if latencies.is_empty() {
            println!("no traffic_proximity opened");
        } else {
            println!(
                "alert delay (traffic_proximity open on /events minus its utc), {} opens: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                latencies.len(),
                harness::quantile(&latencies, 0.5),
                harness::quantile(&latencies, 0.99),
                harness::quantile(&latencies, 1.0)
            );
        }
    }
}
