//! Hardening, third wave, the input files: `case from-trace` takes any
//! tool result, trace id and schema a trace holds (a case, or exit 2 naming
//! the trace; never a panic or exit 4) and no trace id becomes a path;
//! every output (`-o`, `--junit`) is a new path or a regular file;
//! `[openapi]` documents are named in their own errors, their `server` is
//! checked, and YAML's messages say what is wrong; `merge` names the report
//! whose partition is impossible, refuses shards whose cases are not the
//! suite's, and shows no escape sequence a report holds, nor, to a
//! terminal, one an agent printed. The real binary.

use crate::common;

use common::{
    DEMO_PASSES, guest, mkfifo, prompt, temp_dir, worldline, worldline_raw, worldline_within,
    worlds_dir, write_case,
};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An OTLP JSON trace of one agent run per id in `ids`: a model call that
/// calls `tool` (declared with `schema`), and that tool's span answering
/// `result`; `extra` attributes go on the tool span.
fn trace(ids: &[&str], tool: &str, schema: &Value, result: &Value, extra: &[Value]) -> Vec<u8> {
    let attr = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    let mut spans = Vec::new();
    for id in ids {
        spans.push(json!({
            "traceId": id, "spanId": "01", "name": "chat", "startTimeUnixNano": "1772366400000000000",
            "attributes": [
                attr("gen_ai.operation.name", "chat"),
                attr("gen_ai.input.messages", &json!([{"role": "user", "content": "check the alert"}]).to_string()),
                attr("gen_ai.output.messages", &json!([{"role": "assistant", "parts": [
                    {"type": "tool_call", "name": tool, "arguments": {}}]}]).to_string()),
                attr("gen_ai.tool.definitions", &json!([{"name": tool, "parameters": schema}]).to_string()),
            ],
        }));
        let mut attrs = vec![
            attr("gen_ai.operation.name", "execute_tool"),
            attr("gen_ai.tool.name", tool),
            attr("gen_ai.tool.call.result", &result.to_string()),
        ];
        attrs.extend(extra.iter().cloned());
        spans.push(json!({
            "traceId": id, "spanId": "02", "name": "execute_tool", "startTimeUnixNano": "1772366401000000000",
            "attributes": attrs,
        }));
    }
    serde_json::to_vec(&json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})).unwrap()
}

/// A tool result of two keys (one key other than `error` was its own
/// defect).
fn fine() -> Value {
    json!({"ok": 1, "at": "now"})
}

const HEX_ID: &str = "0af7651916cd43dd8448eb211c80319c";

fn object() -> Value {
    json!({"type": "object"})
}

/// `case from-trace TRACE -o OUT [extra]` on `bytes` written as `name` in
/// `dir`; the output and the folder it was to write.
fn from_trace(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    extra: &[&str],
) -> (common::CliOutput, PathBuf) {
    let file = dir.join(name);
    std::fs::write(&file, bytes).unwrap();
    let out = dir.join(format!("out-{name}"));
    let mut args = vec!["case", "from-trace", s(&file), "-o", s(&out)];
    args.extend_from_slice(extra);
    // A debug build reading 100,000 runs on a busy machine: minutes, not
    // the seconds a refusal takes, is what tells a hang.
    let limit = std::time::Duration::from_secs(300);
    let r = worldline_within(limit, &dir.join("store"), &args)
        .unwrap_or_else(|| panic!("`worldline {}` hung", args.join(" ")));
    (r, out)
}

/// The `[[inject]]` rules of the one case in `out/cases`.
fn injects(out: &Path) -> Vec<toml::Value> {
    let cases: Vec<PathBuf> = std::fs::read_dir(out.join("cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(cases.len(), 1, "{cases:?}");
    let doc: toml::Table = toml::from_str(&std::fs::read_to_string(&cases[0]).unwrap()).unwrap();
    doc["inject"].as_array().unwrap().clone()
}

/// What a case cannot hold as the trace recorded it is exit 2 naming it,
/// not a case that says otherwise: a tool result with an integer past 64
/// bits (pinned as the nearest float), a number past a float's range or
/// deep nesting (pinned as text); a model call without an answer to
/// script (left out, every later answer given one call early, and the
/// summary still counting it).
#[test]
fn from_trace_refuses_what_a_case_cannot_hold_as_recorded() {
    let dir = temp_dir();
    let marked = String::from_utf8(trace(
        &[HEX_ID],
        "get_order",
        &object(),
        &json!({"n": "MARK"}),
        &[],
    ))
    .unwrap();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    for (name, literal, said) in [
        (
            "wide.json",
            "123456789012345678901234567890".to_string(),
            "is past 64 bits",
        ),
        ("huge.json", "1e400".to_string(), "number out of range"),
        ("deep.json", deep, "recursion limit exceeded"),
    ] {
        let bytes = marked.replace("\\\"MARK\\\"", &literal);
        assert_ne!(bytes, marked);
        let (r, out) = from_trace(dir.path(), name, bytes.as_bytes(), &[]);
        r.expect_code(2);
        assert!(
            r.stderr
                .contains("the result of tool call 1 (`get_order`) is JSON a case cannot hold")
                && r.stderr.contains(said),
            "{name}: {r}"
        );
        assert!(!out.exists());
    }
    // Two model calls, the first without its answer.
    let mut doc: Value =
        serde_json::from_slice(&trace(&[HEX_ID], "get_order", &object(), &fine(), &[])).unwrap();
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .unwrap();
    let mut second = spans[0].clone();
    second["spanId"] = json!("03");
    second["startTimeUnixNano"] = json!("1772366402000000000");
    for a in second["attributes"].as_array_mut().unwrap() {
        if a["key"] == "gen_ai.output.messages" {
            a["value"]["stringValue"] = json!(
                json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
                    .to_string()
            );
        }
    }
    spans[0]["attributes"]
        .as_array_mut()
        .unwrap()
        .retain(|a| a["key"] != "gen_ai.output.messages");
    spans.push(second);
    let (r, out) = from_trace(
        dir.path(),
        "unanswered.json",
        &serde_json::to_vec(&doc).unwrap(),
        &[],
    );
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("model call 1 of 2 has no answer to script"),
        "{r}"
    );
    assert!(!out.exists());
}

#[test]
fn from_trace_pins_a_result_with_one_key_other_than_error() {
    let dir = temp_dir();
    let result = json!({"alert": {"id": "A-1", "severity": "high"}});
    let (r, out) = from_trace(
        dir.path(),
        "alert.json",
        &trace(&[HEX_ID], "get_alert", &object(), &result, &[]),
        &[],
    );
    r.expect_code(0);
    let rules = injects(&out);
    assert_eq!(rules[0]["tool"].as_str(), Some("get_alert"));
    assert_eq!(
        rules[0]["response"]["alert"]["id"].as_str(),
        Some("A-1"),
        "{rules:?}"
    );
    // An error of a kind worldline has no name for is the tool's answer too.
    let odd = json!({"error": {"kind": "teapot", "message": "short and stout"}});
    let (r, out) = from_trace(
        dir.path(),
        "odd.json",
        &trace(&[HEX_ID], "brew", &object(), &odd, &[]),
        &[],
    );
    r.expect_code(0);
    assert_eq!(
        injects(&out)[0]["response"]["error"]["kind"].as_str(),
        Some("teapot")
    );
    let known = json!({"error": {"kind": "not-found", "message": "no such alert"}});
    let (r, out) = from_trace(
        dir.path(),
        "known.json",
        &trace(&[HEX_ID], "get_alert", &object(), &known, &[]),
        &[],
    );
    r.expect_code(0);
    assert_eq!(injects(&out)[0]["error"].as_str(), Some("not-found"));
}

/// A trace id is hex (any case) or, as protobuf's JSON mapping writes
/// bytes, the base64 of 16 bytes, taken as its hex: base64 ids were only
/// lower-cased (mangled, and traces whose ids differ in case merged).
/// Any other id is exit 2 naming the file, its line and the id, shown
/// escaped (it was taken as it was, and one with escapes or `../` named
/// nothing but a case file); a span with no id is malformed OTLP.
#[test]
fn trace_ids_are_hex_or_base64_and_any_other_is_refused_naming_it() {
    let dir = temp_dir();
    // Two ids that differ only in the case of their letters.
    let (a, b) = ("8rt5MDSunvXpCvqEFQgfnQ==", "8RT5mdsUNVxPcVQefqGFNq==");
    let file = dir.path().join("b64.json");
    std::fs::write(&file, trace(&[a, b], "get_alert", &object(), &fine(), &[])).unwrap();
    let listed = prompt(
        &dir.path().join("store"),
        &["case", "from-trace", s(&file), "--list", "--json"],
    );
    listed.expect_code(0);
    let ids: Vec<&str> = (listed.json().as_array().unwrap().iter())
        .map(|r| r["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "f114f999db14355c4f71541e7ea18536",
            "f2bb793034ae9ef5e90afa8415081f9d"
        ],
        "{listed}"
    );
    let (r, out) = from_trace(
        dir.path(),
        "b64.json",
        &trace(&[a], "get_alert", &object(), &fine(), &[]),
        &[],
    );
    r.expect_code(0);
    assert!(out.join("cases/trace-f2bb7930.toml").is_file(), "{r}");

    let evil = "\u{1b}]0;owned\u{7}abc";
    for (name, id) in [
        ("wide.json", "é€😀é€😀é€😀"),
        ("dots.json", "../../x/"),
        ("esc.json", evil),
    ] {
        let (r, out) = from_trace(
            dir.path(),
            name,
            &trace(&[HEX_ID, id], "t", &object(), &fine(), &[]),
            &[],
        );
        r.expect_code(2);
        let file = dir.path().join(name);
        assert!(
            r.stderr.starts_with(&format!(
                "error: {}:1:1: span `chat` has traceId \"",
                file.display()
            )),
            "{name}: {r}"
        );
        assert!(
            r.stderr
                .contains("neither hex nor the base64 of 16 bytes: not an OTLP id"),
            "{name}: {r}"
        );
        assert!(!r.stderr.contains('\u{1b}'), "{r}");
        assert!(!out.exists() && !dir.path().join("x").exists());
    }
    assert!(
        prompt(
            &dir.path().join("store"),
            &[
                "case",
                "from-trace",
                s(&dir.path().join("esc.json")),
                "--list"
            ]
        )
        .stderr
        .contains("\\u{1b}")
    );
    // A span without a trace id.
    let mut doc: Value =
        serde_json::from_slice(&trace(&[HEX_ID], "t", &object(), &fine(), &[])).unwrap();
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
        .as_object_mut()
        .unwrap()
        .remove("traceId");
    let (r, out) = from_trace(
        dir.path(),
        "noid.json",
        &serde_json::to_vec(&doc).unwrap(),
        &[],
    );
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("span `execute_tool` (spanId 02) has no traceId: not valid OTLP"),
        "{r}"
    );
    assert!(!out.exists());
}

