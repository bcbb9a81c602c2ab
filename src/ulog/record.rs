//! The records the reader yields: one per ULog message, each with its message number (1-based,
//! counted after the 16-byte file header) and the byte offset where its 3-byte header starts.
//!
//! Records borrow their payload from the bytes they were decoded from; nothing is copied.

use super::format::{FlatField, FormatRegistry, TopicLayout};
use super::value::{decode_typed, text_lossy, Value};
use std::sync::Arc;

/// The 16-byte file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    pub version: u8,
    /// When logging started, in microseconds on the flight controller's boot clock.
    pub timestamp: u64,
}

/// The `B` message: compatibility flags and appended-data offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagBits {
    pub compat: [u8; 8],
    pub incompat: [u8; 8],
    pub appended_offsets: [u64; 3],
}

impl FlagBits {
    /// Incompatible bit 0 of byte 0: data is appended at `appended_offsets`.
    pub const DATA_APPENDED: u8 = 1;
    /// Compatible bit 0 of byte 0: the log carries default parameters (`Q`).
    pub const DEFAULT_PARAMETERS: u8 = 1;

    pub fn has_data_appended(&self) -> bool {
        self.incompat[0] & Self::DATA_APPENDED != 0
    }
}

/// A subscription (`A` message) as the reader keeps it.
#[derive(Debug, Clone)]
pub struct Subscription {
    pub topic: Arc<str>,
    pub multi_id: u8,
    pub msg_id: u16,
    pub layout: Arc<TopicLayout>,
}

/// A key/value message (`I`, `M`, `P`, `Q`): key declared as `type name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyValue<'a> {
    pub type_name: &'a str,
    pub key: &'a str,
    pub value: &'a [u8],
}

impl KeyValue<'_> {
    pub fn decode(&self) -> Value {
        decode_typed(self.type_name, self.value)
    }
}

/// One logged sample.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    pub subscription: &'a Subscription,
    /// The formats the sample's fields are named by (for decoding fields on demand).
    pub formats: &'a FormatRegistry,
    /// The bytes after `msg_id`, as written (trailing padding is absent).
    pub payload: &'a [u8],
    /// The top-level `timestamp` field, when the format has one.
    pub timestamp: Option<u64>,
}

/// A console message (`L`) or a tagged one (`C`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedString<'a> {
    /// The level byte as written: PX4 writes ASCII `'0'` (EMERG) to `'7'` (DEBUG).
    pub level: u8,
    pub tag: Option<u16>,
    pub timestamp: u64,
    pub text: &'a [u8],
}

impl LoggedString<'_> {
    pub fn text(&self) -> String {
        text_lossy(self.text)
    }
}

/// Syslog-style name of a ULog log level byte (ASCII digit, or the bare number older logs wrote).
pub fn level_name(level: u8) -> &'static str {
    let n = if level >= b'0' {
        level.wrapping_sub(b'0')
    } else {
        level
    };
    match n {
        0 => "EMERGENCY",
        1 => "ALERT",
        2 => "CRITICAL",
        3 => "ERROR",
        4 => "WARNING",
        5 => "NOTICE",
        6 => "INFO",
        7 => "DEBUG",
        _ => "UNKNOWN",
    }
}

/// What one message says.
#[derive(Debug, Clone)]
pub enum Record<'a> {
    /// The 16-byte file header, handed out first as message 0 at offset 0.
    FileHeader(FileHeader),
    FlagBits(FlagBits),
    Format {
        name: &'a str,
    },
    Info(KeyValue<'a>),
    MultiInfo {
        is_continued: bool,
        kv: KeyValue<'a>,
    },
    /// `P`: `initial` when it is in the definitions section (value at log start).
    Parameter {
        initial: bool,
        kv: KeyValue<'a>,
    },
    /// `Q`: bit 0 of `default_types` = system default, bit 1 = current setup (airframe).
    DefaultParameter {
        default_types: u8,
        kv: KeyValue<'a>,
    },
    /// A subscription, with the formats it was resolved against (to find fields by name).
    Subscription {
        subscription: &'a Subscription,
        formats: &'a FormatRegistry,
    },
    Unsubscription {
        msg_id: u16,
    },
    Data(Sample<'a>),
    Logged(LoggedString<'a>),
    Sync {
        valid: bool,
    },
    Dropout {
        duration_ms: u16,
    },
    /// A message type this reader does not know: skipped, as the format asks.
    Unknown {
        msg_type: u8,
    },
}

/// The slot of `msg_id` in a table indexed by `msg_id` (grown as needed), emptied: a new
/// subscription to that `msg_id` replaces whatever routed its samples before.
pub fn route_slot<T: Default>(routes: &mut Vec<T>, msg_id: u16) -> &mut T {
    let id = usize::from(msg_id);
    if routes.len() <= id {
        routes.resize_with(id + 1, T::default);
    }
    routes[id] = T::default();
    &mut routes[id]
}

/// Routes a new subscription: the slot of its `msg_id` in `routes` is emptied (see
/// [`route_slot`]), then, when `wanted` picks something of the subscription and its format
/// flattens, set to what `route` makes of that pick and the flattened fields.
pub fn route_subscription<T: Default, W>(
    routes: &mut Vec<T>,
    subscription: &Subscription,
    formats: &FormatRegistry,
    wanted: impl FnOnce(&Subscription) -> Option<W>,
    route: impl FnOnce(W, Vec<FlatField>) -> T,
) {
    let slot = route_slot(routes, subscription.msg_id);
    let Some(pick) = wanted(subscription) else {
        return;
    };
    if let Ok(fields) = formats.flatten(&subscription.layout.format_name) {
        *slot = route(pick, fields);
    }
}

/// A record with its place in the file.
#[derive(Debug, Clone)]
pub struct Located<'a> {
    /// 1-based message number after the file header.
    pub message: u64,
    /// Byte offset of the message's 3-byte header.
    pub offset: u64,
    /// Bytes of the whole message, header included.
    pub size: u32,
    pub msg_type: u8,
    /// The message's bytes as they are in the file, header included (evidence for inspection).
    pub bytes: &'a [u8],
    pub record: Record<'a>,
}

/// Human name of a message type character.
pub fn message_type_name(msg_type: u8) -> &'static str {
    match msg_type {
        b'B' => "flag bits",
        b'F' => "format",
        b'I' => "information",
        b'M' => "multi information",
        b'P' => "parameter",
        b'Q' => "default parameter",
        b'A' => "subscription",
        b'R' => "unsubscription",
        b'D' => "data",
        b'L' => "logged string",
        b'C' => "tagged logged string",
        b'S' => "synchronization",
        b'O' => "dropout",
        _ => "unknown-type",
    }
}
