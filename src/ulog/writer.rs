//! A small ULog writer, for tests and benchmarks: it makes logs with exactly the structure a test
//! needs (nested formats, continuations, dropouts, stalls, appended data) and logs of any size for
//! the memory benchmark. It writes what it is told, including wrong things, so tests can build
//! malformed input too.

use super::decoder::{MAGIC, SYNC_MAGIC};
use std::io::{self, Write};

/// Writes ULog messages to any `Write`, tracking the byte offset.
pub struct UlogWriter<W: Write> {
    out: W,
    position: u64,
    messages: u64,
}

impl<W: Write> UlogWriter<W> {
    /// Writes a version 1 file header.
    pub fn new(out: W, start_timestamp: u64) -> io::Result<Self> {
        Self::with_version(out, 1, start_timestamp)
    }

    /// Writes a file header with the given version byte.
    pub fn with_version(mut out: W, version: u8, start_timestamp: u64) -> io::Result<Self> {
        out.write_all(&MAGIC)?;
        out.write_all(&[version])?;
        out.write_all(&start_timestamp.to_le_bytes())?;
        Ok(UlogWriter {
            out,
            position: 16,
            messages: 0,
        })
    }

    /// Byte offset the next message will start at.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Messages written so far (the number of the last one).
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// One message of any type.
    pub fn raw(&mut self, msg_type: u8, payload: &[u8]) -> io::Result<()> {
        let size = u16::try_from(payload.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "ULog message payload over 65,535 bytes",
            )
        })?;
        self.out.write_all(&size.to_le_bytes())?;
        self.out.write_all(&[msg_type])?;
        self.out.write_all(payload)?;
        self.position += 3 + payload.len() as u64;
        self.messages += 1;
        Ok(())
    }

    /// A message whose payload is `parts`, one after the other.
    fn joined(&mut self, msg_type: u8, parts: &[&[u8]]) -> io::Result<()> {
        self.raw(msg_type, &parts.concat())
    }

    /// `B`: flags and appended-data offsets (40 bytes).
    pub fn flag_bits(
        &mut self,
        compat: [u8; 8],
        incompat: [u8; 8],
        appended: [u64; 3],
    ) -> io::Result<()> {
        let mut p = Vec::with_capacity(40);
        p.extend_from_slice(&compat);
        p.extend_from_slice(&incompat);
        for o in appended {
            p.extend_from_slice(&o.to_le_bytes());
        }
        self.raw(b'B', &p)
    }

    /// `F`: a format, as text (`name:type field;...`).
    pub fn format(&mut self, text: &str) -> io::Result<()> {
        self.raw(b'F', text.as_bytes())
    }

    fn key_value(key_type: &str, key: &str, value: &[u8]) -> Vec<u8> {
        let full_key = format!("{key_type} {key}");
        let mut p = Vec::with_capacity(1 + full_key.len() + value.len());
        p.push(full_key.len() as u8);
        p.extend_from_slice(full_key.as_bytes());
        p.extend_from_slice(value);
        p
    }

    /// `I`: one information value of a declared type.
    pub fn info(&mut self, key_type: &str, key: &str, value: &[u8]) -> io::Result<()> {
        self.raw(b'I', &Self::key_value(key_type, key, value))
    }

    /// `I` with a string value (`char[len]`).
    pub fn info_str(&mut self, key: &str, value: &str) -> io::Result<()> {
        self.info(&format!("char[{}]", value.len()), key, value.as_bytes())
    }

    /// `M`: one part of a multi-information value.
    pub fn multi_info(
        &mut self,
        is_continued: bool,
        key_type: &str,
        key: &str,
        value: &[u8],
    ) -> io::Result<()> {
        let kv = Self::key_value(key_type, key, value);
        self.joined(b'M', &[&[u8::from(is_continued)], &kv])
    }

    /// `P` with an `int32_t` value.
    pub fn parameter_i32(&mut self, name: &str, value: i32) -> io::Result<()> {
        self.raw(
            b'P',
            &Self::key_value("int32_t", name, &value.to_le_bytes()),
        )
    }

    /// `P` with a `float` value.
    pub fn parameter_f32(&mut self, name: &str, value: f32) -> io::Result<()> {
        self.raw(b'P', &Self::key_value("float", name, &value.to_le_bytes()))
    }

    /// `Q` with an `int32_t` value.
    pub fn default_parameter_i32(
        &mut self,
        default_types: u8,
        name: &str,
        value: i32,
    ) -> io::Result<()> {
        let kv = Self::key_value("int32_t", name, &value.to_le_bytes());
        self.joined(b'Q', &[&[default_types], &kv])
    }

    /// `A`: subscribe `topic` instance `multi_id` as `msg_id`.
    pub fn subscribe(&mut self, multi_id: u8, msg_id: u16, topic: &str) -> io::Result<()> {
        self.joined(
            b'A',
            &[&[multi_id], &msg_id.to_le_bytes(), topic.as_bytes()],
        )
    }

    /// `R`: unsubscribe `msg_id`.
    pub fn unsubscribe(&mut self, msg_id: u16) -> io::Result<()> {
        self.raw(b'R', &msg_id.to_le_bytes())
    }

    /// `D`: one sample (the payload after `msg_id`).
    pub fn data(&mut self, msg_id: u16, payload: &[u8]) -> io::Result<()> {
        self.joined(b'D', &[&msg_id.to_le_bytes(), payload])
    }

    /// `L`: a console message; `level` as PX4 writes it (b'0'..=b'7').
    pub fn logged(&mut self, level: u8, timestamp: u64, text: &str) -> io::Result<()> {
        self.joined(b'L', &[&[level], &timestamp.to_le_bytes(), text.as_bytes()])
    }

    /// `C`: a tagged console message.
    pub fn tagged(&mut self, level: u8, tag: u16, timestamp: u64, text: &str) -> io::Result<()> {
        let (tag, timestamp) = (tag.to_le_bytes(), timestamp.to_le_bytes());
        self.joined(b'C', &[&[level], &tag, &timestamp, text.as_bytes()])
    }

    /// `S`: a synchronization message.
    pub fn sync(&mut self) -> io::Result<()> {
        self.raw(b'S', &SYNC_MAGIC)
    }

    /// `O`: a dropout of `ms` milliseconds.
    pub fn dropout(&mut self, ms: u16) -> io::Result<()> {
        self.raw(b'O', &ms.to_le_bytes())
    }

    /// Bytes that are not a message (for corrupt or truncated files).
    pub fn junk(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.position += bytes.len() as u64;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}
