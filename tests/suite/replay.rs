//! `replay` (issue 43) into the live daemon: a corpus `.tlog` sent at ten times its recorded
//! pace arrives whole (the daemon's receipts are `tlog convert`'s, its raw capture the file's
//! frames byte for byte), and the file's heartbeat gaps are seen again by the live detector, at
//! a tenth of their length. What the replay refuses is in its unit tests (src/cmd/replay.rs);
//! MAVProxy as the peer is in `mavproxy.rs`.

use crate::common;

use common::Daemon;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// ArduPlane SITL, MAVLink 1, 23,894 frames over 207.6 s with five heartbeat gaps over 3 s
/// (4.423, 6.100, 3.507, 3.235 and 3.369 s, per pymavlink).
const TLOG: &str = "nodemavlink_vtol.tlog";
/// The daemon's gap threshold: under 3 s at a tenth, so that the recording's shortest gap over
/// 3 s (3.235 s, 0.3235 s at a tenth) clears it by 73 ms however late a loaded machine sends
/// or stamps a heartbeat. Shorter spacings that it also reports (2.484 s is 0.248 s at a
/// tenth) are gaps the recording explains: the test checks each live gap against the very
/// spacing it was recorded with.
const THRESHOLD_S: f64 = 0.25;

/// A receipt line without what only the daemon writes (its arrival stamps, the link's name,
/// the source address), and its `recv_utc` in ms. The lines are compared as text: 23,894 of them
/// as JSON values would grow the test process by hundreds of MB, and the suite's memory tests
/// measure children that inherit its peak.
fn comparable(line: &str) -> (String, i64) {
    let stamp = line
        .strip_prefix("{\"recv_utc\":\"")
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no recv_utc first: {line}"));
    let ms = common::utc_ms(&Value::from(stamp));
    let from_sysid = &line[line.find(",\"sysid\":").expect("sysid")..];
    let text = match from_sysid.find(",\"src\":\"") {
        Some(at) => {
            let after = &from_sysid[at + 8..];
            let end = at + 8 + after.find('"').expect("src closes") + 1;
            format!("{}{}", &from_sysid[..at], &from_sysid[end..])
        }
        None => from_sysid.to_string(),
    };
    (text, ms)
}

/// The daemon's receive-log lines, as text, file by file in name order.
fn receive_lines(d: &Daemon) -> Vec<String> {
    let root = d.dir.join("data/receive");
    let files = common::dated_files(&root);
    files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            // A line still being written is not counted yet.
            let whole = text.rfind('\n').map_or(0, |i| i + 1);
            text[..whole].lines().map(String::from).collect::<Vec<_>>()
        })
        .collect()
}

/// The heartbeats of system 1 among `lines`: their index and stamp (ms).
fn heartbeats(lines: &[(String, i64)]) -> Vec<(usize, i64)> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, (text, _))| {
            text.starts_with(",\"sysid\":1,") && text.contains("\"msg\":\"HEARTBEAT\"")
        })
        .map(|(i, (_, ms))| (i, *ms))
        .collect()
}

