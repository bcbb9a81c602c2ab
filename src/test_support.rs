//! What unit tests across the crate share (test builds only).

/// The keys of a JSON object in their written order (serde_json keeps order here).
pub fn json_keys(value: &serde_json::Value) -> Vec<&str> {
    value
        .as_object()
        .expect("a JSON object")
        .keys()
        .map(String::as_str)
        .collect()
}
