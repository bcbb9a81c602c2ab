//! Low latency on a serial port, where the driver supports it, so receipt stamps are not
//! blurred by the adapter batching its reads (FTDI's latency timer is 16 ms by default):
//! `ASYNC_LOW_LATENCY` through `TIOCGSERIAL`/`TIOCSSERIAL` (8250 UARTs, FTDI and other USB
//! serial drivers), and FTDI's `latency_timer` in sysfs set to 1 ms where the device has one.
//! What it got is said in words for the link's `up` event ([`LowLatency::describe`], pure); a
//! port whose driver has neither (a pty, CDC-ACM) says so and works as before.

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

/// `struct serial_struct` of linux/serial.h (not in the libc crate).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct SerialStruct {
    kind: nix::libc::c_int,
    line: nix::libc::c_int,
    port: nix::libc::c_uint,
    irq: nix::libc::c_int,
    flags: nix::libc::c_int,
    xmit_fifo_size: nix::libc::c_int,
    custom_divisor: nix::libc::c_int,
    baud_base: nix::libc::c_int,
    close_delay: nix::libc::c_ushort,
    io_type: nix::libc::c_char,
    reserved_char: [nix::libc::c_char; 1],
    hub6: nix::libc::c_int,
    closing_wait: nix::libc::c_ushort,
    closing_wait2: nix::libc::c_ushort,
    iomem_base: *mut nix::libc::c_uchar,
    iomem_reg_shift: nix::libc::c_ushort,
    port_high: nix::libc::c_uint,
    iomap_base: nix::libc::c_ulong,
}

impl Default for SerialStruct {
    fn default() -> Self {
        SerialStruct {
            kind: 0,
            line: 0,
            port: 0,
            irq: 0,
            flags: 0,
            xmit_fifo_size: 0,
            custom_divisor: 0,
            baud_base: 0,
            close_delay: 0,
            io_type: 0,
            reserved_char: [0],
            hub6: 0,
            closing_wait: 0,
            closing_wait2: 0,
            iomem_base: std::ptr::null_mut(),
            iomem_reg_shift: 0,
            port_high: 0,
            iomap_base: 0,
        }
    }
}

/// `ASYNC_LOW_LATENCY` (linux/tty_flags.h: bit 13 of `flags`).
const ASYNC_LOW_LATENCY: nix::libc::c_int = 1 << 13;
/// FTDI's latency timer asked for, in ms (1 is the driver's lowest).
const LATENCY_TIMER_MS: u32 = 1;

nix::ioctl_read_bad!(tiocgserial, nix::libc::TIOCGSERIAL, SerialStruct);
nix::ioctl_write_ptr_bad!(tiocsserial, nix::libc::TIOCSSERIAL, SerialStruct);

/// What setting `ASYNC_LOW_LATENCY` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AsyncLowLatency {
    /// It was off and is now on.
    Set,
    /// It was on already.
    AlreadySet,
    /// The driver has no serial settings (`TIOCGSERIAL` fails: a pty, CDC-ACM).
    Unsupported(String),
    /// The driver refused it (a permission, an error).
    Refused(String),
}

