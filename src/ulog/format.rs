//! Message formats: parsing `F` messages (`name:type field;type[n] field;...`), the basic field
//! types, and the registry that turns a subscribed format into the sizes a `D` message must have.
//!
//! Layouts are computed from the formats on demand and never flattened into per-field tables
//! while reading, so a small `F` message that nests a large array cannot make the reader allocate
//! in proportion to the flattened field count.

use std::collections::HashMap;
use std::sync::Arc;

/// Deepest nesting of formats this reader follows (PX4 nests two or three levels).
const MAX_NESTING: usize = 16;
/// Largest payload a `D` message can carry: `msg_size` is a `uint16` and includes the `msg_id`.
pub const MAX_SAMPLE_SIZE: u64 = u16::MAX as u64 - 2;

/// The fixed-size types a ULog field can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BasicType {
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Float,
    Double,
    Bool,
    Char,
}

impl BasicType {
    /// The type for a C type name as ULog writes it (`uint64_t`, `float`, ...).
    pub fn parse(name: &str) -> Option<BasicType> {
        Some(match name {
            "int8_t" => BasicType::Int8,
            "uint8_t" => BasicType::UInt8,
            "int16_t" => BasicType::Int16,
            "uint16_t" => BasicType::UInt16,
            "int32_t" => BasicType::Int32,
            "uint32_t" => BasicType::UInt32,
            "int64_t" => BasicType::Int64,
            "uint64_t" => BasicType::UInt64,
            "float" => BasicType::Float,
            "double" => BasicType::Double,
            "bool" => BasicType::Bool,
            "char" => BasicType::Char,
            _ => return None,
        })
    }

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            BasicType::Int8 | BasicType::UInt8 | BasicType::Bool | BasicType::Char => 1,
            BasicType::Int16 | BasicType::UInt16 => 2,
            BasicType::Int32 | BasicType::UInt32 | BasicType::Float => 4,
            BasicType::Int64 | BasicType::UInt64 | BasicType::Double => 8,
        }
    }

    /// The C name, as in the format text.
    pub fn name(self) -> &'static str {
        match self {
            BasicType::Int8 => "int8_t",
            BasicType::UInt8 => "uint8_t",
            BasicType::Int16 => "int16_t",
            BasicType::UInt16 => "uint16_t",
            BasicType::Int32 => "int32_t",
            BasicType::UInt32 => "uint32_t",
            BasicType::Int64 => "int64_t",
            BasicType::UInt64 => "uint64_t",
            BasicType::Float => "float",
            BasicType::Double => "double",
            BasicType::Bool => "bool",
            BasicType::Char => "char",
        }
    }
}

/// A field's type: a basic type or another format by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    Basic(BasicType),
    Nested(String),
}

/// One field of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDef {
    pub ty: FieldType,
    /// `Some(n)` for `type[n] name` (named `name[0]`.. even when n is 1, as pyulog 1.3 does).
    pub array_len: Option<u32>,
    pub name: String,
}

impl FieldDef {
    /// Number of elements the field holds.
    pub fn count(&self) -> u64 {
        self.array_len.map_or(1, u64::from)
    }

    /// Padding the logger inserts for alignment (`_padding0`, ...).
    pub fn is_padding(&self) -> bool {
        self.name.starts_with("_padding")
    }
}

/// One parsed `F` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    pub name: String,
    pub fields: Vec<FieldDef>,
}

/// Why a format text could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("format text has no ':' between the name and the fields")]
    NoColon,
    #[error("format has an empty name")]
    EmptyName,
    #[error("field `{0}` is not `type name`")]
    BadField(String),
    #[error("field `{0}` has a bad array length")]
    BadArrayLen(String),
}

/// Parses the text of an `F` message.
pub fn parse_format(text: &str) -> Result<Format, FormatError> {
    let (name, fields_text) = text.split_once(':').ok_or(FormatError::NoColon)?;
    if name.is_empty() {
        return Err(FormatError::EmptyName);
    }
    let mut fields = Vec::new();
    for field in fields_text.split(';').filter(|f| !f.is_empty()) {
        fields.push(parse_field(field)?);
    }
    Ok(Format {
        name: name.to_string(),
        fields,
    })
}

fn parse_field(text: &str) -> Result<FieldDef, FormatError> {
    let (ty, name) = text
        .split_once(' ')
        .filter(|(t, n)| !t.is_empty() && !n.is_empty())
        .ok_or_else(|| FormatError::BadField(text.to_string()))?;
    let (type_name, array_len) = match ty.split_once('[') {
        None => (ty, None),
        Some((base, rest)) => {
            let len = rest
                .strip_suffix(']')
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(|| FormatError::BadArrayLen(text.to_string()))?;
            (base, Some(len))
        }
    };
    let ty = match BasicType::parse(type_name) {
        Some(basic) => FieldType::Basic(basic),
        None => FieldType::Nested(type_name.to_string()),
    };
    Ok(FieldDef {
        ty,
        array_len,
        name: name.to_string(),
    })
}

