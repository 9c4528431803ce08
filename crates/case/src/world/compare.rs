//! The comparison operators of query filters and of the grader's `where`:
//! `eq`, `ne`, `gt`, `gte`, `lt`, `lte`, `contains`, and (in checks) `word`
//! and `similar`, with numbers compared by value (or strictly), timestamps
//! as times, and text optionally without regard to case.
//! One implementation, so a tool's query and a case's check agree.
//!
//! Why row keys order with their numbers as numbers (was decision 0060): a
//! query's order uses `key_order` (`T-9` before `T-10`), so generated keys list
//! in insertion order, and declared key schemes (`ids = "max+1"`,
//! `"BK-{n:04}"`) are functions of the table's rows, so a replay makes the same
//! keys. The state's rows stay in a `BTreeMap` by key text (its order is not
//! recorded: canonical JSON sorts keys anyway), so the hashes of existing
//! worlds did not change. `key_order` is ten lines; a natural-sort crate brings
//! locale rules we do not want in a recorded order.
//!
//! Why one row order everywhere (was decision 0141): a world service's
//! `state.query` (Rust `Table::query`/`all`, Python `Table.query()`), the
//! declarative `query` and the grader's `where`/`sum` take rows in `key_order`,
//! through one helper, `world::state::Table::in_key_order`: the WIT and both
//! SDKs already promised key order, the host listed the BTreeMap's text order
//! (`1, 10, 11, 2`), and a floating-point sum depends on the order it folds in.
//! Changing the docs to text order would surprise (the declarative query
//! already sorted by key order); keeping rows in a map ordered by `key_order`
//! would change the state's serialised form and hash, so every recorded state.
//! Sorting at read time changes no record.
//!
//! Why strict numbers are a setting, not a default (was decision 0144): a
//! benchmark that hashes its database tells 2 from 2.0 (all six disagreements
//! of the airline port), while most worlds want by value and strict by default
//! would break every case comparing 1100 with 1100.0; `numbers = "strict"` in
//! world.toml, `[expect]` or a `[[expect.state]]` (nearest wins) reaches the
//! gold comparison and the diff too, which an `eq_strict` operator per check
//! would not.

use super::similar;
use crate::canon;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cmp::Ordering;

/// How numbers compare: by value (`2` equals `2.0`, the default), or
/// strictly, where an integer and a float differ as they do in a benchmark
/// that hashes its database. Set per world (`numbers` in world.toml), per
/// case (`[expect] numbers`) or per state check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Numbers {
    #[default]
    ByValue,
    Strict,
}

/// How two values are told equal: numbers as [`Numbers`] says, and text
/// that reads as an RFC 3339 timestamp by the time it names
/// (`2026-03-01T14:00:00+02:00` equals `2026-03-01T12:00:00.000Z`) when
/// `times` (from rules 5; under earlier rules such text was equal only as
/// written, though `gte`/`lte` compared it as times). Inside arrays and
/// objects too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Equality {
    pub numbers: Numbers,
    pub times: bool,
    /// Whether `gt`/`gte`/`lt`/`lte` and an order by a field order two
    /// integers exactly (from rules 6), not as 64-bit floats.
    pub exact: bool,
}

impl Equality {
    /// Numbers as `numbers` says, timestamps as times when `times`.
    pub fn new(numbers: Numbers, times: bool) -> Self {
        Equality {
            numbers,
            times,
            exact: false,
        }
    }

    /// This equality ordering integers exactly when `exact`.
    pub fn ordering_exactly(self, exact: bool) -> Self {
        Equality { exact, ..self }
    }

    /// The order of two values of one kind; `None` across kinds.
    pub fn order(self, a: &Value, b: &Value) -> Option<Ordering> {
        compare_with(a, b, self.exact)
    }

    /// This equality with a check's own `numbers`, when it sets one.
    pub fn with_numbers(self, numbers: Option<Numbers>) -> Self {
        Equality {
            numbers: numbers.unwrap_or(self.numbers),
            ..self
        }
    }

    /// Whether two values are the same under this comparison. Under
    /// `Numbers::Strict` an integer is not a float of the same value.
    pub fn same(self, a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                (self.numbers == Numbers::ByValue || x.is_f64() == y.is_f64()) && canon::same(a, b)
            }
            (Value::String(x), Value::String(y)) if self.times => x == y || same_time(x, y),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| self.same(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| self.same(v, w)))
            }
            _ => a == b,
        }
    }
}

