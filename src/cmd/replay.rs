//! `replay FILE... --to udp:HOST:PORT|tcp_listen:ADDR [--speed N|max] [--from UTC --to-utc UTC]
//! [--sysid N]`: the raw frames of `.tlog` files (the receiver's own under `<data_dir>/tlog/`, a
//! ground station's, or a data dir over a span) sent again at their recorded pace times the
//! speed, to a ground station or another receiver (`docs/replay.md`).
//!
//! The shell around [`crate::replay`]: it judges every file from its first bytes before sending
//! anything (a receive log holds no frame bytes: refused, naming `tlog = true`), reads each
//! `.tlog` as `tlog convert` does (bad records skipped, listed by byte offset and counted), asks
//! the pacer when each frame is due, sleeps until then and sends the frame's bytes as they are
//! in the file. Progress on a terminal, a summary on stdout at the end.
//!
//! Exit codes: 0 every frame sent; 1 a file or the peer failed, or a signal stopped the replay
//! (after its summary); 2 usage; 4 a file that holds no frames to send.

use super::{Exit, UsageError};
use crate::analyze::WrongKindOfFile;
use crate::monitor::parse_utc_ns;
use crate::replay::{progress_line, Destination, Pacer, Selection, Speed, Tally, Verdict};
use crate::sink::{listing, RECEIVE_LOG, TLOG};
use crate::sniff::{sniff, FileKind, HEAD_LEN};
use crate::tlog::{read_tlog, TlogRecord};
use crate::wire::signing::SigningKeys;
use crate::wire::ScanItem;
use anyhow::Context;
use clap::Args;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Rejected records named one by one per file (as `tlog convert` does); past this only counted.
const MAX_REJECTS_SHOWN: u64 = 20;
/// How often the progress line is redrawn on a terminal.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// The longest single sleep: a stop signal is noticed within this, even inside a recorded gap
/// of an hour.
const SLEEP_SLICE: Duration = Duration::from_millis(100);

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// .tlog files (the receiver's own under <data_dir>/tlog/, or a ground station's), or a
    /// receiver's data dir (its tlog/ files over --from/--to-utc), sent in the order given
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to send: udp:HOST:PORT (a datagram per frame) or tcp_listen:ADDR (a TCP server every
    /// peer that connects gets the frames from)
    #[arg(long, value_name = "udp:HOST:PORT|tcp_listen:ADDR")]
    pub to: Destination,
    /// The recorded pace times this factor (1 as recorded, 10 ten times faster), or `max`: as
    /// fast as the peer takes them
    #[arg(long, default_value = "1")]
    pub speed: Speed,
    /// Only the frames stamped from this UTC time on (RFC 3339; needed with a data dir)
    #[arg(long, value_parser = utc_argument)]
    pub from: Option<i64>,
    /// Only the frames stamped up to this UTC time (RFC 3339; needed with a data dir)
    #[arg(long = "to-utc", value_parser = utc_argument)]
    pub to_utc: Option<i64>,
    /// Only the frames from this MAVLink system id
    #[arg(long)]
    pub sysid: Option<u8>,
}

fn utc_argument(text: &str) -> Result<i64, String> {
    parse_utc_ns(text)
        .ok_or_else(|| format!("`{text}` is not an RFC 3339 time (e.g. 2026-12-02T14:00:00Z)"))
}

/// Set by SIGINT or SIGTERM: the replay stops after the frame in hand and prints its summary.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: nix::libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn catch_stop_signals() -> anyhow::Result<()> {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let action = SigAction::new(
        SigHandler::Handler(on_stop_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { sigaction(signal, &action) }.context("installing the stop signal handler")?;
    }
    Ok(())
}

