//! `worldline mcp` as a server for one MCP client: over HTTP it answers
//! `/mcp` alone (nothing else is recorded, so the session replays), binds
//! its port before it writes anything, ends a session gone idle
//! (`--idle-timeout`) and says how to get past a session left open,
//! prints its address first with `--json`; `replay` says it replayed an
//! MCP session; over both transports a second
//! `initialize` in a session is refused; over stdio the requests a limit
//! left unanswered get a JSON-RPC error saying why; `verify` counts MCP sessions as
//! what they are; a world file is listed with the MIME type it is read
//! with.

use crate::common;

use common::native::{Answer, authority, exchange, mcp_http_server, mcp_http_server_with};
use common::*;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The incident case, graded on nothing.
const UNGRADED: &str = r#"world = "incident@v4"
seed = 7
clock = 2026-03-01T12:05:00Z
task = { alert = "ALERT-7", ticket = "T-100" }
"#;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const GET_ALERT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"ALERT-7"}}}"#;

fn ungraded(dir: &Path) -> PathBuf {
    write_case(dir, "served", UNGRADED)
}

/// A request to the server at `url` (`head` after the request line's
/// method and target: extra header lines), with `Host` and a JSON body.
fn send(url: &str, method: &str, target: &str, extra: &str, body: &str) -> Answer {
    let addr = authority(url);
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream"
    );
    if !extra.is_empty() {
        head.push_str("\r\n");
        head.push_str(extra);
    }
    exchange(addr, &head, body, Duration::from_secs(10))
}

/// Open a session: its `Mcp-Session-Id` header line.
fn open_session(url: &str) -> String {
    let r = send(url, "POST", "/mcp", "", INITIALIZE);
    assert_eq!(r.status, 200, "{r:?}");
    format!("mcp-session-id: {}", r.header("mcp-session-id").unwrap())
}

