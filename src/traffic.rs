//! Traffic as the receiver is told of it, whatever brought it (pure values, no I/O): one report
//! of an aircraft ([`TrafficReport`], from `ADSB_VEHICLE`, the `OPEN_DRONE_ID_*` messages or an
//! SBS-1 line), the key its track is kept under ([`TrafficKey`]: ICAO address or UAS ID), an
//! altitude with the reference it was given in ([`Altitude`]), one of our own vehicles' fixes
//! ([`OwnFix`]), and why a report was refused ([`TrafficReject`]).
//!
//! Units are converted once, here, when a report is made: feet (SBS) and millimetres (MAVLink)
//! to metres, knots and cm/s to m/s, ft/min to m/s. The altitude keeps its reference (pressure
//! on the standard setting, pressure on QNH, GNSS height above the ellipsoid, height above mean
//! sea level): two altitudes of different references are never silently taken for one.

use std::fmt;

/// One foot, in metres (exact, by the international definition).
pub const FOOT_M: f64 = 0.3048;
/// One knot, in m/s (exact: 1,852 m per hour).
pub const KNOT_MPS: f64 = 1852.0 / 3600.0;
/// One foot per minute, in m/s.
pub const FOOT_PER_MINUTE_MPS: f64 = FOOT_M / 60.0;

/// The lowest and highest altitudes a report may give: below the lowest land (the Dead Sea
/// shore, -430 m) with a margin for a low pressure setting, above anything that flies with a
/// transponder (stratospheric balloons reach about 40 km). Outside, the value is impossible and
/// the report is refused.
pub const MIN_ALTITUDE_M: f64 = -1_500.0;
pub const MAX_ALTITUDE_M: f64 = 50_000.0;

/// The address bit that marks an address that is not an ICAO one (an SBS hex ident written
/// `~A1B2C3`, as TIS-B gives), so it never shares a track with the ICAO address of the same
/// digits.
pub const NON_ICAO: u32 = 1 << 24;

/// What a track is kept under: the 24-bit ICAO address of an ADS-B transponder, or the UAS ID
/// a Remote ID broadcast gives (a serial number, a registration, a session id).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TrafficKey {
    Icao(u32),
    UasId(Box<str>),
}

impl TrafficKey {
    /// The ICAO address as six upper-case hex digits (`~` before a non-ICAO one), when it is
    /// one.
    pub fn icao(&self) -> Option<String> {
        match self {
            TrafficKey::Icao(_) => Some(self.to_string()),
            TrafficKey::UasId(_) => None,
        }
    }

    pub fn uas_id(&self) -> Option<&str> {
        match self {
            TrafficKey::UasId(id) => Some(id),
            TrafficKey::Icao(_) => None,
        }
    }
}

impl fmt::Display for TrafficKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrafficKey::Icao(a) if a & NON_ICAO != 0 => write!(f, "~{:06X}", a & !NON_ICAO),
            TrafficKey::Icao(a) => write!(f, "{a:06X}"),
            TrafficKey::UasId(id) => f.write_str(id),
        }
    }
}

/// An ICAO address as written in configs and SBS lines: six hex digits (either case).
pub fn parse_icao(text: &str) -> Option<u32> {
    let text = text.trim();
    if text.is_empty() || text.len() > 6 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(text, 16).ok()
}

/// What an altitude is measured from. The event says which, and the vertical separation says
/// which two it compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AltitudeRef {
    /// Barometric, on the standard setting (1013.25 hPa): a Mode S / ADS-B pressure altitude as
    /// SBS-1 feeds carry it, Remote ID's `altitude_barometric`.
    PressureStandard,
    /// Barometric on the local QNH (`ADSB_VEHICLE` with `ADSB_ALTITUDE_TYPE_PRESSURE_QNH`).
    PressureQnh,
    /// GNSS altitude as an ADS-B transponder reports it (`ADSB_VEHICLE` with
    /// `ADSB_ALTITUDE_TYPE_GEOMETRIC`): height above the WGS-84 ellipsoid in DO-260B, though
    /// MAVLink's field text says "ASL"; kept apart, since a sender may mean either.
    Geometric,
    /// Height above the WGS-84 ellipsoid (Remote ID's `altitude_geodetic`,
    /// `GPS_RAW_INT.alt_ellipsoid`).
    Ellipsoid,
    /// Height above mean sea level (`GLOBAL_POSITION_INT.alt`, `GPS_RAW_INT.alt`).
    MeanSeaLevel,
}

