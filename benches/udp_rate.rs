//! Benchmark: the highest loss-free UDP receive rate on loopback. For each rate the release
//! daemon is started afresh, one process sends HEARTBEAT/ATTITUDE frames (one per datagram,
//! v1 and v2 mixed, 20 senders) paced in 1 ms bursts for `SECONDS`, the daemon is stopped with
//! SIGTERM, and the receive log's lines are counted against what was sent.
//!
//! cargo bench --bench udp_rate [-- SECONDS]

#[path = "harness/mod.rs"]
mod harness;

use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn run_rate(rate: u64, seconds: u64) -> (u64, u64, f64) {
    let mut daemon = harness::BenchDaemon::start(&format!("udp-rate-{rate}"), "");
    let addr = daemon.udp;
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let frames = harness::fleet_frames();
    let per_ms = (rate / 1000).max(1);
    let total = rate * seconds;
    let started = Instant::now();
    let mut sent = 0u64;
    let mut tick = 0u64;
    while sent < total {
        for _ in 0..per_ms.min(total - sent) {
            tx.send_to(&frames[(sent as usize) % frames.len()], addr)
                .unwrap();
            sent += 1;
        }
        tick += 1;
        let next = started + Duration::from_millis(tick);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let send_secs = started.elapsed().as_secs_f64();
    daemon.stop();
    let received = daemon.receive_line_count();
    (sent, received, sent as f64 / send_secs)
}

fn main() {
    let seconds = harness::numeric_args().first().copied().unwrap_or(5);
    println!("rate (frames/s) | sent | received | lost | achieved send rate");
    let mut best = 0;
    for rate in [
        10_000u64, 20_000, 50_000, 100_000, 150_000, 200_000, 300_000,
    ] {
        let (sent, received, achieved) = run_rate(rate, seconds);
        println!(
            "{rate} | {sent} | {received} | {} | {achieved:.0}",
            sent - received
        );
        if received == sent {
            best = rate;
        } else {
            break;
        }
    }
    println!("highest loss-free rate tried: {best} frames/s for {seconds} s");
}
