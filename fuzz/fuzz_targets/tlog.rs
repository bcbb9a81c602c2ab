//! Fuzz target `tlog`: the `.tlog` reader over the whole input. Records must start at 0, each
//! where the previous ended, and together cover the input exactly.
#![no_main]

use foxborne_receiver::wire::signing::SigningKeys;
use foxborne_receiver::wire::ScanItem;
use foxborne_receiver::tlog::TlogReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let keys = SigningKeys::default();
    let mut next = 0usize;
    for record in TlogReader::new(data, &keys) {
        assert_eq!(record.offset, next, "record out of place");
        assert_eq!(record.utc_us & 3, 0);
        next = match record.item {
            ScanItem::Frame(f) => {
                let at = f.bytes.as_ptr() as usize - data.as_ptr() as usize;
                assert_eq!(at, record.offset + 8, "frame not after its timestamp");
                at + f.bytes.len()
            }
            ScanItem::Reject(r) => {
                assert!(r.bytes > 0, "empty reject");
                record.offset + r.bytes
            }
        };
        assert!(next <= data.len(), "record past the end");
    }
    assert_eq!(next, data.len(), "bytes not accounted for");
});