#[test]
fn problems_in_a_trace_are_exit_2_naming_it_never_exit_4() {
    let dir = temp_dir();
    let deep = (0..100).fold(json!(1), |v, _| json!({"a": v}));
    let huge = json!({"key": "big", "value": {"intValue": u64::MAX}});
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "ref.json",
            trace(
                &[HEX_ID],
                "t",
                &json!({"type": "object", "properties": {"a": {"$ref": "#/defs/a"}}}),
                &fine(),
                &[],
            ),
        ),
        (
            "minlength.json",
            trace(
                &[HEX_ID],
                "t",
                &json!({"type": "object", "properties": {"a": {"type": "string", "minLength": "three"}}}),
                &fine(),
                &[],
            ),
        ),
        ("noname.json", trace(&[HEX_ID], "", &object(), &fine(), &[])),
        (
            "huge.json",
            trace(&[HEX_ID], "t", &object(), &json!({"n": u64::MAX}), &[huge]),
        ),
        ("deep.json", trace(&[HEX_ID], "t", &object(), &deep, &[])),
    ];
    for (name, bytes) in cases {
        let (r, out) = from_trace(dir.path(), name, &bytes, &[]);
        assert!(r.code == 0 || r.code == 2, "{name}: {r}");
        if r.code == 2 {
            let file = dir.path().join(name);
            assert!(
                r.stderr.starts_with(&format!("error: {}", file.display())),
                "{name}: {r}"
            );
            assert!(
                !r.stderr.contains(".from-trace-"),
                "names a temporary folder: {r}"
            );
            assert!(!out.exists());
        }
    }
    // A line that is not JSON is named by its line.
    let good = String::from_utf8(trace(&[HEX_ID], "t", &object(), &fine(), &[])).unwrap();
    let (r, _) = from_trace(
        dir.path(),
        "lines.json",
        format!("{good}\n{{\"resourceSpans\": [\n").as_bytes(),
        &[],
    );
    r.expect_code(2);
    assert!(
        r.stderr
            .contains(&format!("{}:2:", dir.path().join("lines.json").display())),
        "{r}"
    );
}

#[test]
fn a_trace_of_many_runs_is_refused_in_one_short_line() {
    let dir = temp_dir();
    let ids: Vec<String> = (0..100_000u64).map(|i| format!("{i:032x}")).collect();
    let spans: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"traceId": id, "spanId": "01", "name": "chat", "startTimeUnixNano": "1",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]})
        })
        .collect();
    let bytes = serde_json::to_vec(&json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
        .unwrap();
    let (r, _) = from_trace(dir.path(), "many.json", &bytes, &[]);
    r.expect_code(2);
    assert!(
        r.stderr.contains("holds 100000 agent runs"),
        "{}",
        &r.stderr[..r.stderr.len().min(500)]
    );
    assert!(
        r.stderr.contains("and 99990 more"),
        "{}",
        &r.stderr[..r.stderr.len().min(500)]
    );
    assert!(r.stderr.len() < 2_000, "{} bytes of error", r.stderr.len());
    let (r, _) = from_trace(dir.path(), "many.json", &bytes, &["--trace-id", "0000"]);
    r.expect_code(2);
    assert!(r.stderr.len() < 2_000, "{} bytes of error", r.stderr.len());
}

/// Refused with exit 2 naming `path`; what `path` is left as it was.
#[track_caller]
fn refused_output(r: &common::CliOutput, path: &Path) {
    r.expect_code(2);
    assert!(
        r.stderr.contains(s(path)),
        "does not name {}: {r}",
        path.display()
    );
}

/// A passing run of the caller agent on the demo world, in a store under
/// `dir`: the store and the run's id.
fn demo_run(dir: &Path) -> (PathBuf, String) {
    let store = dir.join("store");
    let case = write_case(dir, "demo", DEMO_PASSES);
    let agent = guest("caller-agent");
    let run = worldline(
        &store,
        [
            "run",
            s(&case),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds_dir()),
            "--json",
        ],
    );
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    (store, id)
}

