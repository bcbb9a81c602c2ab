//! The timeline's pieces: what one side recorded ([`Happening`], on that side's own clock), where
//! its evidence is ([`Cite`]), and the placed [`Entry`] with its UTC interval, its place on the
//! vehicle's boot clock and its bound, as one JSON line.
//!
//! Times are `i64` nanoseconds throughout: UTC since the Unix epoch, the boot clock since boot.

use serde::Serialize;
use serde_json::{Map, Value};

/// Nanoseconds in a millisecond and a second.
pub const MS: i64 = 1_000_000;
pub const SECOND: i64 = 1_000_000_000;

/// Which record an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Ground,
    Air,
}

/// Where an entry's evidence is: a line of a receive log or events file, a record of a `.tlog`,
/// or a flight-log message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Cite {
    Line {
        file: String,
        line: u64,
    },
    TlogRecord {
        file: String,
        offset: u64,
    },
    Message {
        file: String,
        message: u64,
        offset: u64,
    },
}

impl Cite {
    /// `receive.jsonl line 12`, `a.tlog byte 4,096`, `a.ulg message 88 (byte 4,096)`.
    pub fn short(&self) -> String {
        let name = |f: &str| {
            std::path::Path::new(f)
                .file_name()
                .map_or_else(|| f.to_string(), |n| n.to_string_lossy().into_owned())
        };
        match self {
            Cite::Line { file, line } => format!("{} line {line}", name(file)),
            Cite::TlogRecord { file, offset } => format!("{} byte {offset}", name(file)),
            Cite::Message {
                file,
                message,
                offset,
            } => format!("{} message {message} (byte {offset})", name(file)),
        }
    }
}

/// Something one side recorded, on its own clock (the boot clock for the air side, the record's
/// UTC for the ground side), before it is placed on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Happening {
    /// `telemetry_gap`, `arming`, `topic_stall`, ...
    pub kind: String,
    pub start_ns: i64,
    /// The end of an interval; `None` for an instant, or a gap still open at the end.
    pub end_ns: Option<i64>,
    pub title: String,
    pub cite: Cite,
    /// The evidence of the interval's end, when it is another record (a gap's next heartbeat).
    pub cite_end: Option<Cite>,
    /// Kind-specific keys, written after the common ones.
    pub detail: Map<String, Value>,
    /// A state change: it is shown at the interval's end, the first sample with the new state
    /// (the interval's start is the last sample that still showed the old one).
    pub at_end: bool,
}

impl Happening {
    pub fn new(kind: &str, start_ns: i64, title: String, cite: Cite) -> Happening {
        Happening {
            kind: kind.to_string(),
            start_ns,
            end_ns: None,
            title,
            cite,
            cite_end: None,
            detail: Map::new(),
            at_end: false,
        }
    }

    /// Marks a state change (see [`Happening::at_end`]).
    pub fn state_change(mut self) -> Happening {
        self.at_end = true;
        self
    }

    /// The instant the happening is shown at.
    pub fn at_ns(&self) -> i64 {
        if self.at_end {
            self.last_ns()
        } else {
            self.start_ns
        }
    }

    pub fn ending(mut self, end_ns: i64) -> Happening {
        self.end_ns = Some(end_ns);
        self
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Happening {
        self.detail.insert(key.to_string(), value.into());
        self
    }

    /// The interval's last instant (its start for an instant).
    pub fn last_ns(&self) -> i64 {
        self.end_ns.unwrap_or(self.start_ns)
    }
}

/// A fact the flight log shows inside a ground gap, with its citation: no verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub kind: String,
    pub boot_ns: i64,
    pub title: String,
    pub cite: Cite,
}

/// One placed timeline entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub kind: String,
    pub side: Side,
    pub utc_start: Option<i64>,
    pub utc_end: Option<i64>,
    /// On the vehicle's boot clock; `None` when no anchor ties a ground record to it.
    pub boot_start: Option<i64>,
    pub boot_end: Option<i64>,
    /// How far the entry may be from where it is placed against the flight log's clock (the
    /// axis itself is UTC within the used anchor's bound).
    pub bound_ns: Option<i64>,
    pub title: String,
    pub cite: Cite,
    pub cite_end: Option<Cite>,
    pub detail: Map<String, Value>,
    /// Ground gaps only: what the flight log shows in the gap's window.
    pub in_window: Option<Vec<Fact>>,
    /// Shown at the interval's end (a state change), see [`Happening::at_end`].
    pub at_end: bool,
}

