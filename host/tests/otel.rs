//! End-to-end test of `worldline otel`: runs exported over OTLP/HTTP to a
//! real receiver on loopback (`tests/otel/receiver.py`, which decodes with
//! the `opentelemetry-proto` package from PyPI; `tests/run` installs it),
//! checked against the GenAI semantic conventions and the bundles.

use crate::common;

use common::{guest, temp_dir, workspace_root, worldline, worlds_dir, write_case};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The receiver, stopped when dropped.
pub(crate) struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    pub(crate) fn start(dir: &Path) -> Receiver {
        Receiver::start_with(dir, None)
    }

    /// [`Receiver::start`] refusing a body larger than `max_body` bytes
    /// (413), as a collector's `max_request_body_size` does.
    pub(crate) fn start_with(dir: &Path, max_body: Option<usize>) -> Receiver {
        let probe = Command::new("python3")
            .args([
                "-c",
                "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            ])
            .output()
            .expect("python3 runs");
        assert!(
            probe.status.success(),
            "the OTLP receiver needs the `opentelemetry-proto` Python package: \
             `python3 -m pip install opentelemetry-proto` (tests/run installs it)\n{}",
            String::from_utf8_lossy(&probe.stderr)
        );
        let port_file = dir.join("port");
        let out = dir.join("received.jsonl");
        let child = Command::new("python3")
            .arg(workspace_root().join("tests/otel/receiver.py"))
            .arg(&port_file)
            .arg(&out)
            .args(max_body.map(|n| n.to_string()))
            .spawn()
            .expect("start the receiver");
        let started = Instant::now();
        let mut r = Receiver {
            child,
            port: 0,
            out,
        };
        while r.port == 0 {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                r.port = text.trim().parse().unwrap();
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the receiver did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        r
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests received so far, decoded.
    pub(crate) fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The size of each request's body received so far.
    pub(crate) fn body_sizes(&self) -> Vec<usize> {
        let mut path = self.out.clone().into_os_string();
        path.push(".bytes");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub(crate) fn attr(span: &Value, key: &str) -> Option<Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| {
            let v = &a["value"];
            v.get("stringValue")
                .or(v.get("intValue"))
                .or(v.get("arrayValue"))
                .cloned()
                .unwrap_or(Value::Null)
        })
}

pub(crate) fn spans(doc: &Value) -> Vec<Value> {
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap()
        .clone()
}

fn bundle_events(path: &str) -> Vec<Value> {
    common::read_bundle(Path::new(path)).events
}

/// A demo case whose first get_ticket answer is an injected timeout.
/// Its seed is past 2^63 − 1, a bare integer as `run` takes it: the
/// export still reads the case's clock (it read the whole file as a TOML
/// table, failed, and started the run at its creation instead).
const INJECTED: &str = r#"world = "demo@v1"
seed = 18446744073709551615
clock = 2026-03-01T12:00:00Z
task = { calls = [{ tool = "get_ticket", args = { id = "T-1" } }, { tool = "get_ticket", args = { id = "T-2" } }] }
[[inject]]
tool = "get_ticket"
when = { id = "T-1" }
error = "timeout"
"#;

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn runs_export_as_genai_traces_to_an_otlp_receiver_idempotently() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let receiver = Receiver::start(dir.path());

    let model_case = workspace_root().join("cases/model/model-timeout.toml");
    let model_run = worldline(
        &store,
        [
            "run",
            s(&model_case),
            "--agent",
            s(&guest("model-agent")),
            "--worlds",
            s(&workspace_root().join("worlds")),
            "--json",
        ],
    );
    model_run.expect_code(0);
    let injected = write_case(dir.path(), "injected", INJECTED);
    let tool_run = worldline(
        &store,
        [
            "run",
            s(&injected),
            "--agent",
            s(&guest("caller-agent")),
            "--worlds",
            s(&worlds_dir()),
            "--json",
        ],
    );
    let (a, b) = (model_run.json().clone(), tool_run.json().clone());
    let (a_id, b_id) = (a["run_id"].as_str().unwrap(), b["run_id"].as_str().unwrap());

    let out = worldline(
        &store,
        [
            "otel",
            a_id,
            b_id,
            "--endpoint",
            receiver.endpoint().as_str(),
            "--json",
        ],
    );
    out.expect_code(0);
    assert_eq!(out.json()["http_status"], 200, "{out}");
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    let all = spans(&got[0]);
    assert_eq!(out.json()["spans"], all.len());
    assert_eq!(
        got[0]["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"],
        "worldline"
    );

    for (run, id) in [(&a, a_id), (&b, b_id)] {
        let events = bundle_events(run["bundle"].as_str().unwrap());
        let root = all
            .iter()
            .find(|s| {
                attr(s, "worldline.run_id") == Some(id.into()) && s.get("parentSpanId").is_none()
            })
            .unwrap_or_else(|| panic!("no root span for {id}"));
        let header = common::read_bundle(Path::new(run["bundle"].as_str().unwrap())).header;
        assert_eq!(
            root["name"],
            format!("invoke_agent {}", header["case"].as_str().unwrap()),
            "{root}"
        );
        assert_eq!(
            attr(root, "gen_ai.operation.name"),
            Some("invoke_agent".into())
        );
        assert_eq!(
            attr(root, "worldline.chain_hash"),
            Some(run["chain_hash"].clone())
        );
        let children: Vec<&Value> = all
            .iter()
            .filter(|s| s["parentSpanId"] == root["spanId"])
            .collect();
        // One child span per tool or model call, all in the root's trace.
        let calls = events
            .iter()
            .filter(|e| {
                e["call"] == "worldline:agent/tools.call"
                    || e["call"] == "worldline:agent/model.complete"
            })
            .count();
        assert!(calls > 0, "{id} made no tool or model call");
        assert_eq!(children.len(), calls, "child spans of {id}");
        for c in &children {
            assert_eq!(c["traceId"], root["traceId"], "{c}");
        }
        for (call, op) in [
            ("worldline:agent/tools.call", "execute_tool"),
            ("worldline:agent/model.complete", "chat"),
        ] {
            let recorded: Vec<&Value> = events.iter().filter(|e| e["call"] == call).collect();
            let exported: Vec<&&Value> = children
                .iter()
                .filter(|c| attr(c, "gen_ai.operation.name") == Some(op.into()))
                .collect();
            assert_eq!(exported.len(), recorded.len(), "{op} spans of {id}");
            for (e, span) in recorded.iter().zip(&exported) {
                assert_eq!(
                    attr(span, "worldline.seq"),
                    Some(e["seq"].to_string().into())
                );
                assert_eq!(attr(span, "worldline.event_hash"), Some(e["hash"].clone()));
                if op == "execute_tool" {
                    assert_eq!(
                        attr(span, "gen_ai.tool.name"),
                        Some(e["request"]["name"].clone())
                    );
                    assert_eq!(
                        attr(span, "gen_ai.tool.call.arguments"),
                        None,
                        "content is opt-in"
                    );
                }
            }
        }
    }

    // The model run: scripted chats with token usage, the first one a timeout.
    let chats: Vec<&Value> = all
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name") == Some("chat".into()))
        .collect();
    assert!(chats.len() >= 3, "{chats:?}");
    assert_eq!(
        attr(chats[0], "gen_ai.provider.name"),
        Some("scripted".into())
    );
    // A scripted model asked for by no name has no request model (it was
    // an empty attribute).
    assert_eq!(attr(chats[0], "gen_ai.request.model"), None, "{}", chats[0]);
    assert_eq!(chats[0]["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(attr(chats[0], "error.type"), Some("timeout".into()));
    assert!(
        attr(chats[1], "gen_ai.usage.input_tokens").is_some(),
        "{}",
        chats[1]
    );
    // A list of reasons, as the GenAI conventions type it (it was a string).
    assert!(
        attr(chats[1], "gen_ai.response.finish_reasons")
            .is_some_and(|r| r["values"][0]["stringValue"].is_string()),
        "{}",
        chats[1]
    );
    // Virtual time: the run starts at the case clock (2026-03-01T12:05:00Z).
    let root_a = all
        .iter()
        .find(|s| attr(s, "worldline.run_id") == Some(a_id.into()))
        .unwrap();
    assert_eq!(root_a["startTimeUnixNano"], "1772366700000000000");
    // The tool run's case (a seed past TOML's integers): 2026-03-01T12:00:00Z.
    let root_b = all
        .iter()
        .find(|s| {
            attr(s, "worldline.run_id") == Some(b_id.into()) && s.get("parentSpanId").is_none()
        })
        .unwrap();
    assert_eq!(root_b["startTimeUnixNano"], "1772366400000000000");

    // The tool run: the injected timeout is a span event.
    let faulted = all
        .iter()
        .find(|s| {
            attr(s, "gen_ai.tool.name") == Some("get_ticket".into()) && s.get("events").is_some()
        })
        .expect("a span with the injected fault");
    assert_eq!(faulted["events"][0]["name"], "worldline.fault.inject");
    assert_eq!(attr(faulted, "error.type"), Some("timeout".into()));

    // A tool span of the model run carries the id the model gave the call
    // (its chat span's output names it), in the order the model asked;
    // one no model asked for (the caller's), worldline's own `call-N`.
    let asked: Vec<String> = bundle_events(a["bundle"].as_str().unwrap())
        .iter()
        .filter(|e| e["call"] == "worldline:agent/model.complete")
        .flat_map(|e| {
            (e["response"]["ok"]["choices"][0]["message"]["tool_calls"]
                .as_array()
                .cloned())
            .unwrap_or_default()
        })
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let ids = |run: &str| -> Vec<String> {
        (all.iter())
            .filter(|s| {
                attr(s, "worldline.run_id") == Some(run.into())
                    && attr(s, "gen_ai.operation.name") == Some("execute_tool".into())
            })
            .map(|s| {
                attr(s, "gen_ai.tool.call.id")
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert!(!asked.is_empty());
    assert_eq!(ids(a_id), asked, "the model run's tool spans");
    assert!(
        ids(b_id).iter().all(|i| i.starts_with("call-")),
        "{:?}",
        ids(b_id)
    );

    // Exporting again sends the same trace: ids come from the chain hash.
    worldline(
        &store,
        [
            "otel",
            a_id,
            b_id,
            "--endpoint",
            receiver.endpoint().as_str(),
        ],
    )
    .expect_code(0);
    let got = receiver.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], got[1], "idempotent");

    // Content is opt-in and redacted like any view.
    std::fs::write(store.join("redact.toml"), "paths = [\"request.args.id\"]\n").unwrap();
    worldline(
        &store,
        [
            "otel",
            b_id,
            "--content",
            "--endpoint",
            receiver.endpoint().as_str(),
        ],
    )
    .expect_code(0);
    let got = receiver.received();
    let tools: Vec<Value> = spans(&got[2])
        .into_iter()
        .filter(|s| attr(s, "gen_ai.tool.name").is_some())
        .collect();
    let args = attr(&tools[0], "gen_ai.tool.call.arguments").unwrap();
    assert!(
        args.as_str().unwrap().starts_with("{\"id\":\"<redacted:"),
        "{args}"
    );
    assert!(attr(&tools[1], "gen_ai.tool.call.result").is_some());

    // A run named twice (by its id and a prefix) is one trace.
    let twice = worldline(
        &store,
        [
            "otel",
            b_id,
            &b_id[..b_id.len() - 2],
            "--endpoint",
            receiver.endpoint().as_str(),
            "--json",
        ],
    );
    twice.expect_code(0);
    let once = worldline(
        &store,
        [
            "otel",
            b_id,
            "--endpoint",
            receiver.endpoint().as_str(),
            "--json",
        ],
    );
    assert_eq!(twice.json()["spans"], once.json()["spans"], "{twice}");

    // To a file, and to an endpoint nobody listens on.
    let file = dir.path().join("trace.pb");
    worldline(&store, ["otel", b_id, "-o", s(&file)]).expect_code(0);
    assert!(std::fs::metadata(&file).unwrap().len() > 100);
    // `-o -`: the same bytes on stdout, what was sent said on stderr (it
    // wrote a file named `-` in the working folder).
    let piped = common::worldline_spawn(&store, ["otel", b_id, "-o", "-"])
        .wait_with_output()
        .unwrap();
    assert!(piped.status.success(), "{piped:?}");
    assert_eq!(piped.stdout, std::fs::read(&file).unwrap());
    assert!(
        String::from_utf8_lossy(&piped.stderr).contains("to stdout"),
        "{piped:?}"
    );
    assert!(!std::path::Path::new("-").exists());
    let down = worldline(&store, ["otel", b_id, "--endpoint", "http://127.0.0.1:9"]);
    down.expect_code(2);
    assert!(down.stderr.contains("cannot send spans"), "{down}");
}

/// Two runs of the same events are two traces (they shared one, and a
/// backend merged a passing run into a failed one), and a run exported
/// again is the same trace.
#[test]
fn runs_of_the_same_events_are_traces_of_their_own() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "injected", INJECTED);
    let run = || {
        let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds_dir());
        (
            out.json()["run_id"].as_str().unwrap().to_string(),
            out.json()["chain_hash"].clone(),
        )
    };
    let ((a, a_chain), (b, b_chain)) = (run(), run());
    assert_eq!(a_chain, b_chain, "the same events");
    let traces = |ids: &[&str]| {
        let file = dir.path().join("spans.pb");
        let mut args = vec!["otel"];
        args.extend_from_slice(ids);
        args.extend(["-o", s(&file), "--json"]);
        let out = worldline(&store, args);
        out.expect_code(0);
        std::fs::remove_file(&file).unwrap();
        out.json()["trace_ids"].clone()
    };
    let both = traces(&[&a, &b]);
    assert_ne!(both[0], both[1], "{both}");
    assert_eq!(traces(&[&a])[0], both[0]);
}

/// A collector's refusal is said on one line, its body's line breaks and
/// tabs made spaces (a pretty-printed JSON body ran over five lines).
#[test]
fn a_collector_s_refusal_is_one_line() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "injected", INJECTED);
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds_dir());
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let collector = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
        let body = "{\n  \"code\": 3,\n\t\"message\": \"bad span\"\n}";
        let mut conn = conn;
        write!(
            conn,
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
    });
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = worldline(
        &store,
        ["otel", id.as_str(), "--endpoint", endpoint.as_str()],
    );
    out.expect_code(2);
    assert_eq!(out.stderr.trim_end().lines().count(), 1, "{out}");
    assert!(
        out.stderr
            .contains(r#"the collector answered HTTP 400: { "code": 3, "message": "bad span" }"#),
        "{out}"
    );
    collector.join().unwrap();
}

