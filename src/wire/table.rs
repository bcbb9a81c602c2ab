//! The dialect's field table: every message of ardupilotmega (with common and the rest of its
//! includes), each field in definition order with its type, array length and payload offset.
//! Generated at build time by `build.rs` from the XML definitions inside the pinned `mavlink`
//! crate; the unit tests prove it against the crate (CRC_EXTRA and encoded lengths of every
//! message).

/// A field's base type as the wire carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    U8,
    I8,
    Char,
    U16,
    I16,
    U32,
    I32,
    F32,
    U64,
    I64,
    F64,
}

impl FieldType {
    /// Size in bytes of one element.
    pub const fn size(self) -> usize {
        match self {
            FieldType::U8 | FieldType::I8 | FieldType::Char => 1,
            FieldType::U16 | FieldType::I16 => 2,
            FieldType::U32 | FieldType::I32 | FieldType::F32 => 4,
            FieldType::U64 | FieldType::I64 | FieldType::F64 => 8,
        }
    }

    /// The type's name in the MAVLink XML (as CRC_EXTRA hashes it).
    pub const fn xml_name(self) -> &'static str {
        match self {
            FieldType::U8 => "uint8_t",
            FieldType::I8 => "int8_t",
            FieldType::Char => "char",
            FieldType::U16 => "uint16_t",
            FieldType::I16 => "int16_t",
            FieldType::U32 => "uint32_t",
            FieldType::I32 => "int32_t",
            FieldType::F32 => "float",
            FieldType::U64 => "uint64_t",
            FieldType::I64 => "int64_t",
            FieldType::F64 => "double",
        }
    }
}

/// One field of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDef {
    /// The MAVLink field name (`type` stays `type`).
    pub name: &'static str,
    /// `"name":`, ready to write into a JSON object.
    pub key: &'static str,
    pub ty: FieldType,
    /// Array length; 0 for a scalar.
    pub count: u8,
    /// Byte offset in the (zero-extended) payload.
    pub offset: u8,
    /// Position in wire order (base fields by type size, then extensions).
    pub wire_rank: u8,
    /// A MAVLink 2 extension field (after `<extensions/>`).
    pub extension: bool,
    /// The enum the definition names for this field, if any (informative: values are written
    /// as the integers on the wire).
    pub enum_name: Option<&'static str>,
}

impl FieldDef {
    /// Bytes the field occupies in the payload.
    pub const fn wire_len(&self) -> usize {
        self.ty.size()
            * if self.count == 0 {
                1
            } else {
                self.count as usize
            }
    }
}

/// One message of the dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageDef {
    pub id: u32,
    pub name: &'static str,
    /// Payload length without extensions (a MAVLink 1 payload).
    pub base_len: u8,
    /// Payload length with extensions (a full MAVLink 2 payload before trailing-zero cut).
    pub len: u8,
    /// Fields in definition (XML) order.
    pub fields: &'static [FieldDef],
}

include!(concat!(env!("OUT_DIR"), "/mavlink_table.rs"));

/// Every message, sorted by id.
pub fn messages() -> &'static [MessageDef] {
    MESSAGES
}

/// The message with this id, if the dialect defines it.
pub fn lookup(msgid: u32) -> Option<&'static MessageDef> {
    if msgid < 256 {
        return MESSAGES.get(LOW_IDS[msgid as usize] as usize);
    }
    MESSAGES
        .binary_search_by_key(&msgid, |m| m.id)
        .ok()
        .map(|i| &MESSAGES[i])
}

/// MAVLink's CRC-16/MCRF4XX step (the X.25 accumulate of the MAVLink C library).
fn crc_accumulate(crc: u16, byte: u8) -> u16 {
    let mut tmp = byte ^ (crc & 0xFF) as u8;
    tmp ^= tmp << 4;
    let tmp = tmp as u16;
    (crc >> 8) ^ (tmp << 8) ^ (tmp << 3) ^ (tmp >> 4)
}

/// CRC_EXTRA as MAVLink defines it, computed from the table alone: the message name, then each
/// base field in wire order (type name, field name, and array length for arrays).
pub fn crc_extra(message: &MessageDef) -> u8 {
    let mut crc = 0xFFFFu16;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            crc = crc_accumulate(crc, b);
        }
    };
    feed(message.name.as_bytes());
    feed(b" ");
    let mut base: Vec<&FieldDef> = message.fields.iter().filter(|f| !f.extension).collect();
    base.sort_by_key(|f| f.wire_rank);
    for f in base {
        feed(f.ty.xml_name().as_bytes());
        feed(b" ");
        feed(f.name.as_bytes());
        feed(b" ");
        if f.count > 0 {
            feed(&[f.count]);
        }
    }
    ((crc & 0xFF) ^ (crc >> 8)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use mavlink::dialects::ardupilotmega::MavMessage;
    use mavlink::{MavlinkVersion, Message};

    #[test]
    fn crc_extra_from_the_table_matches_the_crate() {
        let mut checked = 0;
        for m in messages() {
            assert_eq!(
                crc_extra(m),
                MavMessage::extra_crc(m.id),
                "CRC_EXTRA of {} ({})",
                m.name,
                m.id
            );
            checked += 1;
        }
        assert!(checked > 250, "only {checked} messages");
    }

    #[test]
    fn the_table_has_exactly_the_crates_messages() {
        let mut crate_ids: Vec<(u32, &str)> = MavMessage::all_messages()
            .iter()
            .map(|&(name, id)| (id, name))
            .collect();
        crate_ids.sort();
        let ours: Vec<(u32, &str)> = messages().iter().map(|m| (m.id, m.name)).collect();
        assert_eq!(ours, crate_ids);
    }

    #[test]
    fn lengths_and_offsets_match_the_crates_encoder() {
        for m in messages() {
            let message = MavMessage::default_message_from_id(m.id).expect("default message");
            let mut buf = [0u8; 255];
            assert_eq!(
                message.ser(MavlinkVersion::V1, &mut buf),
                m.base_len as usize,
                "{} v1 length",
                m.name
            );
            // Fields tile the payload: no gaps, no overlaps.
            let mut spans: Vec<(usize, usize)> = m
                .fields
                .iter()
                .map(|f| (f.offset as usize, f.wire_len()))
                .collect();
            spans.sort();
            let end = spans.iter().fold(0, |at, &(offset, len)| {
                assert_eq!(offset, at, "{}: fields do not tile the payload", m.name);
                at + len
            });
            assert_eq!(end, m.len as usize, "{}", m.name);
        }
    }

    #[test]
    fn known_layouts() {
        let hb = lookup(0).unwrap();
        let names: Vec<&str> = hb.fields.iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "type",
                "autopilot",
                "base_mode",
                "custom_mode",
                "system_status",
                "mavlink_version"
            ]
        );
        assert_eq!(hb.fields[3].offset, 0);
        assert_eq!(hb.fields[0].offset, 4);
        assert_eq!(hb.fields[0].enum_name, Some("MAV_TYPE"));
        assert_eq!(hb.fields[0].key, r#""type":"#);
        let st = lookup(253).unwrap();
        assert_eq!((st.base_len, st.len), (51, 54));
        assert!(st.fields[2].extension);
        assert_eq!(lookup(3), None);
        assert_eq!(lookup(255), None);
        for m in messages() {
            assert_eq!(lookup(m.id).map(|l| l.id), Some(m.id));
        }
    }
}
