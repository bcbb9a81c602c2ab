//! Which vehicle flew a log: its identity from the report (the `sys_uuid` information key, the
//! flight controller's unique id; the hardware key `ver_hw`; the `MAV_SYS_ID` parameter), and its
//! range name (such as UAS-04) from a names file, or else from the daemon config's
//! `[gap] vehicles` by MAV_SYS_ID.
//!
//! The names file is TOML, one `[[vehicle]]` table per name:
//!
//! ```toml
//! [[vehicle]]
//! name = "UAS-04"
//! sys_uuid = "0006000000003736323032335111002f0022"
//!
//! [[vehicle]]
//! name = "SITL-1"
//! ver_hw = "SITL"
//! mav_sys_id = 1
//! ```
//!
//! An entry names a log when every key it gives matches the log (`sys_uuid` in any letter case).
//! Of the entries that match, one with `sys_uuid` wins, then the one giving more keys, then the
//! first in the file. Several entries may give one name (a vehicle whose flight controller was
//! replaced has two `sys_uuid`s).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What identifies the vehicle in one log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    pub sys_uuid: Option<String>,
    pub ver_hw: Option<String>,
    pub mav_sys_id: Option<i64>,
}

impl Identity {
    /// The identity in a report's JSON (`info.sys_uuid`, `info.ver_hw`,
    /// `parameters.initial.MAV_SYS_ID`); `None` when the log holds none of them (a quarantined or
    /// rejected log shows nothing, so it has none either).
    pub fn from_report(report: &serde_json::Value) -> Option<Identity> {
        let info = |key: &str| {
            report["info"][key]
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let id = Identity {
            sys_uuid: info("sys_uuid").map(|u| u.to_ascii_lowercase()),
            ver_hw: info("ver_hw"),
            mav_sys_id: report["parameters"]["initial"]["MAV_SYS_ID"].as_i64(),
        };
        (id.sys_uuid.is_some() || id.mav_sys_id.is_some()).then_some(id)
    }

    /// `sys_uuid 0006...` when the log has one (it is unique to the flight controller), else
    /// `ver_hw SITL, MAV_SYS_ID 1` with what the log has.
    pub fn text(&self) -> String {
        if let Some(u) = &self.sys_uuid {
            return format!("sys_uuid {u}");
        }
        let mut parts = Vec::new();
        if let Some(hw) = &self.ver_hw {
            parts.push(format!("ver_hw {hw}"));
        }
        if let Some(id) = self.mav_sys_id {
            parts.push(format!("MAV_SYS_ID {id}"));
        }
        parts.join(", ")
    }
}

/// A log's vehicle as the report and the catalog hold it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vehicle {
    /// The range name, or the identity text when nothing names it.
    pub name: String,
    pub identity: String,
    pub sys_uuid: Option<String>,
    pub ver_hw: Option<String>,
    pub mav_sys_id: Option<i64>,
    /// Where the name came from (`names.toml line 4`), `null` when the log is not named.
    pub named_by: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NamesFile {
    #[serde(default)]
    vehicle: Vec<toml::Spanned<RawEntry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    sys_uuid: Option<String>,
    ver_hw: Option<String>,
    mav_sys_id: Option<i64>,
}

#[derive(Debug, Clone)]
struct Entry {
    name: String,
    key: Identity,
    source: String,
}

impl Entry {
    fn matches(&self, id: &Identity) -> bool {
        let same = |want: &Option<String>, have: &Option<String>| {
            want.as_ref()
                .is_none_or(|w| have.as_ref().is_some_and(|h| h.eq_ignore_ascii_case(w)))
        };
        same(&self.key.sys_uuid, &id.sys_uuid)
            && same(&self.key.ver_hw, &id.ver_hw)
            && self.key.mav_sys_id.is_none_or(|w| id.mav_sys_id == Some(w))
    }

    /// Higher is more specific.
    fn rank(&self) -> (bool, usize) {
        let k = &self.key;
        let given = usize::from(k.sys_uuid.is_some())
            + usize::from(k.ver_hw.is_some())
            + usize::from(k.mav_sys_id.is_some());
        (k.sys_uuid.is_some(), given)
    }
}

/// Why a names file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NamesError {
    #[error("names file {file}: {source}")]
    Toml {
        file: String,
        source: toml::de::Error,
    },
    #[error("names file {file} line {line}: vehicle `{name}` gives neither sys_uuid nor mav_sys_id, so it would name every log")]
    Unspecific {
        file: String,
        line: usize,
        name: String,
    },
    #[error("names file {file} line {line}: a vehicle with an empty name")]
    EmptyName { file: String, line: usize },
}

/// The range names, in the order they are tried.
#[derive(Debug, Clone, Default)]
pub struct Names {
    entries: Vec<Entry>,
}

impl Names {
    /// Reads a names file's text; `file` names it in errors and in `named_by`.
    pub fn parse(text: &str, file: &str) -> Result<Names, NamesError> {
        let raw: NamesFile = toml::from_str(text).map_err(|source| NamesError::Toml {
            file: file.to_string(),
            source,
        })?;
        let mut entries = Vec::new();
        for spanned in raw.vehicle {
            let line = text[..spanned.span().start.min(text.len())]
                .matches('\n')
                .count()
                + 1;
            let e = spanned.into_inner();
            if e.name.trim().is_empty() {
                return Err(NamesError::EmptyName {
                    file: file.to_string(),
                    line,
                });
            }
            if e.sys_uuid.is_none() && e.mav_sys_id.is_none() {
                return Err(NamesError::Unspecific {
                    file: file.to_string(),
                    line,
                    name: e.name,
                });
            }
            entries.push(Entry {
                name: e.name.trim().to_string(),
                key: Identity {
                    sys_uuid: e.sys_uuid.map(|u| u.trim().to_ascii_lowercase()),
                    ver_hw: e.ver_hw,
                    mav_sys_id: e.mav_sys_id,
                },
                source: format!("{file} line {line}"),
            });
        }
        Ok(Names { entries })
    }

