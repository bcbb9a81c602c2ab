//! Issue 28 against the built daemon, with pymavlink peers (`tests/redundancy_peer.py`): one
//! vehicle over two UDP links with different losses (per-link and union delivery exact against
//! what was sent), a link cut while the other goes on (one `link_gap`, no `telemetry_gap`), two
//! senders on one system id (one `sysid_conflict`, no loss storm), a SiK radio's RADIO_STATUS
//! with `remrssi` falling before a cut (the gap carries the numbers), and a position stream
//! stopping while the heartbeats go on (a `stream` event).
//!
//! Needs a Python with pymavlink (`$FOXBORNE_PYTHON`, else `.venv/bin/python`); without it the
//! tests are ignored (the build script looks), unless `FOXBORNE_REQUIRE_PYTHON=1`.

use crate::common;

use common::{eventually, status_until, Daemon};
use serde_json::{json, Value};
use std::process::{Child, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// A config with one UDP link per name, and `extra` appended.
fn config(links: &[&str], extra: &str) -> String {
    let mut config = String::from(
        "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 3.0\n",
    );
    for link in links {
        config.push_str(&format!(
            "[[link]]\nname = \"{link}\"\nudp = \"127.0.0.1:0\"\n"
        ));
    }
    config.push_str(extra);
    config
}

/// Starts the daemon on `links` and waits until it receives; the UDP ports, in order.
fn start(name: &str, links: &[&str]) -> (Daemon, Vec<u16>) {
    let mut d = Daemon::start(name, &config(links, ""));
    let ports = links.iter().map(|l| d.udp_addr(l).port()).collect();
    d.wait_for("receiver started", WAIT);
    (d, ports)
}

/// The peer script running `scenario` against `ports`.
fn spawn_peer(scenario: &str, ports: &[u16]) -> Child {
    let python = common::python_with(&["pymavlink"]);
    let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
    common::python_script(&python, "redundancy_peer.py")
        .arg(scenario)
        .args(["--ports", &ports.join(",")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for the peer to finish; what it says it sent.
fn finish(peer: Child) -> Value {
    let out = peer.wait_with_output().unwrap();
    common::assert_success(&out, "peer");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// `/status`'s vehicle `sysid` (null when it is not there).
fn vehicle(status: &Value, sysid: u64) -> Value {
    status["vehicles"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["sysid"] == sysid))
        .cloned()
        .unwrap_or(Value::Null)
}

/// `/status`'s link `name` (null when it is not there).
fn link(status: &Value, name: &str) -> Value {
    status["links"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["name"] == name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The events of `kind` about `sysid` so far, in order.
fn events_of(d: &Daemon, kind: &str, sysid: u64) -> Vec<Value> {
    d.events()
        .into_iter()
        .filter(|e| e["kind"] == kind && e["sysid"] == sysid)
        .collect()
}

/// Waits for an event of `kind` about `sysid` in state `state`; the first such.
fn wait_event(d: &Daemon, kind: &str, sysid: u64, state: &str) -> Value {
    let find = || {
        events_of(d, kind, sysid)
            .into_iter()
            .find(|e| e["state"] == state)
    };
    assert!(
        eventually(WAIT, || find().is_some()),
        "no {kind} {state} for system {sysid}; events: {:#?}",
        d.events()
    );
    find().unwrap()
}

/// Telemetry gaps of `sysid` whose silence began before `before_utc` (both as the receiver
/// writes times, which sort as text): those the scenario did not cause by ending.
fn gaps_before(d: &Daemon, sysid: u64, before_utc: &str) -> Vec<Value> {
    events_of(d, "telemetry_gap", sysid)
        .into_iter()
        .filter(|g| g["last_recv_utc"].as_str().is_some_and(|t| t < before_utc))
        .collect()
}

/// SiK's units to dBm, as the issue states the rule; `None` for 255.
fn sik_dbm(value: u64) -> Value {
    if value == 255 {
        Value::Null
    } else {
        json!(((value as f64 / 1.9 - 127.0) * 10.0).round() / 10.0)
    }
}

fn percent(part: u64, sent: u64) -> f64 {
    (100.0 * part as f64 / sent as f64 * 100.0).round() / 100.0
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn two_links_with_different_losses_deliver_exactly_what_was_sent_per_link_and_together() {
    let (mut d, ports) = start("redundancy-two-links", &["radio1", "radio2"]);
    let http = d.http_addr();
    let sent = finish(spawn_peer("two-links", &ports));
    let n = |k: usize| sent["links"][k].as_u64().unwrap();
    let (n1, n2) = (n(0), n(1));
    let (union, total) = (
        sent["union"].as_u64().unwrap(),
        sent["sent"].as_u64().unwrap(),
    );
    // The scenario is what this test is about: more frames than the sequence space, each link
    // missing some, neither missing all that the other does.
    assert!(
        total > 256 && n1 < total && n2 < total && union > n1.max(n2),
        "{sent}"
    );

    // Every copy arrives (loopback) and is in the receive log: copies are never dropped.
    let (s, held) = status_until(&http, WAIT, |s| {
        link(s, "radio1")["receipts"] == n1 && link(s, "radio2")["receipts"] == n2
    });
    assert!(
        held,
        "receipts never reached {n1} and {n2}: {:#}",
        s["links"]
    );
    let logged = |name: &str| d.receipts().iter().filter(|r| r["link"] == name).count() as u64;
    assert!(
        eventually(WAIT, || logged("radio1") == n1 && logged("radio2") == n2),
        "receive log: radio1 {} of {n1}, radio2 {} of {n2}",
        logged("radio1"),
        logged("radio2")
    );

    let expected = json!({
        "sent": total,
        "any": union,
        "links": {"radio1": n1, "radio2": n2},
    });
    let (s, _) = status_until(&http, WAIT, |s| {
        vehicle(s, 9)["delivery_frames"] == expected
    });
    let v = vehicle(&s, 9);
    assert_eq!(
        v["delivery_frames"], expected,
        "sent: {sent}\nvehicle: {v:#}"
    );
    assert_eq!(
        v["delivery"],
        json!({
            "radio1": percent(n1, total),
            "radio2": percent(n2, total),
            "any": percent(union, total),
        }),
        "{v:#}"
    );
    // Together better than either, and each below the whole.
    let p = |k: &str| v["delivery"][k].as_f64().unwrap();
    assert!(
        p("any") > p("radio1").max(p("radio2")) && p("any") <= 100.0,
        "{v:#}"
    );
    assert_eq!(v["delivery_unreliable"], false, "{v:#}");
    assert!(
        events_of(&d, "sysid_conflict", 9).is_empty(),
        "{:#?}",
        d.events()
    );
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn a_link_cut_while_the_other_hears_is_one_link_gap_and_no_telemetry_gap() {
    let (mut d, ports) = start("redundancy-link-cut", &["radio1", "radio2"]);
    let http = d.http_addr();
    let peer = spawn_peer("link-cut", &ports);

    let open = wait_event(&d, "link_gap", 9, "open");
    assert_eq!(open["link"], "radio2", "{open:#}");
    assert_eq!(open["hearing"], json!(["radio1"]), "{open:#}");
    assert_eq!(open["threshold_s"], 3.0, "{open:#}");
    // While it is open /status says so (the cut lasts 7 s, the gap opens after 3 s of it).
    let (s, held) = status_until(&http, WAIT, |s| {
        vehicle(s, 9)["link_gaps"]
            .as_array()
            .is_some_and(|g| g.len() == 1 && g[0]["link"] == "radio2")
    });
    assert!(
        held,
        "/status never showed the link gap: {:#}",
        vehicle(&s, 9)
    );

    let closed = wait_event(&d, "link_gap", 9, "closed");
    let sent = finish(peer);
    assert_eq!(closed["link"], "radio2", "{closed:#}");
    assert_eq!(closed["last_recv_utc"], open["last_recv_utc"], "{closed:#}");
    assert!(
        closed["next_recv_utc"].as_str().unwrap() >= sent["resumed_utc"].as_str().unwrap(),
        "closed before the link came back: {closed:#} {sent}"
    );
    assert!(
        closed["gap_s"].as_f64().unwrap() > closed["threshold_s"].as_f64().unwrap(),
        "{closed:#}"
    );
    assert!(
        closed["hearing"]
            .as_array()
            .unwrap()
            .contains(&json!("radio1")),
        "{closed:#}"
    );

    let link_gaps = events_of(&d, "link_gap", 9);
    assert_eq!(
        link_gaps
            .iter()
            .map(|g| (g["link"].as_str().unwrap(), g["state"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [("radio2", "open"), ("radio2", "closed")],
        "{link_gaps:#?}"
    );
    // The vehicle was never silent: no telemetry gap (but the one its end may open).
    let last_heartbeat = sent["last_heartbeat_utc"].as_str().unwrap();
    assert_eq!(gaps_before(&d, 9, last_heartbeat), Vec::<Value>::new());
    let (s, held) = status_until(&http, WAIT, |s| {
        vehicle(s, 9)["link_gaps"]
            .as_array()
            .is_some_and(|g| g.is_empty())
    });
    assert!(held, "{:#}", vehicle(&s, 9));
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn two_senders_on_one_system_id_are_one_conflict_and_no_loss_storm() {
    let (mut d, ports) = start("redundancy-two-senders", &["radio1"]);
    let http = d.http_addr();
    let peer = spawn_peer("two-senders", &ports);

    let open = wait_event(&d, "sysid_conflict", 7, "open");
    assert_eq!(open["compid"], 1, "{open:#}");
    assert_eq!(open["links"], json!(["radio1"]), "{open:#}");
    let reasons = open["reasons"].as_array().unwrap();
    assert!(
        reasons.contains(&json!("interleaved_sequences")) || reasons.contains(&json!("sources")),
        "{open:#}"
    );
    // Both senders' heartbeats say the same (type, autopilot): no such evidence is invented.
    assert!(!reasons.contains(&json!("heartbeat_identity")), "{open:#}");
    let (s, held) = status_until(&http, WAIT, |s| {
        let v = vehicle(s, 7);
        v["delivery_unreliable"] == true && v["conflicts"].as_array().is_some_and(|c| c.len() == 1)
    });
    assert!(
        held,
        "/status never marked system 7 unreliable: {:#}",
        vehicle(&s, 7)
    );

    let sent = finish(peer);
    let frames: u64 = sent["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_u64().unwrap())
        .sum();
    let (s, held) = status_until(&http, WAIT, |s| link(s, "radio1")["receipts"] == frames);
    assert!(
        held,
        "receipts never reached {frames}: {:#}",
        link(&s, "radio1")
    );
    let radio1 = link(&s, "radio1");
    // Read as one sequence, each switch between the runs (100 numbers apart) would count
    // about 100 lost: thousands in all.
    let lost = radio1["seq_lost"].as_u64().unwrap();
    assert!(lost * 20 < frames, "{lost} lost of {frames}: {radio1:#}");
    assert!(
        radio1["seq_interleaved"].as_u64().unwrap() > 0,
        "{radio1:#}"
    );
    // Two sources seen, the peer's two sockets.
    let mut sources: Vec<Value> = open["sources"].as_array().unwrap().clone();
    sources.sort_by_key(|s| s.to_string());
    let mut expected: Vec<Value> = sent["sources"].as_array().unwrap().clone();
    expected.sort_by_key(|s| s.to_string());
    if reasons.contains(&json!("sources")) {
        assert_eq!(sources, expected, "{open:#}");
    }

    // 10 s after the last evidence it closes, and the figures are trusted again.
    let closed = wait_event(&d, "sysid_conflict", 7, "closed");
    assert!(closed["lasted_s"].as_f64().is_some(), "{closed:#}");
    let conflicts = events_of(&d, "sysid_conflict", 7);
    assert_eq!(
        conflicts
            .iter()
            .map(|c| c["state"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["open", "closed"],
        "{conflicts:#?}"
    );
    let (s, held) = status_until(&http, WAIT, |s| {
        let v = vehicle(s, 7);
        v["delivery_unreliable"] == false && v["conflicts"].as_array().is_some_and(|c| c.is_empty())
    });
    assert!(held, "{:#}", vehicle(&s, 7));
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn a_gap_carries_the_radio_numbers_from_before_and_during_it() {
    let (mut d, ports) = start("redundancy-radio-fade", &["radio1"]);
    let http = d.http_addr();
    let sent = finish(spawn_peer("radio-fade", &ports));
    let last_before = sent["last_before_cut"]["remrssi"].as_u64().unwrap();
    assert_eq!(last_before, 110, "{sent}");
    let reports = sent["reports"].as_array().unwrap();

    let open = wait_event(&d, "telemetry_gap", 9, "open");
    let closed = wait_event(&d, "telemetry_gap", 9, "closed");
    for gap in [&open, &closed] {
        let radios = gap["radio"]
            .as_array()
            .unwrap_or_else(|| panic!("no radio: {gap:#}"));
        assert_eq!(radios.len(), 1, "{gap:#}");
        let radio = &radios[0];
        assert_eq!(
            (&radio["link"], &radio["sysid"], &radio["compid"]),
            (&json!("radio1"), &json!(51), &json!(68)),
            "{gap:#}"
        );
        let before = &radio["before"];
        // Falling before the cut, down to the last value the radio gave before it.
        assert!(
            before["remrssi"]["first"].as_u64().unwrap()
                > before["remrssi"]["last"].as_u64().unwrap(),
            "{gap:#}"
        );
        assert_eq!(before["remrssi"]["last"], last_before, "{gap:#}");
        assert_eq!(before["remrssi"]["min"], last_before, "{gap:#}");
        assert_eq!(
            before["remrssi_dbm"]["last"],
            sik_dbm(last_before),
            "{gap:#}"
        );
        assert_eq!(
            before["rssi"]["last"], sent["last_before_cut"]["rssi"],
            "{gap:#}"
        );
        assert_eq!(before["txbuf"]["last"], 90, "{gap:#}");
        // The local radio went on reporting (the serial link to it is alive), "unknown" now.
        let during = &radio["during"];
        assert!(during["samples"].as_u64().unwrap() > 0, "{gap:#}");
        assert_eq!(during["remrssi"]["first"], 255, "{gap:#}");
        assert_eq!(during["remrssi"]["max"], 255, "{gap:#}");
        assert_eq!(during["remrssi_dbm"]["first"], Value::Null, "{gap:#}");
    }
    // Up to the open: only "unknown". Up to the close: the report sent just before the
    // heartbeat that closed it is in too, the radio hearing the vehicle again.
    let during = |gap: &Value| gap["radio"][0]["during"].clone();
    assert_eq!(during(&open)["remrssi"]["last"], 255, "{open:#}");
    assert_eq!(
        during(&open)["remrssi_dbm"]["last"],
        Value::Null,
        "{open:#}"
    );
    let resumed = reports[15]["remrssi"].as_u64().unwrap();
    assert_eq!(during(&closed)["remrssi"]["last"], resumed, "{closed:#}");
    assert_eq!(
        during(&closed)["remrssi_dbm"]["last"],
        sik_dbm(resumed),
        "{closed:#}"
    );
    assert!(
        during(&closed)["samples"].as_u64().unwrap() > during(&open)["samples"].as_u64().unwrap(),
        "{open:#} {closed:#}"
    );
    assert_eq!(closed["last_recv_utc"], open["last_recv_utc"]);

    // /status: the radio's latest report on its link, and the radio is no vehicle.
    let last = reports.last().unwrap();
    let (s, held) = status_until(&http, WAIT, |s| {
        link(s, "radio1")["radios"][0]["reports"] == reports.len()
    });
    assert!(held, "{:#}", link(&s, "radio1"));
    let radios = link(&s, "radio1")["radios"].clone();
    assert_eq!(radios.as_array().unwrap().len(), 1, "{radios:#}");
    let r = &radios[0];
    let remrssi = last["remrssi"].as_u64().unwrap();
    let rssi = last["rssi"].as_u64().unwrap();
    assert_eq!(
        json!({
            "sysid": r["sysid"], "compid": r["compid"], "rssi": r["rssi"], "remrssi": r["remrssi"],
            "rssi_dbm": r["rssi_dbm"], "remrssi_dbm": r["remrssi_dbm"], "noise": r["noise"],
            "remnoise": r["remnoise"], "rxerrors": r["rxerrors"], "fixed": r["fixed"],
            "txbuf": r["txbuf"],
        }),
        json!({
            "sysid": 51, "compid": 68, "rssi": rssi, "remrssi": remrssi,
            "rssi_dbm": sik_dbm(rssi), "remrssi_dbm": sik_dbm(remrssi), "noise": 40,
            "remnoise": 35, "rxerrors": last["rxerrors"], "fixed": 0, "txbuf": 90,
        }),
        "{r:#}"
    );
    assert_eq!(
        vehicle(&s, 51),
        Value::Null,
        "a radio is not a vehicle: {s:#}"
    );
    assert!(events_of(&d, "telemetry_gap", 51).is_empty());
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn a_position_stream_stopping_while_heartbeats_go_on_is_a_stream_event() {
    let (mut d, ports) = start("redundancy-stream-stop", &["radio1"]);
    let http = d.http_addr();
    let peer = spawn_peer("stream-stop", &ports);

    let open = wait_event(&d, "stream", 9, "open");
    assert_eq!(
        (&open["msg"], &open["msgid"], &open["reason"]),
        (&json!("GLOBAL_POSITION_INT"), &json!(33), &json!("stopped")),
        "{open:#}"
    );
    // It was steady (at least 2/s) and fell below half of it.
    let expected = open["expected_hz"].as_f64().unwrap();
    assert!(expected >= 2.0, "{open:#}");
    assert!(
        open["observed_hz"].as_f64().unwrap() < expected / 2.0,
        "{open:#}"
    );
    let (s, held) = status_until(&http, WAIT, |s| {
        vehicle(s, 9)["streams"].as_array().is_some_and(|streams| {
            streams
                .iter()
                .any(|st| st["msg"] == "GLOBAL_POSITION_INT" && st["event"]["state"] == "open")
        })
    });
    assert!(held, "{:#}", vehicle(&s, 9)["streams"]);

    let sent = finish(peer);
    assert!(
        open["utc"].as_str().unwrap() > sent["stopped_utc"].as_str().unwrap(),
        "{open:#} {sent}"
    );
    // Only that stream, once, while the vehicle was heard (what its end does comes later);
    // the heartbeats went on, so no telemetry gap.
    let last_heartbeat = sent["last_heartbeat_utc"].as_str().unwrap();
    let streams: Vec<Value> = events_of(&d, "stream", 9)
        .into_iter()
        .filter(|e| e["utc"].as_str().is_some_and(|t| t <= last_heartbeat))
        .collect();
    assert_eq!(streams, std::slice::from_ref(&open), "{streams:#?}");
    assert_eq!(gaps_before(&d, 9, last_heartbeat), Vec::<Value>::new());
}
