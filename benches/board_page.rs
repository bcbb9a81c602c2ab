//! Benchmark: the range board in headless Chromium at `VEHICLES` vehicles x `RATE` msgs/s.
//! The release daemon receives, per vehicle, HEARTBEAT and SYSTEM_TIME at 1 Hz and ATTITUDE at
//! the rest of `RATE`; every 2 s one vehicle (in turn) goes quiet for 5 s, so gaps open and close
//! all along (threshold 3 s). `tests/board/board_browser.py bench` opens the board, waits for
//! every vehicle, and over `SECONDS` reads the Chromium processes' CPU from /proc (renderer,
//! GPU, browser), the renderer main thread's busy time (DevTools Performance.getMetrics), and
//! for each telemetry_gap event on its own EventSource the time until the vehicle's element
//! changes data-state (MutationObserver, both on performance.now()).
//!
//! Needs /usr/bin/chromium, /usr/bin/chromedriver and a Python with selenium
//! (`$FOXBORNE_PYTHON`, else `.venv/bin/python`).
//!
//! cargo bench --bench board_page [-- VEHICLES RATE SECONDS]

#[path = "harness/mod.rs"]
mod harness;

use foxborne_receiver::wire::build::{self, Header};
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args = harness::numeric_args();
    let vehicles = (*args.first().unwrap_or(&250)).min(250) as usize;
    let rate = *args.get(1).unwrap_or(&50);
    let seconds = *args.get(2).unwrap_or(&60);
    let python = std::env::var_os("FOXBORNE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));

    let mut daemon = harness::BenchDaemon::start("board", "[gap]\nthreshold_s = 3.0\n");
    let udp = daemon.udp;
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            let started = Instant::now();
            let tick = Duration::from_millis(10);
            let mut seq = vec![0u8; vehicles];
            let mut n_tick = 0u64;
            let mut sent = 0u64;
            let attitude_rate = rate.saturating_sub(2) as f64;
            while !stop.load(Ordering::Relaxed) {
                let t = started.elapsed().as_secs();
                // From 20 s on, vehicle (t / 2) mod VEHICLES is quiet during [2k, 2k + 5) s.
                let quiet = |v: usize| {
                    t >= 20
                        && (0..3).any(|back| {
                            let k = (t / 2).saturating_sub(back);
                            k * 2 >= 20 && t < k * 2 + 5 && (k as usize) % vehicles == v
                        })
                };
                for (v, seq) in seq.iter_mut().enumerate() {
                    if quiet(v) {
                        continue;
                    }
                    let mut h = Header {
                        sysid: (v + 1) as u8,
                        compid: 1,
                        seq: *seq,
                    };
                    let mut send = |msgid: u32, payload: &[u8], h: &mut Header| {
                        let _ = socket.send_to(&build::v2(*h, msgid, payload), udp);
                        h.seq = h.seq.wrapping_add(1);
                        sent += 1;
                    };
                    // Once a second, spread over the second.
                    if (n_tick + v as u64).is_multiple_of(100) {
                        send(0, &build::heartbeat_payload(2, 3), &mut h);
                        let now_us = (harness::utc_ns() / 1000) as u64;
                        send(2, &build::system_time_payload(now_us, 0), &mut h);
                    }
                    let per_tick = attitude_rate / 100.0;
                    let due =
                        ((n_tick + 1) as f64 * per_tick) as u64 - (n_tick as f64 * per_tick) as u64;
                    for _ in 0..due {
                        send(30, &build::attitude_payload(n_tick as u32, 0.1), &mut h);
                    }
                    *seq = h.seq;
                }
                n_tick += 1;
                if let Some(wait) =
                    (started + tick * n_tick as u32).checked_duration_since(Instant::now())
                {
                    std::thread::sleep(wait);
                }
            }
            (sent, started.elapsed())
        })
    };

    let cpu_before = harness::proc_stat(daemon.pid()).0;
    let started = Instant::now();
    let mut script = Command::new(&python)
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/board/board_browser.py"))
        .args(["bench", &format!("http://{}/", daemon.http)])
        .arg(vehicles.to_string())
        .arg(seconds.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
    let line = BufReader::new(script.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .next()
        .expect("the browser script said nothing");
    assert!(script.wait().unwrap().success(), "{line}");
    let daemon_cpu_s = harness::proc_stat(daemon.pid()).0 - cpu_before;
    let daemon_wall = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (sent, sending) = sender.join().unwrap();
    daemon.stop();

    let r: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(r["phase"], "bench", "{r:#}");
    let wall = r["wall_s"].as_f64().unwrap();
    let cpu = r["cpu_s"].as_object().unwrap();
    let pct = |s: f64| 100.0 * s / wall;
    let total: f64 = cpu.values().filter_map(|v| v.as_f64()).sum();
    let mut timings: Vec<f64> = r["event_to_element_ms"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_f64())
        .collect();
    let missed = r["event_to_element_ms"].as_array().unwrap().len() - timings.len();
    timings.sort_by(f64::total_cmp);
    println!(
        "board_page: {} vehicles on the page, {:.0} msgs/s sent to the daemon, {wall:.0} s measured",
        r["vehicles"],
        sent as f64 / sending.as_secs_f64()
    );
    for (kind, s) in cpu {
        println!(
            "  chromium {kind:<14} CPU {:5.1} % of one core",
            pct(s.as_f64().unwrap())
        );
    }
    println!(
        "  chromium all processes CPU {:5.1} % of one core",
        pct(total)
    );
    let main = &r["main_thread_s"];
    println!(
        "  renderer main thread busy {:.1} % (script {:.1} %, style {:.1} %, layout {:.1} %)",
        pct(main["TaskDuration"].as_f64().unwrap()),
        pct(main["ScriptDuration"].as_f64().unwrap()),
        pct(main["RecalcStyleDuration"].as_f64().unwrap()),
        pct(main["LayoutDuration"].as_f64().unwrap()),
    );
    let renders = r["renders"].as_f64().unwrap();
    println!(
        "  render passes {:.1}/s, {:.1} ms each on average; {} snapshots, {} SSE events; DOM nodes {}, JS heap {:.1} MB",
        renders / wall,
        r["render_ms"].as_f64().unwrap() / renders.max(1.0),
        r["snapshots"],
        r["events"],
        r["dom_nodes"],
        r["js_heap_mb"].as_f64().unwrap()
    );
    if timings.is_empty() {
        println!("  SSE event to changed element: no gap event in the window");
    } else {
        println!(
            "  SSE event to changed element: n={} p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms ({missed} without a change)",
            timings.len(),
            harness::quantile(&timings, 0.5),
            harness::quantile(&timings, 0.95),
            timings[timings.len() - 1]
        );
    }
    println!(
        "  daemon CPU {:.1} % of one core",
        100.0 * daemon_cpu_s / daemon_wall
    );
}
