//! Helpers shared by the integration tests: where the corpus is, and the built binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod browser;
pub mod mutate;
pub mod nats;
pub mod net;
pub mod notify;

#[allow(unused_imports)] // each test or bench uses some of them
pub use net::{connect_from, http_get};

/// Valid frames pymavlink does not return, which we do: (file, message, sysid:compid).
///
/// olivieri_20211208-151717 at byte 167,911: a record whose frame was cut after 17 of its 40
/// bytes. pymavlink reads the 40 bytes the header claims, swallowing the next record (a HEARTBEAT
/// from 10:1 with a valid CRC), and counts one bad frame. We resynchronise on the next record and
/// keep the heartbeat: it is a real receipt, and losing it would invent a heartbeat gap.
pub const PYMAVLINK_LOSES: &[(&str, &str, &str)] =
    &[("olivieri_20211208-151717", "HEARTBEAT", "10:1")];

/// `$FOXBORNE_CORPUS`, or `../shared/corpus` beside the crate.
///
/// Tests that read it carry `#[cfg_attr(foxborne_no_corpus, ignore = ...)]`: the build script
/// sets that cfg when the corpus is missing at build time (and `FOXBORNE_REQUIRE_CORPUS` is not
/// `1`), so a missing corpus shows as ignored tests in the summary, never as passes. A test that
/// runs and does not find it (or a file it names) fails.
pub fn corpus_dir() -> PathBuf {
    let dir = std::env::var_os("FOXBORNE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    assert!(
        dir.is_dir(),
        "corpus not found at {} (set FOXBORNE_CORPUS)",
        dir.display()
    );
    dir
}

/// One named corpus file (`sub/name`); fails the test when it is missing.
pub fn corpus_file(sub: &str, name: &str) -> PathBuf {
    let path = corpus_dir().join(sub).join(name);
    assert!(path.is_file(), "corpus file missing: {}", path.display());
    path
}

/// Files in a corpus subfolder with the given extension, sorted.
pub fn corpus_files(sub: &str, ext: &str) -> Vec<PathBuf> {
    let dir = corpus_dir().join(sub);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .{ext} files in {}", dir.display());
    files
}

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_foxborne-receiver"))
}

