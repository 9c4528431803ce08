//! The requests and responses of the log's kinds of event, typed (see
//! `call.rs`). Each keeps the keys it does not name (`detail`) and keeps
//! `null` values present, so a typed call writes back the JSON it was
//! read from.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// `Some` whenever the key is present, `null` included (a plain
/// `Option<Value>` would read `null` as absent and lose it on the way back).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// How a call arrived when not through its WIT function, written by the
/// transport that saw it: an HTTP request a sandboxed guest made over
/// `wasi:http` (`http`), or a native process's request through the run's
/// proxy (`proxy`), to its loopback server (`loopback`), or over MCP on
/// stdio (`stdio`). The set is closed: a bundle naming another does not
/// type (a reader sees [`super::Call::Other`], and a test's strict read
/// fails), so a new way in is a new variant here, read by every reader.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Http(HttpRequest),
    Proxy(HttpRequest),
    Loopback(LoopbackRequest),
    Stdio(StdioRequest),
}

impl Transport {
    /// Which API answered the call (`openai.chat`, `mcp`, `rest`, ...).
    pub fn api(&self) -> &str {
        match self {
            Transport::Http(h) | Transport::Proxy(h) => &h.api,
            Transport::Loopback(l) => &l.api,
            Transport::Stdio(s) => &s.api,
        }
    }

    /// What else is noted of the request (whether the answer streamed,
    /// the JSON-RPC method, why the protocol answered by itself), to note
    /// more.
    pub fn detail_mut(&mut self) -> &mut Map<String, Value> {
        match self {
            Transport::Http(h) | Transport::Proxy(h) => &mut h.detail,
            Transport::Loopback(l) => &mut l.detail,
            Transport::Stdio(s) => &mut s.detail,
        }
    }
}

/// The HTTP request a call came in, by its URL (`http`, `proxy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// Which API answered it: `openai.chat`, `openai.responses`,
    /// `anthropic.messages`, `mcp`, `rest`.
    pub api: String,
    pub method: String,
    pub url: String,
    /// The rest: whether the answer streamed, the JSON-RPC method, ...
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// A request to a native run's loopback server, by its path (never the
/// port or the token, so two runs record the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopbackRequest {
    pub api: String,
    pub method: String,
    pub path: String,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// A message over MCP on stdio (no method or URL: a line of JSON-RPC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StdioRequest {
    pub api: String,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// A request a native run refused because the world does not answer it:
/// what came (`path` to the loopback server, `url` through the proxy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusedRequest {
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub error: String,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// A request that only says how it arrived (`tools.specs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Via {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// One tool as `tools.specs` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub name: String,
    pub description: String,
    /// The arguments' JSON Schema.
    pub params: Value,
    pub mutates: bool,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// A call's error: its kind (see `error_kind.rs`) and message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallError {
    pub kind: String,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub message: Option<Value>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

impl CallError {
    /// The message (`null` when the error has none).
    pub fn message(&self) -> &Value {
        self.message.as_ref().unwrap_or(&Value::Null)
    }
}

/// An answer the guest got: `{"ok": …}` or `{"error": {kind, message}}`,
/// with what else the host recorded beside it. Read by hand (below), not
/// derived: a derived `flatten` copies the whole answer into a buffer
/// before it reads a field, and every call's answer is read once typed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub ok: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallError>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

impl<'de> Deserialize<'de> for Answer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = Answer;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an answer: an object with `ok` or `error`")
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Answer, M::Error> {
                use serde::de::Error;
                let mut answer = Answer {
                    ok: None,
                    error: None,
                    detail: Map::new(),
                };
                let mut error_seen = false;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "ok" if answer.ok.is_some() => return Err(M::Error::duplicate_field("ok")),
                        "ok" => answer.ok = Some(map.next_value()?),
                        "error" if error_seen => return Err(M::Error::duplicate_field("error")),
                        "error" => {
                            error_seen = true;
                            answer.error = map.next_value()?;
                        }
                        _ => {
                            let value = map.next_value()?;
                            answer.detail.insert(key, value);
                        }
                    }
                }
                Ok(answer)
            }
        }
        d.deserialize_map(Fields)
    }
}

