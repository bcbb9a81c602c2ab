//! The one walk over a log that every export makes (the Parquet and CSV tables, the MCAP file):
//! records read in order, each topic instance (`topic`, `multi_id`) given one output when it is
//! first subscribed, each sample routed to its instance by `msg_id`, and everything else handed
//! on with the log's clock so far. What the walk decides for every export alike:
//!
//! - a topic instance has one format: a later subscription of it to a different format (the
//!   format redefined in between) does not go to it; its samples are counted as skipped;
//! - a malformed message is skipped and counted (the first one's text kept); a log that ends
//!   inside a message stops the walk there (what came before is exported); a log rejected on
//!   its first bytes (not ULog, encrypted, unknown incompatible flags) gives nothing.

use super::{ExportError, ExportSummary};
use crate::ulog::error::ReadError;
use crate::ulog::format::{FlatField, FormatRegistry, TopicLayout};
use crate::ulog::reader::StreamReader;
use crate::ulog::record::{Located, Record, Sample, Subscription};
use std::collections::HashMap;
use std::sync::Arc;

/// The format a topic instance's output was made with; samples of another format do not fit.
pub(crate) struct InstanceFormat {
    pub layout: Arc<TopicLayout>,
    pub fields: Vec<FlatField>,
}

impl InstanceFormat {
    /// The subscription's format, flattened (the decoder resolved its layout, so this succeeds
    /// and is bounded).
    pub fn of(subscription: &Subscription, formats: &FormatRegistry) -> InstanceFormat {
        InstanceFormat {
            layout: subscription.layout.clone(),
            fields: formats
                .flatten(&subscription.layout.format_name)
                .unwrap_or_default(),
        }
    }

    /// Whether samples of `subscription` (same topic and multi_id) fit this format.
    pub fn fits(&self, subscription: &Subscription, formats: &FormatRegistry) -> bool {
        Arc::ptr_eq(&self.layout, &subscription.layout)
            || (self.layout.written_size == subscription.layout.written_size
                && formats
                    .flatten(&subscription.layout.format_name)
                    .is_ok_and(|f| f == self.fields))
    }
}

/// One topic instance's output, as the walk needs to know it.
pub(crate) trait Instance {
    fn format(&self) -> &InstanceFormat;
    /// Counts a sample that did not fit (see [`InstanceFormat::fits`]).
    fn skip_sample(&mut self);
}

/// What an export does with what the walk finds.
pub(crate) trait Exporter {
    type Instance: Instance;

    /// A topic instance subscribed for the first time.
    fn open(
        &mut self,
        key: &(String, u8),
        formats: &FormatRegistry,
        subscription: &Subscription,
    ) -> Result<Self::Instance, ExportError>;

    /// A sample of `instances[index]`, which it fits: its message number, and the log's time
    /// so far (µs).
    fn sample(
        &mut self,
        instances: &mut [Self::Instance],
        index: usize,
        sample: &Sample<'_>,
        message: u64,
        clock: u64,
    ) -> Result<(), ExportError>;

    /// Any record but the file header, data, subscriptions and unsubscriptions (parameters,
    /// logged messages, information, dropouts, ...), with the log's time so far.
    fn other(&mut self, located: &Located<'_>, clock: u64) -> Result<(), ExportError>;
}

/// The instances the walk opened, in order, with their keys.
pub(crate) struct Walked<T> {
    pub instances: Vec<T>,
    pub keys: Vec<(String, u8)>,
}

/// Walks the log read from `input`, handing what it finds to `exporter`; counts and reasons go
/// into `summary` (messages, malformed, stopped, rejected).
pub(crate) fn walk<R: std::io::Read, E: Exporter>(
    input: R,
    exporter: &mut E,
    summary: &mut ExportSummary,
) -> Result<Walked<E::Instance>, ExportError> {
    let mut reader = StreamReader::new(input);
    let mut walked: Walked<E::Instance> = Walked {
        instances: Vec::new(),
        keys: Vec::new(),
    };
    let mut by_key: HashMap<(String, u8), usize> = HashMap::new();
    // msg_id to instance index and whether its samples fit the instance.
    let mut by_msg_id: Vec<Option<(usize, bool)>> = Vec::new();
    let mut clock = 0u64;
    while let Some(item) = reader.next_record() {
        let located = match item {
            Ok(l) => l,
            Err(e @ ReadError::Malformed { .. }) => {
                summary.malformed += 1;
                summary.first_malformed.get_or_insert_with(|| e.to_string());
                continue;
            }
            Err(
                e @ (ReadError::NotUlog { .. }
                | ReadError::Encrypted { .. }
                | ReadError::UnsupportedIncompatFlags { .. }),
            ) => {
                summary.rejected = Some(e.to_string());
                break;
            }
            Err(e @ ReadError::Truncated { .. }) => {
                summary.stopped = Some(e.to_string());
                break;
            }
            Err(e) => return Err(ExportError::Read(e)),
        };
        summary.messages = located.message;
        match &located.record {
            Record::Data(sample) => {
                if let Some(ts) = sample.timestamp {
                    clock = clock.max(ts);
                }
                let Some(Some((index, fits))) =
                    by_msg_id.get(usize::from(sample.subscription.msg_id))
                else {
                    continue;
                };
                if !fits {
                    walked.instances[*index].skip_sample();
                    continue;
                }
                exporter.sample(
                    &mut walked.instances,
                    *index,
                    sample,
                    located.message,
                    clock,
                )?;
            }
            Record::Subscription {
                subscription,
                formats,
            } => {
                let key = (subscription.topic.to_string(), subscription.multi_id);
                let target = match by_key.get(&key) {
                    Some(i) => (
                        *i,
                        walked.instances[*i].format().fits(subscription, formats),
                    ),
                    None => {
                        let instance = exporter.open(&key, formats, subscription)?;
                        walked.instances.push(instance);
                        walked.keys.push(key.clone());
                        by_key.insert(key, walked.instances.len() - 1);
                        (walked.instances.len() - 1, true)
                    }
                };
                let id = usize::from(subscription.msg_id);
                if by_msg_id.len() <= id {
                    by_msg_id.resize(id + 1, None);
                }
                by_msg_id[id] = Some(target);
            }
            Record::Unsubscription { msg_id } => {
                if let Some(slot) = by_msg_id.get_mut(usize::from(*msg_id)) {
                    *slot = None;
                }
            }
            Record::FileHeader(h) => clock = h.timestamp,
            _ => exporter.other(&located, clock)?,
        }
    }
    Ok(walked)
}
