//! The dialect tables the scanner checks frames against: message name, CRC_EXTRA and longest
//! payload by id, taken from the pinned `mavlink` crate's ardupilotmega dialect (which includes
//! common).

use mavlink::dialects::ardupilotmega::MavMessage;
use mavlink::Message;
use std::sync::OnceLock;

/// What the scanner needs to know about one message id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageInfo {
    pub id: u32,
    pub name: &'static str,
    pub crc_extra: u8,
    /// The payload length with every field, extensions included: no valid frame of this
    /// message is longer (MAVLink 2 may cut trailing zeros, never add bytes).
    pub max_len: u8,
}

fn table() -> &'static [MessageInfo] {
    static TABLE: OnceLock<Vec<MessageInfo>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut infos: Vec<MessageInfo> = MavMessage::all_messages()
            .iter()
            .map(|&(name, id)| MessageInfo {
                id,
                name,
                crc_extra: MavMessage::extra_crc(id),
                // From the table generated out of the dialect's XML (extensions included).
                max_len: super::table::lookup(id).map_or(255, |m| m.len),
            })
            .collect();
        infos.sort_by_key(|m| m.id);
        infos
    })
}

/// The message with this id, or `None` when the dialect does not define it (its CRC cannot be checked).
pub fn lookup(msgid: u32) -> Option<MessageInfo> {
    let table = table();
    table
        .binary_search_by_key(&msgid, |m| m.id)
        .ok()
        .map(|i| table[i])
}

/// The id of a message name, for config validation (`fields = ["HEARTBEAT", ...]`).
pub fn id_of(name: &str) -> Option<u32> {
    table().iter().find(|m| m.name == name).map(|m| m.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest payload the table gives agrees with what the `mavlink` crate writes: it
    /// writes every field into the buffer for MAVLink 2 before it cuts trailing zeros from the
    /// length it returns, so the written span shows where two differently filled buffers agree.
    #[test]
    fn the_longest_payloads_agree_with_the_crate_for_every_message() {
        use mavlink::MavlinkVersion;
        for &(name, id) in MavMessage::all_messages() {
            let message = MavMessage::default_message_from_id(id).unwrap();
            let (mut a, mut b) = ([0xAAu8; 255], [0x55u8; 255]);
            message.ser(MavlinkVersion::V2, &mut a);
            message.ser(MavlinkVersion::V2, &mut b);
            let written = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            assert_eq!(lookup(id).unwrap().max_len as usize, written, "{name}");
        }
    }

    #[test]
    fn knows_common_and_ardupilot_messages() {
        let hb = lookup(0).expect("HEARTBEAT");
        assert_eq!((hb.name, hb.crc_extra), ("HEARTBEAT", 50));
        let st = lookup(2).expect("SYSTEM_TIME");
        assert_eq!((st.name, st.crc_extra), ("SYSTEM_TIME", 137));
        assert_eq!(lookup(150).map(|m| m.name), Some("SENSOR_OFFSETS"));
        assert_eq!(lookup(3), None);
        assert_eq!(lookup(42424), None);
        assert_eq!(id_of("STATUSTEXT"), Some(253));
        // Longest payloads, extensions included (SYS_STATUS has 12 extension bytes).
        assert_eq!((hb.max_len, st.max_len), (9, 12));
        assert_eq!(lookup(1).map(|m| m.max_len), Some(43));
        assert_eq!(lookup(131).map(|m| m.max_len), Some(255));
    }
}
