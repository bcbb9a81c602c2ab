//! `[[link]]`: each link's transport (a UDP bind with its allow-list, a serial device with its
//! speeds and flow control, a TCP peer to connect to, a TCP listener with its allow-list and
//! peer cap, or an SBS-1 traffic feed to connect to) and its queue, validated once; and the allow-list match the UDP and TCP tasks apply
//! to every datagram's or connection's source.

use super::raw::{RawBaud, RawLink};
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
        /// While the link is busy its socket is read once per this many milliseconds (the
        /// kernel stamps each datagram's arrival, so the stamps do not move); 0 reads each
        /// datagram as it comes.
        read_window_ms: u64,
    },
    Serial {
        #[serde(rename = "serial")]
        path: PathBuf,
        /// One speed, or several tried in turn until valid frames arrive.
        baud: Bauds,
        flow_control: FlowControl,
    },
    /// A TCP client: connects to `host:port`, and again after the peer goes away.
    TcpClient {
        #[serde(rename = "tcp")]
        peer: HostPort,
    },
    /// An SBS-1 ("BaseStation") text feed, as dump1090 and readsb serve it on TCP 30003:
    /// connected to as a TCP client is, and read as traffic reports, not MAVLink.
    Sbs {
        #[serde(rename = "sbs")]
        peer: HostPort,
    },
    /// A TCP server: accepts peers (from `allow`, at most `max_peers` at once).
    TcpListen {
        #[serde(rename = "tcp_listen")]
        bind: SocketAddr,
        allow: Vec<IpNet>,
        max_peers: usize,
    },
}

/// A serial link's speeds: `baud = 57600` (one) or `baud = [57600, 115200]` (tried in turn).
/// Shown as written: a number for one, a list for several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bauds(Vec<u32>);

impl Bauds {
    #[cfg(test)]
    pub fn one(baud: u32) -> Self {
        Bauds(vec![baud])
    }

    /// Every speed, in the order to try them (never empty).
    pub fn all(&self) -> &[u32] {
        &self.0
    }

    /// More than one speed: the link finds the right one from the frames.
    pub fn is_list(&self) -> bool {
        self.0.len() > 1
    }
}

impl Serialize for Bauds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.as_slice() {
            [one] => s.serialize_u32(*one),
            many => many.serialize(s),
        }
    }
}

/// `host:port` as written (a name, an IPv4 address or a bracketed IPv6 one), resolved when
/// connecting, so a peer whose address changes is found again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort(String);

