//! The SBS-1 ("BaseStation") text feed that dump1090 and readsb serve on TCP 30003, read into
//! traffic reports (pure): bytes into lines ([`SbsLines`], bounded, one connection each) and a
//! line into a report ([`parse_line`]). Every line that is not a usable record is refused with
//! its reason ([`TrafficReject`]), counted by the caller, and skipped: nothing in the feed can
//! stop the link.
//!
//! A record is one line of comma-separated fields, ended by CR LF (a bare LF is taken too):
//!
//! ```text
//! MSG,3,1,1,4CA2D6,1,2026/09/24,14:32:03.912,2026/09/24,14:32:03.950,,36000,,,51.47000,-0.46000,,,0,,0,0
//! ```
//!
//! 1 record type (`MSG`, `SEL`, `ID`, `AIR`, `STA`, `CLK`); 2 transmission type (1 to 8 for
//! `MSG`); 3 session; 4 aircraft; 5 hex ident (the 24-bit ICAO address; `~` before it marks an
//! address that is not an ICAO one, as TIS-B gives); 6 flight; 7-10 the dates and times the
//! message was generated and logged (the feeder's clock, often local time: the receiver stamps
//! the line itself, as it does a frame); 11 callsign; 12 altitude (feet, barometric on the
//! standard setting); 13 ground speed (knots); 14 track (degrees); 15 latitude; 16 longitude;
//! 17 vertical rate (feet per minute); 18 squawk; 19-22 flags (alert, emergency, ident, on
//! the ground). A field a transmission type does not carry is empty.

use crate::traffic::{
    checked_altitude, checked_position, AltitudeRef, TrafficKey, TrafficKind, TrafficReject,
    TrafficReport, FOOT_M, FOOT_PER_MINUTE_MPS, KNOT_MPS, NON_ICAO,
};

/// No SBS record comes near this (a `MSG` line is about 120 bytes); a longer "line" is not
/// the feed, and is skipped to its end without being held.
pub const MAX_LINE: usize = 512;
/// The fields of a `MSG` record.
const MSG_FIELDS: usize = 22;

/// One connection's bytes cut into lines.
#[derive(Debug, Default)]
pub struct SbsLines {
    partial: Vec<u8>,
    /// The line being read is already past [`MAX_LINE`]: its bytes are dropped to its end.
    overlong: bool,
}

/// One line out of the feed: its text, or why it is not one.
pub type Line<'a> = Result<&'a str, TrafficReject>;

