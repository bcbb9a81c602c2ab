//! A small Parquet file writer for `ulog export`, written from the format specification
//! (apache/parquet-format, `parquet.thrift`): flat schemas of required or optional primitive
//! columns, one version-1 data page per column chunk, PLAIN values, definition levels as
//! bit-packed runs, no dictionary, no statistics, pages uncompressed or Snappy.
//!
//! Why not a general writer: a flight log has 70 to 120 topic instances and thousands of
//! columns, most of them a few hundred values long, so the general writer's setup per file and
//! per column (encoders, page and metadata structures) cost more than the values. Here a column
//! chunk is its page header and its values appended to one buffer, and a file is written with one
//! `write` per row group (the footer goes with the last one).

use std::cell::RefCell;
use std::fs::File;
use std::io::Write;

/// Physical types (`Type` in parquet.thrift).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Physical {
    Boolean = 0,
    Int32 = 1,
    Int64 = 2,
    Float = 4,
    Double = 5,
    ByteArray = 6,
}

/// The annotation of a column (`LogicalType`, with the matching `ConvertedType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logical {
    None,
    String,
    Integer { bits: i8, signed: bool },
}

/// One leaf of the (flat) schema: a column of the caller's table.
pub trait Leaf {
    fn name(&self) -> &str;
    fn physical(&self) -> Physical;
    fn logical(&self) -> Logical;
    fn nullable(&self) -> bool;
}

