//! The range board: `GET /` (the page), `/board.js`, `/board.css` (its script and style, built
//! into the binary: no CDN, no web font, nothing fetched from another host, no build step) and
//! `/board/history` (the recent past it draws, [`super::history`]). The page itself is fed by
//! `/status` on (re)connect and every few seconds, and by `/events` as things happen; see the
//! comment at the top of `board/board.js`.
//!
//! Also the browser's side of the token: `GET /?token=<http.token>` (let through by the access
//! check, see [`super::access`]) is answered with the board cookie and a redirect to `/`.

use super::AppState;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const PAGE: &str = include_str!("board/index.html");
const SCRIPT: &str = include_str!("board/board.js");
const STYLE: &str = include_str!("board/board.css");

/// Only this origin's own files and connections; no inline script or style, no frames.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/", get(page))
        .route(
            "/board.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/board.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route("/board/history", get(history))
}

/// The `token` parameter of a query string, decoded.
pub fn entry_token(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
}

fn headers(content_type: &'static str) -> [(HeaderName, &'static str); 5] {
    [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        // Always revalidated: a daemon upgraded under a wall display serves its own page.
        (header::CACHE_CONTROL, "no-cache"),
    ]
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (headers(content_type), body).into_response()
}

async fn page(State(app): State<AppState>, RawQuery(query): RawQuery) -> Response {
    // The access check has already accepted the token if one was given here.
    if entry_token(query.as_deref()).is_some() {
        if let Some(cookie) = app.access.board_cookie() {
            return (
                StatusCode::SEE_OTHER,
                [
                    (header::LOCATION, "/".to_string()),
                    (header::SET_COOKIE, cookie),
                    (header::CACHE_CONTROL, "no-store".to_string()),
                    (header::REFERRER_POLICY, "no-referrer".to_string()),
                ],
            )
                .into_response();
        }
    }
    asset("text/html; charset=utf-8", PAGE)
}

async fn history(State(app): State<AppState>) -> Response {
    let body = app
        .history
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .to_json();
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_token_is_read_decoded_from_the_query() {
        assert_eq!(entry_token(Some("token=abc%3Bdef")), Some("abc;def".into()));
        assert_eq!(entry_token(Some("x=1&token=t+u")), Some("t u".into()));
        assert_eq!(entry_token(Some("tokens=1")), None);
        assert_eq!(entry_token(None), None);
    }

    #[test]
    fn the_page_fetches_nothing_from_another_host() {
        for (name, text) in [
            ("index.html", PAGE),
            ("board.js", SCRIPT),
            ("board.css", STYLE),
        ] {
            // The one URL is the SVG namespace name, which is never fetched.
            let text = text.replace("'http://www.w3.org/2000/svg'", "");
            for needle in [
                "http://",
                "https://",
                "//cdn",
                "@import",
                "@font-face",
                "url(",
            ] {
                assert!(!text.contains(needle), "{name} contains {needle}");
            }
        }
        // No inline script or style for the CSP to refuse.
        assert!(!PAGE.contains("<script>") && !PAGE.contains("style="));
        assert!(PAGE.contains(r#"<script src="/board.js" defer></script>"#));
    }
}
