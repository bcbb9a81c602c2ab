//! The reader's errors: why a byte stream is not a readable ULog, or where it stops being one.
//!
//! Every variant carries the byte offset it is about, so a caller can always name the file and the
//! offset when it reports the problem.

use std::fmt;

/// Where a file that ends too early was cut: the kind of thing the last bytes belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutInside {
    /// The 16-byte file header (magic, version, timestamp).
    FileHeader,
    /// The 3-byte header (`msg_size`, `msg_type`) of a message.
    MessageHeader,
    /// A message of the definitions section (B, F, I, M, P, Q before the first subscription).
    Definitions,
    /// A `D` message: one logged sample.
    DataMessage,
    /// Any other message of the data section, by its type character.
    Message(u8),
    /// A run of zero bytes that lasts to the end of the file (space the logger never filled).
    ZeroRun,
    /// The main log ended on a message boundary, but the flag bits promise appended data further on.
    BeforeAppendedData,
}

impl CutInside {
    /// A short noun phrase for the reason sentence: "ends inside {this} at 41.2 MB".
    pub fn describe(self) -> String {
        match self {
            CutInside::FileHeader => "the file header".into(),
            CutInside::MessageHeader => "a message header".into(),
            CutInside::Definitions => "the definitions section".into(),
            CutInside::DataMessage => "a data message".into(),
            CutInside::ZeroRun => "a run of zero bytes".into(),
            CutInside::BeforeAppendedData => "the main log, before its appended data".into(),
            CutInside::Message(t) => format!("{} message", article_name(t)),
        }
    }

    /// A stable machine-readable name for reports.
    pub fn code(self) -> &'static str {
        match self {
            CutInside::FileHeader => "file_header",
            CutInside::MessageHeader => "message_header",
            CutInside::Definitions => "definitions",
            CutInside::DataMessage => "data_message",
            CutInside::ZeroRun => "zero_run",
            CutInside::BeforeAppendedData => "before_appended_data",
            CutInside::Message(_) => "message",
        }
    }
}

/// "a logged string", "an information", ... for a message type character.
pub fn article_name(msg_type: u8) -> String {
    let name = crate::ulog::record::message_type_name(msg_type);
    let article = match name.as_bytes().first() {
        Some(b'a' | b'e' | b'i' | b'o' | b'u') => "an",
        _ => "a",
    };
    format!("{article} {name}")
}

/// Everything that can go wrong while reading a ULog byte stream.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The first bytes are not the ULog magic and not a known encrypted header.
    #[error("not a PX4 ULog: the first bytes at offset 0 are {found}, a ULog starts with 55 4C 6F 67 01 12 35")]
    NotUlog { found: HexBytes },

    /// `ULogEnc` (encrypted log) or `ULogKey` (key file) header at offset 0.
    #[error("encrypted ULog ({}) at offset 0", if *.key_file { "ULogKey key file" } else { "ULogEnc header" })]
    Encrypted { key_file: bool },

    /// The flag-bits message sets incompatible bits this reader does not know.
    #[error("unknown incompatible flag bits {flags} in the flag-bits message at offset {offset}")]
    UnsupportedIncompatFlags { offset: u64, flags: HexBytes },

    /// The stream ends inside something: `message_offset` is where that thing starts.
    #[error("the log ends inside {} starting at offset {message_offset} (file ends at {end})", .inside.describe())]
    Truncated {
        inside: CutInside,
        message_offset: u64,
        end: u64,
    },

    /// One message cannot be decoded; its framing was intact, so reading goes on after it.
    #[error("malformed {kind} message {message} at offset {offset}: {detail}")]
    Malformed {
        offset: u64,
        message: u64,
        /// Bytes the malformed thing spans, from `offset` (header included).
        size: u64,
        kind: String,
        detail: String,
    },

    /// Reading the underlying source failed (only the `Read` adapter produces this).
    #[error("reading at offset {offset}: {source}")]
    Io { offset: u64, source: std::io::Error },
}

impl ReadError {
    /// Whether the reader stops after this error (everything but a single malformed message).
    pub fn is_fatal(&self) -> bool {
        !matches!(self, ReadError::Malformed { .. })
    }
}

/// Bytes shown as space-separated upper-case hex in messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HexBytes(pub Vec<u8>);

impl fmt::Display for HexBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b:02X}")?;
        }
        if self.0.is_empty() {
            f.write_str("(nothing)")?;
        }
        Ok(())
    }
}
