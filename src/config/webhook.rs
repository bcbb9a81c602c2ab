//! `[[webhook]]`: where alerts are POSTed, checked once at load. The URL is parsed (http or
//! https, a host, no credentials in it: they would end up in logs), the format and kinds are
//! known words, every header is a valid HTTP header, and the `ca_file` is read and must hold at
//! least one PEM certificate. What `check-config` shows hides what may be secret: the URL's path
//! and query (a Slack webhook URL is its own secret) and the header values.

use super::ranges;
use super::raw::RawWebhook;
use serde::Serialize;
use std::path::PathBuf;

use crate::monitor::event::{
    ClockKind, CoverageKind, DroppedKind, LatencyKind, LinkKind, ReceiverKind, RetentionKind,
    TelemetryGapKind, TrafficProximityKind, TrafficTrackKind,
};

/// The event kinds a webhook may subscribe to: every `kind` the events stream has.
pub const EVENT_KINDS: &[&str] = &[
    TelemetryGapKind::NAME,
    LatencyKind::NAME,
    ClockKind::NAME,
    LinkKind::NAME,
    ReceiverKind::NAME,
    DroppedKind::NAME,
    RetentionKind::NAME,
    CoverageKind::NAME,
    TrafficProximityKind::NAME,
    TrafficTrackKind::NAME,
];

/// What the POST body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// The event object itself, as in the events file.
    Json,
    /// `{"text": ...}`: a sentence with the title, vehicle name and system id (Slack,
    /// Mattermost and Rocket.Chat incoming webhooks take it).
    Slack,
}

#[derive(Debug, Clone, Serialize)]
pub struct WebhookSettings {
    /// Names this webhook in logs and metrics: the `name` key, else the URL's host.
    pub name: String,
    #[serde(serialize_with = "origin_only")]
    pub url: url::Url,
    pub format: WebhookFormat,
    pub kinds: Vec<String>,
    #[serde(serialize_with = "names_only")]
    pub headers: Vec<(String, String)>,
    pub ca_file: Option<PathBuf>,
    /// The `ca_file` certificates, read at load (trusted as roots, and each pinned as itself:
    /// see `sink::webhook::tls`).
    #[serde(skip)]
    pub ca_certs: Vec<rustls::pki_types::CertificateDer<'static>>,
    pub timeout_s: f64,
    pub queue: usize,
}

fn origin_only<S: serde::Serializer>(url: &url::Url, s: S) -> Result<S::Ok, S::Error> {
    let origin = url.origin().ascii_serialization();
    if url.path() == "/" && url.query().is_none() {
        s.serialize_str(&format!("{origin}/"))
    } else {
        s.serialize_str(&format!("{origin}/(path hidden)"))
    }
}

fn names_only<S: serde::Serializer>(headers: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(headers.len()))?;
    for (name, _) in headers {
        map.serialize_entry(name, "(set)")?;
    }
    map.end()
}

