//! A world's own HTTP API: `[[routes]]` in world.toml map a method and a
//! URL template (`https://tickets.internal/api/tickets/{id}`) onto one of
//! the world's tools, so an agent that calls the API its tools wrap is
//! answered by the same mediated tool call.

use super::tools::Tool;
use serde::Deserialize;
use serde_json::Value;

/// Methods a route may declare.
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// `[[routes]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteToml {
    pub method: String,
    pub url: String,
    pub tool: String,
}

/// One segment of a route's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Literal(String),
    /// `{name}`: one path segment, the tool argument `name`.
    Param(String),
}

/// A declared route, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub method: String,
    /// `scheme://host[:port]`, in lower case.
    pub origin: String,
    pub path: Vec<Segment>,
    pub tool: String,
}

/// Check a declared route against the world's tools.
pub fn resolve(r: &RouteToml, tools: &[Tool]) -> Result<Route, String> {
    let method = r.method.to_ascii_uppercase();
    if !METHODS.contains(&method.as_str()) {
        return Err(format!(
            "route method `{}` is not one of {}",
            r.method,
            METHODS.join(", ")
        ));
    }
    if !tools.iter().any(|t| t.name == r.tool) {
        return Err(format!(
            "route {} {} names no tool `{}` of this world",
            r.method, r.url, r.tool
        ));
    }
    let (origin, path) = split_url(&r.url).ok_or_else(|| {
        format!(
            "route url `{}` is not of the form http(s)://host/path (e.g. https://tickets.internal/api/tickets/{{id}})",
            r.url
        )
    })?;
    if path.contains(['?', '#']) {
        return Err(format!(
            "route url `{}`: declare the path only; query arguments arrive by name",
            r.url
        ));
    }
    let mut segments = Vec::new();
    for s in path.split('/').filter(|s| !s.is_empty()) {
        segments.push(
            match s.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name)
                    if !name.is_empty()
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    Segment::Param(name.to_string())
                }
                Some(_) => {
                    return Err(format!(
                        "route url `{}`: `{s}` is not a parameter name",
                        r.url
                    ));
                }
                None if s.contains(['{', '}']) => {
                    return Err(format!(
                        "route url `{}`: a parameter takes a whole segment (`{s}`)",
                        r.url
                    ));
                }
                None => Segment::Literal(s.to_string()),
            },
        );
    }
    if crate::new_rules::apply() {
        params_named(r, &segments, tools)?;
        written_as_sent(r, &segments)?;
    }
    Ok(Route {
        method,
        origin: origin.to_ascii_lowercase(),
        path: segments,
        tool: r.tool.clone(),
    })
}

