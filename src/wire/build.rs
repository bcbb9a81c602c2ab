//! Builds MAVLink frames from a header and a payload: for tests, the load generator and the
//! benchmarks. The receiver itself never sends.

use super::dialect;
use mavlink::MAVLinkV2MessageRaw;

/// Who sends a frame and its sequence number.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub sysid: u8,
    pub compid: u8,
    pub seq: u8,
}

fn crc_extra(msgid: u32) -> u8 {
    dialect::lookup(msgid).map(|m| m.crc_extra).unwrap_or(0)
}

/// A MAVLink 1 frame. The CRC uses the dialect's CRC_EXTRA (0 for an unknown id).
pub fn v1(header: Header, msgid: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0xFE,
        payload.len() as u8,
        header.seq,
        header.sysid,
        header.compid,
        msgid,
    ];
    f.extend_from_slice(payload);
    let crc = mavlink::calculate_crc(&f[1..], crc_extra(msgid as u32));
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

/// A MAVLink 2 frame, with the payload's trailing zeros cut as MAVLink 2 senders do.
pub fn v2(header: Header, msgid: u32, payload: &[u8]) -> Vec<u8> {
    v2_with_flags(header, msgid, trim_zeros(payload), 0)
}

/// Cuts trailing zero bytes, keeping at least one byte.
pub fn trim_zeros(payload: &[u8]) -> &[u8] {
    let end = payload.iter().rposition(|&b| b != 0).map_or(1, |i| i + 1);
    &payload[..end.min(payload.len())]
}

/// A MAVLink 2 frame with the given incompatibility flags and the payload exactly as given.
pub fn v2_with_flags(header: Header, msgid: u32, payload: &[u8], incompat: u8) -> Vec<u8> {
    let id = msgid.to_le_bytes();
    let mut f = vec![
        0xFD,
        payload.len() as u8,
        incompat,
        0,
        header.seq,
        header.sysid,
        header.compid,
        id[0],
        id[1],
        id[2],
    ];
    f.extend_from_slice(payload);
    let crc = mavlink::calculate_crc(&f[1..], crc_extra(msgid));
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

/// A signed MAVLink 2 frame: signature block with `link_id`, the 48-bit `timestamp` (10 µs
/// units since 2015-01-01) and the SHA-256/48 signature under `key`.
pub fn v2_signed(
    header: Header,
    msgid: u32,
    payload: &[u8],
    key: &[u8; 32],
    link_id: u8,
    timestamp: u64,
) -> Vec<u8> {
    let mut f = v2_with_flags(header, msgid, trim_zeros(payload), 0x01);
    f.push(link_id);
    f.extend_from_slice(&timestamp.to_le_bytes()[..6]);
    let mut raw = [0u8; mavlink::consts::MAX_FRAME_SIZE];
    raw[..f.len()].copy_from_slice(&f);
    raw[f.len()..f.len() + 6].fill(0);
    let raw = MAVLinkV2MessageRaw::from_bytes_unparsed(raw);
    let mut signature = [0u8; 6];
    raw.calculate_signature(key, &mut signature);
    f.extend_from_slice(&signature);
    f
}

/// HEARTBEAT payload (9 bytes): custom_mode, type, autopilot, base_mode, system_status, version.
pub fn heartbeat_payload(mav_type: u8, autopilot: u8) -> [u8; 9] {
    [0, 0, 0, 0, mav_type, autopilot, 81, 4, 3]
}

/// A MAVLink 2 HEARTBEAT of (`sysid`, component 1) numbered `seq`: the frame most tests need
/// (a quadrotor, type 2, of autopilot 3).
pub fn heartbeat_v2(sysid: u8, seq: u8) -> Vec<u8> {
    v2(
        Header {
            sysid,
            compid: 1,
            seq,
        },
        0,
        &heartbeat_payload(2, 3),
    )
}

/// SYSTEM_TIME payload (12 bytes).
pub fn system_time_payload(time_unix_usec: u64, time_boot_ms: u32) -> [u8; 12] {
    let mut p = [0u8; 12];
    p[..8].copy_from_slice(&time_unix_usec.to_le_bytes());
    p[8..].copy_from_slice(&time_boot_ms.to_le_bytes());
    p
}

/// ATTITUDE payload (28 bytes).
pub fn attitude_payload(time_boot_ms: u32, roll: f32) -> [u8; 28] {
    let mut p = [0u8; 28];
    p[..4].copy_from_slice(&time_boot_ms.to_le_bytes());
    p[4..8].copy_from_slice(&roll.to_le_bytes());
    p[8..12].copy_from_slice(&0.25f32.to_le_bytes());
    p
}

/// GLOBAL_POSITION_INT payload (28 bytes): a vehicle's position, degE7 and mm above mean sea
/// level.
pub fn global_position_int_payload(lat_e7: i32, lon_e7: i32, msl_mm: i32) -> [u8; 28] {
    let mut p = [0u8; 28];
    p[4..8].copy_from_slice(&lat_e7.to_le_bytes());
    p[8..12].copy_from_slice(&lon_e7.to_le_bytes());
    p[12..16].copy_from_slice(&msl_mm.to_le_bytes());
    p
}

/// ADSB_VEHICLE payload (38 bytes) of an aircraft at a position and pressure (QNH) altitude,
/// with its callsign, every ADSB_FLAGS validity bit set but the squawk's.
pub fn adsb_vehicle_payload(
    icao: u32,
    lat_e7: i32,
    lon_e7: i32,
    altitude_mm: i32,
    callsign: &str,
) -> Vec<u8> {
    // Wire order: the 4-byte fields, the 2-byte ones, then the bytes.
    let mut p = Vec::with_capacity(38);
    for v in [icao as i32, lat_e7, lon_e7, altitude_mm] {
        p.extend_from_slice(&v.to_le_bytes());
    }
    // heading 90.00°, 250 m/s, level, flags (coords, altitude, heading, velocity, callsign,
    // vertical velocity), squawk.
    for v in [9_000u16, 25_000, 0, 1 | 2 | 4 | 8 | 16 | 128, 7000] {
        p.extend_from_slice(&v.to_le_bytes());
    }
    p.push(0); // altitude_type: pressure (QNH)
    let mut text = [0u8; 9];
    let n = callsign.len().min(8);
    text[..n].copy_from_slice(&callsign.as_bytes()[..n]);
    p.extend_from_slice(&text);
    p.extend_from_slice(&[1, 0]); // emitter_type, tslc
    p
}

/// A deterministic loss pattern for tests and benchmarks: whether frame `index` is lost on the
/// path `salt`, about `percent` in a hundred, the same every run (a 64-bit mix of the two).
pub fn lost(index: u64, salt: u64, percent: u64) -> bool {
    let mut x = index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    x % 100 < percent
}
