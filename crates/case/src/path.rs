//! Paths to a value inside a JSON value, one syntax for every place that
//! names one: `[expect]` fields, `where` keys and output checks, model
//! rule paths, and the field part of `fork --set table/key.field`.
//!
//! A path is an optional `$` (the whole value), then steps: `.name` picks
//! a field, `[n]` an array element counting from 0, `[-n]` counting from
//! the end. The first field needs no dot (`a.b` is `$.a.b`). A field of
//! digits picks that element when the value there is an array (`items.0`
//! is `items[0]`). `""` and `$` name the whole value. docs/formats.md
//! documents the syntax for users.

use serde_json::{Map, Value};
use std::fmt;
use std::str::FromStr;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Field(String),
    /// Negative indexes count from the end (`-1` is the last element).
    Index(i64),
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JsonPath {
    segments: Vec<Segment>,
}

impl JsonPath {
    /// Parse a path; the error says what is wrong (the caller names the
    /// path and where it was written).
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let mut rest = text.strip_prefix('$').unwrap_or(text);
        let bare_first = rest.len() == text.len() && !rest.is_empty();
        let mut segments = Vec::new();
        if bare_first && !rest.starts_with(['.', '[']) {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            segments.push(Segment::Field(rest[..end].to_string()));
            rest = &rest[end..];
        }
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let end = r.find(['.', '[']).unwrap_or(r.len());
                if end == 0 {
                    return Err("empty field name".into());
                }
                segments.push(Segment::Field(r[..end].to_string()));
                rest = &r[end..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']').ok_or("`[` without `]`")?;
                let index = r[..end]
                    .trim()
                    .parse::<i64>()
                    .map_err(|_| format!("`[{}]` is not an index", &r[..end]))?;
                segments.push(Segment::Index(index));
                rest = &r[end + 1..];
            } else {
                return Err(format!("unexpected `{rest}`"));
            }
        }
        Ok(JsonPath { segments })
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The value at the path, if there is one.
    pub fn get<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        self.segments.iter().try_fold(value, |v, s| match v {
            Value::Object(m) => m.get(s.field()?),
            Value::Array(items) => items.get(s.position(items.len())?),
            _ => None,
        })
    }

    /// The value at the path, to change in place.
    pub fn get_mut<'a>(&self, value: &'a mut Value) -> Option<&'a mut Value> {
        self.segments.iter().try_fold(value, |v, s| match v {
            Value::Object(m) => m.get_mut(s.field()?),
            Value::Array(items) => {
                let i = s.position(items.len())?;
                items.get_mut(i)
            }
            _ => None,
        })
    }

    /// Put `new` at the path. Missing fields are added, and a value in
    /// the way of a field that is not an object becomes one; an index must
    /// name an element that exists.
    pub fn set(&self, value: &mut Value, new: Value) -> Result<(), String> {
        let mut at = value;
        for s in &self.segments {
            at = s.step_mut(at)?;
        }
        *at = new;
        Ok(())
    }
}

impl Segment {
    /// The value this step names below `v`, for [`JsonPath::set`].
    fn step_mut<'a>(&self, v: &'a mut Value) -> Result<&'a mut Value, String> {
        if self.is_index()
            && let Value::Array(ref mut items) = *v
        {
            let len = items.len();
            let i = self
                .position(len)
                .ok_or_else(|| format!("`{self}` is past the end of an array of {len}"))?;
            return Ok(&mut items[i]);
        }
        match self {
            Segment::Index(_) => Err(format!("`{self}` indexes {}, not an array", kind_of(v))),
            Segment::Field(f) => {
                if !v.is_object() {
                    *v = Value::Object(Map::new());
                }
                let Value::Object(m) = v else {
                    unreachable!("made an object above")
                };
                Ok(m.entry(f.clone()).or_insert(Value::Null))
            }
        }
    }

    fn field(&self) -> Option<&str> {
        match self {
            Segment::Field(f) => Some(f),
            Segment::Index(_) => None,
        }
    }

    /// Whether the step can name an array element: `[n]`, or a field of
    /// digits.
    fn is_index(&self) -> bool {
        match self {
            Segment::Index(_) => true,
            Segment::Field(f) => !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()),
        }
    }

    /// The element this step names in an array of `len`, if it names one.
    fn position(&self, len: usize) -> Option<usize> {
        let i = match self {
            Segment::Index(i) if *i < 0 => i64::try_from(len).ok()? + i,
            Segment::Index(i) => *i,
            Segment::Field(f) if self.is_index() => f.parse().ok()?,
            Segment::Field(_) => return None,
        };
        usize::try_from(i).ok().filter(|i| *i < len)
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Segment::Field(name) => write!(f, ".{name}"),
            Segment::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// What `v` is, as an error says it ("a number", "an object").
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl FromStr for JsonPath {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JsonPath::parse(s)
    }
}

