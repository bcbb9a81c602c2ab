//! `ulog export` keeps memory bounded: its peak RSS stays under 64 MB, and what grows with the log
//! is only the Parquet footer the writer keeps until a file closes. Alone in its own test binary,
//! so the children's peak RSS (getrusage) is only theirs.
//!
//! The logs are made for it: 24 topics of 256-byte samples (63 columns) in turn, so that all
//! topic instances together would hold 48 MiB of rows without the 16 MiB budget across tables
//! (`ulog::export::BUFFER_BUDGET`), which then writes row groups of about 0.7 MiB. Two sizes,
//! exported in child processes, smaller first: getrusage gives the largest peak of the children
//! waited for, so the second reading is the larger of the two peaks. A 1 GB log is the
//! benchmark's (`benches/ulog_export_bench.rs`); 48 and 192 MiB keep this test to about 12 s
//! unoptimised (the binary `cargo test` builds).
//!
//! What grows with the log is the Parquet footer: the `parquet` crate's writer keeps, per column
//! chunk (one per column per row group) until the file closes, its `ColumnChunkMetaData` (424
//! bytes) and a column index, offset index and bloom filter slot (232, 48 and 24 bytes), about
//! 0.7 KiB, more while its vectors grow. This log shape is the worst case for it (63 columns
//! per table, 0.7 MiB row groups): the larger log may add one row group (2 MiB) and 1 KiB per
//! column chunk it adds, counted from the files' footers; anything else growing fails.

mod common;

use foxborne_receiver::ulog::writer::UlogWriter;
use parquet::file::reader::{FileReader, SerializedFileReader};
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
fn export_memory_stays_under_64_mb_and_grows_only_by_the_footers() {
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
        let mut written = 0u64;
        let mut chunks = 0u64;
        for entry in std::fs::read_dir(out.join(name)).unwrap() {
            let path = entry.unwrap().path();
            written += std::fs::metadata(&path).unwrap().len();
            let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
            let meta = reader.metadata();
            chunks += meta
                .row_groups()
                .iter()
                .map(|g| g.num_columns() as u64)
                .sum::<u64>();
        }
        // Every value was written (the tables are about as large as the log).
        assert!(written > size * 9 / 10, "{name}: {written} bytes of tables");
        std::fs::remove_file(&log).unwrap();
        std::fs::remove_dir_all(&out).unwrap();
        peaks.push((size, children_max_rss(), chunks));
    }
    let [(small, after_small, chunks_small), (large, after_both, chunks_large)] = peaks[..] else {
        unreachable!()
    };
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    let added = chunks_large - chunks_small;
    let report = format!(
        "peak RSS {:.1} MiB exporting {:.0} MiB ({chunks_small} column chunks), {:.1} MiB with \
         {:.0} MiB ({chunks_large}): {:.0} bytes per added column chunk",
        mb(after_small),
        mb(small),
        mb(after_both),
        mb(large),
        after_both.saturating_sub(after_small) as f64 / added as f64
    );
    eprintln!("{report}");
    assert!(after_both < 64 << 20, "{report}");
    // Four times the log: the peak moves by less than one row group and the footers' growth.
    assert!(
        after_both <= after_small + (2 << 20) + added * 1024,
        "{report}"
    );
}
