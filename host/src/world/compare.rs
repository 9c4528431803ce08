//! The comparison operators of query filters and of the grader's `where`:
//! `eq`, `ne`, `gt`, `gte`, `lt`, `lte`, `contains`, with numbers compared by
//! value, timestamps as times, and text optionally without regard to case.
//! One implementation, so a tool's query and a case's check agree.

use crate::canon;
use serde_json::Value;
use std::cmp::Ordering;

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
}

impl Op {
    /// Every operator with its name in files.
    pub const ALL: [(&'static str, Op); 7] = [
        ("eq", Op::Eq),
        ("ne", Op::Ne),
        ("gt", Op::Gt),
        ("gte", Op::Gte),
        ("lt", Op::Lt),
        ("lte", Op::Lte),
        ("contains", Op::Contains),
    ];

    pub fn named(name: &str) -> Option<Op> {
        Op::ALL.iter().find(|(n, _)| *n == name).map(|(_, op)| *op)
    }

    /// Whether `field <op> value` holds.
    pub fn holds(self, field: &Value, value: &Value, ignore_case: bool) -> bool {
        // Lowercased copies only when asked: a query runs this per row.
        let folded;
        let (field, value) = if ignore_case {
            folded = (lowercase(field), lowercase(value));
            (&folded.0, &folded.1)
        } else {
            (field, value)
        };
        match self {
            Op::Eq => canon::same(field, value),
            Op::Ne => !canon::same(field, value),
            Op::Gt => compare(field, value) == Some(Ordering::Greater),
            Op::Gte => matches!(
                compare(field, value),
                Some(Ordering::Greater | Ordering::Equal)
            ),
            Op::Lt => compare(field, value) == Some(Ordering::Less),
            Op::Lte => matches!(
                compare(field, value),
                Some(Ordering::Less | Ordering::Equal)
            ),
            Op::Contains => contains(field, value),
        }
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
pub fn contains(haystack: &Value, needle: &Value) -> bool {
    match (haystack, needle) {
        (Value::String(h), Value::String(n)) => h.contains(n.as_str()),
        (Value::Array(items), n) => items.iter().any(|i| canon::same(i, n)),
        (Value::Object(m), Value::String(k)) => m.contains_key(k),
        _ => false,
    }
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

/// The order of two values of one kind; `None` across kinds.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
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

    #[test]
    fn operators_compare_numbers_by_value_and_text_optionally_without_case() {
        assert!(Op::Eq.holds(&json!(1100), &json!(1100.0), false));
        assert!(!Op::Ne.holds(&json!(1100), &json!(1100.0), false));
        assert!(Op::Gt.holds(&json!(3), &json!(2.5), false));
        assert!(Op::Lte.holds(
            &json!("2026-01-01T00:00:00Z"),
            &json!("2026-01-01T00:00:00.000Z"),
            false
        ));
        assert!(!Op::Eq.holds(&json!("DE89ab"), &json!("de89AB"), false));
        assert!(Op::Eq.holds(&json!("DE89ab"), &json!("de89AB"), true));
        assert!(Op::Contains.holds(&json!("Refund for Anna"), &json!("anna"), true));
        assert!(Op::Contains.holds(&json!([1, 2.0]), &json!(2), false));
        assert!(!Op::Gt.holds(&json!("3"), &json!(2), false));
        assert_eq!(Op::named("gte"), Some(Op::Gte));
        assert_eq!(Op::named("like"), None);
    }

    #[test]
    fn timestamps_compare_as_times_whatever_their_precision() {
        let a = json!("2026-03-01T11:50:00Z");
        let b = json!("2026-03-01T11:50:00.002Z");
        assert_eq!(compare(&a, &b), Some(Ordering::Less));
        assert_eq!(
            compare(
                &json!("2026-03-01T11:50:00.5Z"),
                &json!("2026-03-01T11:50:00Z")
            ),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(&json!("apple"), &json!("banana")),
            Some(Ordering::Less)
        );
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
