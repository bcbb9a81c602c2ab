//! Both sides on one axis. The anchors are made and cross-checked ([`super::anchor`]); the
//! tightest consistent one ties the boot clock to UTC; every entry is placed on the boot clock
//! (air entries are already there; a ground record's entries get there through its own
//! SYSTEM_TIME receipts when it has them, otherwise through its clock and the used anchor); and
//! each ground gap is given what the flight log shows in its window, as facts with citations.
//!
//! An entry's `bound_ms` is how far it may be from where it is placed against the flight log's
//! clock; the whole axis is UTC to within the used anchor's bound. Two entries are therefore
//! apart by what their times say, give or take their two bounds.
//!
//! Pure: facts in, lines out.

use super::air::{AirFacts, FAILSAFE_KIND};
use super::anchor::{
    boot_time_info_anchor, choose, conflict_json, cross_check, drift_ns, fit_ground, gps_anchor,
    ground_anchor, Anchor, Conflict, Estimate, GroundFit, Interval, UNKNOWN_CLOCK_ERROR_NS,
};
use super::entry::{Entry, Fact, Happening, Side, MS, SECOND};
use super::ground::GroundFacts;
use crate::ulog::gps::GpsAnchor;
use crate::ulog::value::Value as UlogValue;
use serde_json::Value;

/// Ground entries further than this from the flight log's first and last sample are left out:
/// a receive log of a whole day holds other sorties.
pub const SORTIE_MARGIN_NS: i64 = 60 * SECOND;
/// Facts listed per gap at most (the rest are counted).
const MAX_FACTS: usize = 40;

/// Everything the timeline is made from.
pub struct SortieInput<'a> {
    pub sysid: u8,
    pub gps: Option<&'a GpsAnchor>,
    pub boot_time_utc_us: Option<&'a UlogValue>,
    pub air: &'a AirFacts,
    pub ground: &'a [GroundFacts],
    /// A clock error stated by the user for every ground record, in place of theirs.
    pub clock_error_override_ns: Option<i64>,
    /// `COM_DL_LOSS_T`, seconds, when the log has it.
    pub dl_loss_s: Option<f64>,
}

/// A ground record with nothing of the vehicle during the flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub record: String,
    pub files: Vec<String>,
    pub sysid: u8,
    /// The systems the record does hold, with their receipt counts.
    pub holds: Vec<(u8, u64)>,
    /// The flight on the record's clock, when an anchor of the flight log says where it was.
    pub flight_utc: Option<(i64, i64)>,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let holds = if self.holds.is_empty() {
            "no receipts at all".to_string()
        } else {
            let list: Vec<String> = self
                .holds
                .iter()
                .map(|(s, n)| format!("system {s} ({n} receipts)"))
                .collect();
            format!("it holds {}", list.join(", "))
        };
        let when = match self.flight_utc {
            Some((a, b)) => format!(
                " during the flight ({} to {})",
                super::entry::format_utc_us(a),
                super::entry::format_utc_us(b)
            ),
            None => String::new(),
        };
        write!(
            f,
            "{}: no receipts of system {} (the flight log's system id){when}; {holds}",
            self.files.join(", "),
            self.sysid,
        )
    }
}

/// The assembled sortie: what the verb prints.
pub struct Sortie {
    pub anchors: Vec<Anchor>,
    pub conflicts: Vec<Conflict>,
    pub used: Option<usize>,
    pub entries: Vec<Entry>,
    /// Set when no anchor ties the boot clock to UTC.
    pub elapsed_only: Option<String>,
    /// Each ground record's clock, in the input's order (see [`Sortie::placement`]).
    pub records: Vec<RecordClock>,
    /// The flight log's first and last sample on the boot clock.
    pub flight_span: Option<(i64, i64)>,
}

/// What places a ground record's stamps: its anchor, its clock error and its stamps' resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordClock {
    pub name: String,
    /// Its ground anchor, in [`Sortie::anchors`].
    pub anchor: usize,
    pub error_ns: i64,
    pub resolution_ns: i64,
}

