//! TCP links against the built daemon on loopback: a client link that loses its server and
//! finds it again (link down and up, nothing read before the drop lost, nothing doubled), and a
//! listening link with two peers at once, each scanned as its own stream, with its allow-list
//! and peer cap.

use crate::common;

use common::{eventually, Daemon};
use foxborne_receiver::wire::build::{self, heartbeat_v2 as heartbeat};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

fn attitude(sysid: u8, seq: u8) -> Vec<u8> {
    build::v1(
        common::header(sysid, seq),
        30,
        &build::attitude_payload(u32::from(seq), 0.25),
    )
}

fn link_status(http: &str, name: &str) -> serde_json::Value {
    common::status_entry(http, "links", name)
}

/// Waits until the daemon's scanner has taken `bytes` bytes on the link (so a write that follows
/// is a read of its own, not joined to this one by the kernel).
fn wait_for_bytes(d: &mut Daemon, link: &str, bytes: u64) {
    let http = d.http_addr();
    assert!(
        eventually(WAIT, || link_status(&http, link)["bytes"] == bytes),
        "link {link} never read {bytes} bytes: {}",
        link_status(&http, link)
    );
}

#[test]
fn a_tcp_client_link_reconnects_and_loses_nothing_read_before_the_drop() {
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    let mut d = Daemon::start(
        "tcp-client",
        &format!(
            "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"sitl\"\ntcp = \"{addr}\"\n"
        ),
    );
    let mut sent = Vec::new();
    let mut bytes = 0u64;
    for round in 0..3u8 {
        let (mut peer, _) = server.accept().unwrap();
        peer.set_nodelay(true).unwrap();
        d.wait_for("link up", WAIT);
        // A frame split across two reads, then a run of whole ones, then the peer hangs up.
        let first = heartbeat(7, round * 10);
        peer.write_all(&first[..7]).unwrap();
        wait_for_bytes(&mut d, "sitl", bytes + 7);
        peer.write_all(&first[7..]).unwrap();
        sent.push((7u64, 0u64, round * 10));
        bytes += first.len() as u64;
        let mut run = Vec::new();
        for seq in 1..10 {
            let frame = attitude(7, round * 10 + seq);
            run.extend_from_slice(&frame);
            sent.push((7, 30, round * 10 + seq));
        }
        peer.write_all(&run).unwrap();
        bytes += run.len() as u64;
        drop(peer);
        d.wait_for("tcp link down", WAIT);
    }
    // Once more connected, then the server goes away for good (the listener first, so the
    // daemon cannot reconnect into its backlog): the refusals that follow are the same outage,
    // said once.
    let (last, _) = server.accept().unwrap();
    d.wait_for("link up", WAIT);
    drop(server);
    drop(last);
    d.wait_for("tcp link down", WAIT);
    let http = d.http_addr();
    assert!(eventually(WAIT, || link_status(&http, "sitl")["bytes"] == bytes));
    assert!(d.stop().success());
    let receipts = d.receipts();
    let got: Vec<(u64, u64, u8)> = receipts
        .iter()
        .map(|r| {
            (
                r["sysid"].as_u64().unwrap(),
                r["msgid"].as_u64().unwrap(),
                r["seq"].as_u64().unwrap() as u8,
            )
        })
        .collect();
    assert_eq!(got, sent, "every frame once, in order, across the drops");
    assert!(receipts
        .iter()
        .all(|r| r["link"] == "sitl" && r["src"].as_str() == Some(&addr.to_string())));
    assert_eq!(
        d.link_states("sitl"),
        ["up", "down", "up", "down", "up", "down", "up", "down"],
        "each drop is one down, each reconnection one up"
    );
    let up = d
        .events()
        .into_iter()
        .find(|e| e["kind"] == "link" && e["state"] == "up")
        .unwrap();
    assert!(
        up["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("connected to tcp {addr}")),
        "{up}"
    );
}

#[test]
fn a_tcp_listener_takes_two_peers_at_once_each_its_own_stream() {
    let mut d = Daemon::start(
        "tcp-listen",
        "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"router\"\ntcp_listen = \"127.0.0.1:0\"\nallow = [\"127.0.0.1/32\"]\nmax_peers = 2\n",
    );
    let addr = d.udp_addr("router").to_string();
    d.wait_for("link up", WAIT);
    let mut a = common::connect_from([127, 0, 0, 1], &addr).unwrap();
    let mut b = common::connect_from([127, 0, 0, 1], &addr).unwrap();
    a.set_nodelay(true).unwrap();
    b.set_nodelay(true).unwrap();
    d.wait_for("tcp peer connected", WAIT);
    d.wait_for("tcp peer connected", WAIT);
    // Interleaved halves: joined per peer, never across peers.
    let (fa, fb) = (heartbeat(1, 5), attitude(2, 9));
    a.write_all(&fa[..4]).unwrap();
    wait_for_bytes(&mut d, "router", 4);
    b.write_all(&fb[..9]).unwrap();
    wait_for_bytes(&mut d, "router", 13);
    a.write_all(&fa[4..]).unwrap();
    wait_for_bytes(&mut d, "router", fa.len() as u64 + 9);
    b.write_all(&fb[9..]).unwrap();
    let total = (fa.len() + fb.len()) as u64;
    wait_for_bytes(&mut d, "router", total);

    // A third peer past max_peers, and one from outside the allow-list: each closed at once.
    for from in [[127, 0, 0, 1], [127, 0, 0, 3]] {
        let mut refused = common::connect_from(from, &addr).unwrap();
        refused
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut byte = [0u8; 1];
        assert!(
            matches!(refused.read(&mut byte), Ok(0) | Err(_)),
            "a refused peer is closed"
        );
    }
    let http = d.http_addr();
    assert!(eventually(WAIT, || link_status(&http, "router")["denied"] == 2));

    // A peer that hangs up inside a frame: one truncated reject; the other peer goes on.
    a.write_all(&heartbeat(1, 6)[..10]).unwrap();
    drop(a);
    d.wait_for("tcp peer gone", WAIT);
    b.write_all(&heartbeat(2, 10)).unwrap();
    assert!(eventually(WAIT, || link_status(&http, "router")
        ["receipts"]
        == 3));
    let link = link_status(&http, "router");
    assert_eq!(link["rejects"]["truncated"], 1, "{link}");
    assert_eq!(link["up"], true);
    drop(b);
    assert!(d.stop().success());
    let receipts = d.receipts();
    let by_peer: Vec<(u64, u64)> = receipts
        .iter()
        .map(|r| (r["sysid"].as_u64().unwrap(), r["seq"].as_u64().unwrap()))
        .collect();
    assert_eq!(by_peer, [(1, 5), (2, 9), (2, 10)]);
    // Each receipt names its own peer.
    assert_ne!(receipts[0]["src"], receipts[1]["src"]);
    assert_eq!(receipts[1]["src"], receipts[2]["src"]);
}

#[test]
fn a_tcp_listen_port_in_use_is_a_start_up_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut d = Daemon::start(
        "tcp-inuse",
        &format!("data_dir = \"{{dir}}/data\"\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"router\"\ntcp_listen = \"127.0.0.1:{port}\"\n"),
    );
    assert_eq!(d.child.wait().unwrap().code(), Some(1));
    d.wait_for(
        &format!("link router: cannot listen on tcp 127.0.0.1:{port}"),
        WAIT,
    );
    let _ = TcpStream::connect(taken.local_addr().unwrap());
}

