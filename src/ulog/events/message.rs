//! An event's message text, filled in as libevents fills it in:
//!
//! - `\x` writes `x` as it is (`\{`, `\<`);
//! - `<profile name="dev">...</profile>` keeps its content only for that profile (`!dev`: for
//!   every other), and what it keeps is read on; `<a href="...">text</a>` and
//!   `<param>NAME</param>` become their text, not read on; any other tag is dropped with its
//!   content;
//! - `{N}` is argument N (1-based), `{N:.D}` with D decimals, then an optional unit (`m`, `m_v`
//!   shown as `m`, `m/s`, `m^2`, `C`) after a space; an enum argument shows its entry's
//!   description, a bitfield the descriptions of its set bits joined by the separator,
//!   `(unknown: V)` for a value it does not name;
//! - anything that does not parse is left as written; the result is trimmed.

use super::definitions::{ArgType, Definitions, EnumDef, EventDef};
use super::number::ArgValue;

/// The profile events are shown for, as pyulog and Flight Review show them.
pub const PROFILE: &str = "dev";

/// Why an event's arguments could not be read with its definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentsError {
    #[error("its arguments need {needed} bytes and the event carries {carried}")]
    TooShort { needed: usize, carried: usize },
    #[error("its argument type {0} is not defined")]
    UnknownEnum(String),
}

/// One argument, with the enum it is shown through.
pub type Argument<'d> = (ArgValue, Option<&'d EnumDef>);

/// Reads an event's arguments from its argument bytes, in order.
pub fn arguments<'d>(
    defs: &'d Definitions,
    def: &EventDef,
    bytes: &[u8],
) -> Result<Vec<Argument<'d>>, ArgumentsError> {
    let mut out = Vec::with_capacity(def.arguments.len());
    let mut at = 0;
    for arg in &def.arguments {
        let (base, enum_def) = match arg {
            ArgType::Basic(b) => (*b, None),
            ArgType::Enum(name) => {
                let e = defs
                    .enum_def(name)
                    .ok_or_else(|| ArgumentsError::UnknownEnum(name.clone()))?;
                (e.base, Some(e))
            }
        };
        let value = bytes
            .get(at..)
            .and_then(|b| base.read(b))
            .ok_or(ArgumentsError::TooShort {
                needed: at + base.size(),
                carried: bytes.len(),
            })?;
        out.push((value, enum_def));
        at += base.size();
    }
    Ok(out)
}

/// An argument as the message shows it.
pub fn display(arg: &Argument<'_>) -> String {
    let (value, enum_def) = *arg;
    let Some(e) = enum_def else {
        return value.plain();
    };
    let unknown = || format!("(unknown: {})", value.plain());
    if !e.bitfield {
        return e
            .entries
            .iter()
            .find(|(k, _)| value.equals(*k))
            .map_or_else(unknown, |(_, d)| d.clone());
    }
    let mut out = String::new();
    let mut had_bit = false;
    for i in 0..(e.base.size() * 8) {
        let bit = 1u64 << i;
        if value.bits() & bit == 0 {
            continue;
        }
        if had_bit {
            out.push_str(&e.separator);
        }
        match e.entries.iter().find(|(k, _)| *k == i128::from(bit)) {
            Some((_, d)) => out.push_str(d),
            None => out.push_str(&unknown()),
        }
        had_bit = true;
    }
    out
}