/// Whether two texts are timestamps of the same time.
fn same_time(x: &str, y: &str) -> bool {
    use crate::time::parse_rfc3339;
    parse_rfc3339(x).is_some_and(|a| parse_rfc3339(y) == Some(a))
}

/// The JSON type of a value as a diff names it (`integer` and `float`
/// apart, since that is what strict comparison tells apart).
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// One operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    Contains,
    /// Text holds the words of the value as whole words, in order
    /// (`"pizza" in subject.lower().split()`).
    Word,
    /// Text as alike as `{ text = "...", min_ratio = 0.95 }` says: difflib's
    /// ratio of the two texts, white space at their ends left out, at least
    /// `min_ratio` (`SequenceMatcher(None, text.strip(), field.strip())`).
    Similar,
}

impl Op {
    /// Every operator with its name in files.
    pub const ALL: [(&'static str, Op); 9] = [
        ("eq", Op::Eq),
        ("ne", Op::Ne),
        ("gt", Op::Gt),
        ("gte", Op::Gte),
        ("lt", Op::Lt),
        ("lte", Op::Lte),
        ("contains", Op::Contains),
        ("word", Op::Word),
        ("similar", Op::Similar),
    ];

    pub fn named(name: &str) -> Option<Op> {
        Op::ALL.iter().find(|(n, _)| *n == name).map(|(_, op)| *op)
    }

    /// Whether `field <op> value` holds, equality (`eq`, `ne`, an array's
    /// `contains`) under `eq`.
    pub fn holds_with(self, field: &Value, value: &Value, ignore_case: bool, eq: Equality) -> bool {
        // Lowercased copies only when asked: a query runs this per row.
        let folded;
        let (field, value) = if ignore_case {
            folded = (lowercase(field), lowercase(value));
            (&folded.0, &folded.1)
        } else {
            (field, value)
        };
        match self {
            Op::Eq => eq.same(field, value),
            Op::Ne => !eq.same(field, value),
            Op::Gt => eq.order(field, value) == Some(Ordering::Greater),
            Op::Gte => matches!(
                eq.order(field, value),
                Some(Ordering::Greater | Ordering::Equal)
            ),
            Op::Lt => eq.order(field, value) == Some(Ordering::Less),
            Op::Lte => matches!(
                eq.order(field, value),
                Some(Ordering::Less | Ordering::Equal)
            ),
            Op::Contains => contains(field, value, eq),
            Op::Word => match (field, value) {
                (Value::String(text), Value::String(w)) => has_words(text, w),
                _ => false,
            },
            Op::Similar => match (field, similar_to(value)) {
                (Value::String(text), Ok((like, min))) => {
                    similar::ratio(similar::strip(like), similar::strip(text)) >= min
                }
                _ => false,
            },
        }
    }
}

/// The text and the least ratio of a `similar` operator's value
/// (`{ text = "...", min_ratio = 0.95 }`), or what is wrong with it.
pub(crate) fn similar_to(value: &Value) -> Result<(&str, f64), String> {
    let shape = "similar takes { text = \"...\", min_ratio = 0.95 }";
    let Value::Object(m) = value else {
        return Err(format!("{shape}, found {value}"));
    };
    if let Some(k) = m
        .keys()
        .find(|k| !["text", "min_ratio"].contains(&k.as_str()))
    {
        return Err(format!("{shape}: unknown key `{k}`"));
    }
    let text = m.get("text").and_then(Value::as_str);
    let min = m.get("min_ratio").and_then(Value::as_f64);
    match (text, min) {
        (Some(t), Some(r)) if (0.0..=1.0).contains(&r) => Ok((t, r)),
        (Some(_), Some(r)) => Err(format!("{shape}: min_ratio {r} is not between 0 and 1")),
        _ => Err(format!("{shape}, found {value}")),
    }
}

/// `value` with every line feed removed from the strings in it (`ignore_newlines`).
pub fn without_newlines(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace('\n', "")),
        Value::Array(items) => Value::Array(items.iter().map(without_newlines).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), without_newlines(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `value` with every string in it lowercased.
pub fn lowercase(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(s.to_lowercase()),
        Value::Array(items) => Value::Array(items.iter().map(lowercase).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), lowercase(v))).collect())
        }
        other => other.clone(),
    }
}

