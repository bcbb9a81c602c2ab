//! The seven flight rules on the corpus, against flight-review-rs's analyzers on the logs it
//! uses as fixtures (`flightreview_*.ulg`), and on logs derived from corpus logs with a fault
//! written in by the project's writer (`ulog::rewrite`): each rule finds its fault, once per
//! episode, citing the sample where it began, and nothing where there is none.

use crate::common;

use common::found;
use foxborne_receiver::ulog::ingest::ingest_reader;
use foxborne_receiver::ulog::report::{Finding, Report};
use foxborne_receiver::ulog::rewrite::{rewrite, SampleEdit};
use foxborne_receiver::ulog::rules::RULES;
use foxborne_receiver::ulog::SliceReader;

fn report_of(bytes: &[u8]) -> Report {
    ingest_reader(bytes, "derived.ulg", bytes.len() as u64, None, None).unwrap()
}

fn corpus(name: &str) -> Vec<u8> {
    std::fs::read(common::corpus_file("ulog", name)).unwrap()
}

fn outcome<'a>(r: &'a Report, rule: &str) -> &'a foxborne_receiver::ulog::rules::RuleOutcome {
    r.rules.iter().find(|o| o.rule == rule).unwrap()
}

/// A log derived from `name` with `edit` applied to every sample.
fn derived(name: &str, edit: impl FnMut(&mut SampleEdit<'_>)) -> Report {
    report_of(&rewrite(&corpus(name), edit))
}

fn within(e: &SampleEdit<'_>, from_s: f64, to_s: f64) -> bool {
    e.timestamp
        .is_some_and(|t| t as f64 >= from_s * 1e6 && (t as f64) < to_s * 1e6)
}

/// The sample a finding cites is a sample of its topic at its timestamp.
fn assert_cited(bytes: &[u8], f: &Finding) {
    let mut reader = SliceReader::new(bytes);
    while let Some(item) = reader.next_record() {
        let located = item.unwrap();
        if located.message == f.message {
            assert_eq!(located.offset, f.offset, "{}", f.title);
            let foxborne_receiver::ulog::Record::Data(s) = &located.record else {
                panic!("{}: message {} is not a sample", f.title, f.message);
            };
            assert_eq!(
                Some(&*s.subscription.topic),
                f.topic.as_deref(),
                "{}",
                f.title
            );
            assert_eq!(s.timestamp, Some(f.timestamp), "{}", f.title);
            return;
        }
    }
    panic!("{}: no message {}", f.title, f.message);
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn every_rule_says_whether_it_was_evaluated_on_every_corpus_log() {
    for log in common::corpus_logs() {
        let bytes = std::fs::read(&log).unwrap();
        let r = report_of(&bytes);
        let names: Vec<&str> = r.rules.iter().map(|o| o.rule).collect();
        assert_eq!(names, RULES, "{}", log.display());
        for o in &r.rules {
            match &o.reason {
                Some(reason) => {
                    assert!(!o.evaluated);
                    assert!(reason.starts_with("not evaluated: "), "{reason}");
                    assert!(reason.len() > "not evaluated: ".len() + 4, "{reason}");
                }
                None => {
                    assert!(o.evaluated);
                    assert!(
                        !o.read.is_empty(),
                        "{}: {} read nothing",
                        log.display(),
                        o.rule
                    );
                }
            }
        }
        for f in r
            .findings
            .iter()
            .filter(|f| RULES.contains(&f.kind.as_str()))
        {
            assert!(f.evidence.is_some(), "{}", f.title);
            assert_cited(&bytes, f);
        }
    }
    // A log with none of the topics: every rule says which topic it lacks.
    let r = report_of(&corpus("yulelog_trig_stats.ulg"));
    assert_eq!(
        outcome(&r, "gps_quality_drop").reason.as_deref(),
        Some("not evaluated: no sensor_gps (nor vehicle_gps_position)")
    );
    assert_eq!(
        outcome(&r, "failsafe_entered").reason.as_deref(),
        Some("not evaluated: no vehicle_status")
    );
}

/// flight-review-rs's `ekf_failure` on this log: velocity from 117.35 s, position from
/// 117.94 s (twice: its warning at 2 s and its critical at 5 s of the same episode).
#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn ekf_failure_log_estimator_fault_failsafe_and_sensor_failure() {
    let r = report_of(&corpus("flightreview_ekf_failure.ulg"));
    let faults = found(&r, "estimator_fault");
    let starts: Vec<(u64, &str)> = faults
        .iter()
        .map(|f| {
            (
                f.timestamp,
                f.evidence.as_ref().unwrap().values[0].field.as_str(),
            )
        })
        .collect();
    assert_eq!(
        starts,
        [
            (117_349_822, "estimator_status.vel_test_ratio"),
            (117_939_397, "estimator_status.pos_test_ratio")
        ]
    );
    // One finding per episode: the position episode lasts past flight-review-rs's 5 s.
    assert!(
        faults[1].duration_ms >= 5_000.0,
        "{}",
        faults[1].duration_ms
    );
    // The failsafe: PX4 warned (no action), caused by the failure detector, the event's text
    // completed with the health report sent with it.
    let failsafe = found(&r, "failsafe_entered");
    assert_eq!(failsafe.len(), 1);
    let e = failsafe[0].evidence.as_ref().unwrap();
    assert_eq!(failsafe[0].timestamp, 114_991_098);
    assert!(e
        .reason
        .as_deref()
        .unwrap()
        .starts_with("Failsafe warning: Attitude failure detected"));
    assert_eq!(e.cause[0].flag, "failsafe_flags.fd_critical_failure");
    assert!(!e.cause[0].before_arming);
    assert!(e.cause[1..].iter().all(|c| c.before_arming));
    assert!(failsafe[0]
        .title
        .contains("vehicle_status.failsafe did not rise"));
    // Nothing that is not there.
    assert!(found(&r, "gps_quality_drop").is_empty());
    assert!(found(&r, "rc_lost").is_empty());
    assert!(found(&r, "battery_sag").is_empty());
}

/// flight-review-rs's `gps_interference`: 12 detections, 5 s apart from 276.6 s (the receiver
/// never had a fix). Ours: one episode covering them all, from the first sample.
#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn gps_interference_log_is_one_episode() {
    let r = report_of(&corpus("flightreview_gps_interference.ulg"));
    let drops = found(&r, "gps_quality_drop");
    assert_eq!(drops.len(), 1);
    let d = drops[0];
    assert!(
        d.timestamp <= 276_594_637,
        "starts by their first detection"
    );
    assert!(
        d.timestamp + (d.duration_ms * 1000.0) as u64 >= 332_595_636,
        "lasts past their last"
    );
    assert!(
        d.title.starts_with("GPS not usable while armed"),
        "{}",
        d.title
    );
    let values = &d.evidence.as_ref().unwrap().values;
    assert_eq!(values[0].field, "sensor_gps.eph");
    assert_eq!(values[0].threshold, 5.0, "COM_POS_FS_EPH from the log");
    assert_eq!(values[1].field, "sensor_gps.satellites_used");
    assert_eq!(values[1].extreme.value, 0.0);
    assert!(
        found(&r, "gnss_jamming").is_empty(),
        "the jamming indicator stays at 48"
    );
}