#[test]
fn no_command_writes_to_a_symlink_a_fifo_or_a_device() {
    let dir = temp_dir();
    let (store, id) = demo_run(dir.path());
    let id = id.as_str();
    let (case, agent) = (dir.path().join("demo.toml"), guest("caller-agent"));

    let target = dir.path().join("precious.txt");
    std::fs::write(&target, "kept").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    let fifo = mkfifo(&dir.path().join("fifo"));
    let null = Path::new("/dev/null");
    for out in [&link, &dangling, &fifo, null] {
        let o = s(out);
        for args in [
            vec!["export", id, "--format", "trajectories", "-o", o],
            vec!["export", id, "-o", o],
            vec!["otel", id, "-o", o],
            vec![
                "test",
                s(&case),
                "--agent",
                s(&agent),
                "--worlds",
                s(&worlds_dir()),
                "--junit",
                o,
            ],
        ] {
            refused_output(&prompt(&store, &args), out);
        }
    }
    let toml = dir.path().join("link.toml");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &toml).unwrap();
    refused_output(
        &prompt(&store, &["case", "from-run", id, "-o", s(&toml)]),
        &toml,
    );
    let trace = dir.path().join("t.json");
    std::fs::write(&trace, trace_bytes()).unwrap();
    refused_output(
        &prompt(
            &store,
            &["case", "from-trace", s(&trace), "-o", s(&dangling)],
        ),
        &dangling,
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!dir.path().join("nowhere").exists());
    use std::os::unix::fs::FileTypeExt as _;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(
        std::fs::metadata(null)
            .unwrap()
            .file_type()
            .is_char_device()
    );
    // A regular file is replaced, a new one made.
    let file = dir.path().join("t.jsonl");
    prompt(
        &store,
        &["export", id, "--format", "trajectories", "-o", s(&file)],
    )
    .expect_code(0);
    prompt(
        &store,
        &["export", id, "--format", "trajectories", "-o", s(&file)],
    )
    .expect_code(0);
}

fn trace_bytes() -> Vec<u8> {
    trace(&[HEX_ID], "t", &object(), &fine(), &[])
}

/// A world `w@v1` in `root/worlds` with one tool and `[openapi]` (`extra`
/// appended); its folder.
fn openapi_world(root: &Path, extra: &str) -> PathBuf {
    let dir = root.join("worlds/w/v1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("world.toml"),
        format!("name = \"w\"\nversion = 1\n\n[[tools]]\nname = \"get_ticket\"\nop = \"respond\"\nresponse = {{}}\n\n[openapi]\nfile = \"api.yaml\"\n{extra}"),
    )
    .unwrap();
    dir
}

const API: &str = "openapi: \"3.0.3\"\nservers: [{url: \"https://t.internal\"}]\npaths:\n  /tickets/{id}:\n    get: {operationId: get_ticket}\n";

/// `check WORLD.toml --json`.
fn check(dir: &Path) -> common::CliOutput {
    worldline_raw([
        OsStr::new("check"),
        dir.join("world.toml").as_os_str(),
        OsStr::new("--json"),
    ])
}

#[test]
fn errors_reading_an_openapi_document_name_the_document() {
    let root = temp_dir();
    let dir = openapi_world(root.path(), "");
    let doc = dir.join("api.yaml");
    let outside = root.path().join("outside.yaml");
    std::fs::write(&outside, API).unwrap();
    let kinds = [
        "missing",
        "not UTF-8",
        "a FIFO",
        "a folder",
        "a symlink out",
        "bad YAML",
    ];
    for what in kinds {
        let _ = std::fs::remove_file(&doc);
        let _ = std::fs::remove_dir(&doc);
        match what {
            "not UTF-8" => std::fs::write(&doc, b"openapi: \"3.0.3\"\ninfo: \xff\n").unwrap(),
            "a FIFO" => drop(mkfifo(&doc)),
            "a folder" => std::fs::create_dir(&doc).unwrap(),
            "a symlink out" => std::os::unix::fs::symlink(&outside, &doc).unwrap(),
            "bad YAML" => std::fs::write(&doc, "openapi: \"3.0.3\"\npaths: [\n").unwrap(),
            _ => {}
        }
        let r = check(&dir);
        r.expect_code(2);
        let p = &r.json()["problems"][0];
        assert_eq!(p["file"].as_str(), Some(s(&doc)), "{what}: {r}");
    }
    let r = check(&dir);
    assert_eq!(
        r.json()["problems"][0]["line"],
        3,
        "the YAML error's line: {r}"
    );
}

#[test]
fn an_openapi_server_that_is_no_origin_is_a_problem_of_world_toml() {
    let root = temp_dir();
    for server in [
        "\"\"",
        "\"https://x/api?key=1\"",
        "\"https://x y z/\\u0000\"",
        "\"tickets\"",
    ] {
        let dir = openapi_world(root.path(), &format!("server = {server}\n"));
        std::fs::write(dir.join("api.yaml"), API).unwrap();
        let r = check(&dir);
        r.expect_code(2);
        let p = &r.json()["problems"][0];
        assert_eq!(
            p["file"].as_str(),
            Some(s(&dir.join("world.toml"))),
            "{server}: {r}"
        );
        assert!(
            p["message"].as_str().unwrap().contains("[openapi] server"),
            "{r}"
        );
    }
    // A document none of whose operations can be answered is a problem.
    let dir = openapi_world(root.path(), "");
    std::fs::write(dir.join("api.yaml"), API.replace("get_ticket", "nothing")).unwrap();
    let r = check(&dir);
    r.expect_code(2);
    assert!(r.stdout.contains("none can be answered"), "{r}");
    // A case of the world shows the world's notes.
    std::fs::write(
        dir.join("api.yaml"),
        format!("{API}    head: {{operationId: get_ticket}}\n"),
    )
    .unwrap();
    let case = write_case(
        root.path(),
        "c",
        "world = \"w@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = \"x\"\n",
    );
    let r = worldline_raw([
        OsStr::new("check"),
        case.as_os_str(),
        OsStr::new("--worlds"),
        root.path().join("worlds").as_os_str(),
    ]);
    r.expect_code(0);
    assert!(
        r.stdout.contains("note:") && r.stdout.contains("HEAD /tickets/{id}"),
        "{r}"
    );
}

#[test]
fn yaml_messages_say_what_is_wrong() {
    let root = temp_dir();
    let dir = openapi_world(root.path(), "");
    std::fs::write(dir.join("api.yaml"), format!("\u{feff}{API}")).unwrap();
    check(&dir).expect_code(0);
    std::fs::write(dir.join("api.yaml"), API.replace("\"3.0.3\"", "3.1")).unwrap();
    let r = check(&dir);
    r.expect_code(2);
    assert!(r.stdout.contains("quote it"), "{r}");
}

/// A `test --json` report of `cases` (name, index), every case passing;
/// with `shard` (partition, selected cases), a shard's.
fn report(cases: &[(&str, u64)], shard: Option<(&str, &[(&str, u64)])>) -> Value {
    let rows: Vec<Value> = cases
        .iter()
        .map(|(name, index)| {
            json!({
                "case": name, "index": index, "elapsed_ms": 1.0, "passed": true, "passes": 1,
                "path": "x.toml", "run_ids": ["r"], "runs": 1, "skipped": false, "status": "passed",
                "reason": "fine \u{1b}[2J",
            })
        })
        .collect();
    let mut doc = json!({"cases": rows, "elapsed_ms": 1.0, "failed": 0, "passed": cases.len(),
        "repeat": 1, "skipped": 0, "total": cases.len()});
    if let Some((partition, all)) = shard {
        let sel = worldline_report::suite::Shard::of(
            partition.to_string(),
            all.iter().map(|(n, i)| (*i as usize, *n)),
        );
        doc["shard"] = serde_json::to_value(sel).unwrap();
    }
    doc
}

