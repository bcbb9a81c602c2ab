//! The range board (`GET /`) in a real browser: headless Chromium driven over WebDriver by
//! `tests/board/board_browser.py` (selenium with Debian's chromedriver). Six vehicles beat; the
//! board shows them with their configured names (and a seventh, configured and never heard, as
//! `never`); one goes quiet and its element turns `gap`
//! within a second of the SSE event (and at most 4 s after its last heartbeat, threshold 3 s),
//! then `ok` when it beats again; a second radio, a second sender and a SiK radio's numbers (issue
//! 28): the board shows each link's delivery and the two together, a SiK radio on its link, a
//! second sender on one vehicle's id as a conflict with its evidence, and, together with a
//! vehicle in gap again, a vehicle's link gap when one link stops carrying it and another's
//! position stream stopped while it beats; then all of them closing, live (the events list
//! words each close); the daemon stops and `data-connection` turns `lost`; the daemon
//! starts again on the same port and the page recovers by itself. axe-core (npm, `tests/board`)
//! finds no serious or critical violation, and the browser's network log holds no request to
//! any host but the daemon's. The screenshot it takes, with all of that open, is `docs/board.png`
//! (`FOXBORNE_BOARD_SCREENSHOT=docs/board.png` writes it there).
//!
//! Needs /usr/bin/chromium, /usr/bin/chromedriver, a Python with selenium (`$FOXBORNE_PYTHON`
//! or `.venv/bin/python`) and `npm ci` in `tests/board`. Without them the test is ignored (the
//! build script looks), unless `FOXBORNE_REQUIRE_BROWSER=1`, when it fails.

use crate::common;

use common::Daemon;
use foxborne_receiver::wire::build::{self, Header};
use std::io::Write;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

const QUIET_SYSID: u8 = 4;
/// Heard on both radios (issue 28), until radio2 stops carrying it.
const REDUNDANT_SYSID: u8 = 5;
/// A second sender takes this vehicle's id (issue 28).
const CONFLICT_SYSID: u8 = 6;
/// Sends GLOBAL_POSITION_INT every round (4/s), until its stream is stopped (issue 28).
const POSITION_SYSID: u8 = 3;
/// GLOBAL_POSITION_INT frames sent before the stream may stop: the daemon judges a stream that
/// stopped against the 10 s before, so it must have been steady that long (12 s at 4/s).
const POSITION_HISTORY: u32 = 48;
/// Configured in `[gap] vehicles`; 1 to 6 beat, 7 is never heard.
const NAMES: [&str; 7] = [
    "Kestrel 1",
    "Kestrel 2",
    "Osprey",
    "Heron",
    "Swift A",
    "Swift B",
    "Spare",
];
const NEVER_SYSID: u64 = 7;
/// Each phase of the browser script has its own deadlines; this only catches a hung script.
const PHASE: Duration = Duration::from_secs(90);