/// `lag at most N ms` in the replay's summary, in seconds.
fn max_lag_s(summary: &str) -> f64 {
    let after = summary
        .split("lag at most ")
        .nth(1)
        .unwrap_or_else(|| panic!("no lag in {summary}"));
    after.split(" ms").next().unwrap().parse::<f64>().unwrap() / 1e3
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_tlog_replayed_at_ten_times_arrives_whole_and_its_gaps_come_again_at_a_tenth() {
    let tlog = common::corpus_file("tlog", TLOG);
    let (mut d, udp) = Daemon::start_radio1(
        "replay-daemon",
        &format!(
            "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\ntlog = true\nfields = \"all\"\n[gap]\nthreshold_s = {THRESHOLD_S}\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n"
        ),
    );
    let converted = Command::new(common::binary())
        .args(["tlog", "convert", "--fields", "all"])
        .arg(&tlog)
        .output()
        .unwrap();
    common::assert_success(&converted, "tlog convert");
    let converted: Vec<(String, i64)> = String::from_utf8(converted.stdout)
        .unwrap()
        .lines()
        .map(comparable)
        .collect();

    let out = common::run_ok(
        Command::new(common::binary())
            .arg("replay")
            .arg(&tlog)
            .arg("--to")
            .arg(format!("udp:{udp}"))
            .args(["--speed", "10"]),
        "replay",
    );
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(
        summary.starts_with(&format!("replay: sent {} frames", converted.len())),
        "{summary}"
    );
    assert!(summary.contains("rejected records: 0 "), "{summary}");
    let lag_s = max_lag_s(&summary);
    assert!(common::eventually(Duration::from_secs(20), || {
        receive_lines(&d).len() >= converted.len()
    }));
    assert!(d.stop().success());

    // Every frame arrived once, in order: the same receipts `tlog convert` makes of the file,
    // and the raw capture holds the file's frames byte for byte.
    let receipts: Vec<(String, i64)> = receive_lines(&d).iter().map(|l| comparable(l)).collect();
    assert_eq!(receipts.len(), converted.len());
    let differ = receipts
        .iter()
        .zip(&converted)
        .position(|(a, b)| a.0 != b.0);
    assert!(differ.is_none(), "first difference at {differ:?}");
    let frames = d.recorded_frames();
    let sent = common::tlog_frames(&tlog);
    let bytes = |frames: &[Vec<u8>]| frames.iter().map(Vec::len).sum::<usize>();
    assert_eq!(frames.len(), sent.len());
    assert_eq!(bytes(&frames), bytes(&sent));
    assert!(frames == sent, "byte for byte");
    assert!(summary.contains(&format!("frames ({} bytes)", bytes(&sent))));
    data_dir_over_a_span(&d);

    // The recorded gaps, seen live at a tenth of their length. Each live gap is matched to the
    // two heartbeats it lies between (the n-th receipt is the file's n-th frame), so it is
    // compared with the very spacing it was recorded with: within 20 ms (both the replay and the
    // daemon are scheduled by a shared two-core machine; the daemon stamps a datagram when it
    // reads it), or 5 ms more than the replay's own largest lag when that is more.
    let tolerance = (0.005 + lag_s).max(0.020);
    let live_beats = heartbeats(&receipts);
    let recorded_beats = heartbeats(&converted);
    assert_eq!(
        live_beats.iter().map(|b| b.0).collect::<Vec<_>>(),
        recorded_beats.iter().map(|b| b.0).collect::<Vec<_>>()
    );
    let mut seen_again = Vec::new();
    for gap in d
        .events()
        .iter()
        .filter(|e| e["kind"] == "telemetry_gap" && e["state"] == "closed" && e["sysid"] == 1)
    {
        let live = gap["gap_s"].as_f64().unwrap();
        let last = common::utc_ms(&gap["last_recv_utc"]);
        let k = live_beats
            .iter()
            .position(|b| b.1 == last)
            .unwrap_or_else(|| panic!("no heartbeat received at {gap}"));
        let recorded_s = (recorded_beats[k + 1].1 - recorded_beats[k].1) as f64 / 1e3;
        assert!(
            (live - recorded_s / 10.0).abs() <= tolerance,
            "live gap {live} s between heartbeats recorded {recorded_s} s apart (tolerance {tolerance} s, the replay's lag at most {lag_s} s)"
        );
        if recorded_s > 3.0 {
            seen_again.push(recorded_s);
        }
    }
    let recorded: Vec<f64> = common::pymavlink_expected(&tlog)["heartbeat_gaps_over_3s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["gap_s"].as_f64().unwrap())
        .collect();
    assert_eq!(recorded.len(), 5);
    assert_eq!(
        seen_again.len(),
        recorded.len(),
        "recorded gaps seen live {seen_again:?}, pymavlink's {recorded:?}"
    );
    for (live, oracle) in seen_again.iter().zip(&recorded) {
        assert!(
            (live - oracle).abs() < 0.002,
            "{seen_again:?} against {recorded:?}"
        );
    }
}

/// Runs `replay` with `args` to a TCP peer of its own (`tcp_listen`, `--speed max`): what the
/// peer read, the summary, and what the replay said on stderr.
fn replay_to_a_tcp_peer(args: &[&std::ffi::OsStr]) -> (Vec<u8>, String, String) {
    use std::io::{BufRead, Read};
    let mut replay = Command::new(common::binary())
        .arg("replay")
        .args(args)
        .args(["--to", "tcp_listen:127.0.0.1:0", "--speed", "max"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(replay.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .strip_prefix("replay: listening on ")
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let mut peer = std::net::TcpStream::connect(&address).unwrap();
    let mut received = Vec::new();
    peer.read_to_end(&mut received).unwrap();
    let mut said = String::new();
    stderr.read_to_string(&mut said).unwrap();
    let status = replay.wait().unwrap();
    let mut summary = String::new();
    replay
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut summary)
        .unwrap();
    assert!(status.success(), "{said}");
    (received, summary, said)
}

/// The daemon's data dir replayed over a span of its own recording: exactly the frames its
/// `tlog/` files hold stamped within the span (inclusive), in order.
fn data_dir_over_a_span(d: &Daemon) {
    use foxborne_receiver::tlog::TlogReader;
    use foxborne_receiver::wire::signing::SigningKeys;
    use foxborne_receiver::wire::ScanItem;
    let mut stamped: Vec<(u64, Vec<u8>)> = Vec::new();
    let root = d.dir.join("data/tlog");
    let files = common::dated_files(&root);
    let keys = SigningKeys::new(Vec::new(), false);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        for r in TlogReader::new(&bytes, &keys) {
            if let ScanItem::Frame(frame) = r.item {
                stamped.push((r.utc_us, frame.bytes.to_vec()));
            }
        }
    }
    // A span from the 5,000th frame's millisecond to the 9,000th's.
    let ms = |us: u64| us / 1000;
    let (from_ms, to_ms) = (ms(stamped[5_000].0), ms(stamped[9_000].0));
    let text = |ms: u64| {
        chrono::DateTime::from_timestamp_millis(ms as i64)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let expected: Vec<u8> = stamped
        .iter()
        .filter(|(us, _)| *us >= from_ms * 1000 && *us <= to_ms * 1000)
        .flat_map(|(_, f)| f.clone())
        .collect();
    let (from, to) = (text(from_ms), text(to_ms));
    let dir = d.dir.join("data");
    let (received, summary, _) = replay_to_a_tcp_peer(&[
        dir.as_os_str(),
        "--from".as_ref(),
        from.as_ref(),
        "--to-utc".as_ref(),
        to.as_ref(),
    ]);
    assert!(received == expected, "the span's frames, byte for byte");
    assert!(
        summary.contains(&format!(
            "not sent: {} frames stamped outside --from/--to-utc",
            stamped.len() - expected_count(&stamped, from_ms, to_ms)
        )),
        "{summary}"
    );
}

fn expected_count(stamped: &[(u64, Vec<u8>)], from_ms: u64, to_ms: u64) -> usize {
    stamped
        .iter()
        .filter(|(us, _)| *us >= from_ms * 1000 && *us <= to_ms * 1000)
        .count()
}

/// 1,967 real bad-CRC frames among 50,136 good ones.
const BAD_CRC_TLOG: &str = "ardusub_pymavlink_bug_2023-04-18.tlog";

/// `N rejected records` in `tlog convert`'s stderr, and its receipts.
fn converted_counts(tlog: &std::path::Path) -> (u64, u64) {
    let out = common::run_ok(
        Command::new(common::binary())
            .args(["tlog", "convert"])
            .arg(tlog)
            .stdout(std::process::Stdio::null()),
        "tlog convert",
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let last = stderr.lines().last().unwrap();
    let number = |word: &str| -> u64 {
        let before = last.split(word).next().unwrap();
        before.split_whitespace().last().unwrap().parse().unwrap()
    };
    (number(" receipts"), number(" rejected records"))
}

/// Over TCP at `--speed max`: the peer that connects gets the file's frames, byte for byte and
/// nothing else, as fast as it reads them; the bad records are skipped and counted as
/// `tlog convert` counts them, and named by byte offset as it names them.
#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_tcp_peer_gets_exactly_the_file_s_frames_and_bad_records_are_counted_as_tlog_convert_does() {
    let tlog = common::corpus_file("tlog", BAD_CRC_TLOG);
    let (received, summary, said) = replay_to_a_tcp_peer(&[tlog.as_os_str()]);
    let frames = common::tlog_frames(&tlog);
    assert!(received == frames.concat(), "byte for byte, nothing else");
    let (receipts, rejected) = converted_counts(&tlog);
    assert_eq!(rejected, 1967);
    assert_eq!(frames.len() as u64, receipts);
    assert!(
        summary.starts_with(&format!("replay: sent {receipts} frames")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("rejected records: {rejected} ")),
        "{summary}"
    );
    // Named as tlog convert names them: the first 20 by byte offset, then the count.
    assert_eq!(said.matches(", not sent").count(), 20, "{said}");
    assert!(said.contains(&format!(
        "{} more rejected records not listed",
        rejected - 20
    )));
}
