//! A world's HTTP API declared by an OpenAPI 3 document (`[openapi]` in
//! world.toml): each operation whose `operationId` names one of the world's
//! tools becomes a route ([`super::routes::Route`]), exactly as a
//! `[[routes]]` entry would. Read from the document: `openapi` (3.x),
//! `servers[0].url` (with its variables' defaults), `paths`, each
//! operation's method, `operationId`, `parameters` (path and query, local
//! `$ref`s followed) and `requestBody` media types. Everything else is
//! ignored, and what was ignored is said as notes (`worldline check`).

use super::routes::{self, Route, RouteToml};
use super::tools::Tool;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// `[openapi]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OpenApiToml {
    /// The document, JSON (`.json`) or YAML, in the world folder.
    pub file: String,
    /// `scheme://host[/base]` the routes answer at, instead of the
    /// document's first server.
    #[serde(default)]
    pub server: Option<String>,
    /// `operationId` → tool, for operations not named after their tool.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
}

/// The routes a document declares, and what was ignored.
#[derive(Debug, Default)]
pub(crate) struct Imported {
    pub routes: Vec<Route>,
    pub notes: Vec<String>,
}

/// The methods a route may have; OpenAPI's others are noted.
const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];
const OTHER_METHODS: [&str; 3] = ["head", "options", "trace"];
/// How many `$ref`s one lookup may follow (a cycle stops here).
const MAX_REFS: usize = 32;

/// Why a document does not parse: what is wrong, and its line (0: none).
#[derive(Debug)]
pub(crate) struct Unparsed {
    pub line: usize,
    pub message: String,
}

/// Parse the document's text: JSON when the file says so, else YAML. A
/// byte-order mark before it is skipped.
pub(crate) fn parse(file: &str, text: &str) -> Result<Value, Unparsed> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if file.ends_with(".json") {
        serde_json::from_str(text).map_err(|e| Unparsed {
            line: e.line(),
            message: format!("is not valid JSON: {e}"),
        })
    } else {
        serde_norway::from_str(text).map_err(|e| Unparsed {
            line: e.location().map_or(0, |l| l.line()),
            message: format!("is not valid YAML: {e}"),
        })
    }
}

/// Follow a local `$ref` (`#/components/parameters/Id`) to what it names.
fn deref<'v>(doc: &'v Value, mut v: &'v Value) -> Result<&'v Value, String> {
    for _ in 0..MAX_REFS {
        let Some(r) = v.get("$ref").and_then(Value::as_str) else {
            return Ok(v);
        };
        let pointer = r.strip_prefix('#').ok_or_else(|| {
            format!(
                "`$ref: {r}` points into another document; only local references (#/...) are read"
            )
        })?;
        v = doc
            .pointer(pointer)
            .ok_or_else(|| format!("`$ref: {r}` names nothing in the document"))?;
    }
    Err(format!("more than {MAX_REFS} `$ref`s in a row (a cycle?)"))
}

/// Why a base URL cannot be one (`None`: it can): `http(s)://host[:port]`
/// and an optional base path, nothing else (no query, fragment, user, space,
/// control character or template left).
fn bad_base(url: &str) -> Option<String> {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return Some("is not an absolute http(s) URL".into());
    };
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if host.is_empty() {
        return Some("has no host".into());
    }
    if let Some(c) = url
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '?' | '#' | '{' | '}'))
    {
        return Some(format!(
            "holds {}; give only the scheme, host, port and base path",
            match c {
                '?' => "a query (`?`)".to_string(),
                '#' => "a fragment (`#`)".to_string(),
                '{' | '}' => "a `{variable}` with no default".to_string(),
                c => format!("the character {}", c.escape_unicode()),
            }
        ));
    }
    let host_ok = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':' | '[' | ']' | '_'));
    if !host_ok {
        return Some(format!(
            "has host `{}`, which is not a host name, an address or a port",
            crate::shown::text(host)
        ));
    }
    if !path.is_ascii() {
        return Some("has a base path that is not ASCII; percent-encode it".into());
    }
    None
}

/// `[openapi] server` checked: the origin and base path routes answer at,
/// as the world declares it. The error is `server`'s (world.toml's).
pub(crate) fn check_server(server: &str) -> Result<(), String> {
    match bad_base(server) {
        None => Ok(()),
        Some(why) => Err(format!(
            "[openapi] server `{}` {why} (e.g. server = \"https://tickets.internal/api\")",
            crate::shown::text(server)
        )),
    }
}

