//! Native agents' cost (issue 28, point 6): what the loopback mediator
//! adds to a model or MCP call of a process outside the sandbox (target
//! ≤ 1 ms beyond the provider's own time), and what a run adds to the
//! process's own start (target ≤ 20 ms).
//!
//! `cargo bench -p worldline --bench native`. Measures:
//! - `call/*`: one client, a raw HTTP/1.1 client on one kept-alive loopback
//!   connection (`TCP_NODELAY`, as the SDKs' async clients set it), sends
//!   the same request again and again:
//!   - `chat/*`: a Chat Completions request as the openai + MCP example
//!     agent sends its third one on `cases/model/rollback.toml` (the task,
//!     two tool calls and their results, the world's tools as functions),
//!     answered by the case's scripted model;
//!   - `mcp/*`: an MCP `tools/call` of `list_deploys` (a read: the world
//!     stays as it is whatever the repetitions);
//!
//!   each to three servers: `loopback`, a session's own server with its
//!   token, whose mediator records into a store on disk as a run does;
//!   `trivial_server`, the same HTTP stack (axum on the same runtime)
//!   answering the same bytes from memory, the cost of any local
//!   provider, so `loopback − trivial_server` is what worldline adds; and
//!   `mediator_only`, the request handed to the session's mediator
//!   without HTTP (how much of the addition is mediation and recording).
//!   The scripted model answers at once, so `loopback` itself bounds the
//!   overhead from above.
//! - `start/*`: a program that exits at once (`/bin/true`) and
//!   `python3 -c pass`, each started directly and as the agent of
//!   `worldline run CASE --exec -- CMD` (the whole CLI process: case and
//!   world loaded, store opened, loopback server, working directory,
//!   scrubbed environment, process group, grading, the bundle written and
//!   flushed, the index row, the report); and `/bin/true` as an in-process
//!   `native::exec::run` (the CLI's share is the difference).
//!
//! Results are written up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use worldline_case::case;
use worldline_engine::native::exec::{self, Exec};
use worldline_engine::native::loopback::{self, Loopback};
use worldline_engine::native::session::{self, Exit, Handle, Job, Reply};
use worldline_engine::run::RunOptions;
use worldline_protocol::routes::Route;
use worldline_runtime::mediate::boundary::Via;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// A kept-alive client connection to one server, in the MCP session the
/// server named (once it named one).
struct Client {
    conn: BufReader<TcpStream>,
    port: u16,
    session: Option<String>,
}

impl Client {
    fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            conn: BufReader::new(stream),
            port,
            session: None,
        }
    }

    /// POST `body` to `path`; the status and the response body.
    fn post(&mut self, path: &str, body: &str) -> (u16, Vec<u8>) {
        let session = self
            .session
            .as_ref()
            .map(|id| format!("mcp-session-id: {id}\r\n"))
            .unwrap_or_default();
        write!(
            self.conn.get_mut(),
            "POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{session}content-length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .unwrap();
        let mut status = String::new();
        self.conn.read_line(&mut status).unwrap();
        let code = status.split(' ').nth(1).unwrap().parse().unwrap();
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.conn.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if lower.starts_with("mcp-session-id:") {
                self.session = Some(line["mcp-session-id:".len()..].trim().to_string());
            }
        }
        let mut out = vec![0; length];
        self.conn.read_exact(&mut out).unwrap();
        (code, out)
    }

    /// POST and expect a 200; the body as JSON.
    fn json(&mut self, path: &str, body: &str) -> Value {
        let (code, out) = self.post(path, body);
        assert_eq!(code, 200, "{}", String::from_utf8_lossy(&out));
        serde_json::from_slice(&out).unwrap()
    }
}

/// The body of a 200 answer (an iteration that got anything else, such
/// as a run that ended, is no measure).
fn ok((code, body): (u16, Vec<u8>)) -> Vec<u8> {
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    body
}

fn mcp_call(id: u64, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
    .to_string()
}