pub fn run(args: ReplayArgs) -> anyhow::Result<Exit> {
    let selection = Selection {
        from_ns: args.from,
        to_ns: args.to_utc,
        sysid: args.sysid,
    };
    if let (Some(from), Some(to)) = (args.from, args.to_utc) {
        if from > to {
            return Err(UsageError("replay: --from is after --to-utc".into()).into());
        }
    }
    let files = files_to_replay(&args.files, &selection)?;
    let mut peer = Peer::open(&args.to)?;
    catch_stop_signals()?;
    let mut sender = Sender {
        pacer: Pacer::new(args.speed),
        selection,
        start: None,
        tally: Tally {
            files: files.len(),
            ..Tally::default()
        },
        progress: std::io::stderr().is_terminal().then(Instant::now),
        peer: &mut peer,
    };
    let began = Instant::now();
    let keys = SigningKeys::default();
    for file in &files {
        let input =
            std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        let name = file.display().to_string();
        let mut rejects = 0u64;
        let read = read_tlog(BufReader::with_capacity(1 << 20, input), &keys, |record| {
            if let ScanItem::Reject(r) = record.item {
                rejects += 1;
                if rejects <= MAX_REJECTS_SHOWN {
                    sender.clear_progress();
                    eprintln!(
                        "{name}: byte {}: {} ({} bytes), not sent",
                        record.offset,
                        r.reason.as_str(),
                        r.bytes
                    );
                }
            }
            sender.record(&record)
        });
        sender.tally.rejected += rejects;
        if rejects > MAX_REJECTS_SHOWN {
            eprintln!(
                "{name}: ... {} more rejected records not listed",
                rejects - MAX_REJECTS_SHOWN
            );
        }
        match read {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => break,
            Err(e) => {
                sender.clear_progress();
                return Err(e).with_context(|| format!("replaying {name}"));
            }
        }
    }
    sender.clear_progress();
    let interrupted = STOP.load(Ordering::Relaxed);
    let tally = sender.tally;
    print!(
        "{}",
        tally.summary(
            &args.to,
            args.speed,
            &selection,
            began.elapsed().as_nanos() as u64,
            interrupted
        )
    );
    std::io::stdout().flush()?;
    Ok(if interrupted {
        Exit::Failure
    } else {
        Exit::Success
    })
}

/// Sends the frames of the records it is given, each at its instant.
struct Sender<'p> {
    pacer: Pacer,
    selection: Selection,
    /// When the first frame was sent (moved on by the time spent waiting for a peer).
    start: Option<Instant>,
    tally: Tally,
    /// When the progress line was last drawn; `None` when stderr is not a terminal.
    progress: Option<Instant>,
    peer: &'p mut Peer,
}

impl Sender<'_> {
    /// Sends the record's frame if it is one and is chosen. An `Interrupted` error stops the
    /// replay (a stop signal).
    fn record(&mut self, record: &TlogRecord<'_>) -> std::io::Result<()> {
        let ScanItem::Frame(frame) = record.item else {
            return Ok(());
        };
        match self.selection.judge(record.utc_us, frame.sysid) {
            Verdict::Send => {}
            Verdict::OutsideSpan => {
                self.tally.outside_span += 1;
                return Ok(());
            }
            Verdict::OtherSystem => {
                self.tally.other_systems += 1;
                return Ok(());
            }
        }
        let waited = self.peer.ready()?;
        if let Some(start) = &mut self.start {
            // No peer to send to is a pause, not lateness.
            *start += waited;
        }
        let due = self.pacer.due_ns(record.utc_us);
        let start = *self.start.get_or_insert_with(Instant::now);
        let lag = match due {
            Some(ns) => {
                let at = start + Duration::from_nanos(ns);
                sleep_until(at)?;
                let lag = Instant::now().saturating_duration_since(at).as_nanos() as u64;
                self.tally.max_lag_ns = self.tally.max_lag_ns.max(lag);
                Some(lag)
            }
            None if STOP.load(Ordering::Relaxed) => return Err(stopped()),
            None => None,
        };
        self.peer.send(frame.bytes)?;
        self.tally.sent += 1;
        self.tally.bytes += frame.bytes.len() as u64;
        self.tally.first_us.get_or_insert(record.utc_us);
        self.tally.last_us = Some(record.utc_us);
        self.tally.recorded_us = self.pacer.recorded_elapsed_us();
        if let Some(drawn) = &mut self.progress {
            if drawn.elapsed() >= PROGRESS_EVERY {
                *drawn = Instant::now();
                let line = progress_line(self.tally.sent, record.utc_us, lag);
                let _ = write!(std::io::stderr().lock(), "\r{line}\x1b[K");
            }
        }
        Ok(())
    }

    /// Wipes the progress line, so that a message or the summary starts on a clean line.
    fn clear_progress(&self) {
        if self.progress.is_some() {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
        }
    }
}

fn stopped() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::Interrupted, "stopped by a signal")
}

/// Sleeps until `at`, in slices, so that a stop signal ends even a long wait.
fn sleep_until(at: Instant) -> std::io::Result<()> {
    loop {
        if STOP.load(Ordering::Relaxed) {
            return Err(stopped());
        }
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(SLEEP_SLICE));
    }
}

