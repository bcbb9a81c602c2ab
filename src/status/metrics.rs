//! `/metrics`: the status snapshot in the OpenMetrics text format, encoded by prometheus-client
//! when scraped (pure: snapshot in, text out). Prometheus conventions: base units in the name
//! (`foxborne_latency_seconds`, `_bytes`), counters end in `_total` and only grow (every one is
//! a cumulative count since the daemon started), `foxborne_build_info` says what is running.

use super::{ForwardSnapshot, HttpSnapshot, PublishSnapshot, StatusSnapshot};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(&'static str, String)>;

pub fn render(snapshot: &StatusSnapshot) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot(snapshot.clone())));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .expect("encoding into a String cannot fail");
    text
}

#[derive(Debug)]
struct Snapshot(StatusSnapshot);

/// One family: its descriptor, then one sample per label set.
fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    kind: MetricType,
    samples: impl IntoIterator<Item = (Labels, M)>,
) -> std::fmt::Result {
    let mut metric = encoder.encode_descriptor(name, help, unit.as_ref(), kind)?;
    for (labels, value) in samples {
        if labels.is_empty() {
            value.encode(metric)?;
            return Ok(());
        }
        // prometheus-client writes label values as given: escape them as the format requires.
        let escaped: Labels = labels.into_iter().map(|(k, v)| (k, escape(&v))).collect();
        value.encode(metric.encode_family(&escaped)?)?;
    }
    Ok(())
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// One owner's counters (a link's, a webhook's, a forward's) broken down by a second label:
/// `owner` is its label and name, `label` names the breakdown.
fn counts_by<'a, K: ToString, N: std::borrow::Borrow<u64>>(
    owner: (&'static str, &'a str),
    label: &'static str,
    counts: impl IntoIterator<Item = (K, N)> + 'a,
) -> impl Iterator<Item = (Labels, ConstCounter<u64>)> + 'a {
    counts.into_iter().map(move |(key, n)| {
        (
            vec![(owner.0, owner.1.to_string()), (label, key.to_string())],
            counter(*n.borrow()),
        )
    })
}

fn counter(value: u64) -> ConstCounter<u64> {
    ConstCounter::new(value)
}

fn gauge(value: f64) -> ConstGauge<f64> {
    ConstGauge::new(value)
}

/// A gauge that counts things, shown as an integer.
fn level(value: u64) -> ConstGauge<i64> {
    ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX))
}

impl prometheus_client::collector::Collector for Snapshot {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let s = &self.0;
        let info = Info::new(vec![("version", s.version.clone())]);
        info.encode(e.encode_descriptor(
            "foxborne_build",
            "The running foxborne-receiver.",
            None,
            info.metric_type(),
        )?)?;
        link_families(&mut e, s)?;
        vehicle_families(&mut e, s)?;
        redundancy_families(&mut e, s)?;
        radio_families(&mut e, s)?;
        traffic_families(&mut e, s)?;
        stream_families(&mut e, s)?;
        webhook_families(&mut e, s)?;
        if let Some(publish) = &s.publish {
            publish_families(&mut e, publish)?;
        }
        if !s.forwards.is_empty() {
            forward_families(&mut e, &s.forwards)?;
        }
        if let Some(http) = &s.http {
            http_families(&mut e, http)?;
        }
        Ok(())
    }
}