/// A collector on loopback that answers one request with HTTP 200, this
/// content type and body; its endpoint and its thread.
fn answering_once(
    content_type: &'static str,
    body: Vec<u8>,
) -> (String, std::thread::JoinHandle<()>) {
    answering_once_with("200 OK", String::new(), content_type, body)
}

/// [`answering_once`] with this status line and these header lines
/// (each ending `\r\n`).
fn answering_once_with(
    status: &'static str,
    headers: String,
    content_type: &'static str,
    body: Vec<u8>,
) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let collector = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
        let mut conn = conn;
        write!(
            conn,
            "HTTP/1.1 {status}\r\n{headers}content-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        conn.write_all(&body).unwrap();
    });
    (format!("http://127.0.0.1:{port}"), collector)
}

/// A collector that answers with a redirect is an error naming where it
/// points (exit 2, one line, in `--json`'s error too), and nothing is
/// sent there: the redirect was followed, the spans went to its target
/// and the summary named the endpoint given.
#[test]
fn a_collector_s_redirect_is_not_followed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "injected", INJECTED);
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds_dir());
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = format!(
        "http://127.0.0.1:{}/v1/traces",
        elsewhere.local_addr().unwrap().port()
    );
    for json in [false, true] {
        let (endpoint, collector) = answering_once_with(
            "307 Temporary Redirect",
            format!("location: {target}\r\n"),
            "text/plain",
            Vec::new(),
        );
        let mut args = vec!["otel", id.as_str(), "--endpoint", endpoint.as_str()];
        if json {
            args.push("--json");
        }
        let out = worldline(&store, args);
        out.expect_code(2);
        let said = format!(
            "{endpoint}/v1/traces: the collector answered HTTP 307 and points to {target}; spans are not sent where a redirect leads: pass that URL as --endpoint"
        );
        if json {
            let error = &out.json()["error"];
            assert_eq!(error["file"], format!("{endpoint}/v1/traces"), "{out}");
            assert!(
                error["message"].as_str().unwrap().contains(&target),
                "{out}"
            );
        } else {
            assert_eq!(out.stderr.trim_end().lines().count(), 1, "{out}");
            assert!(out.stderr.contains(&said), "{out}");
        }
        collector.join().unwrap();
    }
    elsewhere.set_nonblocking(true).unwrap();
    assert!(
        elsewhere.accept().is_err(),
        "the redirect's target was sent the spans"
    );
}

