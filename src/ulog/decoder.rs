//! The pure ULog decoder: a state machine that is handed bytes and says what they are. It does no
//! I/O and reads no clock; `reader` feeds it from a slice or from any `Read`.
//!
//! Use: call [`Decoder::advance`] with the bytes from [`Decoder::offset`] on. It either asks for
//! more, consumes bytes that carry no record (the file header, a run of zeros, the unwritten end
//! of the main log before appended data), reports an error, or says a whole message of `n` bytes
//! starts the buffer; then [`Decoder::decode`] turns those `n` bytes into a [`Located`] record.
//!
//! Memory: formats, subscriptions and a few counters. Nothing grows with the number of samples.

use super::error::{CutInside, HexBytes, ReadError};
use super::format::{parse_format, FormatRegistry, TopicLayout};
use super::record::{
    message_type_name, FileHeader, FlagBits, KeyValue, Located, LoggedString, Record, Sample,
    Subscription,
};
use std::collections::HashMap;
use std::sync::Arc;

/// The 7 magic bytes every ULog starts with: "ULog" then 0x01 0x12 0x35.
pub const MAGIC: [u8; 7] = [0x55, 0x4c, 0x6f, 0x67, 0x01, 0x12, 0x35];
/// Length of the file header: magic, version byte, start timestamp.
pub const FILE_HEADER_LEN: usize = 16;
/// Length of a message header: `uint16` size, type character.
pub const MESSAGE_HEADER_LEN: usize = 3;
/// The payload of a valid `S` message.
pub const SYNC_MAGIC: [u8; 8] = [0x2F, 0x73, 0x13, 0x20, 0x25, 0x0C, 0xBB, 0x12];
/// Magic of an encrypted log (PX4 `.ulge`, 22-byte header) and of a separate key file.
pub const ENCRYPTED_MAGIC: &[u8; 7] = b"ULogEnc";
pub const KEY_FILE_MAGIC: &[u8; 7] = b"ULogKey";

/// Which part of the file the decoder is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Formats, info and initial parameters, before the first subscription or logged string.
    Definitions,
    Data,
}

/// What the bytes at the decoder's offset are.
#[derive(Debug)]
pub enum Advance {
    /// A whole message of this many bytes starts the buffer: hand them to [`Decoder::decode`].
    Message(usize),
    /// This many bytes were consumed and carry no record.
    Consumed(usize),
    /// The buffer must hold at least this many bytes to go on (never returned at end of input).
    NeedMore(usize),
    /// The input ended cleanly on a message boundary.
    Finished,
    /// Reading stops here.
    Fatal(ReadError),
    /// Something was wrong and was stepped over after consuming this many bytes.
    Skipped(ReadError, usize),
}

/// Where an appended data section started, and how much unfinished main-log data was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendedSection {
    pub offset: u64,
    pub skipped_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    FileHeader,
    /// The 16 header bytes are complete; `decode` turns them into the header record.
    HeaderReady,
    Messages,
    Finished,
}

/// The decoder. See the module documentation for how to drive it.
#[derive(Debug)]
pub struct Decoder {
    phase: Phase,
    offset: u64,
    messages: u64,
    section: Section,
    header: Option<FileHeader>,
    flag_bits: Option<FlagBits>,
    formats: FormatRegistry,
    layouts: HashMap<String, Arc<TopicLayout>>,
    /// Indexed by `msg_id`; grows to the largest id used (at most 65,536 entries).
    subscriptions: Vec<Option<Subscription>>,
    /// Appended-data offsets not reached yet, ascending.
    pending_appended: Vec<u64>,
    appended: Vec<AppendedSection>,
    skipped_toward_append: u64,
    zero_run_start: Option<u64>,
    /// Largest whole message decoded so far (header included), to judge a cut one's size.
    largest_message: usize,
    /// The message the input ended inside, when it did.
    cut: Option<CutMessage>,
}

