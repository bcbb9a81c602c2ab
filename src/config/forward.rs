//! `[[forward]]`: read-only outputs for ground stations. Each gets a copy of every valid frame,
//! byte for byte as received, or of those its filters take (`links`, `sysids`, `msgs`); over
//! UDP (a datagram per frame to `udp = "host:port"`) or to the peers of a TCP listener
//! (`tcp_listen`, with an allow-list and a cap on peers). Validated once; the filter's match is
//! here too, pure, for the daemon's fan-out to apply to every frame.

use super::link::{parse_allow, parse_bind, HostPort, LinkConfig, DEFAULT_MAX_PEERS};
use super::raw::{RawForward, RawMessage};
use super::{as_kib, ranges, ConfigError};
use crate::link::LinkId;
use ipnet::IpNet;
use serde::Serialize;
use std::net::SocketAddr;

/// Where a forward's frames go.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ForwardOutput {
    /// Each frame as one datagram to this address (resolved when the output starts).
    Udp {
        #[serde(rename = "udp")]
        to: HostPort,
    },
    /// The frames as a byte stream to every connected peer.
    TcpListen {
        #[serde(rename = "tcp_listen")]
        bind: SocketAddr,
        allow: Vec<IpNet>,
        max_peers: usize,
    },
}

/// Which frames a forward takes: every one, unless a filter is given; the filters given must
/// all match.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ForwardFilter {
    /// Link names as written; `None`: every link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<String>>,
    #[serde(skip)]
    link_ids: Option<Vec<LinkId>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sysids: Option<Vec<u8>>,
    /// Message names; `None`: every message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msgs: Option<Vec<&'static str>>,
    /// The messages' ids, sorted.
    #[serde(skip)]
    msgids: Option<Vec<u32>>,
}

impl ForwardFilter {
    /// Whether any frame of `link` can pass (the fan-out skips the link's frames otherwise).
    pub fn takes_link(&self, link: LinkId) -> bool {
        self.link_ids.as_ref().is_none_or(|ids| ids.contains(&link))
    }

    /// Whether a frame from `sysid` of message `msgid` passes (its link already taken).
    pub fn takes(&self, sysid: u8, msgid: u32) -> bool {
        self.sysids.as_ref().is_none_or(|s| s.contains(&sysid))
            && self
                .msgids
                .as_ref()
                .is_none_or(|ids| ids.binary_search(&msgid).is_ok())
    }

