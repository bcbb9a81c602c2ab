//! Who may use the HTTP port (pure). On a loopback listener, only a request whose `Host` is a
//! loopback name or address is answered: a web page from another origin that points its own
//! DNS name at 127.0.0.1 (DNS rebinding) sends its own name as `Host` and gets 421. On any
//! other listener every request must carry `Authorization: Bearer <http.token>` (401 without);
//! config load refuses such a listener without a token.
//!
//! A browser cannot put a bearer header on the range board's `EventSource`, so a browser proves
//! the token once: `GET /?token=<http.token>` (and only that path) is let through and answered
//! with the [`BOARD_COOKIE`] cookie (HttpOnly, so no script reads it; SameSite=Strict, so no
//! other site's page or link makes the browser send it) and a redirect to `/`, which takes the
//! token out of the address bar. Every later request from that browser carries the cookie,
//! which is accepted like the bearer header. The cookie holds the token hex-encoded (a token may
//! contain characters a cookie value may not).

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

/// The cookie a browser gets for proving the token at `/?token=`.
pub const BOARD_COOKIE: &str = "foxborne_board";

/// What a request presents as its credentials.
#[derive(Debug, Clone, Copy, Default)]
pub struct Presented<'a> {
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The `Cookie` header, whole.
    pub cookie: Option<&'a str>,
    /// The `token` query parameter of `GET /`, decoded (the caller passes it for that path only).
    pub entry_token: Option<&'a str>,
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

    /// Whether a request with these `Host` and `Authorization` headers is answered (the
    /// header-only form, for the tests).
    #[cfg(test)]
    pub fn judge(&self, host: Option<&str>, authorization: Option<&str>) -> Result<(), Refusal> {
        self.judge_presented(
            host,
            Presented {
                authorization,
                ..Presented::default()
            },
        )
    }

    /// Whether a request is answered: the Host check, then the token by any of the ways a
    /// request may present it (bearer header, board cookie, `/?token=`).
    pub fn judge_presented(&self, host: Option<&str>, presented: Presented) -> Result<(), Refusal> {
        // A browser always sends Host; a request without one cannot come from a rebinding page.
        if self.loopback && host.is_some_and(|h| !is_loopback_host(h)) {
            return Err(Refusal::ForeignHost);
        }
        if let Some(token) = &self.token {
            let bearer = presented
                .authorization
                .and_then(|a| a.strip_prefix("Bearer "))
                .map(str::trim)
                .is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes()));
            let entry = presented
                .entry_token
                .is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes()));
            let expected_cookie = hex(token);
            // Every cookie of that name is tried: another path's cookie of the same name may
            // come first.
            let cookie = presented.cookie.is_some_and(|header| {
                cookie_values(header, BOARD_COOKIE)
                    .any(|v| same_secret(v.as_bytes(), expected_cookie.as_bytes()))
            });
            if !(bearer || entry || cookie) {
                return Err(Refusal::Token);
            }
        }
        Ok(())
    }

    /// The `Set-Cookie` value that a browser which proved the token is given (`None` when no
    /// token is configured: there is nothing to remember).
    pub fn board_cookie(&self) -> Option<String> {
        self.token.as_ref().map(|token| {
            format!(
                "{BOARD_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
                hex(token)
            )
        })
    }
}

/// Lower-case hex of the token's bytes: always a valid cookie value.
fn hex(token: &str) -> String {
    token.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The values of every cookie called `name` in a `Cookie` header (`a=1; b=2`); a header the
/// cookie crate cannot read gives none.
/// A value in double quotes (RFC 6265 allows them) is the text inside.
fn cookie_values<'a>(header: &'a str, name: &'a str) -> impl Iterator<Item = String> + 'a {
    cookie::Cookie::split_parse(header)
        .filter_map(Result::ok)
        .filter(move |c| c.name() == name)
        .map(|c| c.value_trimmed().to_string())
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
    use subtle::ConstantTimeEq;
    given.ct_eq(expected).into()
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

    #[test]
    fn a_browser_proves_the_token_once_and_then_carries_the_cookie() {
        let token = "range;north,\"5f1c0d9e7a2b";
        let policy = AccessPolicy::new("0.0.0.0:9137".parse().unwrap(), Some(token.into()));
        let judge = |p: Presented| policy.judge_presented(Some("range-gw:9137"), p);
        // The entry: /?token=... (the caller passes it for that path only).
        assert_eq!(
            judge(Presented {
                entry_token: Some(token),
                ..Default::default()
            }),
            Ok(())
        );
        for wrong in ["", "range;north", "range;north,\"5f1c0d9e7a2bX"] {
            assert_eq!(
                judge(Presented {
                    entry_token: Some(wrong),
                    ..Default::default()
                }),
                Err(Refusal::Token),
                "{wrong}"
            );
        }
        // The cookie it is given is HttpOnly and SameSite=Strict, and carries the token in hex,
        // so the `;`, `,` and `"` in it cannot break the header.
        let set = policy.board_cookie().unwrap();
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict"),
            "{set}"
        );
        assert!(set.contains("Path=/"), "{set}");
        let value = set
            .strip_prefix("foxborne_board=")
            .and_then(|rest| rest.split(';').next())
            .unwrap();
        assert!(value.bytes().all(|b| b.is_ascii_hexdigit()), "{value}");
        let with_cookie_header = |header: &str| {
            judge(Presented {
                cookie: Some(header),
                ..Default::default()
            })
        };
        for header in [
            format!("foxborne_board={value}"),
            format!("theme=dark; foxborne_board={value}"),
            format!("foxborne_board=stale; foxborne_board=\"{value}\""),
        ] {
            assert_eq!(with_cookie_header(&header), Ok(()), "{header}");
        }
        for header in [
            "foxborne_board=".to_string(),
            format!("foxborne_board={}", &value[..value.len() - 2]),
            format!("other_board={value}"),
            // The raw token is not the cookie's value.
            format!("foxborne_board={token}"),
        ] {
            assert_eq!(with_cookie_header(&header), Err(Refusal::Token), "{header}");
        }
        // On a loopback listener the Host check still comes first, cookie or not.
        let local = AccessPolicy::new("127.0.0.1:9137".parse().unwrap(), Some(token.into()));
        let cookie = format!("foxborne_board={value}");
        let with_cookie = Presented {
            cookie: Some(&cookie),
            ..Default::default()
        };
        assert_eq!(
            local.judge_presented(Some("127.0.0.1:9137"), with_cookie),
            Ok(())
        );
        assert_eq!(
            local.judge_presented(Some("evil.example"), with_cookie),
            Err(Refusal::ForeignHost)
        );
        // Without a token there is no cookie to give.
        assert_eq!(
            AccessPolicy::new("127.0.0.1:9137".parse().unwrap(), None).board_cookie(),
            None
        );
    }
}
