//! `analyze` and `tlog convert` on every corpus tlog, held against pymavlink's view: the same
//! heartbeat gaps over 3 s, and the same message counts.

use crate::common;

use foxborne_receiver::analyze::{replay_file, Problems, Replay};
use foxborne_receiver::monitor::event::GapState;
use foxborne_receiver::monitor::Event;
use foxborne_receiver::monitor::WatchSettings;
use std::collections::BTreeMap;
use std::process::Command;

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn analyze_finds_exactly_the_heartbeat_gaps_pymavlink_finds() {
    let files = common::corpus_files("tlog", "tlog");
    let mut total = 0;
    for path in files {
        let expected = common::pymavlink_expected(&path);
        let mut replay = Replay::new(WatchSettings::default());
        let mut events = Vec::new();
        let file = std::fs::File::open(&path).unwrap();
        replay_file(
            &path,
            file,
            "t",
            &mut replay,
            &mut Problems::default(),
            &mut |e| {
                events.push(e.clone());
                Ok(())
            },
        )
        .unwrap();
        events.extend(replay.finish());
        let closed: Vec<(u8, f64, f64, f64)> = events
            .iter()
            .filter_map(|e| match e {
                Event::TelemetryGap(g) if g.state == GapState::Closed => Some((
                    g.sysid,
                    g.last_recv_utc.unwrap().ns() as f64 / 1e9,
                    g.next_recv_utc.unwrap().ns() as f64 / 1e9,
                    g.gap_s.unwrap(),
                )),
                _ => None,
            })
            .collect();
        let want: Vec<(u8, f64, f64, f64)> = expected["heartbeat_gaps_over_3s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["sysid"].as_u64().unwrap() as u8,
                    g["last_recv"].as_f64().unwrap(),
                    g["next_recv"].as_f64().unwrap(),
                    g["gap_s"].as_f64().unwrap(),
                )
            })
            .collect();
        let name = path.file_name().unwrap().to_string_lossy();
        assert_eq!(closed.len(), want.len(), "{name}: {closed:?} vs {want:?}");
        // pymavlink keeps the tlog stamp's two low bits (its link number) in its times; we clear
        // them as not being time, so times agree to within 4 µs.
        let mut want_sorted = want.clone();
        want_sorted.sort_by(|a, b| a.2.partial_cmp(&b.2).unwrap().then(a.0.cmp(&b.0)));
        let mut got_sorted = closed.clone();
        got_sorted.sort_by(|a, b| a.2.partial_cmp(&b.2).unwrap().then(a.0.cmp(&b.0)));
        for (g, w) in got_sorted.iter().zip(&want_sorted) {
            assert_eq!(g.0, w.0, "{name}: sysid");
            assert!(
                (g.1 - w.1).abs() < 5e-6 && (g.2 - w.2).abs() < 5e-6 && (g.3 - w.3).abs() < 5e-6,
                "{name}: {g:?} vs {w:?}"
            );
        }
        // Every closed gap carries the contract wording.
        for e in &events {
            if let Event::TelemetryGap(g) = e {
                assert_eq!(
                    g.observed,
                    "Observed: telemetry receive gap, not necessarily radio failure"
                );
                if g.state == GapState::Closed {
                    assert!(g
                        .title
                        .as_deref()
                        .unwrap()
                        .starts_with("Heartbeat due and not received. Nothing for "));
                }
            }
        }
        total += want.len();
    }
    assert_eq!(total, 8, "the corpus holds 8 heartbeat gaps over 3 s");
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn tlog_convert_gives_pymavlink_message_counts() {
    let files = common::corpus_files("tlog", "tlog");
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path();
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let out = out_dir.join(format!("{name}.jsonl"));
        common::run_ok(
            Command::new(common::binary())
                .args(["tlog", "convert"])
                .arg(&path)
                .arg("--out")
                .arg(&out),
            "tlog convert",
        );
        let mut by_message: BTreeMap<String, u64> = BTreeMap::new();
        let text = std::fs::read_to_string(&out).unwrap();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v["mono_ns"].is_null());
            assert_eq!(v["link"], name.as_str());
            *by_message
                .entry(v["msg"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        let mut expected = common::pymavlink_expected(&path);
        for &(file, message, _) in common::PYMAVLINK_LOSES {
            if file == name {
                let v = &mut expected["by_message"][message];
                *v = (v.as_u64().unwrap() + 1).into();
            }
        }
        let want: BTreeMap<String, u64> = expected["by_message"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        assert_eq!(by_message, want, "{name}");
        // recv_utc is the record stamp at millisecond precision.
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let first_recv =
            foxborne_receiver::monitor::parse_utc_ns(first["recv_utc"].as_str().unwrap()).unwrap()
                as f64
                / 1e9;
        assert!(
            (first_recv - expected["first_recv"].as_f64().unwrap()).abs() < 0.001,
            "{name}"
        );
    }
}
