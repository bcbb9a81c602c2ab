//! `ulog export` keeps memory bounded: its peak RSS stays under 64 MB and does not grow with the
//! log. Alone in its own test binary, so the children's peak RSS (getrusage) is only theirs.
//!
//! The logs are made for it: 24 topics of 256-byte samples (63 columns) in turn, so that all
//! topic instances together would hold 48 MiB of rows without the 16 MiB budget across tables
//! (`ulog::export::BUFFER_BUDGET`), which then writes row groups of about 0.7 MiB. Two sizes,
//! exported in child processes, smaller first: getrusage gives the largest peak of the children
//! waited for, so the second reading is the larger of the two peaks, and it may exceed the first
//! by less than one row group. A 1 GB log is the benchmark's (`benches/ulog_export_bench.rs`);
//! 48 and 192 MiB keep this test to about 12 s unoptimised (the binary `cargo test` builds).
//!
//! What does grow with the log is the Parquet footer: 32 bytes per column chunk (one per column
//! per row group) are kept until the file is closed. Here that is 0.4 MiB more for the larger
//! log; with 255-column samples written in 0.7 MiB row groups it was 2.1 MiB more (36.0 then
//! 38.1 MiB), about 1.5 % of the log's size.

mod common;

use foxborne_receiver::ulog::writer::UlogWriter;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// Peak resident set of the largest child this process has waited for, in bytes.
fn children_max_rss() -> u64 {
    let usage =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    usage.max_rss() as u64 * 1024
}

const TOPICS: u16 = 24;
/// Floats per sample: with the timestamp, 256 bytes.
const FLOATS: usize = 62;

/// Writes a log of at least `target` bytes; returns its size.
fn write_log(path: &Path, target: u64) -> u64 {
    let file = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut w = UlogWriter::new(file, 1_000_000).unwrap();
    w.flag_bits([0; 8], [0; 8], [0; 3]).unwrap();
    for t in 0..TOPICS {
        w.format(&format!("wide_{t}:uint64_t timestamp;float[{FLOATS}] v;"))
            .unwrap();
    }
    for t in 0..TOPICS {
        w.subscribe(0, t, &format!("wide_{t}")).unwrap();
    }
    let mut payload = vec![0u8; 8 + 4 * FLOATS];
    let mut i = 0u64;
    while w.position() < target {
        let t = (i % u64::from(TOPICS)) as u16;
        payload[..8].copy_from_slice(&(1_000_000 + i * 100).to_le_bytes());
        for (k, v) in payload[8..].chunks_exact_mut(4).enumerate() {
            v.copy_from_slice(&((i as f32) + k as f32 * 0.5).to_le_bytes());
        }
        w.data(t, &payload).unwrap();
        i += 1;
    }
    let size = w.position();
    w.into_inner().flush().unwrap();
    size
}

#[test]
fn export_memory_is_bounded_and_does_not_grow_with_the_log() {
    let dir = common::scratch("export-memory");
    let mut peaks = Vec::new();
    for (name, target) in [("small", 48u64 << 20), ("large", 192 << 20)] {
        let log = dir.join(format!("{name}.ulg"));
        let size = write_log(&log, target);
        let out = dir.join("out");
        let run = Command::new(common::binary())
            .args(["ulog", "export", "--format", "parquet", "--out"])
            .arg(&out)
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            stdout.contains(&format!("{TOPICS} topic tables (")),
            "{stdout}"
        );
        let written: u64 = std::fs::read_dir(out.join(name))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        // Every value was written (the tables are about as large as the log).
        assert!(written > size * 9 / 10, "{name}: {written} bytes of tables");
        std::fs::remove_file(&log).unwrap();
        std::fs::remove_dir_all(&out).unwrap();
        peaks.push((size, children_max_rss()));
    }
    let [(small, after_small), (large, after_both)] = peaks[..] else {
        unreachable!()
    };
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    let report = format!(
        "peak RSS {:.1} MiB exporting {:.0} MiB, {:.1} MiB with {:.0} MiB",
        mb(after_small),
        mb(small),
        mb(after_both),
        mb(large)
    );
    eprintln!("{report}");
    assert!(after_both < 64 << 20, "{report}");
    // Four times the log: the peak moves by less than one row group.
    assert!(after_both <= after_small + (2 << 20), "{report}");
}
