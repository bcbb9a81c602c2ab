//! `/events`: Server-Sent Events, one `data:` line per event as it happens (so `curl -N` shows
//! alerts live), each with an `id:`; `Last-Event-ID` resumes from the event log's ring. A
//! keep-alive comment every 15 s lets clients and proxies tell a quiet range from a dead
//! connection. A client that falls more than the live buffer behind is cut off (it reconnects
//! and is replayed); one that stops reading altogether is cut off by the write timeout. A stream
//! holds a place in the port's stream budget ([`super::connections`]) while it lasts: past its
//! peer's limit the peer's oldest stream is closed, past the whole budget the answer is 503.

use super::event_log::{EventLog, Numbered, Subscription};
use super::server::{ConnectionHandle, StreamGuard};
use super::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};

const KEEPALIVE: Duration = Duration::from_secs(15);

/// Seconds a refused client is told to wait before it asks again.
const RETRY_AFTER_S: &str = "10";

pub async fn events(
    State(app): State<AppState>,
    connection: Option<Extension<ConnectionHandle>>,
    headers: HeaderMap,
) -> Response {
    // Without a connection handle (a router driven directly, not through the server) there is
    // no budget to keep.
    let place = match connection {
        Some(Extension(connection)) => match connection.open_stream() {
            Some(place) => Some(place),
            None => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, RETRY_AFTER_S)],
                    "every event stream this port allows is taken (http.max_streams); try again later\n",
                )
                    .into_response()
            }
        },
        None => None,
    };
    let last_event_id = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let Subscription {
        replay,
        resync,
        latest_seq,
        live,
    } = app.events.subscribe(last_event_id);
    let mut first = vec![Event::default().comment(format!(
        "foxborne-receiver events, run {}",
        app.events.run()
    ))];
    if let Some(reason) = resync {
        first.push(
            Event::default()
                .event("resync")
                .id(app.events.id(latest_seq))
                .data(serde_json::json!({ "reason": reason }).to_string()),
        );
    }
    first.extend(replay.iter().map(|e| numbered(&app.events, e)));
    let client = Client {
        first: first.into(),
        live,
        log: app.events.clone(),
        shutdown: app.shutdown.clone(),
        counters: app.counters.clone(),
        _place: place,
    };
    app.counters.event_clients.fetch_add(1, Ordering::Relaxed);
    let stream = futures_util::stream::unfold(client, Client::next);
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEPALIVE).text("keepalive"))
        .into_response()
}

fn numbered(log: &EventLog, event: &Numbered) -> Event {
    Event::default().id(log.id(event.seq)).data(&*event.line)
}

struct Client {
    first: std::collections::VecDeque<Event>,
    live: broadcast::Receiver<Arc<Numbered>>,
    log: Arc<EventLog>,
    shutdown: watch::Receiver<bool>,
    counters: Arc<super::HttpCounters>,
    /// The stream's place in the budget, given back when the client goes.
    _place: Option<StreamGuard>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.counters.event_clients.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Client {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Client)> {
        if let Some(event) = self.first.pop_front() {
            return Some((Ok(event), self));
        }
        let received = tokio::select! {
            _ = self.shutdown.wait_for(|stop| *stop) => return None,
            received = self.live.recv() => received,
        };
        match received {
            Ok(event) => {
                let event = numbered(&self.log, &event);
                Some((Ok(event), self))
            }
            Err(RecvError::Lagged(_)) => {
                self.counters.lagged.fetch_add(1, Ordering::Relaxed);
                tracing::debug!("an /events client fell behind the live buffer; cut off (it can resume with Last-Event-ID)");
                None
            }
            Err(RecvError::Closed) => None,
        }
    }
}
