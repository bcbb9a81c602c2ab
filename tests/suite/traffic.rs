//! Issue 42 against the built daemon: the airspace around each vehicle. pymavlink peers
//! (`tests/traffic_peer.py`) send our vehicle's GLOBAL_POSITION_INT and other traffic
//! (ADSB_VEHICLE of a crossing aircraft, Remote ID's BASIC_ID and LOCATION, a vehicle relaying
//! its own ADS-B out); an SBS-1 feed is served by the test itself over TCP, killed and
//! restarted. Every distance is held against geographiclib's geodesic on the WGS-84 ellipsoid
//! (computed by the peer from the positions exactly as sent) to within 1 m.
//!
//! Needs a Python with pymavlink and geographiclib (`$FOXBORNE_PYTHON`, else `.venv/bin/python`).

use crate::common;

use common::{eventually, status_until, Daemon};
use foxborne_receiver::wire::build::{self, Header};
use serde_json::Value;
use std::io::Write;
use std::net::{TcpListener, UdpSocket};
use std::process::Stdio;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
/// What the receiver's distance may differ from geographiclib's by.
const METRE: f64 = 1.0;

fn config(extra_links: &str, extra: &str) -> String {
    format!(
        "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[gap]\nvehicles = {{ 4 = \"UAS-04\" }}\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n{extra_links}{extra}"
    )
}

