//! The MAVLink messages that say where aircraft are (pure): other traffic (`ADSB_VEHICLE` 246,
//! `OPEN_DRONE_ID_BASIC_ID` 12900, `OPEN_DRONE_ID_LOCATION` 12901, `OPEN_DRONE_ID_SYSTEM` 12904)
//! and our own vehicles' positions (`GLOBAL_POSITION_INT` 33, `GPS_RAW_INT` 24), read into the
//! values of [`crate::traffic`] with their units converted and their "unknown" markers honoured.
//!
//! One reading for both places a message comes from: a frame's payload, read by name through
//! the dialect's field table ([`super::table`]), and a receive-log line's `fields` object
//! (`analyze`), through the one trait [`FieldSource`]. Impossible values are refused with a
//! [`TrafficReject`], never passed on.

use super::table::{self, FieldType, MessageDef};
use crate::traffic::{
    checked_altitude, checked_position, AltitudeRef, LatLon, OwnFix, TrafficKey, TrafficKind,
    TrafficReject, TrafficReport,
};

pub const GPS_RAW_INT: u32 = 24;
pub const GLOBAL_POSITION_INT: u32 = 33;
pub const ADSB_VEHICLE: u32 = 246;
pub const OPEN_DRONE_ID_BASIC_ID: u32 = 12900;
pub const OPEN_DRONE_ID_LOCATION: u32 = 12901;
pub const OPEN_DRONE_ID_SYSTEM: u32 = 12904;

/// Every message this module reads.
pub const MESSAGES: [u32; 6] = [
    GPS_RAW_INT,
    GLOBAL_POSITION_INT,
    ADSB_VEHICLE,
    OPEN_DRONE_ID_BASIC_ID,
    OPEN_DRONE_ID_LOCATION,
    OPEN_DRONE_ID_SYSTEM,
];

/// `ADSB_FLAGS` bits (common.xml).
const ADSB_VALID_COORDS: u16 = 1;
const ADSB_VALID_ALTITUDE: u16 = 2;
const ADSB_VALID_HEADING: u16 = 4;
const ADSB_VALID_VELOCITY: u16 = 8;
const ADSB_VALID_CALLSIGN: u16 = 16;
const ADSB_VALID_SQUAWK: u16 = 32;
const ADSB_VERTICAL_VELOCITY_VALID: u16 = 128;
/// `ADSB_ALTITUDE_TYPE_GEOMETRIC`; 0 is `ADSB_ALTITUDE_TYPE_PRESSURE_QNH`.
const ADSB_ALTITUDE_GEOMETRIC: i64 = 1;
/// GPS_FIX_TYPE_3D_FIX: the first fix with an altitude.
const GPS_FIX_3D: i64 = 3;
/// Remote ID's "unknown" markers (common.xml).
const ODID_UNKNOWN_ALTITUDE_M: f64 = -1000.0;
const ODID_UNKNOWN_DIRECTION_CDEG: i64 = 36100;
const ODID_UNKNOWN_SPEED_CMS: i64 = 25500;
const ODID_UNKNOWN_VERTICAL_CMS: i64 = 6300;

/// Where a message's fields are read from, by their names in the definition.
pub trait FieldSource {
    /// An integer field (any width, signed or not).
    fn int(&self, name: &str) -> Option<i64>;
    /// A `float` or `double` field.
    fn float(&self, name: &str) -> Option<f64>;
    /// A `char[N]` or `uint8_t[N]` field's bytes.
    fn bytes(&self, name: &str) -> Option<Vec<u8>>;
}

/// A frame's payload, read through the field table (zero-extended when MAVLink 2 cut its
/// trailing zeros).
pub struct Payload {
    message: &'static MessageDef,
    full: [u8; 256],
}

impl Payload {
    pub fn new(msgid: u32, payload: &[u8]) -> Option<Payload> {
        let message = table::lookup(msgid)?;
        let mut full = [0u8; 256];
        let n = payload.len().min(full.len());
        full[..n].copy_from_slice(&payload[..n]);
        Some(Payload { message, full })
    }

