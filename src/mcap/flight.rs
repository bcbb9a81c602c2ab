//! The flight log's part of an MCAP file, written on the export's one walk over the log
//! ([`crate::ulog::export::walk`]), sample by sample as it is read: nothing is buffered per topic (an MCAP
//! chunk takes messages in any order, so no row group waits to be filled and nothing spills).
//!
//! - every topic instance: channel `/<topic>/<multi_id>`, its samples as JSON objects
//!   ([`crate::ulog::json`]) with the JSON Schema of its format (`title` the format's name);
//! - the vehicle's track: `/track`, `foxglove.LocationFix`, from `vehicle_global_position`, else
//!   `vehicle_gps_position`, else `sensor_gps` (instance 0), samples with a position only;
//! - logged messages (`L`, and tagged `C`): `/ulog/messages`, and PX4's events (decoded with the
//!   log's own definitions, as the ingest report lists them): `/ulog/events`, both
//!   `foxglove.Log`, with `file` the log's name and `line` the message number that holds it (as
//!   `ulog record --message N` shows it);
//! - parameters changed during the log: `/ulog/parameters`;
//! - metadata: `ulog` (the file, its status and header), `ulog_info` (information, multi-part
//!   values joined, `key[i]` for the i-th), `ulog_parameters` (at log start) and
//!   `ulog_parameters_default_system` / `_current_setup` (the `Q` defaults, when the log has
//!   them).
//!
//! Log time: a sample's `timestamp` on the boot clock, made UTC by the anchor given (the log's
//! own, or the sortie's); with none, the boot clock itself. A sample whose timestamp the
//! ingest does not believe (`timestamp_outlier`) is placed at the latest believed time instead,
//! so one bogus far-future stamp does not stretch the file's time span; its JSON keeps its own
//! `timestamp`.

use super::foxglove::{self, COVARIANCE_DIAGONAL_KNOWN, COVARIANCE_UNKNOWN};
use super::McapOut;
use crate::sortie::axis::BootToUtc;
use crate::ulog::export::side::{param_value, Side};
use crate::ulog::export::walk::{walk, Exporter, Instance, InstanceFormat};
use crate::ulog::export::{ExportError, ExportSummary};
use crate::ulog::format::{BasicType, FlatField, FormatRegistry};
use crate::ulog::json::JsonEncoder;
use crate::ulog::record::{level_name, Located, Record, Sample, Subscription};
use crate::ulog::report::Report;
use serde_json::json;
use std::collections::BTreeMap;

/// Topics the track is taken from, preferred first: the vehicle's own estimate, then its GPS.
pub const TRACK_TOPICS: [&str; 3] = [
    "vehicle_global_position",
    "vehicle_gps_position",
    "sensor_gps",
];
pub const TRACK_CHANNEL: &str = "/track";
pub const MESSAGES_CHANNEL: &str = "/ulog/messages";
pub const EVENTS_CHANNEL: &str = "/ulog/events";
pub const PARAMETERS_CHANNEL: &str = "/ulog/parameters";

/// The channel of topic instance `topic`, `multi_id`.
pub fn topic_channel(topic: &str, multi_id: u8) -> String {
    format!("/{topic}/{multi_id}")
}

/// A number in a sample, made a value in degrees or metres.
#[derive(Debug, Clone, Copy)]
struct Scaled {
    offset: usize,
    ty: BasicType,
    scale: f64,
}

impl Scaled {
    fn read(&self, p: &[u8]) -> f64 {
        let at = &p[self.offset..];
        let raw = match self.ty {
            BasicType::Double => f64::from_le_bytes(at[..8].try_into().expect("8 bytes")),
            BasicType::Float => f64::from(f32::from_le_bytes(at[..4].try_into().expect("4"))),
            BasicType::Int32 => f64::from(i32::from_le_bytes(at[..4].try_into().expect("4"))),
            _ => f64::NAN,
        };
        raw * self.scale
    }
}

/// Where a track topic's position is.
#[derive(Debug, Clone)]
struct TrackFields {
    latitude: Scaled,
    longitude: Scaled,
    altitude: Scaled,
    /// Horizontal and vertical accuracy (m), for the covariance.
    eph: Option<Scaled>,
    epv: Option<Scaled>,
    /// A GPS topic's fix type: below 2 (2D) there is no position.
    fix_type: Option<usize>,
}

