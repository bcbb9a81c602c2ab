//! Benchmark: short-request latency with and without pressure on the HTTP port, in one run, with
//! the shipped config's HTTP limits (256 connections). Phase one: the release daemon receiving
//! 20,000 frames/s, `/healthz`, `/status` and `/metrics` probed in turn every 50 ms for 10 s.
//! Phase two: the same, with 300 `/events` clients that never read and 300 slowloris connections
//! (a head begun, one byte a second after it, reopened when cut off) attached first, all from one
//! other peer (127.0.0.2). Reports p50/p99/max per path and phase, probes unanswered within 5 s,
//! and the daemon's CPU.
//!
//! cargo bench --bench http_pressure
//! FOXBORNE_BENCH_BINARY=/path/to/older/foxborne-receiver cargo bench --bench http_pressure

#[path = "harness/mod.rs"]
mod harness;

use foxborne_receiver::wire::build::{self, Header};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One GET on a fresh connection: milliseconds until the whole answer was read, or `None`
/// when none came within 5 s. The connect has the same 5 s: a listener whose accept queue is
/// full leaves a SYN unanswered, and the kernel's own retries would hold a probe for minutes.
fn probe(http: &str, path: &str) -> Option<f64> {
    let t = Instant::now();
    let address: std::net::SocketAddr = http.parse().expect("the daemon's address");
    let mut s = TcpStream::connect_timeout(&address, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    (answer.starts_with("HTTP/1.1 200") && t.elapsed() < Duration::from_secs(5))
        .then(|| t.elapsed().as_secs_f64() * 1e3)
}

const PATHS: [&str; 3] = ["/healthz", "/status", "/metrics"];

fn phase(daemon: &harness::BenchDaemon, name: &str) {
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (stop, udp) = (stop.clone(), daemon.udp);
        std::thread::spawn(move || {
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let start = Instant::now();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..20 {
                    let h = Header {
                        sysid: 1 + (n % 4) as u8,
                        compid: 1,
                        seq: n as u8,
                    };
                    let _ = sock.send_to(&build::v2(h, 0, &build::heartbeat_payload(2, 3)), udp);
                    n += 1;
                }
                let next = start + Duration::from_micros(n / 20 * 1000);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            n
        })
    };
    let cpu0 = harness::proc_stat(daemon.pid()).0;
    let started = Instant::now();
    let mut probes: [Vec<f64>; 3] = Default::default();
    let mut unanswered = [0u32; 3];
    let mut k = 0;
    while started.elapsed() < Duration::from_secs(10) {
        match probe(&daemon.http, PATHS[k % 3]) {
            Some(ms) => probes[k % 3].push(ms),
            None => unanswered[k % 3] += 1,
        }
        k += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let cpu = harness::proc_stat(daemon.pid()).0 - cpu0;
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().unwrap();
    println!(
        "{name}: {:.0} frames/s received; daemon CPU {:.0}% of one core",
        sent as f64 / started.elapsed().as_secs_f64(),
        100.0 * cpu / started.elapsed().as_secs_f64()
    );
    for (i, path) in PATHS.iter().enumerate() {
        let p = &mut probes[i];
        p.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let q = |x| {
            if p.is_empty() {
                f64::NAN
            } else {
                harness::quantile(p, x)
            }
        };
        println!(
            "  {path}: {} answered, {} not within 5 s; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            p.len(),
            unanswered[i],
            q(0.5),
            q(0.99),
            q(1.0)
        );
    }
}

fn main() {
    let hard = {
        use nix::sys::resource::{getrlimit, setrlimit, Resource};
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
        hard
    };
    assert!(hard > 1_000, "need 700 descriptors");
    // The shipped config's HTTP limits: nothing set under [http] but the address.
    let mut daemon = harness::BenchDaemon::start("http-pressure", "");
    phase(&daemon, "quiet port");
    const HOSTILE: [u8; 4] = [127, 0, 0, 2];
    let mut silent = Vec::new();
    for _ in 0..300 {
        let mut s = harness::connect_from(HOSTILE, &daemon.http).unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        silent.push(s);
    }
    let slow_stop = Arc::new(AtomicBool::new(false));
    let slowloris = {
        let (stop, http) = (slow_stop.clone(), daemon.http.clone());
        std::thread::spawn(move || {
            let open = |http: &str| {
                let mut s = harness::connect_from(HOSTILE, http).ok()?;
                s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                    .ok()?;
                Some(s)
            };
            let mut conns: Vec<Option<TcpStream>> = (0..300).map(|_| open(&http)).collect();
            let mut reconnects = 0;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                for c in conns.iter_mut() {
                    // Cut off (header timeout, or closed for a newer one): come back, as an
                    // attacker would.
                    if c.as_mut().is_none_or(|s| s.write_all(b"a").is_err()) {
                        reconnects += 1;
                        *c = open(&http);
                    }
                }
            }
            reconnects
        })
    };
    std::thread::sleep(Duration::from_secs(1)); // let the 600 connections be accepted
    phase(&daemon, "300 silent /events + 300 slowloris");
    slow_stop.store(true, Ordering::Relaxed);
    let reconnects = slowloris.join().unwrap();
    println!("slowloris connections cut off and reopened: {reconnects}");
    let status = harness::http_get(&daemon.http, "/status");
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    println!("the port's own counts: {}", status["http"]);
    drop(silent);
    daemon.stop();
}