    fn field(&self, name: &str) -> Option<(&'static table::FieldDef, &[u8])> {
        let f = self.message.fields.iter().find(|f| f.name == name)?;
        Some((f, &self.full[f.offset as usize..]))
    }
}

impl FieldSource for Payload {
    fn int(&self, name: &str) -> Option<i64> {
        let (f, at) = self.field(name)?;
        if f.count != 0 {
            return None;
        }
        Some(match f.ty {
            FieldType::U8 | FieldType::Char => at[0] as i64,
            FieldType::I8 => at[0] as i8 as i64,
            FieldType::U16 => u16::from_le_bytes([at[0], at[1]]) as i64,
            FieldType::I16 => i16::from_le_bytes([at[0], at[1]]) as i64,
            FieldType::U32 => u32::from_le_bytes(le(at)) as i64,
            FieldType::I32 => i32::from_le_bytes(le(at)) as i64,
            FieldType::U64 => u64::from_le_bytes(le(at)) as i64,
            FieldType::I64 => i64::from_le_bytes(le(at)),
            FieldType::F32 | FieldType::F64 => return None,
        })
    }

    fn float(&self, name: &str) -> Option<f64> {
        let (f, at) = self.field(name)?;
        match (f.ty, f.count) {
            (FieldType::F32, 0) => Some(f32::from_le_bytes(le(at)) as f64),
            (FieldType::F64, 0) => Some(f64::from_le_bytes(le(at))),
            _ => None,
        }
    }

    fn bytes(&self, name: &str) -> Option<Vec<u8>> {
        let (f, at) = self.field(name)?;
        matches!(f.ty, FieldType::Char | FieldType::U8)
            .then(|| at[..(f.count as usize).max(1)].to_vec())
    }
}

fn le<const N: usize>(at: &[u8]) -> [u8; N] {
    at[..N].try_into().expect("field inside the payload")
}

/// A receive-log line's `fields` object, as the receiver writes it ([`super::fields`]):
/// integers as integers, floats as numbers, `char[N]` as a string of one character per byte,
/// other arrays as arrays of integers.
impl FieldSource for serde_json::Value {
    fn int(&self, name: &str) -> Option<i64> {
        self.get(name)?.as_i64()
    }

    fn float(&self, name: &str) -> Option<f64> {
        match self.get(name)? {
            serde_json::Value::String(s) => match s.as_str() {
                "NaN" => Some(f64::NAN),
                "Infinity" => Some(f64::INFINITY),
                "-Infinity" => Some(f64::NEG_INFINITY),
                _ => None,
            },
            v => v.as_f64(),
        }
    }

    fn bytes(&self, name: &str) -> Option<Vec<u8>> {
        match self.get(name)? {
            serde_json::Value::String(s) => {
                s.chars().map(|c| u8::try_from(c as u32).ok()).collect()
            }
            serde_json::Value::Array(items) => items
                .iter()
                .map(|v| v.as_u64().and_then(|n| u8::try_from(n).ok()))
                .collect(),
            _ => None,
        }
    }
}

/// Which Remote ID broadcaster a message is about: `id_or_mac` when the receiver filled it in
/// (messages heard from other aircraft), else none (the sender's own, told apart by the caller
/// by link and sender).
pub type RemoteIdSource = Option<[u8; 20]>;

/// What one of these messages says.
#[derive(Debug, Clone, PartialEq)]
pub enum TrafficMessage {
    /// A whole report (`ADSB_VEHICLE`: keyed by its ICAO address).
    Report(TrafficReport),
    /// A Remote ID broadcaster's UAS ID (`OPEN_DRONE_ID_BASIC_ID`).
    RemoteIdBasic {
        source: RemoteIdSource,
        uas_id: Box<str>,
    },
    /// Where a Remote ID broadcaster is (`OPEN_DRONE_ID_LOCATION`): a report whose key is
    /// filled in from its `BASIC_ID`.
    RemoteIdLocation {
        source: RemoteIdSource,
        report: Box<TrafficReport>,
    },
    /// Where its operator is (`OPEN_DRONE_ID_SYSTEM`).
    RemoteIdSystem {
        source: RemoteIdSource,
        operator: Option<LatLon>,
    },
    /// One of our vehicles' own position (`GLOBAL_POSITION_INT`, `GPS_RAW_INT`).
    OwnFix(OwnFix),
}

