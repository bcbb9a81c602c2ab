//! Property tests: arbitrary bytes and mutated corpus logs never make the reader or the ingest
//! panic, never allocate without bound (a counting allocator watches the peak), and the `Read`
//! adapter fed one odd-sized chunk at a time yields exactly what the slice reader yields.

use crate::common;

use foxborne_receiver::ulog::ingest::ingest_reader;
use foxborne_receiver::ulog::{ReadError, SliceReader, StreamReader};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Read;

/// Counts this thread's live heap bytes and their peak.
struct CountingAllocator;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LIVE.try_with(|l| {
            let now = l.get() + layout.size();
            l.set(now);
            let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        });
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = LIVE.try_with(|l| l.set(l.get().saturating_sub(layout.size())));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LIVE.try_with(|l| {
            let now = l.get().saturating_sub(layout.size()) + new_size;
            l.set(now);
            let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        });
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Runs `f` and returns the peak of live heap bytes it added on this thread.
fn peak_during(f: impl FnOnce()) -> usize {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    f();
    PEAK.with(Cell::get) - base
}

/// The ceiling: fixed tables (the msg_id index, the read buffer) plus a small multiple of the
/// input (names of flattened fields for topics that have samples).
fn allocation_ceiling(input_len: usize) -> usize {
    16 * 1024 * 1024 + 64 * input_len
}

/// What a reader yields, as comparable text: each record's place and type, each error.
fn trace_slice(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut reader = SliceReader::new(bytes);
    while let Some(item) = reader.next_record() {
        out.push(match item {
            Ok(r) => format!("{} {} {} {}", r.message, r.offset, r.size, r.msg_type),
            Err(e) => format!("error {e}"),
        });
    }
    out
}

/// A `Read` that hands out at most `chunk` bytes per call.
struct Trickle<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn trace_stream(bytes: &[u8], chunk: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut reader = StreamReader::new(Trickle { data: bytes, chunk });
    while let Some(item) = reader.next_record() {
        out.push(match item {
            Ok(r) => format!("{} {} {} {}", r.message, r.offset, r.size, r.msg_type),
            Err(ReadError::Io { .. }) => unreachable!("the trickle never fails"),
            Err(e) => format!("error {e}"),
        });
    }
    out
}

fn check_input(bytes: &[u8]) {
    let peak = peak_during(|| {
        let _ = trace_slice(bytes);
        let report =
            ingest_reader(bytes, "prop.ulg", bytes.len() as u64, None, None).expect("no I/O error");
        let _ = serde_json::to_string(&report).unwrap();
    });
    assert!(
        peak <= allocation_ceiling(bytes.len()),
        "peak {peak} bytes for {} input bytes",
        bytes.len()
    );
}

/// Small corpus inputs to mutate: the tiny logs whole, and the first 64 KiB of the others.
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        common::corpus_logs()
            .iter()
            .map(|p| {
                let mut b = std::fs::read(p).unwrap();
                b.truncate(64 * 1024);
                b
            })
            .collect()
    })
}

/// A ULog header followed by anything: gets the fuzzing past the magic check.
fn with_header(body: &[u8]) -> Vec<u8> {
    let mut b = vec![
        0x55, 0x4c, 0x6f, 0x67, 0x01, 0x12, 0x35, 1, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    b.extend_from_slice(body);
    b
}

use common::mutate::{apply, mutation};

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        check_input(&bytes);
    }

    #[test]
    fn arbitrary_messages_after_a_valid_header_never_panic(body in proptest::collection::vec(any::<u8>(), 0..4096)) {
        check_input(&with_header(&body));
    }

    #[test]
    fn stream_and_slice_readers_agree(body in proptest::collection::vec(any::<u8>(), 0..4096), chunk in 1usize..700) {
        let bytes = with_header(&body);
        prop_assert_eq!(trace_stream(&bytes, chunk), trace_slice(&bytes));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
    fn mutated_corpus_logs_never_panic(seed in any::<prop::sample::Index>(), mutations in proptest::collection::vec(mutation(), 1..8)) {
        let seeds = seeds();
        if seeds.is_empty() {
            return Ok(());
        }
        let mut bytes = seeds[seed.index(seeds.len())].clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        check_input(&bytes);
        prop_assert_eq!(trace_stream(&bytes, 4093), trace_slice(&bytes));
    }
}

#[test]
fn the_allocation_counter_sees_allocations() {
    let peak = peak_during(|| drop(std::hint::black_box(vec![1u8; 1 << 20])));
    assert!(peak >= 1 << 20, "peak {peak}");
    assert!(peak_during(|| {}) < 1024);
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn whole_corpus_logs_read_identically_through_a_trickle() {
    for log in common::corpus_logs() {
        let bytes = std::fs::read(&log).unwrap();
        assert_eq!(
            trace_stream(&bytes, 1021),
            trace_slice(&bytes),
            "{}",
            log.display()
        );
    }
}

#[test]
fn a_huge_nested_format_does_not_allocate_its_flattened_size() {
    use foxborne_receiver::ulog::writer::UlogWriter;
    // Formats that would flatten to millions of fields if expanded eagerly, subscribed many
    // times, with no samples: the reader must not expand them.
    let mut w = UlogWriter::new(Vec::new(), 0).unwrap();
    w.format("leaf:uint8_t a;").unwrap();
    w.format("mid:leaf[60000] l;").unwrap();
    w.format("top:mid[60000] m;").unwrap();
    for id in 0..2000u16 {
        w.subscribe(0, id, "mid").unwrap();
        w.subscribe(0, id, "top").unwrap();
    }
    let bytes = w.into_inner();
    check_input(&bytes);
}
