//! How a table makes the key of a row inserted without one (`ids` in
//! `world.toml`): `count` (the default, `table-N` with N the row count plus
//! one), `max+1` (an integer one more than the largest integer key), or a
//! template with `{n}` (`"BK-{n:04}"`, `"TX{n}"`) where n is one more than the
//! largest number among the keys the template made. Every scheme is a pure
//! function of the table's rows, so replays make the same keys.

use super::compare;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq)]
pub enum Ids {
    #[default]
    Count,
    MaxPlusOne,
    Template {
        prefix: String,
        width: usize,
        suffix: String,
    },
}

impl Ids {
    pub fn is_count(&self) -> bool {
        *self == Ids::Count
    }

    /// Parse a scheme; the error says what is accepted.
    pub fn parse(text: &str) -> Result<Ids, String> {
        let bad = || {
            format!(
                "ids `{text}`: use \"count\", \"max+1\", or a template with {{n}} or {{n:0W}} such as \"BK-{{n:04}}\""
            )
        };
        match text {
            "count" => return Ok(Ids::Count),
            "max+1" => return Ok(Ids::MaxPlusOne),
            _ => {}
        }
        let (prefix, rest) = text.split_once("{n").ok_or_else(bad)?;
        let (spec, suffix) = rest.split_once('}').ok_or_else(bad)?;
        let width = match spec.strip_prefix(":0") {
            Some(w) => w
                .parse::<usize>()
                .ok()
                .filter(|w| *w <= 20)
                .ok_or_else(bad)?,
            None if spec.is_empty() => 0,
            None => return Err(bad()),
        };
        if suffix.contains("{n") {
            return Err(bad());
        }
        Ok(Ids::Template {
            prefix: prefix.to_string(),
            width,
            suffix: suffix.to_string(),
        })
    }

    /// The key value for a new row of `table` holding `rows`; a `count`
    /// key a row holds is passed over when `pass_over_taken` (from rules
    /// 6: after a delete, the row count plus one may be taken).
    pub fn next(
        &self,
        table: &str,
        rows: &imbl::OrdMap<String, Value>,
        pass_over_taken: bool,
    ) -> Value {
        match self {
            Ids::Count => {
                let mut n = rows.len() + 1;
                while pass_over_taken && rows.contains_key(&format!("{table}-{n}")) {
                    n += 1;
                }
                Value::String(format!("{table}-{n}"))
            }
            Ids::MaxPlusOne => {
                let max = rows.keys().filter_map(|k| k.parse::<i64>().ok()).max();
                Value::from(max.map_or(1, |m| m.saturating_add(1)))
            }
            Ids::Template {
                prefix,
                width,
                suffix,
            } => {
                let max = rows
                    .keys()
                    .filter_map(|k| {
                        k.strip_prefix(prefix.as_str())?
                            .strip_suffix(suffix.as_str())
                    })
                    .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                    .max_by(|a, b| compare::key_order(a, b))
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
                let n = max.saturating_add(1);
                Value::String(format!("{prefix}{n:0width$}{suffix}"))
            }
        }
    }

    fn text(&self) -> String {
        match self {
            Ids::Count => "count".into(),
            Ids::MaxPlusOne => "max+1".into(),
            Ids::Template {
                prefix,
                width: 0,
                suffix,
            } => format!("{prefix}{{n}}{suffix}"),
            Ids::Template {
                prefix,
                width,
                suffix,
            } => format!("{prefix}{{n:0{width}}}{suffix}"),
        }
    }
}

impl Serialize for Ids {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for Ids {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ids::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows(keys: &[&str]) -> imbl::OrdMap<String, Value> {
        keys.iter().map(|k| (k.to_string(), json!({}))).collect()
    }

    #[test]
    fn each_scheme_makes_the_next_key() {
        let r = rows(&["1", "2", "10", "BK-0009", "BK-0010", "x"]);
        assert_eq!(Ids::Count.next("t", &r, true), json!("t-7"));
        assert_eq!(Ids::MaxPlusOne.next("t", &r, true), json!(11));
        assert_eq!(Ids::MaxPlusOne.next("t", &rows(&[]), true), json!(1));
        let bk = Ids::parse("BK-{n:04}").unwrap();
        assert_eq!(bk.next("t", &r, true), json!("BK-0011"));
        assert_eq!(
            Ids::parse("TX{n}").unwrap().next("t", &r, true),
            json!("TX1")
        );
    }

    #[test]
    fn schemes_round_trip_and_bad_ones_say_what_is_accepted() {
        for text in ["count", "max+1", "BK-{n:04}", "{n}-x"] {
            assert_eq!(Ids::parse(text).unwrap().text(), text);
        }
        for bad in ["uuid", "BK-{n", "{n:4}", "{n}{n}"] {
            assert!(Ids::parse(bad).unwrap_err().contains("max+1"), "{bad}");
        }
    }
}
