//! A world's own HTTP API (`[[routes]]` in world.toml): a request that a
//! route answers becomes a call of the route's tool, with arguments from
//! the path, the query and a JSON object body (the body's fields win, then
//! the path's, then the query's), typed by the tool's schema; the tool's
//! answer becomes the JSON body, its failures the statuses such an API
//! would send.

use super::HttpResponse;
use serde_json::{Map, Value, json};
use worldline_case::error_kind::ErrorKind;
use worldline_case::world::accepted_types;
use worldline_case::world::routes::Route;

/// The tool call a request makes, if one of `routes` answers it: the
/// route, and the path's and query's arguments as written.
pub fn find<'r>(
    routes: &'r [Route],
    method: &str,
    url: &str,
) -> Option<(&'r Route, Vec<(String, String)>)> {
    routes
        .iter()
        .find_map(|r| r.matches(method, url).map(|args| (r, args)))
}

/// How path and query text is typed by a parameter's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typing {
    /// By a `type` given as one name only (runs under rules 0).
    OneName,
    /// By every type the schema accepts: a `type` list, and the options of
    /// an `anyOf`/`oneOf` (`Optional[int]` as FastAPI writes it), text
    /// first; a parameter that takes an array gets every value its key is
    /// given (`?tag=a&tag=b`, FastAPI's `list[str] = Query()`), each typed
    /// by its `items` (rules 1 on, decision 0423).
    EveryType,
}

/// The types `schema` accepts, read as `typing` says: every one as the
/// world's schemas read them, or a `type` written as one name.
fn accepted(schema: &Value, typing: Typing) -> Vec<String> {
    match (typing, schema.as_object()) {
        (Typing::EveryType, Some(s)) => accepted_types(s),
        (Typing::OneName, _) => schema["type"]
            .as_str()
            .map(String::from)
            .into_iter()
            .collect(),
        (_, None) => Vec::new(),
    }
}

/// A text argument as the type the tool's schema gives it (`integer`,
/// `number`, `boolean`); left as text when the schema takes text or it
/// parses as none of them.
fn typed(text: Value, schema: &Value, typing: Typing) -> Value {
    let Value::String(s) = &text else { return text };
    let types = accepted(schema, typing);
    let has = |t: &str| types.iter().any(|x| x == t);
    if has("string") {
        return text;
    }
    let integer = || has("integer").then(|| s.parse::<i64>().ok().map(Value::from));
    let number = || {
        let f = s.parse::<f64>().ok();
        has("number").then(|| f.and_then(serde_json::Number::from_f64).map(Value::Number))
    };
    let boolean = || has("boolean").then(|| s.parse::<bool>().ok().map(Value::Bool));
    let parsed = (integer().flatten())
        .or_else(|| number().flatten())
        .or_else(|| boolean().flatten());
    parsed.unwrap_or(text)
}

/// The schema an array parameter's values are typed by, when `schema`
/// takes an array and `typing` reads every type.
fn items_of(schema: &Value, typing: Typing) -> Option<&Value> {
    if typing != Typing::EveryType || !accepted(schema, typing).iter().any(|t| t == "array") {
        return None;
    }
    let options = ["anyOf", "oneOf"].map(|k| schema[k].as_array().into_iter().flatten());
    let mut with_items = std::iter::once(schema).chain(options.into_iter().flatten());
    Some(
        with_items
            .find_map(|s| s.get("items"))
            .unwrap_or(&Value::Null),
    )
}

/// The tool's arguments: `from_url` (path and query, typed by `params`,
/// the tool's schema; the first value of a key given twice, or, read by
/// [`Typing::EveryType`], all of them when the parameter takes an array)
/// under the fields of a JSON object `body`. A body that is not a JSON
/// object is a 422.
pub fn arguments(
    from_url: Vec<(String, String)>,
    params: &Value,
    body: &[u8],
    typing: Typing,
) -> Result<Value, HttpResponse> {
    let mut args: Map<String, Value> = Map::new();
    for (k, v) in from_url {
        let schema = &params["properties"][&k];
        match (items_of(schema, typing), args.get_mut(&k)) {
            (Some(items), Some(Value::Array(values))) => {
                values.push(typed(Value::String(v), items, typing));
            }
            (_, Some(_)) => {}
            (Some(items), None) => {
                let first = typed(Value::String(v), items, typing);
                args.insert(k, Value::Array(vec![first]));
            }
            (None, None) => {
                let v = typed(Value::String(v), schema, typing);
                args.insert(k, v);
            }
        }
    }
    if !body.iter().all(u8::is_ascii_whitespace) {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(fields)) => args.extend(fields),
            _ => {
                let e = json!({"error": {"kind": "invalid-args", "message": "the body is not a JSON object"}});
                return Err(HttpResponse::json(422, &e));
            }
        }
    }
    Ok(Value::Object(args))
}

