//! `sortie` on real data (issue 25). A corpus flight log (`flightreview_ekf_failure.ulg`), and a
//! receive log made by replaying that log's own telemetry through the live daemon: HEARTBEAT at
//! 1 Hz with the log's arming state and flight mode, SYSTEM_TIME whose `time_boot_ms` is the
//! log's boot clock and whose `time_unix_usec` is UTC, sent by pymavlink (`sortie_replay.py`) at
//! the flight's own pace from flight time 104 s, silent from 110 s to 116 s, on to 119 s.
//!
//! Why the flight's pace and not faster: the anchors rest on the boot clock and the ground's
//! clock running at one rate. Replayed k times faster, `time_boot_ms` would either follow the
//! log (and run k times faster than the receiver's clock, which the ground anchor rightly
//! refuses) or the sender's clock (and stop following the log). A 15 s window of the flight,
//! at its pace, keeps every assertion about real clocks.
//!
//! The receiver stamps with this machine's clock, not the 2025 day the flight flew, so the test
//! flies it today: a copy of the log whose GPS `time_utc_usec` values are all moved by one
//! constant, so that its GPS anchor puts boot where the sender's boot clock starts (every other
//! byte, message number and offset as in the corpus file). The sender's boot instant is thus
//! known exactly on the receiver's clock: the truth each bound is checked against.

use crate::common;

use common::Daemon;
use foxborne_receiver::ulog::format::BasicType;
use foxborne_receiver::ulog::gps::GPS_TOPICS;
use foxborne_receiver::ulog::ingest::{ingest_file, IngestOptions};
use foxborne_receiver::ulog::{Record, SliceReader};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

const FLIGHT: &str = "flightreview_ekf_failure.ulg";
const START_S: f64 = 104.0;
const CUT_S: f64 = 110.0;
const RESUME_S: f64 = 116.0;
const END_S: f64 = 119.0;

/// Runs a Python script of the tests and reads its JSON lines.
fn python_lines(python: &Path, script: &str, args: &[std::ffi::OsString]) -> Vec<Value> {
    common::json_lines(
        Command::new(python)
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests")
                    .join(script),
            )
            .args(args),
    )
}

/// What the sender sent.
#[derive(Debug, Clone)]
struct Sent {
    msg: String,
    flight_s: f64,
}

/// The replay, made once for every test here (and `mcap_export`'s).
pub(crate) struct Replay {
    pub(crate) dir: PathBuf,
    /// The corpus log with its GPS UTC moved to today.
    pub(crate) flight: PathBuf,
    pub(crate) receive: Vec<PathBuf>,
    pub(crate) events: Vec<PathBuf>,
    /// The sender's boot instant on the receiver's clock, µs.
    pub(crate) boot_us: i64,
    sent: Vec<Sent>,
}

/// Made once; a failure is kept, so the other tests fail at once instead of replaying again.
static REPLAY: OnceLock<Result<Replay, String>> = OnceLock::new();

pub(crate) fn replay() -> &'static Replay {
    let made = REPLAY.get_or_init(|| {
        std::panic::catch_unwind(make_replay)
            .map_err(|_| "making the replay failed: see the first test's output".to_string())
    });
    match made {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    }
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(days) = std::fs::read_dir(root) else {
        return out;
    };
    // Day folders; `current.jsonl` beside them is a link to the open file.
    for day in days.map(|d| d.unwrap().path()).filter(|p| p.is_dir()) {
        for f in std::fs::read_dir(&day).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    out.sort();
    out
}

fn make_replay() -> Replay {
    let python = common::python();
    let corpus = common::corpus_log(FLIGHT);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sortie-replay");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let (mut daemon, udp) = Daemon::start_radio1(
        "sortie",
        "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\nfields = [\"HEARTBEAT\", \"SYSTEM_TIME\"]\n[latency]\nreport_interval_s = 2.0\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n",
    );
    // The vehicle booted so that flight time 104 s comes 2.5 s from now (the sender's start-up).
    let boot_us = now_us() + 2_500_000 - (START_S * 1e6) as i64;
    let args: Vec<std::ffi::OsString> = [
        "--port".into(),
        udp.port().to_string().into(),
        "--sysid".into(),
        "1".into(),
        "--ulog".into(),
        corpus.clone().into_os_string(),
        "--boot-us".into(),
        boot_us.to_string().into(),
        "--start".into(),
        START_S.to_string().into(),
        "--cut".into(),
        CUT_S.to_string().into(),
        "--resume".into(),
        RESUME_S.to_string().into(),
        "--end".into(),
        END_S.to_string().into(),
    ]
    .into();
    let sent: Vec<Sent> = python_lines(&python, "sortie_replay.py", &args)
        .iter()
        .map(|v| Sent {
            msg: v["msg"].as_str().unwrap().to_string(),
            flight_s: v["flight_s"].as_f64().unwrap(),
        })
        .collect();
    assert_eq!(sent.len(), 7 + 6 + 4 + 4, "{sent:?}");
    assert!(common::eventually(Duration::from_secs(10), || daemon
        .receipts()
        .len()
        == sent.len()));
    assert!(daemon.stop().success());
    let copy = |sub: &str| -> Vec<PathBuf> {
        files_under(&daemon.dir.join("data").join(sub))
            .into_iter()
            .map(|f| {
                let to = dir.join(format!(
                    "{sub}-{}",
                    f.file_name().unwrap().to_string_lossy()
                ));
                std::fs::copy(&f, &to).unwrap();
                to
            })
            .collect()
    };
    let receive = copy("receive");
    let events = copy("events");
    assert!(!receive.is_empty() && !events.is_empty());
    // And the daemon's data dir as it left it (day folders and all), for `sortie` given the
    // folder.
    let data = daemon.dir.join("data");
    for sub in ["receive", "events"] {
        for f in files_under(&data.join(sub)) {
            let to = dir.join("data").join(f.strip_prefix(&data).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&f, &to).unwrap();
        }
    }

    let flight = dir.join("flown_today.ulg");
    std::fs::write(&flight, gps_moved(&corpus, boot_us)).unwrap();
    Replay {
        dir,
        flight,
        receive,
        events,
        boot_us,
        sent,
    }
}