fn write_report(dir: &Path, name: &str, doc: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, doc.to_string()).unwrap();
    p
}

#[test]
fn merge_names_the_report_whose_partition_is_impossible() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let all = [("a", 0), ("b", 1)];
    let one = write_report(
        dir.path(),
        "one.json",
        &report(&all[..1], Some(("count:1/2", &all))),
    );
    for bad in ["count:3/2", "0/0", "count:1/99999999999999999999999"] {
        let forged = write_report(
            dir.path(),
            "forged.json",
            &report(&all[1..], Some((bad, &all))),
        );
        let r = prompt(&store, &["merge", s(&one), s(&forged)]);
        r.expect_code(2);
        assert!(r.stderr.contains(s(&forged)), "{bad}: {r}");
    }
    // A partition of very many shards is refused at once, in one line.
    let forged = write_report(
        dir.path(),
        "forged.json",
        &report(&all[1..], Some(("count:2/18446744073709551615", &all))),
    );
    let other = write_report(
        dir.path(),
        "other.json",
        &report(&all[..1], Some(("count:1/18446744073709551615", &all))),
    );
    let r = prompt(&store, &["merge", s(&other), s(&forged)]);
    r.expect_code(2);
    assert!(
        r.stderr.contains("are missing") && r.stderr.len() < 1_000,
        "{r}"
    );
}

#[test]
fn merge_refuses_shards_whose_case_indices_leave_a_gap() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let all = [("a", 0), ("b", 1)];
    let one = write_report(
        dir.path(),
        "one.json",
        &report(&all[..1], Some(("count:1/2", &all))),
    );
    let two = write_report(
        dir.path(),
        "two.json",
        &report(&all[1..], Some(("count:2/2", &all))),
    );
    prompt(&store, &["merge", s(&one), s(&two)]).expect_code(0);
    let gap = write_report(
        dir.path(),
        "gap.json",
        &report(&[("b", (1 << 40) + 1)], Some(("count:2/2", &all))),
    );
    let r = prompt(&store, &["merge", s(&one), s(&gap)]);
    r.expect_code(2);
    assert!(r.stderr.contains("not the selection"), "{r}");
}

#[test]
fn merge_shows_no_escape_sequence_a_report_holds() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[31mred";
    let whole = write_report(dir.path(), "whole.json", &report(&[(evil, 0)], None));
    let r = prompt(&store, &["merge", s(&whole)]);
    r.expect_code(0);
    assert!(
        !r.stdout.contains('\u{1b}') && !r.stdout.contains('\u{7}'),
        "{r:?}"
    );
    assert!(r.stdout.contains("\\u{1b}]0;owned"), "{r}");
    let mut forged = report(&[(evil, 0)], None);
    forged["cases"][0]["passes"] = 5.into();
    let forged = write_report(dir.path(), "forged.json", &forged);
    let r = prompt(&store, &["merge", s(&forged)]);
    r.expect_code(2);
    assert!(
        !r.stderr.contains('\u{1b}') && r.stderr.contains("\\u{1b}"),
        "{r:?}"
    );
}