/// What a subscription needs to frame and timestamp its `D` messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicLayout {
    pub format_name: String,
    /// Size of the whole format, trailing padding included.
    pub full_size: usize,
    /// Size a `D` message actually carries: the logger leaves trailing top-level `_padding` out.
    pub written_size: usize,
    /// Offset of the top-level `uint64_t timestamp` field, if the format has one.
    pub timestamp_offset: Option<usize>,
}

/// Why a subscribed format has no usable layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("no format named `{0}` was defined")]
    Missing(String),
    #[error("formats nest deeper than {MAX_NESTING} levels at `{0}` (a cycle?)")]
    TooDeep(String),
    #[error("format `{0}` is larger than a data message can carry")]
    TooLarge(String),
}

/// One flattened field, as PX4 tools name them: `esc[0].esc_rpm`, `q[3]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatField {
    pub name: String,
    pub ty: BasicType,
    pub offset: usize,
    /// For an element of an array of basic values: the array's length, and the length of the
    /// name without `[i]` (`&name[..base_len]` is the array's name), for grouping in displays.
    pub array: Option<(u32, usize)>,
}

/// All formats defined so far.
#[derive(Debug, Default, Clone)]
pub struct FormatRegistry {
    formats: HashMap<String, Arc<Format>>,
    /// Sizes of formats computed so far, kept across subscriptions so that many subscriptions
    /// to formats sharing a large nested type cost one walk of it, not one each.
    sizes: HashMap<String, u64>,
}

