//! Feeding the decoder: from a byte slice (a whole file in memory or a memory map) or from any
//! `Read` through a bounded buffer. Both hand out one record at a time, borrowed until the next
//! call, so reading a log of any size keeps one message (at most 64 KiB) plus the buffer.

use super::decoder::{Advance, Decoder};
use super::error::ReadError;
use super::record::Located;
use std::io::Read;

/// Bytes the `Read` adapter asks for at once.
const READ_CHUNK: usize = 256 * 1024;

/// What a reader does next after one decoder step: the part both readers share, so they
/// cannot disagree on what a step means.
enum Flow {
    Continue,
    NeedMore(usize),
    End,
    Error(ReadError),
    Message(usize),
}

/// Moves the reader's `cursor` past what the step consumed and marks it `done` where the
/// step ends the log.
fn follow(advance: Advance, cursor: &mut usize, done: &mut bool) -> Flow {
    match advance {
        Advance::Consumed(n) => {
            *cursor += n;
            Flow::Continue
        }
        Advance::NeedMore(n) => Flow::NeedMore(n),
        Advance::Finished => {
            *done = true;
            Flow::End
        }
        Advance::Fatal(e) => {
            *done = true;
            Flow::Error(e)
        }
        Advance::Skipped(e, n) => {
            *cursor += n;
            Flow::Error(e)
        }
        Advance::Message(n) => Flow::Message(n),
    }
}

/// Decodes the `n`-byte message at `cursor` in `buf` and moves past it; a fatal error ends the log.
fn decode_at<'a>(
    decoder: &'a mut Decoder,
    buf: &'a [u8],
    cursor: &mut usize,
    n: usize,
    done: &mut bool,
) -> Result<Located<'a>, ReadError> {
    let start = *cursor;
    *cursor += n;
    let result = decoder.decode(&buf[start..start + n]);
    if matches!(&result, Err(e) if e.is_fatal()) {
        *done = true;
    }
    result
}

/// Reads records from a byte slice that holds the whole file.
pub struct SliceReader<'d> {
    data: &'d [u8],
    pos: usize,
    decoder: Decoder,
    done: bool,
}

impl<'d> SliceReader<'d> {
    pub fn new(data: &'d [u8]) -> Self {
        SliceReader {
            data,
            pos: 0,
            decoder: Decoder::new(),
            done: false,
        }
    }

    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    /// The next record; `None` after the end or after a fatal error.
    #[inline]
    pub fn next_record(&mut self) -> Option<Result<Located<'_>, ReadError>> {
        loop {
            if self.done {
                return None;
            }
            let advance = self.decoder.advance(&self.data[self.pos..], true);
            match follow(advance, &mut self.pos, &mut self.done) {
                Flow::Continue => {}
                // With the whole file given, wanting more bytes is the end.
                Flow::NeedMore(_) | Flow::End => {
                    self.done = true;
                    return None;
                }
                Flow::Error(e) => return Some(Err(e)),
                Flow::Message(n) => {
                    return Some(decode_at(
                        &mut self.decoder,
                        self.data,
                        &mut self.pos,
                        n,
                        &mut self.done,
                    ))
                }
            }
        }
    }
}

/// Reads records from any `Read` (a file, a pipe) through a bounded buffer.
pub struct StreamReader<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    decoder: Decoder,
    done: bool,
    /// Where the last message handed to the decoder sits in `buf` (start, length).
    last: (usize, usize),
}

impl<R: Read> StreamReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_capacity(inner, READ_CHUNK)
    }

    /// A reader whose buffer starts at `capacity` bytes (it grows to hold one whole message, at
    /// most 64 KiB, when needed). A small file needs no larger buffer than itself.
    pub fn with_capacity(inner: R, capacity: usize) -> Self {
        StreamReader {
            inner,
            buf: vec![0; capacity.clamp(64, READ_CHUNK)],
            start: 0,
            end: 0,
            eof: false,
            decoder: Decoder::new(),
            done: false,
            last: (0, 0),
        }
    }

    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }

    /// The bytes of the message the last call decoded (or failed to), header included: the
    /// evidence for a malformed one. Empty when the last call produced no message.
    pub fn last_message_bytes(&self) -> &[u8] {
        &self.buf[self.last.0..self.last.0 + self.last.1]
    }

    /// Bytes of input the decoder has gone past.
    pub fn position(&self) -> u64 {
        self.decoder.offset()
    }

    /// The next record; `None` after the end or after a fatal error.
    #[inline]
    pub fn next_record(&mut self) -> Option<Result<Located<'_>, ReadError>> {
        loop {
            self.last = (self.start, 0);
            if self.done {
                return None;
            }
            let advance = self
                .decoder
                .advance(&self.buf[self.start..self.end], self.eof);
            match follow(advance, &mut self.start, &mut self.done) {
                Flow::Continue => {}
                Flow::NeedMore(n) => {
                    if let Err(source) = self.fill(n) {
                        self.done = true;
                        return Some(Err(ReadError::Io {
                            offset: self.decoder.offset(),
                            source,
                        }));
                    }
                }
                Flow::End => return None,
                Flow::Error(e) => return Some(Err(e)),
                Flow::Message(n) => {
                    self.last = (self.start, n);
                    return Some(decode_at(
                        &mut self.decoder,
                        &self.buf,
                        &mut self.start,
                        n,
                        &mut self.done,
                    ));
                }
            }
        }
    }

    /// Makes the buffer hold at least `want` unconsumed bytes, or reach the end of the input.
    fn fill(&mut self, want: usize) -> std::io::Result<()> {
        if self.start + want > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if want > self.buf.len() {
                self.buf.resize(want, 0);
            }
        }
        while self.end - self.start < want && !self.eof {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