/// `runs --limit` past SQLite's signed 64-bit LIMIT (u64::MAX: "all of
/// them") lists every run; it was exit 4, "datatype mismatch".
#[test]
fn runs_takes_any_limit_a_u64_holds() {
    let dir = temp_dir();
    let (store, id) = demo_run(dir.path());
    let out = worldline(&store, ["runs", "--limit", &u64::MAX.to_string(), "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()[0]["run_id"], id.as_str(), "{out}");
}

/// What an agent names or writes (a tool's name, a trace note, a tool's
/// error carrying its argument) reaches the terminal escaped in `history`,
/// `show` and `diff`: a tool named with an escape sequence set the window's
/// title and cleared the screen through `history`.
#[test]
fn history_show_and_diff_show_no_escape_sequence_an_agent_wrote() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let services = dir.path().join("services");
    std::fs::create_dir_all(&services).unwrap();
    let worlds = common::counters(&services);
    let evil = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{9b}31m\r";
    let calls = json!([
        {"tool": format!("bump{evil}"), "args": {"id": "c"}},
        {"tool": "bump", "args": {"id": format!("c{evil}")}},
    ]);
    let case = common::counters_case(&services, calls, "");
    let caller = guest("caller-agent");
    let first = common::run_in(&store, &case, &caller, &worlds);
    let plain = common::counters_case(
        &services,
        json!([{"tool": "bump", "args": {"id": "c"}}]),
        "",
    );
    let second = common::run_in(&store, &plain, &caller, &worlds);
    let (a, b) = (
        first.json()["run_id"].as_str().unwrap().to_string(),
        second.json()["run_id"].as_str().unwrap().to_string(),
    );
    for args in [
        vec!["history", a.as_str()],
        vec!["history", a.as_str(), "--full"],
        vec!["show", a.as_str(), "--at", "1"],
        vec!["diff", a.as_str(), b.as_str()],
    ] {
        let out = worldline(&store, &args);
        assert!(out.code == 0 || out.code == 1, "{out}");
        assert!(
            !out.stdout.contains(['\u{1b}', '\u{7}', '\u{9b}', '\r']),
            "{args:?}: {:?}",
            out.stdout
        );
        // Escaped as Rust writes it, or as JSON does (`show`'s values).
        assert!(
            out.stdout.contains("\\u{1b}]0;PWNED") || out.stdout.contains("\\u001b]0;PWNED"),
            "{args:?}: {out}"
        );
    }
    // `runs` too: a case's name is its file's, which may hold them.
    let named = dir.path().join("esc\u{1b}[31mred\u{7}.toml");
    std::fs::copy(&plain, &named).unwrap();
    common::run_in(&store, &named, &caller, &worlds);
    let runs = worldline(&store, ["runs"]);
    runs.expect_code(0);
    assert!(
        !runs.stdout.contains(['\u{1b}', '\u{7}']),
        "{:?}",
        runs.stdout
    );
    assert!(runs.stdout.contains("esc\\u{1b}[31mred\\u{7}"), "{runs}");
}

/// A bundle whose file name is no run id (a space in it) is refused by
/// `export` before anything is written, naming why: its export carried
/// the name as the run's id, which `import` then refused.
#[test]
fn a_bundle_named_as_no_run_is_not_exported() {
    let dir = temp_dir();
    let (store, id) = demo_run(dir.path());
    let renamed = dir.path().join("my run.jsonl");
    std::fs::copy(common::bundle_in(&store, &id), &renamed).unwrap();
    let out_file = dir.path().join("out.jsonl");
    let out = worldline(&store, ["export", s(&renamed), "-o", s(&out_file)]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("`my run` (the bundle's file name) is not a run id"),
        "{out}"
    );
    assert!(!out_file.exists(), "{out}");
    // A name dated after today is a run id `import` refuses likewise.
    let future = dir.path().join("20300101-000000-00000000.jsonl");
    std::fs::copy(common::bundle_in(&store, &id), &future).unwrap();
    let out = worldline(&store, ["export", s(&future), "-o", s(&out_file)]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("is dated after today, so `import` would refuse the export"),
        "{out}"
    );
    assert!(!out_file.exists(), "{out}");
    // By its id, as ever.
    worldline(&store, ["export", &id, "-o", s(&out_file)]).expect_code(0);
}

/// An export written into a store's `runs/` folder is refused (it was
/// listed as a broken run named by its file); an export read as a run
/// says what it is, not "cut off before its header"; a pin again without
/// `--note` keeps the note (it was erased).
#[test]
fn an_export_is_neither_written_nor_read_as_a_run_and_a_pin_keeps_its_note() {
    let dir = temp_dir();
    let (store, id) = demo_run(dir.path());
    let inside = store.join("runs").join("evil.jsonl");
    let out = worldline(&store, ["export", &id, "-o", s(&inside)]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("is in the runs folder of the store"),
        "{out}"
    );
    assert!(!inside.exists());
    // Nor over one of its objects (every run of the agent was then
    // unreadable) or its own files.
    let object = std::fs::read_dir(store.join("objects"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let before = std::fs::read(&object).unwrap();
    for own in [object.clone(), store.join("policy.toml")] {
        let out = worldline(&store, ["export", &id, "-o", s(&own)]);
        out.expect_code(2);
        assert!(out.stderr.contains("which worldline keeps there"), "{out}");
    }
    assert_eq!(std::fs::read(&object).unwrap(), before);
    assert!(!store.join("policy.toml").exists());
    let file = dir.path().join("run.export.json");
    worldline(&store, ["export", &id, "-o", s(&file)]).expect_code(0);
    for args in [
        vec!["diff", id.as_str(), s(&file)],
        vec!["history", s(&file)],
    ] {
        let out = worldline(&store, &args);
        out.expect_code(2);
        assert!(
            out.stderr.contains("is a `worldline export` file"),
            "{args:?}: {out}"
        );
    }
    worldline(&store, ["pin", &id, "--note", "INC-42"]).expect_code(0);
    worldline(&store, ["pin", &id]).expect_code(0);
    let note = std::fs::read_to_string(store.join("pins").join(&id)).unwrap();
    assert_eq!(note, "INC-42");
}

/// An integer no 64 bits hold, in a world's rows (`.jsonl` and `.json`)
/// or a fork's `--set` and `--respond`, is refused where it is written:
/// serde_json read it as the nearest float, and a run answered
/// `1.8446744073709552e19` for the row's `18446744073709551616`.
#[test]
fn an_integer_past_64_bits_in_json_is_refused_where_it_is_written() {
    let root = temp_dir();
    let worlds = root.path().join("worlds");
    common::copy_dir(&worlds_dir().join("demo"), &worlds.join("demo"));
    let data = worlds.join("demo/v1/data");
    let tickets = std::fs::read_to_string(data.join("tickets.jsonl")).unwrap();
    let deploys = std::fs::read_to_string(data.join("deploys.json")).unwrap();
    let world = worlds.join("demo/v1/world.toml");
    let check_world = || prompt(&root.path().join("store"), &["check", s(&world)]);
    check_world().expect_code(0);
    // A ticket's row on line 2 of the `.jsonl` file.
    let mut lines: Vec<String> = tickets.lines().map(str::to_string).collect();
    lines[1] = lines[1].replacen('{', "{\"customer\": 18446744073709551616, ", 1);
    std::fs::write(data.join("tickets.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = check_world();
    out.expect_code(2);
    assert!(
        out.stdout
            .contains("tickets.jsonl:2:14: the integer 18446744073709551616 is past 64 bits"),
        "{out}"
    );
    // One below i64's least in the `.json` array's first row.
    std::fs::write(data.join("tickets.jsonl"), &tickets).unwrap();
    let wide = deploys.replacen('{', "{\"n\": -9223372036854775809, ", 1);
    let (line, column) = wide
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("-92233").map(|c| (i + 1, c + 1)))
        .unwrap();
    std::fs::write(data.join("deploys.json"), &wide).unwrap();
    let out = check_world();
    out.expect_code(2);
    assert!(
        out.stdout.contains(&format!(
            "deploys.json:{line}:{column}: the integer -9223372036854775809 is past 64 bits"
        )),
        "{out}"
    );
    std::fs::write(data.join("deploys.json"), &deploys).unwrap();
    // A fork's edits.
    let store = root.path().join("store");
    let case = write_case(root.path(), "c", &common::passing_demo_case(1));
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    for (flag, value) in [
        ("--set", "tickets/T-1.customer=18446744073709551616"),
        ("--respond", "{\"ok\": {\"n\": [1, 99999999999999999999]}}"),
    ] {
        let out = prompt(&store, &["fork", &run, "--at", "0", flag, value]);
        out.expect_code(2);
        let digits = value.rsplit([' ', '=', '[']).next().unwrap();
        let digits = digits.trim_end_matches([']', '}']);
        assert!(
            out.stderr
                .contains(&format!("the integer {digits} is past 64 bits")),
            "{flag}: {out}"
        );
    }
}

/// A run recorded before such integers were refused, whose world's row
/// holds one, replays `identical` with the float it recorded.
#[test]
fn a_run_whose_world_holds_an_integer_past_64_bits_replays_as_it_ran() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let run = common::imported_fixture(&store, "before-wide-integers", "wide-row.json");
    prompt(&store, &["verify", &run]).expect_code(0);
}

/// Floats are read back as they were written. serde_json's default parser
/// reads about one float in ten a step off: a grade holding one (a sum of
/// 0.01 and 0.09, a reward of 16/17) made its own run unreadable (its
/// footer's hash is checked over the footer read and written again:
/// "the footer was changed"), and a row's float did not equal the same
/// literal in a check.
#[test]
fn floats_read_back_as_they_were_written() {
    let dir = temp_dir();
    let worlds = common::write_world(
        dir.path(),
        "cart",
        "name = \"cart\"\nversion = 1\n[tables.lines]\nkey = \"id\"\nrows = \"data/lines.jsonl\"\n\
         [[tools]]\nname = \"list_lines\"\ndescription = \"the cart's lines\"\n\
         params = { type = \"object\", properties = {} }\nop = \"query\"\ntable = \"lines\"\n",
        &[(
            "data/lines.jsonl",
            "{\"id\":\"L-1\",\"price\":0.01}\n{\"id\":\"L-2\",\"price\":0.09}\n{\"id\":\"L-3\",\"price\":0.9411764705882353}\n",
        )],
    );
    let case = common::write_case(
        dir.path(),
        "cart",
        "world = \"cart@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\n\
         task = { calls = [ { tool = \"list_lines\", args = {} } ] }\n\n\
         [[expect.state]]\ntable = \"lines\"\nwhere = { price = { lt = 0.5 } }\nsum = \"price\"\nequals = 0.09999999999999999\n\n\
         [[expect.state]]\ntable = \"lines\"\nkey = \"L-3\"\nfield = \"price\"\nequals = 0.9411764705882353\n",
    );
    let store = dir.path().join("store");
    let out = common::worldline(
        &store,
        [
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            common::guest("caller-agent").as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--json".as_ref(),
        ],
    );
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    common::worldline(&store, ["history", run.as_str()]).expect_code(0);
    common::replays_identical(&store, &run);
}

/// A calls check whose `args` name an argument its tool does not take
/// never matches a call: with `attempted = false` it passed whatever the
/// agent did. Refused at its check, as an `[[inject]]` rule's `when` is.
#[test]
fn a_calls_check_on_an_argument_no_tool_takes_is_refused_at_its_line() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "typo",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\n\
         task = { calls = [ { tool = \"get_ticket\", args = { id = \"T-1\" } } ] }\n\n\
         [[expect.calls]]\ntool = \"get_ticket\"\nargs = { id = \"T-1\" }\ncount = 1\n\n\
         [[expect.calls]]\ntool = \"get_ticket\"\nargs = { idd = \"T-1\" }\nattempted = false\n",
    );
    refused_by_check(
        &case,
        &[
            "typo.toml:11:1: [[expect.calls]] #2: args.idd: `get_ticket` takes no argument `idd` (its parameters: id)",
        ],
    );
}

/// `check` lists every `[[inject]]` rule's problem, and an overlay that
/// does not apply hides no other section's (decision 0194): the first
/// rule's was the only one listed, and a bad overlay was the case's only
/// problem shown.
#[test]
fn check_lists_each_rule_s_problem_and_an_overlay_hides_none() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "many",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n\
         [[inject]]\ntool = \"get_ticket\"\nerror = \"explode\"\n\n\
         [[inject]]\ntool = \"nosuch\"\ndeny = true\n\n\
         [[overlay]]\ntable = \"nosuch\"\nrows = [{ id = \"x\" }]\n",
    );
    refused_by_check(
        &case,
        &[
            "many.toml:6:1: [[inject]]: error = \"explode\" is not an error kind",
            "many.toml:10:1: [[inject]]: tool `nosuch` names no tool of demo@v1",
            "many.toml:14:1: [[overlay]] 1: no table `nosuch`",
            "3 problem(s) in 1 file(s)",
        ],
    );
}

/// A fault profile's every problem is listed at its entry's key, in a
/// faults file and in a case's `[fuzz]` table (`check` stopped at the
/// first, and placed each at its entry's header).
#[test]
fn check_lists_each_fault_entry_s_problem() {
    let dir = temp_dir();
    let faults = dir.path().join("faults.toml");
    std::fs::write(
        &faults,
        "clock_skew_s = [5, 1]\n\n[[tools]]\ntool = \"get_ticket\"\ndeny = 2.0\n\n\
         [[tools]]\ntool = \"list_deploys\"\nerror = { explode = 0.5 }\n",
    )
    .unwrap();
    refused_by_check(
        &faults,
        &[
            "faults.toml:1:16: faults file clock_skew_s = [5, 1]: the low end is above the high end",
            "faults.toml:5:1: faults file: `get_ticket`: deny = 2 is not a probability",
            "faults.toml:9:1: faults file: `list_deploys`: error.explode",
            "3 problem(s) in 1 file(s)",
        ],
    );
    let case = write_case(
        dir.path(),
        "fuzzed",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n\
         [[fuzz.tools]]\ntool = \"nosuch\"\ndeny = 0.5\n\n\
         [[fuzz.tools]]\ntool = \"get_ticket\"\nempty = -1.0\n",
    );
    refused_by_check(
        &case,
        &[
            "fuzzed.toml:7:1: [fuzz]: tool `nosuch` names no tool of demo@v1",
            "fuzzed.toml:12:1: [fuzz]: `get_ticket`: empty = -1 is not a probability",
            "2 problem(s) in 1 file(s)",
        ],
    );
}

/// `[expect.output]`'s `any_of`, `all_of` or `json` given as an empty list
/// checks nothing: refused at its line (the run passed it unsaid).
#[test]
fn an_empty_output_list_is_refused_at_its_line() {
    let dir = temp_dir();
    for (key, column) in [("any_of", 10), ("all_of", 10), ("json", 8)] {
        let case = write_case(
            dir.path(),
            key,
            &format!(
                "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{}}\n\n[expect.output]\n{key} = []\n"
            ),
        );
        let said = format!("{key}.toml:7:{column}: [expect.output] {key} = [] checks nothing");
        refused_by_check(&case, &[said.as_str()]);
    }
}

/// A problem of an `[[expect.state]]` or `[[expect.calls]]` entry is
/// placed at that entry and numbered, and each entry's is listed: they
/// were all placed at the first entry's line, the first problem alone.
#[test]
fn each_expect_entry_s_problem_is_placed_at_it() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "entries",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n\
         [[expect.state]]\ntable = \"tickets\"\ncount = 2\n\n\
         [[expect.state]]\ntable = \"tickets\"\nkey = \"T-1\"\nexists = true\n\n\
         [[expect.state]]\ntable = \"tikets\"\ncount = 0\n\n\
         [[expect.calls]]\ntool = \"get_ticket\"\ncount = 0\n\n\
         [[expect.calls]]\ntool = \"get_ticket\"\ncount = 1\nmin = 1\n",
    );
    refused_by_check(
        &case,
        &[
            "entries.toml:15:1: [[expect.state]] #3: unknown table `tikets`",
            "entries.toml:23:1: [[expect.calls]] #2: calls check on `get_ticket` needs exactly one of",
            "2 problem(s) in 1 file(s)",
        ],
    );
}