impl SbsLines {
    /// Takes `bytes`; hands each complete line to `each`, in order.
    pub fn push(&mut self, mut bytes: &[u8], each: &mut dyn FnMut(Line<'_>)) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = (&bytes[..end], &bytes[end + 1..]);
            bytes = rest;
            if self.overlong {
                self.overlong = false;
                each(Err(TrafficReject::SbsNotText));
                continue;
            }
            if self.partial.is_empty() {
                emit(head, each);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(head);
                if line.len() > MAX_LINE {
                    each(Err(TrafficReject::SbsNotText));
                } else {
                    emit(&line, each);
                }
            }
        }
        if self.overlong {
            return;
        }
        if self.partial.len() + bytes.len() > MAX_LINE {
            self.partial.clear();
            self.overlong = true;
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }

    /// The connection ended: a line it left without its end is cut, and said so.
    pub fn finish(&mut self) -> Option<TrafficReject> {
        let cut = !self.partial.is_empty() || self.overlong;
        self.partial.clear();
        self.overlong = false;
        cut.then_some(TrafficReject::SbsTruncated)
    }
}

/// A line without its CR, as text: refused when it is not printable ASCII. Blank lines (a
/// keep-alive) are skipped without a word.
fn emit(line: &[u8], each: &mut dyn FnMut(Line<'_>)) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        return;
    }
    if line.len() > MAX_LINE || !line.iter().all(|b| (0x20..0x7F).contains(b)) {
        each(Err(TrafficReject::SbsNotText));
        return;
    }
    each(Ok(std::str::from_utf8(line).expect("ASCII")));
}

/// One SBS record: a traffic report (`MSG` with something in it), `None` for a well-formed
/// record that says nothing of where an aircraft is (`SEL`, `ID`, `AIR`, `STA`, `CLK`), or why
/// it is refused.
pub fn parse_line(line: &str) -> Result<Option<TrafficReport>, TrafficReject> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    match fields[0] {
        "MSG" => {}
        "SEL" | "ID" | "AIR" | "STA" | "CLK" => return Ok(None),
        _ => return Err(TrafficReject::SbsRecordType),
    }
    if fields.len() < MSG_FIELDS {
        return Err(TrafficReject::SbsFieldCount);
    }
    match fields[1].parse::<u8>() {
        Ok(1..=8) => {}
        _ => return Err(TrafficReject::SbsTransmissionType),
    }
    let key = TrafficKey::Icao(hex_ident(fields[4]).ok_or(TrafficReject::SbsIcao)?);
    let mut report = TrafficReport::bare(key, TrafficKind::Sbs);
    let callsign = fields[10];
    if !callsign.is_empty() {
        report.callsign = Some(callsign.into());
    }
    if let Some(feet) = number(fields[11])? {
        report.altitude = Some(checked_altitude(
            feet * FOOT_M,
            AltitudeRef::PressureStandard,
        )?);
    }
    report.ground_speed_mps = number(fields[12])?.map(|knots| knots * KNOT_MPS);
    report.track_deg = number(fields[13])?;
    match (number(fields[14])?, number(fields[15])?) {
        (Some(lat), Some(lon)) => report.position = Some(checked_position(lat, lon)?),
        (None, None) => {}
        // One coordinate without the other is no position.
        _ => return Err(TrafficReject::SbsNumber),
    }
    report.vertical_rate_mps = number(fields[16])?.map(|fpm| fpm * FOOT_PER_MINUTE_MPS);
    if !fields[17].is_empty() {
        report.squawk = Some(fields[17].parse().map_err(|_| TrafficReject::SbsNumber)?);
    }
    Ok(Some(report))
}

/// Six hex digits; `~` before them marks a non-ICAO address (kept apart by [`NON_ICAO`]).
fn hex_ident(text: &str) -> Option<u32> {
    let (digits, mark) = match text.strip_prefix('~') {
        Some(rest) => (rest, NON_ICAO),
        None => (text, 0),
    };
    if digits.len() != 6 {
        return None;
    }
    crate::traffic::parse_icao(digits).map(|a| a | mark)
}

