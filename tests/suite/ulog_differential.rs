//! Differential test against the px4-ulog crate (0.6.1): on every corpus log both readers count
//! the same data messages per topic instance, and px4-ulog also sees the log as complete.

use crate::common;

use foxborne_receiver::ulog::{Record, SliceReader};
use px4_ulog::stream_parser::{read_file_with_simple_callback, Message, SimpleCallbackResult};
use std::collections::BTreeMap;

type Counts = BTreeMap<(String, u8), u64>;

fn ours(bytes: &[u8]) -> Counts {
    let mut counts = Counts::new();
    let mut reader = SliceReader::new(bytes);
    while let Some(item) = reader.next_record() {
        if let Record::Data(s) = item.expect("corpus log reads cleanly").record {
            *counts
                .entry((s.subscription.topic.to_string(), s.subscription.multi_id))
                .or_default() += 1;
        }
    }
    counts
}

fn theirs(path: &std::path::Path) -> (Counts, String) {
    let mut counts = Counts::new();
    let mut callback = |m: &Message| {
        if let Message::Data(d) = m {
            let key = (
                d.flattened_format.message_name().to_string(),
                d.multi_id.value(),
            );
            *counts.entry(key).or_default() += 1;
        }
        SimpleCallbackResult::KeepReading
    };
    let completeness = read_file_with_simple_callback(path.to_str().unwrap(), &mut callback)
        .expect("px4-ulog reads it");
    (counts, format!("{completeness:?}"))
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn data_message_counts_per_topic_match_px4_ulog() {
    let logs = common::corpus_logs();
    for log in &logs {
        let name = log.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(log).unwrap();
        let mine = ours(&bytes);
        let (reference, completeness) = theirs(log);
        assert_eq!(
            completeness, "Complete",
            "{name}: px4-ulog's view of completeness"
        );
        assert_eq!(
            mine, reference,
            "{name}: data messages per (topic, multi_id)"
        );
        assert!(!mine.is_empty(), "{name}: some data");
    }
}
