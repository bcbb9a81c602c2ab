//! PX4 events: the `event` topic's samples decoded with the definitions the log embeds, as
//! pyulog's `PX4Events().get_logged_events()` decodes them (same messages, same levels, same
//! events left out), each with the sample it came from.
//!
//! - `definitions`: `metadata_events` checked against `metadata_events_sha256`, decompressed and
//!   indexed;
//! - `message`: an event's text filled in from its arguments (enums, bitfields, units, tags);
//! - `number`: numbers written as libevents' Python parser writes them;
//! - `raw`: where the fields sit in an `event` sample.
//!
//! Pure: samples and bytes in, events out. A log without definitions says so; nothing is
//! fetched (pyulog would download PX4's latest definitions, which need not match the firmware
//! that wrote the log).

pub mod definitions;
pub mod message;
pub mod number;
pub mod raw;

pub use definitions::{Definitions, DefinitionsError};
pub use raw::{EventFields, RawEvent};

use serde::Serialize;

/// The topic PX4 logs events on.
pub const EVENT_TOPIC: &str = "event";
/// The information keys of the embedded definitions.
pub const DEFINITIONS_KEY: &str = "metadata_events";
pub const DEFINITIONS_SHA256_KEY: &str = "metadata_events_sha256";
/// The event group shown in logs; the others are health and arming-check reports that a
/// ground station folds into its own displays.
pub const SHOWN_GROUP: &str = "default";

/// Where an event (or a rule's evidence) is in the file.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Citation {
    pub topic: String,
    pub multi_id: u8,
    /// Message number (1-based after the file header).
    pub message: u64,
    /// Byte offset of the message's header.
    pub offset: u64,
}

/// One decoded event.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Event {
    /// Boot clock, microseconds (the sample's `timestamp`).
    pub timestamp: u64,
    /// `EMERGENCY` .. `DEBUG`, from the internal log level (the high nibble of `log_levels`).
    pub level: String,
    /// The message text, or `[Unknown event with ID N]`.
    pub message: String,
    /// The event's ID and, when defined, its name (`commander_failsafe_enter_generic_warn`).
    pub id: u32,
    pub name: Option<String>,
    #[serde(skip)]
    pub group: Option<String>,
    /// The definition's `type` (`append_health_and_arming_messages`, ...).
    #[serde(skip)]
    pub kind: Option<String>,
    #[serde(skip)]
    pub level_number: u8,
    pub citation: Citation,
}

/// Whether the log's own definitions were found and used.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DefinitionsReport {
    /// `embedded` (verified and used), `not_in_log`, or `unusable` (present but failing the
    /// check or not readable: events are then listed by ID).
    pub status: String,
    /// One sentence saying so.
    pub detail: String,
    /// What `metadata_events_sha256` says, when present.
    pub sha256: Option<String>,
    /// Events the definitions define.
    pub defined: usize,
    /// `event` samples in the log, and what became of them.
    pub samples: u64,
    pub shown: usize,
    /// Left out as pyulog leaves them out: health and arming-check groups.
    pub other_groups: usize,
    /// Left out: log levels 8 and 9 (protocol, disabled).
    pub not_logged_levels: usize,
    /// Samples beyond [`MAX_KEPT`] (counted, not decoded).
    pub not_kept: u64,
}

/// Raw event samples kept per log at most.
pub const MAX_KEPT: usize = 1 << 16;

/// The decoded events of one log: those shown (as pyulog lists them) and every decoded one,
/// health and arming-check reports included (for rules that cite them).
#[derive(Debug, Clone, Default)]
pub struct EventLog {
    pub shown: Vec<Event>,
    pub all: Vec<Event>,
}

/// Syslog name of a libevents log level.
pub fn level_name(level: u8) -> &'static str {
    match level {
        8 => "PROTOCOL",
        9 => "DISABLED",
        // The syslog levels, as ULog's own logged strings number them.
        n => crate::ulog::record::level_name(n),
    }
}

