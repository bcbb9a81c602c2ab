//! Benchmark: telemetry_gap alert latency under load. The release daemon receives `VEHICLES`
//! vehicles over loopback UDP, each with HEARTBEAT and SYSTEM_TIME at 1 Hz and ATTITUDE at
//! `RATE` Hz; `QUIET` of them stop at staggered times. For each `open` event, the latency is the
//! time it reached the SSE stream (emitted together with the events-file write) minus its
//! deadline (`utc`: last heartbeat + threshold). Both are on this host's UTC clock.
//!
//! With `FLOOD` > 0, a second link `flood` receives that many 64 KB datagrams a second of
//! crafted junk (all-0xFE and MAVLink 2 starts of a 255-byte message, alternately) throughout,
//! and the report adds the clean link's stamp delay: each SYSTEM_TIME receipt's `recv_utc`
//! minus the `time_unix_usec` the sender put in it just before sending.
//!
//! With `CLIENTS` > 0, that many extra `/events` clients are attached and read throughout (the
//! range board on every wall); with `SCRAPES` > 0, `/metrics` is fetched that many times a
//! second. The report adds the daemon's CPU over the run and the scrape times.
//!
//! cargo bench --bench alert_latency [-- VEHICLES RATE FLOOD CLIENTS SCRAPES]

#[path = "harness/mod.rs"]
mod harness;

