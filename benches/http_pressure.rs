//! Benchmark: `/healthz` latency with and without pressure on the HTTP port, in one run. Phase
//! one: the release daemon receiving 20,000 frames/s, probed every 50 ms for 10 s. Phase two:
//! the same, with 300 `/events` clients that never read and 300 slowloris connections (a head
//! begun, one byte a second after it) attached first. Reports p50/p99/max of each phase and the
//! daemon's CPU.
//!
//! cargo bench --bench http_pressure

#[path = "harness/mod.rs"]
mod harness;

use foxborne_receiver::wire::build::{self, Header};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn probe(http: &str) -> f64 {
    let t = Instant::now();
    let mut s = TcpStream::connect(http).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    t.elapsed().as_secs_f64() * 1e3
}

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
    let mut probes = Vec::new();
    while started.elapsed() < Duration::from_secs(10) {
        probes.push(probe(&daemon.http));
        std::thread::sleep(Duration::from_millis(50));
    }
    let cpu = harness::proc_stat(daemon.pid()).0 - cpu0;
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().unwrap();
    probes.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p| harness::quantile(&probes, p);
    println!(
        "{name}: {} healthz probes: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {:.0} frames/s received; daemon CPU {:.0}% of one core",
        probes.len(),
        q(0.5),
        q(0.99),
        q(1.0),
        sent as f64 / started.elapsed().as_secs_f64(),
        100.0 * cpu / started.elapsed().as_secs_f64()
    );
}

fn main() {
    let hard = {
        use nix::sys::resource::{getrlimit, setrlimit, Resource};
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
        hard
    };
    assert!(hard > 1_000, "need 700 descriptors");
    let mut daemon = harness::BenchDaemon::start("http-pressure", "max_connections = 1024\n");
    phase(&daemon, "quiet port");
    let mut silent = Vec::new();
    for _ in 0..300 {
        let mut s = TcpStream::connect(&daemon.http).unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        silent.push(s);
    }
    let slow_stop = Arc::new(AtomicBool::new(false));
    let slowloris = {
        let (stop, http) = (slow_stop.clone(), daemon.http.clone());
        std::thread::spawn(move || {
            let mut conns: Vec<TcpStream> = (0..300)
                .map(|_| {
                    let mut s = TcpStream::connect(&http).unwrap();
                    s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                        .unwrap();
                    s
                })
                .collect();
            let mut reconnects = 0;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(1));
                for c in conns.iter_mut() {
                    // Cut off by the header timeout: come back, as an attacker would.
                    if c.write_all(b"a").is_err() {
                        reconnects += 1;
                        if let Ok(mut s) = TcpStream::connect(&http) {
                            let _ =
                                s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
                            *c = s;
                        }
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
    println!("slowloris connections cut off by the header timeout and reopened: {reconnects}");
    drop(silent);
    daemon.stop();
}