/// An entry inside an `[[expect.any_of]]` group, a turn or the attack is
/// placed at its own line too (they were placed at the first `[[expect.*]]`
/// line, the first problem alone said), and a `weight` on an entry of a
/// group, which counted for nothing, is refused there.
#[test]
fn each_grouped_expect_entry_s_problem_is_placed_at_it() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "grouped",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n\
         [expect]\nreward = \"weighted\"\n\n\
         [[expect.any_of]]\n\
         [[expect.any_of.state]]\ntable = \"tickets\"\ncount = 2\n\n\
         [[expect.any_of.state]]\ntable = \"tickets\"\ncount = 3\nweight = 4.0\n\n\
         [[expect.turn]]\nturn = 1\n\
         [[expect.turn.calls]]\ntool = \"get_tiket\"\ncount = 1\n\n\
         [expect.attack]\n\
         [[expect.attack.state]]\ntable = \"tikets\"\ncount = 0\n",
    );
    refused_by_check(
        &case,
        &[
            "grouped.toml:14:1: [[expect.any_of.state]] #2 of [[expect.any_of]] #1: a `weight` here counts for nothing: [[expect.any_of]] #1 is one assertion",
            "grouped.toml:21:1: [[expect.turn.calls]] #1 of [[expect.turn]] #1: ",
            "get_tiket",
            "grouped.toml:26:1: [[expect.attack.state]] #1: unknown table `tikets`",
            "3 problem(s) in 1 file(s)",
        ],
    );
}

/// An `[expect.output]` JSON entry of two conditions, or none, and weights
/// that add up past what a number holds are refused at load: the grader
/// judged only the first condition (an attack read as reached), an entry
/// of none failed as "expected null, got null", and the weights made a
/// passed grade's reward `null`.
#[test]
fn output_json_entries_and_weights_that_grade_wrong_are_refused() {
    let dir = temp_dir();
    let head = "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n";
    for (name, body, said) in [
        (
            "two",
            "[expect.output]\njson = [ { path = \"action\", equals = \"paid\", exists = false } ]\n",
            "output.json entry 1 (path `action`) needs exactly one of equals, contains, exists",
        ),
        (
            "none",
            "[expect.output]\njson = [ { path = \"nope\" } ]\n",
            "output.json entry 1 (path `nope`) needs exactly one of equals, contains, exists",
        ),
        (
            "attack",
            "[expect.attack.output]\njson = [ { path = \"a\", equals = 1, exists = false } ]\n",
            "[expect.attack]: output.json entry 1 (path `a`) needs exactly one of",
        ),
        (
            "weights",
            "[expect]\nreward = \"weighted\"\n\n[[expect.state]]\ntable = \"tickets\"\ncount = 3\nweight = 1e308\n\n[[expect.state]]\ntable = \"tickets\"\ncount = 3\nweight = 1e308\n",
            "the weights add up to more than a number holds",
        ),
    ] {
        let case = write_case(dir.path(), name, &format!("{head}{body}"));
        refused_by_check(&case, &[said]);
    }
}