/// The values of one column chunk. Text is all values' bytes back to back, and where each ends.
#[derive(Debug, Clone, Copy)]
pub enum Values<'a> {
    Int32(&'a [i32]),
    Int64(&'a [i64]),
    Float(&'a [f32]),
    Double(&'a [f64]),
    Boolean(&'a [bool]),
    Text { bytes: &'a [u8], ends: &'a [usize] },
}

impl Values<'_> {
    /// Bytes of the PLAIN encoding.
    fn plain_len(&self) -> usize {
        match *self {
            Values::Int32(v) => v.len() * 4,
            Values::Float(v) => v.len() * 4,
            Values::Int64(v) => v.len() * 8,
            Values::Double(v) => v.len() * 8,
            Values::Boolean(v) => v.len().div_ceil(8),
            Values::Text { bytes, ends } => bytes.len() + 4 * ends.len(),
        }
    }

    /// Appends the PLAIN encoding: little-endian numbers, booleans one bit each from the least
    /// significant, text as a 4-byte length and the bytes.
    fn plain(&self, out: &mut Vec<u8>) {
        fn fixed<T: Copy, const N: usize>(out: &mut Vec<u8>, v: &[T], le: impl Fn(T) -> [u8; N]) {
            let start = out.len();
            out.resize(start + v.len() * N, 0);
            for (dst, x) in out[start..].chunks_exact_mut(N).zip(v) {
                dst.copy_from_slice(&le(*x));
            }
        }
        match *self {
            Values::Int32(v) => fixed(out, v, i32::to_le_bytes),
            Values::Float(v) => fixed(out, v, f32::to_le_bytes),
            Values::Int64(v) => fixed(out, v, i64::to_le_bytes),
            Values::Double(v) => fixed(out, v, f64::to_le_bytes),
            Values::Boolean(v) => out.extend(v.chunks(8).map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u8, |b, (i, x)| b | (u8::from(*x) << i))
            })),
            Values::Text { bytes, ends } => {
                let mut start = 0;
                for &end in ends {
                    out.extend_from_slice(&((end - start) as u32).to_le_bytes());
                    out.extend_from_slice(&bytes[start..end]);
                    start = end;
                }
            }
        }
    }

    fn len(&self) -> usize {
        match *self {
            Values::Int32(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Int64(v) => v.len(),
            Values::Double(v) => v.len(),
            Values::Boolean(v) => v.len(),
            Values::Text { ends, .. } => ends.len(),
        }
    }
}

/// Where a column chunk is and how big, for the footer.
#[derive(Debug, Clone, Copy)]
struct Chunk {
    page_offset: u64,
    uncompressed: u64,
    compressed: u64,
    values: u64,
}

/// Why a page could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("a page of column `{0}` is larger than Parquet allows (2 GiB)")]
    PageTooLarge(String),
    #[error("Snappy: {0}")]
    Snappy(#[from] snap::Error),
}

/// Buffers reused by every file written on a thread: a row group is encoded into `out` and
/// written with one call; `body` and `packed` hold a page before and after Snappy.
#[derive(Default)]
struct Scratch {
    out: Vec<u8>,
    body: Vec<u8>,
    packed: Vec<u8>,
    snappy: Option<snap::raw::Encoder>,
}

/// A buffer this large (a big row group) is given back after use rather than kept per thread.
const SCRATCH_KEEP: usize = 4 << 20;

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// A Parquet file being written: row groups as they come, the footer at the end.
pub struct ParquetFile {
    file: File,
    snappy: bool,
    created_by: String,
    /// Bytes written so far.
    written: u64,
    /// Rows of each row group written, and its chunks (one per leaf, in order).
    groups: Vec<u64>,
    chunks: Vec<Chunk>,
}

impl ParquetFile {
    pub fn new(file: File, snappy: bool, created_by: String) -> ParquetFile {
        ParquetFile {
            file,
            snappy,
            created_by,
            written: 0,
            groups: Vec::new(),
            chunks: Vec::new(),
        }
    }

    /// Writes one row group of `rows` rows: `column(i)` gives leaf `i`'s values and, for a
    /// nullable leaf, its definition levels (1 a value, 0 a null; one per row). With `last`,
    /// the footer follows in the same write and the file is complete. `leaves` must be the
    /// same at every call.
    pub fn write<'a>(
        &mut self,
        leaves: &[impl Leaf],
        rows: usize,
        column: impl Fn(usize) -> (Values<'a>, Option<&'a [i16]>),
        last: bool,
    ) -> Result<(), WriteError> {
        SCRATCH.with(|scratch| {
            let scratch = &mut *scratch.borrow_mut();
            let result = self.write_with(scratch, leaves, rows, column, last);
            for buf in [&mut scratch.out, &mut scratch.body, &mut scratch.packed] {
                buf.clear();
                if buf.capacity() > SCRATCH_KEEP {
                    *buf = Vec::new();
                }
            }
            result
        })
    }

    fn write_with<'a>(
        &mut self,
        s: &mut Scratch,
        leaves: &[impl Leaf],
        rows: usize,
        column: impl Fn(usize) -> (Values<'a>, Option<&'a [i16]>),
        last: bool,
    ) -> Result<(), WriteError> {
        let out = &mut s.out;
        out.clear();
        if self.written == 0 {
            out.extend_from_slice(b"PAR1");
        }
        if rows > 0 {
            for (i, leaf) in leaves.iter().enumerate() {
                let (values, defs) = column(i);
                let levels = defs.map(|d| levels_len(d.len()));
                let body_len = levels.unwrap_or(0) + values.plain_len();
                let page_offset = self.written + out.len() as u64;
                let too_large = || WriteError::PageTooLarge(leaf.name().to_string());
                let uncompressed = i32::try_from(body_len).map_err(|_| too_large())?;
                let (header_len, compressed) = if self.snappy {
                    let body = &mut s.body;
                    body.clear();
                    if let Some(d) = defs {
                        levels_into(body, d);
                    }
                    values.plain(body);
                    let packed = &mut s.packed;
                    packed.resize(snap::raw::max_compress_len(body.len()), 0);
                    let n = s
                        .snappy
                        .get_or_insert_with(snap::raw::Encoder::new)
                        .compress(body, packed)?;
                    let compressed = i32::try_from(n).map_err(|_| too_large())?;
                    let h = page_header(out, rows, uncompressed, compressed);
                    out.extend_from_slice(&packed[..n]);
                    (h, n)
                } else {
                    let h = page_header(out, rows, uncompressed, uncompressed);
                    out.reserve(body_len);
                    if let Some(d) = defs {
                        levels_into(out, d);
                    }
                    values.plain(out);
                    (h, body_len)
                };
                self.chunks.push(Chunk {
                    page_offset,
                    uncompressed: (header_len + body_len) as u64,
                    compressed: (header_len + compressed) as u64,
                    values: defs.map_or(values.len(), <[i16]>::len) as u64,
                });
            }
            self.groups.push(rows as u64);
        }
        if last {
            let start = out.len();
            self.footer(leaves, out);
            let len = (out.len() - start) as u32;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(b"PAR1");
        }
        self.file.write_all(out)?;
        self.written += out.len() as u64;
        Ok(())
    }

    /// `FileMetaData`.
    fn footer(&self, leaves: &[impl Leaf], out: &mut Vec<u8>) {
        let mut t = Compact::new(out);
        t.i32(1, 1);
        t.list(2, STRUCT, leaves.len() + 1);
        t.elem_begin();
        t.binary(4, b"schema");
        t.i32(5, leaves.len() as i32);
        t.end();
        for leaf in leaves {
            t.elem_begin();
            t.i32(1, leaf.physical() as i32);
            t.i32(3, i32::from(leaf.nullable()));
            t.binary(4, leaf.name().as_bytes());
            match leaf.logical() {
                Logical::None => {}
                Logical::String => {
                    t.i32(6, 0); // UTF8
                    t.struct_begin(10);
                    t.struct_begin(1); // STRING
                    t.end();
                    t.end();
                }
                Logical::Integer { bits, signed } => {
                    let converted = match (bits, signed) {
                        (8, false) => 11,
                        (16, false) => 12,
                        (32, false) => 13,
                        (64, false) => 14,
                        (8, true) => 15,
                        (16, true) => 16,
                        (32, true) => 17,
                        _ => 18,
                    };
                    t.i32(6, converted);
                    t.struct_begin(10);
                    t.struct_begin(10); // INTEGER
                    t.byte(1, bits);
                    t.bool(2, signed);
                    t.end();
                    t.end();
                }
            }
            t.end();
        }
        t.i64(3, self.groups.iter().sum::<u64>() as i64);
        t.list(4, STRUCT, self.groups.len());
        for (g, rows) in self.groups.iter().enumerate() {
            let chunks = &self.chunks[g * leaves.len()..(g + 1) * leaves.len()];
            t.elem_begin();
            t.list(1, STRUCT, chunks.len());
            for (leaf, c) in leaves.iter().zip(chunks) {
                t.elem_begin();
                t.i64(2, 0);
                t.struct_begin(3);
                t.i32(1, leaf.physical() as i32);
                t.list(2, I32, 2);
                t.elem_i32(0); // PLAIN
                t.elem_i32(3); // RLE (levels)
                t.list(3, BINARY, 1);
                t.elem_binary(leaf.name().as_bytes());
                t.i32(4, i32::from(self.snappy));
                t.i64(5, c.values as i64);
                t.i64(6, c.uncompressed as i64);
                t.i64(7, c.compressed as i64);
                t.i64(9, c.page_offset as i64);
                t.end();
                t.end();
            }
            t.i64(2, chunks.iter().map(|c| c.uncompressed).sum::<u64>() as i64);
            t.i64(3, *rows as i64);
            t.i64(5, chunks.first().map_or(0, |c| c.page_offset) as i64);
            t.i64(6, chunks.iter().map(|c| c.compressed).sum::<u64>() as i64);
            t.end();
        }
        t.binary(6, self.created_by.as_bytes());
        t.stop();
    }
}

