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
    hex_of(&Sha256::digest(bytes.as_ref()))
}

/// Whether `text` is what [`sha256_hex`] writes: 64 lowercase hex digits
/// (the names of a store's objects and worlds).
pub fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Bytes (a digest) as lowercase hex, written byte by byte into the
/// string's buffer: `hex::encode` collects an iterator of `char`s, ~1% of
/// a run's CPU for the hashes of its events.
pub fn hex_of(bytes: &[u8]) -> String {
    let mut out = vec![0; bytes.len() * 2];
    hex::encode_to_slice(bytes, &mut out).expect("the output is twice the input's length");
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// SHA-256 of the canonical text of a value, as hex.
pub fn hash_json(value: &impl Serialize) -> String {
    sha256_hex(to_string(value))
}

/// SHA-256 (hex) of `prefix` followed by the canonical text of `value`,
/// the text written into the hash as it is made, never held whole (a
/// footer with a long output).
pub fn hash_json_after(prefix: &str, value: &impl Serialize) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prefix.as_bytes());
    // Many small writes (a punctuation mark each) gathered into blocks.
    let mut text = std::io::BufWriter::with_capacity(8192, &mut hasher);
    serde_json::to_writer(&mut text, value).expect("JSON values always serialize");
    text.into_inner().expect("hashing does not fail");
    hex_of(&hasher.finalize())
}

/// A key for a JSON value used as a row key: strings as themselves, anything
/// else as its canonical text.
pub fn key_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => to_string(other),
    }
}

/// Whether two JSON values are equal with numbers compared by value
/// (`1100 == 1100.0`), inside arrays and objects too. JSON has one number
/// type; `1100` and `1100.0` differ only in how a tool happened to write it.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn same_number(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
        (Some(a), Some(b), _, _) => a == b,
        (_, _, Some(a), Some(b)) => a == b,
        _ => x.as_f64() == y.as_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hex_is_lowercase_two_digits_a_byte() {
        assert_eq!(hex_of(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex_of(&[]), "");
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

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

    #[test]
    fn a_hash_after_a_prefix_is_the_hash_of_both_texts() {
        let v = json!({"b": "x\"y\n".repeat(5000), "a": [1, 2.5, null]});
        assert_eq!(
            hash_json_after("chain\n", &v),
            sha256_hex(format!("chain\n{}", to_string(&v)))
        );
    }

    #[test]
    fn numbers_are_the_same_by_value_at_any_depth() {
        assert!(same(&json!(1100), &json!(1100.0)));
        assert!(same(
            &json!({"a": [1, {"b": 2.0}]}),
            &json!({"a": [1.0, {"b": 2}]})
        ));
        assert!(!same(&json!(1100), &json!(1100.5)));
        assert!(!same(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!same(&json!("1"), &json!(1)));
        assert!(same(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!same(&json!(-1), &json!(u64::MAX)));
    }
}