/// An empty field is none; anything else must be a finite number.
fn number(text: &str) -> Result<Option<f64>, TrafficReject> {
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        _ => Err(TrafficReject::SbsNumber),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines in the layout dump1090 writes (written here from the format description).
    const POSITION: &str = "MSG,3,1,1,4CA2D6,1,2026/09/24,14:32:03.912,2026/09/24,14:32:03.950,,36000,,,51.47000,-0.46000,,,0,,0,0";
    const IDENT: &str =
        "MSG,1,1,1,4CA2D6,1,2026/09/24,14:32:04.100,2026/09/24,14:32:04.120,RYR12AB ,,,,,,,,,,,";
    const VELOCITY: &str = "MSG,4,1,1,4CA2D6,1,2026/09/24,14:32:04.500,2026/09/24,14:32:04.510,,,450,271,,,-1280,,,,,0";

    fn report(line: &str) -> TrafficReport {
        parse_line(line).unwrap().unwrap()
    }

    #[test]
    fn msg_3_1_and_4_give_position_callsign_and_velocity_in_si_units() {
        let p = report(POSITION);
        assert_eq!(p.key, TrafficKey::Icao(0x4CA2D6));
        let pos = p.position.unwrap();
        assert_eq!((pos.lat, pos.lon), (51.47, -0.46));
        let alt = p.altitude.unwrap();
        assert!((alt.m - 10_972.8).abs() < 1e-9);
        assert_eq!(alt.reference, AltitudeRef::PressureStandard);
        assert_eq!(report(IDENT).callsign.as_deref(), Some("RYR12AB"));
        let v = report(VELOCITY);
        assert!((v.ground_speed_mps.unwrap() - 231.5).abs() < 1e-9);
        assert_eq!(v.track_deg, Some(271.0));
        assert!((v.vertical_rate_mps.unwrap() + 6.5024).abs() < 1e-9);
        assert_eq!((v.position, v.altitude), (None, None));
        let squawk = "MSG,6,1,1,4CA2D6,1,,,,,,36000,,,,,,7700,0,1,0,0";
        assert_eq!(report(squawk).squawk, Some(7700));
    }

    #[test]
    fn other_records_are_not_traffic_and_broken_lines_say_why() {
        assert_eq!(
            parse_line(
                "STA,,5,179,400AE7,10103,2008/11/28,14:58:51.153,2008/11/28,14:58:51.153,RM"
            ),
            Ok(None)
        );
        assert_eq!(parse_line("CLK,,,,,,,,,"), Ok(None));
        let cases = [
            ("HELLO,1,2", TrafficReject::SbsRecordType),
            ("MSG,3,1,1,4CA2D6", TrafficReject::SbsFieldCount),
            (
                &POSITION.replacen("MSG,3", "MSG,9", 1),
                TrafficReject::SbsTransmissionType,
            ),
            (&POSITION.replace("4CA2D6", "4CA2"), TrafficReject::SbsIcao),
            (
                &POSITION.replace("4CA2D6", "ZZZZZZ"),
                TrafficReject::SbsIcao,
            ),
            (&POSITION.replace("36000", "high"), TrafficReject::SbsNumber),
            (
                &POSITION.replace("51.47000", "95.00000"),
                TrafficReject::Latitude,
            ),
            (
                &POSITION.replace("-0.46000", "-190.0"),
                TrafficReject::Longitude,
            ),
            (
                &POSITION.replace("36000", "250000"),
                TrafficReject::Altitude,
            ),
            (
                &POSITION.replace(",-0.46000", ","),
                TrafficReject::SbsNumber,
            ),
            (&POSITION.replace("36000", "NaN"), TrafficReject::SbsNumber),
        ];
        for (line, reason) in cases {
            assert_eq!(parse_line(line), Err(reason), "{line}");
        }
        // A TIS-B address is kept apart from the ICAO address of the same digits.
        let tisb = report(&POSITION.replace("4CA2D6", "~4CA2D6"));
        assert_eq!(tisb.key, TrafficKey::Icao(0x4CA2D6 | NON_ICAO));
    }

    fn lines(chunks: &[&[u8]]) -> (Vec<Result<String, TrafficReject>>, Option<TrafficReject>) {
        let mut cut = SbsLines::default();
        let mut out = Vec::new();
        for chunk in chunks {
            cut.push(chunk, &mut |l| out.push(l.map(str::to_string)));
        }
        (out, cut.finish())
    }

    #[test]
    fn lines_join_across_reads_and_stay_bounded() {
        let (out, end) = lines(&[b"MSG,1,a\r\nMSG,", b"3,b\r", b"\n\r\n", b"partial"]);
        assert_eq!(
            out,
            vec![Ok("MSG,1,a".to_string()), Ok("MSG,3,b".to_string())]
        );
        assert_eq!(end, Some(TrafficReject::SbsTruncated));
        // A flood without a newline is dropped as it comes, then refused once.
        let flood = vec![b'A'; 10 * MAX_LINE];
        let (out, end) = lines(&[&flood, &flood, b"\nMSG,1,ok\n"]);
        assert_eq!(
            out,
            vec![Err(TrafficReject::SbsNotText), Ok("MSG,1,ok".to_string())]
        );
        assert_eq!(end, None);
        let (out, _) = lines(&[b"MSG,\x01\xff\n"]);
        assert_eq!(out, vec![Err(TrafficReject::SbsNotText)]);
    }
}