impl fmt::Display for JsonPath {
    /// The canonical spelling: `$`, then `.field` and `[n]` steps.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        self.segments.iter().try_for_each(|s| write!(f, "{s}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(text: &str) -> JsonPath {
        JsonPath::parse(text).unwrap()
    }

    fn field(f: &str) -> Segment {
        Segment::Field(f.into())
    }

    #[test]
    fn every_written_form_parses_to_the_same_steps() {
        let want = [field("a"), Segment::Index(0), field("b")];
        for text in ["$.a[0].b", "a[0].b", ".a[0].b", "$.a[ 0 ].b"] {
            assert_eq!(p(text).segments(), want, "{text}");
        }
        assert_eq!(p("a.0.b").segments(), [field("a"), field("0"), field("b")]);
        assert_eq!(p("$[-1]").segments(), [Segment::Index(-1)]);
        assert_eq!(p("[2]").segments(), [Segment::Index(2)]);
        assert!(p("").segments().is_empty());
        assert!(p("$").segments().is_empty());
        assert_eq!(p("a.b[-2]").to_string(), "$.a.b[-2]");
    }

    #[test]
    fn malformed_paths_say_what_is_wrong() {
        let err = |text: &str| JsonPath::parse(text).unwrap_err();
        assert_eq!(err("$..a"), "empty field name");
        assert_eq!(err("a."), "empty field name");
        assert_eq!(err("$.a[x]"), "`[x]` is not an index");
        assert_eq!(err("a[1"), "`[` without `]`");
        assert_eq!(err("$a"), "unexpected `a`");
        assert_eq!(err("a[0]b"), "unexpected `b`");
    }

    #[test]
    fn get_walks_fields_and_indexes_from_either_end() {
        let v = json!({"content": {"deploys": [{"id": "D-41"}, {"id": "D-42"}]}});
        assert_eq!(p("$.content.deploys[-1].id").get(&v), Some(&json!("D-42")));
        assert_eq!(p("content.deploys[0].id").get(&v), Some(&json!("D-41")));
        assert_eq!(p("content.deploys.1.id").get(&v), Some(&json!("D-42")));
        assert_eq!(p("$").get(&v), Some(&v));
        assert_eq!(p("$.content.deploys[5]").get(&v), None);
        assert_eq!(p("$.content.deploys[-3]").get(&v), None);
        assert_eq!(p("content[0]").get(&v), None, "an index into an object");
        assert_eq!(p("content.deploys.x").get(&v), None, "a name into an array");
        assert_eq!(p("content.deploys[0].id.more").get(&v), None);
        assert_eq!(p("n.0").get(&json!({"n": {"0": 7}})), Some(&json!(7)));
    }

    #[test]
    fn get_mut_changes_the_value_in_place() {
        let mut v = json!({"a": [1, 2, 3]});
        *p("a[-1]").get_mut(&mut v).unwrap() = json!(30);
        assert_eq!(v, json!({"a": [1, 2, 30]}));
        assert!(p("a[3]").get_mut(&mut v).is_none());
    }

    #[test]
    fn set_adds_missing_fields_and_refuses_missing_elements() {
        let mut v = json!({"id": "T-1", "meta": "old"});
        p("status").set(&mut v, json!("open")).unwrap();
        p("meta.owner.name").set(&mut v, json!("ana")).unwrap();
        assert_eq!(
            v,
            json!({"id": "T-1", "status": "open", "meta": {"owner": {"name": "ana"}}})
        );
        let mut v = json!({"tags": ["a", "b"]});
        p("tags[-1]").set(&mut v, json!("z")).unwrap();
        p("tags.0").set(&mut v, json!("y")).unwrap();
        assert_eq!(v, json!({"tags": ["y", "z"]}));
        assert_eq!(
            p("tags[2]").set(&mut v, json!(1)).unwrap_err(),
            "`[2]` is past the end of an array of 2"
        );
        assert_eq!(
            p("tags.7").set(&mut v, json!(1)).unwrap_err(),
            "`.7` is past the end of an array of 2"
        );
        assert_eq!(
            p("id[0]")
                .set(&mut json!({"id": "x"}), json!(1))
                .unwrap_err(),
            "`[0]` indexes a string, not an array"
        );
        let mut whole = json!(1);
        p("$").set(&mut whole, json!({"new": true})).unwrap();
        assert_eq!(whole, json!({"new": true}));
    }
}
