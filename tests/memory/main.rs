//! The peak-memory tests, in a small test binary of their own, apart from `tests/suite`.
//!
//! A child's peak RSS as the kernel reports it (`ru_maxrss`, from `wait4`) also counts the
//! process that spawned it: Linux keeps the high-water mark across `exec`, and std spawns with
//! `vfork`, so the child starts out with its parent's peak. In the suite binary, where other
//! tests hold hundreds of MiB of corpus data, every child measured the suite's own 650 MiB;
//! here the parent stays small, and each child's figure is its own.

#[path = "../suite/common/mod.rs"]
mod common;

mod streaming;
mod ulog_export;