    /// Whether every frame of a taken link passes (nothing to check frame by frame).
    pub fn takes_every_frame(&self) -> bool {
        self.sysids.is_none() && self.msgids.is_none()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ForwardSettings {
    /// Names the output in logs, `/status` and `/metrics` (default: its address).
    pub name: String,
    #[serde(flatten)]
    pub output: ForwardOutput,
    #[serde(flatten)]
    pub filter: ForwardFilter,
    /// Bytes of frames that may wait for the output (and for each TCP peer); past it frames
    /// are dropped for this output only, and counted.
    #[serde(rename = "queue_kb", serialize_with = "as_kib")]
    pub queue_bytes: u64,
}

/// What waits for a forward by default: 4 MiB (about 130,000 frames of the corpus's average).
const DEFAULT_QUEUE_KB: u64 = 4096;

pub(super) fn parse_forwards(
    raw: &[RawForward],
    links: &[LinkConfig],
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<ForwardSettings>, ConfigError> {
    let mut forwards: Vec<ForwardSettings> = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let key = |k: &str| format!("forward[{i}].{k}");
        let in_range = |k: &str, value: u64| {
            ranges::check(&format!("forward.{k}"), value as f64).map_err(|r| invalid(&key(k), r))
        };
        let output = match (&f.udp, &f.tcp_listen) {
            (Some(udp), None) => {
                if !f.allow.is_empty() || f.max_peers.is_some() {
                    let k = if f.allow.is_empty() {
                        "max_peers"
                    } else {
                        "allow"
                    };
                    return Err(invalid(
                        &key(k),
                        format!(
                            "{k} is for a `tcp_listen` forward; a `udp` one sends to one address"
                        ),
                    ));
                }
                let to = HostPort::parse(udp).ok_or_else(|| {
                    invalid(
                        &key("udp"),
                        format!("`{udp}` is not a host:port (e.g. \"10.0.0.20:14550\")"),
                    )
                })?;
                ForwardOutput::Udp { to }
            }
            (None, Some(listen)) => {
                let bind = parse_bind(listen).ok_or_else(|| {
                    invalid(
                        &key("tcp_listen"),
                        format!("`{listen}` is not an address:port (e.g. \"0.0.0.0:5770\")"),
                    )
                })?;
                let max_peers = f.max_peers.unwrap_or(DEFAULT_MAX_PEERS);
                in_range("max_peers", max_peers)?;
                ForwardOutput::TcpListen {
                    bind,
                    allow: parse_allow(&f.allow, &key("allow"), invalid)?,
                    max_peers: max_peers as usize,
                }
            }
            (Some(_), Some(_)) => {
                return Err(invalid(
                    &key("tcp_listen"),
                    "a forward is either udp or tcp_listen, not both".into(),
                ))
            }
            (None, None) => {
                return Err(invalid(
                    &key("udp"),
                    "a forward needs `udp = \"host:port\"` or `tcp_listen = \"addr:port\"`".into(),
                ))
            }
        };
        let name = match &f.name {
            Some(name) => {
                if name.is_empty()
                    || !name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                {
                    return Err(invalid(
                        &key("name"),
                        format!("`{name}`: use letters, digits, '-', '_' or '.'"),
                    ));
                }
                name.clone()
            }
            None => match &output {
                ForwardOutput::Udp { to } => to.to_string(),
                ForwardOutput::TcpListen { bind, .. } => bind.to_string(),
            },
        };
        if forwards.iter().any(|other| other.name == name) {
            return Err(invalid(
                &key("name"),
                format!("`{name}` names two forwards (give each its own `name`)"),
            ));
        }
        let filter = parse_filter(f, links, &key, invalid)?;
        let queue_kb = f.queue_kb.unwrap_or(DEFAULT_QUEUE_KB);
        in_range("queue_kb", queue_kb)?;
        forwards.push(ForwardSettings {
            name,
            output,
            filter,
            queue_bytes: queue_kb * 1024,
        });
    }
    Ok(forwards)
}

fn parse_filter(
    f: &RawForward,
    links: &[LinkConfig],
    key: &dyn Fn(&str) -> String,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<ForwardFilter, ConfigError> {
    let mut filter = ForwardFilter::default();
    if let Some(names) = &f.links {
        let mut ids = Vec::new();
        for name in names {
            let index = links.iter().position(|l| &l.name == name).ok_or_else(|| {
                invalid(
                    &key("links"),
                    format!("`{name}` is not the name of a [[link]]"),
                )
            })?;
            ids.extend(LinkId::new(index));
        }
        filter.links = Some(names.clone());
        filter.link_ids = Some(ids);
    }
    if let Some(sysids) = &f.sysids {
        let mut ids = Vec::new();
        for &s in sysids {
            let id = u8::try_from(s).map_err(|_| {
                invalid(&key("sysids"), format!("{s} is not a system id (0 to 255)"))
            })?;
            ids.push(id);
        }
        filter.sysids = Some(ids);
    }
    if let Some(msgs) = &f.msgs {
        let (mut names, mut ids) = (Vec::new(), Vec::new());
        for m in msgs {
            let info = match m {
                RawMessage::Id(id) => u32::try_from(*id)
                    .ok()
                    .and_then(crate::wire::dialect::lookup),
                RawMessage::Name(name) => {
                    crate::wire::dialect::id_of(name).and_then(crate::wire::dialect::lookup)
                }
            };
            let info = info.ok_or_else(|| {
                let m = match m {
                    RawMessage::Id(id) => id.to_string(),
                    RawMessage::Name(name) => format!("`{name}`"),
                };
                invalid(
                    &key("msgs"),
                    format!("{m} is not a message of the dialect (ardupilotmega with common)"),
                )
            })?;
            names.push(info.name);
            ids.push(info.id);
        }
        ids.sort_unstable();
        ids.dedup();
        filter.msgs = Some(names);
        filter.msgids = Some(ids);
    }
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{parse, refusal};
    use super::*;

    const LINKS: &str = "[[link]]\nname = \"radio1\"\nudp = \"0.0.0.0:1\"\n[[link]]\nname = \"usb0\"\nserial = \"/dev/ttyS9\"\n";

    #[test]
    fn a_forward_takes_what_its_filters_name_and_every_frame_without_them() {
        let c = parse(&format!(
            "{LINKS}[[forward]]\nudp = \"127.0.0.1:14551\"\n[[forward]]\nname = \"gcs\"\ntcp_listen = \"127.0.0.1:5770\"\nlinks = [\"usb0\"]\nsysids = [4, 22]\nmsgs = [\"HEARTBEAT\", 30]\nallow = [\"10.0.0.0/8\"]\nmax_peers = 2\nqueue_kb = 64\n"
        ))
        .unwrap();
        let (all, gcs) = (&c.forwards[0], &c.forwards[1]);
        assert_eq!(all.name, "127.0.0.1:14551");
        assert!(all.filter.takes_every_frame());
        assert!(all.filter.takes_link(LinkId::FIRST) && all.filter.takes(200, 12_345));
        let (radio1, usb0) = (LinkId::new(0).unwrap(), LinkId::new(1).unwrap());
        assert!(!gcs.filter.takes_link(radio1) && gcs.filter.takes_link(usb0));
        assert!(gcs.filter.takes(4, 0) && gcs.filter.takes(22, 30));
        assert!(!gcs.filter.takes(5, 0), "sysid 5 is not listed");
        assert!(!gcs.filter.takes(4, 2), "SYSTEM_TIME is not listed");
        assert!(matches!(
            gcs.output,
            ForwardOutput::TcpListen { max_peers: 2, ref allow, .. } if allow.len() == 1
        ));
        assert_eq!(gcs.queue_bytes, 64 * 1024);
        // check-config shows them as written, messages by name.
        let e = c.effective();
        assert_eq!(e["forward"][0]["udp"], "127.0.0.1:14551");
        assert_eq!(e["forward"][0]["queue_kb"], 4096);
        assert!(e["forward"][0].get("sysids").is_none());
        assert_eq!(e["forward"][1]["tcp_listen"], "127.0.0.1:5770");
        assert_eq!(
            e["forward"][1]["msgs"],
            serde_json::json!(["HEARTBEAT", "ATTITUDE"])
        );
        assert_eq!(e["forward"][1]["links"], serde_json::json!(["usb0"]));
        assert_eq!(e["forward"][1]["sysids"], serde_json::json!([4, 22]));
    }

    #[test]
    fn a_bad_forward_is_refused_naming_the_key() {
        for (text, key) in [
            ("[[forward]]\nname = \"x\"\n", "forward[0].udp"),
            (
                "[[forward]]\nudp = \"127.0.0.1:1\"\ntcp_listen = \"127.0.0.1:2\"\n",
                "forward[0].tcp_listen",
            ),
            ("[[forward]]\nudp = \"nohost\"\n", "forward[0].udp"),
            ("[[forward]]\nudp = \"h:0\"\n", "forward[0].udp"),
            (
                "[[forward]]\ntcp_listen = \"host:5770\"\n",
                "forward[0].tcp_listen",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\nallow = [\"10.0.0.0/8\"]\n",
                "forward[0].allow",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\nmax_peers = 2\n",
                "forward[0].max_peers",
            ),
            (
                "[[forward]]\ntcp_listen = \"127.0.0.1:1\"\nmax_peers = 0\n",
                "forward[0].max_peers",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\nlinks = [\"radio9\"]\n",
                "forward[0].links",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\nsysids = [256]\n",
                "forward[0].sysids",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\nmsgs = [\"HEARTBEET\"]\n",
                "forward[0].msgs",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\nmsgs = [99999]\n",
                "forward[0].msgs",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\nqueue_kb = 1\n",
                "forward[0].queue_kb",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\n[[forward]]\nudp = \"h:1\"\n",
                "forward[1].name",
            ),
            (
                "[[forward]]\nudp = \"h:1\"\nname = \"a b\"\n",
                "forward[0].name",
            ),
            ("[[forward]]\nudp = \"h:1\"\nbogus = 1\n", "bogus"),
        ] {
            let err = refusal(&format!("{LINKS}{text}"));
            assert!(err.contains(key), "{text}: {err}");
        }
    }
}
