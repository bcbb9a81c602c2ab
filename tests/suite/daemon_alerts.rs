//! Live telemetry_gap alerts from the built daemon: three vehicles over UDP, one goes quiet for
//! 5 s. The `open` event must be out (events file, SSE, webhook) before it resumes, the `closed`
//! event must carry the gap the receive log shows, and `analyze` over the daemon's own receive log
//! must give the same findings. A webhook that refuses connections must not delay anything.

use crate::common;

use common::{eventually, Daemon};
use foxborne_receiver::wire::build::{self, Header};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(15);
const QUIET: Duration = Duration::from_secs(5);

/// Reads the SSE stream into a channel of event JSON values.
fn sse_client(addr: &str) -> mpsc::Receiver<serde_json::Value> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if let Some(data) = line.strip_prefix("data: ") {
                if tx.send(serde_json::from_str(data).unwrap()).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

/// A webhook endpoint: every POST body, answered 200.
fn webhook_server() -> (String, mpsc::Receiver<serde_json::Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let body = loop {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap();
                    if body.len() >= len {
                        break body[..len].to_string();
                    }
                }
                if n == 0 {
                    return;
                }
            };
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
            if tx.send(serde_json::from_str(&body).unwrap()).is_err() {
                return;
            }
        }
    });
    (addr, rx)
}

/// Heartbeats from sysids 1, 2, 3 every 200 ms until `stop`; sysid 3 skips while `quiet` is set.
fn heartbeats(
    addr: std::net::SocketAddr,
    quiet: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut seq = 0u8;
        while !stop.load(Ordering::SeqCst) {
            for sysid in 1..=3u8 {
                if sysid == 3 && quiet.load(Ordering::SeqCst) {
                    continue;
                }
                tx.send_to(
                    &build::v2(
                        Header {
                            sysid,
                            compid: 1,
                            seq,
                        },
                        0,
                        &build::heartbeat_payload(2, 3),
                    ),
                    addr,
                )
                .unwrap();
            }
            seq = seq.wrapping_add(1);
            std::thread::sleep(Duration::from_millis(200));
        }
    })
}

fn refusing_port() -> (std::os::fd::OwnedFd, std::net::SocketAddr) {
    use nix::sys::socket::{
        bind, getsockname, socket, AddressFamily, SockFlag, SockType, SockaddrIn,
    };
    use std::os::fd::AsRawFd;
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )
    .unwrap();
    bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, 0)).unwrap();
    let addr: SockaddrIn = getsockname(fd.as_raw_fd()).unwrap();
    (fd, std::net::SocketAddr::V4(addr.into()))
}

fn get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.split_once("\r\n\r\n").unwrap().1.to_string()
}

fn gap_events(events: &[serde_json::Value]) -> Vec<serde_json::Value> {
    events
        .iter()
        .filter(|e| e["kind"] == "telemetry_gap")
        .cloned()
        .collect()
}

fn events_file_lines(d: &Daemon) -> Vec<serde_json::Value> {
    let path = d.dir.join("data/events/current.jsonl");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn next_gap(rx: &mpsc::Receiver<serde_json::Value>, deadline: Instant) -> serde_json::Value {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = rx
            .recv_timeout(left)
            .expect("no telemetry_gap event in time");
        if e["kind"] == "telemetry_gap" {
            return e;
        }
    }
}