/// Bytes of `n` definition levels (bit width 1) in a version-1 page: a 4-byte length, then one
/// bit-packed run of `ceil(n / 8)` groups of eight.
fn levels_len(n: usize) -> usize {
    let groups = n.div_ceil(8);
    4 + varint_len(((groups as u64) << 1) | 1) + groups
}

fn levels_into(out: &mut Vec<u8>, defs: &[i16]) {
    let groups = defs.len().div_ceil(8);
    let header = ((groups as u64) << 1) | 1;
    out.extend_from_slice(&((varint_len(header) + groups) as u32).to_le_bytes());
    varint(out, header);
    out.extend(defs.chunks(8).map(|c| {
        c.iter()
            .enumerate()
            .fold(0u8, |b, (i, d)| b | (u8::from(*d != 0) << i))
    }));
}

/// Appends a `PageHeader` of a version-1 data page; returns its length.
fn page_header(out: &mut Vec<u8>, rows: usize, uncompressed: i32, compressed: i32) -> usize {
    let start = out.len();
    let mut t = Compact::new(out);
    t.i32(1, 0); // DATA_PAGE
    t.i32(2, uncompressed);
    t.i32(3, compressed);
    t.struct_begin(5);
    t.i32(1, rows as i32);
    t.i32(2, 0); // PLAIN
    t.i32(3, 3); // RLE
    t.i32(4, 3); // RLE
    t.end();
    t.stop();
    out.len() - start
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

// Thrift compact protocol type codes.
const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I32: u8 = 5;
const I64: u8 = 6;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const STRUCT: u8 = 12;

/// The Thrift compact protocol, write side, for the structures above: field headers carry the
/// delta from the previous field id of the same struct.
struct Compact<'a> {
    out: &'a mut Vec<u8>,
    last: i16,
    outer: [i16; 8],
    depth: usize,
}