impl TrackFields {
    /// Finds the fields by the names PX4 has used for them (degrees as `double` or 1e-7 `int32`,
    /// altitude in m or mm; the ellipsoid's altitude preferred, as `foxglove.LocationFix` has it).
    fn find(fields: &[FlatField]) -> Option<TrackFields> {
        let pick = |choices: &[(&str, BasicType, f64)]| {
            choices.iter().find_map(|(name, ty, scale)| {
                fields
                    .iter()
                    .find(|f| f.name == *name && f.ty == *ty)
                    .map(|f| Scaled {
                        offset: f.offset,
                        ty: *ty,
                        scale: *scale,
                    })
            })
        };
        use BasicType::{Double, Float, Int32};
        Some(TrackFields {
            latitude: pick(&[
                ("lat", Double, 1.0),
                ("lat", Int32, 1e-7),
                ("latitude_deg", Double, 1.0),
            ])?,
            longitude: pick(&[
                ("lon", Double, 1.0),
                ("lon", Int32, 1e-7),
                ("longitude_deg", Double, 1.0),
            ])?,
            altitude: pick(&[
                ("alt_ellipsoid", Int32, 1e-3),
                ("altitude_ellipsoid_m", Double, 1.0),
                ("alt_ellipsoid", Float, 1.0),
                ("alt", Float, 1.0),
                ("alt", Int32, 1e-3),
                ("altitude_msl_m", Double, 1.0),
            ])?,
            eph: pick(&[("eph", Float, 1.0)]),
            epv: pick(&[("epv", Float, 1.0)]),
            fix_type: fields
                .iter()
                .find(|f| f.name == "fix_type" && f.ty == BasicType::UInt8)
                .map(|f| f.offset),
        })
    }

    /// The `foxglove.LocationFix` of a sample, when it holds a position.
    fn fix(&self, payload: &[u8], utc_ns: i64, frame_id: &str) -> Option<serde_json::Value> {
        if self.fix_type.is_some_and(|at| payload[at] < 2) {
            return None;
        }
        let (lat, lon, alt) = (
            self.latitude.read(payload),
            self.longitude.read(payload),
            self.altitude.read(payload),
        );
        let on_earth = lat.is_finite()
            && lon.is_finite()
            && lat.abs() <= 90.0
            && lon.abs() <= 180.0
            && (lat, lon) != (0.0, 0.0);
        if !on_earth {
            return None;
        }
        let accuracy = (
            self.eph.map(|e| e.read(payload)),
            self.epv.map(|e| e.read(payload)),
        );
        let (covariance, kind) = match accuracy {
            (Some(h), Some(v)) if h.is_finite() && v.is_finite() => (
                [h * h, 0.0, 0.0, 0.0, h * h, 0.0, 0.0, 0.0, v * v],
                COVARIANCE_DIAGONAL_KNOWN,
            ),
            _ => ([0.0; 9], COVARIANCE_UNKNOWN),
        };
        Some(json!({
            "timestamp": foxglove::time(utc_ns),
            "frame_id": frame_id,
            "latitude": lat,
            "longitude": lon,
            "altitude": if alt.is_finite() { alt } else { 0.0 },
            "position_covariance": covariance,
            "position_covariance_type": kind,
        }))
    }
}

/// The track's topic instance: the first of [`TRACK_TOPICS`] the report lists with samples and
/// a latitude and longitude, instance 0 (else its lowest instance).
pub fn track_source(report: &Report) -> Option<(String, u8)> {
    TRACK_TOPICS.iter().find_map(|topic| {
        report
            .topics
            .iter()
            .filter(|t| t.topic == *topic && t.samples > 0)
            .filter(|t| {
                let has = |names: &[&str]| t.fields.iter().any(|f| names.contains(&f.as_str()));
                has(&["lat", "latitude_deg"]) && has(&["lon", "longitude_deg"])
            })
            .min_by_key(|t| t.multi_id)
            .map(|t| (t.topic.clone(), t.multi_id))
    })
}

/// One topic instance's channel.
pub struct Channel {
    format: InstanceFormat,
    encoder: JsonEncoder,
    id: u16,
    sequence: u32,
    written: u64,
    skipped: u64,
    track: Option<TrackFields>,
}