/// The origin and base path routes answer at: `server`, or the document's
/// first server with its variables at their defaults.
fn base_url(doc: &Value, server: Option<&str>) -> Result<String, String> {
    if let Some(s) = server {
        return Ok(s.trim_end_matches('/').to_string());
    }
    let first = &doc["servers"][0];
    let Some(url) = first["url"].as_str() else {
        return Err(
            "declares no `servers`; give the origin as `server = \"https://host\"` in [openapi]"
                .into(),
        );
    };
    let mut url = url.to_string();
    if let Some(vars) = first["variables"].as_object() {
        for (name, var) in vars {
            let default = var["default"].as_str().unwrap_or_default();
            url = url.replace(&format!("{{{name}}}"), default);
        }
    }
    if let Some(why) = bad_base(&url) {
        return Err(format!(
            "its first server `{}` {why}; give the origin as `server = \"https://host\"` in [openapi]",
            crate::shown::text(&url)
        ));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// The properties the tool's schema lists, if it lists any.
fn tool_arguments(tool: &Tool) -> Option<Vec<&str>> {
    let props = tool.params.get("properties")?.as_object()?;
    Some(props.keys().map(String::as_str).collect())
}

/// `[openapi]`'s own settings against the world's tools: the errors are
/// world.toml's.
pub(crate) fn check_decl(decl: &OpenApiToml, tools: &[Tool]) -> Result<(), String> {
    for (op, tool) in &decl.tools {
        if !tools.iter().any(|t| &t.name == tool) {
            return Err(format!(
                "[openapi] tools maps `{op}` to `{tool}`, which is no tool of this world"
            ));
        }
    }
    decl.server.as_deref().map_or(Ok(()), check_server)
}

/// Read the routes of the OpenAPI document `doc` onto `tools` (`decl`
/// checked by [`check_decl`] first). The error is what makes the document
/// unusable; an operation that cannot be answered is a note.
pub(crate) fn import(doc: &Value, decl: &OpenApiToml, tools: &[Tool]) -> Result<Imported, String> {
    match &doc["openapi"] {
        Value::String(v) if v.starts_with("3.") => {}
        Value::String(v) => {
            return Err(format!(
                "is OpenAPI {}; only OpenAPI 3.x is read",
                crate::shown::text(v)
            ));
        }
        Value::Number(n) => {
            return Err(format!(
                "gives `openapi: {n}` as a number; the version is a string: quote it (`openapi: \"3.1.0\"`)"
            ));
        }
        _ if doc.get("swagger").is_some() => {
            return Err(
                "is Swagger 2.0; convert it to OpenAPI 3 (e.g. with swagger2openapi) first".into(),
            );
        }
        _ => return Err("has no `openapi` version; is it an OpenAPI 3 document?".into()),
    }
    let base = base_url(doc, decl.server.as_deref())?;
    let mut out = Imported::default();
    let mut ignored: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let Some(paths) = doc["paths"].as_object() else {
        return Err("has no `paths`".into());
    };
    let mut operations = 0usize;
    for (path, item) in paths {
        let item = deref(doc, item)?;
        let shared = item["parameters"].as_array().cloned().unwrap_or_default();
        for method in OTHER_METHODS {
            if item.get(method).is_some() {
                ignored
                    .entry("methods other than GET, PUT, POST, DELETE and PATCH")
                    .or_default()
                    .push(format!("{} {path}", method.to_uppercase()));
            }
        }
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            operations += 1;
            let at = format!("{} {path}", method.to_uppercase());
            let Some(id) = op["operationId"].as_str() else {
                ignored
                    .entry("operations without an operationId (not answered)")
                    .or_default()
                    .push(at);
                continue;
            };
            let tool_name = decl.tools.get(id).map_or(id, String::as_str);
            let Some(tool) = tools.iter().find(|t| t.name == tool_name) else {
                ignored
                    .entry("operations whose operationId names no tool (not answered; map them in [openapi] tools)")
                    .or_default()
                    .push(format!("{at} ({id})"));
                continue;
            };
            let declared = RouteToml {
                method: method.to_uppercase(),
                url: format!("{base}{path}"),
                tool: tool.name.clone(),
            };
            let route = match routes::resolve(&declared, tools) {
                Ok(r) => r,
                Err(m) => {
                    ignored
                        .entry("operations whose path cannot be a route (not answered)")
                        .or_default()
                        .push(format!("{at}: {m}"));
                    continue;
                }
            };
            let known = tool_arguments(tool);
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            for p in shared.iter().chain(params.iter()) {
                let p = deref(doc, p)?;
                let name = p["name"].as_str().unwrap_or_default();
                match p["in"].as_str().unwrap_or_default() {
                    "path" | "query" => {
                        if known.as_ref().is_some_and(|k| !k.contains(&name)) {
                            ignored
                                .entry("parameters the tool's schema does not list (passed on; the tool may refuse them)")
                                .or_default()
                                .push(format!("{at}: {name} → {}", tool.name));
                        }
                    }
                    other => ignored
                        .entry("header and cookie parameters (not passed to the tool)")
                        .or_default()
                        .push(format!("{at}: {name} in {other}")),
                }
            }
            if let Some(body) = op.get("requestBody") {
                let body = deref(doc, body)?;
                let json = body["content"].as_object().is_some_and(|c| {
                    c.keys()
                        .any(|k| k == "application/json" || k.ends_with("+json"))
                });
                if !json {
                    ignored
                        .entry("request bodies that are not JSON (only a JSON object body is read)")
                        .or_default()
                        .push(at.clone());
                }
            }
            if op.get("callbacks").is_some() {
                ignored.entry("callbacks").or_default().push(at.clone());
            }
            out.routes.push(route);
        }
    }
    if doc.get("security").is_some() || doc["components"].get("securitySchemes").is_some() {
        ignored
            .entry("security (every request is answered; credentials are never recorded)")
            .or_default();
    }
    if doc.get("webhooks").is_some() {
        ignored.entry("webhooks").or_default();
    }
    if !out.routes.is_empty() {
        ignored
            .entry("responses (a tool's answer is the 200 body; its failures the statuses in docs/formats.md)")
            .or_default();
    }
    out.notes = ignored
        .into_iter()
        .map(|(what, at)| {
            if at.is_empty() {
                format!("ignored: {what}")
            } else {
                format!("ignored: {what}: {}", at.join("; "))
            }
        })
        .collect();
    if operations > 0 && out.routes.is_empty() {
        return Err(format!(
            "declares {operations} operation(s) and none can be answered, so it gives the world no route: {}",
            out.notes.join("; ")
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, params: Value) -> Tool {
        Tool {
            name: name.into(),
            description: String::new(),
            version: String::new(),
            mutates: false,
            params,
            op: super::super::tools::Op::Service,
            response: None,
            validate: Default::default(),
        }
    }

    fn decl() -> OpenApiToml {
        OpenApiToml {
            file: "api.yaml".into(),
            server: None,
            tools: BTreeMap::new(),
        }
    }

    const DOC: &str = r#"
openapi: 3.1.0
info: {title: Tickets, version: "1"}
servers:
  - url: https://{region}.tickets.internal/api
    variables:
      region: {default: eu}
security: [{bearer: []}]
components:
  parameters:
    TicketId: {name: id, in: path, required: true, schema: {type: string}}
paths:
  /tickets/{id}:
    parameters: [{$ref: '#/components/parameters/TicketId'}]
    get:
      operationId: get_ticket
      parameters:
        - {name: X-Trace, in: header, schema: {type: string}}
      responses:
        200: {description: the ticket}
    head: {operationId: get_ticket}
  /tickets/{id}/close:
    post:
      operationId: closeTicket
      requestBody:
        content:
          application/json: {schema: {type: object}}
  /health:
    get: {operationId: health}
  /upload:
    post:
      operationId: get_ticket
      requestBody:
        content:
          multipart/form-data: {schema: {type: object}}
"#;

    #[test]
    fn operations_named_after_tools_become_routes_and_the_rest_is_noted() {
        let doc = parse("api.yaml", DOC).unwrap();
        let tools = [
            tool(
                "get_ticket",
                json!({"properties": {"id": {"type": "string"}}}),
            ),
            tool("close_ticket", json!({})),
        ];
        let mut d = decl();
        d.tools.insert("closeTicket".into(), "close_ticket".into());
        let got = import(&doc, &d, &tools).unwrap();
        let described: Vec<String> = got
            .routes
            .iter()
            .map(|r| format!("{} {} {}", r.method, r.origin, r.tool))
            .collect();
        assert_eq!(
            described,
            [
                "GET https://eu.tickets.internal get_ticket",
                "POST https://eu.tickets.internal close_ticket",
                "POST https://eu.tickets.internal get_ticket",
            ]
        );
        let args = got.routes[0]
            .matches("GET", "https://eu.tickets.internal/api/tickets/T-1")
            .unwrap();
        assert_eq!(args, [("id".to_string(), "T-1".to_string())]);
        let notes = got.notes.join("\n");
        for said in [
            "HEAD /tickets/{id}",
            "GET /health (health)",
            "X-Trace in header",
            "POST /upload",
            "security",
            "responses",
        ] {
            assert!(notes.contains(said), "{said} not in:\n{notes}");
        }
    }

    #[test]
    fn unusable_documents_say_why() {
        let tools = [tool("get_ticket", json!({}))];
        let err = |text: &str| {
            let doc = parse("a.json", text).unwrap();
            check_decl(&decl(), &tools)
                .and_then(|()| import(&doc, &decl(), &tools))
                .unwrap_err()
        };
        assert!(err(r#"{"swagger": "2.0"}"#).contains("Swagger 2.0"));
        assert!(err(r#"{"openapi": "3.0.3", "paths": {}}"#).contains("no `servers`"));
        assert!(
            err(r#"{"openapi": "3.0.3", "servers": [{"url": "/v1"}], "paths": {}}"#)
                .contains("not an absolute")
        );
        let cycle = r##"{"openapi": "3.0.3", "servers": [{"url": "https://a"}],
            "paths": {"/x": {"$ref": "#/paths/~1x"}}}"##;
        assert!(err(cycle).contains("a cycle"));
        let remote = r#"{"openapi": "3.0.3", "servers": [{"url": "https://a"}],
            "paths": {"/x": {"$ref": "other.yaml#/x"}}}"#;
        assert!(err(remote).contains("another document"));
        let mut d = decl();
        d.tools.insert("op".into(), "nope".into());
        assert!(check_decl(&d, &tools).unwrap_err().contains("no tool"));
        let e = parse("a.yaml", "a: 1\nb: [").unwrap_err();
        assert!(e.message.contains("not valid YAML"), "{e:?}");
        assert!(e.line >= 2, "{e:?}");
        let unquoted = parse("a.yaml", "openapi: 3.1\npaths: {}\n").unwrap();
        assert!(err(&unquoted.to_string()).contains("quote it"));
        let none = r#"{"openapi": "3.0.3", "servers": [{"url": "https://a"}],
            "paths": {"/x": {"get": {"operationId": "nothing"}}}}"#;
        assert!(err(none).contains("none can be answered"));
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        let doc = parse("a.yaml", "\u{feff}openapi: \"3.0.3\"\npaths: {}\n").unwrap();
        assert_eq!(doc["openapi"], "3.0.3");
        let doc = parse("a.json", "\u{feff}{\"openapi\": \"3.0.3\"}").unwrap();
        assert_eq!(doc["openapi"], "3.0.3");
    }

    #[test]
    fn servers_must_be_an_origin_and_a_base_path() {
        for bad in [
            "",
            "https://",
            "ftp://x",
            "https://x/api?key=1",
            "https://x/#top",
            "https://x y z/\u{0}",
            "https://user@host",
            "https://{region}.x",
        ] {
            assert!(check_server(bad).is_err(), "{bad:?} accepted");
        }
        for good in [
            "https://x",
            "http://127.0.0.1:8080/api/",
            "https://[::1]:9/v1",
        ] {
            assert!(check_server(good).is_ok(), "{good:?} refused");
        }
        let tools = [tool("get_ticket", json!({}))];
        let doc = parse(
            "a.json",
            r#"{"openapi": "3.0.3", "servers": [{"url": "https://a b"}], "paths": {}}"#,
        )
        .unwrap();
        assert!(
            import(&doc, &decl(), &tools)
                .unwrap_err()
                .contains("first server")
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_not_expanded() {
        // Ten levels of ten aliases each: 10^10 strings if expanded.
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = format!("*a{}", i - 1);
            text.push_str(&format!("a{i}: &a{i} [{}]\n", [p.as_str(); 10].join(", ")));
        }
        assert!(
            parse("api.yaml", &text)
                .unwrap_err()
                .message
                .contains("not valid YAML")
        );
    }
}
