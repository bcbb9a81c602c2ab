//! The daemon's state as one plain value ([`StatusSnapshot`]) for `/status`, `/metrics`, the
//! board and the `status` verb, made from what the pipeline core holds at a time it is given.
//! Pure.

use super::links::LinkStatus;
use crate::link::LinkId;
use crate::monitor::heartbeat::{describe, LastHeartbeat};
use crate::monitor::latency::LatencyEstimate;
use crate::monitor::radio::{sik_dbm, LatestRadio};
use crate::monitor::traffic::TrafficMonitor;
use crate::monitor::{format_utc_ms, ClockStatus, VehicleStatus, Watch};
use crate::status::{
    ClockSnapshot, DeliveryFrames, HeartbeatSnapshot, LinkSnapshot, LinkTrafficSnapshot,
    MessageCount, MessageStreamSnapshot, NearbyTraffic, PositionSnapshot, RadioSnapshot,
    SequenceLoss, StatusSnapshot, StreamSnapshot, TrafficSnapshot, TrafficTotalsSnapshot,
    VehicleLinkSnapshot, VehicleSnapshot, WebhookSnapshot,
};
use crate::traffic::TrafficReject;
use crate::wire::sequence::SeqStats;
use std::collections::BTreeMap;

/// Everything a snapshot is made of.
pub struct Parts<'a> {
    pub now_ns: i64,
    pub started_utc_ns: i64,
    pub watch: &'a Watch,
    pub clock: Option<ClockStatus>,
    pub links: &'a [LinkStatus],
    pub receipts_by_message: &'a BTreeMap<(LinkId, u8, &'static str), u64>,
    pub streams: Vec<StreamSnapshot>,
    pub webhooks: Vec<WebhookSnapshot>,
}

pub fn snapshot(parts: Parts<'_>) -> StatusSnapshot {
    let Parts {
        now_ns,
        started_utc_ns,
        watch,
        clock,
        links,
        receipts_by_message,
        streams,
        webhooks,
    } = parts;
    // A system's sequence counts over every link it was heard on.
    let mut by_sysid: BTreeMap<u8, SeqStats> = BTreeMap::new();
    let mut lost_by_link: BTreeMap<(LinkId, u8), u64> = BTreeMap::new();
    for (link, status) in LinkId::all(links.len()).zip(links) {
        for (&sysid, f) in &status.sequences {
            by_sysid.entry(sysid).or_default().add(f);
            *lost_by_link.entry((link, sysid)).or_default() += f.lost;
        }
    }
    let vehicles = watch
        .gap
        .vehicles()
        .into_iter()
        .map(|v| vehicle_snapshot(now_ns, watch, links, &v, &by_sysid))
        .collect();
    let radios = watch.radios.latest();
    let link_snapshots = LinkId::all(links.len())
        .zip(links)
        .map(|(link, status)| link_snapshot(link, status, &radios))
        .collect();
    let name = |link: LinkId| links[link.index()].name.clone();
    StatusSnapshot {
        utc: format_utc_ms(now_ns),
        started_utc: format_utc_ms(started_utc_ns),
        version: env!("CARGO_PKG_VERSION").to_string(),
        clock: clock.map(|c| ClockSnapshot {
            synchronised: c.synchronised,
            max_error_us: c.max_error_us,
        }),
        vehicles,
        links: link_snapshots,
        streams,
        open_gaps: watch.gap.open_gaps().len(),
        receipts: receipts_by_message
            .iter()
            .map(|(&(link, sysid, msg), &count)| MessageCount {
                link: name(link),
                sysid,
                msg: msg.to_string(),
                count,
            })
            .collect(),
        sequence_lost: lost_by_link
            .into_iter()
            .map(|((link, sysid), lost)| SequenceLoss {
                link: name(link),
                sysid,
                lost,
            })
            .collect(),
        webhooks,
        http: None,
        publish: None,
        forwards: Vec::new(),
        sites: Vec::new(),
        traffic: traffic_snapshot(now_ns, &watch.traffic),
        traffic_limits: Some({
            let c = watch.traffic.config();
            crate::status::TrafficLimits {
                horizontal_m: c.horizontal_m,
                vertical_m: c.vertical_m,
                stale_s: c.stale_ns as f64 / 1e9,
            }
        }),
        traffic_totals: {
            let t = watch.traffic.totals();
            TrafficTotalsSnapshot {
                reports: t.reports,
                own_reports: t.own_reports,
                refused_tracks: t.refused_tracks,
                lost: t.lost,
                proximities_opened: t.proximities_opened,
            }
        },
    }
}