/// An OTLP partial success (HTTP 200 whose answer says spans were
/// rejected), protobuf or JSON as its content type says, is a warning
/// with how many and the collector's message, and in `--json`; the exit
/// code stays 0 (it was taken for every span accepted, unsaid).
#[test]
fn a_collector_s_partial_success_is_a_warning_and_in_the_json() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "injected", INJECTED);
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds_dir());
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    // ExportTraceServiceResponse { partial_success { rejected_spans: 3,
    // error_message } } as protobuf.
    let msg = b"attribute too long";
    let mut inner = vec![0x08, 0x03, 0x12, msg.len() as u8];
    inner.extend_from_slice(msg);
    let mut pb = vec![0x0a, inner.len() as u8];
    pb.extend_from_slice(&inner);
    let json =
        br#"{"partialSuccess":{"rejectedSpans":"3","errorMessage":"attribute too long"}}"#.to_vec();
    for (content_type, body) in [("application/x-protobuf", pb), ("application/json", json)] {
        let (endpoint, collector) = answering_once(content_type, body.clone());
        let out = worldline(
            &store,
            [
                "otel",
                id.as_str(),
                "--endpoint",
                endpoint.as_str(),
                "--json",
            ],
        );
        out.expect_code(0);
        let spans = out.json()["spans"].as_u64().unwrap();
        assert!(
            out.stderr.contains(&format!(
                "warning: {endpoint}/v1/traces: the collector rejected 3 of the {spans} spans (an OTLP partial success): attribute too long"
            )),
            "{content_type}: {out}"
        );
        assert_eq!(out.json()["rejected_spans"], 3, "{out}");
        assert_eq!(
            out.json()["partial_success_message"],
            "attribute too long",
            "{out}"
        );
        collector.join().unwrap();
        // In words too.
        let (endpoint, collector) = answering_once(content_type, body);
        let out = worldline(
            &store,
            ["otel", id.as_str(), "--endpoint", endpoint.as_str()],
        );
        out.expect_code(0);
        assert!(out.stdout.contains(", which rejected 3 of them"), "{out}");
        collector.join().unwrap();
    }
    // A collector that took every span: nothing said, 0 in the JSON.
    let (endpoint, collector) = answering_once("application/x-protobuf", Vec::new());
    let out = worldline(
        &store,
        [
            "otel",
            id.as_str(),
            "--endpoint",
            endpoint.as_str(),
            "--json",
        ],
    );
    out.expect_code(0);
    assert_eq!(out.stderr, "", "{out}");
    assert_eq!(out.json()["rejected_spans"], 0, "{out}");
    assert_eq!(out.json()["partial_success_message"], Value::Null, "{out}");
    collector.join().unwrap();
}