/// Per link: receipts, rejects, the receiver's own drops, bytes, state, sequence counts.
fn link_families(e: &mut DescriptorEncoder, s: &StatusSnapshot) -> std::fmt::Result {
    family(
        e,
        "foxborne_receipts",
        "Frames received and written as receipts, by link, system id and message.",
        None,
        MetricType::Counter,
        s.receipts.iter().map(|r| {
            (
                vec![
                    ("link", r.link.clone()),
                    ("sysid", r.sysid.to_string()),
                    ("msg", r.msg.clone()),
                ],
                counter(r.count),
            )
        }),
    )?;
    family(
        e,
        "foxborne_rejects",
        "Frame candidates and byte runs that were not receipts, by link and reason.",
        None,
        MetricType::Counter,
        s.links
            .iter()
            .flat_map(|l| counts_by(("link", &l.name), "reason", &l.rejects)),
    )?;
    family(
        e,
        "foxborne_receiver_dropped",
        "Datagrams the receiver itself dropped, by link and reason (overload: the link's queue was full; kernel: the socket buffer overflowed).",
        None,
        MetricType::Counter,
        s.links
            .iter()
            .flat_map(|l| counts_by(("link", &l.name), "reason", &l.dropped)),
    )?;
    family(
        e,
        "foxborne_link_received",
        "Bytes received per link.",
        Some(Unit::Bytes),
        MetricType::Counter,
        s.links
            .iter()
            .map(|l| (vec![("link", l.name.clone())], counter(l.bytes))),
    )?;
    family(
        e,
        "foxborne_link_up",
        "1 when the link is up, 0 when down.",
        None,
        MetricType::Gauge,
        s.links.iter().map(|l| {
            (
                vec![("link", l.name.clone())],
                level(u64::from(l.up.unwrap_or(true))),
            )
        }),
    )?;
    family(
        e,
        "foxborne_sequence_lost",
        "Frames missing from sequence numbers, by link and system id.",
        None,
        MetricType::Counter,
        s.sequence_lost.iter().map(|l| {
            (
                vec![("link", l.link.clone()), ("sysid", l.sysid.to_string())],
                counter(l.lost),
            )
        }),
    )?;
    family(
        e,
        "foxborne_sequence_anomalies",
        "Frames whose sequence number was a repeat (duplicate), behind a later frame (late), a sender starting over (reset) or a second sender's run on the same ids (interleaved), by link.",
        None,
        MetricType::Counter,
        s.links.iter().flat_map(|l| {
            let counts = [
                ("duplicate", l.seq_duplicates),
                ("late", l.seq_late),
                ("reset", l.seq_resets),
                ("interleaved", l.seq_interleaved),
            ];
            counts_by(("link", &l.name), "kind", counts)
        }),
    )?;
    Ok(())
}

