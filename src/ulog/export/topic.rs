//! One topic instance's table: its columns as pyulog names them, the raw rows it buffers, and
//! the row groups it writes from them, one tight loop per column.

use super::rows::Rows;
use super::spill::{read_segments, Segment, Spill};
use super::walk::{Instance, InstanceFormat};
use super::{row_group_bytes, ExportError};
use crate::ulog::format::{BasicType, FlatField, FormatRegistry};
use crate::ulog::table::{Cell, Codec, Column, FileFormat, Kind, TableError, TableWriter};
use std::fs::File;
use std::path::{Path, PathBuf};

/// How one column is read from a sample's payload.
#[derive(Debug, Clone, Copy)]
pub(super) enum Source {
    Basic {
        ty: BasicType,
        offset: usize,
    },
    /// A `char[len]` array at `offset`.
    Text {
        offset: usize,
        len: usize,
    },
}

/// The columns of a format: names and where their values are.
pub(super) fn topic_columns(fields: &[FlatField]) -> (Vec<Column>, Vec<Source>) {
    let mut columns = Vec::with_capacity(fields.len());
    let mut sources = Vec::with_capacity(fields.len());
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        match f.array {
            Some((n, base_len)) if f.ty == BasicType::Char && fields[i..].len() >= n as usize => {
                columns.push(Column::new(&f.name[..base_len], Kind::Text));
                sources.push(Source::Text {
                    offset: f.offset,
                    len: n as usize,
                });
                i += n as usize;
            }
            _ => {
                let kind = match f.ty {
                    BasicType::Int8 => Kind::Int8,
                    BasicType::UInt8 => Kind::UInt8,
                    BasicType::Int16 => Kind::Int16,
                    BasicType::UInt16 => Kind::UInt16,
                    BasicType::Int32 => Kind::Int32,
                    BasicType::UInt32 => Kind::UInt32,
                    BasicType::Int64 => Kind::Int64,
                    BasicType::UInt64 => Kind::UInt64,
                    BasicType::Float => Kind::Float,
                    BasicType::Double => Kind::Double,
                    BasicType::Bool => Kind::Bool,
                    BasicType::Char => Kind::Text,
                };
                columns.push(Column::new(&f.name, kind));
                sources.push(match f.ty {
                    BasicType::Char => Source::Text {
                        offset: f.offset,
                        len: 1,
                    },
                    ty => Source::Basic {
                        ty,
                        offset: f.offset,
                    },
                });
                i += 1;
            }
        }
    }
    (columns, sources)
}

#[inline]
pub(super) fn le<const N: usize>(p: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&p[at..at + N]);
    a
}

/// One topic instance being exported. Samples are kept as the raw rows they arrived as (one
/// copy per sample) and turned into columns a row group at a time, one tight loop per column.
pub(super) struct TopicTable {
    /// The format of the subscription that made the table: a later subscription of the same
    /// topic instance to a different format (the format redefined in between) is not written
    /// to it.
    pub(super) format: InstanceFormat,
    pub(super) sources: Vec<Source>,
    pub(super) table: Sink,
    /// Bytes of a row: the format's written size (the columns lie within it).
    pub(super) row_size: usize,
    pub(super) rows: Rows,
    /// Samples whose subscription used another format than the first (not written).
    pub(super) mismatched: u64,
    /// Bytes of rows that make a row group ([`row_group_bytes`]).
    pub(super) row_group_bytes: usize,
    /// Rows moved to the spill file, oldest first (they precede `rows`), and their bytes.
    pub(super) spilled: Vec<Segment>,
    pub(super) spilled_bytes: usize,
}

impl Instance for TopicTable {
    fn format(&self) -> &InstanceFormat {
        &self.format
    }

    fn skip_sample(&mut self) {
        self.mismatched += 1;
    }
}

/// A topic's file: created when its first row group is written (most topics of a short log are
/// written once, at the end, where the tables are finished in parallel).
pub(super) enum Sink {
    Pending {
        path: PathBuf,
        format: FileFormat,
        codec: Codec,
        columns: Vec<Column>,
    },
    Open(TableWriter),
}

