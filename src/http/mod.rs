//! The daemon's HTTP port (127.0.0.1:9137 by default), on axum and hyper: the range board
//! (`/`, [`board`]), `/events` (Server-Sent Events, resumable), `/status` (JSON), `/metrics`
//! (OpenMetrics) and `/healthz`. GET and HEAD only. Who may ask is [`access`]; how connections
//! are accepted, capped and timed out is [`server`]; the numbered recent events are
//! [`event_log`]; the board's recent past is [`history`].

pub mod access;
mod board;
pub mod client;
pub mod connections;
pub mod deadline;
pub mod event_log;
pub mod history;
pub mod server;
mod sse;

use crate::config::HttpSettings;
use crate::status::{metrics, ForwardStats, HttpSnapshot, StatusSnapshot};
use access::{AccessPolicy, Presented, Refusal};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use event_log::EventLog;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    /// The event streams' budget (`http.max_streams`).
    pub event_clients_max: AtomicU64,
    pub lagged: AtomicU64,
    /// Streams closed for a newer one of the same peer, past `http.max_streams_per_peer`.
    pub event_clients_closed_peer_limit: AtomicU64,
    /// Streams refused (503): the budget was spent by other peers.
    pub event_clients_refused: AtomicU64,
    /// Connections between requests closed to make room: their peer was at
    /// `http.max_connections_per_peer`, or the port at `http.max_connections`.
    pub connections_closed_peer_limit: AtomicU64,
    pub connections_closed_cap: AtomicU64,
    /// Connections closed at once: every one of their peer's was answering a request.
    pub connections_refused: AtomicU64,
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
            event_clients_max: get(&self.event_clients_max),
            event_clients_dropped: [
                ("lagged".to_string(), get(&self.lagged)),
                ("write_timeout".to_string(), get(&self.write_timeouts)),
                (
                    "peer_limit".to_string(),
                    get(&self.event_clients_closed_peer_limit),
                ),
            ]
            .into(),
            event_clients_refused: get(&self.event_clients_refused),
            connections_closed: [
                (
                    "peer_limit".to_string(),
                    get(&self.connections_closed_peer_limit),
                ),
                ("cap".to_string(), get(&self.connections_closed_cap)),
            ]
            .into(),
            connections_refused: get(&self.connections_refused),
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub events: Arc<EventLog>,
    /// What the range board draws of the recent past, fed by the event fan-out.
    pub history: Arc<Mutex<history::BoardHistory>>,
    /// The pipeline's latest status snapshot; `/status` and `/metrics` render it on request.
    pub status: watch::Receiver<Arc<StatusSnapshot>>,
    pub access: Arc<AccessPolicy>,
    pub counters: Arc<HttpCounters>,
    /// Publishing's counters, when `[publish]` is set.
    pub publish: Option<Arc<crate::publish::PublishStats>>,
    /// Each forward output's counters.
    pub forwards: Vec<Arc<ForwardStats>>,
    pub shutdown: watch::Receiver<bool>,
}

/// The HTTP face as its owner (the daemon, or the range view) feeds it: the events ring that
/// `/events` serves, the board's recent past, the channel each new status snapshot is published
/// on, and the serving task, which ends after the shutdown drain.
pub struct Face {
    pub events: Arc<EventLog>,
    pub history: Arc<Mutex<history::BoardHistory>>,
    pub status: watch::Sender<Arc<StatusSnapshot>>,
    pub task: tokio::task::JoinHandle<()>,
}

/// The counters of the owner's other outputs, which `/status` and `/metrics` show beside the
/// snapshot: publishing (with `[publish]`) and each forward output.
#[derive(Default)]
pub struct Outputs {
    pub publish: Option<Arc<crate::publish::PublishStats>>,
    pub forwards: Vec<Arc<ForwardStats>>,
}

/// Binds `settings.listen` and serves the face there: the one bring-up of the HTTP port for the
/// daemon and the range. Event ids carry the run (`started_utc_ns`), so a client resuming
/// across a restart is told to resync. The connection cap is lowered to fit the descriptor
/// limit (said so).
pub async fn start(
    settings: &HttpSettings,
    started_utc_ns: i64,
    outputs: Outputs,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<Face> {
    use anyhow::Context;
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("http.listen: cannot listen on {}", settings.listen))?;
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let nofile = server::raise_nofile_limit();
    let cap = server::connection_cap(settings.max_connections, nofile);
    if cap < settings.max_connections {
        tracing::warn!(
            max_connections = settings.max_connections,
            nofile,
            cap,
            "http.max_connections lowered to fit the file descriptor limit (LimitNOFILE), keeping {} for the daemon's files",
            HttpSettings::RESERVED_FDS
        );
    }
    let limits = settings.limits(cap);
    tracing::info!(
        local = %local,
        max_connections = cap,
        max_streams = limits.max_streams,
        token = settings.token.is_some(),
        "http listening (/events /status /metrics /healthz)"
    );
    let counters = Arc::new(HttpCounters::default());
    let connections = server::Connections::new(limits, counters.clone());
    let events = Arc::new(EventLog::new(
        format!("{:x}", started_utc_ns / 1_000),
        event_log::RING_EVENTS,
    ));
    let history = Arc::new(Mutex::new(history::BoardHistory::default()));
    let (published, status) = watch::channel(Arc::new(StatusSnapshot::default()));
    let app = router(AppState {
        events: events.clone(),
        history: history.clone(),
        status,
        access: Arc::new(AccessPolicy::new(settings.listen, settings.token.clone())),
        counters,
        publish: outputs.publish,
        forwards: outputs.forwards,
        shutdown: shutdown.clone(),
    });
    let task = tokio::spawn(server::serve(listener, app, connections, shutdown));
    Ok(Face {
        events,
        history,
        status: published,
        task,
    })
}

/// Requests other than `/events` must be answered within this.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub fn router(state: AppState) -> axum::Router {
    let timed = axum::Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/status", get(status))
        .route("/metrics", get(metrics_text))
        .merge(board::routes())
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
        .layer(axum::middleware::from_fn(answering))
        .with_state(state)
}

/// Marks the connection as answering a request while its response is made, so it is not
/// closed to make room meanwhile (see [`connections`]).
async fn answering(request: Request, next: Next) -> Response {
    let _answering = request
        .extensions()
        .get::<server::ConnectionHandle>()
        .map(server::ConnectionHandle::request);
    next.run(request).await
}

async fn check_access(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let verdict = {
        let text = |name| {
            request
                .headers()
                .get(name)
                .and_then(|v: &HeaderValue| v.to_str().ok())
        };
        // Only the board's entry takes the token from the address (see `access`).
        let entry_token = (request.uri().path() == "/")
            .then(|| board::entry_token(request.uri().query()))
            .flatten();
        app.access.judge_presented(
            text(header::HOST),
            Presented {
                authorization: text(header::AUTHORIZATION),
                cookie: text(header::COOKIE),
                entry_token: entry_token.as_deref(),
            },
        )
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
                "send Authorization: Bearer <http.token>; in a browser, open /?token=<http.token>\n",
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
    snapshot.forwards = app.forwards.iter().map(|f| f.snapshot()).collect();
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
        "try / (the range board) /events /status /metrics /healthz\n",
    )
}
