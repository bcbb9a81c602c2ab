//! What a config can use at most (memory and descriptors), for the unit's `MemoryMax` and
//! `LimitNOFILE`: `check-config` prints it as `needs`, and a test holds the shipped unit to the
//! shipped config.

use super::{Config, LinkTransport};
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
        // Receive log, events and (when on) the .tlog each buffer up to buffer_mb for a slow disk.
        let streams = if self.tlog { 3 } else { 2 };
        // Each link: its scanner queue, and the kernel's socket buffer (charged to the cgroup).
        let links: u64 = self
            .links
            .iter()
            .map(|l| {
                l.queue_bytes
                    + match l.kind {
                        LinkTransport::Udp { rcvbuf_bytes, .. } => rcvbuf_bytes,
                        LinkTransport::Serial { .. } => 0,
                    }
            })
            .sum();
        let memory_bytes = streams * self.buffer_bytes
            + links
            + RESOURCE_BATCH_QUEUE_MB * MIB
            + RESOURCE_BASE_MB * MIB;
        ResourceBounds {
            memory_mb: memory_bytes.div_ceil(MIB),
            descriptors: self.http.max_connections as u64 + crate::http::server::RESERVED_FDS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;

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
}
