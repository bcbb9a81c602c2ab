//! Numbers in event messages, written the way libevents' Python parser writes them (and so the
//! way pyulog and Flight Review show them): integers plainly, a float argument as Python's
//! `str(float)` (the shortest text that reads back to the same double, `1.0`, `1e-05`,
//! `1.5e+16`), and `{1:.2}` as fixed decimals rounded half to even on the exact binary value.

/// A decoded event argument before it is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgValue {
    Int(i64),
    UInt(u64),
    /// A `float` argument, widened exactly.
    Float(f64),
}

impl ArgValue {
    /// The value's bits as an unsigned number, for matching enum entries and bitfield bits
    /// (a negative value keeps its two's-complement bits).
    pub fn bits(self) -> u64 {
        match self {
            ArgValue::Int(v) => v as u64,
            ArgValue::UInt(v) => v,
            ArgValue::Float(v) => v as u64,
        }
    }

    /// Whether the value equals an enum entry's key (`"12"` in the JSON, read as an integer).
    pub fn equals(self, key: i128) -> bool {
        match self {
            ArgValue::Int(v) => i128::from(v) == key,
            ArgValue::UInt(v) => i128::from(v) == key,
            ArgValue::Float(v) => v == key as f64,
        }
    }

    /// `{N}`: Python's `str()` of the value.
    pub fn plain(self) -> String {
        match self {
            ArgValue::Int(v) => v.to_string(),
            ArgValue::UInt(v) => v.to_string(),
            ArgValue::Float(v) => python_repr(v),
        }
    }

    /// `{N:.D}`: Python's `'{:.Df}'` (an integer is formatted as a float).
    pub fn fixed(self, decimals: usize) -> String {
        let v = match self {
            ArgValue::Int(v) => v as f64,
            ArgValue::UInt(v) => v as f64,
            ArgValue::Float(v) => v,
        };
        if v.is_nan() {
            return "nan".into();
        }
        if v.is_infinite() {
            return if v > 0.0 { "inf" } else { "-inf" }.into();
        }
        format!("{v:.decimals$}")
    }
}

/// Python's `repr(float)`: the shortest round-trip digits, in positional notation when the
/// decimal exponent is from -4 to 15 (with at least one digit after the point), else in
/// scientific notation with a signed exponent of at least two digits.
pub fn python_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the same shortest digits: `-1.2345e-5`.
    let sci = format!("{v:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..16).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let esign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}{rest}e{esign}{:02}", exponent.abs());
    }
    let point = exponent + 1; // digits before the decimal point
    if point <= 0 {
        let zeros = "0".repeat(point.unsigned_abs() as usize);
        format!("{sign}0.{zeros}{digits}")
    } else {
        let point = point as usize;
        if digits.len() <= point {
            let zeros = "0".repeat(point - digits.len());
            format!("{sign}{digits}{zeros}.0")
        } else {
            format!("{sign}{}.{}", &digits[..point], &digits[point..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_python_writes_them() {
        let cases = [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (9999999999999998.0, "9999999999999998.0"),
            (-2.5, "-2.5"),
            (-0.0, "-0.0"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (1e-300, "1e-300"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (v, want) in cases {
            assert_eq!(python_repr(v), want, "{v:e}");
        }
    }

    #[test]
    fn fixed_decimals_round_half_to_even_on_the_binary_value() {
        assert_eq!(ArgValue::Float(0.125).fixed(2), "0.12");
        assert_eq!(ArgValue::Float(0.375).fixed(2), "0.38");
        assert_eq!(ArgValue::Float(2.5).fixed(0), "2");
        assert_eq!(ArgValue::Int(3).fixed(2), "3.00");
        assert_eq!(ArgValue::UInt(7).plain(), "7");
        assert_eq!(ArgValue::Int(-7).bits(), u64::MAX - 6);
    }
}
