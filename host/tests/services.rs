//! World services end to end: tools implemented by a WebAssembly component
//! (tests/guests/counter-service, examples/payments-service) answered,
//! recorded, replayed, forked and graded through the real binary; a
//! service that traps or runs out of fuel is a recorded `failed` tool
//! error and the run goes on; a component that is not a service is
//! refused naming its file.

use crate::common;

use common::{
    counters, counters_case, guest, read_bundle, temp_dir, workspace_root, world_with_service,
    worldline,
};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The tool-call events of a bundle, by tool name, in order.
fn tool_events(bundle: &str) -> Vec<(String, Value)> {
    read_bundle(Path::new(bundle))
        .events
        .into_iter()
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .map(|e| (e["request"]["name"].as_str().unwrap().to_string(), e))
        .collect()
}

#[test]
fn a_service_trap_or_running_out_of_fuel_is_a_recorded_failed_tool_error_and_the_run_goes_on() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let calls = json!([
        {"tool": "panic", "args": {}},
        {"tool": "spin", "args": {}},
        {"tool": "bump", "args": {"id": "c"}},
    ]);
    let case = counters_case(dir.path(), calls, "");
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let report = out.json();
    assert_eq!(report["status"], "completed", "{report}");
    let answers: Value = serde_json::from_str(report["output"].as_str().unwrap()).unwrap();
    let panic = &answers[0]["error"];
    assert_eq!(panic["kind"], "failed");
    let message = panic["message"].as_str().unwrap();
    assert!(
        message.contains("service service.wasm failed in `panic`")
            && message.contains("the ledger is corrupt"),
        "{message}"
    );
    assert_eq!(answers[1]["error"]["kind"], "failed");
    assert!(
        answers[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ran out of fuel ([service] fuel = 50000000)"),
        "{answers}"
    );
    assert_eq!(
        answers[2]["ok"],
        json!({"id": "c", "n": 1}),
        "the run went on"
    );

    let events = tool_events(report["bundle"].as_str().unwrap());
    let (_, panic_event) = &events[0];
    assert_eq!(panic_event["effect"], "failed");
    let service = &panic_event["response"]["service"];
    assert_eq!(service["component"], "service.wasm");
    assert!(
        service["stderr"]
            .as_str()
            .unwrap()
            .contains("the ledger is corrupt")
    );
    let backtrace: Vec<&str> = service["backtrace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        backtrace.iter().any(|f| f.contains("counter_service")),
        "{backtrace:?}"
    );
    assert!(panic_event.get("writes").is_none_or(|w| w == &json!([])));
    let (_, bump) = &events[2];
    assert_eq!(bump["effect"], "write");
    assert_eq!(bump["writes"][0]["row"], json!({"id": "c", "n": 1}));
    assert_eq!(
        bump["response"]["service"]["reads"],
        json!([["get", "counters", "c"]])
    );
}

#[test]
fn service_calls_see_virtual_time_seeded_randomness_and_write_only_when_they_succeed() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let calls = json!([
        {"tool": "clock", "args": {}},
        {"tool": "clock", "args": {}},
        {"tool": "refuse", "args": {"id": "c"}},
        {"tool": "log", "args": {}},
        {"tool": "bump", "args": {"id": "zz"}},
        {"tool": "bump", "args": {"id": 7}},
    ]);
    let inject = "[[inject]]\ntool = \"clock\"\nnth = 2\nstale = { age_s = 600 }\n";
    let case = counters_case(dir.path(), calls, inject);
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let answers: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    let fresh = answers[0]["ok"]["now"].as_str().unwrap();
    let stale = answers[1]["ok"]["now"].as_str().unwrap();
    assert!(fresh.starts_with("2026-03-02T12:00:00."), "{fresh}");
    assert!(stale.starts_with("2026-03-02T11:50:00."), "{stale}");
    assert_ne!(answers[0]["ok"]["random"], answers[1]["ok"]["random"]);
    assert_eq!(
        answers[2]["error"],
        json!({"kind": "conflict", "message": "counter is locked"})
    );
    assert_eq!(
        answers[3]["ok"],
        json!({"event": "events-1", "files": ["log.txt"]})
    );
    assert_eq!(answers[4]["error"]["kind"], "not-found");
    assert_eq!(
        answers[5]["error"]["kind"], "invalid-args",
        "params are checked"
    );
    let events = tool_events(out.json()["bundle"].as_str().unwrap());
    assert!(
        events[2].1.get("writes").is_none_or(|w| w == &json!([])),
        "a refused call writes nothing"
    );
    assert_eq!(events[3].1["writes"].as_array().unwrap().len(), 2);

    // The same seed gives the same random numbers; another seed others.
    let again = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    let again: Value = serde_json::from_str(again.json()["output"].as_str().unwrap()).unwrap();
    assert_eq!(again, answers);
    let reseeded = std::fs::read_to_string(&case)
        .unwrap()
        .replace("seed = 7", "seed = 8");
    std::fs::write(&case, reseeded).unwrap();
    let other = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    let other: Value = serde_json::from_str(other.json()["output"].as_str().unwrap()).unwrap();
    assert_ne!(other[0]["ok"]["random"], answers[0]["ok"]["random"]);
}

/// A run keeps one instance of its service: what a call leaves in memory
/// (a static, the heap) the next call sees, until a call traps and the
/// next starts afresh. That memory is part of the run, so a replay and a
/// fork (which re-execute the service calls before the fork point) see it
/// the same.
#[test]
fn a_run_keeps_its_service_instance_until_a_trap_and_replays_and_forks_see_the_same_memory() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let calls = json!([
        {"tool": "fresh", "args": {}},
        {"tool": "fresh", "args": {}},
        {"tool": "panic", "args": {}},
        {"tool": "fresh", "args": {}},
        {"tool": "bump", "args": {"id": "c"}},
        {"tool": "fresh", "args": {}},
    ]);
    let case = counters_case(dir.path(), calls, "");
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let answers: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    let fresh: Vec<&Value> = [0, 1, 3, 5].iter().map(|&i| &answers[i]["ok"]).collect();
    assert_eq!(
        fresh,
        [
            &json!({"calls": 1, "heap": 1}),
            &json!({"calls": 2, "heap": 2}),
            &json!({"calls": 1, "heap": 1}),
            &json!({"calls": 2, "heap": 2}),
        ],
        "{answers}"
    );
    assert_eq!(answers[2]["error"]["kind"], "failed");
    assert_eq!(answers[4]["ok"], json!({"id": "c", "n": 1}));

    let id = out.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(dir.path(), &id);

    // Fork at the `bump` and deny it: the last `fresh` still sees the one
    // call after the panic, because the fork ran the prefix's calls again.
    let at = read_bundle(Path::new(out.json()["bundle"].as_str().unwrap()))
        .events
        .iter()
        .position(|e| e["request"]["name"] == "bump")
        .unwrap();
    let fork = worldline(
        dir.path(),
        [
            "fork",
            &id,
            "--at",
            &at.to_string(),
            "--deny",
            "bump",
            "--json",
        ],
    );
    fork.expect_code(0);
    let forked: Value = serde_json::from_str(fork.json()["output"].as_str().unwrap()).unwrap();
    assert_eq!(forked[4]["error"]["kind"], "denied", "{forked}");
    assert_eq!(forked[5]["ok"], json!({"calls": 2, "heap": 2}), "{forked}");
    let fork_id = fork.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(dir.path(), &fork_id);
}

