//! What the flight log's samples say of the sortie, on the boot clock, each with the message
//! number and byte offset of its evidence: arming and disarming and flight modes
//! (`vehicle_status`), failsafes entered and cleared (`vehicle_status.failsafe`), the
//! `failsafe_flags` conditions that became true or false, takeoff and landing
//! (`vehicle_land_detected`), PX4's own view of its links (`telemetry_status`: GCS and
//! onboard-controller heartbeats), and commands received (`vehicle_command`).
//!
//! [`AirObserver`] reads the records the ULog reader yields (the same reader `ulog ingest` uses:
//! no second reader), and `vehicle_status` and `failsafe_flags` through the decoder the flight
//! rules read them with ([`crate::ulog::signals`]: one meaning across PX4 releases). A state
//! change is an interval: from the last sample that still showed the old state to the first that
//! shows the new one. What the ingest report adds (messages, PX4 events, findings, and the
//! failsafes' causes and reasons) is in [`super::reported`].

use super::entry::{Cite, Happening, SECOND};
use super::px4;
use crate::ulog::format::BasicType;
use crate::ulog::record::{route_subscription, Located, Record};
use crate::ulog::signals::{Kind, Signal, SignalDecoder, SignalSample, Source, StatusSample};
use crate::ulog::value::{decode_basic, Value};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The kind of the failsafe entries: they are the `failsafe_entered` rule's findings, placed as
/// the state changes they are (see [`super::reported::join_failsafes`]).
pub const FAILSAFE_KIND: &str = "failsafe_entered";

/// The topics read here field by field (`vehicle_status` and `failsafe_flags` come decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Watched {
    Land,
    Telemetry,
    Command,
}

impl Watched {
    fn of(topic: &str) -> Option<Watched> {
        Some(match topic {
            "vehicle_land_detected" => Watched::Land,
            "telemetry_status" => Watched::Telemetry,
            "vehicle_command" => Watched::Command,
            _ => return None,
        })
    }

    /// The fields read, by name.
    fn fields(self) -> &'static [&'static str] {
        match self {
            Watched::Land => &["landed"],
            Watched::Telemetry => &["heartbeat_type_gcs", "heartbeat_type_onboard_controller"],
            Watched::Command => &[
                "command",
                "source_system",
                "source_component",
                "target_system",
                "from_external",
            ],
        }
    }
}

/// Where one subscription's fields sit.
#[derive(Debug, Clone)]
struct Route {
    watched: Watched,
    multi_id: u8,
    /// Name, type and offset of each field read (absent ones are left out).
    fields: Vec<(String, BasicType, usize)>,
}

/// The data samples in one second of the boot clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Second {
    count: u64,
    first: (i64, u64, u64),
    last: (i64, u64, u64),
}

/// That the log kept running over a span: how many samples, the first and last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Running {
    pub samples: u64,
    /// Boot time, message number and byte offset.
    pub first: (i64, u64, u64),
    pub last: (i64, u64, u64),
}

/// One topic instance's last sample: its boot time and the values read.
type Previous = (i64, Vec<Option<Value>>);

/// What the flight log's data samples say, read record by record.
#[derive(Debug, Default)]
pub struct AirObserver {
    file: String,
    routes: Vec<Option<Route>>,
    previous: HashMap<(Watched, u8), Previous>,
    /// `vehicle_status` and `failsafe_flags`, decoded as the rules decode them.
    signals: SignalDecoder,
    /// Each decoded source's last sample: its boot time and signal.
    previous_signal: HashMap<usize, (i64, Signal)>,
    happenings: Vec<Happening>,
    seconds: BTreeMap<i64, Second>,
    skip: HashSet<u64>,
}

/// Everything the air side gives the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct AirFacts {
    pub file: String,
    pub happenings: Vec<Happening>,
    seconds: BTreeMap<i64, Second>,
}

impl AirFacts {
    pub fn new(file: &str, happenings: Vec<Happening>) -> AirFacts {
        AirFacts {
            file: file.to_string(),
            happenings,
            seconds: BTreeMap::new(),
        }
    }

    /// The data samples logged between two boot times, when there are any.
    pub fn running(&self, from_ns: i64, to_ns: i64) -> Option<Running> {
        let mut out: Option<Running> = None;
        for s in self
            .seconds
            .range(from_ns.div_euclid(SECOND)..=to_ns.div_euclid(SECOND))
            .map(|(_, s)| s)
        {
            let r = out.get_or_insert(Running {
                samples: 0,
                first: s.first,
                last: s.last,
            });
            r.samples += s.count;
            r.last = s.last;
        }
        out
    }