impl Instance for Channel {
    fn format(&self) -> &InstanceFormat {
        &self.format
    }

    fn skip_sample(&mut self) {
        self.skipped += 1;
    }
}

/// A channel written as things come, opened at its first message.
struct Lazy {
    topic: &'static str,
    schema: fn() -> serde_json::Value,
    schema_name: &'static str,
    id: Option<u16>,
    sequence: u32,
}

impl Lazy {
    fn new(
        topic: &'static str,
        schema_name: &'static str,
        schema: fn() -> serde_json::Value,
    ) -> Lazy {
        Lazy {
            topic,
            schema,
            schema_name,
            id: None,
            sequence: 0,
        }
    }

    fn write(
        &mut self,
        out: &mut McapOut,
        utc_ns: i64,
        message: &serde_json::Value,
    ) -> Result<(), ExportError> {
        let id = match self.id {
            Some(id) => id,
            None => {
                let schema = out.schema(self.schema_name, &(self.schema)())?;
                let id = out.channel(self.topic, schema, &BTreeMap::new())?;
                self.id = Some(id);
                id
            }
        };
        let data = serde_json::to_vec(message).expect("a JSON value serialises");
        out.write(id, self.sequence, utc_ns, &data)?;
        self.sequence = self.sequence.wrapping_add(1);
        Ok(())
    }
}

/// A float as JSON: a number, or the string JSON has none for (see [`crate::ulog::json`]).
fn float_value(v: f64) -> serde_json::Value {
    let mut text = Vec::new();
    crate::ulog::json::write_float(&mut text, v);
    serde_json::from_slice(&text).expect("a number or a string")
}

fn parameter_change_schema() -> serde_json::Value {
    json!({
        "$schema": crate::ulog::json::SCHEMA_DRAFT,
        "title": "ulog.parameter_change",
        "type": "object",
        "properties": {
            "timestamp": {"type": "integer", "minimum": 0, "description": "the log's boot clock (µs) at the change"},
            "name": {"type": "string"},
            "value": crate::ulog::json::float_schema(),
        },
        "required": ["timestamp", "name", "value"],
        "additionalProperties": false,
    })
}

/// The exporter the walk drives.
struct UlogChannels<'o, 'a> {
    out: &'o mut McapOut,
    axis: BootToUtc<'a>,
    file: String,
    /// Message numbers of the samples whose timestamps are not believed, sorted.
    outliers: Vec<u64>,
    /// The latest believed timestamp (µs).
    believed: u64,
    track: Option<(String, u8)>,
    track_channel: Lazy,
    messages: Lazy,
    parameters: Lazy,
    side: Side,
    buf: Vec<u8>,
}

impl UlogChannels<'_, '_> {
    /// A boot-clock time (µs) on the file's log time.
    fn utc(&mut self, boot_us: u64) -> i64 {
        let boot_ns = i64::try_from(boot_us).unwrap_or(i64::MAX / 1000) * 1000;
        self.axis.utc(boot_ns).unwrap_or(boot_ns)
    }
}

impl Exporter for UlogChannels<'_, '_> {
    type Instance = Channel;

    fn open(
        &mut self,
        key: &(String, u8),
        formats: &FormatRegistry,
        subscription: &Subscription,
    ) -> Result<Channel, ExportError> {
        let format_name = &subscription.layout.format_name;
        let layout_error = |source| ExportError::Layout {
            topic: topic_channel(&key.0, key.1),
            source,
        };
        let (encoder, schema) = JsonEncoder::new(formats, format_name).map_err(layout_error)?;
        let schema_id = self.out.schema(format_name, &schema)?;
        let metadata = BTreeMap::from([
            ("ulog_topic".to_string(), key.0.clone()),
            ("multi_id".to_string(), key.1.to_string()),
            ("format".to_string(), format_name.clone()),
        ]);
        let id = self
            .out
            .channel(&topic_channel(&key.0, key.1), schema_id, &metadata)?;
        let format = InstanceFormat::of(subscription, formats);
        let track = (self.track.as_ref() == Some(key))
            .then(|| TrackFields::find(&format.fields))
            .flatten();
        Ok(Channel {
            format,
            encoder,
            id,
            sequence: 0,
            written: 0,
            skipped: 0,
            track,
        })
    }

