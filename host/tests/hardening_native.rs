//! Hardening of the native surfaces (issue 43): a native agent's processes
//! end with its run, whatever they did to escape (`setsid`, closed
//! outputs), and no run waits past its limit on a pipe one of them holds;
//! every server speaking MCP over HTTP checks `Origin` and sessions as the
//! Streamable HTTP transport requires, and authenticates and bounds a
//! request before it waits for a slot; `--output-file` reads only inside
//! the run's working folder; a native agent's exit status gives the exit
//! codes docs/cli.md lists.

use crate::common;

use common::native::{Answer, authority, exchange, mcp_http_server, process_gone, worlds};
use common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TOOL_CALL: &str = "worldline:agent/tools.call";

/// The incident case, graded on nothing.
const UNGRADED: &str = r#"world = "incident@v4"
seed = 7
clock = 2026-03-01T12:05:00Z
task = { alert = "ALERT-7", ticket = "T-100" }
"#;

/// Passed by an agent that changes nothing.
const PASSED_BY_DOING_NOTHING: &str = r#"
[expect]
unchanged = ["deploys", "tickets"]
"#;

/// Failed by an agent that changes nothing.
const FAILED_BY_DOING_NOTHING: &str = r#"
[[expect.state]]
table = "deploys"
key = "D-42"
field = "status"
equals = "rolled_back"
"#;

fn case_with(dir: &Path, name: &str, extra: &str) -> PathBuf {
    write_case(dir, name, &format!("{UNGRADED}{extra}"))
}

/// `run CASE --json --exec [EXTRA...] -- /bin/sh -c SCRIPT`, killed (None)
/// past `limit`.
fn sh_run(
    store: &Path,
    case: &Path,
    extra: &[&str],
    script: &str,
    limit: Duration,
) -> Option<CliOutput> {
    let worlds = worlds();
    let mut args: Vec<&std::ffi::OsStr> = vec![
        os("run"),
        case.as_os_str(),
        os("--json"),
        os("--worlds"),
        worlds.as_os_str(),
        os("--store"),
        store.as_os_str(),
    ];
    args.extend(extra.iter().map(|a| os(a)));
    args.extend([os("--exec"), os("--"), os("/bin/sh"), os("-c"), os(script)]);
    worldline_raw_within(limit, args)
}

/// The pid a daemon wrote to `file`, waiting a little for it.
fn pid_in(file: &Path) -> i32 {
    for _ in 0..200 {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no pid in {}", file.display());
}

/// Kills what a test left running when it fails, so a failure does not
/// leave sleepers behind.
struct Reap(Vec<PathBuf>);

impl Drop for Reap {
    fn drop(&mut self) {
        for file in &self.0 {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                // SAFETY: signalling a sleeper this test's agent started.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// A shell line that starts a daemon (its own session, `sleep 30`) writing
/// its pid to `pidfile`, with `redirect` applied to it.
fn daemon(pidfile: &Path, redirect: &str) -> String {
    format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 30' {redirect} &",
        pidfile.display()
    )
}

#[test]
fn a_daemon_holding_the_agent_s_outputs_neither_outlives_the_time_limit_nor_the_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let pidfile = dir.path().join("daemon.pid");
    let _reap = Reap(vec![pidfile.clone()]);
    let case = case_with(dir.path(), "limited", "[limits]\ntimeout_ms = 1500\n");
    let script = format!("{} sleep 60", daemon(&pidfile, ""));
    let started = Instant::now();
    let out = sh_run(&store, &case, &[], &script, Duration::from_secs(20))
        .expect("the run outlived its 1.5 s limit by far: it waited for the daemon's pipes");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run took {:?} against a 1.5 s limit",
        started.elapsed()
    );
    out.expect_code(3);
    assert_eq!(out.json()["run_status"], "timeout", "{out}");
    let pid = pid_in(&pidfile);
    assert!(process_gone(pid), "the daemon {pid} outlived the run");
}

/// An agent that stops its own process group (`kill -STOP 0`, as a
/// terminal's SIGTTIN does to one reading it in the background) stops the
/// keeper with it: the run ends `timeout` at its limit all the same (it
/// waited for the stopped keeper's report with no end), and a replay of
/// it ends too.
#[test]
fn an_agent_that_stops_its_own_group_ends_at_the_time_limit() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "stopped", "[limits]\ntimeout_ms = 1500\n");
    let started = Instant::now();
    let out = sh_run(
        &store,
        &case,
        &[],
        "kill -STOP 0; sleep 60",
        Duration::from_secs(30),
    )
    .expect("the run outlived its 1.5 s limit by far: it waited for a stopped keeper");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the run took {:?} against a 1.5 s limit",
        started.elapsed()
    );
    out.expect_code(3);
    assert_eq!(out.json()["run_status"], "timeout", "{out}");
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let verify = worldline_raw_within(
        Duration::from_secs(30),
        [os("verify"), os(&run), os("--store"), store.as_os_str()],
    )
    .expect("verify of the run waited for a stopped keeper");
    assert!(verify.stdout.contains("timeout"), "{verify}");
}

#[test]
fn daemons_an_agent_leaves_behind_end_with_its_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (holding, detached) = (
        dir.path().join("holding.pid"),
        dir.path().join("detached.pid"),
    );
    let _reap = Reap(vec![holding.clone(), detached.clone()]);
    let case = case_with(dir.path(), "passes", PASSED_BY_DOING_NOTHING);
    // One daemon keeps the agent's stdout and stderr; the other closed
    // them. The agent waits until both are up, then exits 0.
    let script = format!(
        "{} {} while [ ! -s {} ] || [ ! -s {} ]; do sleep 0.05; done; echo '{{\"done\": true}}'",
        daemon(&holding, ""),
        daemon(&detached, "</dev/null >/dev/null 2>&1"),
        holding.display(),
        detached.display()
    );
    let started = Instant::now();
    let out = sh_run(&store, &case, &[], &script, Duration::from_secs(25))
        .expect("the run waited for the daemon holding its stdout");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the run took {:?}",
        started.elapsed()
    );
    out.expect_code(0);
    assert_eq!(out.json()["run_status"], "completed", "{out}");
    assert_eq!(out.output()["done"], true, "{out}");
    for file in [&holding, &detached] {
        let pid = pid_in(file);
        assert!(
            process_gone(pid),
            "the daemon {pid} ({}) outlived the run",
            file.display()
        );
    }
}

/// An MCP request (`Content-Type` and extra header lines given) to `url`.
fn mcp_post(url: &str, content_type: &str, extra: &str, body: &str) -> Answer {
    let addr = authority(url);
    let path = &url[url.find(addr).unwrap() + addr.len()..];
    let mut head = format!("POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: {content_type}");
    head.push_str("\r\naccept: application/json, text/event-stream");
    if !extra.is_empty() {
        head.push_str("\r\n");
        head.push_str(extra);
    }
    exchange(addr, &head, body, Duration::from_secs(10))
}

const CLOSE_TICKET: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"close_ticket","arguments":{"id":"T-100"}}}"#;
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const LIST_ALERTS: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"ALERT-7"}}}"#;