    /// The first and last data sample of the log, on the boot clock.
    pub fn span(&self) -> Option<(i64, i64)> {
        let first = self.seconds.values().next()?.first.0;
        let last = self.seconds.values().next_back()?.last.0;
        Some((first, last))
    }
}

fn flag(v: &Option<Value>) -> Option<bool> {
    v.as_ref().and_then(Value::as_i64).map(|n| n != 0)
}

fn number(v: &Option<Value>) -> Option<u64> {
    v.as_ref()
        .and_then(Value::as_i64)
        .and_then(|n| u64::try_from(n).ok())
}

/// A change: from the last sample showing the old value (`since`) to this one at `t`; at the
/// first sample (`since` is `None`), the state the log starts in.
fn change(
    kind: &str,
    title: String,
    state: serde_json::Value,
    since: Option<i64>,
    t: i64,
    instance: u8,
    cite: &Cite,
) -> Happening {
    let mut h = Happening::new(kind, since.unwrap_or(t), title, cite.clone())
        .with("state", state)
        .with("instance", instance)
        .state_change();
    h.end_ns = Some(t);
    if since.is_none() {
        h = h.with("first_sample", true);
    }
    h
}

/// `title`, or `title at the first sample`.
fn at_first(title: &str, first: bool) -> String {
    if first {
        format!("{title} at the first sample")
    } else {
        title.to_string()
    }
}

/// Arming, flight mode and failsafe changes between two `vehicle_status` samples.
fn status_changes(
    source: &Source,
    before: Option<(i64, StatusSample)>,
    now: &StatusSample,
    t: i64,
    cite: &Cite,
) -> Vec<Happening> {
    let since = before.map(|(t0, _)| t0);
    let was = before.map(|(_, s)| s);
    let first = since.is_none();
    let instance = source.multi_id;
    let mut out = Vec::new();
    let old_arming = was.map(|s| u64::from(s.arming_state));
    let arming = u64::from(now.arming_state);
    if Some(arming) != old_arming {
        let title = if now.armed() {
            "Armed".to_string()
        } else if was.is_some_and(|s| s.armed()) {
            format!(
                "Disarmed (arming_state {arming}, {})",
                px4::arming_state_name(arming)
            )
        } else {
            format!("Arming state {arming} ({})", px4::arming_state_name(arming))
        };
        out.push(change(
            "arming",
            at_first(&title, first),
            arming.into(),
            since,
            t,
            instance,
            cite,
        ));
    }
    if was.map(|s| s.nav_state) != Some(now.nav_state) {
        out.push(change(
            "flight_mode",
            at_first(&px4::flight_mode_title(now.nav_state), first),
            now.nav_state.into(),
            since,
            t,
            instance,
            cite,
        ));
    }
    // The rule reads the failsafe of instance 0 only; so do its entries here.
    let old_failsafe = was.and_then(|s| s.failsafe);
    match now.failsafe {
        Some(true) if old_failsafe != Some(true) && instance == 0 => out.push(change(
            FAILSAFE_KIND,
            at_first("Failsafe entered", first),
            "entered".into(),
            since,
            t,
            instance,
            cite,
        )),
        Some(false) if old_failsafe == Some(true) && instance == 0 => out.push(change(
            FAILSAFE_KIND,
            "Failsafe cleared".to_string(),
            "cleared".into(),
            since,
            t,
            instance,
            cite,
        )),
        _ => {}
    }
    out
}

/// The `failsafe_flags` conditions that became true and false between two samples.
fn flag_changes(
    source: &Source,
    before: Option<(i64, u64)>,
    mask: u64,
    t: i64,
    cite: &Cite,
) -> Vec<Happening> {
    let since = before.map(|(t0, _)| t0);
    let old = before.map_or(0, |(_, m)| m);
    let names = |bits: u64| -> Vec<String> {
        source
            .flags
            .iter()
            .enumerate()
            .filter(|(i, _)| bits & (1 << i) != 0)
            .map(|(_, n)| n.clone())
            .collect()
    };
    let mut out = Vec::new();
    for (names, value) in [(names(mask & !old), true), (names(old & !mask), false)] {
        if names.is_empty() {
            continue;
        }
        let title = if since.is_none() {
            format!(
                "failsafe_flags true at the first sample: {}",
                names.join(", ")
            )
        } else {
            format!("failsafe_flags: {} became {value}", names.join(", "))
        };
        out.push(
            change(
                "failsafe_flag",
                title,
                value.to_string().into(),
                since,
                t,
                source.multi_id,
                cite,
            )
            .with("fields", names),
        );
    }
    out
}

