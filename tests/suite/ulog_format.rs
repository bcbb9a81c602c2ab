//! Format details on logs made by the project's writer: a B message longer than 40 bytes, an
//! unknown incompatible flag (rejected), unknown message types (skipped), M continuations, R
//! unsubscription, trailing padding absent from D messages while nested padding is present,
//! char arrays, version 0 without B, appended data, sync messages, tagged strings and defaults.

use foxborne_receiver::cmd::Exit;
use foxborne_receiver::ulog::ingest::ingest_reader;
use foxborne_receiver::ulog::report::{Report, Status};
use foxborne_receiver::ulog::value::Value;
use foxborne_receiver::ulog::writer::UlogWriter;
use foxborne_receiver::ulog::{ReadError, Record, SliceReader};

fn ingest(bytes: &[u8]) -> Report {
    ingest_reader(bytes, "t.ulg", bytes.len() as u64, None, None).unwrap()
}

fn sample(ts: u64, rest: &[u8]) -> Vec<u8> {
    let mut p = ts.to_le_bytes().to_vec();
    p.extend_from_slice(rest);
    p
}

#[test]
fn long_flag_bits_unknown_types_continuations_and_padding() {
    let mut w = UlogWriter::new(Vec::new(), 500).unwrap();
    // A B message of 48 bytes: 8 more than today's layout, which a reader must accept.
    let mut b = vec![1u8, 0, 0, 0, 0, 0, 0, 0];
    b.extend([0u8; 8]);
    b.extend([0u8; 24]);
    b.extend([0xEEu8; 8]);
    w.raw(b'B', &b).unwrap();
    w.format("inner:uint16_t v;uint8_t[2] _padding0;").unwrap();
    w.format("outer:uint64_t timestamp;inner[2] i;char[4] name;uint8_t flag;uint8_t[3] _padding0;")
        .unwrap();
    w.raw(b'X', b"a message type from the future").unwrap();
    w.multi_info(false, "char[5]", "boot", b"hello").unwrap();
    w.multi_info(true, "char[6]", "boot", b" world").unwrap();
    w.multi_info(false, "char[3]", "boot", b"two").unwrap();
    w.default_parameter_i32(0b11, "NAV_DLL_ACT", 0).unwrap();
    w.subscribe(1, 7, "outer").unwrap();
    // Written size: 8 + 2 x 4 (nested padding included) + 4 + 1 = 21; trailing 3 not written.
    let mut rest = Vec::new();
    rest.extend([1, 0, 0xAA, 0xAA, 2, 0, 0xAA, 0xAA]);
    rest.extend(b"ab\0\0");
    rest.push(1);
    w.data(7, &sample(1_000, &rest)).unwrap();
    w.sync().unwrap();
    w.raw(b'Z', &[]).unwrap();
    w.tagged(b'4', 3, 1_500, "tagged warning").unwrap();
    w.parameter_i32("NAV_DLL_ACT", 1).unwrap();
    w.data(7, &sample(2_000, &rest)).unwrap();
    w.unsubscribe(7).unwrap();
    let bytes = w.into_inner();

    let r = ingest(&bytes);
    assert_eq!(
        r.status,
        Status::Complete,
        "{:?} {:?}",
        r.reason,
        r.malformed
    );
    assert_eq!(r.topics.len(), 1);
    let t = &r.topics[0];
    assert_eq!((t.topic.as_str(), t.multi_id, t.samples), ("outer", 1, 2));
    assert_eq!(
        t.fields,
        [
            "timestamp",
            "i[0].v",
            "i[0]._padding0[0]",
            "i[0]._padding0[1]",
            "i[1].v",
            "i[1]._padding0[0]",
            "i[1]._padding0[1]",
            "name[0]",
            "name[1]",
            "name[2]",
            "name[3]",
            "flag"
        ]
    );
    assert_eq!(
        r.multi_info["boot"],
        [Value::Text("hello world".into()), Value::Text("two".into())]
    );
    assert_eq!(
        r.parameters.defaults["system"]["NAV_DLL_ACT"],
        Value::Int(0)
    );
    assert_eq!(
        r.parameters.defaults["current_setup"]["NAV_DLL_ACT"],
        Value::Int(0)
    );
    assert_eq!(r.parameters.changes.len(), 1);
    assert_eq!(
        r.parameters.changes[0].timestamp, 1_000,
        "stamped with the latest data timestamp"
    );
    assert_eq!(r.tagged_logged_messages[0].tag, Some(3));
    assert_eq!(r.tagged_logged_messages[0].level_name, "WARNING");
    assert_eq!(r.header.as_ref().unwrap().compat_flags[0], 1);

    // Unknown types are yielded as such and skipped, with their numbers counted.
    let mut reader = SliceReader::new(&bytes);
    let mut unknown = Vec::new();
    while let Some(item) = reader.next_record() {
        let rec = item.unwrap();
        if let Record::Unknown { msg_type } = rec.record {
            unknown.push((msg_type, rec.message));
        }
    }
    assert_eq!(unknown, [(b'X', 4), (b'Z', 12)]);
}

