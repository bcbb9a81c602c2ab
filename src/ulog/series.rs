//! Time series for the report's plots, taken from a log's samples in bounded memory: each series
//! keeps at most [`MAX_POINTS`] points by thinning to every other point (and then taking every
//! other sample) whenever it fills, so a plot of a 1 GB log costs what a plot of a short one does.
//!
//! Pure: records in, series out.

use super::format::{BasicType, FlatField};
use super::record::{route_subscription, Located, Record};
use super::value::decode_basic;
use std::collections::HashMap;

/// Points a series keeps at most (a plot is about 1,300 pixels wide).
pub const MAX_POINTS: usize = 4096;

/// How a series' value is computed from one sample.
#[derive(Debug, Clone, Copy)]
pub enum Extract {
    /// A field, multiplied by a scale.
    Field(&'static str, f64),
    /// Roll (0), pitch (1) or yaw (2) in degrees from a quaternion field `name[0..3]` (w, x, y, z).
    Euler(&'static str, usize),
}

/// One line on a plot: from which topic (instance 0) and how.
#[derive(Debug, Clone, Copy)]
pub struct SeriesSpec {
    pub panel: &'static str,
    pub label: &'static str,
    pub topic: &'static str,
    pub extract: Extract,
}

impl SeriesSpec {
    /// What the line reads: `topic.field` (with its scale), or the quaternion it turns into an
    /// angle.
    pub fn describe(&self) -> String {
        match self.extract {
            Extract::Field(name, 1.0) => format!("{}.{name}", self.topic),
            Extract::Field(name, scale) => format!("{}.{name} × {scale}", self.topic),
            Extract::Euler(name, which) => {
                let angle = ["roll", "pitch", "yaw"][which.min(2)];
                format!("{}.{name} as {angle}", self.topic)
            }
        }
    }
}

/// The collected points of one spec.
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub points: Vec<(u64, f64)>,
    stride: u64,
    seen: u64,
}

impl Series {
    fn add(&mut self, t: u64, v: f64) {
        self.seen += 1;
        if !(self.seen - 1).is_multiple_of(self.stride.max(1)) {
            return;
        }
        self.points.push((t, v));
        if self.points.len() >= MAX_POINTS {
            let kept: Vec<_> = self.points.iter().step_by(2).copied().collect();
            self.points = kept;
            self.stride = self.stride.max(1) * 2;
        }
    }
}

/// Where one spec's inputs sit in a subscription's samples.
#[derive(Debug, Clone)]
enum Getter {
    One(BasicType, usize, f64),
    Quat([(BasicType, usize); 4], usize),
}

impl Getter {
    fn resolve(extract: Extract, fields: &[FlatField]) -> Option<Getter> {
        let find = |name: &str| {
            fields
                .iter()
                .find(|f| f.name == name && f.ty != BasicType::Char)
                .map(|f| (f.ty, f.offset))
        };
        match extract {
            Extract::Field(name, scale) => find(name).map(|(t, o)| Getter::One(t, o, scale)),
            Extract::Euler(name, which) => {
                let q = [
                    find(&format!("{name}[0]"))?,
                    find(&format!("{name}[1]"))?,
                    find(&format!("{name}[2]"))?,
                    find(&format!("{name}[3]"))?,
                ];
                Some(Getter::Quat(q, which))
            }
        }
    }

    fn value(&self, payload: &[u8]) -> Option<f64> {
        let read = |(ty, o): (BasicType, usize)| {
            payload
                .get(o..o + ty.size())
                .and_then(|b| decode_basic(ty, b).as_f64())
        };
        match self {
            Getter::One(ty, o, scale) => read((*ty, *o)).map(|v| v * scale),
            Getter::Quat(q, which) => {
                let (w, x, y, z) = (read(q[0])?, read(q[1])?, read(q[2])?, read(q[3])?);
                let angle = match which {
                    0 => (2.0 * (w * x + y * z)).atan2(1.0 - 2.0 * (x * x + y * y)),
                    1 => (2.0 * (w * y - z * x)).clamp(-1.0, 1.0).asin(),
                    _ => (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z)),
                };
                Some(angle.to_degrees())
            }
        }
    }
}

/// Collects the series of a list of specs from a stream of records.
#[derive(Debug)]
pub struct SeriesCollector {
    specs: Vec<SeriesSpec>,
    pub series: Vec<Series>,
    /// Per `msg_id`: the specs it feeds and how.
    routes: Vec<Vec<(usize, Getter)>>,
    /// Messages whose sample is not plotted (timestamp outliers the report found).
    skip: HashMap<u64, ()>,
}

impl SeriesCollector {
    pub fn new(specs: Vec<SeriesSpec>, skip_messages: &[u64]) -> Self {
        SeriesCollector {
            series: vec![Series::default(); specs.len()],
            specs,
            routes: Vec::new(),
            skip: skip_messages.iter().map(|m| (*m, ())).collect(),
        }
    }

    pub fn specs(&self) -> &[SeriesSpec] {
        &self.specs
    }

    pub fn observe(&mut self, located: &Located<'_>) {
        match &located.record {
            Record::Subscription {
                subscription,
                formats,
            } => {
                let specs = &self.specs;
                route_subscription(
                    &mut self.routes,
                    subscription,
                    formats,
                    |s| {
                        let wanted: Vec<usize> = (0..specs.len())
                            .filter(|i| specs[*i].topic == &*s.topic)
                            .collect();
                        (s.multi_id == 0 && !wanted.is_empty()).then_some(wanted)
                    },
                    |wanted, fields| {
                        wanted
                            .into_iter()
                            .filter_map(|i| {
                                Getter::resolve(specs[i].extract, &fields).map(|g| (i, g))
                            })
                            .collect()
                    },
                );
            }
            Record::Data(sample) => {
                let Some(routes) = self.routes.get(usize::from(sample.subscription.msg_id)) else {
                    return;
                };
                if routes.is_empty() || self.skip.contains_key(&located.message) {
                    return;
                }
                let Some(t) = sample.timestamp else {
                    return;
                };
                for (i, getter) in routes {
                    if let Some(v) = getter.value(sample.payload).filter(|v| v.is_finite()) {
                        self.series[*i].add(t, v);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_thin_out_and_stay_bounded() {
        let mut s = Series::default();
        for i in 0..100_000u64 {
            s.add(i, i as f64);
        }
        assert!(s.points.len() < MAX_POINTS);
        assert!(s.points.len() > MAX_POINTS / 4);
        assert_eq!(s.points[0], (0, 0.0));
        assert!(s.points.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn quaternion_to_euler() {
        // 90 degrees of yaw: w = cos 45°, z = sin 45°.
        let h = std::f32::consts::FRAC_1_SQRT_2;
        let mut payload = Vec::new();
        for v in [h, 0.0, 0.0, h] {
            payload.extend(v.to_le_bytes());
        }
        let q = [
            (BasicType::Float, 0),
            (BasicType::Float, 4),
            (BasicType::Float, 8),
            (BasicType::Float, 12),
        ];
        let yaw = Getter::Quat(q, 2).value(&payload).unwrap();
        assert!((yaw - 90.0).abs() < 1e-4, "{yaw}");
        let roll = Getter::Quat(q, 0).value(&payload).unwrap();
        assert!(roll.abs() < 1e-4);
    }
}