/// The log's bytes with every non-zero GPS `time_utc_usec` moved by one constant, so that its
/// GPS anchor (the median offset) is `boot_us`.
fn gps_moved(log: &Path, boot_us: i64) -> Vec<u8> {
    let report = ingest_file(
        log,
        IngestOptions {
            profile: None,
            quarantine_dir: None,
            progress: None,
        },
    )
    .unwrap();
    let median = report.gps_anchor.unwrap().boot_offset_us.unwrap();
    let shift = boot_us - median;
    let original = std::fs::read(log).unwrap();
    let mut bytes = original.clone();
    let mut reader = SliceReader::new(&original);
    let mut moved = 0;
    while let Some(item) = reader.next_record() {
        let Ok(located) = item else { continue };
        let Record::Data(sample) = &located.record else {
            continue;
        };
        if !GPS_TOPICS.contains(&&*sample.subscription.topic) {
            continue;
        }
        let fields = sample
            .formats
            .flatten(&sample.subscription.layout.format_name)
            .unwrap();
        let Some(utc) = fields
            .iter()
            .find(|f| f.name == "time_utc_usec" && f.ty == BasicType::UInt64)
        else {
            continue;
        };
        let at = located.offset as usize + 3 + 2 + utc.offset;
        let value = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        if value != 0 {
            let new = (value as i64 + shift) as u64;
            bytes[at..at + 8].copy_from_slice(&new.to_le_bytes());
            moved += 1;
        }
    }
    assert!(moved > 100, "only {moved} GPS samples moved");
    bytes
}

/// Runs `sortie` and returns its exit code, JSON lines and stderr.
pub(crate) fn sortie(flight: &Path, ground: &[&Path], extra: &[&str]) -> (i32, Vec<Value>, String) {
    let out = Command::new(common::binary())
        .arg("sortie")
        .arg(flight)
        .args(ground)
        .args(extra)
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (
        out.status.code().unwrap_or(-1),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) fn grounds(r: &Replay) -> Vec<&Path> {
    r.receive
        .iter()
        .chain(&r.events)
        .map(PathBuf::as_path)
        .collect()
}

pub(crate) fn utc_us(v: &Value) -> i64 {
    let text = v.as_str().unwrap_or_else(|| panic!("not a time: {v}"));
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap()
        .timestamp_micros()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn anchor<'a>(lines: &'a [Value], source: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["kind"] == "anchor" && l["source"] == source)
        .unwrap_or_else(|| panic!("no {source} anchor in {lines:#?}"))
}

fn the_gap(lines: &[Value]) -> &Value {
    let gaps: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "telemetry_gap")
        .collect();
    assert_eq!(gaps.len(), 1, "{gaps:#?}");
    gaps[0]
}

/// The replay's gap title as `sortie`'s JSON lines state it (checked against the receipts in
/// `the_gap_is_placed_at_the_cut_within_its_bound`), for the other formats to show the same.
fn gap_title(r: &Replay) -> String {
    let (code, lines, stderr) = sortie(&r.flight, &grounds(r), &[]);
    assert_eq!(code, 0, "{stderr}");
    the_gap(&lines)["title"].as_str().unwrap().to_string()
}

/// The receive-log line a citation names.
fn cited_receipt(cite: &Value) -> Value {
    let text = std::fs::read_to_string(cite["file"].as_str().unwrap()).unwrap();
    let n = cite["line"].as_u64().unwrap() as usize;
    serde_json::from_str(text.lines().nth(n - 1).unwrap()).unwrap()
}

