//! The JSON Schema subset worldline checks tool arguments against: `type`,
//! `properties`, `required`, `additionalProperties`, `items`, `enum`,
//! `const`, `minimum`, `maximum`, `minLength`, `maxLength`, `minItems`,
//! `maxItems`, `anyOf`, `oneOf` (what Python tooling emits for an optional
//! parameter: `anyOf: [{type: string}, {type: null}]`), plus
//! `description`/`title`/`default`/`examples` as notes.
//! A schema using any other keyword is refused when the world loads, so a
//! world never silently skips a check it seems to make.

use serde_json::{Map, Value};

const TYPES: &[&str] = &[
    "object", "array", "string", "number", "integer", "boolean", "null",
];
const NOTES: &[&str] = &["description", "title", "default", "examples", "$schema"];

/// Check that `schema` is a schema of the supported subset; the error says
/// which keyword at which path is wrong.
pub(crate) fn check_schema(schema: &Value) -> Result<(), String> {
    check_at(schema, "#")
}

fn check_at(schema: &Value, at: &str) -> Result<(), String> {
    let obj = match schema {
        Value::Object(o) => o,
        Value::Bool(_) => return Ok(()),
        other => return Err(format!("{at}: a schema is an object, found {other}")),
    };
    for (k, v) in obj {
        match k.as_str() {
            "type" => {
                let names: Vec<&Value> = match v {
                    Value::Array(a) => a.iter().collect(),
                    one => vec![one],
                };
                for n in names {
                    match n.as_str() {
                        Some(t) if TYPES.contains(&t) => {}
                        _ => {
                            return Err(format!(
                                "{at}/type: unknown type {n}; use one of {}",
                                TYPES.join(", ")
                            ));
                        }
                    }
                }
            }
            "properties" => {
                let props = v
                    .as_object()
                    .ok_or_else(|| format!("{at}/properties: must be an object"))?;
                for (name, sub) in props {
                    check_at(sub, &format!("{at}/properties/{name}"))?;
                }
            }
            "required" => {
                let ok = v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
                if !ok {
                    return Err(format!("{at}/required: must be an array of property names"));
                }
                // A required name the schema refuses: no value passes.
                let closed = obj.get("additionalProperties") == Some(&Value::Bool(false));
                let props = obj.get("properties").and_then(Value::as_object);
                if let (true, Some(props)) = (closed && crate::new_rules::apply(), props)
                    && let Some(name) = (v.as_array().into_iter().flatten())
                        .filter_map(Value::as_str)
                        .find(|n| !props.contains_key(*n))
                {
                    let names: Vec<&str> = props.keys().map(String::as_str).collect();
                    return Err(format!(
                        "{at}/required: `{name}` is required, but `properties` does not declare it ({}) and `additionalProperties = false` refuses it, so no value passes; declare it, or fix the name",
                        names.join(", ")
                    ));
                }
            }
            "additionalProperties" | "items" => check_at(v, &format!("{at}/{k}"))?,
            "anyOf" | "oneOf" => {
                let options = v
                    .as_array()
                    .filter(|a| !a.is_empty())
                    .ok_or_else(|| format!("{at}/{k}: must be a non-empty array of schemas"))?;
                for (i, sub) in options.iter().enumerate() {
                    check_at(sub, &format!("{at}/{k}/{i}"))?;
                }
            }
            "enum" => {
                if !v.is_array() {
                    return Err(format!("{at}/enum: must be an array"));
                }
                // No value is one of none: a call giving it never passed,
                // and the case checking it was blamed.
                if v.as_array().is_some_and(Vec::is_empty) && crate::new_rules::apply() {
                    return Err(format!(
                        "{at}/enum: an empty list takes no value, so no call passes; list the values it takes, or leave `enum` out"
                    ));
                }
            }
            "const" => {}
            "minimum" | "maximum" => {
                if !v.is_number() {
                    return Err(format!("{at}/{k}: must be a number"));
                }
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" => {
                if !v.is_u64() {
                    return Err(format!("{at}/{k}: must be a non-negative integer"));
                }
            }
            k if NOTES.contains(&k) => {}
            other => return Err(format!("{at}: unsupported JSON Schema keyword `{other}`")),
        }
    }
    if crate::new_rules::apply() {
        bounds_met(obj, at)?;
    }
    Ok(())
}

/// Refuse a lower bound above its upper bound (`minimum = 10, maximum =
/// 1`): no value is within them.
fn bounds_met(obj: &Map<String, Value>, at: &str) -> Result<(), String> {
    for (low, high) in [
        ("minimum", "maximum"),
        ("minLength", "maxLength"),
        ("minItems", "maxItems"),
    ] {
        let bound = |k: &str| obj.get(k).and_then(Value::as_f64);
        if let (Some(l), Some(h)) = (bound(low), bound(high))
            && l > h
        {
            return Err(format!(
                "{at}: {low} = {l} is above {high} = {h}, so no value is within them; swap them or fix the typo"
            ));
        }
    }
    Ok(())
}

