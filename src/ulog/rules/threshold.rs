//! Thresholds: from the log's own parameters where PX4 has one, else a stated figure, and in
//! both cases the sentence that says where it came from.

use super::Threshold;
use crate::ulog::value::Value;
use std::collections::BTreeMap;

/// The first of `names` the log has, as a number.
pub fn parameter<'a>(
    params: &BTreeMap<String, Value>,
    names: &'a [String],
) -> Option<(&'a str, f64)> {
    names.iter().find_map(|n| {
        params
            .get(n)
            .and_then(Value::as_f64)
            .map(|v| (n.as_str(), v))
    })
}

/// A threshold taken from the first of `names` the log has, or `fallback` (with why).
pub fn from_parameters(
    params: &BTreeMap<String, Value>,
    what: &str,
    names: &[String],
    fallback: f64,
    fallback_source: &str,
    unit: &str,
) -> Threshold {
    match parameter(params, names) {
        Some((name, value)) => Threshold {
            name: what.to_string(),
            value,
            unit: unit.to_string(),
            source: format!("{name} = {} in the log's parameters", trim(value)),
        },
        None => Threshold {
            name: what.to_string(),
            value: fallback,
            unit: unit.to_string(),
            source: format!(
                "{} (the log has no {}): {fallback_source}",
                trim(fallback),
                names.join(" or ")
            ),
        },
    }
}

/// A fixed figure with where it comes from.
pub fn stated(what: &str, value: f64, unit: &str, source: &str) -> Threshold {
    Threshold {
        name: what.to_string(),
        value,
        unit: unit.to_string(),
        source: source.to_string(),
    }
}

/// A parameter value as PX4 shows it: `5`, `0.5`, `3.8` (float parameters are `f32`).
pub fn trim(v: f64) -> String {
    let short = f64::from(v as f32);
    if (short - v).abs() < 1e-9 || v.fract() != 0.0 {
        let s = format!("{}", v as f32);
        return s;
    }
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_or_stated_fallback() {
        let mut p = BTreeMap::new();
        p.insert("BAT_V_EMPTY".to_string(), Value::Float(f64::from(3.8f32)));
        let names = ["BAT1_V_EMPTY".to_string(), "BAT_V_EMPTY".to_string()];
        let t = from_parameters(&p, "empty cell", &names, 3.5, "assumed", "V");
        assert_eq!(t.value, f64::from(3.8f32));
        assert_eq!(t.source, "BAT_V_EMPTY = 3.8 in the log's parameters");
        let t = from_parameters(&BTreeMap::new(), "empty cell", &names, 3.5, "assumed", "V");
        assert_eq!(t.value, 3.5);
        assert_eq!(
            t.source,
            "3.5 (the log has no BAT1_V_EMPTY or BAT_V_EMPTY): assumed"
        );
        assert_eq!(trim(5.0), "5");
    }
}
