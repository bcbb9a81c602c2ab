//! Turns the reader's records into the report's content, one record at a time, in memory bounded
//! by the number of topics (not samples): per-topic counters and period summaries, the GPS
//! offsets (bounded, see `gps`), and the log's messages, parameters and dropouts.

use super::analysis::{Analysis, Analyzer};
use super::decoder::Decoder;
use super::format::FormatRegistry;
use super::gps::{self, GpsFields, GpsInstance};
use super::periods::{Gap, PeriodSummary};
use super::profile::{self, Profile, FAILSAFE_PARAMETERS, LOGGED_MESSAGES};
use super::record::{level_name, Located, LoggedString, Record};
use super::report::{
    AppendedData, Dropout, FailsafeParameter, Finding, HeaderReport, LoggedMessage,
    ParameterChange, Report, TopicReport, DROPOUT_FINDING_MS, DROPOUT_TITLE, NOT_PERIODIC_TOPICS,
    STALL_FACTOR,
};
use super::value::{decode_typed, text_lossy, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Fewest gaps a topic needs before its median period is trusted for `topic_stall`.
const MIN_GAPS_FOR_STALL: u64 = 10;
/// A sample this far (microseconds) past every timestamp before it is a suspected outlier; it is
/// one unless the next sample of the log is that far on too (a real jump of the whole log).
pub const OUTLIER_JUMP_US: u64 = 10_000_000;
/// Outlier and unknown-type findings listed at most (all are counted in the last one's title).
const LISTED: usize = 20;

/// Running statistics of one topic instance.
#[derive(Debug)]
struct TopicStats {
    topic: Arc<str>,
    multi_id: u8,
    msg_id: u16,
    format_name: String,
    samples: u64,
    first_timestamp: Option<u64>,
    last_timestamp: Option<u64>,
    last_message: u64,
    last_offset: u64,
    /// The last sample that was not an outlier: where the next gap starts.
    gap_from: Option<(u64, u64, u64)>,
    periods: PeriodSummary,
    written_size: usize,
    full_size: usize,
}

/// A sample whose timestamp is far past the rest of the log, waiting for the next sample to
/// say whether the whole log jumped or only it did.
#[derive(Debug, Clone, Copy)]
struct Suspect {
    topic: usize,
    timestamp: u64,
    message: u64,
    offset: u64,
    /// The log's clock before it.
    clock: u64,
}

/// The last sample seen before something: for citing a dropout.
#[derive(Debug, Clone, Copy)]
struct LastSample {
    topic: usize,
}

/// Where one `msg_id`'s samples are counted: its topic statistics and, for a GPS topic, its
/// anchor accumulator.
#[derive(Debug, Clone, Copy)]
struct Route {
    topic: usize,
    gps: Option<usize>,
    /// Whether the analysis (rules, events) reads this topic's samples.
    analyzed: bool,
}

/// Accumulates everything the report needs from a stream of records.
#[derive(Debug, Default)]
pub struct Collector {
    info: BTreeMap<String, Value>,
    multi_info: BTreeMap<String, Vec<(String, Vec<u8>)>>,
    initial: BTreeMap<String, Value>,
    changes: Vec<ParameterChange>,
    defaults: BTreeMap<String, BTreeMap<String, Value>>,
    logged: Vec<LoggedMessage>,
    tagged: Vec<LoggedMessage>,
    dropouts: Vec<(Dropout, Option<LastSample>)>,
    topics: Vec<TopicStats>,
    topic_index: HashMap<(Arc<str>, u8), usize>,
    /// `msg_id` to where its samples go: a plain index, as this is the per-sample path.
    by_msg_id: Vec<Option<Route>>,
    gps: Vec<GpsInstance>,
    /// The largest data timestamp so far, starting at the header's (what PX4 tools stamp
    /// dropouts and parameter changes with).
    clock: u64,
    last_sample: Option<LastSample>,
    messages: u64,
    data_samples: u64,
    /// The largest timestamp of samples that are not outliers: where the log really ends.
    robust_clock: u64,
    suspect: Option<Suspect>,
    outliers: Vec<Finding>,
    outlier_count: u64,
    unknown: Vec<Finding>,
    unknown_count: u64,
    /// Events, rules and the state band.
    analysis: Analyzer,
}

impl Collector {
    /// An empty collector; feed it every record from the file header on.
    pub fn new() -> Self {
        Collector::default()
    }

    /// Data samples seen (a log without any is not complete).
    pub fn data_samples(&self) -> u64 {
        self.data_samples
    }

    /// Decides whether the sample at `ts` is an outlier (far past the log's clock) and settles
    /// a pending suspect with it. Returns whether this sample is a suspect itself.
    fn judge_timestamp(&mut self, topic: usize, ts: u64, located: &Located<'_>) -> bool {
        if let Some(s) = self.suspect.take() {
            if ts >= s.clock.saturating_add(OUTLIER_JUMP_US) {
                // The log goes on from up there: a real jump, not an outlier.
                self.robust_clock = self.robust_clock.max(s.timestamp);
            } else {
                self.record_outlier(s, Some(ts));
            }
        }
        if ts >= self.robust_clock.saturating_add(OUTLIER_JUMP_US) && self.data_samples > 1 {
            self.suspect = Some(Suspect {
                topic,
                timestamp: ts,
                message: located.message,
                offset: located.offset,
                clock: self.robust_clock,
            });
            return true;
        }
        self.robust_clock = self.robust_clock.max(ts);
        false
    }

    fn record_outlier(&mut self, s: Suspect, next: Option<u64>) {
        self.outlier_count += 1;
        if self.outliers.len() >= LISTED {
            return;
        }
        let t = &self.topics[s.topic];
        let next = match next {
            Some(n) => format!("the next sample of the log is at {:.3} s", n as f64 / 1e6),
            None => "it is the last sample of the log".to_string(),
        };
        self.outliers.push(Finding {
            kind: "timestamp_outlier".into(),
            title: format!(
                "{} (multi_id {}) has a sample at {:.3} s, {:.3} s past the rest of the log (at {:.3} s; {next}): its timestamp is not believed",
                t.topic,
                t.multi_id,
                s.timestamp as f64 / 1e6,
                (s.timestamp - s.clock) as f64 / 1e6,
                s.clock as f64 / 1e6,
            ),
            topic: Some(t.topic.to_string()),
            multi_id: Some(t.multi_id),
            timestamp: s.timestamp,
            message: s.message,
            offset: s.offset,
            duration_ms: (s.timestamp - s.clock) as f64 / 1000.0,
            median_period_ms: None,
            resumed_timestamp: None,
            evidence: None,
        });
    }

    /// A message of a type the format does not define: skipped, but cited.
    fn unknown_type(&mut self, located: &Located<'_>, msg_type: u8) {
        self.unknown_count += 1;
        if self.unknown.len() >= LISTED {
            return;
        }
        let shown = if msg_type.is_ascii_graphic() {
            format!("'{}' (0x{msg_type:02X})", msg_type as char)
        } else {
            format!("0x{msg_type:02X}")
        };
        // A data sample whose type byte was damaged still carries its msg_id and size.
        let payload = located.bytes.get(3..).unwrap_or(&[]);
        let looks_like = payload
            .get(..2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .and_then(|id| self.by_msg_id.get(usize::from(id)).copied().flatten())
            .map(|route| &self.topics[route.topic])
            .filter(|t| {
                let data = payload.len() - 2;
                data >= t.written_size && data <= t.full_size
            });
        let (topic, multi_id, guess) = match looks_like {
            Some(t) => (
                Some(t.topic.to_string()),
                Some(t.multi_id),
                format!(
                    "; its msg_id and size fit a sample of {} (multi_id {}), so a sample is probably lost to a damaged type byte",
                    t.topic, t.multi_id
                ),
            ),
            None => (None, None, String::new()),
        };
        self.unknown.push(Finding {
            kind: "unknown_message_type".into(),
            title: format!(
                "Message of unknown type {shown}, {} bytes, skipped: its content is not read{guess}",
                located.size
            ),
            topic,
            multi_id,
            timestamp: self.clock,
            message: located.message,
            offset: located.offset,
            duration_ms: 0.0,
            median_period_ms: None,
            resumed_timestamp: None,
            evidence: None,
        });
    }

    /// Takes one record.
    pub fn observe(&mut self, located: &Located<'_>) {
        self.messages = located.message;
        // Samples go to the analysis only for the topics it reads (looked up with the route
        // below): the high-rate topics cost it nothing.
        if matches!(
            located.record,
            Record::Subscription { .. } | Record::Unsubscription { .. }
        ) {
            self.analysis.observe(located, &self.initial);
        }
        match &located.record {
            Record::Data(sample) => {
                let Some(Some(route)) = self
                    .by_msg_id
                    .get(usize::from(sample.subscription.msg_id))
                    .copied()
                else {
                    return;
                };
                if route.analyzed {
                    self.analysis.observe(located, &self.initial);
                }
                let index = route.topic;
                self.data_samples += 1;
                let suspect = match sample.timestamp {
                    Some(ts) => self.judge_timestamp(index, ts, located),
                    None => false,
                };
                let stats = &mut self.topics[index];
                stats.samples += 1;
                if let Some(ts) = sample.timestamp {
                    if stats.first_timestamp.is_none() {
                        stats.first_timestamp = Some(ts);
                    }
                    if !suspect {
                        if let Some((prev, from_message, from_offset)) = stats.gap_from {
                            if ts > prev {
                                stats.periods.add(Gap {
                                    micros: ts - prev,
                                    from_timestamp: prev,
                                    from_message,
                                    from_offset,
                                    to_timestamp: ts,
                                });
                            }
                        }
                        stats.gap_from = Some((ts, located.message, located.offset));
                    }
                    stats.last_timestamp = Some(ts);
                    if ts > self.clock {
                        self.clock = ts;
                    }
                }
                stats.last_message = located.message;
                stats.last_offset = located.offset;
                self.last_sample = Some(LastSample { topic: index });
                if let Some(g) = route.gps {
                    self.gps[g].add(sample.payload);
                }
            }
            Record::Subscription {
                subscription,
                formats,
            } => {
                let key = (subscription.topic.clone(), subscription.multi_id);
                let index = match self.topic_index.get(&key) {
                    Some(i) => *i,
                    None => {
                        self.topics.push(TopicStats {
                            topic: subscription.topic.clone(),
                            multi_id: subscription.multi_id,
                            msg_id: subscription.msg_id,
                            format_name: subscription.layout.format_name.clone(),
                            samples: 0,
                            first_timestamp: None,
                            last_timestamp: None,
                            last_message: 0,
                            last_offset: 0,
                            gap_from: None,
                            periods: PeriodSummary::default(),
                            written_size: subscription.layout.written_size,
                            full_size: subscription.layout.full_size,
                        });
                        self.topic_index.insert(key, self.topics.len() - 1);
                        self.topics.len() - 1
                    }
                };
                let id = usize::from(subscription.msg_id);
                if self.by_msg_id.len() <= id {
                    self.by_msg_id.resize(id + 1, None);
                }
                let mut gps = None;
                if gps::GPS_TOPICS.contains(&&*subscription.topic) {
                    if let Some(fields) = GpsFields::find(formats, &subscription.layout.format_name)
                    {
                        self.gps.push(GpsInstance::new(
                            &subscription.topic,
                            subscription.multi_id,
                            fields,
                        ));
                        gps = Some(self.gps.len() - 1);
                    }
                }
                self.by_msg_id[id] = Some(Route {
                    topic: index,
                    gps,
                    analyzed: Analyzer::reads(&subscription.topic),
                });
            }
            Record::Unsubscription { msg_id } => {
                if let Some(slot) = self.by_msg_id.get_mut(usize::from(*msg_id)) {
                    *slot = None;
                }
            }
            Record::Info(kv) => {
                self.info.insert(kv.key.to_string(), kv.decode());
            }
            Record::MultiInfo { is_continued, kv } => {
                let values = self.multi_info.entry(kv.key.to_string()).or_default();
                match values.last_mut() {
                    Some(last) if *is_continued => last.1.extend_from_slice(kv.value),
                    _ => values.push((kv.type_name.to_string(), kv.value.to_vec())),
                }
            }
            Record::Parameter { initial: true, kv } => {
                self.initial.insert(kv.key.to_string(), kv.decode());
            }
            Record::Parameter { initial: false, kv } => self.changes.push(ParameterChange {
                timestamp: self.clock,
                name: kv.key.to_string(),
                value: kv.decode(),
                message: located.message,
                offset: located.offset,
            }),
            Record::DefaultParameter { default_types, kv } => {
                for bit in 0..8u8 {
                    if default_types & (1 << bit) != 0 {
                        let kind = match bit {
                            0 => "system".to_string(),
                            1 => "current_setup".to_string(),
                            n => format!("bit{n}"),
                        };
                        self.defaults
                            .entry(kind)
                            .or_default()
                            .insert(kv.key.to_string(), kv.decode());
                    }
                }
            }
            Record::Logged(l) => {
                let entry = logged_message(l, located);
                if l.tag.is_some() {
                    self.tagged.push(entry);
                } else {
                    self.logged.push(entry);
                }
            }
            Record::Dropout { duration_ms } => self.dropouts.push((
                Dropout {
                    timestamp: self.clock,
                    duration_ms: *duration_ms,
                    message: located.message,
                    offset: located.offset,
                },
                self.last_sample,
            )),
            Record::FileHeader(h) => {
                self.clock = h.timestamp;
                self.robust_clock = h.timestamp;
            }
            Record::Unknown { msg_type } => self.unknown_type(located, *msg_type),
            Record::FlagBits(_) | Record::Format { .. } | Record::Sync { .. } => {}
        }
    }

    /// Fills the content of a complete report from what was collected and the decoder's final
    /// state (formats for field names, header, flags).
    pub fn finish(mut self, decoder: &Decoder, profile: Option<&Profile>, report: &mut Report) {
        let formats = decoder.formats();
        if let Some(s) = self.suspect.take() {
            self.record_outlier(s, None);
        }
        let analysis = self.analyze();
        if let Some(h) = decoder.header() {
            let flags = decoder.flag_bits();
            report.header = Some(HeaderReport {
                version: h.version,
                start_timestamp: h.timestamp,
                flag_bits: flags.is_some(),
                compat_flags: flags.map_or([0; 8], |f| f.compat),
                incompat_flags: flags.map_or([0; 8], |f| f.incompat),
                appended_offsets: flags.map_or([0; 3], |f| f.appended_offsets),
                formats: formats.len(),
            });
        }
        report.messages = self.messages;
        report.appended_data = decoder
            .appended_sections()
            .iter()
            .map(|a| AppendedData {
                offset: a.offset,
                skipped_bytes: a.skipped_bytes,
            })
            .collect();
        report.info = std::mem::take(&mut self.info);
        report.multi_info = std::mem::take(&mut self.multi_info)
            .into_iter()
            .map(|(k, vs)| {
                (
                    k,
                    vs.into_iter()
                        .map(|(ty, bytes)| multi_value(&ty, &bytes))
                        .collect(),
                )
            })
            .collect();

        let log_end = self.robust_clock;
        let mut order: Vec<usize> = (0..self.topics.len()).collect();
        order.sort_by(|a, b| {
            let (a, b) = (&self.topics[*a], &self.topics[*b]);
            (&*a.topic, a.multi_id).cmp(&(&*b.topic, b.multi_id))
        });
        for &i in &order {
            let t = &self.topics[i];
            if t.samples == 0 {
                report
                    .topics_without_samples
                    .push(format!("{} (multi_id {})", t.topic, t.multi_id));
                continue;
            }
            report.topics.push(topic_report(t, formats));
            report.findings.extend(stall_findings(t, log_end));
        }

        for (dropout, last) in &self.dropouts {
            if dropout.duration_ms >= DROPOUT_FINDING_MS {
                let topic = last.map(|l| &self.topics[l.topic]);
                report.findings.push(Finding {
                    kind: "log_dropout".into(),
                    title: DROPOUT_TITLE.into(),
                    topic: topic.map(|t| t.topic.to_string()),
                    multi_id: topic.map(|t| t.multi_id),
                    timestamp: dropout.timestamp,
                    message: dropout.message,
                    offset: dropout.offset,
                    duration_ms: f64::from(dropout.duration_ms),
                    median_period_ms: None,
                    resumed_timestamp: None,
                    evidence: None,
                });
            }
        }
        let count_note = |list: &mut Vec<Finding>, count: u64| {
            if count > list.len() as u64 {
                if let Some(last) = list.last_mut() {
                    last.title.push_str(&format!(
                        " ({count} in all; the first {} are listed)",
                        LISTED
                    ));
                }
            }
        };
        let Analysis {
            events,
            definitions,
            rules,
            modes,
            ..
        } = analysis;
        report.rules = rules
            .into_iter()
            .map(|mut outcome| {
                report
                    .findings
                    .extend(outcome.findings.drain(..).map(Finding::from_rule));
                outcome
            })
            .collect();
        report.events = events;
        report.event_definitions = Some(definitions);
        report.flight_modes = modes;
        count_note(&mut self.outliers, self.outlier_count);
        count_note(&mut self.unknown, self.unknown_count);
        report.findings.append(&mut self.outliers);
        report.findings.append(&mut self.unknown);
        report.findings.sort_by_key(|f| f.message);
        report.dropouts = self.dropouts.iter().map(|(d, _)| d.clone()).collect();
        report.logged_messages = std::mem::take(&mut self.logged);
        report.tagged_logged_messages = std::mem::take(&mut self.tagged);

        let has_samples = |name: &str| {
            if name == LOGGED_MESSAGES {
                return !report.logged_messages.is_empty()
                    || !report.tagged_logged_messages.is_empty();
            }
            report.topics.iter().any(|t| t.topic == name)
        };
        report.expected_topics = profile.map(|p| profile::check(p, has_samples));

        report.parameters.failsafe = FAILSAFE_PARAMETERS
            .iter()
            .map(|(name, description)| {
                let value = self.initial.get(*name).cloned();
                FailsafeParameter {
                    name: name.to_string(),
                    description: description.to_string(),
                    status: if value.is_some() {
                        "Logged"
                    } else {
                        "Not logged"
                    }
                    .into(),
                    value,
                    changes: self
                        .changes
                        .iter()
                        .filter(|c| c.name == *name)
                        .map(|c| c.value.clone())
                        .collect(),
                }
            })
            .collect();
        report.parameters.initial = std::mem::take(&mut self.initial);
        report.parameters.changes = std::mem::take(&mut self.changes);
        report.parameters.defaults = std::mem::take(&mut self.defaults);
        report.gps_anchor = Some(gps::anchor(&mut self.gps));
    }
}

impl Collector {
    /// Finishes the events and rules with the log's parameters and embedded definitions.
    fn analyze(&mut self) -> Analysis {
        let metadata = self
            .multi_info
            .get(crate::ulog::events::DEFINITIONS_KEY)
            .and_then(|values| values.first())
            .map(|(_, bytes)| bytes.as_slice());
        let sha = match self.info.get(crate::ulog::events::DEFINITIONS_SHA256_KEY) {
            Some(Value::Text(t)) => Some(t.as_str()),
            _ => None,
        };
        std::mem::take(&mut self.analysis).finish(metadata, sha, &self.initial, self.robust_clock)
    }
}

fn logged_message(l: &LoggedString<'_>, located: &Located<'_>) -> LoggedMessage {
    LoggedMessage {
        level: l.level,
        level_name: level_name(l.level).to_string(),
        tag: l.tag,
        timestamp: l.timestamp,
        text: l.text(),
        message: located.message,
        offset: located.offset,
    }
}

fn multi_value(type_name: &str, bytes: &[u8]) -> Value {
    if type_name.starts_with("char[") {
        Value::Text(text_lossy(bytes))
    } else {
        decode_typed(type_name, bytes)
    }
}

fn topic_report(t: &TopicStats, formats: &FormatRegistry) -> TopicReport {
    let span = match (t.first_timestamp, t.last_timestamp) {
        (Some(a), Some(b)) if b > a => Some((b - a) as f64 / 1e6),
        _ => None,
    };
    TopicReport {
        topic: t.topic.to_string(),
        multi_id: t.multi_id,
        msg_id: t.msg_id,
        samples: t.samples,
        first_timestamp: t.first_timestamp,
        last_timestamp: t.last_timestamp,
        rate_hz: span.map(|s| (t.samples - 1) as f64 / s),
        median_period_ms: t.periods.median().map(|m| m as f64 / 1000.0),
        fields: formats
            .flatten(&t.format_name)
            .map(|f| f.into_iter().map(|f| f.name).collect())
            .unwrap_or_default(),
    }
}

/// `topic_stall` findings: gaps of at least 5 median periods, and a topic that stops that long
/// before the log ends. Each cites the last sample before the silence. Topics that are not
/// published at a rate ([`NOT_PERIODIC_TOPICS`]) have none.
fn stall_findings(t: &TopicStats, log_end: u64) -> Vec<Finding> {
    if NOT_PERIODIC_TOPICS.contains(&&*t.topic) {
        return Vec::new();
    }
    let Some(median) = t
        .periods
        .median()
        .filter(|m| *m > 0 && t.periods.count() >= MIN_GAPS_FOR_STALL)
    else {
        return Vec::new();
    };
    let threshold = median.saturating_mul(STALL_FACTOR);
    let finding =
        |timestamp: u64, message: u64, offset: u64, micros: u64, resumed: Option<u64>| Finding {
            kind: "topic_stall".into(),
            title: format!(
                "{} (multi_id {}) stalled: no sample for {:.3} s, {:.1} times its median period",
                t.topic,
                t.multi_id,
                micros as f64 / 1e6,
                micros as f64 / median as f64
            ),
            topic: Some(t.topic.to_string()),
            multi_id: Some(t.multi_id),
            timestamp,
            message,
            offset,
            duration_ms: micros as f64 / 1000.0,
            median_period_ms: Some(median as f64 / 1000.0),
            resumed_timestamp: resumed,
            evidence: None,
        };
    let mut out: Vec<Finding> = t
        .periods
        .largest()
        .iter()
        .filter(|g| g.micros >= threshold)
        .map(|g| {
            finding(
                g.from_timestamp,
                g.from_message,
                g.from_offset,
                g.micros,
                Some(g.to_timestamp),
            )
        })
        .collect();
    if let Some(last) = t.last_timestamp {
        if log_end > last && log_end - last >= threshold {
            out.push(finding(
                last,
                t.last_message,
                t.last_offset,
                log_end - last,
                None,
            ));
        }
    }
    out
}
