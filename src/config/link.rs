//! `[[link]]`: each link's transport (a UDP bind with its allow-list, or a serial device with
//! its speed and flow control) and its queue, validated once; and the allow-list match the UDP
//! task applies to every datagram's source.

use super::raw::RawLink;
use super::{as_kib, as_mib, ranges, ConfigError};
use ipnet::IpNet;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowControl {
    None,
    Hardware,
    Software,
}

#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum LinkTransport {
    Udp {
        #[serde(rename = "udp")]
        bind: SocketAddr,
        /// Source networks allowed to send; empty allows any.
        allow: Vec<IpNet>,
        /// The socket receive buffer asked of the kernel.
        #[serde(rename = "rcvbuf_kb", serialize_with = "as_kib")]
        rcvbuf_bytes: u64,
    },
    Serial {
        #[serde(rename = "serial")]
        path: PathBuf,
        baud: u32,
        flow_control: FlowControl,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkConfig {
    pub name: String,
    #[serde(flatten)]
    pub kind: LinkTransport,
    /// Bytes that may wait for this link's scanner; past it input is dropped and counted.
    #[serde(rename = "queue_mb", serialize_with = "as_mib")]
    pub queue_bytes: u64,
}

/// Per-link defaults: 16 MiB may wait for a link's scanner; 8 MiB of socket buffer.
const DEFAULT_LINK_QUEUE_MB: u64 = 16;
const DEFAULT_RCVBUF_KB: u64 = 8192;

/// Every `[[link]]`, in the order written: names unique, each a UDP or a serial link.
pub(super) fn parse_links(
    raw: &[RawLink],
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<LinkConfig>, ConfigError> {
    if raw.len() > crate::link::MAX_LINKS {
        return Err(invalid(
            "link",
            format!("at most {} links", crate::link::MAX_LINKS),
        ));
    }
    if raw.is_empty() {
        return Err(invalid("link", "at least one [[link]] is needed".into()));
    }
    let in_range = |key: &str, range_key: &str, value: f64| {
        ranges::check(range_key, value).map_err(|reason| invalid(key, reason))
    };
    let mut links: Vec<LinkConfig> = Vec::new();
    for (i, link) in raw.iter().enumerate() {
        let key = |k: &str| format!("link[{i}].{k}");
        if link.name.is_empty()
            || !link
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(invalid(
                &key("name"),
                format!("`{}`: use letters, digits, '-', '_' or '.'", link.name),
            ));
        }
        if links.iter().any(|l| l.name == link.name) {
            return Err(invalid(
                &key("name"),
                format!("`{}` is used by two links", link.name),
            ));
        }
        let kind = match (&link.udp, &link.serial) {
            (Some(udp), None) => {
                if link.baud.is_some() || link.flow_control.is_some() {
                    return Err(invalid(
                        &key("baud"),
                        "baud and flow_control are for serial links".into(),
                    ));
                }
                let bind = parse_bind(udp).ok_or_else(|| {
                    invalid(
                        &key("udp"),
                        format!("`{udp}` is not an address:port (e.g. \"0.0.0.0:14550\")"),
                    )
                })?;
                let allow = link
                    .allow
                    .iter()
                    .map(|n| {
                        parse_network(n).ok_or_else(|| {
                            invalid(
                                &key("allow"),
                                format!("`{n}` is not a network like \"10.0.0.0/8\""),
                            )
                        })
                    })
                    .collect::<Result<_, _>>()?;
                let rcvbuf_kb = link.rcvbuf_kb.unwrap_or(DEFAULT_RCVBUF_KB);
                in_range(&key("rcvbuf_kb"), "link.rcvbuf_kb", rcvbuf_kb as f64)?;
                LinkTransport::Udp {
                    bind,
                    allow,
                    rcvbuf_bytes: rcvbuf_kb * 1024,
                }
            }
            (None, Some(path)) => {
                if !link.allow.is_empty() || link.rcvbuf_kb.is_some() {
                    return Err(invalid(
                        &key("allow"),
                        "allow and rcvbuf_kb are for UDP links".into(),
                    ));
                }
                let baud = link.baud.unwrap_or(57600);
                in_range(&key("baud"), "link.baud", baud as f64)?;
                let flow_control = match link.flow_control.as_deref().unwrap_or("none") {
                    "none" => FlowControl::None,
                    "hardware" | "rtscts" => FlowControl::Hardware,
                    "software" | "xonxoff" => FlowControl::Software,
                    other => {
                        return Err(invalid(
                            &key("flow_control"),
                            format!("`{other}`: use none, hardware or software"),
                        ))
                    }
                };
                LinkTransport::Serial {
                    path: path.clone(),
                    baud,
                    flow_control,
                }
            }
            (Some(_), Some(_)) => {
                return Err(invalid(
                    &key("udp"),
                    "a link is either udp or serial, not both".into(),
                ))
            }
            (None, None) => {
                return Err(invalid(
                    &key("udp"),
                    "a link needs `udp = \"addr:port\"` or `serial = \"/dev/...\"`".into(),
                ))
            }
        };
        let queue_mb = link.queue_mb.unwrap_or(DEFAULT_LINK_QUEUE_MB);
        in_range(&key("queue_mb"), "link.queue_mb", queue_mb as f64)?;
        links.push(LinkConfig {
            name: link.name.clone(),
            kind,
            queue_bytes: queue_mb * 1024 * 1024,
        });
    }
    Ok(links)
}

fn parse_bind(text: &str) -> Option<SocketAddr> {
    text.parse().ok()
}

/// A network (`10.0.0.0/8`) or a single address (`10.0.0.4`, taken as `/32` or `/128`).
fn parse_network(text: &str) -> Option<IpNet> {
    text.parse::<IpNet>()
        .ok()
        .or_else(|| text.parse::<std::net::IpAddr>().ok().map(IpNet::from))
}

/// Whether a UDP peer is inside an allow-list network (IPv4 peers seen through an IPv6 socket
/// as `::ffff:a.b.c.d` included).
pub fn network_contains(net: &IpNet, peer: std::net::IpAddr) -> bool {
    let peer = match peer {
        std::net::IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(std::net::IpAddr::V4)
            .unwrap_or(peer),
        v4 => v4,
    };
    net.contains(&peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_lists_match_networks() {
        let n = parse_network("10.0.0.0/8").unwrap();
        assert!(network_contains(&n, "10.1.2.3".parse().unwrap()));
        assert!(!network_contains(&n, "11.0.0.1".parse().unwrap()));
        assert!(network_contains(&n, "::ffff:10.9.9.9".parse().unwrap()));
        let one = parse_network("127.0.0.1").unwrap();
        assert!(network_contains(&one, "127.0.0.1".parse().unwrap()));
        assert!(network_contains(
            &parse_network("0.0.0.0/0").unwrap(),
            "8.8.8.8".parse().unwrap()
        ));
        assert!(parse_network("10.0.0.0/33").is_none());
    }
}