impl Sortie {
    /// The JSON lines, in order: anchors, conflicts, the elapsed-time note, the timeline.
    pub fn lines(&self) -> Vec<Value> {
        let mut out: Vec<Value> = self
            .anchors
            .iter()
            .enumerate()
            .map(|(i, a)| a.to_json(self.used == Some(i)))
            .collect();
        out.extend(
            self.conflicts
                .iter()
                .map(|c| conflict_json(&self.anchors, c, self.used)),
        );
        if let Some(note) = &self.elapsed_only {
            out.push(serde_json::json!({"kind": "elapsed_time_only", "title": note}));
        }
        out.extend(self.entries.iter().map(Entry::to_json));
        out
    }

    /// The used anchor, when there is one.
    pub fn used_anchor(&self) -> Option<&Anchor> {
        self.used.map(|i| &self.anchors[i])
    }

    /// How ground record `record`'s stamps are placed on the boot clock, as the timeline
    /// placed its entries.
    pub fn placement(&self, record: usize) -> RecordPlacement<'_> {
        let clock = &self.records[record];
        RecordPlacement::new(
            &self.anchors[clock.anchor],
            clock.error_ns,
            clock.resolution_ns,
            self.used_anchor(),
        )
    }
}

/// A record's clock error against UTC and where the figure comes from.
pub fn clock_error(record: &GroundFacts, override_ns: Option<i64>) -> (i64, String) {
    if let Some(ns) = override_ns {
        return (ns, "as given with --clock-error-ms".to_string());
    }
    record.stated_clock_error().unwrap_or((
        UNKNOWN_CLOCK_ERROR_NS,
        "no clock state in the record: 16 s assumed, the largest error the kernel reports"
            .to_string(),
    ))
}

/// Checks that every ground record with receipts holds some of the vehicle during the flight.
/// Judged by the flight log's own anchors (GPS, `boot_time_utc_us`) when it has one; a record
/// whose SYSTEM_TIME receipts of the vehicle fall inside the flight passes too.
pub fn refusals(input: &SortieInput<'_>) -> Vec<Refusal> {
    let span = input.air.span();
    let own = [
        gps_anchor(input.gps),
        boot_time_info_anchor(input.boot_time_utc_us),
    ];
    let flight_anchor = own.iter().find_map(|a| a.boot_at(0));
    let mut out = Vec::new();
    for record in input.ground {
        if record.receipt_files.is_empty() {
            continue;
        }
        let (error, _) = clock_error(record, input.clock_error_override_ns);
        let heard = record.heard.get(&input.sysid);
        let fitted = fit_ground(&record.system_times, span, error).is_ok();
        let window = match (flight_anchor, span) {
            (Some(b), Some((first, last))) => Some((b.lo + first - error, b.hi + last + error)),
            _ => None,
        };
        let during = match (heard, window) {
            (None, _) => false,
            (Some(_), _) if fitted => true,
            (Some(h), Some((lo, hi))) => h
                .seconds
                .range(lo.div_euclid(SECOND)..=hi.div_euclid(SECOND))
                .next()
                .is_some(),
            (Some(h), None) => h.receipts > 0,
        };
        if !during {
            out.push(Refusal {
                record: record.name.clone(),
                files: record.receipt_files.clone(),
                sysid: input.sysid,
                holds: record.heard.iter().map(|(s, h)| (*s, h.receipts)).collect(),
                flight_utc: window,
            });
        }
    }
    out
}

/// How a ground record's entries get onto the boot clock.
enum Placement<'a> {
    /// Through its own SYSTEM_TIME receipts.
    Fit(&'a GroundFit),
    /// Through its clock (good to `error`) and the used anchor.
    Clock { error: i64 },
}

/// A ground record's stamps onto the vehicle's boot clock: through its own SYSTEM_TIME receipts
/// (its ground anchor's fit) when it has them, otherwise through its clock and the used anchor.
pub struct RecordPlacement<'a> {
    placement: Placement<'a>,
    used_anchor: Option<&'a Anchor>,
    /// The boot instant on the record's clock at the anchor's reference moment: where a stamp
    /// roughly falls on the boot clock, before the exact placement at its own moment.
    guess: Option<i64>,
    half_res: i64,
}