/// A section that checks or changes nothing is refused where it is
/// written: an `[expect.output]` of no test (with `ignore_case` alone it
/// passed every output), `satisfied` in a case without a `[user]` (no
/// user ends the conversation: `true` failed every run, `false` held for
/// every one), an `[[overlay]]` of a table with neither `rows` nor
/// `remove`. Each was accepted, said nothing, and judged as written.
#[test]
fn sections_that_check_or_change_nothing_are_refused_at_their_line() {
    let dir = temp_dir();
    let head = "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n";
    for (name, body, said) in [
        (
            "ignore_case",
            "[expect.output]\nignore_case = true\n",
            ":6:1: the output check has no test, so every output passed it",
        ),
        (
            "empty_output",
            "[expect]\nstatus = \"completed\"\n\n[expect.output]\n",
            ":9:1: the output check has no test",
        ),
        (
            "attack_output",
            "[expect.attack.output]\nany_of = []\n",
            "[expect.attack]: the output check has no test",
        ),
        (
            "satisfied",
            "[expect.conversation]\nsatisfied = true\n",
            ":6:1: [expect.conversation] satisfied = true: the case has no [user], so no user ends the conversation and this fails every run",
        ),
        (
            "unsatisfied",
            "[expect.conversation]\nsatisfied = false\n",
            "satisfied = false: the case has no [user], so no user ends the conversation and this holds for every run",
        ),
        (
            "overlay",
            "[[overlay]]\ntable = \"tickets\"\n",
            "[[overlay]] 1: table `tickets` with neither `rows` nor `remove` changes nothing",
        ),
    ] {
        let case = write_case(dir.path(), name, &format!("{head}{body}"));
        refused_by_check(&case, &[said]);
    }
    // With a user, `satisfied` is judged; an output check with a test and
    // `ignore_case` is one.
    let kept = write_case(
        dir.path(),
        "kept",
        &format!(
            "{head}[user]\ndefault = \"ok\"\n\n[expect.output]\ncontains = \"x\"\nignore_case = true\n\n[expect.conversation]\nsatisfied = true\n"
        ),
    );
    let worlds = worlds_dir();
    let out = worldline_raw([
        "check".as_ref(),
        kept.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
    ]);
    out.expect_code(0);
}

/// `check` notes a case whose own `exec` cannot start on this machine, at
/// its line (it said "no problems", and a run of the case was its error).
/// A note, not a problem: the command may be there where the suite runs.
#[test]
fn check_notes_a_case_exec_that_cannot_start_here() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "nobin",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\nexec = [\"/nonexistent/agent-bin\"]\n",
    );
    let worlds = worlds_dir();
    let out = worldline_raw([
        "check".as_ref(),
        case.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
    ]);
    out.expect_code(0);
    assert!(
        out.stdout.contains(&format!(
            "note: {}:5:1: exec: cannot start `/nonexistent/agent-bin`: No such file or directory (os error 2) on this machine",
            case.display()
        )),
        "{out}"
    );
    // A command that is there is no note.
    let found = write_case(
        dir.path(),
        "sh",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\nexec = [\"sh\", \"-c\", \"true\"]\n",
    );
    let out = worldline_raw([
        "check".as_ref(),
        found.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
    ]);
    out.expect_code(0);
    assert!(!out.stdout.contains("exec:"), "{out}");
}

/// `check CASE` over the tests' worlds exits 2 and says each of `said`.
fn refused_by_check(case: &Path, said: &[&str]) {
    let worlds = worlds_dir();
    let out = worldline_raw([
        "check".as_ref(),
        case.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
    ]);
    out.expect_code(2);
    for said in said {
        assert!(out.stdout.contains(said), "{said}: {out}");
    }
}

/// An operation of an `[openapi]` document that a route before it answers
/// every URL of is never reached, as in `[[routes]]`: refused at the
/// `[openapi]` table, naming both (both answered the first tool).
#[test]
fn an_openapi_operation_never_reached_is_refused() {
    let root = temp_dir();
    let dir = openapi_world(root.path(), "");
    let api = "openapi: \"3.0.3\"\nservers: [{url: \"https://t.internal\"}]\npaths:\n  /tickets/{id}:\n    get: {operationId: get_ticket}\n  /tickets/{key}:\n    get: {operationId: get_ticket}\n";
    std::fs::write(dir.join("api.yaml"), api).unwrap();
    let r = check(&dir);
    r.expect_code(2);
    let p = &r.json()["problems"][0];
    assert_eq!(p["file"].as_str(), Some(s(&dir.join("world.toml"))), "{r}");
    assert!(
        p["message"].as_str().unwrap().contains(
            "[openapi] file `api.yaml`: route GET https://t.internal/tickets/{key} is never reached: route GET https://t.internal/tickets/{id}"
        ),
        "{r}"
    );
    std::fs::write(dir.join("api.yaml"), API).unwrap();
    check(&dir).expect_code(0);
}

/// A tool span with `gen_ai.tool.name` and no `gen_ai.operation.name` is
/// read as a tool span (its recorded result was dropped without a word);
/// a call whose result the trace does not hold is counted as a call, not
/// as a result pinned (the summary and the README said it was pinned).
#[test]
fn from_trace_reads_a_tool_span_without_its_operation_and_counts_only_what_it_pins() {
    let dir = temp_dir();
    let result = json!({"city": "Paris", "temp_c": 21});
    let bytes = trace(&[HEX_ID], "get_weather", &object(), &result, &[]);
    let without_op = String::from_utf8(bytes).unwrap().replacen(
        r#"{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},"#,
        "",
        1,
    );
    assert!(!without_op.contains("execute_tool\"}"), "{without_op}");
    let (r, out) = from_trace(dir.path(), "no-op.json", without_op.as_bytes(), &["--json"]);
    r.expect_code(0);
    assert_eq!(r.json()["pinned"], 1, "{r}");
    let rules = injects(&out);
    assert_eq!(rules[0]["nth"].as_integer(), Some(1), "{rules:?}");
    assert_eq!(rules[0]["response"]["temp_c"].as_integer(), Some(21));

    // No tool span at all, and no `tool` message sent back: one call, no
    // result.
    let chat_only =
        String::from_utf8(trace(&[HEX_ID], "get_weather", &object(), &result, &[])).unwrap();
    let mut doc: Value = serde_json::from_str(&chat_only).unwrap();
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .unwrap()
        .truncate(1);
    let (r, out) = from_trace(
        dir.path(),
        "chat-only.json",
        doc.to_string().as_bytes(),
        &["--json"],
    );
    r.expect_code(0);
    assert_eq!(
        (r.json()["tool_calls"].as_u64(), r.json()["pinned"].as_u64()),
        (Some(1), Some(0)),
        "{r}"
    );
    assert!(injects(&out).iter().all(|rule| rule.get("nth").is_none()));
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("(0 of its 1 tool calls;"), "{readme}");
    let (text, _) = from_trace(
        dir.path(),
        "chat-only-2.json",
        doc.to_string().as_bytes(),
        &[],
    );
    assert!(
        text.stdout
            .contains("1 tool call(s), 0 recorded result(s) pinned"),
        "{text}"
    );
}

