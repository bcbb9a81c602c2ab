//! `ulog export` keeps memory bounded: its peak RSS stays under 64 MB, and what grows with the log
//! is only the Parquet footer the writer keeps until a file closes. Each export's own peak RSS
//! (`wait4`) is measured.
//!
//! The logs are made for it: 24 topics of 256-byte samples (63 columns) in turn, so that all
//! topic instances together would hold all their rows without the budget across tables
//! (`ulog::export::BUFFER_BUDGET`, 8 MiB); past it rows go to the spill file, so that every row
//! group but a table's last still holds `row_group_bytes(63)` (4 MiB, 16,384 samples), which the
//! test reads from the files' footers. Two sizes, each exported in a child process. A 1 GB log is the
//! benchmark's (`benches/ulog_export_bench.rs`); 192 and 384 MiB keep this test to about 25 s
//! unoptimised (the binary `cargo test` builds).
//!
//! What grows with the log is the Parquet footer: the `parquet` crate's writer keeps, per column
//! chunk (one per column per row group) until the file closes, its `ColumnChunkMetaData` (424
//! bytes) and a column index, offset index and bloom filter slot (232, 48 and 24 bytes), about
//! 0.7 KiB, more while its vectors grow. The larger log may add one row group (2 MiB) and 1 KiB
//! per column chunk it adds, counted from the files' footers; anything else growing fails. And
//! the peak projected to a 1 GiB log of this shape (1 KiB for every column chunk it would add)
//! stays under 64 MiB with the release binary's own pages: before the spill file this shape
//! wrote 0.7 MiB row groups, six times the column chunks, and projected to about 88 MiB.

use crate::common;

use foxborne_receiver::ulog::export::row_group_bytes;
use foxborne_receiver::ulog::writer::UlogWriter;
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;

const TOPICS: u16 = 24;
/// Floats per sample: with the timestamp, 256 bytes.
const FLOATS: usize = 62;
const SAMPLE_BYTES: usize = 8 + 4 * FLOATS;

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

/// `ulog export --format parquet` of `log` into `out`, as a child of this process; fails the
/// test (saying `what`) unless it succeeds. Its output, and its peak RSS in bytes.
fn export_parquet(log: &Path, out: &Path, what: &str) -> (std::process::Output, u64) {
    let (output, peak) = common::run_with_peak_rss(
        Command::new(common::binary())
            .args(["ulog", "export", "--format", "parquet", "--out"])
            .arg(out)
            .arg(log),
        true,
    );
    common::assert_success(&output, what);
    (output, peak)
}

#[test]
fn export_memory_stays_under_64_mb_and_grows_only_by_the_footers() {
    let dir = common::scratch("export-memory");
    // The binary's own resident pages: the peak of exporting a log of a few samples (this test
    // runs the unoptimised binary, about 13 MiB more of it than the release one).
    let tiny = dir.join("tiny.ulg");
    write_log(&tiny, 64 << 10);
    let (_, base) = export_parquet(&tiny, &dir.join("tiny-out"), "tiny");
    let mut peaks = Vec::new();
    // Both sizes write whole row groups (8 and 16 MiB per table), so that what the larger adds
    // is only column chunks.
    for (name, target) in [("small", 192u64 << 20), ("large", 384 << 20)] {
        let log = dir.join(format!("{name}.ulg"));
        let size = write_log(&log, target);
        let out = dir.join("out");
        let (run, peak) = export_parquet(&log, &out, name);
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
            let groups = meta.row_groups();
            let columns = meta.file_metadata().schema_descr().num_columns();
            let full_rows = (row_group_bytes(columns) / SAMPLE_BYTES) as i64;
            if let Some((_last, full)) = groups.split_last() {
                for g in full {
                    assert!(
                        g.num_rows() >= full_rows,
                        "{name}: {}: a row group of {} rows before the last ({full_rows} expected)",
                        path.display(),
                        g.num_rows()
                    );
                }
            }
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
        peaks.push((size, peak, chunks));
    }
    let [(small, peak_small, chunks_small), (large, peak_large, chunks_large)] = peaks[..] else {
        unreachable!()
    };
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    let added = chunks_large - chunks_small;
    let report = format!(
        "peak RSS {:.1} MiB exporting {:.0} MiB ({chunks_small} column chunks), {:.1} MiB with \
         {:.0} MiB ({chunks_large}): {:.0} bytes per added column chunk",
        mb(peak_small),
        mb(small),
        mb(peak_large),
        mb(large),
        peak_large.saturating_sub(peak_small) as f64 / added as f64
    );
    eprintln!("{report}");
    assert!(peak_large < 64 << 20, "{report}");
    // Projected to a 1 GiB log of this shape, with the release binary's own pages (8.6 MiB
    // measured; 12 allowed) in place of this one's.
    let gib = 1u64 << 30;
    let working = peak_large - base + (gib - large) * chunks_large / large * 1024;
    assert!(
        working + (12 << 20) < 64 << 20,
        "{report}; the binary alone {:.1} MiB; the export's own memory projected to 1 GiB: {:.1} MiB",
        mb(base),
        mb(working)
    );
    // Four times the log: the peak moves by less than one row group and the footers' growth.
    assert!(
        peak_large <= peak_small + (2 << 20) + added * 1024,
        "{report}"
    );
}
