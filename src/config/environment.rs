//! What `check-config` checks of the machine beyond the file itself: serial device paths and
//! the data directory. Apart from parsing, so a config can be validated on another machine.

use super::{Config, ConfigError, LinkTransport};

impl Config {
    /// What `check-config` looks at beyond the file itself: serial paths and the data directory.
    /// Returns warnings (things the daemon copes with) or the first error.
    pub fn check_environment(&self) -> Result<Vec<String>, ConfigError> {
        use std::os::unix::fs::FileTypeExt;
        let file = self.file.display().to_string();
        let mut warnings = Vec::new();
        for (i, link) in self.links.iter().enumerate() {
            if let LinkTransport::Serial { path, .. } = &link.kind {
                match std::fs::metadata(path) {
                    Ok(m) if m.file_type().is_char_device() => {
                        // Non-blocking and not as a controlling terminal: opening a modem line
                        // must neither wait for carrier nor take the terminal over.
                        use std::os::unix::fs::OpenOptionsExt;
                        let opened = std::fs::OpenOptions::new()
                            .read(true)
                            .custom_flags(libc_flags())
                            .open(path);
                        let device = match opened {
                            Ok(d) => d,
                            Err(e) => return Err(ConfigError::Invalid { file, key: format!("link[{i}].serial"), reason: format!("{}: cannot open: {e}", path.display()) }),
                        };
                        // A serial port has terminal settings; /dev/zero or /dev/null have none.
                        if nix::sys::termios::tcgetattr(&device).is_err() {
                            return Err(ConfigError::Invalid { file, key: format!("link[{i}].serial"), reason: format!("{} is a character device but not a serial port (it has no terminal settings)", path.display()) });
                        }
                    }
                    Ok(_) => {
                        return Err(ConfigError::Invalid { file, key: format!("link[{i}].serial"), reason: format!("{} is not a character device", path.display()) })
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => warnings.push(format!(
                        "link[{i}].serial: {} does not exist now; the daemon reports the link down and waits for it",
                        path.display()
                    )),
                    Err(e) => {
                        return Err(ConfigError::Invalid { file, key: format!("link[{i}].serial"), reason: format!("{}: {e}", path.display()) })
                    }
                }
            }
        }
        if self.data_dir.exists()
            && std::fs::metadata(&self.data_dir)
                .map(|m| m.permissions().readonly())
                .unwrap_or(false)
        {
            return Err(ConfigError::Invalid {
                file,
                key: "data_dir".into(),
                reason: format!("{} is read-only", self.data_dir.display()),
            });
        }
        Ok(warnings)
    }
}

fn libc_flags() -> i32 {
    (nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOCTTY).bits()
}