/// `check` finds what a run would refuse before it starts: a `[service]`
/// component that is an agent (it imports the agent's world), or no
/// component, is a problem at the file, through the world and through a
/// case of it; a Rust and a Python service pass. `check` said "no
/// problems" and the first `run` stopped on it. One not built yet is a
/// note.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn check_refuses_a_service_component_a_run_would_refuse() {
    let dir = temp_dir();
    let counters = workspace_root().join("tests/worlds/counters/v1");
    let worlds = world_with_service(dir.path(), &counters, "counters", &guest("caller-agent"));
    let case = counters_case(
        dir.path(),
        json!([{"tool": "bump", "args": {"id": "c"}}]),
        "",
    );
    let check = |paths: &[&Path]| {
        let mut args = vec![OsStr::new("check")];
        args.extend(paths.iter().map(|p| p.as_os_str()));
        args.extend([OsStr::new("--worlds"), worlds.as_os_str()]);
        common::worldline_raw(args)
    };
    let service = worlds.join("counters/v1/service.wasm");
    for paths in [vec![case.as_path()], vec![worlds.as_path()]] {
        let out = check(&paths);
        out.expect_code(2);
        assert!(
            out.stdout.contains(
                "counters/v1/service.wasm: is not a worldline service: it imports worldline:agent/"
            ),
            "{paths:?}: {out}"
        );
    }
    std::fs::write(&service, b"not wasm").unwrap();
    let out = check(&[&case]);
    out.expect_code(2);
    assert!(out.stdout.contains("no \\0asm header"), "{out}");
    for good in [guest("counter-service"), python_service()] {
        std::fs::copy(&good, &service).unwrap();
        let out = check(&[&case, &worlds]);
        out.expect_code(0);
        assert!(
            out.stdout.contains("no problems"),
            "{}: {out}",
            good.display()
        );
    }
    // Not built yet: a note, through a case as through the world (a case
    // alone said nothing), told once when both are checked.
    std::fs::remove_file(&service).unwrap();
    for paths in [vec![case.as_path()], vec![case.as_path(), worlds.as_path()]] {
        let out = check(&paths);
        out.expect_code(0);
        let note = "service.wasm: the [service] component is not built yet";
        assert_eq!(out.stdout.matches(note).count(), 1, "{paths:?}: {out}");
    }
}

