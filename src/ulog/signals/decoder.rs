//! Turns subscriptions and samples into [`SignalSample`]s: a subscription to a topic a rule
//! reads becomes a [`Source`] (with the fields found for it, by their names in that release),
//! and each of its samples one decoded sample.

use super::field::{flag_fields, flag_mask, Field};
use super::meaning as m;
use super::{
    BatterySample, GpsSample, Kind, Signal, SignalSample, Source, StatusSample, VibrationUnit,
};
use crate::ulog::format::FlatField;
use crate::ulog::record::{route_subscription, Located, Record};

/// How one source's samples are decoded.
#[derive(Debug, Clone)]
enum Decode {
    Status(StatusFields),
    Flags(Vec<Field>),
    Gps(GpsFields),
    Battery(BatteryFields),
    Vibration(Field),
    Estimator([Option<Field>; 4]),
    Rc(Field),
}

impl Decode {
    fn sample(&self, p: &[u8]) -> Option<Signal> {
        let opt = |f: &Option<Field>| f.as_ref().and_then(|f| f.f64(p));
        let opt_u8 = |f: &Option<Field>| f.as_ref().and_then(|f| f.u8(p));
        let opt_bool = |f: &Option<Field>| f.as_ref().and_then(|f| f.bool(p));
        Some(match self {
            Decode::Status(f) => Signal::Status(StatusSample {
                arming_state: f.arming.u8(p)?,
                nav_state: f.nav.u8(p)?,
                failsafe: opt_bool(&f.failsafe),
                rc_signal_lost: opt_bool(&f.rc_lost),
                causes: flag_mask(&f.causes, p),
            }),
            Decode::Flags(flags) => Signal::Flags(flag_mask(flags, p)),
            Decode::Gps(f) => Signal::Gps(GpsSample {
                eph: opt(&f.eph),
                satellites: opt_u8(&f.satellites),
                fix_type: opt_u8(&f.fix_type),
                jamming_state: opt_u8(&f.jamming_state),
                jamming_indicator: opt(&f.jamming_indicator),
                latitude: opt(&f.latitude),
                longitude: opt(&f.longitude),
            }),
            Decode::Battery(f) => Signal::Battery(BatterySample {
                voltage: opt(&f.voltage),
                current: opt(&f.current),
                connected: opt_bool(&f.connected),
                cell_count: opt_u8(&f.cells),
                warning: opt_u8(&f.warning),
            }),
            Decode::Vibration(f) => Signal::Vibration(f.f64(p)?),
            Decode::Estimator(fields) => Signal::Estimator(fields.clone().map(|f| opt(&f))),
            Decode::Rc(f) => Signal::Rc { lost: f.bool(p)? },
        })
    }
}

/// The fields of `vehicle_status`: the arming and navigation states it cannot be read without,
/// and the failsafe flags and failsafe causes of the releases that have them.
#[derive(Debug, Clone)]
struct StatusFields {
    arming: Field,
    nav: Field,
    failsafe: Option<Field>,
    rc_lost: Option<Field>,
    causes: Vec<Field>,
}

impl StatusFields {
    fn find(fields: &[FlatField]) -> Option<Self> {
        Some(StatusFields {
            arming: Field::named(fields, "arming_state")?,
            nav: Field::named(fields, "nav_state")?,
            failsafe: Field::named(fields, "failsafe"),
            rc_lost: Field::named(fields, "rc_signal_lost"),
            causes: flag_fields(fields, |n| m::STATUS_CAUSES.contains(&n)),
        })
    }

    /// What is read of `topic`, as the source lists it, and the names of the cause flags.
    fn describe(&self, topic: &str) -> (Vec<String>, Vec<String>) {
        let mut read = vec![self.arming.describe(topic), self.nav.describe(topic)];
        read.extend(described(topic, &[&self.failsafe, &self.rc_lost]));
        let names = self.causes.iter().map(|f| f.name.clone()).collect();
        (read, names)
    }
}

