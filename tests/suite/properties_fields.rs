//! Property test for receipt `fields` (issue 16): random payloads for random messages of the
//! dialect, through the `mavlink` crate's decoder and encoder and our table-driven decoder.
//!
//! For a random message and random payload bytes (enum fields the crate refuses are put back to
//! the crate's default values), the crate parses the payload and encodes it again (`q`). Then:
//! - every non-enum, non-char field we decode from `q` equals the crate's own decoded value, by
//!   name (the crate's serde output), floats compared as their wire type;
//! - our decoded JSON, encoded back into a payload through the table and parsed by the crate,
//!   is accepted (enum values land where the crate reads them) and re-encodes to a payload we
//!   decode to exactly the same text.

use foxborne_receiver::wire::fields;
use foxborne_receiver::wire::table::{self, FieldType, MessageDef};
use mavlink::dialects::ardupilotmega::MavMessage;
use mavlink::{MavlinkVersion, Message};
use proptest::prelude::*;
use serde_json::Value;

fn decode_text(msgid: u32, payload: &[u8]) -> String {
    let mut out = Vec::new();
    assert!(fields::write_json(&mut out, msgid, payload));
    String::from_utf8(out).expect("UTF-8")
}

fn ser(message: &MavMessage) -> Vec<u8> {
    let mut buf = [0u8; 255];
    let n = message.ser(MavlinkVersion::V2, &mut buf);
    buf[..n].to_vec()
}

/// The raw tokens of our `fields` object, by field: a number or string token, or for an array
/// the element tokens. Raw text, so floats are parsed by Rust's correctly rounded `parse`.
fn tokens(text: &str) -> Vec<(String, Vec<String>)> {
    let b = text.as_bytes();
    let mut at = 1; // after '{'
    let mut out = Vec::new();
    let token = |at: &mut usize| -> String {
        let start = *at;
        if b[*at] == b'"' {
            *at += 1;
            while b[*at] != b'"' {
                *at += if b[*at] == b'\\' { 2 } else { 1 };
            }
            *at += 1;
        } else {
            while !matches!(b[*at], b',' | b']' | b'}') {
                *at += 1;
            }
        }
        text[start..*at].to_string()
    };
    while b[at] != b'}' {
        let key: String = serde_json::from_str(&token(&mut at)).unwrap();
        assert_eq!(b[at], b':');
        at += 1;
        let mut values = Vec::new();
        if b[at] == b'[' {
            at += 1;
            loop {
                values.push(token(&mut at));
                at += 1;
                if b[at - 1] == b']' {
                    break;
                }
            }
        } else {
            values.push(token(&mut at));
        }
        out.push((key, values));
        if b[at] == b',' {
            at += 1;
        }
    }
    out
}

fn float_text<T: std::str::FromStr>(token: &str, nan: T, inf: T, neg_inf: T) -> T {
    match token {
        "\"NaN\"" => nan,
        "\"Infinity\"" => inf,
        "\"-Infinity\"" => neg_inf,
        t => t.parse().ok().expect("a float"),
    }
}

/// Our decoded text, written back into a payload through the table.
fn encode(def: &MessageDef, text: &str) -> Vec<u8> {
    let mut p = vec![0u8; def.len as usize];
    let fields = tokens(text);
    assert_eq!(fields.len(), def.fields.len());
    for (field, (key, values)) in def.fields.iter().zip(fields) {
        assert_eq!(field.name, key);
        let at = field.offset as usize;
        if field.ty == FieldType::Char {
            let s: String = serde_json::from_str(&values[0]).unwrap();
            for (k, c) in s.chars().enumerate() {
                p[at + k] = u8::try_from(c as u32).expect("one byte per character");
            }
            continue;
        }
        let size = field.ty.size();
        for (k, v) in values.iter().enumerate() {
            let dst = &mut p[at + k * size..at + (k + 1) * size];
            let bytes: Vec<u8> = match field.ty {
                FieldType::U8 | FieldType::Char => v.parse::<u8>().unwrap().to_le_bytes().to_vec(),
                FieldType::I8 => v.parse::<i8>().unwrap().to_le_bytes().to_vec(),
                FieldType::U16 => v.parse::<u16>().unwrap().to_le_bytes().to_vec(),
                FieldType::I16 => v.parse::<i16>().unwrap().to_le_bytes().to_vec(),
                FieldType::U32 => v.parse::<u32>().unwrap().to_le_bytes().to_vec(),
                FieldType::I32 => v.parse::<i32>().unwrap().to_le_bytes().to_vec(),
                FieldType::U64 => v.parse::<u64>().unwrap().to_le_bytes().to_vec(),
                FieldType::I64 => v.parse::<i64>().unwrap().to_le_bytes().to_vec(),
                FieldType::F32 => float_text(v, f32::NAN, f32::INFINITY, f32::NEG_INFINITY)
                    .to_le_bytes()
                    .to_vec(),
                FieldType::F64 => float_text(v, f64::NAN, f64::INFINITY, f64::NEG_INFINITY)
                    .to_le_bytes()
                    .to_vec(),
            };
            dst.copy_from_slice(&bytes);
        }
    }
    p
}