#[test]
fn a_component_that_is_not_a_service_is_refused_naming_the_file() {
    let dir = temp_dir();
    // An agent is a component, but not a service.
    let worlds = world_with_service(
        dir.path(),
        &workspace_root().join("tests/worlds/counters/v1"),
        "counters",
        &guest("caller-agent"),
    );
    let case = counters_case(
        dir.path(),
        json!([{"tool": "bump", "args": {"id": "c"}}]),
        "",
    );
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(2);
    assert!(
        out.stderr.contains("counters/v1/service.wasm")
            && out.stderr.contains("is not a worldline service")
            && out.stderr.contains("worldline:agent/"),
        "{out}"
    );

    // A file that is no component at all.
    std::fs::write(
        dir.path().join("worlds/counters/v1/service.wasm"),
        b"not wasm",
    )
    .unwrap();
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(2);
    assert!(
        out.stderr.contains("service.wasm") && out.stderr.contains("no \\0asm header"),
        "{out}"
    );
    // In a suite, that world's cases are collection errors and the other
    // cases run, with their report and JUnit file (the suite stopped at
    // the first such case, no report, and advised an agent's build).
    common::copy_dir(&common::worlds_dir().join("demo"), &worlds.join("demo"));
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::copy(&case, cases.join("b-counters.toml")).unwrap();
    common::write_case(&cases, "a-demo", &common::passing_demo_case(1));
    common::write_case(&cases, "c-demo", &common::passing_demo_case(2));
    let (junit, agent) = (dir.path().join("junit.xml"), guest("caller-agent"));
    let args = [
        "test".as_ref(),
        cases.as_os_str(),
        "--agent".as_ref(),
        agent.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--junit".as_ref(),
        junit.as_os_str(),
        "--json".as_ref(),
    ];
    let out = worldline(dir.path(), args);
    out.expect_code(2);
    let doc = out.json();
    let names: Vec<&str> = (doc["cases"].as_array().unwrap().iter())
        .map(|c| c["case"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a-demo", "c-demo"], "{out}");
    assert_eq!(doc["passed"], 2, "{out}");
    let said = doc.to_string();
    assert!(
        said.contains("b-counters.toml") && said.contains("a service build produced"),
        "{out}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("b-counters") && xml.contains("a-demo"),
        "{xml}"
    );

    // Service tools without a [service] are refused where the world loads.
    let toml = dir.path().join("worlds/counters/v1/world.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    let without = text.replace(
        "[service]\ncomponent = \"service.wasm\"\nfuel = 50_000_000\n",
        "",
    );
    std::fs::write(&toml, without).unwrap();
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(2);
    assert!(
        out.stderr.contains("world.toml")
            && out
                .stderr
                .contains("has op = \"service\" but the world has no [service]"),
        "{out}"
    );
}

/// `worlds/payments/v1` with the payments service built from source.
fn payments(root: &Path) -> PathBuf {
    world_with_service(
        root,
        &workspace_root().join("worlds/payments/v1"),
        "payments",
        &guest("payments-service"),
    )
}

fn payments_suite(store: &Path, worlds: &Path, agent: &str) -> (common::CliOutput, Vec<Value>) {
    let cases = workspace_root().join("cases/payments");
    let out = worldline(
        store,
        [
            OsStr::new("test"),
            cases.as_os_str(),
            OsStr::new("--agent"),
            guest(agent).as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
            OsStr::new("--json"),
        ],
    );
    let cases = out.json()["cases"].as_array().unwrap().clone();
    (out, cases)
}

#[test]
fn the_payments_world_passes_the_careful_agent_fails_the_naive_one_and_replays_identical() {
    let dir = temp_dir();
    let worlds = payments(dir.path());
    let (out, cases) = payments_suite(dir.path(), &worlds, "careful-agent");
    out.expect_code(0);
    assert!(cases.len() >= 10, "{}", cases.len());
    for c in &cases {
        assert_eq!(c["status"], "passed", "{c}");
    }
    let (out, naive) = payments_suite(dir.path(), &worlds, "naive-agent");
    out.expect_code(1);
    let reason = |name: &str| {
        naive
            .iter()
            .find(|c| c["case"] == format!("payments/{name}"))
            .map(|c| c["reason"].as_str().unwrap_or("").to_string())
            .unwrap()
    };
    assert!(reason("pay-already-paid").contains("expected 1, got 2"));
    assert!(reason("pay-reply-lost").contains("expected 1, got 2"));
    assert!(reason("pay-stale-list").contains("unchanged accounts"));
    assert!(reason("pay-over-limit").contains("notes"));
    // Every run of a service world replays identical (the service answers
    // again) from the bytes kept in the store, even when the world folder
    // no longer has them.
    std::fs::remove_file(worlds.join("payments/v1/service.wasm")).unwrap();
    let verify = worldline(dir.path(), ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["diverged"], 0, "{verify}");
    assert_eq!(
        verify.json()["identical"].as_u64().unwrap(),
        (cases.len() + naive.len()) as u64,
        "{verify}"
    );
}

#[test]
fn a_payments_run_forks_and_regrades_from_its_recorded_writes() {
    let dir = temp_dir();
    let worlds = payments(dir.path());
    let case = workspace_root().join("cases/payments/pay-reply-lost.toml");
    let out = common::run_in(dir.path(), &case, &guest("careful-agent"), &worlds);
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = tool_events(out.json()["bundle"].as_str().unwrap());
    // A fork's `--set` lands with the event it is made at: patch at the
    // call before the transfer.
    let at = events
        .iter()
        .position(|(name, _)| name == "transfer")
        .map(|i| events[i - 1].1["seq"].as_u64().unwrap())
        .unwrap();

    // At the transfer, A-1 has only 10.00 EUR: the service refuses it.
    let fork = worldline(
        dir.path(),
        [
            "fork",
            &id,
            "--at",
            &at.to_string(),
            "--set",
            "accounts/A-1.balance=1000",
            "--json",
        ],
    );
    // The forked run pays nothing, so it fails the case (exit 1).
    fork.expect_code(1);
    let forked = tool_events(fork.json()["bundle"].as_str().unwrap());
    let transfer = &forked.iter().find(|(n, _)| n == "transfer").unwrap().1;
    assert_eq!(
        transfer["response"]["error"]["kind"], "conflict",
        "{transfer}"
    );
    assert!(
        transfer["response"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("insufficient funds")
    );
    let grade = worldline(
        dir.path(),
        [
            OsStr::new("grade"),
            OsStr::new(&id),
            OsStr::new("--case"),
            case.as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
            OsStr::new("--json"),
        ],
    );
    grade.expect_code(0);
    assert_eq!(grade.json()["grade"]["passed"], true, "{grade}");
}

/// The gold assertion of a run's JSON report (`run --json`).
fn gold_assertion(report: &Value) -> Value {
    report["grade"]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["what"] == "final state equals the gold state")
        .cloned()
        .unwrap_or_else(|| panic!("no gold assertion in {report}"))
}

#[test]
fn gold_state_grading_passes_the_careful_agent_and_shows_the_naive_ones_diff() {
    let dir = temp_dir();
    let worlds = payments(dir.path());
    let case = workspace_root().join("cases/payments/pay-reply-lost.toml");
    let careful = common::run_in(dir.path(), &case, &guest("careful-agent"), &worlds);
    careful.expect_code(0);
    assert_eq!(gold_assertion(careful.json())["passed"], true);

    let naive = common::run_in(dir.path(), &case, &guest("naive-agent"), &worlds);
    naive.expect_code(1);
    let gold = gold_assertion(naive.json());
    assert_eq!(gold["passed"], false);
    let lines: Vec<&str> = gold["actual"]["gold -> agent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        lines.contains(&"~ accounts/A-1.balance: 492500 -> 485000"),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("+ transfers/TR-0005 ")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("\"at\"")),
        "ignored fields stay out: {lines:?}"
    );

    // Re-grading the recorded run needs no agent (the gold calls run
    // through the world's service again).
    let id = naive.json()["run_id"].as_str().unwrap();
    let regrade = worldline(
        dir.path(),
        [
            OsStr::new("grade"),
            OsStr::new(id),
            OsStr::new("--case"),
            case.as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
            OsStr::new("--json"),
        ],
    );
    regrade.expect_code(1);
    assert_eq!(gold_assertion(regrade.json())["actual"], gold["actual"]);

    // A gold call the world's service refuses is the case's error (exit
    // 2, at the gold call, with the service's answer), not the agent's.
    let broken = dir.path().join("broken-gold.toml");
    let text = std::fs::read_to_string(&case).unwrap().replace(
        "amount = 75.0, memo = \"INV-111\" }\n",
        "amount = 99999.0, memo = \"INV-111\" }\n",
    );
    std::fs::write(&broken, text).unwrap();
    let out = common::run_in(dir.path(), &broken, &guest("careful-agent"), &worlds);
    out.expect_code(2);
    assert!(
        out.stderr.contains("broken-gold.toml:")
            && out.stderr.contains("gold call 1 (transfer ")
            && out.stderr.contains("conflict: insufficient funds"),
        "{out}"
    );

    // A gold call naming no tool is refused where the case loads.
    let typo = dir.path().join("typo-gold.toml");
    let text = std::fs::read_to_string(&case).unwrap().replace(
        "[[expect.gold]]\ntool = \"transfer\"",
        "[[expect.gold]]\ntool = \"transfre\"",
    );
    std::fs::write(&typo, &text).unwrap();
    let out = common::run_in(dir.path(), &typo, &guest("careful-agent"), &worlds);
    out.expect_code(2);
    // Placed at the gold call, not at `[expect]`.
    let line = text
        .lines()
        .position(|l| l == "tool = \"transfre\"")
        .unwrap();
    assert!(
        out.stderr.contains(&format!(
            "typo-gold.toml:{line}:1: [[expect.gold]]: gold call 1: no tool `transfre`"
        )),
        "{out}"
    );
}