#[test]
fn mcp_over_http_refuses_other_origins_and_requests_outside_a_session() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "served", "");
    let (server, url) = mcp_http_server(&store, &case);
    // A web page's cross-site POST: text/plain needs no CORS preflight.
    let r = mcp_post(
        &url,
        "text/plain",
        "origin: https://evil.example",
        CLOSE_TICKET,
    );
    assert_eq!(r.status, 403, "{r:?}");
    let r = mcp_post(&url, "application/json", "origin: null", CLOSE_TICKET);
    assert_eq!(r.status, 403, "{r:?}");
    // No session: only initialize opens one.
    let r = mcp_post(&url, "application/json", "", CLOSE_TICKET);
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.body.contains("initialize"), "{r:?}");
    // A body that is not JSON (an `initialize` cut short) is a parse
    // error, not told to open the session it was opening.
    for broken in [&INITIALIZE[..INITIALIZE.len() - 1], "not json"] {
        let r = mcp_post(&url, "application/json", "", broken);
        assert_eq!(r.status, 400, "{r:?}");
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["error"]["code"], -32700, "{r:?}");
        assert!(!r.body.contains("Mcp-Session-Id"), "{r:?}");
    }
    let r = mcp_post(
        &url,
        "application/json",
        "mcp-session-id: made-up",
        CLOSE_TICKET,
    );
    assert_eq!(r.status, 404, "{r:?}");
    let r = mcp_post(&url, "text/plain", "", INITIALIZE);
    assert_eq!(r.status, 415, "{r:?}");
    // A client of this machine (an inspector's page included) is served.
    let r = mcp_post(
        &url,
        "application/json",
        "origin: http://localhost:6274",
        INITIALIZE,
    );
    assert_eq!(r.status, 200, "{r:?}");
    let session = r
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let in_session = format!("mcp-session-id: {session}");
    let r = mcp_post(&url, "application/json", &in_session, LIST_ALERTS);
    assert_eq!(r.status, 200, "{r:?}");
    // A second client, with or without initialize, is not.
    assert_eq!(
        mcp_post(&url, "application/json", "", INITIALIZE).status,
        409
    );
    assert_eq!(
        mcp_post(&url, "application/json", "", CLOSE_TICKET).status,
        400
    );
    let addr = authority(&url);
    let end = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\n{in_session}");
    assert_eq!(
        exchange(addr, &end, "", Duration::from_secs(10)).status,
        200
    );
    let server = server.wait_with_output().expect("worldline mcp ended");
    let summary: Value = serde_json::from_slice(&server.stdout).expect("one JSON report");
    let b = read_bundle(Path::new(summary["bundle"].as_str().unwrap()));
    let calls: Vec<&Value> = b.events.iter().filter(|e| e["call"] == TOOL_CALL).collect();
    assert_eq!(
        calls.len(),
        1,
        "only the session's call is recorded: {calls:?}"
    );
    assert_eq!(calls[0]["request"]["name"], "get_alert");
}

#[test]
fn a_delete_of_a_made_up_session_is_404_and_the_run_goes_on() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "served", "");
    let (mut server, url) = mcp_http_server(&store, &case);
    let addr = authority(&url);
    let forged = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nmcp-session-id: 0123abcd");
    assert_eq!(
        exchange(addr, &forged, "", Duration::from_secs(10)).status,
        404
    );
    let bare = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}");
    assert_eq!(
        exchange(addr, &bare, "", Duration::from_secs(10)).status,
        400
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        server.try_wait().unwrap().is_none(),
        "a made-up session's DELETE ended the run"
    );
    // The real client still gets its session.
    let r = mcp_post(&url, "application/json", "", INITIALIZE);
    assert_eq!(r.status, 200, "{r:?}");
    let session = r.header("mcp-session-id").unwrap();
    let end = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nmcp-session-id: {session}");
    assert_eq!(
        exchange(addr, &end, "", Duration::from_secs(10)).status,
        200
    );
    assert_eq!(server.wait().unwrap().code(), Some(0));
}

/// Requests a client pipelined on one connection before it shut its
/// writing side are each answered, so mediated and recorded, every time
/// (the connection ended at the shutdown, and the last of three went
/// unanswered and unrecorded in ~40% of runs: a sequential agent's runs
/// differed by timing, and a replay diverged).
#[test]
fn pipelined_requests_are_each_answered_and_recorded_after_the_client_shuts_its_side() {
    let dir = temp_dir();
    let case = case_with(dir.path(), "served", "");
    for round in 0..6 {
        let store = dir.path().join(format!("store{round}"));
        let (server, url) = mcp_http_server(&store, &case);
        let addr = authority(&url).to_string();
        let r = mcp_post(&url, "application/json", "", INITIALIZE);
        assert_eq!(r.status, 200, "{r:?}");
        let session = r.header("mcp-session-id").unwrap().to_string();
        let one = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\ncontent-length: {}\r\n\r\n{LIST_ALERTS}",
            LIST_ALERTS.len()
        );
        let mut conn = TcpStream::connect(&addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        conn.write_all(one.repeat(3).as_bytes()).unwrap();
        conn.shutdown(std::net::Shutdown::Write).unwrap();
        let mut answers = Vec::new();
        let _ = conn.read_to_end(&mut answers);
        let answered = String::from_utf8_lossy(&answers)
            .matches("HTTP/1.1 200")
            .count();
        assert_eq!(
            answered,
            3,
            "round {round}: {}",
            String::from_utf8_lossy(&answers)
        );
        let end = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nmcp-session-id: {session}");
        assert_eq!(
            exchange(&addr, &end, "", Duration::from_secs(10)).status,
            200
        );
        let server = server.wait_with_output().expect("worldline mcp ended");
        let summary: Value = serde_json::from_slice(&server.stdout).expect("one JSON report");
        let b = read_bundle(Path::new(summary["bundle"].as_str().unwrap()));
        let calls = b.events.iter().filter(|e| e["call"] == TOOL_CALL).count();
        assert_eq!(calls, 3, "round {round}: the calls recorded");
    }
}

/// Open a connection to `addr` and send `head` with a body announced as
/// 1000 bytes but only 10 of them.
fn never_finished(addr: &str, head: &str) -> TcpStream {
    let mut conn = TcpStream::connect(addr).unwrap();
    write!(conn, "{head}\r\ncontent-length: 1000\r\n\r\n{{\"jsonrpc\"").unwrap();
    conn
}

#[test]
fn requests_that_never_finish_their_bodies_do_not_block_the_mcp_server() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "served", "");
    let (server, url) = mcp_http_server(&store, &case);
    let addr = authority(&url).to_string();
    let post = |host: &str| {
        format!("POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json")
    };
    // Refused from their headers, before they wait for anything.
    let mut strangers: Vec<TcpStream> = (0..8)
        .map(|_| never_finished(&addr, &post("evil.example")))
        .collect();
    for conn in &mut strangers {
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let answer = common::native::read_answer(conn).expect("a refusal at once");
        assert_eq!(answer.status, 403, "{answer:?}");
    }
    // Eight of this machine's requests that never end their bodies, and
    // one connection that never ends its headers.
    let mut stalled: Vec<TcpStream> = (0..8)
        .map(|_| never_finished(&addr, &post(&addr)))
        .collect();
    let mut headless = TcpStream::connect(&addr).unwrap();
    write!(headless, "POST /mcp HTTP/1.1\r\nhost: {addr}\r\n").unwrap();
    let started = Instant::now();
    let r = mcp_post(&url, "application/json", "", INITIALIZE);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Each is cut off at its limit (10 s for the body, and for the headers).
    for conn in &mut stalled {
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let answer = common::native::read_answer(conn).expect("an answer once the body is late");
        assert_eq!(answer.status, 408, "{answer:?}");
    }
    headless
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut rest = Vec::new();
    let closed = headless.read_to_end(&mut rest);
    assert!(
        closed.is_ok(),
        "the headerless connection was not closed: {closed:?}"
    );
    let session = r.header("mcp-session-id").unwrap();
    let end = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nmcp-session-id: {session}");
    assert_eq!(
        exchange(&addr, &end, "", Duration::from_secs(10)).status,
        200
    );
    server.wait_with_output().unwrap();
}

