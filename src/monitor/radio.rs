//! What the radios say of the links: RADIO_STATUS (SiK and compatible) per link and per radio
//! (the sender's sysid and compid), kept for a while so a gap can carry the radio's numbers
//! from before it opened and during it.
//!
//! Facts, not a verdict: the local radio still reporting means the serial link to it is alive;
//! a falling `remrssi` means the vehicle's radio hears the ground's less well (range, antenna,
//! terrain). A radio's frames never count as a vehicle being alive: only HEARTBEATs do.
//!
//! dBm by the SiK rule: SiK reports signal and noise in its own units, `dBm = value / 1.9 - 127`
//! (the SiK firmware's documentation, `docs/radio.md`); 255 is "unknown" in MAVLink's
//! definition and has no dBm.

use crate::link::LinkId;
use crate::utc::{UtcTime, NANOS_PER_SECOND};
use crate::wire::fields::RadioStatus;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// How long reports are kept: the window before a gap and the gap itself must fit.
pub const KEEP_NS: i64 = 600 * NANOS_PER_SECOND;
/// The most reports kept per radio (SiK reports about once a second).
const KEEP_REPORTS: usize = 1024;
/// The window before a gap whose reports a gap event carries.
pub const BEFORE_NS: i64 = 10 * NANOS_PER_SECOND;

/// SiK's units to dBm; `None` for 255 (unknown).
pub fn sik_dbm(value: u8) -> Option<f64> {
    (value != u8::MAX).then(|| ((f64::from(value) / 1.9 - 127.0) * 10.0).round() / 10.0)
}

/// One radio heard on one link: who sent the RADIO_STATUS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RadioKey {
    pub link: LinkId,
    pub sysid: u8,
    pub compid: u8,
}

#[derive(Debug, Default)]
struct Reports {
    reports: VecDeque<(i64, RadioStatus)>,
}

/// Every radio's recent reports.
#[derive(Debug, Default)]
pub struct RadioWatch {
    radios: BTreeMap<RadioKey, Reports>,
}

/// A radio's latest report, for `/status` and `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatestRadio {
    pub key: RadioKey,
    pub utc_ns: i64,
    pub report: RadioStatus,
    pub reports: usize,
}

/// The radio's numbers over a window: each field's first, last, lowest and highest value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RadioWindow {
    pub samples: usize,
    pub first_utc: UtcTime,
    pub last_utc: UtcTime,
    pub rssi: Spread,
    pub remrssi: Spread,
    /// `rssi` and `remrssi` by the SiK rule (null where the radio said "unknown").
    pub rssi_dbm: DbmSpread,
    pub remrssi_dbm: DbmSpread,
    pub noise: Spread,
    pub remnoise: Spread,
    pub rxerrors: Spread,
    pub fixed: Spread,
    pub txbuf: Spread,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spread {
    pub first: u16,
    pub last: u16,
    pub min: u16,
    pub max: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DbmSpread {
    pub first: Option<f64>,
    pub last: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

/// What a gap event carries of one radio on one of its links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RadioEvidence {
    pub link: String,
    pub sysid: u8,
    pub compid: u8,
    /// Reports in the window before the last heartbeat (10 s), null when there were none.
    pub before: Option<RadioWindow>,
    /// Reports since the last heartbeat, up to the event, null when there were none (a local
    /// radio that stopped reporting too: the serial link to it is gone as well).
    pub during: Option<RadioWindow>,
}

impl RadioWatch {
    pub fn observe(&mut self, key: RadioKey, utc_ns: i64, report: RadioStatus) {
        let kept = &mut self.radios.entry(key).or_default().reports;
        kept.push_back((utc_ns, report));
        while kept.len() > KEEP_REPORTS || kept.front().is_some_and(|(t, _)| *t < utc_ns - KEEP_NS)
        {
            kept.pop_front();
        }
    }

    /// Every radio's latest report.
    pub fn latest(&self) -> Vec<LatestRadio> {
        self.radios
            .iter()
            .filter_map(|(key, r)| {
                r.reports.back().map(|&(utc_ns, report)| LatestRadio {
                    key: *key,
                    utc_ns,
                    report,
                    reports: r.reports.len(),
                })
            })
            .collect()
    }

    /// The radios on `link`, each with its reports in `[from, to]`.
    pub fn on_link(&self, link: LinkId) -> impl Iterator<Item = RadioKey> + '_ {
        self.radios.keys().copied().filter(move |k| k.link == link)
    }

    /// A radio's numbers over `(from, to]`, `None` when it reported nothing then.
    pub fn window(&self, key: RadioKey, from_ns: i64, to_ns: i64) -> Option<RadioWindow> {
        let reports = &self.radios.get(&key)?.reports;
        summarise(
            reports
                .iter()
                .filter(|(t, _)| *t > from_ns && *t <= to_ns)
                .copied(),
        )
    }

    /// What a gap on `link` (named `link_name`) carries: each radio there, its numbers in the
    /// 10 s before `last_ns` (the last heartbeat) and from then to `until_ns`. Empty when no
    /// radio reported on the link in either window.
    pub fn evidence(
        &self,
        link: LinkId,
        link_name: &str,
        last_ns: i64,
        until_ns: i64,
    ) -> Vec<RadioEvidence> {
        self.on_link(link)
            .filter_map(|key| {
                let before = self.window(key, last_ns - BEFORE_NS, last_ns);
                let during = self.window(key, last_ns, until_ns);
                (before.is_some() || during.is_some()).then(|| RadioEvidence {
                    link: link_name.to_string(),
                    sysid: key.sysid,
                    compid: key.compid,
                    before,
                    during,
                })
            })
            .collect()
    }
}