/// Text contains text, an array contains an element (by value), an object
/// contains a key.
pub fn contains(haystack: &Value, needle: &Value, eq: Equality) -> bool {
    match (haystack, needle) {
        (Value::String(h), Value::String(n)) => h.contains(n.as_str()),
        (Value::Array(items), n) => items.iter().any(|i| eq.same(i, n)),
        (Value::Object(m), Value::String(k)) => m.contains_key(k),
        _ => false,
    }
}

/// The words of a text: runs of letters and digits.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether `text` holds the words of `phrase` as whole words, one after
/// another (`"pizza"` is in `"Pizza party!"` but not in `"pizzas"`).
fn has_words(text: &str, phrase: &str) -> bool {
    let (text, phrase) = (words(text), words(phrase));
    !phrase.is_empty() && text.windows(phrase.len()).any(|w| w == phrase.as_slice())
}

/// Timestamps compare as times: RFC 3339 text of different precision
/// (`…00Z` vs `…00.002Z`) does not sort as text. Other text sorts as text.
pub fn compare_text(x: &str, y: &str) -> Ordering {
    use crate::time::parse_rfc3339;
    match (parse_rfc3339(x), parse_rfc3339(y)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => x.cmp(y),
    }
}

/// The order of two values of one kind; `None` across kinds. Two
/// integers in order exactly when `exact` (from rules 6), else numbers as
/// 64-bit floats, where integers past 2^53 that `eq` tells apart were
/// equal.
pub fn compare_with(a: &Value, b: &Value, exact: bool) -> Option<Ordering> {
    let int = |n: &serde_json::Number| {
        (n.as_i64().map(i128::from)).or_else(|| n.as_u64().map(i128::from))
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (int(x), int(y)) {
            (Some(i), Some(j)) if exact => Some(i.cmp(&j)),
            _ => x.as_f64()?.partial_cmp(&y.as_f64()?),
        },
        (Value::String(x), Value::String(y)) => Some(compare_text(x, y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Row keys in the order people expect: runs of digits compare as numbers,
/// so `bookings-9` comes before `bookings-10` and `9` before `10`. Generated
/// keys (`table-N`, or `max+1` integers) therefore sort in insertion order.
pub fn key_order(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a, b);
    loop {
        match (x.chars().next(), y.chars().next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let (n, rest_x) = split_digits(x);
                let (m, rest_y) = split_digits(y);
                let (n, m) = (n.trim_start_matches('0'), m.trim_start_matches('0'));
                let o = n.len().cmp(&m.len()).then_with(|| n.cmp(m));
                if o != Ordering::Equal {
                    return o;
                }
                (x, y) = (rest_x, rest_y);
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(&d);
                }
                (x, y) = (&x[c.len_utf8()..], &y[d.len_utf8()..]);
            }
        }
    }
}

fn split_digits(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s.split_at(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `field <op> value` with numbers by value and timestamps as times.
    fn holds(op: Op, field: &Value, value: &Value, ignore_case: bool) -> bool {
        op.holds_with(
            field,
            value,
            ignore_case,
            Equality::new(Numbers::ByValue, true),
        )
    }

    #[test]
    fn operators_compare_numbers_by_value_and_text_optionally_without_case() {
        assert!(holds(Op::Eq, &json!(1100), &json!(1100.0), false));
        assert!(!holds(Op::Ne, &json!(1100), &json!(1100.0), false));
        assert!(holds(Op::Gt, &json!(3), &json!(2.5), false));
        assert!(holds(
            Op::Lte,
            &json!("2026-01-01T00:00:00Z"),
            &json!("2026-01-01T00:00:00.000Z"),
            false
        ));
        assert!(!holds(Op::Eq, &json!("DE89ab"), &json!("de89AB"), false));
        assert!(holds(Op::Eq, &json!("DE89ab"), &json!("de89AB"), true));
        assert!(holds(
            Op::Contains,
            &json!("Refund for Anna"),
            &json!("anna"),
            true
        ));
        assert!(holds(Op::Contains, &json!([1, 2.0]), &json!(2), false));
        assert!(!holds(Op::Gt, &json!("3"), &json!(2), false));
        assert!(holds(
            Op::Word,
            &json!("Pizza party, April!"),
            &json!("pizza"),
            true
        ));
        assert!(holds(
            Op::Word,
            &json!("New York pizza"),
            &json!("York pizza"),
            false
        ));
        assert!(!holds(
            Op::Word,
            &json!("pizzas for all"),
            &json!("pizza"),
            false
        ));
        assert!(!holds(Op::Word, &json!("Pizza"), &json!("pizza"), false));
        assert_eq!(Op::named("gte"), Some(Op::Gte));
        assert_eq!(Op::named("like"), None);
    }

    #[test]
    fn strict_numbers_tell_an_integer_from_a_float_of_the_same_value() {
        let strict = Equality::new(Numbers::Strict, false);
        assert!(!strict.same(&json!(2), &json!(2.0)));
        assert!(strict.same(&json!(2.0), &json!(2.0)));
        assert!(strict.same(&json!({"a": [1, 2.5]}), &json!({"a": [1, 2.5]})));
        assert!(!strict.same(&json!({"a": [1, 2]}), &json!({"a": [1, 2.0]})));
        let by_value = Equality::new(Numbers::ByValue, false);
        assert!(by_value.same(&json!({"a": [2]}), &json!({"a": [2.0]})));
        assert!(!Op::Eq.holds_with(&json!(2), &json!(2.0), false, strict));
        assert!(!Op::Contains.holds_with(&json!([2]), &json!(2.0), false, strict));
        assert_eq!(type_name(&json!(2.0)), "float");
    }

    #[test]
    fn timestamps_compare_as_times_whatever_their_precision() {
        let a = json!("2026-03-01T11:50:00Z");
        let b = json!("2026-03-01T11:50:00.002Z");
        assert_eq!(compare_with(&a, &b, true), Some(Ordering::Less));
        assert_eq!(
            compare_with(
                &json!("2026-03-01T11:50:00.5Z"),
                &json!("2026-03-01T11:50:00Z"),
                true
            ),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_with(&json!("apple"), &json!("banana"), true),
            Some(Ordering::Less)
        );
    }

    #[test]
    fn integers_past_2_53_order_exactly_from_rules_6() {
        let (a, b) = (json!(1772355600000000000u64), json!(1772355600000000001u64));
        assert_eq!(compare_with(&a, &b, true), Some(Ordering::Less));
        assert_eq!(compare_with(&a, &b, false), Some(Ordering::Equal));
        let exact = Equality::default().ordering_exactly(true);
        assert!(Op::Gt.holds_with(&b, &a, false, exact));
        assert!(!Op::Gt.holds_with(&b, &a, false, Equality::default()));
        assert!(Op::Lt.holds_with(&json!(-3), &json!(2.5), false, exact));
    }

    #[test]
    fn timestamps_are_equal_as_times_under_rules_5_and_as_text_before() {
        let (a, b) = (
            json!("2026-03-01T12:00:00Z"),
            json!("2026-03-01T14:00:00+02:00"),
        );
        let ms = json!("2026-03-01T12:00:00.000Z");
        for numbers in [Numbers::ByValue, Numbers::Strict] {
            let times = Equality::new(numbers, true);
            assert!(times.same(&a, &b) && times.same(&a, &ms) && times.same(&b, &ms));
            assert!(times.same(&json!({"at": [a.clone()]}), &json!({"at": [b.clone()]})));
            assert!(!times.same(&a, &json!("2026-03-01T12:00:01Z")));
            assert!(!times.same(&json!("apple"), &json!("Apple")));
            assert!(!Op::Ne.holds_with(&a, &b, false, times));
            assert!(Op::Contains.holds_with(&json!([a.clone()]), &ms, false, times));
            let text = Equality::new(numbers, false);
            assert!(!text.same(&a, &b) && !text.same(&a, &ms));
            assert!(text.same(&a, &a));
        }
    }

    #[test]
    fn keys_sort_with_their_numbers_as_numbers() {
        let mut keys = vec!["t-10", "t-9", "t-1", "10", "9", "t-09", "a", "t-2b", "t-2a"];
        keys.sort_by(|a, b| key_order(a, b));
        assert_eq!(
            keys,
            ["9", "10", "a", "t-1", "t-2a", "t-2b", "t-09", "t-9", "t-10"]
        );
    }
}