/// Connections a client left open after their answers (an SDK client
/// made per call and never closed) do not hold up the next: with every
/// one of the 64 slots held by an idle keep-alive connection, a new
/// connection is served at once, the one idle the longest closed for it.
/// It waited 10 s, until the oldest timed out.
#[test]
fn idle_keep_alive_connections_give_their_slots_to_a_new_one() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "served", "");
    let (server, url) = mcp_http_server(&store, &case);
    let addr = authority(&url).to_string();
    // 64 connections, each answered once (a call outside a session, 400)
    // and left open.
    let mut leaked: Vec<TcpStream> = Vec::new();
    for _ in 0..64 {
        let mut conn = TcpStream::connect(&addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            conn,
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{LIST_ALERTS}",
            LIST_ALERTS.len()
        )
        .unwrap();
        let answer = common::native::read_answer(&mut conn).expect("an answer");
        assert_eq!(answer.status, 400, "{answer:?}");
        assert!(
            !answer
                .headers
                .iter()
                .any(|(k, v)| k == "connection" && v == "close"),
            "{answer:?}"
        );
        leaked.push(conn);
    }
    let started = Instant::now();
    let r = mcp_post(&url, "application/json", "", INITIALIZE);
    let waited = started.elapsed();
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        waited < Duration::from_secs(3),
        "waited {waited:?} for a slot"
    );
    // The first connection, idle the longest, was the one closed.
    let mut rest = Vec::new();
    leaked[0]
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert!(
        matches!(leaked[0].read_to_end(&mut rest), Ok(0)),
        "{rest:?}"
    );
    let session = r.header("mcp-session-id").unwrap();
    let end = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nmcp-session-id: {session}");
    assert_eq!(
        exchange(&addr, &end, "", Duration::from_secs(10)).status,
        200
    );
    drop(leaked);
    server.wait_with_output().unwrap();
}

/// A body declared larger than the server reads (16 MiB) is refused at
/// once from its `Content-Length`: it waited the 10 s given for a body,
/// then answered 408.
#[test]
fn a_body_declared_past_the_bound_is_refused_at_once() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "served", "");
    let (server, url) = mcp_http_server(&store, &case);
    let addr = authority(&url).to_string();
    let mut conn = TcpStream::connect(&addr).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{{",
        (16 << 20) + 1
    );
    conn.write_all(head.as_bytes()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    let answer = common::native::read_answer(&mut conn).expect("a refusal at once");
    assert_eq!(answer.status, 413, "{answer:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(conn);
    let r = mcp_post(&url, "application/json", "", INITIALIZE);
    let session = r.header("mcp-session-id").unwrap();
    let end = format!("DELETE /mcp HTTP/1.1\r\nhost: {addr}\r\nmcp-session-id: {session}");
    assert_eq!(
        exchange(&addr, &end, "", Duration::from_secs(10)).status,
        200
    );
    server.wait_with_output().unwrap();
}

/// A native agent (Python, standard library only) that attacks its own
/// run's server before it works: eight connections without the token
/// that never finish their bodies, then MCP requests from another origin
/// and outside a session, then a proper session. It prints what it got.
const SELF_ATTACK: &str = r#"
import json, os, socket, urllib.error, urllib.request

url = os.environ["WORLDLINE_MCP_URL"]
hostport = url.split("/")[2]
host, port = hostport.split(":")
stalled = []
for _ in range(8):
    s = socket.create_connection((host, int(port)))
    s.sendall(("POST /mcp HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{" % hostport).encode())
    stalled.append(s)

def post(body, headers):
    req = urllib.request.Request(url, data=body.encode(), method="POST",
        headers=dict({"content-type": "application/json", "accept": "application/json, text/event-stream"}, **headers))
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers.get("mcp-session-id")
    except urllib.error.HTTPError as e:
        return e.code, None
    except Exception as e:
        return str(e), None

call = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"ALERT-7"}}}'
init = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'
out = {
    "other_origin": post(call, {"origin": "https://evil.example"})[0],
    "no_session": post(call, {})[0],
    "made_up_session": post(call, {"mcp-session-id": "made-up"})[0],
}
status, session = post(init, {})
out["initialize"] = status
out["in_session"] = post(call, {"mcp-session-id": session or ""})[0]
print(json.dumps(out))
"#;

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn the_exec_server_checks_origin_and_sessions_and_is_not_blocked_by_stalled_strangers() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "attacked", "");
    let agent = dir.path().join("attack.py");
    std::fs::write(&agent, SELF_ATTACK).unwrap();
    let worlds = worlds();
    let python = native_python();
    let out = worldline_raw_within(
        Duration::from_secs(60),
        [
            os("run"),
            case.as_os_str(),
            os("--json"),
            os("--worlds"),
            worlds.as_os_str(),
            os("--store"),
            store.as_os_str(),
            os("--exec"),
            os("--"),
            python.as_os_str(),
            agent.as_os_str(),
        ],
    )
    .expect("the run hung");
    out.expect_code(0);
    let got = out.output();
    assert_eq!(got["other_origin"], 403, "{got}");
    assert_eq!(got["no_session"], 400, "{got}");
    assert_eq!(got["made_up_session"], 404, "{got}");
    assert_eq!(got["initialize"], 200, "{got}");
    assert_eq!(got["in_session"], 200, "{got}");
    let calls = calls_of(&out.bundle(), TOOL_CALL);
    assert_eq!(
        calls.len(),
        1,
        "only the session's call is recorded: {calls:?}"
    );
}

#[test]
fn an_output_file_outside_the_working_folder_is_refused() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "output", "");
    for outside in ["/etc/hostname", "../../../etc/hostname", "..", ""] {
        let out = sh_run(
            &store,
            &case,
            &["--output-file", outside],
            "echo '{}' > out.json",
            Duration::from_secs(30),
        )
        .unwrap();
        out.expect_code(2);
        assert!(out.stderr.contains("--output-file"), "{out}");
        assert!(out.stderr.contains(outside), "{out}");
        assert!(
            !store.join("runs").exists()
                || files_with_suffix(&store.join("runs"), ".jsonl").is_empty()
        );
    }
    // A symlink the process made is followed to where it leads: refused.
    let out = sh_run(
        &store,
        &case,
        &["--output-file", "out.json"],
        "ln -s /etc/hostname out.json",
        Duration::from_secs(30),
    )
    .unwrap();
    out.expect_code(1);
    let doc = out.json();
    assert_eq!(doc["run_status"], "errored", "{out}");
    assert_eq!(doc["output"], Value::Null, "{out}");
    let error = doc["error"].as_str().unwrap();
    assert!(
        error.contains("out.json") && error.contains("outside the run's working folder"),
        "{out}"
    );
    // Inside, through a subfolder, it is read.
    let out = sh_run(
        &store,
        &case,
        &["--output-file", "./sub/out.json"],
        "mkdir sub && echo '{\"ok\": 1}' > sub/out.json",
        Duration::from_secs(30),
    )
    .unwrap();
    out.expect_code(0);
    assert_eq!(out.output()["ok"], 1, "{out}");
}

