//! The raw-row buffer of a topic table: rows of one size in blocks that never move.

/// Raw rows of one size, in blocks that are never moved once filled (a growing `Vec` copies
/// everything each time it doubles): the first block is small, then each twice the last, up to
/// [`Rows::MAX_BLOCK`] bytes.
pub(super) struct Rows {
    pub(super) size: usize,
    pub(super) blocks: Vec<Vec<u8>>,
    pub(super) bytes: usize,
}

impl Rows {
    pub(super) const FIRST_BLOCK: usize = 4 << 10;
    pub(super) const MAX_BLOCK: usize = 128 << 10;

    pub(super) fn new(size: usize) -> Rows {
        Rows {
            size,
            blocks: Vec::new(),
            bytes: 0,
        }
    }

    #[inline]
    pub(super) fn push(&mut self, row: &[u8]) {
        match self.blocks.last_mut() {
            Some(b) if b.capacity() - b.len() >= row.len() => b.extend_from_slice(row),
            _ => self.push_cold(row),
        }
        self.bytes += row.len();
    }

    #[cold]
    pub(super) fn push_cold(&mut self, row: &[u8]) {
        let target = self.blocks.last().map_or(Self::FIRST_BLOCK, |b| {
            (2 * b.capacity()).min(Self::MAX_BLOCK)
        });
        let rows = (target / self.size.max(1)).max(1);
        let mut block = Vec::with_capacity(rows * self.size);
        block.extend_from_slice(row);
        self.blocks.push(block);
    }

    /// The rows, block by block.
    pub(super) fn blocks(&self) -> impl Iterator<Item = std::slice::ChunksExact<'_, u8>> {
        let size = self.size.max(1);
        self.blocks.iter().map(move |b| b.chunks_exact(size))
    }

    pub(super) fn count(&self) -> usize {
        self.bytes.checked_div(self.size).unwrap_or(0)
    }

    pub(super) fn clear(&mut self) {
        self.blocks.clear();
        self.bytes = 0;
    }
}
