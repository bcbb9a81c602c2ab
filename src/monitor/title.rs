//! The wording of telemetry_gap findings: the title with the gap to three significant figures
//! (`Heartbeat due and not received. Nothing for 6.96 s`) and the `Observed:` sentence every gap
//! event carries. Both are contract text from the product documentation. And the traffic
//! titles in the same house style (`Traffic N123AB 640 m and 45 m above UAS-04`): distances in
//! whole metres, the traffic by its callsign (else its ICAO address or UAS ID), our vehicle by
//! its configured name (else `sysid N`).

/// Carried by every telemetry_gap event: a receive gap proves only that nothing arrived.
pub const OBSERVED: &str = "Observed: telemetry receive gap, not necessarily radio failure";

/// The start of every gap title; [`gap_title`] appends `Nothing for X s`.
pub const TITLE_PREFIX: &str = "Heartbeat due and not received.";

/// The title of a closed gap: `Heartbeat due and not received. Nothing for 6.96 s`.
pub fn gap_title(gap_ns: i64) -> String {
    format!(
        "{TITLE_PREFIX} Nothing for {} s",
        seconds_to_three_significant_figures(gap_ns)
    )
}

/// The title of a withdrawn gap, whose closing heartbeat is stamped inside the threshold:
/// `Heartbeat due and not received. Withdrawn: heard again after 2.90 s, inside the 3.00 s threshold`.
pub fn withdrawn_title(gap_ns: i64, threshold_ns: i64) -> String {
    format!(
        "{TITLE_PREFIX} Withdrawn: heard again after {} s, inside the {} s threshold",
        seconds_to_three_significant_figures(gap_ns),
        seconds_to_three_significant_figures(threshold_ns)
    )
}

/// Seconds to three significant figures, from exact nanoseconds: 6.962 s gives `6.96`,
/// 30.976 s gives `31.0`, 3369.47 s gives `3370`, 0.5 s gives `0.500`.
///
/// Rounding is half-up on the exact decimal value (integer arithmetic, no binary floating point,
/// so 6.965 s is `6.97` and never `6.96` by representation error). A carry that adds a digit
/// keeps three figures: 9.996 s is `10.0`, 99.96 s is `100`. Zero and negative spans (which a gap
/// never has) print as `0.00`.
pub fn seconds_to_three_significant_figures(span_ns: i64) -> String {
    const SIGNIFICANT: u32 = 3;
    // The nanosecond is 10^-9 s: the decimal exponent of the integer's last digit.
    const NANO_EXPONENT: i32 = -9;
    if span_ns <= 0 {
        return "0.00".to_string();
    }
    let span = span_ns as u128;
    let digits = span.ilog10() + 1;
    // Keep the three leading digits of the span, rounded: `kept` is 100..=999 and the value is
    // kept * 10^exponent seconds.
    let (mut kept, mut exponent) = if digits >= SIGNIFICANT {
        let dropped = digits - SIGNIFICANT;
        let divisor = 10u128.pow(dropped);
        let mut kept = span / divisor;
        if 2 * (span % divisor) >= divisor {
            kept += 1;
        }
        (kept, dropped as i32 + NANO_EXPONENT)
    } else {
        let missing = SIGNIFICANT - digits;
        (span * 10u128.pow(missing), NANO_EXPONENT - missing as i32)
    };
    if kept == 10u128.pow(SIGNIFICANT) {
        // 999.5 rounded up to 1000: one digit more than three, so drop the trailing zero.
        kept /= 10;
        exponent += 1;
    }
    if exponent >= 0 {
        format!("{}", kept * 10u128.pow(exponent as u32))
    } else {
        let decimals = (-exponent) as u32;
        let scale = 10u128.pow(decimals);
        format!(
            "{}.{:0width$}",
            kept / scale,
            kept % scale,
            width = decimals as usize
        )
    }
}

/// Whole metres, as traffic titles give distances (`640`, `1150`).
fn metres(m: f64) -> String {
    format!("{:.0}", m.abs())
}

/// `640 m and 45 m above`, `640 m and 12 m below`, or `640 m, altitude unknown,` when the
/// traffic gave none.
fn separation(horizontal_m: f64, vertical_m: Option<f64>) -> String {
    match vertical_m {
        Some(v) if v.round() < 0.0 => {
            format!("{} m and {} m below", metres(horizontal_m), metres(v))
        }
        Some(v) => format!("{} m and {} m above", metres(horizontal_m), metres(v)),
        None => format!("{} m, altitude unknown, from", metres(horizontal_m)),
    }
}

