//! A systemd notify socket of the test's own, for `run` and `range` alike: the service is started
//! with `NOTIFY_SOCKET` naming it (and `WATCHDOG_USEC`, as systemd sets them), and the test reads
//! what the service tells systemd (READY=1, STATUS=, WATCHDOG=1, STOPPING=1).

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct NotifySocket {
    socket: UnixDatagram,
    path: PathBuf,
}

impl NotifySocket {
    /// A datagram socket bound at `dir/notify.sock`.
    pub fn bind(dir: &Path) -> NotifySocket {
        let path = dir.join("notify.sock");
        let socket = UnixDatagram::bind(&path).unwrap();
        NotifySocket { socket, path }
    }

    /// The environment systemd gives a `Type=notify` service with `WatchdogSec=`
    /// (`watchdog_usec` microseconds).
    pub fn env<'a>(&'a self, watchdog_usec: &'a str) -> Vec<(&'static str, &'a str)> {
        vec![
            ("NOTIFY_SOCKET", self.path.to_str().unwrap()),
            ("WATCHDOG_USEC", watchdog_usec),
        ]
    }

    /// The next datagram, or `None` if none came within `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<String> {
        self.socket.set_read_timeout(Some(timeout)).unwrap();
        let mut buf = [0u8; 4096];
        self.socket
            .recv(&mut buf)
            .ok()
            .map(|n| String::from_utf8_lossy(&buf[..n]).to_string())
    }

    /// The next datagram that starts with `prefix`, skipping the others; panics if none comes
    /// within `timeout`.
    pub fn wait(&self, prefix: &str, timeout: Duration) -> String {
        self.wait_matching(prefix, timeout, |m| m.starts_with(prefix))
    }

    /// The next datagram that satisfies `wanted` (`what` describes it), skipping the others;
    /// panics if none comes within `timeout`, naming the last one skipped.
    pub fn wait_matching(
        &self,
        what: &str,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        let mut last = None;
        while Instant::now() < deadline {
            if let Some(m) = self.next(Duration::from_millis(500)) {
                if wanted(&m) {
                    return m;
                }
                last = Some(m);
            }
        }
        panic!("no {what} notification within {timeout:?} (the last one: {last:?})");
    }

    /// For a loop wedged by the test (`FOXBORNE_TEST_STALL_FILE`): drops what was already on its
    /// way, then asserts that nothing at all (no WATCHDOG=1, no STATUS=) comes for `quiet`
    /// (longer than the ping period).
    pub fn assert_silent_for(&self, quiet: Duration) {
        while self.next(Duration::from_millis(700)).is_some() {}
        assert_eq!(
            self.next(quiet),
            None,
            "the service went on notifying while its loop was wedged"
        );
    }
}
