//! The most bytes an event's line can take in its bundle, counted from its
//! values without serializing them: a run's record is capped below what a
//! reader of bundles reads (decision 0421). Before a call is served, and
//! again before its answer is kept, the record's bytes so far (each line's
//! own length, [`crate::log::Recorder::bytes`]) and this count of the
//! next event must fit [`MAX_RECORDED`]; a run, its replay and its fork
//! stop at the same call.

use serde_json::Value;
use worldline_case::world::state::{FileData, Write};

/// The most bytes a run's events may take: a reader reads a bundle of at
/// most [`worldline_case::bounded::BUNDLE`], and the header and the
/// footer (64 MiB at most, its stdout, stderr and output bounded) need
/// the rest.
pub const MAX_RECORDED: u64 = worldline_case::bounded::BUNDLE - (128 << 20);

/// Bytes a line takes beside its call, request, response, fault and
/// writes (its keys, effect, fuel, hash, seq and time), with the intent
/// line that may be written before it (its call counted again).
pub const LINE: u64 = 384;

/// Bytes one write takes beside its table, key, row, path and data.
const WRITE: u64 = 64;

/// The most bytes `v` takes as JSON: a string's bytes, each that JSON
/// escapes counted as its longest escape (`\u0000`, six bytes), a number
/// as its longest text.
pub fn value(v: &Value) -> u64 {
    match v {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => text(s),
        Value::Array(items) => 2 + items.iter().map(|i| value(i) + 1).sum::<u64>(),
        Value::Object(map) => {
            2 + (map.iter())
                .map(|(k, v)| text(k) + 1 + value(v) + 1)
                .sum::<u64>()
        }
    }
}

/// The most bytes the event a call made takes as its line, from what it
/// was asked (`request`, counted before it was served) and answered.
pub fn line(
    call: &str,
    request: u64,
    response: &Value,
    injected: Option<&Value>,
    writes: &[Write],
) -> u64 {
    LINE + 2 * text(call)
        + request
        + value(response)
        + injected.map_or(0, value)
        + writes.iter().map(write).sum::<u64>()
}

/// The most bytes a line takes before its answer is known: what the
/// call asked, with the smallest answer.
pub fn asked(call: &str, request: u64) -> u64 {
    line(call, request, &Value::Null, None, &[])
}

fn write(w: &Write) -> u64 {
    WRITE
        + match w {
            Write::Put { table, key, row } => text(table) + text(key) + value(row),
            Write::Delete { table, key } => text(table) + text(key),
            Write::File { path, data } => {
                text(path)
                    + match data {
                        FileData::Text(s) => text(s),
                        FileData::Bytes { hex } => text(hex),
                    }
            }
        }
}

fn text(s: &str) -> u64 {
    let escaped = (s.bytes())
        .filter(|b| *b < 0x20 || *b == b'"' || *b == b'\\')
        .count() as u64;
    2 + s.len() as u64 + 5 * escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Effect, Event};
    use serde_json::json;

    /// The count is at least the line's length for events of every kind
    /// of value, the worst escapes, numbers and effect included.
    #[test]
    fn the_count_is_never_below_the_line() {
        let awkward = "\u{0}\u{1f}\"\\\n é ☃ 𝄞".repeat(50);
        let cases = [
            (json!({"name": "get", "args": {"id": awkward}}), json!(null)),
            (
                json!([
                    u64::MAX,
                    i64::MIN,
                    -1.7976931348623157e308,
                    5e-324,
                    true,
                    false,
                    null
                ]),
                json!({"rows": [{"a": awkward.clone(), "b": [[], {}]}]}),
            ),
            (json!(""), json!({awkward.clone(): awkward.clone()})),
        ];
        let writes = vec![
            Write::Put {
                table: "t\"".into(),
                key: awkward.clone(),
                row: json!({"x": awkward.clone()}),
            },
            Write::Delete {
                table: "t".into(),
                key: "k\n".into(),
            },
            Write::File {
                path: "a/\u{7}".into(),
                data: FileData::Text(awkward.clone()),
            },
            Write::File {
                path: "b".into(),
                data: FileData::from_bytes(vec![0xff; 300]),
            },
        ];
        for (request, response) in cases {
            for writes in [vec![], writes.clone()] {
                let injected = Some(json!({"action": "stale", "why": awkward.clone()}));
                let event = Event {
                    call: "worldline:agent/tools.call".into(),
                    effect: Effect::Denied,
                    fuel: u64::MAX,
                    hash: "f".repeat(64),
                    injected: injected.clone(),
                    request: request.clone(),
                    response: response.clone(),
                    seq: u64::MAX,
                    vtime_ns: u64::MAX,
                    writes: writes.clone(),
                };
                let written = worldline_case::canon::to_string(&event).len() as u64 + 1;
                let counted = line(
                    &event.call,
                    value(&request),
                    &response,
                    injected.as_ref(),
                    &writes,
                );
                assert!(counted >= written, "{counted} < {written}: {event:?}");
                assert!(asked(&event.call, value(&request)) <= counted);
            }
        }
    }
}