/// flight-review-rs's `battery_brownout` reports 0.058, 0.048 and 0.051 V "below critical"
/// here; the battery reads `connected` false and 0.05 V throughout: no sensor, no sag.
#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn battery_brownout_log_reads_no_battery() {
    let r = report_of(&corpus("flightreview_battery_brownout.ulg"));
    let o = outcome(&r, "battery_sag");
    assert!(!o.evaluated);
    let reason = o.reason.as_deref().unwrap();
    assert!(
        reason.contains("battery_status[0] reads no battery"),
        "{reason}"
    );
    assert!(reason.contains("connected is false"), "{reason}");
    assert!(found(&r, "battery_sag").is_empty());
    // Its GPS is not logged at all.
    assert_eq!(
        outcome(&r, "gps_quality_drop").reason.as_deref(),
        Some("not evaluated: no sensor_gps (nor vehicle_gps_position)")
    );
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn faults_written_into_the_ekf_failure_log_are_found_once_each() {
    let log = "flightreview_ekf_failure.ulg";
    let bytes = rewrite(&corpus(log), |e| match (e.topic, e.multi_id) {
        ("sensor_gps", 0) if within(e, 90.0, 95.0) => e.set("eph", 12.0),
        ("sensor_gps", 0) if within(e, 100.0, 103.0) => e.set("satellites_used", 3.0),
        ("sensor_gps", 0) if within(e, 60.0, 62.5) => e.set("jamming_state", 3.0),
        ("battery_status", 0) if within(e, 70.0, 75.0) => e.set("voltage_v", 19.0),
        ("input_rc", 0) if within(e, 80.0, 83.0) => e.set("rc_lost", 1.0),
        ("input_rc", 0) if within(e, 85.0, 85.4) => e.set("rc_lost", 1.0),
        ("vehicle_status", 0) if within(e, 115.0, 118.0) => {
            e.set("failsafe", 1.0);
            e.set("nav_state", 5.0);
        }
        _ => {}
    });
    let r = report_of(&bytes);
    let gps = found(&r, "gps_quality_drop");
    assert_eq!(
        gps.len(),
        2,
        "{:#?}",
        gps.iter().map(|f| &f.title).collect::<Vec<_>>()
    );
    let eph = &gps[0].evidence.as_ref().unwrap().values[0];
    assert_eq!(
        (eph.field.as_str(), eph.extreme.value, eph.threshold),
        ("sensor_gps.eph", 12.0, 5.0)
    );
    assert!(
        (90.0..91.05).contains(&(gps[0].timestamp as f64 / 1e6)),
        "sensor_gps is at 1 Hz"
    );
    assert!(
        gps[0].title.contains(" near "),
        "a position: {}",
        gps[0].title
    );
    let sats = &gps[1].evidence.as_ref().unwrap().values[0];
    assert_eq!(
        (sats.extreme.value, sats.threshold),
        (3.0, 6.0),
        "EKF2_REQ_NSATS"
    );
    let jam = found(&r, "gnss_jamming");
    assert_eq!(
        jam.len(),
        2,
        "the written one and the log's own indicator of 82"
    );
    assert!(jam[0].title.contains("jamming_state 3"), "{}", jam[0].title);
    let sag = found(&r, "battery_sag");
    assert_eq!(sag.len(), 1);
    let v = &sag[0].evidence.as_ref().unwrap().values[0];
    assert!(
        (v.extreme.value - 19.0 / 6.0).abs() < 1e-6,
        "{}",
        v.extreme.value
    );
    assert!((v.threshold - 3.4).abs() < 1e-6, "BAT1_V_EMPTY");
    let rc = found(&r, "rc_lost");
    assert_eq!(rc.len(), 1, "the 0.3 s loss is under COM_RC_LOSS_T");
    assert!(
        (80.0..80.6).contains(&(rc[0].timestamp as f64 / 1e6)),
        "input_rc is at 2 Hz"
    );
    assert!(rc[0].resumed_timestamp.is_some());
    let fs = found(&r, "failsafe_entered");
    let entered = fs
        .iter()
        .find(|f| f.title.starts_with("Failsafe entered"))
        .unwrap();
    let e = entered.evidence.as_ref().unwrap();
    assert!(
        e.reason
            .as_deref()
            .unwrap()
            .starts_with("Failsafe warning:"),
        "the event is its reason"
    );
    assert_eq!(e.cause[0].flag, "failsafe_flags.fd_critical_failure");
    assert!(e
        .nav_state
        .as_deref()
        .unwrap()
        .ends_with("→ 5 (Return to Land)"));
    assert!(fs.iter().any(|f| f.title.starts_with("Failsafe cleared")));
    assert!(
        !fs.iter().any(|f| f.title.starts_with("Failsafe warning")),
        "the event was claimed"
    );
    for f in r
        .findings
        .iter()
        .filter(|f| RULES.contains(&f.kind.as_str()))
    {
        assert_cited(&bytes, f);
    }
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn vibration_and_estimator_faults_written_in() {
    let r = derived("flightreview_gps_interference.ulg", |e| {
        if e.topic == "vehicle_imu_status" && e.multi_id == 1 && within(e, 300.0, 305.0) {
            e.set("accel_vibration_metric", 12.0);
        }
    });
    let on_1: Vec<&Finding> = found(&r, "vibration_high")
        .into_iter()
        .filter(|f| f.multi_id == Some(1))
        .collect();
    assert_eq!(on_1.len(), 1, "imu 1 peaks at 4.82 on its own");
    assert!(
        on_1[0].title.starts_with("Vibration severe"),
        "{}",
        on_1[0].title
    );
    let r = derived("pyulog_sample_px4_events.ulg", |e| {
        let t = e.timestamp.unwrap_or(0);
        let start = 1_710_773_370_000_000u64;
        if e.topic == "estimator_status" {
            if (start..start + 3_000_000).contains(&t) {
                e.set("hgt_test_ratio", 1.5);
            }
            if (start + 5_000_000..start + 6_000_000).contains(&t) {
                e.set("vel_test_ratio", 1.5);
            }
        }
    });
    let faults = found(&r, "estimator_fault");
    assert_eq!(faults.len(), 1, "the 1 s one is under 2 s");
    assert!(faults[0].title.contains("height"), "{}", faults[0].title);
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_battery_that_reads_zero_is_not_a_sag() {
    let r = derived("flightreview_ekf_failure.ulg", |e| {
        if e.topic == "battery_status" {
            e.set("voltage_v", 0.05);
        }
    });
    assert!(found(&r, "battery_sag").is_empty());
    let o = outcome(&r, "battery_sag");
    assert!(!o.evaluated);
    assert!(
        o.reason.as_deref().unwrap().contains("under 2 V per cell"),
        "{:?}",
        o.reason
    );
}
