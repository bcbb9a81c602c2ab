use foxborne_receiver::wire::signing::SigningKeys;
use foxborne_receiver::wire::ScanItem;
use foxborne_receiver::tlog::TlogReader;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let keys = SigningKeys::default();
    let mut prev = None;
    for r in TlogReader::new(&bytes, &keys) {
        if let ScanItem::Reject(rej) = r.item {
            let end = (r.offset + rej.bytes + 16).min(bytes.len());
            println!(
                "{:?} at {} bytes {} ts {} prev_frame {:?}",
                rej.reason, r.offset, rej.bytes, r.utc_us, prev
            );
            println!("   {:02x?}", &bytes[r.offset..end.min(r.offset + 80)]);
        } else if let ScanItem::Frame(f) = r.item {
            prev = Some((f.name, f.sysid, f.compid, f.bytes.len()));
        }
    }
}
#[allow(dead_code)]
fn unused() {}
