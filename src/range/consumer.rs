//! The range's side of NATS: connecting, and its three durable JetStream consumers (every site's
//! receipts and progress marks from `FOXBORNE_RECEIPTS`; the sites' own clock reports and their
//! `traffic_proximity` events from `FOXBORNE_EVENTS`), named after the range so a restart
//! resumes where it stopped.

use crate::config::range::RangeConfig;
use crate::publish::{self, subject};
use anyhow::Context;
use async_nats::jetstream::consumer::pull::{Config, Stream};
use async_nats::jetstream::consumer::AckPolicy;
use async_nats::jetstream::{Context as JetStream, Message};

/// Receipts judged and not yet acknowledged, at most (an ack covers every one before it).
const MAX_ACK_PENDING: i64 = 65_536;

/// What the range reads.
pub struct Consumers {
    /// The receipts consumer's durable name (`range-<name>`).
    pub durable: String,
    pub receipts: Stream,
    pub clock_reports: Stream,
    pub traffic_events: Stream,
}

pub async fn connect(config: &RangeConfig) -> anyhow::Result<Consumers> {
    let mut options = async_nats::ConnectOptions::new()
        .name(format!("foxborne-receiver range {}", config.name))
        .retry_on_initial_connect();
    if let Some(creds) = &config.creds_file {
        options = options
            .credentials_file(creds)
            .await
            .with_context(|| format!("range.creds_file: {}", creds.display()))?;
    }
    let client = options
        .connect(config.nats_url.as_str())
        .await
        .with_context(|| format!("range.nats_url: cannot connect to {}", config.nats_url))?;
    let js = async_nats::jetstream::new(client);
    let durable = format!("range-{}", config.name);
    let receipts = durable_consumer(
        &js,
        publish::RECEIPTS_STREAM,
        Config {
            durable_name: Some(durable.clone()),
            filter_subject: subject::ALL_RECEIPTS.into(),
            ack_policy: AckPolicy::All,
            // JetStream stops delivering at this many unacknowledged messages; the default
            // (1,000) against an ack every 0.5 s would cap the range at 2,000 receipts/s.
            max_ack_pending: MAX_ACK_PENDING,
            ..Default::default()
        },
    )
    .await?;
    let clock_reports = durable_consumer(
        &js,
        publish::EVENTS_STREAM,
        Config {
            durable_name: Some(format!("range-{}-clock", config.name)),
            filter_subject: subject::ALL_CLOCK_EVENTS.into(),
            ack_policy: AckPolicy::All,
            ..Default::default()
        },
    )
    .await?;
    let traffic_events = durable_consumer(
        &js,
        publish::EVENTS_STREAM,
        Config {
            durable_name: Some(format!("range-{}-traffic", config.name)),
            filter_subject: subject::ALL_TRAFFIC_PROXIMITY_EVENTS.into(),
            ack_policy: AckPolicy::All,
            ..Default::default()
        },
    )
    .await?;
    Ok(Consumers {
        durable,
        receipts,
        clock_reports,
        traffic_events,
    })
}

/// The stream (made as the receivers make it, when the range starts first) and the consumer's
/// messages.
async fn durable_consumer(
    js: &JetStream,
    stream_name: &str,
    config: Config,
) -> anyhow::Result<Stream> {
    let durable = config.durable_name.clone().unwrap_or_default();
    let stream = js
        .get_or_create_stream(publish::stream_config(
            stream_name,
            publish::DEFAULT_MAX_AGE,
        ))
        .await
        .map_err(|e| anyhow::anyhow!("the {stream_name} stream: {e}"))?;
    stream
        .get_or_create_consumer(&durable, config)
        .await
        .map_err(|e| anyhow::anyhow!("the range consumer {durable}: {e}"))?
        .messages()
        .await
        .map_err(|e| anyhow::anyhow!("the range consumer {durable}: {e}"))
}

/// Acknowledges `message` and every receipt before it; a failure only costs judging them again
/// after a restart, so it is logged, not fatal.
pub async fn ack_receipts(message: Message) {
    if let Err(e) = message.ack().await {
        tracing::warn!(error = %e, "range: cannot acknowledge; the receipts since the last ack will be judged again after a restart");
    }
}