/// One chat span of `HEX_ID` with these input and output messages (the
/// attributes' text).
fn chat_trace(input: &str, output: &str) -> Vec<u8> {
    let attr = |k: &str, v: &str| json!({"key": k, "value": {"stringValue": v}});
    let span = json!({
        "traceId": HEX_ID, "spanId": "2222222222222221", "name": "chat gpt-4.1",
        "startTimeUnixNano": "1767225600010000000",
        "attributes": [
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.input.messages", input),
            attr("gen_ai.output.messages", output),
        ],
    });
    serde_json::to_vec(&json!({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})).unwrap()
}

/// Input messages that do not parse (cut off at an attribute length
/// limit) are exit 2 naming the span and the attribute, as output
/// messages are (they were an empty task, exit 0). A run without tools
/// says `no tools` (it said `tools: )`).
#[test]
fn from_trace_refuses_message_attributes_it_cannot_read() {
    let dir = temp_dir();
    let ask = r#"[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]}]"#;
    let answer = r#"[{"role":"assistant","parts":[{"type":"text","content":"Sunny."}],"finish_reason":"stop"}]"#;
    let cut_ask = &ask[..ask.find("Paris").unwrap()];
    let cut_answer = &answer[..answer.find("Sunny").unwrap()];
    for (name, input, output, attribute) in [
        ("cut-in.json", cut_ask, answer, "gen_ai.input.messages"),
        ("cut-out.json", ask, cut_answer, "gen_ai.output.messages"),
    ] {
        let (r, out) = from_trace(dir.path(), name, &chat_trace(input, output), &[]);
        r.expect_code(2);
        assert!(
            r.stderr.starts_with(&format!(
                "error: {}: span `chat gpt-4.1` (id 2222222222222221): its `{attribute}` is not JSON (EOF while parsing",
                dir.path().join(name).display()
            )) && r.stderr.contains("cut off"),
            "{name}: {r}"
        );
        assert!(!out.exists());
    }
    let (r, out) = from_trace(dir.path(), "fine.json", &chat_trace(ask, answer), &[]);
    r.expect_code(0);
    assert!(r.stdout.contains(", no tools); read "), "{r}");
    let case = std::fs::read_to_string(out.join("cases/trace-0af76519.toml")).unwrap();
    assert!(case.contains("task = \"Weather in Paris?\""), "{case}");
    let listed = prompt(
        &dir.path().join("store"),
        &[
            "case",
            "from-trace",
            s(&dir.path().join("fine.json")),
            "--list",
        ],
    );
    listed.expect_code(0);
    assert!(
        listed.stdout.starts_with(&format!(
            "{HEX_ID}  1 model call(s), 0 tool call(s)  no tools\n"
        )),
        "{listed}"
    );
}

/// `--list` with `-o` is a usage error (the `-o` was ignored, silently).
#[test]
fn from_trace_list_and_output_conflict() {
    let dir = temp_dir();
    let file = dir.path().join("t.json");
    std::fs::write(&file, trace(&[HEX_ID], "t", &object(), &fine(), &[])).unwrap();
    let out = dir.path().join("newdir");
    let r = prompt(
        &dir.path().join("store"),
        &["case", "from-trace", s(&file), "--list", "-o", s(&out)],
    );
    r.expect_code(2);
    assert!(r.stderr.contains("cannot be used with"), "{r}");
    assert!(!out.exists());
}

/// A line of OTLP JSON that does not parse is named at its line and
/// column once (it was `bad.jsonl:2:1: ... at line 1 column 20`); an
/// empty file says it is empty (it said "has no model call"), and JSON
/// that is no object says it is JSON (it said "neither OTLP JSON nor an
/// OTLP protobuf ... buffer underflow").
#[test]
fn trace_files_that_are_not_otlp_say_what_they_are() {
    let dir = temp_dir();
    for (name, bytes, says) in [
        (
            "bad.jsonl",
            &b"{\"resourceSpans\": []}\n{\"resourceSpans\": [}\n"[..],
            ":2:20: is not OTLP JSON: expected value\n",
        ),
        (
            "empty.json",
            b"",
            ": is empty: an OTLP trace file holds spans\n",
        ),
        (
            "list.json",
            b"[]\n",
            ": is JSON (an empty list) but not an OTLP trace: OTLP JSON is an object with `resourceSpans`",
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let r = prompt(
            &dir.path().join("store"),
            &["case", "from-trace", s(&file), "--list"],
        );
        r.expect_code(2);
        assert!(
            r.stderr
                .starts_with(&format!("error: {}{says}", file.display())),
            "{name}: {r}"
        );
    }
}

/// `history --stdout` / `--stderr` to a terminal escape the control
/// sequences the agent printed (it set the terminal's title and cleared
/// its screen); piped, the bytes are as the agent wrote them.
#[test]
fn history_s_streams_reach_a_terminal_escaped_and_a_pipe_as_written() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "printer", &common::passing_demo_case(1));
    let evil = "\u{1b}]0;pwned-title\u{7}\u{1b}[2J\u{1b}[31mRED\u{202e}";
    let ran = worldline_raw([
        "run".as_ref(),
        case.as_os_str(),
        "--worlds".as_ref(),
        worlds_dir().as_os_str(),
        "--json".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        "/bin/sh".as_ref(),
        "-c".as_ref(),
        OsStr::new(&format!("printf '{evil}\\n'; printf '{evil}\\n' >&2")),
    ]);
    ran.expect_code(0);
    let id = ran.json()["run_id"].as_str().unwrap().to_string();
    let piped = worldline(&store, ["history", &id, "--stdout", "--stderr"]);
    piped.expect_code(0);
    assert_eq!(piped.stdout, format!("{evil}\n{evil}\n"), "as written");
    // On a terminal (a pseudo-terminal Python's `pty` opens).
    let shown = std::process::Command::new("python3")
        .args([
            "-c",
            "import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)",
            env!("CARGO_BIN_EXE_worldline"),
            "history",
            &id,
            "--stdout",
            "--stderr",
            "--store",
        ])
        .arg(&store)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{text}");
    assert!(!text.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{text:?}");
    assert_eq!(
        text.matches("\\u{1b}]0;pwned-title\\u{7}\\u{1b}[2J\\u{1b}[31mRED\\u{202e}")
            .count(),
        2,
        "{text:?}"
    );
}

/// A usage error with `--json` is one JSON error whose message says
/// `error:` no more than any other (an unknown command's said `error:
/// error: unrecognized subcommand`), and `--json=true`, which clap
/// refuses, gets its error in JSON too (stdout was empty).
#[test]
fn a_usage_error_answers_json_once_said() {
    for args in [
        &["nocmd", "--json"][..],
        &["help", "run", "--json"],
        &["runs", "--json=true"],
    ] {
        let out = common::worldline_raw(args);
        out.expect_code(2);
        let message = out.json()["error"]["message"].as_str().unwrap();
        assert!(!message.starts_with("error:"), "{args:?}: {out}");
    }
}

/// `runs --limit 0` is refused, as `test --limit 0` is (it listed `[]`,
/// exit 0, as if the store held no run).
#[test]
fn runs_limit_0_is_refused_as_test_s_is() {
    let dir = common::temp_dir();
    std::fs::create_dir_all(dir.path().join("runs")).unwrap();
    let out = common::worldline(dir.path(), ["runs", "--limit", "0", "--json"]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["file"], "--limit", "{out}");
}

/// `--store`'s help says where its default comes from, without clap's
/// `[default: .worldline]` contradicting it.
#[test]
fn the_store_flag_s_help_says_its_default_once() {
    let out = common::worldline_raw(["runs", "--help"]);
    out.expect_code(0);
    assert!(!out.stdout.contains("[default: .worldline]"), "{out}");
    assert!(out.stdout.contains("beside that file"), "{out}");
}