/// The peer's `scenario` against `port`; what it says it sent.
fn peer(scenario: &str, port: Option<u16>) -> Value {
    let python = common::python_with(&["pymavlink", "geographiclib"]);
    let mut command = common::python_script(&python, "traffic_peer.py");
    command.arg(scenario);
    if let Some(port) = port {
        command.args(["--port", &port.to_string()]);
    }
    let out = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    common::assert_success(&out, scenario);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn proximities(d: &Daemon, track: &str) -> Vec<Value> {
    d.events()
        .into_iter()
        .filter(|e| e["kind"] == "traffic_proximity")
        .filter(|e| e["icao"] == track || e["uas_id"] == track)
        .collect()
}

/// Waits until `track` has an open and a closed proximity event; both.
fn wait_open_and_closed(d: &Daemon, track: &str) -> (Value, Value) {
    let both = || {
        let p = proximities(d, track);
        let open = p.iter().find(|e| e["state"] == "open").cloned()?;
        let closed = p.iter().find(|e| e["state"] == "closed").cloned()?;
        Some((open, closed))
    };
    assert!(
        eventually(WAIT, || both().is_some()),
        "no open and closed traffic_proximity for {track}: {:#?}",
        d.events()
    );
    both().unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The receiver's crossing against the reference: one open at the first report within 1 km,
/// one close at the first past 1.1 km (the hysteresis) after it, the closest point abeam, all
/// to within a metre of geographiclib, and the vertical separation as sent.
fn check_crossing(events: &[Value], reference: &Value, vertical_m: f64) {
    let distances: Vec<f64> = reference["distances"]
        .as_array()
        .unwrap()
        .iter()
        .map(f)
        .collect();
    assert_eq!(events.len(), 2, "{events:#?}");
    let (open, closed) = (&events[0], &events[1]);
    assert_eq!(
        (&open["state"], &closed["state"]),
        (&"open".into(), &"closed".into())
    );
    let entered = distances.iter().position(|&d| d <= 1_000.0).unwrap();
    let left = entered
        + distances[entered..]
            .iter()
            .position(|&d| d > 1_100.0)
            .unwrap();
    let nearest = distances.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        (f(&open["horizontal_m"]) - distances[entered]).abs() < METRE,
        "open at {} m, geographiclib {} m",
        open["horizontal_m"],
        distances[entered]
    );
    assert!(
        (f(&closed["horizontal_m"]) - distances[left]).abs() < METRE,
        "closed at {} m, geographiclib {} m",
        closed["horizontal_m"],
        distances[left]
    );
    assert!(
        (f(&closed["closest"]["horizontal_m"]) - nearest).abs() < METRE,
        "closest {} m, geographiclib {nearest} m",
        closed["closest"]
    );
    assert!((f(&open["vertical_m"]) - vertical_m).abs() < 0.01, "{open}");
    assert_eq!(closed["reason"], "left");
    assert_eq!(open["sysid"], 4);
    assert_eq!(open["name"], "UAS-04");
    let title = open["title"].as_str().unwrap();
    assert!(
        title.starts_with("Traffic ") && title.ends_with(" m above UAS-04"),
        "{title}"
    );
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn an_aircraft_crossing_by_adsb_opens_and_closes_one_proximity_measured_on_the_ellipsoid() {
    let mut d = Daemon::start("traffic-adsb", &config("", ""));
    let port = d.udp_addr("radio1").port();
    d.wait_for("receiver started", WAIT);
    let sent = peer("crossing", Some(port));
    let icao = sent["icao"].as_str().unwrap();
    wait_open_and_closed(&d, icao);
    let events = proximities(&d, icao);
    check_crossing(&events, &sent, f(&sent["vertical_m"]));
    let open = &events[0];
    assert_eq!(open["callsign"], "N123AB");
    assert_eq!(open["altitude_ref"], "pressure_qnh");
    assert_eq!(open["vertical_basis"], "pressure_qnh vs msl");
    assert_eq!(open["source"]["kind"], "adsb");
    assert_eq!(open["source"]["link"], "radio1");
    assert_eq!(open["source"]["relayed_by"], 200);
    assert_eq!(
        open["title"],
        format!(
            "Traffic N123AB {:.0} m and 45 m above UAS-04",
            f(&open["horizontal_m"])
        )
    );
    // /status: the track, and the vehicle's own position and nearby list.
    let http = d.http_addr();
    let (s, held) = status_until(&http, WAIT, |s| track(s, icao).is_some());
    assert!(held, "no track {icao} in {s}");
    let t = track(&s, icao).unwrap();
    assert_eq!(
        (&t["callsign"], &t["source"]["kind"]),
        (&"N123AB".into(), &"adsb".into())
    );
    assert_eq!(t["own_sysid"], Value::Null);
    let metrics = common::http_get(&http, "/metrics");
    assert!(
        metrics.contains("foxborne_traffic_proximities_total 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("foxborne_traffic_reports_total{link=\"radio1\"} 61\n"),
        "{metrics}"
    );
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn remote_id_location_and_basic_id_make_a_track_with_its_uas_id() {
    let mut d = Daemon::start("traffic-rid", &config("", ""));
    let port = d.udp_addr("radio1").port();
    d.wait_for("receiver started", WAIT);
    let sent = peer("remote-id", Some(port));
    let uas_id = sent["uas_id"].as_str().unwrap();
    assert!(
        eventually(WAIT, || !proximities(&d, uas_id).is_empty()),
        "{:#?}",
        d.events()
    );
    let open = &proximities(&d, uas_id)[0];
    assert_eq!(
        (&open["state"], &open["icao"]),
        (&"open".into(), &Value::Null)
    );
    assert!(
        (f(&open["horizontal_m"]) - f(&sent["distance"])).abs() < METRE,
        "{open}"
    );
    // Geodetic (ellipsoid) altitude against our mean-sea-level one, and said so.
    assert_eq!(open["vertical_basis"], "ellipsoid vs msl");
    assert!((f(&open["vertical_m"]) - 30.0).abs() < 0.01);
    assert_eq!(open["source"]["kind"], "remote_id");
    assert_eq!(
        open["title"],
        format!(
            "Traffic {uas_id} {:.0} m and 30 m above UAS-04",
            f(&open["horizontal_m"])
        )
    );
    let http = d.http_addr();
    let (s, held) = status_until(&http, WAIT, |s| track(s, uas_id).is_some());
    assert!(held, "{s}");
    assert_eq!(track(&s, uas_id).unwrap()["uas_id"], uas_id);
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn our_own_vehicle_relaying_its_own_adsb_out_is_not_traffic() {
    let mut d = Daemon::start("traffic-own", &config("", ""));
    let port = d.udp_addr("radio1").port();
    d.wait_for("receiver started", WAIT);
    let sent = peer("own-relay", Some(port));
    let icao = sent["icao"].as_str().unwrap();
    let http = d.http_addr();
    let (s, held) = status_until(&http, WAIT, |s| {
        track(s, icao).is_some_and(|t| t["reports"] == 20)
    });
    assert!(held, "{s}");
    let t = track(&s, icao).unwrap();
    assert_eq!(t["own_sysid"], 5, "{t}");
    assert!(t["proximity"].as_array().unwrap().is_empty());
    assert_eq!(s["traffic_totals"]["own_reports"], 20);
    assert!(
        d.events().iter().all(|e| e["kind"] != "traffic_proximity"),
        "{:#?}",
        d.events()
    );
    // Vehicle 5's own card lists no traffic either.
    let v5 = s["vehicles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["sysid"] == 5)
        .unwrap();
    assert!(v5["traffic"].as_array().unwrap().is_empty(), "{v5}");
    assert!(v5["position"]["lat"].is_number());
}

/// The crossing as an SBS-1 feed that the test serves (dump1090's layout), with the vehicle's
/// position over MAVLink: the same track; a line that does not parse and an impossible
/// latitude counted by reason and skipped; the server killed and restarted mid-crossing is a
/// link down and up, and nothing else (no track lost, no proximity closed or opened twice).
#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn an_sbs_feed_gives_the_same_track_and_a_server_restart_is_only_a_link_down_and_up() {
    let reference = peer("sbs-lines", None);
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    // A long gap threshold: the vehicle's heartbeats pause while the feed restarts.
    let mut d = Daemon::start(
        "traffic-sbs",
        &config(
            &format!("[[link]]\nname = \"adsb\"\nsbs = \"{addr}\"\n"),
            "",
        )
        .replace("[gap]\n", "[gap]\nthreshold_s = 60.0\n"),
    );
    let radio1 = d.udp_addr("radio1");
    d.wait_for("receiver started", WAIT);
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let v = &reference["vehicle"];
    let mut seq = 0u8;
    // Our vehicle, sysid 4, at the reference's position (a heartbeat now and then).
    let mut vehicle = |with_heartbeat: bool| {
        let header = Header {
            sysid: 4,
            compid: 1,
            seq,
        };
        seq = seq.wrapping_add(1);
        if with_heartbeat {
            udp.send_to(
                &build::v2(header, 0, &build::heartbeat_payload(2, 3)),
                radio1,
            )
            .unwrap();
        }
        let position = build::global_position_int_payload(
            v["lat_e7"].as_i64().unwrap() as i32,
            v["lon_e7"].as_i64().unwrap() as i32,
            v["msl_mm"].as_i64().unwrap() as i32,
        );
        let header = Header {
            sysid: 4,
            compid: 1,
            seq,
        };
        seq = seq.wrapping_add(1);
        udp.send_to(&build::v2(header, 33, &position), radio1)
            .unwrap();
    };
    let (mut feed, _) = server.accept().unwrap();
    d.wait_for("link up", WAIT);
    vehicle(true);
    let http = d.http_addr();
    let (s, held) = status_until(&http, WAIT, |s| {
        s["vehicles"]
            .as_array()
            .is_some_and(|v| v.iter().any(|v| v["position"].is_object()))
    });
    assert!(held, "no position of the vehicle: {s}");
    feed.write_all(
        b"HELLO this is not SBS\r\nMSG,3,1,1,4CA2D6,1,,,,,,1000,,,95.00000,8.5,,,0,,0,0\r\n",
    )
    .unwrap();
    let steps = reference["steps"].as_array().unwrap();
    let mut server = Some(server);
    for (i, step) in steps.iter().enumerate() {
        if i == 15 {
            // Kill the server (before the crossing comes near), then serve again on its port.
            drop(feed);
            drop(server.take());
            d.wait_for("tcp link down", WAIT);
            let again = TcpListener::bind(addr).unwrap();
            feed = again.accept().unwrap().0;
            server = Some(again);
            assert!(eventually(WAIT, || d.link_states("adsb") == ["up", "down", "up"]));
        }
        vehicle(i % 10 == 0);
        let mut text = String::new();
        for line in step.as_array().unwrap() {
            text.push_str(line.as_str().unwrap());
            text.push_str("\r\n");
        }
        feed.write_all(text.as_bytes()).unwrap();
    }
    let icao = reference["icao"].as_str().unwrap();
    wait_open_and_closed(&d, icao);
    let events = proximities(&d, icao);
    check_crossing(&events, &reference, f(&reference["vertical_m"]));
    assert_eq!(events[0]["altitude_ref"], "pressure_standard");
    assert_eq!(events[0]["vertical_basis"], "pressure_standard vs msl");
    assert_eq!(events[0]["source"]["kind"], "sbs");
    assert_eq!(events[0]["source"]["relayed_by"], Value::Null);
    assert_eq!(events[0]["callsign"], "RYR12AB");
    // The restart was a link down and up, nothing else: no other state of the link, no
    // track lost, no proximity but the crossing's one.
    assert_eq!(d.link_states("adsb"), ["up", "down", "up"]);
    let others: Vec<Value> = d
        .events()
        .into_iter()
        .filter(|e| {
            (e["kind"] == "link"
                && e["link"] == "adsb"
                && e["state"] != "up"
                && e["state"] != "down")
                || e["kind"] == "traffic"
                || e["kind"] == "telemetry_gap"
                || (e["kind"] == "traffic_proximity" && e["icao"] != icao)
        })
        .collect();
    assert!(others.is_empty(), "{others:#?}");
    // Refused lines, by reason; the accepted ones kept in traffic/.
    let (s, held) = status_until(&http, WAIT, |s| {
        link(s, "adsb")["traffic"]["rejects"]["latitude"] == 1
    });
    assert!(held, "{s}");
    let counts = &link(&s, "adsb")["traffic"];
    assert_eq!(counts["rejects"]["sbs_record_type"], 1, "{counts}");
    let accepted: usize = steps.iter().map(|s| s.as_array().unwrap().len()).sum();
    assert_eq!(counts["reports"], accepted, "{counts}");
    let t = track(&s, icao).unwrap();
    assert_eq!(
        (&t["callsign"], &t["source"]["kind"]),
        (&"RYR12AB".into(), &"sbs".into())
    );
    assert!(
        (f(&t["ground_speed_mps"]) - 485.0 * 1852.0 / 3600.0).abs() < 1e-6,
        "{t}"
    );
    d.stop();
    let kept = std::fs::read_to_string(d.dir.join("data/traffic/current.jsonl")).unwrap();
    let lines: Vec<Value> = kept
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), accepted);
    assert!(
        lines[0]["sbs"]
            .as_str()
            .unwrap()
            .starts_with("MSG,1,1,1,4CA2D6,"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[0]["link"], "adsb");
}

fn track(s: &Value, key: &str) -> Option<Value> {
    s["traffic"]
        .as_array()?
        .iter()
        .find(|t| t["key"] == key)
        .cloned()
}

fn link(s: &Value, name: &str) -> Value {
    s["links"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["name"] == name))
        .cloned()
        .unwrap_or(Value::Null)
}
