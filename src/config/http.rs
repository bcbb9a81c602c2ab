//! `[http]`: the local port's address, its token and its connection and stream budgets,
//! validated once (shared by the receiver's and the range's configs).

use super::raw::RawHttp;
use super::{ranges, ConfigError};
use serde::Serialize;
use std::net::SocketAddr;

#[derive(Debug, Clone, Serialize)]
pub struct HttpSettings {
    pub listen: SocketAddr,
    /// The bearer token every request must carry (required off loopback); shown as whether
    /// it is set, never the token.
    #[serde(serialize_with = "set_or_not")]
    pub token: Option<String>,
    pub max_connections: usize,
    /// Connections one client address may hold besides its event streams.
    pub max_connections_per_peer: usize,
    /// Event streams (`/events`, the board's) at once: below `max_connections`, so short
    /// requests always have room.
    pub max_streams: usize,
    pub max_streams_per_peer: usize,
}

/// The port's connection limits in force: `[http]`'s budgets once the connection cap is known
/// ([`HttpSettings::limits`]), which the port's connection table enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub max_connections_per_peer: usize,
    pub max_streams: usize,
    pub max_streams_per_peer: usize,
}

impl HttpSettings {
    /// The default cap on open connections (`http.max_connections`).
    pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
    /// The default streams per peer: a control-room PC's wall display and a few board tabs,
    /// with room for reloads that leave their old stream behind.
    pub const DEFAULT_MAX_STREAMS_PER_PEER: usize = 16;
    /// Descriptors kept back from the HTTP port for the daemon's own files, sockets and
    /// threads: the port's connection cap leaves them free, and the resource bounds count them.
    pub const RESERVED_FDS: u64 = 128;

    /// The port's limits once the connection cap is known (`max_connections` lowered to fit
    /// the descriptor limit): the others shrink with it, keeping streams below the cap.
    pub fn limits(&self, cap: usize) -> ConnectionLimits {
        let cap = cap.max(1);
        // In proportion to the cap as configured: a stream budget of a quarter stays a quarter.
        let scaled = |n: usize| (n * cap / self.max_connections.max(1)).clamp(1, cap);
        let max_streams = scaled(self.max_streams).min(cap.saturating_sub(1)).max(1);
        ConnectionLimits {
            max_connections: cap,
            max_connections_per_peer: scaled(self.max_connections_per_peer),
            max_streams,
            max_streams_per_peer: self.max_streams_per_peer.min(max_streams),
        }
    }
    /// The shortest token accepted: long enough that guessing it over the network is hopeless.
    pub const MIN_TOKEN_LEN: usize = 16;
}

fn set_or_not<S: serde::Serializer>(secret: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(_) => s.serialize_str("(set)"),
        None => s.serialize_none(),
    }
}

