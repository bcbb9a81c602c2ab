//! Who may use the HTTP port (pure). On a loopback listener, only a request whose `Host` is a
//! loopback name or address is answered: a web page from another origin that points its own
//! DNS name at 127.0.0.1 (DNS rebinding) sends its own name as `Host` and gets 421. On any
//! other listener every request must carry `Authorization: Bearer <http.token>` (401 without);
//! config load refuses such a listener without a token.

/// Why a request is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 421 Misdirected Request: a loopback listener asked under a name that is not loopback.
    ForeignHost,
    /// 401 Unauthorized: the bearer token is missing or wrong.
    Token,
}

impl Refusal {
    /// The counter label in `/metrics` and `/status`.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::ForeignHost => "host",
            Refusal::Token => "token",
        }
    }
}

#[derive(Debug, Clone)]
pub struct AccessPolicy {
    /// The listener is on a loopback address: check `Host`.
    loopback: bool,
    token: Option<String>,
}

impl AccessPolicy {
    pub fn new(listen: std::net::SocketAddr, token: Option<String>) -> AccessPolicy {
        AccessPolicy {
            loopback: listen.ip().is_loopback(),
            token,
        }
    }

    /// Whether a request with these `Host` and `Authorization` headers is answered.
    pub fn judge(&self, host: Option<&str>, authorization: Option<&str>) -> Result<(), Refusal> {
        // A browser always sends Host; a request without one cannot come from a rebinding page.
        if self.loopback && host.is_some_and(|h| !is_loopback_host(h)) {
            return Err(Refusal::ForeignHost);
        }
        if let Some(token) = &self.token {
            let given = authorization
                .and_then(|a| a.strip_prefix("Bearer "))
                .map(str::trim);
            if !given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
                return Err(Refusal::Token);
            }
        }
        Ok(())
    }
}

/// `localhost`, a `*.localhost` name (RFC 6761 keeps them on loopback), or a loopback address,
/// with or without a port.
pub fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // [::1] or [::1]:9137
        match rest.split_once(']') {
            Some((addr, port)) if port.is_empty() || is_port(port) => addr,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return false,
            None => host,
        }
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    name.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

fn is_port(text: &str) -> bool {
    text.strip_prefix(':')
        .unwrap_or(text)
        .parse::<u16>()
        .is_ok()
        && !text.is_empty()
}

/// Compares a secret in time that does not depend on where the first difference is.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (i, e) in expected.iter().enumerate() {
        difference |= usize::from(given.get(i).copied().unwrap_or(0) ^ e);
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_addresses_pass_and_others_do_not() {
        for host in [
            "localhost",
            "localhost:9137",
            "LOCALHOST.",
            "board.localhost:80",
            "127.0.0.1",
            "127.0.0.1:9137",
            "127.8.9.10:1",
            "[::1]",
            "[::1]:9137",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:9137",
            "localhost.evil.example",
            "10.0.0.1:9137",
            "[::2]:9137",
            "[::1]x",
            "127.0.0.1:notaport",
            "0.0.0.0",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn a_loopback_listener_refuses_foreign_hosts() {
        let policy = AccessPolicy::new("127.0.0.1:9137".parse().unwrap(), None);
        assert_eq!(policy.judge(Some("127.0.0.1:9137"), None), Ok(()));
        assert_eq!(policy.judge(None, None), Ok(()));
        assert_eq!(
            policy.judge(Some("evil.example"), None),
            Err(Refusal::ForeignHost)
        );
    }

    #[test]
    fn a_token_is_required_when_set() {
        let token = "0123456789abcdef0123".to_string();
        let policy = AccessPolicy::new("0.0.0.0:9137".parse().unwrap(), Some(token.clone()));
        assert_eq!(
            policy.judge(Some("range-gw:9137"), Some(&format!("Bearer {token}"))),
            Ok(())
        );
        for wrong in [
            None,
            Some("Bearer"),
            Some("Bearer "),
            Some("Bearer 0123456789abcdef012"),
            Some("Bearer 0123456789abcdef01234"),
            Some("Basic MDEyMzQ1Njc4OWFiY2RlZjAxMjM="),
            Some("bearer 0123456789abcdef0123x"),
        ] {
            assert_eq!(
                policy.judge(Some("range-gw:9137"), wrong),
                Err(Refusal::Token),
                "{wrong:?}"
            );
        }
        // Off loopback, any Host is fine: the token is what keeps other pages out.
        assert_eq!(
            policy.judge(Some("evil.example"), Some(&format!("Bearer {token}"))),
            Ok(())
        );
    }
}