impl AltitudeRef {
    /// The name events and `/status` carry.
    pub fn as_str(self) -> &'static str {
        match self {
            AltitudeRef::PressureStandard => "pressure_standard",
            AltitudeRef::PressureQnh => "pressure_qnh",
            AltitudeRef::Geometric => "geometric",
            AltitudeRef::Ellipsoid => "ellipsoid",
            AltitudeRef::MeanSeaLevel => "msl",
        }
    }

    pub fn parse(text: &str) -> Option<AltitudeRef> {
        [
            AltitudeRef::PressureStandard,
            AltitudeRef::PressureQnh,
            AltitudeRef::Geometric,
            AltitudeRef::Ellipsoid,
            AltitudeRef::MeanSeaLevel,
        ]
        .into_iter()
        .find(|r| r.as_str() == text)
    }
}

/// An altitude in metres, with its reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Altitude {
    pub m: f64,
    pub reference: AltitudeRef,
}

/// A point on the WGS-84 ellipsoid, degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatLon {
    pub lat: f64,
    pub lon: f64,
}

/// What kind of report made a track.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrafficKind {
    /// `ADSB_VEHICLE` (246): a ground ADS-B receiver, or a vehicle's ADS-B-in.
    Adsb,
    /// `OPEN_DRONE_ID_*` (12900, 12901, 12904): a Remote ID receiver.
    RemoteId,
    /// An SBS-1 (BaseStation) `MSG` line from dump1090 or readsb.
    Sbs,
}

impl TrafficKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TrafficKind::Adsb => "adsb",
            TrafficKind::RemoteId => "remote_id",
            TrafficKind::Sbs => "sbs",
        }
    }
}

/// One report of an aircraft: every field it carried, in SI units. A report may carry only
/// some fields (an SBS `MSG,1` only the callsign, `MSG,4` only the velocity); the track keeps
/// the latest of each.
#[derive(Debug, Clone, PartialEq)]
pub struct TrafficReport {
    pub key: TrafficKey,
    pub kind: TrafficKind,
    pub callsign: Option<Box<str>>,
    pub position: Option<LatLon>,
    pub altitude: Option<Altitude>,
    /// Course over ground, degrees from true north.
    pub track_deg: Option<f64>,
    pub ground_speed_mps: Option<f64>,
    /// Positive up.
    pub vertical_rate_mps: Option<f64>,
    pub squawk: Option<u16>,
    /// Remote ID's operator position (`OPEN_DRONE_ID_SYSTEM`).
    pub operator: Option<LatLon>,
}

impl TrafficReport {
    /// A report of `key` carrying nothing yet.
    pub fn bare(key: TrafficKey, kind: TrafficKind) -> TrafficReport {
        TrafficReport {
            key,
            kind,
            callsign: None,
            position: None,
            altitude: None,
            track_deg: None,
            ground_speed_mps: None,
            vertical_rate_mps: None,
            squawk: None,
            operator: None,
        }
    }
}

/// Where one of our vehicles is, from its own position messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnFix {
    pub position: LatLon,
    /// Above mean sea level.
    pub msl_m: f64,
    /// Above the WGS-84 ellipsoid, when the message gave it (`GPS_RAW_INT.alt_ellipsoid`).
    pub ellipsoid_m: Option<f64>,
    /// `GLOBAL_POSITION_INT` (the autopilot's estimate) or `GPS_RAW_INT` (the receiver's raw
    /// fix, used while no estimate comes).
    pub estimate: bool,
}

/// Why a traffic report, or an SBS line, was refused. Counted per link by reason; never fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrafficReject {
    /// A latitude outside ±90°.
    Latitude,
    /// A longitude outside ±180°.
    Longitude,
    /// An altitude outside [`MIN_ALTITUDE_M`]..[`MAX_ALTITUDE_M`].
    Altitude,
    /// An SBS line that is not text (not ASCII), or longer than any SBS line.
    SbsNotText,
    /// An SBS line that is not a `MSG`, `SEL`, `ID`, `AIR`, `STA` or `CLK` record.
    SbsRecordType,
    /// An SBS `MSG` line with fewer than 22 fields.
    SbsFieldCount,
    /// An SBS `MSG` line whose transmission type is not 1 to 8.
    SbsTransmissionType,
    /// An SBS line whose hex ident is not a 24-bit ICAO address.
    SbsIcao,
    /// An SBS field that should be a number and is not.
    SbsNumber,
    /// An SBS line cut by the end of its connection.
    SbsTruncated,
    /// An `OPEN_DRONE_ID_BASIC_ID` with an empty UAS ID.
    RemoteIdUnknown,
}

impl TrafficReject {
    pub const ALL: [TrafficReject; 11] = [
        TrafficReject::Latitude,
        TrafficReject::Longitude,
        TrafficReject::Altitude,
        TrafficReject::SbsNotText,
        TrafficReject::SbsRecordType,
        TrafficReject::SbsFieldCount,
        TrafficReject::SbsTransmissionType,
        TrafficReject::SbsIcao,
        TrafficReject::SbsNumber,
        TrafficReject::SbsTruncated,
        TrafficReject::RemoteIdUnknown,
    ];
    pub const COUNT: usize = Self::ALL.len();