    fn sample(
        &mut self,
        channels: &mut [Channel],
        index: usize,
        sample: &Sample<'_>,
        message: u64,
        _clock: u64,
    ) -> Result<(), ExportError> {
        let believed = self.outliers.binary_search(&message).is_err();
        let at = match sample.timestamp {
            Some(t) if believed => {
                self.believed = self.believed.max(t);
                t
            }
            _ => self.believed,
        };
        let utc = self.utc(at);
        let channel = &mut channels[index];
        self.buf.clear();
        channel.encoder.encode(sample.payload, &mut self.buf);
        self.out
            .write(channel.id, channel.sequence, utc, &self.buf)?;
        channel.sequence = channel.sequence.wrapping_add(1);
        channel.written += 1;
        if let Some(track) = &channel.track {
            let frame = &sample.subscription.topic;
            if let Some(fix) = track.fix(sample.payload, utc, frame) {
                self.track_channel.write(self.out, utc, &fix)?;
            }
        }
        Ok(())
    }

    fn other(&mut self, located: &Located<'_>, clock: u64) -> Result<(), ExportError> {
        match &located.record {
            Record::Logged(l) => {
                let utc = self.utc(l.timestamp);
                let name = match l.tag {
                    Some(tag) => format!("px4 tag {tag}"),
                    None => "px4".to_string(),
                };
                let message = foxglove::log(
                    utc,
                    foxglove::level_of(level_name(l.level)),
                    &l.text(),
                    &name,
                    &self.file,
                    located.message,
                );
                self.messages.write(self.out, utc, &message)?;
            }
            Record::Parameter { initial: false, kv } => {
                let at = self.believed;
                let utc = self.utc(at);
                let value = param_value(&kv.decode());
                let message = json!({
                    "timestamp": at,
                    "name": kv.key,
                    "value": float_value(value),
                });
                self.parameters.write(self.out, utc, &message)?;
            }
            _ => {}
        }
        self.side
            .take(&located.record, clock, located.message, located.offset);
        Ok(())
    }
}

/// Writes the flight log read from `input` into `out`: its channels, its events (from
/// `report`) and its metadata. `file` names the log in the messages' `file`. The summary says
/// what was read (malformed messages, a stop at a truncation, a rejection) and each channel's
/// messages (`topics`, by channel name) and skipped samples.
pub fn write_ulog<R: std::io::Read>(
    input: R,
    file: &str,
    report: &Report,
    axis: BootToUtc<'_>,
    out: &mut McapOut,
) -> Result<ExportSummary, ExportError> {
    let mut outliers = report.outlier_messages();
    outliers.sort_unstable();
    let mut exporter = UlogChannels {
        out,
        axis,
        file: file.to_string(),
        outliers,
        believed: report.header.as_ref().map_or(0, |h| h.start_timestamp),
        track: track_source(report),
        track_channel: Lazy::new(
            TRACK_CHANNEL,
            foxglove::LOCATION_FIX,
            foxglove::location_fix_schema,
        ),
        messages: Lazy::new(MESSAGES_CHANNEL, foxglove::LOG, foxglove::log_schema),
        parameters: Lazy::new(
            PARAMETERS_CHANNEL,
            "ulog.parameter_change",
            parameter_change_schema,
        ),
        side: Side::default(),
        buf: Vec::with_capacity(4096),
    };
    let mut summary = ExportSummary::default();
    let walked = walk(input, &mut exporter, &mut summary)?;
    if summary.rejected.is_some() {
        return Ok(summary);
    }
    let mut events = Lazy::new(EVENTS_CHANNEL, foxglove::LOG, foxglove::log_schema);
    for event in &report.events {
        let utc = exporter.utc(event.timestamp);
        let message = foxglove::log(
            utc,
            foxglove::level_of(&event.level),
            &event.message,
            event.name.as_deref().unwrap_or("px4_event"),
            file,
            event.citation.message,
        );
        events.write(exporter.out, utc, &message)?;
    }
    write_metadata(exporter.out, file, report, &exporter.side)?;
    for (channel, key) in walked.instances.iter().zip(&walked.keys) {
        let name = topic_channel(&key.0, key.1);
        if channel.skipped > 0 {
            summary.skipped.push((name.clone(), channel.skipped));
        }
        summary.topics.push((name, channel.written));
    }
    Ok(summary)
}