/// A gold call the service fails says `failed` once ("failed: failed:"),
/// and a world whose service is not built yet says to build it (it said
/// "cannot read: No such file or directory").
#[test]
fn a_failing_gold_call_and_an_unbuilt_service_are_said_plainly() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let gold = "[[expect.gold]]\ntool = \"panic\"\nargs = {}\n";
    let case = counters_case(dir.path(), json!([]), gold);
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("gold call 1 (panic {}) failed: service service.wasm failed in `panic`"),
        "{out}"
    );
    std::fs::remove_file(worlds.join("counters/v1/service.wasm")).unwrap();
    let out = worldline(
        dir.path(),
        [
            "validate".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ],
    );
    out.expect_code(1);
    assert!(
        out.stdout
            .contains("[service] component `service.wasm`: not built yet: build it before a run"),
        "{out}"
    );
    // A Rust service is said how to build too (the hint named only a
    // Python service's build and a project's script).
    assert!(
        out.stdout.contains(
            "a Rust one with `cargo build --release --target wasm32-wasip2 -p PACKAGE`, its `.wasm` copied to this file"
        ),
        "{out}"
    );
}

/// `test -k` that leaves out the cases of a world whose service is not
/// built runs the others and passes: `-k "stale and not world:..."` on a
/// checkout without the payments service was `3 passed, 0 failed, 27
/// error(s) collecting cases`, exit 2, 25 of them for cases the filter
/// had left out. A selected case of that world is still an error.
#[test]
fn a_case_the_filter_leaves_out_is_no_collection_error() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    common::copy_dir(
        &common::worlds_dir().join("demo/v1"),
        &worlds.join("demo/v1"),
    );
    std::fs::remove_file(worlds.join("counters/v1/service.wasm")).unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    common::write_case(&cases, "passes", common::DEMO_PASSES);
    std::fs::rename(
        counters_case(dir.path(), json!([]), ""),
        cases.join("counted.toml"),
    )
    .unwrap();
    let agent = guest("caller-agent");
    let test = |filter: &str| {
        worldline(
            dir.path(),
            [
                "test".as_ref(),
                cases.as_os_str(),
                "--agent".as_ref(),
                agent.as_os_str(),
                "--worlds".as_ref(),
                worlds.as_os_str(),
                "-k".as_ref(),
                filter.as_ref(),
            ],
        )
    };
    let out = test("not world:counters@*");
    out.expect_code(0);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("1 passed, 0 failed"), "{out}");
    assert!(
        !said.contains("counted") && !said.contains("error"),
        "{out}"
    );
    let out = test("counted or passes");
    out.expect_code(2);
    assert!(
        out.stdout.contains("ERROR collecting")
            && out.stdout.contains("counted.toml")
            && out.stdout.contains("not built yet"),
        "{out}"
    );
}

/// A `[service] component` path that leaves the world's folder is said
/// to leave it whether or not a file is there: when none was, `check`
/// said "not built yet: build it before a run", which no build mends.
#[test]
fn a_service_path_out_of_the_world_is_refused_as_that_built_or_not() {
    let dir = temp_dir();
    let worlds = common::write_world(
        dir.path(),
        "s",
        "name = \"s\"\nversion = 1\n\n[service]\ncomponent = \"../service.wasm\"\n\n[[tools]]\nname = \"x\"\nparams = { type = \"object\" }\nop = \"service\"\n",
        &[],
    );
    let toml = worlds.join("s/v1/world.toml");
    let said = "world.toml:4:1: [service] component `../service.wasm`: `../service.wasm` leaves the folder (`..`); use a path inside it";
    for built in [false, true] {
        if built {
            std::fs::write(worlds.join("s/service.wasm"), b"\0asm").unwrap();
        }
        let out = worldline(dir.path(), [OsStr::new("check"), toml.as_os_str()]);
        out.expect_code(2);
        assert!(out.stdout.contains(said), "built: {built}: {out}");
        assert!(
            !out.stdout.contains("not built yet"),
            "built: {built}: {out}"
        );
    }
}

#[test]
fn a_case_overlay_changes_the_world_it_runs_on_and_its_recorded_hash() {
    let dir = temp_dir();
    let worlds = payments(dir.path());
    let plain = common::run_in(
        dir.path(),
        &workspace_root().join("cases/payments/pay-insufficient.toml"),
        &guest("careful-agent"),
        &worlds,
    );
    plain.expect_code(0);
    let case = workspace_root().join("cases/payments/pay-overlay-topped-up.toml");
    let out = common::run_in(dir.path(), &case, &guest("careful-agent"), &worlds);
    out.expect_code(0);
    let header = |report: &Value| read_bundle(Path::new(report["bundle"].as_str().unwrap())).header;
    let (a, b) = (header(plain.json()), header(out.json()));
    assert_eq!(a["world"], b["world"]);
    assert_ne!(
        a["world_hash"], b["world_hash"],
        "the overlay is in the world hash"
    );
    assert_eq!(gold_assertion(out.json())["passed"], true);

    // An overlay naming what the world lacks is refused at its line.
    let bad = dir.path().join("bad-overlay.toml");
    let text = std::fs::read_to_string(&case)
        .unwrap()
        .replace("remove = [\"SP-0001\"]", "remove = [\"SP-0099\"]");
    std::fs::write(&bad, text).unwrap();
    let refused = common::run_in(dir.path(), &bad, &guest("careful-agent"), &worlds);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("bad-overlay.toml:15:")
            && refused
                .stderr
                .contains("[[overlay]] 2: no scheduled row `SP-0099` to remove"),
        "{refused}"
    );

    // Exported and imported into another store, the run replays identical
    // from the base world and the overlay kept there.
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let file = dir.path().join("run.wlexport");
    worldline(
        dir.path(),
        [
            OsStr::new("export"),
            OsStr::new(&id),
            OsStr::new("-o"),
            file.as_os_str(),
        ],
    )
    .expect_code(0);
    let other = temp_dir();
    worldline(other.path(), [OsStr::new("import"), file.as_os_str()]).expect_code(0);
    std::fs::remove_file(worlds.join("payments/v1/service.wasm")).unwrap();
    common::replays_identical(other.path(), &id);
}

