//! `[publish]`: where this site's receive log and events go (NATS JetStream), checked at load.
//! The site name becomes a subject token (`foxborne.receipts.<site>.<sysid>`), so it is letters,
//! digits, `-` and `_` only.

use super::raw::RawPublish;
use super::{ranges, ConfigError};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize)]
pub struct PublishSettings {
    pub nats_url: String,
    pub site: String,
    pub creds_file: Option<PathBuf>,
    /// How long the streams keep messages (set when this daemon creates them).
    pub max_age_days: f64,
}

/// A NATS server address as the client takes it: `nats://host:port`, `tls://...`, or
/// `host:port`.
pub fn check_nats_url(text: &str) -> Result<(), String> {
    let with_scheme = if text.contains("://") {
        text.to_string()
    } else {
        format!("nats://{text}")
    };
    let url = url::Url::parse(&with_scheme).map_err(|e| format!("`{text}`: {e}"))?;
    if !matches!(url.scheme(), "nats" | "tls") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "`{text}`: give nats://host:port (or tls://host:port)"
        ));
    }
    Ok(())
}

pub fn check_site(site: &str) -> Result<(), String> {
    if site.is_empty()
        || site.len() > 64
        || !site
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "`{site}`: a site is 1 to 64 letters, digits, `-` or `_` (it is a NATS subject token)"
        ));
    }
    Ok(())
}

pub(super) fn parse(
    raw: &RawPublish,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<PublishSettings, ConfigError> {
    check_nats_url(&raw.nats_url).map_err(|r| invalid("publish.nats_url", r))?;
    check_site(&raw.site).map_err(|r| invalid("publish.site", r))?;
    let max_age_days = raw.max_age_days.unwrap_or(30.0);
    ranges::check("publish.max_age_days", max_age_days)
        .map_err(|r| invalid("publish.max_age_days", r))?;
    if let Some(creds) = &raw.creds_file {
        std::fs::metadata(creds).map_err(|e| {
            invalid(
                "publish.creds_file",
                format!("cannot read {}: {e}", creds.display()),
            )
        })?;
    }
    Ok(PublishSettings {
        nats_url: raw.nats_url.clone(),
        site: raw.site.clone(),
        creds_file: raw.creds_file.clone(),
        max_age_days,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_sites_are_checked() {
        assert!(check_nats_url("nats://127.0.0.1:4222").is_ok());
        assert!(check_nats_url("127.0.0.1:4222").is_ok());
        assert!(check_nats_url("tls://nats.range.example:4222").is_ok());
        assert!(check_nats_url("http://x:1").is_err());
        assert!(check_nats_url("nats://").is_err());
        assert!(check_site("north-ridge_2").is_ok());
        for bad in ["", "a.b", "a b", "a*", ">"] {
            assert!(check_site(bad).is_err(), "{bad}");
        }
    }
}