/// The log's file, information and parameters as metadata records.
fn write_metadata(
    out: &mut McapOut,
    file: &str,
    report: &Report,
    side: &Side,
) -> Result<(), ExportError> {
    let mut about = BTreeMap::from([
        ("file".to_string(), file.to_string()),
        (
            "status".to_string(),
            format!("{:?}", report.status).to_lowercase(),
        ),
        ("messages".to_string(), report.messages.to_string()),
    ]);
    if let Some(sha) = &report.sha256 {
        about.insert("sha256".into(), sha.clone());
    }
    if let Some(h) = &report.header {
        about.insert("ulog_version".into(), h.version.to_string());
        about.insert("start_timestamp_us".into(), h.start_timestamp.to_string());
    }
    out.metadata("ulog", about)?;
    let info: BTreeMap<String, String> = side
        .info
        .iter()
        .map(|(key, _, value, multi, index)| {
            let key = if *multi {
                format!("{key}[{index}]")
            } else {
                key.clone()
            };
            (key, value.clone())
        })
        .collect();
    out.metadata("ulog_info", info)?;
    for (kind, name) in [
        ("initial", "ulog_parameters"),
        ("default_system", "ulog_parameters_default_system"),
        (
            "default_current_setup",
            "ulog_parameters_default_current_setup",
        ),
    ] {
        let values: BTreeMap<String, String> = side
            .parameters
            .iter()
            .filter(|((k, ..), _)| k == kind)
            .map(|((_, _, name, ty, value), _)| {
                let text = if ty.starts_with("int") && value.fract() == 0.0 {
                    format!("{}", *value as i64)
                } else {
                    // A `float` parameter at its own width (3.6, not 3.5999999046325684).
                    let mut text = Vec::new();
                    if ty == "float" {
                        crate::ulog::json::write_float(&mut text, *value as f32);
                    } else {
                        crate::ulog::json::write_float(&mut text, *value);
                    }
                    String::from_utf8(text)
                        .expect("ASCII")
                        .trim_matches('"')
                        .to_string()
                };
                (name.clone(), text)
            })
            .collect();
        if kind == "initial" || !values.is_empty() {
            out.metadata(name, values)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ulog::format::parse_format;

    #[test]
    fn the_track_reads_degrees_and_metres_whatever_the_topic_s_units() {
        let mut reg = FormatRegistry::default();
        reg.insert(
            parse_format("vehicle_gps_position:uint64_t timestamp;int32_t lat;int32_t lon;int32_t alt;int32_t alt_ellipsoid;float eph;float epv;uint8_t fix_type;")
                .unwrap(),
        );
        let fields = reg.flatten("vehicle_gps_position").unwrap();
        let track = TrackFields::find(&fields).unwrap();
        let mut p = Vec::new();
        p.extend_from_slice(&0u64.to_le_bytes());
        p.extend_from_slice(&473_977_420i32.to_le_bytes());
        p.extend_from_slice(&85_455_940i32.to_le_bytes());
        p.extend_from_slice(&488_000i32.to_le_bytes());
        p.extend_from_slice(&535_250i32.to_le_bytes());
        p.extend_from_slice(&2.0f32.to_le_bytes());
        p.extend_from_slice(&3.0f32.to_le_bytes());
        p.push(3);
        let fix = track
            .fix(&p, 1_000_000_123, "vehicle_gps_position")
            .unwrap();
        assert!((fix["latitude"].as_f64().unwrap() - 47.397742).abs() < 1e-9);
        assert!((fix["longitude"].as_f64().unwrap() - 8.545594).abs() < 1e-9);
        assert!((fix["altitude"].as_f64().unwrap() - 535.25).abs() < 1e-9);
        assert_eq!(fix["position_covariance"][0], 4.0);
        assert_eq!(fix["position_covariance"][8], 9.0);
        assert_eq!(fix["position_covariance_type"], 2);
        assert_eq!(fix["timestamp"]["nsec"], 123);
        // No fix: no position.
        *p.last_mut().unwrap() = 1;
        assert!(track.fix(&p, 0, "x").is_none());
    }
}