impl<'a> RecordPlacement<'a> {
    /// `record_anchor` is the record's own (ground) anchor, `error` its clock error,
    /// `resolution_ns` how finely it stamps.
    pub fn new(
        record_anchor: &'a Anchor,
        error: i64,
        resolution_ns: i64,
        used_anchor: Option<&'a Anchor>,
    ) -> RecordPlacement<'a> {
        let placement = match &record_anchor.estimate {
            Estimate::Ground(fit) => Placement::Fit(fit),
            _ => Placement::Clock { error },
        };
        let guess = match &placement {
            Placement::Fit(fit) => fit
                .on_record_clock(fit.reference_boot_ns)
                .ok()
                .map(|i| i.mid()),
            Placement::Clock { .. } => used_anchor
                .and_then(|a| a.boot_at(a.reference_boot_ns().unwrap_or(0)))
                .map(|i| i.mid()),
        };
        RecordPlacement {
            placement,
            used_anchor,
            guess,
            half_res: resolution_ns / 2,
        }
    }

    /// Where the boot instant roughly lies on the record's clock.
    pub fn guess(&self) -> Option<i64> {
        self.guess
    }

    /// A stamp's moment: the middle of the stamp's resolution (a receipt stamped `.912`
    /// happened within that millisecond).
    pub fn moment(&self, stamp: i64) -> i64 {
        stamp + self.half_res
    }

    /// The boot instant on the record's clock at record-clock moment `t` (see
    /// [`Self::moment`]), and the bound of a stamp placed with it.
    pub fn boot_instant(&self, t: i64) -> Option<(i64, i64)> {
        let guess = self.guess?;
        let rough = t - guess;
        match &self.placement {
            Placement::Fit(fit) => {
                let at = fit.on_record_clock(rough).unwrap_or_else(|_| {
                    Interval::around(guess, 0).widened(drift_ns(rough - fit.reference_boot_ns))
                });
                Some((at.mid(), at.half_width() + self.half_res))
            }
            Placement::Clock { error } => {
                let b = self.used_anchor?.boot_at(rough)?;
                Some((b.mid(), error + b.half_width() + self.half_res))
            }
        }
    }

    /// A record-clock stamp onto the boot clock: (boot time, bound).
    pub fn place(&self, stamp: i64) -> Option<(i64, i64)> {
        let t = self.moment(stamp);
        self.boot_instant(t).map(|(at, bound)| (t - at, bound))
    }
}

