//! HTTP mediation benchmark (issue 27): what a model call and a tool call
//! cost when they arrive as HTTP requests (OpenAI Chat Completions, MCP
//! `tools/call`) instead of through `model.complete` / `tools.call`.
//!
//! `cargo bench -p worldline --bench http`. Two measures:
//! - `protocol/*`: the host-side protocol work alone (body → call, answer →
//!   bytes), no engine;
//! - `run/*`: whole in-memory runs of `cases/model/rollback.toml` (6 model
//!   calls and 5 tool calls) by `examples/model-agent` (the SDK path) and
//!   `examples/http-agent` (the same loop over `wasi:http`); their
//!   difference over 11 calls is the cost of a call over HTTP, guest-side
//!   HTTP client included;
//! - `sdk_agent/openai_mcp`: a whole run of the same case by
//!   `examples/js-openai-agent` (the official `openai` package and the MCP
//!   client, bundled with `worldline build-js`; compiled once before the
//!   measure, as a cached run is). Set `WORLDLINE_BENCH_SDK_AGENT` to a
//!   built .wasm to skip the build (Node.js and the pinned packages).
//!
//! Results are written up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::time::Duration;
use worldline_case::case;
use worldline_engine::run::run;
use worldline_protocol::{Fidelity, mcp, openai_chat};
use worldline_runtime::sandbox::Sandbox;

fn protocol(c: &mut Criterion) {
    let messages: Vec<_> = (0..10)
        .map(|i| json!({"role": "user", "content": format!("message {i} about ALERT-7 and D-42")}))
        .collect();
    let body = json!({"model": "gpt-4o-mini", "messages": messages, "temperature": 0}).to_string();
    let answer = json!({"ok": {"id": "chatcmpl-scripted-1", "object": "chat.completion", "created": 7,
        "model": "scripted", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null, "tool_calls": [{"id": "call_1_0", "type": "function",
        "function": {"name": "list_deploys", "arguments": "{\"service\":\"checkout\"}"}}]}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}});
    let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_deploys","arguments":{"service":"checkout"}}}"#;
    let result =
        json!({"ok": {"deploys": [{"id": "D-42", "service": "checkout", "status": "live"}]}});
    let mut g = c.benchmark_group("protocol");
    g.bench_function("chat_completions_request_and_answer", |b| {
        b.iter(|| {
            let chat =
                openai_chat::parse(black_box(body.as_bytes()), true, Fidelity::Vendor).unwrap();
            black_box(openai_chat::reply(&chat, black_box(&answer)))
        })
    });
    g.bench_function("mcp_tools_call_request_and_answer", |b| {
        b.iter(
            || match mcp::request("POST", black_box(call), false, true, true) {
                mcp::Step::CallTool { id, .. } => black_box(mcp::tool_result(&id, &result)),
                _ => unreachable!(),
            },
        )
    });
    g.finish();
}

fn runs(c: &mut Criterion) {
    let case_path = common::workspace_root().join("cases/model/rollback.toml");
    let the_case = case::load(&case_path, None).expect("rollback.toml loads");
    let sandbox = Sandbox::new(None).unwrap();
    let mut g = c.benchmark_group("run");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    for package in ["model-agent", "http-agent"] {
        let path = common::guest(package);
        let bytes = std::fs::read(&path).unwrap();
        let agent = sandbox.load_bytes(&bytes, &path).unwrap();
        let check = run(&sandbox, &agent, &the_case, None).unwrap();
        assert_eq!(check.footer.status.as_str(), "completed");
        eprintln!("{package}: {} events per run", check.events.len());
        g.bench_function(package, |b| {
            b.iter(|| black_box(run(&sandbox, &agent, &the_case, None).unwrap()))
        });
    }
    g.finish();
}

fn sdk_agent(c: &mut Criterion) {
    let path = match std::env::var_os("WORLDLINE_BENCH_SDK_AGENT") {
        Some(p) => std::path::PathBuf::from(p),
        None => common::js_guest("examples/js-openai-agent/agent.ts"),
    };
    let case_path = common::workspace_root().join("cases/model/rollback.toml");
    let the_case = case::load(&case_path, None).expect("rollback.toml loads");
    let sandbox = Sandbox::new(None).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let t = std::time::Instant::now();
    let agent = sandbox.load_bytes(&bytes, &path).unwrap();
    eprintln!("first compile: {:.1} s", t.elapsed().as_secs_f64());
    let check = run(&sandbox, &agent, &the_case, None).unwrap();
    assert_eq!(check.footer.status.as_str(), "completed");
    let clock_reads = check
        .events
        .as_held()
        .iter()
        .filter(|e| e.call == "wasi:clocks/monotonic-clock.now")
        .count();
    eprintln!(
        "openai + MCP agent: {} events per run ({clock_reads} monotonic-clock reads), {} fuel",
        check.events.len(),
        check.footer.fuel
    );
    let mut g = c.benchmark_group("sdk_agent");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    g.bench_function("openai_mcp", |b| {
        b.iter(|| black_box(run(&sandbox, &agent, &the_case, None).unwrap()))
    });
    g.finish();
}

criterion_group!(http, protocol, runs, sdk_agent);
criterion_main!(http);
