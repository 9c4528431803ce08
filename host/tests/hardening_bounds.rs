//! Hardening of every read of outside input: each stops at its documented
//! cap with an error that names what it read and what to do, and none
//! opens a FIFO or a device (`/dev/zero`) for reading. The agent file
//! (`run --agent`, the UI fork form), a world's service component and
//! what a service call reads and writes, a model provider's answer, an
//! OTLP collector's answer, and `import` of another store's folder; the
//! real binary each time, with a time limit that a hang would pass.

use crate::common;
use crate::ui_support;

use common::{
    PROMPT, case, guest, mkfifo, prompt, read_bundle, replays_identical, run_in, run_json,
    temp_dir, workspace_root, worlds_dir, write_case, write_world,
};
use serde_json::Value;
use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn symlink_to_zero(path: &Path) -> PathBuf {
    std::os::unix::fs::symlink("/dev/zero", path).unwrap();
    path.to_path_buf()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn an_agent_file_that_is_a_fifo_or_a_device_is_refused_at_once() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let fifo = mkfifo(&dir.path().join("agent.wasm"));
    let zero = symlink_to_zero(&dir.path().join("zero.wasm"));
    let case = case("hostile-ok");
    for (agent, kind) in [
        (fifo.clone(), "a FIFO"),
        (zero.clone(), "a character device"),
        (PathBuf::from("/dev/zero"), "a character device"),
    ] {
        let out = prompt(&store, &["run", s(&case), "--agent", s(&agent)]);
        out.expect_code(2);
        assert!(
            out.stderr.contains(s(&agent))
                && out
                    .stderr
                    .contains(&format!("is {kind}, not a regular file"))
                && out
                    .stderr
                    .contains("pass the path of a built .wasm component"),
            "{out}"
        );
    }

    // The UI's fork form takes an agent path too.
    let fx = ui_support::fixture(&store);
    let server = ui_support::Server::start(&store, &[]);
    let page = server.get(&format!("/run/{}/event/{}", fx.failed, fx.stale));
    let csrf = ui_support::input_value(&page.body, "csrf").unwrap();
    for agent in [&fifo, &zero] {
        let started = std::time::Instant::now();
        let r = ui_support::request(
            server.port,
            "POST",
            &format!(
                "/run/{}/event/{}/fork?token={}",
                fx.failed, fx.stale, server.token
            ),
            &[
                ("Host", server.host().as_str()),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            &ui_support::form(&[("csrf", &csrf), ("agent", s(agent))]),
        );
        assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
        assert_eq!(r.status, 400, "{r:?}");
        assert!(r.body.contains("not a regular file"), "{}", r.body);
    }
}

#[test]
fn a_world_whose_service_component_is_a_fifo_is_refused_naming_it() {
    let dir = temp_dir();
    let world = dir.path().join("worlds/counters/v1");
    std::fs::create_dir_all(&world).unwrap();
    let from = workspace_root().join("tests/worlds/counters/v1");
    for f in ["world.toml", "counters.jsonl"] {
        std::fs::copy(from.join(f), world.join(f)).unwrap();
    }
    mkfifo(&world.join("service.wasm"));
    let case = write_case(
        dir.path(),
        "bump",
        "world = \"counters@v1\"\nseed = 1\nclock = 2026-03-02T12:00:00Z\ntask = { calls = [{ tool = \"bump\", args = { id = \"a\" } }] }\n",
    );
    let store = dir.path().join("store");
    let out = prompt(
        &store,
        &[
            "run",
            s(&case),
            "--agent",
            s(&guest("caller-agent")),
            "--worlds",
            s(&dir.path().join("worlds")),
        ],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains("service.wasm") && out.stderr.contains("is a FIFO"),
        "{out}"
    );
}

/// A world whose service (tests/guests/counter-service) rereads a 100 KB
/// row and floods the world with rows and files.
fn flood_world(root: &Path) -> PathBuf {
    let big = "y".repeat(100 * 1024);
    let rows = format!(
        "{{\"id\": \"big\", \"data\": \"{big}\"}}\n{{\"id\": \"small\", \"data\": \"z\"}}\n"
    );
    let tool = |name: &str| {
        format!(
            "[[tools]]\nname = \"{name}\"\nparams = {{ type = \"object\" }}\nop = \"service\"\n\n"
        )
    };
    let toml = format!(
        "name = \"floods\"\nversion = 1\ndescription = \"A service that reads and writes too much\"\n\n[service]\ncomponent = \"service.wasm\"\nfuel = 4_000_000_000\n\n[tables.blobs]\nkey = \"id\"\nrows = \"blobs.jsonl\"\n\n{}{}{}",
        tool("reread"),
        tool("flood_rows"),
        tool("flood_files")
    );
    let worlds = write_world(root, "floods", &toml, &[("blobs.jsonl", &rows)]);
    std::fs::copy(
        guest("counter-service"),
        worlds.join("floods/v1/service.wasm"),
    )
    .unwrap();
    worlds
}

/// Run the caller agent making `calls` on the flood world; its bundle's
/// tool-call events.
fn flood(root: &Path, store: &Path, calls: &str) -> (String, Vec<Value>, u64) {
    let worlds = flood_world(root);
    let case = write_case(
        root,
        "flood",
        &format!(
            "world = \"floods@v1\"\nseed = 3\nclock = 2026-03-02T12:00:00Z\ntask = {{ calls = [{calls}] }}\n[limits]\ntimeout_ms = 120000\n"
        ),
    );
    let out = run_in(store, &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let bundle = out.bundle();
    let size = std::fs::metadata(&bundle).unwrap().len();
    let events = read_bundle(&bundle)
        .events
        .into_iter()
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .collect();
    (
        out.json()["run_id"].as_str().unwrap().to_string(),
        events,
        size,
    )
}

#[track_caller]
fn failed_at_a_limit(e: &Value, what: &str) {
    let err = &e["response"]["error"];
    assert_eq!(err["kind"], "failed", "{e:.2000}");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("limit: ") && message.contains(what),
        "{message}"
    );
    assert!(
        e["writes"].as_array().is_none_or(|w| w.is_empty()),
        "a call stopped at a limit writes nothing"
    );
}

#[test]
fn a_service_call_stops_at_its_caps_on_reading_and_the_run_replays() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (run, events, size) = flood(
        dir.path(),
        &store,
        "{ tool = \"reread\", args = { times = 2000 } }, { tool = \"reread\", args = { times = 3 } }",
    );
    // 2,000 reads of a 100 KB row are past the 64 MiB a call may read;
    // three are fine.
    failed_at_a_limit(&events[0], "read from the world in one call");
    let bytes = events[1]["response"]["ok"]["bytes"].as_u64();
    assert!(bytes.is_some_and(|b| b > 300_000), "{:.500}", events[1]);
    assert!(size < 4 << 20, "the bundle is {size} bytes");
    replays_identical(&store, &run);

    // A read loop that would run until its fuel ends stops at the count.
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (_, events, size) = flood(
        dir.path(),
        &store,
        "{ tool = \"reread\", args = { key = \"small\" } }",
    );
    failed_at_a_limit(&events[0], "reads of the world in one call");
    let reads = events[0]["response"]["service"]["reads"]
        .as_array()
        .unwrap();
    assert_eq!(reads.len(), 10_000);
    assert!(size < 4 << 20, "the bundle is {size} bytes");
}

