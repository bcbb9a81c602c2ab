//! Byte-level mutations for property tests over real files: set, delete, insert, truncate.

use proptest::prelude::*;

#[derive(Debug, Clone)]
pub enum Mutation {
    Set(usize, u8),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    Truncate(usize),
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Delete(i, n)),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..16)).prop_map(|(i, v)| Mutation::Insert(i, v)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

pub fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match m {
        Mutation::Set(i, b) => {
            let i = i % bytes.len();
            bytes[i] = *b;
        }
        Mutation::Delete(i, n) => {
            let i = i % bytes.len();
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
        Mutation::Insert(i, v) => {
            let i = i % bytes.len();
            bytes.splice(i..i, v.iter().copied());
        }
        Mutation::Truncate(i) => bytes.truncate(i % bytes.len()),
    }
}
