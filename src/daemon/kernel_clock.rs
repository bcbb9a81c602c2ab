//! The receiver's own clock status from the kernel's NTP state (`adjtimex` with no modes set:
//! a read). Under systemd's `ProtectClock=` the call is filtered even as a read; then the status
//! is unknown rather than wrong.

use crate::monitor::ClockStatus;

/// The kernel's view: synchronised or not, and its maximum error in µs; the errno when the call
/// is not permitted.
pub fn read() -> Result<ClockStatus, nix::errno::Errno> {
    // SAFETY: a zeroed timex with modes = 0 asks adjtimex to change nothing and only fill it in.
    let mut tx: nix::libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { nix::libc::adjtimex(&mut tx) };
    if state < 0 {
        return Err(nix::errno::Errno::last());
    }
    let unsynchronised = state == nix::libc::TIME_ERROR || tx.status & nix::libc::STA_UNSYNC != 0;
    Ok(ClockStatus {
        synchronised: !unsynchronised,
        max_error_us: tx.maxerror,
    })
}
