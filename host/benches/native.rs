//! Native agents' cost (issue 28): what the loopback mediator adds to a
//! model or MCP call of a process outside the sandbox, and what a run adds
//! to the process's own start.
//!
//! `cargo bench -p worldline --bench native`. Measures:
//! - `call/*`: one MCP `tools/call` (`get_alert`) and one Chat Completions
//!   request (scripted model) sent over a kept-alive loopback connection
//!   to a session's server, against the same request handed to the
//!   session's mediator directly (`direct`): the difference is the
//!   transport (HTTP parsing, the guard, the hop to the mediator thread);
//! - `start/*`: `/bin/true` started directly, and as an `--exec` run of an
//!   in-memory case (server, working directory, environment, process
//!   group, grading, footer).
//!
//! Results are written up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use worldline::case;
use worldline::mediate::boundary::Via;
use worldline::native::exec::{self, Exec};
use worldline::native::loopback::{self, Loopback};
use worldline::native::session::{self, Exit, Job, Reply};
use worldline::protocol::routes::Route;
use worldline::run::RunOptions;
use worldline::sandbox::Sandbox;

const TOOL_CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"ALERT-7"}}}"#;
const CHAT: &str =
    r#"{"model":"m","messages":[{"role":"user","content":"{\"alert\":\"ALERT-7\"}"}]}"#;

/// POST `body` to `path` on a kept-alive connection; the response body.
fn post(conn: &mut BufReader<TcpStream>, port: u16, path: &str, body: &str) -> Vec<u8> {
    write!(
        conn.get_mut(),
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut length = 0;
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
    }
    let mut out = vec![0; length];
    conn.read_exact(&mut out).unwrap();
    out
}

fn calls(c: &mut Criterion) {
    let path = common::workspace_root().join("cases/model/rollback.toml");
    let mut the_case = case::load(&path, None).expect("rollback.toml loads");
    // Long enough for every iteration criterion makes.
    the_case.limits.max_events = u64::MAX;
    the_case.limits.max_steps = None;
    let sandbox = Sandbox::new(None).unwrap();
    let header = worldline::native::header(&sandbox, &the_case, Default::default());
    let (handle, receiver) = session::channel();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    std::thread::scope(|s| {
        let mediator = s.spawn(|| {
            session::mediate(&sandbox, &the_case, header, RunOptions::default(), receiver)
        });
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let lb = Loopback::new(handle.clone(), port, None);
        rt.spawn(async move { axum::serve(listener, loopback::router(lb)).await });
        let mut conn = BufReader::new(TcpStream::connect(("127.0.0.1", port)).unwrap());
        conn.get_mut().set_nodelay(true).unwrap();
        let mut g = c.benchmark_group("call");
        g.bench_function("mcp_tools_call_loopback", |b| {
            b.iter(|| black_box(post(&mut conn, port, "/mcp", TOOL_CALL)))
        });
        g.bench_function("mcp_tools_call_direct", |b| {
            b.iter(|| {
                let job: Job = Box::new(|st| {
                    let via = Via {
                        name: "loopback",
                        shown: serde_json::json!({"method": "POST", "path": "/mcp"}),
                        protocol_call: "bench",
                    };
                    st.answer_http(&Route::Mcp, "POST", "", TOOL_CALL.as_bytes(), &via)
                });
                match handle.call_blocking(job) {
                    Reply::Answered(r) => black_box(r),
                    Reply::Stopped(why) => panic!("{why}"),
                }
            })
        });
        g.bench_function("chat_completions_loopback", |b| {
            b.iter(|| black_box(post(&mut conn, port, "/v1/chat/completions", CHAT)))
        });
        g.finish();
        handle.end(Exit::disconnected());
        mediator.join().unwrap().unwrap();
    });
}

fn start(c: &mut Criterion) {
    let path = common::workspace_root().join("cases/incident/baseline.toml");
    let the_case = case::load(&path, None).expect("baseline.toml loads");
    let sandbox = Sandbox::new(None).unwrap();
    let exec = Exec {
        command: vec!["/bin/true".into()],
        ..Exec::default()
    };
    let mut g = c.benchmark_group("start");
    g.measurement_time(Duration::from_secs(8));
    g.bench_function("true_directly", |b| {
        b.iter(|| black_box(std::process::Command::new("/bin/true").status().unwrap()))
    });
    g.bench_function("true_as_an_exec_run", |b| {
        b.iter(|| black_box(exec::run(&sandbox, &the_case, RunOptions::default(), &exec).unwrap()))
    });
    g.finish();
}

criterion_group!(native, calls, start);
criterion_main!(native);
