//! Logs derived from real ones, for tests: every message of a log copied through the project's
//! writer, with the samples a test chooses changed field by field (a fault written in). Only
//! with the `testing` feature.

use super::format::{BasicType, FlatField};
use super::reader::SliceReader;
use super::record::Record;
use super::writer::UlogWriter;

/// One sample on its way through, with its fields by name.
pub struct SampleEdit<'a> {
    pub topic: &'a str,
    pub multi_id: u8,
    pub timestamp: Option<u64>,
    fields: &'a [FlatField],
    payload: &'a mut [u8],
}

impl SampleEdit<'_> {
    fn field(&self, name: &str) -> Option<&FlatField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// A field's value as a number.
    pub fn get(&self, name: &str) -> Option<f64> {
        let f = self.field(name)?;
        let b = self.payload.get(f.offset..f.offset + f.ty.size())?;
        crate::ulog::value::decode_basic(f.ty, b).as_f64()
    }

    /// Writes `value` into a field, in the field's own type. Panics if the field is not there:
    /// a test that writes a fault into a field the log lacks is wrong.
    pub fn set(&mut self, name: &str, value: f64) {
        let f = self
            .field(name)
            .unwrap_or_else(|| panic!("{}: no field {name}", self.topic))
            .clone();
        let bytes: Vec<u8> = match f.ty {
            BasicType::Int8 => (value as i8).to_le_bytes().to_vec(),
            BasicType::UInt8 | BasicType::Char => (value as u8).to_le_bytes().to_vec(),
            BasicType::Bool => vec![u8::from(value != 0.0)],
            BasicType::Int16 => (value as i16).to_le_bytes().to_vec(),
            BasicType::UInt16 => (value as u16).to_le_bytes().to_vec(),
            BasicType::Int32 => (value as i32).to_le_bytes().to_vec(),
            BasicType::UInt32 => (value as u32).to_le_bytes().to_vec(),
            BasicType::Int64 => (value as i64).to_le_bytes().to_vec(),
            BasicType::UInt64 => (value as u64).to_le_bytes().to_vec(),
            BasicType::Float => (value as f32).to_le_bytes().to_vec(),
            BasicType::Double => value.to_le_bytes().to_vec(),
        };
        self.payload[f.offset..f.offset + bytes.len()].copy_from_slice(&bytes);
    }
}

/// Copies the log in `bytes` message by message, letting `edit` change each sample. The file
/// header, every definition and every other message are written as they were.
pub fn rewrite(bytes: &[u8], mut edit: impl FnMut(&mut SampleEdit<'_>)) -> Vec<u8> {
    let mut reader = SliceReader::new(bytes);
    let mut writer: Option<UlogWriter<Vec<u8>>> = None;
    let mut fields: Vec<Option<Vec<FlatField>>> = Vec::new();
    while let Some(item) = reader.next_record() {
        let located = item.expect("rewrite reads complete logs");
        match &located.record {
            Record::FileHeader(h) => {
                writer = Some(
                    UlogWriter::with_version(Vec::new(), h.version, h.timestamp)
                        .expect("writing to memory"),
                );
                continue;
            }
            Record::Subscription {
                subscription,
                formats,
            } => {
                let id = usize::from(subscription.msg_id);
                if fields.len() <= id {
                    fields.resize(id + 1, None);
                }
                fields[id] = formats.flatten(&subscription.layout.format_name).ok();
            }
            _ => {}
        }
        let w = writer.as_mut().expect("the file header comes first");
        let mut payload = located.bytes[3..].to_vec();
        if let Record::Data(sample) = &located.record {
            if let Some(Some(f)) = fields.get(usize::from(sample.subscription.msg_id)) {
                let mut e = SampleEdit {
                    topic: &sample.subscription.topic,
                    multi_id: sample.subscription.multi_id,
                    timestamp: sample.timestamp,
                    fields: f,
                    payload: &mut payload[2..],
                };
                edit(&mut e);
            }
        }
        w.raw(located.msg_type, &payload)
            .expect("writing to memory");
    }
    writer.expect("a log has a header").into_inner()
}