/// Fails the test, saying `what`, the exit status and the stderr, unless `out` is a success.
pub fn assert_success(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `command` to its end (its stdout and stderr captured); fails the test unless it
/// succeeded (see [`assert_success`]). Its output.
pub fn run_ok(command: &mut std::process::Command, what: &str) -> std::process::Output {
    let out = command.output().unwrap();
    assert_success(&out, what);
    out
}

/// Fails the test, with its stderr, unless `out` is an exit with `code`.
pub fn assert_exit(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `foxborne-receiver ulog ingest LOG --out OUT`, more arguments to be added.
pub fn ulog_ingest(log: &Path, out: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(binary());
    command
        .args(["ulog", "ingest"])
        .arg(log)
        .arg("--out")
        .arg(out);
    command
}

/// `check-config` of `text` (`{dir}` standing for the scratch folder it is written in): its
/// exit code, stdout and stderr.
pub fn check_config(text: &str) -> (Option<i32>, String, String) {
    let dir = scratch("check");
    let path = dir.join("receiver.toml");
    std::fs::write(&path, text.replace("{dir}", dir.to_str().unwrap())).unwrap();
    let out = std::process::Command::new(binary())
        .args(["check-config", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// `check-config` refuses `text` (exit 78, EX_CONFIG) with a message that names every one of
/// `names`.
pub fn assert_config_refused(text: &str, names: &[&str]) {
    let (code, _, err) = check_config(text);
    assert_eq!(code, Some(78), "{err}");
    assert!(names.iter().all(|name| err.contains(name)), "{err}");
}

/// Runs `command` to its end, its stderr captured and its stdout too when `keep_stdout` (else
/// discarded), and returns its output with the peak resident set of that one child in bytes
/// (`wait4`'s rusage). Unlike `getrusage`'s
/// `RUSAGE_CHILDREN`, which gives the largest peak of every child the process has waited for,
/// this is the child's own, whatever other children ran beside it; but it starts at the
/// spawning process's own peak, so only a small process measures with it (`tests/memory`).
// The child is reaped by `wait4` below, which std's `Child` does not know of.
#[allow(clippy::zombie_processes)]
pub fn run_with_peak_rss(
    command: &mut std::process::Command,
    keep_stdout: bool,
) -> (std::process::Output, u64) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(if keep_stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).unwrap();
            bytes
        })
    };
    let stdout = child.stdout.take().map(|pipe| drain(Box::new(pipe)));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as nix::libc::pid_t;
    let mut status = 0;
    // SAFETY: plain libc call on a zeroed rusage; the child is ours and not yet reaped (std only
    // reaps in wait(), which is never called on `child`).
    let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { nix::libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    let output = std::process::Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: stdout.map(|s| s.join().unwrap()).unwrap_or_default(),
        stderr: stderr.join().unwrap(),
    };
    // Linux gives ru_maxrss in KiB.
    (output, usage.ru_maxrss as u64 * 1024)
}

/// The needle for the daemon's one log line per link event, `link up link=NAME` or `link down
/// link=NAME`, for [`Daemon::wait_for`]. A serial or TCP link also logs "serial link down;
/// retrying" for the same event: a needle matching both lines would leave one unclaimed, and a
/// later wait would return at once on that stale line, a round early.
pub fn link_event(state: &str, link: &str) -> String {
    format!("link {state} link={link}")
}

/// `python` running the suite's script `tests/{script}`, its arguments to be added.
pub fn python_script(python: &Path, script: &str) -> std::process::Command {
    let mut command = std::process::Command::new(python);
    command.arg(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(script),
    );
    command
}

/// `command` spawned with its stdin and stdout piped: a script the test talks to.
pub fn spawn_talking(command: &mut std::process::Command) -> Child {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `command` to its end, fails the test (with its stderr) unless it succeeded, and reads
/// its standard output as JSON lines.
#[allow(dead_code)]
pub fn json_lines(command: &mut std::process::Command) -> Vec<serde_json::Value> {
    let what = format!("{command:?}");
    let out = run_ok(command, &what);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{what}: {e}: {l}")))
        .collect()
}

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The built daemon, running with a config in its own temp dir; its stderr is read line by line
/// so tests wait for what it says instead of sleeping.
pub struct Daemon {
    pub child: Child,
    pub dir: PathBuf,
    lines: mpsc::Receiver<String>,
    /// Every stderr line read so far, in order.
    pub seen: Vec<String>,
    /// Indexes into `seen` already returned by [`Daemon::wait_for`].
    claimed: std::collections::HashSet<usize>,
    /// The HTTP address, once read from the log.
    http: Option<String>,
}

impl Daemon {
    /// `config` may use `{dir}` for the daemon's temp dir.
    pub fn start(name: &str, config: &str) -> Daemon {
        Self::start_with_env(name, config, &[])
    }

    /// As [`Daemon::start`], with extra environment variables (`{dir}` expanded in values too).
    pub fn start_with_env(name: &str, config: &str, env: &[(&str, &str)]) -> Daemon {
        Self::start_customized(name, config, env, |_| {})
    }

    /// As [`Daemon::start_with_env`], with a last say over the command (e.g. resource limits).
    pub fn start_customized(
        name: &str,
        config: &str,
        env: &[(&str, &str)],
        customize: impl FnOnce(&mut Command),
    ) -> Daemon {
        Self::start_verb(name, "run", config, env, customize)
    }

    /// As [`Daemon::start`], with files laid down in its temp dir (given as the argument)
    /// before the daemon starts.
    pub fn start_prepared(name: &str, config: &str, prepare: impl FnOnce(&Path)) -> Daemon {
        Self::start_in(name, "run", config, &[], |_| {}, prepare)
    }

    /// The binary's `verb` (`run`, `range`) with `--config` in its own temp dir.
    pub fn start_verb(
        name: &str,
        verb: &str,
        config: &str,
        env: &[(&str, &str)],
        customize: impl FnOnce(&mut Command),
    ) -> Daemon {
        Self::start_in(name, verb, config, env, customize, |_| {})
    }

    fn start_in(
        name: &str,
        verb: &str,
        config: &str,
        env: &[(&str, &str)],
        customize: impl FnOnce(&mut Command),
        prepare: impl FnOnce(&Path),
    ) -> Daemon {
        let dir = std::env::temp_dir().join(format!("foxborne-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        prepare(&dir);
        let config = config.replace("{dir}", dir.to_str().unwrap());
        std::fs::write(dir.join("receiver.toml"), config).unwrap();
        let mut command = Command::new(binary());
        for (k, v) in env {
            command.env(k, v.replace("{dir}", dir.to_str().unwrap()));
        }
        command
            .args([verb, "--config"])
            .arg(dir.join("receiver.toml"))
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .stdout(Stdio::null());
        customize(&mut command);
        let mut child = command.spawn().unwrap();
        let lines = line_channel(child.stderr.take().unwrap());
        Daemon {
            child,
            dir,
            lines,
            seen: Vec::new(),
            claimed: Default::default(),
            http: None,
        }
    }

    /// As [`Daemon::start`] with a `config` whose UDP link is `radio1`, once the daemon says it
    /// started (within 20 s): the daemon, and `radio1`'s address.
    pub fn start_radio1(name: &str, config: &str) -> (Daemon, std::net::SocketAddr) {
        let mut d = Self::start(name, config);
        let udp = d.udp_addr("radio1");
        d.wait_for("receiver started", Duration::from_secs(20));
        (d, udp)
    }

    /// Waits for a stderr line containing `needle` that no earlier `wait_for` returned, wherever
    /// it stands in the output: lines already read while waiting for something else count too,
    /// so a wait never depends on the order in which the daemon's tasks happen to log. Panics
    /// with everything the daemon said if no such line comes within `timeout`.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> String {
        let unclaimed = (0..self.seen.len())
            .find(|i| !self.claimed.contains(i) && self.seen[*i].contains(needle));
        if let Some(i) = unclaimed {
            self.claimed.insert(i);
            return self.seen[i].clone();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        self.claimed.insert(self.seen.len() - 1);
                        return line;
                    }
                }
                Err(_) => panic!(
                    "daemon never said {needle:?}; it said:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Whether the daemon has said `needle` so far (takes what it printed, without waiting).
    pub fn has_said(&mut self, needle: &str) -> bool {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen.iter().any(|l| l.contains(needle))
    }

    /// The local HTTP port's address (from its `http listening` line).
    pub fn http_addr(&mut self) -> String {
        if let Some(http) = &self.http {
            return http.clone();
        }
        let line = self.wait_for("http listening", Duration::from_secs(10));
        let local = line.split("local=").nth(1).expect("local= in the line");
        let http = local.split_whitespace().next().unwrap().to_string();
        self.http = Some(http.clone());
        http
    }

    /// The UDP address a link bound (from its `listening` line).
    pub fn udp_addr(&mut self, link: &str) -> std::net::SocketAddr {
        self.local_addr(&format!("link={link} local="))
    }

    /// The TCP address a forward output listens on (from its `forward listening` line).
    pub fn forward_addr(&mut self, forward: &str) -> std::net::SocketAddr {
        self.local_addr(&format!("forward={forward} local="))
    }

    /// The address a log line containing `marker` gives after `local=`.
    fn local_addr(&mut self, marker: &str) -> std::net::SocketAddr {
        let line = self.wait_for(marker, Duration::from_secs(10));
        line.rsplit("local=")
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no local= in {line}"))
            .parse()
            .unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Every line of the events file so far.
    /// The `up` and `down` states of `link`'s `link` events, in order.
    pub fn link_states(&self, link: &str) -> Vec<String> {
        self.events()
            .iter()
            .filter(|e| e["kind"] == "link" && e["link"] == link)
            .filter_map(|e| e["state"].as_str().map(String::from))
            .filter(|s| s == "up" || s == "down")
            .collect()
    }

    pub fn events(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.join("data/events/current.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    /// SIGTERM, then wait for the exit status.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        let status = self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
            self.seen.push(line);
        }
        status
    }

    /// Every receive-log line, file by file in name order.
    pub fn receive_files(&self) -> Vec<(PathBuf, Vec<serde_json::Value>)> {
        let mut files = Vec::new();
        let root = self.dir.join("data/receive");
        let mut days: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        days.sort();
        for day in days {
            let mut names: Vec<_> = std::fs::read_dir(&day)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            names.sort();
            for path in names {
                let mut text = std::fs::read_to_string(&path).unwrap();
                if !text.is_empty() && !text.ends_with('\n') {
                    // Read while the daemon writes: a read may see a write of whole lines that
                    // is still being copied in (Linux makes no read atomic against a write).
                    // At rest the file must end on a whole line.
                    assert!(self.running(), "{} ends inside a line", path.display());
                    text.truncate(text.rfind('\n').map_or(0, |i| i + 1));
                }
                let lines = text
                    .lines()
                    .map(|l| {
                        serde_json::from_str(l)
                            .unwrap_or_else(|e| panic!("{}: {e}: {l}", path.display()))
                    })
                    .collect();
                files.push((path, lines));
            }
        }
        files
    }

    /// Whether the daemon is still running (not exited, nor a zombie awaiting `wait`).
    pub fn running(&self) -> bool {
        std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    }

    pub fn receipts(&self) -> Vec<serde_json::Value> {
        self.receive_files()
            .into_iter()
            .flat_map(|(_, lines)| lines)
            .collect()
    }

    /// Every frame of the daemon's raw `.tlog` files (`tlog = true`), as received, in order.
    pub fn recorded_frames(&self) -> Vec<Vec<u8>> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.dir.join("data/tlog"))
            .unwrap()
            .map(|day| day.unwrap().path())
            .filter(|day| day.is_dir() && !day.is_symlink())
            .flat_map(|day| std::fs::read_dir(day).unwrap())
            .map(|f| f.unwrap().path())
            .collect();
        files.sort();
        files.iter().flat_map(|f| tlog_frames(f)).collect()
    }
}

/// A receipt's or event's RFC 3339 time (`recv_utc`, `last_recv_utc`), in milliseconds.
pub fn utc_ms(v: &serde_json::Value) -> i64 {
    let text = v.as_str().unwrap_or_else(|| panic!("not a time: {v}"));
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .timestamp_millis()
}

/// Every frame of a `.tlog`, byte for byte, in order (records that are no frame, a bad CRC or a
/// record cut by the end of the file, left out).
pub fn tlog_frames(file: &Path) -> Vec<Vec<u8>> {
    use foxborne_receiver::tlog::TlogReader;
    use foxborne_receiver::wire::signing::SigningKeys;
    use foxborne_receiver::wire::ScanItem;
    let bytes = std::fs::read(file).unwrap();
    let keys = SigningKeys::new(Vec::new(), false);
    TlogReader::new(&bytes, &keys)
        .filter_map(|record| match record.item {
            ScanItem::Frame(f) => Some(f.bytes.to_vec()),
            ScanItem::Reject(_) => None,
        })
        .collect()
}

impl Drop for Daemon {
    /// Kills the daemon and removes its folder; a failed test keeps the folder to look at.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A MAVLink header from `sysid`, component 1, with sequence number `seq`.
pub fn header(sysid: u8, seq: u8) -> foxborne_receiver::wire::build::Header {
    foxborne_receiver::wire::build::Header {
        sysid,
        compid: 1,
        seq,
    }
}

/// The lines of `pipe` (a child's output) as they come, read on a thread of their own until it
/// closes or the receiver is dropped.
pub fn line_channel(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// Polls `condition` until it holds or `timeout` passes: for state only visible in files.
pub fn eventually(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    condition()
}

/// pymavlink's view of a corpus tlog (`expected-pymavlink/NAME.pymavlink.json`).
pub fn pymavlink_expected(tlog: &std::path::Path) -> serde_json::Value {
    let name = tlog.file_stem().unwrap().to_string_lossy().to_string();
    let path = tlog
        .parent()
        .unwrap()
        .join(format!("expected-pymavlink/{name}.pymavlink.json"));
    serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}
/// Every `.ulg` in the corpus, sorted by name.
pub fn corpus_logs() -> Vec<PathBuf> {
    corpus_files("ulog", "ulg")
}

/// The findings of kind `kind` in an ingest report.
pub fn found<'a>(
    r: &'a foxborne_receiver::ulog::report::Report,
    kind: &str,
) -> Vec<&'a foxborne_receiver::ulog::report::Finding> {
    r.findings.iter().filter(|f| f.kind == kind).collect()
}

/// pyulog's view of a corpus log.
pub fn oracle(log: &std::path::Path) -> serde_json::Value {
    let stem = log.file_stem().unwrap().to_string_lossy();
    let path = log
        .parent()
        .unwrap()
        .join("expected-pyulog-1.3.0")
        .join(format!("{stem}.pyulog.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// A pty pair with `link` pointing at its slave, like socat's `link=`: the returned master is
/// the far end of a serial cable. Dropping it unplugs the device.
pub fn pty_at(link: &std::path::Path) -> std::os::fd::OwnedFd {
    use nix::fcntl::OFlag;
    use std::os::fd::{FromRawFd, IntoRawFd};
    // Close-on-exec from the start: the suite's other tests spawn children all the time, and a
    // child that inherited the master would hold the pty open after the test drops it, so the
    // daemon would never see the unplug (openpty's descriptors are inheritable).
    let master =
        nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC).unwrap();
    nix::pty::grantpt(&master).unwrap();
    nix::pty::unlockpt(&master).unwrap();
    let slave_path = nix::pty::ptsname_r(&master).unwrap();
    let tmp = link.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&slave_path, &tmp).unwrap();
    std::fs::rename(&tmp, link).unwrap();
    // SAFETY: the descriptor is ours alone, taken out of the PtyMaster that owned it.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(master.into_raw_fd()) }
}

/// The next value from `events` (an SSE reader's channel) that satisfies `wanted`, skipping the
/// others; panics if none comes within `timeout`, so no wait on the stream can hang a test.
pub fn next_event(
    events: &mpsc::Receiver<serde_json::Value>,
    timeout: Duration,
    mut wanted: impl FnMut(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(event) if wanted(&event) => return event,
            Ok(_) => {}
            Err(e) => panic!("no wanted event within {timeout:?} ({e})"),
        }
    }
}

/// The daemon's `/status` now.
/// Polls `/status` until `wanted` holds of it or `timeout` passes; the last status read, and
/// whether it held.
pub fn status_until(
    http: &str,
    timeout: Duration,
    mut wanted: impl FnMut(&serde_json::Value) -> bool,
) -> (serde_json::Value, bool) {
    let mut last = serde_json::Value::Null;
    let held = eventually(timeout, || {
        last = status(http);
        wanted(&last)
    });
    (last, held)
}

/// The files of a file set's day folders under `root` (`<root>/YYYY-MM-DD/*`), in name order.
pub fn dated_files(root: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .flat_map(|day| std::fs::read_dir(day).unwrap())
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    files
}

pub fn status(http: &str) -> serde_json::Value {
    serde_json::from_str(&http_get(http, "/status")).unwrap()
}

/// One entry of a `/status` list (`links`, `forwards`, `webhooks`), by name. Until the pipeline publishes its
/// first snapshot the lists are empty: asked for again, for up to 10 s.
pub fn status_entry(http: &str, list: &str, name: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = status(http);
        let entry = status[list]
            .as_array()
            .and_then(|entries| entries.iter().find(|e| e["name"] == name))
            .cloned();
        match entry {
            Some(entry) => return entry,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            None => panic!("no {list} entry {name} in {status}"),
        }
    }
}

/// What the receiver itself dropped (queue overload and kernel), over every link, per `/status`.
pub fn receiver_dropped(http: &str) -> u64 {
    status(http)["links"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["dropped"].as_object().unwrap().values())
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// One named corpus log (fails the test when it is missing; tests that read the corpus are
/// ignored when it is absent at build time, see [`corpus_dir`]).
pub fn corpus_log(name: &str) -> PathBuf {
    corpus_file("ulog", name)
}

/// A Python with pyulog, pyarrow, pandas and numpy (the ULog references); see [`python_with`].
pub fn python() -> PathBuf {
    python_with(&["pyulog", "pyarrow", "pandas", "numpy"])
}

/// `$FOXBORNE_PYTHON`, else the crate's `.venv/bin/python`, which must import every one of
/// `modules`. A test that calls this is `#[cfg_attr(foxborne_no_python, ignore = ...)]`: the
/// build script found no such Python and the test shows as ignored; so here a missing one is a
/// failure, never a silent pass.
pub fn python_with(modules: &[&str]) -> PathBuf {
    let path = std::env::var_os("FOXBORNE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"));
    let imports = std::process::Command::new(&path)
        .args(["-c", &format!("import {}", modules.join(", "))])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        imports,
        "no Python with {} at {} (set FOXBORNE_PYTHON or pip install them into .venv; see docs/testing.md)",
        modules.join(", "),
        path.display()
    );
    path
}

/// The Python with pymavlink and MAVProxy, and MAVProxy's `mavproxy.py` beside it. A test
/// that calls this is `#[cfg_attr(foxborne_no_mavproxy, ignore = ...)]` (see [`python_with`]).
pub fn mavproxy() -> (PathBuf, PathBuf) {
    let python = python_with(&["pymavlink", "MAVProxy"]);
    let script = python.with_file_name("mavproxy.py");
    assert!(
        script.is_file(),
        "no mavproxy.py beside {} (pip install MAVProxy)",
        python.display()
    );
    (python, script)
}

/// A scratch folder for one test, removed when it goes out of scope (kept when the test fails,
/// to look at). Dereferences to its path.
pub struct Scratch(Option<tempfile::TempDir>);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        self.0.as_ref().expect("present until dropped").path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(dir) = self.0.take() {
                eprintln!("kept for inspection: {}", dir.keep().display());
            }
        }
    }
}