impl Answer {
    /// `wire` read as an answer without copying its `ok` (any JSON, which
    /// whoever needs it reads in place): its error, typed, when it has
    /// one; when it does not read as an answer, the error reading it as
    /// [`Answer`] gives.
    pub fn error_in(wire: &Value) -> Result<Option<CallError>, serde_json::Error> {
        match wire.as_object() {
            // `ok` and every other key are any JSON.
            Some(map) if !map.contains_key("error") => Ok(None),
            _ => Answer::deserialize(wire).map(|a| a.error),
        }
    }
}

/// `tools.call`'s request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    pub name: String,
    /// The arguments, or the text the agent sent when it was not JSON.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

impl ToolRequest {
    /// The arguments (`null` when the event has none).
    pub fn args(&self) -> &Value {
        self.args.as_ref().unwrap_or(&Value::Null)
    }
}

/// `model.complete`'s request: who answered and the agent's
/// chat-completions JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// `scripted`, `openai`, `recorded`, `recording` (a rerun's cassette)
    /// or `none`.
    pub provider: String,
    pub request: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

impl ModelRequest {
    /// The model the agent asked for, if it named one.
    pub fn model(&self) -> Option<&str> {
        self.request["model"].as_str()
    }

    /// The chat messages the agent sent.
    pub fn messages(&self) -> Option<&Vec<Value>> {
        self.request["messages"].as_array()
    }
}

/// `model.complete`'s response: the completion or the error the guest got,
/// and what the provider did (`model_call`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelAnswer {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub ok: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<CallError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_call: Option<ProviderRecord>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

impl ModelAnswer {
    /// The completion's first choice's message.
    pub fn message(&self) -> Option<&Value> {
        self.ok.as_ref()?.get("choices")?.get(0)?.get("message")
    }

    /// The completion's choices.
    pub fn choices(&self) -> Option<&Value> {
        self.ok.as_ref()?.get("choices")
    }

    /// The first choice's finish reason.
    pub fn finish_reason(&self) -> Option<&str> {
        self.ok.as_ref()?["choices"][0]["finish_reason"].as_str()
    }

    /// The model that answered, as the completion or else the provider says.
    pub fn model(&self) -> Option<&str> {
        let ok = self.ok.as_ref().and_then(|o| o["model"].as_str());
        ok.or(self.model_call.as_ref()?.model.as_deref())
    }

    /// The completion's token counts.
    pub fn usage(&self) -> Option<&Value> {
        self.ok.as_ref()?.get("usage")
    }
}

/// What the provider did for one model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// Real wall time the provider took: labelled metadata, never replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_latency_ms: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_latency_ms: Option<Value>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// `files.*`'s request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// `trace.note`'s request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub kind: String,
    pub text: String,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// `user.say`'s request: what the agent told the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Said {
    pub message: String,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// `user.say`'s response: the user's reply, or how they left, and who
/// played them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ending>,
    /// The turn's number and who played the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<Player>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// How the user ended the conversation (a fork's `--respond` may leave
/// out either key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ending {
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub satisfied: Option<Value>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<Value>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

impl Ending {
    /// Whether the user left satisfied (`satisfied: true`).
    pub fn satisfied(&self) -> bool {
        self.satisfied == Some(Value::Bool(true))
    }

    /// Why the user left (`null` when not said).
    pub fn reason(&self) -> &Value {
        self.reason.as_ref().unwrap_or(&Value::Null)
    }
}