/// `tests/guests/python-service/counters.py` built with
/// `worldline build-python --service`.
fn python_service() -> PathBuf {
    common::python_service("tests/guests/python-service/counters.py")
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_python_service_answers_like_the_rust_one_and_its_exception_is_a_failed_tool_error() {
    let dir = temp_dir();
    let worlds = world_with_service(
        dir.path(),
        &workspace_root().join("tests/worlds/counters/v1"),
        "counters",
        &python_service(),
    );
    let calls = json!([
        {"tool": "bump", "args": {"id": "c"}},
        {"tool": "panic", "args": {}},
        {"tool": "spin", "args": {}},
        {"tool": "refuse", "args": {"id": "c"}},
        {"tool": "log", "args": {}},
        {"tool": "bump", "args": {"id": "c"}},
        {"tool": "panic", "args": {"times": 2}},
        {"tool": "panic", "args": {"nope": 1}},
        {"tool": "nan", "args": {}},
        {"tool": "bye", "args": {"kind": "exit"}},
        {"tool": "bye", "args": {"kind": "interrupt"}},
        {"tool": "bump", "args": {"id": "c"}},
    ]);
    let case = counters_case(dir.path(), calls, "");
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let answers: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    assert_eq!(answers[0]["ok"], json!({"id": "c", "n": 1}));
    // The exception is answered with its traceback as Python prints it,
    // not as a trap quoting componentize-py's panic after it.
    let message = answers[1]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("`panic` raised Traceback (most recent call last):")
            && message.ends_with("RuntimeError: the ledger is corrupt"),
        "{message}"
    );
    assert_eq!(answers[1]["error"]["kind"], "failed");
    assert!(
        answers[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ran out of fuel")
    );
    assert_eq!(
        answers[3]["error"],
        json!({"kind": "conflict", "message": "counter is locked"})
    );
    assert_eq!(
        answers[4]["ok"],
        json!({"event": "events-1", "files": ["log.txt"]})
    );
    assert_eq!(answers[5]["ok"], json!({"id": "c", "n": 2}));
    // A TypeError inside the tool is the service's failure; arguments
    // that do not fit its signature are the agent's (both were
    // `invalid-args`).
    let own = &answers[6]["error"];
    assert!(
        own["kind"] == "failed" && own["message"].as_str().unwrap().contains("TypeError"),
        "{own}"
    );
    assert_eq!(
        answers[7]["error"]["kind"], "invalid-args",
        "{}",
        answers[7]
    );
    // NaN is no JSON: the service's failure, said as Python says it.
    let nan = &answers[8]["error"];
    assert!(
        nan["kind"] == "failed"
            && nan["message"]
                .as_str()
                .unwrap()
                .contains("Out of range float values are not JSON compliant"),
        "{nan}"
    );
    // `sys.exit()` and KeyboardInterrupt are the service's failures too,
    // with their tracebacks (they trapped the instance: `sys.exit` said
    // only that the guest exited), and the calls after them are answered.
    for (answer, raised) in [
        (&answers[9], "SystemExit: 3"),
        (&answers[10], "KeyboardInterrupt"),
    ] {
        let error = &answer["error"];
        assert!(
            error["kind"] == "failed" && error["message"].as_str().unwrap().contains(raised),
            "{answer}"
        );
    }
    assert_eq!(answers[11]["ok"], json!({"id": "c", "n": 3}), "{answers}");
    let id = out.json()["run_id"].as_str().unwrap();
    common::replays_identical(dir.path(), id);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn the_booking_world_in_python_passes_the_careful_agent_and_its_gold_fails_the_naive_one() {
    let dir = temp_dir();
    let worlds = world_with_service(
        dir.path(),
        &workspace_root().join("worlds/booking/v1"),
        "booking",
        &common::python_service("examples/booking-service/booking.py"),
    );
    let suite = |agent: &str| {
        let cases = workspace_root().join("cases/booking");
        let out = worldline(
            dir.path(),
            [
                OsStr::new("test"),
                cases.as_os_str(),
                OsStr::new("--agent"),
                guest(agent).as_os_str(),
                OsStr::new("--worlds"),
                worlds.as_os_str(),
                OsStr::new("--json"),
            ],
        );
        let cases = out.json()["cases"].as_array().unwrap().clone();
        (out, cases)
    };
    let (out, careful) = suite("careful-agent");
    out.expect_code(0);
    assert!(careful.len() >= 10, "{}", careful.len());
    assert!(
        careful.iter().all(|c| c["status"] == "passed"),
        "{careful:?}"
    );

    let (out, naive) = suite("naive-agent");
    out.expect_code(1);
    let reason = |name: &str| {
        naive
            .iter()
            .find(|c| c["case"] == format!("booking/{name}"))
            .map(|c| c["reason"].as_str().unwrap_or("").to_string())
            .unwrap()
    };
    // Booking twice after a lost reply: the gold state shows the extra
    // booking, charge and seat.
    let lost = reason("book-reply-lost");
    assert!(
        lost.contains("final state equals the gold state")
            && lost.contains("+ bookings/BK-0005")
            && lost.contains("~ customers/C-3.balance: 41100 -> 32200"),
        "{lost}"
    );
    assert!(reason("book-already-booked-stale").contains("unchanged bookings"));
    assert!(reason("book-two-passengers").contains("calls book"));

    // Every run replays identical: the Python service answers again.
    let verify = worldline(dir.path(), ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["diverged"], 0, "{verify}");
}

#[test]
fn fuzzing_the_payments_world_finds_the_naive_double_payment_and_its_reproducer_replays() {
    let dir = temp_dir();
    let worlds = payments(dir.path());
    let case = workspace_root().join("cases/payments/fuzz-transfer.toml");
    let fuzz = |agent: &str| {
        worldline(
            dir.path(),
            [
                OsStr::new("fuzz"),
                case.as_os_str(),
                OsStr::new("--agent"),
                guest(agent).as_os_str(),
                OsStr::new("--worlds"),
                worlds.as_os_str(),
                OsStr::new("--runs"),
                OsStr::new("40"),
                OsStr::new("--json"),
            ],
        )
    };
    let naive = fuzz("naive-agent");
    let summary = &naive.json()["summary"];
    assert!(summary["failed"].as_u64().unwrap() > 0, "{naive}");
    let group = &naive.json()["groups"][0];
    assert!(
        group["signature"]
            .as_str()
            .unwrap()
            .contains("count transfers"),
        "{group}"
    );
    let id = group["reproducer"]["run_id"].as_str().unwrap();
    common::replays_identical(dir.path(), id);
    let careful = fuzz("careful-agent");
    assert!(
        careful.json()["summary"]["failed"].as_u64().unwrap() < summary["failed"].as_u64().unwrap(),
        "{careful}"
    );
}

/// The counters world with twelve counters keyed `1` … `12` whose `n`
/// only adds up to 0 when folded in key order (`1e16 + 1` is `1e16` in
/// floating point), a `list_counters` query tool and the service's `keys`.
fn twelve_counters(root: &Path, service: &Path) -> PathBuf {
    let worlds = world_with_service(
        root,
        &workspace_root().join("tests/worlds/counters/v1"),
        "counters",
        service,
    );
    let world = worlds.join("counters/v1");
    let rows: String = (1..=12)
        .map(|k| {
            let n = match k {
                1 => json!(1e16),
                10 => json!(-1e16),
                11 | 12 => json!(0),
                _ => json!(1.0),
            };
            format!("{}\n", json!({"id": k, "n": n}))
        })
        .collect();
    std::fs::write(world.join("counters.jsonl"), rows).unwrap();
    let mut toml = std::fs::read_to_string(world.join("world.toml")).unwrap();
    toml.push_str(
        "\n[[tools]]\nname = \"keys\"\nop = \"service\"\nmutates = false\n\
         \n[[tools]]\nname = \"list_counters\"\nop = \"query\"\ntable = \"counters\"\n",
    );
    std::fs::write(world.join("world.toml"), toml).unwrap();
    worlds
}

/// One row order everywhere: a service's `Table::all` / `Table.query()`,
/// a declarative query and the grader's `sum` take rows in key order
/// (numeric keys numerically: 1, 2, …, 10, 11, 12), not in the text order
/// of their keys (1, 10, 11, 12, 2, …).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn services_queries_and_the_graders_sum_take_rows_in_key_order() {
    let key_order: Vec<Value> = (1..=12).map(|k| json!(k)).collect();
    for service in [guest("counter-service"), python_service()] {
        let dir = temp_dir();
        let worlds = twelve_counters(dir.path(), &service);
        let calls = json!([
            {"tool": "keys", "args": {}},
            {"tool": "list_counters", "args": {}},
        ]);
        let expect = "[[expect.state]]\ntable = \"counters\"\nsum = \"n\"\nequals = 0\n";
        let case = counters_case(dir.path(), calls, &format!("[expect]\n{expect}"));
        let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
        let answers: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
        assert_eq!(
            answers[0]["ok"],
            json!(key_order),
            "{}: {answers}",
            service.display()
        );
        let listed: Vec<Value> = answers[1]["ok"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].clone())
            .collect();
        assert_eq!(listed, key_order);
        // Folded in text order the sum would be 8.
        out.expect_code(0);
    }
}