/// The definitions of a log, from the raw `metadata_events` bytes and the hash text (either
/// may be missing), with the sentence the report gives.
pub fn load_definitions(
    compressed: Option<&[u8]>,
    sha256: Option<&str>,
) -> (Option<Definitions>, DefinitionsReport) {
    let mut report = DefinitionsReport {
        status: "not_in_log".into(),
        detail: String::new(),
        sha256: sha256.map(str::to_string),
        defined: 0,
        samples: 0,
        shown: 0,
        other_groups: 0,
        not_logged_levels: 0,
        not_kept: 0,
    };
    let (Some(bytes), Some(hash)) = (compressed, sha256) else {
        report.detail = match compressed {
            None => format!("The log embeds no event definitions (no {DEFINITIONS_KEY}): events are listed by ID. Nothing is fetched."),
            Some(_) => format!("The log embeds event definitions without {DEFINITIONS_SHA256_KEY} to check them against: they are not used, and events are listed by ID."),
        };
        if compressed.is_some() {
            report.status = "unusable".into();
        }
        return (None, report);
    };
    match Definitions::load(bytes, hash) {
        Ok(defs) => {
            report.status = "embedded".into();
            report.defined = defs.len();
            report.detail = format!(
                "Decoded with the {} event definitions the log embeds ({} compressed bytes, SHA-256 verified).",
                defs.len(),
                bytes.len()
            );
            (Some(defs), report)
        }
        Err(e) => {
            report.status = "unusable".into();
            report.detail = format!(
                "The log's event definitions cannot be used: {e}. Events are listed by ID."
            );
            (None, report)
        }
    }
}

/// Decodes raw samples (in file order) with `defs`, filling in the report's counts.
pub fn decode(
    raw: &[RawEvent],
    defs: Option<&Definitions>,
    report: &mut DefinitionsReport,
) -> EventLog {
    let mut log = EventLog::default();
    for r in raw {
        let level = (r.log_levels >> 4) & 0xf;
        if level >= 8 {
            report.not_logged_levels += 1;
            continue;
        }
        let def = defs.and_then(|d| d.event(r.id).map(|e| (d, e)));
        let text = match def {
            None => format!("[Unknown event with ID {}]", r.id),
            Some((d, e)) => match message::arguments(d, e, &r.arguments) {
                Ok(args) => message::format(&e.message, &args, message::PROFILE),
                Err(why) => format!("[Event {} (ID {}): {why}]", e.name, r.id),
            },
        };
        let event = Event {
            timestamp: r.timestamp,
            level: level_name(level).to_string(),
            message: text,
            id: r.id,
            name: def.map(|(_, e)| e.name.clone()),
            group: def.map(|(_, e)| e.group.clone()),
            kind: def.and_then(|(_, e)| e.kind.clone()),
            level_number: level,
            citation: Citation {
                topic: EVENT_TOPIC.to_string(),
                multi_id: r.multi_id,
                message: r.message,
                offset: r.offset,
            },
        };
        let shown = event.group.as_deref().is_none_or(|g| g == SHOWN_GROUP);
        if shown {
            log.shown.push(event.clone());
        } else {
            report.other_groups += 1;
        }
        log.all.push(event);
    }
    report.shown = log.shown.len();
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(id: u32, levels: u8, args: &[u8]) -> RawEvent {
        let mut arguments = args.to_vec();
        arguments.resize(25, 0);
        RawEvent {
            timestamp: 5,
            id,
            sequence: Some(1),
            log_levels: levels,
            arguments,
            multi_id: 0,
            message: 9,
            offset: 99,
        }
    }

    #[test]
    fn without_definitions_events_are_listed_by_id_and_it_says_so() {
        let (defs, mut report) = load_definitions(None, None);
        assert!(defs.is_none());
        assert_eq!(report.status, "not_in_log");
        assert!(report.detail.contains("Nothing is fetched"));
        let log = decode(
            &[raw(26266355, 0x66, &[]), raw(1, 0x88, &[])],
            None,
            &mut report,
        );
        assert_eq!(log.shown.len(), 1);
        assert_eq!(log.shown[0].message, "[Unknown event with ID 26266355]");
        assert_eq!(log.shown[0].level, "INFO");
        assert_eq!(report.not_logged_levels, 1, "level 8 is not a logged level");
    }

    #[test]
    fn defined_events_are_filled_in_and_other_groups_left_out() {
        let doc = serde_json::json!({"version": 2, "components": {"1": {"namespace": "px4",
            "event_groups": {
                "default": {"events": {"7": {"name": "takeoff", "message": "Takeoff at {1:.1m}",
                    "arguments": [{"name": "a", "type": "float"}]}}},
                "health": {"events": {"8": {"name": "h", "message": "health"}}}}}}});
        let defs = Definitions::from_json(&doc).unwrap();
        let (_, mut report) = load_definitions(None, None);
        let log = decode(
            &[
                raw((1 << 24) | 7, 0x44, &2.25f32.to_le_bytes()),
                raw((1 << 24) | 8, 0x44, &[]),
            ],
            Some(&defs),
            &mut report,
        );
        assert_eq!(log.shown.len(), 1);
        assert_eq!(log.shown[0].message, "Takeoff at 2.2 m");
        assert_eq!(log.shown[0].level, "WARNING");
        assert_eq!(log.shown[0].name.as_deref(), Some("takeoff"));
        assert_eq!(log.all.len(), 2);
        assert_eq!(report.other_groups, 1);
        assert_eq!(log.shown[0].citation.offset, 99);
    }
}