/// Every track, by key.
fn traffic_snapshot(now_ns: i64, traffic: &TrafficMonitor) -> Vec<TrafficSnapshot> {
    let mut open: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (sysid, key) in traffic.open_proximities() {
        open.entry(key.to_string()).or_default().push(*sysid);
    }
    let mut tracks: Vec<TrafficSnapshot> = traffic
        .tracks()
        .map(|t| {
            let key = t.key.to_string();
            TrafficSnapshot {
                icao: t.key.icao(),
                uas_id: t.key.uas_id().map(str::to_string),
                callsign: t.callsign.as_deref().map(str::to_string),
                lat: t.position.map(|p| p.lat),
                lon: t.position.map(|p| p.lon),
                altitude_m: t.altitude.map(|a| a.m),
                altitude_ref: t.altitude.map(|a| a.reference.as_str().to_string()),
                track_deg: t.track_deg,
                ground_speed_mps: t.ground_speed_mps,
                vertical_rate_mps: t.vertical_rate_mps,
                squawk: t.squawk,
                source: t.source(),
                last_utc: format_utc_ms(t.last_ns),
                age_s: (now_ns - t.last_ns) as f64 / 1e9,
                reports: t.reports,
                own_sysid: t.own_sysid,
                proximity: open.remove(&key).unwrap_or_default(),
                key,
            }
        })
        .collect();
    tracks.sort_by(|a, b| a.key.cmp(&b.key));
    tracks
}

/// The traffic near vehicle `sysid` (five times the horizontal threshold), nearest first, at
/// most this many.
const NEARBY_SHOWN: usize = 12;

fn nearby_traffic(traffic: &TrafficMonitor, sysid: u8) -> Vec<NearbyTraffic> {
    let within = 5.0 * traffic.config().horizontal_m;
    traffic
        .nearby(sysid, within)
        .into_iter()
        .take(NEARBY_SHOWN)
        .map(|(t, m)| NearbyTraffic {
            key: t.key.to_string(),
            callsign: t.callsign.as_deref().map(str::to_string),
            horizontal_m: (m.horizontal_m * 10.0).round() / 10.0,
            vertical_m: m.vertical_m.map(|v| (v * 10.0).round() / 10.0),
            vertical_basis: m.vertical_basis,
            bearing_deg: (m.bearing_deg * 10.0).round() / 10.0,
            proximity: traffic.is_open(sysid, &t.key),
        })
        .collect()
}

