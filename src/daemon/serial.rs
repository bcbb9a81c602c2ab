//! A serial link. The device may be missing at start, vanish (EOF, EIO, ENOENT) and come back:
//! each case is `link down`, a retry with backoff (never a busy loop: a dead pty gives EOF
//! forever), and `link up` when it is readable again. Never fatal to the daemon.
//!
//! On open, low latency is asked of the driver ([`super::serial_latency`]) and the `up` event
//! says what it got. With several speeds (`baud = [57600, 115200, 921600]`), each is tried for
//! [`BAUD_PROBE`] until valid frames arrive, as mavlink-router does; the `up` event names the
//! speed found. Bytes read at a wrong speed are scanned like any others (they are junk), and
//! each change of speed ends the stream, so no garbage is glued to the first real frame.

use super::input::LinkInput;
use super::link_queue::LinkSender;
use super::serial_latency;
use crate::backoff::Backoff;
use crate::clock;
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
    shutdown: watch::Receiver<bool>,
) {
    let mut link = SerialLink {
        name,
        settings,
        queue,
        shutdown,
        retry: Backoff::new(FIRST_RETRY, MAX_RETRY),
        reported_down: None,
        start: 0,
        conn: 0,
    };
    // `Err(Stopped)`: shutdown, or the pipeline is gone.
    let _ = link.run().await;
}

/// The daemon is stopping, or the pipeline no longer takes input: the link task ends.
struct Stopped;

/// How reading an open device ended, when it ended on its own.
type Failure = String;

/// One serial link's task state across openings of its device.
struct SerialLink {
    name: String,
    settings: SerialSettings,
    queue: LinkSender,
    shutdown: watch::Receiver<bool>,
    retry: Backoff,
    /// `Some(reason)` once `down` was reported, so a device that stays missing is reported once.
    reported_down: Option<String>,
    /// The speed found last time, tried first when the device comes back.
    start: usize,
    /// Each opening (and each speed tried) is a stream of its own for the scanner.
    conn: u64,
}

impl SerialLink {
    /// Opens, reads until the device fails, reports it down, waits, and again.
    async fn run(&mut self) -> Result<(), Stopped> {
        loop {
            let failure = match open(&self.settings, self.settings.baud.all()[self.start]) {
                Err(reason) => reason,
                Ok(port) => self.read(port).await?,
            };
            if self.reported_down.is_none() {
                tracing::warn!(link = %self.name, reason = %failure, "serial link down; retrying");
                self.down(failure).await?;
            } else {
                // Down already (no speed found): the device going away ends the open stream.
                self.end_stream()?;
            }
            tokio::select! {
                biased;
                _ = self.shutdown.changed() => return Err(Stopped),
                _ = tokio::time::sleep(self.retry.failed(0.0)) => {}
            }
        }
    }

    /// Reads an open device until it fails (the reason returned), trying each speed in turn
    /// until one shows valid frames.
    async fn read(&mut self, mut port: tokio_serial::SerialStream) -> Result<Failure, Stopped> {
        let bauds = self.settings.baud.clone();
        let mut speeds = Speeds::new(&bauds, self.start);
        let low_latency = serial_latency::set(port.as_raw_fd(), &self.settings.path).describe();
        let mut buf = vec![0u8; 4096];
        let mut up = false;
        let settle = tokio::time::sleep(SETTLE);
        tokio::pin!(settle);
        let probe = tokio::time::sleep(BAUD_PROBE);
        tokio::pin!(probe);
        self.conn += 1;
        loop {
            let read = tokio::select! {
                biased;
                _ = self.shutdown.changed() => return Err(Stopped),
                _ = &mut settle, if !up && speeds.found => {
                    up = true;
                    self.up(&speeds, &low_latency).await?;
                    continue;
                }
                _ = &mut probe, if !speeds.found => {
                    if let Some(failure) = self.next_speed(&mut port, &mut speeds).await? {
                        return Ok(failure);
                    }
                    probe.as_mut().reset(tokio::time::Instant::now() + BAUD_PROBE);
                    continue;
                }
                r = port.read(&mut buf) => r,
            };
            match read {
                Ok(0) => return Ok("end of file (device closed)".to_string()),
                Ok(n) => {
                    tracing::trace!(link = %self.name, bytes = n, "serial read");
                    let bytes = buf[..n].to_vec();
                    let found_now = !speeds.found && speeds.shows_frames(&bytes);
                    let conn = self.conn;
                    self.queue
                        .offer(n, |at| LinkInput::Stream {
                            at,
                            conn,
                            src_json: None,
                            bytes,
                        })
                        .map_err(|_| Stopped)?;
                    if found_now {
                        speeds.found = true;
                        self.start = speeds.at;
                        tracing::info!(link = %self.name, baud = speeds.current(), "serial speed found");
                    }
                    if !up && speeds.found {
                        up = true;
                        self.up(&speeds, &low_latency).await?;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Ok(format!("read failed: {e}")),
            }
        }
    }

    /// No valid frame at this speed: its bytes end as a stream, and the next speed starts
    /// afresh. Past the last speed, the link is reported down (once) and the list starts over.
    /// `Some(failure)` when the device refused the speed.
    async fn next_speed(
        &mut self,
        port: &mut tokio_serial::SerialStream,
        speeds: &mut Speeds<'_>,
    ) -> Result<Option<Failure>, Stopped> {
        self.end_stream()?;
        self.conn += 1;
        let wrapped = speeds.next();
        if let Err(e) = port.set_baud_rate(speeds.current()) {
            return Ok(Some(format!("cannot set {} baud: {e}", speeds.current())));
        }
        tracing::debug!(link = %self.name, baud = speeds.current(), "trying the next speed");
        if wrapped && self.reported_down.is_none() {
            let reason = format!(
                "no valid MAVLink frames at any of {} baud; trying them again",
                speeds.list()
            );
            tracing::warn!(link = %self.name, %reason, "serial link down");
            self.down(reason).await?;
        }
        Ok(None)
    }

    async fn up(&mut self, speeds: &Speeds<'_>, low_latency: &str) -> Result<(), Stopped> {
        let at = if speeds.all.len() > 1 {
            format!(
                "at {} baud (found by valid frames; tried in turn: {})",
                speeds.current(),
                speeds.list()
            )
        } else {
            format!("at {} baud", speeds.current())
        };
        let detail = format!("{} {at}; {low_latency}", self.settings.path.display());
        let at = clock::stamp();
        self.queue
            .note(LinkChange::Up { at, detail })
            .await
            .map_err(|_| Stopped)?;
        self.reported_down = None;
        self.retry.succeeded();
        Ok(())
    }

    async fn down(&mut self, reason: String) -> Result<(), Stopped> {
        let down = LinkChange::Down {
            at: clock::stamp(),
            reason: reason.clone(),
        };
        self.queue.note(down).await.map_err(|_| Stopped)?;
        self.reported_down = Some(reason);
        Ok(())
    }

    fn end_stream(&self) -> Result<(), Stopped> {
        let conn = self.conn;
        self.queue
            .offer(0, |at| LinkInput::StreamEnd { at, conn })
            .map(drop)
            .map_err(|_| Stopped)
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