/// Validate a value; the error names the path of the first problem.
pub(crate) fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    validate_at(schema, value, &At::Root)
}

/// `value` with text converted where the schema asks for a number, an
/// integer or a boolean and not for text (`"12"` → `12`, `"2.5"` → `2.5`,
/// `"true"` → `true`), as pydantic's lax mode does, inside objects
/// (`properties`, `additionalProperties`) and arrays (`items`) too; with
/// `numbers` (rules 7) a number too, where the schema does not take it as
/// it is: `0`/`1` (`0.0`/`1.0`) for a boolean, a whole float (`7.0`) for an
/// integer. What does not convert is left as it is, for [`validate`] to
/// refuse.
pub(crate) fn coerce(schema: &Value, value: &Value, numbers: bool) -> Value {
    let Value::Object(s) = schema else {
        return value.clone();
    };
    match value {
        Value::Number(n) if numbers => {
            number(&accepted_types(s), n).unwrap_or_else(|| value.clone())
        }
        Value::String(text) => {
            let types = accepted_types(s);
            if types.iter().any(|t| t == "string") {
                return value.clone();
            }
            let has = |t: &str| types.iter().any(|x| x == t);
            let t = text.trim();
            let int = || t.parse::<i64>().ok().map(Value::from);
            let num = || {
                int().or_else(|| {
                    t.parse::<f64>()
                        .ok()
                        .filter(|f| f.is_finite())
                        .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
                })
            };
            let boolean = || match t.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Some(Value::Bool(true)),
                "false" | "0" | "no" | "off" => Some(Value::Bool(false)),
                _ => None,
            };
            let converted = if has("integer") {
                int()
            } else if has("number") {
                num()
            } else {
                None
            };
            converted
                .or_else(|| has("boolean").then(boolean).flatten())
                .unwrap_or_else(|| value.clone())
        }
        Value::Object(obj) => {
            let props = s.get("properties").and_then(Value::as_object);
            let extra = s.get("additionalProperties");
            Value::Object(
                obj.iter()
                    .map(|(k, v)| {
                        let sub = props.and_then(|p| p.get(k)).or(extra);
                        (
                            k.clone(),
                            sub.map_or_else(|| v.clone(), |sub| coerce(sub, v, numbers)),
                        )
                    })
                    .collect(),
            )
        }
        Value::Array(items) => match s.get("items") {
            Some(sub) => Value::Array(items.iter().map(|i| coerce(sub, i, numbers)).collect()),
            None => value.clone(),
        },
        other => other.clone(),
    }
}

/// A number converted to a type of `types` that takes it where none takes
/// it as it is, as pydantic's lax mode converts it: a whole float
/// (within 64 bits) to an integer, `0` and `1` (`0.0`, `1.0`) to a boolean;
/// `None` when it stays.
fn number(types: &[String], n: &serde_json::Number) -> Option<Value> {
    let has = |t: &str| types.iter().any(|x| x == t);
    if has("number") || (has("integer") && (n.is_i64() || n.is_u64())) {
        return None;
    }
    let f = n.as_f64()?;
    // pydantic takes a float within 64 bits (exclusive) for an int.
    const BOUND: f64 = 9_223_372_036_854_775_808.0;
    if has("integer") && f.fract() == 0.0 && f > -BOUND && f < BOUND {
        return Some(Value::from(f as i64));
    }
    if has("boolean") && (f == 0.0 || f == 1.0) {
        return Some(Value::Bool(f == 1.0));
    }
    None
}

/// The `type`s a schema accepts, its `anyOf`/`oneOf` options' included
/// (a route's text is typed by them too: `protocol/src/rest.rs`).
pub fn accepted_types(s: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    };
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = s.get(key) {
            for o in options.iter().filter_map(Value::as_object) {
                out.extend(accepted_types(o));
            }
        }
    }
    out
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// Where in the value a check is: `$`, then `.name` and `[i]` steps,
/// written out only when a check fails.
enum At<'a> {
    Root,
    Field(&'a At<'a>, &'a str),
    Item(&'a At<'a>, usize),
}

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Root => f.write_str("$"),
            At::Field(up, name) => write!(f, "{up}.{name}"),
            At::Item(up, i) => write!(f, "{up}[{i}]"),
        }
    }
}