/// A decoded `vehicle_status` or `failsafe_flags` sample: the changes since the source's last.
fn signal_changes(
    source: &Source,
    before: Option<(i64, Signal)>,
    sample: &SignalSample,
    t: i64,
    cite: &Cite,
) -> Vec<Happening> {
    match (source.kind, &sample.signal) {
        (Kind::Status, Signal::Status(now)) => {
            let before = before.and_then(|(t0, s)| match s {
                Signal::Status(s) => Some((t0, s)),
                _ => None,
            });
            status_changes(source, before, now, t, cite)
        }
        (Kind::FailsafeFlags, Signal::Flags(mask)) => {
            let before = before.and_then(|(t0, s)| match s {
                Signal::Flags(m) => Some((t0, m)),
                _ => None,
            });
            flag_changes(source, before, *mask, t, cite)
        }
        _ => Vec::new(),
    }
}

impl AirObserver {
    /// An observer of the log `file`; samples whose message number is in `skip` (the report's
    /// timestamp outliers) are not believed and not counted.
    pub fn new(file: &str, skip: &[u64]) -> Self {
        AirObserver {
            file: file.to_string(),
            skip: skip.iter().copied().collect(),
            ..AirObserver::default()
        }
    }

    pub fn observe(&mut self, located: &Located<'_>) {
        match &located.record {
            Record::Subscription {
                subscription,
                formats,
            } => {
                route_subscription(
                    &mut self.routes,
                    subscription,
                    formats,
                    |s| Watched::of(&s.topic),
                    |watched, flat| {
                        let fields = flat
                            .into_iter()
                            .filter(|f| watched.fields().contains(&f.name.as_str()))
                            .map(|f| (f.name, f.ty, f.offset))
                            .collect();
                        Some(Route {
                            watched,
                            multi_id: subscription.multi_id,
                            fields,
                        })
                    },
                );
            }
            Record::Data(sample) => {
                let Some(ts) = sample.timestamp else {
                    return;
                };
                if self.skip.contains(&located.message) {
                    return;
                }
                let t = ts as i64 * 1000;
                let at = (t, located.message, located.offset);
                self.seconds
                    .entry(t.div_euclid(SECOND))
                    .and_modify(|s| {
                        s.count += 1;
                        s.last = at;
                    })
                    .or_insert(Second {
                        count: 1,
                        first: at,
                        last: at,
                    });
                if let Some(Some(route)) = self.routes.get(usize::from(sample.subscription.msg_id))
                {
                    let route = route.clone();
                    let values: Vec<Option<Value>> = route
                        .fields
                        .iter()
                        .map(|(_, ty, offset)| {
                            sample
                                .payload
                                .get(*offset..offset + ty.size())
                                .map(|b| decode_basic(*ty, b))
                        })
                        .collect();
                    let cite = self.cite(located);
                    let key = (route.watched, route.multi_id);
                    let before = self.previous.insert(key, (t, values.clone()));
                    self.sample(&route, before, t, &values, cite);
                }
            }
            _ => {}
        }
        if self.signals.observe(located).is_empty() {
            return;
        }
        let cite = self.cite(located);
        for s in self.signals.last() {
            let source = &self.signals.sources()[s.source];
            let t = s.timestamp as i64 * 1000;
            let before = self.previous_signal.insert(s.source, (t, s.signal));
            self.happenings
                .extend(signal_changes(source, before, s, t, &cite));
        }
    }

    fn cite(&self, located: &Located<'_>) -> Cite {
        Cite::Message {
            file: self.file.clone(),
            message: located.message,
            offset: located.offset,
        }
    }

