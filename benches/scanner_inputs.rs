//! Benchmark: the frame scanner's throughput by kind of input, 64 KB datagrams each, one core.
//! Valid frames (a mix of HEARTBEAT, SYSTEM_TIME and ATTITUDE, v1 and v2), all-0xFE (every byte
//! a MAVLink 1 start), crafted MAVLink 2 starts of a 255-byte message every 12 bytes, crafted
//! MAVLink 1 starts every 6 bytes (the densest), and random bytes. Prints MB/s and the CRC
//! bytes computed per input byte (the scanner's own work counter).
//!
//! cargo bench --bench scanner_inputs

use foxborne_receiver::wire::build::{self, Header};
use foxborne_receiver::wire::signing::SigningKeys;
use foxborne_receiver::wire::DatagramScanner;
use std::time::Instant;

const DATAGRAM: usize = 65_000;

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut valid = Vec::new();
    let mut i = 0u32;
    while valid.len() < DATAGRAM - 80 {
        let h = Header {
            sysid: (i % 50) as u8 + 1,
            compid: 1,
            seq: i as u8,
        };
        let frame = match i % 4 {
            0 => build::v2(h, 0, &build::heartbeat_payload(2, 3)),
            1 => build::v2(h, 2, &build::system_time_payload(1_790_000_000_000_000, i)),
            2 => build::v1(h, 30, &build::attitude_payload(i, 0.1)),
            _ => build::v2(h, 30, &build::attitude_payload(i, -0.1)),
        };
        valid.extend_from_slice(&frame);
        i += 1;
    }
    let repeat = |pattern: &[u8]| {
        let mut v = Vec::with_capacity(DATAGRAM);
        while v.len() + pattern.len() <= DATAGRAM {
            v.extend_from_slice(pattern);
        }
        v
    };
    let mut x = 0x9E37_79B9u32;
    let random: Vec<u8> = (0..DATAGRAM)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    vec![
        ("valid frames", valid),
        ("all 0xFE", vec![0xFE; DATAGRAM]),
        (
            "crafted v2 starts",
            repeat(&[0xFD, 0xFF, 0, 0, 7, 7, 7, 0x83, 0, 0, 0x55, 0xAA]),
        ),
        ("crafted v1 starts", repeat(&[0xFE, 0xFF, 1, 2, 3, 0x83])),
        ("random bytes", random),
    ]
}

fn main() {
    let keys = SigningKeys::default();
    println!("| input (64 KB datagrams) | MB/s | CRC bytes per input byte |");
    println!("| --- | ---: | ---: |");
    for (name, bytes) in inputs() {
        // Enough rounds for about a second of work, at least 3.
        let mut rounds = 0u64;
        let mut crc_bytes = 0u64;
        let started = Instant::now();
        while rounds < 3 || started.elapsed().as_secs_f64() < 1.0 {
            let mut scanner = DatagramScanner::new(&bytes, &keys);
            let items = scanner.by_ref().count();
            std::hint::black_box(items);
            crc_bytes = scanner.crc_bytes();
            rounds += 1;
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "| {name} | {:.0} | {:.1} |",
            (bytes.len() as u64 * rounds) as f64 / secs / 1e6,
            crc_bytes as f64 / bytes.len() as f64
        );
    }
}