#[test]
fn a_native_agent_s_exit_gives_the_exit_codes_docs_cli_lists() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let passes = case_with(dir.path(), "passes", PASSED_BY_DOING_NOTHING);
    let fails = case_with(dir.path(), "fails", FAILED_BY_DOING_NOTHING);
    let limited = case_with(dir.path(), "limited", "[limits]\ntimeout_ms = 1000\n");
    let within = Duration::from_secs(30);
    // (case, script, exit code, run_status, what the error says)
    let outcomes: [(&Path, &str, i32, &str, &str); 5] = [
        (&passes, "exit 0", 0, "completed", ""),
        (&fails, "exit 0", 1, "completed", ""),
        (
            &passes,
            "echo bye >&2; exit 7",
            3,
            "exited",
            "status 7; its stderr ends: bye",
        ),
        (&passes, "kill -9 $$", 3, "trapped", "signal 9"),
        (&limited, "sleep 30", 3, "timeout", "timeout_ms"),
    ];
    for (case, script, code, status, says) in outcomes {
        let out = sh_run(&store, case, &[], script, within).unwrap();
        assert_eq!(out.code, code, "{script}: {out}");
        assert_eq!(out.json()["run_status"], status, "{script}: {out}");
        if !says.is_empty() {
            let error = out.json()["error"].as_str().unwrap_or_default();
            assert!(error.contains(says), "{script}: {out}");
        }
    }
}

/// `worldline` has no huge page from its very start (decision 0405):
/// the flag is set from `.preinit_array`, before mimalloc's start touches
/// its arena (set in `main`, it came after two huge pages, 4 MiB, were
/// faulted in). A machine whose kernel never gives huge pages cannot tell.
#[test]
fn worldline_s_memory_has_no_huge_page_from_its_start() {
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if mode.is_empty() || mode.contains("[never]") {
        eprintln!("this kernel gives no transparent huge pages ({mode:?}): nothing to tell");
        return;
    }
    let dir = temp_dir();
    let case = case_with(dir.path(), "pages", "");
    let (mut server, _url) = mcp_http_server(&dir.path().join("store"), &case);
    let rollup = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", server.id()));
    let _ = server.kill();
    let _ = server.wait();
    let rollup = rollup.expect("the server's memory summary");
    let huge = rollup
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .expect("an AnonHugePages line");
    assert_eq!(
        huge.trim(),
        "0 kB",
        "worldline's memory has huge pages:\n{rollup}"
    );
}

/// `worldline` turns transparent huge pages off for itself (decision
/// 0405), which children inherit; a native agent gets the system's
/// setting back, so its memory behaves as it does outside a run.
#[test]
fn a_native_agent_gets_the_system_s_huge_pages_back() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let seen = dir.path().join("status");
    let case = case_with(dir.path(), "pages", "");
    let script = format!("grep THP_enabled /proc/self/status > {}", seen.display());
    let out = sh_run(&store, &case, &[], &script, Duration::from_secs(60))
        .expect("the run ended within its limit");
    out.expect_code(0);
    let line = std::fs::read_to_string(&seen).expect("the agent wrote its status line");
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>(),
        ["THP_enabled:", "1"],
        "the agent's memory may use huge pages:\n{line}\n{out}"
    );
}

/// SIGTERM (or Ctrl-C's SIGINT) during a suite of native runs ends the run
/// under way (`trapped`, its bundle whole), writes the report of what ran
/// (the rest `skipped`), then ends the command as the signal ends any: a
/// suite went on, and recorded each case after it as a `trapped` failure
/// in about 10 ms, and exited 1; then it ended with no report.
#[test]
fn a_signal_ends_a_suite_of_native_runs_and_records_none_after_it() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for i in 0..5 {
        case_with(&cases, &format!("c{i}"), PASSED_BY_DOING_NOTHING);
    }
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let _ = std::fs::remove_dir_all(&store);
        let began_file = dir.path().join("began");
        let _ = std::fs::remove_file(&began_file);
        let script = format!("touch {}; sleep 1; echo '{{}}'", began_file.display());
        let mut child = sh_agent(
            &[os("test"), cases.as_os_str(), os("--jobs"), os("1")],
            &store,
            &script,
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
        // Signalled once its first agent has started.
        let bundles = || files_with_suffix(&store.join("runs"), ".jsonl").len();
        let status = signal_when(&mut child, signal, || began_file.exists(), name);
        let mut out = String::new();
        let _ = child.stdout.take().unwrap().read_to_string(&mut out);
        let _ = child.stderr.take().unwrap().read_to_string(&mut out);
        assert_eq!(status.signal(), Some(signal), "{name}: {status:?} {out}");
        let recorded = bundles();
        assert!(
            recorded <= 2,
            "{name}: {recorded} runs recorded of 5: {out}"
        );
        // The report of what ran: the run the signal stopped, the rest
        // skipped. The stopped run is the signal's, not the agent's
        // failure (it was `FAIL ... trapped`, `0 passed, 1 failed`).
        assert!(
            out.contains(&format!("interrupted by {name}")),
            "{name}: {out}"
        );
        assert!(
            out.contains(&format!(
                "0 passed, 0 failed, 1 interrupted, {} skipped",
                5 - recorded
            )) && out.contains(&format!(
                "STOP  c0  interrupted — {name} stopped its runs after 0 of 1"
            )),
            "{name}: {out}"
        );
        assert!(
            out.contains(&format!("{} skipped", 5 - recorded))
                && out.contains(&format!("({name}: not run)")),
            "{name}: {out}"
        );
        // The run the signal stopped is no drift (a replay follows it to
        // where it ended, as a killed run's), and `resume` takes it up
        // there: it was drift for good, and "ended `trapped` by itself".
        let verify = worldline(&store, ["verify", "--json"]);
        verify.expect_code(0);
        assert_eq!(verify.json()["diverged"], 0, "{name}: {verify}");
        let stopped = files_with_suffix(&store.join("runs"), ".jsonl");
        let id = stopped[0]
            .file_stem()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let resumed = worldline(&store, ["resume", id.as_str(), "--json"]);
        resumed.expect_code(0);
        assert_eq!(
            resumed.json()["run_status"],
            "completed",
            "{name}: {resumed}"
        );
    }
}

