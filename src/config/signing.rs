//! `[signing]`: the MAVLink 2 keys signatures are checked against, and whether a bad signature
//! is a reject. The keys are secrets: what is printed is how many there are.

use super::raw::RawSigning;
use super::ConfigError;
use crate::wire::signing::parse_key_hex;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct SigningSettings {
    /// The keys themselves are secrets: `check-config` shows how many there are.
    #[serde(rename = "keys", serialize_with = "count_of")]
    pub keys: Vec<[u8; 32]>,
    pub reject_bad: bool,
}

fn count_of<S: serde::Serializer>(keys: &[[u8; 32]], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(keys.len() as u64)
}

/// `[signing]`, validated: every key 64 hex digits.
pub(super) fn parse(
    raw: &RawSigning,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<SigningSettings, ConfigError> {
    let keys = raw
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            parse_key_hex(k).ok_or_else(|| {
                invalid(
                    &format!("signing.keys[{i}]"),
                    "a key is 64 hex digits (32 bytes)".into(),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(SigningSettings {
        keys,
        reject_bad: raw.reject_bad,
    })
}
