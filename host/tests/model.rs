//! End-to-end tests of model calls: the real `worldline` binary and real
//! guests against a small OpenAI-compatible server the tests start on
//! loopback (ok answers, 429 with retry, 500, malformed JSON, a slow
//! trickle of bytes, a server that never answers), the recorded provider,
//! and the scripted provider's weighted alternatives. Nothing leaves the
//! machine.

use crate::common;

use common::{
    CliOutput, files_with_suffix, guest, read_bundle, temp_dir, workspace_root, worldline,
    worldline_env, worlds_dir, write_case,
};
use serde_json::{Value, json};
use std::collections::{BTreeSet, VecDeque};
use std::ffi::OsStr;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const MODEL_CALL: &str = "worldline:agent/model.complete";
const KEY_VAR: &str = "WORLDLINE_TEST_MODEL_KEY";
const KEY: &str = "sk-test-9f8e7d6c5b4a-do-not-record";

// --- a small OpenAI-compatible server ---------------------------------------

/// How the server answers one request.
#[derive(Clone)]
enum Reply {
    /// Status, body and extra headers, at once.
    Http(u16, String, Vec<(&'static str, String)>),
    /// A 200 whose body arrives one byte per `every`.
    Trickle(String, Duration),
    /// Read the request, then say nothing until the client gives up.
    Silent,
    /// A 401 whose body repeats the Authorization header it got.
    EchoAuth,
    /// A completion with this content after this long.
    Slow(String, Duration),
}

fn completion(content: &str) -> Reply {
    let body = json!({
        "id": "chatcmpl-local-1",
        "object": "chat.completion",
        "created": 1_772_366_400,
        "model": "local-llm-7b-q4",
        "system_fingerprint": "fp_local_42",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    });
    Reply::Http(200, body.to_string(), Vec::new())
}

/// What the server received.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// `Slow` answers pending now, and the most there ever were at once.
    in_flight: Arc<(AtomicUsize, AtomicUsize)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Answers `replies` in order, then `completion("default")`.
    fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let in_flight = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
        let (r, s, st, fl) = (replies, seen.clone(), stop.clone(), in_flight.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let reply = r
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or_else(|| completion("default"));
                let (s, st, fl) = (s.clone(), st.clone(), fl.clone());
                std::thread::spawn(move || serve(conn, reply, &s, &st, &fl));
            }
        });
        Server {
            addr,
            seen,
            in_flight,
            stop,
            thread: Some(thread),
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The most `Slow` answers that were pending at once.
    fn peak(&self) -> usize {
        self.in_flight.1.load(Ordering::SeqCst)
    }

    /// Close the listening socket: later connections are refused.
    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(
    mut conn: TcpStream,
    reply: Reply,
    seen: &Mutex<Vec<Seen>>,
    stop: &AtomicBool,
    in_flight: &(AtomicUsize, AtomicUsize),
) {
    let Some((head, body)) = common::native::read_request(&mut conn) else {
        return;
    };
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let authorization = header("authorization");
    seen.lock().unwrap().push(Seen {
        path: head.split_whitespace().nth(1).unwrap_or("").to_string(),
        authorization: authorization.clone(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let respond = |conn: &mut TcpStream, status: u16, body: &str, extra: &[(&str, String)]| {
        let mut text = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
            body.len()
        );
        for (k, v) in extra {
            text.push_str(&format!("{k}: {v}\r\n"));
        }
        text.push_str("\r\n");
        text.push_str(body);
        let _ = conn.write_all(text.as_bytes());
    };
    match reply {
        Reply::Http(status, body, extra) => respond(&mut conn, status, &body, &extra),
        Reply::Slow(content, after) => {
            // Counted while the answer is pending (not while it is
            // written), so a client that sends its next request as soon as
            // it has an answer is not counted twice.
            let now = in_flight.0.fetch_add(1, Ordering::SeqCst) + 1;
            in_flight.1.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(after);
            in_flight.0.fetch_sub(1, Ordering::SeqCst);
            if let Reply::Http(status, body, extra) = completion(&content) {
                respond(&mut conn, status, &body, &extra);
            }
        }
        Reply::EchoAuth => {
            let body = json!({"error": {"message": format!("bad key: {}", authorization.unwrap_or_default())}});
            respond(&mut conn, 401, &body.to_string(), &[]);
        }
        Reply::Trickle(body, every) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            for b in body.bytes() {
                if stop.load(Ordering::SeqCst) || conn.write_all(&[b]).is_err() {
                    return;
                }
                std::thread::sleep(every);
            }
        }
        Reply::Silent => {
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

// --- helpers ------------------------------------------------------------------

fn asker() -> PathBuf {
    guest("asker-agent")
}

fn model_agent() -> PathBuf {
    guest("model-agent")
}

/// A chat request the asker sends.
fn ask(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}], "temperature": 0.2, "seed": 7})
}

/// A case on the demo world whose asker sends `requests`, with `model`
/// as the `[model]` table body and `extra` appended.
fn asker_case(dir: &Path, name: &str, requests: &[Value], model: &str, extra: &str) -> PathBuf {
    let task = toml_value(&json!({"requests": requests}));
    let text = format!(
        "world = \"demo@v1\"\nclock = 2026-03-01T12:00:00Z\nseed = 11\ntask = {task}\n{extra}\n[model]\n{model}\n"
    );
    write_case(dir, name, &text)
}

/// JSON as a TOML inline value.
fn toml_value(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let fields: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{} = {}", Value::String(k.clone()), toml_value(v)))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

fn openai_model(server: &Server, more: &str) -> String {
    format!(
        "provider = \"openai\"\nbase_url = \"{}\"\nmodel = \"local-llm\"\napi_key_env = \"{KEY_VAR}\"\n{more}",
        server.base_url()
    )
}

/// `worldline run CASE --agent A --json [args]` with the API key set.
fn run(store: &Path, case: &Path, agent: &Path, args: &[&str]) -> CliOutput {
    run_on(&worlds_dir(), store, case, agent, args)
}

/// [`run`] on the worlds in `worlds`.
fn run_on(worlds: &Path, store: &Path, case: &Path, agent: &Path, args: &[&str]) -> CliOutput {
    let mut all: Vec<&OsStr> = vec![
        OsStr::new("run"),
        case.as_os_str(),
        OsStr::new("--agent"),
        agent.as_os_str(),
        OsStr::new("--worlds"),
        worlds.as_os_str(),
        OsStr::new("--json"),
        OsStr::new("--store"),
        store.as_os_str(),
    ];
    all.extend(args.iter().map(OsStr::new));
    // The store flag is given; this is `worldline_raw` with the key set.
    worldline_env(all, &[(KEY_VAR, KEY)])
}

fn output(out: &CliOutput) -> Value {
    serde_json::from_str(out.json()["output"].as_str().unwrap_or("null"))
        .unwrap_or_else(|e| panic!("output is not JSON ({e}):\n{out}"))
}

fn model_events(bundle: &Path) -> Vec<Value> {
    read_bundle(bundle)
        .events
        .into_iter()
        .filter(|e| e["call"] == MODEL_CALL)
        .collect()
}

/// The key must not appear in the bundle, stdout or stderr.
#[track_caller]
fn assert_no_key(out: &CliOutput) {
    let bundle = std::fs::read_to_string(out.bundle()).unwrap();
    assert!(!bundle.contains(KEY), "the API key is in the bundle");
    assert!(!out.stdout.contains(KEY), "the API key is on stdout");
    assert!(!out.stderr.contains(KEY), "the API key is on stderr");
}

// --- tests --------------------------------------------------------------------

#[test]
fn an_openai_run_is_recorded_in_full_and_replays_with_the_server_stopped() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let mut server = Server::start(vec![completion("first"), completion("second")]);
    let case = asker_case(
        dir.path(),
        "openai",
        &[ask("one"), ask("two")],
        &openai_model(&server, "latency_ms = 250"),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    assert_eq!(
        output(&out),
        json!([
            {"content": "first", "model": "local-llm-7b-q4", "finish_reason": "stop", "tool_calls": []},
            {"content": "second", "model": "local-llm-7b-q4", "finish_reason": "stop", "tool_calls": []},
        ])
    );
    // The server got the rendered request with the key in the header only.
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(seen[0].body["model"], "local-llm");
    assert_eq!(seen[0].body["messages"][0]["content"], "one");

    let events = model_events(&out.bundle());
    assert_eq!(events.len(), 2);
    let e = &events[0];
    assert_eq!(e["request"]["provider"], "openai");
    assert_eq!(e["request"]["request"], ask("one"));
    let m = &e["response"]["model_call"];
    assert_eq!(m["provider"], "openai");
    // From rules 11 the body sent is recorded as what it changed in the
    // request (decision 0430).
    assert_eq!(
        m["rendered_changes"],
        json!({"set": {"model": "local-llm"}})
    );
    assert_eq!(m["model"], "local-llm-7b-q4");
    assert_eq!(m["version"], "fp_local_42");
    assert_eq!(
        m["params"],
        json!({"model": "local-llm", "temperature": 0.2, "seed": 7})
    );
    assert_eq!(m["usage"]["total_tokens"], 15);
    assert_eq!(m["finish_reason"], "stop");
    assert_eq!(m["virtual_latency_ms"], 250);
    assert!(m["real_latency_ms"].is_u64());
    assert_eq!(m["attempts"].as_array().unwrap().len(), 1);
    let raw: Value = serde_json::from_str(m["raw"].as_str().unwrap()).unwrap();
    assert_eq!(raw["choices"][0]["message"]["content"], "first");
    assert_eq!(e["response"]["ok"], raw);
    // Virtual latency, not real time, moves the guest's clock.
    let gap = events[1]["vtime_ns"].as_u64().unwrap() - events[0]["vtime_ns"].as_u64().unwrap();
    assert!(gap >= 250_000_000, "{gap}");
    assert_no_key(&out);

    server.stop();
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let replay = worldline(&store, ["replay", &run_id, "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    assert_eq!(server.seen().len(), 2, "replay must not call the endpoint");
}

/// A chat span's `gen_ai.request.model` is the model the provider was
/// asked for: the case's `[model] model`, which the agent's request (here
/// naming none) did not say. It was empty.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn an_openai_run_s_chat_span_names_the_model_the_provider_was_asked_for() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let server = Server::start(vec![completion("first")]);
    let case = asker_case(
        dir.path(),
        "named",
        &[ask("one")],
        &openai_model(&server, ""),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let receiver = crate::otel::Receiver::start(dir.path());
    let endpoint = receiver.endpoint();
    let export = worldline(&store, ["otel", &run_id, "--endpoint", &endpoint]);
    export.expect_code(0);
    let got = receiver.received();
    let spans = crate::otel::spans(&got[0]);
    let chat = (spans.iter())
        .find(|s| crate::otel::attr(s, "gen_ai.operation.name") == Some("chat".into()))
        .expect("a chat span");
    let attr = |k| crate::otel::attr(chat, k);
    assert_eq!(
        attr("gen_ai.request.model"),
        Some("local-llm".into()),
        "{chat}"
    );
    assert_eq!(
        attr("gen_ai.response.model"),
        Some("local-llm-7b-q4".into())
    );
}

#[test]
fn a_429_is_retried_and_every_attempt_is_recorded() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let limited = Reply::Http(
        429,
        r#"{"error":{"message":"slow down"}}"#.into(),
        vec![("retry-after", "0".into())],
    );
    let server = Server::start(vec![limited, completion("after retry")]);
    let case = asker_case(
        dir.path(),
        "retry",
        &[ask("hi")],
        &openai_model(&server, "retries = 2"),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    assert_eq!(output(&out)[0]["content"], "after retry");
    let m = &model_events(&out.bundle())[0]["response"]["model_call"];
    let attempts = m["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{m}");
    assert_eq!(attempts[0]["status"], 429);
    assert_eq!(attempts[0]["error"]["kind"], "unavailable");
    assert_eq!(attempts[1]["status"], 200);
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn a_retry_after_wait_is_real_time_recorded_as_metadata_and_the_run_replays() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let limited = Reply::Http(
        429,
        r#"{"error":{"message":"slow down"}}"#.into(),
        vec![("retry-after", "1".into())],
    );
    let mut slow = Server::start(vec![limited, completion("after retry")]);
    let case = asker_case(
        dir.path(),
        "wait",
        &[ask("hi"), ask("again")],
        &openai_model(&slow, "retries = 2"),
        "",
    );
    let started = Instant::now();
    let waited = run(&store, &case, &asker(), &[]);
    waited.expect_code(0);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After is honoured"
    );
    let m = &model_events(&waited.bundle())[0]["response"]["model_call"];
    assert_eq!(m["attempts"][0]["status"], 429, "{m}");
    assert_eq!(m["attempts"][0]["backoff_ms"], 1000, "{m}");
    assert!(m["real_latency_ms"].as_u64().unwrap() >= 1000, "{m}");

    // The same conversation without the 429: the guest sees the same
    // answers at the same virtual times; only the metadata differs.
    let fast = Server::start(vec![completion("after retry")]);
    let case = asker_case(
        dir.path(),
        "wait",
        &[ask("hi"), ask("again")],
        &openai_model(&fast, "retries = 2"),
        "",
    );
    let direct = run(&store, &case, &asker(), &[]);
    direct.expect_code(0);
    assert_eq!(output(&waited), output(&direct));
    let vtimes = |out: &common::CliOutput| -> Vec<Value> {
        common::read_bundle(&out.bundle())
            .events
            .iter()
            .map(|e| e["vtime_ns"].clone())
            .collect()
    };
    assert_eq!(
        vtimes(&waited),
        vtimes(&direct),
        "real waits never reach virtual time"
    );

    slow.stop();
    let id = waited.json()["run_id"].as_str().unwrap().to_string();
    let replay = worldline(&store, ["replay", &id, "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

#[test]
fn provider_errors_reach_the_guest_as_error_kinds_and_are_recorded() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let server = Server::start(vec![
        Reply::Http(500, "upstream exploded".into(), Vec::new()),
        Reply::Http(200, "{\"choices\": [".into(), Vec::new()),
        Reply::Trickle(
            json!({"choices": []}).to_string(),
            Duration::from_millis(100),
        ),
        Reply::EchoAuth,
    ]);
    let requests = [ask("500"), ask("malformed"), ask("slow"), ask("401")];
    let model = openai_model(&server, "retries = 0\ntimeout_ms = 400");
    let case = asker_case(dir.path(), "errors", &requests, &model, "");
    let started = Instant::now();
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    assert!(started.elapsed() < Duration::from_secs(20));
    let kinds: Vec<Value> = output(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["error"].clone())
        .collect();
    assert_eq!(
        kinds,
        [
            json!("unavailable"),
            json!("failed"),
            json!("timeout"),
            json!("failed")
        ]
    );
    let events = model_events(&out.bundle());
    for e in &events {
        assert_eq!(e["effect"], "failed", "{e}");
        assert!(e["response"]["model_call"]["attempts"].is_array(), "{e}");
    }
    assert_eq!(
        events[0]["response"]["model_call"]["raw"],
        "upstream exploded"
    );
    let refused = &events[3]["response"];
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("HTTP 401")
    );
    assert!(
        refused["model_call"]["raw"]
            .as_str()
            .unwrap()
            .contains("[redacted]")
    );
    assert_no_key(&out);
}

#[test]
fn a_silent_endpoint_is_bounded_by_the_case_timeout() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let server = Server::start(vec![Reply::Silent, Reply::Silent, Reply::Silent]);
    let model = openai_model(&server, "retries = 5\ntimeout_ms = 60000");
    let case = asker_case(
        dir.path(),
        "silent",
        &[ask("hello?")],
        &model,
        "[limits]\ntimeout_ms = 1500\n",
    );
    let started = Instant::now();
    let out = run(&store, &case, &asker(), &[]);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    let e = &model_events(&out.bundle())[0];
    assert_eq!(e["response"]["error"]["kind"], "timeout", "{e}");
    // The call used the run's whole real-time budget: the run ends
    // `timeout` (not replayable) right after the recorded answer.
    out.expect_code(3);
    assert_eq!(out.json()["run_status"], "timeout", "{out}");
    assert_eq!(out.json()["replayable"], false, "{out}");
    assert!(
        out.json()["error"]
            .as_str()
            .unwrap()
            .contains("a model call used the case's whole time budget"),
        "{out}"
    );
}

/// `repro` of a run whose model answers came from a `recorded` provider,
/// in a store named by a relative path (the default `.worldline` is one):
/// the store's runs answer its repetitions (they were looked for under the
/// store's objects, and `repro` stopped with exit 2).
#[test]
fn repro_of_a_recorded_provider_run_in_a_relative_store_reproduces() {
    let dir = temp_dir();
    let worlds = workspace_root().join("worlds");
    let agent = guest("model-agent");
    let in_dir = |args: &[&std::ffi::OsStr]| {
        let out = common::cli()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let text = std::fs::read_to_string(workspace_root().join("cases/model/rollback.toml")).unwrap();
    std::fs::write(dir.path().join("first.toml"), &text).unwrap();
    let run = |case: &str| {
        let (code, out, err) = in_dir(&[
            "run".as_ref(),
            case.as_ref(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--store".as_ref(),
            "s1".as_ref(),
            "--json".as_ref(),
        ]);
        assert_eq!(code, Some(0), "{out}{err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let first = run("first.toml");
    std::fs::copy(
        dir.path().join(first["bundle"].as_str().unwrap()),
        dir.path().join("rec.run.jsonl"),
    )
    .unwrap();
    let recorded = text.replacen(
        "[model]\n",
        "[model]\nprovider = \"recorded\"\nrecording = \"rec.run.jsonl\"\n",
        1,
    );
    assert_ne!(recorded, text);
    std::fs::write(dir.path().join("rec.toml"), recorded).unwrap();
    let id = run("rec.toml")["run_id"].as_str().unwrap().to_string();
    let (code, out, err) = in_dir(&[
        "repro".as_ref(),
        id.as_ref(),
        "--times".as_ref(),
        "2".as_ref(),
        "--store".as_ref(),
        "s1".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["reproduced"], 2, "{report}");
}

#[test]
fn the_recorded_provider_answers_from_earlier_runs_and_records_misses_once() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let mut server = Server::start(vec![completion("live answer")]);
    let first = asker_case(
        dir.path(),
        "first",
        &[ask("q1")],
        &openai_model(&server, ""),
        "",
    );
    let out1 = run(&store, &first, &asker(), &[]);
    out1.expect_code(0);
    server.stop();

    // The same request from the store's runs: no network needed.
    let replayed = run(
        &store,
        &first,
        &asker(),
        &["--model-set", "provider=recorded"],
    );
    replayed.expect_code(0);
    assert_eq!(output(&replayed)[0]["content"], "live answer");
    let m = &model_events(&replayed.bundle())[0]["response"]["model_call"];
    assert_eq!(m["provider"], "recorded");
    assert_eq!(m["source"]["run"], out1.json()["run_id"]);
    assert_eq!(replayed.json()["run_status"], "completed");
    // The header keeps the override, so the run replays as recorded.
    let header = read_bundle(&replayed.bundle()).header;
    assert_eq!(header["model_overrides"]["provider"], "recorded");
    let id = replayed.json()["run_id"].as_str().unwrap().to_string();
    assert_eq!(
        worldline(&store, ["replay", &id, "--json"]).json()["verdict"],
        "identical"
    );

    // Another request misses: with cassette none that is an error the agent sees.
    let other = asker_case(
        dir.path(),
        "other",
        &[ask("q2")],
        &openai_model(&server, ""),
        "",
    );
    let missed = run(
        &store,
        &other,
        &asker(),
        &["--model-set", "provider=recorded"],
    );
    missed.expect_code(0);
    assert_eq!(output(&missed)[0]["error"], "unavailable");
    let message = output(&missed)[0]["message"].as_str().unwrap().to_string();
    assert!(message.contains("cassette"), "{message}");

    // cassette = once asks the endpoint on a miss; the next run finds it.
    let server = Server::start(vec![completion("recorded once")]);
    let once = asker_case(
        dir.path(),
        "once",
        &[ask("q2")],
        &openai_model(&server, "provider = \"recorded\"\ncassette = \"once\"")
            .replace("provider = \"openai\"\n", ""),
        "",
    );
    let recorded = run(&store, &once, &asker(), &[]);
    recorded.expect_code(0);
    assert_eq!(output(&recorded)[0]["content"], "recorded once");
    let m = &model_events(&recorded.bundle())[0]["response"]["model_call"];
    assert_eq!(m["cassette"], "miss");
    drop(server);
    let hit = run(
        &store,
        &other,
        &asker(),
        &["--model-set", "provider=recorded"],
    );
    assert_eq!(output(&hit)[0]["content"], "recorded once", "{hit}");
}

#[test]
fn weighted_alternatives_follow_the_model_seed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = workspace_root().join("cases/model/rollback-weighted.toml");
    let agent = model_agent();
    let go = |seed: u64| {
        let out = worldline(
            &store,
            [
                OsStr::new("run"),
                case.as_os_str(),
                OsStr::new("--agent"),
                agent.as_os_str(),
                OsStr::new("--model-seed"),
                OsStr::new(&seed.to_string()),
                OsStr::new("--json"),
            ],
        );
        assert!(out.json.is_some(), "{out}");
        out
    };
    let a = go(3);
    let b = go(3);
    assert_eq!(
        std::fs::read(a.bundle()).unwrap(),
        std::fs::read(b.bundle()).unwrap(),
        "the same model seed must give byte-identical bundles"
    );
    let mut trajectories = BTreeSet::new();
    let mut statuses = BTreeSet::new();
    for seed in 1..=8 {
        let out = go(seed);
        trajectories.insert(out.json()["chain_hash"].as_str().unwrap().to_string());
        statuses.insert(out.json()["status"].as_str().unwrap().to_string());
        let header = read_bundle(&out.bundle()).header;
        assert_eq!(header["model_seed"], seed);
        let id = out.json()["run_id"].as_str().unwrap().to_string();
        let replay = worldline(&store, ["replay", &id, "--json"]);
        assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    }
    assert!(trajectories.len() >= 2, "{trajectories:?}");
    assert_eq!(
        statuses,
        BTreeSet::from(["failed".to_string(), "passed".to_string()])
    );
}

#[test]
fn the_model_agent_passes_its_scripted_cases() {
    let dir = temp_dir();
    let cases = workspace_root().join("cases/model");
    let out = worldline(
        dir.path(),
        [
            OsStr::new("test"),
            cases.as_os_str(),
            OsStr::new("--agent"),
            model_agent().as_os_str(),
            OsStr::new("--json"),
        ],
    );
    out.expect_code(0);
    assert_eq!(out.json()["failed"], 0, "{out}");
    assert_eq!(out.json()["passed"], 3, "{out}");
    // The timeout case: the agent saw the `timeout` kind and asked again.
    let timeout_case = out.json()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"].as_str().unwrap().contains("model-timeout"))
        .unwrap()
        .clone();
    let events = read_bundle(Path::new(timeout_case["bundle"].as_str().unwrap())).events;
    let first = events.iter().find(|e| e["call"] == MODEL_CALL).unwrap();
    assert_eq!(first["response"]["error"]["kind"], "timeout");
    assert!(events.iter().any(|e| e["request"]["kind"] == "model-retry"));
    // The timeline shows what the model was asked and what it chose.
    let history = worldline(
        dir.path(),
        ["history", timeout_case["bundle"].as_str().unwrap()],
    );
    history.expect_code(0);
    assert!(
        history
            .stdout
            .lines()
            .any(|l| l.contains("[scripted] user:") && l.contains("-> get_alert(")),
        "{history}"
    );
    assert!(history.stdout.contains("-> timeout: "), "{history}");
}

#[test]
fn bad_model_settings_are_refused_with_where_and_what_to_do() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let both = "[[model.rules]]\ncontains = \"x\"\nreply = \"a\"\nalternatives = [{ weight = 1, reply = \"b\" }]";
    let case = asker_case(dir.path(), "both", &[ask("x")], both, "");
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(2);
    assert!(out.stderr.contains("both.toml:"), "{out}");
    assert!(out.stderr.contains("not both"), "{out}");

    let case = asker_case(dir.path(), "plain", &[ask("x")], "responses = [\"a\"]", "");
    let out = run(&store, &case, &asker(), &["--model-set", "provider=openai"]);
    out.expect_code(2);
    assert!(out.stderr.contains("base_url"), "{out}");

    let unset = "provider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"WORLDLINE_TEST_UNSET_KEY\"";
    let case = asker_case(dir.path(), "unset", &[ask("x")], unset, "");
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(2);
    assert!(out.stderr.contains("WORLDLINE_TEST_UNSET_KEY"), "{out}");
}

/// A fork (one, or a branch of several) of a run whose provider needs an
/// API key that is not set stops with exit 2 before anything runs, as
/// `run` and `repro` do, and names the run: the fork ran, its agent got a
/// 500 naming the variable and the failed calls were recorded; `repro`
/// named the case's stored object, a file the user never wrote.
#[test]
fn fork_and_repro_without_the_api_key_stop_before_anything_runs() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let server = Server::start(vec![completion("first"), completion("second")]);
    let model = openai_model(&server, "retries = 0");
    let case = asker_case(dir.path(), "keyed", &[ask("one"), ask("two")], &model, "");
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let at = model_events(&out.bundle())[1]["seq"].to_string();
    let runs = || std::fs::read_dir(store.join("runs")).unwrap().count();
    let before = runs();
    for args in [
        vec!["fork", &id, "--at", &at],
        vec!["fork", &id, "--at", &at, "--samples", "2"],
        vec!["repro", &id, "--times", "1"],
    ] {
        let out = worldline(&store, &args);
        out.expect_code(2);
        assert!(
            out.stderr.contains(&format!("export {KEY_VAR}=...")),
            "{out}"
        );
        assert!(out.stderr.contains("`keyed`"), "{out}");
        assert!(out.stderr.contains(&format!("{id}.jsonl: ")), "{out}");
        assert!(!out.stderr.contains("objects"), "{out}");
    }
    assert_eq!(runs(), before, "nothing ran");
    assert_eq!(server.seen().len(), 2, "only the run called the endpoint");
}

/// `resume` and a `rerun` that may ask the provider (`live`, `recorded`)
/// refuse an unset `api_key_env` before anything runs, as `run` and
/// `fork` do: they went on without it and recorded the agent's failed
/// model calls. A `fail` rerun, which never asks it, is not refused.
#[test]
fn resume_and_rerun_without_the_api_key_stop_before_anything_runs() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let server = Server::start(vec![completion("first"), completion("second")]);
    let model = openai_model(&server, "retries = 0");
    let limited = "[limits]\nmax_events = 1\n";
    let case = asker_case(
        dir.path(),
        "keyed",
        &[ask("one"), ask("two")],
        &model,
        limited,
    );
    let out = run(&store, &case, &asker(), &[]);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let runs = || std::fs::read_dir(store.join("runs")).unwrap().count();
    let before = runs();
    let agent = asker();
    let agent = agent.to_str().unwrap();
    for (args, goes) in [
        (vec!["resume", &id, "--max-events", "100"], "resume"),
        (
            vec!["rerun", &id, "--agent", agent, "--model", "live"],
            "rerun",
        ),
        (vec!["rerun", &id, "--agent", agent], "rerun"),
    ] {
        let out = worldline(&store, &args);
        out.expect_code(2);
        assert!(
            out.stderr
                .contains(&format!("export {KEY_VAR}=... before the {goes}")),
            "{out}"
        );
        assert!(out.stderr.contains(&format!("{id}.jsonl: ")), "{out}");
    }
    assert_eq!(runs(), before, "nothing ran");
    assert_eq!(server.seen().len(), 1, "only the run called the endpoint");
    let fail = worldline(&store, ["rerun", &id, "--agent", agent, "--model", "fail"]);
    assert!(!fail.stderr.contains("api_key_env"), "{fail}");
}

#[test]
fn max_connections_bounds_the_calls_in_flight_whatever_the_jobs() {
    let slow = || Reply::Slow("ok".into(), Duration::from_millis(150));
    let suite = |limit: &str| {
        let dir = temp_dir();
        let server = Server::start((0..8).map(|_| slow()).collect());
        let model = openai_model(&server, limit);
        for i in 0..8 {
            asker_case(dir.path(), &format!("c{i}"), &[ask("hello?")], &model, "");
        }
        let store = dir.path().join("store");
        let worlds = worlds_dir();
        let agent = asker();
        let out = worldline_env(
            [
                OsStr::new("test"),
                dir.path().as_os_str(),
                OsStr::new("--agent"),
                agent.as_os_str(),
                OsStr::new("--worlds"),
                worlds.as_os_str(),
                OsStr::new("--jobs"),
                OsStr::new("8"),
                OsStr::new("--json"),
                OsStr::new("--store"),
                store.as_os_str(),
            ],
            &[(KEY_VAR, KEY)],
        );
        out.expect_code(0);
        assert_eq!(out.json()["passed"], 8, "{out}");
        let peak = server.peak();
        let runs = files_with_suffix(&store.join("runs"), ".jsonl");
        (peak, runs, dir)
    };
    // Without a limit, 8 jobs have more than two calls in flight.
    let (free, _, _) = suite("");
    assert!(free > 2, "{free} calls at once without a limit");
    let (limited, runs, _dir) = suite("max_connections = 2");
    assert_eq!(limited, 2, "at most two calls at once");
    // The wait for a slot is metadata of the attempt, and a run with a
    // wait still replays identical.
    let waited: u64 = runs
        .iter()
        .map(|b| {
            let e = &model_events(b)[0];
            e["response"]["model_call"]["attempts"][0]["queued_ms"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert!(waited > 0, "some calls waited for a slot");
    let id = runs[0].file_stem().unwrap().to_string_lossy().to_string();
    let store = runs[0].parent().unwrap().parent().unwrap();
    let replay = worldline(store, ["replay", id.as_str(), "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

#[test]
fn a_case_made_from_an_openai_run_answers_from_its_bundle_copy_with_the_server_gone() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let mut server = Server::start(vec![completion("live answer")]);
    let case = asker_case(
        dir.path(),
        "incident",
        &[ask("q1")],
        &openai_model(&server, ""),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    server.stop();
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let made_case = dir.path().join("regress/from-incident.toml");
    std::fs::create_dir_all(made_case.parent().unwrap()).unwrap();
    let made = worldline(
        &store,
        [
            "case".as_ref(),
            "from-run".as_ref(),
            id.as_ref(),
            "-o".as_ref(),
            made_case.as_os_str(),
            "--json".as_ref(),
        ],
    );
    made.expect_code(0);
    assert_eq!(made.json()["model_calls"], 1, "{made}");
    let text = std::fs::read_to_string(&made_case).unwrap();
    assert!(text.contains("provider = \"recorded\""), "{text}");
    assert!(
        text.contains("recording = \"from-incident.run.jsonl\""),
        "{text}"
    );

    // A store that never saw the run: the answer comes from the copy.
    let again = run(&dir.path().join("other-store"), &made_case, &asker(), &[]);
    again.expect_code(0);
    assert_eq!(output(&again)[0]["content"], "live answer", "{again}");
    let m = &model_events(&again.bundle())[0]["response"]["model_call"];
    assert_eq!(m["provider"], "recorded");

    // A request the run never made gets the case's fallback: an error here.
    let changed = text.replace("\"q1\"", "\"q2\"");
    std::fs::write(&made_case, changed).unwrap();
    let missed = run(&dir.path().join("other-store"), &made_case, &asker(), &[]);
    assert_eq!(output(&missed)[0]["error"], "unavailable", "{missed}");
}

/// A completion as vLLM's OpenAI-compatible server writes it when asked
/// with `return_token_ids` and `logprobs`: the prompt's ids at the top,
/// each choice's `token_ids` and `logprobs.content`.
fn vllm_completion(content: &str, prompt: &[u64], completion: &[u64]) -> Reply {
    let logprobs: Vec<Value> = completion
        .iter()
        .enumerate()
        .map(|(i, id)| {
            json!({"token": format!("t{id}"), "logprob": -0.25 * (i as f64 + 1.0),
                   "bytes": [116], "top_logprobs": []})
        })
        .collect();
    let body = json!({
        "id": "chatcmpl-vllm-1",
        "object": "chat.completion",
        "created": 1_772_366_400,
        "model": "Qwen/Qwen3-0.6B",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "reasoning_content": null, "tool_calls": []},
            "logprobs": {"content": logprobs},
            "finish_reason": "stop",
            "stop_reason": null,
            "token_ids": completion,
        }],
        "service_tier": null,
        "system_fingerprint": null,
        "usage": {"prompt_tokens": prompt.len(), "completion_tokens": completion.len(), "total_tokens": prompt.len() + completion.len(), "prompt_tokens_details": null},
        "prompt_logprobs": null,
        "prompt_token_ids": prompt,
        "kv_transfer_params": null,
    });
    Reply::Http(200, body.to_string(), Vec::new())
}

/// `export RUN --format FORMAT -o FILE`: the file's one document.
fn export(store: &Path, run_id: &str, format: &str) -> Value {
    let dir = temp_dir();
    let file = dir.path().join("export.jsonl");
    let out = worldline(
        store,
        [
            OsStr::new("export"),
            OsStr::new(run_id),
            OsStr::new("--format"),
            OsStr::new(format),
            OsStr::new("-o"),
            file.as_os_str(),
        ],
    );
    out.expect_code(0);
    let text = std::fs::read_to_string(&file).unwrap();
    serde_json::from_str(text.lines().next().unwrap_or(""))
        .unwrap_or_else(|e| panic!("export --format {format} is not JSON ({e}):\n{text}"))
}

#[test]
fn token_ids_from_a_vllm_endpoint_are_recorded_compactly_replayed_and_exported() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let p1: Vec<u64> = vec![151644, 872, 198, 603, 151645];
    let c1: Vec<u64> = vec![3896, 151645];
    // The second prompt is the first, its answer, and the next user turn.
    let p2: Vec<u64> = [&p1[..], &c1[..], &[198, 151644, 872, 198, 1378, 151645][..]].concat();
    let c2: Vec<u64> = vec![5569, 11, 151645];
    let mut server = Server::start(vec![
        vllm_completion("first", &p1, &c1),
        vllm_completion("second", &p2, &c2),
    ]);
    let second = json!({"messages": [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "first"},
        {"role": "user", "content": "two"},
    ]});
    let case = asker_case(
        dir.path(),
        "tokens",
        &[ask("one"), second],
        &openai_model(
            &server,
            "token_ids = true\nchat_template = \"qwen3-default\"",
        ),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    assert!(out.json().get("warnings").is_none(), "{out}");
    assert!(!out.stderr.contains("token_ids"), "{out}");
    // The endpoint was asked for the ids and log-probabilities.
    let seen = server.seen();
    assert_eq!(seen[0].body["return_token_ids"], true);
    assert_eq!(seen[0].body["logprobs"], true);

    let events = model_events(&out.bundle());
    assert_eq!(events.len(), 2);
    for e in &events {
        let ok = &e["response"]["ok"];
        assert!(ok.get("prompt_token_ids").is_none(), "{ok}");
        assert!(ok["choices"][0].get("token_ids").is_none(), "{ok}");
        assert!(ok["choices"][0].get("logprobs").is_none(), "{ok}");
        let m = &e["response"]["model_call"];
        assert!(m.get("raw").is_none() && m["raw_sha256"].is_string(), "{m}");
        assert_eq!(m["tokens"]["tokenizer"], "Qwen/Qwen3-0.6B");
        assert_eq!(m["tokens"]["chat_template"], "qwen3-default");
    }
    let (t1, t2) = (
        &events[0]["response"]["model_call"]["tokens"],
        &events[1]["response"]["model_call"]["tokens"],
    );
    assert_eq!(t1["prompt_ids"], json!(p1));
    assert_eq!(t1["completion_ids"], json!(c1));
    assert_eq!(t1["logprobs"], json!([-0.25, -0.5]));
    // The second prompt is written as what it adds to the first call.
    let seq1 = events[0]["seq"].as_u64().unwrap();
    assert_eq!(
        t2["prompt_from"],
        json!({"event": seq1, "keep": p1.len() + c1.len()})
    );
    assert_eq!(t2["prompt_ids"], json!(p2[p1.len() + c1.len()..]));

    server.stop();
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let replay = worldline(&store, ["replay", &run_id, "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");

    let line = export(&store, &run_id, "trajectories");
    let tokens = line["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 2);
    assert_eq!(tokens[1]["prompt_token_ids"], json!(p2));
    assert_eq!(tokens[1]["completion_token_ids"], json!(c2));
    assert_eq!(tokens[1]["logprobs"], json!([-0.25, -0.5, -0.75]));
    assert_eq!(tokens[1]["chat_template"], "qwen3-default");
    assert!(line.get("tokens_missing").is_none(), "{line}");
    let doc = export(&store, &run_id, "atif");
    let agent: Vec<&Value> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["llm_call_count"] == 1)
        .collect();
    assert_eq!(agent.len(), 2);
    assert_eq!(agent[1]["metrics"]["prompt_token_ids"], json!(p2));
    assert_eq!(agent[1]["metrics"]["completion_token_ids"], json!(c2));
    assert_eq!(agent[1]["extra"]["tokenizer"], "Qwen/Qwen3-0.6B");
    assert!(doc.get("notes").is_none(), "{doc}");
}

#[test]
fn token_ids_an_endpoint_does_not_return_are_reported_once() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let server = Server::start(vec![completion("first"), completion("second")]);
    let case = asker_case(
        dir.path(),
        "no-tokens",
        &[ask("one"), ask("two")],
        &openai_model(&server, "token_ids = true"),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    let warnings = out.json()["warnings"].clone();
    assert_eq!(warnings.as_array().map(Vec::len), Some(1), "{out}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("2 of 2 model calls came back without token ids"),
        "{warnings}"
    );
    assert_eq!(out.stderr.matches("without token ids").count(), 1, "{out}");
    // `test` says so too, once for the case.
    let tested = worldline_env(
        [
            OsStr::new("test"),
            case.as_os_str(),
            OsStr::new("--agent"),
            asker().as_os_str(),
            OsStr::new("--worlds"),
            worlds_dir().as_os_str(),
            OsStr::new("--store"),
            store.as_os_str(),
        ],
        &[(KEY_VAR, KEY)],
    );
    assert_eq!(
        tested.stderr.matches("without token ids").count(),
        1,
        "{tested}"
    );
    // The answer stays as the endpoint sent it, raw included.
    let events = model_events(&out.bundle());
    assert!(events[0]["response"]["model_call"]["raw"].is_string());
    assert!(events[0]["response"]["model_call"].get("tokens").is_none());
}

/// With `token_ids = true`, an answer without the ids has what it holds
/// of the token fields taken out as well (rules 7): the agent gets the
/// completion it would have had without them, a `logprobs` it asked for
/// kept. Under rules 6 the `logprobs` it never asked for (or the prompt's
/// ids) reached it and were recorded.
#[test]
fn token_fields_an_answer_without_the_ids_holds_are_taken_out_from_rules_7() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let logprobs =
        json!({"content": [{"token": "t", "logprob": -0.5, "bytes": [116], "top_logprobs": []}]});
    let answer = |choice: Value, top: &[(&str, Value)]| {
        let mut body = json!({
            "id": "chatcmpl-vllm-1",
            "object": "chat.completion",
            "created": 1_772_366_400,
            "model": "Qwen/Qwen3-0.6B",
            "choices": [choice],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        });
        for (k, v) in top {
            body[*k] = v.clone();
        }
        Reply::Http(200, body.to_string(), Vec::new())
    };
    let message = json!({"role": "assistant", "content": "hi"});
    let mut server = Server::start(vec![
        // Log-probabilities, no ids.
        answer(
            json!({"index": 0, "message": message, "finish_reason": "stop", "logprobs": logprobs}),
            &[],
        ),
        // The prompt's ids, none of the choice's.
        answer(
            json!({"index": 0, "message": message, "finish_reason": "stop", "logprobs": logprobs}),
            &[("prompt_token_ids", json!([1, 2, 3]))],
        ),
        // Log-probabilities the agent asked for itself, no ids.
        answer(
            json!({"index": 0, "message": message, "finish_reason": "stop", "logprobs": logprobs}),
            &[],
        ),
    ]);
    let mut asked = ask("three");
    asked["logprobs"] = json!(true);
    let case = asker_case(
        dir.path(),
        "partial-tokens",
        &[ask("one"), ask("two"), asked],
        &openai_model(&server, "token_ids = true"),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    server.stop();
    // The recorded answer is the one the agent got.
    let events = model_events(&out.bundle());
    assert_eq!(events.len(), 3, "{out}");
    for (i, e) in events.iter().enumerate() {
        let ok = &e["response"]["ok"];
        assert!(ok.get("prompt_token_ids").is_none(), "call {i}: {ok}");
        let logprobs = ok["choices"][0].get("logprobs");
        assert_eq!(logprobs.is_some(), i == 2, "call {i}: {ok}");
        assert!(e["response"]["model_call"].get("tokens").is_none(), "{e}");
    }
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let replay = worldline(&store, ["replay", &run_id, "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

/// A run some of whose model calls came back without token ids says so
/// in its trajectory (`tokens_missing`: those calls' events), as its ATIF
/// document does in `notes`: `tokens` skipped them without a word.
#[test]
fn a_trajectory_names_the_model_calls_without_token_ids() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (p1, c1) = (vec![151644, 872, 198, 151645], vec![3896, 151645]);
    let mut server = Server::start(vec![
        vllm_completion("first", &p1, &c1),
        completion("second"),
    ]);
    let case = asker_case(
        dir.path(),
        "some-tokens",
        &[ask("one"), ask("two")],
        &openai_model(&server, "token_ids = true"),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    server.stop();
    let events = model_events(&out.bundle());
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let line = export(&store, &run_id, "trajectories");
    assert_eq!(line["tokens"].as_array().map(Vec::len), Some(1), "{line}");
    assert_eq!(line["tokens_missing"], json!([events[1]["seq"]]), "{line}");
    assert!(export(&store, &run_id, "atif")["notes"].is_string());
}

/// The virtual times of a bundle's model calls, with their providers.
fn model_times(bundle: &Path) -> Vec<(u64, String)> {
    (model_events(bundle).iter())
        .map(|e| {
            let provider = e["request"]["provider"].as_str().unwrap().to_string();
            (e["vtime_ns"].as_u64().unwrap(), provider)
        })
        .collect()
}

/// A rerun's recorded model answers move the clock by the virtual latency
/// they were recorded with (the rerun answered them in 0 ms), and a rerun
/// replays `identical` and forks, its recorded calls answered from its log
/// (the replay asked the case's scripted model and diverged at event 0),
/// as does a rerun stopped by `--model fail` at another agent's request.
#[test]
fn a_rerun_keeps_its_recording_s_latency_and_replays_identical() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let requests = [ask("one"), ask("two")];
    let rules = "latency_ms = 250\n[[model.rules]]\nreply = \"said\"";
    let case = asker_case(dir.path(), "rerun", &requests, rules, "");
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let rerun = |agent: &Path, mode: &str| {
        let args = ["rerun", &id, "--agent", s(agent), "--model", mode, "--json"];
        worldline(&store, args)
    };

    let same = rerun(&asker(), "recorded");
    same.expect_code(0);
    let times = |out: &CliOutput| model_times(&out.bundle());
    let recorded: Vec<u64> = times(&out).into_iter().map(|(t, _)| t).collect();
    assert_eq!(recorded, [251_000_000, 502_000_000], "{out}");
    assert_eq!(
        times(&same),
        recorded
            .iter()
            .map(|&t| (t, "recording".to_string()))
            .collect::<Vec<_>>(),
        "{same}"
    );
    let rerun_id = same.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(&store, &rerun_id);
    let fork = worldline(&store, ["fork", &rerun_id, "--at", "1", "--json"]);
    fork.expect_code(0);
    assert_eq!(
        times(&fork),
        [
            (251_000_000, "recording".to_string()),
            (502_000_000, "scripted".to_string())
        ],
        "{fork}"
    );
    common::replays_identical(&store, fork.json()["run_id"].as_str().unwrap());

    // Stopped at another agent's first request: the recording ran out, as
    // a script does, not the agent (it was `trapped`, exit 3).
    let other = rerun(&model_agent(), "fail");
    other.expect_code(1);
    assert_eq!(other.json()["status"], "unscripted", "{other}");
    assert_eq!(
        other.json()["original"]["status"],
        "completed",
        "the run it reran: {other}"
    );
    let missed = model_times(&other.bundle());
    assert_eq!(
        missed.last().map(|(_, p)| p.as_str()),
        Some("none"),
        "{other}"
    );
    // The error names the event where it stopped (it named none).
    let stopped_at = common::read_bundle(&other.bundle()).events.len() - 1;
    let error = other.json()["rerun"]["error"]
        .as_str()
        .or(other.json()["error"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        other
            .stdout
            .contains(&format!("rerun stopped at event {stopped_at}:")),
        "{error} {other}"
    );
    common::replays_identical(&store, other.json()["run_id"].as_str().unwrap());
}

/// A rerun recorded before its answers moved the clock
/// (`tests/bundles/rerun-before-latency`, each call 1 ms after the one
/// before) replays as it ran.
#[test]
fn a_rerun_recorded_before_its_latency_replays_as_it_ran() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let fixture = workspace_root().join("tests/bundles/rerun-before-latency/rerun.json");
    let imported = worldline(&store, [OsStr::new("import"), fixture.as_os_str()]);
    imported.expect_code(0);
    let id = "20261203-150824-2bc30339";
    let times = model_times(&common::bundle_in(&store, id));
    let recording = |t| (t, "recording".to_string());
    assert_eq!(times, [recording(1_000_000), recording(2_000_000)]);
    common::replays_identical(&store, id);
    worldline(&store, ["verify", id]).expect_code(0);
}

/// A `--model fail` rerun recorded `trapped` before such a stop ended
/// `unscripted` (`tests/bundles/rerun-fail-trapped`) replays `identical`,
/// its status as it ran; `verify` agrees.
#[test]
fn a_model_fail_rerun_recorded_trapped_replays_as_it_ran() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let id = common::imported_fixture(&store, "rerun-fail-trapped", "rerun-fail.json");
    let history = worldline(&store, ["history", &id, "--json"]);
    assert_eq!(history.json()["status"], "trapped", "{history}");
    worldline(&store, ["verify", &id]).expect_code(0);
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A run of a case whose `recorded` provider names a recording beside
/// the case file forks, reproduces and reruns live: the case read back
/// from the store is not beside it, and the store's runs answer instead.
/// The fork's live calls said "no recorded answer", `repro` was refused
/// (exit 2, the recording looked for among the store's objects).
#[test]
fn a_recorded_case_s_run_forks_reproduces_and_reruns_from_the_store() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let requests = [ask("one"), ask("two")];
    let rules = "latency_ms = 250\n[[model.rules]]\nreply = \"said\"";
    let first = asker_case(dir.path(), "first", &requests, rules, "");
    let out = run(&store, &first, &asker(), &[]);
    out.expect_code(0);
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::copy(out.bundle(), cases.join("first.run.jsonl")).unwrap();
    let recorded = "provider = \"recorded\"\nrecording = \"first.run.jsonl\"";
    let case = asker_case(&cases, "again", &requests, recorded, "");
    let again = run(&store, &case, &asker(), &[]);
    again.expect_code(0);
    let id = again.json()["run_id"].as_str().unwrap().to_string();
    let fork = worldline(&store, ["fork", &id, "--at", "1", "--json"]);
    fork.expect_code(0);
    let answers = model_events(&fork.bundle());
    assert!(answers[1]["response"]["ok"].is_object(), "{fork}");
    let repro = worldline(&store, ["repro", &id, "--times", "1", "--json"]);
    repro.expect_code(0);
    assert_eq!(repro.json()["reproduced"], 1, "{repro}");
    let agent = asker();
    let live = [
        "rerun",
        &id,
        "--agent",
        s(&agent),
        "--model",
        "live",
        "--json",
    ];
    let rerun = worldline(&store, live);
    rerun.expect_code(0);
    assert_eq!(rerun.json()["status"], "completed", "{rerun}");
}

/// An OpenAI Responses request's structured output (`text.format`),
/// `reasoning.effort` and `parallel_tool_calls` reach the provider under
/// rules 1 (decision 0423) as the chat call's `response_format`,
/// `reasoning_effort` and `parallel_tool_calls`: an agent that asks for a
/// JSON schema got free text before. A run recorded before
/// (`tests/bundles/before-rules`, its chat call without them) replays as
/// it ran.
#[test]
fn a_responses_request_s_structured_output_and_reasoning_reach_the_provider() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let old = common::imported_fixture(&store, "before-rules", "structured-output.json");
    let recorded = read_bundle(&common::bundle_in(&store, &old));
    let chat = &recorded.events[0]["request"]["request"];
    assert!(chat.get("response_format").is_none(), "{chat}");

    let server = Server::start(vec![completion("{\"severity\": \"high\"}")]);
    let fixture = workspace_root().join("tests/bundles/before-rules");
    let case = std::fs::read_to_string(fixture.join("structured-output.toml")).unwrap();
    let (task, _) = case.split_once("[[model.rules]]").unwrap();
    let text = format!("{task}[model]\n{}", openai_model(&server, ""));
    let case = write_case(dir.path(), "structured", &text);
    let worlds = fixture.join("worlds");
    let out = worldline_env(
        [
            OsStr::new("run"),
            case.as_os_str(),
            OsStr::new("--agent"),
            guest("http-agent").as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
            OsStr::new("--json"),
            OsStr::new("--store"),
            store.as_os_str(),
        ],
        &[(KEY_VAR, KEY)],
    );
    out.expect_code(0);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    let body = &seen[0].body;
    assert_eq!(body["response_format"]["type"], "json_schema", "{body}");
    assert_eq!(body["response_format"]["json_schema"]["name"], "triage");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        body["response_format"]["json_schema"]["schema"]["required"],
        json!(["severity"])
    );
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(body["parallel_tool_calls"], false);
    let answer = &output(&out)["responses"][0];
    assert_eq!(answer["status"], 200, "{answer}");
    let text = &answer["body"]["output"][0]["content"][0]["text"];
    assert_eq!(text, "{\"severity\": \"high\"}", "{answer}");
    assert_no_key(&out);
    common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// Rules 10 (decision 0423): a `model.complete` request that is no JSON
/// object (the Rust SDK's `complete` of `42`) is refused as OpenAI refuses
/// such a body, `invalid-args` with its 400 message, and takes no
/// scripted reply; the scripted model without a reply says what the case
/// scripts; and a check is named by what it asserts (`calls close_ticket
/// not attempted`, `file notes/postmortem.md absent`, each expecting
/// `true`). The run recorded under rules 9
/// (`tests/bundles/before-rules-10/asks.json`) replays as it ran, and is
/// graded again as it was: `attempted` and `exists`, expecting `false`.
#[test]
fn a_request_that_is_no_object_is_refused_and_checks_say_what_they_assert_from_rules_10() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let fixture = workspace_root().join("tests/bundles/before-rules-10");
    let worlds = workspace_root().join("worlds");
    let case = fixture.join("asks.toml");
    let names = |grade: &Value| -> Vec<(String, Value)> {
        (grade["assertions"].as_array().unwrap().iter())
            .map(|a| {
                (
                    a["what"].as_str().unwrap().to_string(),
                    a["expected"].clone(),
                )
            })
            .collect()
    };
    let old = common::imported_fixture(&store, "before-rules-10", "asks.json");
    let recorded = read_bundle(&common::bundle_in(&store, &old));
    let said = recorded.events[0]["response"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(
        said.ends_with("all 0 of [model] responses are used"),
        "{said}"
    );
    let was = names(&recorded.footer.unwrap()["grade"]);
    assert_eq!(
        was[1..],
        [
            ("file notes/postmortem.md exists".to_string(), json!(false)),
            ("calls close_ticket attempted".to_string(), json!(false)),
        ]
    );
    let regraded = worldline(
        &store,
        [
            OsStr::new("grade"),
            OsStr::new(&old),
            OsStr::new("--case"),
            case.as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
            OsStr::new("--json"),
        ],
    );
    assert_eq!(names(&regraded.json()["grade"]), was, "{regraded}");

    let out = worldline(
        &store,
        [
            OsStr::new("run"),
            case.as_os_str(),
            OsStr::new("--agent"),
            asker().as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
            OsStr::new("--json"),
        ],
    );
    out.expect_code(1);
    let events = model_events(&out.bundle());
    assert_eq!(
        events.len(),
        2,
        "the refused request and the next: {events:?}"
    );
    let refused = &events[0]["response"]["error"];
    assert_eq!(refused["kind"], "invalid-args", "{refused}");
    assert_eq!(refused["status"], 400, "{refused}");
    assert_eq!(
        refused["message"],
        "The request body must be a JSON object."
    );
    let said = events[1]["response"]["error"]["message"].as_str().unwrap();
    assert!(
        said.ends_with(
            "the case scripts no replies: give its [model] [[model.responses]] (or [[model.rules]])"
        ),
        "{said}"
    );
    let doc = out.json();
    let stop = doc["error"].as_str().unwrap();
    assert!(
        stop.starts_with(
            "scripted model: no reply for the last message (the case scripts no replies"
        ),
        "{stop}"
    );
    assert_eq!(
        names(&doc["grade"])[1..],
        [
            ("file notes/postmortem.md absent".to_string(), json!(true)),
            ("calls close_ticket not attempted".to_string(), json!(true)),
        ]
    );
    common::replays_identical(&store, doc["run_id"].as_str().unwrap());
}

/// A redacted copy withholds every model call's token ids and
/// log-probabilities (decision 0428): they decode back to the text the
/// policy hid (`export --redacted` kept `model_call.tokens` and the
/// `logprobs` the agent asked for, and a trajectory or ATIF export of
/// the copy carried them). The copy and its exports say they were
/// withheld.
#[test]
fn a_redacted_copy_withholds_token_ids_and_logprobs() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let hidden = "ada@example.com";
    // The ids are the text's bytes, as a byte-level tokenizer's would be.
    let p1: Vec<u64> = format!("<|user|>mail {hidden}")
        .bytes()
        .map(u64::from)
        .collect();
    let c1: Vec<u64> = "sent".bytes().map(u64::from).collect();
    let mut server = Server::start(vec![vllm_completion("sent", &p1, &c1)]);
    let mut asked = ask(&format!("mail {hidden}"));
    asked["logprobs"] = json!(true);
    let case = asker_case(
        dir.path(),
        "tokens",
        &[asked],
        &openai_model(&server, "token_ids = true"),
        "",
    );
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    server.stop();
    let e = &model_events(&out.bundle())[0];
    assert!(e["response"]["model_call"]["tokens"].is_object(), "{e}");
    assert!(
        e["response"]["ok"]["choices"][0]["logprobs"].is_object(),
        "{e}"
    );

    std::fs::write(store.join("redact.toml"), "detectors = [\"email\"]\n").unwrap();
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let copy = dir.path().join("red.json");
    worldline(
        &store,
        [
            OsStr::new("export"),
            OsStr::new(&run_id),
            OsStr::new("--redacted"),
            OsStr::new("-o"),
            copy.as_os_str(),
        ],
    )
    .expect_code(0);
    let text = std::fs::read_to_string(&copy).unwrap();
    assert!(!text.contains(hidden), "the text is hidden");
    for field in ["prompt_ids", "completion_ids"] {
        assert!(!text.contains(field), "{field} left in the copy: {text}");
    }
    let file: Value = serde_json::from_str(&text).unwrap();
    let event: Value = (file["bundle"].as_str().unwrap().lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["call"] == MODEL_CALL)
        .unwrap();
    let r = &event["response"];
    assert!(r["model_call"].get("tokens").is_none(), "{r}");
    assert!(r["ok"]["choices"][0].get("logprobs").is_none(), "{r}");
    assert_eq!(r["model_call"]["tokens_withheld"], true, "{r}");

    let other = dir.path().join("other");
    worldline(&other, [OsStr::new("import"), copy.as_os_str()]).expect_code(0);
    let redacted = format!("{run_id}-redacted");
    let line = export(&other, &redacted, "trajectories");
    assert!(line.get("tokens").is_none(), "{line}");
    assert_eq!(line["tokens_withheld"], true, "{line}");
    let doc = export(&other, &redacted, "atif");
    let step = (doc["steps"].as_array().unwrap().iter())
        .find(|s| s["llm_call_count"] == 1)
        .unwrap();
    assert!(step["metrics"].get("prompt_token_ids").is_none(), "{step}");
    assert!(step["metrics"].get("logprobs").is_none(), "{step}");
    assert_eq!(step["extra"]["tokens_withheld"], true, "{step}");
    assert!(doc["notes"].as_str().unwrap().contains("withheld"), "{doc}");
}

/// A model request naming no model is told the flag that names one,
/// `--model-set model=NAME` (it said `--model model=NAME`, a flag that
/// does not exist).
#[test]
fn a_request_naming_no_model_is_told_the_flag_that_names_one() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let server = Server::start(Vec::new());
    let model = openai_model(&server, "").replace("model = \"local-llm\"\n", "");
    let case = asker_case(dir.path(), "unnamed", &[ask("one")], &model, "");
    let out = run(&store, &case, &asker(), &[]);
    out.expect_code(0);
    let e = &model_events(&out.bundle())[0];
    let message = e["response"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("no model named"), "{message}");
    assert!(message.contains("--model-set model=NAME"), "{message}");
}

/// A completion asking for document `i` (the long-horizon world's
/// `get_doc`).
fn doc_call(i: usize) -> Reply {
    let body = json!({
        "id": format!("chatcmpl-{i}"),
        "object": "chat.completion",
        "created": 1_772_366_400,
        "model": "local-llm-7b-q4",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": format!("call_{i}"), "type": "function", "function": {"name": "get_doc", "arguments": json!({"id": format!("D-{i}")}).to_string()}}],
        }}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    });
    Reply::Http(200, body.to_string(), Vec::new())
}

/// A run of `n` calls of the looper agent against a live endpoint: its
/// store, run id and bundle's bytes.
fn live_long_run(root: &Path, n: usize) -> (PathBuf, String, u64) {
    let dir = root.join(format!("n{n}"));
    let (worlds, _) = common::long::write(&dir, n);
    let mut replies: Vec<Reply> = (0..n - 1).map(doc_call).collect();
    replies.push(completion("All read."));
    let server = Server::start(replies);
    let case = write_case(
        &dir,
        "live",
        &format!(
            "world = \"library@v1\"\nseed = 40\nclock = 2026-03-01T12:00:00Z\ntask = {{ prompt = \"Read every document.\" }}\n\n[limits]\ntimeout_ms = 3_600_000\n\n[model]\n{}\n",
            openai_model(&server, "")
        ),
    );
    let store = dir.join("store");
    let agent = guest("looper-agent");
    let out = run_on(&worlds, &store, &case, &agent, &[]);
    out.expect_code(0);
    assert_eq!(server.seen().len(), n, "{out}");
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let bytes = std::fs::metadata(out.bundle()).unwrap().len();
    (store, id, bytes)
}

/// Decision 0430: a live model's call records the body it sent as what
/// it changed in the agent's request (which the event holds compact), so
/// twice the calls record about twice the bytes, not four times; the run
/// replays `identical` and `show --at` gives the body whole. Under rules
/// 10 each call recorded the whole conversation it sent again.
#[test]
fn a_live_model_s_run_records_bytes_linear_in_its_calls_from_rules_11() {
    let dir = temp_dir();
    let (_, _, short) = live_long_run(dir.path(), 40);
    let (store, id, long) = live_long_run(dir.path(), 80);
    assert!(
        (long as f64) < 2.5 * short as f64,
        "40 calls recorded {short} bytes, 80 calls {long}"
    );
    let replay = worldline(&store, ["replay", &id, "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");

    // The last model call's body, put back whole: the case's model, the
    // whole conversation it sent.
    let events = model_events(&common::bundle_in(&store, &id));
    let last = events.last().unwrap();
    let changes = &last["response"]["model_call"]["rendered_changes"];
    assert_eq!(changes["set"], json!({"model": "local-llm"}), "{changes}");
    assert!(last["response"]["model_call"].get("rendered").is_none());
    let seq = last["seq"].to_string();
    let shown = worldline(&store, ["show", &id, "--at", &seq, "--json"]);
    shown.expect_code(0);
    let text = shown.stdout.clone();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let body = find_key(&doc, "rendered").unwrap_or_else(|| panic!("no body in {text}"));
    assert_eq!(body["model"], "local-llm");
    assert_eq!(body["messages"].as_array().unwrap().len(), 2 + 2 * 79);
}

/// Rules 11 is the run's (decision 0423): a run recorded under rules 10
/// (`tests/bundles/before-rules-11/live.json`) keeps each body sent whole
/// and replays `identical`.
#[test]
fn a_live_model_s_run_before_rules_11_keeps_its_bodies_whole_and_replays() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let old = common::imported_fixture(&store, "before-rules-11", "live.json");
    let events = model_events(&common::bundle_in(&store, &old));
    assert_eq!(events.len(), 2);
    for e in &events {
        let call = &e["response"]["model_call"];
        assert!(call.get("rendered_changes").is_none(), "{call}");
        let mut body = e["request"]["request"].clone();
        body.as_object_mut().unwrap().remove("stream");
        body["model"] = json!("local-llm");
        assert_eq!(call["rendered"], body);
    }
}

/// The first value under `key` anywhere in `v`.
fn find_key<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m
            .get(key)
            .or_else(|| m.values().find_map(|x| find_key(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find_key(x, key)),
        _ => None,
    }
}