/// Checks that a receipt cited at `boot_s ± bound_ms` is placed where it truly happened: its
/// stamp says it came within `[recv_utc, recv_utc + 1 ms)` on the receiver's clock, that is,
/// `recv_utc - boot` on the boot clock, and that interval must lie inside the stated one.
fn assert_placed(receipt: &Value, boot_s: f64, bound_ms: f64, boot_us: i64) {
    let recv = utc_us(&receipt["recv_utc"]);
    let truth = (
        (recv - boot_us) as f64 / 1e6,
        (recv + 1000 - boot_us) as f64 / 1e6,
    );
    let stated = (boot_s - bound_ms / 1e3, boot_s + bound_ms / 1e3);
    assert!(
        stated.0 <= truth.0 + 1e-6 && truth.1 <= stated.1 + 1e-6,
        "truth {truth:?} not inside {stated:?}"
    );
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn the_gap_is_placed_at_the_cut_within_its_bound() {
    let r = replay();
    let (code, lines, stderr) = sortie(&r.flight, &grounds(r), &[]);
    assert_eq!(code, 0, "{stderr}");
    let gap = the_gap(&lines);
    assert_eq!(gap["side"], "ground");
    assert_eq!(gap["state"], "closed");
    // The title states the gap between the two heartbeats' arrivals, three significant figures
    // (the cut is 6.00 s on the sender's clock; its pace, checked below, is good to 50 ms).
    let title = gap["title"].as_str().unwrap();
    let stated: f64 = title
        .strip_prefix("Heartbeat due and not received. Nothing for ")
        .and_then(|t| t.strip_suffix(" s"))
        .unwrap_or_else(|| panic!("{title}"))
        .parse()
        .unwrap();
    let arrivals_s = (utc_us(&cited_receipt(&gap["cite_end"])["recv_utc"])
        - utc_us(&cited_receipt(&gap["cite"])["recv_utc"])) as f64
        / 1e6;
    // recv_utc is to the millisecond: 1 ms each side, and half the title's last digit.
    assert!(
        (stated - arrivals_s).abs() <= 0.0071 && (stated - (RESUME_S - CUT_S)).abs() < 0.06,
        "{title}: the receipts are {arrivals_s} s apart"
    );
    assert_eq!(
        gap["observed"],
        "Observed: telemetry receive gap, not necessarily radio failure"
    );
    let last_sent = r
        .sent
        .iter()
        .rev()
        .find(|s| s.msg == "HEARTBEAT" && s.flight_s < CUT_S + 0.5)
        .unwrap();
    let next_sent = r
        .sent
        .iter()
        .find(|s| s.msg == "HEARTBEAT" && s.flight_s > RESUME_S - 0.5)
        .unwrap();
    let bound = f(&gap["bound_ms"]);
    // The gap runs from the receipt of the last heartbeat sent before the cut to the receipt of
    // the first after it: each placed where it truly came.
    let last = cited_receipt(&gap["cite"]);
    let next = cited_receipt(&gap["cite_end"]);
    assert_placed(&last, f(&gap["boot_s"]), bound, r.boot_us);
    assert_placed(&next, f(&gap["boot_end_s"]), bound, r.boot_us);
    // Those are the heartbeats sent at the cut and at the resumption (a loopback delivery
    // takes well under 50 ms).
    for (receipt, sent) in [(&last, last_sent), (&next, next_sent)] {
        let delay = (utc_us(&receipt["recv_utc"]) - r.boot_us) as f64 / 1e6 - sent.flight_s;
        assert!(
            (-0.001..0.05).contains(&delay),
            "{receipt} for {sent:?}: {delay}"
        );
        assert_eq!(receipt["msg"], "HEARTBEAT");
    }
    assert!((f(&gap["boot_s"]) - CUT_S).abs() < 0.06);
    // Tighter than either stated error alone: the receiver's clock and the GPS anchor.
    let ground = anchor(&lines, "ground");
    let gps = anchor(&lines, "gps");
    assert!(
        bound < f(&gps["bound_ms"]) && bound < f(&ground["clock_error_ms"]),
        "gap ±{bound} ms; GPS ±{} ms; receiver clock ±{} ms",
        gps["bound_ms"],
        ground["clock_error_ms"]
    );
    // In the gap's window the flight log shows what it logged, cited.
    let facts = gap["in_window"].as_array().unwrap();
    assert!(facts[0]["title"]
        .as_str()
        .unwrap()
        .starts_with("The flight log kept running"));
    let landing = facts
        .iter()
        .find(|fact| {
            fact["title"]
                .as_str()
                .unwrap()
                .contains("[INFO] [commander] Landing detected")
        })
        .unwrap_or_else(|| panic!("{facts:#?}"));
    assert!((f(&landing["boot_s"]) - 114.089763).abs() < 1e-6);
    // PX4's own events and the rules' findings in the window, cited, as facts: the failsafe
    // warning at 114.99 s, 5 s into the gap, and the failsafe_entered finding it is the reason of.
    let warning = facts
        .iter()
        .find(|fact| {
            fact["kind"] == "px4_event"
                && fact["title"].as_str().unwrap().contains("Failsafe warning")
        })
        .unwrap_or_else(|| panic!("no failsafe warning event in the window: {facts:#?}"));
    assert!(
        warning["title"]
            .as_str()
            .unwrap()
            .starts_with("PX4 event [WARNING] Failsafe warning"),
        "{warning}"
    );
    assert!((f(&warning["boot_s"]) - 114.991098).abs() < 1e-6);
    assert_eq!(warning["cite"]["message"], 43285);
    let failsafe = facts
        .iter()
        .find(|fact| fact["kind"] == "failsafe_entered")
        .unwrap_or_else(|| panic!("no failsafe_entered finding in the window: {facts:#?}"));
    assert!(failsafe["title"]
        .as_str()
        .unwrap()
        .contains("Attitude failure detected"));
    // PX4's sporadic event topic is not a stalled topic.
    assert!(
        !facts.iter().any(|fact| fact["kind"] == "topic_stall"
            && fact["title"].as_str().unwrap().starts_with("event ")),
        "{facts:#?}"
    );
    let record = Command::new(common::binary())
        .args(["ulog", "record"])
        .arg(&r.flight)
        .args(["--message", &landing["cite"]["message"].to_string()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&record.stdout).contains("Landing detected"));
    // The timeline runs in UTC order, both sides together (a state change at the first sample
    // that shows it, its interval reaching back to the last that did not).
    let times: Vec<i64> = lines
        .iter()
        .filter(|l| l.get("side").is_some())
        .map(|l| utc_us(&l["utc"]))
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    assert!(lines
        .iter()
        .any(|l| l["side"] == "air" && l["kind"] == "landing"));
}

/// The air entry of `kind` whose title starts with `title`.
fn air_entry<'a>(lines: &'a [Value], kind: &str, title: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| {
            l["side"] == "air"
                && l["kind"] == kind
                && l["title"].as_str().is_some_and(|t| t.starts_with(title))
        })
        .unwrap_or_else(|| panic!("no {kind} entry '{title}…'"))
}