fn validate_at(schema: &Value, value: &Value, at: &At<'_>) -> Result<(), String> {
    let s: &Map<String, Value> = match schema {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("{at}: no value is allowed here")),
        Value::Object(o) => o,
        _ => return Ok(()),
    };
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_ok(t, value)),
            Value::String(t) => type_ok(t, value),
            _ => true,
        };
        if !ok {
            return Err(format!("{at}: expected {t}, found {value}"));
        }
    }
    if let Some(Value::Array(options)) = s.get("anyOf") {
        let errors: Vec<String> = options
            .iter()
            .filter_map(|o| validate_at(o, value, at).err())
            .collect();
        if errors.len() == options.len() {
            return Err(format!(
                "{at}: {value} matches none of anyOf ({})",
                errors.join("; ")
            ));
        }
    }
    if let Some(Value::Array(options)) = s.get("oneOf") {
        let passing = options
            .iter()
            .filter(|o| validate_at(o, value, at).is_ok())
            .count();
        if passing != 1 {
            return Err(format!(
                "{at}: {value} matches {passing} of the oneOf schemas; it must match exactly one"
            ));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum")
        && !options.contains(value)
    {
        return Err(format!(
            "{at}: {value} is not one of {}",
            Value::Array(options.clone())
        ));
    }
    if let Some(c) = s.get("const")
        && c != value
    {
        return Err(format!("{at}: expected {c}, found {value}"));
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = s.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            return Err(format!("{at}: {n} is less than the minimum {min}"));
        }
        if let Some(max) = s.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            return Err(format!("{at}: {n} is more than the maximum {max}"));
        }
    }
    if let Some(text) = value.as_str() {
        let len = text.chars().count() as u64;
        if let Some(min) = s.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            return Err(format!("{at}: shorter than {min} characters"));
        }
        if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            return Err(format!("{at}: longer than {max} characters"));
        }
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as u64;
        if let Some(min) = s.get("minItems").and_then(Value::as_u64)
            && len < min
        {
            return Err(format!("{at}: fewer than {min} items"));
        }
        if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
            && len > max
        {
            return Err(format!("{at}: more than {max} items"));
        }
        if let Some(item_schema) = s.get("items") {
            for (i, item) in items.iter().enumerate() {
                validate_at(item_schema, item, &At::Item(at, i))?;
            }
        }
    }
    if let Some(obj) = value.as_object() {
        if let Some(Value::Array(required)) = s.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(name) {
                    return Err(format!("{at}: missing required property `{name}`"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (name, v) in obj {
            match props.and_then(|p| p.get(name)) {
                Some(sub) => validate_at(sub, v, &At::Field(at, name))?,
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        return Err(format!("{at}: unexpected property `{name}`"));
                    }
                    Some(extra) => validate_at(extra, v, &At::Field(at, name))?,
                    None => {}
                },
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An empty `enum` or a lower bound above its upper one takes no
    /// value: refused where the schema says it (the case checking a call
    /// was told to "write the value as the tool takes it").
    #[test]
    fn a_schema_no_value_meets_is_refused() {
        let e = check_schema(&json!({"properties": {"id": {"type": "string", "enum": []}}}))
            .unwrap_err();
        assert!(
            e.starts_with("#/properties/id/enum: an empty list takes no value"),
            "{e}"
        );
        let e =
            check_schema(&json!({"properties": {"n": {"minimum": 10, "maximum": 1}}})).unwrap_err();
        assert_eq!(
            e,
            "#/properties/n: minimum = 10 is above maximum = 1, so no value is within them; swap them or fix the typo"
        );
        let e = check_schema(&json!({"minLength": 3, "maxLength": 2})).unwrap_err();
        assert!(
            e.starts_with("#: minLength = 3 is above maxLength = 2"),
            "{e}"
        );
        assert_eq!(
            check_schema(&json!({"minimum": 1, "maximum": 1, "enum": [1]})),
            Ok(())
        );
        let _recorded = crate::new_rules::Reading::start();
        assert_eq!(
            check_schema(&json!({"enum": [], "minimum": 2, "maximum": 1})),
            Ok(())
        );
    }

    /// A required name that `properties` does not declare, in a schema
    /// that refuses other properties: no value could pass, so every call
    /// of the tool failed.
    #[test]
    fn a_required_name_a_closed_schema_refuses_is_refused() {
        let closed = json!({"type": "object", "properties": {"id": {"type": "integer"}},
            "required": ["order_id"], "additionalProperties": false});
        let e = check_schema(&closed).unwrap_err();
        assert!(
            e.starts_with(
                "#/required: `order_id` is required, but `properties` does not declare it (id)"
            ),
            "{e}"
        );
        let open = json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["order_id"]});
        assert_eq!(check_schema(&open), Ok(()));
        let right = json!({"type": "object", "properties": {"id": {"type": "integer"}},
            "required": ["id"], "additionalProperties": false});
        assert_eq!(check_schema(&right), Ok(()));
    }

    #[test]
    fn lax_coercion_turns_text_into_the_numbers_and_booleans_the_schema_asks_for() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "amount": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                "ok": {"type": "boolean"},
                "id": {"type": "string"},
                "ids": {"type": "array", "items": {"type": "integer"}}
            }
        });
        let sent = json!({"n": "12", "amount": "2.5", "ok": "true", "id": "7", "ids": ["1", "x"]});
        for numbers in [false, true] {
            assert_eq!(
                coerce(&schema, &sent, numbers),
                json!({"n": 12, "amount": 2.5, "ok": true, "id": "7", "ids": [1, "x"]})
            );
            // What does not convert stays, for validation to refuse.
            let half = coerce(&schema, &json!({"n": "1.5"}), numbers);
            assert_eq!(half, json!({"n": "1.5"}));
            assert!(validate(&schema, &half).is_err());
        }
    }

    #[test]
    fn lax_coercion_from_rules_7_turns_numbers_into_booleans_and_integers_as_pydantic_does() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "amount": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                "ok": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                "either": {"type": ["integer", "boolean"]},
                "ids": {"type": "array", "items": {"type": "integer"}}
            }
        });
        let sent = json!({"n": 7.0, "amount": 7.0, "ok": 1, "either": 1, "ids": [2.0, 0.0]});
        assert_eq!(
            coerce(&schema, &sent, true),
            json!({"n": 7, "amount": 7.0, "ok": true, "either": 1, "ids": [2, 0]})
        );
        assert_eq!(
            coerce(&schema, &json!({"ok": 0.0}), true),
            json!({"ok": false})
        );
        // Under rules 6 numbers went on as sent: `1` for a boolean refused.
        assert_eq!(coerce(&schema, &sent, false), sent);
        assert!(validate(&schema, &coerce(&schema, &json!({"ok": 1}), false)).is_err());
        // What pydantic refuses stays, for validation to refuse (or, a
        // whole float past 64 bits, as it was).
        for (sent, field) in [
            (json!(2), "ok"),
            (json!(-1), "ok"),
            (json!(0.5), "ok"),
            (json!(7.5), "n"),
        ] {
            let args = json!({ field: sent });
            let got = coerce(&schema, &args, true);
            assert_eq!(got, args);
            assert!(validate(&schema, &got).is_err(), "{got}");
        }
        assert_eq!(
            coerce(&schema, &json!({"n": 1e20}), true),
            json!({"n": 1e20})
        );
    }

    fn ticket_schema() -> Value {
        json!({
            "type": "object",
            "properties": {"id": {"type": "string", "minLength": 1}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["id"],
            "additionalProperties": false
        })
    }

    #[test]
    fn good_arguments_pass() {
        validate(&ticket_schema(), &json!({"id": "T-1", "limit": 3})).unwrap();
    }

    #[test]
    fn bad_arguments_name_the_path() {
        let s = ticket_schema();
        assert!(
            validate(&s, &json!({}))
                .unwrap_err()
                .contains("missing required property `id`")
        );
        assert!(
            validate(&s, &json!({"id": 5}))
                .unwrap_err()
                .starts_with("$.id: expected")
        );
        assert!(
            validate(&s, &json!({"id": "x", "limit": 0}))
                .unwrap_err()
                .contains("minimum")
        );
        assert!(
            validate(&s, &json!({"id": "x", "zz": 1}))
                .unwrap_err()
                .contains("unexpected property `zz`")
        );
    }

    #[test]
    fn optional_parameters_as_python_tooling_writes_them_validate() {
        let s = json!({
            "type": "object",
            "properties": {
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null},
                "amount": {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]}
            }
        });
        check_schema(&s).unwrap();
        validate(&s, &json!({"note": null, "amount": 5})).unwrap();
        validate(&s, &json!({"note": "hi", "amount": "abc"})).unwrap();
        let e = validate(&s, &json!({"note": 3})).unwrap_err();
        assert!(e.starts_with("$.note: 3 matches none of anyOf"), "{e}");
        let e = validate(&s, &json!({"amount": "abcd"})).unwrap_err();
        assert!(e.contains("matches 0 of the oneOf schemas"), "{e}");
    }

    #[test]
    fn schemas_outside_the_subset_are_refused() {
        check_schema(&ticket_schema()).unwrap();
        assert!(
            check_schema(&json!({"type": "strin"}))
                .unwrap_err()
                .contains("unknown type")
        );
        assert!(
            check_schema(&json!({"not": {}}))
                .unwrap_err()
                .contains("unsupported JSON Schema keyword `not`")
        );
        assert!(
            check_schema(&json!({"oneOf": []}))
                .unwrap_err()
                .contains("oneOf: must be a non-empty array")
        );
        assert!(
            check_schema(&json!({"anyOf": [{"type": "strin"}]}))
                .unwrap_err()
                .contains("#/anyOf/0/type: unknown type")
        );
        assert_eq!(
            check_schema(&json!(5)).unwrap_err(),
            "#: a schema is an object, found 5"
        );
    }
}