#[test]
fn a_service_call_stops_at_its_caps_on_writing() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (run, events, size) = flood(
        dir.path(),
        &store,
        "{ tool = \"flood_rows\", args = { count = 200, kb = 1024 } }, { tool = \"flood_files\", args = { count = 200, kb = 1024 } }, { tool = \"flood_rows\", args = { count = 3, kb = 1 } }",
    );
    failed_at_a_limit(&events[0], "written to the world in one call");
    failed_at_a_limit(&events[1], "written to the world in one call");
    assert_eq!(events[2]["writes"].as_array().unwrap().len(), 3);
    assert!(size < 4 << 20, "the bundle is {size} bytes");
    replays_identical(&store, &run);
}

/// A loopback HTTP server answering every request with `head` and then
/// an endless body (64 KiB chunks until the client goes away).
fn endless(head: &'static str, chunked: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let _ = conn.set_read_timeout(Some(Duration::from_millis(500)));
                let _ = conn.read(&mut buf);
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let data = vec![b'a'; 65536];
                let chunk = if chunked {
                    let mut c = format!("{:x}\r\n", data.len()).into_bytes();
                    c.extend_from_slice(&data);
                    c.extend_from_slice(b"\r\n");
                    c
                } else {
                    data
                };
                // About 32 MB/s: past any cap in a second or two, and
                // gentle on the machine for as long as a reader keeps on.
                while conn.write_all(&chunk).is_ok() {
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
        }
    });
    port
}