/// An open proximity: `Traffic N123AB 640 m and 45 m above UAS-04`.
pub fn traffic_title(
    traffic: &str,
    horizontal_m: f64,
    vertical_m: Option<f64>,
    vehicle: &str,
) -> String {
    format!(
        "Traffic {traffic} {} {vehicle}",
        separation(horizontal_m, vertical_m)
    )
}

/// A closed proximity: `Traffic N123AB clear of UAS-04 at 1150 m; closest 212 m and 30 m
/// above`, or `Traffic N123AB lost near UAS-04; ...`, or `Traffic N123AB no longer judged
/// against UAS-04 (no position of it); ...`.
pub fn traffic_closed_title(
    traffic: &str,
    vehicle: &str,
    reason: &str,
    horizontal_m: f64,
    closest_horizontal_m: f64,
    closest_vertical_m: Option<f64>,
) -> String {
    let closest = separation(closest_horizontal_m, closest_vertical_m);
    let closest = closest.trim_end_matches(", altitude unknown, from");
    match reason {
        "lost" => format!("Traffic {traffic} lost near {vehicle}; closest {closest}"),
        "own_position_lost" => format!(
            "Traffic {traffic} no longer judged against {vehicle} (no position of it); closest {closest}"
        ),
        _ => format!(
            "Traffic {traffic} clear of {vehicle} at {} m; closest {closest}",
            metres(horizontal_m)
        ),
    }
}

/// A track that aged out: `Traffic N123AB lost: not heard for 20.0 s`.
pub fn traffic_lost_title(traffic: &str, silent_ns: i64) -> String {
    format!(
        "Traffic {traffic} lost: not heard for {} s",
        seconds_to_three_significant_figures(silent_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::utc::parse_utc_ns;

    #[test]
    fn traffic_titles_in_the_house_style() {
        assert_eq!(
            traffic_title("N123AB", 640.4, Some(45.2), "UAS-04"),
            "Traffic N123AB 640 m and 45 m above UAS-04"
        );
        assert_eq!(
            traffic_title("4CA2D6", 1_000.0, Some(-12.6), "sysid 7"),
            "Traffic 4CA2D6 1000 m and 13 m below sysid 7"
        );
        assert_eq!(
            traffic_title("N123AB", 300.0, Some(-0.4), "UAS-04"),
            "Traffic N123AB 300 m and 0 m above UAS-04"
        );
        assert_eq!(
            traffic_title("FOX-RID-77", 80.0, None, "UAS-04"),
            "Traffic FOX-RID-77 80 m, altitude unknown, from UAS-04"
        );
        assert_eq!(
            traffic_closed_title("N123AB", "UAS-04", "left", 1_150.2, 212.0, Some(30.0)),
            "Traffic N123AB clear of UAS-04 at 1150 m; closest 212 m and 30 m above"
        );
        assert_eq!(
            traffic_closed_title("N123AB", "UAS-04", "lost", 900.0, 212.0, None),
            "Traffic N123AB lost near UAS-04; closest 212 m"
        );
        assert_eq!(
            traffic_lost_title("N123AB", 20_000_000_001),
            "Traffic N123AB lost: not heard for 20.0 s"
        );
    }

    fn title_between(last: &str, next: &str) -> String {
        gap_title(parse_utc_ns(next).unwrap() - parse_utc_ns(last).unwrap())
    }

    #[test]
    fn design_worked_example_inc_0142_gives_6_96_s() {
        assert_eq!(
            title_between("2026-09-24T14:32:03.912Z", "2026-09-24T14:32:10.874Z"),
            "Heartbeat due and not received. Nothing for 6.96 s"
        );
    }

    #[test]
    fn design_worked_example_inc_0143_gives_31_0_s() {
        assert_eq!(
            title_between("2026-09-24T15:41:02.713Z", "2026-09-24T15:41:33.689Z"),
            "Heartbeat due and not received. Nothing for 31.0 s"
        );
    }

    #[test]
    fn three_significant_figures_across_magnitudes() {
        let cases = [
            (6_962_000_000, "6.96"),
            (30_976_000_000, "31.0"),
            (3_369_473_055_000, "3370"),
            (500_000_000, "0.500"),
            (4_423_000_000, "4.42"),
            (3_235_000_000, "3.24"),
            (3_000_000_001, "3.00"),
            (6_965_000_000, "6.97"),
            (6_964_999_999, "6.96"),
            (9_996_000_000, "10.0"),
            (99_960_000_000, "100"),
            (123_456_000_000_000, "123000"),
            (12, "0.0000000120"),
            (0, "0.00"),
            (-5, "0.00"),
        ];
        for (span_ns, expected) in cases {
            assert_eq!(
                seconds_to_three_significant_figures(span_ns),
                expected,
                "span {span_ns} ns"
            );
        }
    }
}