/// A route that some request can reach as written: each `{name}` once (a
/// second took the first's value's place, which was lost unsaid), and no
/// whitespace or control character in a segment (a request carries them
/// percent-encoded, and segments are compared as sent, so the route
/// never matched).
fn written_as_sent(r: &RouteToml, segments: &[Segment]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for s in segments {
        match s {
            Segment::Param(name) if !seen.insert(name) => {
                return Err(format!(
                    "route url `{}`: `{{{name}}}` names two segments; a parameter carries one (the second's value took the first's place)",
                    r.url
                ));
            }
            Segment::Literal(l) if l.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                return Err(format!(
                    "route url `{}`: the segment `{l}` holds a space or a control character, which a request carries percent-encoded (a space as %20): write it as the request sends it",
                    r.url.escape_debug()
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Each `{name}` of the route names a parameter of its tool, when the
/// tool's params list them (a request to a route naming another was
/// answered 422 every time: the argument the tool needs never arrived).
fn params_named(r: &RouteToml, segments: &[Segment], tools: &[Tool]) -> Result<(), String> {
    let Some(tool) = tools.iter().find(|t| t.name == r.tool) else {
        return Ok(());
    };
    let Some(props) = tool.params.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for s in segments {
        if let Segment::Param(name) = s
            && !props.contains_key(name)
        {
            let names: Vec<&str> = props.keys().map(String::as_str).collect();
            return Err(format!(
                "route url `{}`: `{{{name}}}` is no parameter of tool `{}` (its parameters: {}); name the segment after the parameter it carries",
                r.url,
                tool.name,
                names.join(", ")
            ));
        }
    }
    Ok(())
}

/// Why `later` is never reached, if it is not: a route declared before it
/// (`earlier`, first match wins) answers every URL it would, as
/// `GET /books/{id}` does `GET /books/search`'s.
pub fn shadowed(earlier: &Route, later: &Route) -> Option<String> {
    let covers = earlier.method == later.method
        && earlier.origin == later.origin
        && earlier.path.len() == later.path.len()
        && (earlier.path.iter().zip(&later.path)).all(|(a, b)| match (a, b) {
            (Segment::Param(_), _) => true,
            (Segment::Literal(a), Segment::Literal(b)) => a == b,
            (Segment::Literal(_), Segment::Param(_)) => false,
        });
    covers.then(|| {
        format!(
            "route {} {}{} is never reached: route {} {}{} (to `{}`), declared before it, answers every URL it would (the first route that matches answers); declare the narrower one first, or drop one",
            later.method,
            later.origin,
            later.template(),
            earlier.method,
            earlier.origin,
            earlier.template(),
            earlier.tool
        )
    })
}

impl Route {
    /// The route's path as written (`/books/{id}`).
    fn template(&self) -> String {
        let parts: Vec<String> = (self.path.iter())
            .map(|s| match s {
                Segment::Literal(l) => l.clone(),
                Segment::Param(p) => format!("{{{p}}}"),
            })
            .collect();
        format!("/{}", parts.join("/"))
    }
}

/// `scheme://authority` and the path of a URL (http or https only).
fn split_url(url: &str) -> Option<(&str, &str)> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let host_end = rest.find('/').unwrap_or(rest.len());
    if host_end == 0 {
        return None;
    }
    let cut = url.len() - rest.len() + host_end;
    Some((&url[..cut], &url[cut..]))
}

/// Percent-decoding (`+` as a space in queries); a `%` not followed by
/// two hex digits stays as it is.
fn decode(s: &str, plus: bool) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes.get(i..i + 3) {
            Some([b'%', h, l]) => hex(*h).zip(hex(*l)).map(|(h, l)| h * 16 + l),
            _ => None,
        };
        match (escaped, bytes[i]) {
            (Some(b), _) => {
                out.push(b);
                i += 3;
                continue;
            }
            (None, b'+') if plus => out.push(b' '),
            (None, b) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Route {
    /// The path parameters, then the query's arguments, of `method url`
    /// when this route answers it: each as written, in order, a query
    /// key as often as it is given (`?tag=a&tag=b`).
    pub fn matches(&self, method: &str, url: &str) -> Option<Vec<(String, String)>> {
        if !method.eq_ignore_ascii_case(&self.method) {
            return None;
        }
        let (origin, rest) = split_url(url)?;
        if !origin.eq_ignore_ascii_case(&self.origin) {
            return None;
        }
        let (path, query) = match rest.split_once('?') {
            Some((p, q)) => (p, q.split('#').next().unwrap_or("")),
            None => (rest.split('#').next().unwrap_or(""), ""),
        };
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        if parts.len() != self.path.len() {
            return None;
        }
        let mut args = Vec::new();
        for (seg, part) in self.path.iter().zip(parts) {
            match seg {
                Segment::Literal(l) if l == part => {}
                Segment::Literal(_) => return None,
                Segment::Param(name) => args.push((name.clone(), decode(part, false))),
            }
        }
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            args.push((decode(k, true), decode(v, true)));
        }
        Some(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> Tool {
        Tool {
            name: name.into(),
            description: String::new(),
            version: String::new(),
            mutates: false,
            params: json!({}),
            op: super::super::tools::Op::Service,
            response: None,
            validate: Default::default(),
        }
    }

    fn route(method: &str, url: &str) -> Route {
        let t = RouteToml {
            method: method.into(),
            url: url.into(),
            tool: "get_ticket".into(),
        };
        resolve(&t, &[tool("get_ticket")]).unwrap()
    }

    /// A `{name}` that is no parameter of the tool is refused (every
    /// request to it was answered 422), and a route an earlier one
    /// answers every URL of is never reached.
    #[test]
    fn a_route_naming_no_parameter_or_never_reached_is_refused() {
        let mut find = tool("find_order");
        find.params = json!({"type": "object", "properties": {"id": {"type": "integer"}}});
        let t = |url: &str| RouteToml {
            method: "GET".into(),
            url: url.into(),
            tool: "find_order".into(),
        };
        let e = resolve(
            &t("http://shop.internal/orders/{order_id}"),
            std::slice::from_ref(&find),
        )
        .unwrap_err();
        assert!(
            e.contains("`{order_id}` is no parameter of tool `find_order` (its parameters: id)"),
            "{e}"
        );
        let by_id = resolve(
            &t("http://shop.internal/orders/{id}"),
            std::slice::from_ref(&find),
        )
        .unwrap();
        let search = resolve(
            &t("http://shop.internal/orders/search"),
            std::slice::from_ref(&find),
        );
        // `search` is a literal: it takes no parameter, and resolves.
        let search = search.unwrap();
        let e = shadowed(&by_id, &search).unwrap();
        assert!(e.starts_with("route GET http://shop.internal/orders/search is never reached: route GET http://shop.internal/orders/{id}"), "{e}");
        assert!(shadowed(&by_id, &by_id).is_some(), "the same route twice");
        assert_eq!(
            shadowed(&search, &by_id),
            None,
            "the narrower first leaves the wider reached"
        );
        let other = resolve(
            &RouteToml {
                method: "POST".into(),
                ..t("http://shop.internal/orders/{id}")
            },
            &[find],
        )
        .unwrap();
        assert_eq!(shadowed(&by_id, &other), None);
    }

    #[test]
    fn templates_match_paths_and_queries() {
        let r = route("get", "https://Tickets.internal/api/tickets/{id}");
        let args = r
            .matches(
                "GET",
                "https://tickets.internal/api/tickets/T%2D100?verbose=yes+please&tag=a&tag=b",
            )
            .unwrap();
        let pairs = [
            ("id", "T-100"),
            ("verbose", "yes please"),
            ("tag", "a"),
            ("tag", "b"),
        ];
        assert_eq!(args, pairs.map(|(k, v)| (k.to_string(), v.to_string())));
        assert!(
            r.matches("POST", "https://tickets.internal/api/tickets/T-100")
                .is_none()
        );
        assert!(
            r.matches("GET", "https://tickets.internal/api/tickets")
                .is_none()
        );
        assert!(
            r.matches("GET", "https://other.internal/api/tickets/T-1")
                .is_none()
        );
        assert!(
            r.matches("GET", "http://tickets.internal/api/tickets/T-1")
                .is_none()
        );
    }

    #[test]
    fn bad_declarations_say_what_is_wrong() {
        let bad = |method: &str, url: &str, tool_name: &str| {
            let t = RouteToml {
                method: method.into(),
                url: url.into(),
                tool: tool_name.into(),
            };
            resolve(&t, &[tool("get_ticket")]).unwrap_err()
        };
        assert!(bad("FETCH", "https://a/b", "get_ticket").contains("not one of"));
        assert!(bad("GET", "https://a/b", "nope").contains("names no tool"));
        assert!(bad("GET", "ftp://a/b", "get_ticket").contains("http(s)://"));
        assert!(bad("GET", "https://a/b/{x}y", "get_ticket").contains("whole segment"));
        assert!(bad("GET", "https://a/b?x=1", "get_ticket").contains("path only"));
        assert!(bad("GET", "https://a/{id}/{id}", "get_ticket").contains("names two segments"));
        assert!(bad("GET", "https://a/my tickets/{id}", "get_ticket").contains("%20"));
    }
}
