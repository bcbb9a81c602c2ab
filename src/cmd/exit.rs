//! The process exit codes: one table ([`Exit`]), and every rule that picks one of its codes
//! (docs/design.md "One binary, several verbs", "Exit codes"). Each verb returns an `Exit` or an
//! error; [`Exit::for_error`] is the one place an error becomes a code, [`Exit::from`] a ULog's
//! status, and [`Exit::worst`] the code of a batch of files.

use crate::analyze::WrongKindOfFile;
use crate::config::ConfigError;
use crate::ulog::export::BatchError;
use crate::ulog::inspect::InspectError;
use crate::ulog::report::Status;
use crate::ulog::ReadError;

/// How the process ends. The numbers are the contract: scripts and the systemd unit read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done. A closed output pipe (`... | head`) is success too: the reader had all it
    /// wanted.
    Success = 0,
    /// 1: a runtime failure: a file that cannot be read or written, a daemon that cannot start
    /// or could not write what it received, a ground record refused, a run not catalogued.
    Failure = 1,
    /// 2: usage: what the command line asks cannot be done (no files, no such message, two logs
    /// exporting to one folder, no `--sysid` where the log has none). clap's own parse errors
    /// exit 2 as well.
    Usage = 2,
    /// 3: a ULog quarantined: it ends inside a message (truncated), has malformed messages or no
    /// data at all; nothing from it is reported as complete.
    Quarantined = 3,
    /// 4: a file rejected: encrypted, not a ULog (or not the kind of file the verb reads),
    /// unsupported incompatible flags, or not what its SHA-256 manifest says.
    Rejected = 4,
    /// 78: bad config (`EX_CONFIG` of sysexits.h): the file cannot be read or parsed, or a key
    /// is missing or out of range; the error names the file and the key.
    BadConfig = 78,
}

impl Exit {
    /// The number the process exits with.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The code of a batch of files: its worst file's, failure over rejected over quarantined
    /// over success (usage and bad config, which stop a verb before its files, over all).
    pub fn worst(self, other: Exit) -> Exit {
        let rank = |e: Exit| match e {
            Exit::Success => 0,
            Exit::Quarantined => 1,
            Exit::Rejected => 2,
            Exit::Failure => 3,
            Exit::Usage => 4,
            Exit::BadConfig => 5,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }

    /// The code for a verb's error: the first of these the error's chain holds (a closed output
    /// pipe, a config error, a file of the wrong kind, a usage error), else a runtime failure.
    pub fn for_error(e: &anyhow::Error) -> Exit {
        let in_chain =
            |check: &dyn Fn(&(dyn std::error::Error + 'static)) -> bool| e.chain().any(check);
        if in_chain(&|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        }) {
            return Exit::Success;
        }
        if in_chain(&|c| c.is::<ConfigError>()) {
            return Exit::BadConfig;
        }
        if in_chain(&|c| c.is::<WrongKindOfFile>()) {
            return Exit::Rejected;
        }
        if in_chain(&|c| c.is::<super::UsageError>() || c.is::<BatchError>()) {
            return Exit::Usage;
        }
        Exit::Failure
    }
}

impl From<Status> for Exit {
    /// A ULog's status: complete, quarantined or rejected.
    fn from(status: Status) -> Exit {
        match status {
            Status::Complete => Exit::Success,
            Status::Quarantined => Exit::Quarantined,
            Status::Rejected => Exit::Rejected,
        }
    }
}

impl From<&InspectError> for Exit {
    /// Why `ulog record` could not show a record: the file (unreadable, truncated before it,
    /// rejected) or the request (no such message or offset: usage).
    fn from(e: &InspectError) -> Exit {
        match e {
            InspectError::Read(ReadError::Io { .. }) => Exit::Failure,
            InspectError::Read(ReadError::Truncated { .. }) => Exit::Quarantined,
            InspectError::Read(_) => Exit::Rejected,
            InspectError::NoSuchMessage { .. } | InspectError::NoSuchOffset { .. } => Exit::Usage,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn the_table_holds_the_designed_numbers() {
        let codes: Vec<(Exit, u8)> = [
            Exit::Success,
            Exit::Failure,
            Exit::Usage,
            Exit::Quarantined,
            Exit::Rejected,
            Exit::BadConfig,
        ]
        .into_iter()
        .map(|e| (e, e.code()))
        .collect();
        assert_eq!(
            codes,
            [
                (Exit::Success, 0),
                (Exit::Failure, 1),
                (Exit::Usage, 2),
                (Exit::Quarantined, 3),
                (Exit::Rejected, 4),
                (Exit::BadConfig, 78),
            ]
        );
    }

    #[test]
    fn each_error_kind_has_its_exit_code() {
        let pipe: anyhow::Error = std::io::Error::from(std::io::ErrorKind::BrokenPipe).into();
        assert_eq!(
            Exit::for_error(&pipe.context("writing receipts")),
            Exit::Success
        );
        let config = ConfigError::Parse {
            file: "r.toml".into(),
            message: "x".into(),
        };
        assert_eq!(
            Exit::for_error(&anyhow::Error::from(config)),
            Exit::BadConfig
        );
        let wrong = WrongKindOfFile {
            file: "a.ulg".into(),
            wanted: "a .tlog",
            found: "a PX4 ULog".into(),
        };
        assert_eq!(
            Exit::for_error(&Err::<(), _>(wrong).context("converting").unwrap_err()),
            Exit::Rejected
        );
        assert_eq!(
            Exit::for_error(&super::super::UsageError("no files".into()).into()),
            Exit::Usage
        );
        let same = BatchError::SameFolder {
            first: "a/x.ulg".into(),
            second: "b/x.ulg".into(),
            dir: "out/x".into(),
        };
        assert_eq!(
            Exit::for_error(&anyhow::Error::from(same).context("nothing exported")),
            Exit::Usage
        );
        assert_eq!(
            Exit::for_error(&anyhow::anyhow!("disk on fire")),
            Exit::Failure
        );
    }

    #[test]
    fn a_batch_takes_its_worst_file() {
        let batch = |codes: &[Exit]| codes.iter().fold(Exit::Success, |w, &e| w.worst(e));
        assert_eq!(batch(&[]), Exit::Success);
        assert_eq!(
            batch(&[Exit::Quarantined, Exit::Success]),
            Exit::Quarantined
        );
        assert_eq!(
            batch(&[Exit::Quarantined, Exit::Rejected, Exit::Quarantined]),
            Exit::Rejected
        );
        assert_eq!(
            batch(&[Exit::Rejected, Exit::Failure, Exit::Quarantined]),
            Exit::Failure
        );
    }

    #[test]
    fn a_status_and_a_record_error_have_their_codes() {
        assert_eq!(Exit::from(Status::Complete), Exit::Success);
        assert_eq!(Exit::from(Status::Quarantined), Exit::Quarantined);
        assert_eq!(Exit::from(Status::Rejected), Exit::Rejected);
        let no_message = InspectError::NoSuchMessage {
            wanted: 9,
            total: 3,
        };
        assert_eq!(Exit::from(&no_message), Exit::Usage);
        let encrypted = InspectError::Read(ReadError::Encrypted { key_file: false });
        assert_eq!(Exit::from(&encrypted), Exit::Rejected);
    }
}