/// End the session (`DELETE`) and the server's report.
fn end_session(url: &str, session: &str, server: std::process::Child) -> Value {
    let r = send(url, "DELETE", "/mcp", session, "");
    assert_eq!(r.status, 200, "{r:?}");
    let out = server.wait_with_output().expect("worldline mcp ended");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report after the address line ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn mcp_over_http_answers_only_its_endpoint_and_the_session_replays() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (server, url) = mcp_http_server(&store, &ungraded(dir.path()));
    let session = open_session(&url);
    // Another path, a model API, a proxy's absolute URL and a tunnel: 404
    // with the reason, before the mediator (a replay derives only MCP
    // messages again, so any of them recorded made it diverge).
    let chat = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    for (method, target, extra) in [
        ("POST", "/other".to_string(), session.clone()),
        ("POST", "/v1/chat/completions".to_string(), String::new()),
        ("GET", "/health".to_string(), String::new()),
        (
            "POST",
            "http://api.openai.com/v1/chat/completions".into(),
            String::new(),
        ),
        ("CONNECT", "example.com:443".into(), String::new()),
    ] {
        let body = if method == "POST" { chat } else { "" };
        let r = send(&url, method, &target, &extra, body);
        assert_eq!(r.status, 404, "{method} {target}: {r:?}");
        assert!(r.body.contains("at /mcp"), "{method} {target}: {r:?}");
    }
    let r = send(&url, "POST", "/mcp", &session, GET_ALERT);
    assert_eq!(r.status, 200, "{r:?}");
    let report = end_session(&url, &session, server);
    let run = report["run_id"].as_str().unwrap();
    let b = read_bundle(Path::new(report["bundle"].as_str().unwrap()));
    let calls: Vec<&str> = b
        .events
        .iter()
        .map(|e| e["call"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        [
            "native:loopback/protocol.answer",
            "worldline:agent/tools.call"
        ],
        "only the session's messages are recorded"
    );
    let replay = worldline(&store, ["replay", run, "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    // Said as what it is: no native agent ran (it said "boundary replay
    // of a native agent").
    assert_eq!(replay.json()["session"], "an MCP session", "{replay}");
    let said = worldline(&store, ["replay", run]);
    said.expect_code(0);
    assert!(
        said.stdout
            .contains("identical at the boundary  (boundary replay of an MCP session: 2 events"),
        "{said}"
    );
    // The UI's replay says it so too.
    let ui = crate::ui_support::Server::start(&store, &[]);
    let page = ui.get(&format!("/run/{run}"));
    let csrf = crate::ui_support::input_value(&page.body, "csrf").expect("the replay form");
    let r = crate::ui_support::request(
        ui.port,
        "POST",
        &format!("/run/{run}/replay?token={}", ui.token),
        &[
            ("Host", &ui.host()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &crate::ui_support::form(&[("csrf", &csrf)]),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body.contains("boundary replay of an MCP session:") && !r.body.contains("a native agent"),
        "{}",
        r.body
    );
}

#[test]
fn a_port_in_use_writes_nothing() {
    let dir = temp_dir();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let store = dir.path().join("store");
    let case = ungraded(dir.path());
    let w = common::native::worlds();
    let out = worldline(
        &store,
        [
            "mcp".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            w.as_os_str(),
            "--http".as_ref(),
            addr.as_ref(),
        ],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("Address already in use"), "{out}");
    // No store made, so no run of no events in it.
    assert!(!store.exists(), "{:?}", std::fs::read_dir(&store).ok());
}

#[test]
fn an_idle_session_is_ended_and_a_second_client_is_told_what_to_do() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = ungraded(dir.path());
    // Refused as `serve` refuses it, and without --http.
    for args in [
        vec!["--http", "127.0.0.1:0", "--idle-timeout", "0"],
        vec!["--idle-timeout", "5"],
    ] {
        let mut all = vec!["mcp", case.to_str().unwrap()];
        all.extend(args);
        let out = worldline(&store, &all);
        out.expect_code(2);
        assert!(out.stderr.contains("--idle-timeout"), "{out}");
    }
    let (mut server, url) = mcp_http_server_with(&store, &case, &["--idle-timeout", "2"]);
    let session = open_session(&url);
    // A client that lost its session: the refusal says how to go on.
    let r = send(&url, "POST", "/mcp", "", INITIALIZE);
    assert_eq!(r.status, 409, "{r:?}");
    for said in ["Mcp-Session-Id", "Ctrl-C", "--idle-timeout", "2 s"] {
        assert!(r.body.contains(said), "{said} not in {r:?}");
    }
    // The session's requests keep it open past the timeout...
    let started = Instant::now();
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(900));
        let r = send(&url, "POST", "/mcp", &session, GET_ALERT);
        assert_eq!(r.status, 200, "{r:?}");
    }
    assert!(started.elapsed() > Duration::from_secs(3));
    assert!(server.try_wait().unwrap().is_none(), "ended while in use");
    // ...and once it sends nothing for 2 s it is ended and graded.
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the idle session was not ended");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = server.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("sent nothing for 2 s"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("the JSON report");
    assert_eq!(report["run_status"], "completed", "{report}");
    let b = read_bundle(Path::new(report["bundle"].as_str().unwrap()));
    assert!(b.footer.is_some());
}

/// `worldline mcp CASE` over stdio (worlds in `worlds`), `lines` written
/// to it, then its input closed: the answers it wrote and the run.
fn over_stdio(store: &Path, case: &Path, worlds: &Path, lines: &[&str]) -> (Vec<Value>, Value) {
    let mut server = common::cli()
        .args(["mcp".as_ref(), case.as_os_str()])
        .args(["--worlds".as_ref(), worlds.as_os_str()])
        .args(["--store".as_ref(), store.as_os_str(), "--json".as_ref()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting worldline mcp");
    let mut stdin = server.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = server.wait_with_output().unwrap();
    let answers = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let report = serde_json::from_slice(&out.stderr).unwrap_or_else(|e| {
        panic!(
            "no JSON report on stderr ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (answers, report)
}

#[test]
fn a_second_initialize_in_a_session_is_refused_over_both_transports() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = ungraded(dir.path());
    let again = INITIALIZE.replace(r#""id":0"#, r#""id":5"#);
    let (answers, report) = over_stdio(
        &store,
        &case,
        &common::native::worlds(),
        &[INITIALIZE, &again, GET_ALERT],
    );
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(
        answers[0]["result"]["serverInfo"].is_object(),
        "{answers:?}"
    );
    assert_eq!(answers[1]["id"], 5, "{answers:?}");
    assert_eq!(answers[1]["error"]["code"], -32600, "{answers:?}");
    assert_eq!(answers[2]["result"]["isError"], false, "{answers:?}");
    let run = report["run_id"].as_str().unwrap();
    let replay = worldline(&store, ["replay", run, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");

    let (server, url) = mcp_http_server(&store, &case);
    let session = open_session(&url);
    let r = send(&url, "POST", "/mcp", &session, &again);
    assert_eq!(r.status, 409, "{r:?}");
    assert!(r.body.contains("initialized already"), "{r:?}");
    let r = send(&url, "POST", "/mcp", &session, GET_ALERT);
    assert_eq!(r.status, 200, "{r:?}");
    let report = end_session(&url, &session, server);
    let b = read_bundle(Path::new(report["bundle"].as_str().unwrap()));
    let answered = b
        .events
        .iter()
        .filter(|e| e["call"] == "native:loopback/protocol.answer")
        .count();
    assert_eq!(answered, 1, "the refused initialize is not recorded");
}

/// `worldline mcp` reads each message as JSON-RPC 2.0 says (rules 10,
/// decision 0423): no `"jsonrpc": "2.0"`, an object `id` and a batch are
/// `-32600` saying why (the refused `tools/list` lists nothing, the
/// object id's `tools/call` calls nothing), a null id is taken; the
/// session replays `identical`, each refused message derived again from
/// its event. Over HTTP, an `initialize` so refused opens no session.
/// Sessions recorded under rules 9 (`tests/bundles/before-rules-10/mcp-*.json`,
/// over stdio and over HTTP) whose messages rules 10 refuses (no
/// `"jsonrpc"`, an object id, a batch) or refused already with a null id
/// (text that is no JSON; over HTTP, status 400) replay `identical`:
/// each message is made again from its event (a refused one with the
/// null id and status it was answered with), as rules 9 answered it.
/// A check that the code read might make such a replay send a number id
/// and diverge; it does not, and this keeps it so.
#[test]
fn sessions_of_rules_9_with_messages_rules_10_refuses_replay_identical() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    for file in ["mcp-stdio.json", "mcp-http.json"] {
        common::imported_fixture(&store, "before-rules-10", file);
    }
}

#[test]
fn messages_that_are_no_json_rpc_2_0_are_refused_and_the_session_replays() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = ungraded(dir.path());
    let lines = [
        INITIALIZE,
        r#"{"id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":{"n":3},"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"ALERT-7"}}}"#,
        r#"[{"jsonrpc":"2.0","id":4,"method":"ping"}]"#,
        r#"{"method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        GET_ALERT,
    ];
    let (answers, report) = over_stdio(&store, &case, &common::native::worlds(), &lines);
    assert_eq!(answers.len(), 7, "{answers:?}");
    let refused = |i: usize| {
        assert_eq!(answers[i]["error"]["code"], -32600, "{i}: {answers:?}");
        answers[i]["error"]["message"].as_str().unwrap().to_string()
    };
    assert_eq!(refused(1), r#"Invalid Request: "jsonrpc" must be "2.0""#);
    assert_eq!(answers[1]["id"], 2);
    assert!(refused(2).contains(r#""id" must be a string, a number or null"#));
    assert_eq!(answers[2]["id"], Value::Null);
    assert!(refused(3).contains("MCP 2025-06-18 removed JSON-RPC batching"));
    assert!(refused(4).contains(r#""jsonrpc" must be "2.0""#));
    assert_eq!(answers[5]["result"], serde_json::json!({}), "{answers:?}");
    assert_eq!(answers[6]["result"]["isError"], false, "{answers:?}");
    let b = read_bundle(Path::new(report["bundle"].as_str().unwrap()));
    let calls = (b.events.iter())
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .count();
    assert_eq!(calls, 1, "only the well-formed call reached the tool");
    let run = report["run_id"].as_str().unwrap();
    let replay = worldline(&store, ["replay", run, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");

    let (server, url) = mcp_http_server(&store, &case);
    let r = send(
        &url,
        "POST",
        "/mcp",
        "",
        &INITIALIZE.replace(r#""jsonrpc":"2.0","#, ""),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("-32600"), "{r:?}");
    assert!(r.header("mcp-session-id").is_none(), "{r:?}");
    let session = open_session(&url);
    let r = send(&url, "POST", "/mcp", &session, GET_ALERT);
    assert_eq!(r.status, 200, "{r:?}");
    end_session(&url, &session, server);
}

/// `worldline mcp` reads each message exactly (rules 11, decision 0423):
/// a key written twice in one object (a `tools/call` naming two tools,
/// an argument given twice) and an id past 64 bits are `-32600` with a
/// null id, naming the key or the integer, and call nothing; under rules
/// 10 the last key was taken (`get_ticket` called, not `close_ticket`)
/// and the id echoed as `1.2345678901234568e+22`. The session replays
/// `identical`, and so does one recorded under rules 10
/// (`tests/bundles/before-rules-11/mcp-stdio.json`) that sent them.
#[test]
fn a_key_written_twice_or_an_id_past_64_bits_is_an_invalid_request_from_rules_11() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    common::imported_fixture(&store, "before-rules-11", "mcp-stdio.json");
    let case = ungraded(dir.path());
    let lines = [
        INITIALIZE,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"close_ticket","name":"get_ticket","arguments":{"id":"T-100"}}}"#,
        r#"{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"ALERT-1","id":"ALERT-7"}}}"#,
        GET_ALERT,
    ];
    let (answers, report) = over_stdio(&store, &case, &common::native::worlds(), &lines);
    assert_eq!(answers.len(), 5, "{answers:?}");
    let refused = |i: usize| {
        assert_eq!(answers[i]["error"]["code"], -32600, "{i}: {answers:?}");
        assert_eq!(answers[i]["id"], Value::Null, "{i}: {answers:?}");
        answers[i]["error"]["message"].as_str().unwrap().to_string()
    };
    assert!(
        refused(1).contains("the field `name` is written twice in one object"),
        "{answers:?}"
    );
    assert!(
        refused(2).contains("the integer 12345678901234567890123 is past 64 bits"),
        "{answers:?}"
    );
    assert!(
        refused(3).contains("the field `id` is written twice in one object"),
        "{answers:?}"
    );
    assert_eq!(answers[4]["result"]["isError"], false, "{answers:?}");
    let b = read_bundle(Path::new(report["bundle"].as_str().unwrap()));
    let calls = (b.events.iter())
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .count();
    assert_eq!(calls, 1, "only the well-formed call reached a tool");
    common::replays_identical(&store, report["run_id"].as_str().unwrap());
}

#[test]
fn a_world_file_is_listed_with_the_mime_type_it_is_read_with() {
    let dir = temp_dir();
    let worlds = dir.path().join("worlds");
    let world = worlds.join("incident/v4");
    copy_dir(&common::native::worlds().join("incident/v4"), &world);
    let toml = std::fs::read_to_string(world.join("world.toml")).unwrap();
    std::fs::write(
        world.join("world.toml"),
        format!("{toml}\n[files]\ndir = \"files\"\n"),
    )
    .unwrap();
    std::fs::create_dir_all(world.join("files")).unwrap();
    std::fs::write(world.join("files/dump.bin"), [0xffu8, 0x00, 0xfe]).unwrap();
    std::fs::write(world.join("files/notes"), "plain text").unwrap();
    std::fs::write(world.join("files/runbook.md"), "# Runbook").unwrap();
    let store = dir.path().join("store");
    let case = ungraded(dir.path());
    let read = |id: u32, uri: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"{uri}"}}}}"#
        )
    };
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#;
    let reads: Vec<String> = ["dump.bin", "notes", "runbook.md"]
        .iter()
        .enumerate()
        .map(|(i, p)| read(2 + i as u32, &format!("file:///{p}")))
        .collect();
    let mut lines = vec![INITIALIZE, list];
    lines.extend(reads.iter().map(String::as_str));
    let (answers, _) = over_stdio(&store, &case, &worlds, &lines);
    assert_eq!(answers.len(), 5, "{answers:?}");
    let listed = answers[1]["result"]["resources"].as_array().unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    for (entry, answer) in listed.iter().zip(&answers[2..]) {
        let content = &answer["result"]["contents"][0];
        assert_eq!(content["uri"], entry["uri"], "{answers:?}");
        assert_eq!(
            entry.get("mimeType"),
            content.get("mimeType"),
            "listed and read differ: {entry} / {content}"
        );
    }
    assert_eq!(listed[0]["mimeType"], "application/octet-stream");
    assert_eq!(listed[2]["mimeType"], "text/markdown");
}

/// A session `[limits] max_events` ended (`trapped`, the call past the
/// limit refused before it was recorded) replays `identical`, `verify`
/// counts it so, and a fork of it ends at the limit as it did: the
/// replay sent only the recorded messages and ended `completed` (replay
/// said `diverged at event 3 (mismatch, field status)`).
#[test]
fn a_session_ended_at_its_event_limit_replays_and_forks_to_that_end() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "events",
        &format!("{UNGRADED}\n[limits]\nmax_events = 3\n"),
    );
    let calls: Vec<String> = (1..=4)
        .map(|id| GET_ALERT.replace(r#""id":1"#, &format!(r#""id":{id}"#)))
        .collect();
    let mut lines = vec![INITIALIZE];
    lines.extend(calls.iter().map(String::as_str));
    let (_, report) = over_stdio(&store, &case, &common::native::worlds(), &lines);
    assert_eq!(report["run_status"], "trapped", "{report}");
    assert!(
        report["error"].as_str().unwrap().contains("max_events"),
        "{report}"
    );
    let run = report["run_id"].as_str().unwrap();
    let replay = worldline(&store, ["replay", run, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    worldline(&store, ["verify", run]).expect_code(0);
    let fork = worldline(&store, ["fork", run, "--at", "2", "--json"]);
    assert_eq!(fork.json()["run_status"], "trapped", "{fork}");
}

/// Over stdio, the request that ends the run at its step limit, and one
/// read after it, are answered with a JSON-RPC error saying why before
/// the stream closes (they got no answer at all; HTTP answers them 503
/// with the same words).
#[test]
fn over_stdio_the_requests_a_limit_left_are_answered_with_why() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "steps",
        &format!("{UNGRADED}\n[limits]\nmax_steps = 2\n"),
    );
    let calls: Vec<String> = (1..=4)
        .map(|id| GET_ALERT.replace(r#""id":1"#, &format!(r#""id":{id}"#)))
        .collect();
    let mut lines = vec![INITIALIZE];
    lines.extend(calls.iter().map(String::as_str));
    let (answers, report) = over_stdio(&store, &case, &common::native::worlds(), &lines);
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4], "{answers:?}");
    assert_eq!(answers[2]["result"]["isError"], false, "{answers:?}");
    for a in &answers[3..] {
        assert_eq!(a["jsonrpc"], "2.0", "{a}");
        assert_eq!(a["error"]["code"], -32000, "{a}");
        let message = a["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("the run has ended: step limit"), "{a}");
    }
    assert!(
        report["error"].as_str().unwrap().contains("step limit"),
        "{report}"
    );
    let run = report["run_id"].as_str().unwrap();
    let replay = worldline(&store, ["replay", run, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

/// A request whose `Host` is loopback without the port is refused naming
/// the Host it sent and those accepted, with the port the server listens
/// on (it said "answers only requests to its loopback address", though
/// `127.0.0.1` is one).
#[test]
fn a_host_without_the_port_is_named_with_those_accepted() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = ungraded(dir.path());
    let (server, url) = mcp_http_server(&store, &case);
    let addr = authority(&url).to_string();
    let port = addr.rsplit(':').next().unwrap();
    let r = exchange(
        &addr,
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream",
        INITIALIZE,
        Duration::from_secs(10),
    );
    assert_eq!(r.status, 403, "{r:?}");
    let said: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        said["error"]["message"],
        format!(
            "Host `127.0.0.1` does not name this server: use `127.0.0.1:{port}`, `localhost:{port}` or `[::1]:{port}`"
        ),
        "{r:?}"
    );
    let session = open_session(&url);
    end_session(&url, &session, server);
}
