//! What the ingest report says of the sortie on the air side, on the boot clock, each cited by
//! the message number and byte offset of its evidence: the log's messages (INFO and above),
//! PX4's events decoded with the log's own definitions (`px4_event`), and every finding
//! (`topic_stall`, `log_dropout`, timestamp outliers, and each flight rule's, whose kind is the
//! rule's name and which carries the rule's evidence).
//!
//! The `failsafe_entered` findings are the failsafes the samples show: [`join_failsafes`] gives
//! their words (the PX4 event that announced one, the `failsafe_flags` conditions true at it, the
//! navigation state before and after) to the state changes [`super::air`] read, instead of
//! listing the same failsafe twice.

use super::air::FAILSAFE_KIND;
use super::entry::{Cite, Happening};
use super::px4;
use crate::ulog::events::EVENT_TOPIC;
use crate::ulog::record::level_name;
use crate::ulog::report::{Finding, Report};
use serde_json::Value;

/// The kind of a PX4 event's entry.
pub const EVENT_KIND: &str = "px4_event";

/// Logged messages and PX4 events down to INFO (DEBUG is left out), and every finding.
pub fn from_report(report: &Report) -> Vec<Happening> {
    let cite = |message: u64, offset: u64| Cite::Message {
        file: report.file.clone(),
        message,
        offset,
    };
    let mut out = Vec::new();
    for m in report
        .logged_messages
        .iter()
        .chain(&report.tagged_logged_messages)
    {
        let level = level_name(m.level);
        if level == "DEBUG" {
            continue;
        }
        out.push(
            Happening::new(
                "logged_message",
                m.timestamp as i64 * 1000,
                format!("[{level}] {}", m.text.trim_end()),
                cite(m.message, m.offset),
            )
            .with("level", level),
        );
    }
    for e in report.events.iter().filter(|e| e.level != "DEBUG") {
        out.push(
            Happening::new(
                EVENT_KIND,
                e.timestamp as i64 * 1000,
                format!("PX4 event [{}] {}", e.level, e.message.trim_end()),
                cite(e.citation.message, e.citation.offset),
            )
            .with("level", e.level.clone())
            .with("message", e.message.clone())
            .with("event", e.name.clone().map_or(Value::Null, Value::from))
            .with("id", e.id),
        );
    }
    out.extend(
        report
            .findings
            .iter()
            .map(|f| finding(f, cite(f.message, f.offset))),
    );
    out
}

/// One finding of the report: an interval from its start to when it resumed or cleared.
fn finding(f: &Finding, cite: Cite) -> Happening {
    let start = f.timestamp as i64 * 1000;
    let end = f
        .resumed_timestamp
        .map_or(start + (f.duration_ms * 1e6) as i64, |r| r as i64 * 1000);
    let mut h = Happening::new(&f.kind, start, f.title.clone(), cite).ending(end.max(start));
    if let Some(topic) = &f.topic {
        h = h.with("topic", topic.clone());
        if let Some(message) = px4::companion_message(topic) {
            h = h.with("companion_fed", message);
        }
    }
    if let Some(m) = f.multi_id {
        h = h.with("multi_id", m);
    }
    let Some(evidence) = &f.evidence else {
        return h;
    };
    if f.kind == FAILSAFE_KIND {
        let flags: Vec<String> = evidence
            .cause
            .iter()
            .map(|c| c.flag.rsplit('.').next().unwrap_or(&c.flag).to_string())
            .collect();
        h = h.with("failsafe_flags", flags);
        if let Some(reason) = &evidence.reason {
            h = h.with("reason", reason.clone());
        }
        // The rule cites the announcement when vehicle_status.failsafe did not rise with it.
        if evidence.citation.topic == EVENT_TOPIC {
            h = h.with("state", "warning");
        }
    }
    h.with(
        "evidence",
        serde_json::to_value(evidence).expect("a rule finding serializes"),
    )
}

