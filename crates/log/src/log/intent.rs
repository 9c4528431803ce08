//! Intent lines: `{"intent": {...}}`, written just before a call whose
//! answer comes from outside the run (a live model endpoint, a model-played
//! user) or whose tool may write is dispatched, so that a bundle cut off
//! inside that call says which call was in flight. An intent names the
//! event it will become (`seq`), its call, its tool, and the SHA-256 of its
//! canonical request (never the request: one short line per call keeps the
//! bundle O(N)). It is not an event and not in the hash chain: the event
//! that answers it is the record; only an intent with no event after it
//! (the last line of a killed run) means anything to a reader.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call about to go out, as its line holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// The call (`interface.function`).
    pub call: String,
    /// SHA-256 of the canonical request.
    pub request_sha256: String,
    /// The event the call will be recorded as.
    pub seq: u64,
    /// The tool's name, for `tools.call`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct IntentLine {
    intent: Intent,
}

impl Intent {
    /// The intent of the call `call` with `request`, to be event `seq`.
    pub fn of(seq: u64, call: &str, request: &Value, tool: Option<&str>) -> Intent {
        Intent {
            call: call.to_string(),
            request_sha256: worldline_case::canon::sha256_hex(worldline_case::canon::to_string(
                request,
            )),
            seq,
            tool: tool.map(str::to_string),
        }
    }

    /// Its line in a bundle, newline included.
    pub fn line(&self) -> String {
        let mut line = serde_json::to_string(&IntentLine {
            intent: self.clone(),
        })
        .expect("intents serialize");
        line.push('\n');
        line
    }

    /// Whether `request` is the request this intent was written for.
    pub fn is_for(&self, request: &Value) -> bool {
        worldline_case::canon::sha256_hex(worldline_case::canon::to_string(request))
            == self.request_sha256
    }
}

/// The intent a bundle line holds: `None` for any other line, an error for
/// an intent line that does not have an intent's shape.
pub fn read(value: &Value) -> Option<Result<Intent, String>> {
    value.get("intent")?;
    Some(
        serde_json::from_value::<IntentLine>(value.clone())
            .map(|l| l.intent)
            .map_err(|e| e.to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_intent_line_reads_back_and_names_its_request_by_hash() {
        let request = json!({"name": "record", "args": {"n": 1}});
        let i = Intent::of(7, "worldline:agent/tools.call", &request, Some("record"));
        let line = i.line();
        assert!(line.ends_with('\n') && !line.contains("\"n\":1"), "{line}");
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(read(&value), Some(Ok(i.clone())));
        assert!(i.is_for(&request));
        assert!(!i.is_for(&json!({"name": "record", "args": {"n": 2}})));
        assert_eq!(read(&json!({"seq": 1})), None);
        assert!(read(&json!({"intent": {"seq": "x"}})).unwrap().is_err());
    }
}
