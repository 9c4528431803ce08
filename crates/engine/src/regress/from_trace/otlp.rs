//! Reading an OpenTelemetry trace file, bounded: OTLP protobuf (an
//! `ExportTraceServiceRequest`, as OTLP/HTTP exporters send it, or several
//! one after another, as `worldline otel -o` writes its batches, which
//! protobuf reads as one request holding all their spans) or OTLP JSON
//! (one request a line, as the Collector's file exporter writes it), into
//! plain spans with JSON attribute values.

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

/// Why a trace file was not read: what is wrong in words, and the line
/// and column it is at (line 0: no line; column 1 when only the line is
/// known); the caller names the file.
#[derive(Debug)]
pub(crate) struct Unread {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Unread {
    fn at(line: usize, message: String) -> Self {
        Unread {
            line,
            column: 1,
            message,
        }
    }
}

impl From<String> for Unread {
    fn from(message: String) -> Self {
        Unread::at(0, message)
    }
}

/// The spans of the file at `path`, in file order.
pub(crate) fn read(path: &Path) -> Result<Vec<Span>, Unread> {
    // Opened without blocking and refused unless a regular file: a FIFO
    // or a device is never read.
    let file = worldline_case::bounded::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let too_large = || {
        Unread::from(format!(
            "is larger than {} MiB, the most a trace file may be; export one trace (or fewer spans) per file",
            MAX_BYTES >> 20
        ))
    };
    // Refused by its size before it is read, and bounded as it is read
    // (it may grow meanwhile).
    let len = file
        .metadata()
        .map_err(|e| format!("cannot read: {e}"))?
        .len();
    if len > MAX_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_large());
    }
    parse(&bytes)
}

/// The spans of a trace file's bytes: OTLP JSON when it starts with `{`,
/// else OTLP protobuf. An empty file, and JSON that is no object (`[]`),
/// are said to be so (they were "no model call" and "neither OTLP JSON
/// nor an OTLP protobuf ... buffer underflow").
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Span>, Unread> {
    // A UTF-8 byte-order mark (an editor's) is passed over: JSON has none,
    // and no protobuf begins with one (it was "invalid wire type value: 7").
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None if bytes.is_empty() => {
            return Err(String::from("is empty: an OTLP trace file holds spans").into());
        }
        None => {
            return Err(
                String::from("holds only whitespace: an OTLP trace file holds spans").into(),
            );
        }
        Some(b'{') => return json_spans(bytes),
        Some(_) => {}
    }
    if let Ok(doc) = serde_json::from_slice::<Value>(bytes) {
        return Err(format!(
            "is JSON ({}) but not an OTLP trace: OTLP JSON is an object with `resourceSpans` (one a line, or one document)",
            json_kind(&doc)
        )
        .into());
    }
    let req = ExportTraceServiceRequest::decode(bytes).map_err(|e| {
        format!("is neither OTLP JSON nor an OTLP protobuf trace (cut off or damaged?): {e}")
    })?;
    proto_spans(&req)
}

/// What a JSON value is, in words.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(a) if a.is_empty() => "an empty list",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A span's id (`field`: `traceId`, `spanId`, `parentSpanId`) as OTLP JSON
/// gives it, in lower-case hex: hex in any case, as the OTLP JSON encoding
/// writes ids, or the base64 of `bytes` bytes (16 for a trace id, 8 for a
/// span's), as protobuf's own JSON mapping writes them. Ids were only
/// lower-cased: base64 ids were mangled, and traces whose ids differ in
/// case merged. `Ok(None)`: no id (or a blank one).
fn json_id(span: &Value, field: &str, bytes: usize) -> Result<Option<String>, String> {
    let id = match span.get(field) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(format!(
                "has {field} {}, not a string",
                worldline_case::shown::text(&other.to_string())
            ));
        }
    };
    if id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(Some(id.to_ascii_lowercase()));
    }
    // Padded or not, either alphabet, its last character's spare bits
    // not checked (as protobuf's JSON parsers read bytes).
    use base64::Engine as _;
    use base64::alphabet::{STANDARD, URL_SAFE};
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let lenient = GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let decoded = [STANDARD, URL_SAFE]
        .iter()
        .find_map(|a| GeneralPurpose::new(a, lenient).decode(id).ok());
    match decoded {
        Some(raw) if raw.len() == bytes => Ok(Some(hex::encode(raw))),
        _ => Err(format!(
            "has {field} {}, neither hex nor the base64 of {bytes} bytes: not an OTLP id",
            worldline_case::shown::text(&format!("\"{id}\""))
        )),
    }
}