#[test]
fn a_sample_with_its_trailing_padding_or_too_short_is_handled() {
    let mut w = UlogWriter::new(Vec::new(), 0).unwrap();
    w.format("t:uint64_t timestamp;uint8_t x;uint8_t[7] _padding0;")
        .unwrap();
    w.subscribe(0, 0, "t").unwrap();
    w.data(0, &sample(1, &[5])).unwrap();
    w.data(0, &sample(2, &[5, 0, 0, 0, 0, 0, 0, 0])).unwrap(); // padding written anyway: accepted
    let good = w.into_inner();
    assert_eq!(ingest(&good).topics[0].samples, 2);

    let mut w2 = UlogWriter::new(Vec::new(), 0).unwrap();
    w2.format("t:uint64_t timestamp;uint8_t x;uint8_t[7] _padding0;")
        .unwrap();
    w2.subscribe(0, 0, "t").unwrap();
    w2.data(0, &sample(1, &[])).unwrap(); // one byte short
    w2.data(9, &sample(1, &[1])).unwrap(); // nobody subscribed msg_id 9
    let bad = w2.into_inner();
    let r = ingest(&bad);
    assert_eq!(r.status, Status::Quarantined);
    assert_eq!(r.malformed.len(), 2);
    assert!(
        r.reason
            .as_ref()
            .unwrap()
            .starts_with("The flight log has a malformed data message at "),
        "{:?}",
        r.reason
    );
    assert!(r.topics.is_empty());
}

#[test]
fn unknown_incompatible_flags_refuse_the_log() {
    for (byte, bit) in [(0usize, 2u8), (3, 1)] {
        let mut w = UlogWriter::new(Vec::new(), 0).unwrap();
        let mut incompat = [0u8; 8];
        incompat[byte] = bit;
        w.flag_bits([0; 8], incompat, [0; 3]).unwrap();
        w.format("t:uint64_t timestamp;").unwrap();
        let bytes = w.into_inner();
        let mut reader = SliceReader::new(&bytes);
        let mut last = None;
        while let Some(item) = reader.next_record() {
            last = Some(item.map(|_| ()));
        }
        assert!(
            matches!(
                last,
                Some(Err(ReadError::UnsupportedIncompatFlags { offset: 16, .. }))
            ),
            "{last:?}"
        );
        let r = ingest(&bytes);
        assert_eq!(r.status, Status::Rejected);
        assert_eq!(Exit::from(r.status).code(), 4);
    }
    // DATA_APPENDED alone is known (the log needs a sample to be complete).
    let mut w = UlogWriter::new(Vec::new(), 0).unwrap();
    w.flag_bits([0; 8], [1, 0, 0, 0, 0, 0, 0, 0], [0; 3])
        .unwrap();
    w.format("t:uint64_t timestamp;").unwrap();
    w.subscribe(0, 0, "t").unwrap();
    w.data(0, &sample(1, &[])).unwrap();
    assert_eq!(ingest(&w.into_inner()).status, Status::Complete);
}

#[test]
fn version_0_without_flag_bits_and_appended_data_sections() {
    let mut w = UlogWriter::with_version(Vec::new(), 0, 0).unwrap();
    w.format("t:uint64_t timestamp;float v;").unwrap();
    w.subscribe(0, 0, "t").unwrap();
    w.data(0, &sample(10, &1f32.to_le_bytes())).unwrap();
    let r = ingest(&w.into_inner());
    assert_eq!(r.status, Status::Complete);
    let h = r.header.unwrap();
    assert_eq!((h.version, h.flag_bits), (0, false));
    assert_eq!(r.validation[0], "PX4 ULog, version 0");

    // Main log, then an unfinished message the appended offset cuts off, then appended data.
    let mut w = UlogWriter::new(Vec::new(), 0).unwrap();
    let b_at = w.position();
    w.flag_bits([0; 8], [1, 0, 0, 0, 0, 0, 0, 0], [0; 3])
        .unwrap();
    w.format("t:uint64_t timestamp;float v;").unwrap();
    w.subscribe(0, 0, "t").unwrap();
    w.data(0, &sample(10, &1f32.to_le_bytes())).unwrap();
    w.junk(&[14, 0, b'D', 0, 0, 1, 2]).unwrap(); // half a data message
    let append_at = w.position();
    w.data(0, &sample(20, &2f32.to_le_bytes())).unwrap();
    let mut bytes = w.into_inner();
    let offsets_at = b_at as usize + 3 + 16;
    bytes[offsets_at..offsets_at + 8].copy_from_slice(&append_at.to_le_bytes());
    let r = ingest(&bytes);
    assert_eq!(r.status, Status::Complete, "{:?}", r.reason);
    assert_eq!(r.topics[0].samples, 2);
    assert_eq!(r.appended_data.len(), 1);
    assert_eq!(
        (r.appended_data[0].offset, r.appended_data[0].skipped_bytes),
        (append_at, 7)
    );
}
