//! Fuzz target `ulog`: the ULog slice reader over the whole input with every record rendered by
//! the evidence inspector (which decodes every value), then the ingest path (`ingest_reader`,
//! pure over a byte slice) with its report serialised and summarised as `ulog info` prints it.
#![no_main]

use foxborne_receiver::ulog::ingest::ingest_reader;
use foxborne_receiver::ulog::{inspect, summary, SliceReader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = SliceReader::new(data);
    let mut last_offset = None;
    while let Some(item) = reader.next_record() {
        if let Ok(located) = item {
            assert!(
                last_offset.is_none_or(|o| located.offset > o),
                "record offsets must increase"
            );
            assert!(located.offset < data.len() as u64, "record past the end");
            last_offset = Some(located.offset);
            let _ = inspect::render(&located).with_total(1);
        }
    }
    let report = ingest_reader(data, "fuzz.ulg", data.len() as u64, None, None)
        .expect("reading a slice cannot fail");
    serde_json::to_string(&report).expect("the report serialises");
    let _ = summary::render(&report);
});
