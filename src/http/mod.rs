//! The daemon's HTTP port (127.0.0.1:9137 by default), on axum and hyper: `/events` (Server-Sent
//! Events, resumable), `/status` (JSON), `/metrics` (OpenMetrics) and `/healthz`. GET and HEAD
//! only. Who may ask is [`access`]; how connections are accepted, capped and timed out is
//! [`server`]; the numbered recent events are [`event_log`].

pub mod access;
pub mod client;
pub mod deadline;
pub mod event_log;
pub mod server;
mod sse;

use crate::status::{metrics, HttpSnapshot, StatusSnapshot};
use access::{AccessPolicy, Refusal};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use event_log::EventLog;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The HTTP port's own counters.
#[derive(Debug, Default)]
pub struct HttpCounters {
    pub connections_open: AtomicU64,
    pub connections_max: AtomicU64,
    pub connections_total: AtomicU64,
    pub accept_errors: AtomicU64,
    pub refused_host: AtomicU64,
    pub refused_token: AtomicU64,
    pub event_clients: AtomicU64,
    pub lagged: AtomicU64,
    /// Shared with every connection's write deadline.
    pub write_timeouts: Arc<AtomicU64>,
}

impl HttpCounters {
    pub fn snapshot(&self) -> HttpSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        HttpSnapshot {
            connections_open: get(&self.connections_open),
            connections_max: get(&self.connections_max),
            connections_total: get(&self.connections_total),
            accept_errors: get(&self.accept_errors),
            refused: [
                (
                    Refusal::ForeignHost.label().to_string(),
                    get(&self.refused_host),
                ),
                (Refusal::Token.label().to_string(), get(&self.refused_token)),
            ]
            .into(),
            event_clients: get(&self.event_clients),
            event_clients_dropped: [
                ("lagged".to_string(), get(&self.lagged)),
                ("write_timeout".to_string(), get(&self.write_timeouts)),
            ]
            .into(),
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub events: Arc<EventLog>,
    /// The pipeline's latest status snapshot; `/status` and `/metrics` render it on request.
    pub status: watch::Receiver<Arc<StatusSnapshot>>,
    pub access: Arc<AccessPolicy>,
    pub counters: Arc<HttpCounters>,
    /// Publishing's counters, when `[publish]` is set.
    pub publish: Option<Arc<crate::publish::PublishStats>>,
    pub shutdown: watch::Receiver<bool>,
}

/// Requests other than `/events` must be answered within this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub fn router(state: AppState) -> axum::Router {
    let timed = axum::Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/status", get(status))
        .route("/metrics", get(metrics_text))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ));
    axum::Router::new()
        .route("/events", get(sse::events))
        .merge(timed)
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            check_access,
        ))
        .with_state(state)
}

async fn check_access(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let verdict = {
        let text = |name| {
            request
                .headers()
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        app.access
            .judge(text(header::HOST), text(header::AUTHORIZATION))
    };
    match verdict {
        Ok(()) => next.run(request).await,
        Err(Refusal::ForeignHost) => {
            app.counters.refused_host.fetch_add(1, Ordering::Relaxed);
            (
                StatusCode::MISDIRECTED_REQUEST,
                "this port answers only to a loopback Host (localhost, 127.0.0.1, [::1])\n",
            )
                .into_response()
        }
        Err(Refusal::Token) => {
            app.counters.refused_token.fetch_add(1, Ordering::Relaxed);
            (
                StatusCode::UNAUTHORIZED,
                [(
                    header::WWW_AUTHENTICATE,
                    "Bearer realm=\"foxborne-receiver\"",
                )],
                "send Authorization: Bearer <http.token>\n",
            )
                .into_response()
        }
    }
}

/// The latest snapshot with the HTTP port's own counters in it.
fn current(app: &AppState) -> StatusSnapshot {
    let mut snapshot = StatusSnapshot::clone(&app.status.borrow());
    snapshot.http = Some(app.counters.snapshot());
    snapshot.publish = app
        .publish
        .as_deref()
        .map(crate::status::PublishSnapshot::of);
    snapshot
}

async fn status(State(app): State<AppState>) -> Response {
    let body = serde_json::to_string(&current(&app)).expect("the snapshot serialises");
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn metrics_text(State(app): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        metrics::render(&current(&app)),
    )
        .into_response()
}

async fn not_found() -> (StatusCode, &'static str) {
    (
        StatusCode::NOT_FOUND,
        "try /events /status /metrics /healthz\n",
    )
}