/// The fields of a GPS topic, by their names in the release that wrote the log.
#[derive(Debug, Clone)]
struct GpsFields {
    eph: Option<Field>,
    satellites: Option<Field>,
    fix_type: Option<Field>,
    jamming_state: Option<Field>,
    jamming_indicator: Option<Field>,
    latitude: Option<Field>,
    longitude: Option<Field>,
}

impl GpsFields {
    fn find(fields: &[FlatField]) -> Self {
        let find = |alternatives| Field::find(fields, alternatives);
        GpsFields {
            eph: find(m::EPH),
            satellites: find(m::SATELLITES),
            fix_type: find(m::FIX_TYPE),
            jamming_state: find(m::JAMMING_STATE),
            jamming_indicator: find(m::JAMMING_INDICATOR),
            latitude: find(m::LATITUDE),
            longitude: find(m::LONGITUDE),
        }
    }

    fn all(&self) -> [&Option<Field>; 7] {
        [
            &self.eph,
            &self.satellites,
            &self.fix_type,
            &self.jamming_state,
            &self.jamming_indicator,
            &self.latitude,
            &self.longitude,
        ]
    }
}

/// The fields of `battery_status`.
#[derive(Debug, Clone)]
struct BatteryFields {
    voltage: Option<Field>,
    current: Option<Field>,
    connected: Option<Field>,
    cells: Option<Field>,
    warning: Option<Field>,
}

impl BatteryFields {
    fn find(fields: &[FlatField]) -> Self {
        BatteryFields {
            voltage: Field::find(fields, m::BATTERY_VOLTAGE),
            current: Field::find(fields, m::BATTERY_CURRENT),
            connected: Field::named(fields, "connected"),
            cells: Field::find(fields, m::BATTERY_CELLS),
            warning: Field::named(fields, "warning"),
        }
    }

    fn all(&self) -> [&Option<Field>; 5] {
        [
            &self.voltage,
            &self.current,
            &self.connected,
            &self.cells,
            &self.warning,
        ]
    }
}

fn described(topic: &str, fields: &[&Option<Field>]) -> Vec<String> {
    fields
        .iter()
        .filter_map(|f| f.as_ref().map(|f| f.describe(topic)))
        .collect()
}

/// What a subscription to `topic` is decoded as, with the source it feeds.
fn plan(topic: &str, multi_id: u8, fields: &[FlatField]) -> Vec<(Source, Decode)> {
    let source = |kind, read: Vec<String>, flags: Vec<String>| Source {
        topic: topic.to_string(),
        multi_id,
        kind,
        read,
        flags,
        vibration_unit: None,
    };
    let find = |alternatives| Field::find(fields, alternatives);
    let mut out = Vec::new();
    match topic {
        m::STATUS_TOPIC => {
            if let Some(status) = StatusFields::find(fields) {
                let (read, names) = status.describe(topic);
                out.push((source(Kind::Status, read, names), Decode::Status(status)));
            }
        }
        m::FAILSAFE_FLAGS_TOPIC => {
            let flags = flag_fields(fields, |n| !n.starts_with(m::FLAG_REQUIREMENT_PREFIX));
            let names: Vec<String> = flags.iter().map(|f| f.name.clone()).collect();
            out.push((
                source(
                    Kind::FailsafeFlags,
                    vec![format!("{topic}: {} condition flags", names.len())],
                    names,
                ),
                Decode::Flags(flags),
            ));
        }
        t if m::GPS_TOPICS.contains(&t) => {
            let gps = GpsFields::find(fields);
            let read = described(topic, &gps.all());
            out.push((source(Kind::Gps, read, Vec::new()), Decode::Gps(gps)));
        }
        m::BATTERY_TOPIC => {
            let battery = BatteryFields::find(fields);
            let read = described(topic, &battery.all());
            out.push((
                source(Kind::Battery, read, Vec::new()),
                Decode::Battery(battery),
            ));
        }
        m::IMU_STATUS_TOPIC => {
            if let Some(f) = Field::named(fields, m::IMU_VIBRATION) {
                let old = fields.iter().any(|x| x.name == m::IMU_DELTA_VELOCITY_ERA);
                let mut s = source(Kind::Vibration, vec![f.describe(topic)], Vec::new());
                s.vibration_unit = Some(if old {
                    VibrationUnit::DeltaVelocity
                } else {
                    VibrationUnit::Acceleration
                });
                out.push((s, Decode::Vibration(f)));
            }
        }
        m::ESTIMATOR_TOPIC => {
            let ratios = m::ESTIMATOR_RATIO_FIELDS.map(find);
            if ratios.iter().any(Option::is_some) {
                let read = described(topic, &ratios.iter().collect::<Vec<_>>());
                out.push((
                    source(Kind::Estimator, read, Vec::new()),
                    Decode::Estimator(ratios),
                ));
            }
            if let Some(f) = Field::named(fields, m::ESTIMATOR_VIBRATION) {
                let mut s = source(Kind::Vibration, vec![f.describe(topic)], Vec::new());
                s.vibration_unit = Some(VibrationUnit::DeltaVelocity);
                out.push((s, Decode::Vibration(f)));
            }
        }
        m::RC_TOPIC => {
            if let Some(f) = Field::named(fields, m::RC_LOST) {
                out.push((
                    source(Kind::Rc, vec![f.describe(topic)], Vec::new()),
                    Decode::Rc(f),
                ));
            }
        }
        _ => {}
    }
    out
}

