//! A serial link. The device may be missing at start, vanish (EOF, EIO, ENOENT) and come back:
//! each case is `link down`, a retry with backoff (never a busy loop: a dead pty gives EOF
//! forever), and `link up` when it is readable again. Never fatal to the daemon.
//!
//! On open, low latency is asked of the driver ([`super::serial_latency`]) and the `up` event
//! says what it got. With several speeds (`baud = [57600, 115200, 921600]`), each is tried for
//! [`BAUD_PROBE`] until valid frames arrive, as mavlink-router does; the `up` event names the
//! speed found. Bytes read at a wrong speed are scanned like any others (they are junk), and
//! each change of speed ends the stream, so no garbage is glued to the first real frame.

use super::clock;
use super::input::LinkInput;
use super::link_queue::LinkSender;
use super::serial_latency;
use crate::backoff::Backoff;
use crate::config::{Bauds, FlowControl};
use crate::link::LinkChange;
use crate::wire::scanner::{ScanItem, StreamScanner};
use crate::wire::signing::SigningKeys;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_serial::{SerialPort, SerialPortBuilderExt};

const FIRST_RETRY: Duration = Duration::from_millis(200);
const MAX_RETRY: Duration = Duration::from_secs(2);
/// An open device that neither fails nor hangs up within this long counts as up.
const SETTLE: Duration = Duration::from_millis(200);
/// With several speeds: how long one is given to show a valid frame.
pub const BAUD_PROBE: Duration = Duration::from_millis(1500);

pub struct SerialSettings {
    pub path: PathBuf,
    pub baud: Bauds,
    pub flow_control: FlowControl,
}

fn open(settings: &SerialSettings, baud: u32) -> Result<tokio_serial::SerialStream, String> {
    let flow = match settings.flow_control {
        FlowControl::None => tokio_serial::FlowControl::None,
        FlowControl::Hardware => tokio_serial::FlowControl::Hardware,
        FlowControl::Software => tokio_serial::FlowControl::Software,
    };
    let path = settings.path.to_string_lossy().to_string();
    let mut port = tokio_serial::new(&path, baud)
        .flow_control(flow)
        .open_native_async()
        .map_err(|e| format!("cannot open {path}: {e}"))?;
    // Several readers of one device would each get part of the stream.
    let _ = port.set_exclusive(true);
    Ok(port)
}

/// Which speed is in use, and whether it is known to be right.
struct Speeds<'a> {
    all: &'a [u32],
    at: usize,
    /// A valid frame arrived at the current speed (always, with one speed given).
    found: bool,
    /// Watches the bytes for a valid frame while the speed is not yet found.
    probe: StreamScanner,
    keys: SigningKeys,
}

impl<'a> Speeds<'a> {
    fn new(bauds: &'a Bauds, start: usize) -> Self {
        Speeds {
            all: bauds.all(),
            at: start,
            found: !bauds.is_list(),
            probe: StreamScanner::new(),
            keys: SigningKeys::new(Vec::new(), false),
        }
    }

    fn current(&self) -> u32 {
        self.all[self.at]
    }

    /// Whether `bytes` complete a valid frame at the current speed.
    fn shows_frames(&mut self, bytes: &[u8]) -> bool {
        self.probe.push(bytes);
        while let Some(item) = self.probe.next_item(&self.keys) {
            if matches!(item, ScanItem::Frame(_)) {
                return true;
            }
        }
        false
    }

    /// On to the next speed; `true` when the list starts over.
    fn next(&mut self) -> bool {
        self.probe = StreamScanner::new();
        self.at = (self.at + 1) % self.all.len();
        self.at == 0
    }

    fn list(&self) -> String {
        let all: Vec<String> = self.all.iter().map(u32::to_string).collect();
        all.join(", ")
    }
}

