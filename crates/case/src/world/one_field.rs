//! A rows file's JSON read as serde_json reads it into a `Value`, but an
//! object that writes a field twice (`{"id": "T-9", "id": "T-10"}`) is
//! refused at the second, where serde_json keeps the last without a word.
//! One pass, building the same values; in the world of a run recorded
//! before this rule (`new_rules`), the last is kept as it was.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// `text`, one JSON document, as a `Value`; a field written twice in one
/// object is an error at its place when `refuse` says so.
pub fn from_str(text: &str, refuse: bool) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Values { refuse }.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

#[derive(Clone, Copy)]
struct Values {
    refuse: bool,
}

impl<'de> DeserializeSeed<'de> for Values {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Values {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            if out.insert(key.clone(), value).is_some() && self.refuse {
                return Err(A::Error::custom(format!(
                    "the field `{key}` is written twice in one object: keep one"
                )));
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What it reads is what serde_json reads, a repeated field aside.
    #[test]
    fn values_are_serde_json_s_and_a_field_written_twice_is_refused_at_it() {
        let text = r#"{"a": [1, -2, 2.5, 1e300, "x\u00e9", true, null, {}], "b": {"c": 18446744073709551615}, "id": 1}"#;
        let ours = from_str(text, true).unwrap();
        assert_eq!(ours, serde_json::from_str::<Value>(text).unwrap());
        let twice = "{\"id\": \"T-9\",\n \"n\": {\"x\": 1, \"x\": 2}}";
        let e = from_str(twice, true).unwrap_err();
        assert!(
            e.to_string().starts_with("the field `x` is written twice"),
            "{e}"
        );
        assert_eq!(e.line(), 2, "{e}");
        // Read as before where the rule does not apply: the last kept.
        let last = from_str(twice, false).unwrap();
        assert_eq!(last, serde_json::from_str::<Value>(twice).unwrap());
        assert!(from_str("{} x", true).is_err());
    }
}
