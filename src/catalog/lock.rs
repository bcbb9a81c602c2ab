//! Who may have the catalog file open: every ingest and reader holds a shared lock on a file
//! beside it (`<catalog>.lock`) while it uses the catalog; setting a corrupt catalog aside, or
//! putting a rebuilt one in its place, takes the lock exclusively, so no process has the old file
//! open when it is renamed. SQLite's own locking still orders the writes of concurrent ingests;
//! this lock only guards the file's replacement.

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Held while the catalog is in use; released when dropped.
pub struct CatalogLock {
    _flock: Flock<File>,
}

/// `<catalog>.lock`.
pub fn lock_path(catalog: &Path) -> PathBuf {
    let mut name = catalog.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn take(catalog: &Path, arg: FlockArg) -> io::Result<CatalogLock> {
    let path = lock_path(catalog);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    loop {
        match Flock::lock(file, arg) {
            Ok(flock) => return Ok(CatalogLock { _flock: flock }),
            Err((back, Errno::EINTR)) => file = back,
            Err((_, errno)) => return Err(io::Error::from(errno)),
        }
    }
}

/// Waits for, then holds, the right to use the catalog.
pub fn shared(catalog: &Path) -> io::Result<CatalogLock> {
    take(catalog, FlockArg::LockShared)
}

/// Waits until no one else uses the catalog, then holds it alone.
pub fn exclusive(catalog: &Path) -> io::Result<CatalogLock> {
    take(catalog, FlockArg::LockExclusive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_holders_coexist_and_exclude_an_exclusive_one() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("c.sqlite");
        let a = shared(&catalog).unwrap();
        let _b = shared(&catalog).unwrap();
        assert_eq!(lock_path(&catalog), dir.path().join("c.sqlite.lock"));
        // While shared holders remain, an exclusive request would block: try it without waiting.
        let file = OpenOptions::new()
            .write(true)
            .open(lock_path(&catalog))
            .unwrap();
        let refused = Flock::lock(file, FlockArg::LockExclusiveNonblock);
        assert!(matches!(refused, Err((_, Errno::EWOULDBLOCK))));
        drop(a);
        drop(_b);
        let only = exclusive(&catalog).unwrap();
        drop(only);
    }
}