impl Sink {
    pub(super) fn open(&mut self) -> Result<&mut TableWriter, TableError> {
        if let Sink::Pending {
            path,
            format,
            codec,
            columns,
        } = self
        {
            let table = TableWriter::create(path, *format, *codec, std::mem::take(columns))?;
            *self = Sink::Open(table);
        }
        match self {
            Sink::Open(table) => Ok(table),
            Sink::Pending { .. } => unreachable!("opened above"),
        }
    }
}

/// Moves the rows of the topic table with the most bytes in memory to the spill file; returns
/// how many bytes that freed.
pub(super) fn spill_largest(
    tables: &mut [TopicTable],
    spill: &mut Spill,
) -> Result<usize, ExportError> {
    let Some(t) = tables.iter_mut().max_by_key(|t| t.buffered_bytes()) else {
        return Ok(0);
    };
    let n = t.buffered_bytes();
    t.spill(spill)?;
    Ok(n)
}

/// Values of one column from raw rows: `read` gets each row from `offset` on.
pub(super) fn column<T>(rows: &Rows, offset: usize, out: &mut Vec<T>, read: impl Fn(&[u8]) -> T) {
    out.reserve(rows.count());
    for block in rows.blocks() {
        out.extend(block.map(|r| read(&r[offset..])));
    }
}

impl TopicTable {
    /// Appends one sample (its payload is at least the written size, checked by the decoder).
    #[inline]
    pub(super) fn push(&mut self, payload: &[u8]) {
        self.rows.push(&payload[..self.row_size]);
    }

    /// Bytes of rows held in memory.
    pub(super) fn buffered_bytes(&self) -> usize {
        self.rows.bytes
    }

    /// Bytes of rows not written yet, in memory or spilled.
    pub(super) fn pending_bytes(&self) -> usize {
        self.rows.bytes + self.spilled_bytes
    }

    /// Moves the rows held in memory to the spill file.
    pub(super) fn spill(&mut self, spill: &mut Spill) -> Result<(), ExportError> {
        let segment = spill.append(&self.rows)?;
        self.spilled.push(segment);
        self.spilled_bytes += segment.len;
        self.rows.clear();
        Ok(())
    }

    /// Turns the pending rows (spilled ones first) into columns and writes them as one row
    /// group, and frees them.
    pub(super) fn flush(&mut self, spill: Option<&File>) -> Result<(), TableError> {
        self.write_row_group(spill)?;
        self.rows.clear();
        Ok(())
    }

    /// Writes the pending rows (spilled ones first) as one row group; they stay in `rows`.
    pub(super) fn write_row_group(&mut self, spill: Option<&File>) -> Result<(), TableError> {
        if !self.spilled.is_empty() {
            let file = spill.expect("a table with spilled rows has a spill file");
            let bytes = read_segments(file, &self.spilled).map_err(|source| TableError::Io {
                path: PathBuf::from("the export's spill file (unlinked)"),
                source,
            })?;
            self.rows.bytes += bytes.len();
            self.rows.blocks.insert(0, bytes);
            self.spilled.clear();
            self.spilled_bytes = 0;
        }
        if self.rows.bytes == 0 {
            return Ok(());
        }
        let table = self.table.open()?;
        let rows = &self.rows;
        let n = rows.count();
        for (i, source) in self.sources.iter().enumerate() {
            match *source {
                Source::Basic { ty, offset: o } => match ty {
                    BasicType::Float => column(rows, o, table.f32s(i).expect("float"), |b| {
                        f32::from_le_bytes(le(b, 0))
                    }),
                    BasicType::Double => column(rows, o, table.f64s(i).expect("double"), |b| {
                        f64::from_le_bytes(le(b, 0))
                    }),
                    BasicType::UInt64 | BasicType::Int64 => {
                        column(rows, o, table.i64s(i).expect("int64"), |b| {
                            i64::from_le_bytes(le(b, 0))
                        })
                    }
                    BasicType::Bool => {
                        column(rows, o, table.bools(i).expect("bool"), |b| b[0] != 0)
                    }
                    BasicType::Int8 => column(rows, o, table.i32s(i).expect("int"), |b| {
                        i32::from(b[0] as i8)
                    }),
                    BasicType::UInt8 => {
                        column(rows, o, table.i32s(i).expect("int"), |b| i32::from(b[0]))
                    }
                    BasicType::Int16 => column(rows, o, table.i32s(i).expect("int"), |b| {
                        i32::from(i16::from_le_bytes(le(b, 0)))
                    }),
                    BasicType::UInt16 => column(rows, o, table.i32s(i).expect("int"), |b| {
                        i32::from(u16::from_le_bytes(le(b, 0)))
                    }),
                    BasicType::Int32 | BasicType::UInt32 => {
                        column(rows, o, table.i32s(i).expect("int"), |b| {
                            i32::from_le_bytes(le(b, 0))
                        })
                    }
                    BasicType::Char => unreachable!("char columns are text"),
                },
                Source::Text { offset, len } => {
                    for r in rows.blocks().flatten() {
                        let raw = &r[offset..offset + len];
                        let end = raw.iter().position(|b| *b == 0).unwrap_or(len);
                        let text = crate::ulog::value::text_lossy(&raw[..end]);
                        table.push(i, Cell::Text(text.as_bytes()));
                    }
                }
            }
        }
        table.add_rows(n);
        table.flush()
    }