fn summarise(reports: impl Iterator<Item = (i64, RadioStatus)>) -> Option<RadioWindow> {
    let all: Vec<(i64, RadioStatus)> = reports.collect();
    let (&(first_ns, _), &(last_ns, _)) = (all.first()?, all.last()?);
    let spread = |get: fn(&RadioStatus) -> u16| {
        let values = all.iter().map(|(_, r)| get(r));
        Spread {
            first: get(&all[0].1),
            last: get(&all[all.len() - 1].1),
            min: values.clone().min().unwrap_or(0),
            max: values.max().unwrap_or(0),
        }
    };
    let dbm = |get: fn(&RadioStatus) -> u8| {
        let values: Vec<f64> = all.iter().filter_map(|(_, r)| sik_dbm(get(r))).collect();
        DbmSpread {
            first: sik_dbm(get(&all[0].1)),
            last: sik_dbm(get(&all[all.len() - 1].1)),
            min: values.iter().copied().reduce(f64::min),
            max: values.iter().copied().reduce(f64::max),
        }
    };
    Some(RadioWindow {
        samples: all.len(),
        first_utc: UtcTime(first_ns),
        last_utc: UtcTime(last_ns),
        rssi: spread(|r| r.rssi.into()),
        remrssi: spread(|r| r.remrssi.into()),
        rssi_dbm: dbm(|r| r.rssi),
        remrssi_dbm: dbm(|r| r.remrssi),
        noise: spread(|r| r.noise.into()),
        remnoise: spread(|r| r.remnoise.into()),
        rxerrors: spread(|r| r.rxerrors),
        fixed: spread(|r| r.fixed),
        txbuf: spread(|r| r.txbuf.into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = NANOS_PER_SECOND;
    const T0: i64 = 1_790_000_000 * S;

    fn report(remrssi: u8) -> RadioStatus {
        RadioStatus {
            rxerrors: 3,
            fixed: 1,
            rssi: 180,
            remrssi,
            txbuf: 100,
            noise: 40,
            remnoise: 45,
        }
    }

    /// A SiK radio (sysid 51, compid 68) on the first link.
    const SIK_ON_RADIO1: RadioKey = RadioKey {
        link: LinkId::FIRST,
        sysid: 51,
        compid: 68,
    };

    #[test]
    fn sik_units_to_dbm() {
        assert_eq!(sik_dbm(0), Some(-127.0));
        assert_eq!(sik_dbm(190), Some(-27.0));
        assert_eq!(sik_dbm(100), Some(-74.4));
        assert_eq!(sik_dbm(255), None);
    }

    #[test]
    fn a_gap_carries_the_falling_remrssi_before_it_and_the_local_radio_during_it() {
        let mut radios = RadioWatch::default();
        // remrssi falls 200 -> 110 over the 10 s before the last heartbeat at T0 + 20 s, then
        // the remote radio is gone (255, unknown) while the local one goes on reporting.
        for s in 0..=30 {
            let remrssi = match s {
                0..=10 => 200,
                11..=20 => 200 - 9 * (s as u8 - 10),
                _ => 255,
            };
            radios.observe(SIK_ON_RADIO1, T0 + s * S, report(remrssi));
        }
        let evidence = radios.evidence(LinkId::FIRST, "radio1", T0 + 20 * S, T0 + 25 * S);
        assert_eq!(evidence.len(), 1);
        let before = evidence[0].before.as_ref().unwrap();
        assert_eq!(before.samples, 10);
        assert_eq!((before.remrssi.first, before.remrssi.last), (191, 110));
        assert_eq!(before.remrssi_dbm.last, sik_dbm(110));
        let during = evidence[0].during.as_ref().unwrap();
        assert_eq!((during.samples, during.remrssi.last), (5, 255));
        assert_eq!(during.remrssi_dbm.last, None);
        assert_eq!(during.rssi_dbm.last, sik_dbm(180));
        // Another link has no radio: nothing to carry.
        assert!(radios
            .evidence(LinkId::new(1).unwrap(), "radio2", T0 + 20 * S, T0 + 25 * S)
            .is_empty());
    }

    #[test]
    fn old_reports_are_let_go() {
        let mut radios = RadioWatch::default();
        for s in 0..2000 {
            radios.observe(SIK_ON_RADIO1, T0 + s * S, report(200));
        }
        let latest = radios.latest();
        assert_eq!(latest[0].reports, 601);
        assert_eq!(latest[0].utc_ns, T0 + 1999 * S);
    }
}