/// Per vehicle: open gaps, heartbeat age, latency, clock offset.
fn vehicle_families(e: &mut DescriptorEncoder, s: &StatusSnapshot) -> std::fmt::Result {
    family(
        e,
        "foxborne_open_gaps",
        "Systems with an open telemetry_gap.",
        None,
        MetricType::Gauge,
        [(Labels::new(), level(s.open_gaps as u64))],
    )?;
    family(
        e,
        "foxborne_heartbeat_age",
        "Time since each system's last HEARTBEAT.",
        Some(Unit::Seconds),
        MetricType::Gauge,
        s.vehicles.iter().filter_map(|v| {
            let age = v.heartbeat_age_s?;
            Some((vec![("sysid", v.sysid.to_string())], gauge(age)))
        }),
    )?;
    {
        let mut metric = e.encode_descriptor(
            "foxborne_latency",
            "One-way link latency from SYSTEM_TIME (receipt time minus the vehicle's time_unix_usec), every sample since start, by system id.",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for v in &s.vehicles {
            let Some(h) = &v.latency_histogram else {
                continue;
            };
            // The encoder takes per-bucket counts and the `+Inf` bucket as `f64::MAX`.
            let mut below = 0;
            let mut buckets: Vec<(f64, u64)> = h
                .buckets
                .iter()
                .map(|&(bound, cumulative)| {
                    let n = cumulative - below;
                    below = cumulative;
                    (bound, n)
                })
                .collect();
            buckets.push((f64::MAX, h.count - below));
            let labels = vec![("sysid", v.sysid.to_string())];
            metric
                .encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(h.sum_s, h.count, &buckets, None)?;
        }
    }
    family(
        e,
        "foxborne_clock_offset",
        "A vehicle clock plainly off UTC: the window's median of receipt minus vehicle time, by system id.",
        Some(Unit::Seconds),
        MetricType::Gauge,
        s.vehicles.iter().filter_map(|v| {
            let ms = v.clock_offset_ms?;
            Some((vec![("sysid", v.sysid.to_string())], gauge(ms / 1e3)))
        }),
    )?;
    Ok(())
}

/// Per vehicle: what its links deliver, its links' gaps, two senders on its id, its streams.
fn redundancy_families(e: &mut DescriptorEncoder, s: &StatusSnapshot) -> std::fmt::Result {
    let sysid = |v: &crate::status::VehicleSnapshot| v.sysid.to_string();
    family(
        e,
        "foxborne_delivery_sent_frames",
        "Frames each system's sequence numbers say were sent since it was first heard.",
        None,
        MetricType::Counter,
        s.vehicles.iter().filter_map(|v| {
            let frames = v.delivery_frames.as_ref()?;
            Some((vec![("sysid", sysid(v))], counter(frames.sent)))
        }),
    )?;
    family(
        e,
        "foxborne_delivery_heard_frames",
        "Of those, the frames each link brought, and any link (link=\"any\": each frame once, whichever link brought it).",
        None,
        MetricType::Counter,
        s.vehicles.iter().flat_map(|v| {
            let frames = v.delivery_frames.clone().unwrap_or_default();
            let any = (!v.delivery.is_empty()).then(|| ("any".to_string(), frames.any));
            frames
                .links
                .into_iter()
                .chain(any)
                .map(move |(link, n)| (vec![("sysid", sysid(v)), ("link", link)], counter(n)))
                .collect::<Vec<_>>()
        }),
    )?;
    family(
        e,
        "foxborne_delivery_unreliable",
        "1 while a second sender is suspected on the system id (sysid_conflict open): its loss and delivery figures mix two sequences.",
        None,
        MetricType::Gauge,
        s.vehicles
            .iter()
            .filter(|v| v.delivery_frames.is_some())
            .map(|v| (vec![("sysid", sysid(v))], level(v.delivery_unreliable.into()))),
    )?;
    family(
        e,
        "foxborne_link_gap_open",
        "1 for each link silent for a system while another link hears it (link_gap open).",
        None,
        MetricType::Gauge,
        s.vehicles.iter().flat_map(|v| {
            v.link_gaps
                .iter()
                .map(|g| {
                    (
                        vec![("sysid", sysid(v)), ("link", g.link.clone())],
                        level(1),
                    )
                })
                .collect::<Vec<_>>()
        }),
    )?;
    family(
        e,
        "foxborne_sysid_conflict_open",
        "1 for each (system id, component) with two senders suspected (sysid_conflict open).",
        None,
        MetricType::Gauge,
        s.vehicles.iter().flat_map(|v| {
            v.conflicts
                .iter()
                .map(|c| {
                    (
                        vec![("sysid", sysid(v)), ("compid", c.compid.to_string())],
                        level(1),
                    )
                })
                .collect::<Vec<_>>()
        }),
    )?;
    family(
        e,
        "foxborne_stream_frames_per_second",
        "Each system's message rate over the last 3 s of receipt time (each frame once).",
        None,
        MetricType::Gauge,
        s.vehicles.iter().flat_map(|v| {
            v.streams
                .iter()
                .map(|st| {
                    (
                        vec![("sysid", sysid(v)), ("msg", st.msg.clone())],
                        gauge(st.rate_hz),
                    )
                })
                .collect::<Vec<_>>()
        }),
    )?;
    family(
        e,
        "foxborne_stream_stalled",
        "1 for each steady stream that stopped or fell below half its rate while heartbeats go on (stream event open).",
        None,
        MetricType::Gauge,
        s.vehicles.iter().flat_map(|v| {
            v.streams
                .iter()
                .filter(|st| st.event.is_some())
                .map(|st| (vec![("sysid", sysid(v)), ("msg", st.msg.clone())], level(1)))
                .collect::<Vec<_>>()
        }),
    )?;
    Ok(())
}

/// The traffic around our vehicles: tracks, reports and refusals per link, proximities.
fn traffic_families(e: &mut DescriptorEncoder, s: &StatusSnapshot) -> std::fmt::Result {
    let mut by_kind: std::collections::BTreeMap<&str, u64> = ["adsb", "remote_id", "sbs"]
        .into_iter()
        .map(|k| (k, 0))
        .collect();
    for t in s.traffic.iter().filter(|t| t.own_sysid.is_none()) {
        *by_kind.entry(t.source.kind.as_str()).or_default() += 1;
    }
    family(
        e,
        "foxborne_traffic_tracks",
        "Traffic tracks kept (not our own vehicles'), by the kind of their last report.",
        None,
        MetricType::Gauge,
        by_kind
            .into_iter()
            .map(|(kind, n)| (vec![("kind", kind.to_string())], level(n))),
    )?;
    family(
        e,
        "foxborne_traffic_own_tracks",
        "Tracks that are our own vehicles' broadcasts (configured, or relayed at their own position): not traffic.",
        None,
        MetricType::Gauge,
        [(
            Labels::new(),
            level(s.traffic.iter().filter(|t| t.own_sysid.is_some()).count() as u64),
        )],
    )?;
    family(
        e,
        "foxborne_traffic_reports",
        "Traffic reports made on each link (ADSB_VEHICLE, OPEN_DRONE_ID_*, SBS MSG lines).",
        None,
        MetricType::Counter,
        s.links.iter().filter_map(|l| {
            let t = l.traffic.as_ref()?;
            Some((vec![("link", l.name.clone())], counter(t.reports)))
        }),
    )?;
    family(
        e,
        "foxborne_traffic_rejects",
        "Traffic reports and SBS lines refused, by link and reason (an impossible latitude, longitude or altitude; an SBS line that does not parse).",
        None,
        MetricType::Counter,
        s.links.iter().flat_map(|l| {
            let rejects = l.traffic.as_ref().map(|t| t.rejects.clone()).unwrap_or_default();
            counts_by(("link", &l.name), "reason", rejects).collect::<Vec<_>>()
        }),
    )?;
    family(
        e,
        "foxborne_traffic_proximity_open",
        "Tracks within the proximity thresholds of each vehicle (traffic_proximity open).",
        None,
        MetricType::Gauge,
        s.vehicles.iter().map(|v| {
            let open = v.traffic.iter().filter(|t| t.proximity).count() as u64;
            (vec![("sysid", v.sysid.to_string())], level(open))
        }),
    )?;
    family(
        e,
        "foxborne_traffic_nearest",
        "The horizontal distance on the WGS-84 ellipsoid from each vehicle to its nearest traffic (within five times the horizontal threshold).",
        Some(Unit::Meters),
        MetricType::Gauge,
        s.vehicles.iter().filter_map(|v| {
            let nearest = v.traffic.first()?;
            Some((vec![("sysid", v.sysid.to_string())], gauge(nearest.horizontal_m)))
        }),
    )?;
    let t = s.traffic_totals;
    family(
        e,
        "foxborne_traffic_proximities",
        "traffic_proximity events opened since start.",
        None,
        MetricType::Counter,
        [(Labels::new(), counter(t.proximities_opened))],
    )?;
    family(
        e,
        "foxborne_traffic_lost",
        "Tracks dropped for not being updated within stale_s (traffic lost events) since start.",
        None,
        MetricType::Counter,
        [(Labels::new(), counter(t.lost))],
    )?;
    family(
        e,
        "foxborne_traffic_own_reports",
        "Reports of our own vehicles' broadcasts since start (not traffic).",
        None,
        MetricType::Counter,
        [(Labels::new(), counter(t.own_reports))],
    )?;
    family(
        e,
        "foxborne_traffic_refused_tracks",
        "New tracks refused since start because the monitor already kept its most (10,000).",
        None,
        MetricType::Counter,
        [(Labels::new(), counter(t.refused_tracks))],
    )?;
    Ok(())
}

/// Per link and radio: the latest RADIO_STATUS.
fn radio_families(e: &mut DescriptorEncoder, s: &StatusSnapshot) -> std::fmt::Result {
    let radios = || {
        s.links.iter().flat_map(|l| {
            l.radios.iter().map(move |r| {
                let labels = vec![
                    ("link", l.name.clone()),
                    ("radio", format!("{}/{}", r.sysid, r.compid)),
                ];
                (labels, r)
            })
        })
    };
    let sided = |labels: &Labels, side: &str| {
        let mut l = labels.clone();
        l.push(("side", side.to_string()));
        l
    };
    family(
        e,
        "foxborne_radio_rssi_dbm",
        "The radio's received signal (RADIO_STATUS rssi: side=\"local\", remrssi: side=\"remote\") in dBm by the SiK rule.",
        None,
        MetricType::Gauge,
        radios().flat_map(|(labels, r)| {
            [("local", r.rssi_dbm), ("remote", r.remrssi_dbm)]
                .into_iter()
                .filter_map(|(side, dbm)| Some((sided(&labels, side), gauge(dbm?))))
                .collect::<Vec<_>>()
        }),
    )?;
    family(
        e,
        "foxborne_radio_noise",
        "The radio's noise level in its own units (RADIO_STATUS noise: side=\"local\", remnoise: side=\"remote\").",
        None,
        MetricType::Gauge,
        radios().flat_map(|(labels, r)| {
            [("local", r.noise), ("remote", r.remnoise)]
                .map(|(side, n)| (sided(&labels, side), level(n.into())))
        }),
    )?;
    family(
        e,
        "foxborne_radio_rxerrors",
        "The radio's own count of receive errors (it wraps at 65536 and restarts with the radio).",
        None,
        MetricType::Gauge,
        radios().map(|(labels, r)| (labels, level(r.rxerrors.into()))),
    )?;
    family(
        e,
        "foxborne_radio_fixed",
        "The radio's own count of packets it corrected (it wraps at 65536 and restarts with the radio).",
        None,
        MetricType::Gauge,
        radios().map(|(labels, r)| (labels, level(r.fixed.into()))),
    )?;
    family(
        e,
        "foxborne_radio_txbuf",
        "The radio's transmit buffer free space, in percent.",
        None,
        MetricType::Gauge,
        radios().map(|(labels, r)| (labels, level(r.txbuf.into()))),
    )?;
    family(
        e,
        "foxborne_radio_report_timestamp",
        "When the radio's latest RADIO_STATUS was received.",
        Some(Unit::Seconds),
        MetricType::Gauge,
        radios().filter_map(|(labels, r)| {
            let ns = crate::monitor::parse_utc_ns(&r.utc)?;
            Some((labels, gauge(ns as f64 / 1e9)))
        }),
    )?;
    Ok(())
}

/// The files: lines and bytes written, dropped, errors, lag.
fn stream_families(e: &mut DescriptorEncoder, s: &StatusSnapshot) -> std::fmt::Result {
    let streams = |value: fn(&super::StreamSnapshot) -> u64| {
        s.streams
            .iter()
            .map(move |w| (vec![("stream", w.name.clone())], counter(value(w))))
    };
    family(
        e,
        "foxborne_lines_written",
        "Lines (records) written, by stream.",
        None,
        MetricType::Counter,
        streams(|w| w.lines_written),
    )?;
    family(
        e,
        "foxborne_written",
        "Bytes written, by stream.",
        Some(Unit::Bytes),
        MetricType::Counter,
        streams(|w| w.bytes_written),
    )?;
    family(
        e,
        "foxborne_lines_dropped",
        "Records dropped because the disk did not keep up and the buffer was full, by stream.",
        None,
        MetricType::Counter,
        streams(|w| w.dropped_lines),
    )?;
    family(
        e,
        "foxborne_write_errors",
        "Failed writes, by stream.",
        None,
        MetricType::Counter,
        streams(|w| w.write_errors),
    )?;
    family(
        e,
        "foxborne_write_lag",
        "Receipt to write, for the last batch written, by stream.",
        Some(Unit::Seconds),
        MetricType::Gauge,
        s.streams
            .iter()
            .map(|w| (vec![("stream", w.name.clone())], gauge(w.write_lag_s))),
    )?;
    Ok(())
}

/// The webhooks' deliveries and queues.
fn webhook_families(e: &mut DescriptorEncoder, s: &StatusSnapshot) -> std::fmt::Result {
    family(
        e,
        "foxborne_webhook_deliveries",
        "Webhook deliveries by webhook and outcome (sent; dropped: given up, refused, or the queue was full; failed_attempt: one try that failed).",
        None,
        MetricType::Counter,
        s.webhooks.iter().flat_map(|h| {
            let counts = [
                ("sent", h.sent),
                ("dropped", h.dropped),
                ("failed_attempt", h.failed_attempts),
            ];
            counts_by(("webhook", &h.name), "outcome", counts)
        }),
    )?;
    family(
        e,
        "foxborne_webhook_pending",
        "Events queued for a webhook and not yet delivered.",
        None,
        MetricType::Gauge,
        s.webhooks
            .iter()
            .map(|h| (vec![("webhook", h.name.clone())], level(h.pending))),
    )?;
    Ok(())
}

/// Publishing to NATS JetStream (with `[publish]`).
fn publish_families(e: &mut DescriptorEncoder, publish: &PublishSnapshot) -> std::fmt::Result {
    let by_stream = |value: fn(&super::PublishStreamSnapshot) -> u64| {
        publish
            .streams
            .iter()
            .map(move |p| (vec![("stream", p.name.clone())], counter(value(p))))
    };
    family(
        e,
        "foxborne_published",
        "Lines published to NATS JetStream, by stream (receipts, events).",
        None,
        MetricType::Counter,
        by_stream(|p| p.published),
    )?;
    family(
        e,
        "foxborne_publish_acked",
        "Lines JetStream acknowledged, by stream.",
        None,
        MetricType::Counter,
        by_stream(|p| p.acked),
    )?;
    family(
        e,
        "foxborne_publish_pending",
        "Bytes in the files not yet acknowledged by JetStream, by stream.",
        Some(Unit::Bytes),
        MetricType::Gauge,
        publish
            .streams
            .iter()
            .map(|p| (vec![("stream", p.name.clone())], level(p.pending_bytes))),
    )?;
    family(
        e,
        "foxborne_publish_last_ack_timestamp",
        "When JetStream last acknowledged a line, by stream (Unix time).",
        Some(Unit::Seconds),
        MetricType::Gauge,
        publish.streams.iter().filter_map(|p| {
            let utc_ns = crate::monitor::parse_utc_ns(p.last_ack_utc.as_deref()?)?;
            Some((vec![("stream", p.name.clone())], gauge(utc_ns as f64 / 1e9)))
        }),
    )?;
    family(
        e,
        "foxborne_publish_connected",
        "1 while connected to NATS.",
        None,
        MetricType::Gauge,
        [(Labels::new(), level(u64::from(publish.connected)))],
    )?;
    Ok(())
}

/// The forward outputs (`[[forward]]`): frames taken, sent, dropped by reason; peers; what
/// ground stations sent (discarded).
fn forward_families(e: &mut DescriptorEncoder, forwards: &[ForwardSnapshot]) -> std::fmt::Result {
    let each = |value: fn(&ForwardSnapshot) -> u64| {
        forwards
            .iter()
            .map(move |f| (vec![("forward", f.name.clone())], counter(value(f))))
    };
    family(
        e,
        "foxborne_forward_frames",
        "Frames a forward output's filters took, by output.",
        None,
        MetricType::Counter,
        each(|f| f.frames),
    )?;
    family(
        e,
        "foxborne_forward_sent_frames",
        "Frames a forward output wrote (a TCP listener: to each peer, summed).",
        None,
        MetricType::Counter,
        each(|f| f.sent_frames),
    )?;
    family(
        e,
        "foxborne_forward_sent",
        "Bytes a forward output wrote.",
        Some(Unit::Bytes),
        MetricType::Counter,
        each(|f| f.sent_bytes),
    )?;
    family(
        e,
        "foxborne_forward_dropped",
        "Frames a forward output did not send, by reason (queue_full: the output fell behind; peer_slow: one TCP peer did; send_error; unreachable). Receiving and the receive log are never affected.",
        None,
        MetricType::Counter,
        forwards
            .iter()
            .flat_map(|f| counts_by(("forward", &f.name), "reason", &f.dropped)),
    )?;
    family(
        e,
        "foxborne_forward_peers",
        "TCP peers connected to a forward output now.",
        None,
        MetricType::Gauge,
        forwards
            .iter()
            .map(|f| (vec![("forward", f.name.clone())], level(f.peers))),
    )?;
    family(
        e,
        "foxborne_forward_peers_refused",
        "TCP peers a forward output refused (outside allow, past max_peers).",
        None,
        MetricType::Counter,
        each(|f| f.peers_refused),
    )?;
    family(
        e,
        "foxborne_forward_ignored",
        "Bytes ground stations sent to a forward output: read and discarded, never passed to a link.",
        Some(Unit::Bytes),
        MetricType::Counter,
        each(|f| f.ignored_bytes),
    )?;
    Ok(())
}

/// The HTTP port: connections, refusals, event streams.
fn http_families(e: &mut DescriptorEncoder, http: &HttpSnapshot) -> std::fmt::Result {
    family(
        e,
        "foxborne_http_connections",
        "Open connections to the HTTP port.",
        None,
        MetricType::Gauge,
        [(Labels::new(), level(http.connections_open))],
    )?;
    family(
        e,
        "foxborne_http_connections_max",
        "The cap on open connections (http.max_connections, lowered to fit the file descriptor limit).",
        None,
        MetricType::Gauge,
        [(Labels::new(), level(http.connections_max))],
    )?;
    family(
        e,
        "foxborne_http_accepted",
        "Connections accepted.",
        None,
        MetricType::Counter,
        [(Labels::new(), counter(http.connections_total))],
    )?;
    family(
        e,
        "foxborne_http_accept_errors",
        "Failed accepts (e.g. out of file descriptors), each followed by a back-off.",
        None,
        MetricType::Counter,
        [(Labels::new(), counter(http.accept_errors))],
    )?;
    family(
        e,
        "foxborne_http_refused",
        "Requests refused, by reason (host: 421; token: 401).",
        None,
        MetricType::Counter,
        http.refused
            .iter()
            .map(|(reason, n)| (vec![("reason", reason.clone())], counter(*n))),
    )?;
    family(
        e,
        "foxborne_http_connections_closed",
        "Connections between requests closed to make room, by reason (peer_limit: their peer at http.max_connections_per_peer; cap: the port at http.max_connections).",
        None,
        MetricType::Counter,
        http.connections_closed
            .iter()
            .map(|(reason, n)| (vec![("reason", reason.clone())], counter(*n))),
    )?;
    family(
        e,
        "foxborne_http_connections_refused",
        "Connections closed at once: every one of their peer's was answering a request.",
        None,
        MetricType::Counter,
        [(Labels::new(), counter(http.connections_refused))],
    )?;
    family(
        e,
        "foxborne_event_clients",
        "Clients on /events.",
        None,
        MetricType::Gauge,
        [(Labels::new(), level(http.event_clients))],
    )?;
    family(
        e,
        "foxborne_event_clients_max",
        "The event streams' budget (http.max_streams), below the connection cap.",
        None,
        MetricType::Gauge,
        [(Labels::new(), level(http.event_clients_max))],
    )?;
    family(
        e,
        "foxborne_event_clients_refused",
        "/events requests refused with 503: the stream budget was spent by other peers.",
        None,
        MetricType::Counter,
        [(Labels::new(), counter(http.event_clients_refused))],
    )?;
    family(
        e,
        "foxborne_event_clients_dropped",
        "/events clients cut off, by reason (lagged, write_timeout: not reading; peer_limit: closed for a newer stream of the same peer).",
        None,
        MetricType::Counter,
        http.event_clients_dropped
            .iter()
            .map(|(reason, n)| (vec![("reason", reason.clone())], counter(*n))),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix)?.strip_prefix(' '))
    }

    #[test]
    fn every_family_is_declared_once_with_its_samples() {
        let text = render(&crate::status::example());
        for (series, value) in [
            (
                "foxborne_receipts_total{link=\"radio1\",sysid=\"4\",msg=\"HEARTBEAT\"}",
                "60",
            ),
            (
                "foxborne_rejects_total{link=\"radio1\",reason=\"bad_crc\"}",
                "3",
            ),
            (
                "foxborne_sequence_lost_total{link=\"radio1\",sysid=\"4\"}",
                "7",
            ),
            ("foxborne_open_gaps", "1"),
            ("foxborne_lines_written_total{stream=\"events\"}", "9"),
            (
                "foxborne_webhook_deliveries_total{webhook=\"hooks.slack.com\",outcome=\"failed_attempt\"}",
                "1",
            ),
            (
                "foxborne_receiver_dropped_total{link=\"radio1\",reason=\"kernel\"}",
                "2",
            ),
            ("foxborne_link_received_bytes_total{link=\"radio1\"}", "40000"),
            ("foxborne_build_info{version=\"0.1.0\"}", "1"),
            ("foxborne_http_refused_total{reason=\"host\"}", "1"),
            ("foxborne_event_clients_dropped_total{reason=\"lagged\"}", "1"),
            ("foxborne_published_total{stream=\"receipts\"}", "1200"),
            (
                "foxborne_publish_last_ack_timestamp_seconds{stream=\"receipts\"}",
                "1790260329.99",
            ),
            ("foxborne_forward_frames_total{forward=\"gcs\"}", "1200"),
            ("foxborne_forward_sent_frames_total{forward=\"gcs\"}", "1150"),
            ("foxborne_forward_sent_bytes_total{forward=\"gcs\"}", "37000"),
            (
                "foxborne_forward_dropped_total{forward=\"gcs\",reason=\"peer_slow\"}",
                "50",
            ),
            ("foxborne_forward_peers{forward=\"gcs\"}", "1"),
            ("foxborne_forward_ignored_bytes_total{forward=\"gcs\"}", "21"),
            ("foxborne_delivery_sent_frames_total{sysid=\"4\"}", "1000"),
            (
                "foxborne_delivery_heard_frames_total{sysid=\"4\",link=\"any\"}",
                "996",
            ),
            (
                "foxborne_delivery_heard_frames_total{sysid=\"4\",link=\"radio1\"}",
                "920",
            ),
            (
                "foxborne_stream_frames_per_second{sysid=\"4\",msg=\"GLOBAL_POSITION_INT\"}",
                "10.0",
            ),
            (
                "foxborne_radio_rssi_dbm{link=\"radio1\",radio=\"51/68\",side=\"remote\"}",
                "-74.4",
            ),
            ("foxborne_radio_txbuf{link=\"radio1\",radio=\"51/68\"}", "97"),
            ("foxborne_traffic_tracks{kind=\"adsb\"}", "1"),
            ("foxborne_traffic_tracks{kind=\"sbs\"}", "0"),
            ("foxborne_traffic_reports_total{link=\"radio1\"}", "40"),
            (
                "foxborne_traffic_rejects_total{link=\"radio1\",reason=\"latitude\"}",
                "1",
            ),
            ("foxborne_traffic_proximity_open{sysid=\"4\"}", "1"),
            ("foxborne_traffic_proximity_open{sysid=\"22\"}", "0"),
            ("foxborne_traffic_nearest_meters{sysid=\"4\"}", "640.2"),
            ("foxborne_traffic_proximities_total", "1"),
            ("foxborne_traffic_lost_total", "2"),
            ("foxborne_traffic_own_reports_total", "3"),
        ] {
            assert_eq!(sample(&text, series), Some(value), "{series}\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        let mut types = std::collections::HashSet::new();
        for l in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            assert!(types.insert(l.to_string()), "declared twice: {l}");
        }
    }

    #[test]
    fn latency_is_a_histogram_in_seconds() {
        let text = render(&crate::status::example());
        assert!(
            text.contains("# TYPE foxborne_latency_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains("# UNIT foxborne_latency_seconds seconds"),
            "{text}"
        );
        // 41, 41, 87 and 120 ms.
        for (series, value) in [
            ("foxborne_latency_seconds_count{sysid=\"4\"}", "4"),
            (
                "foxborne_latency_seconds_bucket{le=\"0.05\",sysid=\"4\"}",
                "2",
            ),
            (
                "foxborne_latency_seconds_bucket{le=\"0.1\",sysid=\"4\"}",
                "3",
            ),
            (
                "foxborne_latency_seconds_bucket{le=\"0.25\",sysid=\"4\"}",
                "4",
            ),
            (
                "foxborne_latency_seconds_bucket{le=\"+Inf\",sysid=\"4\"}",
                "4",
            ),
        ] {
            assert_eq!(sample(&text, series), Some(value), "{series}\n{text}");
        }
        let sum: f64 = sample(&text, "foxborne_latency_seconds_sum{sysid=\"4\"}")
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - 0.289).abs() < 1e-9, "{sum}");
        // A vehicle whose clock is off UTC has no latency samples, and its offset in seconds.
        assert!(!text.contains("foxborne_latency_seconds_count{sysid=\"22\"}"));
        assert_eq!(
            sample(&text, "foxborne_clock_offset_seconds{sysid=\"22\"}"),
            Some("-4.6")
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let mut s = crate::status::example();
        s.links[0].name = "a\"b\\c".into();
        assert!(render(&s).contains("link=\"a\\\"b\\\\c\""));
    }
}