/// A run that would record more than a reader of bundles reads (seventy
/// trace notes of 15 MiB: 1,050 MiB) ends `trapped` before the note that
/// would pass the record's cap, naming it, with a bundle every reader
/// reads: `verify` replays it `identical`. Before
/// the cap the bundle was over 1 GiB, and no reader could open it.
#[test]
fn a_run_that_would_record_past_a_readable_bundle_ends_at_the_record_s_cap() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let c = write_case(
        dir.path(),
        "notes",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"notes\", n = 70, bytes = 15_728_640 }\n\n[limits]\ntimeout_ms = 600_000\n",
    );
    let out = run_in(&store, &c, &guest("hostile-agent"), &worlds_dir());
    out.expect_code(3);
    let run = out.json();
    assert_eq!(run["status"], "trapped", "{out}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains("record limit: event")
            && error.contains("`worldline:agent/trace.note`")
            && error.contains("past the 896 MiB a bundle holds"),
        "{error}"
    );
    let id = run["run_id"].as_str().unwrap();
    let bundle = common::bundle_in(&store, id);
    let size = std::fs::metadata(&bundle).unwrap().len();
    assert!(
        (800 << 20..896 << 20).contains(&size),
        "{size} bytes: the notes up to the cap, no more"
    );
    let verify = common::worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["identical"], 1, "{verify}");
}

#[test]
fn a_model_answer_past_its_cap_is_a_failed_call_not_a_huge_bundle() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    for (name, head, chunked) in [
        (
            "endless",
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            true,
        ),
        (
            "huge",
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 209715200\r\n\r\n",
            false,
        ),
    ] {
        let port = endless(head, chunked);
        let case = write_case(
            dir.path(),
            name,
            &format!(
                "world = \"demo@v1\"\nclock = 2026-03-01T12:00:00Z\nseed = 11\ntask = {{ requests = [{{ messages = [{{ role = \"user\", content = \"hi\" }}] }}] }}\n[limits]\ntimeout_ms = 120000\n[model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\nretries = 0\ntimeout_ms = 90000\n"
            ),
        );
        let worlds = worlds_dir();
        let out = prompt(
            &store,
            &[
                "run",
                s(&case),
                "--agent",
                s(&guest("asker-agent")),
                "--worlds",
                s(&worlds),
                "--json",
            ],
        );
        let bundle = out.bundle();
        let size = std::fs::metadata(&bundle).unwrap().len();
        assert!(size < 1 << 20, "{name}: the bundle is {size} bytes");
        let model = read_bundle(&bundle)
            .events
            .into_iter()
            .find(|e| e["call"] == "worldline:agent/model.complete")
            .unwrap_or_else(|| panic!("{name}: no model call:\n{out}"));
        let message = model["response"]["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("larger than the cap on a model answer (32 MiB)"),
            "{name}: {model:.1000}"
        );
    }
}