impl<'a> Compact<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        Compact {
            out,
            last: 0,
            outer: [0; 8],
            depth: 0,
        }
    }

    fn field(&mut self, id: i16, ty: u8) {
        let delta = id - self.last;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | ty);
        } else {
            self.out.push(ty);
            varint(self.out, zigzag(i64::from(id)));
        }
        self.last = id;
    }

    fn i32(&mut self, id: i16, v: i32) {
        self.field(id, I32);
        varint(self.out, zigzag(i64::from(v)));
    }

    fn i64(&mut self, id: i16, v: i64) {
        self.field(id, I64);
        varint(self.out, zigzag(v));
    }

    fn byte(&mut self, id: i16, v: i8) {
        self.field(id, BYTE);
        self.out.push(v as u8);
    }

    fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { BOOL_TRUE } else { BOOL_FALSE });
    }

    fn binary(&mut self, id: i16, v: &[u8]) {
        self.field(id, BINARY);
        self.elem_binary(v);
    }

    fn list(&mut self, id: i16, elem: u8, n: usize) {
        self.field(id, LIST);
        if n < 15 {
            self.out.push(((n as u8) << 4) | elem);
        } else {
            self.out.push(0xF0 | elem);
            varint(self.out, n as u64);
        }
    }

    fn elem_i32(&mut self, v: i32) {
        varint(self.out, zigzag(i64::from(v)));
    }

    fn elem_binary(&mut self, v: &[u8]) {
        varint(self.out, v.len() as u64);
        self.out.extend_from_slice(v);
    }

    /// A struct field: its fields follow, then [`Compact::end`].
    fn struct_begin(&mut self, id: i16) {
        self.field(id, STRUCT);
        self.elem_begin();
    }

    /// A struct element of a list: its fields follow, then [`Compact::end`].
    fn elem_begin(&mut self) {
        self.outer[self.depth] = self.last;
        self.depth += 1;
        self.last = 0;
    }

    fn end(&mut self) {
        self.out.push(0);
        self.depth -= 1;
        self.last = self.outer[self.depth];
    }

    /// The end of the outermost struct.
    fn stop(&mut self) {
        self.out.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_follow_the_compact_protocol() {
        let mut out = Vec::new();
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            let start = out.len();
            varint(&mut out, v);
            assert_eq!(out.len() - start, varint_len(v), "{v}");
        }
        assert_eq!(out[..4], [0, 1, 127, 0x80]);
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    #[test]
    fn a_page_header_is_the_thrift_compact_encoding() {
        let mut out = Vec::new();
        let n = page_header(&mut out, 3, 12, 12);
        // type 0; sizes 12 (zigzag 24); struct 5 (delta 2): num_values 3 (6), PLAIN, RLE, RLE.
        assert_eq!(
            out,
            [0x15, 0, 0x15, 24, 0x15, 24, 0x2C, 0x15, 6, 0x15, 0, 0x15, 6, 0x15, 6, 0, 0]
        );
        assert_eq!(n, out.len());
    }

    #[test]
    fn levels_are_one_bit_packed_run() {
        let mut out = Vec::new();
        levels_into(&mut out, &[1, 0, 1, 1, 0, 0, 0, 0, 1]);
        assert_eq!(out, [3, 0, 0, 0, (2 << 1) | 1, 0b1101, 0b1]);
        assert_eq!(out.len(), levels_len(9));
    }
}