/// Reads message `msgid` from `fields`: `None` when it is none of [`MESSAGES`] or says nothing
/// usable (no fix yet); a refusal when a value is impossible.
pub fn read(msgid: u32, fields: &dyn FieldSource) -> Option<Result<TrafficMessage, TrafficReject>> {
    match msgid {
        ADSB_VEHICLE => Some(adsb_vehicle(fields).map(TrafficMessage::Report)),
        GLOBAL_POSITION_INT => global_position_int(fields).map(|r| r.map(TrafficMessage::OwnFix)),
        GPS_RAW_INT => gps_raw_int(fields).map(|r| r.map(TrafficMessage::OwnFix)),
        OPEN_DRONE_ID_BASIC_ID => Some(remote_id_basic(fields)),
        OPEN_DRONE_ID_LOCATION => Some(remote_id_location(fields)),
        OPEN_DRONE_ID_SYSTEM => Some(remote_id_system(fields)),
        _ => None,
    }
}

/// [`read`] of a frame's payload.
pub fn read_payload(msgid: u32, payload: &[u8]) -> Option<Result<TrafficMessage, TrafficReject>> {
    if !MESSAGES.contains(&msgid) {
        return None;
    }
    read(msgid, &Payload::new(msgid, payload)?)
}

fn deg_e7(fields: &dyn FieldSource, name: &str) -> Option<f64> {
    fields.int(name).map(|v| v as f64 * 1e-7)
}

fn adsb_vehicle(f: &dyn FieldSource) -> Result<TrafficReport, TrafficReject> {
    let flags = f.int("flags").unwrap_or(0) as u16;
    let has = |bit: u16| flags & bit != 0;
    let icao = f.int("ICAO_address").unwrap_or(0) as u32 & 0x00FF_FFFF;
    let mut report = TrafficReport::bare(TrafficKey::Icao(icao), TrafficKind::Adsb);
    let (lat, lon) = (f.int("lat"), f.int("lon"));
    if has(ADSB_VALID_COORDS) && lat != Some(i32::MAX as i64) && lon != Some(i32::MAX as i64) {
        let (Some(lat), Some(lon)) = (deg_e7(f, "lat"), deg_e7(f, "lon")) else {
            return Err(TrafficReject::Latitude);
        };
        report.position = Some(checked_position(lat, lon)?);
    }
    match f.int("altitude") {
        Some(mm) if has(ADSB_VALID_ALTITUDE) && mm != i32::MAX as i64 => {
            let reference = if f.int("altitude_type") == Some(ADSB_ALTITUDE_GEOMETRIC) {
                AltitudeRef::Geometric
            } else {
                AltitudeRef::PressureQnh
            };
            report.altitude = Some(checked_altitude(mm as f64 / 1000.0, reference)?);
        }
        _ => {}
    }
    if has(ADSB_VALID_HEADING) {
        report.track_deg = f
            .int("heading")
            .filter(|&c| c != u16::MAX as i64)
            .map(|c| c as f64 / 100.0);
    }
    if has(ADSB_VALID_VELOCITY) {
        report.ground_speed_mps = f
            .int("hor_velocity")
            .filter(|&v| v != u16::MAX as i64)
            .map(|v| v as f64 / 100.0);
    }
    if has(ADSB_VERTICAL_VELOCITY_VALID) {
        report.vertical_rate_mps = f
            .int("ver_velocity")
            .filter(|&v| v != i16::MAX as i64)
            .map(|v| v as f64 / 100.0);
    }
    if has(ADSB_VALID_CALLSIGN) {
        report.callsign = f.bytes("callsign").and_then(|b| text(&b));
    }
    if has(ADSB_VALID_SQUAWK) {
        report.squawk = f.int("squawk").and_then(|s| u16::try_from(s).ok());
    }
    Ok(report)
}

