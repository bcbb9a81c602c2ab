//! The dialect tables the scanner checks frames against: message name and CRC_EXTRA by id,
//! taken from the pinned `mavlink` crate's ardupilotmega dialect (which includes common).

use mavlink::dialects::ardupilotmega::MavMessage;
use mavlink::Message;
use std::sync::OnceLock;

/// What the scanner needs to know about one message id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageInfo {
    pub id: u32,
    pub name: &'static str,
    pub crc_extra: u8,
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
    }
}
