//! What kind of file a verb was given, judged from its first bytes (pure).
//!
//! `tlog convert` and `analyze` take receiver JSONL and ground-station `.tlog` files, and
//! `sortie` also the receiver's events files; anything else is refused with a sentence that says
//! what the file looks like, so a `.ulg`, a README or a raw capture never turns into an empty
//! result and exit 0.

use crate::monitor::Event;
use crate::receipt::ReceiptRecord;
use crate::wire::scanner::{STX_V1, STX_V2};

/// How many bytes the judgement reads from the start of a file.
pub const HEAD_LEN: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileKind {
    /// The daemon's receive log: its first line is a receipt.
    ReceiverJsonl,
    /// The daemon's events stream (`events/`): its first line is an event (`utc`, `kind`, ...).
    EventsJsonl,
    /// A ground-station telemetry log: an 8-byte timestamp, then a MAVLink frame.
    Tlog,
    /// A PX4 flight log (`ULog` magic bytes).
    Ulog,
    /// A PX4 encrypted flight log (`ULogEnc`).
    EncryptedUlog,
    /// Bare MAVLink frames with no timestamps (a raw serial capture).
    RawMavlink,
    /// Text that is not receiver JSONL; the first line, for the message.
    Text {
        first_line: String,
    },
    Empty,
    Unknown,
}

impl FileKind {
    /// What the file looks like, for an error message.
    pub fn describe(&self) -> String {
        match self {
            FileKind::ReceiverJsonl => "receiver JSONL".into(),
            FileKind::EventsJsonl => "the receiver's events (JSONL)".into(),
            FileKind::Tlog => "a ground-station .tlog".into(),
            FileKind::Ulog => "a PX4 ULog flight log (use `ulog ingest`)".into(),
            FileKind::EncryptedUlog => "an encrypted PX4 ULog flight log".into(),
            FileKind::RawMavlink => {
                "bare MAVLink frames with no timestamps (a raw capture, not a .tlog)".into()
            }
            FileKind::Text { first_line } => {
                format!("a text file that is not receiver JSONL (first line: {first_line:?})")
            }
            FileKind::Empty => "empty".into(),
            FileKind::Unknown => "binary data that is neither a .tlog nor receiver JSONL".into(),
        }
    }
}

/// Judges a file from its first bytes (up to [`HEAD_LEN`]).
pub fn sniff(head: &[u8]) -> FileKind {
    let head = &head[..head.len().min(HEAD_LEN)];
    if head.is_empty() {
        return FileKind::Empty;
    }
    if head.starts_with(b"ULogEnc") {
        return FileKind::EncryptedUlog;
    }
    if head.starts_with(b"ULog\x01\x12\x35") {
        return FileKind::Ulog;
    }
    if let Some(kind) = text_kind(head) {
        return kind;
    }
    if head.len() > 8 && matches!(head[8], STX_V1 | STX_V2) {
        return FileKind::Tlog;
    }
    if matches!(head[0], STX_V1 | STX_V2) {
        return FileKind::RawMavlink;
    }
    FileKind::Unknown
}

/// Receiver JSONL or other text, when the head is UTF-8 (a multi-byte character may be cut at
/// the end of the head).
fn text_kind(head: &[u8]) -> Option<FileKind> {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).expect("valid prefix")
        }
        Err(_) => return None,
    };
    if text.contains('\0') {
        return None;
    }
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let complete_line = text.len() < head.len() || text[first.len()..].contains('\n');
    if serde_json::from_str::<ReceiptRecord>(first).is_ok() {
        return Some(FileKind::ReceiverJsonl);
    }
    if serde_json::from_str::<Event>(first).is_ok() {
        return Some(FileKind::EventsJsonl);
    }
    // A receipt line longer than the head (huge `fields`) cannot be parsed from it; it still
    // starts with the receipt's first key.
    if !complete_line && first.starts_with("{\"recv_utc\":") {
        return Some(FileKind::ReceiverJsonl);
    }
    let shown: String = first.chars().take(60).collect();
    Some(FileKind::Text { first_line: shown })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECEIPT: &str = r#"{"recv_utc":"2026-09-24T14:32:03.912Z","mono_ns":1,"link":"radio1","sysid":4,"compid":1,"msgid":0,"msg":"HEARTBEAT","seq":17,"len":9}"#;

    #[test]
    fn each_kind_is_recognised() {
        assert_eq!(
            sniff(format!("{RECEIPT}\n").as_bytes()),
            FileKind::ReceiverJsonl
        );
        assert_eq!(sniff(b"ULog\x01\x12\x35\x01rest"), FileKind::Ulog);
        assert_eq!(sniff(b"ULogEnc\x01rest"), FileKind::EncryptedUlog);
        let mut tlog = 1_700_000_000_000_000u64.to_be_bytes().to_vec();
        tlog.extend_from_slice(&[0xFD, 9, 0, 0, 0, 1, 1, 0, 0, 0]);
        assert_eq!(sniff(&tlog), FileKind::Tlog);
        assert_eq!(sniff(&[0xFE, 9, 0, 1, 1, 0]), FileKind::RawMavlink);
        assert_eq!(sniff(b""), FileKind::Empty);
        assert_eq!(sniff(&[0x00, 0xFF, 0x80, 0x81, 0x00]), FileKind::Unknown);
        let event = r#"{"utc":"2026-09-24T14:32:00.000Z","kind":"clock","state":"lost","synchronised":false,"max_error_us":16000000}"#;
        assert_eq!(
            sniff(format!("{event}\n").as_bytes()),
            FileKind::EventsJsonl
        );
    }

    #[test]
    fn a_readme_that_mentions_recv_utc_is_text_not_a_receive_log() {
        let readme = format!("# foxborne-receiver\n\nA line looks like:\n{RECEIPT}\n");
        match sniff(readme.as_bytes()) {
            FileKind::Text { first_line } => assert_eq!(first_line, "# foxborne-receiver"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_receipt_longer_than_the_head_is_still_recognised() {
        let long = format!(
            "{{\"recv_utc\":\"2026-09-24T14:32:03.912Z\",\"x\":\"{}\"}}\n",
            "a".repeat(5000)
        );
        assert_eq!(sniff(long.as_bytes()), FileKind::ReceiverJsonl);
    }
}
