//! Reading an OpenTelemetry trace file, bounded: OTLP protobuf (an
//! `ExportTraceServiceRequest`, as `worldline otel -o` and OTLP/HTTP
//! exporters send it) or OTLP JSON (one request a line, as the Collector's
//! file exporter writes it), into plain spans with JSON attribute values.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The largest trace file read; a bigger one is refused.
pub(crate) const MAX_BYTES: u64 = worldline_case::bounded::TRACE;

/// One span, its attribute values as JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub trace_id: String,
    pub span_id: String,
    /// The span it is a child of (empty: a root).
    pub parent_id: String,
    pub name: String,
    pub start_ns: u64,
    /// Its status said it failed (`STATUS_CODE_ERROR`).
    pub failed: bool,
    pub attrs: BTreeMap<String, Value>,
    pub events: Vec<SpanEvent>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpanEvent {
    pub name: String,
    pub attrs: BTreeMap<String, Value>,
}

impl Span {
    /// A string attribute.
    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).and_then(Value::as_str)
    }
}

/// Why a trace file was not read: what is wrong in words, and the line it
/// is on (0: no line); the caller names the file.
#[derive(Debug)]
pub(crate) struct Unread {
    pub line: usize,
    pub message: String,
}

impl From<String> for Unread {
    fn from(message: String) -> Self {
        Unread { line: 0, message }
    }
}

/// The spans of the file at `path`, in file order.
pub(crate) fn read(path: &Path) -> Result<Vec<Span>, Unread> {
    // Opened without blocking and refused unless a regular file: a FIFO
    // or a device is never read.
    let file = worldline_case::bounded::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!(
            "is larger than {} MiB, the most a trace file may be; export one trace (or fewer spans) per file",
            MAX_BYTES >> 20
        )
        .into());
    }
    parse(&bytes)
}

/// The spans of a trace file's bytes: OTLP JSON when it starts with `{`,
/// else OTLP protobuf.
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Span>, Unread> {
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        json_spans(bytes)
    } else {
        let req = ExportTraceServiceRequest::decode(bytes).map_err(|e| {
            format!("is neither OTLP JSON nor an OTLP protobuf trace (cut off or damaged?): {e}")
        })?;
        Ok(proto_spans(&req))
    }
}

fn proto_value(v: &AnyValue) -> Value {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => Value::from(s.as_str()),
        Some(any_value::Value::BoolValue(b)) => Value::from(*b),
        Some(any_value::Value::IntValue(i)) => Value::from(*i),
        Some(any_value::Value::DoubleValue(d)) => Value::from(*d),
        Some(any_value::Value::ArrayValue(a)) => a.values.iter().map(proto_value).collect(),
        Some(any_value::Value::KvlistValue(l)) => Value::Object(
            l.values
                .iter()
                .map(|kv| {
                    (
                        kv.key.clone(),
                        kv.value.as_ref().map_or(Value::Null, proto_value),
                    )
                })
                .collect(),
        ),
        Some(any_value::Value::BytesValue(b)) => Value::from(hex::encode(b)),
        // A string in a dictionary this reader does not keep.
        Some(any_value::Value::StringValueStrindex(_)) | None => Value::Null,
    }
}

fn proto_attrs(kvs: &[KeyValue]) -> BTreeMap<String, Value> {
    kvs.iter()
        .map(|kv| {
            let v = kv.value.as_ref().map_or(Value::Null, proto_value);
            (kv.key.clone(), v)
        })
        .collect()
}

fn proto_spans(req: &ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for rs in &req.resource_spans {
        for ss in &rs.scope_spans {
            for s in &ss.spans {
                out.push(Span {
                    trace_id: hex::encode(&s.trace_id),
                    span_id: hex::encode(&s.span_id),
                    parent_id: hex::encode(&s.parent_span_id),
                    name: s.name.clone(),
                    start_ns: s.start_time_unix_nano,
                    failed: s.status.as_ref().is_some_and(|st| st.code == 2),
                    attrs: proto_attrs(&s.attributes),
                    events: s
                        .events
                        .iter()
                        .map(|e| SpanEvent {
                            name: e.name.clone(),
                            attrs: proto_attrs(&e.attributes),
                        })
                        .collect(),
                });
            }
        }
    }
    out
}