/// Fills in `template` with `args` for `profile`.
pub fn format(template: &str, args: &[Argument<'_>], profile: &str) -> String {
    let mut msg: Vec<char> = template.chars().collect();
    let mut i = 0;
    while i < msg.len() {
        match msg[i] {
            '\\' => {
                // Drop the backslash; the character after it stays as it is.
                msg.remove(i);
                i += 1;
            }
            '<' => {
                let Some(tag) = Tag::parse(&msg[i..]) else {
                    i += 1;
                    continue;
                };
                let content_start = i + tag.content_start;
                let close: Vec<char> = format!("</{}>", tag.name).chars().collect();
                let Some(end) = find(&msg, &close, content_start) else {
                    i += 1;
                    continue;
                };
                let content = msg[content_start..end].to_vec();
                let (replacement, skip) = match tag.name.as_str() {
                    "profile" => {
                        let wanted = tag.value.unwrap_or_default();
                        let remove = match wanted.strip_prefix('!') {
                            Some(not) => profile == not,
                            None => profile != wanted,
                        };
                        (if remove { Vec::new() } else { content }, 0)
                    }
                    "a" | "param" => {
                        let n = content.len();
                        (content, n)
                    }
                    _ => (Vec::new(), 0),
                };
                msg.splice(i..end + close.len(), replacement);
                i += skip;
            }
            '{' => {
                let Some(close) = msg[i..].iter().position(|c| *c == '}').map(|p| i + p) else {
                    i += 1;
                    continue;
                };
                let spec: String = msg[i + 1..close].iter().collect();
                let Some(spec) = ArgSpec::parse(&spec).filter(|s| s.index < args.len()) else {
                    i += 1;
                    continue;
                };
                let arg = &args[spec.index];
                let mut text = match (spec.decimals, arg.1) {
                    (Some(d), None) => arg.0.fixed(d),
                    _ => display(arg),
                };
                if let Some(unit) = spec.unit {
                    text.push(' ');
                    text.push_str(unit);
                }
                let text: Vec<char> = text.chars().collect();
                let n = text.len();
                msg.splice(i..=close, text);
                i += n;
            }
            _ => i += 1,
        }
    }
    let out: String = msg.into_iter().collect();
    out.trim_matches(is_python_space).to_string()
}

/// What Python's `str.strip()` removes: Unicode white space and the four ASCII separators.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn find(haystack: &[char], needle: &[char], from: usize) -> Option<usize> {
    if from > haystack.len() {
        return None;
    }
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// `<name>` or `<name attr="value">`, followed by at least one character.
struct Tag {
    name: String,
    value: Option<String>,
    /// Offset of the content from the `<`.
    content_start: usize,
}

impl Tag {
    fn parse(s: &[char]) -> Option<Tag> {
        let lower = |c: &char| c.is_ascii_lowercase();
        let name_len = s[1..].iter().take_while(|c| lower(c)).count();
        if name_len == 0 {
            return None;
        }
        let name: String = s[1..1 + name_len].iter().collect();
        let mut at = 1 + name_len;
        let mut value = None;
        if s.get(at) == Some(&' ') {
            let attr_len = s[at + 1..].iter().take_while(|c| lower(c)).count();
            at += 1 + attr_len;
            if attr_len == 0 || s.get(at) != Some(&'=') || s.get(at + 1) != Some(&'"') {
                return None;
            }
            at += 2;
            let v_len = s[at..].iter().take_while(|c| **c != '"').count();
            if s.get(at + v_len) != Some(&'"') {
                return None;
            }
            value = Some(s[at..at + v_len].iter().collect());
            at += v_len + 1;
        }
        if s.get(at) != Some(&'>') || at + 1 >= s.len() {
            return None;
        }
        Some(Tag {
            name,
            value,
            content_start: at + 1,
        })
    }
}

/// `N[:[.D]][unit]`.
struct ArgSpec {
    /// 0-based.
    index: usize,
    decimals: Option<usize>,
    unit: Option<&'static str>,
}

impl ArgSpec {
    fn parse(spec: &str) -> Option<ArgSpec> {
        // A regex `$` also matches before one final newline.
        let spec = spec.strip_suffix('\n').unwrap_or(spec);
        let digits = spec.bytes().take_while(u8::is_ascii_digit).count();
        let index: usize = spec[..digits].parse().ok()?;
        let mut rest = &spec[digits..];
        let mut decimals = None;
        if let Some(r) = rest.strip_prefix(':') {
            rest = r;
            if let Some(r) = rest.strip_prefix('.') {
                let d = r.bytes().take_while(u8::is_ascii_digit).count();
                if d == 0 {
                    return None;
                }
                decimals = Some(r[..d].parse().ok()?);
                rest = &r[d..];
            }
        }
        let unit = match rest {
            "" => None,
            "m" | "m_v" => Some("m"),
            "m/s" => Some("m/s"),
            "m^2" => Some("m^2"),
            "C" => Some("C"),
            _ => return None,
        };
        Some(ArgSpec {
            index: index.checked_sub(1)?,
            decimals,
            unit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::definitions::BaseType;
    use super::*;

    fn plain(values: &[ArgValue]) -> Vec<Argument<'static>> {
        values.iter().map(|v| (*v, None)).collect()
    }

    #[test]
    fn arguments_units_and_decimals() {
        let args = plain(&[ArgValue::Float(2.5), ArgValue::UInt(491), ArgValue::UInt(3)]);
        assert_eq!(
            format(
                "RTL: start return at {2} m ({3:.0m} above destination)",
                &args,
                PROFILE
            ),
            "RTL: start return at 491 m (3 m above destination)"
        );
        assert_eq!(
            format("Using default takeoff altitude: {1:.2m}", &args, PROFILE),
            "Using default takeoff altitude: 2.50 m"
        );
        assert_eq!(format("{1}", &args, PROFILE), "2.5");
        assert_eq!(
            format("{1m_v} {1:m/s} {1C}", &args, PROFILE),
            "2.5 m 2.5 m/s 2.5 C"
        );
        // Out of range, malformed, unclosed: left as written.
        assert_eq!(
            format("{4} {0} {x} {1:.} {", &args, PROFILE),
            "{4} {0} {x} {1:.} {"
        );
    }

    #[test]
    fn tags_profiles_and_escapes() {
        let args = plain(&[ArgValue::Int(-3)]);
        let m = "a <profile name=\"dev\">dev {1}</profile><profile name=\"!dev\">user</profile> <param>FD_FAIL_R</param> <a href=\"http://x\">link {1}</a> <b>gone</b> \\{1\\} <x";
        assert_eq!(
            format(m, &args, PROFILE),
            "a dev -3 FD_FAIL_R link {1}  {1} <x"
        );
        assert_eq!(
            format(m, &args, "normal"),
            "a user FD_FAIL_R link {1}  {1} <x"
        );
        assert_eq!(
            format("  Failsafe warning: \n", &args, PROFILE),
            "Failsafe warning:"
        );
        assert_eq!(format("<a></a>x", &args, PROFILE), "x", "an empty tag");
    }

    #[test]
    fn enums_and_bitfields() {
        let sensor = EnumDef {
            base: BaseType::U8,
            bitfield: false,
            separator: "|".into(),
            entries: vec![(0, "Accelerometer".into()), (1, "Gyroscope".into())],
        };
        let flags = EnumDef {
            base: BaseType::U16,
            bitfield: true,
            separator: ", ".into(),
            entries: vec![(1, "GPS".into()), (4, "Baro".into())],
        };
        let args = vec![
            (ArgValue::UInt(0), Some(&sensor)),
            (ArgValue::UInt(9), Some(&sensor)),
            (ArgValue::UInt(0b1101), Some(&flags)),
        ];
        assert_eq!(
            format("{1} #{2} failure: {3}", &args, PROFILE),
            "Accelerometer #(unknown: 9) failure: GPS, Baro, (unknown: 13)"
        );
    }
}
