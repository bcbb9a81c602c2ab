//! `battery_sag`: per battery instance, the voltage per cell while armed (under load) below
//! the empty-cell voltage (`BATn_V_EMPTY`, or `BAT_V_EMPTY` in older logs), for at least
//! [`MIN_SAG_US`]. The cell count is the battery's own `cell_count`, else `BATn_N_CELLS` /
//! `BAT_N_CELLS`.
//!
//! A reading is not a sag when the battery is not connected (`connected` false) or reads under
//! [`NO_READING_V_PER_CELL`] per cell: no lithium cell that still powers a vehicle sits there,
//! so 0.05 V is a sensor that is not measuring. An instance that never reads a battery is said
//! so, and a rule with no instance that does is not evaluated.

use super::episode::{Crossing, Tracker};
use super::threshold::{from_parameters, parameter, stated, trim};
use super::{lasting, read_from, secs, Context, Rule, RuleOutcome, Vehicle};
use crate::ulog::signals::meaning::{cell_count_parameters, empty_voltage_parameters};
use crate::ulog::signals::{cite, Kind, Signal, SignalSample, Source};
use crate::ulog::value::Value;
use std::collections::{BTreeMap, HashMap};

/// Below this per cell a reading is no reading (a lithium cell is damaged under about 2.5 V).
pub const NO_READING_V_PER_CELL: f64 = 2.0;
/// A sag lasts at least this long (shorter dips are the load's transients).
pub const MIN_SAG_US: u64 = 1_000_000;
/// Dips closer than this are one sag.
pub const MERGE_GAP_US: u64 = 2_000_000;
/// Used when the log has no empty-cell parameter.
pub const DEFAULT_EMPTY_V: f64 = 3.5;

#[derive(Debug)]
struct Battery {
    tracker: Tracker,
    empty: super::Threshold,
    cells_parameter: Option<(String, f64)>,
    samples: u64,
    no_reading: u64,
    max_no_reading_v: f64,
    disconnected: bool,
    cells_seen: Option<u8>,
}

pub struct BatterySag {
    params: BTreeMap<String, Value>,
    batteries: HashMap<usize, Battery>,
}

impl BatterySag {
    pub fn new(params: &BTreeMap<String, Value>) -> Self {
        BatterySag {
            params: params.clone(),
            batteries: HashMap::new(),
        }
    }
}

impl Rule for BatterySag {
    fn observe(&mut self, sample: &SignalSample, source: &Source, vehicle: &Vehicle) {
        let (Kind::Battery, Signal::Battery(b)) = (source.kind, &sample.signal) else {
            return;
        };
        let params = &self.params;
        let number = source.multi_id.saturating_add(1);
        let bat = self
            .batteries
            .entry(sample.source)
            .or_insert_with(|| Battery {
                tracker: Tracker::new(MERGE_GAP_US, MIN_SAG_US),
                empty: from_parameters(
                    params,
                    "voltage per cell",
                    &empty_voltage_parameters(number),
                    DEFAULT_EMPTY_V,
                    "assumed (a common empty-cell voltage for lithium-polymer cells under load)",
                    "V",
                ),
                cells_parameter: parameter(params, &cell_count_parameters(number))
                    .filter(|(_, v)| *v >= 1.0)
                    .map(|(n, v)| (n.to_string(), v)),
                samples: 0,
                no_reading: 0,
                max_no_reading_v: 0.0,
                disconnected: false,
                cells_seen: None,
            });
        bat.samples += 1;
        let Some(voltage) = b.voltage else {
            return;
        };
        let cells = b
            .cell_count
            .filter(|c| *c > 0)
            .map(f64::from)
            .or(bat.cells_parameter.as_ref().map(|(_, v)| *v));
        if let Some(c) = b.cell_count.filter(|c| *c > 0) {
            bat.cells_seen = Some(c);
        }
        let per_cell = voltage / cells.unwrap_or(1.0);
        if b.connected == Some(false) || per_cell < NO_READING_V_PER_CELL || !voltage.is_finite() {
            bat.no_reading += 1;
            bat.disconnected |= b.connected == Some(false);
            bat.max_no_reading_v = bat.max_no_reading_v.max(voltage);
            return;
        }
        if cells.is_none() || !vehicle.armed {
            bat.tracker.good(sample.timestamp);
            return;
        }
        if per_cell < bat.empty.value {
            let crossing = Crossing::below(
                format!("{}.voltage_v per cell", source.topic),
                bat.empty.value,
                "V",
                per_cell,
            );
            bat.tracker
                .bad(sample.timestamp, &cite(source, sample), &[crossing]);
        } else {
            bat.tracker.good(sample.timestamp);
        }
    }

    fn finish(self: Box<Self>, sources: &[Source], _ctx: &Context<'_>) -> RuleOutcome {
        let rule = "battery_sag";
        if self.batteries.is_empty() {
            return RuleOutcome::not_evaluated(rule, "not evaluated: no battery_status".into());
        }
        let mut ids: Vec<usize> = self.batteries.keys().copied().collect();
        ids.sort_by_key(|i| sources[*i].multi_id);
        let mut batteries = self.batteries;
        let mut notes = Vec::new();
        let mut findings = Vec::new();
        let mut thresholds = Vec::new();
        let mut measured = Vec::new();
        for i in ids {
            let b = batteries.remove(&i).expect("listed above");
            let name = sources[i].instance();
            if b.no_reading == b.samples {
                notes.push(format!(
                    "{name} reads no battery: {} in all {} samples (at most {} V), a sensor that is not measuring, not a sag",
                    if b.disconnected { "connected is false" } else { "under 2 V per cell" },
                    b.samples,
                    trim((b.max_no_reading_v * 100.0).round() / 100.0)
                ));
                continue;
            }
            measured.push(i);
            let cells = b
                .cells_seen
                .map(|c| (f64::from(c), format!("{name}.cell_count")))
                .or(b
                    .cells_parameter
                    .as_ref()
                    .map(|(n, v)| (*v, format!("{n} in the log's parameters"))));
            match &cells {
                Some((c, from)) => thresholds.push(stated(
                    &format!("{name} cells"),
                    *c,
                    "",
                    from,
                )),
                None => notes.push(format!(
                    "{name}: no cell count (no cell_count field and no BAT_N_CELLS parameter), so no voltage per cell to judge"
                )),
            }
            let mut empty = b.empty.clone();
            empty.name = format!("{name} voltage per cell");
            thresholds.push(empty);
            if b.no_reading > 0 {
                notes.push(format!(
                    "{name}: {} of {} samples read no battery and were left out",
                    b.no_reading, b.samples
                ));
            }
            let cell_count = cells.map_or(1.0, |(c, _)| c);
            findings.extend(b.tracker.findings(rule, |e| {
                let low = e.crossed.first().map_or(0.0, |c| c.extreme.value);
                format!(
                    "Battery sag on {name} at {} {}: {:.3} V per cell ({:.2} V over {} cells), under the empty-cell voltage {} V",
                    secs(e.start),
                    lasting(e),
                    low,
                    low * cell_count,
                    cell_count,
                    trim(e.crossed.first().map_or(0.0, |c| c.threshold))
                )
            }));
        }
        if measured.is_empty() {
            let mut out =
                RuleOutcome::not_evaluated(rule, format!("not evaluated: {}", notes.join("; ")));
            out.read = read_from(sources, |s| s.kind == Kind::Battery);
            return out;
        }
        let mut out = RuleOutcome::evaluated(
            rule,
            read_from(sources, |s| s.kind == Kind::Battery),
            thresholds,
            findings,
        );
        out.notes = notes;
        out
    }
}
