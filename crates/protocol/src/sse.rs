//! Server-sent events as the vendors stream them: each event one `data:`
//! line of canonical JSON and a blank line.

use super::HttpResponse;
use serde_json::Value;

/// One `data:` event.
pub(crate) fn event(data: &Value) -> String {
    format!("data: {}\n\n", worldline_case::canon::to_string(data))
}

/// A 200 `text/event-stream` response of `events`, then `tail` (the
/// stream's terminator, such as `data: [DONE]\n\n`).
pub(crate) fn response(events: &[Value], tail: &str) -> HttpResponse {
    let mut body: String = events.iter().map(event).collect();
    body.push_str(tail);
    stream(body)
}

/// A 200 `text/event-stream` response carrying `body`.
fn stream(body: String) -> HttpResponse {
    HttpResponse {
        status: 200,
        headers: vec![
            ("content-type".into(), "text/event-stream".into()),
            ("cache-control".into(), "no-cache".into()),
        ],
        body: body.into_bytes(),
    }
}

/// A 200 `text/event-stream` response of named events (`event:` then
/// `data:`), as Anthropic streams.
pub(crate) fn named_response(events: &[(String, Value)]) -> HttpResponse {
    stream(
        events
            .iter()
            .map(|(name, data)| format!("event: {name}\n{}", event(data)))
            .collect(),
    )
}

/// `text` cut into pieces of at most `size` characters (never inside a
/// character), the deterministic chunking of streamed text.
pub(crate) fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_data_lines_of_canonical_json() {
        let r = response(&[json!({"b": 1, "a": 2})], "data: [DONE]\n\n");
        assert_eq!(
            String::from_utf8(r.body).unwrap(),
            "data: {\"a\":2,\"b\":1}\n\ndata: [DONE]\n\n"
        );
        assert_eq!(pieces("héllo", 2), vec!["hé", "ll", "o"]);
        assert!(pieces("", 4).is_empty());
    }
}