pub async fn run(
    name: String,
    settings: SerialSettings,
    queue: LinkSender,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut retry = Backoff::new(FIRST_RETRY, MAX_RETRY);
    // `Some(reason)` once `down` was reported, so a device that stays missing is reported once.
    let mut reported_down: Option<String> = None;
    let mut buf = vec![0u8; 4096];
    // The speed found last time is tried first when the device comes back.
    let mut start = 0usize;
    // Each opening (and each speed tried) is a stream of its own for the scanner.
    let mut conn = 0u64;
    'outer: loop {
        let mut speeds = Speeds::new(&settings.baud, start);
        let failure = match open(&settings, speeds.current()) {
            Err(reason) => reason,
            Ok(mut port) => {
                let low_latency = serial_latency::set(port.as_raw_fd(), &settings.path).describe();
                let up_detail = |speeds: &Speeds| {
                    let at = if speeds.all.len() > 1 {
                        format!(
                            "at {} baud (found by valid frames; tried in turn: {})",
                            speeds.current(),
                            speeds.list()
                        )
                    } else {
                        format!("at {} baud", speeds.current())
                    };
                    format!("{} {at}; {low_latency}", settings.path.display())
                };
                let mut up = false;
                let settle = tokio::time::sleep(SETTLE);
                tokio::pin!(settle);
                let probe = tokio::time::sleep(BAUD_PROBE);
                tokio::pin!(probe);
                conn += 1;
                loop {
                    let read = tokio::select! {
                        biased;
                        _ = shutdown.changed() => break 'outer,
                        _ = &mut settle, if !up && speeds.found => {
                            up = true;
                            let detail = up_detail(&speeds);
                            if queue.note(LinkChange::Up { at: clock::stamp(), detail }).await.is_err() {
                                break 'outer;
                            }
                            reported_down = None;
                            retry.succeeded();
                            continue;
                        }
                        _ = &mut probe, if !speeds.found => {
                            // No valid frame at this speed: its bytes end as a stream, and the
                            // next speed starts afresh.
                            if queue.offer(0, |at| LinkInput::StreamEnd { at, conn }).is_err() {
                                break 'outer;
                            }
                            conn += 1;
                            let wrapped = speeds.next();
                            if let Err(e) = port.set_baud_rate(speeds.current()) {
                                break format!("cannot set {} baud: {e}", speeds.current());
                            }
                            tracing::debug!(link = %name, baud = speeds.current(), "trying the next speed");
                            if wrapped && reported_down.is_none() {
                                let reason = format!(
                                    "no valid MAVLink frames at any of {} baud; trying them again",
                                    speeds.list()
                                );
                                tracing::warn!(link = %name, %reason, "serial link down");
                                let down = LinkChange::Down { at: clock::stamp(), reason: reason.clone() };
                                if queue.note(down).await.is_err() {
                                    break 'outer;
                                }
                                reported_down = Some(reason);
                            }
                            probe.as_mut().reset(tokio::time::Instant::now() + BAUD_PROBE);
                            continue;
                        }
                        r = port.read(&mut buf) => r,
                    };
                    match read {
                        Ok(0) => break "end of file (device closed)".to_string(),
                        Ok(n) => {
                            tracing::trace!(link = %name, bytes = n, "serial read");
                            let bytes = buf[..n].to_vec();
                            let found_now = !speeds.found && speeds.shows_frames(&bytes);
                            let offered = queue.offer(n, |at| LinkInput::Stream {
                                at,
                                conn,
                                src_json: None,
                                bytes,
                            });
                            if offered.is_err() {
                                break 'outer;
                            }
                            if found_now {
                                speeds.found = true;
                                start = speeds.at;
                                tracing::info!(link = %name, baud = speeds.current(), "serial speed found");
                            }
                            if !up && speeds.found {
                                up = true;
                                let detail = up_detail(&speeds);
                                let at = clock::stamp();
                                if queue.note(LinkChange::Up { at, detail }).await.is_err() {
                                    break 'outer;
                                }
                                reported_down = None;
                                retry.succeeded();
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => break format!("read failed: {e}"),
                    }
                }
            }
        };
        if reported_down.is_none() {
            tracing::warn!(link = %name, reason = %failure, "serial link down; retrying");
            let down = LinkChange::Down {
                at: clock::stamp(),
                reason: failure.clone(),
            };
            if queue.note(down).await.is_err() {
                break;
            }
            reported_down = Some(failure);
        } else if queue
            .offer(0, |at| LinkInput::StreamEnd { at, conn })
            .is_err()
        {
            // Down already (no speed found): the device going away ends the open stream.
            break;
        }
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            _ = tokio::time::sleep(retry.failed(0.0)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::heartbeat_v2 as hb;

    #[test]
    fn a_list_of_speeds_is_found_by_frames_and_starts_over_at_its_end() {
        let bauds = {
            let c = crate::config::Config::parse(
                "[[link]]\nname = \"u\"\nserial = \"/dev/ttyS9\"\nbaud = [57600, 115200]\n",
                std::path::Path::new("t.toml"),
            )
            .unwrap();
            match &c.links[0].kind {
                crate::config::LinkTransport::Serial { baud, .. } => baud.clone(),
                _ => unreachable!(),
            }
        };
        let mut s = Speeds::new(&bauds, 0);
        assert!(!s.found);
        assert!(!s.shows_frames(b"\x00\xff\x13garbage at the wrong speed"));
        assert!(!s.next());
        assert_eq!(s.current(), 115200);
        let frame = hb(1, 1);
        assert!(!s.shows_frames(&frame[..8]), "half a frame is not yet one");
        assert!(s.shows_frames(&frame[8..]));
        assert!(s.next(), "past the last speed the list starts over");
        assert_eq!(
            (s.current(), s.list()),
            (57600, "57600, 115200".to_string())
        );
        assert!(
            Speeds::new(&Bauds::one(9600), 0).found,
            "one speed is taken as given"
        );
    }
}