/// Ctrl-C during a native agent's `test --repeat`: the run it stopped is
/// the signal's, left out of the case's runs, and the case, each run
/// before it passing, is `interrupted` (as a component agent's is),
/// neither passed nor failed: it was `trapped`, `failed: 1`, with pass^k
/// counting the stopped run as a failure.
#[test]
fn a_signal_during_a_native_case_s_repeats_counts_the_stopped_run_for_no_one() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    case_with(&cases, "again", PASSED_BY_DOING_NOTHING);
    let began = dir.path().join("began");
    std::fs::create_dir_all(&began).unwrap();
    let args = [
        os("test"),
        cases.as_os_str(),
        os("--repeat"),
        os("5"),
        os("--jobs"),
        os("1"),
        os("--json"),
    ];
    let script = format!("touch {}/$$; sleep 1; echo '{{}}'", began.display());
    let mut child = sh_agent(&args, &store, &script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Signalled once its second run has begun (the first passed).
    let runs_begun = || std::fs::read_dir(&began).unwrap().count();
    let status = signal_when(&mut child, libc::SIGINT, || runs_begun() >= 2, "the suite");
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let _ = child.stdout.take().unwrap().read_to_string(&mut stdout);
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let shown = format!("{status:?}\n{stdout}\n{stderr}");
    assert_eq!(status.signal(), Some(libc::SIGINT), "{shown}");
    let doc: Value = serde_json::from_str(&stdout).expect("the report");
    let case = &doc["cases"][0];
    let made = runs_begun() as u64 - 1;
    assert_eq!(
        (
            &case["status"],
            &case["runs"],
            &case["passes"],
            &doc["failed"],
            &doc["interrupted_cases"]
        ),
        (
            &"interrupted".into(),
            &made.into(),
            &made.into(),
            &0.into(),
            &1.into()
        ),
        "{shown}"
    );
    let reason = case["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("SIGINT stopped its runs after {made} of 5")),
        "{shown}"
    );
    // The stopped run is kept in the store, whole.
    let bundles = files_with_suffix(&store.join("runs"), ".jsonl");
    assert_eq!(bundles.len() as u64, made + 1, "{shown}");
}

/// Ctrl-C during a native agent's `fuzz` campaign: the run it stopped is
/// not counted (it was a failure, `trapped`, in the campaign's rates and
/// `failed`, "1 failed run not grouped"); the runs before it are.
#[test]
fn a_signal_during_a_native_campaign_counts_the_stopped_run_for_no_one() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let args = ["--runs", "20", "--jobs", "1", "--json"];
    let (mut campaign, began) = native_campaign(dir.path(), LATENCY, &args, 1);
    let mut child = campaign
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let runs_begun = || std::fs::read_dir(&began).unwrap().count();
    let status = signal_when(
        &mut child,
        libc::SIGINT,
        || runs_begun() >= 2,
        "the campaign",
    );
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let _ = child.stdout.take().unwrap().read_to_string(&mut stdout);
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    let shown = format!("{status:?}\n{stdout}\n{stderr}");
    assert_eq!(status.signal(), Some(libc::SIGINT), "{shown}");
    let report: Value = serde_json::from_str(&stdout).expect("a --json report");
    assert_eq!(report["interrupted"], "SIGINT", "{shown}");
    let made = runs_begun() as u64 - 1;
    let summary = &report["summary"];
    assert_eq!(
        (&summary["runs"], &summary["failed"]),
        (&made.into(), &0.into()),
        "{shown}"
    );
}

/// `test --jobs N` above the cores runs N native agents at once: each run's
/// thread waits on its process without a CPU slot (two ran at a time on
/// two cores, though each was waiting, as on a model endpoint).
#[test]
fn native_runs_wait_without_a_cpu_slot_so_jobs_may_exceed_the_cores() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let n = 3 * cores;
    for i in 0..n {
        case_with(&cases, &format!("c{i}"), PASSED_BY_DOING_NOTHING);
    }
    let worlds = worlds();
    let jobs = n.to_string();
    let started = Instant::now();
    let out = worldline(
        &store,
        [
            os("test"),
            cases.as_os_str(),
            os("--jobs"),
            os(&jobs),
            os("--worlds"),
            worlds.as_os_str(),
            os("--exec"),
            os("--"),
            os("/bin/sh"),
            os("-c"),
            os("sleep 2; echo '{}'"),
        ],
    );
    let took = started.elapsed();
    out.expect_code(0);
    // Three rounds of two seconds before; one round now.
    assert!(took < Duration::from_millis(4500), "{took:?}\n{out}");
}

/// SIGINT to `run --exec` stops the run and reports it (its id, status
/// `trapped`) before the signal ends the command: it ended with nothing
/// said, though the run was recorded.
#[test]
fn a_signal_to_a_native_run_reports_it_then_ends_the_command() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "c", PASSED_BY_DOING_NOTHING);
    let began_file = dir.path().join("began");
    let script = format!("touch {}; sleep 30; echo '{{}}'", began_file.display());
    let mut child = sh_agent(
        &[os("run"), case.as_os_str(), os("--json")],
        &store,
        &script,
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let status = signal_when(&mut child, libc::SIGINT, || began_file.exists(), "SIGINT");
    let mut out = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut out);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?} {out}");
    let report: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(report["run_status"], "trapped", "{out}");
    let id = report["run_id"].as_str().unwrap();
    assert!(common::bundle_in(&store, id).exists(), "{out}");
    // `repro` refuses it: the signal's outcome is no agent's (it reported
    // "reproduced 0/2", read as a flaky agent).
    let repro = worldline(&store, ["repro", id, "--times", "2"]);
    repro.expect_code(2);
    assert!(
        repro
            .stderr
            .contains("the run was stopped before it ended (`trapped`: a signal"),
        "{repro}"
    );
    // So do `resume` and `fork` of it, which run its command again (they
    // ended with nothing said, though each run was recorded).
    for command in [vec!["resume", id], vec!["fork", id, "--at", "0"]] {
        std::fs::remove_file(&began_file).unwrap();
        let mut child = cli()
            .args(&command)
            .args([os("--json"), os("--store"), store.as_os_str()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = signal_when(&mut child, libc::SIGINT, || began_file.exists(), "SIGINT");
        let mut said = String::new();
        let _ = child.stdout.take().unwrap().read_to_string(&mut said);
        assert_eq!(
            status.signal(),
            Some(libc::SIGINT),
            "{command:?}: {status:?} {said}"
        );
        let report: serde_json::Value =
            serde_json::from_str(&said).unwrap_or_else(|e| panic!("{command:?}: {e}: {said:?}"));
        assert_eq!(report["run_status"], "trapped", "{command:?}: {said}");
    }
}

/// `fork --samples --agent` of a native run is refused before the agent
/// named is read: it was loaded (compiled) first, so a file that is no
/// component was reported instead of the run's refusal, and a real agent
/// was compiled for nothing.
#[test]
fn fork_samples_of_a_native_run_is_refused_before_its_agent_is_loaded() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "c", PASSED_BY_DOING_NOTHING);
    let run =
        sh_run(&store, &case, &[], "echo '{}'", Duration::from_secs(120)).expect("the run ended");
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let not_an_agent = dir.path().join("agent.wasm");
    std::fs::write(&not_an_agent, "no component").unwrap();
    let fork = worldline(
        &store,
        [
            "fork",
            &id,
            "--at",
            "0",
            "--samples",
            "2",
            "--agent",
            not_an_agent.to_str().unwrap(),
        ],
    );
    fork.expect_code(2);
    assert!(
        fork.stderr
            .contains("is a native agent's run: --samples branches a WebAssembly agent's run"),
        "{fork}"
    );
}