/// Makes the anchors, checks them against each other and places everything.
pub fn assemble(input: &SortieInput<'_>) -> Sortie {
    let span = input.air.span();
    let mut anchors = vec![
        gps_anchor(input.gps),
        boot_time_info_anchor(input.boot_time_utc_us),
    ];
    let mut record_anchor = Vec::new();
    for record in input.ground {
        let (error, why) = clock_error(record, input.clock_error_override_ns);
        let fit = fit_ground(&record.system_times, span, error);
        record_anchor.push((anchors.len(), error));
        anchors.push(ground_anchor(&record.name, input.sysid, fit, &why));
    }
    let conflicts = cross_check(&anchors);
    let used = choose(&anchors, &conflicts);
    let used_anchor = used.map(|i| &anchors[i]);
    // The used anchor at a moment of the boot clock.
    let boot_utc = |boot: i64| used_anchor.and_then(|a| a.boot_at(boot));

    let mut entries = Vec::new();
    for h in &input.air.happenings {
        let utc = |t: i64| boot_utc(t).map(|b| b.mid() + t);
        entries.push(Entry {
            kind: h.kind.clone(),
            side: Side::Air,
            utc_start: utc(h.start_ns),
            utc_end: h.end_ns.and_then(utc),
            boot_start: Some(h.start_ns),
            boot_end: h.end_ns,
            bound_ns: Some(0),
            title: h.title.clone(),
            cite: h.cite.clone(),
            cite_end: h.cite_end.clone(),
            detail: h.detail.clone(),
            in_window: None,
            at_end: h.at_end,
        });
    }
    let mut ground_entries = Vec::new();
    let mut records = Vec::new();
    for (record, &(anchor_index, error)) in input.ground.iter().zip(&record_anchor) {
        records.push(RecordClock {
            name: record.name.clone(),
            anchor: anchor_index,
            error_ns: error,
            resolution_ns: record.resolution_ns,
        });
        let placement = RecordPlacement::new(
            &anchors[anchor_index],
            error,
            record.resolution_ns,
            used_anchor,
        );
        let guess = placement.guess();
        let place = |stamp: i64| placement.place(stamp);
        // Far outside the sortie by the rough placement: not placed at all (a day's record holds
        // thousands of entries, and each exact placement reads every receipt).
        let slack = SORTIE_MARGIN_NS + error + 10 * SECOND;
        let near = |h: &Happening| match (guess, span) {
            (Some(g), Some((first, last))) => {
                h.last_ns() - g >= first - slack && h.start_ns - g <= last + slack
            }
            _ => true,
        };
        for h in record.happenings.iter().filter(|h| near(h)) {
            let start = place(h.start_ns);
            let end = h.end_ns.and_then(&place);
            let in_sortie = match (start, span) {
                (Some((b, bound)), Some((first, last))) => {
                    let b_end = end.map_or(b, |e| e.0);
                    b_end + bound >= first - SORTIE_MARGIN_NS
                        && b - bound <= last + SORTIE_MARGIN_NS
                }
                _ => true,
            };
            if !in_sortie {
                continue;
            }
            let utc = |p: Option<(i64, i64)>, own: Option<i64>| match p {
                Some((b, _)) => boot_utc(b).map(|u| u.mid() + b),
                None => own,
            };
            ground_entries.push(Entry {
                kind: h.kind.clone(),
                side: Side::Ground,
                utc_start: utc(start, Some(h.start_ns)),
                utc_end: utc(end, h.end_ns),
                boot_start: start.map(|p| p.0),
                boot_end: end.map(|p| p.0),
                bound_ns: start.map(|p| p.1.max(end.map_or(0, |e| e.1))),
                title: h.title.clone(),
                cite: h.cite.clone(),
                cite_end: h.cite_end.clone(),
                detail: {
                    let mut d = h.detail.clone();
                    d.insert("record".into(), record.name.clone().into());
                    d
                },
                in_window: None,
                at_end: h.at_end,
            });
        }
    }
    for entry in &mut ground_entries {
        if entry.kind == "telemetry_gap" {
            entry.in_window = Some(gap_facts(entry, input));
        }
    }
    entries.extend(ground_entries);
    if used.is_some() {
        entries.sort_by_key(|e| {
            let (utc, boot) = e.at();
            (utc.or(boot), e.side == Side::Ground)
        });
    } else {
        entries.sort_by_key(|e| {
            let (utc, boot) = e.at();
            (e.side == Side::Ground, boot.or(utc).unwrap_or(i64::MIN))
        });
    }
    let elapsed_only = used.is_none().then(|| {
        let reasons: Vec<&str> = anchors.iter().map(|a| a.title.as_str()).collect();
        format!(
            "Elapsed time only: nothing ties the flight log's boot clock to UTC ({}). Air entries are on the boot clock, ground entries on their record's own clock, and the two cannot be compared",
            reasons.join("; ")
        )
    });
    Sortie {
        anchors,
        conflicts,
        used,
        entries,
        elapsed_only,
        records,
        flight_span: span,
    }
}

/// `0.167 s after` / `2.000 s before`, rounded half up to the millisecond on the exact span.
fn relative(t: i64, reference: i64) -> String {
    let d = t - reference;
    let ms = (d.abs() + MS / 2) / MS;
    let word = if d >= 0 { "after" } else { "before" };
    format!("{}.{:03} s {word}", ms / 1000, ms % 1000)
}

