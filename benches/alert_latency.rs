//! Benchmark: telemetry_gap alert latency under load. The release daemon receives `VEHICLES`
//! vehicles over loopback UDP, each with HEARTBEAT at 1 Hz and ATTITUDE at `RATE` Hz; `QUIET` of
//! them stop at staggered times. For each `open` event, the latency is the time it reached the
//! SSE stream (emitted together with the events-file write) minus its deadline (`utc`: last
//! heartbeat + threshold). Both are on this host's UTC clock.
//!
//! cargo bench --bench alert_latency [-- VEHICLES RATE]

#[path = "harness/mod.rs"]
mod harness;

use foxborne_receiver::mavlink::build::{self, Header};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let vehicles = *args.first().unwrap_or(&200) as u8 as usize;
    let rate = *args.get(1).unwrap_or(&50);
    let quiet = vehicles / 2;
    let mut daemon = harness::BenchDaemon::start("alert", "[gap]\nthreshold_s = 3.0\n");
    let udp = daemon.udp;
    let rx = daemon.gap_alert_latencies();

    // 8 s warm-up at full load, then vehicle i (i < quiet) stops at 8 s + i * (6 s / quiet).
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    let total = Duration::from_secs(20);
    let tick = Duration::from_millis(10);
    let mut seq = vec![0u8; vehicles];
    let mut n_tick = 0u64;
    let mut sent = 0u64;
    while started.elapsed() < total {
        let t = started.elapsed();
        #[allow(clippy::needless_range_loop)] // `v` is the vehicle number, not only an index
        for v in 0..vehicles {
            let stop_at = Duration::from_secs(8)
                + Duration::from_millis(6000 * v as u64 / quiet.max(1) as u64);
            if v < quiet && t >= stop_at {
                continue;
            }
            let h = Header {
                sysid: (v + 1) as u8,
                compid: 1,
                seq: seq[v],
            };
            // Heartbeats spread over the second so they do not all land in one tick.
            if (n_tick + v as u64).is_multiple_of(100) {
                socket
                    .send_to(&build::v2(h, 0, &build::heartbeat_payload(2, 3)), udp)
                    .unwrap();
                seq[v] = seq[v].wrapping_add(1);
                sent += 1;
            }
            let per_tick = rate as f64 / 100.0;
            let due = ((n_tick + 1) as f64 * per_tick) as u64 - (n_tick as f64 * per_tick) as u64;
            for _ in 0..due {
                let h = Header {
                    sysid: (v + 1) as u8,
                    compid: 1,
                    seq: seq[v],
                };
                socket
                    .send_to(
                        &build::v2(h, 30, &build::attitude_payload(n_tick as u32, 0.1)),
                        udp,
                    )
                    .unwrap();
                seq[v] = seq[v].wrapping_add(1);
                sent += 1;
            }
        }
        n_tick += 1;
        if let Some(wait) = (started + tick * n_tick as u32).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
    }
    let mut latencies: Vec<f64> = rx.try_iter().collect();
    daemon.stop();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| harness::quantile(&latencies, p);
    println!(
        "{vehicles} vehicles, {rate} msgs/s each + 1 Hz heartbeat ({:.0} frames/s offered, {sent} sent); {} of {quiet} quiet vehicles alerted",
        sent as f64 / total.as_secs_f64(),
        latencies.len()
    );
    if !latencies.is_empty() {
        println!(
            "alert latency (deadline to SSE): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            q(0.5),
            q(0.99),
            q(1.0)
        );
    }
}