/// `case from-run` of a run whose case names its agent beside it (`exec =
/// ["/bin/sh", "agent.sh"]`), written to another folder: the regression
/// case starts the agent and fails as the run did (the argument was copied
/// as written, and the case could not start it); a run of `--exec -- CMD`
/// says the command is not carried.
#[test]
fn a_case_from_a_native_run_starts_its_agent_from_another_folder() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    std::fs::write(dir.path().join("agent.sh"), "echo '{}'\n").unwrap();
    let case = write_case(
        dir.path(),
        "c",
        &format!("exec = [\"/bin/sh\", \"agent.sh\"]\n{UNGRADED}{FAILED_BY_DOING_NOTHING}"),
    );
    let worlds = worlds();
    let ran = worldline(
        &store,
        [
            os("run"),
            case.as_os_str(),
            os("--worlds"),
            worlds.as_os_str(),
            os("--json"),
        ],
    );
    ran.expect_code(1);
    let id = ran.json()["run_id"].as_str().unwrap().to_string();
    std::fs::create_dir_all(dir.path().join("regress/deep")).unwrap();
    let written = dir.path().join("regress/deep/ex.toml");
    worldline(
        &store,
        [
            os("case"),
            os("from-run"),
            os(&id),
            os("-o"),
            written.as_os_str(),
        ],
    )
    .expect_code(0);
    let again = worldline(
        &store,
        [
            os("run"),
            written.as_os_str(),
            os("--worlds"),
            worlds.as_os_str(),
            os("--json"),
        ],
    );
    again.expect_code(1);
    assert_eq!(again.json()["run_status"], "completed", "{again}");
    assert_eq!(
        again.json()["grade"]["verdict"],
        ran.json()["grade"]["verdict"],
        "{again}"
    );
    // `--exec -- CMD` is the command line's: named as not carried.
    let plain = write_case(
        dir.path(),
        "plain",
        &format!("{UNGRADED}{FAILED_BY_DOING_NOTHING}"),
    );
    let ran = worldline_raw([
        os("run"),
        plain.as_os_str(),
        os("--worlds"),
        worlds.as_os_str(),
        os("--store"),
        store.as_os_str(),
        os("--json"),
        os("--exec"),
        os("--"),
        os("/bin/true"),
    ]);
    let id = ran.json()["run_id"].as_str().unwrap().to_string();
    let out = worldline(
        &store,
        [
            os("case"),
            os("from-run"),
            os(&id),
            os("-o"),
            dir.path().join("regress/p.toml").as_os_str(),
        ],
    );
    out.expect_code(0);
    assert!(
        out.stdout
            .contains("the agent, `/bin/true` (given by `--exec` or the project file's `exec`"),
        "{out}"
    );
}

/// A command `--exec` cannot start is exit 2 naming it, and nothing is
/// recorded: each such run (one per case of a suite) was written as a
/// `completed` run, graded, that `verify` then counted unreadable.
#[test]
fn a_command_that_cannot_start_records_no_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "c", PASSED_BY_DOING_NOTHING);
    let worlds = worlds();
    let not_runnable = dir.path().join("plain.txt");
    std::fs::write(&not_runnable, "echo {}").unwrap();
    for (command, says) in [
        ("/nonexistent/agent", "No such file"),
        ("no-such-command-anywhere", "no such command on PATH"),
        (not_runnable.to_str().unwrap(), "not a file one may run"),
    ] {
        for verb in ["run", "test"] {
            let out = worldline_raw_within(
                Duration::from_secs(60),
                [
                    os(verb),
                    case.as_os_str(),
                    os("--worlds"),
                    worlds.as_os_str(),
                    os("--store"),
                    store.as_os_str(),
                    os("--exec"),
                    os("--"),
                    os(command),
                ],
            )
            .expect("ended");
            out.expect_code(2);
            assert!(out.stderr.contains(says), "{verb} {command}: {out}");
            let recorded = files_with_suffix(&store.join("runs"), ".jsonl").len();
            assert_eq!(recorded, 0, "{verb} {command}: {out}");
        }
    }
}

