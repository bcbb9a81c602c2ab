//! `/events`: Server-Sent Events, one `data:` line per event as it happens (so `curl -N` shows
//! alerts live), each with an `id:`; `Last-Event-ID` resumes from the event log's ring. A
//! keep-alive comment every 15 s lets clients and proxies tell a quiet range from a dead
//! connection. A client that falls more than the live buffer behind is cut off (it reconnects
//! and is replayed); one that stops reading altogether is cut off by the write timeout.

use super::event_log::{EventLog, Numbered, Subscription};
use super::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};

const KEEPALIVE: Duration = Duration::from_secs(15);

pub async fn events(
    State(app): State<AppState>,
    headers: HeaderMap,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
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
    };
    app.counters.event_clients.fetch_add(1, Ordering::Relaxed);
    let stream = futures_util::stream::unfold(client, Client::next);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEPALIVE).text("keepalive"))
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
