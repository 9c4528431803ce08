//! `worldline resume` (issue 40, item 3) on the real binary: the
//! `looper-agent` guest keeps a conversation with an OpenAI-compatible
//! server on loopback that asks it to record one ledger entry per turn (a
//! world write). A run killed with SIGKILL at seeded points resumes to the
//! same final world as an uninterrupted run, the server counting that no
//! request the recording answered was sent again and the world holding
//! every entry once; a run stopped at its step limit resumes with the limit
//! raised, and a finished run is refused. A run killed inside a call (its
//! intent the last line) names it: a model call is sent again, a slow tool
//! that may write is called again only with `--resend-in-flight`.

use crate::common;
use common::{CliOutput, guest, temp_dir, worldline_env, write_case, write_world};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY_VAR: &str = "WORLDLINE_TEST_RESUME_KEY";
const MODEL_CALL: &str = "worldline:agent/model.complete";
/// Model calls of a whole run: one entry recorded per call but the last.
const CALLS: usize = 10;

const WORLD: &str = r#"name = "ledger"
version = 1

[tables.entries]
key = "id"
ids = "max+1"

[permissions]
default = "allow"

[[tools]]
name = "record"
description = "Record one ledger entry"
op = "insert"
table = "entries"
params = { type = "object", properties = { n = { type = "integer" } }, required = ["n"] }
"#;

