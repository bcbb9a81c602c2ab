//! `reload --pid PID`: tells a running daemon to close its files and open new ones, by sending it
//! SIGHUP. The unit's `ExecReload=` runs this verb rather than `/bin/kill`, because a bare Debian
//! has no procps, and there `systemctl reload` failed with 203/EXEC; the binary itself is always
//! installed. (systemd 252, Debian 12's, has no `Type=notify-reload` to do this without a verb.)

use super::{Exit, UsageError};
use anyhow::Context;
use clap::Args;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

#[derive(Debug, Args)]
pub struct ReloadArgs {
    /// The daemon's process id (the unit passes `$MAINPID`).
    #[arg(long)]
    pub pid: i32,
}

pub fn run(args: ReloadArgs) -> anyhow::Result<Exit> {
    let pid = checked_pid(args.pid)?;
    kill(pid, Signal::SIGHUP).with_context(|| format!("cannot send SIGHUP to process {pid}"))?;
    Ok(Exit::Success)
}

/// `kill(2)` reads 0 and negative ids as process groups (-1: every process it may signal), and
/// an empty `$MAINPID` would come in as 0: only a single process is ever a valid target.
fn checked_pid(pid: i32) -> Result<Pid, UsageError> {
    if pid > 1 {
        Ok(Pid::from_raw(pid))
    } else {
        Err(UsageError(format!(
            "--pid {pid}: give the daemon's process id (greater than 1)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_single_process_is_a_target() {
        for pid in [i32::MIN, -1, 0, 1] {
            assert!(checked_pid(pid).is_err(), "{pid}");
        }
        assert_eq!(checked_pid(4242).unwrap(), Pid::from_raw(4242));
    }
}
