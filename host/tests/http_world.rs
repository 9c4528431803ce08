//! The world's own HTTP surface beyond `[[routes]]`: routes declared by an
//! OpenAPI 3 document (`[openapi]`), and the world's files as MCP
//! resources at http://world/mcp. Driven by examples/http-agent's
//! `requests` task key (a list of requests it sends and answers with each
//! status and body), on the real binary.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::path::Path;

const TOOL_CALL: &str = "worldline:agent/tools.call";

const DEPLOYS_API: &str = r##"
openapi: 3.0.3
info: {title: Deploys, version: "1"}
servers: [{url: "https://deploys.internal/api"}]
security: [{bearer: []}]
components:
  securitySchemes:
    bearer: {type: http, scheme: bearer}
  parameters:
    DeployId: {name: id, in: path, required: true, schema: {type: string}}
paths:
  /deploys:
    get:
      operationId: listDeploys
      parameters:
        - {name: service, in: query, required: true, schema: {type: string}}
        - {name: X-Request-Id, in: header, schema: {type: string}}
      responses:
        200: {description: the deploys, newest first}
  /deploys/{id}/rollback:
    post:
      operationId: rollback_deploy
      parameters: [{$ref: "#/components/parameters/DeployId"}]
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {reason: {type: string}}}
      responses:
        200: {description: rolled back}
  /health:
    get: {operationId: health, responses: {200: {description: up}}}
"##;

/// incident@v4 copied under `root/worlds`, its deploys API declared by an
/// OpenAPI document; the worlds folder.
fn world_with_openapi(root: &Path) -> std::path::PathBuf {
    let worlds = root.join("worlds");
    let dir = worlds.join("incident/v4");
    copy_dir(&workspace_root().join("worlds/incident/v4"), &dir);
    std::fs::create_dir_all(dir.join("api")).unwrap();
    std::fs::write(dir.join("api/deploys.yaml"), DEPLOYS_API).unwrap();
    let mut toml = std::fs::read_to_string(dir.join("world.toml")).unwrap();
    toml.push_str(
        "\n[openapi]\nfile = \"api/deploys.yaml\"\ntools = { listDeploys = \"list_deploys\" }\n",
    );
    std::fs::write(dir.join("world.toml"), toml).unwrap();
    worlds
}