    /// Adds names by MAV_SYS_ID (the daemon config's `[gap] vehicles`), tried after the rest.
    pub fn add_by_system_id(&mut self, names: &BTreeMap<u8, String>, source: &str) {
        for (id, name) in names {
            self.entries.push(Entry {
                name: name.clone(),
                key: Identity {
                    mav_sys_id: Some(i64::from(*id)),
                    ..Identity::default()
                },
                source: source.to_string(),
            });
        }
    }

    /// The vehicle with the name that fits `id` best, or named by its identity when none does.
    pub fn resolve(&self, id: &Identity) -> Vehicle {
        let best = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.matches(id))
            // Most specific first, then the earliest.
            .max_by_key(|(i, e)| (e.rank(), std::cmp::Reverse(*i)))
            .map(|(_, e)| e);
        Vehicle {
            name: best.map_or_else(|| id.text(), |e| e.name.clone()),
            identity: id.text(),
            sys_uuid: id.sys_uuid.clone(),
            ver_hw: id.ver_hw.clone(),
            mav_sys_id: id.mav_sys_id,
            named_by: best.map(|e| e.source.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &str = r#"
# The range's vehicles.
[[vehicle]]
name = "UAS-04"
sys_uuid = "0006000000003736323032335111002F0022"

[[vehicle]]
name = "UAS-04"
sys_uuid = "000100000000383938303138510c00430026"

[[vehicle]]
name = "SITL-1"
mav_sys_id = 1

[[vehicle]]
name = "SITL-bench"
ver_hw = "SITL"
mav_sys_id = 1
"#;

    fn id(uuid: Option<&str>, hw: Option<&str>, sysid: Option<i64>) -> Identity {
        Identity {
            sys_uuid: uuid.map(String::from),
            ver_hw: hw.map(String::from),
            mav_sys_id: sysid,
        }
    }

    #[test]
    fn the_most_specific_matching_entry_names_the_vehicle() {
        let names = Names::parse(NAMES, "names.toml").unwrap();
        let fmu = names.resolve(&id(
            Some("0006000000003736323032335111002f0022"),
            Some("PX4_FMU_V6C"),
            Some(1),
        ));
        assert_eq!(fmu.name, "UAS-04", "sys_uuid beats MAV_SYS_ID");
        assert_eq!(fmu.named_by.as_deref(), Some("names.toml line 3"));
        assert_eq!(
            fmu.identity,
            "sys_uuid 0006000000003736323032335111002f0022"
        );
        let replaced = names.resolve(&id(
            Some("000100000000383938303138510c00430026"),
            None,
            Some(1),
        ));
        assert_eq!(
            replaced.name, "UAS-04",
            "a second flight controller, one name"
        );
        let sitl = names.resolve(&id(None, Some("SITL"), Some(1)));
        assert_eq!(sitl.name, "SITL-bench", "more keys beat fewer");
        assert_eq!(sitl.identity, "ver_hw SITL, MAV_SYS_ID 1");
        let other_hw = names.resolve(&id(None, Some("PX4_SITL"), Some(1)));
        assert_eq!(other_hw.name, "SITL-1");
        let unnamed = names.resolve(&id(Some("00ff"), None, Some(7)));
        assert_eq!(unnamed.name, "sys_uuid 00ff");
        assert_eq!(unnamed.named_by, None);
    }

    #[test]
    fn names_by_system_id_come_after_the_names_file() {
        let mut names = Names::parse(NAMES, "names.toml").unwrap();
        names.add_by_system_id(
            &BTreeMap::from([(1, "UAS-01".to_string()), (4, "UAS-04".to_string())]),
            "gap.vehicles in receiver.toml",
        );
        assert_eq!(names.resolve(&id(None, None, Some(1))).name, "SITL-1");
        let four = names.resolve(&id(None, Some("PX4_FMU_V5"), Some(4)));
        assert_eq!(four.name, "UAS-04");
        assert_eq!(
            four.named_by.as_deref(),
            Some("gap.vehicles in receiver.toml")
        );
    }

    #[test]
    fn a_bad_names_file_is_refused_naming_the_file_and_line() {
        let err = Names::parse("[[vehicle]]\nname = \"X\"\nver_hw = \"SITL\"\n", "n.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("names file n.toml line 1: vehicle `X` gives neither"),
            "{err}"
        );
        let err = Names::parse("[[vehicle]]\nname = \"X\"\nsysid = 3\n", "n.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("n.toml") && err.contains("line 3"), "{err}");
        assert!(Names::parse("", "n.toml").unwrap().entries.is_empty());
    }

    #[test]
    fn identity_comes_from_the_report_info_and_parameters() {
        let report = serde_json::json!({
            "info": {"sys_uuid": "00ABcd", "ver_hw": "PX4_FMU_V5", "sys_name": "PX4"},
            "parameters": {"initial": {"MAV_SYS_ID": 4}},
        });
        assert_eq!(
            Identity::from_report(&report),
            Some(id(Some("00abcd"), Some("PX4_FMU_V5"), Some(4)))
        );
        let nothing =
            serde_json::json!({"info": {"sys_name": "PX4"}, "parameters": {"initial": {}}});
        assert_eq!(Identity::from_report(&nothing), None);
    }
}
