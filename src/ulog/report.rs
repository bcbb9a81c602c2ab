//! The ingest report: one JSON document per log. Its schema is documented in `docs/ulog.md`.
//!
//! The top level always has `file`, `status`, `reason`, `topics`, `dropouts`, `gps_anchor` and
//! `findings`. A quarantined or rejected log has empty lists and a null anchor: nothing from it
//! is shown as complete.

use super::events::{DefinitionsReport, Event};
use super::gps::GpsAnchor;
use super::modes::ModeChange;
use super::profile::ExpectedTopics;
use super::rules::{RuleFinding, RuleOutcome};
use super::value::Value;
use serde::Serialize;
use std::collections::BTreeMap;

/// The first line of validation: the format and version.
pub const MAGIC_VERIFIED: &str = "Magic bytes verified";
/// The reason an encrypted log or key file is rejected.
pub const ENCRYPTED_REASON: &str =
    "The flight log is encrypted. Foxborne does not decrypt logs. Import the decrypted .ulg exported from your key holder.";
/// Title of every `log_dropout` finding.
pub const DROPOUT_TITLE: &str = "Observed: flight log has a dropout";
/// Dropouts at least this long become findings.
pub const DROPOUT_FINDING_MS: u16 = 50;
/// A topic stalls when no sample arrives for this many median periods.
pub const STALL_FACTOR: u64 = 5;
/// Topics that get no `topic_stall`: PX4 publishes them when something happens (an event, a
/// command and its acknowledgement, home set or moved, a mission result) or in bursts (the
/// corpus's `task_stack_info` comes in back-to-back pairs once a second), so their median period
/// is the spacing inside a burst and says nothing about when the next sample is due: on the
/// corpus, `event` alone gave 46 stalls of up to 16 million median periods.
pub const NOT_PERIODIC_TOPICS: [&str; 6] = [
    "event",
    "vehicle_command",
    "vehicle_command_ack",
    "home_position",
    "mission_result",
    "task_stack_info",
];

/// What became of a log (its exit code is in the verbs' table, `crate::cmd::Exit`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Complete,
    Quarantined,
    Rejected,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub file: String,
    pub status: Status,
    pub reason: Option<String>,
    /// `["PX4 ULog, version 1", "Magic bytes verified"]` once the magic matched.
    pub validation: Vec<String>,
    pub size_bytes: u64,
    /// The file's SHA-256 in lower-case hex (`ulog ingest` always sets it).
    pub sha256: Option<String>,
    pub header: Option<HeaderReport>,
    /// Where the file ends inside a message (quarantined logs).
    pub truncation: Option<Truncation>,
    /// Malformed messages (quarantined logs), the first few.
    pub malformed: Vec<Cited>,
    pub quarantine: Option<QuarantineCopy>,
    pub messages: u64,
    pub info: BTreeMap<String, Value>,
    /// Multi-information values (`M`), continuations joined; one list entry per value.
    pub multi_info: BTreeMap<String, Vec<Value>>,
    pub topics: Vec<TopicReport>,
    /// Subscribed topics with no sample in the log.
    pub topics_without_samples: Vec<String>,
    pub expected_topics: Option<ExpectedTopics>,
    pub parameters: Parameters,
    pub logged_messages: Vec<LoggedMessage>,
    pub tagged_logged_messages: Vec<LoggedMessage>,
    pub dropouts: Vec<Dropout>,
    pub gps_anchor: Option<GpsAnchor>,
    pub findings: Vec<Finding>,
    pub appended_data: Vec<AppendedData>,
    /// PX4 events decoded with the log's own definitions, as pyulog lists them.
    pub events: Vec<Event>,
    /// Whether the log embeds event definitions, and what became of its event samples.
    pub event_definitions: Option<DefinitionsReport>,
    /// Each rule: whether it was evaluated (and why not), what it read, its thresholds.
    pub rules: Vec<RuleOutcome>,
    /// The state band: changes of `vehicle_status` nav_state, arming and failsafe flag.
    pub flight_modes: Vec<ModeChange>,
}

impl Report {
    /// The message numbers of the samples whose timestamps are not believed (the
    /// `timestamp_outlier` findings): plots and timelines leave them out.
    pub fn outlier_messages(&self) -> Vec<u64> {
        self.findings
            .iter()
            .filter(|f| f.kind == "timestamp_outlier")
            .map(|f| f.message)
            .collect()
    }