/// `otel --content` then `case from-trace` gives the run's seed (it gave
/// `seed = 0`, though the root span carries `worldline.seed`), and the
/// chat span of a call that failed carries no `gen_ai.output.messages`
/// (it carried the text `null`).
#[test]
fn a_run_exported_and_made_a_case_keeps_its_seed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let model_case = workspace_root().join("cases/model/model-timeout.toml");
    let run = worldline(
        &store,
        [
            "run",
            s(&model_case),
            "--agent",
            s(&guest("model-agent")),
            "--worlds",
            s(&workspace_root().join("worlds")),
            "--json",
        ],
    );
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap();
    let trace = dir.path().join("trace.pb");
    worldline(&store, ["otel", id, "--content", "-o", s(&trace)]).expect_code(0);
    let bytes = std::fs::read(&trace).unwrap();
    let key = b"gen_ai.output.messages";
    let with_output = bytes.windows(key.len()).filter(|w| w == key).count();
    let chats = b"gen_ai.input.messages";
    let calls = bytes.windows(chats.len()).filter(|w| w == chats).count();
    assert!(calls >= 3, "{calls} model calls");
    assert_eq!(
        with_output,
        calls - 1,
        "the timed-out call has no output attribute"
    );
    let null = b"gen_ai.output.messages\x12\x06\x0a\x04null";
    assert!(!bytes.windows(null.len()).any(|w| w == null));

    let out = dir.path().join("case");
    let made = worldline(
        &store,
        ["case", "from-trace", s(&trace), "-o", s(&out), "--json"],
    );
    made.expect_code(0);
    let text = std::fs::read_to_string(made.json()["case"].as_str().unwrap()).unwrap();
    let case: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(case["seed"].as_integer(), Some(503), "{text}");
    assert_eq!(
        case["model"]["responses"][0]["error"].as_str(),
        Some("timeout"),
        "{text}"
    );
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.contains("- The seed: 503, the `worldline.seed` of the trace's root span."),
        "{readme}"
    );
}

