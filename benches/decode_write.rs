//! Benchmark: the decode-and-write path on the corpus tlogs. Every frame of every corpus `.tlog`
//! goes through the recorder (scan, CRC, sequence tracking, receipt line) and the rotating file
//! writer, as the daemon's pipeline does. Prints receipts per second on one core.
//!
//! cargo bench --bench decode_write                  # `fields` for HEARTBEAT, SYSTEM_TIME, STATUSTEXT
//! cargo bench --bench decode_write -- --fields all   # every payload decoded into `fields`
//!
//! Rates are given per second of wall time and per second of this thread's CPU time (the
//! per-core figure, which other work on a shared machine does not dilute).

use foxborne_receiver::link::LinkId;
use foxborne_receiver::recorder::{LinkRecorder, Output, RecorderSettings};
use foxborne_receiver::sink::rotating::Framing;
use foxborne_receiver::sink::RotatingFile;
use foxborne_receiver::tlog::TlogReader;
use foxborne_receiver::wire::fields::FieldSelection;
use foxborne_receiver::wire::signing::SigningKeys;
use foxborne_receiver::wire::ScanItem;
use std::path::PathBuf;
use std::time::Instant;

fn corpus() -> PathBuf {
    std::env::var_os("FOXBORNE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
}

/// This thread's CPU time, in seconds.
fn thread_cpu_s() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
    t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fields_all = args.windows(2).any(|w| w[0] == "--fields" && w[1] == "all");
    let fields_for = if fields_all {
        FieldSelection::All
    } else {
        FieldSelection::Only(vec![0, 2, 253])
    };
    println!(
        "fields: {}",
        if fields_all {
            "all"
        } else {
            "HEARTBEAT, SYSTEM_TIME, STATUSTEXT"
        }
    );
    let dir = corpus().join("tlog");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tlog"))
        .collect();
    paths.sort();
    // Frames as they would arrive: one datagram each, with the tlog's time stamp.
    let keys = SigningKeys::default();
    let mut datagrams: Vec<(i64, Vec<u8>)> = Vec::new();
    for path in &paths {
        let bytes = std::fs::read(path).unwrap();
        for record in TlogReader::new(&bytes, &keys) {
            if let ScanItem::Frame(f) = record.item {
                datagrams.push((record.utc_us as i64 * 1000, f.bytes.to_vec()));
            }
        }
    }
    let stream: Vec<u8> = datagrams
        .iter()
        .flat_map(|(_, d)| d.iter().copied())
        .collect();
    let out_dir = std::env::temp_dir().join(format!("foxborne-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    println!(
        "corpus: {} files, {} frames, {} bytes",
        paths.len(),
        datagrams.len(),
        stream.len()
    );

    for round in 0..3 {
        let (mut recorder, mut file) =
            recorder_and_file(out_dir.join(format!("dgram{round}")), &fields_for);
        let mut out = Output::default();
        let ((receipts, written), secs, cpu) = timed(|| {
            let (mut receipts, mut written) = (0u64, 0usize);
            for chunk in datagrams.chunks(512) {
                for (utc_ns, d) in chunk {
                    recorder.datagram(*utc_ns, Some(1), Some("\"127.0.0.1:14550\""), d, &mut out);
                }
                let (r, w) = write_out(&mut out, &mut file);
                receipts += r;
                written += w;
            }
            file.sync().unwrap();
            (receipts, written)
        });
        println!(
            "datagram path, round {round}: {receipts} receipts in {secs:.3} s = {:.2} M receipts/s, {:.2} M per CPU second ({:.0} MB/s of JSONL)",
            receipts as f64 / secs / 1e6,
            receipts as f64 / cpu / 1e6,
            written as f64 / secs / 1e6
        );

        let (mut recorder, mut file) =
            recorder_and_file(out_dir.join(format!("stream{round}")), &fields_for);
        let (receipts, secs, cpu) = timed(|| {
            let mut receipts = 0u64;
            for (i, piece) in stream.chunks(4096).enumerate() {
                recorder.stream(
                    1_700_000_000_000_000_000 + i as i64 * 1_000_000,
                    Some(1),
                    None,
                    piece,
                    &mut out,
                );
                receipts += write_out(&mut out, &mut file).0;
            }
            file.sync().unwrap();
            receipts
        });
        println!(
            "stream path (4 KiB reads), round {round}: {receipts} receipts in {secs:.3} s = {:.2} M receipts/s, {:.2} M per CPU second",
            receipts as f64 / secs / 1e6,
            receipts as f64 / cpu / 1e6
        );
    }
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// A recorder for one link with `fields_for`, and a receive-log writer in `dir` that never
/// rotates.
fn recorder_and_file(dir: PathBuf, fields_for: &FieldSelection) -> (LinkRecorder, RotatingFile) {
    let file = RotatingFile::new(dir, "receive", "jsonl", 1 << 40, Framing::Lines);
    let recorder = LinkRecorder::new(
        LinkId::FIRST,
        "bench",
        RecorderSettings {
            fields_for: fields_for.clone(),
            ..Default::default()
        },
    );
    (recorder, file)
}

/// Writes the recorder's batches to `file` and clears `out` for the next input, as the
/// pipeline does: the receipts and JSONL bytes written.
fn write_out(out: &mut Output, file: &mut RotatingFile) -> (u64, usize) {
    let (mut receipts, mut written) = (0, 0);
    for b in out.batches.drain(..) {
        receipts += b.receipts;
        written += b.jsonl.len();
        file.write(b.day, b.first_utc_ns, &b.jsonl).unwrap();
    }
    out.observations.clear();
    out.frames_seen.clear();
    (receipts, written)
}

/// `work` timed on the wall clock and on this thread's CPU clock: what it returns, and the
/// seconds of each.
fn timed<T>(work: impl FnOnce() -> T) -> (T, f64, f64) {
    let started = Instant::now();
    let cpu0 = thread_cpu_s();
    let value = work();
    (
        value,
        started.elapsed().as_secs_f64(),
        thread_cpu_s() - cpu0,
    )
}