/// The files to replay, each judged from its first bytes before anything is sent: a data dir
/// gives its `tlog/` files over the span; a receive log is refused, naming `tlog = true`.
fn files_to_replay(given: &[PathBuf], selection: &Selection) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in given {
        if path.is_dir() {
            files.extend(data_dir_files(path, selection)?);
            continue;
        }
        let mut input = BufReader::new(
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?,
        );
        let head = input
            .fill_buf()
            .with_context(|| format!("cannot read {}", path.display()))?;
        match sniff(&head[..head.len().min(HEAD_LEN)]) {
            FileKind::Tlog | FileKind::Empty => files.push(path.clone()),
            FileKind::ReceiverJsonl => {
                return Err(WrongKindOfFile {
                    file: path.display().to_string(),
                    wanted: "a .tlog (raw frames)",
                    found: NO_RAW_BYTES.into(),
                }
                .into())
            }
            other => {
                return Err(WrongKindOfFile {
                    file: path.display().to_string(),
                    wanted: "a .tlog (raw frames)",
                    found: other.describe(),
                }
                .into())
            }
        }
    }
    Ok(files)
}

/// Why a receive log cannot be replayed, and where the bytes are.
const NO_RAW_BYTES: &str = "a receive log (receiver JSONL), which holds each frame's header and decoded fields but not its bytes, so there is nothing to send. The daemon keeps the raw frames with `tlog = true` in its config, under <data_dir>/tlog/: replay those";

/// A receiver's data dir: its `tlog/` files that hold the span, in time order.
fn data_dir_files(dir: &Path, selection: &Selection) -> anyhow::Result<Vec<PathBuf>> {
    let tlog_dir = dir.join(TLOG.folder);
    let listed = listing::files(&tlog_dir, TLOG.ext)
        .with_context(|| format!("cannot list {}", tlog_dir.display()))?;
    if listed.is_empty() {
        let found = if dir.join(RECEIVE_LOG.folder).is_dir() {
            format!(
                "a receiver's data dir with a receive log but no tlog/ files: {}",
                NO_RAW_BYTES.trim_start_matches("a receive log (receiver JSONL), which ")
            )
        } else {
            "a folder with no tlog/ of .tlog files (not a receiver's data dir)".into()
        };
        return Err(WrongKindOfFile {
            file: dir.display().to_string(),
            wanted: "a .tlog (raw frames) or a receiver's data dir with tlog/",
            found,
        }
        .into());
    }
    let (Some(from), Some(to)) = (selection.from_ns, selection.to_ns) else {
        return Err(UsageError(format!(
            "{}: a data dir is replayed over a span: give --from and --to-utc",
            dir.display()
        ))
        .into());
    };
    let chosen = listing::covering(&listed, from, to);
    if chosen.is_empty() {
        anyhow::bail!(
            "{}: no tlog files between {} and {}",
            dir.display(),
            crate::monitor::format_utc_ms(from),
            crate::monitor::format_utc_ms(to)
        );
    }
    Ok(chosen.into_iter().map(|f| tlog_dir.join(f)).collect())
}

/// Where the frames go.
enum Peer {
    Udp {
        socket: UdpSocket,
        to: SocketAddr,
    },
    /// A TCP server: the peers connected so far, and those the accepting thread hands over.
    TcpListen {
        peers: Vec<(SocketAddr, TcpStream)>,
        arrivals: mpsc::Receiver<(SocketAddr, TcpStream)>,
    },
}

fn resolve(address: &str) -> anyhow::Result<SocketAddr> {
    address
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {address}"))?
        .next()
        .with_context(|| format!("{address} resolves to no address"))
}

impl Peer {
    fn open(destination: &Destination) -> anyhow::Result<Peer> {
        match destination {
            Destination::Udp(address) => {
                let to = resolve(address)?;
                let local: SocketAddr = if to.is_ipv4() {
                    ([0, 0, 0, 0], 0).into()
                } else {
                    ([0u16; 8], 0).into()
                };
                // Not connected: a peer that is not listening yet refuses nothing (no ICMP error
                // comes back to an unconnected socket); what it misses is UDP's loss.
                let socket = UdpSocket::bind(local).context("binding a UDP socket")?;
                Ok(Peer::Udp { socket, to })
            }
            Destination::TcpListen(address) => {
                let listener = TcpListener::bind(resolve(address)?)
                    .with_context(|| format!("cannot listen on {address}"))?;
                eprintln!(
                    "replay: listening on {}, waiting for a peer",
                    listener.local_addr()?
                );
                let (hand_over, arrivals) = mpsc::channel();
                std::thread::spawn(move || accept_peers(listener, hand_over));
                Ok(Peer::TcpListen {
                    peers: Vec::new(),
                    arrivals,
                })
            }
        }
    }

