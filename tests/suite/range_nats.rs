//! Several sites, one range (issue 13), against a real `nats-server -js` started by the test:
//! two site receivers publish to JetStream, `range` judges gaps across sites (a vehicle heard by
//! any site is not in a gap); and NATS stopped for 5 s under load loses and duplicates nothing,
//! while receiving and alerting go on.

use crate::common;

use common::nats::Nats;
use common::notify::NotifySocket;
use common::Daemon;
use foxborne_receiver::wire::build::heartbeat_v2 as hb;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(20);

/// The test's own additions to the shared server: a start that checks for it, and what a
/// site or the range would see through a client.
impl Nats {
    /// A test that calls this is `#[cfg_attr(foxborne_no_nats, ignore = ...)]`, so here a
    /// missing nats-server is a failure.
    fn start(store: &Path) -> Nats {
        assert!(
            Command::new("nats-server")
                .arg("--version")
                .output()
                .is_ok(),
            "nats-server is not installed (apt install nats-server)"
        );
        Self::start_on(store, common::nats::free_port())
    }

    /// `work` with a client connected to this server, on a runtime of its own.
    fn with_client<T, F: std::future::Future<Output = T>>(
        &self,
        work: impl FnOnce(async_nats::Client) -> F,
    ) -> T {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async { work(async_nats::connect(self.url()).await.unwrap()).await })
    }

    /// One message, published as a site would (core NATS; the stream stores it).
    fn publish(&self, subject: &str, payload: &str) {
        let (subject, payload) = (subject.to_string(), payload.to_string());
        self.with_client(|client| async move {
            client.publish(subject, payload.into()).await.unwrap();
            client.flush().await.unwrap();
        })
    }

    /// Messages in the receipts stream that are receipts (subjects ending in a sysid, not the
    /// sites' progress marks), as JetStream counts them by subject.
    fn receipt_messages(&self) -> u64 {
        use futures_util::StreamExt;
        self.with_client(|client| async move {
            let js = async_nats::jetstream::new(client);
            let stream = js.get_stream("FOXBORNE_RECEIPTS").await.unwrap();
            let mut subjects = stream
                .info_with_subjects("foxborne.receipts.>")
                .await
                .unwrap();
            let mut total = 0u64;
            while let Some(entry) = subjects.next().await {
                let (subject, count) = entry.unwrap();
                if subject
                    .rsplit('.')
                    .next()
                    .is_some_and(|t| t.parse::<u8>().is_ok())
                {
                    total += count as u64;
                }
            }
            total
        })
    }

    /// Messages in a stream, as JetStream reports them.
    #[allow(dead_code)]
    fn stream_messages(&self, stream: &str) -> u64 {
        let stream = stream.to_string();
        self.with_client(|client| async move {
            let js = async_nats::jetstream::new(client);
            let mut stream = js.get_stream(stream).await.unwrap();
            stream.info().await.unwrap().state.messages
        })
    }
}

fn site_config(nats: &str, site: &str) -> String {
    format!(
        "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 3.0\n[http]\nlisten = \"127.0.0.1:0\"\n[publish]\nnats_url = \"{nats}\"\nsite = \"{site}\"\n"
    )
}

/// A site receiver publishing to `nats` as `site`, started and publishing; its link's address.
fn start_site(name: &str, nats: &Nats, site: &str) -> (Daemon, SocketAddr) {
    let mut d = Daemon::start(name, &site_config(&nats.url(), site));
    let udp = d.udp_addr("radio1");
    d.wait_for("publishing the receive log", WAIT);
    (d, udp)
}

/// A range named `name` consuming `nats`, with `more` (tables) after its own.
fn range_config(nats: &Nats, name: &str, more: &str) -> String {
    format!(
        "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[range]\nnats_url = \"{}\"\nname = \"{name}\"\n[http]\nlisten = \"127.0.0.1:0\"\n{more}",
        nats.url()
    )
}