/// A case whose user a model plays (scripted, so no network), talking with
/// the `looper-agent`, which reads the documents the user asks for.
const TALKING: &str = r#"world = "library@v1"
seed = 11
clock = 2026-03-01T12:00:00Z
task = { prompt = "Read what the user asks for.", talk = true }

[user]
played_by = "model"
persona = "You want documents read, one at a time."
max_turns = 5

[user.model]
provider = "scripted"
responses = ["Sorry?"]

[[user.model.rules]]
contains = "D-0 read"
reply = "Now read D-1."

[[user.model.rules]]
contains = "D-1 read"
reply = "[SATISFIED] That is all, thanks."

[[model.responses]]
tool_calls = [{ name = "get_doc", arguments = { id = "D-0" } }]

[[model.responses]]
content = "D-0 read. Anything else?"

[[model.responses]]
tool_calls = [{ name = "get_doc", arguments = { id = "D-1" } }]

[[model.responses]]
content = "D-1 read. Anything else?"
"#;

/// What each side said in a run: the agent's message and the user's
/// answer at each `user.say`, and each tool call's request.
fn conversation(bundle: &Path) -> Vec<Value> {
    (common::read_bundle(bundle).events.into_iter())
        .filter_map(|e| match e["call"].as_str()? {
            "worldline:agent/user.say" => Some(serde_json::json!({
                "said": e["request"]["message"],
                "reply": e["response"]["reply"],
                "ended": e["response"]["ended"],
            })),
            "worldline:agent/tools.call" => Some(serde_json::json!({"call": e["request"]})),
            _ => None,
        })
        .collect()
}