    /// An empty report for `file` with a status and reason; the caller fills in the rest.
    pub fn empty(file: &str, status: Status, reason: Option<String>) -> Report {
        Report {
            file: file.to_string(),
            status,
            reason,
            validation: Vec::new(),
            size_bytes: 0,
            sha256: None,
            header: None,
            truncation: None,
            malformed: Vec::new(),
            quarantine: None,
            messages: 0,
            info: BTreeMap::new(),
            multi_info: BTreeMap::new(),
            topics: Vec::new(),
            topics_without_samples: Vec::new(),
            expected_topics: None,
            parameters: Parameters::default(),
            logged_messages: Vec::new(),
            tagged_logged_messages: Vec::new(),
            dropouts: Vec::new(),
            gps_anchor: None,
            findings: Vec::new(),
            appended_data: Vec::new(),
            events: Vec::new(),
            event_definitions: None,
            rules: Vec::new(),
            flight_modes: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HeaderReport {
    pub version: u8,
    /// Logging start on the boot clock, microseconds.
    pub start_timestamp: u64,
    /// Whether the log has a flag-bits (`B`) message; version 0 logs do not.
    pub flag_bits: bool,
    pub compat_flags: [u8; 8],
    pub incompat_flags: [u8; 8],
    pub appended_offsets: [u64; 3],
    pub formats: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Truncation {
    /// Where the message the file ends inside starts.
    pub offset: u64,
    /// `data_message`, `message_header`, `definitions`, `file_header`, `zero_run`, `message`.
    pub inside: String,
    pub description: String,
    /// File size.
    pub end: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct QuarantineCopy {
    pub copy: String,
    pub reason_file: String,
}

/// Something in the file, cited by message number and byte offset.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Cited {
    pub message: u64,
    pub offset: u64,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TopicReport {
    pub topic: String,
    pub multi_id: u8,
    pub msg_id: u16,
    pub samples: u64,
    pub first_timestamp: Option<u64>,
    pub last_timestamp: Option<u64>,
    /// Samples per second over the span from first to last sample.
    pub rate_hz: Option<f64>,
    /// Median time between samples (about 1.5 % resolution).
    pub median_period_ms: Option<f64>,
    pub fields: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Parameters {
    /// Values at log start (`P` in the definitions section).
    pub initial: BTreeMap<String, Value>,
    /// `P` messages in the data section.
    pub changes: Vec<ParameterChange>,
    /// `Q` messages by kind: `system`, `current_setup`.
    pub defaults: BTreeMap<String, BTreeMap<String, Value>>,
    pub failsafe: Vec<FailsafeParameter>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ParameterChange {
    /// The latest data timestamp before the change (the log's clock at that point).
    pub timestamp: u64,
    pub name: String,
    pub value: Value,
    pub message: u64,
    pub offset: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FailsafeParameter {
    pub name: String,
    pub description: String,
    /// Value at log start, or null with status `Not logged`.
    pub value: Option<Value>,
    pub status: String,
    /// Values it changed to during the log.
    pub changes: Vec<Value>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LoggedMessage {
    /// The level byte as written (PX4: ASCII '0'..'7', so 54 is INFO).
    pub level: u8,
    pub level_name: String,
    pub tag: Option<u16>,
    pub timestamp: u64,
    pub text: String,
    pub message: u64,
    pub offset: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Dropout {
    /// The latest data timestamp before the dropout.
    pub timestamp: u64,
    pub duration_ms: u16,
    pub message: u64,
    pub offset: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    /// `log_dropout`, `topic_stall`, `timestamp_outlier`, `unknown_message_type`, or a rule's
    /// name (`failsafe_entered`, `gps_quality_drop`, ...).
    pub kind: String,
    pub title: String,
    /// For a dropout: the topic of the last sample before it.
    pub topic: Option<String>,
    pub multi_id: Option<u8>,
    pub timestamp: u64,
    pub message: u64,
    pub offset: u64,
    pub duration_ms: f64,
    /// For a stall: the topic's median period and when it resumed (null: not before the end).
    pub median_period_ms: Option<f64>,
    pub resumed_timestamp: Option<u64>,
    /// A rule's finding: the values that crossed (each cited), thresholds, cause and reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<RuleFinding>,
}

impl Finding {
    /// The report's form of a rule's finding: `resumed_timestamp` is when it cleared.
    pub fn from_rule(f: RuleFinding) -> Finding {
        Finding {
            kind: f.rule.to_string(),
            title: f.title.clone(),
            topic: Some(f.citation.topic.clone()),
            multi_id: Some(f.citation.multi_id),
            timestamp: f.timestamp,
            message: f.citation.message,
            offset: f.citation.offset,
            duration_ms: f.duration_ms,
            median_period_ms: None,
            resumed_timestamp: f.end_timestamp,
            evidence: Some(f),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AppendedData {
    pub offset: u64,
    /// Bytes of unfinished main-log data between the last whole message and the appended data.
    pub skipped_bytes: u64,
}