/// One of our tokens equal to the crate's value (from its serde output, where floats went
/// through f64 and NaN and the infinities became `null`), compared as the wire type.
fn same_as_crate(ty: FieldType, token: &str, theirs: &Value) -> bool {
    match ty {
        FieldType::F32 => {
            let ours = float_text(token, f32::NAN, f32::INFINITY, f32::NEG_INFINITY);
            match theirs.as_f64() {
                Some(t) => ours.to_bits() == (t as f32).to_bits(),
                None => theirs.is_null() && !ours.is_finite(),
            }
        }
        FieldType::F64 => {
            let ours = float_text(token, f64::NAN, f64::INFINITY, f64::NEG_INFINITY);
            match theirs.as_f64() {
                Some(t) => ours.to_bits() == t.to_bits(),
                None => theirs.is_null() && !ours.is_finite(),
            }
        }
        _ => {
            let ours: i128 = token.parse().expect("an integer");
            theirs.as_i64().map(i128::from) == Some(ours)
                || theirs.as_u64().map(i128::from) == Some(ours)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_payloads_round_trip_through_the_crates_encoder_and_our_decoder(
        index in 0..table::messages().len(),
        random in proptest::collection::vec(any::<u8>(), 255),
    ) {
        let def = &table::messages()[index];
        let len = def.len as usize;
        let mut payload = random[..len].to_vec();
        let parsed = match MavMessage::parse(MavlinkVersion::V2, def.id, &payload) {
            Ok(m) => m,
            Err(_) => {
                // Enum values the crate does not accept: take the crate's defaults for those.
                let defaults = ser(&MavMessage::default_message_from_id(def.id).unwrap());
                for f in def.fields.iter().filter(|f| f.enum_name.is_some()) {
                    let span = f.offset as usize..f.offset as usize + f.wire_len();
                    for i in span {
                        payload[i] = defaults.get(i).copied().unwrap_or(0);
                    }
                }
                MavMessage::parse(MavlinkVersion::V2, def.id, &payload)
                    .unwrap_or_else(|e| panic!("{} with default enums: {e:?}", def.name))
            }
        };
        let (parsed, theirs) = match serde_json::to_value(&parsed) {
            Ok(v) => (parsed, v),
            Err(_) => {
                // The crate's serde refuses char[] bytes that are not UTF-8: compare by name
                // with those fields cut to 7 bits.
                for f in def.fields.iter().filter(|f| f.ty == FieldType::Char) {
                    let span = f.offset as usize..f.offset as usize + f.wire_len();
                    payload[span].iter_mut().for_each(|b| *b &= 0x7F);
                }
                let m = MavMessage::parse(MavlinkVersion::V2, def.id, &payload).unwrap();
                let v = serde_json::to_value(&m).unwrap();
                (m, v)
            }
        };
        let q = ser(&parsed);
        let text = decode_text(def.id, &q);
        let _: Value = serde_json::from_str(&text).expect("valid JSON");

        // By name, against the crate's own decode (enum fields are objects or names there).
        let Value::Object(mut theirs) = theirs else {
            panic!("the crate's serde output is not an object");
        };
        theirs.remove("type");
        if let Some(v) = theirs.remove("mavtype") {
            theirs.insert("type".into(), v);
        }
        for (f, (_, ours)) in def.fields.iter().zip(tokens(&text)) {
            if f.enum_name.is_some() || f.ty == FieldType::Char {
                continue;
            }
            let t = theirs.get(f.name).unwrap_or_else(|| panic!("{}.{} not in the crate's output", def.name, f.name));
            let t: Vec<&Value> = match t {
                Value::Array(items) => items.iter().collect(),
                one => vec![one],
            };
            prop_assert_eq!(ours.len(), t.len(), "{}.{}", def.name, f.name);
            for (o, t) in ours.iter().zip(t) {
                prop_assert!(
                    same_as_crate(f.ty, o, t),
                    "{}.{}: ours {} crate {}", def.name, f.name, o, t
                );
            }
        }

        // Back through the table into a payload the crate accepts, and round again.
        let again = MavMessage::parse(MavlinkVersion::V2, def.id, &encode(def, &text));
        let again = again.unwrap_or_else(|e| panic!("{}: the crate refuses our re-encoding: {e:?}", def.name));
        prop_assert_eq!(decode_text(def.id, &ser(&again)), text);
    }
}

#[test]
fn the_token_reader_follows_our_output() {
    // ATTITUDE with a NaN; STATUSTEXT with a quote and a comma in the text.
    let mut p = 7u32.to_le_bytes().to_vec();
    p.extend_from_slice(&f32::NAN.to_le_bytes());
    let text = decode_text(30, &p);
    let t = tokens(&text);
    assert_eq!(t[0], ("time_boot_ms".to_string(), vec!["7".to_string()]));
    assert_eq!(t[1].1, vec!["\"NaN\"".to_string()]);
    let mut p = vec![3u8];
    p.extend_from_slice(b"a,\"b\"]}");
    let text = decode_text(253, &p);
    let t = tokens(&text);
    assert_eq!(t[1].1, vec![r#""a,\"b\"]}""#.to_string()]);
    assert_eq!(t.len(), 4);
    let def = table::lookup(253).unwrap();
    assert_eq!(
        &encode(def, &text)[..8],
        &[3, b'a', b',', b'"', b'b', b'"', b']', b'}']
    );
}
