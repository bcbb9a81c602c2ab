//! Which configured link something came in on: an index into the config's `[[link]]` list,
//! typed so it cannot be mixed up with a system id, a count or a message id; when a link's
//! input arrived ([`Stamp`]); and what a link's state does ([`LinkChange`]).

/// The most links one daemon takes (checked at config load).
pub const MAX_LINKS: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct LinkId(u16);

impl LinkId {
    /// The first configured link.
    pub const FIRST: LinkId = LinkId(0);

    /// The link at `index` in the config; `None` past [`MAX_LINKS`].
    pub fn new(index: usize) -> Option<LinkId> {
        (index < MAX_LINKS).then_some(LinkId(index as u16))
    }

    /// Every link of a config with `count` links, in config order.
    pub fn all(count: usize) -> impl Iterator<Item = LinkId> {
        (0..count.min(MAX_LINKS)).map(|i| LinkId(i as u16))
    }

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// When input arrived: the receiver's UTC and the kernel's `CLOCK_MONOTONIC`, read back to
/// back at the read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub utc_ns: i64,
    pub mono_ns: u64,
}

/// A link's state change, in the order it happened among its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkChange {
    /// The device is open and readable (a UDP link: its socket is bound).
    Up { at: Stamp, detail: String },
    /// The device went away (or could not be opened); the link keeps retrying.
    Down { at: Stamp, reason: String },
    /// A datagram from a source outside the link's allow-list.
    Denied { peer: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_config_order_and_stop_at_the_limit() {
        let ids: Vec<usize> = LinkId::all(3).map(LinkId::index).collect();
        assert_eq!(ids, vec![0, 1, 2]);
        assert_eq!(
            LinkId::new(MAX_LINKS - 1).map(LinkId::index),
            Some(MAX_LINKS - 1)
        );
        assert_eq!(LinkId::new(MAX_LINKS), None);
    }
}