/// worldline killed outright (SIGKILL: no handler runs) with a native run
/// under way: the agent, and a daemon it started in a session of its own,
/// end too. They lived on before, under a keeper nobody was left to end.
#[test]
fn a_native_agent_s_processes_end_when_worldline_is_killed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (agent, detached) = (
        dir.path().join("agent.pid"),
        dir.path().join("detached.pid"),
    );
    let _reap = Reap(vec![agent.clone(), detached.clone()]);
    let case = case_with(dir.path(), "long", "[limits]\ntimeout_ms = 60000\n");
    let script = format!(
        "echo $$ > {}; {} sleep 30",
        agent.display(),
        daemon(&detached, "</dev/null >/dev/null 2>&1")
    );
    let mut child = sh_agent(&[os("run"), case.as_os_str()], &store, &script)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pids = [pid_in(&agent), pid_in(&detached)];
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    for pid in pids {
        while !process_gone(pid) {
            assert!(
                killed.elapsed() < Duration::from_secs(10),
                "process {pid} of the agent outlived worldline by {:?}",
                killed.elapsed()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The pid `file` holds once the agent wrote it (a started worldline may
/// take seconds to get there on a loaded machine).
fn pid_within(file: &Path, limit: Duration) -> i32 {
    let began = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return pid;
        }
        assert!(began.elapsed() < limit, "no pid in {}", file.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The working folder of a native run killed outright (SIGKILL) is removed
/// by the next native run using the same temporary folder, and a live
/// run's folder never is. It stayed behind for good: a killed worldline
/// cannot remove it.
#[test]
fn a_killed_run_s_folder_is_swept_by_the_next_run_and_a_live_one_s_kept() {
    let dir = temp_dir();
    let (store, tmp) = (dir.path().join("store"), dir.path().join("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    let case = case_with(dir.path(), "long", "[limits]\ntimeout_ms = 600000\n");
    let start = |script: String| {
        sh_agent(&[os("run"), case.as_os_str()], &store, &script)
            .env("TMPDIR", &tmp)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let sleeper = |pidfile: &Path| format!("echo $$ > {}; exec sleep 300", pidfile.display());
    let folder_of = |pid: i32| std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    let folders = || -> Vec<PathBuf> {
        let mut all: Vec<PathBuf> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("worldline-")
            })
            .collect();
        all.sort();
        all
    };
    let (killed_pid, live_pid) = (dir.path().join("killed.pid"), dir.path().join("live.pid"));
    let _reap = Reap(vec![killed_pid.clone(), live_pid.clone()]);
    let mut killed = start(sleeper(&killed_pid));
    let left = folder_of(pid_within(&killed_pid, Duration::from_secs(60)));
    killed.kill().unwrap();
    killed.wait().unwrap();
    // Every process of the killed run gone (its keeper and agent worked
    // in the folder), and the folder still there.
    let gone = Instant::now();
    while std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .any(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd == left))
    {
        assert!(
            gone.elapsed() < Duration::from_secs(30),
            "the killed run's processes live on"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        folders(),
        std::slice::from_ref(&left),
        "the killed run left its folder"
    );
    // The next run sweeps it as it starts.
    let mut live = start(sleeper(&live_pid));
    let kept = folder_of(pid_within(&live_pid, Duration::from_secs(60)));
    assert_eq!(folders(), std::slice::from_ref(&kept), "{left:?} is swept");
    // A run beside the live one leaves the live one's folder alone.
    start("exit 0".to_string()).wait().unwrap();
    assert_eq!(
        folders(),
        std::slice::from_ref(&kept),
        "the live run's folder is kept"
    );
    assert!(!process_gone(live.id() as i32));
    live.kill().unwrap();
    live.wait().unwrap();
}

/// A fuzz campaign of a native agent killed outright, its runs shared
/// with worker processes: the workers end, and the agents under them.
/// A worker read its closed pipe only between chunks, so it and its
/// agent lived on until the run's time limit.
#[test]
fn a_killed_fuzz_campaign_leaves_no_worker_nor_agent() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let pids = dir.path().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    let case = case_with(
        dir.path(),
        "slow",
        "[limits]\ntimeout_ms = 120000\n\n[[fuzz.tools]]\ntool = \"list_deploys\"\nlatency_ms = { p = 1.0, ms = [1, 5] }\n",
    );
    let args = [
        os("fuzz"),
        case.as_os_str(),
        os("--runs"),
        os("4"),
        os("--jobs"),
        os("2"),
    ];
    let script = format!("echo $$ > {}/$$; exec sleep 600", pids.display());
    let mut child = sh_agent(&args, &store, &script)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let began = Instant::now();
    while std::fs::read_dir(&pids).unwrap().count() < 2 {
        assert!(began.elapsed() < Duration::from_secs(60), "no agents began");
        std::thread::sleep(Duration::from_millis(20));
    }
    let agents: Vec<i32> = std::fs::read_dir(&pids)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().parse().unwrap())
        .collect();
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    let ours = |pid: &i32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(store.to_str().unwrap()))
            && !process_gone(*pid)
    };
    loop {
        let workers: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(ours)
            .collect();
        let alive: Vec<&i32> = agents.iter().filter(|p| !process_gone(**p)).collect();
        if workers.is_empty() && alive.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "workers {workers:?} and agents {alive:?} outlived the campaign"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An answer on stdout's last line too long to read (past
/// `limits.stdout_bytes`) is an error saying so: an earlier JSON line (a
/// progress log) was taken for the output, unsaid, and graded.
#[test]
fn an_answer_too_long_to_read_is_no_earlier_line() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case_with(dir.path(), "long", "\n[limits]\nstdout_bytes = 100\n");
    let script = "printf '{\"progress\": 1}\\n{\"answer\": \"%s\"}\\n' \"$(head -c 300 /dev/zero | tr '\\0' x)\"";
    let out = sh_run(&store, &case, &[], script, Duration::from_secs(60)).expect("ended");
    assert_eq!(out.json()["run_status"], "errored", "{out}");
    assert!(
        out.stdout
            .contains("longer than limits.stdout_bytes (100 bytes)"),
        "{out}"
    );
    assert_ne!(out.json()["output"], "{\"progress\": 1}", "{out}");
}

/// A task over 128 KiB, which Linux does not let one variable hold, is in
/// the file `WORLDLINE_TASK_FILE` names (and on stdin): the process did
/// not start ("Argument list too long", naming the program), and the
/// bundle it had begun was written `completed` with no event.
#[test]
fn a_task_too_long_for_a_variable_is_in_a_file() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let big = "y".repeat(200_000);
    let case = write_case(
        dir.path(),
        "big",
        &UNGRADED.replace(
            "task = { alert = \"ALERT-7\", ticket = \"T-100\" }",
            &format!("task = {{ notes = \"{big}\" }}"),
        ),
    );
    let script = "n=$(wc -c < \"$WORLDLINE_TASK_FILE\"); m=$(wc -c); echo \"{\\\"file\\\": $n, \\\"stdin\\\": $m, \\\"var\\\": ${#WORLDLINE_TASK}}\"";
    let out = sh_run(&store, &case, &[], script, Duration::from_secs(60)).expect("ended");
    out.expect_code(0);
    let said: serde_json::Value =
        serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    assert!(said["file"].as_u64().unwrap() > 200_000, "{out}");
    assert_eq!(said["file"], said["stdin"], "{out}");
    assert_eq!(said["var"], 0, "{out}");
}

/// SIGTERM to a `fuzz --jobs 2 --keep-all` campaign of a native agent
/// (a CI runner's, `timeout(1)`'s): every run under way, in the
/// campaign's own lane and in its worker's, is stopped and recorded whole
/// (`trapped`); the worker's was cut without a footer (it was sent SIGKILL
/// when the campaign ended).
#[test]
fn a_signal_to_a_campaign_records_every_run_under_way_whole() {
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let args = ["--runs", "8", "--jobs", "2", "--keep-all"];
    let (mut campaign, began) = native_campaign(dir.path(), LATENCY, &args, 5);
    let mut child = campaign
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lanes = || std::fs::read_dir(&began).unwrap().count() >= 2;
    let status = signal_when(&mut child, libc::SIGTERM, lanes, "the campaign");
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    // The worker ends a moment after the campaign: its run is whole by then.
    std::thread::sleep(Duration::from_secs(2));
    let bundles = files_with_suffix(&store.join("runs"), ".jsonl");
    assert!(bundles.len() >= 2, "{bundles:?}");
    for b in bundles {
        let text = std::fs::read_to_string(&b).unwrap();
        let last = text.trim_end().lines().last().unwrap_or_default();
        assert!(
            last.starts_with("{\"footer\""),
            "{}: no footer",
            b.display()
        );
    }
}

/// A fault profile that slows `get_ticket` now and then.
const LATENCY: &str = "[[tools]]\ntool = \"get_ticket\"\nlatency_ms = { p = 0.5, ms = [1, 2] }\n";

/// `fuzz` (with `args`) of a case a native agent passes by doing nothing,
/// under the fault profile `faults`, in `dir` (its store `dir/store`): the
/// agent marks that it began (a file in the folder returned), sleeps
/// `sleep_s` seconds and answers `{}`.
fn native_campaign(
    dir: &Path,
    faults: &str,
    args: &[&str],
    sleep_s: u32,
) -> (std::process::Command, PathBuf) {
    let case = case_with(dir, "c", PASSED_BY_DOING_NOTHING);
    let profile = dir.join("faults.toml");
    std::fs::write(&profile, faults).unwrap();
    let began = dir.join("began");
    std::fs::create_dir_all(&began).unwrap();
    let mut fuzz = vec![
        os("fuzz"),
        case.as_os_str(),
        os("--faults"),
        profile.as_os_str(),
    ];
    fuzz.extend(args.iter().map(|a| os(a)));
    let script = format!("touch {}/$$; sleep {sleep_s}; echo '{{}}'", began.display());
    (sh_agent(&fuzz, &dir.join("store"), &script), began)
}

/// `worldline ARGS --worlds <the tests' worlds> --store STORE --exec --
/// /bin/sh -c SCRIPT`: a command whose native agent is a shell script.
fn sh_agent(args: &[&std::ffi::OsStr], store: &Path, script: &str) -> std::process::Command {
    let worlds = worlds();
    let mut command = cli();
    command
        .args(args)
        .args([
            os("--worlds"),
            worlds.as_os_str(),
            os("--store"),
            store.as_os_str(),
        ])
        .args(["--exec", "--", "/bin/sh", "-c", script]);
    command
}

/// How a native agent's campaign signalled in [`campaign_signalled`]
/// ended.
struct Signalled {
    /// By which signal, if one.
    signal: Option<libc::c_int>,
    /// Its exit code, if it exited.
    code: Option<i32>,
    /// Its `--json` report, if it printed one.
    report: Option<Value>,
    /// stdout and stderr, for the messages.
    said: String,
    /// How long after the signal.
    took: Duration,
    /// How many runs began, before and after the signal.
    began: usize,
}

/// Whom [`campaign_signalled`] signals.
enum To {
    /// The campaign's process group, as a terminal's Ctrl-C.
    Group,
    /// The campaign alone, as a CI runner or supervisor.
    Campaign,
    /// Its worker alone.
    Worker,
}

/// `fuzz --jobs 2 --keep-all --json` of a native agent that sleeps 20 s,
/// signalled with `signal` (as `to` says) once both lanes (its own and
/// its worker's) have begun a run.
fn campaign_signalled(signal: libc::c_int, to: To) -> Signalled {
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    let dir = temp_dir();
    let args = ["--runs", "8", "--jobs", "2", "--keep-all", "--json"];
    let deny = "[[tools]]\ntool = \"*\"\ndeny = 0.1\n";
    let (mut campaign, began) = native_campaign(dir.path(), deny, &args, 20);
    let mut child = campaign
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let runs_begun = || std::fs::read_dir(&began).unwrap().count();
    let until = Instant::now() + Duration::from_secs(90);
    while runs_begun() < 2 {
        assert!(
            Instant::now() < until,
            "the campaign's two lanes never began a run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id() as libc::pid_t;
    let signalled = Instant::now();
    // SAFETY: a signal to the campaign this test started, or to the
    // process group it leads.
    unsafe {
        match to {
            To::Group => libc::killpg(pid, signal),
            To::Campaign => libc::kill(pid, signal),
            To::Worker => {
                let worker = common::workers::worker_of(pid as u32, "--fuzz-worker");
                libc::kill(worker as libc::pid_t, signal)
            }
        }
    };
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("the campaign did not end within 90 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = signalled.elapsed();
    let stdout = stdout.join().unwrap();
    Signalled {
        signal: status.signal(),
        code: status.code(),
        report: serde_json::from_str(&stdout).ok(),
        said: format!("{stdout}\n{}", stderr.join().unwrap()),
        took,
        began: runs_begun(),
    }
}

/// Ctrl-C (SIGINT to the process group) on a native agent's campaign of
/// two jobs stops the run under way in each lane (`trapped`), begins no
/// other, reports the two runs made and keeps the report, then ends the
/// command by the signal: the worker's first run had put back the
/// signal's default action, the Ctrl-C killed the worker, and the
/// campaign ended as an internal error (`a fuzz worker (pid N) ended
/// before its runs were done`), with no report.
#[test]
fn ctrl_c_on_a_native_campaign_of_two_jobs_reports_the_runs_it_made() {
    if common::workers::one_core() {
        return;
    }
    let s = campaign_signalled(libc::SIGINT, To::Group);
    let said = &s.said;
    assert_eq!(s.signal, Some(libc::SIGINT), "{said}");
    assert!(!said.contains("fuzz worker"), "{said}");
    assert!(said.contains("kept in the store"), "{said}");
    let report = s.report.expect("a --json report");
    assert_eq!(report["interrupted"], "SIGINT", "{said}");
    // The two runs the signal stopped are the signal's, counted for no
    // one (they were two `trapped` failures).
    assert_eq!(report["summary"]["runs"], 0, "{said}");
    assert!(s.took < Duration::from_secs(15), "{:?}: {said}", s.took);
    assert_eq!(s.began, 2, "a run began after the signal: {said}");
}

/// SIGTERM to a native agent's campaign of two jobs alone (a CI runner's,
/// a supervisor's) stops its worker's run under way too, and no run
/// begins after it: the worker's run went on to its end and the worker
/// began the next it held, so the campaign ended a run's length or two
/// after the signal.
#[test]
fn a_signal_to_a_native_campaign_alone_stops_its_worker_s_run_at_once() {
    if common::workers::one_core() {
        return;
    }
    let s = campaign_signalled(libc::SIGTERM, To::Campaign);
    let said = &s.said;
    assert_eq!(s.signal, Some(libc::SIGTERM), "{said}");
    let report = s.report.expect("a --json report");
    assert_eq!(report["interrupted"], "SIGTERM", "{said}");
    // The two runs it stopped are not counted.
    assert_eq!(report["summary"]["runs"], 0, "{said}");
    assert!(s.took < Duration::from_secs(15), "{:?}: {said}", s.took);
    assert_eq!(s.began, 2, "a run began after the signal: {said}");
}

/// SIGTERM to a native agent's campaign worker alone stops its run under
/// way, and the campaign, which was sent none, fails naming the worker
/// and what to do, rather than counting fewer runs than it says.
#[test]
fn a_signal_to_a_campaign_s_worker_alone_fails_the_campaign_naming_it() {
    if common::workers::one_core() {
        return;
    }
    let s = campaign_signalled(libc::SIGTERM, To::Worker);
    let said = &s.said;
    assert_eq!(s.code, Some(4), "{said}");
    assert!(said.contains("did not run item"), "{said}");
    assert!(
        said.contains("signal this process or its process group, not a worker"),
        "{said}"
    );
}

/// A native run loads its world's service before it starts the agent: on
/// the first run into a store the service was compiled while the agent
/// ran, and its first call to the service waited for it in real time (an
/// agent's own timeout then lost the answer, and the run's replay
/// diverged). Here the agent marks when it started, and the compiled
/// service is older than the mark.
#[test]
fn a_native_run_loads_its_world_s_service_before_the_agent_starts() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let case = write_case(
        dir.path(),
        "cold",
        "world = \"counters@v1\"\nseed = 7\nclock = 2026-03-02T12:00:00Z\ntask = \"x\"\n",
    );
    let (store, mark) = (dir.path().join("store"), dir.path().join("started"));
    let script = format!("touch '{}'", mark.display());
    let args = [
        os("run"),
        case.as_os_str(),
        os("--worlds"),
        worlds.as_os_str(),
        os("--json"),
        os("--store"),
        store.as_os_str(),
        os("--exec"),
        os("--"),
        os("/bin/sh"),
        os("-c"),
        os(&script),
    ];
    // The store's own compile cache: cold.
    worldline_env(args, &[OWN_COMPILE_CACHE]).expect_code(0);
    let started = std::fs::metadata(&mark).unwrap().modified().unwrap();
    let compiled: Vec<_> = files_with_suffix(&store.join("cache"), ".cwasm");
    assert!(
        !compiled.is_empty(),
        "the service was compiled into the store's cache"
    );
    for c in compiled {
        let at = std::fs::metadata(&c).unwrap().modified().unwrap();
        assert!(
            at <= started,
            "{} was compiled after the agent started",
            c.display()
        );
    }
}

/// A command a case's or the project file's `exec` gives that cannot
/// start is blamed on that file, not on `--exec`, a flag no one gave.
#[test]
fn an_exec_that_cannot_start_is_blamed_on_the_file_that_gave_it() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "store = \"st\"\nworlds = \"{}\"\nexec = [\"/nonexistent/project-agent\"]\n",
            worlds().display()
        ),
    )
    .unwrap();
    let plain = case_with(p, "plain", PASSED_BY_DOING_NOTHING);
    let own = write_case(
        p,
        "own",
        &format!("exec = [\"/nonexistent/case-agent\"]\n{UNGRADED}{PASSED_BY_DOING_NOTHING}"),
    );
    for (case, blamed) in [(&plain, p.join("worldline.toml")), (&own, own.clone())] {
        let out = worldline_at(p, [os("run"), case.as_os_str(), os("--json")], &[]);
        out.expect_code(2);
        assert_eq!(
            out.json()["error"]["file"],
            blamed.display().to_string(),
            "{out}"
        );
    }
}
