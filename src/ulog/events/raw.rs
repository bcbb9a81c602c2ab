//! One `event` sample as it is logged: `timestamp`, `id`, `event_sequence`, `arguments[25]`
//! and `log_levels` (internal level in the high nibble, external in the low), found by name in
//! the sample's format so any layout PX4 wrote reads the same.

use crate::ulog::format::{BasicType, FlatField};

/// An `event` sample, with where it is in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    pub timestamp: u64,
    pub id: u32,
    pub sequence: Option<u16>,
    pub log_levels: u8,
    pub arguments: Vec<u8>,
    pub multi_id: u8,
    pub message: u64,
    pub offset: u64,
}

/// Where the fields sit in one subscription's samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFields {
    timestamp: usize,
    id: usize,
    sequence: Option<usize>,
    log_levels: usize,
    /// Offset and length of the consecutive `arguments[i]` bytes.
    arguments: (usize, usize),
}

impl EventFields {
    /// The fields of an `event` format, or `None` when it lacks one PX4 always writes.
    pub fn find(fields: &[FlatField]) -> Option<EventFields> {
        let at = |name: &str, ty: BasicType| {
            fields
                .iter()
                .find(|f| f.name == name && f.ty == ty)
                .map(|f| f.offset)
        };
        let args: Vec<&FlatField> = fields
            .iter()
            .filter(|f| f.name.starts_with("arguments[") && f.ty == BasicType::UInt8)
            .collect();
        let first = args.first()?.offset;
        let consecutive = args.iter().enumerate().all(|(i, f)| f.offset == first + i);
        if !consecutive {
            return None;
        }
        Some(EventFields {
            timestamp: at("timestamp", BasicType::UInt64)?,
            id: at("id", BasicType::UInt32)?,
            sequence: at("event_sequence", BasicType::UInt16),
            log_levels: at("log_levels", BasicType::UInt8)?,
            arguments: (first, args.len()),
        })
    }

    /// Reads one sample's payload (`None` when it is too short for the fields).
    pub fn read(
        &self,
        payload: &[u8],
        multi_id: u8,
        message: u64,
        offset: u64,
    ) -> Option<RawEvent> {
        let bytes = |at: usize, n: usize| payload.get(at..at + n);
        let u64_at = |at| bytes(at, 8).map(|b| u64::from_le_bytes(b.try_into().expect("8")));
        let u32_at = |at| bytes(at, 4).map(|b| u32::from_le_bytes(b.try_into().expect("4")));
        let u16_at = |at| bytes(at, 2).map(|b| u16::from_le_bytes(b.try_into().expect("2")));
        Some(RawEvent {
            timestamp: u64_at(self.timestamp)?,
            id: u32_at(self.id)?,
            sequence: self.sequence.and_then(u16_at),
            log_levels: *payload.get(self.log_levels)?,
            arguments: bytes(self.arguments.0, self.arguments.1)?.to_vec(),
            multi_id,
            message,
            offset,
        })
    }
}