/// Is `topic` one the decoder reads (before flattening its format)?
pub fn wanted(topic: &str) -> bool {
    matches!(
        topic,
        m::STATUS_TOPIC
            | m::FAILSAFE_FLAGS_TOPIC
            | m::BATTERY_TOPIC
            | m::IMU_STATUS_TOPIC
            | m::ESTIMATOR_TOPIC
            | m::RC_TOPIC
    ) || m::GPS_TOPICS.contains(&topic)
}

/// Sources found so far and the samples of the last record.
#[derive(Debug, Default)]
pub struct SignalDecoder {
    sources: Vec<Source>,
    /// By `msg_id`: the sources its samples feed.
    routes: Vec<Vec<(usize, Decode)>>,
    out: Vec<SignalSample>,
}

impl SignalDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// The samples the last record decoded to.
    pub fn last(&self) -> &[SignalSample] {
        &self.out
    }

    /// Reads one record; returns the samples it decoded to (none for most records).
    pub fn observe(&mut self, located: &Located<'_>) -> &[SignalSample] {
        self.out.clear();
        match &located.record {
            Record::Subscription {
                subscription,
                formats,
            } => {
                let sources = &mut self.sources;
                route_subscription(
                    &mut self.routes,
                    subscription,
                    formats,
                    |s| wanted(&s.topic).then_some(()),
                    |(), fields| {
                        plan(&subscription.topic, subscription.multi_id, &fields)
                            .into_iter()
                            .map(|(source, decode)| {
                                let at = match sources.iter().position(|s| {
                                    s.topic == source.topic
                                        && s.multi_id == source.multi_id
                                        && s.kind == source.kind
                                }) {
                                    Some(i) => i,
                                    None => {
                                        sources.push(source);
                                        sources.len() - 1
                                    }
                                };
                                (at, decode)
                            })
                            .collect()
                    },
                );
            }
            Record::Unsubscription { msg_id } => {
                if let Some(r) = self.routes.get_mut(usize::from(*msg_id)) {
                    r.clear();
                }
            }
            Record::Data(sample) => {
                let Some(routes) = self.routes.get(usize::from(sample.subscription.msg_id)) else {
                    return &self.out;
                };
                let Some(timestamp) = sample.timestamp else {
                    return &self.out;
                };
                for (source, decode) in routes {
                    if let Some(signal) = decode.sample(sample.payload) {
                        self.out.push(SignalSample {
                            source: *source,
                            timestamp,
                            message: located.message,
                            offset: located.offset,
                            signal,
                        });
                    }
                }
            }
            _ => {}
        }
        &self.out
    }
}
