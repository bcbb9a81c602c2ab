//! Fuzz target `scanner`: the MAVLink frame scanner, both front ends. The datagram scan must
//! account for every input byte in order; the stream scanner, fed the same bytes in chunks whose
//! sizes come from the input's first bytes, must give the same items (junk runs merged).
#![no_main]

use foxborne_receiver::wire::signing::SigningKeys;
use foxborne_receiver::wire::{DatagramScanner, RejectReason, ScanItem, StreamScanner};
use libfuzzer_sys::fuzz_target;

/// An owned, comparable item: a frame's bytes, or a reject's reason, byte count and claims.
#[derive(Debug, PartialEq, Eq)]
enum Item {
    Frame(Vec<u8>, u32, u8, bool),
    Reject(RejectReason, usize, Option<u32>, Option<u8>),
}

fn own(item: &ScanItem<'_>) -> Item {
    match item {
        ScanItem::Frame(f) => Item::Frame(
            f.bytes.to_vec(),
            f.msgid,
            f.seq,
            f.signature == foxborne_receiver::wire::signing::Signature::Ok,
        ),
        ScanItem::Reject(r) => Item::Reject(r.reason, r.bytes, r.msgid, r.sysid),
    }
}

/// Appends `item`, merging a junk reject into a junk reject before it.
fn push_merged(out: &mut Vec<Item>, item: Item) {
    if let (
        Some(Item::Reject(RejectReason::Junk, prev, _, _)),
        Item::Reject(RejectReason::Junk, n, _, _),
    ) = (out.last_mut(), &item)
    {
        *prev += n;
        return;
    }
    out.push(item);
}

fuzz_target!(|data: &[u8]| {
    // Byte 0: which keys; bytes 1..4: chunk sizes (0 = the rest at once); the rest: the stream.
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (sizes, stream) = rest.split_at(rest.len().min(3));
    let keys = if mode & 1 == 0 {
        SigningKeys::default()
    } else {
        SigningKeys::new(vec![[mode; 32]], mode & 2 != 0)
    };

    let mut whole = Vec::new();
    let mut pos = 0usize;
    for item in DatagramScanner::new(stream, &keys) {
        match &item {
            ScanItem::Frame(f) => {
                let at = f.bytes.as_ptr() as usize - stream.as_ptr() as usize;
                assert_eq!(at, pos, "frame out of place");
                pos += f.bytes.len();
            }
            ScanItem::Reject(r) => {
                assert!(r.bytes > 0, "empty reject");
                pos += r.bytes;
            }
        }
        assert!(pos <= stream.len());
        push_merged(&mut whole, own(&item));
    }
    assert_eq!(pos, stream.len(), "bytes not accounted for");

    let mut scanner = StreamScanner::new();
    let mut chunked = Vec::new();
    let mut left = stream;
    let mut cycle = sizes.iter().cycle();
    while !left.is_empty() {
        let n = match cycle.next() {
            Some(&0) | None => left.len(),
            Some(&s) => (s as usize).min(left.len()),
        };
        scanner.push(&left[..n]);
        left = &left[n..];
        while let Some(item) = scanner.next_item(&keys) {
            push_merged(&mut chunked, own(&item));
        }
        assert!(scanner.pending() <= 280, "held back more than one frame");
    }
    scanner.finish();
    while let Some(item) = scanner.next_item(&keys) {
        push_merged(&mut chunked, own(&item));
    }
    assert_eq!(scanner.pending(), 0);
    assert_eq!(chunked, whole, "chunking changed the result");
});
