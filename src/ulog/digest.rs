//! The SHA-256 of a file, taken as it is read: a `Read` adapter, so the ingest hashes the bytes
//! it parses in the same pass instead of reading the file twice. Every ingest report carries the
//! digest, and the manifest check compares it with the sender's.

use super::value::hex;
use sha2::{Digest, Sha256};
use std::io::{self, Read};

/// Hashes everything read through it.
pub struct Sha256Reader<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Sha256Reader<R> {
    pub fn new(inner: R) -> Self {
        Sha256Reader {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// Reads what is left (a reader may stop early, as the ingest does at an encrypted file's
    /// first bytes) and returns the digest of the whole input, in lower-case hex.
    pub fn finish(mut self) -> io::Result<String> {
        io::copy(&mut self, &mut io::sink())?;
        Ok(hex(&self.hasher.finalize()))
    }
}

impl<R: Read> Read for Sha256Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The SHA-256 of everything `input` yields, in lower-case hex.
pub fn sha256_hex(input: impl Read) -> io::Result<String> {
    Sha256Reader::new(input).finish()
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
    }

    #[test]
    fn a_reader_that_stops_early_still_hashes_the_whole_input() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let mut reader = Sha256Reader::new(&data[..]);
        let mut first = [0u8; 7];
        reader.read_exact(&mut first).unwrap();
        assert_eq!(reader.finish().unwrap(), sha256_hex(&data[..]).unwrap());
    }
}