/// What the browser test needs, or why it cannot run.
fn browser_kit() -> Result<(PathBuf, PathBuf), String> {
    for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
        if !std::path::Path::new(tool).exists() {
            return Err(format!(
                "no {tool} (apt-get install chromium chromium-driver)"
            ));
        }
    }
    let python = std::env::var_os("FOXBORNE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    let has_selenium = Command::new(&python)
        .args(["-c", "import selenium"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_selenium {
        return Err(format!(
            "no Python with selenium at {} (set FOXBORNE_PYTHON or pip install selenium into .venv)",
            python.display()
        ));
    }
    let axe = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/board/node_modules/axe-core/axe.min.js");
    if !axe.exists() {
        return Err(format!("no {} (npm ci in tests/board)", axe.display()));
    }
    Ok((python, axe))
}

/// What the fleet sends besides its heartbeats (issue 28's phase): `REDUNDANT_SYSID`'s frames
/// also to `radio2`, a SiK radio's RADIO_STATUS on radio1, and a second sender on
/// `CONFLICT_SYSID`'s id.
#[derive(Default)]
struct Extra {
    radio2: Mutex<Option<SocketAddr>>,
    radio: AtomicBool,
    second_sender: AtomicBool,
    /// `POSITION_SYSID`'s GLOBAL_POSITION_INT stream stopped (its heartbeats go on).
    position_stopped: AtomicBool,
    /// GLOBAL_POSITION_INT frames sent so far.
    position_sent: AtomicU32,
    /// Issue 42: a ground ADS-B receiver (sysid 200) reports two aircraft near
    /// `POSITION_SYSID`: one 600 m east and 30 m above it, one 3 km north.
    traffic: AtomicBool,
}

/// Heartbeats (and SYSTEM_TIME, for latency) from sysids 1..=6 every 250 ms to whatever address
/// `to` holds, until `stop`; `QUIET_SYSID` skips while `quiet` is set; and what `extra` asks.
fn vehicles(
    to: Arc<Mutex<SocketAddr>>,
    quiet: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    extra: Arc<Extra>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        // The second sender on CONFLICT_SYSID's id: its own socket, its own sequence far from
        // the first's, a fixed-wing where the first is a quad.
        let impostor = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (mut impostor_seq, mut radio_seq) = (128u8, 0u8);
        // Each vehicle's own sequence, one step per frame sent: no loss to report.
        let mut seqs = [0u8; 7];
        let mut round = 0u32;
        while !stop.load(Ordering::SeqCst) {
            let addr = *to.lock().unwrap();
            for sysid in 1..=6u8 {
                if sysid == QUIET_SYSID && quiet.load(Ordering::SeqCst) {
                    continue;
                }
                let seq = &mut seqs[sysid as usize];
                let header = Header {
                    sysid,
                    compid: 1,
                    seq: *seq,
                };
                *seq = seq.wrapping_add(1);
                let mut heartbeat = build::heartbeat_payload(2, 3);
                // ArduCopter custom modes (LOITER, AUTO, RTL, ...) and some armed, so the
                // board has something to say; sysid 6 is still on the ground.
                heartbeat[0] = [5, 3, 6, 3, 16, 0][sysid as usize - 1];
                if sysid != 6 {
                    heartbeat[6] |= 0x80;
                }
                // A closed port between runs is expected (the daemon is restarting).
                let frame = build::v2(header, 0, &heartbeat);
                let _ = tx.send_to(&frame, addr);
                let radio2 = *extra.radio2.lock().unwrap();
                if let Some(radio2) = radio2.filter(|_| sysid == REDUNDANT_SYSID) {
                    let _ = tx.send_to(&frame, radio2);
                }
                if sysid == CONFLICT_SYSID && extra.second_sender.load(Ordering::SeqCst) {
                    let header = Header {
                        seq: impostor_seq,
                        ..header
                    };
                    impostor_seq = impostor_seq.wrapping_add(1);
                    let _ = impostor
                        .send_to(&build::v2(header, 0, &build::heartbeat_payload(1, 3)), addr);
                }
                if sysid == POSITION_SYSID && !extra.position_stopped.load(Ordering::SeqCst) {
                    let header = Header {
                        seq: *seq,
                        ..header
                    };
                    *seq = seq.wrapping_add(1);
                    let _ = tx.send_to(
                        &build::v2(header, 33, &global_position_payload(round * 250)),
                        addr,
                    );
                    extra.position_sent.fetch_add(1, Ordering::SeqCst);
                }
                if round.is_multiple_of(4) {
                    let now_us = (std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_micros()) as u64;
                    let header = Header {
                        seq: *seq,
                        ..header
                    };
                    *seq = seq.wrapping_add(1);
                    let _ = tx.send_to(
                        &build::v2(header, 2, &build::system_time_payload(now_us, round * 250)),
                        addr,
                    );
                }
            }
            if extra.traffic.load(Ordering::SeqCst) {
                // POSITION_SYSID is at 51.5 N, 0.125 W, 120 m above mean sea level.
                let aircraft = [
                    (
                        0xA1B2C3,
                        515_000_000,
                        -1_250_000 + 86_405,
                        150_000,
                        "N123AB",
                    ),
                    (
                        0x4CA2D6,
                        515_000_000 + 269_643,
                        -1_250_000,
                        900_000,
                        "RYR12AB",
                    ),
                ];
                for (icao, lat, lon, alt, callsign) in aircraft {
                    let header = Header {
                        sysid: 200,
                        compid: 1,
                        seq: radio_seq,
                    };
                    radio_seq = radio_seq.wrapping_add(1);
                    let payload = build::adsb_vehicle_payload(icao, lat, lon, alt, callsign);
                    let _ = tx.send_to(&build::v2(header, 246, &payload), addr);
                }
            }
            if extra.radio.load(Ordering::SeqCst) && round.is_multiple_of(4) {
                // rxerrors 3, fixed 1, rssi 190 (-27.0 dBm), remrssi 100 (-74.4 dBm), txbuf 97,
                // noise 40, remnoise 45.
                let payload = [3, 0, 1, 0, 190, 100, 97, 40, 45];
                let header = Header {
                    sysid: 51,
                    compid: 68,
                    seq: radio_seq,
                };
                radio_seq = radio_seq.wrapping_add(1);
                let _ = tx.send_to(&build::v2(header, 109, &payload), addr);
            }
            round += 1;
            std::thread::sleep(Duration::from_millis(250));
        }
    })
}

