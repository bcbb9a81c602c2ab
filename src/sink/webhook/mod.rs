//! Alert webhooks: each `[[webhook]]` has its own bounded queue and delivery task, so one slow
//! or dead endpoint never delays another, the events file, SSE or the pipeline. Delivery is
//! reqwest over rustls (system roots plus the webhook's `ca_file`, see [`tls`]), with connection reuse,
//! redirects followed, and the retry rules of [`retry`]. A full queue drops the event for that
//! webhook (it is still in the events file, the journal and SSE), counted, with one warning per
//! outage. At shutdown the queue gets a time budget; what is still undelivered then is counted
//! and logged.

pub mod format;
pub mod retry;
pub mod tls;

use crate::config::{WebhookFormat, WebhookSettings};
use crate::monitor::Event;
use anyhow::Context;
use retry::Verdict;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

#[derive(Debug, Default)]
pub struct WebhookStats {
    pub sent: AtomicU64,
    pub failed_attempts: AtomicU64,
    /// Given up (after every retry, or refused with a 4xx), or never queued because the queue
    /// was full.
    pub dropped: AtomicU64,
    /// Queued and not yet delivered or given up (the one in flight included).
    pub pending: AtomicU64,
    /// Set while the queue overflows; cleared by the next delivery (one warning per outage).
    overflowing: AtomicBool,
}

pub struct Webhook {
    pub name: String,
    kinds: Vec<String>,
    format: WebhookFormat,
    tx: mpsc::Sender<String>,
    pub stats: Arc<WebhookStats>,
    task: tokio::task::JoinHandle<()>,
}

impl Webhook {
    /// Builds the HTTP client (a bad `ca_file` fails here, at start) and starts delivering.
    pub fn spawn(settings: &WebhookSettings) -> anyhow::Result<Webhook> {
        let mut client = reqwest::Client::builder()
            .user_agent(concat!("foxborne-receiver/", env!("CARGO_PKG_VERSION")))
            .timeout(Duration::from_secs_f64(settings.timeout_s))
            .connect_timeout(Duration::from_secs_f64(settings.timeout_s.min(5.0)))
            .pool_idle_timeout(Duration::from_secs(60));
        if !settings.ca_certs.is_empty() {
            let tls = tls::client_config(&settings.ca_certs)
                .with_context(|| format!("webhook {}: ca_file", settings.name))?;
            client = client.use_preconfigured_tls(tls);
        }
        let client = client
            .build()
            .with_context(|| format!("webhook {}: cannot build its HTTP client", settings.name))?;
        let mut headers = reqwest::header::HeaderMap::new();
        let content_type = "application/json";
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            reqwest::header::HeaderValue::from_static(content_type),
        );
        for (name, value) in &settings.headers {
            // Checked at config load.
            headers.insert(
                reqwest::header::HeaderName::from_bytes(name.as_bytes())?,
                reqwest::header::HeaderValue::from_str(value)?,
            );
        }
        let (tx, rx) = mpsc::channel(settings.queue.max(1));
        let stats = Arc::new(WebhookStats::default());
        let target = Target {
            name: settings.name.clone(),
            client,
            url: settings.url.clone(),
            headers,
        };
        let task = tokio::spawn(deliver(target, rx, stats.clone()));
        Ok(Webhook {
            name: settings.name.clone(),
            kinds: settings.kinds.clone(),
            format: settings.format,
            tx,
            stats,
            task,
        })
    }

    /// Queues `event` (its JSON line is `line`) when this webhook takes its kind. Never waits.
    pub fn offer(&self, event: &Event, line: &str) {
        if !self.kinds.iter().any(|k| k == event.kind()) {
            return;
        }
        let body = format::body(self.format, event, line);
        self.stats.pending.fetch_add(1, Ordering::Relaxed);
        if self.tx.try_send(body).is_err() {
            self.stats.pending.fetch_sub(1, Ordering::Relaxed);
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            if !self.stats.overflowing.swap(true, Ordering::Relaxed) {
                tracing::warn!(webhook = %self.name, "webhook queue full: events not delivered to this webhook are counted (they are in the events file)");
            }
        }
    }

    /// Stops taking events and gives the queue `budget` to drain. Returns how many events
    /// were still undelivered when the budget ran out (also logged).
    pub async fn finish(self, budget: Duration) -> u64 {
        let Webhook {
            name,
            tx,
            stats,
            mut task,
            ..
        } = self;
        drop(tx);
        if tokio::time::timeout(budget, &mut task).await.is_err() {
            task.abort();
            let _ = task.await;
        }
        let undelivered = stats.pending.swap(0, Ordering::Relaxed);
        if undelivered > 0 {
            stats.dropped.fetch_add(undelivered, Ordering::Relaxed);
            tracing::warn!(webhook = %name, undelivered, budget_s = budget.as_secs_f64(), "stopping: events not delivered to this webhook before the stop budget ran out (they are in the events file)");
        }
        undelivered
    }
}

struct Target {
    name: String,
    client: reqwest::Client,
    url: url::Url,
    headers: reqwest::header::HeaderMap,
}

impl Target {
    async fn post(&self, body: &str) -> Result<u16, reqwest::Error> {
        let response = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body.to_string())
            .send()
            .await?;
        Ok(response.status().as_u16())
    }
}

async fn deliver(target: Target, mut rx: mpsc::Receiver<String>, stats: Arc<WebhookStats>) {
    let mut failing = false;
    while let Some(body) = rx.recv().await {
        let mut delivered = false;
        let mut backoff = retry::backoff();
        for attempt in 1..=retry::ATTEMPTS {
            let (verdict, detail) = match target.post(&body).await {
                Ok(status) => (retry::judge_status(status), format!("HTTP {status}")),
                // Timeouts, refused connections, TLS failures: the endpoint may be back soon.
                Err(e) => (Verdict::TryAgain, error_chain(&e)),
            };
            match verdict {
                Verdict::Delivered => {
                    delivered = true;
                    break;
                }
                Verdict::GiveUp => {
                    stats.failed_attempts.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(webhook = %target.name, %detail, "webhook refused the event; not retrying a client error");
                    break;
                }
                Verdict::TryAgain => {
                    stats.failed_attempts.fetch_add(1, Ordering::Relaxed);
                    if !failing {
                        tracing::warn!(webhook = %target.name, %detail, "webhook delivery failing; retrying with backoff");
                        failing = true;
                    }
                    if attempt < retry::ATTEMPTS {
                        tokio::time::sleep(backoff.failed(crate::backoff::draw())).await;
                    }
                }
            }
        }
        stats.pending.fetch_sub(1, Ordering::Relaxed);
        if delivered {
            stats.sent.fetch_add(1, Ordering::Relaxed);
            stats.overflowing.store(false, Ordering::Relaxed);
            if failing {
                tracing::info!(webhook = %target.name, "webhook delivering again");
                failing = false;
            }
        } else {
            stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The error and its causes on one line ("error sending request: connection refused").
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    if text.contains("CaUsedAsEndEntity") {
        text.push_str(&format!(" ({})", tls::CA_AS_SERVER_HINT));
    }
    text
}