    /// The reason's name in `/status`, `/metrics` and `link` events.
    pub fn as_str(self) -> &'static str {
        match self {
            TrafficReject::Latitude => "latitude",
            TrafficReject::Longitude => "longitude",
            TrafficReject::Altitude => "altitude",
            TrafficReject::SbsNotText => "sbs_not_text",
            TrafficReject::SbsRecordType => "sbs_record_type",
            TrafficReject::SbsFieldCount => "sbs_field_count",
            TrafficReject::SbsTransmissionType => "sbs_transmission_type",
            TrafficReject::SbsIcao => "sbs_icao",
            TrafficReject::SbsNumber => "sbs_number",
            TrafficReject::SbsTruncated => "sbs_truncated",
            TrafficReject::RemoteIdUnknown => "remote_id_unknown",
        }
    }

    pub fn index(self) -> usize {
        Self::ALL
            .iter()
            .position(|r| *r == self)
            .expect("every reason is listed")
    }
}

/// A position checked: refused when a coordinate is outside the globe.
pub fn checked_position(lat: f64, lon: f64) -> Result<LatLon, TrafficReject> {
    if !lat.is_finite() || !(-90.0..=90.0).contains(&lat) {
        return Err(TrafficReject::Latitude);
    }
    if !lon.is_finite() || !(-180.0..=180.0).contains(&lon) {
        return Err(TrafficReject::Longitude);
    }
    Ok(LatLon { lat, lon })
}

/// An altitude checked: refused when no aircraft could be there.
pub fn checked_altitude(m: f64, reference: AltitudeRef) -> Result<Altitude, TrafficReject> {
    if !m.is_finite() || !(MIN_ALTITUDE_M..=MAX_ALTITUDE_M).contains(&m) {
        return Err(TrafficReject::Altitude);
    }
    Ok(Altitude { m, reference })
}

/// Counts of traffic reports on one link: accepted, and refused by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrafficCounters {
    /// Reports made into monitor input (ADS-B, Remote ID, SBS).
    pub reports: u64,
    /// SBS lines read (of every record type, parsed or not).
    pub sbs_lines: u64,
    pub rejects: [u64; TrafficReject::COUNT],
}

impl TrafficCounters {
    pub fn reject(&mut self, reason: TrafficReject) {
        self.rejects[reason.index()] += 1;
    }

    pub fn rejects_of(&self, reason: TrafficReject) -> u64 {
        self.rejects[reason.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_exactly() {
        assert_eq!(35_000.0 * FOOT_M, 10_668.0);
        assert!((100.0 * KNOT_MPS - 51.444_444).abs() < 1e-6);
        assert!((1_000.0 * FOOT_PER_MINUTE_MPS - 5.08).abs() < 1e-12);
    }

    #[test]
    fn positions_and_altitudes_outside_the_world_are_refused() {
        assert_eq!(checked_position(90.5, 0.0), Err(TrafficReject::Latitude));
        assert_eq!(checked_position(-91.0, 0.0), Err(TrafficReject::Latitude));
        assert_eq!(
            checked_position(f64::NAN, 0.0),
            Err(TrafficReject::Latitude)
        );
        assert_eq!(checked_position(10.0, 180.1), Err(TrafficReject::Longitude));
        assert!(checked_position(-90.0, -180.0).is_ok());
        let r = AltitudeRef::PressureStandard;
        assert_eq!(checked_altitude(-2_000.0, r), Err(TrafficReject::Altitude));
        assert_eq!(checked_altitude(60_000.0, r), Err(TrafficReject::Altitude));
        assert_eq!(
            checked_altitude(f64::INFINITY, r),
            Err(TrafficReject::Altitude)
        );
        assert_eq!(checked_altitude(12_000.0, r).unwrap().m, 12_000.0);
    }

    #[test]
    fn icao_addresses_read_and_print_as_six_hex_digits() {
        assert_eq!(parse_icao("a1b2c3"), Some(0xA1B2C3));
        assert_eq!(parse_icao("00ABCD"), Some(0xABCD));
        assert_eq!(parse_icao("1234567"), None);
        assert_eq!(parse_icao("G12345"), None);
        assert_eq!(parse_icao(""), None);
        assert_eq!(TrafficKey::Icao(0xABCD).to_string(), "00ABCD");
        assert_eq!(TrafficKey::Icao(0xABCD).icao().as_deref(), Some("00ABCD"));
        assert_eq!(TrafficKey::UasId("FOX123".into()).uas_id(), Some("FOX123"));
        assert_eq!(TrafficKey::Icao(0x4CA2D6 | NON_ICAO).to_string(), "~4CA2D6");
    }

    #[test]
    fn reject_names_are_unique_and_indexed() {
        let names: std::collections::BTreeSet<&str> =
            TrafficReject::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names.len(), TrafficReject::COUNT);
        for (i, r) in TrafficReject::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }
}