#[test]
fn an_otel_collector_that_answers_without_end_is_read_no_further_than_its_cap() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run_json(&store, &case("hostile-ok"), &guest("hostile-agent"));
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let port = endless(
        "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nTransfer-Encoding: chunked\r\n\r\n",
        true,
    );
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = prompt(
        &store,
        &["otel", run.as_str(), "--endpoint", endpoint.as_str()],
    );
    out.expect_code(0);
}

#[test]
fn import_refuses_fifos_and_devices_in_a_store_folder_and_as_a_file() {
    let dir = temp_dir();
    let good = dir.path().join("good");
    let out = run_json(&good, &case("hostile-ok"), &guest("hostile-agent"));
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let agent = read_bundle(&out.bundle()).header["agent_sha256"]
        .as_str()
        .unwrap()
        .to_string();

    // A hostile store: a FIFO bundle, a bundle that is /dev/zero, and a
    // real run whose agent object is a FIFO.
    let hostile = dir.path().join("hostile");
    std::fs::create_dir_all(hostile.join("runs")).unwrap();
    std::fs::create_dir_all(hostile.join("objects")).unwrap();
    mkfifo(&hostile.join("runs/fifo-run.jsonl"));
    symlink_to_zero(&hostile.join("runs/zero-run.jsonl"));
    std::fs::copy(out.bundle(), common::bundle_in(&hostile, &run)).unwrap();
    for e in std::fs::read_dir(good.join("objects")).unwrap() {
        let e = e.unwrap();
        let to = hostile.join("objects").join(e.file_name());
        if e.file_name().to_string_lossy() == agent {
            mkfifo(&to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
    let store = dir.path().join("store");
    let out = prompt(&store, &["import", s(&hostile), "--json"]);
    out.expect_code(1);
    let skipped = out.json()["skipped"].as_array().unwrap();
    let reason = |id: &str| {
        skipped
            .iter()
            .find(|x| x["run_id"] == id)
            .and_then(|x| x["reason"].as_str())
            .unwrap_or_else(|| panic!("{id} was not skipped:\n{out}"))
            .to_string()
    };
    assert!(
        reason("fifo-run").contains("is a FIFO, not a regular file"),
        "{out}"
    );
    assert!(
        reason("zero-run").contains("is a character device"),
        "{out}"
    );
    let r = reason(&run);
    assert!(r.contains(&agent) && r.contains("is a FIFO"), "{r}");

    // An export file that is a FIFO or /dev/zero.
    for file in [
        mkfifo(&dir.path().join("run.export")),
        symlink_to_zero(&dir.path().join("zero.export")),
    ] {
        let out = prompt(&store, &["import", s(&file)]);
        out.expect_code(2);
        assert!(
            out.stderr.contains(s(&file)) && out.stderr.contains("not a regular file"),
            "{out}"
        );
    }
}

#[test]
fn merge_reports_policies_and_trace_files_that_are_fifos_or_devices_are_refused() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let fifo = mkfifo(&dir.path().join("shard.json"));
    let zero = symlink_to_zero(&dir.path().join("zero.json"));
    for file in [&fifo, &zero] {
        let out = prompt(&store, &["merge", s(file)]);
        out.expect_code(2);
        assert!(
            out.stderr.contains(s(file)) && out.stderr.contains("not a regular file"),
            "{out}"
        );
        let out = prompt(
            &store,
            &[
                "case",
                "from-trace",
                s(file),
                "-o",
                s(&dir.path().join("out")),
            ],
        );
        out.expect_code(2);
        assert!(out.stderr.contains("not a regular file"), "{out}");
        assert!(!dir.path().join("out").exists(), "nothing written half");
    }
    // The store's retention policy, read by gc.
    std::fs::create_dir_all(&store).unwrap();
    mkfifo(&store.join("policy.toml"));
    let out = prompt(&store, &["gc", "--dry-run"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("policy.toml") && out.stderr.contains("FIFO"),
        "{out}"
    );
}

/// Globs of many stars and floods of output stay within their bounds.
mod globs_and_floods {
    use crate::common::*;
    use std::time::Duration;

    #[test]
    fn globs_of_many_stars_neither_hang_a_case_nor_a_fork() {
        let dir = temp_dir();
        let store = dir.path().join("store");
        let stars = format!("{}x", "*".repeat(30));
        let text = format!(
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ mode = \"calls\", n = 3 }}\n\n[permissions]\ndeny = [\"{stars}\"]\n"
        );
        let bad = write_case(dir.path(), "stars", &text);
        let run = within(
            Duration::from_secs(20),
            &store,
            &[
                os("run"),
                bad.as_os_str(),
                os("--agent"),
                hostile().as_os_str(),
                os("--worlds"),
                worlds_dir().as_os_str(),
            ],
        );
        run.expect_code(2);
        assert!(run.stderr.contains("names no tool"), "{run}");

        let ok = write_case(
            dir.path(),
            "calls",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 3 }\n",
        );
        let parent = within(
            Duration::from_secs(60),
            &store,
            &[
                os("run"),
                ok.as_os_str(),
                os("--agent"),
                hostile().as_os_str(),
                os("--worlds"),
                worlds_dir().as_os_str(),
                os("--json"),
            ],
        );
        parent.expect_code(0);
        let id = parent.json()["run_id"].as_str().unwrap().to_string();
        let alternating = format!("{}b", "*a".repeat(20));
        let fork = within(
            Duration::from_secs(20),
            &store,
            &[
                os("fork"),
                os(&id),
                os("--at"),
                os("0"),
                os("--deny"),
                os(&stars),
                os("--deny"),
                os(&alternating),
                os("--json"),
            ],
        );
        // Neither glob names a tool of the demo world: refused, quickly.
        fork.expect_code(2);
        assert_eq!(
            fork.stderr.trim(),
            format!(
                "error: --deny: `{stars}` matches no tool of world demo@v1 (its tools: {}) nor a world file's permission (files.read, files.write, files.paths)",
                DEMO_TOOLS
            ),
            "{fork}"
        );
    }

    /// The demo world's tools, as errors list them.
    const DEMO_TOOLS: &str = "get_ticket, close_ticket, list_deploys, add_note, status_page";

    #[test]
    fn println_past_the_output_cap_keeps_the_guest_running() {
        let dir = temp_dir();
        let c = write_case(
            dir.path(),
            "println",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"println\", n = 2000 }\n",
        );
        let run = run_in_demo(&c, &hostile());
        run.expect_code(0);
        assert_eq!(run.json()["status"], "completed", "{run}");
        // 2000 lines of 100 bytes, 64 KiB kept by default.
        assert_eq!(run.json()["truncated_bytes"], 200_000 - 65_536, "{run}");
    }

    #[test]
    #[cfg_attr(
        not(worldline_tests_run),
        ignore = "needs componentize-py: run tests/run, which installs it"
    )]
    fn python_print_past_the_output_cap_keeps_the_agent_running() {
        let agent = python_guest("tests/guests/python-hostile/agent.py");
        let dir = temp_dir();
        let c = write_case(
            dir.path(),
            "py-flood",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"flood\", n = 3000 }\n\n[limits]\nstdout_bytes = 10_000\n",
        );
        let run = run_in_demo(&c, &agent);
        run.expect_code(0);
        assert_eq!(run.json()["status"], "completed", "{run}");
        assert_eq!(run.json()["truncated_bytes"], 300_000 - 10_000, "{run}");
        // Logs past the cap on stderr, then an exception: the exception is
        // the run's error, from the last of stderr kept past the flood
        // (it was dropped with it: the error said no exception).
        let c = write_case(
            dir.path(),
            "py-flood-raise",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"flood_then_raise\", n = 3000 }\n\n[limits]\nstdout_bytes = 10_000\n",
        );
        let run = run_in_demo(&c, &agent);
        run.expect_code(3);
        assert!(
            run.json()["error"]
                .as_str()
                .unwrap()
                .ends_with("RuntimeError: the provider answered 500"),
            "{run}"
        );
        // `sys.exit("why")`: the reason it printed is in the error (it said
        // only `the guest called exit(1)`).
        let c = write_case(
            dir.path(),
            "py-exit",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"exit_message\" }\n",
        );
        let run = run_in_demo(&c, &agent);
        assert_eq!(run.json()["status"], "exited", "{run}");
        assert!(
            run.json()["error"]
                .as_str()
                .unwrap()
                .ends_with("; its stderr ends: fatal: config missing"),
            "{run}"
        );
        // `sys.exit(3)`: WASI's exit carries no code, and the error says
        // so (it said `the guest called exit(1)`).
        let c = write_case(
            dir.path(),
            "py-exit-code",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"exit_code\" }\n",
        );
        let run = run_in_demo(&c, &agent);
        assert_eq!(run.json()["status"], "exited", "{run}");
        let error = run.json()["error"].as_str().unwrap().to_string();
        assert!(
            error.starts_with("the guest exited with a failure status")
                && !error.contains("exit(1)"),
            "{run}"
        );
    }

    #[test]
    fn an_output_cap_that_would_hold_gigabytes_is_refused_at_its_line() {
        let dir = temp_dir();
        let c = write_case(
            dir.path(),
            "big",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n[limits]\nstdout_bytes = 2_000_000_000\n",
        );
        let out = worldline(
            &dir.path().join("store"),
            [
                os("run"),
                c.as_os_str(),
                os("--agent"),
                hostile().as_os_str(),
                os("--worlds"),
                worlds_dir().as_os_str(),
            ],
        );
        out.expect_code(2);
        assert!(out.stderr.contains("big.toml:7:16"), "{out}");
    }
}

