//! The HTTP port as an operator and an attacker meet it (issue 11): HTTP/1.1 done properly
//! (HEAD, pipelining, 400 for garbage, 405), the Host check on loopback, the bearer token off
//! loopback (and `check-config` refusing a listener without one), resumable `/events`, and
//! `/metrics` as a real Prometheus client library parses it.

use crate::common;

use common::{http_raw, status_code, Daemon, SseClient};
use foxborne_receiver::wire::build::{self, heartbeat_v2 as hb, Header};
use std::net::UdpSocket;
use std::process::Command;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

fn local_config(extra: &str) -> String {
    format!(
        "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 1.0\n[http]\nlisten = \"127.0.0.1:0\"\n{extra}"
    )
}

#[test]
fn http_is_spoken_properly_and_foreign_hosts_get_421() {
    let mut d = Daemon::start("http-proper", &local_config(""));
    let http = d.http_addr();
    d.wait_for("receiver started", WAIT);

    let head = http_raw(
        &http,
        b"HEAD /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status_code(&head), 200, "{head}");
    assert!(head.ends_with("\r\n\r\n"), "HEAD has no body: {head:?}");
    assert!(head
        .to_ascii_lowercase()
        .contains("content-type: application/json"));

    // Two requests in one write: two answers, in order.
    let pipelined = http_raw(
        &http,
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\nGET /nope HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    let first = pipelined.find("HTTP/1.1 200 OK").expect(&pipelined);
    let second = pipelined.find("HTTP/1.1 404").expect(&pipelined);
    assert!(first < second, "{pipelined}");

    assert_eq!(
        status_code(&http_raw(&http, b"BLAH BLAH BLAH\r\n\r\n")),
        400,
        "garbage"
    );
    assert_eq!(
        status_code(&http_raw(
            &http,
            b"POST /status HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )),
        405
    );
    let oversized = format!(
        "GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    assert_eq!(status_code(&http_raw(&http, oversized.as_bytes())), 431);

    // DNS rebinding: a page from evil.example that resolved its name to 127.0.0.1.
    for path in ["/status", "/events", "/metrics"] {
        let evil = http_raw(
            &http,
            format!("GET {path} HTTP/1.1\r\nHost: evil.example:9137\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(status_code(&evil), 421, "{path}: {evil}");
        assert!(!evil.contains("vehicles"), "{evil}");
    }
    let status = common::status(&http);
    assert_eq!(status["http"]["refused"]["host"], 3);
    assert!(status["http"]["connections_total"].as_u64().unwrap() >= 8);
    assert!(d.stop().success());
}

#[test]
fn off_loopback_a_token_is_required_and_check_config_refuses_a_listener_without_one() {
    common::assert_config_refused(
        "[[link]]\nname = \"a\"\nudp = \"127.0.0.1:0\"\n[http]\nlisten = \"0.0.0.0:9137\"\n",
        &["http.token", "0.0.0.0:9137"],
    );

    let token = "range-north-5f1c0d9e7a2b4c68";
    let mut d = Daemon::start(
        "http-token",
        &format!(
            "data_dir = \"{{dir}}/data\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[http]\nlisten = \"0.0.0.0:0\"\ntoken = \"{token}\"\n"
        ),
    );
    let http = d.http_addr();
    d.wait_for("receiver started", WAIT);
    let port = http.rsplit(':').next().unwrap();
    let addr = format!("127.0.0.1:{port}");
    for auth in ["", "Authorization: Bearer wrong-token-wrong-token\r\n"] {
        let refused = http_raw(
            &addr,
            format!("GET /status HTTP/1.1\r\nHost: range-gw\r\n{auth}Connection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(status_code(&refused), 401, "{refused}");
        assert!(refused.contains("Bearer"), "{refused}");
        assert!(!refused.contains("vehicles"));
    }
    let allowed = http_raw(
        &addr,
        format!("GET /status HTTP/1.1\r\nHost: range-gw\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(status_code(&allowed), 200, "{allowed}");
    assert!(allowed.contains("\"vehicles\""));

    // A browser cannot send the header: it proves the token once at `/?token=`, is given an
    // HttpOnly cookie and sent to `/` (the token leaves the address bar), and is let in by the
    // cookie from then on. The board itself is refused without either.
    let get = |path: &str, extra: &str| {
        http_raw(
            &addr,
            format!("GET {path} HTTP/1.1\r\nHost: range-gw\r\n{extra}Connection: close\r\n\r\n")
                .as_bytes(),
        )
    };
    assert_eq!(status_code(&get("/", "")), 401);
    assert_eq!(
        status_code(&get("/?token=wrong-token-wrong-token", "")),
        401
    );
    // Only the board's entry takes the token from the address.
    assert_eq!(
        status_code(&get(&format!("/status?token={token}"), "")),
        401
    );
    let entry = get(&format!("/?token={token}"), "");
    assert_eq!(status_code(&entry), 303, "{entry}");
    assert!(entry.to_lowercase().contains("location: /\r\n"), "{entry}");
    let cookie = entry
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("no set-cookie: {entry}"));
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(
        !cookie.contains(token),
        "the cookie carries the token hex-encoded: {cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let with_cookie = format!("Cookie: {pair}\r\n");
    let page = get("/", &with_cookie);
    assert_eq!(status_code(&page), 200, "{page}");
    assert!(page.contains("data-connection"), "{page}");
    assert!(page
        .to_lowercase()
        .contains("content-security-policy: default-src 'none'"));
    assert_eq!(status_code(&get("/status", &with_cookie)), 200);
    assert_eq!(status_code(&get("/board/history", &with_cookie)), 200);
    assert_eq!(status_code(&get("/board.js", &with_cookie)), 200);
    assert_eq!(status_code(&get("/board.js", "")), 401);

    // The status verb sends the config's token.
    let status = common::run_ok(
        Command::new(common::binary())
            .args(["status", "--addr", &addr, "--config"])
            .arg(d.dir.join("receiver.toml")),
        "status with the config's token",
    );
    assert!(String::from_utf8_lossy(&status.stdout).contains("radio1"));
    let without = Command::new(common::binary())
        .args(["status", "--addr", &addr, "--config", "/nonexistent.toml"])
        .output()
        .unwrap();
    assert!(!without.status.success());
    assert!(String::from_utf8_lossy(&without.stderr).contains("401"));
    assert!(d.stop().success());
}

/// Every event has an id; a client that hangs up, misses a gap, and comes back with
/// `Last-Event-ID` is given what it missed, in order; an id from another run gets `resync`.
#[test]
fn a_client_that_reconnects_with_last_event_id_gets_the_gap_it_missed() {
    let (mut d, udp) = Daemon::start_radio1("sse-resume", &local_config(""));
    let http = d.http_addr();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();

    let first = SseClient::connect(&http, None);
    sock.send_to(&hb(7, 0), udp).unwrap();
    let open7 = first.next(WAIT, |e| {
        let v = e.json();
        v["kind"] == "telemetry_gap" && v["sysid"] == 7 && v["state"] == "open"
    });
    let seen_id = open7.id.clone().expect("an id on the event");
    let (run, seq) = seen_id.rsplit_once('-').unwrap();
    let seq: u64 = seq.parse().unwrap();
    first.hang_up();

    // While nobody listens: sysid 7 is heard again (closed), sysid 8 goes quiet (open).
    sock.send_to(&hb(7, 1), udp).unwrap();
    sock.send_to(&hb(8, 0), udp).unwrap();
    let events_file = d.dir.join("data/events/current.jsonl");
    assert!(common::eventually(WAIT, || {
        std::fs::read_to_string(&events_file)
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("\"sysid\":8") && l.contains("\"state\":\"open\""))
    }));

    let back = SseClient::connect(&http, Some(&seen_id));
    let mut missed = Vec::new();
    while missed.len() < 3 {
        let e = back.next(WAIT, |_| true);
        missed.push(e);
    }
    for (k, e) in missed.iter().enumerate() {
        assert_eq!(e.event, None);
        assert_eq!(
            e.id.as_deref(),
            Some(format!("{run}-{}", seq + 1 + k as u64).as_str()),
            "ids follow on: {missed:?}"
        );
    }
    let replayed: Vec<(u64, String)> = missed
        .iter()
        .map(|e| {
            let v = e.json();
            (
                v["sysid"].as_u64().unwrap(),
                v["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(replayed.contains(&(7, "closed".into())), "{replayed:?}");
    assert!(replayed.contains(&(8, "open".into())), "{replayed:?}");
    back.hang_up();

    // An id from before a restart (another run) cannot be resumed: resync, then live.
    let stale = SseClient::connect(&http, Some("18f0a0b0c0d-12"));
    let resync = stale.next(WAIT, |_| true);
    assert_eq!(resync.event.as_deref(), Some("resync"), "{resync:?}");
    assert!(resync.json()["reason"]
        .as_str()
        .unwrap()
        .contains("/status"));
    assert!(resync.id.unwrap().starts_with(run));
    sock.send_to(&hb(9, 0), udp).unwrap();
    let live = stale.next(WAIT, |e| e.json()["sysid"] == 9);
    assert!(live.id.unwrap().starts_with(run));
    assert!(d.stop().success());
}

/// `/metrics` read by Python's prometheus_client (the OpenMetrics parser): every family parses,
/// and a link with 40 ms latency shows as a histogram in seconds with its samples at or below
/// the 0.05 bucket and above 0.025.
#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn metrics_parse_with_prometheus_client_and_latency_is_a_histogram_in_seconds() {
    let python = common::python();
    let (mut d, udp) = Daemon::start_radio1("metrics", &local_config(""));
    let http = d.http_addr();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.send_to(&hb(5, 0), udp).unwrap();
    for k in 0..20u32 {
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        let frame = build::v2(
            Header {
                sysid: 5,
                compid: 1,
                seq: k as u8 + 1,
            },
            2,
            &build::system_time_payload(now_us - 40_000, 10_000 + k * 100),
        );
        sock.send_to(&frame, udp).unwrap();
    }
    let count_of = |text: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix("foxborne_latency_seconds_count{sysid=\"5\"} "))
            .map(|v| v.parse::<u64>().unwrap())
    };
    assert!(common::eventually(WAIT, || count_of(&common::http_get(
        &http, "/metrics"
    )) == Some(20)));
    let text = common::http_get(&http, "/metrics");
    let script = r#"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(sys.stdin.read())}
lat = fams["foxborne_latency_seconds"]
assert lat.type == "histogram" and lat.unit == "seconds", (lat.type, lat.unit)
b = {s.labels["le"]: s.value for s in lat.samples if s.name.endswith("_bucket") and s.labels["sysid"] == "5"}
assert b["0.025"] == 0 and b["0.05"] == 20 and b["+Inf"] == 20, b
assert fams["foxborne_build"].type == "info"
assert fams["foxborne_receipts"].type == "counter"
print(len(fams), "families")
"#;
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    common::assert_success(&child.wait_with_output().unwrap(), &text);
    assert!(d.stop().success());
}

/// The sequence anomalies of one sender on one link, from frames whose `seq` the test chose:
/// 10, 11, 11 (a duplicate), 14 (two lost), 12 and 13 (two late), 200 (a sender starting
/// over: 186 forward is more than half the space, so a step back of 70, past the reorder
/// window), 201. `/status` and `/metrics` both count exactly that.
#[test]
fn duplicates_late_frames_and_resets_are_counted_on_status_and_metrics() {
    let (mut d, udp) = Daemon::start_radio1("seq-anomalies", &local_config(""));
    let http = d.http_addr();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let seqs = [10u8, 11, 11, 14, 12, 13, 200, 201];
    for seq in seqs {
        sock.send_to(&hb(6, seq), udp).unwrap();
    }
    assert!(common::eventually(WAIT, || common::status_entry(
        &http, "links", "radio1"
    )["receipts"]
        == seqs.len()));
    let link = common::status_entry(&http, "links", "radio1");
    assert_eq!(
        (
            &link["seq_lost"],
            &link["seq_duplicates"],
            &link["seq_late"],
            &link["seq_resets"]
        ),
        (
            &serde_json::json!(2),
            &serde_json::json!(1),
            &serde_json::json!(2),
            &serde_json::json!(1)
        ),
        "{link}"
    );
    let metrics = common::http_get(&http, "/metrics");
    for (kind, n) in [("duplicate", 1), ("late", 2), ("reset", 1)] {
        let series =
            format!("foxborne_sequence_anomalies_total{{link=\"radio1\",kind=\"{kind}\"}} {n}");
        assert!(
            metrics.lines().any(|l| l == series),
            "no `{series}` in\n{metrics}"
        );
    }
    assert!(metrics
        .lines()
        .any(|l| l == "foxborne_sequence_lost_total{link=\"radio1\",sysid=\"6\"} 2"));
    assert!(d.stop().success());
}