#[test]
fn a_quiet_vehicle_is_alerted_live_on_every_channel_and_analyze_agrees() {
    let (hook_addr, hook) = webhook_server();
    let config = format!(
        "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 3.0\nvehicles = {{ 3 = \"UAS-03\" }}\n[http]\nlisten = \"127.0.0.1:0\"\n[webhook]\nurl = \"http://{hook_addr}/alerts\"\n"
    );
    let (mut d, udp) = Daemon::start_radio1("alerts", &config);
    let http = d.http_addr();
    let sse = sse_client(&http);
    let (quiet, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let sender = heartbeats(udp, quiet.clone(), stop.clone());
    std::thread::sleep(Duration::from_millis(1500)); // let the interval be learned: scenario, not sync
    quiet.store(true, Ordering::SeqCst);
    let quiet_from = Instant::now();

    let open = next_gap(&sse, quiet_from + WAIT);
    assert!(
        quiet_from.elapsed() < QUIET,
        "the open alert came only after the vehicle resumed"
    );
    assert_eq!(
        (open["sysid"].as_u64(), open["state"].as_str()),
        (Some(3), Some("open"))
    );
    assert_eq!(open["name"], "UAS-03");
    assert_eq!(open["links"], serde_json::json!(["radio1"]));
    assert_eq!(
        open["observed"],
        "Observed: telemetry receive gap, not necessarily radio failure"
    );
    let interval = open["expected_interval_s"].as_f64().unwrap();
    assert!(
        (0.15..0.3).contains(&interval),
        "learned interval {interval}"
    );
    assert!(
        eventually(WAIT, || gap_events(&events_file_lines(&d)).contains(&open)),
        "open event not in the events file"
    );
    // The webhook takes telemetry_gap events only (its default `kinds`): the receiver's start
    // event is not posted, so the first post is the open gap.
    let hook_open = hook.recv_timeout(WAIT).unwrap();
    assert_eq!(hook_open, open);

    std::thread::sleep(QUIET.saturating_sub(quiet_from.elapsed())); // the 5 s silence itself
    quiet.store(false, Ordering::SeqCst);
    let closed = next_gap(&sse, Instant::now() + WAIT);
    assert_eq!(
        (closed["sysid"].as_u64(), closed["state"].as_str()),
        (Some(3), Some("closed"))
    );
    let gap_s = closed["gap_s"].as_f64().unwrap();
    assert!((4.9..5.6).contains(&gap_s), "gap_s {gap_s}");
    assert!(closed["title"]
        .as_str()
        .unwrap()
        .starts_with("Heartbeat due and not received. Nothing for 5."));
    assert_eq!(hook.recv_timeout(WAIT).unwrap(), closed);
    stop.store(true, Ordering::SeqCst);
    sender.join().unwrap();
    assert!(d.stop().success());

    // Only sysid 3 was alerted, and the events file has exactly the two events SSE gave.
    let file_gaps = gap_events(&events_file_lines(&d));
    assert_eq!(file_gaps, vec![open.clone(), closed.clone()]);
    // gap_s is the receive log's own spacing of sysid 3's heartbeats around the silence.
    let receipts = d.receipts();
    let times: Vec<i64> = receipts
        .iter()
        .filter(|r| r["sysid"] == 3 && r["msg"] == "HEARTBEAT")
        .map(|r| foxborne_receiver::monitor::parse_utc_ns(r["recv_utc"].as_str().unwrap()).unwrap())
        .collect();
    let widest = times.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(
        (widest as f64 / 1e9 - gap_s).abs() < 1e-9,
        "gap_s {gap_s} vs log {widest}"
    );

    // analyze over the daemon's own receive log reproduces the live findings.
    let log = d.dir.join("data/receive/current.jsonl");
    let offline = analyze(&log, &d.dir.join("receiver.toml"));
    assert_eq!(gap_events(&offline), vec![open, closed]);
}

#[test]
fn a_webhook_that_refuses_connections_does_not_delay_the_events_file() {
    // A port that is bound but not listening refuses connections, and stays ours for the whole
    // test (a closed listener's port could be handed to another test's server meanwhile).
    let (_reserved, refused) = refusing_port();
    let config = format!(
        "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 1.0\n[http]\nlisten = \"127.0.0.1:0\"\n[webhook]\nurl = \"http://{refused}/alerts\"\nqueue = 4\n"
    );
    let (mut d, udp) = Daemon::start_radio1("deadhook", &config);
    let http = d.http_addr();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Ten vehicles heard once each: ten gaps open 1 s later, with the webhook queue (4) full.
    for sysid in 1..=10u8 {
        tx.send_to(
            &build::v2(
                Header {
                    sysid,
                    compid: 1,
                    seq: 0,
                },
                0,
                &build::heartbeat_payload(2, 3),
            ),
            udp,
        )
        .unwrap();
    }
    assert!(eventually(WAIT, || gap_events(&events_file_lines(&d))
        .len()
        == 10));
    // All ten are in the file while the webhook has delivered none and has had to drop what did
    // not fit its queue: the file never waited for it.
    let webhook = |outcome: &str| -> u64 {
        let metrics = get(&http, "/metrics");
        let prefix = format!(
            "foxborne_webhook_deliveries_total{{webhook=\"127.0.0.1\",outcome=\"{outcome}\"}} "
        );
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .map_or(0, |v| v.parse().unwrap())
    };
    // A queue of 4 and 10 gap events (the webhook takes telemetry_gap only): one in delivery,
    // four queued, at least 5 dropped for the webhook.
    assert!(eventually(WAIT, || webhook("dropped") >= 5));
    assert_eq!(webhook("sent"), 0);
    d.wait_for("webhook delivery failing", WAIT);
    assert!(d.stop().success());
}

/// The latency events of one system, by time.
fn latency_of(events: &[serde_json::Value], sysid: u64) -> Vec<serde_json::Value> {
    events
        .iter()
        .filter(|e| e["kind"] == "latency" && e["sysid"] == sysid)
        .cloned()
        .collect()
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn latency_is_never_negative_and_analyze_agrees_within_its_resolution() {
    let python = common::python_with(&["pymavlink"]);
    let config = "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[[link]]\nname = \"junk\"\nudp = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 3.0\n[latency]\nreport_interval_s = 2.0\n[http]\nlisten = \"127.0.0.1:0\"\n";
    let mut d = Daemon::start("latency-agree", config);
    let (radio, junk) = (d.udp_addr("radio1"), d.udp_addr("junk"));
    d.wait_for("receiver started", WAIT);
    common::run_ok(
        common::python_script(&python, "latency_sender.py")
            .args(["--port", &radio.port().to_string()])
            .args(["--junk-port", &junk.port().to_string()])
            .args(["--vehicles", "5", "--rate-hz", "2", "--duration-s", "9"]),
        "latency_sender.py",
    );
    assert!(d.stop().success());
    let events: Vec<serde_json::Value> =
        std::fs::read_to_string(d.dir.join("data/events/current.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let offline = analyze(
        &d.dir.join("data/receive/current.jsonl"),
        &d.dir.join("receiver.toml"),
    );
    let mut compared = 0;
    for sysid in 11..=15 {
        let (live, logged) = (latency_of(&events, sysid), latency_of(&offline, sysid));
        // 9 s of SYSTEM_TIME, a report every 2 s from the first: four reports each.
        assert!(live.len() >= 3, "sysid {sysid}: {live:#?}");
        assert_eq!(live.len(), logged.len(), "sysid {sysid}");
        for (l, o) in live.iter().zip(&logged) {
            assert_eq!(
                (&l["utc"], &l["count"]),
                (&o["utc"], &o["count"]),
                "{l} vs {o}"
            );
            // Loopback from a sender on this clock: on time, never early, never a clock offset.
            assert!(
                l["clock_offset_ms"].is_null() && o["clock_offset_ms"].is_null(),
                "{l} {o}"
            );
            assert_eq!(l["resolution_ms"], 0.001, "{l}");
            assert_eq!(o["resolution_ms"], 1.0, "{o}");
            for figure in ["p50_ms", "p95_ms", "max_ms"] {
                let live_ms = l[figure]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{figure}: {l}"));
                assert!(live_ms >= 0.001, "{figure} {live_ms} in {l}");
                match o[figure].as_f64() {
                    Some(ms) => assert!((ms - live_ms).abs() <= 1.0, "{l} vs {o}"),
                    // Under the log's millisecond: the live figure is within it, give or take it.
                    None => {
                        assert!(
                            o["below_resolution"]
                                .as_array()
                                .is_some_and(|b| b.iter().any(|f| f == figure)),
                            "{o}"
                        );
                        assert!(live_ms < 2.0, "{l} vs {o}");
                    }
                }
            }
            compared += 1;
        }
    }
    assert!(compared >= 15, "{compared} reports compared");
    // The junk on the other link is counted, never a receipt.
    let junk_receipts = d.receipts().iter().filter(|r| r["link"] == "junk").count();
    assert_eq!(junk_receipts, 0);
}

/// What `analyze` finds in the receive log `log` under the daemon's config, as JSON events.
fn analyze(log: &std::path::Path, config: &std::path::Path) -> Vec<serde_json::Value> {
    common::json_lines(
        std::process::Command::new(common::binary())
            .arg("analyze")
            .arg(log)
            .arg("--config")
            .arg(config),
    )
}