/// The text of an MCP tool result.
fn result_text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The third Chat Completions request of the openai + MCP example agent
/// on the rollback case, built from the world's own answers.
fn third_chat_request(client: &mut Client) -> String {
    client.json(
        "/mcp",
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
    );
    let listed = client.json(
        "/mcp",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
    );
    let tools: Vec<Value> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}})
        })
        .collect();
    let alert =
        result_text(&client.json("/mcp", &mcp_call(2, "get_alert", json!({"id": "ALERT-7"}))));
    let deploys = result_text(&client.json(
        "/mcp",
        &mcp_call(3, "list_deploys", json!({"service": "checkout"})),
    ));
    let call = |id: &str, name: &str, args: Value| {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
            "function": {"name": name, "arguments": args.to_string()}}]})
    };
    json!({"model": "gpt-4.1-mini", "tools": tools, "messages": [
        {"role": "user", "content": r#"{"alert": "ALERT-7", "ticket": "T-100"}"#},
        call("call_1", "get_alert", json!({"id": "ALERT-7"})),
        {"role": "tool", "tool_call_id": "call_1", "content": alert},
        call("call_2", "list_deploys", json!({"service": "checkout"})),
        {"role": "tool", "tool_call_id": "call_2", "content": deploys},
    ]})
    .to_string()
}

/// `body` to `route` on the mediator, without HTTP.
fn mediated(handle: &Handle, route: Route, path: &'static str, body: &'static str) {
    let job: Job = Box::new(move |st| {
        let via = Via::Loopback {
            method: "POST".into(),
            path: path.into(),
        };
        let url = format!("http://loopback{path}");
        st.answer_http(&route, "POST", &url, body.as_bytes(), &via)
    });
    match handle.call_blocking(job) {
        Reply::Answered(Some(r)) => assert_eq!(r.status, 200),
        Reply::Answered(None) => panic!("a timeout"),
        Reply::Stopped(why) => panic!("{why}"),
    }
}

/// A server that answers every request with `body`, on the same HTTP
/// stack as the loopback server.
fn trivial_router(body: Vec<u8>) -> axum::Router {
    let body = axum::body::Bytes::from(body);
    // It reads the request as any server does (and must, to keep the
    // connection).
    axum::Router::new().fallback(move |request: axum::body::Bytes| {
        let body = body.clone();
        async move {
            black_box(request);
            ([("content-type", "application/json")], body)
        }
    })
}