/// What FTDI's `latency_timer` gave, where the device has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LatencyTimer {
    /// Lowered from `from` ms to `to` ms.
    Lowered { from: u32, to: u32 },
    /// Already at `ms`.
    Already { ms: u32 },
    /// Left at `ms`: it could not be written (a read-only sysfs under the unit's
    /// `ProtectKernelTunables=`, say).
    Kept { ms: u32, error: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LowLatency {
    pub async_low_latency: AsyncLowLatency,
    /// `None`: the device has no latency timer (not an FTDI adapter).
    pub latency_timer: Option<LatencyTimer>,
}

impl LowLatency {
    /// The words for the link's `up` event: `low latency on (latency_timer 16 -> 1 ms)`.
    pub fn describe(&self) -> String {
        let flag = match &self.async_low_latency {
            AsyncLowLatency::Set => "low latency on".to_string(),
            AsyncLowLatency::AlreadySet => "low latency on (already)".to_string(),
            AsyncLowLatency::Unsupported(e) => {
                format!("low latency not supported by the driver ({e})")
            }
            AsyncLowLatency::Refused(e) => format!("low latency refused by the driver ({e})"),
        };
        match &self.latency_timer {
            None => flag,
            Some(LatencyTimer::Lowered { from, to }) => {
                format!("{flag}, latency_timer {from} -> {to} ms")
            }
            Some(LatencyTimer::Already { ms }) => format!("{flag}, latency_timer {ms} ms"),
            Some(LatencyTimer::Kept { ms, error }) => {
                format!("{flag}, latency_timer left at {ms} ms ({error})")
            }
        }
    }
}

/// Asks for low latency on the open port `fd` (the device at `path`).
pub fn set(fd: RawFd, path: &Path) -> LowLatency {
    LowLatency {
        async_low_latency: set_async_low_latency(fd),
        latency_timer: latency_timer_path(path).map(|p| set_latency_timer(&p)),
    }
}

fn set_async_low_latency(fd: RawFd) -> AsyncLowLatency {
    let mut serial = SerialStruct::default();
    // SAFETY: `serial` is a valid, writable `struct serial_struct` for the kernel to fill.
    if let Err(errno) = unsafe { tiocgserial(fd, &mut serial) } {
        return AsyncLowLatency::Unsupported(format!("TIOCGSERIAL: {errno}"));
    }
    if serial.flags & ASYNC_LOW_LATENCY != 0 {
        return AsyncLowLatency::AlreadySet;
    }
    serial.flags |= ASYNC_LOW_LATENCY;
    // SAFETY: `serial` is the struct the kernel just filled, with one flag added.
    match unsafe { tiocsserial(fd, &serial) } {
        Ok(_) => AsyncLowLatency::Set,
        Err(errno) => AsyncLowLatency::Refused(format!("TIOCSSERIAL: {errno}")),
    }
}

/// `/sys/class/tty/<name>/device/latency_timer` of the device at `path` (symlinks such as
/// `/dev/serial/by-id/...` followed), when it exists.
pub fn latency_timer_path(path: &Path) -> Option<PathBuf> {
    let device = std::fs::canonicalize(path).ok()?;
    let timer = sysfs_timer_for(&device);
    timer.is_file().then_some(timer)
}

/// Where a tty's latency timer would be in sysfs (pure).
fn sysfs_timer_for(device: &Path) -> PathBuf {
    let name = device.file_name().unwrap_or_default();
    Path::new("/sys/class/tty")
        .join(name)
        .join("device/latency_timer")
}

fn read_ms(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn set_latency_timer(path: &Path) -> LatencyTimer {
    let Some(from) = read_ms(path) else {
        return LatencyTimer::Kept {
            ms: 0,
            error: "unreadable".to_string(),
        };
    };
    if from <= LATENCY_TIMER_MS {
        return LatencyTimer::Already { ms: from };
    }
    match std::fs::write(path, LATENCY_TIMER_MS.to_string()) {
        Ok(()) => LatencyTimer::Lowered {
            from,
            to: read_ms(path).unwrap_or(LATENCY_TIMER_MS),
        },
        Err(e) => LatencyTimer::Kept {
            ms: from,
            error: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_port_got_is_said_in_words() {
        let ftdi = LowLatency {
            async_low_latency: AsyncLowLatency::Set,
            latency_timer: Some(LatencyTimer::Lowered { from: 16, to: 1 }),
        };
        assert_eq!(ftdi.describe(), "low latency on, latency_timer 16 -> 1 ms");
        let locked = LowLatency {
            async_low_latency: AsyncLowLatency::AlreadySet,
            latency_timer: Some(LatencyTimer::Kept {
                ms: 16,
                error: "Read-only file system (os error 30)".into(),
            }),
        };
        assert_eq!(
            locked.describe(),
            "low latency on (already), latency_timer left at 16 ms (Read-only file system (os error 30))"
        );
        let pty = LowLatency {
            async_low_latency: AsyncLowLatency::Unsupported("TIOCGSERIAL: ENOTTY".into()),
            latency_timer: None,
        };
        assert_eq!(
            pty.describe(),
            "low latency not supported by the driver (TIOCGSERIAL: ENOTTY)"
        );
    }

    #[test]
    fn the_latency_timer_is_found_by_the_device_name() {
        assert_eq!(
            sysfs_timer_for(Path::new("/dev/ttyUSB0")),
            Path::new("/sys/class/tty/ttyUSB0/device/latency_timer")
        );
        // A pty has none.
        let pair = nix::pty::openpty(None, None).unwrap();
        let slave = nix::unistd::ttyname(&pair.slave).unwrap();
        assert_eq!(latency_timer_path(&slave), None);
        use std::os::fd::AsRawFd;
        let got = set(pair.slave.as_raw_fd(), &slave);
        assert!(
            matches!(got.async_low_latency, AsyncLowLatency::Unsupported(_)),
            "{got:?}"
        );
    }
}