fn vehicle_snapshot(
    now_ns: i64,
    watch: &Watch,
    links: &[LinkStatus],
    v: &VehicleStatus,
    by_sysid: &BTreeMap<u8, SeqStats>,
) -> VehicleSnapshot {
    let ms = |ns: i64| ns as f64 / 1e6;
    let latency = watch.latency.estimate(v.sysid, now_ns);
    let as_latency = |figure: fn(&LatencyEstimate) -> i64| {
        latency.and_then(|l| l.as_latency_ns(figure(&l))).map(ms)
    };
    let heartbeats = watch.heartbeats.get(v.sysid);
    VehicleSnapshot {
        sysid: v.sysid,
        name: v.name.clone(),
        links: v.links.clone(),
        last_heard_utc: v.last_recv_ns.map(format_utc_ms),
        heartbeat_age_s: v.last_recv_ns.map(|t| (now_ns - t) as f64 / 1e9),
        expected_interval_s: v.expected_interval_ns as f64 / 1e9,
        open_gap: v.open_gap.clone(),
        latency_p50_ms: as_latency(|l| l.p50_ns),
        latency_p95_ms: as_latency(|l| l.p95_ns),
        latency_max_ms: as_latency(|l| l.max_ns),
        latency_resolution_ms: latency.map(|l| ms(l.resolution_ns)),
        clock_offset_ms: latency.and_then(|l| l.clock_offset_ns).map(ms),
        latency_histogram: watch.latency.histogram(v.sysid).map(|h| h.snapshot()),
        loss_percent: by_sysid.get(&v.sysid).map_or(0.0, SeqStats::loss_percent),
        first_heard_utc: heartbeats.and_then(|h| h.first_heard_ns).map(format_utc_ms),
        per_link: links
            .iter()
            .filter_map(|l| {
                let figures = l.sequences.get(&v.sysid)?;
                Some(VehicleLinkSnapshot {
                    link: l.name.clone(),
                    frames: figures.received,
                    frames_per_s: l.frame_rates.get(&v.sysid).copied().unwrap_or(0.0),
                })
            })
            .collect(),
        heartbeat: heartbeats.and_then(|h| h.latest).map(heartbeat_snapshot),
        threshold_s: v.threshold_ns as f64 / 1e9,
        position: watch
            .traffic
            .own_positions()
            .get(&v.sysid)
            .map(|p| PositionSnapshot {
                utc: format_utc_ms(p.utc_ns),
                lat: p.fix.position.lat,
                lon: p.fix.position.lon,
                msl_m: p.fix.msl_m,
                from: if p.fix.estimate {
                    "GLOBAL_POSITION_INT"
                } else {
                    "GPS_RAW_INT"
                }
                .to_string(),
            }),
        traffic: nearby_traffic(&watch.traffic, v.sysid),
        ..redundancy(watch, links, v.sysid)
    }
}

fn link_snapshot(link: LinkId, l: &LinkStatus, radios: &[LatestRadio]) -> LinkSnapshot {
    let c = &l.counters;
    LinkSnapshot {
        name: l.name.clone(),
        up: l.up,
        detail: l.last_change_detail.clone(),
        receipts: c.receipts,
        bytes: c.bytes,
        bytes_skipped: c.bytes_skipped,
        rejects: crate::wire::RejectReason::ALL
            .iter()
            .map(|r| (r.as_str().to_string(), c.rejects_of(*r)))
            .collect(),
        denied: l.denied,
        seq_lost: c.sequence.lost,
        seq_duplicates: c.sequence.duplicates,
        seq_late: c.sequence.late,
        seq_resets: c.sequence.resets,
        downs: l.downs,
        rate_per_s: l.rate_per_s,
        dropped: [
            ("overload".to_string(), l.drops.0),
            ("kernel".to_string(), l.drops.1),
        ]
        .into(),
        seq_interleaved: c.sequence.interleaved,
        radios: radios
            .iter()
            .filter(|r| r.key.link == link)
            .map(radio_snapshot)
            .collect(),
        traffic: {
            let t = &c.traffic;
            (t.reports > 0 || t.sbs_lines > 0 || t.rejects.iter().any(|&n| n > 0)).then(|| {
                LinkTrafficSnapshot {
                    reports: t.reports,
                    sbs_lines: t.sbs_lines,
                    rejects: TrafficReject::ALL
                        .iter()
                        .map(|r| (r.as_str().to_string(), t.rejects_of(*r)))
                        .collect(),
                }
            })
        },
    }
}

/// The one-line `STATUS=` summary: links up, vehicles heard in the last minute, open gaps,
/// receipts.
pub fn summary(now_ns: i64, watch: &Watch, links: &[LinkStatus]) -> String {
    let up = links.iter().filter(|l| l.up != Some(false)).count();
    let heard = watch
        .gap
        .vehicles()
        .iter()
        .filter(|v| v.last_recv_ns.is_some_and(|t| now_ns - t < 60_000_000_000))
        .count();
    let gaps = watch.gap.open_gaps().len();
    let receipts: u64 = links.iter().map(|l| l.counters.receipts).sum();
    format!(
        "links up {up}/{}, vehicles heard {heard}, open gaps {gaps}, receipts {receipts}",
        links.len()
    )
}