/// What the flight log shows in a gap's window, from the last heartbeat received to the next
/// (or to the log's end), each side widened by the gap's bound: facts, no verdict.
fn gap_facts(gap: &Entry, input: &SortieInput<'_>) -> Vec<Fact> {
    let (Some(start), Some(bound)) = (gap.boot_start, gap.bound_ns) else {
        return Vec::new();
    };
    let log_end = input.air.span().map(|s| s.1);
    let end = gap.boot_end.or(log_end).unwrap_or(start).max(start);
    let window = Interval {
        lo: start - bound,
        hi: end + bound,
    };
    let after_last = |t: i64| {
        format!(
            "{} the last heartbeat the ground received",
            relative(t, start)
        )
    };
    let at = |t: i64| format!("boot + {:.3} s", t as f64 / SECOND as f64);
    let mut facts = Vec::new();
    match input.air.running(window.lo, window.hi) {
        Some(r) => {
            let ends_inside = log_end.is_some_and(|e| e < window.hi && gap.boot_end.is_some());
            let title = if ends_inside {
                format!(
                    "The flight log ends inside the gap, at {}: {} samples logged in the gap's window before that",
                    at(r.last.0),
                    r.samples
                )
            } else {
                format!(
                    "The flight log kept running (the vehicle was powered and logging): {} samples from {} to {}",
                    r.samples,
                    at(r.first.0),
                    at(r.last.0)
                )
            };
            let (t, message, offset) = if ends_inside { r.last } else { r.first };
            facts.push(Fact {
                kind: "log_running".into(),
                boot_ns: t,
                title,
                cite: super::entry::Cite::Message {
                    file: input.air.file.clone(),
                    message,
                    offset,
                },
            });
        }
        None => facts.push(Fact {
            kind: "log_running".into(),
            boot_ns: window.lo,
            title: "The flight log has no sample in the gap's window: it was not logging then"
                .into(),
            cite: gap.cite.clone(),
        }),
    }
    let dl_loss_ns = input.dl_loss_s.map(|s| (s * SECOND as f64) as i64);
    // A data-link failsafe follows COM_DL_LOSS_T after the vehicle's last GCS heartbeat: look
    // that far past the gap's start even when the ground heard again sooner.
    let failsafe_until = window.hi.max(window.lo + dl_loss_ns.unwrap_or(0) + SECOND);
    let mut listed = 0usize;
    let mut more = 0usize;
    for h in &input.air.happenings {
        // Entered, or announced by PX4 without an action: either is the failsafe that follows.
        let is_failsafe = h.kind == FAILSAFE_KIND
            && h.detail
                .get("state")
                .is_some_and(|s| s == "entered" || s == "warning");
        let until = if is_failsafe {
            failsafe_until
        } else {
            window.hi
        };
        if h.start_ns > until || h.last_ns() < window.lo || h.detail.contains_key("first_sample") {
            continue;
        }
        let t = h.at_ns();
        if listed == MAX_FACTS {
            more += 1;
            continue;
        }
        listed += 1;
        // An interval that is not a state change (a stall, a dropout) reads from its start to
        // its end: it may have begun well before the gap and run through it.
        let span = match h.end_ns.filter(|&e| !h.at_end && e > h.start_ns) {
            Some(end) => format!("from {} to {}", at(h.start_ns), at(end)),
            None => format!("at {}", at(t)),
        };
        let title = fact_title(h, &span, &after_last(t), input.dl_loss_s, is_failsafe);
        facts.push(Fact {
            kind: h.kind.clone(),
            boot_ns: t,
            title,
            cite: h.cite.clone(),
        });
    }
    if more > 0 {
        facts.push(Fact {
            kind: "more".into(),
            boot_ns: window.hi,
            title: format!(
                "{more} more entries of the flight log in the window (see the timeline)"
            ),
            cite: gap.cite.clone(),
        });
    }
    facts
}

