//! The alert webhook: each event POSTed as JSON to an `http://` endpoint, from a bounded queue,
//! with retries and backoff. It never blocks the pipeline: when the queue is full the event is
//! counted as dropped for the webhook (it is still in the events file, journal and SSE). A dead
//! endpoint costs a counter and one log line per outage.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

const ATTEMPTS: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const IO_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Default)]
pub struct WebhookStats {
    pub sent: AtomicU64,
    pub failed_attempts: AtomicU64,
    /// Given up after every retry, or never queued because the queue was full.
    pub dropped: AtomicU64,
}

/// `http://host:port/path` split for a plain HTTP/1.1 request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoint {
    pub host_port: String,
    pub host: String,
    pub path: String,
}

impl Endpoint {
    /// From a checked `http://` URL: its host and port (80 by default) and path with query.
    pub fn from_url(url: &url::Url) -> Result<Endpoint, String> {
        let host = url.host_str().ok_or("the URL has no host")?;
        let port = url.port_or_known_default().ok_or("the URL has no port")?;
        // `host_str` keeps an IPv6 address in brackets, as the authority writes it.
        let host_port = format!("{host}:{port}");
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Ok(Endpoint {
            host_port,
            host: match url.port() {
                Some(p) => format!("{host}:{p}"),
                None => host.to_string(),
            },
            path,
        })
    }
}

pub struct Webhook {
    tx: mpsc::Sender<Arc<str>>,
    pub stats: Arc<WebhookStats>,
}

impl Webhook {
    pub fn spawn(endpoint: Endpoint, queue: usize) -> Webhook {
        let (tx, rx) = mpsc::channel(queue.max(1));
        let stats = Arc::new(WebhookStats::default());
        tokio::spawn(deliver(endpoint, rx, stats.clone()));
        Webhook { tx, stats }
    }

    /// Queues one event (a JSON object). Never waits.
    pub fn offer(&self, json: Arc<str>) {
        if self.tx.try_send(json).is_err()
            && self.stats.dropped.fetch_add(1, Ordering::Relaxed) == 0
        {
            tracing::warn!("webhook queue full: events not delivered to the webhook are counted (still in the events file)");
        }
    }
}

async fn deliver(endpoint: Endpoint, mut rx: mpsc::Receiver<Arc<str>>, stats: Arc<WebhookStats>) {
    let mut failing = false;
    while let Some(body) = rx.recv().await {
        let mut backoff = FIRST_BACKOFF;
        let mut delivered = false;
        for attempt in 1..=ATTEMPTS {
            match post(&endpoint, &body).await {
                Ok(()) => {
                    delivered = true;
                    break;
                }
                Err(e) => {
                    stats.failed_attempts.fetch_add(1, Ordering::Relaxed);
                    if !failing {
                        tracing::warn!(endpoint = %endpoint.host_port, error = %e, "webhook delivery failing; retrying with backoff");
                        failing = true;
                    }
                    if attempt < ATTEMPTS {
                        tokio::time::sleep(backoff).await;
                        backoff *= 2;
                    }
                }
            }
        }
        if delivered {
            stats.sent.fetch_add(1, Ordering::Relaxed);
            if failing {
                tracing::info!(endpoint = %endpoint.host_port, "webhook delivering again");
                failing = false;
            }
        } else {
            stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn post(endpoint: &Endpoint, body: &str) -> std::io::Result<()> {
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: foxborne-receiver\r\n\r\n{}",
        endpoint.path,
        endpoint.host,
        body.len(),
        body
    );
    let exchange = async {
        let mut stream = TcpStream::connect(&endpoint.host_port).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut head = [0u8; 64];
        let n = stream.read(&mut head).await?;
        let status_line = String::from_utf8_lossy(&head[..n]);
        let code: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        if (200..300).contains(&code) {
            Ok(())
        } else {
            Err(std::io::Error::other(format!("HTTP status {code}")))
        }
    };
    tokio::time::timeout(IO_TIMEOUT, exchange)
        .await
        .map_err(|_| std::io::Error::other("timed out"))?
}