/// A vehicle's delivery, open link gaps, conflicts and streams (the rest of its snapshot is
/// filled in by the caller).
fn redundancy(watch: &Watch, links: &[LinkStatus], sysid: u8) -> VehicleSnapshot {
    let link_name = |index: usize| links.get(index).map(|l| l.name.clone());
    let conflicts: Vec<_> = watch
        .conflicts
        .open_conflicts()
        .into_iter()
        .filter(|c| c.sysid == sysid)
        .cloned()
        .collect();
    let (delivery, delivery_frames) = match watch.delivery.vehicle(sysid) {
        Some(counts) => {
            let mut percent: BTreeMap<String, f64> = BTreeMap::new();
            let mut heard: BTreeMap<String, u64> = BTreeMap::new();
            for (index, &n) in counts.by_link.iter().enumerate() {
                if let Some(name) = link_name(index).filter(|_| n > 0) {
                    percent.insert(name.clone(), counts.percent(n));
                    heard.insert(name, n);
                }
            }
            percent.insert("any".to_string(), counts.percent(counts.any));
            let frames = DeliveryFrames {
                sent: counts.sent,
                any: counts.any,
                links: heard,
            };
            (percent, Some(frames))
        }
        None => (BTreeMap::new(), None),
    };
    VehicleSnapshot {
        delivery,
        delivery_frames,
        delivery_unreliable: !conflicts.is_empty(),
        link_gaps: watch
            .link_gaps
            .open_gaps()
            .into_iter()
            .filter(|g| g.sysid == sysid)
            .cloned()
            .collect(),
        conflicts,
        streams: watch
            .streams
            .rates_of(sysid)
            .into_iter()
            .map(|r| MessageStreamSnapshot {
                msgid: r.msgid,
                msg: r.msg.to_string(),
                rate_hz: r.rate_hz,
                last_utc: format_utc_ms(r.last_ns),
                event: r.open,
            })
            .collect(),
        ..VehicleSnapshot::default()
    }
}

fn radio_snapshot(r: &LatestRadio) -> RadioSnapshot {
    let f = r.report;
    RadioSnapshot {
        sysid: r.key.sysid,
        compid: r.key.compid,
        utc: format_utc_ms(r.utc_ns),
        rssi: f.rssi,
        remrssi: f.remrssi,
        rssi_dbm: sik_dbm(f.rssi),
        remrssi_dbm: sik_dbm(f.remrssi),
        noise: f.noise,
        remnoise: f.remnoise,
        rxerrors: f.rxerrors,
        fixed: f.fixed,
        txbuf: f.txbuf,
        reports: r.reports,
    }
}

fn heartbeat_snapshot(last: LastHeartbeat) -> HeartbeatSnapshot {
    let f = last.fields;
    let words = describe(&f);
    HeartbeatSnapshot {
        utc: format_utc_ms(last.utc_ns),
        compid: last.compid,
        mav_type: f.mav_type,
        autopilot: f.autopilot,
        base_mode: f.base_mode,
        custom_mode: f.custom_mode,
        system_status: f.system_status,
        type_name: words.vehicle_type,
        autopilot_name: words.autopilot,
        mode: words.mode,
        status: words.status,
        armed: words.armed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heartbeat_snapshot_carries_the_fields_and_their_words() {
        let last = LastHeartbeat {
            compid: 1,
            utc_ns: 1_790_000_000_000_000_000,
            fields: crate::wire::fields::Heartbeat {
                custom_mode: 6,
                mav_type: 2,
                autopilot: 3,
                base_mode: 0x81,
                system_status: 5,
                mavlink_version: 3,
            },
        };
        let s = heartbeat_snapshot(last);
        assert_eq!(
            (
                s.mode.as_str(),
                s.status.as_str(),
                s.type_name.as_str(),
                s.armed
            ),
            ("RTL", "CRITICAL", "QUADROTOR", true)
        );
        assert_eq!((s.mav_type, s.custom_mode, s.compid), (2, 6, 1));
        assert_eq!(s.utc, format_utc_ms(last.utc_ns));
    }
}