/// A fact's words: the entry's title, when (`at`: "at boot + …" or "from … to …") and how long
/// after the gap's last heartbeat.
fn fact_title(
    h: &Happening,
    at: &str,
    after_last: &str,
    dl_loss_s: Option<f64>,
    is_failsafe: bool,
) -> String {
    let state = h.detail.get("state").and_then(Value::as_str);
    if h.kind == "telemetry_status" && state == Some("lost") {
        let who = if h.detail.get("heartbeat").and_then(Value::as_str) == Some("heartbeat_type_gcs")
        {
            "GCS"
        } else {
            "onboard controller"
        };
        return format!(
            "PX4 saw the {who} heartbeat stop {at}, {after_last} ({})",
            h.title
        );
    }
    if is_failsafe {
        let delay = dl_loss_s
            .map(|s| format!("; COM_DL_LOSS_T is {s} s"))
            .unwrap_or_default();
        return format!("{} {at}, {after_last}{delay}", h.title);
    }
    if let Some(message) = h.detail.get("companion_fed").and_then(Value::as_str) {
        return format!(
            "{} (a topic a companion computer feeds over MAVLink with {message}): {at}, {after_last}",
            h.title
        );
    }
    format!("{} {at}, {after_last}", h.title)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkId;
    use crate::monitor::MonitorInput;
    use crate::monitor::{parse_utc_ns, WatchSettings};
    use crate::sortie::entry::Cite;
    use crate::sortie::ground::GroundRecord;

    /// The first entry of `kind`.
    fn entry<'a>(sortie: &'a Sortie, kind: &str) -> &'a Entry {
        sortie.entries.iter().find(|e| e.kind == kind).unwrap()
    }

    fn line(n: u64) -> Cite {
        Cite::Line {
            file: "r.jsonl".into(),
            line: n,
        }
    }

    /// The input of a sortie with no stated clock error and no COM_DL_LOSS_T.
    fn input<'a>(
        sysid: u8,
        gps: Option<&'a GpsAnchor>,
        air: &'a AirFacts,
        ground: &'a [GroundFacts],
    ) -> SortieInput<'a> {
        SortieInput {
            sysid,
            gps,
            boot_time_utc_us: None,
            air,
            ground,
            clock_error_override_ns: None,
            dl_loss_s: None,
        }
    }

    fn message(n: u64) -> Cite {
        Cite::Message {
            file: "log.ulg".into(),
            message: n,
            offset: n * 100,
        }
    }

    /// A GPS anchor putting boot at `boot` (UTC, ns) from `fixes` fixes spread over `spread_ms`.
    fn gps_anchor_at(boot: i64, fixes: u64, spread_ms: f64) -> GpsAnchor {
        GpsAnchor {
            title: format!("GPS time from sensor_gps, {fixes} fixes"),
            source: Some("sensor_gps".into()),
            multi_id: Some(0),
            fixes_used: fixes,
            fixes_without_utc: 0,
            boot_offset_us: Some(boot / 1000),
            spread_ms: Some(spread_ms),
            boot_utc: None,
        }
    }

    /// The source documents' INC-0142 and R-0931: the ground's last heartbeat at 14:32:03.912
    /// on a receiver good to ±15 ms; the flight log's last `obstacle_distance` sample before its
    /// stall at boot + 1132.793 s; the GPS anchor puts boot at 14:13:11.286 (±40 ms). On one
    /// clock the stall is at 14:32:04.079, 0.167 s after the last heartbeat received.
    #[test]
    fn inc_0142_on_one_clock() {
        let boot = parse_utc_ns("2026-09-24T14:13:11.286Z").unwrap();
        let last_hb = parse_utc_ns("2026-09-24T14:32:03.912Z").unwrap();
        let next_hb = parse_utc_ns("2026-09-24T14:32:10.874Z").unwrap();
        let gps = gps_anchor_at(boot, 1081, 31.0);
        let stall_at = 1_132_793_000_000;
        let stall = Happening::new(
            "topic_stall",
            stall_at,
            "obstacle_distance (multi_id 0) stalled: no sample for 6.800 s, 34.0 times its median period".into(),
            message(1_146_099),
        )
        .ending(stall_at + 6_800 * MS)
        .with("topic", "obstacle_distance")
        .with("companion_fed", "OBSTACLE_DISTANCE");
        let gcs_lost = Happening::new(
            "telemetry_status",
            1_134_000_000_000,
            "PX4's MAVLink instance 1 lost the onboard controller heartbeat".into(),
            message(1_150_000),
        )
        .ending(1_134_500_000_000)
        .state_change()
        .with("state", "lost")
        .with("heartbeat", "heartbeat_type_onboard_controller");
        let mut air = AirFacts::new("log.ulg", vec![stall, gcs_lost]);
        // The log kept running: the observer's running count is empty in this hand-made
        // record, so the window says it has no sample; the air facts themselves are listed.
        air.happenings.sort_by_key(|h| h.start_ns);

        let mut record = GroundRecord::new("receiver", 4, WatchSettings::default(), MS);
        let hb = |t: i64| MonitorInput::bare_heartbeat(LinkId::FIRST, 4, 1, t);
        for k in (0..5).rev() {
            let t = last_hb - k * SECOND;
            record.receipt(4, t, Some(&hb(t)), "radio1", line(5 - k as u64));
        }
        record.receipt(4, next_hb, Some(&hb(next_hb)), "radio1", line(6));
        let ground = vec![record.finish()];
        let input = SortieInput {
            clock_error_override_ns: Some(15 * MS),
            dl_loss_s: Some(10.0),
            ..input(4, Some(&gps), &air, &ground)
        };
        assert!(refusals(&input).is_empty());
        let sortie = assemble(&input);
        assert_eq!(
            sortie.used,
            Some(0),
            "the GPS anchor: no SYSTEM_TIME on the ground"
        );
        let lines = sortie.lines();
        assert_eq!(lines[0]["boot_utc"], "2026-09-24T14:13:11.286000Z");
        assert_eq!(lines[0]["bound_ms"], 40.0);
        let stall = entry(&sortie, "topic_stall");
        assert_eq!(
            stall.utc_start,
            Some(parse_utc_ns("2026-09-24T14:32:04.079Z").unwrap())
        );
        let gap = entry(&sortie, "telemetry_gap");
        // The receipt stamped .912 happened within that millisecond: placed at its middle.
        assert_eq!(gap.utc_start, Some(last_hb + MS / 2));
        assert_eq!(gap.boot_start, Some(1_132_626_500_000));
        // Receiver ±15 ms, GPS ±40 ms, and half the stamp's millisecond.
        assert_eq!(gap.bound_ns, Some(55 * MS + MS / 2));
        let apart = stall.utc_start.unwrap() - gap.utc_start.unwrap();
        assert_eq!(apart, 166_500_000, "0.167 s apart, give or take 55.5 ms");
        let facts = gap.in_window.as_ref().unwrap();
        let titles: Vec<&str> = facts.iter().map(|f| f.title.as_str()).collect();
        assert!(
            titles[1].starts_with("obstacle_distance (multi_id 0) stalled"),
            "{titles:#?}"
        );
        assert!(titles[1].contains("companion computer feeds over MAVLink with OBSTACLE_DISTANCE"));
        assert!(
            titles[1].contains("0.167 s after the last heartbeat the ground received"),
            "{}",
            titles[1]
        );
        assert!(
            titles[2]
                .starts_with("PX4 saw the onboard controller heartbeat stop at boot + 1134.500 s"),
            "{}",
            titles[2]
        );
        assert_eq!(gap.detail["observed"], crate::monitor::OBSERVED);
        // The anchors come first, then the timeline in UTC order.
        assert_eq!(lines[0]["kind"], "anchor");
        assert_eq!(lines[2]["source"], "ground");
        assert_eq!(lines[2]["used"], false);
        assert!(lines.iter().all(|l| l["kind"] != "elapsed_time_only"));
    }

    /// A gap from boot + 100 s to 107 s on a vehicle with COM_DL_LOSS_T 10 s: PX4's event and a
    /// rule's finding inside it are facts, and so is the failsafe that followed at 110.5 s (after
    /// the ground heard again), worded with the parameter; a failsafe cleared then is not.
    #[test]
    fn events_findings_and_the_failsafe_after_com_dl_loss_t_are_a_gaps_facts() {
        let boot = parse_utc_ns("2026-09-24T14:00:00Z").unwrap();
        let gps = gps_anchor_at(boot, 100, 10.0);
        let failsafe = |state: &str, at: i64, n: u64| {
            let mut h = Happening::new(
                crate::sortie::air::FAILSAFE_KIND,
                at - 500 * MS,
                format!("Failsafe {state} at {} s", at / SECOND),
                message(n),
            )
            .with("state", state)
            .state_change();
            h.end_ns = Some(at);
            h
        };
        let happenings = vec![
            Happening::new(
                crate::sortie::reported::EVENT_KIND,
                101 * SECOND,
                "PX4 event [WARNING] Connection to ground station lost".into(),
                message(10),
            ),
            Happening::new(
                "gps_quality_drop",
                90 * SECOND,
                "GPS accuracy poor".into(),
                message(5),
            )
            .ending(102 * SECOND),
            failsafe("entered", 110_500 * MS, 20),
            failsafe("cleared", 111 * SECOND, 21),
        ];
        let mut air = AirFacts::new("log.ulg", happenings);
        air.happenings.sort_by_key(|h| h.start_ns);
        let mut record = GroundRecord::new("receiver", 4, WatchSettings::default(), MS);
        for (n, boot_s) in [97, 98, 99, 100, 107].into_iter().enumerate() {
            let t = boot + boot_s * SECOND;
            let hb = MonitorInput::bare_heartbeat(LinkId::FIRST, 4, 1, t);
            record.receipt(4, t, Some(&hb), "radio1", line(n as u64 + 1));
        }
        let ground = vec![record.finish()];
        let input = SortieInput {
            clock_error_override_ns: Some(15 * MS),
            dl_loss_s: Some(10.0),
            ..input(4, Some(&gps), &air, &ground)
        };
        let sortie = assemble(&input);
        let gap = entry(&sortie, "telemetry_gap");
        let facts: Vec<(&str, &str)> = gap
            .in_window
            .as_ref()
            .unwrap()
            .iter()
            .map(|f| (f.kind.as_str(), f.title.as_str()))
            .collect();
        assert_eq!(facts.len(), 4, "{facts:#?}");
        assert_eq!(facts[1].0, "gps_quality_drop");
        assert!(facts[1]
            .1
            .contains("from boot + 90.000 s to boot + 102.000 s"));
        assert_eq!(facts[2].0, "px4_event");
        assert!(facts[2]
            .1
            .contains("at boot + 101.000 s, 1.000 s after the last heartbeat"));
        assert_eq!(facts[3].0, "failsafe_entered");
        assert_eq!(
            facts[3].1,
            "Failsafe entered at 110 s at boot + 110.500 s, 10.500 s after the last heartbeat the ground received; COM_DL_LOSS_T is 10 s"
        );
    }

    #[test]
    fn with_no_anchor_the_timeline_says_elapsed_time_only() {
        let air = AirFacts::new(
            "log.ulg",
            vec![Happening::new(
                "arming",
                5 * SECOND,
                "Armed".into(),
                message(3),
            )],
        );
        let record = GroundRecord::new("receiver", 1, WatchSettings::default(), MS);
        let ground = vec![record.finish()];
        let input = input(1, None, &air, &ground);
        let sortie = assemble(&input);
        assert_eq!(sortie.used, None);
        let note = sortie.elapsed_only.as_deref().unwrap();
        assert!(note.starts_with("Elapsed time only"), "{note}");
        assert!(
            note.contains("No SYSTEM_TIME receipts of system 1"),
            "{note}"
        );
        let arming = &sortie.entries[0];
        assert_eq!(
            (arming.utc_start, arming.boot_start),
            (None, Some(5 * SECOND))
        );
        let lines = sortie.lines();
        assert_eq!(lines[3]["kind"], "elapsed_time_only");
    }

    #[test]
    fn a_record_of_another_vehicle_is_refused_naming_both() {
        let air = AirFacts::new("log.ulg", Vec::new());
        let mut record = GroundRecord::new("receiver", 1, WatchSettings::default(), MS);
        record.receipt(20, 1_000 * SECOND, None, "radio", line(1));
        let ground = vec![record.finish()];
        let input = input(1, None, &air, &ground);
        let refused = refusals(&input);
        assert_eq!(refused.len(), 1);
        assert_eq!(
            refused[0].to_string(),
            "r.jsonl: no receipts of system 1 (the flight log's system id); it holds system 20 (1 receipts)"
        );
    }
}