/// The line of `text` the JSON string `needle` first appears on (1 when
/// it does not): where a single document's span is.
fn line_of(text: &str, needle: &str) -> usize {
    let quoted = Value::from(needle).to_string();
    text.find(&quoted)
        .map_or(1, |at| text[..at].matches('\n').count() + 1)
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

fn proto_spans(req: &ExportTraceServiceRequest) -> Result<Vec<Span>, Unread> {
    let mut out = Vec::new();
    for rs in &req.resource_spans {
        for ss in &rs.scope_spans {
            for s in &ss.spans {
                for (field, id) in [("trace_id", &s.trace_id), ("span_id", &s.span_id)] {
                    if id.is_empty() {
                        return Err(format!(
                            "span `{}` has no {field}: not a valid OTLP span (every span has a trace id and a span id); export the trace again, or mend it",
                            worldline_case::shown::text(&s.name)
                        )
                        .into());
                    }
                }
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
    Ok(out)
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
        Unread::at(line, format!("is not UTF-8 text: {e}"))
    })?;
    let mut out = Vec::new();
    // A file exporter writes one request a line; a single pretty-printed
    // document is read whole.
    // Each request with its line (0: the one document).
    let docs: Vec<(usize, Value)> = match serde_json::from_str::<Value>(text) {
        Ok(doc) => vec![(0, doc)],
        Err(whole) => {
            let mut docs = Vec::new();
            for (i, l) in text.lines().enumerate() {
                if l.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str(l) {
                    Ok(doc) => docs.push((i + 1, doc)),
                    // The first request does not parse on its own line:
                    // the file is one document (pretty-printed), damaged,
                    // and the whole document's error says where.
                    Err(_) if docs.is_empty() => return Err(not_json(&whole, 0)),
                    Err(e) => return Err(not_json(&e, i)),
                }
            }
            docs
        }
    };
    for (line, doc) in &docs {
        let line = *line;
        let Some(resource_spans) = doc["resourceSpans"].as_array() else {
            return Err(Unread::at(
                line,
                "is JSON without `resourceSpans`: not an OTLP trace".into(),
            ));
        };
        for rs in resource_spans {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for s in ss["spans"].as_array().into_iter().flatten() {
                    let name = s["name"].as_str().unwrap_or("").to_string();
                    let start_ns = start_of(s).ok_or_else(|| Unread {
                        line,
                        column: 1,
                        message: format!(
                            "span `{name}` (id {}) has startTimeUnixNano {}, not a whole number of nanoseconds since 1970: the run's clock and its calls' order are read from it; export the trace again, or mend the span",
                            s["spanId"].as_str().unwrap_or("?"),
                            s.get("startTimeUnixNano").map_or_else(|| "missing".to_string(), Value::to_string),
                        ),
                    })?;
                    // Where the span is: its request's line, or in the one
                    // document the line its id is on.
                    let at = |id: &Value| match (line, id.as_str()) {
                        (0, Some(id)) => line_of(text, id),
                        _ => line,
                    };
                    let id = |field: &str, bytes: usize, required: bool| {
                        let got = json_id(s, field, bytes).map_err(|why| {
                            Unread::at(
                                at(&s[field]),
                                format!("span `{}` {why}", worldline_case::shown::text(&name)),
                            )
                        })?;
                        match got {
                            None if required => Err(Unread::at(
                                line,
                                format!(
                                    "span `{}`{} has no {field}: not valid OTLP (every span has a trace id and a span id); export the trace again, or mend it",
                                    worldline_case::shown::text(&name),
                                    s["spanId"]
                                        .as_str()
                                        .filter(|i| !i.trim().is_empty())
                                        .map_or_else(String::new, |i| format!(
                                            " (spanId {})",
                                            worldline_case::shown::text(i)
                                        )),
                                ),
                            )),
                            got => Ok(got.unwrap_or_default()),
                        }
                    };
                    let trace_id = id("traceId", 16, true)?;
                    let span_id = id("spanId", 8, true)?;
                    let parent_id = id("parentSpanId", 8, false)?;
                    out.push(Span {
                        trace_id,
                        span_id,
                        parent_id,
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

/// A request that is not JSON, at the line (its index in the file, 0 for
/// the one document) and the column the parser stopped at, said once
/// (it was `bad.jsonl:2:1: ... at line 1 column 20`).
fn not_json(e: &serde_json::Error, index: usize) -> Unread {
    let said = e.to_string();
    let message = said
        .strip_suffix(&format!(" at line {} column {}", e.line(), e.column()))
        .unwrap_or(&said);
    Unread {
        line: index + e.line().max(1),
        column: e.column().max(1),
        message: format!("is not OTLP JSON: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document of one span with these fields (besides its name and
    /// start).
    fn one_span(fields: &str) -> String {
        format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"name":"chat","startTimeUnixNano":"1"{fields}}}]}}]}}]}}"#
        )
    }

    /// Ids in hex are lower-cased; in base64 (protobuf's JSON mapping)
    /// decoded to hex (they were lower-cased: mangled, and two traces whose
    /// ids differ in case merged); anything else, or none, is refused
    /// naming the span and the id.
    #[test]
    fn span_ids_are_hex_or_base64_and_never_missing() {
        let ids = |t: &str, s: &str, p: &str| {
            let doc = one_span(&format!(
                r#","traceId":"{t}","spanId":"{s}","parentSpanId":"{p}""#
            ));
            json_spans(doc.as_bytes()).map(|spans| {
                let s = &spans[0];
                (s.trace_id.clone(), s.span_id.clone(), s.parent_id.clone())
            })
        };
        let hex = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        assert_eq!(
            ids("0AF7651916CD43DD8448EB211C80319C", "B7AD6B7169203331", "").unwrap(),
            hex("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "")
        );
        assert_eq!(
            ids("8rt5MDSunvXpCvqEFQgfnQ==", "AAAAAAAAAAE=", "AAAAAAAAAAI").unwrap(),
            hex(
                "f2bb793034ae9ef5e90afa8415081f9d",
                "0000000000000001",
                "0000000000000002"
            )
        );
        // The same letters in another case are another id.
        assert_ne!(
            ids("8RT5mdsUNVxPcVQefqGFNq==", "AAAAAAAAAAE=", "")
                .unwrap()
                .0,
            ids("8rt5MDSunvXpCvqEFQgfnQ==", "AAAAAAAAAAE=", "")
                .unwrap()
                .0
        );
        for (t, s, p, says) in [
            (
                "trace-1",
                "01",
                "",
                "has traceId \"trace-1\", neither hex nor the base64 of 16 bytes",
            ),
            (
                "AAAAAAAAAAE=",
                "01",
                "",
                "has traceId \"AAAAAAAAAAE=\", neither hex nor the base64 of 16 bytes",
            ),
            (
                "0af7",
                "8rt5MDSunvXpCvqEFQgfnQ==",
                "",
                "has spanId \"8rt5MDSunvXpCvqEFQgfnQ==\", neither hex nor the base64 of 8 bytes",
            ),
            ("0af7", "01", "x y", "has parentSpanId \"x y\""),
            (
                "",
                "01",
                "",
                "span `chat` (spanId 01) has no traceId: not valid OTLP",
            ),
            (
                "0af7",
                "  ",
                "",
                "span `chat` has no spanId: not valid OTLP",
            ),
        ] {
            let e = ids(t, s, p).unwrap_err();
            assert!(e.message.contains(says), "{t} {s} {p}: {}", e.message);
        }
        let e = json_spans(one_span(r#","spanId":"01""#).as_bytes()).unwrap_err();
        assert!(e.message.contains("has no traceId"), "{}", e.message);
        // In a file of one request a line, the line of the request.
        let good = one_span(r#","traceId":"0af7","spanId":"01""#);
        let bad = one_span(r#","traceId":"not-an-id","spanId":"01""#);
        let e = json_spans(format!("{good}\n{bad}\n").as_bytes()).unwrap_err();
        assert_eq!((e.line, e.column), (2, 1), "{}", e.message);
        // In one pretty-printed document, the line the id is on.
        let doc: Value = serde_json::from_str(&bad).unwrap();
        let pretty = serde_json::to_string_pretty(&doc).unwrap();
        let e = json_spans(pretty.as_bytes()).unwrap_err();
        let line = pretty
            .lines()
            .position(|l| l.contains("not-an-id"))
            .unwrap()
            + 1;
        assert_eq!(e.line, line, "{}", e.message);
        // Protobuf: a span without ids is refused.
        use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span as PbSpan};
        let req = |trace_id: Vec<u8>, span_id: Vec<u8>| {
            ExportTraceServiceRequest {
                resource_spans: vec![ResourceSpans {
                    scope_spans: vec![ScopeSpans {
                        spans: vec![PbSpan {
                            trace_id,
                            span_id,
                            name: "chat".into(),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
            }
            .encode_to_vec()
        };
        assert_eq!(
            parse(&req(vec![1; 16], vec![2; 8])).unwrap()[0].span_id,
            "0202020202020202"
        );
        for (t, s, field) in [
            (vec![], vec![2; 8], "trace_id"),
            (vec![1; 16], vec![], "span_id"),
        ] {
            let e = parse(&req(t, s)).unwrap_err();
            assert!(
                e.message.contains(&format!(
                    "span `chat` has no {field}: not a valid OTLP span"
                )),
                "{}",
                e.message
            );
        }
    }

    /// A line that is not JSON is said at its line and column once (it
    /// was `:2:1: ... at line 1 column 20`); one damaged document at the
    /// line and column its parser stopped at.
    #[test]
    fn json_that_does_not_parse_is_said_at_one_position() {
        let e = json_spans(b"{\"resourceSpans\": []}\n{\"resourceSpans\": [}\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 20));
        assert_eq!(e.message, "is not OTLP JSON: expected value");
        let e = json_spans(b"{\n  \"resourceSpans\": [\n    {\n").unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (4, "is not OTLP JSON: EOF while parsing an object")
        );
    }

    /// An empty file, and JSON that is no OTLP object, are said to be so
    /// (they were "no model call" and "neither OTLP JSON nor an OTLP
    /// protobuf ... buffer underflow").
    #[test]
    fn an_empty_file_and_json_that_is_no_object_are_named_so() {
        assert_eq!(
            parse(b"").unwrap_err().message,
            "is empty: an OTLP trace file holds spans"
        );
        assert!(
            parse(b" \n")
                .unwrap_err()
                .message
                .starts_with("holds only whitespace")
        );
        for (bytes, kind) in [
            (&b"[]"[..], "an empty list"),
            (b"[{}]\n", "a list"),
            (b"42", "a number"),
        ] {
            let e = parse(bytes).unwrap_err().message;
            assert!(
                e.starts_with(&format!("is JSON ({kind}) but not an OTLP trace")),
                "{e}"
            );
        }
        assert!(
            parse(b"[1, 2")
                .unwrap_err()
                .message
                .starts_with("is neither OTLP JSON nor")
        );
    }

    /// OTLP JSON after a UTF-8 byte-order mark is read as without it (it
    /// was taken for a protobuf: "invalid wire type value: 7").
    #[test]
    fn a_byte_order_mark_is_passed_over() {
        let doc = br#"{"resourceSpans":[]}"#;
        let mut marked = b"\xEF\xBB\xBF".to_vec();
        marked.extend_from_slice(doc);
        assert_eq!(
            parse(&marked).map_err(|e| e.message),
            parse(doc).map_err(|e| e.message)
        );
    }

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
