//! Changes between runs: which parameters at start differ from the vehicle's previous run, the
//! failsafe parameters (the source document's eight, `ulog::profile::FAILSAFE_PARAMETERS`) apart
//! from the others, and the document's wording of each ("NAV_DLL_ACT 0 (Disabled) to 1 (Hold) in
//! R-0924, 22 Sep"). Pure: values in, values out.

use super::labels::label;
use super::params::{ParamValue, Parameters};
use crate::ulog::profile::FAILSAFE_PARAMETERS;

/// One parameter whose value at start differs between two runs; `None` is "not logged".
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub parameter: String,
    pub from: Option<ParamValue>,
    pub to: Option<ParamValue>,
}

/// What changed from one run to the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    /// The failsafe parameters that differ, in the document's order.
    pub failsafe: Vec<Change>,
    /// Every other parameter that differs, by name.
    pub other: Vec<Change>,
}

/// Whether `name` is one of the document's failsafe parameters.
pub fn is_failsafe(name: &str) -> bool {
    FAILSAFE_PARAMETERS.iter().any(|(n, _)| *n == name)
}

/// The parameters that differ from `previous` to `current`, a parameter logged in only one of
/// them included.
pub fn diff(previous: &Parameters, current: &Parameters) -> Diff {
    let changed = |name: &str| -> Option<Change> {
        let (from, to) = (previous.get(name), current.get(name));
        let same = match (from, to) {
            (Some(a), Some(b)) => a.same_as(b),
            (None, None) => true,
            _ => false,
        };
        (!same).then(|| Change {
            parameter: name.to_string(),
            from: from.cloned(),
            to: to.cloned(),
        })
    };
    let failsafe = FAILSAFE_PARAMETERS
        .iter()
        .filter_map(|(name, _)| changed(name))
        .collect();
    let mut names: Vec<&String> = previous.keys().chain(current.keys()).collect();
    names.sort();
    names.dedup();
    let other = names
        .into_iter()
        .filter(|n| !is_failsafe(n))
        .filter_map(|n| changed(n))
        .collect();
    Diff { failsafe, other }
}

/// A run as a change names it: its id and, when its log is anchored, its start in UTC.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRef {
    pub id: i64,
    pub start_utc_us: Option<i64>,
}

/// A run's id as people read it: `R-0924` (four digits at least).
pub fn run_id(id: i64) -> String {
    format!("R-{id:04}")
}

/// The number in a run id (`R-0924` is 924).
pub fn parse_run_id(text: &str) -> Option<i64> {
    text.strip_prefix("R-")?.parse().ok().filter(|n| *n > 0)
}

fn value_text(parameter: &str, value: Option<&ParamValue>) -> String {
    match value {
        None => "not logged".to_string(),
        Some(v) => match label(parameter, v) {
            Some(l) => format!("{v} ({l})"),
            None => v.to_string(),
        },
    }
}

/// The change as the document words it: `NAV_DLL_ACT 0 (Disabled) to 1 (Hold) in R-0924, 22 Sep`
/// (the day the run started, in UTC), or `... in R-0924 (no GPS time)` for a run whose log has
/// no GPS anchor.
pub fn wording(change: &Change, run: &RunRef) -> String {
    let day = run
        .start_utc_us
        .and_then(chrono::DateTime::from_timestamp_micros)
        .map_or_else(
            || " (no GPS time)".to_string(),
            |t| format!(", {}", t.format("%-d %b")),
        );
    format!(
        "{} {} to {} in {}{day}",
        change.parameter,
        value_text(&change.parameter, change.from.as_ref()),
        value_text(&change.parameter, change.to.as_ref()),
        run_id(run.id)
    )
}

/// A change as the report and `ulog changes` list it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Worded {
    pub parameter: String,
    pub from: Option<ParamValue>,
    pub to: Option<ParamValue>,
    pub from_label: Option<&'static str>,
    pub to_label: Option<&'static str>,
    pub previous_run: String,
    pub run: String,
    pub text: String,
}