pub fn scratch(name: &str) -> Scratch {
    Scratch(Some(
        tempfile::Builder::new()
            .prefix(&format!("foxborne-{name}-"))
            .tempdir()
            .unwrap(),
    ))
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        self
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        let path: &std::path::Path = self;
        path.as_os_str()
    }
}

/// One Server-Sent Event as a client sees it.
#[derive(Debug, Clone, Default)]
pub struct SseEvent {
    pub id: Option<String>,
    /// `None` for the default (`message`) type.
    pub event: Option<String>,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("{e}: {}", self.data))
    }
}

/// An `/events` client: its events on a channel (comments skipped), and the stream, so the
/// test can hang up. `connected` is received once the response head and the opening comment
/// have arrived, so events sent after it reach this client.
pub struct SseClient {
    pub events: mpsc::Receiver<SseEvent>,
    pub stream: std::net::TcpStream,
}

impl SseClient {
    pub fn connect(addr: &str, last_event_id: Option<&str>) -> SseClient {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        let resume = last_event_id
            .map(|id| format!("Last-Event-ID: {id}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n{resume}\r\n"
        )
        .unwrap();
        let reader = stream.try_clone().unwrap();
        let (tx, events) = mpsc::channel();
        let (opened_tx, opened) = mpsc::channel();
        std::thread::spawn(move || {
            let mut current = SseEvent::default();
            for line in BufReader::new(reader).lines().map_while(Result::ok) {
                // The body is chunked: chunk-size lines are hex digits alone, and the blank line
                // ending each event arrives as an empty line.
                let line = line.trim_end_matches('\r');
                if line.starts_with(": foxborne-receiver events") {
                    let _ = opened_tx.send(());
                } else if let Some(v) = line.strip_prefix("id: ").or(line.strip_prefix("id:")) {
                    current.id = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("event: ").or(line.strip_prefix("event:"))
                {
                    current.event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ").or(line.strip_prefix("data:")) {
                    current.data = v.to_string();
                } else if line.is_empty()
                    && !current.data.is_empty()
                    && tx.send(std::mem::take(&mut current)).is_err()
                {
                    break;
                }
            }
        });
        opened
            .recv_timeout(Duration::from_secs(10))
            .expect("the /events stream did not open");
        SseClient { events, stream }
    }

    /// The next event satisfying `wanted`, skipping others; panics after `timeout`.
    pub fn next(&self, timeout: Duration, wanted: impl Fn(&SseEvent) -> bool) -> SseEvent {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(e) if wanted(&e) => return e,
                Ok(_) => {}
                Err(e) => panic!("no wanted /events event within {timeout:?} ({e})"),
            }
        }
    }

    pub fn hang_up(self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// One raw HTTP exchange: `request` as written, the whole response as read until the server
/// closes (or 10 s pass).
pub fn http_raw(addr: &str, request: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The status code of a raw HTTP response.
pub fn status_code(response: &str) -> u16 {
    response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"))
}

/// A process's CPU time so far (user + system), from /proc.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

/// Raises this process's open-file limit to its hard limit (tests that hold many sockets).
pub fn raise_own_nofile() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    hard
}