/// The air side's happenings: those the samples show, with the failsafe state changes worded by
/// the `failsafe_entered` findings of the same `vehicle_status` samples, and the rest of the
/// report's. A finding no state change matches (a failsafe PX4 announced and took no action
/// on) is listed as it is; a state change no finding matches keeps its own words.
pub fn join_failsafes(observed: Vec<Happening>, reported: Vec<Happening>) -> Vec<Happening> {
    let mut out = observed;
    for r in reported {
        let twin = (r.kind == FAILSAFE_KIND)
            .then(|| {
                out.iter_mut()
                    .find(|h| h.kind == FAILSAFE_KIND && h.at_end && h.cite == r.cite)
            })
            .flatten();
        match twin {
            Some(h) => {
                h.title = r.title;
                for (k, v) in r.detail {
                    // The state change's own interval and state stand; the rule's words join.
                    h.detail.entry(k).or_insert(v);
                }
            }
            None => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::air::{testing::log, AirObserver};
    use super::*;
    use crate::ulog::events::{Citation, Event};
    use crate::ulog::report::Status;
    use crate::ulog::rules::{Cause, RuleFinding};
    use crate::ulog::SliceReader;

    fn citation(topic: &str, message: u64) -> Citation {
        Citation {
            topic: topic.into(),
            multi_id: 0,
            message,
            offset: message * 10,
        }
    }

    fn failsafe(title: &str, at: &Citation, reason: Option<&str>) -> Finding {
        Finding::from_rule(RuleFinding {
            rule: "failsafe_entered",
            title: title.into(),
            timestamp: 5_200_000,
            citation: at.clone(),
            end_timestamp: None,
            duration_ms: 0.0,
            values: Vec::new(),
            reason: reason.map(str::to_string),
            cause: vec![Cause {
                flag: "failsafe_flags.gcs_connection_lost".into(),
                since: 5_100_000,
                citation: citation("failsafe_flags", 20),
                before_arming: false,
            }],
            nav_state: None,
        })
    }

    fn report() -> Report {
        let mut r = Report::empty("f.ulg", Status::Complete, None);
        r.events = ["INFO", "DEBUG", "WARNING"]
            .iter()
            .enumerate()
            .map(|(i, level)| Event {
                timestamp: 5_000_000 + i as u64,
                level: level.to_string(),
                message: format!("event {i} "),
                id: 7,
                name: Some("commander_failsafe_enter_generic".into()),
                group: None,
                kind: None,
                level_number: 0,
                citation: citation(EVENT_TOPIC, 30 + i as u64),
            })
            .collect();
        r.findings = vec![
            failsafe(
                "Failsafe entered at 5.20 s: No connection",
                &citation("vehicle_status", 21),
                Some("No connection"),
            ),
            failsafe(
                "Failsafe warning at 5.00 s (no failsafe action)",
                &citation(EVENT_TOPIC, 30),
                Some("Failsafe warning"),
            ),
        ];
        r
    }

    #[test]
    fn events_and_rule_findings_are_cited_at_their_samples() {
        let got = from_report(&report());
        let events: Vec<(&str, i64, &Cite)> = got
            .iter()
            .filter(|h| h.kind == EVENT_KIND)
            .map(|h| (h.title.as_str(), h.start_ns, &h.cite))
            .collect();
        assert_eq!(events.len(), 2, "DEBUG is left out");
        assert_eq!(events[1].0, "PX4 event [WARNING] event 2");
        assert_eq!(events[1].1, 5_000_002_000);
        assert_eq!(
            events[1].2,
            &Cite::Message {
                file: "f.ulg".into(),
                message: 32,
                offset: 320
            }
        );
        let rules: Vec<&Happening> = got.iter().filter(|h| h.kind == FAILSAFE_KIND).collect();
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[0].detail["failsafe_flags"],
            serde_json::json!(["gcs_connection_lost"])
        );
        assert_eq!(rules[0].detail["reason"], "No connection");
        assert_eq!(
            rules[0].detail["evidence"]["cause"][0]["citation"]["message"],
            20
        );
        assert!(!rules[0].detail.contains_key("state"));
        assert_eq!(rules[1].detail["state"], "warning");
    }

    #[test]
    fn a_failsafe_state_change_takes_its_findings_words_once() {
        let at = |message: u64| Cite::Message {
            file: "f.ulg".into(),
            message,
            offset: message * 10,
        };
        let mut entered = Happening::new(
            FAILSAFE_KIND,
            4_700_000_000,
            "Failsafe entered".into(),
            at(21),
        )
        .with("state", "entered")
        .state_change();
        entered.end_ns = Some(5_200_000_000);
        let unmatched = Happening::new(
            FAILSAFE_KIND,
            9_000_000_000,
            "Failsafe cleared".into(),
            at(40),
        )
        .with("state", "cleared")
        .state_change();
        let joined = join_failsafes(vec![entered, unmatched], from_report(&report()));
        let failsafes: Vec<&Happening> =
            joined.iter().filter(|h| h.kind == FAILSAFE_KIND).collect();
        assert_eq!(failsafes.len(), 3, "{failsafes:#?}");
        let e = failsafes[0];
        assert_eq!(e.title, "Failsafe entered at 5.20 s: No connection");
        assert_eq!((e.start_ns, e.end_ns), (4_700_000_000, Some(5_200_000_000)));
        assert_eq!(e.detail["state"], "entered");
        assert_eq!(
            e.detail["failsafe_flags"],
            serde_json::json!(["gcs_connection_lost"])
        );
        assert_eq!(failsafes[1].title, "Failsafe cleared");
        assert_eq!(failsafes[2].detail["state"], "warning");
        assert_eq!(failsafes[2].cite, at(30));
    }

    /// The air side's test log through the ingest: the failsafe state changes take the words of the
    /// `failsafe_entered` rule (its cause from failsafe_flags, the navigation state before and
    /// after), keeping their intervals, and are listed once.
    #[test]
    fn the_failsafes_are_worded_by_the_failsafe_entered_rule() {
        let bytes = log();
        let report =
            crate::ulog::ingest::ingest_reader(&bytes[..], "f.ulg", bytes.len() as u64, None, None)
                .unwrap();
        let mut air = AirObserver::new("f.ulg", &[]);
        let mut reader = SliceReader::new(&bytes);
        while let Some(item) = reader.next_record() {
            air.observe(&item.unwrap());
        }
        let observed = air.finish().happenings;
        let joined = join_failsafes(observed, from_report(&report));
        let failsafes: Vec<&Happening> =
            joined.iter().filter(|h| h.kind == FAILSAFE_KIND).collect();
        assert_eq!(failsafes.len(), 2, "{failsafes:#?}");
        let entered = failsafes[0];
        assert_eq!(
            entered.title,
            "Failsafe entered at 5.20 s: no PX4 failsafe event in the log; cause: gcs_connection_lost (since 5.10 s); nav_state 3 (Mission) → 5 (Return to Land)"
        );
        assert_eq!(
            (entered.start_ns, entered.end_ns),
            (4_000_000_000, Some(5_200_000_000)),
            "from the last status without it to the first with it"
        );
        assert_eq!(entered.detail["state"], "entered");
        assert_eq!(
            entered.detail["failsafe_flags"],
            serde_json::json!(["gcs_connection_lost"])
        );
        assert_eq!(
            entered.detail["evidence"]["cause"][0]["citation"]["topic"],
            "failsafe_flags"
        );
        assert!(failsafes[1]
            .title
            .starts_with("Failsafe cleared at 9.00 s after 3.8 s"));
        assert_eq!(failsafes[1].detail["state"], "cleared");
    }
}