/// A run whose user a model plays goes through `otel --content` and
/// `case from-trace` and runs again the same: each of the user's turns is
/// an `invoke_agent user` span, read back as a scripted user's rule. The
/// turns were not exported, so the case had no user and its agent was
/// told "this case has no [user]" at its first message.
#[test]
fn a_model_played_user_s_run_goes_through_a_trace_and_back() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (worlds, _) = common::long::write(dir.path(), 3);
    let case = write_case(dir.path(), "talking", TALKING);
    let agent = guest("looper-agent");
    let run = |case: &Path, worlds: &Path| {
        let out = worldline(
            &store,
            [
                "run",
                s(case),
                "--agent",
                s(&agent),
                "--worlds",
                s(worlds),
                "--json",
            ],
        );
        out.expect_code(0);
        out
    };
    let first = run(&case, &worlds);
    let id = first.json()["run_id"].as_str().unwrap().to_string();
    let output = first.json()["output"].clone();
    let said: Value = serde_json::from_str(output.as_str().unwrap()).unwrap();
    assert_eq!(said["satisfied"], true, "{first}");
    assert_eq!(said["ended"], "That is all, thanks.", "{first}");

    let trace = dir.path().join("trace.pb");
    worldline(&store, ["otel", &id, "--content", "-o", s(&trace)]).expect_code(0);
    let out = dir.path().join("made");
    let made = worldline(
        &store,
        ["case", "from-trace", s(&trace), "-o", s(&out), "--json"],
    );
    made.expect_code(0);
    assert_eq!(made.json()["model_calls"], 4, "{made}");
    assert_eq!(made.json()["user_turns"], 2, "{made}");
    let made_case = PathBuf::from(made.json()["case"].as_str().unwrap());
    let text = std::fs::read_to_string(&made_case).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(
        table["user"]["played_by"].as_str(),
        Some("scripted"),
        "{text}"
    );
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.contains("The simulated user's turns (2)"),
        "{readme}"
    );

    let again = run(&made_case, &out.join("worlds"));
    assert_eq!(again.json()["output"], output, "{again}\n{text}");
    assert_eq!(
        conversation(&again.bundle()),
        conversation(&first.bundle()),
        "{text}"
    );
}