fn calls(c: &mut Criterion) {
    let path = common::workspace_root().join("cases/model/rollback.toml");
    let mut the_case = case::load(&path, None).expect("rollback.toml loads");
    // Long enough for every iteration criterion makes.
    the_case.limits.max_events = u64::MAX;
    the_case.limits.max_steps = None;
    the_case.limits.max_errors = None;
    let sandbox = Sandbox::new(None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = StoreDir::open(&dir.path().join("store")).unwrap();
    // As `run` does before a run (the header names the case's object).
    store.put_case(&the_case).unwrap();
    let exec = Exec {
        command: vec!["bench-client".into()],
        ..Exec::default()
    };
    let header = worldline_engine::native::header(&sandbox, &the_case, exec.agent());
    let (handle, receiver) = session::channel();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let opts = RunOptions {
        store: Some(&store),
        ..RunOptions::default()
    };
    std::thread::scope(|s| {
        let mediator = s.spawn(|| session::mediate(&sandbox, &the_case, header, opts, receiver));
        let serve = |router: axum::Router| {
            let listener = rt
                .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
                .unwrap();
            let port = listener.local_addr().unwrap().port();
            rt.spawn(worldline_engine::native::listen::serve(
                listener,
                router,
                std::future::pending(),
            ));
            port
        };
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let lb = Loopback::new(handle.clone(), port, Some(TOKEN.into()));
        rt.spawn(worldline_engine::native::listen::serve(
            listener,
            loopback::router(lb),
            std::future::pending(),
        ));
        let mut worldline = Client::connect(port);

        let chat: &'static str = Box::leak(third_chat_request(&mut worldline).into_boxed_str());
        let tool: &'static str =
            Box::leak(mcp_call(7, "list_deploys", json!({"service": "checkout"})).into_boxed_str());
        // What each answers, checked once and served by the trivial server.
        let (code, chat_answer) = worldline.post("/v1/chat/completions", chat);
        assert_eq!(code, 200);
        assert!(
            String::from_utf8_lossy(&chat_answer).contains("rollback_deploy"),
            "the scripted model answers the third request with the rollback"
        );
        let (code, tool_answer) = worldline.post("/mcp", tool);
        assert_eq!(code, 200);
        assert!(String::from_utf8_lossy(&tool_answer).contains("D-42"));
        let mut chat_server = Client::connect(serve(trivial_router(chat_answer)));
        let mut tool_server = Client::connect(serve(trivial_router(tool_answer)));

        let mut g = c.benchmark_group("call");
        g.bench_function("chat/trivial_server", |b| {
            b.iter(|| black_box(ok(chat_server.post("/v1/chat/completions", chat))))
        });
        g.bench_function("chat/loopback", |b| {
            b.iter(|| black_box(ok(worldline.post("/v1/chat/completions", chat))))
        });
        g.bench_function("chat/mediator_only", |b| {
            b.iter(|| mediated(&handle, Route::OpenaiChat, "/v1/chat/completions", chat))
        });
        g.bench_function("mcp/trivial_server", |b| {
            b.iter(|| black_box(ok(tool_server.post("/mcp", tool))))
        });
        g.bench_function("mcp/loopback", |b| {
            b.iter(|| black_box(ok(worldline.post("/mcp", tool))))
        });
        g.bench_function("mcp/mediator_only", |b| {
            b.iter(|| mediated(&handle, Route::Mcp, "/mcp", tool))
        });
        g.finish();
        handle.end(Exit::disconnected());
        mediator.join().unwrap().unwrap();
    });
}

/// `worldline run CASE --exec -- CMD` in a store of its own; asserts the
/// run completed.
fn cli_run(store: &Path, case: &Path, cmd: &[OsString]) {
    let out = Command::new(env!("CARGO_BIN_EXE_worldline"))
        .arg("run")
        .arg(case)
        .arg("--store")
        .arg(store)
        .arg("--worlds")
        .arg(common::workspace_root().join("worlds"))
        .arg("--exec")
        .arg("--")
        .args(cmd)
        .output()
        .expect("running worldline");
    // The incident case grades the output the program does not give: the
    // run completes and fails its checks (exit 1), as any such run would.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The interpreter `python3` names, resolved (not a shim that starts
/// another process first, or needs variables the run does not pass).
fn real_python3() -> OsString {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 on PATH");
    String::from_utf8(out.stdout).unwrap().trim().into()
}

fn start(c: &mut Criterion) {
    let path = common::workspace_root().join("cases/incident/baseline.toml");
    let the_case = case::load(&path, None).expect("baseline.toml loads");
    let sandbox = Sandbox::new(None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let true_cmd: Vec<OsString> = vec!["/bin/true".into()];
    let python: Vec<OsString> = vec![real_python3(), "-c".into(), "pass".into()];
    let mut g = c.benchmark_group("start");
    g.sample_size(30);
    g.measurement_time(Duration::from_secs(10));
    for (name, cmd) in [("true", &true_cmd), ("python3", &python)] {
        g.bench_function(format!("{name}/directly"), |b| {
            b.iter(|| {
                let status = Command::new(&cmd[0]).args(&cmd[1..]).status().unwrap();
                assert!(status.success());
            })
        });
        let store = dir.path().join(format!("store-{name}"));
        g.bench_function(format!("{name}/worldline_run_exec"), |b| {
            b.iter(|| cli_run(&store, &path, cmd))
        });
    }
    let store = StoreDir::open(&dir.path().join("store-in-process")).unwrap();
    store.put_case(&the_case).unwrap();
    let exec = Exec {
        command: vec!["/bin/true".into()],
        ..Exec::default()
    };
    g.bench_function("true/exec_run_in_process", |b| {
        b.iter(|| {
            let opts = RunOptions {
                store: Some(&store),
                ..RunOptions::default()
            };
            black_box(exec::run(&sandbox, &the_case, opts, &exec).unwrap())
        })
    });
    g.finish();
}

criterion_group!(native, calls, start);
criterion_main!(native);