    fn sample(
        &mut self,
        route: &Route,
        before: Option<Previous>,
        t: i64,
        values: &[Option<Value>],
        cite: Cite,
    ) {
        let named = |name: &str| {
            route
                .fields
                .iter()
                .position(|(n, _, _)| n == name)
                .and_then(|i| values[i].clone())
        };
        let was = |name: &str| {
            let i = route.fields.iter().position(|(n, _, _)| n == name)?;
            before.as_ref().map(|(_, v)| v[i].clone())
        };
        let since = before.as_ref().map(|(t0, _)| *t0);
        let change = |kind: &str, title: String, state: serde_json::Value| {
            change(kind, title, state, since, t, route.multi_id, &cite)
        };
        let mut out: Vec<Happening> = Vec::new();
        match route.watched {
            Watched::Land => {
                let landed = flag(&named("landed"));
                let old = was("landed").and_then(|v| flag(&v));
                if landed.is_some() && landed != old {
                    let (title, state) = match (landed == Some(true), since.is_none()) {
                        (true, true) => ("Landed at the first sample", "landed"),
                        (false, true) => ("In the air at the first sample", "in_air"),
                        (true, false) => ("Landed", "landed"),
                        (false, false) => ("Takeoff: left the ground", "in_air"),
                    };
                    let kind = if state == "landed" {
                        "landing"
                    } else {
                        "takeoff"
                    };
                    out.push(change(kind, title.to_string(), state.into()));
                }
            }
            Watched::Telemetry => {
                for (field, who) in [
                    ("heartbeat_type_gcs", "GCS"),
                    ("heartbeat_type_onboard_controller", "onboard controller"),
                ] {
                    let now = flag(&named(field));
                    let old = was(field).and_then(|v| flag(&v));
                    if now.is_none() || now == old {
                        continue;
                    }
                    let instance = route.multi_id;
                    let heard = now == Some(true);
                    let (title, state) = if since.is_none() {
                        let (a, state) = if heard {
                            ("a", "present")
                        } else {
                            ("no", "absent")
                        };
                        let title = format!("PX4's MAVLink instance {instance} hears {a} {who} heartbeat at the first sample");
                        (title, state)
                    } else {
                        let state = if heard { "regained" } else { "lost" };
                        let title = format!(
                            "PX4's MAVLink instance {instance} {state} the {who} heartbeat"
                        );
                        (title, state)
                    };
                    out.push(
                        change("telemetry_status", title, state.into()).with("heartbeat", field),
                    );
                }
            }
            Watched::Command => {
                let command = number(&named("command")).unwrap_or(0);
                let source = number(&named("source_system"));
                let component = number(&named("source_component"));
                let external = flag(&named("from_external"));
                let title = format!(
                    "Command {} received{}{}",
                    px4::command_name(command),
                    match (source, component) {
                        (Some(s), Some(c)) => format!(" from system {s}, component {c}"),
                        (Some(s), None) => format!(" from system {s}"),
                        _ => String::new(),
                    },
                    if external == Some(false) {
                        " (internal)"
                    } else {
                        ""
                    }
                );
                let mut h = Happening::new("command", t, title, cite.clone())
                    .with("command", command)
                    .with(
                        "source_system",
                        source.map_or(serde_json::Value::Null, Into::into),
                    )
                    .with(
                        "source_component",
                        component.map_or(serde_json::Value::Null, Into::into),
                    )
                    .with(
                        "target_system",
                        number(&named("target_system")).map_or(serde_json::Value::Null, Into::into),
                    );
                if let Some(e) = external {
                    h = h.with("from_external", e);
                }
                out.push(h);
            }
        }
        self.happenings.append(&mut out);
    }

    pub fn finish(self) -> AirFacts {
        AirFacts {
            file: self.file,
            happenings: self.happenings,
            seconds: self.seconds,
        }
    }
}

/// The air side's test log, shared with the report side's tests.
#[cfg(test)]
pub(super) mod testing {
    use crate::ulog::writer::UlogWriter;

    fn status(ts: u64, arming: u8, nav: u8, failsafe: bool) -> Vec<u8> {
        let mut p = ts.to_le_bytes().to_vec();
        p.extend([arming, nav, u8::from(failsafe)]);
        p
    }

    fn flags(ts: u64, gcs_lost: bool, offboard_lost: bool) -> Vec<u8> {
        let mut p = ts.to_le_bytes().to_vec();
        p.extend([u8::from(gcs_lost), u8::from(offboard_lost)]);
        p
    }

    fn telemetry(ts: u64, gcs: bool) -> Vec<u8> {
        let mut p = ts.to_le_bytes().to_vec();
        p.extend([u8::from(gcs), 0]);
        p
    }

