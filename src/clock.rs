//! The host's clocks: receiver UTC (`CLOCK_REALTIME`) and the kernel's `CLOCK_MONOTONIC`. The
//! shell's one way to read the time: the links read it once per datagram or serial read, as
//! close to arrival as they can, and the service loops, publishing and the range read it for
//! what they hand the pure core (which never reads a clock itself).

use crate::link::Stamp;
use nix::time::{clock_gettime, ClockId};

/// UTC now, nanoseconds since the Unix epoch.
pub fn utc_ns() -> i64 {
    let t = clock_gettime(ClockId::CLOCK_REALTIME).expect("CLOCK_REALTIME is always readable");
    t.tv_sec() * 1_000_000_000 + t.tv_nsec()
}

/// `CLOCK_MONOTONIC` now, in nanoseconds: the kernel's value, comparable across processes.
pub fn mono_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always readable");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// Both clocks at once: when a link's input arrived.
pub fn stamp() -> Stamp {
    Stamp {
        utc_ns: utc_ns(),
        mono_ns: mono_ns(),
    }
}