/// An OpenAI-compatible server whose answer is a function of the request
/// (how many tool results it holds), so a resumed conversation gets the
/// answers an uninterrupted one would; it keeps every request body.
struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let s = s.clone();
                std::thread::spawn(move || answer(conn, &s));
            }
        });
        Server { addr, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer(mut conn: TcpStream, seen: &Mutex<Vec<String>>) {
    let Some((_, body)) = crate::common::native::read_request(&mut conn) else {
        return;
    };
    let body = String::from_utf8_lossy(&body).to_string();
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().push(body);
    // Slow enough that a kill lands while the run is going.
    std::thread::sleep(Duration::from_millis(30));
    let done = request["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
    let message = if done + 1 < CALLS {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call-{done}"), "type": "function", "function": {"name": "record", "arguments": json!({"n": done}).to_string()}}]})
    } else {
        json!({"role": "assistant", "content": format!("recorded {done}")})
    };
    let reply = json!({
        "id": format!("chatcmpl-{done}"), "object": "chat.completion", "created": 1_772_366_400,
        "model": "local", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    })
    .to_string();
    let text = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
        reply.len()
    );
    let _ = conn.write_all(text.as_bytes());
}

/// The world and a case whose model is `server` (`limits` appended).
fn setup(dir: &Path, server: &Server, limits: &str) -> (PathBuf, PathBuf) {
    let worlds = write_world(dir, "ledger", WORLD, &[]);
    let case = format!(
        "world = \"ledger@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = {{ prompt = \"Record the entries.\", clock_reads = 6 }}\n\n[model]\nprovider = \"openai\"\nbase_url = \"http://{}/v1\"\nmodel = \"local\"\napi_key_env = \"{KEY_VAR}\"\n{limits}",
        server.addr
    );
    (worlds, write_case(dir, "ledger", &case))
}

fn wl(store: &Path, args: &[&OsStr]) -> CliOutput {
    let mut all: Vec<&OsStr> = args.to_vec();
    all.extend([OsStr::new("--store"), store.as_os_str()]);
    worldline_env(all, &[(KEY_VAR, "sk-local")])
}

fn run(store: &Path, case: &Path, worlds: &Path) -> CliOutput {
    run_agent(store, case, worlds, "looper-agent")
}

/// [`run`] with the guest `agent`.
fn run_agent(store: &Path, case: &Path, worlds: &Path, agent: &str) -> CliOutput {
    let agent = guest(agent);
    wl(
        store,
        &[
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--json".as_ref(),
        ],
    )
}

fn resume(store: &Path, id: &str, more: &[&str]) -> CliOutput {
    let mut args: Vec<&OsStr> = ["resume", id, "--json"].map(OsStr::new).to_vec();
    args.extend(more.iter().map(OsStr::new));
    wl(store, &args)
}

/// The entries' `n`, in key order, of a run's final state, and how many
/// writes its events made.
fn entries(bundle: &Path) -> (Vec<u64>, usize) {
    let b = worldline_log::log::bundle::read(bundle).unwrap();
    let writes = b.events.iter().map(|e| e.writes.len()).sum();
    let mut state = std::collections::BTreeMap::new();
    for e in &b.events {
        for w in &e.writes {
            if let worldline_case::world::state::Write::Put { key, row, .. } = w {
                state.insert(key.parse::<u64>().unwrap(), row["n"].as_u64().unwrap());
            }
        }
    }
    (state.into_values().collect(), writes)
}

#[test]
fn a_run_killed_at_seeded_points_resumes_to_the_uninterrupted_world_sending_nothing_twice() {
    let dir = temp_dir();
    let server = Server::start();
    let (worlds, case) = setup(dir.path(), &server, "");
    let whole_store = dir.path().join("whole");
    let whole = run(&whole_store, &case, &worlds);
    whole.expect_code(0);
    let whole_state = whole.json()["final_state_hash"].clone();
    let whole_requests = server.seen();
    assert_eq!(whole_requests.len(), CALLS);
    let (whole_entries, whole_writes) = entries(&whole.bundle());
    assert_eq!(whole_entries, (0..CALLS as u64 - 1).collect::<Vec<_>>());
    assert_eq!(whole_writes, CALLS - 1);
    let whole_lines = std::fs::read_to_string(whole.bundle())
        .unwrap()
        .lines()
        .count();

    let agent = guest("looper-agent");
    for seed in [1u64, 2, 3] {
        // The kill point: a seeded number of bundle lines, past the header
        // and before the last few; for seed 3, the first model call in
        // flight (its intent the last line) after them.
        let lines =
            2 + (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 33) as usize % (whole_lines - 5);
        let inside_a_call = seed == 3;
        let store = dir.path().join(format!("killed-{seed}"));
        let before = server.seen().len();
        let mut child = crate::common::cli()
            .args([
                OsStr::new("run"),
                case.as_os_str(),
                "--agent".as_ref(),
                agent.as_os_str(),
            ])
            .args([
                OsStr::new("--worlds"),
                worlds.as_os_str(),
                "--store".as_ref(),
                store.as_os_str(),
            ])
            .env(KEY_VAR, "sk-local")
            .env("WORLDLINE_STORE_CACHE", common::store_cache())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let bundle = bundle_when(
            &store,
            &format!("seed {seed}: the run never reached {lines} lines"),
            |t| {
                t.lines().count() >= lines
                    && (!inside_a_call
                        || t.lines().last().is_some_and(|l| {
                            // A model call's intent (a writing tool's comes
                            // first at some points).
                            l.starts_with("{\"intent\"") && l.contains(MODEL_CALL)
                        }))
            },
        );
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // A request the run wrote before the kill may still be read by the
        // server after it: wait until the server has seen nothing new for a
        // while (one such request counted after `sent` below read as sent
        // by the resume, on a loaded machine).
        let mut seen = server.seen().len();
        loop {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let now = server.seen().len();
            if now == seen {
                break;
            }
            seen = now;
        }
        let killed = worldline_log::log::bundle::read(&bundle).unwrap();
        assert!(
            killed.footer.is_none(),
            "seed {seed}: the run finished before the kill"
        );
        let sent_before_kill = server.seen()[before..].to_vec();
        let answered = killed
            .events
            .iter()
            .filter(|e| e.call == MODEL_CALL)
            .count();
        // At most the one request in flight at the kill is not in the
        // recording, and then its intent is.
        assert!(
            sent_before_kill.len() == answered || sent_before_kill.len() == answered + 1,
            "seed {seed}: {} sent, {answered} recorded",
            sent_before_kill.len()
        );
        let in_flight = killed.in_flight.clone();
        if sent_before_kill.len() == answered + 1 || inside_a_call {
            let i = in_flight
                .as_ref()
                .expect("the call in flight has its intent");
            assert_eq!(
                (i.call.as_str(), i.seq),
                (MODEL_CALL, killed.events.len() as u64)
            );
            assert!(i.tool.is_none());
        }

        let id = bundle.file_stem().unwrap().to_str().unwrap().to_string();
        let sent = server.seen().len();
        // Seed 2 resumes through `test --resume` (every incomplete run of
        // the suite's cases), the others through `resume`.
        let (resumed, shown) = if seed == 2 {
            let out = wl(
                &store,
                &[
                    "test".as_ref(),
                    case.as_os_str(),
                    "--resume".as_ref(),
                    "--json".as_ref(),
                ],
            );
            out.expect_code(0);
            let all = out.json()["resumed"].as_array().unwrap().clone();
            assert_eq!(all.len(), 1, "{out}");
            assert_eq!(all[0]["run"], id.as_str(), "{out}");
            assert_eq!(all[0]["event"], killed.events.len() as u64, "{out}");
            // Resumed once: a second `test --resume` finds nothing to do.
            let again = wl(
                &store,
                &[
                    "test".as_ref(),
                    case.as_os_str(),
                    "--resume".as_ref(),
                    "--json".as_ref(),
                ],
            );
            again.expect_code(0);
            assert_eq!(again.json()["resumed"], json!([]), "{again}");
            (all[0].clone(), out.to_string())
        } else {
            let out = resume(&store, &id, &[]);
            out.expect_code(0);
            assert_eq!(
                out.json()["resumed_from"]["event"],
                killed.events.len() as u64,
                "{out}"
            );
            (out.json().clone(), out.to_string())
        };
        assert_eq!(
            resumed["final_state_hash"], whole_state,
            "seed {seed}: {shown}"
        );
        // A model call in flight is sent again without asking (it has no
        // effect), and named.
        assert_eq!(
            resumed["in_flight"]["call"],
            json!(in_flight.as_ref().map(|i| &i.call)),
            "seed {seed}: {shown}"
        );
        let rid = resumed["run_id"].as_str().unwrap().to_string();
        let resumed_bundle = common::bundle_in(&store, &rid);
        // The resume sent exactly the requests the recording had not answered.
        let sent_by_resume = server.seen()[sent..].to_vec();
        assert_eq!(sent_by_resume, whole_requests[answered..], "seed {seed}");
        for r in &sent_by_resume {
            assert!(
                !sent_before_kill[..answered].contains(r),
                "seed {seed}: an answered request was sent again"
            );
        }
        let (got, writes) = entries(&resumed_bundle);
        assert_eq!(got, whole_entries, "seed {seed}");
        assert_eq!(writes, whole_writes, "seed {seed}: a write applied twice");
        // The resumed run replays whole (the server not asked again).
        let sent = server.seen().len();
        let replay = wl(&store, &["replay", &rid, "--json"].map(OsStr::new));
        replay.expect_code(0);
        assert_eq!(replay.json()["verdict"], "identical", "{replay}");
        assert_eq!(server.seen().len(), sent);
        let history = wl(&store, &["history", &rid].map(OsStr::new));
        assert!(
            history.stdout.contains(&format!(
                "resumed from {id} at event {}",
                killed.events.len()
            )),
            "{history}"
        );
        assert!(
            history.stdout.contains("[resumed: live from here]"),
            "{history}"
        );
    }
}

#[test]
fn a_run_stopped_at_its_step_limit_resumes_with_the_limit_raised_and_a_finished_run_is_refused() {
    let dir = temp_dir();
    let server = Server::start();
    let (worlds, case) = setup(dir.path(), &server, "\n[limits]\nmax_steps = 6\n");
    let store = dir.path().join("store");
    let stopped = run(&store, &case, &worlds);
    assert_eq!(stopped.json()["run_status"], "step_limit", "{stopped}");
    let id = stopped.json()["run_id"].as_str().unwrap().to_string();

    let same = resume(&store, &id, &[]);
    same.expect_code(2);
    assert!(same.stderr.contains("--max-steps"), "{same}");
    let lower = resume(&store, &id, &["--max-steps", "6"]);
    lower.expect_code(2);
    assert!(lower.stderr.contains("does not raise"), "{lower}");

    let sent = server.seen().len();
    let resumed = resume(&store, &id, &["--max-steps", "100"]);
    resumed.expect_code(0);
    assert_eq!(resumed.json()["run_status"], "completed", "{resumed}");
    assert_eq!(resumed.json()["limits"]["max_steps"], 100, "{resumed}");
    let (got, _) = entries(&resumed.bundle());
    assert_eq!(got, (0..CALLS as u64 - 1).collect::<Vec<_>>());
    let recorded = worldline_log::log::bundle::read(&stopped.bundle()).unwrap();
    let answered = recorded
        .events
        .iter()
        .filter(|e| e.call == MODEL_CALL)
        .count();
    assert_eq!(
        server.seen().len() - sent,
        CALLS - answered,
        "only the calls after the stop were sent"
    );
    let rid = resumed.json()["run_id"].as_str().unwrap().to_string();
    let replay = wl(&store, &["replay", &rid, "--json"].map(OsStr::new));
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");

    let finished = resume(&store, &rid, &[]);
    finished.expect_code(2);
    assert!(finished.stderr.contains("nothing to resume"), "{finished}");
}

/// A resume killed while it still followed its parent's recording holds
/// nothing its parent does not: resuming it resumes the parent (said on
/// stderr), with the limits it was given, and sends only the requests
/// the parent never made. It went live from its own end, sending again
/// every model request its parent had recorded after that point. (A kill
/// leaves a prefix of a bundle's lines: the resume's, cut inside the
/// parent's part, is such a kill.)
#[test]
fn a_resume_killed_while_it_followed_its_parent_resumes_the_parent() {
    let dir = temp_dir();
    let server = Server::start();
    let (worlds, case) = setup(dir.path(), &server, "\n[limits]\nmax_steps = 6\n");
    let store = dir.path().join("store");
    let stopped = run(&store, &case, &worlds);
    assert_eq!(stopped.json()["run_status"], "step_limit", "{stopped}");
    let parent = stopped.json()["run_id"].as_str().unwrap().to_string();
    let recorded = worldline_log::log::bundle::read(&stopped.bundle()).unwrap();
    let answered = (recorded.events.iter())
        .filter(|e| e.call == MODEL_CALL)
        .count();
    let resumed = resume(&store, &parent, &["--max-steps", "100"]);
    resumed.expect_code(0);
    let cut = resumed.json()["run_id"].as_str().unwrap().to_string();
    let text = std::fs::read_to_string(resumed.bundle()).unwrap();
    let parent_lines = std::fs::read_to_string(stopped.bundle())
        .unwrap()
        .lines()
        .count();
    let kept: Vec<&str> = text.lines().take(parent_lines / 2).collect();
    std::fs::write(resumed.bundle(), kept.join("\n") + "\n").unwrap();
    let killed = worldline_log::log::bundle::read(&resumed.bundle()).unwrap();
    assert!(killed.footer.is_none() && killed.events.len() < recorded.events.len());
    assert!(
        killed.events.iter().any(|e| e.call == MODEL_CALL),
        "the cut keeps a model call of the parent's"
    );

    let sent = server.seen().len();
    let again = resume(&store, &cut, &[]);
    again.expect_code(0);
    assert!(
        again
            .stderr
            .contains("was killed while it still followed the recording of"),
        "{again}"
    );
    assert_eq!(
        again.json()["resumed_from"]["run"],
        parent.as_str(),
        "{again}"
    );
    assert_eq!(again.json()["limits"]["max_steps"], 100, "{again}");
    assert_eq!(
        server.seen().len() - sent,
        CALLS - answered,
        "only the calls after the parent's end were sent"
    );
    let (got, _) = entries(&again.bundle());
    assert_eq!(got, (0..CALLS as u64 - 1).collect::<Vec<_>>());
    let rid = again.json()["run_id"].as_str().unwrap().to_string();
    let replay = wl(&store, &["replay", &rid, "--json"].map(OsStr::new));
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

#[test]
fn a_run_killed_inside_a_slow_writing_tool_resumes_only_when_asked_and_then_calls_it_once() {
    // The counters world's `spin` (a service tool that may write) runs until
    // its fuel is spent: with more fuel, a call long enough to be killed in.
    let dir = temp_dir();
    let worlds = common::counters(dir.path());
    let toml = worlds.join("counters/v1/world.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, text.replace("50_000_000", "800_000_000")).unwrap();
    let calls = json!([
        {"tool": "bump", "args": {"id": "a"}},
        {"tool": "spin", "args": {}},
        {"tool": "bump", "args": {"id": "a"}},
    ]);
    let case = common::counters_case(dir.path(), calls, "");
    let agent = guest("caller-agent");
    let run_args: Vec<&OsStr> = vec![
        "run".as_ref(),
        case.as_os_str(),
        "--agent".as_ref(),
        agent.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
    ];
    let whole = wl(
        &dir.path().join("whole"),
        &[&run_args[..], &["--json".as_ref()]].concat(),
    );
    whole.expect_code(0);
    let whole_writes = writes_of(&whole.bundle());

    let store = dir.path().join("killed");
    let mut child = crate::common::cli()
        .args(&run_args)
        .args([OsStr::new("--store"), store.as_os_str()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let bundle = bundle_when(&store, "the run never called spin", |t| {
        t.lines()
            .last()
            .is_some_and(|l| l.starts_with("{\"intent\"") && l.contains("\"spin\""))
    });
    child.kill().unwrap(); // SIGKILL, inside the spin call
    child.wait().unwrap();
    let killed = worldline_log::log::bundle::read(&bundle).unwrap();
    assert!(killed.footer.is_none(), "the run finished before the kill");
    let i = killed.in_flight.clone().expect("the spin call's intent");
    assert_eq!(
        (i.tool.as_deref(), i.seq),
        (Some("spin"), killed.events.len() as u64)
    );
    let id = bundle.file_stem().unwrap().to_str().unwrap().to_string();
    let history = wl(&store, &["history", &id].map(OsStr::new));
    assert!(
        history.stdout.contains(&format!(
            "killed inside tool `spin` (event {}",
            killed.events.len()
        )),
        "{history}"
    );
    let json = wl(&store, &["history", &id, "--json"].map(OsStr::new));
    let said = &json.json()["in_flight"];
    assert_eq!(
        (said["tool"].as_str(), said["seq"].as_u64()),
        (Some("spin"), Some(i.seq)),
        "{json}"
    );

    // Not called again unless the user says so.
    let refused = resume(&store, &id, &[]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("tool `spin`") && refused.stderr.contains("--resend-in-flight"),
        "{refused}"
    );
    let suite = wl(
        &store,
        &[
            "test".as_ref(),
            case.as_os_str(),
            "--resume".as_ref(),
            "--json".as_ref(),
        ],
    );
    suite.expect_code(2);
    let listed = &suite.json()["resumed"];
    assert_eq!(listed[0]["run"], id.as_str(), "{suite}");
    assert!(
        listed[0]["error"]
            .as_str()
            // A command `test` takes not: `worldline resume` does.
            .is_some_and(|e| e.contains(&format!(
                "`worldline resume {id} --resend-in-flight --store {}`",
                store.display()
            ))),
        "{suite}"
    );
    // Nor by a fork at its end, which is a resume without the asking.
    let end = killed.events.len().to_string();
    let fork = wl(&store, &["fork", &id, "--at", &end].map(OsStr::new));
    fork.expect_code(2);
    assert!(
        fork.stderr.contains("killed inside a call of tool `spin`")
            && fork.stderr.contains("--resend-in-flight"),
        "{fork}"
    );
    assert_eq!(std::fs::read_dir(store.join("runs")).unwrap().count(), 1);
    // A fork there that denies the tool makes no call of it: the edit
    // applies at the killed run's end, as docs/cli.md says (it was
    // refused as if it called the tool again).
    let denied = wl(
        &store,
        &["fork", &id, "--at", &end, "--deny", "spin", "--json"].map(OsStr::new),
    );
    let fork_id = denied.json()["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{denied}"))
        .to_string();
    let fork_bundle = store.join("runs").join(format!("{fork_id}.jsonl"));
    let denial = common::read_bundle(&fork_bundle)
        .events
        .into_iter()
        .find(|e| e["call"] == "worldline:agent/tools.call" && e["seq"].as_u64() == Some(i.seq));
    assert!(
        denial.is_some_and(|e| e["response"]["error"]["kind"] == "denied"),
        "{denied}"
    );
    std::fs::remove_file(&fork_bundle).unwrap();
    wl(&store, &["index", "--rebuild"].map(OsStr::new)).expect_code(0);

    let resumed = resume(&store, &id, &["--resend-in-flight"]);
    resumed.expect_code(0);
    assert_eq!(resumed.json()["in_flight"]["tool"], "spin", "{resumed}");
    assert_eq!(
        resumed.json()["final_state_hash"],
        whole.json()["final_state_hash"],
        "{resumed}"
    );
    assert_eq!(
        writes_of(&resumed.bundle()),
        whole_writes,
        "a write applied twice"
    );
    let rid = resumed.json()["run_id"].as_str().unwrap().to_string();
    let history = wl(&store, &["history", &rid].map(OsStr::new));
    assert!(
        history.stdout.contains(&format!(
            "in flight when {id} was killed: tool `spin`, made again at event {}",
            killed.events.len()
        )),
        "{history}"
    );
    let replay = wl(&store, &["replay", &rid, "--json"].map(OsStr::new));
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

/// The bundle a run being written into `store` has, polled until its text
/// satisfies `ready` (ten minutes at most, else `never` is the failure).
fn bundle_when(store: &Path, never: &str, ready: impl Fn(&str) -> bool) -> PathBuf {
    another_bundle_when(store, &[], never, ready)
}

/// [`bundle_when`] of a run other than those whose bundles are `known`.
fn another_bundle_when(
    store: &Path,
    known: &[PathBuf],
    never: &str,
    ready: impl Fn(&str) -> bool,
) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let found = std::fs::read_dir(store.join("runs"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "jsonl") && !known.contains(p));
        if let Some(p) = found
            && std::fs::read_to_string(&p).is_ok_and(|t| ready(&t))
        {
            return p;
        }
        assert!(Instant::now() < deadline, "{never}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How many writes a run's events made.
fn writes_of(bundle: &Path) -> usize {
    let b = worldline_log::log::bundle::read(bundle).unwrap();
    b.events.iter().map(|e| e.writes.len()).sum()
}

/// A run the watchdog stopped (`[limits] timeout_ms`) resumes with
/// `--timeout-ms` raised: its prefix followed again under the new limit,
/// then live to its end, and replays `identical`; without the flag it is
/// refused naming it. It was resumed under the same limit, which stopped
/// it again (no flag raised it).
#[test]
fn a_run_stopped_at_its_time_limit_resumes_with_the_limit_raised() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let call = json!({"tool": "list_deploys", "args": {"service": "checkout"}});
    let case = write_case(
        dir.path(),
        "slow",
        &format!(
            "world = \"demo@v1\"\nclock = 2026-03-01T12:00:00Z\ntask = {}\n[limits]\ntimeout_ms = 100\nfuel = 100_000_000_000\n",
            common::toml_inline(&json!({"work": 30_000_000, "calls": [call, call, call]}))
        ),
    );
    let stopped = run_agent(&store, &case, &common::worlds_dir(), "caller-agent");
    assert_eq!(stopped.json()["run_status"], "timeout", "{stopped}");
    let id = stopped.json()["run_id"].as_str().unwrap().to_string();
    let same = resume(&store, &id, &[]);
    same.expect_code(2);
    assert!(same.stderr.contains("pass --timeout-ms"), "{same}");
    let resumed = resume(&store, &id, &["--timeout-ms", "600000"]);
    resumed.expect_code(0);
    assert_eq!(resumed.json()["run_status"], "completed", "{resumed}");
    assert_eq!(resumed.json()["limits"]["timeout_ms"], 600_000, "{resumed}");
    let rid = resumed.json()["run_id"].as_str().unwrap().to_string();
    let replay = wl(&store, &["replay", &rid, "--json"].map(OsStr::new));
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

/// A limit a resume cannot raise is refused naming its flag, and no run
/// is made: a step limit where the run had none lowers it (the run was cut
/// inside the prefix it follows, and said it resumed there); a value past
/// what a case may state (`--timeout-ms` past a day named a store object,
/// `--max-events` past 5,000,000 ran with it).
#[test]
fn a_limit_a_resume_cannot_raise_is_refused_naming_its_flag() {
    let dir = temp_dir();
    let server = Server::start();
    let (worlds, case) = setup(dir.path(), &server, "");
    let store = dir.path().join("store");
    let done = run(&store, &case, &worlds);
    let id = done.json()["run_id"].as_str().unwrap().to_string();
    let bundle = std::fs::read_to_string(common::bundle_in(&store, &id)).unwrap();
    let cut: String = bundle.lines().take(6).map(|l| format!("{l}\n")).collect();
    let killed = "20261204-000010-aaaa0010";
    std::fs::write(common::bundle_in(&store, killed), cut).unwrap();
    let lower = resume(&store, killed, &["--max-steps", "1"]);
    lower.expect_code(2);
    assert!(
        lower
            .stderr
            .contains("1 does not raise the run's max_steps: it has none"),
        "{lower}"
    );
    for (flag, value, most) in [
        ("--timeout-ms", "86400001", "86400000"),
        ("--max-events", "5000001", "5000000"),
    ] {
        let out = resume(&store, killed, &[flag, value]);
        out.expect_code(2);
        let error = &out.json()["error"];
        assert_eq!(error["file"], flag, "{out}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains(&format!("{value} is past {most}")),
            "{out}"
        );
    }
    assert_eq!(
        std::fs::read_dir(store.join("runs")).unwrap().count(),
        2,
        "no run was made"
    );
}

/// `test --resume` resumes runs as recorded: `--group K`, which asks for
/// K new rollouts of each case, is refused with it, as `--repeat` is (it
/// was taken and ignored, the suite saying nothing of the group).
#[test]
fn a_suite_s_resume_refuses_a_group_as_it_does_a_repeat() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "c", "world = \"demo@v1\"\n");
    for flag in ["--group", "--repeat"] {
        let out = wl(
            &store,
            &[
                "test".as_ref(),
                case.as_os_str(),
                "--resume".as_ref(),
                flag.as_ref(),
                "3".as_ref(),
            ],
        );
        out.expect_code(2);
        assert!(
            out.stderr.contains("'--resume' cannot be used with") && out.stderr.contains(flag),
            "{flag}: {out}"
        );
    }
}

/// `test --resume` of two case files of the same content (the same hash)
/// names each killed run's own case, the one it recorded (the last of
/// the two named both).
#[test]
fn a_suite_s_resume_names_each_run_s_own_case_when_two_cases_are_alike() {
    let dir = temp_dir();
    let server = Server::start();
    let (worlds, case) = setup(dir.path(), &server, "");
    let text = std::fs::read_to_string(&case).unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let store = dir.path().join("store");
    let agent = guest("looper-agent");
    let mut killed: Vec<(String, PathBuf)> = Vec::new();
    for name in ["ledger-a", "ledger-b"] {
        let case = write_case(&cases, name, &text);
        let mut child = crate::common::cli()
            .args([
                OsStr::new("run"),
                case.as_os_str(),
                "--agent".as_ref(),
                agent.as_os_str(),
            ])
            .args([
                OsStr::new("--worlds"),
                worlds.as_os_str(),
                "--store".as_ref(),
                store.as_os_str(),
            ])
            .env(KEY_VAR, "sk-local")
            .env("WORLDLINE_STORE_CACHE", common::store_cache())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let known: Vec<PathBuf> = killed.iter().map(|(_, b)| b.clone()).collect();
        let bundle = another_bundle_when(&store, &known, "the run never reached 4 lines", |t| {
            t.lines().count() >= 4
        });
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let b = worldline_log::log::bundle::read(&bundle).unwrap();
        assert!(
            b.footer.is_none(),
            "{name}: the run finished before the kill"
        );
        assert_eq!(b.header.case, name);
        killed.push((name.to_string(), bundle));
    }
    let out = wl(
        &store,
        &[
            "test".as_ref(),
            cases.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--resume".as_ref(),
            "--json".as_ref(),
        ],
    );
    out.expect_code(0);
    let all = out.json()["resumed"].as_array().unwrap().clone();
    assert_eq!(all.len(), 2, "{out}");
    for (name, bundle) in &killed {
        let id = bundle.file_stem().unwrap().to_str().unwrap();
        let entry = all.iter().find(|r| r["run"] == id).expect("resumed");
        assert_eq!(entry["case"], name.as_str(), "{out}");
    }
}

/// `test --resume` of a killed run whose resume was killed while it
/// still followed it resumes the killed run, once: the resume holds
/// nothing new (it was resumed from its own end instead, sending again
/// every request its parent had recorded after that point, and its
/// parent, taken as resumed, was not).
#[test]
fn a_suite_s_resume_goes_on_from_a_run_whose_resume_died_following_it() {
    let dir = temp_dir();
    let server = Server::start();
    let (worlds, case) = setup(dir.path(), &server, "");
    let store = dir.path().join("store");
    let agent = guest("looper-agent");
    let mut child = crate::common::cli()
        .args([
            OsStr::new("run"),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
        ])
        .args([
            OsStr::new("--worlds"),
            worlds.as_os_str(),
            "--store".as_ref(),
            store.as_os_str(),
        ])
        .env(KEY_VAR, "sk-local")
        .env("WORLDLINE_STORE_CACHE", common::store_cache())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let bundle = bundle_when(&store, "the run never made 4 model calls", |t| {
        t.matches(MODEL_CALL).count() >= 8
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed = worldline_log::log::bundle::read(&bundle).unwrap();
    assert!(killed.footer.is_none(), "the run finished before the kill");
    let parent = bundle.file_stem().unwrap().to_str().unwrap().to_string();
    // Its resume, cut inside the parent's part (a kill leaves a prefix).
    let resumed = resume(&store, &parent, &[]);
    resumed.expect_code(0);
    let text = std::fs::read_to_string(resumed.bundle()).unwrap();
    let lines = std::fs::read_to_string(&bundle).unwrap().lines().count();
    let kept: Vec<&str> = text.lines().take(lines / 2).collect();
    std::fs::write(resumed.bundle(), kept.join("\n") + "\n").unwrap();
    let cut = worldline_log::log::bundle::read(&resumed.bundle()).unwrap();
    assert!(cut.footer.is_none() && cut.events.len() < killed.events.len());
    // The index reads the cut bundle again (it was edited in place).
    wl(&store, &["index", "--rebuild"].map(OsStr::new)).expect_code(0);

    let answered = (killed.events.iter())
        .filter(|e| e.call == MODEL_CALL)
        .count();
    let test = |sent: &mut usize| {
        let out = wl(
            &store,
            &[
                "test".as_ref(),
                case.as_os_str(),
                "--worlds".as_ref(),
                worlds.as_os_str(),
                "--resume".as_ref(),
                "--json".as_ref(),
            ],
        );
        let made = server.seen().len() - *sent;
        *sent = server.seen().len();
        (out, made)
    };
    let mut sent = server.seen().len();
    let (out, made) = test(&mut sent);
    out.expect_code(0);
    let all = out.json()["resumed"].as_array().unwrap().clone();
    assert_eq!(all.len(), 1, "{out}");
    assert_eq!(all[0]["run"], parent.as_str(), "{out}");
    // An in-flight request at the kill may be sent once more.
    let left = CALLS - answered;
    assert!(
        made == left || made == left + 1,
        "{made} sent, {left} left: {out}"
    );
    let (again, made) = test(&mut sent);
    assert_eq!(
        again.json()["resumed"].as_array().map(Vec::len),
        Some(0),
        "{again}"
    );
    assert_eq!(made, 0, "{again}");
}

/// `test --resume` refuses what it would ignore: `--fail-fast` (every
/// incomplete run is resumed) and `--model-seed` (a resumed run goes on
/// with the seed it recorded); both were taken and ignored, unsaid.
#[test]
fn test_resume_refuses_the_flags_it_would_ignore() {
    let dir = temp_dir();
    for flag in [&["--fail-fast"][..], &["--model-seed", "3"][..]] {
        let args = [&["test", "--resume"][..], flag].concat();
        let out = common::worldline_at(dir.path(), &args, &[]);
        out.expect_code(2);
        assert!(out.stderr.contains("cannot be used with"), "{out}");
    }
}