    fn command(ts: u64, cmd: u32, source: u8) -> Vec<u8> {
        let mut p = ts.to_le_bytes().to_vec();
        p.extend(cmd.to_le_bytes());
        p.extend([source, 190, 1, 1]);
        p
    }

    /// A small log with each watched topic: arms, changes mode, loses the GCS, fails safe.
    pub(in crate::sortie) fn log() -> Vec<u8> {
        let mut w = UlogWriter::new(Vec::new(), 1_000_000).unwrap();
        w.format("vehicle_status:uint64_t timestamp;uint8_t arming_state;uint8_t nav_state;bool failsafe;").unwrap();
        w.format("failsafe_flags:uint64_t timestamp;bool gcs_connection_lost;bool offboard_control_signal_lost;").unwrap();
        w.format("telemetry_status:uint64_t timestamp;bool heartbeat_type_gcs;bool heartbeat_type_onboard_controller;").unwrap();
        w.format("vehicle_command:uint64_t timestamp;uint32_t command;uint8_t source_system;uint8_t source_component;uint8_t target_system;bool from_external;").unwrap();
        w.subscribe(0, 1, "vehicle_status").unwrap();
        w.subscribe(0, 2, "failsafe_flags").unwrap();
        w.subscribe(0, 3, "telemetry_status").unwrap();
        w.subscribe(0, 4, "vehicle_command").unwrap();
        w.data(1, &status(2_000_000, 1, 2, false)).unwrap();
        w.data(3, &telemetry(2_000_000, true)).unwrap();
        w.data(2, &flags(2_000_000, false, false)).unwrap();
        w.data(1, &status(3_000_000, 2, 2, false)).unwrap();
        w.data(4, &command(3_500_000, 176, 255)).unwrap();
        w.data(1, &status(4_000_000, 2, 3, false)).unwrap();
        w.data(3, &telemetry(5_000_000, false)).unwrap();
        w.data(2, &flags(5_100_000, true, false)).unwrap();
        w.data(1, &status(5_200_000, 2, 5, true)).unwrap();
        w.data(1, &status(9_000_000, 1, 5, false)).unwrap();
        w.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::log;
    use super::*;
    use crate::ulog::SliceReader;

    #[test]
    fn state_changes_commands_and_failsafes_at_their_samples() {
        let bytes = log();
        let mut air = AirObserver::new("f.ulg", &[]);
        let mut reader = SliceReader::new(&bytes);
        while let Some(item) = reader.next_record() {
            air.observe(&item.unwrap());
        }
        let facts = air.finish();
        let titles: Vec<(&str, &str)> = facts
            .happenings
            .iter()
            .map(|h| (h.kind.as_str(), h.title.as_str()))
            .collect();
        assert_eq!(
            titles,
            [
                ("arming", "Arming state 1 (disarmed) at the first sample"),
                ("flight_mode", "Flight mode Position (nav_state 2) at the first sample"),
                (
                    "telemetry_status",
                    "PX4's MAVLink instance 0 hears a GCS heartbeat at the first sample"
                ),
                (
                    "telemetry_status",
                    "PX4's MAVLink instance 0 hears no onboard controller heartbeat at the first sample"
                ),
                ("arming", "Armed"),
                (
                    "command",
                    "Command DO_SET_MODE (176) received from system 255, component 190"
                ),
                ("flight_mode", "Flight mode Mission (nav_state 3)"),
                ("telemetry_status", "PX4's MAVLink instance 0 lost the GCS heartbeat"),
                ("failsafe_flag", "failsafe_flags: gcs_connection_lost became true"),
                ("flight_mode", "Flight mode Return to Land (nav_state 5)"),
                (FAILSAFE_KIND, "Failsafe entered"),
                ("arming", "Disarmed (arming_state 1, disarmed)"),
                (FAILSAFE_KIND, "Failsafe cleared"),
            ]
        );
        let armed = &facts.happenings[4];
        assert_eq!(
            (armed.start_ns, armed.end_ns),
            (2_000_000_000, Some(3_000_000_000))
        );
        let Cite::Message { message, .. } = &armed.cite else {
            panic!()
        };
        assert_eq!(
            *message, 12,
            "after 4 formats, 4 subscriptions and 3 samples"
        );
        let running = facts.running(4_000_000_000, 5_999_999_999).unwrap();
        assert_eq!(running.samples, 4);
        assert_eq!(running.first.0, 4_000_000_000);
        assert_eq!(facts.span(), Some((2_000_000_000, 9_000_000_000)));
    }
}