use foxborne_receiver::wire::build::{self, Header};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() {
    let args = harness::numeric_args();
    let vehicles = *args.first().unwrap_or(&200) as u8 as usize;
    let rate = *args.get(1).unwrap_or(&50);
    let flood = *args.get(2).unwrap_or(&0);
    let clients = *args.get(3).unwrap_or(&0) as usize;
    let scrapes = *args.get(4).unwrap_or(&0);
    let quiet = vehicles / 2;
    let mut daemon = harness::BenchDaemon::start_with_links(
        "alert",
        "[gap]\nthreshold_s = 3.0\n[[link]]\nname = \"flood\"\nudp = \"127.0.0.1:0\"\n",
        &["flood"],
    );
    let udp = daemon.udp;
    let rx = daemon.gap_alert_latencies();
    let attached: Vec<_> = (0..clients)
        .map(|_| {
            let mut sse = std::net::TcpStream::connect(&daemon.http).unwrap();
            use std::io::{Read, Write};
            sse.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .unwrap();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut total = 0usize;
                while let Ok(n) = sse.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    total += n;
                }
                total
            })
        })
        .collect();
    let scrape_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scraper = (scrapes > 0).then(|| {
        let (stop, http) = (scrape_stop.clone(), daemon.http.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut took_ms = Vec::new();
            let mut bytes = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                bytes = harness::http_get(&http, "/metrics").len();
                took_ms.push(t.elapsed().as_secs_f64() * 1e3);
                let next = start + Duration::from_secs_f64(took_ms.len() as f64 / scrapes as f64);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            (took_ms, bytes)
        })
    });
    let cpu_before = harness::proc_stat(daemon.pid()).0;
    let flood_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flooder = (flood > 0).then(|| {
        let (stop, to) = (flood_stop.clone(), daemon.links["flood"]);
        std::thread::spawn(move || {
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let all_fe = vec![0xFEu8; 65_000];
            let mut v2 = Vec::with_capacity(65_000);
            while v2.len() + 12 <= 65_000 {
                v2.extend_from_slice(&[0xFD, 0xFF, 0, 0, 7, 7, 7, 0x83, 0, 0, 0x55, 0xAA]);
            }
            let start = Instant::now();
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = sock.send_to(if n.is_multiple_of(2) { &all_fe } else { &v2 }, to);
                n += 1;
                let next = start + Duration::from_secs_f64(n as f64 / flood as f64);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            n
        })
    });

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
        for (v, seq) in seq.iter_mut().enumerate() {
            let stop_at = Duration::from_secs(8)
                + Duration::from_millis(6000 * v as u64 / quiet.max(1) as u64);
            if v < quiet && t >= stop_at {
                continue;
            }
            let h = Header {
                sysid: (v + 1) as u8,
                compid: 1,
                seq: *seq,
            };
            // Heartbeats spread over the second so they do not all land in one tick.
            if (n_tick + v as u64).is_multiple_of(100) {
                socket
                    .send_to(&build::v2(h, 0, &build::heartbeat_payload(2, 3)), udp)
                    .unwrap();
                *seq = seq.wrapping_add(1);
                let h = Header { seq: *seq, ..h };
                let sent_us = (harness::utc_ns() / 1000) as u64;
                socket
                    .send_to(
                        &build::v2(h, 2, &build::system_time_payload(sent_us, 0)),
                        udp,
                    )
                    .unwrap();
                *seq = seq.wrapping_add(1);
                sent += 2;
            }
            let per_tick = rate as f64 / 100.0;
            let due = ((n_tick + 1) as f64 * per_tick) as u64 - (n_tick as f64 * per_tick) as u64;
            for _ in 0..due {
                let h = Header {
                    sysid: (v + 1) as u8,
                    compid: 1,
                    seq: *seq,
                };
                socket
                    .send_to(
                        &build::v2(h, 30, &build::attitude_payload(n_tick as u32, 0.1)),
                        udp,
                    )
                    .unwrap();
                *seq = seq.wrapping_add(1);
                sent += 1;
            }
        }
        n_tick += 1;
        if let Some(wait) = (started + tick * n_tick as u32).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
    }
    let cpu_s = harness::proc_stat(daemon.pid()).0 - cpu_before;
    scrape_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let scraped = scraper.map(|s| s.join().unwrap());
    flood_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flooded = flooder.map(|f| f.join().unwrap()).unwrap_or(0);
    let mut latencies: Vec<f64> = rx.try_iter().collect();
    daemon.stop();
    let streamed: Vec<usize> = attached.into_iter().map(|c| c.join().unwrap()).collect();
    // The clean link's stamp delay, from the receive log's SYSTEM_TIME receipts.
    let mut delays_ms: Vec<f64> = Vec::new();
    for path in daemon.receive_files() {
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            if r["msg"] == "SYSTEM_TIME" && r["link"] == "load" {
                let recv =
                    foxborne_receiver::monitor::parse_utc_ns(r["recv_utc"].as_str().unwrap())
                        .unwrap();
                let sent_us = r["fields"]["time_unix_usec"].as_i64().unwrap();
                // recv_utc keeps whole milliseconds: the middle of the millisecond.
                delays_ms.push((recv + 500_000 - sent_us * 1000) as f64 / 1e6);
            }
        }
    }
    delays_ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if flood > 0 {
        println!(
            "flood link: {flooded} datagrams of 64 KB crafted junk at {flood}/s ({:.1} MB/s)",
            flooded as f64 * 65_000.0 / total.as_secs_f64() / 1e6
        );
    }
    if !delays_ms.is_empty() {
        println!(
            "clean link stamp delay (send to recv_utc, {} SYSTEM_TIME receipts): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            delays_ms.len(),
            harness::quantile(&delays_ms, 0.5),
            harness::quantile(&delays_ms, 0.99),
            harness::quantile(&delays_ms, 1.0)
        );
    }
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| harness::quantile(&latencies, p);
    println!(
        "{vehicles} vehicles, {rate} msgs/s each + 1 Hz heartbeat ({:.0} frames/s offered, {sent} sent); {} of {quiet} quiet vehicles alerted",
        sent as f64 / total.as_secs_f64(),
        latencies.len()
    );
    println!(
        "daemon CPU over the {:.0} s run: {cpu_s:.2} s ({:.1}% of one core)",
        total.as_secs_f64(),
        100.0 * cpu_s / total.as_secs_f64()
    );
    if clients > 0 {
        println!(
            "{clients} extra /events clients attached and reading; each received {}..{} bytes",
            streamed.iter().min().unwrap(),
            streamed.iter().max().unwrap()
        );
    }
    if let Some((mut took_ms, bytes)) = scraped {
        took_ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "/metrics scraped {} times ({scrapes}/s), {bytes} bytes each: p50 {:.2} ms, p99 {:.2} ms",
            took_ms.len(),
            harness::quantile(&took_ms, 0.5),
            harness::quantile(&took_ms, 0.99)
        );
    }
    if !latencies.is_empty() {
        println!(
            "alert latency (deadline to SSE): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            q(0.5),
            q(0.99),
            q(1.0)
        );
    }
}