impl HostPort {
    /// `host:port` with a port from 1 to 65535 and a host that is not empty.
    pub fn parse(text: &str) -> Option<HostPort> {
        if text.parse::<SocketAddr>().is_ok_and(|a| a.port() != 0) {
            return Some(HostPort(text.to_string()));
        }
        let (host, port) = text.rsplit_once(':')?;
        let port_ok = port.parse::<u16>().is_ok_and(|p| p != 0);
        let host_ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-.".contains(c));
        (port_ok && host_ok).then(|| HostPort(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for HostPort {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LinkConfig {
    pub name: String,
    #[serde(flatten)]
    pub kind: LinkTransport,
    /// Bytes that may wait for this link's scanner; past it input is dropped and counted.
    #[serde(rename = "queue_mb", serialize_with = "as_mib")]
    pub queue_bytes: u64,
    /// The silence on this link that is a gap (`gap_threshold_s`), when the link has its own:
    /// a satellite link beats far more slowly than a radio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap_threshold_s: Option<f64>,
}

/// Per-link defaults: 16 MiB may wait for a link's scanner; 8 MiB of socket buffer; 8 TCP
/// peers at once on a listener.
const DEFAULT_LINK_QUEUE_MB: u64 = 16;
const DEFAULT_RCVBUF_KB: u64 = 8192;
/// A busy UDP link whose frames are forwarded is read every 5 ms: a forwarded frame waits
/// 5 ms at most, and at 2,000 datagrams a second the link's thread wakes once for about ten.
const DEFAULT_READ_WINDOW_FORWARDED_MS: u64 = 5;
/// A busy UDP link that nothing forwards is read every 20 ms, the pipeline's pace when batches
/// come often (`daemon::pipeline::PASS_PACE`): what it reads would wait for the pipeline's
/// next pass anyway, so reading it more often only wakes the thread more often.
const DEFAULT_READ_WINDOW_MS: u64 = 20;
pub(super) const DEFAULT_MAX_PEERS: u64 = 8;
/// The most speeds one serial link tries.
const MAX_BAUDS: usize = 16;

/// The read window of each UDP link that does not set its own: shorter when a forward takes
/// the link's frames, so they go out with little delay.
pub(super) fn settle_read_windows(
    links: &mut [LinkConfig],
    raw: &[RawLink],
    forwarded: impl Fn(crate::link::LinkId) -> bool,
) {
    for (index, (link, raw)) in links.iter_mut().zip(raw).enumerate() {
        let forwarded = crate::link::LinkId::new(index).is_some_and(&forwarded);
        if let (LinkTransport::Udp { read_window_ms, .. }, None) =
            (&mut link.kind, raw.read_window_ms)
        {
            *read_window_ms = if forwarded {
                DEFAULT_READ_WINDOW_FORWARDED_MS
            } else {
                DEFAULT_READ_WINDOW_MS
            };
        }
    }
}

/// Every `[[link]]`, in the order written: names unique, each a UDP, serial, TCP client or TCP
/// server link, with only the keys its transport takes.
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
    let mut links: Vec<LinkConfig> = Vec::new();
    for (i, link) in raw.iter().enumerate() {
        let key = |k: &str| format!("link[{i}].{k}");
        check_name(link, &links, &key, invalid)?;
        let in_range = |k: &str, value: f64| {
            ranges::check(&format!("link.{k}"), value).map_err(|reason| invalid(&key(k), reason))
        };
        let kind = parse_transport(link, &key, &in_range, invalid)?;
        let queue_mb = link.queue_mb.unwrap_or(DEFAULT_LINK_QUEUE_MB);
        in_range("queue_mb", queue_mb as f64)?;
        if let Some(threshold) = link.gap_threshold_s {
            in_range("gap_threshold_s", threshold)?;
        }
        links.push(LinkConfig {
            name: link.name.clone(),
            kind,
            queue_bytes: queue_mb * 1024 * 1024,
            gap_threshold_s: link.gap_threshold_s,
        });
    }
    Ok(links)
}

/// A link's name: a plain word, not `any`, not another link's.
fn check_name(
    link: &RawLink,
    earlier: &[LinkConfig],
    key: &dyn Fn(&str) -> String,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if link.name.is_empty() || !link.name.chars().all(plain) {
        return Err(invalid(
            &key("name"),
            format!("`{}`: use letters, digits, '-', '_' or '.'", link.name),
        ));
    }
    if link.name == "any" {
        return Err(invalid(
            &key("name"),
            "`any` names the union of every link in a vehicle's delivery figures: choose another name".into(),
        ));
    }
    if earlier.iter().any(|l| l.name == link.name) {
        return Err(invalid(
            &key("name"),
            format!("`{}` is used by two links", link.name),
        ));
    }
    Ok(())
}

/// The one transport key a link gives (`udp`, `serial`, `tcp`, `tcp_listen`, `sbs`), and no
/// key that belongs to another transport.
fn transport_of(
    link: &RawLink,
    key: &dyn Fn(&str) -> String,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<&'static str, ConfigError> {
    let transports: Vec<&str> = [
        ("udp", link.udp.is_some()),
        ("serial", link.serial.is_some()),
        ("tcp", link.tcp.is_some()),
        ("tcp_listen", link.tcp_listen.is_some()),
        ("sbs", link.sbs.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    let transport = match transports.as_slice() {
        [one] => *one,
        [] => {
            return Err(invalid(
                &key("udp"),
                "a link needs one of `udp = \"addr:port\"`, `serial = \"/dev/...\"`, `tcp = \"host:port\"`, `tcp_listen = \"addr:port\"` or `sbs = \"host:30003\"`".into(),
            ))
        }
        [first, second, ..] => {
            return Err(invalid(
                &key(second),
                format!("a link has one transport: `{first}` or `{second}`, not both"),
            ))
        }
    };
    // Each key belongs to some transports only: named when given to another.
    let misplaced = [
        ("allow", !link.allow.is_empty(), &["udp", "tcp_listen"][..]),
        ("rcvbuf_kb", link.rcvbuf_kb.is_some(), &["udp"][..]),
        (
            "read_window_ms",
            link.read_window_ms.is_some(),
            &["udp"][..],
        ),
        ("max_peers", link.max_peers.is_some(), &["tcp_listen"][..]),
        ("baud", link.baud.is_some(), &["serial"][..]),
        ("flow_control", link.flow_control.is_some(), &["serial"][..]),
    ]
    .into_iter()
    .find(|(_, set, takes)| *set && !takes.contains(&transport));
    if let Some((k, _, takes)) = misplaced {
        let takes: Vec<String> = takes.iter().map(|t| format!("`{t}`")).collect();
        return Err(invalid(
            &key(k),
            format!(
                "{k} is for {} links, not `{transport}`",
                takes.join(" and ")
            ),
        ));
    }
    Ok(transport)
}

/// The link's transport with its own keys, each checked.
fn parse_transport(
    link: &RawLink,
    key: &dyn Fn(&str) -> String,
    in_range: &dyn Fn(&str, f64) -> Result<(), ConfigError>,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<LinkTransport, ConfigError> {
    let allow = || parse_allow(&link.allow, &key("allow"), invalid);
    // A listening address, named by its key when it is not one.
    let bind = |k: &str, text: &Option<String>, example: &str| {
        let text = text.as_deref().unwrap_or_default();
        parse_bind(text).ok_or_else(|| {
            invalid(
                &key(k),
                format!("`{text}` is not an address:port (e.g. \"{example}\")"),
            )
        })
    };
    Ok(match transport_of(link, key, invalid)? {
        "udp" => {
            let bind = bind("udp", &link.udp, "0.0.0.0:14550")?;
            let rcvbuf_kb = link.rcvbuf_kb.unwrap_or(DEFAULT_RCVBUF_KB);
            in_range("rcvbuf_kb", rcvbuf_kb as f64)?;
            // Unset, it is settled once the forwards are known (`settle_read_windows`).
            let read_window_ms = link.read_window_ms.unwrap_or(DEFAULT_READ_WINDOW_MS);
            in_range("read_window_ms", read_window_ms as f64)?;
            LinkTransport::Udp {
                bind,
                allow: allow()?,
                rcvbuf_bytes: rcvbuf_kb * 1024,
                read_window_ms,
            }
        }
        "tcp" => {
            let tcp = link.tcp.as_deref().unwrap_or_default();
            let peer = HostPort::parse(tcp).ok_or_else(|| {
                invalid(
                    &key("tcp"),
                    format!("`{tcp}` is not a host:port (e.g. \"127.0.0.1:5760\")"),
                )
            })?;
            LinkTransport::TcpClient { peer }
        }
        "sbs" => {
            let sbs = link.sbs.as_deref().unwrap_or_default();
            let peer = HostPort::parse(sbs).ok_or_else(|| {
                invalid(
                    &key("sbs"),
                    format!("`{sbs}` is not a host:port (e.g. \"127.0.0.1:30003\")"),
                )
            })?;
            LinkTransport::Sbs { peer }
        }
        "tcp_listen" => {
            let bind = bind("tcp_listen", &link.tcp_listen, "0.0.0.0:5760")?;
            let max_peers = link.max_peers.unwrap_or(DEFAULT_MAX_PEERS);
            in_range("max_peers", max_peers as f64)?;
            LinkTransport::TcpListen {
                bind,
                allow: allow()?,
                max_peers: max_peers as usize,
            }
        }
        _ => {
            let path = link.serial.clone().unwrap_or_default();
            let baud = parse_bauds(link.baud.as_ref(), &key("baud"), invalid)?;
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
                path,
                baud,
                flow_control,
            }
        }
    })
}

/// `baud`: one speed (default 57600) or a list of distinct speeds, each in range.
fn parse_bauds(
    raw: Option<&RawBaud>,
    key: &str,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Bauds, ConfigError> {
    let speeds = match raw {
        None => vec![57600],
        Some(RawBaud::One(b)) => vec![*b],
        Some(RawBaud::Many(list)) => list.clone(),
    };
    if speeds.is_empty() || speeds.len() > MAX_BAUDS {
        return Err(invalid(
            key,
            format!("give one speed or a list of 1 to {MAX_BAUDS} speeds"),
        ));
    }
    let mut bauds = Vec::with_capacity(speeds.len());
    for b in speeds {
        ranges::check("link.baud", b as f64).map_err(|reason| invalid(key, reason))?;
        if bauds.contains(&(b as u32)) {
            return Err(invalid(key, format!("{b} is listed twice")));
        }
        bauds.push(b as u32);
    }
    Ok(Bauds(bauds))
}

/// An allow-list: networks (`10.0.0.0/8`) or single addresses.
pub(super) fn parse_allow(
    raw: &[String],
    key: &str,
    invalid: &dyn Fn(&str, String) -> ConfigError,
) -> Result<Vec<IpNet>, ConfigError> {
    raw.iter()
        .map(|n| {
            parse_network(n)
                .ok_or_else(|| invalid(key, format!("`{n}` is not a network like \"10.0.0.0/8\"")))
        })
        .collect()
}

/// Whether `peer` may connect or send under `allow` (empty: anyone).
pub fn allowed(allow: &[IpNet], peer: std::net::IpAddr) -> bool {
    allow.is_empty() || allow.iter().any(|net| network_contains(net, peer))
}

pub(super) fn parse_bind(text: &str) -> Option<SocketAddr> {
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
    use super::super::testing::{parse, refusal};
    use super::*;

    #[test]
    fn tcp_links_connect_or_listen_and_show_as_written() {
        let c = parse(
            "[[link]]\nname = \"sitl\"\ntcp = \"localhost:5760\"\n[[link]]\nname = \"router\"\ntcp_listen = \"127.0.0.1:5761\"\nallow = [\"10.0.0.0/8\"]\nmax_peers = 2\n[[link]]\nname = \"v6\"\ntcp = \"[::1]:5762\"\n",
        )
        .unwrap();
        assert!(
            matches!(&c.links[0].kind, LinkTransport::TcpClient { peer } if peer.as_str() == "localhost:5760")
        );
        assert!(matches!(
            &c.links[1].kind,
            LinkTransport::TcpListen { max_peers: 2, allow, .. } if allow.len() == 1
        ));
        let e = c.effective();
        assert_eq!(e["link"][0]["tcp"], "localhost:5760");
        assert_eq!(e["link"][1]["tcp_listen"], "127.0.0.1:5761");
        assert_eq!(e["link"][1]["max_peers"], 2);
        assert_eq!(e["link"][2]["tcp"], "[::1]:5762");
        let default = parse("[[link]]\nname = \"r\"\ntcp_listen = \"0.0.0.0:5760\"\n").unwrap();
        assert!(matches!(
            default.links[0].kind,
            LinkTransport::TcpListen { max_peers: 8, .. }
        ));
    }

    #[test]
    fn a_udp_links_read_window_is_shorter_when_its_frames_are_forwarded() {
        let links = "[[link]]\nname = \"radio\"\nudp = \"0.0.0.0:14550\"\n[[link]]\nname = \"sitl\"\nudp = \"0.0.0.0:14560\"\n[[link]]\nname = \"set\"\nudp = \"0.0.0.0:14570\"\nread_window_ms = 7\n";
        let window = |c: &super::super::Config, i: usize| match c.links[i].kind {
            LinkTransport::Udp { read_window_ms, .. } => read_window_ms,
            _ => panic!("udp"),
        };
        let none = parse(links).unwrap();
        assert_eq!(
            (window(&none, 0), window(&none, 1), window(&none, 2)),
            (20, 20, 7)
        );
        let one = parse(&format!(
            "{links}[[forward]]\nudp = \"127.0.0.1:14551\"\nlinks = [\"sitl\", \"set\"]\n"
        ))
        .unwrap();
        assert_eq!(
            (window(&one, 0), window(&one, 1), window(&one, 2)),
            (20, 5, 7)
        );
        assert_eq!(one.effective()["link"][1]["read_window_ms"], 5);
        let every = parse(&format!("{links}[[forward]]\nudp = \"127.0.0.1:14551\"\n")).unwrap();
        assert_eq!((window(&every, 0), window(&every, 1)), (5, 5));
    }

    #[test]
    fn an_sbs_feed_is_a_link_of_its_own() {
        let c = parse("[[link]]\nname = \"adsb\"\nsbs = \"localhost:30003\"\n").unwrap();
        assert!(
            matches!(&c.links[0].kind, LinkTransport::Sbs { peer } if peer.as_str() == "localhost:30003")
        );
        assert_eq!(c.effective()["link"][0]["sbs"], "localhost:30003");
        for (text, key) in [
            ("sbs = \"nohost\"\n", "link[0].sbs"),
            ("sbs = \"h:1\"\ntcp = \"h:2\"\n", "link[0]"),
            ("sbs = \"h:1\"\nbaud = 9600\n", "link[0].baud"),
        ] {
            let err = refusal(&format!("[[link]]\nname = \"a\"\n{text}"));
            assert!(err.contains(key), "{text}: {err}");
        }
    }

    #[test]
    fn baud_is_one_speed_or_a_list_tried_in_turn() {
        let serial = "[[link]]\nname = \"usb0\"\nserial = \"/dev/ttyUSB0\"\n";
        let one = parse(&format!("{serial}baud = 115200\n")).unwrap();
        let LinkTransport::Serial { baud, .. } = &one.links[0].kind else {
            panic!("serial")
        };
        assert_eq!((baud.all(), baud.is_list()), (&[115200][..], false));
        assert_eq!(one.effective()["link"][0]["baud"], 115200);
        let list = parse(&format!("{serial}baud = [57600, 115200, 921600]\n")).unwrap();
        let LinkTransport::Serial { baud, .. } = &list.links[0].kind else {
            panic!("serial")
        };
        assert_eq!(baud.all(), [57600, 115200, 921600]);
        assert!(baud.is_list());
        assert_eq!(
            list.effective()["link"][0]["baud"],
            serde_json::json!([57600, 115200, 921600])
        );
        for (baud, why) in [
            ("[]", "1 to 16"),
            ("[57600, 57600]", "twice"),
            ("[57600, 0]", "out of range"),
            ("\"fast\"", ""),
        ] {
            let err = refusal(&format!("{serial}baud = {baud}\n"));
            assert!(
                (err.contains("link[0].baud") || err.contains("line")) && err.contains(why),
                "{baud}: {err}"
            );
        }
    }

    #[test]
    fn each_key_belongs_to_its_transport() {
        for (text, key) in [
            ("name = \"a\"\n", "link[0].udp"),
            (
                "name = \"a\"\nudp = \"0.0.0.0:1\"\ntcp = \"h:1\"\n",
                "link[0].tcp",
            ),
            (
                "name = \"a\"\ntcp = \"h:1\"\nallow = [\"10.0.0.0/8\"]\n",
                "link[0].allow",
            ),
            (
                "name = \"a\"\nudp = \"0.0.0.0:1\"\nmax_peers = 3\n",
                "link[0].max_peers",
            ),
            ("name = \"a\"\ntcp = \"h:1\"\nbaud = 9600\n", "link[0].baud"),
            (
                "name = \"a\"\ntcp_listen = \"0.0.0.0:1\"\nrcvbuf_kb = 64\n",
                "link[0].rcvbuf_kb",
            ),
            (
                "name = \"a\"\nserial = \"/dev/ttyS0\"\nallow = [\"10.0.0.0/8\"]\n",
                "link[0].allow",
            ),
            ("name = \"a\"\ntcp = \"h\"\n", "link[0].tcp"),
            ("name = \"a\"\ntcp = \"h:99999\"\n", "link[0].tcp"),
            ("name = \"a\"\ntcp = \":5760\"\n", "link[0].tcp"),
            (
                "name = \"a\"\ntcp_listen = \"host:5760\"\n",
                "link[0].tcp_listen",
            ),
            (
                "name = \"a\"\ntcp_listen = \"0.0.0.0:1\"\nmax_peers = 0\n",
                "link[0].max_peers",
            ),
            (
                "name = \"a\"\ntcp_listen = \"0.0.0.0:1\"\nallow = [\"x\"]\n",
                "link[0].allow",
            ),
        ] {
            let err = refusal(&format!("[[link]]\n{text}"));
            assert!(err.contains(key), "{text}: {err}");
        }
    }

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