/// A long run's export goes in batches, as the OpenTelemetry SDK's
/// BatchSpanProcessor sends spans: at most 512 spans and 4 MiB a request,
/// so a receiver that refuses a larger body (413) takes every span; to a
/// file the batches go one after another, and `case from-trace` reads
/// every one. It was one request past 64 MiB, which the receiver refused
/// and `case from-trace` refused as too large.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_long_run_is_exported_in_batches_a_receiver_takes_and_read_back_whole() {
    // 270 model calls that each send the whole conversation: past 64 MiB
    // with `--content`, and 540 spans.
    const N: usize = 270;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (worlds, case) = common::long::write(dir.path(), N);
    let (_, _, ran) = common::long::record(&store, &worlds, &case);
    let id = ran["run_id"].as_str().unwrap();
    let receiver = Receiver::start_with(dir.path(), Some(4 << 20));
    let export = |content: bool| {
        let mut args = vec!["otel", id, "--endpoint"];
        let endpoint = receiver.endpoint();
        args.push(&endpoint);
        args.push("--json");
        if content {
            args.push("--content");
        }
        let out = worldline(&store, &args);
        out.expect_code(0);
        out.json().clone()
    };
    let check = |summary: &Value, from: usize| {
        let got = &receiver.received()[from..];
        let sizes = &receiver.body_sizes()[from..];
        assert_eq!(
            summary["requests"].as_u64(),
            Some(got.len() as u64),
            "{summary}"
        );
        let per: Vec<usize> = got.iter().map(|d| spans(d).len()).collect();
        assert!(per.iter().all(|n| *n <= 512), "{per:?}");
        assert!(sizes.iter().all(|b| *b <= 4 << 20), "{sizes:?}");
        let all: Vec<Value> = got.iter().flat_map(spans).collect();
        assert_eq!(
            all.len(),
            2 * N,
            "a root, {N} chat and {} tool spans",
            N - 1
        );
        assert_eq!(summary["spans"].as_u64(), Some(all.len() as u64));
        assert!(all.iter().all(|s| s["traceId"] == all[0]["traceId"]));
        let mut ids: Vec<&str> = all.iter().map(|s| s["spanId"].as_str().unwrap()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len(), "each span sent once");
        (got.len(), sizes.iter().sum::<usize>())
    };
    // Without content: 540 small spans, two requests by their count.
    let (requests, _) = check(&export(false), 0);
    assert_eq!(requests, 2);
    // With content: past 64 MiB in all, in requests of 4 MiB at most.
    let (_, bytes) = check(&export(true), requests);
    assert!(bytes > 64 << 20, "{bytes} bytes");

    let trace = dir.path().join("long.pb");
    worldline(&store, ["otel", id, "--content", "-o", s(&trace)]).expect_code(0);
    assert!(std::fs::metadata(&trace).unwrap().len() > 64 << 20);
    let out = dir.path().join("made");
    let made = worldline(
        &store,
        ["case", "from-trace", s(&trace), "-o", s(&out), "--json"],
    );
    made.expect_code(0);
    assert_eq!(made.json()["model_calls"], N, "{made}");
    assert_eq!(made.json()["tool_calls"], N - 1, "{made}");
}

