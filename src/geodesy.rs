//! Distances on the WGS-84 ellipsoid (pure): the geodesic between two points, its length and
//! the bearing from the first, by Karney's algorithm (geographiclib-rs, the port of
//! GeographicLib that pyproj and PROJ also compute with), and a cheap bound that lets the
//! traffic monitor skip the geodesic for pairs plainly far apart.

use crate::traffic::LatLon;
use geographiclib_rs::{Geodesic, InverseGeodesic};

/// The WGS-84 ellipsoid's semi-major axis, metres.
const EQUATORIAL_RADIUS_M: f64 = 6_378_137.0;
/// Its semi-minor axis, metres (b = a (1 - f), f = 1/298.257223563).
const POLAR_RADIUS_M: f64 = 6_356_752.314_245;

/// The geodesic from one point to another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Separation {
    /// Its length, metres.
    pub distance_m: f64,
    /// The bearing at the first point towards the second, degrees clockwise from true north,
    /// 0 to 360.
    pub bearing_deg: f64,
}

/// The WGS-84 ellipsoid, made once (its series coefficients are computed at construction).
#[derive(Debug, Clone, Copy)]
pub struct Wgs84(Geodesic);

impl Default for Wgs84 {
    fn default() -> Self {
        Wgs84(Geodesic::wgs84())
    }
}

impl Wgs84 {
    /// The geodesic from `from` to `to`.
    pub fn between(&self, from: LatLon, to: LatLon) -> Separation {
        let (s12, azi1, _azi2, _a12): (f64, f64, f64, f64) =
            self.0.inverse(from.lat, from.lon, to.lat, to.lon);
        Separation {
            distance_m: s12,
            bearing_deg: azi1.rem_euclid(360.0),
        }
    }
}

/// The meridian's radius of curvature is smallest at the equator: b²/a.
const MIN_RADIUS_M: f64 = POLAR_RADIUS_M * POLAR_RADIUS_M / EQUATORIAL_RADIUS_M;

/// Whether `a` and `b` are certainly more than `m` apart on the ellipsoid. The latitudes alone
/// first, with no trigonometry: any path between them crosses the meridian arc between their
/// parallels, at least their latitude difference times the smallest meridian radius. Most
/// pairs of a busy range differ in latitude by more than a proximity threshold, so the
/// monitor's screen of every track against every vehicle mostly stops there; the rest are held
/// to [`lower_bound_m`].
pub fn certainly_beyond_m(a: LatLon, b: LatLon, m: f64) -> bool {
    (a.lat - b.lat).abs().to_radians() * MIN_RADIUS_M * 0.99 > m || lower_bound_m(a, b) > m
}

/// A distance no longer than the geodesic between `a` and `b`: the chord of a sphere of the
/// ellipsoid's smallest radius of curvature is shorter than any path over the ellipsoid, so a
/// pair whose bound exceeds a threshold is certainly beyond it. A few multiplications, for
/// screening many pairs before the exact figure is computed for the near ones.
pub fn lower_bound_m(a: LatLon, b: LatLon) -> f64 {
    let (lat1, lat2) = (a.lat.to_radians(), b.lat.to_radians());
    let dlon = (b.lon - a.lon).to_radians();
    // The chord between the two points on the unit sphere.
    let (x1, y1, z1) = (lat1.cos(), 0.0, lat1.sin());
    let (x2, y2, z2) = (lat2.cos() * dlon.cos(), lat2.cos() * dlon.sin(), lat2.sin());
    let chord = ((x1 - x2).powi(2) + (y1 - y2).powi(2) + (z1 - z2).powi(2)).sqrt();
    // The chord is shorter than the arc, and the arc on the smallest sphere shorter than the
    // geodesic; a hundredth off for the difference between geocentric and geodetic latitude.
    chord * MIN_RADIUS_M * 0.99
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(lat: f64, lon: f64) -> LatLon {
        LatLon { lat, lon }
    }

    /// The answers of the geographiclib Python package (2.1, `Geodesic.WGS84.Inverse`), to the
    /// millimetre: JFK to LHR, and about 1 km east at 47° N, as proximity measures.
    #[test]
    fn the_geodesic_matches_geographiclib() {
        let s = Wgs84::default().between(at(40.64, -73.78), at(51.47, -0.46));
        assert!((s.distance_m - 5_554_747.739_655_674).abs() < 1e-3, "{s:?}");
        assert!((s.bearing_deg - 51.381_751_569_861_784).abs() < 1e-9);
        let s = Wgs84::default().between(at(47.0, 8.0), at(47.0, 8.013_160));
        assert!(
            (s.distance_m - 1_000.896_936_459_811_9).abs() < 1e-3,
            "{s:?}"
        );
        assert!((s.bearing_deg - 89.995_187_692_633_48).abs() < 1e-9);
    }

    #[test]
    fn the_bound_never_exceeds_the_geodesic() {
        let wgs84 = Wgs84::default();
        let points = [
            (0.0, 0.0),
            (47.0, 8.0),
            (-33.9, 151.2),
            (89.9, 10.0),
            (-89.5, -170.0),
            (0.0, 179.99),
            (0.0, -179.99),
            (60.0, 25.0),
        ];
        for &(la, lo) in &points {
            for &(lb, lob) in &points {
                for (dlat, dlon) in [(0.0, 0.0), (0.01, 0.0), (0.0, 0.01), (0.005, -0.007)] {
                    let (a, b) = (at(la, lo), at((lb + dlat).min(90.0), lob + dlon));
                    let exact = wgs84.between(a, b).distance_m;
                    let bound = lower_bound_m(a, b);
                    assert!(bound <= exact + 1e-6, "{a:?} {b:?}: {bound} > {exact}");
                    assert!(!certainly_beyond_m(a, b, exact + 1e-6), "{a:?} {b:?}");
                    if exact > 1.0 && exact < 100_000.0 {
                        // A screen that never says "beyond" would pass the line above.
                        assert!(certainly_beyond_m(a, b, exact * 0.9), "{a:?} {b:?}");
                    }
                    // And close enough to screen with at proximity ranges: within 2 %.
                    if exact < 100_000.0 {
                        assert!(
                            bound >= exact * 0.98 - 1e-6,
                            "{a:?} {b:?}: {bound} << {exact}"
                        );
                    }
                }
            }
        }
    }
}
