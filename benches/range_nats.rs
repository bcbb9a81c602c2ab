//! Benchmark: several sites, one range (issue 13), against a real `nats-server -js`.
//!
//! 1. **Publish rate**: a release site daemon receives RECEIPTS datagrams (sysids 1..=100)
//!    while its NATS server is down, so they wait in its receive log; then nats-server starts,
//!    and the time until `/status` shows every line acknowledged gives the receipts/s one site
//!    publishes and gets acked (the catch-up after an outage, the hardest case).
//! 2. **Range alert latency**: a release `range` consumes `FOXBORNE_RECEIPTS` while this
//!    process plays SITES sites x VEHICLES vehicles (every site hears every vehicle: HEARTBEAT
//!    at 1 Hz and ATTITUDE at 5 Hz per vehicle per site, stamped now), published straight to
//!    the stream; half the vehicles stop on every site at staggered times. Latency of each range
//!    `telemetry_gap` open: its arrival on the range's SSE stream minus its deadline (last
//!    heartbeat + threshold), both on this host's UTC clock.
//!
//! cargo bench --bench range_nats [-- RECEIPTS SITES VEHICLES]

#[path = "harness/mod.rs"]
mod harness;
#[path = "../tests/suite/common/nats.rs"]
mod nats;

use foxborne_receiver::monitor::format_utc_ms;
use foxborne_receiver::wire::build::{self, Header};
use nats::{free_port, Nats};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() {
    let args = harness::numeric_args();
    let receipts = *args.first().unwrap_or(&200_000);
    let sites = *args.get(1).unwrap_or(&10) as usize;
    let vehicles = *args.get(2).unwrap_or(&100) as usize;
    let store = std::env::temp_dir().join(format!("foxborne-bench-nats-{}", std::process::id()));
    publish_rate(receipts, &store.join("publish"));
    range_latency(sites, vehicles, &store.join("range"));
    let _ = std::fs::remove_dir_all(&store);
}

fn acked(http: &str) -> u64 {
    let status: serde_json::Value =
        serde_json::from_str(&harness::http_get(http, "/status")).unwrap();
    status["publish"]["streams"][0]["acked"]
        .as_u64()
        .unwrap_or(0)
}

