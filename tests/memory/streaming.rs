//! `tlog convert` and `analyze` stream their input: their peak memory stays flat however large
//! the file: each child's own peak RSS (`wait4`) is measured.

use crate::common;

use foxborne_receiver::wire::build::{self, Header};
use std::io::Write;
use std::process::Command;

#[test]
fn a_large_tlog_is_converted_and_analyzed_in_flat_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.tlog");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut written = 0u64;
    let mut i = 0u64;
    // 96 MiB of records: HEARTBEATs at 1 Hz from 50 vehicles among larger ATTITUDE-sized frames.
    while written < 96 << 20 {
        let stamp = 1_790_000_000_000_000u64 + i * 20_000;
        let sysid = (i % 50) as u8 + 1;
        let header = Header {
            sysid,
            compid: 1,
            seq: (i / 50) as u8,
        };
        let frame = if i % 50 < 1 {
            build::v2(header, 0, &build::heartbeat_payload(2, 3))
        } else {
            build::v2(header, 30, &build::attitude_payload(i as u32, 0.1))
        };
        file.write_all(&stamp.to_be_bytes()).unwrap();
        file.write_all(&frame).unwrap();
        written += 8 + frame.len() as u64;
        i += 1;
    }
    file.flush().unwrap();
    drop(file);
    for args in [&["tlog", "convert"][..], &["analyze"]] {
        let (out, peak) =
            common::run_with_peak_rss(Command::new(common::binary()).args(args).arg(&path), false);
        common::assert_success(&out, &format!("{args:?}"));
        // Reading the whole file would need more than 96 MiB; streaming needs a few MiB of
        // windows.
        assert!(
            peak < 48 << 20,
            "{args:?}: peak RSS {} MiB for a {} MiB file",
            peak >> 20,
            written >> 20
        );
    }
}