/// The header of the message the input ended inside: whether it looks like the start of a real
/// message (a log cut short) or like garbage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutMessage {
    pub msg_type: u8,
    /// `msg_size` as declared (without the 3-byte header).
    pub declared_size: usize,
    /// A known type, a size in line with the messages before it, and for a data message a
    /// subscribed `msg_id` whose format fits the size.
    pub plausible: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder {
    pub fn new() -> Self {
        Decoder {
            phase: Phase::FileHeader,
            offset: 0,
            messages: 0,
            section: Section::Definitions,
            header: None,
            flag_bits: None,
            formats: FormatRegistry::default(),
            layouts: HashMap::new(),
            subscriptions: Vec::new(),
            pending_appended: Vec::new(),
            appended: Vec::new(),
            skipped_toward_append: 0,
            zero_run_start: None,
            largest_message: 0,
            cut: None,
        }
    }

    /// The message the input ended inside, once the decoder reported that truncation.
    pub fn cut_message(&self) -> Option<CutMessage> {
        self.cut
    }

    /// Byte offset of the next byte the decoder expects.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Messages decoded so far (the number of the last one).
    pub fn message_count(&self) -> u64 {
        self.messages
    }

    pub fn header(&self) -> Option<FileHeader> {
        self.header
    }

    pub fn flag_bits(&self) -> Option<&FlagBits> {
        self.flag_bits.as_ref()
    }

    pub fn formats(&self) -> &FormatRegistry {
        &self.formats
    }

    pub fn section(&self) -> Section {
        self.section
    }

    pub fn appended_sections(&self) -> &[AppendedSection] {
        &self.appended
    }

    /// The subscription currently bound to `msg_id`.
    pub fn subscription(&self, msg_id: u16) -> Option<&Subscription> {
        self.subscriptions
            .get(usize::from(msg_id))
            .and_then(Option::as_ref)
    }

    /// Looks at `buf` (the input from [`Self::offset`] on); `eof` says no more input follows.
    #[inline]
    pub fn advance(&mut self, buf: &[u8], eof: bool) -> Advance {
        match self.phase {
            Phase::Finished => Advance::Finished,
            _ if self.zero_run_start.is_some() => self.zero_run(buf, eof),
            Phase::FileHeader => self.file_header(buf, eof),
            Phase::HeaderReady => Advance::Message(FILE_HEADER_LEN),
            Phase::Messages => self.frame(buf, eof),
        }
    }

    fn fatal(&mut self, error: ReadError) -> Advance {
        self.phase = Phase::Finished;
        Advance::Fatal(error)
    }

    fn truncated(&mut self, inside: CutInside, message_offset: u64, available: usize) -> Advance {
        let end = self.offset + available as u64;
        self.fatal(ReadError::Truncated {
            inside,
            message_offset,
            end,
        })
    }

    fn file_header(&mut self, buf: &[u8], eof: bool) -> Advance {
        let n = buf.len().min(MAGIC.len());
        if n == MAGIC.len() && (&buf[..n] == ENCRYPTED_MAGIC || &buf[..n] == KEY_FILE_MAGIC) {
            let key_file = &buf[..n] == KEY_FILE_MAGIC;
            return self.fatal(ReadError::Encrypted { key_file });
        }
        if buf[..n] != MAGIC[..n] {
            if buf[..n].iter().all(|b| *b == 0) && n > 0 {
                // Possibly a file whose space was allocated and never written: decide at its end.
                self.zero_run_start = Some(0);
                return self.zero_run(buf, eof);
            }
            let encrypted_prefix =
                ENCRYPTED_MAGIC.starts_with(&buf[..n]) || KEY_FILE_MAGIC.starts_with(&buf[..n]);
            if encrypted_prefix && !eof {
                return Advance::NeedMore(MAGIC.len());
            }
            let found = HexBytes(buf[..buf.len().min(FILE_HEADER_LEN)].to_vec());
            return self.fatal(ReadError::NotUlog { found });
        }
        if buf.len() < FILE_HEADER_LEN {
            if eof {
                return self.truncated(CutInside::FileHeader, 0, buf.len());
            }
            return Advance::NeedMore(FILE_HEADER_LEN);
        }
        // The header is handed out as a record (message 0) so readers see it in order.
        self.phase = Phase::HeaderReady;
        Advance::Message(FILE_HEADER_LEN)
    }

    /// Inside a run of zero bytes: at the end of the input it is truncation; if something else
    /// follows, the run was corruption inside the log (or, at offset 0, the file is not a ULog).
    fn zero_run(&mut self, buf: &[u8], eof: bool) -> Advance {
        let start = self.zero_run_start.unwrap_or(self.offset);
        let zeros = buf.iter().position(|b| *b != 0).unwrap_or(buf.len());
        if zeros > 0 {
            self.offset += zeros as u64;
            return Advance::Consumed(zeros);
        }
        if buf.is_empty() {
            if !eof {
                return Advance::NeedMore(1);
            }
            let end = self.offset;
            return self.fatal(ReadError::Truncated {
                inside: CutInside::ZeroRun,
                message_offset: start,
                end,
            });
        }
        self.zero_run_start = None;
        if self.phase == Phase::FileHeader {
            let found = HexBytes(vec![0; FILE_HEADER_LEN.min(self.offset as usize)]);
            return self.fatal(ReadError::NotUlog { found });
        }
        let error = ReadError::Malformed {
            offset: start,
            message: self.messages,
            size: self.offset - start,
            kind: "zero run".into(),
            detail: format!(
                "{} zero bytes where a message header belongs; reading resumes at offset {}",
                self.offset - start,
                self.offset
            ),
        };
        Advance::Skipped(error, 0)
    }

    #[inline]
    fn frame(&mut self, buf: &[u8], eof: bool) -> Advance {
        // Appended data: the main log stops at the first appended offset, whatever it was doing.
        if let Some(&append_at) = self.pending_appended.first() {
            if self.offset >= append_at {
                self.pending_appended.remove(0);
                self.appended.push(AppendedSection {
                    offset: append_at,
                    skipped_bytes: std::mem::take(&mut self.skipped_toward_append),
                });
                self.section = Section::Data;
                return self.frame(buf, eof);
            }
            let gap = append_at - self.offset;
            let crosses = if buf.len() >= MESSAGE_HEADER_LEN {
                (MESSAGE_HEADER_LEN + usize::from(u16::from_le_bytes([buf[0], buf[1]]))) as u64
                    > gap
            } else {
                (MESSAGE_HEADER_LEN as u64) > gap
            };
            if crosses {
                let n = gap.min(buf.len() as u64) as usize;
                if n == 0 {
                    if eof {
                        return self.truncated(CutInside::BeforeAppendedData, self.offset, 0);
                    }
                    return Advance::NeedMore(1);
                }
                self.offset += n as u64;
                self.skipped_toward_append += n as u64;
                return Advance::Consumed(n);
            }
        }
        if buf.len() < MESSAGE_HEADER_LEN {
            if !eof {
                return Advance::NeedMore(MESSAGE_HEADER_LEN);
            }
            if buf.is_empty() {
                if let Some(&append_at) = self.pending_appended.first() {
                    // The flag bits promise data at an offset the file does not reach.
                    let end = self.offset;
                    return self.fatal(ReadError::Truncated {
                        inside: CutInside::BeforeAppendedData,
                        message_offset: end,
                        end: end.min(append_at),
                    });
                }
                self.phase = Phase::Finished;
                return Advance::Finished;
            }
            let inside = if buf.iter().all(|b| *b == 0) {
                CutInside::ZeroRun
            } else {
                CutInside::MessageHeader
            };
            return self.truncated(inside, self.offset, buf.len());
        }
        let size = usize::from(u16::from_le_bytes([buf[0], buf[1]]));
        let msg_type = buf[2];
        if size == 0 && msg_type == 0 {
            self.zero_run_start = Some(self.offset);
            return self.zero_run(buf, eof);
        }
        let total = MESSAGE_HEADER_LEN + size;
        if buf.len() < total {
            if !eof {
                return Advance::NeedMore(total);
            }
            let inside = self.cut_kind(msg_type);
            self.cut = Some(CutMessage {
                msg_type,
                declared_size: size,
                plausible: self.plausible_header(size, msg_type, buf),
            });
            return self.truncated(inside, self.offset, buf.len());
        }
        Advance::Message(total)
    }

    /// Whether a message header (and, for a data message, its `msg_id`) could start a real
    /// message: the test that tells a log cut short from garbage at its end.
    fn plausible_header(&self, size: usize, msg_type: u8, buf: &[u8]) -> bool {
        if !is_known_type(msg_type) {
            return false;
        }
        if msg_type == b'D' && buf.len() >= MESSAGE_HEADER_LEN + 2 {
            // A data message says which subscription it belongs to: its size must fit.
            let msg_id = u16::from_le_bytes([buf[3], buf[4]]);
            return self.subscription(msg_id).is_some_and(|s| {
                let data = size.saturating_sub(2);
                data >= s.layout.written_size && data <= s.layout.full_size
            });
        }
        // PX4 messages are small; garbage declares any size up to 64 KiB.
        MESSAGE_HEADER_LEN + size <= (self.largest_message * 2).max(1024)
    }

    fn cut_kind(&self, msg_type: u8) -> CutInside {
        if msg_type == b'D' {
            CutInside::DataMessage
        } else if self.section == Section::Definitions && !starts_data(msg_type) {
            CutInside::Definitions
        } else {
            CutInside::Message(msg_type)
        }
    }

    /// Decodes the message `frame` (exactly the bytes [`Advance::Message`] announced).
    // Inlined into the readers so the record is built in place: returning it through memory
    // costs store-forwarding stalls on every message.
    #[inline]
    pub fn decode<'a>(&'a mut self, frame: &'a [u8]) -> Result<Located<'a>, ReadError> {
        if self.phase == Phase::HeaderReady {
            let mut ts = [0u8; 8];
            ts.copy_from_slice(&frame[8..16]);
            let header = FileHeader {
                version: frame[7],
                timestamp: u64::from_le_bytes(ts),
            };
            self.header = Some(header);
            self.phase = Phase::Messages;
            self.offset += FILE_HEADER_LEN as u64;
            return Ok(Located {
                message: 0,
                offset: 0,
                size: FILE_HEADER_LEN as u32,
                msg_type: 0,
                bytes: frame,
                record: Record::FileHeader(header),
            });
        }
        let offset = self.offset;
        self.offset += frame.len() as u64;
        self.messages += 1;
        self.largest_message = self.largest_message.max(frame.len());
        let message = self.messages;
        let msg_type = frame[2];
        let payload = &frame[MESSAGE_HEADER_LEN..];
        if self.section == Section::Definitions && starts_data(msg_type) {
            self.section = Section::Data;
        }
        let size = frame.len() as u64;
        let malformed = |detail: String| ReadError::Malformed {
            offset,
            message,
            size,
            kind: message_type_name(msg_type).to_string(),
            detail,
        };
        let record = match msg_type {
            b'B' => {
                let bits = self
                    .flag_bits_message(payload, message)
                    .map_err(malformed)?;
                let unknown_incompat = bits.incompat[0] & !FlagBits::DATA_APPENDED != 0
                    || bits.incompat[1..].iter().any(|b| *b != 0);
                if unknown_incompat {
                    self.phase = Phase::Finished;
                    return Err(ReadError::UnsupportedIncompatFlags {
                        offset,
                        flags: HexBytes(bits.incompat.to_vec()),
                    });
                }
                if bits.has_data_appended() {
                    let mut offsets: Vec<u64> = bits
                        .appended_offsets
                        .iter()
                        .copied()
                        .filter(|o| *o >= self.offset)
                        .collect();
                    offsets.sort_unstable();
                    offsets.dedup();
                    self.pending_appended = offsets;
                }
                self.flag_bits = Some(bits.clone());
                Record::FlagBits(bits)
            }
            b'F' => {
                let text = std::str::from_utf8(payload)
                    .map_err(|e| malformed(format!("format text is not UTF-8: {e}")))?;
                let format = parse_format(text).map_err(|e| malformed(e.to_string()))?;
                if self.formats.get(&format.name).is_some() {
                    // A redefinition can change the layouts of topics that use it.
                    self.layouts.clear();
                }
                self.formats.insert(format);
                let name = text.split_once(':').map_or(text, |(n, _)| n);
                Record::Format { name }
            }
            b'I' => Record::Info(key_value(payload).map_err(malformed)?),
            b'M' => {
                let (first, rest) = payload
                    .split_first()
                    .ok_or_else(|| malformed("empty".into()))?;
                Record::MultiInfo {
                    is_continued: *first != 0,
                    kv: key_value(rest).map_err(malformed)?,
                }
            }
            b'P' => Record::Parameter {
                initial: self.section == Section::Definitions,
                kv: key_value(payload).map_err(malformed)?,
            },
            b'Q' => {
                let (first, rest) = payload
                    .split_first()
                    .ok_or_else(|| malformed("empty".into()))?;
                Record::DefaultParameter {
                    default_types: *first,
                    kv: key_value(rest).map_err(malformed)?,
                }
            }
            b'A' => {
                if payload.len() < 3 {
                    return Err(malformed(format!(
                        "{} bytes, at least 3 expected",
                        payload.len()
                    )));
                }
                let multi_id = payload[0];
                let msg_id = u16::from_le_bytes([payload[1], payload[2]]);
                let topic = std::str::from_utf8(&payload[3..])
                    .map_err(|e| malformed(format!("topic name is not UTF-8: {e}")))?;
                let layout = match self.layouts.get(topic) {
                    Some(layout) => layout.clone(),
                    None => {
                        let layout = Arc::new(self.formats.layout_cached(topic).map_err(|e| {
                            malformed(format!("subscription to `{topic}` (msg_id {msg_id}): {e}"))
                        })?);
                        self.layouts.insert(topic.to_string(), layout.clone());
                        layout
                    }
                };
                let index = usize::from(msg_id);
                if self.subscriptions.len() <= index {
                    self.subscriptions.resize(index + 1, None);
                }
                self.subscriptions[index] = Some(Subscription {
                    topic: Arc::from(topic),
                    multi_id,
                    msg_id,
                    layout,
                });
                Record::Subscription {
                    subscription: self.subscriptions[index].as_ref().expect("just inserted"),
                    formats: &self.formats,
                }
            }
            b'R' => {
                let msg_id = read_u16(payload, 0)
                    .ok_or_else(|| malformed("shorter than a msg_id".into()))?;
                if let Some(slot) = self.subscriptions.get_mut(usize::from(msg_id)) {
                    *slot = None;
                }
                Record::Unsubscription { msg_id }
            }
            b'D' => {
                let msg_id = read_u16(payload, 0)
                    .ok_or_else(|| malformed("shorter than a msg_id".into()))?;
                let data = &payload[2..];
                let subscription = self
                    .subscriptions
                    .get(usize::from(msg_id))
                    .and_then(Option::as_ref)
                    .ok_or_else(|| malformed(format!("no subscription for msg_id {msg_id}")))?;
                let layout = &subscription.layout;
                if data.len() < layout.written_size || data.len() > layout.full_size {
                    return Err(malformed(format!(
                        "{} carries {} bytes; its format `{}` has {} (up to {} with trailing padding)",
                        subscription.topic,
                        data.len(),
                        layout.format_name,
                        layout.written_size,
                        layout.full_size
                    )));
                }
                let timestamp = layout.timestamp_offset.and_then(|o| read_u64(data, o));
                Record::Data(Sample {
                    subscription,
                    formats: &self.formats,
                    payload: data,
                    timestamp,
                })
            }
            b'L' => Record::Logged(logged_string(payload, false).map_err(malformed)?),
            b'C' => Record::Logged(logged_string(payload, true).map_err(malformed)?),
            b'S' => Record::Sync {
                valid: payload.len() >= 8 && payload[..8] == SYNC_MAGIC,
            },
            b'O' => Record::Dropout {
                duration_ms: read_u16(payload, 0)
                    .ok_or_else(|| malformed("shorter than a duration".into()))?,
            },
            other => Record::Unknown { msg_type: other },
        };
        Ok(Located {
            message,
            offset,
            size: frame.len() as u32,
            msg_type,
            bytes: frame,
            record,
        })
    }

    fn flag_bits_message(&self, payload: &[u8], message: u64) -> Result<FlagBits, String> {
        if message != 1 {
            return Err(format!(
                "flag bits must be the first message, this is message {message}"
            ));
        }
        if payload.len() < 16 {
            return Err(format!("{} bytes, at least 16 expected", payload.len()));
        }
        let mut bits = FlagBits {
            compat: [0; 8],
            incompat: [0; 8],
            appended_offsets: [0; 3],
        };
        bits.compat.copy_from_slice(&payload[..8]);
        bits.incompat.copy_from_slice(&payload[8..16]);
        for (i, slot) in bits.appended_offsets.iter_mut().enumerate() {
            *slot = read_u64(payload, 16 + 8 * i).unwrap_or(0);
        }
        Ok(bits)
    }
}