/// An OTLP JSON `AnyValue` (`{"stringValue": ...}`, 64-bit integers as
/// strings or numbers).
fn json_value(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return Value::Null;
    };
    if let Some(s) = o.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = o.get("intValue") {
        return i
            .as_str()
            .and_then(|s| s.parse::<i64>().ok())
            .map_or_else(|| i.clone(), Value::from);
    }
    if let Some(x) = o.get("doubleValue").or(o.get("boolValue")) {
        return x.clone();
    }
    if let Some(a) = o.get("arrayValue") {
        return a["values"]
            .as_array()
            .map_or_else(Vec::new, |vs| vs.iter().map(json_value).collect())
            .into();
    }
    if let Some(l) = o.get("kvlistValue") {
        return Value::Object(json_attrs(&l["values"]).into_iter().collect::<Map<_, _>>());
    }
    o.get("bytesValue").cloned().unwrap_or(Value::Null)
}

fn json_attrs(list: &Value) -> BTreeMap<String, Value> {
    list.as_array()
        .map(|kvs| {
            kvs.iter()
                .filter_map(|kv| Some((kv["key"].as_str()?.to_string(), json_value(&kv["value"]))))
                .collect()
        })
        .unwrap_or_default()
}

/// A span's `startTimeUnixNano`: a decimal string (as OTLP JSON writes a
/// 64-bit integer) or a number, whole and unsigned; `None` when it is
/// neither (it was read as 1970, and moved the span to the front).
fn start_of(span: &Value) -> Option<u64> {
    match &span["startTimeUnixNano"] {
        Value::String(t) => t.parse().ok(),
        v => v.as_u64(),
    }
}

fn json_spans(bytes: &[u8]) -> Result<Vec<Span>, Unread> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        Unread {
            line,
            message: format!("is not UTF-8 text: {e}"),
        }
    })?;
    let mut out = Vec::new();
    // A file exporter writes one request a line; a single pretty-printed
    // document is read whole.
    let docs: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(doc) => vec![doc],
        Err(_) => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| Unread {
                    line: i + 1,
                    message: format!("is not OTLP JSON: {e}"),
                })
            })
            .collect::<Result<_, _>>()?,
    };
    for (i, doc) in docs.iter().enumerate() {
        // The line of the request: one a line, or the one document.
        let line = if docs.len() > 1 { i + 1 } else { 0 };
        let Some(resource_spans) = doc["resourceSpans"].as_array() else {
            return Err(String::from("is JSON without `resourceSpans`: not an OTLP trace").into());
        };
        for rs in resource_spans {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for s in ss["spans"].as_array().into_iter().flatten() {
                    let name = s["name"].as_str().unwrap_or("").to_string();
                    let start_ns = start_of(s).ok_or_else(|| Unread {
                        line,
                        message: format!(
                            "span `{name}` (id {}) has startTimeUnixNano {}, not a whole number of nanoseconds since 1970: the run's clock and its calls' order are read from it; export the trace again, or mend the span",
                            s["spanId"].as_str().unwrap_or("?"),
                            s.get("startTimeUnixNano").map_or_else(|| "missing".to_string(), Value::to_string),
                        ),
                    })?;
                    out.push(Span {
                        trace_id: s["traceId"].as_str().unwrap_or("").to_lowercase(),
                        span_id: s["spanId"].as_str().unwrap_or("").to_lowercase(),
                        parent_id: s["parentSpanId"].as_str().unwrap_or("").to_lowercase(),
                        name,
                        start_ns,
                        failed: matches!(&s["status"]["code"], Value::Number(n) if n.as_u64() == Some(2))
                            || s["status"]["code"] == "STATUS_CODE_ERROR",
                        attrs: json_attrs(&s["attributes"]),
                        events: s["events"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|e| SpanEvent {
                                name: e["name"].as_str().unwrap_or("").to_string(),
                                attrs: json_attrs(&e["attributes"]),
                            })
                            .collect(),
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start time that is no whole number of nanoseconds is refused,
    /// naming the span (it was read as 1970: the case's clock, and the
    /// span moved to the front of the run).
    #[test]
    fn a_start_time_that_is_no_number_is_refused_naming_the_span() {
        let doc = |t: &str| {
            format!(
                r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"0af7","spanId":"b7ad","name":"chat","startTimeUnixNano":{t}}}]}}]}}]}}"#
            )
        };
        assert_eq!(
            json_spans(doc("\"1772366703000000000\"").as_bytes()).unwrap()[0].start_ns,
            1_772_366_703_000_000_000
        );
        for bad in ["\"1.772366703e18\"", "\"yesterday\"", "-1", "1.5"] {
            let e = json_spans(doc(bad).as_bytes()).unwrap_err();
            assert!(
                e.message.starts_with(&format!(
                    "span `chat` (id b7ad) has startTimeUnixNano {bad}, not a whole number"
                )),
                "{bad}: {}",
                e.message
            );
        }
    }
}
