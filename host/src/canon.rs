//! Canonical JSON and hashing: sorted keys, no insignificant whitespace,
//! SHA-256 shown as lowercase hex. Everything worldline hashes goes through
//! here so that the same value always has the same bytes.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical text of a JSON value. `serde_json::Map` is a `BTreeMap`
/// (the `preserve_order` feature is never enabled), so keys come out sorted.
pub fn to_string(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("JSON values always serialize")
}

/// SHA-256 of some bytes, as hex.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(bytes.as_ref()))
}

/// SHA-256 of the canonical text of a value, as hex.
pub fn hash_json(value: &impl Serialize) -> String {
    sha256_hex(to_string(value))
}

/// A key for a JSON value used as a row key: strings as themselves, anything
/// else as its canonical text.
pub fn key_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => to_string(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_whitespace_is_gone() {
        let v: Value =
            serde_json::from_str(r#"{ "b": 1, "a": {"d": [1, 2], "c": null} }"#).unwrap();
        assert_eq!(to_string(&v), r#"{"a":{"c":null,"d":[1,2]},"b":1}"#);
    }

    #[test]
    fn equal_values_hash_equal_whatever_their_order() {
        assert_eq!(
            hash_json(&json!({"x": 1, "y": 2})),
            hash_json(&json!({"y": 2, "x": 1}))
        );
        assert_ne!(hash_json(&json!({"x": 1})), hash_json(&json!({"x": 2})));
    }
}