/// `[http]`, validated: a token is required off loopback.
pub(super) fn parse(
    raw: &RawHttp,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<HttpSettings, ConfigError> {
    if let Some(max) = raw.max_connections {
        ranges::check("http.max_connections", max as f64)
            .map_err(|reason| invalid("http.max_connections", reason))?;
    }
    let listen: SocketAddr = raw.listen.parse().map_err(|_| {
        invalid(
            "http.listen",
            format!("`{}` is not an address:port", raw.listen),
        )
    })?;
    let token = match &raw.token {
        Some(token)
            if token.len() < HttpSettings::MIN_TOKEN_LEN
                || !token.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            return Err(invalid(
                "http.token",
                format!(
                    "give at least {} visible ASCII characters, no spaces (e.g. the output of `openssl rand -hex 24`)",
                    HttpSettings::MIN_TOKEN_LEN
                ),
            ));
        }
        other => other.clone(),
    };
    if !listen.ip().is_loopback() && token.is_none() {
        return Err(invalid(
            "http.token",
            format!(
                "http.listen {listen} is reachable from other machines, which could then read every vehicle's state and alerts: set http.token (clients send `Authorization: Bearer <token>`), or listen on 127.0.0.1"
            ),
        ));
    }
    let max_connections = raw
        .max_connections
        .map_or(HttpSettings::DEFAULT_MAX_CONNECTIONS, |m| m as usize);
    let optional = |key: &str, value: Option<u64>| -> Result<Option<usize>, ConfigError> {
        match value {
            None => Ok(None),
            Some(v) => ranges::check(key, v as f64)
                .map(|()| Some(v as usize))
                .map_err(|reason| invalid(key, reason)),
        }
    };
    let max_connections_per_peer = optional(
        "http.max_connections_per_peer",
        raw.max_connections_per_peer,
    )?
    .unwrap_or((max_connections / 2).max(1));
    if max_connections_per_peer > max_connections {
        return Err(invalid(
            "http.max_connections_per_peer",
            format!(
                "{max_connections_per_peer} is more than http.max_connections ({max_connections})"
            ),
        ));
    }
    let max_streams =
        optional("http.max_streams", raw.max_streams)?.unwrap_or((max_connections / 4).max(1));
    if max_connections > 1 && max_streams >= max_connections {
        return Err(invalid(
            "http.max_streams",
            format!("{max_streams} leaves no room for short requests: give less than http.max_connections ({max_connections})"),
        ));
    }
    let max_streams_per_peer = optional("http.max_streams_per_peer", raw.max_streams_per_peer)?
        .unwrap_or(HttpSettings::DEFAULT_MAX_STREAMS_PER_PEER.min(max_streams));
    if max_streams_per_peer > max_streams {
        return Err(invalid(
            "http.max_streams_per_peer",
            format!("{max_streams_per_peer} is more than http.max_streams ({max_streams})"),
        ));
    }
    Ok(HttpSettings {
        listen,
        token,
        max_connections,
        max_connections_per_peer,
        max_streams,
        max_streams_per_peer,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{parse, refusal};

    #[test]
    fn a_listener_off_loopback_needs_a_token() {
        let link = "[[link]]\nname = \"a\"\nudp = \"0.0.0.0:1\"\n";
        let err = refusal(&format!("{link}[http]\nlisten = \"0.0.0.0:9137\"\n"));
        assert!(
            err.contains("http.token") && err.contains("0.0.0.0:9137"),
            "{err}"
        );
        let err = refusal(&format!(
            "{link}[http]\nlisten = \"0.0.0.0:9137\"\ntoken = \"short\"\n"
        ));
        assert!(err.contains("http.token") && err.contains("16"), "{err}");
        let ok = parse(&format!(
            "{link}[http]\nlisten = \"0.0.0.0:9137\"\ntoken = \"0123456789abcdef0123\"\n"
        ))
        .unwrap();
        assert_eq!(ok.http.token.as_deref(), Some("0123456789abcdef0123"));
        assert_eq!(ok.effective()["http"]["token"], "(set)");
        let local = parse(&format!("{link}[http]\nlisten = \"[::1]:9137\"\n")).unwrap();
        assert!(local.http.token.is_none());
        assert_eq!(local.http.max_connections, 256);
    }

    #[test]
    fn http_limits_keep_streams_below_the_cap_when_it_is_lowered() {
        let config = parse(
            "[[link]]\nname = \"r\"\nudp = \"127.0.0.1:0\"\n[http]\nmax_connections = 4096\n",
        )
        .unwrap();
        let h = &config.http;
        assert_eq!(
            (
                h.max_connections_per_peer,
                h.max_streams,
                h.max_streams_per_peer
            ),
            (2048, 1024, 16)
        );
        // The descriptor limit lowered the cap to 896: a quarter stays a quarter.
        let limits = h.limits(896);
        assert_eq!(
            (
                limits.max_connections,
                limits.max_connections_per_peer,
                limits.max_streams,
                limits.max_streams_per_peer
            ),
            (896, 448, 224, 16)
        );
        assert_eq!(h.limits(1).max_streams, 1);
    }
}