/// A collector that refuses a body before reading it (413, connection
/// closed) while `otel` is still sending is an error naming the URL,
/// exit 2: the broken pipe killed worldline by SIGPIPE (exit 141, not a
/// word).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_collector_that_closes_mid_body_is_an_error_not_a_signal() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    // Two model calls, the second sending a 16 MB document back: a chat
    // span past the batch bound, sent alone in a body the receiver
    // refuses before reading it.
    let (worlds, case) = common::long::write(dir.path(), 2);
    let row = serde_json::json!({"id": "D-0", "text": "w ".repeat(8 << 20)});
    std::fs::write(
        worlds.join("library/v1/data/docs.jsonl"),
        format!("{row}\n"),
    )
    .unwrap();
    let (_, _, ran) = common::long::record(&store, &worlds, &case);
    let id = ran["run_id"].as_str().unwrap();
    let receiver = Receiver::start_with(dir.path(), Some(1000));
    let endpoint = receiver.endpoint();
    let out = worldline(&store, ["otel", id, "--content", "--endpoint", &endpoint]);
    out.expect_code(2);
    assert!(out.stderr.contains(&endpoint), "{out}");
}

/// A run a step or error limit stopped, in a case without `[expect]`,
/// failed as `runs`, `run` and `test` say (exit 1, FAIL): its root span's
/// status is ERROR with the limit as its description (it was OK, the
/// limit its description), as a fault's is.
#[test]
fn a_run_stopped_by_a_limit_is_an_error_span() {
    use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
    use prost::Message as _;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let calls = r#"{tool="get_ticket", args={id="NOPE"}}, {tool="get_ticket", args={id="NOPE2"}}, {tool="get_ticket", args={id="T-1"}}, {tool="get_ticket", args={id="T-2"}}"#;
    for (name, limit, status) in [
        ("steps", "max_steps = 2", "step_limit"),
        ("errors", "max_errors = 1", "error_limit"),
    ] {
        let case = write_case(
            dir.path(),
            name,
            &format!(
                "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{calls}] }}\n[limits]\n{limit}\n"
            ),
        );
        let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds_dir());
        out.expect_code(1);
        assert_eq!(out.json()["status"], status, "{out}");
        let run = out.json()["run_id"].as_str().unwrap().to_string();
        let file = dir.path().join(format!("{name}.pb"));
        worldline(&store, ["otel", run.as_str(), "-o", s(&file)]).expect_code(0);
        let bytes = std::fs::read(&file).unwrap();
        let req =
            opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::decode(
                bytes.as_slice(),
            )
            .unwrap();
        let root = (req.resource_spans.iter())
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
            .find(|s| s.parent_span_id.is_empty())
            .expect("the run's span")
            .clone();
        let got = root.status.expect("a status");
        assert_eq!(got.code, StatusCode::Error as i32, "{name}: {got:?}");
        assert_eq!(got.message, status, "{name}: {got:?}");
    }
}