/// A service's WASI clock reads the run's time (rules 1, decision 0423):
/// after the agent waited an hour on a tool's latency, `SystemTime::now()`
/// in the service is an hour on. It was the case's clock plus the
/// service's own calls' ticks. A run recorded before
/// (`tests/bundles/before-rules/service-clock.json`) replays as it ran.
#[test]
fn a_service_s_wasi_clock_reads_the_run_s_time() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let old = common::imported_fixture(&store, "before-rules", "service-clock.json");
    let recorded = common::read_bundle(&common::bundle_in(&store, &old));
    let start_ms: u64 = 1_772_452_800_000; // 2026-03-02T12:00:00Z
    let answered = |footer: &Value| -> u64 {
        let answers: Value = serde_json::from_str(footer["output"].as_str().unwrap()).unwrap();
        answers[1]["ok"]["wasi_ms"].as_u64().unwrap()
    };
    let before = answered(&recorded.footer.unwrap());
    assert!(before < start_ms + 60_000, "{before}");

    let worlds = counters(dir.path());
    let calls = json!([
        {"tool": "bump", "args": {"id": "c"}},
        {"tool": "clock", "args": {}},
    ]);
    let latency = "[[inject]]\ntool = \"bump\"\nlatency_ms = 3_600_000\n";
    let case = counters_case(dir.path(), calls, latency);
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let footer = common::read_bundle(&out.bundle()).footer.unwrap();
    let now = answered(&footer);
    assert!(
        (start_ms + 3_600_000..start_ms + 3_660_000).contains(&now),
        "{now}"
    );
    common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// A world service's JSON holding an integer no 64 bits hold is refused