    /// Writes the last row group and closes the file; returns the rows written, and the last
    /// rows themselves, so that the caller frees them on the thread that read them (see
    /// [`finish_all`]). Rows read back from the spill file are freed here: they were allocated
    /// here, and keeping them until every table is finished would break the memory bound.
    pub(super) fn finish(mut self, spill: Option<&File>) -> (Result<u64, TableError>, Rows) {
        let from_spill = !self.spilled.is_empty();
        let written = self
            .write_row_group(spill)
            .and_then(|()| self.table.open().map(|_| ()));
        if from_spill {
            self.rows.clear();
        }
        let rows = std::mem::replace(&mut self.rows, Rows::new(0));
        let result = written.and_then(|()| match self.table {
            Sink::Open(table) => table.finish(),
            Sink::Pending { .. } => unreachable!("opened above"),
        });
        (result, rows)
    }
}

pub(super) fn open_topic(
    dir: &Path,
    format: FileFormat,
    codec: Codec,
    key: &(String, u8),
    formats: &FormatRegistry,
    subscription: &crate::ulog::record::Subscription,
) -> Result<TopicTable, ExportError> {
    let instance_format = InstanceFormat::of(subscription, formats);
    let (columns, sources) = topic_columns(&instance_format.fields);
    let group_bytes = row_group_bytes(sources.len());
    let path = dir.join(format!("{}_{}.{}", key.0, key.1, format.extension()));
    Ok(TopicTable {
        format: instance_format,
        sources,
        table: Sink::Pending {
            path,
            format,
            codec,
            columns,
        },
        row_size: subscription.layout.written_size,
        rows: Rows::new(subscription.layout.written_size),
        mismatched: 0,
        row_group_bytes: group_bytes,
        spilled: Vec::new(),
        spilled_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ulog::format::{parse_format, FormatRegistry};

    #[test]
    fn char_arrays_become_one_text_column_and_names_follow_pyulog() {
        let mut reg = FormatRegistry::default();
        reg.insert(parse_format("inner:float[2] v;uint8_t[3] _padding0;").unwrap());
        reg.insert(
            parse_format(
                "t:uint64_t timestamp;char[4] name;inner[2] i;bool ok;uint8_t[7] _padding0;",
            )
            .unwrap(),
        );
        let fields = reg.flatten("t").unwrap();
        let (columns, _) = topic_columns(&fields);
        let names: Vec<_> = columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "timestamp",
                "name",
                "i[0].v[0]",
                "i[0].v[1]",
                "i[0]._padding0[0]",
                "i[0]._padding0[1]",
                "i[0]._padding0[2]",
                "i[1].v[0]",
                "i[1].v[1]",
                "i[1]._padding0[0]",
                "i[1]._padding0[1]",
                "i[1]._padding0[2]",
                "ok"
            ]
        );
        assert_eq!(columns[0].kind, Kind::UInt64);
        assert_eq!(columns[1].kind, Kind::Text);
        assert_eq!(columns[2].kind, Kind::Float);
        assert_eq!(columns[12].kind, Kind::Bool);
    }
}