impl FormatRegistry {
    /// Adds (or replaces) a format.
    pub fn insert(&mut self, format: Format) {
        // A new name cannot change a size already known (a size is only known once every
        // format it uses is); redefining a name can.
        if self
            .formats
            .insert(format.name.clone(), Arc::new(format))
            .is_some()
        {
            self.sizes.clear();
        }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Format>> {
        self.formats.get(name)
    }

    pub fn len(&self) -> usize {
        self.formats.len()
    }

    pub fn is_empty(&self) -> bool {
        self.formats.is_empty()
    }

    /// The sizes and timestamp position for a subscription to `name`.
    pub fn layout(&self, name: &str) -> Result<TopicLayout, LayoutError> {
        self.layout_with(name, &mut HashMap::new())
    }

    /// [`Self::layout`], remembering the sizes it computes for the next call.
    pub fn layout_cached(&mut self, name: &str) -> Result<TopicLayout, LayoutError> {
        let mut memo = std::mem::take(&mut self.sizes);
        let result = self.layout_with(name, &mut memo);
        self.sizes = memo;
        result
    }

    fn layout_with(
        &self,
        name: &str,
        memo: &mut HashMap<String, u64>,
    ) -> Result<TopicLayout, LayoutError> {
        let format = self
            .get(name)
            .ok_or_else(|| LayoutError::Missing(name.to_string()))?;
        let mut full: u64 = 0;
        let mut written: u64 = 0;
        let mut timestamp_offset = None;
        for field in &format.fields {
            let size = self.field_size(field, 1, memo)?;
            if field.name == "timestamp" && field.ty == FieldType::Basic(BasicType::UInt64) {
                timestamp_offset = Some(full as usize);
            }
            full = full.saturating_add(size);
            if !field.is_padding() {
                written = full;
            }
            if full > MAX_SAMPLE_SIZE {
                return Err(LayoutError::TooLarge(name.to_string()));
            }
        }
        Ok(TopicLayout {
            format_name: name.to_string(),
            full_size: full as usize,
            written_size: written as usize,
            timestamp_offset,
        })
    }

    fn field_size(
        &self,
        field: &FieldDef,
        depth: usize,
        memo: &mut HashMap<String, u64>,
    ) -> Result<u64, LayoutError> {
        let element = match &field.ty {
            FieldType::Basic(b) => b.size() as u64,
            FieldType::Nested(name) => self.format_size(name, depth + 1, memo)?,
        };
        // An array of empty structs has no size to bound its element count, and flattening it
        // would loop that many times: refuse it.
        if element == 0 && field.count() > 1 {
            return Err(LayoutError::TooLarge(field.name.clone()));
        }
        Ok(element.saturating_mul(field.count()))
    }

    fn format_size(
        &self,
        name: &str,
        depth: usize,
        memo: &mut HashMap<String, u64>,
    ) -> Result<u64, LayoutError> {
        if let Some(size) = memo.get(name) {
            return Ok(*size);
        }
        if depth > MAX_NESTING {
            return Err(LayoutError::TooDeep(name.to_string()));
        }
        let format = self
            .get(name)
            .ok_or_else(|| LayoutError::Missing(name.to_string()))?;
        let mut total: u64 = 0;
        for field in &format.fields {
            total = total.saturating_add(self.field_size(field, depth, memo)?);
            if total > MAX_SAMPLE_SIZE {
                return Err(LayoutError::TooLarge(name.to_string()));
            }
        }
        memo.insert(name.to_string(), total);
        Ok(total)
    }

    /// The flattened fields of a topic, nested padding included and trailing top-level padding
    /// left out (it is not written). Call only for a format whose `layout` succeeded: its size is
    /// then bounded by a data message, so the list is too.
    pub fn flatten(&self, name: &str) -> Result<Vec<FlatField>, LayoutError> {
        let layout = self.layout(name)?;
        let mut out = Vec::new();
        let mut offset = 0;
        self.flatten_into(name, "", 1, &mut offset, &mut out)?;
        out.retain(|f| f.offset < layout.written_size);
        Ok(out)
    }

    fn flatten_into(
        &self,
        name: &str,
        prefix: &str,
        depth: usize,
        offset: &mut usize,
        out: &mut Vec<FlatField>,
    ) -> Result<(), LayoutError> {
        if depth > MAX_NESTING {
            return Err(LayoutError::TooDeep(name.to_string()));
        }
        let format = self
            .get(name)
            .ok_or_else(|| LayoutError::Missing(name.to_string()))?
            .clone();
        // One reusable name buffer: only the finished leaf names are allocated.
        let mut name_buf = String::with_capacity(prefix.len() + 32);
        for field in &format.fields {
            name_buf.clear();
            name_buf.push_str(prefix);
            name_buf.push_str(&field.name);
            let base_len = name_buf.len();
            for i in 0..field.count() {
                name_buf.truncate(base_len);
                if field.array_len.is_some() {
                    use std::fmt::Write;
                    let _ = write!(name_buf, "[{i}]");
                }
                match &field.ty {
                    FieldType::Basic(b) => {
                        out.push(FlatField {
                            name: name_buf.clone(),
                            ty: *b,
                            offset: *offset,
                            array: field.array_len.map(|n| (n, base_len)),
                        });
                        *offset += b.size();
                    }
                    FieldType::Nested(inner) => {
                        name_buf.push('.');
                        self.flatten_into(inner, &name_buf, depth + 1, offset, out)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_arrays_and_nested() {
        let f = parse_format("esc_status:uint64_t timestamp;esc_report[8] esc;char[4] n;").unwrap();
        assert_eq!(f.name, "esc_status");
        assert_eq!(f.fields.len(), 3);
        assert_eq!(f.fields[1].ty, FieldType::Nested("esc_report".into()));
        assert_eq!(f.fields[1].array_len, Some(8));
        assert_eq!(f.fields[2].ty, FieldType::Basic(BasicType::Char));
        assert!(parse_format("nocolon").is_err());
        assert!(parse_format("a:float[x] y;").is_err());
        assert!(parse_format("a:float;").is_err());
    }

    #[test]
    fn trailing_padding_is_not_written_but_nested_padding_is() {
        let mut reg = FormatRegistry::default();
        reg.insert(parse_format("inner:uint32_t v;uint8_t[4] _padding0;").unwrap());
        reg.insert(
            parse_format("outer:uint64_t timestamp;inner[2] i;uint8_t x;uint8_t[7] _padding0;")
                .unwrap(),
        );
        let l = reg.layout("outer").unwrap();
        assert_eq!(l.full_size, 8 + 16 + 1 + 7);
        assert_eq!(l.written_size, 8 + 16 + 1);
        assert_eq!(l.timestamp_offset, Some(0));
        let names: Vec<_> = reg
            .flatten("outer")
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names[1], "i[0].v");
        assert_eq!(names[2], "i[0]._padding0[0]");
        assert_eq!(names.last().unwrap(), "x");
    }

    #[test]
    fn cycles_and_huge_formats_are_refused() {
        let mut reg = FormatRegistry::default();
        reg.insert(parse_format("a:a x;").unwrap());
        assert!(matches!(reg.layout("a"), Err(LayoutError::TooDeep(_))));
        reg.insert(parse_format("b:double[100000] x;").unwrap());
        assert!(matches!(reg.layout("b"), Err(LayoutError::TooLarge(_))));
        assert!(matches!(reg.layout("zz"), Err(LayoutError::Missing(_))));
    }
}