/// A TOML document past its token limit (bounded.rs `TOML_TOKENS`,
/// 500,000) is refused before it is parsed, at the token past it, with
/// what to do (the reader took 100–300 bytes a token: a 20 MB case took
/// 2.4 GB); one just under the limit reads.
#[test]
fn a_toml_document_past_its_token_limit_is_refused_before_it_is_parsed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = worlds_dir();
    // The head is 9 tokens, `task = [` 3, each `1,` 2 and `]` 1.
    let case = |n: usize| {
        let items = "1,".repeat(n);
        format!("world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = [{items}]\n")
    };
    let under = write_case(dir.path(), "under", &case(249_990));
    prompt(&store, &["check", s(&under), "--worlds", s(&worlds)]).expect_code(0);
    let over = write_case(dir.path(), "over", &case(250_000));
    let said = format!(
        "{}:4:{}: holds more than 500000 TOML tokens",
        s(&over),
        9 + 2 * 249_994
    );
    let out = prompt(&store, &["check", s(&over), "--worlds", s(&worlds)]);
    out.expect_code(2);
    assert!(out.stdout.contains(&said), "{out}");
    assert!(
        out.stdout
            .contains("move large data into the world's files"),
        "{out}"
    );
    let out = prompt(
        &store,
        &[
            "run",
            s(&over),
            "--agent",
            s(&guest("caller-agent")),
            "--worlds",
            s(&worlds),
            "--json",
        ],
    );
    out.expect_code(2);
    let e = &out.json()["error"];
    assert_eq!(e["kind"], "input", "{out}");
    assert_eq!(e["file"], s(&over), "{out}");
    assert_eq!(e["line"], 4, "{out}");
    // The project file, read before any case.
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let names = "\"c\",".repeat(250_000);
    std::fs::write(
        project.join("worldline.toml"),
        format!("cases = [{names}]\n"),
    )
    .unwrap();
    let out = prompt(&store, &["check", s(&project)]);
    out.expect_code(2);
    assert!(
        out.stdout.contains("worldline.toml:1:") && out.stdout.contains("500000 TOML tokens"),
        "{out}"
    );
}