/// GLOBAL_POSITION_INT (msgid 33) payload, 28 bytes: time_boot_ms, lat, lon, alt,
/// relative_alt, vx, vy, vz, hdg.
fn global_position_payload(time_boot_ms: u32) -> [u8; 28] {
    let mut p = [0u8; 28];
    p[..4].copy_from_slice(&time_boot_ms.to_le_bytes());
    p[4..8].copy_from_slice(&515_000_000i32.to_le_bytes());
    p[8..12].copy_from_slice(&(-1_250_000i32).to_le_bytes());
    p[12..16].copy_from_slice(&120_000i32.to_le_bytes());
    p[16..20].copy_from_slice(&30_000i32.to_le_bytes());
    p[26..28].copy_from_slice(&9000u16.to_le_bytes());
    p
}

fn config(http: &str) -> String {
    let names: Vec<String> = NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{} = \"{n}\"", i + 1))
        .collect();
    format!(
        "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[[link]]\nname = \"radio2\"\nudp = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 3.0\nvehicles = {{ {} }}\n[http]\nlisten = \"{http}\"\n",
        names.join(", ")
    )
}

/// The browser script's JSON lines, as they come.
struct Script {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
}

impl Script {
    /// The next line, which must be `phase`.
    fn expect(&mut self, phase: &str) -> serde_json::Value {
        let line = self.lines.recv_timeout(PHASE).unwrap_or_else(|_| {
            let _ = self.child.kill();
            panic!("the browser script said nothing for {PHASE:?} while awaiting {phase}")
        });
        let value: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: not a phase line: {line}"));
        assert_eq!(value["phase"], phase, "{value:#}");
        value
    }

    /// Tells the script the world has changed: it may await its next condition.
    fn next(&mut self) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"next\n").unwrap();
        stdin.flush().unwrap();
    }
}