/// The status an API answers a failure of `kind` with.
fn status_of(kind: ErrorKind) -> u16 {
    match kind {
        ErrorKind::Denied => 403,
        ErrorKind::NotFound => 404,
        ErrorKind::InvalidArgs => 422,
        ErrorKind::Conflict => 409,
        ErrorKind::Unavailable => 503,
        ErrorKind::Timeout => 504,
        ErrorKind::Failed => 500,
    }
}

/// The answer to the mediated tool call's `response`: the value with 200,
/// an error as `{"error": {kind, message}}` with its status, or `None` for
/// a timeout (the request stalls).
pub fn reply(response: &Value) -> Option<HttpResponse> {
    match response.get("error") {
        Some(e) => {
            let kind = ErrorKind::named(e["kind"].as_str().unwrap_or_default());
            if kind == ErrorKind::Timeout {
                return None;
            }
            let body = json!({"error": {"kind": kind, "message": e["message"]}});
            let r = HttpResponse::json(status_of(kind), &body);
            Some(if kind == ErrorKind::Unavailable {
                r.with_header("retry-after", "1")
            } else {
                r
            })
        }
        None => Some(HttpResponse::json(
            200,
            response.get("ok").unwrap_or(&Value::Null),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_come_from_path_query_and_body_typed_by_the_schema() {
        let params = json!({"properties": {"id": {"type": "string"}, "limit": {"type": "integer"}, "all": {"type": "boolean"}}});
        let url = pairs(&[
            ("id", "7"),
            ("limit", "20"),
            ("all", "true"),
            ("limit", "30"),
        ]);
        for typing in [Typing::OneName, Typing::EveryType] {
            let args = arguments(url.clone(), &params, b"", typing).unwrap();
            assert_eq!(args, json!({"id": "7", "limit": 20, "all": true}));
            let body = br#"{"limit": 5, "reason": "r"}"#;
            let args = arguments(url.clone(), &params, body, typing).unwrap();
            assert_eq!(args["limit"], 5);
            assert_eq!(args["reason"], "r");
            let refused = arguments(url.clone(), &params, b"[1]", typing);
            assert_eq!(refused.unwrap_err().status, 422);
        }
    }

    #[test]
    fn every_type_a_schema_accepts_types_text_under_rules_1_and_one_name_under_0() {
        let params = json!({"properties": {
            "limit": {"type": ["integer", "null"]},
            "page": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null},
            "ratio": {"oneOf": [{"type": "number"}, {"type": "boolean"}]},
            "q": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "n": {"type": ["integer", "null"]},
        }});
        let url = pairs(&[
            ("limit", "5"),
            ("page", "2"),
            ("ratio", "0.5"),
            ("q", "12"),
            ("n", "five"),
        ]);
        let every = arguments(url.clone(), &params, b"", Typing::EveryType).unwrap();
        assert_eq!(
            every,
            json!({"limit": 5, "page": 2, "ratio": 0.5, "q": "12", "n": "five"})
        );
        let one = arguments(url, &params, b"", Typing::OneName).unwrap();
        let as_sent = json!({"limit": "5", "page": "2", "ratio": "0.5", "q": "12", "n": "five"});
        assert_eq!(one, as_sent, "rules 0 read one name only");
    }

    #[test]
    fn a_key_given_again_is_every_value_of_an_array_parameter_under_rules_1() {
        let params = json!({"properties": {
            "tag": {"type": "array", "items": {"type": "string"}},
            "id": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
            "one": {"type": "string"},
        }});
        let url = pairs(&[
            ("tag", "a"),
            ("id", "1"),
            ("tag", "b"),
            ("id", "2"),
            ("one", "x"),
            ("one", "y"),
        ]);
        let every = arguments(url.clone(), &params, b"", Typing::EveryType).unwrap();
        assert_eq!(every, json!({"tag": ["a", "b"], "id": [1, 2], "one": "x"}));
        let single = arguments(pairs(&[("tag", "a")]), &params, b"", Typing::EveryType);
        assert_eq!(single.unwrap(), json!({"tag": ["a"]}));
        let one = arguments(url, &params, b"", Typing::OneName).unwrap();
        let first_as_text = json!({"tag": "a", "id": "1", "one": "x"});
        assert_eq!(one, first_as_text, "rules 0: a key's first value, as text");
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn answers_and_failures_are_statuses() {
        let ok = reply(&json!({"ok": {"id": "T-1"}})).unwrap();
        assert_eq!((ok.status, ok.body), (200, br#"{"id":"T-1"}"#.to_vec()));
        for (kind, status) in [
            ("denied", 403),
            ("not-found", 404),
            ("invalid-args", 422),
            ("unavailable", 503),
            ("failed", 500),
        ] {
            let r = reply(&json!({"error": {"kind": kind, "message": "m"}})).unwrap();
            assert_eq!(r.status, status, "{kind}");
        }
        assert!(reply(&json!({"error": {"kind": "timeout", "message": "m"}})).is_none());
    }
}