/// Every webhook of the file, validated; `key` names `webhook[i]` in errors.
pub(super) fn parse_webhooks(
    raw: &[RawWebhook],
    invalid: &dyn Fn(&str, String) -> super::ConfigError,
) -> Result<Vec<WebhookSettings>, super::ConfigError> {
    let mut hooks: Vec<WebhookSettings> = Vec::new();
    for (i, w) in raw.iter().enumerate() {
        // A single `[webhook]` table keeps the key names its configs have always had.
        let key = |k: &str| {
            if raw.len() == 1 {
                format!("webhook.{k}")
            } else {
                format!("webhook[{i}].{k}")
            }
        };
        let url =
            parse_url(&w.url).map_err(|r| invalid(&key("url"), format!("`{}`: {r}", w.url)))?;
        if let Some(queue) = w.queue {
            ranges::check("webhook.queue", queue as f64).map_err(|r| invalid(&key("queue"), r))?;
        }
        let timeout_s = w.timeout_s.unwrap_or(5.0);
        ranges::check("webhook.timeout_s", timeout_s).map_err(|r| invalid(&key("timeout_s"), r))?;
        let format = match w.format.as_deref().unwrap_or("json") {
            "json" => WebhookFormat::Json,
            "slack" => WebhookFormat::Slack,
            other => {
                return Err(invalid(
                    &key("format"),
                    format!("`{other}`: give \"json\" or \"slack\""),
                ))
            }
        };
        let kinds = w
            .kinds
            .clone()
            .unwrap_or_else(|| vec!["telemetry_gap".to_string()]);
        if kinds.is_empty() {
            return Err(invalid(&key("kinds"), "an empty list sends nothing".into()));
        }
        for kind in &kinds {
            if !EVENT_KINDS.contains(&kind.as_str()) {
                return Err(invalid(
                    &key("kinds"),
                    format!("`{kind}` is not an event kind ({})", EVENT_KINDS.join(", ")),
                ));
            }
        }
        let mut headers = Vec::new();
        for (name, value) in &w.headers {
            reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| invalid(&key("headers"), format!("`{name}` is not a header name")))?;
            reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                invalid(
                    &key(&format!("headers.{name}")),
                    "not a valid header value (visible ASCII, no line breaks)".into(),
                )
            })?;
            headers.push((name.clone(), value.clone()));
        }
        let ca_certs = match &w.ca_file {
            None => Vec::new(),
            Some(path) => read_certificates(path).map_err(|why| invalid(&key("ca_file"), why))?,
        };
        let mut name = w
            .name
            .clone()
            .unwrap_or_else(|| url.host_str().unwrap_or("webhook").to_string());
        if w.name.is_none() {
            let same = hooks.iter().filter(|h| h.name.starts_with(&name)).count();
            if same > 0 {
                name = format!("{name}-{}", same + 1);
            }
        } else if hooks.iter().any(|h| h.name == name) {
            return Err(invalid(&key("name"), format!("`{name}` is used twice")));
        }
        hooks.push(WebhookSettings {
            name,
            url,
            format,
            kinds,
            headers,
            ca_file: w.ca_file.clone(),
            ca_certs,
            timeout_s,
            queue: w.queue.unwrap_or(1024),
        });
    }
    Ok(hooks)
}

/// A webhook URL, checked at load so a bad one never reaches the daemon.
fn parse_url(text: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|e| e.to_string())?;
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err("give an http:// or https:// URL".into());
    }
    // The URL standard reads `http:///alerts` as host `alerts`; a missing host is an error here.
    let after_scheme = text.split_once("://").map_or("", |(_, rest)| rest);
    if after_scheme.starts_with('/') || url.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "credentials in the URL would be logged; put them in `headers` (Authorization)".into(),
        );
    }
    Ok(url)
}

/// The PEM certificates of a `ca_file`: at least one, every block readable.
fn read_certificates(
    path: &std::path::Path,
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, String> {
    use rustls::pki_types::pem::PemObject;
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a readable PEM certificate ({e})", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{} holds no PEM certificate", path.display()));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_http_or_https_with_a_host_and_no_credentials() {
        assert!(parse_url("https://hooks.slack.com/services/T0/B0/x").is_ok());
        assert!(parse_url("http://127.0.0.1:9000/alerts?x=1").is_ok());
        assert!(parse_url("http://[::1]:9000/a").is_ok());
        for bad in [
            "http:///alerts",
            "https:///alerts",
            "http://",
            "ftp://x/a",
            "http://user:pw@host/a",
            "https://user@host/a",
            "not a url",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_path_and_header_values_are_not_shown() {
        let hook = WebhookSettings {
            name: "hooks.slack.com".into(),
            url: url::Url::parse("https://hooks.slack.com/services/T0/B0/secret").unwrap(),
            format: WebhookFormat::Slack,
            kinds: vec!["telemetry_gap".into()],
            headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            ca_file: None,
            ca_certs: Vec::new(),
            timeout_s: 5.0,
            queue: 1024,
        };
        let shown = serde_json::to_string(&hook).unwrap();
        assert!(
            !shown.contains("secret") && !shown.contains("s3cret"),
            "{shown}"
        );
        assert!(
            shown.contains("https://hooks.slack.com/(path hidden)"),
            "{shown}"
        );
        assert!(shown.contains("\"Authorization\":\"(set)\""), "{shown}");
    }
}