#[test]
fn check_config_shows_tcp_links_and_forwards_or_names_the_bad_key() {
    let links = "[[link]]\nname = \"sitl\"\ntcp = \"127.0.0.1:5760\"\n[[link]]\nname = \"router\"\ntcp_listen = \"0.0.0.0:5761\"\nmax_peers = 4\n";
    let (code, out, err) = common::check_config(&format!(
        "{links}[[forward]]\nname = \"qgc\"\ntcp_listen = \"127.0.0.1:5770\"\nmsgs = [\"HEARTBEAT\", 33]\nlinks = [\"sitl\"]\n"
    ));
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["link"][0]["tcp"], "127.0.0.1:5760");
    assert_eq!(v["link"][1]["tcp_listen"], "0.0.0.0:5761");
    assert_eq!(v["link"][1]["max_peers"], 4);
    assert_eq!(v["forward"][0]["name"], "qgc");
    assert_eq!(
        v["forward"][0]["msgs"],
        serde_json::json!(["HEARTBEAT", "GLOBAL_POSITION_INT"])
    );
    // The forward's queue and its peers' are in what the unit must allow.
    let plain: serde_json::Value = serde_json::from_str(&common::check_config(links).1).unwrap();
    assert!(v["needs"]["memory_mb"].as_u64() > plain["needs"]["memory_mb"].as_u64());
    common::assert_config_refused(
        &format!("{links}[[forward]]\nudp = \"127.0.0.1:14550\"\nlinks = [\"radio9\"]\n"),
        &["forward[0].links", "radio9"],
    );
}