/// The binary's `range` with `config`, started.
fn start_range(name: &str, config: &str) -> Daemon {
    let mut range = Daemon::start_verb(name, "range", config, &[], |_| {});
    range.wait_for("range started", WAIT);
    range
}

fn events_of(daemon: &Daemon, kind: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(daemon.dir.join("data/events/current.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["kind"] == kind)
        .collect()
}

fn range_gaps(range: &Daemon) -> Vec<serde_json::Value> {
    events_of(range, "telemetry_gap")
}

fn utc_now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// A site's `clock` event as its receiver publishes it, stamped `utc_ns` on the site's clock.
fn clock_report(utc_ns: i64, state: &str, synchronised: bool) -> String {
    format!(
        r#"{{"utc":"{}","kind":"clock","state":"{state}","synchronised":{synchronised},"max_error_us":16000000}}"#,
        foxborne_receiver::monitor::format_utc_ms(utc_ns)
    )
}

/// The range's events files (day folder and name), `current.jsonl` aside.
fn events_files(range: &Daemon) -> Vec<String> {
    let root = range.dir.join("data/events");
    let mut files = Vec::new();
    for day in std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()) {
        if day.is_dir() {
            for file in std::fs::read_dir(&day).unwrap() {
                let file = file.unwrap().path();
                files.push(file.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    files
}

#[test]
#[cfg_attr(foxborne_no_nats, ignore = "needs nats-server (README)")]
fn events_on_another_clock_a_day_or_a_year_off_stay_in_the_open_events_file() {
    const DAY_NS: i64 = 86_400 * 1_000_000_000;
    let store = tempfile::tempdir().unwrap();
    let nats = Nats::start(store.path());
    let first_day = utc_now_ns().div_euclid(DAY_NS);
    let mut range = start_range("range-skew", &range_config(&nats, "skew", ""));
    let current = range.dir.join("data/events/current.jsonl");
    let opened = std::fs::read_link(&current).expect("current.jsonl after the start event");
    // A site whose clock is a day behind, then a year ahead, a day ahead, a year behind: each
    // report flips its NTP state, so each becomes a coverage event the range writes.
    let now = utc_now_ns();
    let skewed = [
        (now - DAY_NS, "lost", false),
        (now + 365 * DAY_NS, "regained", true),
        (now + DAY_NS, "lost", false),
        (now - 365 * DAY_NS, "regained", true),
    ];
    for (utc_ns, state, synchronised) in skewed {
        nats.publish(
            "foxborne.events.skewed.clock",
            &clock_report(utc_ns, state, synchronised),
        );
    }
    let relayed = || -> Vec<serde_json::Value> {
        events_of(&range, "coverage")
            .into_iter()
            .filter(|e| {
                e["site"] == "skewed" && e["state"].as_str().unwrap().ends_with("synchronised")
            })
            .collect()
    };
    assert!(
        common::eventually(WAIT, || relayed().len() == skewed.len()),
        "{:#?}",
        relayed()
    );
    let last_day = utc_now_ns().div_euclid(DAY_NS);
    // The events keep the site's times inside them...
    let times: Vec<String> = relayed()
        .iter()
        .map(|e| e["utc"].as_str().unwrap().to_string())
        .collect();
    let sent: Vec<String> = skewed
        .iter()
        .map(|(utc, _, _)| foxborne_receiver::monitor::format_utc_ms(*utc))
        .collect();
    assert_eq!(times, sent);
    // ...and are filed by the range's own clock: one file (two only if this test ran across
    // UTC midnight), the one `current.jsonl` pointed at from the start.
    let files = events_files(&range);
    assert_eq!(files.len() as i64, 1 + (last_day - first_day), "{files:#?}");
    assert_eq!(std::fs::read_link(&current).unwrap(), opened);
    assert!(range.stop().success());
}

/// A site's `traffic_proximity` event (issue 42) as its receiver publishes it.
fn proximity(utc_ns: i64, state: &str, horizontal_m: f64) -> String {
    let utc = foxborne_receiver::monitor::format_utc_ms(utc_ns);
    let closed = state == "closed";
    format!(
        r#"{{"utc":"{utc}","kind":"traffic_proximity","sysid":4,"name":"UAS-04","state":"{state}","icao":"A1B2C3","uas_id":null,"callsign":"N123AB","horizontal_m":{horizontal_m},"vertical_m":45.0,"bearing_deg":270.0,"altitude_m":533.0,"altitude_ref":"pressure_qnh","own_altitude_m":488.0,"own_altitude_ref":"msl","vertical_basis":"pressure_qnh vs msl","closest":{{"utc":"{utc}","horizontal_m":{horizontal_m},"vertical_m":45.0}},"threshold_horizontal_m":1000.0,"threshold_vertical_m":150.0,"source":{{"kind":"adsb","link":"radio1","relayed_by":200}},"opened_utc":null,"lasted_s":null,"reason":{},"title":"Traffic N123AB"}}"#,
        if closed { "\"left\"" } else { "null" }
    )
}

/// Two sites see one encounter (issue 42): the range opens it once, at the first site's open,
/// and closes it once, when the last site that had it open closes it, with both sites and the
/// nearest point either measured; a site's message that is not an event is refused.
#[test]
#[cfg_attr(foxborne_no_nats, ignore = "needs nats-server (README)")]
fn traffic_seen_by_two_sites_is_one_range_encounter() {
    let store = tempfile::tempdir().unwrap();
    let nats = Nats::start(store.path());
    let mut range = start_range("range-traffic", &range_config(&nats, "traffic", ""));
    let t = utc_now_ns();
    let s = 1_000_000_000;
    for (site, utc, state, m) in [
        ("north", t, "open", 990.0),
        ("south", t + s, "open", 950.0),
        ("north", t + 20 * s, "closed", 1_150.0),
    ] {
        nats.publish(
            &format!("foxborne.events.{site}.traffic_proximity"),
            &proximity(utc, state, m),
        );
    }
    nats.publish("foxborne.events.south.traffic_proximity", "not an event");
    // The south site's closest point was nearer than any the others sent.
    let mut closing = proximity(t + 25 * s, "closed", 1_120.0);
    closing = closing.replacen(
        r#""horizontal_m":1120,"vertical_m":45.0}"#,
        r#""horizontal_m":412.5,"vertical_m":45.0}"#,
        1,
    );
    assert!(closing.contains("412.5"), "{closing}");
    nats.publish("foxborne.events.south.traffic_proximity", &closing);
    let range_events = || events_of(&range, "traffic_proximity");
    assert!(
        common::eventually(WAIT, || range_events().len() == 2),
        "{:#?}",
        range_events()
    );
    let events = range_events();
    let (open, closed) = (&events[0], &events[1]);
    assert_eq!(
        (&open["state"], &open["scope"]),
        (&"open".into(), &"range".into())
    );
    assert_eq!(open["sites"], serde_json::json!(["north"]));
    assert_eq!(open["horizontal_m"], 990.0);
    assert_eq!(closed["state"], "closed");
    assert_eq!(closed["sites"], serde_json::json!(["north", "south"]));
    assert_eq!(closed["closest"]["horizontal_m"], 412.5);
    assert_eq!(closed["lasted_s"], 25.0);
    let http = range.http_addr();
    let refused = || {
        common::status(&http)["sites"]
            .as_array()
            .and_then(|sites| sites.iter().find(|x| x["name"] == "south").cloned())
            .map(|south| south["refused_messages"].clone())
    };
    assert!(
        common::eventually(WAIT, || refused() == Some(1.into())),
        "{:?}",
        refused()
    );
}

#[test]
#[cfg_attr(foxborne_no_nats, ignore = "needs nats-server (README)")]
fn range_is_a_service_ready_status_watchdog_from_its_loop_and_a_clean_stop() {
    let store = tempfile::tempdir().unwrap();
    let nats = Nats::start(store.path());
    let (mut north, north_udp) = start_site("range-service-north", &nats, "north");
    let scratch = common::scratch("range-service");
    let notify = NotifySocket::bind(&scratch);
    let stall = scratch.join("stall");
    // WATCHDOG_USEC as systemd sets it for WatchdogSec=2s: a ping at least every 0.5 s.
    let mut env = notify.env("2000000");
    env.push(("FOXBORNE_TEST_STALL_FILE", stall.to_str().unwrap()));
    let config = range_config(
        &nats,
        "service",
        "[gap]\nthreshold_s = 1.0\nvehicles = { 7 = \"UAS-07\" }\n",
    );
    let mut range = Daemon::start_verb("range-service", "range", &config, &env, |_| {});

    // READY once its consumers are made, then the judging loop's STATUS= and pings.
    assert_eq!(notify.wait("READY=1", WAIT).trim_end(), "READY=1");
    range.wait_for("range started", WAIT);
    // (North's progress marks may or may not have been judged by the first tick.)
    let status = notify.wait("STATUS=sites heard ", WAIT);
    assert!(
        status
            .trim_end()
            .ends_with(", vehicles heard 0/1, open gaps 0"),
        "{status}"
    );
    notify.wait("WATCHDOG=1", WAIT);
    notify.wait("WATCHDOG=1", WAIT);

    // The pings come from the judging loop: wedged, it says nothing (systemd would restart it
    // after 2 s); released, it pings again.
    std::fs::write(&stall, b"").unwrap();
    notify.assert_silent_for(Duration::from_millis(1500));
    std::fs::remove_file(&stall).unwrap();
    notify.wait("WATCHDOG=1", WAIT);

    // A vehicle heard through the site for 3 s, then silent for longer than the range's
    // threshold: its gap opens (and its site, with nothing more to send, may fall silent).
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    for seq in 0..15 {
        sock.send_to(&hb(7, seq), north_udp).unwrap();
        std::thread::sleep(Duration::from_millis(200)); // the vehicle's beat
    }
    notify.wait(
        "STATUS=sites heard 1/1, vehicles heard 1/1, open gaps 0",
        WAIT,
    );
    let status = notify.wait_matching("a gap's STATUS=", WAIT, |m| {
        m.starts_with("STATUS=") && m.contains("open gaps 1")
    });
    assert!(
        status.starts_with("STATUS=sites heard ")
            && status.contains("/1, vehicles heard 1/1, open gaps 1"),
        "{status}"
    );

    // SIGTERM: STOPPING=1, the two-phase stop, exit 0.
    range.signal(nix::sys::signal::Signal::SIGTERM);
    notify.wait("STOPPING=1", WAIT);
    let exit = range.child.wait().unwrap();
    assert!(exit.success(), "{exit}");
    range.wait_for("range stopping", WAIT);
    let stop = events_of(&range, "receiver")
        .into_iter()
        .find(|e| e["state"] == "stop");
    assert!(stop.is_some(), "no receiver stop event at the end");
    assert!(north.stop().success());
}

#[test]
#[cfg_attr(foxborne_no_nats, ignore = "needs nats-server (README)")]
fn a_vehicle_heard_by_any_site_is_not_in_a_range_gap() {
    let store = tempfile::tempdir().unwrap();
    let nats = Nats::start(store.path());
    let (mut north, north_udp) = start_site("range-north", &nats, "north");
    let (mut south, south_udp) = start_site("range-south", &nats, "south");
    let config = range_config(
        &nats,
        "test",
        "[gap]\nthreshold_s = 3.0\nvehicles = { 42 = \"UAS-42\" }\n",
    );
    let mut range = start_range("range-view", &config);

    // 41 heard by both sites, 42 by north only, every 200 ms. Phase 1 (bit 1): 41 quiet at north;
    // phase 2 (bit 2): 42 quiet.
    let (phase, stop) = (Arc::new(AtomicU8::new(0)), Arc::new(AtomicBool::new(false)));
    let sender = {
        let (phase, stop) = (phase.clone(), stop.clone());
        std::thread::spawn(move || {
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut seq = 0u8;
            while !stop.load(Ordering::SeqCst) {
                let p = phase.load(Ordering::SeqCst);
                if p & 1 == 0 {
                    sock.send_to(&hb(41, seq), north_udp).unwrap();
                }
                sock.send_to(&hb(41, seq), south_udp).unwrap();
                if p & 2 == 0 {
                    sock.send_to(&hb(42, seq), north_udp).unwrap();
                }
                seq = seq.wrapping_add(1);
                std::thread::sleep(Duration::from_millis(200)); // the vehicles' beat
            }
        })
    };
    // The range has heard both vehicles from both sites before anything goes quiet.
    assert!(common::eventually(WAIT, || {
        let status = common::status(&range.http_addr());
        status["vehicles"].as_array().is_some_and(|v| {
            v.iter()
                .any(|v| v["sysid"] == 41 && v["links"] == serde_json::json!(["north", "south"]))
                && v.iter()
                    .any(|v| v["sysid"] == 42 && v["last_heard_utc"].is_string())
        })
    }));
    phase.store(1 | 2, Ordering::SeqCst);
    let quiet_from = Instant::now();
    std::thread::sleep(Duration::from_secs(5)); // the 5 s silence itself
    phase.store(1, Ordering::SeqCst);
    let quiet_for = quiet_from.elapsed();
    assert!(common::eventually(WAIT, || range_gaps(&range).len() >= 2));
    let status = common::status(&range.http_addr());
    let sites: Vec<(&str, bool)> = status["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["clock_off"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(sites, [("north", false), ("south", false)]);
    // The sites that hear each vehicle now: 41 is south's alone since north lost it (the
    // snapshot is refreshed every 0.5 s, so it may not show 42's return yet).
    assert!(common::eventually(WAIT, || {
        let status = common::status(&range.http_addr());
        let links_of = |sysid: u64| {
            status["vehicles"]
                .as_array()
                .and_then(|v| v.iter().find(|v| v["sysid"] == sysid))
                .map(|v| v["links"].clone())
        };
        links_of(41) == Some(serde_json::json!(["south"]))
            && links_of(42) == Some(serde_json::json!(["north"]))
    }));
    // The range serves the board too (with its sites as columns).
    let page = common::http_get(&range.http_addr(), "/");
    assert!(page.contains("data-connection"), "{page}");
    // South's receiver reports that its clock regained, then lost NTP (its own `clock` events,
    // as it would publish them; the sites' real ones, whatever this machine's NTP state, come
    // before): the range flags the site.
    for (state, synchronised) in [("regained", true), ("lost", false)] {
        nats.publish(
            "foxborne.events.south.clock",
            &clock_report(utc_now_ns(), state, synchronised),
        );
    }
    assert!(common::eventually(WAIT, || {
        let status = common::status(&range.http_addr());
        status["sites"][1]["unsynchronised"] == true
            && events_of(&range, "coverage")
                .last()
                .is_some_and(|e| e["state"] == "site_unsynchronised" && e["site"] == "south")
    }));
    // A message on south's receipt subject that is not a receipt line is refused: counted for
    // south on /status and named in the log with its subject, and the range judges on.
    nats.publish(
        "foxborne.receipts.south.41",
        r#"{"recv_utc":"2026-12-01T00:00:00.000Z","sysid":41,"msg":"HEARTBEAT"}"#,
    );
    let said = range.wait_for("south.41", WAIT);
    assert!(
        said.contains("not what its subject carries") && said.contains("missing field"),
        "{said}"
    );
    // A site the range never heard, all of whose messages are refused, is listed too.
    nats.publish("foxborne.receipts.west.7", "not json");
    assert!(common::eventually(WAIT, || {
        let status = common::status(&range.http_addr());
        let refused = |i: usize| status["sites"][i]["refused_messages"].clone();
        status["sites"][2]["name"] == "west"
            && (refused(0), refused(1), refused(2)) == (0.into(), 1.into(), 1.into())
    }));
    // A restarted range (same name: same durable consumer, a fresh events file) resumes where
    // the last one stopped and alerts nothing old again, while the vehicles go on beating.
    assert!(range.stop().success());
    let mut resumed = start_range("range-view-resumed", &config);
    let heard_at = |daemon: &mut Daemon, sysid: u64| -> Option<String> {
        let status = common::status(&daemon.http_addr());
        status["vehicles"]
            .as_array()?
            .iter()
            .find(|v| v["sysid"] == sysid)
            .and_then(|v| v["last_heard_utc"].as_str().map(str::to_string))
    };
    // Caught up and live: both vehicles heard twice, a beat apart.
    let mut first = None;
    assert!(common::eventually(WAIT, || {
        first = heard_at(&mut resumed, 42);
        first.is_some()
    }));
    assert!(common::eventually(WAIT, || heard_at(&mut resumed, 42)
        > first
        && heard_at(&mut resumed, 41).is_some()));
    assert_eq!(range_gaps(&resumed), Vec::<serde_json::Value>::new());
    assert!(resumed.stop().success());
    stop.store(true, Ordering::SeqCst);
    sender.join().unwrap();
    let gaps = range_gaps(&range);
    assert!(
        gaps.iter().all(|g| g["sysid"] == 42),
        "41 was heard by south all along: {gaps:#?}"
    );
    assert_eq!(gaps.len(), 2, "{gaps:#?}");
    assert_eq!(
        (gaps[0]["state"].as_str(), gaps[1]["state"].as_str()),
        (Some("open"), Some("closed"))
    );
    for g in &gaps {
        assert_eq!(g["scope"], "range");
        assert_eq!(g["sites"], serde_json::json!(["north"]));
        assert_eq!(g["name"], "UAS-42");
    }
    let gap_s = gaps[1]["gap_s"].as_f64().unwrap();
    let quiet = quiet_for.as_secs_f64();
    assert!(
        gap_s > quiet - 0.3 && gap_s < quiet + 0.6,
        "gap_s {gap_s} for a silence of {quiet:.2} s"
    );
    // Coverage: north stopped hearing 41 (south still did), then north heard nothing at all,
    // then north was heard again (42 back). (The sites' clock reports are checked above; a
    // site's input said stalled and resumed, which a loaded machine can make of a late
    // progress mark, is the outage test's subject.)
    let coverage: Vec<(String, String, Option<u64>)> = events_of(&range, "coverage")
        .iter()
        .filter(|e| {
            let state = e["state"].as_str().unwrap();
            !state.ends_with("synchronised") && !state.starts_with("site_input")
        })
        .map(|e| {
            assert_eq!(e["scope"], "range");
            (
                e["state"].as_str().unwrap().to_string(),
                e["site"].as_str().unwrap().to_string(),
                e["sysid"].as_u64(),
            )
        })
        .collect();
    let expected = [
        ("site_left", "north", Some(41)),
        ("site_silent", "north", None),
        ("site_heard", "north", None),
    ]
    .map(|(state, site, sysid)| (state.to_string(), site.to_string(), sysid));
    assert_eq!(coverage, expected);
    assert!(north.stop().success() && south.stop().success());
}

#[test]
#[cfg_attr(foxborne_no_nats, ignore = "needs nats-server (README)")]
fn nats_down_for_5_s_loses_and_duplicates_nothing_and_never_pauses_receiving() {
    let store = tempfile::tempdir().unwrap();
    let mut nats = Nats::start(store.path());
    let (mut west, west_udp) = start_site("range-outage-west", &nats, "west");
    let (mut east, east_udp) = start_site("range-outage-east", &nats, "east");
    let udp = [west_udp, east_udp];
    let mut range = start_range(
        "range-outage",
        &range_config(&nats, "outage", "[gap]\nthreshold_s = 3.0\n"),
    );
    let (stop, quiet_6) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // Datagrams sent so far, for judging the receivers against what was really sent (a
    // starved sender sends less; that is not the receivers pausing).
    let sent_so_far = Arc::new(AtomicU64::new(0));
    let sender = {
        let (stop, quiet_6, sent_so_far) = (stop.clone(), quiet_6.clone(), sent_so_far.clone());
        std::thread::spawn(move || {
            // 200 msgs/s in all: sysids 1..=4 heard by both sites, each site every other
            // datagram; and at 10 Hz sysid 5 by east alone, sysid 6 by west alone until it
            // really goes quiet, when the outage starts.
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            let started = Instant::now();
            let (mut n, mut sent) = (0u64, 0u64);
            while !stop.load(Ordering::SeqCst) {
                sock.send_to(&hb(1 + (n % 4) as u8, n as u8), udp[(n / 4 % 2) as usize])
                    .unwrap();
                sent += 1;
                if n % 20 == 0 {
                    sock.send_to(&hb(5, (n / 20) as u8), udp[1]).unwrap();
                    sent += 1;
                    if !quiet_6.load(Ordering::SeqCst) {
                        sock.send_to(&hb(6, (n / 20) as u8), udp[0]).unwrap();
                        sent += 1;
                    }
                }
                n += 1;
                sent_so_far.store(sent, Ordering::SeqCst);
                let next = started + Duration::from_millis(n * 5);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            sent
        })
    };
    let receipts = |west: &Daemon, east: &Daemon| west.receipts().len() + east.receipts().len();
    assert!(common::eventually(WAIT, || receipts(&west, &east) > 200));
    // The range hears all six before the outage.
    assert!(common::eventually(WAIT, || {
        let status = common::status(&range.http_addr());
        status["vehicles"].as_array().is_some_and(|v| v.len() == 6)
    }));
    quiet_6.store(true, Ordering::SeqCst);
    let sent_before_outage = sent_so_far.load(Ordering::SeqCst);
    nats.stop();
    // While NATS is away: a vehicle heard once goes quiet, and its gap is still raised on time.
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .send_to(&hb(77, 0), udp[0])
        .unwrap();
    let outage = Instant::now();
    assert!(common::eventually(Duration::from_secs(5), || {
        events_of(&west, "telemetry_gap")
            .iter()
            .any(|e| e["sysid"] == 77 && e["state"] == "open")
    }));
    // The range says so on /status (the board's source): both sites' input stalled.
    let range_http = range.http_addr();
    let range_sites = || -> Vec<(String, bool)> {
        let status = common::status(&range_http);
        status["sites"]
            .as_array()
            .map(|sites| {
                sites
                    .iter()
                    .map(|s| {
                        (
                            s["name"].as_str().unwrap_or_default().to_string(),
                            s["input_stalled"] == true,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        common::eventually(Duration::from_secs(5), || {
            let sites = range_sites();
            sites.len() == 2 && sites.iter().all(|(_, stalled)| *stalled)
        }),
        "/status sites during the outage: {:?}",
        range_sites()
    );
    std::thread::sleep(Duration::from_secs(5).saturating_sub(outage.elapsed())); // the outage itself
                                                                                 // Still within the outage: the receive logs hold every datagram sent so far (and 77's).
    let sent_in_outage = sent_so_far.load(Ordering::SeqCst);
    assert!(
        sent_in_outage >= sent_before_outage + 100,
        "the sender sent {} datagrams in the outage: too few to judge",
        sent_in_outage - sent_before_outage
    );
    assert!(
        common::eventually(WAIT, || receipts(&west, &east) as u64 > sent_in_outage),
        "receiving paused: {} receipts of the {sent_in_outage} datagrams sent (and 77's)",
        receipts(&west, &east)
    );
    nats.restart();
    std::thread::sleep(Duration::from_secs(2)); // load continues after the outage
    stop.store(true, Ordering::SeqCst);
    // Caught up, the range's /status no longer says any input is stalled.
    assert!(
        common::eventually(WAIT, || {
            let sites = range_sites();
            sites.len() == 2 && sites.iter().all(|(_, stalled)| !*stalled)
        }),
        "/status sites after the outage: {:?}",
        range_sites()
    );
    let sent = sender.join().unwrap();
    // Caught up: the stream holds exactly the two receive logs' lines.
    let lines = receipts(&west, &east) as u64;
    assert_eq!(lines, sent + 1, "every datagram is a receipt");
    assert!(
        common::eventually(Duration::from_secs(30), || nats.receipt_messages() == lines),
        "stream {} vs {lines} lines",
        nats.receipt_messages()
    );
    // The range, its input stalled through the outage, judged the backlog by its own times:
    // one gap for 6 (really quiet from the outage's start), at its time, and 77's (heard once);
    // none for 1..=4 (both sites) or 5 (east alone, heard throughout).
    let range_gaps_of = |sysid: u64| -> Vec<serde_json::Value> {
        range_gaps(&range)
            .into_iter()
            .filter(|g| g["sysid"] == sysid)
            .collect()
    };
    assert!(common::eventually(WAIT, || !range_gaps_of(6).is_empty()
        && !range_gaps_of(77).is_empty()));
    let gaps = range_gaps(&range);
    assert!(
        gaps.iter()
            .all(|g| (g["sysid"] == 6 || g["sysid"] == 77) && g["state"] == "open"),
        "{gaps:#?}"
    );
    assert_eq!(gaps.len(), 2, "{gaps:#?}");
    let six = &range_gaps_of(6)[0];
    let at =
        |key: &str| foxborne_receiver::monitor::parse_utc_ns(six[key].as_str().unwrap()).unwrap();
    let late_ns = at("utc") - at("last_recv_utc");
    assert!(
        (3_000_000_000..3_100_000_000).contains(&late_ns),
        "sysid 6's gap opened {late_ns} ns after its last heartbeat: {six}"
    );
    // Both sites' input was said stalled, then resumed.
    let input: Vec<(String, String)> = events_of(&range, "coverage")
        .iter()
        .filter(|e| e["state"].as_str().unwrap().starts_with("site_input"))
        .map(|e| {
            (
                e["site"].as_str().unwrap().to_string(),
                e["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for site in ["west", "east"] {
        let states: Vec<&str> = input
            .iter()
            .filter(|(s, _)| s == site)
            .map(|(_, state)| state.as_str())
            .collect();
        assert_eq!(
            states,
            ["site_input_stalled", "site_input_resumed"],
            "{site}: {input:?}"
        );
    }
    assert!(range.stop().success());
    for site in [&mut west, &mut east] {
        let http = site.http_addr();
        let status = || common::status(&http);
        // The publisher's counters are sampled as it goes: wait for the sample after the last ack.
        assert!(
            common::eventually(WAIT, || status()["publish"]["streams"][0]["pending_bytes"]
                == 0),
            "{}",
            status()["publish"]
        );
        let status = status();
        let receipts = &status["publish"]["streams"][0];
        assert_eq!(receipts["name"], "receipts");
        assert!(receipts["acked"].as_u64().unwrap() >= site.receipts().len() as u64);
        assert_eq!(status["publish"]["connected"], true);
        // The NATS connection has link events like any link: up, down in the outage, up again.
        let nats_link: Vec<String> = events_of(site, "link")
            .iter()
            .filter(|e| e["link"] == "nats")
            .map(|e| e["state"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(nats_link, ["up", "down", "up"], "{:?}", site.dir);
    }
    assert!(west.stop().success() && east.stop().success());
}