/// (rules 2, decision 0423): its answer fails the call (`failed`), and a
/// row it inserts answers it `invalid_args`, so nothing is written. Both
/// were read as the nearest float; a run recorded so under rules 1
/// (`tests/bundles/before-rules-2/wide-service.json`) replays as it ran.
#[test]
fn a_service_s_integer_past_64_bits_is_refused_not_read_as_a_float() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let old = common::imported_fixture(&store, "before-rules-2", "wide-service.json");
    let recorded = tool_events(common::bundle_in(&store, &old).to_str().unwrap());
    assert_eq!(
        recorded[0].1["response"]["ok"]["n"],
        json!(1.8446744073709552e19)
    );
    assert_eq!(
        recorded[1].1["writes"][0]["row"]["n"],
        json!(1.8446744073709552e19)
    );

    let worlds = counters(dir.path());
    let calls = json!([
        {"tool": "wide_answer", "args": {}},
        {"tool": "wide_row", "args": {}},
    ]);
    let case = counters_case(dir.path(), calls, "");
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let answers: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    let past = "the integer 18446744073709551616 is past 64 bits";
    let answer = &answers[0]["error"];
    assert_eq!(answer["kind"], "failed", "{answers}");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains("service service.wasm's answer to `wide_answer`:")
            && message.contains(past),
        "{message}"
    );
    let row = &answers[1]["error"];
    assert_eq!(row["kind"], "invalid-args", "{answers}");
    assert!(
        row["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("the new row: {past}")),
        "{row}"
    );
    let events = tool_events(out.json()["bundle"].as_str().unwrap());
    assert!(
        events[1].1.get("writes").is_none_or(|w| w == &json!([])),
        "a refused row is not written: {}",
        events[1].1
    );
    common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// A world service's answer holding an integer no 64 bits hold fails
/// saying `service S's answer to `T`: the integer N is past 64 bits` from
/// rules 10 (decision 0423); the run recorded under rules 9
/// (`tests/bundles/before-rules-10/wide-answer.json`), whose failed answer
/// read "answered `T` with the integer N is past 64 bits", replays as it
/// ran.
#[test]
fn a_service_s_wide_answer_is_worded_as_a_sentence_from_rules_10() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let old = common::imported_fixture(&store, "before-rules-10", "wide-answer.json");
    let recorded = tool_events(common::bundle_in(&store, &old).to_str().unwrap());
    let was = recorded[0].1["response"]["error"]["message"]
        .as_str()
        .unwrap();
    assert!(
        was.starts_with("service service.wasm answered `wide_answer` with the integer 18446744073709551616 is past 64 bits"),
        "{was}"
    );
    let worlds = counters(dir.path());
    let case = counters_case(dir.path(), json!([{"tool": "wide_answer", "args": {}}]), "");
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let answers: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    let message = answers[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("service service.wasm's answer to `wide_answer`: the integer 18446744073709551616 is past 64 bits: "),
        "{message}"
    );
    common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// Under rules 6 a service's file paths are read as the world's own file
/// tools read them (`./a//b/../c.txt` is `a/c.txt`; one above the world's
/// files is `invalid-args`), and an update that would change a row's key
/// field is `invalid-args`: under rules 5 the service wrote files no tool
/// or check could reach, and a row found by one key held another.
#[test]
fn a_service_s_paths_are_read_as_files_and_its_updates_keep_the_key() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let calls = json!([
        {"tool": "write_path", "args": {"path": "./a//b/../c.txt"}},
        {"tool": "write_path", "args": {"path": "../escape.txt"}},
        {"tool": "rekey", "args": {"id": "c", "new": "d"}},
        {"tool": "rekey", "args": {"id": "c", "new": "c"}},
        {"tool": "write_path", "args": {"path": "dir/"}},
    ]);
    let case = counters_case(dir.path(), calls, "");
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let answers: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    assert_eq!(answers[0]["ok"]["files"], json!(["a/c.txt"]), "{answers}");
    assert_eq!(answers[1]["error"]["kind"], "invalid-args", "{answers}");
    assert_eq!(answers[2]["error"]["kind"], "invalid-args", "{answers}");
    assert!(
        answers[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sets `id`, its key"),
        "{answers}"
    );
    assert_eq!(answers[3]["ok"]["id"], "c", "the same key is no change");
    assert_eq!(
        answers[4]["error"]["kind"], "invalid-args",
        "a folder: {answers}"
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    worldline(dir.path(), ["replay", id.as_str()]).expect_code(0);
}

/// A world service given as the agent is said to be one: its refusal said
/// worldline did not provide what it imports, as if worldline lacked
/// something.
#[test]
fn a_service_given_as_the_agent_is_said_to_be_a_service() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let case = counters_case(dir.path(), json!([]), "");
    let out = common::run_in(dir.path(), &case, &guest("counter-service"), &worlds);
    out.expect_code(2);
    assert!(out.stderr.contains("is a world service"), "{out}");
    assert!(!out.stderr.contains("does not provide"), "{out}");
}

/// A compile cache that cannot be written is said of what was compiled,
/// the world service as the agent, and names `WORLDLINE_COMPILE_CACHE`
/// when it named the folder: "the agent will be compiled again" was said
/// of a service too, and the variable never named.
#[test]
fn a_compile_cache_that_cannot_be_written_names_the_component_and_the_variable() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let case = counters_case(
        dir.path(),
        json!([{"tool": "bump", "args": {"id": "c"}}]),
        "",
    );
    let file = dir.path().join("ccfile");
    std::fs::write(&file, "").unwrap();
    let out = common::worldline_with(
        &dir.path().join("store"),
        [
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            guest("caller-agent").as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ],
        &[("WORLDLINE_COMPILE_CACHE", file.to_str().unwrap())],
    );
    out.expect_code(0);
    for what in ["agent", "world service"] {
        let said = format!("the {what} will be compiled again next time");
        assert!(
            out.stderr.lines().any(|l| l.contains(&said)
                && l.contains("named by WORLDLINE_COMPILE_CACHE")
                && l.contains(&file.display().to_string())),
            "{what}: {out}"
        );
    }
}

/// A service past its memory says the world's limit (`[service]
/// memory_mb`) from rules 6: it named the case's `limits.memory_mb`,
/// which the case may have set far above it.
#[test]
fn a_service_past_its_memory_names_the_world_s_limit() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let world = worlds.join("counters/v1/world.toml");
    let text = std::fs::read_to_string(&world).unwrap();
    std::fs::write(
        &world,
        text.replacen("fuel = 50_000_000", "fuel = 50_000_000\nmemory_mb = 2", 1),
    )
    .unwrap();
    let calls: Vec<Value> = (0..40)
        .map(|_| json!({"tool": "fresh", "args": {}}))
        .collect();
    let case = counters_case(dir.path(), json!(calls), "[limits]\nmemory_mb = 512\n");
    let out = common::run_in(dir.path(), &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let answers: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    let failed = answers
        .as_array()
        .unwrap()
        .iter()
        .find_map(|a| a["error"]["message"].as_str())
        .unwrap_or_else(|| panic!("no call went past the memory: {answers}"));
    assert!(failed.contains("[service] memory_mb"), "{failed}");
    assert!(!failed.contains("limits.memory_mb"), "{failed}");
}