fn publish_rate(receipts: u64, store: &std::path::Path) {
    let port = free_port();
    let mut site = harness::BenchDaemon::start(
        "publish",
        &format!("[publish]\nnats_url = \"nats://127.0.0.1:{port}\"\nsite = \"bench\"\n"),
    );
    // Sent in paced bursts so the kernel keeps them all; what was written is what counts.
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    for n in 0..receipts {
        let h = Header {
            sysid: 1 + (n % 100) as u8,
            compid: 1,
            seq: (n / 100) as u8,
        };
        socket
            .send_to(
                &build::v2(h, 30, &build::attitude_payload(n as u32, 0.1)),
                site.udp,
            )
            .unwrap();
        if n % 500 == 499 {
            let due = started + Duration::from_secs_f64(n as f64 / 50_000.0);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
    }
    let mut lines = 0;
    loop {
        std::thread::sleep(Duration::from_millis(500)); // until the writer has flushed
        let now = site.receive_line_count();
        if now == lines {
            break;
        }
        lines = now;
    }
    let cpu_before = harness::proc_stat(site.pid()).0;
    let nats = Nats::start_on(store, port);
    let connected = Instant::now();
    let mut last = 0;
    while last < lines {
        std::thread::sleep(Duration::from_millis(20));
        last = acked(&site.http);
        assert!(
            connected.elapsed() < Duration::from_secs(600),
            "only {last} of {lines} acked"
        );
    }
    let took = connected.elapsed().as_secs_f64();
    let cpu = harness::proc_stat(site.pid()).0 - cpu_before;
    println!(
        "## publish: one site's backlog of {lines} receipts (of {receipts} sent) to JetStream"
    );
    println!(
        "acked all in {took:.2} s after nats-server started: {:.0} receipts/s; site daemon CPU {:.0} % of one core",
        lines as f64 / took,
        100.0 * cpu / took
    );
    site.stop();
    drop(nats);
}

fn range_latency(sites: usize, vehicles: usize, store: &std::path::Path) {
    let port = free_port();
    let nats = Nats::start_on(store, port);
    let url = nats.url();
    let (mut range, dir, mut lines) = harness::spawn_daemon(
        "range",
        "range",
        &format!(
            "data_dir = \"{{dir}}/data\"\n[range]\nnats_url = \"{url}\"\nname = \"bench\"\n[gap]\nthreshold_s = 3.0\n[http]\nlisten = \"127.0.0.1:0\"\n"
        ),
    );
    let mut http = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.contains("http listening") {
            http = line
                .split("local=")
                .nth(1)
                .map(|s| s.split_whitespace().next().unwrap().to_string());
        }
        if line.contains("range started") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let http = http.expect("the range's http address");

    let latencies = harness::gap_alert_latencies(&http);
    let cpu_before = harness::proc_stat(range.id()).0;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let quiet = vehicles / 2;
    let published = runtime.block_on(async {
        let client = async_nats::connect(&url).await.unwrap();
        // 8 s warm-up, then vehicle i < quiet stops at 8 s + i * (6 s / quiet); 20 s in all.
        let started = Instant::now();
        let tick = Duration::from_millis(10);
        let mut n_tick = 0u64;
        let mut published = 0u64;
        while started.elapsed() < Duration::from_secs(20) {
            let t = started.elapsed();
            let recv_utc = format_utc_ms(harness::utc_ns());
            for v in 0..vehicles {
                let stop_at = Duration::from_secs(8)
                    + Duration::from_millis(6000 * v as u64 / quiet.max(1) as u64);
                if v < quiet && t >= stop_at {
                    continue;
                }
                let sysid = v + 1;
                // Per vehicle: HEARTBEAT at 1 Hz and ATTITUDE at 5 Hz, spread over the ticks.
                // (message, msgid, payload length) as a site's receipt line has them.
                let (msg, msgid, len) = match (n_tick + v as u64) % 100 {
                    0 => ("HEARTBEAT", 0, 9),
                    k if k % 20 == 10 => ("ATTITUDE", 30, 28),
                    _ => continue,
                };
                for s in 0..sites {
                    let line = format!(
                        r#"{{"recv_utc":"{recv_utc}","mono_ns":0,"link":"radio","sysid":{sysid},"compid":1,"msgid":{msgid},"msg":"{msg}","seq":0,"len":{len}}}"#
                    );
                    client
                        .publish(format!("foxborne.receipts.site{s}.{sysid}"), line.into())
                        .await
                        .unwrap();
                    published += 1;
                }
            }
            n_tick += 1;
            let next = started + tick * n_tick as u32;
            tokio::time::sleep_until(next.into()).await;
        }
        client.flush().await.unwrap();
        published
    });
    let cpu = harness::proc_stat(range.id()).0 - cpu_before;
    let mut got: Vec<f64> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < quiet && Instant::now() < deadline {
        if let Ok(ms) = latencies.recv_timeout(Duration::from_millis(200)) {
            got.push(ms);
        }
    }
    got.sort_by(f64::total_cmp);
    println!(
        "## range: {sites} sites x {vehicles} vehicles, {published} receipts in 20 s ({:.0}/s), {quiet} go quiet",
        published as f64 / 20.0
    );
    println!(
        "gap opens seen: {} of {quiet}; alert latency ms p50 {:.1} p95 {:.1} p99 {:.1} max {:.1}; range CPU {:.0} % of one core",
        got.len(),
        harness::quantile(&got, 0.5),
        harness::quantile(&got, 0.95),
        harness::quantile(&got, 0.99),
        got.last().copied().unwrap_or(f64::NAN),
        100.0 * cpu / 20.0
    );
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(range.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = range.wait();
    drop(nats);
    let _ = std::fs::remove_dir_all(&dir);
}
