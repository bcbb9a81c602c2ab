//! The SHA-256 of a file, taken as it is read: a `Read` adapter, so the ingest hashes the bytes
//! it parses in the same pass instead of reading the file twice. Past its first MiB the hashing
//! runs on a thread of its own: the ingest reads on one core, and SHA-256 (about 1.5 GB/s here
//! with the CPU's SHA instructions) is slower than the ingest's reading, so on the same thread
//! it would cost more than the ingest itself; a short log is hashed where it is read. Every ingest report carries the digest, and the manifest check
//! compares it with the sender's.

use super::value::hex;
use sha2::{Digest, Sha256};
use std::io::{self, Read};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Chunks in flight to the hashing thread: enough to keep it busy, few enough to bound memory
/// (the ingest reads at most 256 KiB at a time).
const IN_FLIGHT: usize = 4;

/// Bytes hashed on the reading thread before the hashing moves to a thread of its own: below
/// it (a short log) starting a thread costs more than the hashing it takes off the reader.
const INLINE_BYTES: u64 = 1 << 20;

/// Hashes everything read through it: on the reading thread for the first [`INLINE_BYTES`],
/// then on a second thread.
pub struct Sha256Reader<R> {
    inner: R,
    /// The hash while it is still taken on this thread, and how much it has taken.
    inline: Option<(Sha256, u64)>,
    work: Option<SyncSender<Vec<u8>>>,
    /// Chunks the hashing thread is done with, to be filled again.
    spare: Option<Receiver<Vec<u8>>>,
    hashing: Option<JoinHandle<Vec<u8>>>,
}

fn hasher_gone() -> io::Error {
    io::Error::other("the SHA-256 thread stopped")
}

impl<R: Read> Sha256Reader<R> {
    pub fn new(inner: R) -> io::Result<Self> {
        Ok(Sha256Reader {
            inner,
            inline: Some((Sha256::new(), 0)),
            work: None,
            spare: None,
            hashing: None,
        })
    }

    /// Moves the hashing, with what it has taken so far, to a thread of its own.
    fn start_thread(&mut self, mut hasher: Sha256) -> io::Result<()> {
        let (work, chunks) = sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (done, spare) = channel();
        let hashing = std::thread::Builder::new()
            .name("sha256".into())
            .spawn(move || {
                for chunk in chunks {
                    hasher.update(&chunk);
                    // The reader may have finished and gone: then the chunk is not needed.
                    let _ = done.send(chunk);
                }
                hasher.finalize().to_vec()
            })?;
        self.work = Some(work);
        self.spare = Some(spare);
        self.hashing = Some(hashing);
        Ok(())
    }

    /// Reads what is left (a reader may stop early, as the ingest does at an encrypted file's
    /// first bytes) and returns the digest of the whole input, in lower-case hex.
    pub fn finish(mut self) -> io::Result<String> {
        io::copy(&mut self, &mut io::sink())?;
        if let Some((hasher, _)) = self.inline.take() {
            return Ok(hex(&hasher.finalize()));
        }
        self.work = None;
        let digest = self
            .hashing
            .take()
            .expect("finished once")
            .join()
            .map_err(|_| hasher_gone())?;
        Ok(hex(&digest))
    }
}

impl<R: Read> Read for Sha256Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 {
            return Ok(0);
        }
        if let Some((hasher, taken)) = &mut self.inline {
            hasher.update(&buf[..n]);
            *taken += n as u64;
            if *taken >= INLINE_BYTES {
                let (hasher, _) = self.inline.take().expect("just seen");
                self.start_thread(hasher)?;
            }
            return Ok(n);
        }
        let mut chunk = self
            .spare
            .as_ref()
            .and_then(|s| s.try_recv().ok())
            .unwrap_or_default();
        chunk.clear();
        chunk.extend_from_slice(&buf[..n]);
        let work = self.work.as_ref().ok_or_else(hasher_gone)?;
        work.send(chunk).map_err(|_| hasher_gone())?;
        Ok(n)
    }
}

/// The SHA-256 of everything `input` yields, in lower-case hex, on this thread.
pub fn sha256_hex(mut input: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_match_the_published_test_vectors() {
        // FIPS 180-2 examples: the empty message and "abc".
        assert_eq!(
            sha256_hex(&b""[..]).unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(&b"abc"[..]).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            Sha256Reader::new(&b"abc"[..]).unwrap().finish().unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_reader_that_stops_early_still_hashes_the_whole_input() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut reader = Sha256Reader::new(&data[..]).unwrap();
        let mut first = [0u8; 7];
        reader.read_exact(&mut first).unwrap();
        // Reads of many sizes, as the ingest's buffer makes them.
        let mut chunk = vec![0u8; 70_001];
        for _ in 0..20 {
            reader.read_exact(&mut chunk).unwrap();
        }
        assert_eq!(reader.finish().unwrap(), sha256_hex(&data[..]).unwrap());
    }
}
