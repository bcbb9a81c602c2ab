//! The flight analysis of the ingest pass: PX4 events, the decoded signals, the rules and the
//! state band, fed one record at a time beside the collector and finished with the log's
//! parameters and embedded event definitions.
//!
//! Pure: records in, events, rule outcomes and state changes out.

use super::events::{self, DefinitionsReport, Event, EventFields, RawEvent, EVENT_TOPIC};
use super::modes::{ModeChange, ModeTracker};
use super::record::{route_subscription, Located, Record};
use super::rules::{Context, RuleOutcome, RuleSet};
use super::signals::SignalDecoder;
use super::value::Value;
use std::collections::BTreeMap;

/// What the analysis found in one log.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The events as pyulog lists them (default group, logged levels).
    pub events: Vec<Event>,
    /// Every decoded event, health and arming-check reports included.
    pub all_events: Vec<Event>,
    pub definitions: DefinitionsReport,
    pub rules: Vec<RuleOutcome>,
    pub modes: Vec<ModeChange>,
}

/// Accumulates the analysis from a stream of records.
#[derive(Default)]
pub struct Analyzer {
    decoder: SignalDecoder,
    rules: Option<RuleSet>,
    modes: ModeTracker,
    /// By `msg_id`: where an `event` subscription's fields are, and its instance.
    event_routes: Vec<Option<(EventFields, u8)>>,
    raw_events: Vec<RawEvent>,
    event_samples: u64,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("sources", &self.decoder.sources().len())
            .field("event_samples", &self.event_samples)
            .finish_non_exhaustive()
    }
}

impl Analyzer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether samples of `topic` are read (the `event` topic and those the rules read).
    pub fn reads(topic: &str) -> bool {
        topic == EVENT_TOPIC || crate::ulog::signals::decoder::wanted(topic)
    }

    /// Reads one record. `initial` is the parameters at log start (all read before the first
    /// sample, as the definitions section precedes the data).
    pub fn observe(&mut self, located: &Located<'_>, initial: &BTreeMap<String, Value>) {
        match &located.record {
            Record::Subscription {
                subscription,
                formats,
            } => {
                route_subscription(
                    &mut self.event_routes,
                    subscription,
                    formats,
                    |s| (&*s.topic == EVENT_TOPIC).then_some(s.multi_id),
                    |multi_id, fields| EventFields::find(&fields).map(|f| (f, multi_id)),
                );
            }
            Record::Data(sample) => {
                if let Some(Some((fields, multi_id))) = self
                    .event_routes
                    .get(usize::from(sample.subscription.msg_id))
                {
                    self.event_samples += 1;
                    if self.raw_events.len() < events::MAX_KEPT {
                        if let Some(raw) =
                            fields.read(sample.payload, *multi_id, located.message, located.offset)
                        {
                            self.raw_events.push(raw);
                        }
                    }
                }
            }
            _ => {}
        }
        if self.decoder.observe(located).is_empty() {
            return;
        }
        let rules = self.rules.get_or_insert_with(|| RuleSet::new(initial));
        let (samples, sources) = (self.decoder.last(), self.decoder.sources());
        for s in samples {
            rules.observe(s, sources);
            self.modes.observe(s, &sources[s.source]);
        }
    }

    /// Decodes the events with the log's definitions (`metadata_events` and its hash, when the
    /// log has them) and finishes the rules.
    pub fn finish(
        self,
        metadata_events: Option<&[u8]>,
        metadata_sha256: Option<&str>,
        initial: &BTreeMap<String, Value>,
        log_end: u64,
    ) -> Analysis {
        let (defs, mut definitions) = events::load_definitions(metadata_events, metadata_sha256);
        definitions.samples = self.event_samples;
        definitions.not_kept = self.event_samples - self.raw_events.len() as u64;
        let log = events::decode(&self.raw_events, defs.as_ref(), &mut definitions);
        let ctx = Context {
            parameters: initial,
            events: &log.all,
            log_end,
        };
        let rules = self
            .rules
            .unwrap_or_else(|| RuleSet::new(initial))
            .finish(self.decoder.sources(), &ctx);
        Analysis {
            events: log.shown,
            all_events: log.all,
            definitions,
            rules,
            modes: self.modes.finish(),
        }
    }
}