impl Worded {
    pub fn new(change: &Change, previous: &RunRef, run: &RunRef) -> Worded {
        let label_of =
            |v: &Option<ParamValue>| v.as_ref().and_then(|v| label(&change.parameter, v));
        Worded {
            parameter: change.parameter.clone(),
            from: change.from.clone(),
            to: change.to.clone(),
            from_label: label_of(&change.from),
            to_label: label_of(&change.to),
            previous_run: run_id(previous.id),
            run: run_id(run.id),
            text: wording(change, run),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `parameter` changed from one integer to another.
    fn int_change(parameter: &str, from: i64, to: i64) -> Change {
        Change {
            parameter: parameter.into(),
            from: Some(ParamValue::Int(from)),
            to: Some(ParamValue::Int(to)),
        }
    }

    fn run_ref(id: i64, start_utc_us: Option<i64>) -> RunRef {
        RunRef { id, start_utc_us }
    }

    fn params(pairs: &[(&str, ParamValue)]) -> Parameters {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn the_document_example_is_worded_as_the_document_words_it() {
        let change = int_change("NAV_DLL_ACT", 0, 1);
        // 2026-09-22T14:13:19Z
        let run = run_ref(924, Some(1_790_086_399_000_000));
        assert_eq!(
            wording(&change, &run),
            "NAV_DLL_ACT 0 (Disabled) to 1 (Hold) in R-0924, 22 Sep"
        );
        let unanchored = run_ref(7, None);
        assert_eq!(
            wording(&change, &unanchored),
            "NAV_DLL_ACT 0 (Disabled) to 1 (Hold) in R-0007 (no GPS time)"
        );
    }

    #[test]
    fn failsafe_changes_come_apart_from_the_others_in_the_documents_order() {
        let previous = params(&[
            ("NAV_DLL_ACT", ParamValue::Int(2)),
            ("COM_DL_LOSS_T", ParamValue::Int(10)),
            ("COM_OF_LOSS_T", ParamValue::Float(1.0)),
            ("MPC_XY_VEL_MAX", ParamValue::Float(12.0)),
            ("BAT_N_CELLS", ParamValue::Int(4)),
            ("SDLOG_MODE", ParamValue::Int(0)),
        ]);
        let current = params(&[
            ("NAV_DLL_ACT", ParamValue::Int(0)),
            ("COM_DL_LOSS_T", ParamValue::Int(5)),
            // The same setting stored as an integer by another firmware: no change.
            ("COM_OF_LOSS_T", ParamValue::Int(1)),
            ("MPC_XY_VEL_MAX", ParamValue::Float(8.5)),
            ("BAT_N_CELLS", ParamValue::Int(4)),
            ("COM_POS_FS_EPH", ParamValue::Float(5.0)),
            ("EKF2_GPS_DELAY", ParamValue::Float(110.0)),
        ]);
        let d = diff(&previous, &current);
        let names = |cs: &[Change]| cs.iter().map(|c| c.parameter.clone()).collect::<Vec<_>>();
        // The document lists COM_DL_LOSS_T, then NAV_DLL_ACT, ..., then COM_POS_FS_EPH.
        assert_eq!(
            names(&d.failsafe),
            ["COM_DL_LOSS_T", "NAV_DLL_ACT", "COM_POS_FS_EPH"]
        );
        assert_eq!(
            d.failsafe[2].from, None,
            "COM_POS_FS_EPH was not logged before"
        );
        assert_eq!(
            names(&d.other),
            ["EKF2_GPS_DELAY", "MPC_XY_VEL_MAX", "SDLOG_MODE"]
        );
        assert_eq!(d.other[2].to, None, "SDLOG_MODE is not logged now");
        let worded: Vec<String> = d
            .failsafe
            .iter()
            .map(|c| wording(c, &run_ref(3, None)))
            .collect();
        assert_eq!(
            worded,
            [
                "COM_DL_LOSS_T 10 to 5 in R-0003 (no GPS time)",
                "NAV_DLL_ACT 2 (Return) to 0 (Disabled) in R-0003 (no GPS time)",
                "COM_POS_FS_EPH not logged to 5 in R-0003 (no GPS time)",
            ]
        );
        assert_eq!(diff(&current, &current), Diff::default());
    }

    #[test]
    fn values_read_from_a_report_keep_their_kind_and_print_as_set() {
        let v = |text: &str| ParamValue::from_json(&serde_json::from_str(text).unwrap());
        assert_eq!(v("2"), Some(ParamValue::Int(2)));
        assert_eq!(v("1.0"), Some(ParamValue::Float(1.0)));
        assert_eq!(v("\"nan\""), Some(ParamValue::Text("nan".into())));
        assert_eq!(v("null"), None);
        // 0.3 as a 32-bit float, widened to 64 bits as the report holds it.
        let widened = f64::from(0.3f32);
        assert_eq!(ParamValue::Float(widened).to_string(), "0.3");
        assert_eq!(ParamValue::Float(0.1).to_string(), "0.1");
        assert_eq!(ParamValue::Float(5.0).to_string(), "5");
        assert_eq!(
            serde_json::to_string(&ParamValue::Float(1.0)).unwrap(),
            "1.0"
        );
        assert_eq!(run_id(924), "R-0924");
        assert_eq!(run_id(12_345), "R-12345");
        assert_eq!(parse_run_id("R-0924"), Some(924));
        assert_eq!(parse_run_id("R-0"), None);
        assert_eq!(parse_run_id("0924"), None);
    }

    #[test]
    fn worded_changes_carry_both_runs_and_the_labels() {
        let change = int_change("COM_OBL_RC_ACT", 5, 3);
        let previous = run_ref(1, None);
        let run = run_ref(2, None);
        let w = Worded::new(&change, &previous, &run);
        assert_eq!(w.previous_run, "R-0001");
        assert_eq!(w.run, "R-0002");
        assert_eq!((w.from_label, w.to_label), (Some("Hold"), Some("Return")));
        assert_eq!(
            w.text,
            "COM_OBL_RC_ACT 5 (Hold) to 3 (Return) in R-0002 (no GPS time)"
        );
    }
}