#[test]
fn an_openapi_document_declares_routes_that_answer_with_the_worlds_tools() {
    let root = temp_dir();
    let worlds = world_with_openapi(root.path());
    let case = write_case(
        root.path(),
        "openapi",
        r#"world = "incident@v4"
seed = 519
clock = 2026-03-01T12:05:00Z

[task]
requests = [
  { method = "GET", url = "https://deploys.internal/api/deploys?service=checkout" },
  { method = "POST", url = "https://deploys.internal/api/deploys/D-42/rollback", body = { reason = "ALERT-7" } },
  { method = "POST", url = "https://deploys.internal/api/deploys/D-99/rollback", body = { reason = "no such deploy" } },
  { method = "GET", url = "https://deploys.internal/api/health" },
]

[[inject]]
tool = "list_deploys"
stale = { age_s = 1200, field = "at" }

[expect]
status = "completed"

[[expect.state]]
table = "deploys"
key = "D-42"
field = "status"
equals = "rolled_back"
"#,
    );
    let store = temp_dir();
    let out = run_in(store.path(), &case, &guest("http-agent"), &worlds);
    out.expect_code(0);
    let r = out.output()["responses"].clone();
    assert_eq!(r[0]["status"], 200, "{r}");
    let ids: Vec<&str> = r[0]["body"]["deploys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert!(!ids.is_empty() && !ids.contains(&"D-42"), "stale: {ids:?}");
    assert_eq!(r[1]["status"], 200);
    assert_eq!(r[1]["body"]["status"], "rolled_back");
    assert_eq!(r[2]["status"], 404);
    // /health names no tool: it is not answered, so it is denied.
    assert!(
        r[3]["error"].as_str().is_some_and(|e| e.contains("Denied")),
        "{}",
        r[3]
    );
    let tools = calls_of(&out.bundle(), TOOL_CALL);
    assert_eq!(tools[0]["request"]["name"], "list_deploys");
    assert_eq!(tools[0]["request"]["args"], json!({"service": "checkout"}));
    assert_eq!(
        tools[1]["request"]["args"],
        json!({"id": "D-42", "reason": "ALERT-7"})
    );
    assert_eq!(tools[1]["request"]["transport"]["http"]["api"], "rest");
    replays_identical(store.path(), out.json()["run_id"].as_str().unwrap());

    // `check` says what the document declares and worldline ignores.
    let checked = worldline_raw([
        OsStr::new("check"),
        worlds.join("incident/v4/world.toml").as_os_str(),
        OsStr::new("--json"),
    ]);
    checked.expect_code(0);
    let notes = checked.json()["notes"].to_string();
    for said in [
        "X-Request-Id in header",
        "GET /health (health)",
        "security",
        "responses",
    ] {
        assert!(notes.contains(said), "{said} not in {notes}");
    }
}

#[test]
fn an_unusable_openapi_document_is_an_input_error_at_its_section() {
    let root = temp_dir();
    let worlds = world_with_openapi(root.path());
    let dir = worlds.join("incident/v4");
    std::fs::write(
        dir.join("api/deploys.yaml"),
        "swagger: \"2.0\"\npaths: {}\n",
    )
    .unwrap();
    let out = worldline_raw([OsStr::new("check"), dir.join("world.toml").as_os_str()]);
    out.expect_code(2);
    // Named by the document, not world.toml.
    assert!(
        out.stdout.contains("api/deploys.yaml: is Swagger 2.0"),
        "{out}"
    );
    std::fs::write(dir.join("api/deploys.yaml"), "openapi: [3\n").unwrap();
    let out = worldline_raw([OsStr::new("check"), dir.join("world.toml").as_os_str()]);
    out.expect_code(2);
    assert!(format!("{out}").contains("is not valid YAML"), "{out}");
}

#[test]
fn the_worlds_files_are_mcp_resources_read_as_mediated_file_reads() {
    let store = temp_dir();
    let case = workspace_root().join("tests/cases/http-mcp-resources.toml");
    let out = run_in(store.path(), &case, &guest("http-agent"), &worlds_dir());
    out.expect_code(0);
    let r = out.output()["responses"].clone();
    assert_eq!(
        r[0]["body"]["result"]["capabilities"]["resources"],
        json!({"listChanged": false, "subscribe": false})
    );
    assert_eq!(
        r[1]["body"]["result"]["resources"],
        json!([{"uri": "file:///runbooks/db.md", "name": "runbooks/db.md", "mimeType": "text/markdown"}])
    );
    let text = r[2]["body"]["result"]["contents"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.starts_with("# Database runbook"), "{text}");
    assert_eq!(r[3]["body"]["error"]["code"], -32002);
    let bundle = out.bundle();
    let reads = calls_of(&bundle, "worldline:agent/files.read");
    assert_eq!(reads.len(), 2);
    assert_eq!(reads[0]["request"]["path"], "runbooks/db.md");
    assert_eq!(reads[0]["request"]["transport"]["http"]["api"], "mcp");
    assert_eq!(calls_of(&bundle, "worldline:agent/files.paths").len(), 1);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    replays_identical(store.path(), &id);

    // A fork that denies reading files from the start: a world file's
    // permission, as in a case's [permissions] (it was refused as no tool).
    let fork = worldline(
        store.path(),
        [
            "fork",
            id.as_str(),
            "--at",
            "0",
            "--deny",
            "files.read",
            "--json",
        ],
    );
    // Graded failed: the case wants the runbook's text in the output.
    fork.expect_code(1);
    let r = fork.output()["responses"].clone();
    assert_eq!(r[2]["body"]["error"]["data"]["kind"], "denied", "{r}");
    assert_eq!(
        r[1]["body"]["result"]["resources"][0]["name"],
        "runbooks/db.md"
    );

    // A case that does not permit reading files: the read is an MCP error
    // carrying the kind, recorded as the denied read it is.
    let text = std::fs::read_to_string(&case)
        .unwrap()
        .replace(
            "[expect]\n",
            "[permissions]\ndeny = [\"files.read\"]\n\n[expect]\n",
        )
        .replace("[expect.output]", "[expect.output_unused]");
    let denied_case = write_case(
        store.path(),
        "denied",
        text.split("[expect.output_unused]").next().unwrap(),
    );
    let out = run_in(
        store.path(),
        &denied_case,
        &guest("http-agent"),
        &worlds_dir(),
    );
    out.expect_code(0);
    let r = out.output()["responses"].clone();
    assert_eq!(r[2]["body"]["error"]["data"]["kind"], "denied", "{r}");
    assert_eq!(r[2]["body"]["error"]["code"], -32603);
}

/// A run recorded before there were rules (its header has none: rules 0)
/// sent a route's query text on as text where the parameter accepts
/// `["integer", "null"]`, and the strict tool answered 422: it replays
/// `identical`, and a fork of it runs under its rules. The same case run
/// anew runs under rules 1 (decision 0423): `limit=1` and `page=1` are
/// integers, the newest deploy is the answer, and the header says so.
#[test]
fn a_route_s_optional_integer_is_typed_under_rules_1_and_a_run_before_them_replays_as_it_ran() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let old = imported_fixture(&store, "before-rules", "optional-limit.json");
    let fork = wl(&store, &[&"fork", &old, &"--at", &"0", &"--json"]);
    fork.expect_code(0);
    assert_eq!(fork.output()["responses"][0]["status"], 422, "{fork}");
    assert!(
        fork.stderr.contains(&format!(
            "note: run {old} was recorded under rules 0, and its fork runs under them too"
        )),
        "{fork}"
    );
    let forked = read_bundle(&fork.bundle()).header;
    assert!(
        forked.get("seed").is_some() && forked.get("rules").is_none(),
        "{forked}"
    );

    let fixture = workspace_root().join("tests/bundles/before-rules");
    let case = fixture.join("optional-limit.toml");
    let out = run_in(&store, &case, &guest("http-agent"), &fixture.join("worlds"));
    out.expect_code(0);
    let r = &out.output()["responses"][0];
    assert_eq!(r["status"], 200, "{r}");
    let ids: Vec<&Value> = r["body"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["id"])
        .collect();
    assert_eq!(ids, [&json!("D-2")], "{r}");
    let tools = calls_of(&out.bundle(), TOOL_CALL);
    assert_eq!(
        tools[0]["request"]["args"],
        json!({"service": "checkout", "limit": 1, "page": 1})
    );
    assert_eq!(
        read_bundle(&out.bundle()).header["rules"],
        worldline_log::log::rules::CURRENT
    );
    replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// A query key given again is every value of a parameter that takes an
/// array (`?tag=a&tag=b`, FastAPI's `list[str] = Query()`), each typed by
/// its `items`, under rules 1 (decision 0423); one that does not take an
/// array keeps its first value. Before, every key kept its first value as
/// text, so the tool saw `tag = "a"` and a strict one refused it.
#[test]
fn a_query_key_given_again_is_every_value_of_an_array_parameter() {
    let dir = temp_dir();
    let worlds = write_world(
        dir.path(),
        "echo",
        r#"name = "echo"
version = 1

[permissions]
default = "allow"

[[tools]]
name = "search"
description = "Say what was asked for"
params = { type = "object", properties = { tag = { type = "array", items = { type = "string" } }, id = { anyOf = [{ type = "array", items = { type = "integer" } }, { type = "null" }] }, q = { type = "string" } }, additionalProperties = false }
op = "respond"
response = "$args"

[[routes]]
method = "GET"
url = "https://search.internal/search"
tool = "search"
"#,
        &[],
    );
    let case = write_case(
        dir.path(),
        "tags",
        r#"world = "echo@v1"
seed = 1
clock = 2026-03-01T12:00:00Z

[task]
requests = [{ method = "GET", url = "https://search.internal/search?tag=a&id=1&tag=b&id=2&q=x&q=y" }]
"#,
    );
    let store = dir.path().join("store");
    let out = run_in(&store, &case, &guest("http-agent"), &worlds);
    out.expect_code(0);
    let r = &out.output()["responses"][0];
    assert_eq!(r["status"], 200, "{r}");
    let asked = json!({"tag": ["a", "b"], "id": [1, 2], "q": "x"});
    assert_eq!(r["body"], asked, "{r}");
    assert_eq!(
        calls_of(&out.bundle(), TOOL_CALL)[0]["request"]["args"],
        asked
    );
    replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}
