//! What a config can use at most (memory and descriptors: links' queues and socket buffers,
//! forwards' queues, TCP peers), for the unit's `MemoryMax` and `LimitNOFILE`: `check-config` prints it as `needs`, and a test holds the shipped unit to the
//! shipped config.

use super::{Config, ForwardOutput, HttpSettings, LinkTransport};
use serde::Serialize;

/// Scanner batches waiting for the pipeline: 64 of at most about 1 MiB (`daemon::BATCH_QUEUE`).
const RESOURCE_BATCH_QUEUE_MB: u64 = 64;
/// Everything else: code, runtime, HTTP connections, webhook queues, the `/events` ring. The
/// daemon's RSS at 20,000 frames/s is 7.7 MB (BENCHMARKS.md, load); this leaves room for 256
/// busy HTTP connections and full webhook queues.
const RESOURCE_BASE_MB: u64 = 128;

/// The most memory and descriptors a config can use (`check-config` prints it as `needs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResourceBounds {
    /// For `MemoryMax`: every buffer full at once.
    pub memory_mb: u64,
    /// For `LimitNOFILE`: every HTTP connection open, plus the reserve for links and files.
    pub descriptors: u64,
}

impl Config {
    /// What this config may need at most, for the unit's `MemoryMax` and `LimitNOFILE`
    /// (`check-config` prints it; a test holds the shipped unit against the shipped config).
    pub fn resource_bounds(&self) -> ResourceBounds {
        const MIB: u64 = 1024 * 1024;
        // Receive log, events and (when on) the .tlog and the traffic log each buffer up to
        // buffer_mb for a slow disk.
        let sbs = self
            .links
            .iter()
            .any(|l| matches!(l.kind, LinkTransport::Sbs { .. }));
        let streams = 2 + u64::from(self.tlog) + u64::from(sbs);
        // Each link: its scanner queue, and the kernel's socket buffer (charged to the cgroup).
        let links: u64 = self
            .links
            .iter()
            .map(|l| {
                l.queue_bytes
                    + match l.kind {
                        LinkTransport::Udp { rcvbuf_bytes, .. } => rcvbuf_bytes,
                        LinkTransport::Serial { .. }
                        | LinkTransport::TcpClient { .. }
                        | LinkTransport::Sbs { .. }
                        | LinkTransport::TcpListen { .. } => 0,
                    }
            })
            .sum();
        // Each forward: its queue, and one more per TCP peer it may have.
        let forwards: u64 = self
            .forwards
            .iter()
            .map(|f| match f.output {
                ForwardOutput::Udp { .. } => f.queue_bytes,
                ForwardOutput::TcpListen { max_peers, .. } => {
                    f.queue_bytes * (1 + max_peers as u64)
                }
            })
            .sum();
        // A descriptor per TCP peer the links and forwards may hold at once.
        let peers: u64 = self
            .links
            .iter()
            .map(|l| match l.kind {
                LinkTransport::TcpListen { max_peers, .. } => max_peers as u64,
                _ => 0,
            })
            .chain(self.forwards.iter().map(|f| match f.output {
                ForwardOutput::TcpListen { max_peers, .. } => max_peers as u64,
                ForwardOutput::Udp { .. } => 0,
            }))
            .sum();
        let memory_bytes = streams * self.buffer_bytes
            + links
            + forwards
            + RESOURCE_BATCH_QUEUE_MB * MIB
            + RESOURCE_BASE_MB * MIB;
        ResourceBounds {
            memory_mb: memory_bytes.div_ceil(MIB),
            descriptors: self.http.max_connections as u64 + HttpSettings::RESERVED_FDS + peers,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::parse;

    /// The shipped unit's MemoryMax and LimitNOFILE cover what the shipped config can use, with
    /// the .tlog on and the most links the unit's memory comment allows for.
    #[test]
    fn the_shipped_unit_covers_the_shipped_configs_bounds() {
        let unit = include_str!("../../systemd/foxborne-receiver.service");
        let setting = |key: &str| -> u64 {
            let line = unit
                .lines()
                .find(|l| l.starts_with(&format!("{key}=")))
                .unwrap_or_else(|| panic!("the unit sets no {key}"));
            let value = &line[key.len() + 1..];
            match value.strip_suffix('M') {
                Some(mb) => mb.parse().unwrap(),
                None => value.parse().unwrap(),
            }
        };
        let shipped = include_str!("../../config/receiver.toml");
        let mut c = parse(shipped).unwrap();
        c.tlog = true;
        let needs = c.resource_bounds();
        assert_eq!(
            needs.memory_mb, 984,
            "the unit's comment states this figure"
        );
        assert_eq!(
            needs.descriptors, 384,
            "the unit's comment states this figure"
        );
        assert!(setting("MemoryMax") >= needs.memory_mb + 4 * 24);
        assert!(setting("LimitNOFILE") >= needs.descriptors);
        let twice = parse(&shipped.replace("buffer_mb = 256", "buffer_mb = 512")).unwrap();
        assert_eq!(twice.resource_bounds().memory_mb, 2 * 512 + 24 + 64 + 128);
    }

    /// TCP peers take descriptors, and forwards memory (a queue, and one per TCP peer).
    #[test]
    fn tcp_peers_and_forwards_are_counted() {
        let base = "[[link]]\nname = \"a\"\ntcp_listen = \"127.0.0.1:1\"\nmax_peers = 4\n";
        let c = parse(&format!(
            "{base}[[forward]]\nudp = \"h:1\"\nqueue_kb = 1024\n[[forward]]\ntcp_listen = \"127.0.0.1:2\"\nmax_peers = 2\nqueue_kb = 1024\n"
        ))
        .unwrap();
        let plain = parse(base).unwrap();
        assert_eq!(
            c.resource_bounds().memory_mb - plain.resource_bounds().memory_mb,
            1 + 3
        );
        assert_eq!(
            c.resource_bounds().descriptors - plain.resource_bounds().descriptors,
            2
        );
        assert_eq!(plain.resource_bounds().descriptors, 256 + 128 + 4);
    }
}