/// Who played the user at one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Player {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// `"script"`, or `{"model": {provider, model, ...}}`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub by: Option<Value>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// `approval.request`'s request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalAsk {
    pub kind: Value,
    pub details: Value,
    /// Set when the host asked (before an `ask` tool), not the agent.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub by: Option<Value>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// `approval.request`'s response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub denied: Option<Value>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// An HTTP status the host sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpStatus {
    pub status: u16,
}

/// A native process's start: what ran, where, with which environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spawn {
    pub argv: Vec<String>,
    /// The names of the environment variables passed through (never their
    /// values: a token or key would land in the log).
    pub env: Vec<String>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// A native process's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exited {
    /// The exit code, when it exited rather than being killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// The signal that killed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// [`Answer`] as it was derived before it was read by hand.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Derived {
        #[serde(default, deserialize_with = "present")]
        ok: Option<Value>,
        #[serde(default)]
        error: Option<CallError>,
        #[serde(flatten)]
        detail: Map<String, Value>,
    }

    fn same(a: &Answer, d: &Derived) -> bool {
        a.ok == d.ok && a.error == d.error && a.detail == d.detail
    }

    /// Every shape an answer takes reads as the derived reader read it,
    /// from a value and from text, and writes back as it was.
    #[test]
    fn an_answer_reads_as_the_derived_reader_read_it() {
        let answers = [
            json!({"ok": {"rows": [{"id": "D-1"}], "as_of": "2026-03-01T12:00:00Z"}}),
            json!({"ok": null}),
            json!({}),
            json!({"error": {"kind": "timeout", "message": "slow", "retry": true}}),
            json!({"error": null}),
            json!({"ok": [1, 2], "injected": {"action": "stale"}, "latency_ms": 5}),
        ];
        for v in answers {
            let a = Answer::deserialize(&v).unwrap();
            let d = Derived::deserialize(&v).unwrap();
            assert!(same(&a, &d), "{v}: {a:?} against {d:?}");
            let text = v.to_string();
            let a: Answer = serde_json::from_str(&text).unwrap();
            assert!(same(&a, &serde_json::from_str(&text).unwrap()), "{text}");
            if v.get("error") != Some(&Value::Null) {
                assert_eq!(serde_json::to_value(&a).unwrap(), v);
            }
        }
    }

    /// What is not an answer is refused, as the derived reader refused it.
    #[test]
    fn what_is_not_an_answer_is_refused() {
        for v in [
            json!([1]),
            json!("ok"),
            json!({"error": {"message": "no kind"}}),
        ] {
            assert!(Answer::deserialize(&v).is_err(), "{v}");
            assert!(Derived::deserialize(&v).is_err(), "{v}");
        }
        for text in [r#"{"ok": 1, "ok": 2}"#, r#"{"error": null, "error": null}"#] {
            assert!(serde_json::from_str::<Answer>(text).is_err(), "{text}");
            assert!(serde_json::from_str::<Derived>(text).is_err(), "{text}");
        }
    }

    /// [`Answer::error_in`] reads every answer, and refuses every non-answer
    /// with the same words, as reading it whole does.
    #[test]
    fn an_answer_s_error_read_in_place_is_the_whole_answer_s() {
        for v in [
            json!({"ok": {"deploys": [{"id": "D-1"}]}}),
            json!({"ok": null}),
            json!({}),
            json!({"error": {"kind": "timeout", "message": "slow", "retry": true}}),
            json!({"error": null}),
            json!({"ok": [1, 2], "injected": {"action": "stale"}}),
            json!({"ok": 1, "error": {"kind": "failed"}}),
            json!([1]),
            json!("ok"),
            json!(null),
            json!({"error": {"message": "no kind"}}),
            json!({"error": 5}),
        ] {
            let whole = Answer::deserialize(&v).map(|a| a.error);
            let in_place = Answer::error_in(&v);
            assert_eq!(
                in_place.map_err(|e| e.to_string()),
                whole.map_err(|e| e.to_string()),
                "{v}"
            );
        }
    }
}
