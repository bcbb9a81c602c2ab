//! Expected-topic profiles and the failsafe parameters of interest, with the seed's Q4 (recon
//! quad) and T4 (tracked UGV) lists shipped as built-in examples. A profile can also be read from
//! a TOML file: `name = "..."` and `topics = ["vehicle_status", ...]`.

use serde::{Deserialize, Serialize};

/// Pseudo-topic that stands for PX4's console messages (`L`/`C`), listed like a topic.
pub const LOGGED_MESSAGES: &str = "logged messages";

/// A named list of topics a platform is expected to log.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Profile {
    pub name: String,
    pub topics: Vec<String>,
}

const Q4_TOPICS: [&str; 13] = [
    "vehicle_status",
    "vehicle_land_detected",
    "sensor_gps",
    "vehicle_global_position",
    "battery_status",
    "failsafe_flags",
    "telemetry_status",
    "obstacle_distance",
    "estimator_status",
    "cpuload",
    LOGGED_MESSAGES,
    "distance_sensor",
    "vehicle_imu_status",
];

const T4_TOPICS: [&str; 13] = [
    "vehicle_status",
    "sensor_gps",
    "vehicle_global_position",
    "battery_status",
    "failsafe_flags",
    "telemetry_status",
    "estimator_status",
    "cpuload",
    LOGGED_MESSAGES,
    "distance_sensor",
    "vehicle_imu_status",
    "vehicle_command",
    "offboard_control_mode",
];

/// Why a profile could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("no built-in profile `{0}` (built-in: Q4, T4) and no such file")]
    Unknown(String),
    #[error("reading profile file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("profile file {path}: {source}")]
    Toml {
        path: String,
        source: toml::de::Error,
    },
}

impl Profile {
    /// A built-in profile by name (case-insensitive): `Q4` or `T4`.
    pub fn builtin(name: &str) -> Option<Profile> {
        let topics: &[&str] = match name.to_ascii_uppercase().as_str() {
            "Q4" => &Q4_TOPICS,
            "T4" => &T4_TOPICS,
            _ => return None,
        };
        Some(Profile {
            name: name.to_ascii_uppercase(),
            topics: topics.iter().map(|t| t.to_string()).collect(),
        })
    }

    /// A built-in name, or else a TOML file path.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some(p) = Profile::builtin(name_or_path) {
            return Ok(p);
        }
        let path = std::path::Path::new(name_or_path);
        if !path.is_file() {
            return Err(ProfileError::Unknown(name_or_path.to_string()));
        }
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: name_or_path.to_string(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ProfileError::Toml {
            path: name_or_path.to_string(),
            source,
        })
    }
}

/// The profile check as the report shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ExpectedTopics {
    pub profile: String,
    /// `11 of 13 expected topics were logged`.
    pub summary: String,
    pub topics: Vec<ExpectedTopic>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ExpectedTopic {
    pub topic: String,
    /// `Logged` or `Not logged`.
    pub status: String,
}

/// Checks a profile against what the log holds (`logged` says whether a topic has samples).
pub fn check(profile: &Profile, logged: impl Fn(&str) -> bool) -> ExpectedTopics {
    let topics: Vec<ExpectedTopic> = profile
        .topics
        .iter()
        .map(|t| ExpectedTopic {
            topic: t.clone(),
            status: if logged(t) { "Logged" } else { "Not logged" }.to_string(),
        })
        .collect();
    let n = topics.iter().filter(|t| t.status == "Logged").count();
    ExpectedTopics {
        profile: profile.name.clone(),
        summary: format!("{n} of {} expected topics were logged", topics.len()),
        topics,
    }
}

/// The failsafe parameters the seed lists, with the description the vehicle page gives them.
pub const FAILSAFE_PARAMETERS: [(&str, &str); 8] = [
    ("COM_DL_LOSS_T", "Seconds without a ground heartbeat before the data link failsafe"),
    ("NAV_DLL_ACT", "Data link loss action"),
    (
        "COM_FAIL_ACT_T",
        "None. PX4 describes it as the delay between failsafe condition triggered and failsafe reaction.",
    ),
    ("COM_OF_LOSS_T", "Seconds without offboard setpoints before the offboard failsafe"),
    ("COM_OBL_RC_ACT", "Offboard loss action"),
    ("COM_POS_FS_EPH", "Horizontal accuracy that invalidates position, metres"),
    ("SYS_HAS_NUM_GNSS", "GNSS receivers expected"),
    ("COM_GNSSLOSS_ACT", "GNSS loss action"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_have_thirteen_topics_and_count_what_arrived() {
        let q4 = Profile::builtin("q4").unwrap();
        assert_eq!(q4.topics.len(), 13);
        assert_eq!(Profile::builtin("T4").unwrap().topics.len(), 13);
        let missing = ["distance_sensor", "vehicle_imu_status"];
        let check = check(&q4, |t| !missing.contains(&t));
        assert_eq!(check.summary, "11 of 13 expected topics were logged");
        assert_eq!(
            check
                .topics
                .iter()
                .filter(|t| t.status == "Not logged")
                .count(),
            2
        );
        assert!(Profile::load("nonesuch").is_err());
    }
}