fn states(vehicles: &serde_json::Value) -> Vec<(u64, String, String)> {
    vehicles
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["sysid"].as_u64().unwrap(),
                v["state"].as_str().unwrap().to_string(),
                v["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// No serious or critical axe-core violation.
fn assert_accessible(axe: &serde_json::Value, when: &str) {
    let violations = axe
        .as_array()
        .unwrap_or_else(|| panic!("axe-core did not run {when}: {axe}"));
    let bad: Vec<_> = violations
        .iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .collect();
    assert!(
        bad.is_empty(),
        "axe-core {when}: {}",
        serde_json::to_string_pretty(&bad).unwrap()
    );
    let lesser: Vec<String> = violations
        .iter()
        .map(|v| format!("{} ({})", v["id"], v["impact"]))
        .collect();
    eprintln!("axe-core {when}: no serious or critical violation; lesser: {lesser:?}");
}

fn utc_ms(text: &serde_json::Value) -> i64 {
    let text = text.as_str().unwrap();
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{e}: {text}"))
        .timestamp_millis()
}

#[test]
#[cfg_attr(foxborne_no_browser, ignore = "needs the browser kit (README)")]
fn the_board_shows_a_gap_recovers_and_survives_a_daemon_restart_in_chromium() {
    let (python, axe) = browser_kit().unwrap_or_else(|why| panic!("{why}"));
    let mut d = Daemon::start("board1", &config("127.0.0.1:0"));
    let http = d.http_addr();
    let to = Arc::new(Mutex::new(d.udp_addr("radio1")));
    d.wait_for("receiver started", Duration::from_secs(15));
    let (quiet, stop) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let extra = Arc::new(Extra::default());
    let sender = vehicles(to.clone(), quiet.clone(), stop.clone(), extra.clone());

    let shots = common::scratch("board-shot");
    let screenshot = std::env::var_os("FOXBORNE_BOARD_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| shots.join("board.png"));
    let mut child = common::spawn_talking(
        common::python_script(&python, "board/board_browser.py")
            .arg("check")
            .arg(format!("http://{http}/"))
            .arg(&axe)
            .arg(&screenshot),
    );
    let lines = common::line_channel(child.stdout.take().unwrap());
    let mut script = Script { child, lines };

    // Six beating vehicles, each with its configured name, and the seventh never heard.
    let six = script.expect("six_ok");
    let shown = states(&six["vehicles"]);
    assert_eq!(shown.len(), 7, "{six:#}");
    for (sysid, state, name) in &shown {
        let want = if *sysid == NEVER_SYSID { "never" } else { "ok" };
        assert_eq!(state, want, "{six:#}");
        assert_eq!(name, NAMES[*sysid as usize - 1], "{six:#}");
    }
    assert_eq!(six["connection"], "live");

    // One goes quiet: its element turns gap within a second of the SSE event, and at most 4 s
    // after its last heartbeat (both on this host's clock: the event's last_recv_utc is the
    // daemon's stamp of that heartbeat, `wall` the page's Date.now() at the change).
    quiet.store(true, Ordering::SeqCst);
    script.next();
    let gap = script.expect("gap");
    let timing = &gap["timing"];
    let event_to_element_ms = timing["ms"].as_f64().unwrap();
    assert!(event_to_element_ms < 1000.0, "{timing:#}");
    let after_heartbeat_ms = timing["change"]["wall"].as_f64().unwrap() as i64
        - utc_ms(&timing["event"]["last_recv_utc"]);
    assert!(
        (3000..=4000).contains(&after_heartbeat_ms),
        "gap shown {after_heartbeat_ms} ms after the last heartbeat: {timing:#}"
    );
    // Gaps sort to the top, then the never heard, then the rest by sysid; each says its state
    // in words, not only colour.
    let order: Vec<(u64, String)> = states(&gap["vehicles"])
        .into_iter()
        .map(|(sysid, state, _)| (sysid, state))
        .collect();
    let want: Vec<(u64, String)> = [(4, "gap"), (7, "never"), (1, "ok"), (2, "ok")]
        .into_iter()
        .chain([(3, "ok"), (5, "ok"), (6, "ok")])
        .map(|(sysid, state)| (sysid, state.to_string()))
        .collect();
    assert_eq!(order, want, "{gap:#}");
    let never = gap["vehicles"][1]["text"].as_str().unwrap();
    assert!(never.contains("NEVER HEARD"), "{never}");
    assert_eq!(gap["first"]["sysid"], QUIET_SYSID as u64, "{gap:#}");
    let text = gap["first"]["text"].as_str().unwrap();
    assert!(
        text.contains("GAP") && text.contains("Heartbeat due and not received"),
        "{text}"
    );
    // The gap ticks on the receiver's clock: just after it opened it reads the threshold, not
    // less (a page that took a stale snapshot's time for "now" would show it younger).
    let silent: f64 = text
        .split("Nothing for ")
        .nth(1)
        .and_then(|rest| rest.split(" s").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no gap duration in {text}"));
    assert!((2.99..6.0).contains(&silent), "{text}");
    assert_accessible(&gap["axe"], "with a vehicle in gap");
    // Keyboard: G goes to the first vehicle in gap, E to the events list.
    assert_eq!(gap["keys"]["g"], QUIET_SYSID.to_string(), "{gap:#}");
    assert_eq!(gap["keys"]["e"], "events", "{gap:#}");
    eprintln!(
        "gap: event to element {event_to_element_ms:.0} ms, {after_heartbeat_ms} ms after the last heartbeat"
    );

    // It beats again: ok.
    quiet.store(false, Ordering::SeqCst);
    script.next();
    let back = script.expect("ok_again");
    assert!(back["timing"]["ms"].as_f64().unwrap() < 1000.0, "{back:#}");
    assert!(states(&back["vehicles"])
        .iter()
        .all(|(sysid, s, _)| s == if *sysid == NEVER_SYSID { "never" } else { "ok" }));

    // Issue 28: sysid 5 on both radios, a SiK radio on radio1, a second sender on sysid 6.
    // (The daemon says its address once, in its log.)
    let radio2_addr = d.udp_addr("radio2");
    *extra.radio2.lock().unwrap() = Some(radio2_addr);
    extra.radio.store(true, Ordering::SeqCst);
    extra.second_sender.store(true, Ordering::SeqCst);
    extra.traffic.store(true, Ordering::SeqCst);
    script.next();
    let both = script.expect("redundancy");
    // Issue 42: sysid 3's nearby traffic, in words (PROXIMITY, distance, above, bearing) and
    // shape, and its plan view's text alternative.
    assert_eq!(both["traffic_state"], "proximity", "{both:#}");
    let traffic = both["traffic"].as_str().unwrap();
    assert!(
        traffic.contains("PROXIMITY N123AB: 600 m, 30 m above, bearing 90")
            && traffic.contains("RYR12AB: 3000 m, 780 m above, bearing 0"),
        "{traffic}"
    );
    assert_eq!(both["near"], "A1B2C3:open", "{both:#}");
    let plan = both["plan"].as_str().unwrap();
    assert!(
        plan.contains("2 tracks, nearest N123AB 600 m at bearing 90 degrees, 1 within 1000 m"),
        "{plan}"
    );
    let delivery = both["delivery"].as_str().unwrap();
    assert!(
        delivery.contains("radio1") && delivery.contains("radio2") && delivery.contains("together"),
        "{both:#}"
    );
    // radio1 brings every frame of sysid 5; radio2 only its heartbeats, and only since this
    // phase began: less, and the two together all of them.
    assert!(
        delivery.contains("radio1 100.0 %") && delivery.contains("together 100.0 %"),
        "{delivery}"
    );
    let radio2_percent: f64 = delivery
        .split("radio2 ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no radio2 figure in {delivery}"));
    assert!(radio2_percent < 100.0, "{delivery}");
    let radio = both["radio"].as_str().unwrap();
    assert!(
        radio.contains("51/68") && radio.contains("-74.4 dBm") && radio.contains("-27.0 dBm"),
        "{radio}"
    );
    for number in [
        "noise 40 here, 45 remote",
        "rx errors 3 (fixed 1)",
        "tx buffer 97 %",
    ] {
        assert!(radio.contains(number), "{number}: {radio}");
    }
    let conflict = both["conflict"].as_str().unwrap();
    assert!(conflict.contains("TWO SENDERS"), "{conflict}");
    // Its evidence: heartbeats of a quadrotor and a fixed wing alternating on one id, from two
    // peer addresses (the vehicle's and the second sender's sockets).
    let reasons = both["reasons"].as_str().unwrap();
    assert!(
        reasons.split(' ').any(|r| r == "heartbeat_identity"),
        "{both:#}"
    );
    assert!(
        conflict.contains("quadrotor") && conflict.contains("fixed wing"),
        "{conflict}"
    );
    assert!(conflict.matches("127.0.0.1:").count() >= 2, "{conflict}");
    assert_eq!(both["delivery_unreliable"], "true", "{both:#}");
    assert!(
        both["loss"].as_str().unwrap().contains("UNRELIABLE"),
        "{both:#}"
    );
    // radio2 stops carrying sysid 5: a link gap on its card, naming the link still hearing it;
    // the vehicle itself stays ok. At once sysid 3's position stream stops while it beats, and
    // sysid 4 goes quiet again (the screenshot shows every finding at once). The stream must
    // have been steady for the daemon's baseline first: awaited on what the sender has sent.
    assert!(
        common::eventually(Duration::from_secs(30), || {
            extra.position_sent.load(Ordering::SeqCst) >= POSITION_HISTORY
        }),
        "the position stream never had its history"
    );
    *extra.radio2.lock().unwrap() = None;
    extra.position_stopped.store(true, Ordering::SeqCst);
    quiet.store(true, Ordering::SeqCst);
    script.next();
    let cut = script.expect("link_gap");
    let gap_text = cut["text"].as_str().unwrap();
    assert!(
        gap_text.contains("Not heard on radio2") && gap_text.contains("heard on radio1"),
        "{cut:#}"
    );
    assert_eq!(cut["state"], "ok", "{cut:#}");
    assert_eq!(cut["stream_state"], "stopped", "{cut:#}");
    let stream = cut["stream"].as_str().unwrap();
    assert!(
        stream.contains("GLOBAL_POSITION_INT stopped") && stream.contains("heartbeats go on"),
        "{stream}"
    );
    assert_eq!(cut["stream_vehicle_state"], "ok", "{cut:#}");
    assert_eq!(cut["quiet_state"], "gap", "{cut:#}");
    // Still open, still said.
    assert!(cut["conflict"].as_str().is_some(), "{cut:#}");
    let summary = cut["summary"].as_str().unwrap();
    assert!(
        summary.contains("1 in gap")
            && summary.contains("1 with two senders")
            && summary.contains("1 silent on a link")
            && summary.contains("1 with a stream stopped"),
        "{summary}"
    );
    assert_accessible(
        &cut["axe"],
        "with a gap, a link gap, a conflict and a stream stopped",
    );

    // All of it ends: each closes on the board as its event arrives (the conflict once no
    // second sender has been heard for 10 s), and the events list words every close.
    *extra.radio2.lock().unwrap() = Some(radio2_addr);
    extra.position_stopped.store(false, Ordering::SeqCst);
    quiet.store(false, Ordering::SeqCst);
    extra.second_sender.store(false, Ordering::SeqCst);
    script.next();
    let clear = script.expect("all_clear");
    assert!(states(&clear["vehicles"])
        .iter()
        .all(|(sysid, s, _)| s == if *sysid == NEVER_SYSID { "never" } else { "ok" }));
    assert_eq!(clear["alerts"], 0, "{clear:#}");
    assert_eq!(clear["delivery_unreliable"], "false", "{clear:#}");
    let events: Vec<&str> = clear["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    for closed in [
        "Heard again on radio2. Nothing there for",
        "One sender again on system id 6, component 1",
        "GLOBAL_POSITION_INT from system 3 back to",
    ] {
        assert!(
            events.iter().any(|e| e.contains(closed)),
            "{closed}: {events:#?}"
        );
    }
    extra.radio.store(false, Ordering::SeqCst);
    *extra.radio2.lock().unwrap() = None;

    // The daemon stops: the page says the connection is lost, in the banner.
    assert!(d.stop().success());
    script.next();
    let lost = script.expect("lost");
    let banner = lost["banner"]
        .as_str()
        .unwrap_or_else(|| panic!("{lost:#}"));
    assert!(
        banner.to_lowercase().contains("connection lost"),
        "{banner}"
    );
    assert!(banner.contains("stale"), "{banner}");
    assert_accessible(&lost["axe"], "with the connection lost");
    eprintln!(
        "lost: {:.0} ms after the daemon exited",
        lost["after_ms"].as_f64().unwrap()
    );

    // The daemon starts again on the same port: the page recovers by itself.
    let mut d2 = Daemon::start("board2", &config(&http));
    assert_eq!(d2.http_addr(), http);
    *to.lock().unwrap() = d2.udp_addr("radio1");
    script.next();
    let live = script.expect("live_again");
    assert_eq!(live["banner_hidden"], true, "{live:#}");
    assert_eq!(states(&live["vehicles"]).len(), 7);
    eprintln!(
        "recovered: {:.0} ms after the restart",
        live["after_ms"].as_f64().unwrap()
    );

    // Nothing but the daemon was asked for anything.
    let network = script.expect("network");
    let urls = network["urls"].as_array().unwrap();
    assert!(urls.len() >= 4, "{network:#}");
    let own = format!("http://{http}/");
    for url in urls {
        let url = url.as_str().unwrap();
        assert!(url.starts_with(&own) || url.starts_with("data:"), "{url}");
    }
    assert!(script.child.wait().unwrap().success());
    assert!(std::fs::metadata(&screenshot).unwrap().len() > 10_000);

    stop.store(true, Ordering::SeqCst);
    sender.join().unwrap();
    assert!(d2.stop().success());
}
