//! A serial link. The device may be missing at start, vanish (EOF, EIO, ENOENT) and come back:
//! each case is `link down`, a retry with backoff (never a busy loop: a dead pty gives EOF
//! forever), and `link up` when it is readable again. Never fatal to the daemon.

use super::clock;
use super::input::LinkInput;
use super::link_queue::LinkSender;
use crate::backoff::Backoff;
use crate::config::FlowControl;
use crate::link::LinkChange;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio_serial::SerialPortBuilderExt;

const FIRST_RETRY: Duration = Duration::from_millis(200);
const MAX_RETRY: Duration = Duration::from_secs(2);
/// An open device that neither fails nor hangs up within this long counts as up.
const SETTLE: Duration = Duration::from_millis(200);

pub struct SerialSettings {
    pub path: PathBuf,
    pub baud: u32,
    pub flow_control: FlowControl,
}

fn open(settings: &SerialSettings) -> Result<tokio_serial::SerialStream, String> {
    let flow = match settings.flow_control {
        FlowControl::None => tokio_serial::FlowControl::None,
        FlowControl::Hardware => tokio_serial::FlowControl::Hardware,
        FlowControl::Software => tokio_serial::FlowControl::Software,
    };
    let path = settings.path.to_string_lossy().to_string();
    let mut port = tokio_serial::new(&path, settings.baud)
        .flow_control(flow)
        .open_native_async()
        .map_err(|e| format!("cannot open {path}: {e}"))?;
    // Several readers of one device would each get part of the stream.
    let _ = port.set_exclusive(true);
    Ok(port)
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
    'outer: loop {
        let failure = match open(&settings) {
            Err(reason) => reason,
            Ok(mut port) => {
                let mut up = false;
                let settle = tokio::time::sleep(SETTLE);
                tokio::pin!(settle);
                loop {
                    let read = tokio::select! {
                        biased;
                        _ = shutdown.changed() => break 'outer,
                        _ = &mut settle, if !up => {
                            up = true;
                            let detail = format!("{} at {} baud", settings.path.display(), settings.baud);
                            if queue.note(LinkChange::Up { at: clock::stamp(), detail }).await.is_err() {
                                break 'outer;
                            }
                            reported_down = None;
                            retry.succeeded();
                            continue;
                        }
                        r = port.read(&mut buf) => r,
                    };
                    match read {
                        Ok(0) => break "end of file (device closed)".to_string(),
                        Ok(n) => {
                            if !up {
                                up = true;
                                let detail = format!(
                                    "{} at {} baud",
                                    settings.path.display(),
                                    settings.baud
                                );
                                let at = clock::stamp();
                                if queue.note(LinkChange::Up { at, detail }).await.is_err() {
                                    break 'outer;
                                }
                                reported_down = None;
                                retry.succeeded();
                            }
                            tracing::trace!(link = %name, bytes = n, "serial read");
                            let bytes = buf[..n].to_vec();
                            let offered = queue.offer(n, |at| LinkInput::Stream { at, bytes });
                            if offered.is_err() {
                                break 'outer;
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
        }
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            _ = tokio::time::sleep(retry.failed(0.0)) => {}
        }
    }
}