/// PX4's decoded events and the flight rules' findings are on the timeline with the other air
/// entries: on the boot clock, in UTC by the anchor, cited at their samples (the events as the
/// ingest report and pyulog decode them, the findings with the rule's evidence).
#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn px4_events_and_rule_findings_are_on_the_timeline() {
    let r = replay();
    let (code, lines, stderr) = sortie(&r.flight, &grounds(r), &[]);
    assert_eq!(code, 0, "{stderr}");
    let used = lines.iter().find(|l| l["used"] == true).unwrap();
    let boot_utc = utc_us(&used["boot_utc"]);
    for (title, level, boot_s, message, offset) in [
        (
            "PX4 event [WARNING] Failsafe warning",
            "WARNING",
            114.991098,
            43285,
            2496699,
        ),
        (
            "PX4 event [EMERGENCY] Accelerometer sensor #0 failure: Timeout",
            "EMERGENCY",
            125.836484,
            50139,
            2889245,
        ),
    ] {
        let e = air_entry(&lines, "px4_event", title);
        assert_eq!(e["level"], level);
        assert!((f(&e["boot_s"]) - boot_s).abs() < 1e-6, "{e}");
        assert_eq!(e["bound_ms"], 0.0, "{e}");
        assert_eq!(
            utc_us(&e["utc"]),
            boot_utc + (boot_s * 1e6).round() as i64,
            "{e}"
        );
        assert_eq!(
            (&e["cite"]["message"], &e["cite"]["offset"]),
            (&message.into(), &offset.into())
        );
    }
    // `ulog record` shows the cited sample: an `event` message.
    let record = Command::new(common::binary())
        .args(["ulog", "record"])
        .arg(&r.flight)
        .args(["--message", "50139"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&record.stdout).contains("event"));
    // The rules' findings, kind = the rule's name, at their evidence.
    let estimator = air_entry(
        &lines,
        "estimator_fault",
        "Estimator velocity innovation test ratio above 1",
    );
    assert!((f(&estimator["boot_s"]) - 117.349822).abs() < 1e-6);
    assert_eq!(estimator["cite"]["message"], 44786);
    assert_eq!(
        estimator["evidence"]["values"][0]["field"],
        "estimator_status.vel_test_ratio"
    );
    air_entry(
        &lines,
        "vibration_high",
        "Vibration severe on vehicle_imu_status[0]",
    );
    // PX4 warned of a failsafe and took no action: the finding stands as a warning, with the
    // announcement (completed with its health messages) as its reason and the flags true then.
    let failsafe = air_entry(&lines, "failsafe_entered", "Failsafe warning at 114.99 s");
    assert_eq!(failsafe["state"], "warning");
    assert!(failsafe["reason"]
        .as_str()
        .unwrap()
        .starts_with("Failsafe warning: Attitude failure detected"));
    assert!(failsafe["failsafe_flags"]
        .as_array()
        .unwrap()
        .contains(&"fd_critical_failure".into()));
    assert_eq!(failsafe["cite"]["message"], 43285);
    // One entry per failsafe: no second one from vehicle_status (its flag never rose here).
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["kind"] == "failsafe_entered")
            .count(),
        1
    );
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn the_ground_anchor_agrees_with_the_gps_anchor_and_holds_the_true_boot() {
    let r = replay();
    let (code, lines, stderr) = sortie(&r.flight, &grounds(r), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(lines[0]["source"], "gps");
    assert_eq!(lines[1]["source"], "boot_time_utc_us");
    assert_eq!(lines[1]["boot_utc"], Value::Null);
    assert!(lines.iter().all(|l| l["kind"] != "anchor_conflict"));
    let gps = anchor(&lines, "gps");
    let ground = anchor(&lines, "ground");
    assert_eq!(ground["record"], "receiver");
    assert_eq!(ground["receipts"], 10);
    // The moved log's GPS anchor is the sender's boot instant.
    assert!((utc_us(&gps["boot_utc"]) - r.boot_us).abs() <= 1);
    // The receipts bound the boot instant on the receiver's clock, and the truth is inside.
    let own = utc_us(&ground["record_boot_utc"]);
    let own_bound_us = f(&ground["record_bound_ms"]) * 1000.0;
    assert!(
        ((own - r.boot_us).abs() as f64) <= own_bound_us,
        "{ground}: off the truth by {} µs",
        own - r.boot_us
    );
    // Within both bounds of each other, in UTC and on the receiver's clock alike.
    let apart = (utc_us(&ground["boot_utc"]) - utc_us(&gps["boot_utc"])).abs() as f64 / 1000.0;
    assert!(apart <= f(&ground["bound_ms"]) + f(&gps["bound_ms"]));
    assert!(
        (own - utc_us(&gps["boot_utc"])).abs() as f64 / 1000.0
            <= own_bound_us / 1000.0 + f(&gps["bound_ms"])
    );
    // Tighter than either stated error alone.
    assert!(f(&ground["record_bound_ms"]) < f(&gps["bound_ms"]));
    assert!(f(&ground["record_bound_ms"]) < f(&ground["clock_error_ms"]));
    // The receiver's clock error is what its events say.
    let worst = r
        .events
        .iter()
        .flat_map(|e| {
            std::fs::read_to_string(e)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok()?["max_error_us"].as_i64())
        .max()
        .unwrap();
    assert_eq!(f(&ground["clock_error_ms"]), worst as f64 / 1000.0);
    // The tightest anchor that conflicts with none is used.
    let used: Vec<&Value> = lines.iter().filter(|l| l["used"] == true).collect();
    assert_eq!(used.len(), 1);
    let tightest = [gps, ground]
        .into_iter()
        .min_by(|a, b| f(&a["bound_ms"]).total_cmp(&f(&b["bound_ms"])))
        .unwrap();
    assert_eq!(used[0], tightest);
}

/// Every line's time moved by 30 s, as a receiver whose clock ran 30 s fast would have written
/// the files.
fn thirty_seconds_off(r: &Replay) -> Vec<PathBuf> {
    let shift = |text: &str, key: &str| -> String {
        text.lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                let t = utc_us(&v[key]) + 30_000_000;
                let moved = chrono::DateTime::from_timestamp_micros(t).unwrap();
                v[key] = moved
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                    .into();
                format!("{v}\n")
            })
            .collect()
    };
    let mut out = Vec::new();
    for (files, key) in [(&r.receive, "recv_utc"), (&r.events, "utc")] {
        for file in files {
            let to = r.dir.join(format!(
                "off30-{}",
                file.file_name().unwrap().to_string_lossy()
            ));
            std::fs::write(&to, shift(&std::fs::read_to_string(file).unwrap(), key)).unwrap();
            out.push(to);
        }
    }
    out
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn a_receiver_clock_30_s_off_is_caught_by_the_cross_check() {
    let r = replay();
    let off = thirty_seconds_off(r);
    let ground: Vec<&Path> = off.iter().map(PathBuf::as_path).collect();
    let (code, lines, stderr) = sortie(&r.flight, &ground, &[]);
    assert_eq!(code, 0, "{stderr}");
    let conflicts: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "anchor_conflict")
        .collect();
    assert_eq!(conflicts.len(), 1, "{lines:#?}");
    let c = conflicts[0];
    assert_eq!(
        (&c["first"], &c["second"]),
        (&"gps".into(), &"ground".into())
    );
    // The receipts' time_unix_usec is now 30 s off the stamps, so no latency can be measured
    // and each delivery is taken to be under 2 s: the ground anchor is that much wider.
    let ground = anchor(&lines, "ground");
    assert_eq!(ground["latency_assumed_ms"], 2000.0);
    let slack = f(&ground["record_bound_ms"]) + f(&anchor(&lines, "gps")["bound_ms"]);
    assert!((f(&c["difference_ms"]) + 30_000.0).abs() <= slack, "{c}");
    assert!(f(&c["allowed_ms"]) < 30_000.0);
    assert!(c["title"]
        .as_str()
        .unwrap()
        .contains("the GPS anchor is used"));
    assert_eq!(anchor(&lines, "gps")["used"], true);
    // Not averaged: the gap is still placed by the receipts themselves, where it truly was.
    let gap = the_gap(&lines);
    let mut last = cited_receipt(&gap["cite"]);
    last["recv_utc"] =
        chrono::DateTime::from_timestamp_micros(utc_us(&last["recv_utc"]) - 30_000_000)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            .into();
    assert_placed(&last, f(&gap["boot_s"]), f(&gap["bound_ms"]), r.boot_us);
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn no_gps_and_no_system_time_receipts_say_elapsed_time_only() {
    let r = replay();
    // Heartbeats only (no SYSTEM_TIME lines), against a log whose GPS never had UTC.
    let heartbeats = r.dir.join("heartbeats-only.jsonl");
    let text: String = r
        .receive
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|l| l.contains("\"msg\":\"HEARTBEAT\""))
        .map(|l| l + "\n")
        .collect();
    std::fs::write(&heartbeats, text).unwrap();
    let no_gps = common::corpus_log("flightreview_gps_interference.ulg");
    let (code, lines, stderr) = sortie(&no_gps, &[&heartbeats], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(lines
        .iter()
        .filter(|l| l["kind"] == "anchor")
        .all(|l| l["used"] == false));
    let note = lines
        .iter()
        .find(|l| l["kind"] == "elapsed_time_only")
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let title = note["title"].as_str().unwrap();
    assert!(title.starts_with("Elapsed time only"), "{title}");
    assert!(title.contains("No GPS time"), "{title}");
    assert!(
        title.contains("No SYSTEM_TIME receipts of system 1"),
        "{title}"
    );
    // Air entries are on the boot clock only; the gap is on the receiver's clock only.
    let gap = the_gap(&lines);
    assert_eq!(gap["boot_s"], Value::Null);
    assert!(gap["utc_start"].is_string());
    let air: Vec<&Value> = lines.iter().filter(|l| l["side"] == "air").collect();
    assert!(!air.is_empty());
    assert!(air
        .iter()
        .all(|l| l["utc_start"].is_null() && l["boot_s"].is_number()));
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_ground_record_of_another_vehicle_is_refused_naming_both_ids() {
    let flight = common::corpus_log(FLIGHT);
    // A real ground station's record of system 20.
    let other = common::corpus_file("tlog", "olivieri_20211125-124019.tlog");
    let (code, lines, stderr) = sortie(&flight, &[&other], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(lines.is_empty());
    assert!(
        stderr.contains("no receipts of system 1 (the flight log's system id)")
            && stderr.contains("it holds system 20 (3590 receipts)"),
        "{stderr}"
    );
    // Asked for the system it does hold (--sysid 20), the record is read: its SYSTEM_TIME
    // boot clock falls inside the flight's, but the cross-check says its clock is years away.
    let (code, lines, stderr) = sortie(&flight, &[&other], &["--sysid", "20"]);
    assert_eq!(code, 0, "{stderr}");
    let conflict = lines
        .iter()
        .find(|l| l["kind"] == "anchor_conflict")
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(f(&conflict["difference_ms"]) > 365.0 * 86_400_000.0);
    assert!(conflict["title"].as_str().unwrap().contains("days)"));
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn a_receive_log_of_another_vehicle_is_refused_naming_both_ids() {
    let r = replay();
    // The live daemon's own record of the replay, as if another vehicle (system 42) had flown
    // the same minutes: every receipt's sysid rewritten, nothing else.
    let other = r.dir.join("another-vehicle.jsonl");
    let mut receipts = 0usize;
    let mut text = String::new();
    for file in &r.receive {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let mut v: Value = serde_json::from_str(line).unwrap();
            if v["sysid"] == 1 {
                v["sysid"] = 42.into();
            }
            receipts += usize::from(v["sysid"] == 42);
            text.push_str(&v.to_string());
            text.push('\n');
        }
    }
    assert!(receipts > 0);
    std::fs::write(&other, text).unwrap();
    let (code, lines, stderr) = sortie(&r.flight, &[&other], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(lines.is_empty(), "{lines:#?}");
    assert!(
        stderr.contains("another-vehicle.jsonl")
            && stderr.contains("no receipts of system 1 (the flight log's system id)")
            && stderr.contains("it holds system 42"),
        "{stderr}"
    );
}

/// The timeline without the files its entries cite (the same lines cited from two places).
fn uncited(lines: &[Value]) -> Vec<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("file");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut lines = lines.to_vec();
    lines.iter_mut().for_each(strip);
    lines
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn a_data_dir_gives_the_timeline_its_files_give() {
    let r = replay();
    let data = r.dir.join("data");
    let (code, by_files, stderr) = sortie(&r.flight, &grounds(r), &[]);
    assert_eq!(code, 0, "{stderr}");
    // The span by default: the flight's own, by its GPS anchor.
    let (code, by_dir, stderr) = sortie(&r.flight, &[&data], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(by_dir.iter().any(|l| l["kind"] == "telemetry_gap"));
    assert_eq!(uncited(&by_dir), uncited(&by_files));
    let cited = by_dir
        .iter()
        .find(|l| l["kind"] == "telemetry_gap")
        .and_then(|l| l["cite"]["file"].as_str())
        .unwrap();
    assert!(
        cited.starts_with(&data.join("receive").display().to_string()),
        "{cited}"
    );
    // A span that misses the sortie reads nothing, and says so.
    let (code, lines, stderr) = sortie(
        &r.flight,
        &[&data],
        &[
            "--from",
            "2001-01-01T00:00:00Z",
            "--to",
            "2001-01-01T01:00:00Z",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(lines.is_empty());
    assert!(
        stderr.contains("no receive log or events files between 2001-01-01T00:00:00.000Z and 2001-01-01T01:00:00.000Z"),
        "{stderr}"
    );
    // A folder that is not a data dir is a usage error naming it.
    let receive = data.join("receive");
    let (code, _, stderr) = sortie(&r.flight, &[&receive], &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("not a receiver's data dir"), "{stderr}");
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn the_table_shows_the_gap_and_its_window() {
    let r = replay();
    let out = common::run_ok(
        Command::new(common::binary())
            .arg("sortie")
            .arg(&r.flight)
            .args(grounds(r))
            .args(["--format", "table"]),
        "sortie --format table",
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("ANCHORS\n"), "{text}");
    assert!(text.contains(&gap_title(r)), "{text}");
    assert!(text.contains("not necessarily radio failure"));
    assert!(text.contains("in the gap: The flight log kept running"));
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_browser, foxborne_no_corpus),
    ignore = "needs the Python references, the browser kit and the corpus (README)"
)]
fn the_report_draws_the_ground_lane_in_headless_chromium() {
    let r = replay();
    let html = r.dir.join("report.html");
    common::run_ok(
        Command::new(common::binary())
            .args(["ulog", "report"])
            .arg(&r.flight)
            .arg("--out")
            .arg(&html)
            .arg("--ground")
            .args(grounds(r)),
        "ulog report --ground",
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("class=\"ground-lane\""));
    assert!(page.contains(&gap_title(r)));
    assert!(page.contains("ground gap (last and next heartbeat)"));
    assert!(!page.contains("<script") && !page.contains("src=\"http"));
    let browser = common::browser::chromium();
    let shot = r.dir.join("report.png");
    let run =
        common::browser::screenshot(&browser, &html, &shot, &r.dir.join("profile"), (1400, 1000));
    assert!(
        shot.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let (w, h, pixels) = common::browser::decode_png(&std::fs::read(&shot).unwrap());
    assert_eq!((w, h), (1400, 1000));
    // The lane's gap colour (#0c8599) is on screen, as a band, not a stray pixel.
    let teal = pixels
        .iter()
        .filter(|p| p[0] < 60 && (110..160).contains(&p[1]) && (130..175).contains(&p[2]))
        .count();
    assert!(teal > 300, "no ground gap drawn ({teal} pixels)");
    if let Some(keep) = std::env::var_os("FOXBORNE_SORTIE_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// Our air side against pyulog, on every corpus log that has the topics: each change of arming
/// state, flight mode, landed and PX4's GCS heartbeat flag at the same sample, and every command.
#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn the_air_side_reads_what_pyulog_reads() {
    use foxborne_receiver::sortie::air::AirObserver;
    let python = common::python();
    let logs: Vec<PathBuf> = [
        FLIGHT,
        "flightreview_gps_interference.ulg",
        "px4ulogrs_quadrotor_local.ulg",
        "px4ulogrs_esc_status_log.ulg",
        "pyulog_sample_px4_events.ulg",
        "stifael_14_19_29.ulg",
    ]
    .iter()
    .map(|n| common::corpus_log(n))
    .collect();
    let args: Vec<std::ffi::OsString> = logs.iter().map(|l| l.clone().into_os_string()).collect();
    let oracle = python_lines(&python, "sortie_air_oracle.py", &args);
    assert_eq!(oracle.len(), logs.len());
    let mut compared = 0;
    for (log, expected) in logs.iter().zip(&oracle) {
        let bytes = std::fs::read(log).unwrap();
        let mut air = AirObserver::new("log", &[]);
        let mut reader = SliceReader::new(&bytes);
        while let Some(item) = reader.next_record() {
            if let Ok(located) = item {
                air.observe(&located);
            }
        }
        let facts = air.finish();
        let mut changes: Vec<Value> = Vec::new();
        let mut commands: Vec<Value> = Vec::new();
        for h in &facts.happenings {
            let at_us = h.at_ns() / 1000;
            let instance = h.detail.get("instance").cloned().unwrap_or(0.into());
            match h.kind.as_str() {
                "arming" | "flight_mode" => changes.push(serde_json::json!([
                    h.kind,
                    instance,
                    at_us,
                    h.detail["state"]
                ])),
                "landing" | "takeoff" => changes.push(serde_json::json!([
                    "landed",
                    instance,
                    at_us,
                    i64::from(h.detail["state"] == "landed")
                ])),
                "telemetry_status" if h.detail["heartbeat"] == "heartbeat_type_gcs" => {
                    let on = matches!(h.detail["state"].as_str(), Some("present" | "regained"));
                    changes.push(serde_json::json!([
                        "gcs_heartbeat",
                        instance,
                        at_us,
                        i64::from(on)
                    ]));
                }
                "command" => commands.push(serde_json::json!([
                    at_us,
                    h.detail["command"],
                    h.detail["source_system"]
                ])),
                _ => {}
            }
        }
        let key = |v: &Value| (v[0].to_string(), v[1].as_i64(), v[2].as_i64());
        changes.sort_by_key(key);
        commands.sort_by_key(|v| (v[0].as_i64(), v[1].as_i64(), v[2].as_i64()));
        assert_eq!(
            Value::Array(changes),
            expected["changes"],
            "{}",
            log.display()
        );
        assert_eq!(
            Value::Array(commands),
            expected["commands"],
            "{}",
            log.display()
        );
        compared += expected["changes"].as_array().unwrap().len();
    }
    assert!(compared > 20, "only {compared} changes compared");
}

/// Issue 42: the receiver's traffic_proximity events of the flight's vehicle are timeline
/// entries, each from its open to its close, in `sortie` and in `ulog report --ground`'s lane.
#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn the_vehicles_traffic_encounters_are_entries_of_the_timeline() {
    let r = replay();
    // The replay's events, with an encounter of vehicle 1 from its gap's start, 2 s long.
    let gap = r
        .events
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .map(|l| serde_json::from_str::<Value>(&l).unwrap())
        .find(|e| e["kind"] == "telemetry_gap")
        .expect("the replay's gap");
    let start = gap["utc"].as_str().unwrap();
    let start_us = utc_us(&gap["utc"]);
    let end = foxborne_receiver::monitor::format_utc_ms((start_us + 2_000_000) * 1000);
    let encounter = |utc: &str, state: &str, title: &str, reason: &str| {
        format!(
            r#"{{"utc":"{utc}","kind":"traffic_proximity","sysid":1,"name":null,"state":"{state}","icao":"A1B2C3","uas_id":null,"callsign":"N123AB","horizontal_m":640.0,"vertical_m":45.0,"bearing_deg":270.0,"altitude_m":533.0,"altitude_ref":"pressure_qnh","own_altitude_m":488.0,"own_altitude_ref":"msl","vertical_basis":"pressure_qnh vs msl","closest":{{"utc":"{start}","horizontal_m":412.0,"vertical_m":45.0}},"threshold_horizontal_m":1000.0,"threshold_vertical_m":150.0,"source":{{"kind":"adsb","link":"radio1","relayed_by":200}},"opened_utc":null,"lasted_s":null,"reason":{reason},"title":"{title}"}}"#
        )
    };
    let traffic = r.dir.join("events-traffic.jsonl");
    std::fs::write(
        &traffic,
        format!(
            "{}\n{}\n",
            encounter(
                start,
                "open",
                "Traffic N123AB 640 m and 45 m above sysid 1",
                "null"
            ),
            encounter(
                &end,
                "closed",
                "Traffic N123AB clear of sysid 1 at 1150 m; closest 412 m and 45 m above",
                "\"left\""
            ),
        ),
    )
    .unwrap();
    let mut ground = grounds(r);
    ground.push(&traffic);
    let (code, lines, stderr) = sortie(&r.flight, &ground, &[]);
    assert_eq!(code, 0, "{stderr}");
    let entries: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "traffic_proximity")
        .collect();
    assert_eq!(entries.len(), 1, "{lines:#?}");
    let entry = entries[0];
    assert_eq!(
        entry["title"],
        "Traffic N123AB 640 m and 45 m above sysid 1; Traffic N123AB clear of sysid 1 at 1150 m; closest 412 m and 45 m above"
    );
    assert_eq!(entry["closest"]["horizontal_m"], 412.0, "{entry}");
    let html = r.dir.join("report-traffic.html");
    common::run_ok(
        Command::new(common::binary())
            .args(["ulog", "report"])
            .arg(&r.flight)
            .arg("--out")
            .arg(&html)
            .arg("--ground")
            .args(&ground),
        "ulog report --ground",
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Traffic N123AB 640 m and 45 m above sysid 1"),
        "no traffic entry in the lane"
    );
}
