//! Benchmark: the per-frame cost of the pipeline at 200,000 frames/s of redundant fleet traffic.
//! 50 vehicles, each 2,000 frames/s (HEARTBEAT 1 Hz, SYSTEM_TIME 1 Hz, RADIO_STATUS 1 Hz from
//! a radio per link, the rest ATTITUDE), every frame heard on two UDP links with 3 % and 5 %
//! deterministic loss: about 200,000 frames/s arrive. Each second of it goes through the link
//! recorders (the scanner threads' work: scan, CRC, sequence tracking, receipt line) and then
//! through the pipeline core (`PipelineCore::take` and `advance`, the pipeline thread's work:
//! per-message counts, and since issue 28 delivery, rates, conflicts, link gaps and radios).
//! Each part is timed on this thread's CPU clock and given in ns per frame and in share of one
//! core at 200,000 frames/s.
//!
//!     cargo bench --bench pipeline_frames            # 5 s of traffic, 3 rounds
//!     cargo bench --bench pipeline_frames -- 10 5    # 10 s, 5 rounds
//!
//! It uses only the API the pipeline had before issue 28 (the recorder, `LinkBatch`,
//! `PipelineCore`), so the same file builds at an older commit for a side-by-side run.

use foxborne_receiver::link::LinkId;
use foxborne_receiver::monitor::WatchSettings;
use foxborne_receiver::pipeline::{Advance, LinkBatch, PipelineCore, PipelineSettings};
use foxborne_receiver::recorder::{LinkRecorder, Output, RecorderSettings};
use foxborne_receiver::wire::build::{self, lost, Header};
use foxborne_receiver::wire::fields::FieldSelection;
use std::collections::BTreeMap;

const VEHICLES: u8 = 50;
const FRAMES_PER_VEHICLE_S: u32 = 2_000;
const LINKS: usize = 2;
const LOSS_PERCENT: [u64; LINKS] = [3, 5];
const S: i64 = 1_000_000_000;
const T0: i64 = 1_790_000_000 * S;
/// Datagrams per batch handed to the pipeline (the scanner's largest batch).
const BATCH: usize = 1024;

fn thread_cpu_s() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID).unwrap();
    t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9
}

/// One second of traffic: per link, the datagrams (stamp, bytes) in arrival order.
fn second(s: i64, seqs: &mut [u8], radio_seq: &mut [u8; LINKS]) -> [Vec<(i64, Vec<u8>)>; LINKS] {
    let mut links: [Vec<(i64, Vec<u8>)>; LINKS] = Default::default();
    let step = S / i64::from(FRAMES_PER_VEHICLE_S);
    for k in 0..FRAMES_PER_VEHICLE_S {
        for v in 0..VEHICLES {
            let sysid = v + 1;
            let seq = &mut seqs[v as usize];
            let header = Header {
                sysid,
                compid: 1,
                seq: *seq,
            };
            *seq = seq.wrapping_add(1);
            let t = T0 + s * S + i64::from(k) * step + i64::from(v) * 1000;
            let frame = match k {
                0 => build::v2(header, 0, &build::heartbeat_payload(2, 3)),
                1 => build::v2(
                    header,
                    2,
                    &build::system_time_payload((t / 1000) as u64, (s * 1000) as u32),
                ),
                _ => build::v2(header, 30, &build::attitude_payload(k, 0.1)),
            };
            let index = (s as u64) << 32 | u64::from(k) << 8 | u64::from(v);
            for (l, link) in links.iter_mut().enumerate() {
                if !lost(index, l as u64 + 1, LOSS_PERCENT[l]) {
                    link.push((t + 200_000 * l as i64, frame.clone()));
                }
            }
        }
    }
    // Each link's radio reports once a second.
    for (l, link) in links.iter_mut().enumerate() {
        let mut payload = [0u8; 9];
        payload[4] = 180;
        payload[5] = 150;
        payload[6] = 100;
        let header = Header {
            sysid: 51,
            compid: 68,
            seq: radio_seq[l],
        };
        radio_seq[l] = radio_seq[l].wrapping_add(1);
        link.push((T0 + s * S + 500_000_000, build::v2(header, 109, &payload)));
        link.sort_by_key(|(t, _)| *t);
    }
    links
}

struct Round {
    frames: u64,
    recorder_s: f64,
    core_s: f64,
}

fn round(seconds: i64) -> Round {
    let settings = RecorderSettings {
        fields_for: FieldSelection::Only(vec![0, 2, 253, 109]),
        ..RecorderSettings::default()
    };
    let mut recorders: Vec<LinkRecorder> = (0..LINKS)
        .map(|l| {
            LinkRecorder::new(
                LinkId::new(l).unwrap(),
                &format!("radio{}", l + 1),
                settings.clone(),
            )
        })
        .collect();
    let mut core = PipelineCore::new(PipelineSettings {
        watch: WatchSettings::default(),
        links: (0..LINKS).map(|l| format!("radio{}", l + 1)).collect(),
        started_utc_ns: T0,
    });
    let (mut seqs, mut radio_seq) = (vec![0u8; VEHICLES as usize], [0u8; LINKS]);
    let (mut frames, mut recorder_s, mut core_s) = (0u64, 0.0, 0.0);
    let idle = [None; LINKS];
    let dropped = [0u64; LINKS];
    for s in 0..seconds {
        let traffic = second(s, &mut seqs, &mut radio_seq);
        for (l, datagrams) in traffic.iter().enumerate() {
            frames += datagrams.len() as u64;
            for chunk in datagrams.chunks(BATCH) {
                let started = thread_cpu_s();
                let recorder = &mut recorders[l];
                let mut out = Output::default();
                for (t, bytes) in chunk {
                    recorder.datagram(*t, Some(1), Some("\"10.0.0.1:14550\""), bytes, &mut out);
                }
                let batch = LinkBatch {
                    link: recorder.link(),
                    out,
                    data_inputs: chunk.len(),
                    changes: Vec::new(),
                    counters: recorder.counters().clone(),
                    sequences: BTreeMap::new(),
                };
                let scanned = thread_cpu_s();
                let last = chunk.last().map_or(0, |(t, _)| *t);
                let actions = core.take(batch);
                let actions_after = core.advance(Advance {
                    now_ns: last,
                    oldest_in_flight: &idle,
                    dropped: &dropped,
                });
                let done = thread_cpu_s();
                std::hint::black_box((actions, actions_after));
                recorder_s += scanned - started;
                core_s += done - scanned;
            }
        }
    }
    Round {
        frames,
        recorder_s,
        core_s,
    }
}

fn main() {
    let args: Vec<i64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let seconds = args.first().copied().unwrap_or(5);
    let rounds = args.get(1).copied().unwrap_or(3);
    println!(
        "{VEHICLES} vehicles x {FRAMES_PER_VEHICLE_S} frames/s on {LINKS} links ({LOSS_PERCENT:?} % loss), {seconds} s per round"
    );
    println!("| round | frames | recorders ns/frame | pipeline core ns/frame | core share of one core at 200,000 frames/s |");
    println!("| --- | --- | --- | --- | --- |");
    for r in 1..=rounds {
        let Round {
            frames,
            recorder_s,
            core_s,
        } = round(seconds);
        let per = |s: f64| s * 1e9 / frames as f64;
        println!(
            "| {r} | {frames} | {:.0} | {:.0} | {:.1} % |",
            per(recorder_s),
            per(core_s),
            per(core_s) * 200_000.0 / 1e9 * 100.0
        );
    }
}