    /// Waits until there is someone to send to; returns how long that took.
    fn ready(&mut self) -> std::io::Result<Duration> {
        let Peer::TcpListen { peers, arrivals } = self else {
            return Ok(Duration::ZERO);
        };
        let began = Instant::now();
        loop {
            while let Ok((address, stream)) = arrivals.try_recv() {
                eprintln!("replay: peer {address} connected");
                peers.push((address, stream));
            }
            if !peers.is_empty() {
                return Ok(began.elapsed());
            }
            if STOP.load(Ordering::Relaxed) {
                return Err(stopped());
            }
            match arrivals.recv_timeout(SLEEP_SLICE) {
                Ok((address, stream)) => {
                    eprintln!("replay: peer {address} connected");
                    peers.push((address, stream));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(std::io::Error::other("the TCP listener stopped accepting"))
                }
            }
        }
    }

    /// Sends one frame's bytes. A TCP peer that went away is dropped (said on stderr).
    fn send(&mut self, frame: &[u8]) -> std::io::Result<()> {
        match self {
            Peer::Udp { socket, to } => socket.send_to(frame, *to).map(|_| ()),
            Peer::TcpListen { peers, .. } => {
                peers.retain_mut(|(address, stream)| match stream.write_all(frame) {
                    Ok(()) => true,
                    Err(e) => {
                        eprintln!("replay: peer {address} went away ({e}); it is dropped");
                        false
                    }
                });
                Ok(())
            }
        }
    }
}

/// Accepts TCP peers for as long as the replay runs; each one's input (a ground station's own
/// heartbeats) is read and dropped, so that it never blocks on a full buffer.
fn accept_peers(listener: TcpListener, hand_over: mpsc::Sender<(SocketAddr, TcpStream)>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let Ok(address) = stream.peer_addr() else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        if let Ok(mut input) = stream.try_clone() {
            std::thread::spawn(move || {
                let mut sink = [0u8; 4096];
                while matches!(input.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
        if hand_over.send((address, stream)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receive_log_is_refused_naming_the_tlog_setting() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("receive.jsonl");
        std::fs::write(
            &log,
            "{\"recv_utc\":\"2026-09-24T14:32:03.912Z\",\"mono_ns\":1,\"link\":\"radio1\",\"sysid\":4,\"compid\":1,\"msgid\":0,\"msg\":\"HEARTBEAT\",\"seq\":17,\"len\":9}\n",
        )
        .unwrap();
        let e = files_to_replay(&[log], &Selection::default()).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.contains("receive.jsonl: not a .tlog (raw frames)"),
            "{text}"
        );
        assert!(text.contains("`tlog = true`"), "{text}");
        assert_eq!(
            super::super::Exit::for_error(&e),
            super::super::Exit::Rejected
        );

        // A data dir with a receive log and no tlog/ says the same.
        std::fs::create_dir_all(dir.path().join("data/receive/2026-09-24")).unwrap();
        let e = files_to_replay(&[dir.path().join("data")], &Selection::default()).unwrap_err();
        let text = format!("{e:#}");
        assert!(text.contains("no tlog/ files"), "{text}");
        assert!(text.contains("`tlog = true`"), "{text}");
    }

    #[test]
    fn a_data_dir_needs_a_span() {
        let dir = tempfile::tempdir().unwrap();
        let day = dir.path().join("tlog/2026-09-24");
        std::fs::create_dir_all(&day).unwrap();
        std::fs::write(day.join("receive-20260924T140000Z.tlog"), b"").unwrap();
        std::fs::write(day.join("receive-20260924T150000Z.tlog"), b"").unwrap();
        let e = files_to_replay(&[dir.path().to_path_buf()], &Selection::default()).unwrap_err();
        assert_eq!(super::super::Exit::for_error(&e), super::super::Exit::Usage);
        let span = Selection {
            from_ns: parse_utc_ns("2026-09-24T15:10:00Z"),
            to_ns: parse_utc_ns("2026-09-24T15:20:00Z"),
            sysid: None,
        };
        let files = files_to_replay(&[dir.path().to_path_buf()], &span).unwrap();
        assert_eq!(files, [day.join("receive-20260924T150000Z.tlog")]);
    }

    #[test]
    fn a_flight_log_is_refused_as_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("flight.ulg");
        std::fs::write(&log, b"ULog\x01\x12\x35\x01\0\0\0\0\0\0\0\0").unwrap();
        let e = files_to_replay(&[log], &Selection::default()).unwrap_err();
        assert!(format!("{e:#}").contains("PX4 ULog"), "{e:#}");
    }
}