/// The message types of the ULog format.
pub fn is_known_type(msg_type: u8) -> bool {
    b"BFIMPQARDLCSO".contains(&msg_type)
}

/// Message types that only occur in the data section: the first one ends the definitions.
fn starts_data(msg_type: u8) -> bool {
    matches!(msg_type, b'A' | b'L' | b'C' | b'D' | b'O' | b'R')
}

fn read_u16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]]))
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

/// Splits a logged string: level, then (`tagged`, a `C` message) a u16 tag, then the
/// timestamp and the text.
fn logged_string(p: &[u8], tagged: bool) -> Result<LoggedString<'_>, String> {
    let tag_len = if tagged { 2 } else { 0 };
    let header = 9 + tag_len;
    if p.len() < header {
        return Err(format!("{} bytes, at least {header} expected", p.len()));
    }
    Ok(LoggedString {
        level: p[0],
        tag: if tagged { read_u16(p, 1) } else { None },
        timestamp: read_u64(p, 1 + tag_len).unwrap_or(0),
        text: &p[header..],
    })
}

/// Splits `key_len`, `type name`, value.
fn key_value(p: &[u8]) -> Result<KeyValue<'_>, String> {
    let key_len = usize::from(*p.first().ok_or("empty message")?);
    let key = p
        .get(1..1 + key_len)
        .ok_or_else(|| format!("key length {key_len} runs past the message"))?;
    let key = std::str::from_utf8(key).map_err(|e| format!("key is not UTF-8: {e}"))?;
    let (type_name, name) = key
        .split_once(' ')
        .ok_or_else(|| format!("key `{key}` is not `type name`"))?;
    Ok(KeyValue {
        type_name,
        key: name,
        value: &p[1 + key_len..],
    })
}