/// Printable ASCII up to the first NUL, trimmed; `None` when empty or not text.
fn text(bytes: &[u8]) -> Option<Box<str>> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let cut = &bytes[..end];
    if !cut.iter().all(|b| (0x20..0x7F).contains(b)) {
        return None;
    }
    let trimmed = std::str::from_utf8(cut).ok()?.trim();
    (!trimmed.is_empty()).then(|| trimmed.into())
}

/// A fix at (0, 0) is a sender with no fix yet, not an aircraft in the Gulf of Guinea.
fn own_position(f: &dyn FieldSource) -> Option<Result<LatLon, TrafficReject>> {
    let (lat, lon) = (f.int("lat")?, f.int("lon")?);
    if lat == 0 && lon == 0 {
        return None;
    }
    Some(checked_position(lat as f64 * 1e-7, lon as f64 * 1e-7))
}

fn global_position_int(f: &dyn FieldSource) -> Option<Result<OwnFix, TrafficReject>> {
    let position = match own_position(f)? {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let msl = f.int("alt")? as f64 / 1000.0;
    Some(
        checked_altitude(msl, AltitudeRef::MeanSeaLevel).map(|a| OwnFix {
            position,
            msl_m: a.m,
            ellipsoid_m: None,
            estimate: true,
        }),
    )
}

fn gps_raw_int(f: &dyn FieldSource) -> Option<Result<OwnFix, TrafficReject>> {
    if f.int("fix_type")? < GPS_FIX_3D {
        return None;
    }
    let position = match own_position(f)? {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let msl = match checked_altitude(f.int("alt")? as f64 / 1000.0, AltitudeRef::MeanSeaLevel) {
        Ok(a) => a.m,
        Err(e) => return Some(Err(e)),
    };
    // An extension field: 0 when the sender did not fill it (or MAVLink 1 could not carry it).
    let ellipsoid = match f.int("alt_ellipsoid").filter(|&mm| mm != 0) {
        Some(mm) => match checked_altitude(mm as f64 / 1000.0, AltitudeRef::Ellipsoid) {
            Ok(a) => Some(a.m),
            Err(e) => return Some(Err(e)),
        },
        None => None,
    };
    Some(Ok(OwnFix {
        position,
        msl_m: msl,
        ellipsoid_m: ellipsoid,
        estimate: false,
    }))
}

fn remote_id_source(f: &dyn FieldSource) -> RemoteIdSource {
    let bytes = f.bytes("id_or_mac")?;
    let mut id = [0u8; 20];
    let n = bytes.len().min(20);
    id[..n].copy_from_slice(&bytes[..n]);
    (id != [0u8; 20]).then_some(id)
}

/// A UAS ID as text: printable ASCII as it is (a serial number, a registration); anything else
/// (a UUID, a session id) as hex of its bytes without the trailing zero padding.
fn uas_id_text(bytes: &[u8]) -> Option<Box<str>> {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let id = &bytes[..end];
    if id.is_empty() {
        return None;
    }
    if let Some(t) = text(id).filter(|t| t.len() == id.len()) {
        return Some(t);
    }
    Some(
        id.iter()
            .map(|b| format!("{b:02X}"))
            .collect::<String>()
            .into(),
    )
}

fn remote_id_basic(f: &dyn FieldSource) -> Result<TrafficMessage, TrafficReject> {
    let uas_id = f
        .bytes("uas_id")
        .and_then(|b| uas_id_text(&b))
        .ok_or(TrafficReject::RemoteIdUnknown)?;
    Ok(TrafficMessage::RemoteIdBasic {
        source: remote_id_source(f),
        uas_id,
    })
}

fn remote_id_location(f: &dyn FieldSource) -> Result<TrafficMessage, TrafficReject> {
    // The key is filled in from the broadcaster's BASIC_ID.
    let mut report = TrafficReport::bare(TrafficKey::UasId("".into()), TrafficKind::RemoteId);
    let (lat, lon) = (
        f.int("latitude").unwrap_or(0),
        f.int("longitude").unwrap_or(0),
    );
    if lat != 0 || lon != 0 {
        report.position = Some(checked_position(lat as f64 * 1e-7, lon as f64 * 1e-7)?);
    }
    let known = |m: Option<f64>| m.filter(|&m| m != ODID_UNKNOWN_ALTITUDE_M);
    report.altitude = match (
        known(f.float("altitude_geodetic")),
        known(f.float("altitude_barometric")),
    ) {
        (Some(m), _) => Some(checked_altitude(m, AltitudeRef::Ellipsoid)?),
        (None, Some(m)) => Some(checked_altitude(m, AltitudeRef::PressureStandard)?),
        (None, None) => None,
    };
    report.track_deg = f
        .int("direction")
        .filter(|&c| c != ODID_UNKNOWN_DIRECTION_CDEG)
        .map(|c| c as f64 / 100.0);
    report.ground_speed_mps = f
        .int("speed_horizontal")
        .filter(|&v| v != ODID_UNKNOWN_SPEED_CMS)
        .map(|v| v as f64 / 100.0);
    report.vertical_rate_mps = f
        .int("speed_vertical")
        .filter(|&v| v != ODID_UNKNOWN_VERTICAL_CMS)
        .map(|v| v as f64 / 100.0);
    Ok(TrafficMessage::RemoteIdLocation {
        source: remote_id_source(f),
        report: Box::new(report),
    })
}

fn remote_id_system(f: &dyn FieldSource) -> Result<TrafficMessage, TrafficReject> {
    let (lat, lon) = (
        f.int("operator_latitude").unwrap_or(0),
        f.int("operator_longitude").unwrap_or(0),
    );
    let operator = if lat != 0 || lon != 0 {
        Some(checked_position(lat as f64 * 1e-7, lon as f64 * 1e-7)?)
    } else {
        None
    };
    Ok(TrafficMessage::RemoteIdSystem {
        source: remote_id_source(f),
        operator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An ADSB_VEHICLE payload in wire order (base fields by size: 4-byte, 2-byte, 1-byte).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn adsb_payload(
        icao: u32,
        lat_e7: i32,
        lon_e7: i32,
        alt_mm: i32,
        altitude_type: u8,
        heading_cdeg: u16,
        hor_cms: u16,
        ver_cms: i16,
        callsign: &str,
        flags: u16,
        squawk: u16,
    ) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&icao.to_le_bytes());
        p.extend_from_slice(&lat_e7.to_le_bytes());
        p.extend_from_slice(&lon_e7.to_le_bytes());
        p.extend_from_slice(&alt_mm.to_le_bytes());
        p.extend_from_slice(&heading_cdeg.to_le_bytes());
        p.extend_from_slice(&hor_cms.to_le_bytes());
        p.extend_from_slice(&ver_cms.to_le_bytes());
        p.extend_from_slice(&flags.to_le_bytes());
        p.extend_from_slice(&squawk.to_le_bytes());
        p.push(altitude_type);
        let mut cs = [0u8; 9];
        cs[..callsign.len()].copy_from_slice(callsign.as_bytes());
        p.extend_from_slice(&cs);
        p.push(1); // emitter_type
        p.push(0); // tslc
        p
    }

    const ALL_VALID: u16 = 1 | 2 | 4 | 8 | 16 | 32 | 128;

    #[test]
    fn adsb_vehicle_reads_in_si_units_with_its_altitude_reference() {
        let p = adsb_payload(
            0xA1B2C3,
            473_977_420,
            85_455_940,
            914_400,
            0,
            27_050,
            12_345,
            -254,
            "N123AB",
            ALL_VALID,
            7000,
        );
        assert_eq!(p.len(), table::lookup(ADSB_VEHICLE).unwrap().len as usize);
        let Some(Ok(TrafficMessage::Report(r))) = read_payload(ADSB_VEHICLE, &p) else {
            panic!("not a report");
        };
        assert_eq!(r.key, TrafficKey::Icao(0xA1B2C3));
        assert_eq!(r.callsign.as_deref(), Some("N123AB"));
        let pos = r.position.unwrap();
        assert!((pos.lat - 47.397_742).abs() < 1e-9 && (pos.lon - 8.545_594).abs() < 1e-9);
        let alt = r.altitude.unwrap();
        assert_eq!((alt.m, alt.reference), (914.4, AltitudeRef::PressureQnh));
        assert_eq!(r.track_deg, Some(270.5));
        assert_eq!(r.ground_speed_mps, Some(123.45));
        assert_eq!(r.vertical_rate_mps, Some(-2.54));
        assert_eq!(r.squawk, Some(7000));
        // Geometric: said so.
        let p = adsb_payload(1, 0, 0, 1000, 1, 0, 0, 0, "", 2, 0);
        let Some(Ok(TrafficMessage::Report(r))) = read_payload(ADSB_VEHICLE, &p) else {
            panic!()
        };
        assert_eq!(r.altitude.unwrap().reference, AltitudeRef::Geometric);
        assert_eq!(r.position, None, "no VALID_COORDS flag: no position");
    }

    #[test]
    fn unknown_markers_are_unknown_and_impossible_values_refused() {
        let p = adsb_payload(
            1,
            i32::MAX,
            i32::MAX,
            i32::MAX,
            0,
            u16::MAX,
            u16::MAX,
            i16::MAX,
            "",
            ALL_VALID,
            0,
        );
        let Some(Ok(TrafficMessage::Report(r))) = read_payload(ADSB_VEHICLE, &p) else {
            panic!()
        };
        assert_eq!(
            (
                r.position,
                r.altitude,
                r.track_deg,
                r.ground_speed_mps,
                r.vertical_rate_mps
            ),
            (None, None, None, None, None)
        );
        let far_north = adsb_payload(1, 910_000_000, 0, 0, 0, 0, 0, 0, "", 1, 0);
        assert_eq!(
            read_payload(ADSB_VEHICLE, &far_north),
            Some(Err(TrafficReject::Latitude))
        );
        let too_high = adsb_payload(1, 0, 0, 60_000_000, 0, 0, 0, 0, "", 2, 0);
        assert_eq!(
            read_payload(ADSB_VEHICLE, &too_high),
            Some(Err(TrafficReject::Altitude))
        );
    }

    #[test]
    fn own_positions_from_global_position_int_and_gps_raw_int() {
        // GLOBAL_POSITION_INT: time_boot_ms, lat, lon, alt, relative_alt, vx, vy, vz, hdg.
        let mut p = Vec::new();
        for v in [1000i32, 473_977_420, 85_455_940, 488_123, 20_000] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p.extend_from_slice(&[0u8; 8]);
        let Some(Ok(TrafficMessage::OwnFix(fix))) = read_payload(GLOBAL_POSITION_INT, &p) else {
            panic!()
        };
        assert_eq!(
            (fix.msl_m, fix.ellipsoid_m, fix.estimate),
            (488.123, None, true)
        );
        // No fix yet: nothing.
        let none = [0u8; 28];
        assert_eq!(read_payload(GLOBAL_POSITION_INT, &none), None);
        // GPS_RAW_INT from its fields as a receive log writes them, with alt_ellipsoid.
        let fields = json!({"time_usec": 1, "fix_type": 3, "lat": 473_977_420, "lon": 85_455_940,
            "alt": 488_000, "eph": 100, "epv": 100, "vel": 0, "cog": 0, "satellites_visible": 12,
            "alt_ellipsoid": 536_000, "h_acc": 0, "v_acc": 0, "vel_acc": 0, "hdg_acc": 0, "yaw": 0});
        let Some(Ok(TrafficMessage::OwnFix(fix))) = read(GPS_RAW_INT, &fields) else {
            panic!()
        };
        assert_eq!(
            (fix.msl_m, fix.ellipsoid_m, fix.estimate),
            (488.0, Some(536.0), false)
        );
        let no_fix = json!({"fix_type": 1, "lat": 1, "lon": 1, "alt": 0});
        assert_eq!(read(GPS_RAW_INT, &no_fix), None);
    }

    #[test]
    fn remote_id_reads_its_id_location_and_operator_from_fields() {
        let mut uas = [0u8; 20];
        uas[..10].copy_from_slice(b"FOX-RID-77");
        let basic = json!({"target_system": 0, "target_component": 0, "id_or_mac": vec![0u8; 20],
            "id_type": 1, "ua_type": 2, "uas_id": uas.to_vec()});
        assert_eq!(
            read(OPEN_DRONE_ID_BASIC_ID, &basic),
            Some(Ok(TrafficMessage::RemoteIdBasic {
                source: None,
                uas_id: "FOX-RID-77".into()
            }))
        );
        let binary = json!({"id_or_mac": vec![1u8; 20], "uas_id": [0x12, 0xAB, 0, 0]});
        let Some(Ok(TrafficMessage::RemoteIdBasic { source, uas_id })) =
            read(OPEN_DRONE_ID_BASIC_ID, &binary)
        else {
            panic!()
        };
        assert_eq!((source, &*uas_id), (Some([1u8; 20]), "12AB"));
        let empty = json!({"id_or_mac": vec![0u8; 20], "uas_id": vec![0u8; 20]});
        assert_eq!(
            read(OPEN_DRONE_ID_BASIC_ID, &empty),
            Some(Err(TrafficReject::RemoteIdUnknown))
        );
        let location = json!({"id_or_mac": vec![0u8; 20], "status": 2, "direction": 36100,
            "speed_horizontal": 1250, "speed_vertical": 6300, "latitude": 473_977_420,
            "longitude": 85_455_940, "altitude_barometric": 520.5, "altitude_geodetic": -1000.0,
            "height_reference": 0, "height": 30.0});
        let Some(Ok(TrafficMessage::RemoteIdLocation { report, .. })) =
            read(OPEN_DRONE_ID_LOCATION, &location)
        else {
            panic!()
        };
        let alt = report.altitude.unwrap();
        assert_eq!(
            (alt.m, alt.reference),
            (520.5, AltitudeRef::PressureStandard)
        );
        assert_eq!(
            (
                report.track_deg,
                report.ground_speed_mps,
                report.vertical_rate_mps
            ),
            (None, Some(12.5), None)
        );
        let system = json!({"id_or_mac": vec![0u8; 20], "operator_latitude": 473_900_000,
            "operator_longitude": 85_400_000});
        let Some(Ok(TrafficMessage::RemoteIdSystem { operator, .. })) =
            read(OPEN_DRONE_ID_SYSTEM, &system)
        else {
            panic!()
        };
        assert!((operator.unwrap().lat - 47.39).abs() < 1e-9);
    }

    /// A receive log written with the default `fields` carries every message read here, so
    /// `analyze` replays the traffic.
    #[test]
    fn the_default_fields_carry_every_traffic_message() {
        let default =
            super::super::fields::FieldSelection::parse(&super::super::fields::DEFAULT_FIELDS)
                .unwrap();
        for id in MESSAGES {
            assert!(default.includes(id), "{id}");
        }
    }

    #[test]
    fn a_payload_and_its_logged_fields_read_alike() {
        let p = adsb_payload(
            0xABCDEF,
            -338_688_000,
            1_512_093_000,
            1_234_567,
            1,
            9_000,
            5_000,
            100,
            "QFA1",
            ALL_VALID,
            1200,
        );
        let mut json = Vec::new();
        assert!(super::super::fields::write_json(
            &mut json,
            ADSB_VEHICLE,
            &p
        ));
        let fields: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(read(ADSB_VEHICLE, &fields), read_payload(ADSB_VEHICLE, &p));
    }
}