impl Entry {
    /// The UTC instant the entry is shown at, and its place on the boot clock.
    pub fn at(&self) -> (Option<i64>, Option<i64>) {
        if self.at_end {
            (
                self.utc_end.or(self.utc_start),
                self.boot_end.or(self.boot_start),
            )
        } else {
            (self.utc_start, self.boot_start)
        }
    }

    /// The JSON line's object: the common keys in a fixed order, then the kind's own.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("kind".into(), self.kind.clone().into());
        out.insert(
            "side".into(),
            serde_json::to_value(self.side).expect("enum"),
        );
        // The instant the entry stands for, and is sorted by.
        out.insert("utc".into(), utc_value(self.at().0));
        out.insert("utc_start".into(), utc_value(self.utc_start));
        out.insert("utc_end".into(), utc_value(self.utc_end));
        out.insert("boot_s".into(), seconds_value(self.boot_start));
        out.insert("boot_end_s".into(), seconds_value(self.boot_end));
        out.insert("bound_ms".into(), millis_value(self.bound_ns));
        out.insert("title".into(), self.title.clone().into());
        out.insert(
            "cite".into(),
            serde_json::to_value(&self.cite).expect("cite"),
        );
        if let Some(end) = &self.cite_end {
            out.insert("cite_end".into(), serde_json::to_value(end).expect("cite"));
        }
        for (k, v) in &self.detail {
            out.insert(k.clone(), v.clone());
        }
        if let Some(facts) = &self.in_window {
            let list = facts
                .iter()
                .map(|f| {
                    let mut m = Map::new();
                    m.insert("kind".into(), f.kind.clone().into());
                    m.insert("boot_s".into(), seconds_value(Some(f.boot_ns)));
                    m.insert("title".into(), f.title.clone().into());
                    m.insert("cite".into(), serde_json::to_value(&f.cite).expect("cite"));
                    Value::Object(m)
                })
                .collect();
            out.insert("in_window".into(), Value::Array(list));
        }
        Value::Object(out)
    }
}

/// RFC 3339 with microseconds and `Z`: the anchors' bounds go below the millisecond.
pub fn format_utc_us(utc_ns: i64) -> String {
    let seconds = utc_ns.div_euclid(SECOND);
    let subsec = utc_ns.rem_euclid(SECOND) as u32;
    match chrono::DateTime::from_timestamp(seconds, subsec) {
        Some(t) => t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        None => format!("{utc_ns}ns"),
    }
}

pub fn utc_value(utc_ns: Option<i64>) -> Value {
    utc_ns.map_or(Value::Null, |t| format_utc_us(t).into())
}

/// Seconds with microseconds (a boot-clock time), as a JSON number.
pub fn seconds_value(ns: Option<i64>) -> Value {
    ns.map_or(Value::Null, |t| rounded(t as f64 / SECOND as f64, 6).into())
}

/// Milliseconds with microseconds, as a JSON number.
pub fn millis_value(ns: Option<i64>) -> Value {
    ns.map_or(Value::Null, |t| rounded(t as f64 / MS as f64, 3).into())
}

fn rounded(v: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_writes_its_common_keys_first_in_order() {
        let mut detail = Map::new();
        detail.insert("sysid".into(), 4.into());
        let entry = Entry {
            kind: "telemetry_gap".into(),
            side: Side::Ground,
            utc_start: Some(1_790_260_323_912_000_000),
            utc_end: None,
            boot_start: Some(1_132_626_000_000),
            boot_end: None,
            bound_ns: Some(55 * MS),
            title: "t".into(),
            cite: Cite::Line {
                file: "r.jsonl".into(),
                line: 7,
            },
            cite_end: None,
            detail,
            in_window: Some(vec![]),
            at_end: false,
        };
        let json = entry.to_json();
        let keys = crate::test_support::json_keys(&json);
        assert_eq!(
            keys,
            [
                "kind",
                "side",
                "utc",
                "utc_start",
                "utc_end",
                "boot_s",
                "boot_end_s",
                "bound_ms",
                "title",
                "cite",
                "sysid",
                "in_window"
            ]
        );
        assert_eq!(json["utc_start"], "2026-09-24T14:32:03.912000Z");
        assert_eq!(json["boot_s"], 1132.626);
        assert_eq!(json["bound_ms"], 55.0);
        assert_eq!(json["cite"]["line"], 7);
        assert_eq!(entry.cite.short(), "r.jsonl line 7");
    }
}