/// A world service's compiled code damaged in the compile cache is said to
/// be compiled again as the world service it is (the warning said "the
/// agent", which sent the user to an agent that was intact).
#[test]
fn a_damaged_cache_entry_of_a_world_service_is_named_as_one() {
    use sha2::{Digest as _, Sha256};
    let dir = temp_dir();
    let worlds = payments(dir.path());
    let service = worlds.join("payments/v1/service.wasm");
    let sha = format!("{:x}", Sha256::digest(std::fs::read(&service).unwrap()));
    let case = workspace_root().join("cases/payments/cancel-march-rent.toml");
    let run = || {
        common::worldline_with(
            dir.path(),
            [
                OsStr::new("run"),
                case.as_os_str(),
                OsStr::new("--agent"),
                guest("careful-agent").as_os_str(),
                OsStr::new("--worlds"),
                worlds.as_os_str(),
            ],
            &[common::OWN_COMPILE_CACHE],
        )
    };
    run().expect_code(0);
    let entry = common::files_with_suffix(&dir.path().join("cache"), ".cwasm")
        .into_iter()
        .find(|p| p.file_name().unwrap().to_string_lossy() == format!("{sha}.cwasm"))
        .expect("the service's compiled code is cached");
    let mut damaged = std::fs::read(&entry).unwrap();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x40;
    std::fs::write(&entry, &damaged).unwrap();
    let again = run();
    again.expect_code(0);
    assert!(
        again.stderr.contains(
            "is damaged (its checksum does not match); compiling the world service again"
        ),
        "{again}"
    );
}

/// `worldline` with `args` and `--store store` under an address-space
/// limit of `mib` MiB (`ulimit -v`).
fn under_limit(store: &Path, args: &[&OsStr], mib: u64) -> common::CliOutput {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = common::cli();
    cmd.args(args).arg("--store").arg(store);
    let bytes = mib << 20;
    // SAFETY: `setrlimit` only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    common::CliOutput::of(cmd.output().unwrap())
}

/// `command` (`run`, `test`) of `case` by `agent` on `worlds`.
fn on<'a>(command: &'a str, case: &'a Path, agent: &'a Path, worlds: &'a Path) -> [&'a OsStr; 6] {
    [
        OsStr::new(command),
        case.as_os_str(),
        OsStr::new("--agent"),
        agent.as_os_str(),
        OsStr::new("--worlds"),
        worlds.as_os_str(),
    ]
}

/// The least address space (in MiB, to 256) under which a run of `case`
/// completes: its agent's instance and the process, and no more.
fn least_address_space(store: &Path, case: &Path, agent: &Path, worlds: &Path) -> u64 {
    let args = on("run", case, agent, worlds);
    let (mut low, mut high) = (1024, 64 << 10);
    under_limit(store, &args, high).expect_code(0);
    while high - low > 256 {
        let mid = (low + high) / 2;
        match under_limit(store, &args, mid).code {
            0 => high = mid,
            _ => low = mid,
        }
    }
    high
}

/// A machine that cannot give a run's service, or its agent, the address
/// space an instance reserves (a low `ulimit -v`) stops the run as its own
/// failure (exit 4, saying so and how to go on): nothing of it is recorded
/// as the run's outcome. Before, the service's `mmap` error was recorded as
/// a tool's failed answer and graded, the agent's as the agent's trap
/// (exit 3), and a replay under the limit said `diverged`. `resume` without
/// the limit goes on and passes; a pooled `test` names the way out.
#[test]
fn a_machine_short_of_address_space_stops_the_run_unrecorded_and_resume_goes_on() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let agent = guest("caller-agent");
    let store = dir.path().join("store");
    let quiet = counters_case(dir.path(), json!([]), "");
    let quiet = {
        let to = dir.path().join("quiet.toml");
        std::fs::rename(&quiet, &to).unwrap();
        to
    };
    let least = least_address_space(&store, &quiet, &agent, &worlds);
    let case = counters_case(
        dir.path(),
        json!([{"tool": "bump", "args": {"id": "c"}}]),
        "",
    );
    let run = on("run", &case, &agent, &worlds);
    // The service's instance: the agent's fits, the service's does not.
    let out = under_limit(&store, &run, least);
    out.expect_code(4);
    assert!(
        out.stderr
            .contains("the machine could not make an instance of the world's service")
            && out.stderr.contains("`ulimit -v`")
            && out.stderr.contains("--resend-in-flight"),
        "{out}"
    );
    let runs = worldline(&store, ["runs", "--json"]);
    let stopped: Vec<&Value> = runs
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["case"] == "case")
        .collect();
    assert_eq!(stopped.len(), 1, "{runs}");
    assert_eq!(stopped[0]["status"], "incomplete", "{runs}");
    let id = stopped[0]["run_id"].as_str().unwrap().to_string();
    let bundle = std::fs::read_to_string(store.join("runs").join(format!("{id}.jsonl"))).unwrap();
    assert!(!bundle.contains("mmap"), "{bundle}");
    // Without the limit, the run goes on from its events and passes.
    let resumed = worldline(&store, ["resume", &id, "--resend-in-flight", "--json"]);
    resumed.expect_code(0);
    assert_eq!(resumed.json()["status"], "completed", "{resumed}");
    // A replay under the limit is the machine's failure, not a divergence.
    let rid = resumed.json()["run_id"].as_str().unwrap().to_string();
    let replay = under_limit(&store, &[OsStr::new("replay"), OsStr::new(&rid)], least);
    replay.expect_code(4);
    assert!(
        replay.stderr.contains("the machine could not") && !replay.stdout.contains("diverged"),
        "{replay}"
    );
    // The agent's own instance: the run stops before its first event.
    let out = under_limit(&store, &run, least - 2048);
    out.expect_code(4);
    assert!(
        out.stderr
            .contains("the machine could not make the agent's instance"),
        "{out}"
    );
    // A pooled command reserves its instances at once, and says how else.
    let suite = on("test", &case, &agent, &worlds);
    let out = under_limit(&store, &suite, least);
    out.expect_code(4);
    assert!(out.stderr.contains("WORLDLINE_INSTANCE_POOL=0"), "{out}");
    // A gold call the machine cannot run is its failure too (exit 4), not
    // the case's (it was exit 2, an input error, as a gold call that fails).
    let gold = counters_case(
        dir.path(),
        json!([{"tool": "bump", "args": {"id": "c"}}]),
        "[[expect.gold]]\ntool = \"bump\"\nargs = { id = \"c\" }\n",
    );
    // (The gold state is made before the agent's instance: under the
    // limit the agent's alone does not fit in, the service's does not.)
    let out = under_limit(&store, &on("run", &gold, &agent, &worlds), least - 2048);
    out.expect_code(4);
    assert!(
        out.stderr
            .contains("gold call 1 (bump {\"id\":\"c\"}) could not run")
            && out
                .stderr
                .contains("the machine could not make an instance"),
        "{out}"
    );
    // Without the limit, in the same store, the case runs and passes.
    worldline(&store, on("run", &gold, &agent, &worlds)).expect_code(0);
}
