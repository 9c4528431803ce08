//! End-to-end tests of `worldline fuzz` and `worldline repro` on the real
//! binary with the real example agents: failure rates with intervals,
//! reproducers that replay identical and fail the same assertion,
//! shrinking to the one fault that matters, reports independent of
//! `--jobs`, repro rates, and clear errors for bad profiles.

use crate::common;

use common::{
    ONE_FAULT_MATTERS, files_with_suffix, guest, read_bundle, temp_dir, workspace_root, worldline,
    write_case,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fuzz_case() -> PathBuf {
    workspace_root().join("cases/incident/fuzz-stale-deploys.toml")
}

fn fuzz(store: &Path, case: &Path, agent: &Path, extra: &[&str]) -> common::CliOutput {
    let mut args: Vec<String> = vec![
        "fuzz".into(),
        case.display().to_string(),
        "--agent".into(),
        agent.display().to_string(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    worldline(store, args)
}

/// The report without what may differ between invocations: timing, the
/// campaign's id, and the reproducers' run ids and bundle paths (store
/// names carry the time).
fn stable(report: &Value) -> Value {
    let mut r = report.clone();
    r.as_object_mut().unwrap().remove("timing");
    r.as_object_mut().unwrap().remove("campaign");
    for g in r["groups"].as_array_mut().unwrap() {
        let rep = g["reproducer"].as_object_mut().unwrap();
        rep.remove("run_id");
        rep.remove("bundle");
    }
    r
}

#[test]
fn the_naive_agent_fails_stale_deploys_at_a_rate_and_every_reproducer_replays() {
    let store = temp_dir();
    let events = store.path().join("events.jsonl");
    let out = fuzz(
        store.path(),
        &fuzz_case(),
        &guest("naive-agent"),
        &[
            "--runs",
            "120",
            "--jobs",
            "2",
            "--events",
            events.to_str().unwrap(),
        ],
    );
    out.expect_code(1);
    let r = out.json();
    let s = &r["summary"];
    let (runs, failed) = (s["runs"].as_u64().unwrap(), s["failed"].as_u64().unwrap());
    assert_eq!(runs, 120);
    // `--events`: started, a line per run, then the tally.
    let lines: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 122);
    assert_eq!(lines[0]["event"], "started");
    assert_eq!(lines[0]["runs"], 120);
    let failing = lines[1..121]
        .iter()
        .filter(|l| l["event"] == "run_finished" && !l["trial"]["signature"].is_null())
        .count() as u64;
    assert_eq!(failing, failed);
    // Each run's line says the faults it met, a passing run's too (every
    // passing run said none): a deploy list stale by less than 15 min is
    // met and survived.
    let survived = lines[1..121]
        .iter()
        .filter(|l| l["trial"]["signature"].is_null())
        .filter(|l| {
            l["trial"]["faults"]["faults"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
        })
        .count();
    assert!(survived > 0, "no passing run met a fault");
    assert_eq!(lines[121]["event"], "finished");
    assert_eq!(lines[121]["tally"]["runs"], 120);
    // Half the deploy lists are stale by 1..30 min and only ages past 15 min
    // hide D-42: about a quarter of the runs fail.
    assert!((10..=60).contains(&failed), "{failed} of 120 failed\n{out}");
    let rate = s["pass_rate"].as_f64().unwrap();
    let (lo, hi) = (
        s["interval"][0].as_f64().unwrap(),
        s["interval"][1].as_f64().unwrap(),
    );
    assert!(lo < rate && rate < hi && hi - lo < 0.2, "{s}");

    let groups = r["groups"].as_array().unwrap();
    assert!(!groups.is_empty());
    let sig = groups[0]["signature"].as_str().unwrap();
    assert_eq!(sig, "failed: deploys/D-42.status equals", "{out}");
    let mix: Vec<&str> = groups[0]["fault_mix"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["fault"].as_str().unwrap())
        .collect();
    assert!(mix.contains(&"list_deploys stale"), "{mix:?}");
    assert_eq!(
        groups
            .iter()
            .map(|g| g["count"].as_u64().unwrap())
            .sum::<u64>(),
        failed
    );

    // Only the reproducers are written: passing runs stay in memory.
    let bundles = files_with_suffix(&store.path().join("runs"), ".jsonl");
    assert_eq!(bundles.len(), groups.len(), "{bundles:?}");
    for g in groups {
        let id = g["reproducer"]["run_id"].as_str().unwrap();
        let replay = worldline(store.path(), ["replay", id, "--json"]);
        replay.expect_code(0);
        assert_eq!(replay.json()["verdict"], "identical", "{replay}");
        let b = read_bundle(Path::new(g["reproducer"]["bundle"].as_str().unwrap()));
        assert!(b.header["fuzz"]["profile"].is_object(), "{}", b.header);
        assert_eq!(b.header["seed"], g["reproducer"]["seed"]);
        let footer = b.footer.unwrap();
        let first = footer["grade"]["assertions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["passed"] == false)
            .unwrap();
        let want = g["signature"].as_str().unwrap();
        assert_eq!(format!("failed: {}", first["what"].as_str().unwrap()), want);
        assert!(b.events.iter().any(|e| e["injected"]["fuzz"].is_object()));
        let history = worldline(store.path(), ["history", id, "--only", "tools"]);
        assert!(history.stdout.contains("[fuzz: stale]"), "{history}");
    }
    // The store's verification replays them too.
    let verify = worldline(store.path(), ["verify", "--json"]);
    verify.expect_code(0);
}

#[test]
fn shrinking_ends_at_the_single_fault_that_matters() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "one-fault", ONE_FAULT_MATTERS);
    let worlds = workspace_root().join("worlds");
    let out = fuzz(
        dir.path(),
        &case,
        &guest("naive-agent"),
        &[
            "--runs",
            "4",
            "--shrink",
            "--worlds",
            worlds.to_str().unwrap(),
        ],
    );
    out.expect_code(1);
    let r = out.json();
    assert_eq!(r["summary"]["failed"], 4, "{out}");
    let groups = r["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    let g = &groups[0];
    let shrunk = &g["shrunk"];
    // Skew plus a fault on each of the five calls, one with two parts.
    assert!(shrunk["faults_before"].as_u64().unwrap() >= 6, "{shrunk}");
    assert_eq!(shrunk["faults_after"], 1, "{shrunk}");
    assert_eq!(shrunk["complete"], true);
    let faults = &g["reproducer"]["faults"];
    assert!(faults.get("clock_skew_s").is_none(), "{faults}");
    let only = &faults["faults"][0];
    assert_eq!(only["tool"], "list_deploys");
    assert_eq!(only["nth"], 1);
    assert!(only.get("latency_ms").is_none(), "{only}");
    // D-42 went out at 11:50 and the list is read just after 12:05:00.
    assert_eq!(only["action"]["stale"]["age_s"], 901, "{only}");
    let words = shrunk["words"].as_str().unwrap();
    assert_eq!(
        words,
        "fails when list_deploys (call 1) is stale by more than 15 min (fails at 15 min 1 s, passes at 15 min); no other fault needed"
    );
    // A budget spent before each fault was tried without the others does
    // not say they are all needed (it did); a budget of 0 is refused.
    let with_budget = |budget: &str| {
        let worlds = worlds.to_str().unwrap();
        let args = [
            "--runs",
            "4",
            "--shrink",
            "--shrink-budget",
            budget,
            "--worlds",
            worlds,
        ];
        fuzz(dir.path(), &case, &guest("naive-agent"), &args)
    };
    let spent = with_budget("1");
    let shrunk = &spent.json()["groups"][0]["shrunk"];
    assert_eq!(shrunk["complete"], false, "{spent}");
    assert!(shrunk["faults_after"].as_u64().unwrap() > 1, "{spent}");
    let words = shrunk["words"].as_str().unwrap();
    assert!(words.contains("some may not be needed"), "{words}");
    assert!(!words.contains("without any one of them"), "{words}");
    let none = with_budget("0");
    none.expect_code(2);
    assert!(none.stderr.contains("--shrink-budget"), "{none}");

    // The kept reproducer runs that one-fault schedule and replays identical.
    let id = g["reproducer"]["run_id"].as_str().unwrap();
    let b = read_bundle(Path::new(g["reproducer"]["bundle"].as_str().unwrap()));
    assert_eq!(b.header["fuzz"]["schedule"], *faults);
    let injected: Vec<&Value> = b
        .events
        .iter()
        .filter(|e| e["injected"].is_object())
        .collect();
    assert_eq!(injected.len(), 1, "{injected:?}");
    let replay = worldline(dir.path(), ["replay", id, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

#[test]
fn the_same_seed_gives_the_same_report_on_one_and_two_jobs() {
    let naive = guest("naive-agent");
    let report = |jobs: &str| {
        let store = temp_dir();
        let out = fuzz(
            store.path(),
            &fuzz_case(),
            &naive,
            &[
                "--runs", "40", "--repeat", "2", "--seed", "77", "--shrink", "--jobs", jobs,
            ],
        );
        out.expect_code(1);
        stable(out.json())
    };
    let one = report("1");
    assert_eq!(one, report("2"));
    assert_eq!(one["seed"], 77);
    assert_eq!(one["summary"]["runs"], 80);
    // The case has no model, so nothing draws from the model seed and
    // repeats agree: pass^2 = pass^1.
    let k = one["summary"]["pass_k"].as_array().unwrap();
    assert_eq!(k.len(), 2);
    assert_eq!(k[0]["value"], k[1]["value"]);
    // Another seed gives other runs.
    let store = temp_dir();
    let other = fuzz(
        store.path(),
        &fuzz_case(),
        &naive,
        &["--runs", "40", "--repeat", "2", "--seed", "78"],
    );
    assert_ne!(stable(other.json())["groups"], one["groups"]);
}

/// A seed repeated 1,100 times gives pass^k as a number at every k listed
/// (every k up to 16, the powers of two, then the repeats), where a float
/// C(1100, k), infinite from k = 388 on, made them null.
#[test]
fn many_repeats_of_a_seed_give_pass_k_as_numbers() {
    let store = temp_dir();
    let out = fuzz(
        store.path(),
        &fuzz_case(),
        &guest("naive-agent"),
        &["--runs", "1", "--repeat", "1100", "--seed", "77"],
    );
    let doc = out.json();
    let k: Vec<(u64, f64)> = doc["summary"]["pass_k"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["k"].as_u64().unwrap(), p["value"].as_f64().unwrap()))
        .collect();
    let mut ks: Vec<u64> = (1..=16).collect();
    ks.extend([32, 64, 128, 256, 512, 1024, 1100]);
    assert_eq!(k.iter().map(|p| p.0).collect::<Vec<_>>(), ks, "{doc}");
    // Nothing draws from the model seed: each seed's runs agree, and
    // pass^k is pass^1 at every k.
    assert!(k.iter().all(|p| p.1 == k[0].1), "{doc}");
}

/// A campaign's trials are counted and dropped without their hashes
/// (decision 0410); written with `--keep-all`, each is hashed as every
/// written run is. The report is the same either way: the same verdicts,
/// signatures, fault mixes and reproducers.
#[test]
fn counted_trials_report_what_written_ones_do() {
    let naive = guest("naive-agent");
    let report = |extra: &[&str]| {
        let store = temp_dir();
        let mut args = vec!["--runs", "60", "--seed", "5", "--shrink", "--jobs", "2"];
        args.extend(extra);
        let out = fuzz(store.path(), &fuzz_case(), &naive, &args);
        out.expect_code(1);
        let runs = files_with_suffix(&store.path().join("runs"), ".jsonl").len();
        (stable(out.json()), runs)
    };
    let (counted, reproducers) = report(&[]);
    let (written, all) = report(&["--keep-all"]);
    assert_eq!(counted, written);
    let groups = counted["groups"].as_array().unwrap().len();
    assert!(groups > 0, "{counted}");
    assert_eq!(reproducers, groups, "only the reproducers are written");
    assert_eq!(all, 60 + groups, "every run and the reproducers");
}

/// The first failure group of a campaign of 30 runs of the naive agent,
/// whose reproducer the `repro` tests repeat.
fn first_group(store: &Path) -> Value {
    let out = fuzz(
        store,
        &fuzz_case(),
        &guest("naive-agent"),
        &["--runs", "30"],
    );
    out.json()["groups"][0].clone()
}

#[test]
fn repro_reports_a_rate() {
    let store = temp_dir();
    let g = &first_group(store.path());
    let id = g["reproducer"]["run_id"].as_str().unwrap();
    let repro = worldline(store.path(), ["repro", id, "--times", "6", "--json"]);
    repro.expect_code(0);
    let r = repro.json();
    assert_eq!(r["outcome"], g["signature"]);
    assert_eq!(r["times"], 6);
    assert_eq!(r["reproduced"], 6);
    assert_eq!(r["rate"], 1.0);
    let lo = r["interval"][0].as_f64().unwrap();
    assert!(0.5 < lo && lo < 1.0, "{r}");
    // Re-running writes nothing.
    assert_eq!(
        files_with_suffix(&store.path().join("runs"), ".jsonl").len(),
        1
    );
}

/// A Ctrl-C on `repro` ends it with the rate of the repetitions made
/// before it (`interrupted`), said on stderr, then the signal ends it: it
/// ended with nothing on stdout or stderr.
#[test]
fn repro_stopped_by_sigint_reports_the_rate_of_the_repetitions_made() {
    let store = temp_dir();
    let id = first_group(store.path())["reproducer"]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut command = common::cli();
    command
        .args(["repro", &id, "--times", "1000000", "--json", "--store"])
        .arg(store.path());
    let ready = |pid, _: &str| {
        let caught = common::catches(pid, libc::SIGINT);
        if caught {
            // Some repetitions made.
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        caught
    };
    let (signal, out) = common::signalled_once(command, ready, libc::SIGINT, true);
    assert_eq!(signal, Some(libc::SIGINT), "{out}");
    let r = out.json();
    assert_eq!(r["interrupted"], "SIGINT", "{out}");
    let times = r["times"].as_u64().unwrap();
    assert!(times < 1_000_000, "{out}");
    assert_eq!(r["reproduced"], times, "{out}");
    assert!(
        out.stderr.contains(&format!(
            "interrupted by SIGINT: the rate is of the {times} of 1000000 repetitions made"
        )),
        "{out}"
    );
}

#[test]
fn bad_profiles_are_input_errors_naming_the_file_and_line() {
    let dir = temp_dir();
    let naive = guest("naive-agent");
    let worlds = workspace_root().join("worlds");
    let w = worlds.to_str().unwrap();
    let bad = ONE_FAULT_MATTERS.replace("stale = { p = 1.0", "stale = { p = 1.5");
    let case = write_case(dir.path(), "bad-p", &bad);
    let out = fuzz(dir.path(), &case, &naive, &["--worlds", w]);
    out.expect_code(2);
    // At the key the problem is about (it was placed at the entry's header).
    let line = (bad.lines().position(|l| l.starts_with("stale = { p = 1.5"))).unwrap() + 1;
    assert!(
        out.stderr.contains(&format!("bad-p.toml:{line}:"))
            && out.stderr.contains("not a probability"),
        "{out}"
    );

    let faults = dir.path().join("faults.toml");
    std::fs::write(&faults, "[[tools]]\ntool = \"list_deploys\"\n\n[[tools]]\ntool = \"get_alert\"\nerror = { tiemout = 0.5 }\n").unwrap();
    let out = fuzz(
        dir.path(),
        &fuzz_case(),
        &naive,
        &["--faults", faults.to_str().unwrap()],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("faults.toml:1:"), "{out}");
    assert!(
        out.stderr.contains("no fault with a probability above 0"),
        "{out}"
    );

    std::fs::write(
        &faults,
        "[[tools]]\ntool = \"get_alert\"\nerror = { tiemout = 0.5 }\n",
    )
    .unwrap();
    let out = fuzz(
        dir.path(),
        &fuzz_case(),
        &naive,
        &["--faults", faults.to_str().unwrap()],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains("faults.toml:3:")
            && out.stderr.contains("error.tiemout is not an error kind"),
        "{out}"
    );

    // A number where a table is meant is told the table to write, not
    // the name of a type in worldline's code (`expected struct …`).
    std::fs::write(
        &faults,
        "[[tools]]\ntool = \"get_alert\"\nlatency_ms = -5\n",
    )
    .unwrap();
    let out = fuzz(
        dir.path(),
        &fuzz_case(),
        &naive,
        &["--faults", faults.to_str().unwrap()],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains("faults.toml:3:14: [[tools]] latency_ms: invalid type: integer `-5`, expected a table `{ p = PROBABILITY, ms = [LOW, HIGH] }`")
            && !out.stderr.contains("struct"),
        "{out}"
    );
    // A number where a name is meant is a type error naming its key.
    std::fs::write(
        &faults,
        "[[tools]]\ntool = \"get_alert\"\nlatency_ms = { p = 0.5, ms = [1, 2], dist = 5 }\n",
    )
    .unwrap();
    let out = fuzz(
        dir.path(),
        &fuzz_case(),
        &naive,
        &["--faults", faults.to_str().unwrap()],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains(
            "faults.toml:3:45: dist: invalid type: expected a string (one of its names) or a table"
        ),
        "{out}"
    );

    let plain = workspace_root().join("cases/incident/baseline.toml");
    let out = fuzz(dir.path(), &plain, &naive, &[]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("baseline.toml") && out.stderr.contains("--faults FILE"),
        "{out}"
    );
}

/// The caller guest makes three `get_ticket` calls; the case's own rule
/// answers the first, and the profile denies every call it may touch.
const RULE_AND_PROFILE: &str = r#"
world = "demo@v1"
seed = 3
clock = 2026-03-01T12:00:00Z
task = { calls = [
  { tool = "get_ticket", args = { id = "T-1" } },
  { tool = "get_ticket", args = { id = "T-1" } },
  { tool = "get_ticket", args = { id = "T-2" } },
] }

[[inject]]
tool = "get_ticket"
nth = 1
response = { id = "T-1", status = "from-the-rule" }

[fuzz]
[[fuzz.tools]]
tool = "get_*"
deny = 1.0
"#;

#[test]
fn case_rules_win_over_fuzz_faults_and_calls_are_counted_per_tool() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "rule-and-profile", RULE_AND_PROFILE);
    let worlds = common::worlds_dir();
    let out = fuzz(
        dir.path(),
        &case,
        &guest("caller-agent"),
        &[
            "--runs",
            "1",
            "--keep-all",
            "--worlds",
            worlds.to_str().unwrap(),
        ],
    );
    // No [expect]: the run completes, so it passes; --keep-all wrote it.
    out.expect_code(0);
    assert_eq!(out.json()["summary"]["passed"], 1, "{out}");
    let bundles = files_with_suffix(&dir.path().join("runs"), ".jsonl");
    assert_eq!(bundles.len(), 1);
    let b = read_bundle(&bundles[0]);
    let marks: Vec<&Value> = b
        .events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .map(|e| &e["injected"])
        .collect();
    assert_eq!(marks[0]["rule"], 0, "{marks:?}");
    assert!(marks[0].get("fuzz").is_none());
    for (i, m) in marks[1..].iter().enumerate() {
        assert_eq!(m["action"], "deny");
        assert_eq!(m["fuzz"]["nth"], i as u64 + 2, "{m}");
        assert_eq!(m["fuzz"]["action"], "deny");
    }
    let id = bundles[0].file_stem().unwrap().to_str().unwrap();
    let replay = worldline(dir.path(), ["replay", id, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

#[test]
fn model_alternatives_give_pass_k_below_pass_1_and_repro_a_true_rate() {
    // The weighted model case (3 in 4 it picks D-42) with a harmless fault
    // profile: what fails is the model's choice, drawn from the model seed.
    let dir = temp_dir();
    let weighted =
        std::fs::read_to_string(workspace_root().join("cases/model/rollback-weighted.toml"))
            .unwrap();
    let text = format!(
        "{weighted}\n[fuzz]\n[[fuzz.tools]]\ntool = \"get_alert\"\nlatency_ms = {{ p = 0.5, ms = [10, 100] }}\n"
    );
    let case = write_case(dir.path(), "weighted-fuzz", &text);
    let worlds = workspace_root().join("worlds");
    let out = fuzz(
        dir.path(),
        &case,
        &guest("model-agent"),
        &[
            "--runs",
            "30",
            "--repeat",
            "4",
            "--worlds",
            worlds.to_str().unwrap(),
        ],
    );
    out.expect_code(1);
    let r = out.json();
    let k: Vec<f64> = r["summary"]["pass_k"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    assert_eq!(k.len(), 4);
    assert!(0.5 < k[0] && k[0] < 0.95, "{k:?}");
    assert!(k[3] < k[1] && k[1] < k[0], "pass^k falls with k: {k:?}");

    let id = r["groups"][0]["reproducer"]["run_id"].as_str().unwrap();
    let repro = worldline(dir.path(), ["repro", id, "--times", "40", "--json"]);
    repro.expect_code(0);
    let rr = repro.json();
    assert!(rr["distinct_runs"].as_u64().unwrap() >= 2, "{rr}");
    let rate = rr["rate"].as_f64().unwrap();
    assert!(
        0.0 < rate && rate < 0.6,
        "a 1-in-4 choice reproduces about a quarter of the time: {rr}"
    );
}

/// A campaign whose scripted model runs out of replies: the merged report
/// keeps what it had no reply for (`groups[].unscripted`), as one
/// machine's does (the merge dropped it).
#[test]
fn merged_shards_keep_what_a_scripted_model_had_no_reply_for() {
    let root = common::workspace_root();
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (case, agent) = (
        root.join("cases/model/rollback-weighted.toml"),
        guest("model-agent"),
    );
    let faults = root.join("examples/native-agents/faults.toml");
    let args = ["--runs", "40", "--faults", faults.to_str().unwrap()];
    let whole = fuzz(&store, &case, &agent, &args);
    let unscripted = |r: &Value| {
        (r["groups"].as_array().unwrap().iter())
            .filter(|g| g.get("unscripted").is_some())
            .count()
    };
    assert!(unscripted(whole.json()) > 0, "{whole}");
    let mut files = Vec::new();
    for shard in 1..=2 {
        let p = format!("{shard}/2");
        let mut a = args.to_vec();
        a.extend(["--partition", &p]);
        let f = dir.path().join(format!("{shard}.json"));
        std::fs::write(&f, fuzz(&store, &case, &agent, &a).stdout).unwrap();
        files.push(f.display().to_string());
    }
    let merged = worldline(
        &store,
        [vec!["merge".into(), "--json".into()], files].concat(),
    );
    assert_eq!(stable(merged.json()), stable(whole.json()));
}

#[test]
fn merged_shards_equal_the_single_machine_report() {
    let naive = guest("naive-agent");
    let dir = temp_dir();
    let store = dir.path().join("store");
    let args = ["--runs", "30", "--repeat", "2", "--seed", "77", "--shrink"];
    let whole = fuzz(&store, &fuzz_case(), &naive, &args);
    whole.expect_code(1);
    for kind in ["count", "hash"] {
        let mut files = Vec::new();
        let mut runs = 0;
        for shard in 1..=3 {
            let p = format!("{kind}:{shard}/3");
            let mut a = args.to_vec();
            a.extend(["--partition", &p]);
            let out = fuzz(&store, &fuzz_case(), &naive, &a);
            let tallied = out.json()["tally"]["runs"].as_u64().unwrap();
            assert_eq!(out.json()["summary"]["runs"].as_u64(), Some(tallied));
            runs += tallied;
            let f = dir.path().join(format!("{kind}-{shard}.json"));
            std::fs::write(&f, &out.stdout).unwrap();
            files.push(f.display().to_string());
        }
        assert_eq!(runs, 60, "{kind}: every run in exactly one shard");
        let mut m = vec!["merge".to_string(), "--json".to_string()];
        m.extend(files.iter().cloned());
        let merged = worldline(&store, m);
        merged.expect_code(1);
        assert_eq!(stable(merged.json()), stable(whole.json()), "{kind}");
    }
    let short = worldline(
        &store,
        [
            "merge".to_string(),
            dir.path().join("count-1.json").display().to_string(),
        ],
    );
    short.expect_code(2);
    assert!(
        short
            .stderr
            .contains("shards count:2/3, count:3/3 are missing"),
        "{short}"
    );
    // A shard a signal interrupted is refused naming its file (the error
    // named `merge`).
    let mut cut: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("count-3.json")).unwrap()).unwrap();
    cut["interrupted"] = "SIGINT".into();
    let cut_file = dir.path().join("cut-3.json");
    std::fs::write(&cut_file, cut.to_string()).unwrap();
    let mut m = vec!["merge".to_string(), "--json".to_string()];
    m.extend([1, 2].map(|i| {
        dir.path()
            .join(format!("count-{i}.json"))
            .display()
            .to_string()
    }));
    m.push(cut_file.display().to_string());
    let refused = worldline(&store, m);
    refused.expect_code(2);
    assert_eq!(
        refused.json()["error"]["file"],
        cut_file.display().to_string(),
        "{refused}"
    );
    // `merge` of count shards 1 and 2 with `out` (kept as `name`) as the
    // third.
    let merge_with_third = |out: &common::CliOutput, name: &str| {
        let f = dir.path().join(name);
        std::fs::write(&f, &out.stdout).unwrap();
        let mut m = vec!["merge".to_string()];
        m.extend([1, 2].map(|i| {
            dir.path()
                .join(format!("count-{i}.json"))
                .display()
                .to_string()
        }));
        m.push(f.display().to_string());
        worldline(&store, m)
    };
    // A shard run from an edited case file is of no one campaign.
    std::fs::create_dir(dir.path().join("edited")).unwrap();
    let edited = dir.path().join("edited/fuzz-stale-deploys.toml");
    let text = std::fs::read_to_string(fuzz_case()).unwrap();
    std::fs::write(&edited, format!("{text}\n# edited\n")).unwrap();
    let worlds = workspace_root().join("worlds").display().to_string();
    let mut a = args.to_vec();
    a.extend(["--partition", "count:3/3", "--worlds", &worlds]);
    let out = fuzz(&store, &edited, &naive, &a);
    let mixed = merge_with_third(&out, "edited-3.json");
    mixed.expect_code(2);
    // The report that differs is named, with the one it differs from.
    assert!(
        mixed
            .stderr
            .contains("edited-3.json: is not a shard of the campaign of")
            && mixed
                .stderr
                .contains("count-1.json: `inputs` (the hash of the case file"),
        "{mixed}"
    );
    // A shard run without `--shrink` (its groups' shrinking was lost).
    let unshrunk: Vec<&str> = args.iter().copied().filter(|a| *a != "--shrink").collect();
    let mut a = unshrunk.clone();
    a.extend(["--partition", "count:3/3"]);
    let out = fuzz(&store, &fuzz_case(), &naive, &a);
    let mixed = merge_with_third(&out, "unshrunk-3.json");
    mixed.expect_code(2);
    assert!(
        mixed.stderr.contains("unshrunk-3.json: is not a shard")
            && mixed.stderr.contains("--shrink it ran with"),
        "{mixed}"
    );
}

/// A run that drew a clock skew of 0 s met no skew: it is not counted in
/// a group's fault mix (every run was, as `clock skew ×40`), nor told as
/// a cause (`the agent's clock is 0 s ahead`).
#[test]
fn a_skew_of_zero_is_no_fault_in_the_mix() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "skew-or-none",
        r#"world = "demo@v1"
seed = 5
clock = 2026-03-01T12:00:00Z
task = { calls = [ { tool = "close_ticket", args = { id = "T-1" } } ] }
[[expect.state]]
table = "tickets"
key = "T-1"
field = "status"
equals = "closed"
[fuzz]
clock_skew_s = [0, 1]
[[fuzz.tools]]
tool = "close_ticket"
deny = 1.0
"#,
    );
    let worlds = common::worlds_dir();
    let out = fuzz(
        dir.path(),
        &case,
        &guest("caller-agent"),
        &["--runs", "40", "--worlds", worlds.to_str().unwrap()],
    );
    out.expect_code(1);
    let groups = out.json()["groups"].clone();
    assert_eq!(groups[0]["count"], 40, "{out}");
    let skewed = (groups[0]["fault_mix"].as_array().unwrap().iter())
        .find(|m| m["fault"] == "clock skew")
        .map(|m| m["runs"].as_u64().unwrap())
        .unwrap();
    assert!(
        (5..35).contains(&skewed),
        "{skewed} of 40 drew a skew: {out}"
    );
}

/// A fork's edit changes its call alone: the calls after it meet the
/// faults they met in the parent, though the edit answers (`--respond`,
/// even with the very answer recorded) or denies (`--deny`) a call that
/// counted toward them (a profile's draws, a case rule's `nth`). Each
/// edit shifted the draws of every later call, so a what-if fork could
/// pass by losing the fault it was made to study.
#[test]
fn a_fork_s_edit_leaves_the_faults_after_it_as_they_were() {
    let dir = temp_dir();
    let store = dir.path();
    let gets = r#"{ tool = "get_ticket", args = { id = "T-1" } }, "#.repeat(6);
    let case = write_case(
        dir.path(),
        "draws",
        &format!(
            r#"world = "demo@v1"
seed = 5
clock = 2026-03-01T12:00:00Z
task = {{ calls = [ {{ tool = "close_ticket", args = {{ id = "T-2" }} }}, {gets}] }}
[fuzz]
[[fuzz.tools]]
tool = "close_ticket"
error = {{ timeout = 0.3 }}
[[fuzz.tools]]
tool = "get_ticket"
error = {{ timeout = 0.5 }}
"#
        ),
    );
    let worlds = common::worlds_dir();
    let worlds = worlds.to_str().unwrap();
    let agent = guest("caller-agent");
    fuzz(
        store,
        &case,
        &agent,
        &["--runs", "1", "--keep-all", "--worlds", worlds],
    );
    let parent = files_with_suffix(&store.join("runs"), ".jsonl")[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    // Each tool call's seq and the fault it met.
    let faults = |run: &str| -> Vec<(u64, Value)> {
        let h = worldline(store, ["history", run, "--only", "tools", "--json"]);
        h.expect_code(0);
        (h.json()["events"].as_array().unwrap().iter())
            .map(|e| (e["seq"].as_u64().unwrap(), e["injected"]["action"].clone()))
            .collect()
    };
    let before = faults(&parent);
    assert!(
        before[1..].iter().any(|(_, f)| f == "error")
            && before[1..].iter().any(|(_, f)| f.is_null()),
        "the later calls meet some faults: {before:?}"
    );
    let answer =
        worldline(store, ["show", &parent, "--at", "1", "--json"]).json()["event"]["response"]
            .to_string();
    for edit in [
        &["--respond", answer.as_str()][..],
        &["--deny", "close_ticket"],
    ] {
        let mut args = vec!["fork", parent.as_str(), "--at", "1", "--json"];
        args.extend_from_slice(edit);
        let fork = worldline(store, &args);
        let id = fork.json()["run_id"].as_str().unwrap().to_string();
        assert_eq!(faults(&id)[1..], before[1..], "{edit:?}");
    }
    // A case rule's `nth` counts the call the edit answered.
    let nth = write_case(
        dir.path(),
        "nth",
        r#"world = "demo@v1"
seed = 5
clock = 2026-03-01T12:00:00Z
task = { calls = [ { tool = "get_ticket", args = { id = "T-1" } }, { tool = "get_ticket", args = { id = "T-1" } } ] }
[[inject]]
tool = "get_ticket"
nth = 2
error = "timeout"
"#,
    );
    let run = worldline(
        store,
        [
            "run",
            nth.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
            "--worlds",
            worlds,
            "--json",
        ],
    );
    let run = run.json()["run_id"].as_str().unwrap().to_string();
    let answer =
        worldline(store, ["show", &run, "--at", "1", "--json"]).json()["event"]["response"]
            .to_string();
    let fork = worldline(
        store,
        ["fork", &run, "--at", "1", "--respond", &answer, "--json"],
    );
    let id = fork.json()["run_id"].as_str().unwrap().to_string();
    assert_eq!(faults(&id)[1..], faults(&run)[1..], "{fork}");
    assert_eq!(faults(&run)[1].1, "error");
    let verify = worldline(store, ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["diverged"], 0, "{verify}");
}

/// `fuzz CASE ARGS` of the caller agent on the tests' worlds, its events
/// written to `events`, sent SIGINT once three of its runs have finished:
/// what it wrote, once the signal has ended it.
fn sigint_after_three_runs(
    case: &Path,
    store: &Path,
    events: &Path,
    args: &[&str],
) -> std::process::Output {
    use std::os::unix::process::ExitStatusExt;
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_worldline"))
        .arg("fuzz")
        .arg(case)
        .args(args)
        .arg("--agent")
        .arg(guest("caller-agent"))
        .arg("--worlds")
        .arg(common::worlds_dir())
        .arg("--store")
        .arg(store)
        .arg("--events")
        .arg(events)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::fs::read_to_string(events)
        .unwrap_or_default()
        .matches("run_finished")
        .count()
        < 3
    {
        assert!(started.elapsed().as_secs() < 60, "no runs finished");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGINT), "{out:?}");
    out
}

/// A `fuzz --keep-all` campaign stopped by SIGINT leaves every run it kept
/// in the run index: its last rows, queued when the signal came, were
/// left out (`index --check` named them missing), where an interrupted
/// `test` commits them.
#[test]
fn a_campaign_stopped_by_sigint_leaves_every_run_it_kept_indexed() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "c",
        "world = \"demo@v1\"\nseed = 11\nclock = 2026-03-01T12:00:00Z\n\
         task = { calls = [{ tool = \"get_ticket\", args = { id = \"T-1\" } }] }\n\
         [fuzz]\n[[fuzz.tools]]\ntool = \"get_ticket\"\nerror = { timeout = 0.5 }\n",
    );
    let store = dir.path().join("store");
    let args = ["--runs", "100000", "--jobs", "1", "--keep-all", "--json"];
    sigint_after_three_runs(&case, &store, &dir.path().join("events.jsonl"), &args);
    let check = worldline(&store, ["index", "--check", "--json"]);
    check.expect_code(0);
    assert_eq!(check.json()["missing"], serde_json::json!([]), "{check}");
    assert!(check.json()["indexed"].as_u64().unwrap() >= 3, "{check}");
}

/// Ctrl-C while a campaign's agent and service compile (a cold compile
/// cache) ends it at once, saying so on stderr: it printed nothing at all,
/// `--json` too.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_signal_while_a_campaign_compiles_is_said() {
    use std::io::Read as _;
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let worlds = common::world_with_service(
        dir.path(),
        &workspace_root().join("worlds/booking/v1"),
        "booking",
        &common::python_service("examples/booking-service/booking.py"),
    );
    let store = dir.path().join("store");
    let mut fuzz = common::cli();
    fuzz.arg("fuzz")
        .arg(workspace_root().join("cases/booking/fuzz-book.toml"))
        .args(["--runs", "10", "--json", "--agent"])
        .arg(guest("naive-agent"))
        .arg("--worlds")
        .arg(&worlds)
        .arg("--store")
        .arg(&store)
        .env(common::OWN_COMPILE_CACHE.0, common::OWN_COMPILE_CACHE.1)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SIGINT's default action (a test binary started in the background
    // by a shell without job control ignores SIGINT, and its children
    // inherit that).
    // SAFETY: only `signal`, which is async-signal-safe, between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut fuzz, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = fuzz.spawn().unwrap();
    // Once the first component is compiled: the rest compile then.
    let ready = || !files_with_suffix(&store.join("cache"), ".cwasm").is_empty();
    let status = common::signal_when(&mut child, libc::SIGINT, ready, "the campaign");
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let _ = child.stdout.take().unwrap().read_to_string(&mut stdout);
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}\n{stderr}");
    assert!(
        stderr.contains("SIGINT: interrupted before anything ran"),
        "{stdout}\n{stderr}"
    );
    assert!(
        files_with_suffix(&store.join("runs"), ".jsonl").is_empty(),
        "no run was made"
    );
}

/// A first SIGINT stops the campaign starting runs: those under way end,
/// the report of the runs made is printed (`interrupted`) and kept, the
/// signal is said on stderr and in the events once, which end with
/// `finished`, and the signal ends the process; its workers end with it. It ended silently, with no report,
/// no campaign kept and the last events missing.
#[test]
fn a_campaign_stopped_by_sigint_reports_the_runs_it_made() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "slow",
        "world = \"demo@v1\"\nseed = 11\nclock = 2026-03-01T12:00:00Z\n\
         task = { work = 100_000_000, calls = [{ tool = \"get_ticket\", args = { id = \"T-1\" } }] }\n\
         [limits]\nfuel = 100_000_000_000\n\
         [fuzz]\n[[fuzz.tools]]\ntool = \"get_ticket\"\nerror = { timeout = 0.5 }\n",
    );
    let store = dir.path().join("store");
    let events = dir.path().join("events.jsonl");
    let args = ["--runs", "400", "--jobs", "2", "--json"];
    let out = sigint_after_three_runs(&case, &store, &events, &args);
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(doc["interrupted"], "SIGINT", "{doc}");
    let made = doc["summary"]["runs"].as_u64().unwrap();
    assert!((3..400).contains(&made), "{doc}");
    // Which campaign was kept, as stderr says (it was on stderr alone).
    let campaign = doc["campaign"].as_str().unwrap_or_else(|| panic!("{doc}"));
    assert!(
        store.join(format!("campaigns/{campaign}.json")).is_file(),
        "{doc}"
    );
    // The signal is said when it is seen, once (the campaign said nothing
    // of it until its report), as `test` says it; runs under way may
    // finish after it.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "SIGINT: starting no more runs; the report follows once the runs under way end"
        ),
        "{stderr}"
    );
    let lines = std::fs::read_to_string(&events).unwrap();
    let read: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let interrupted = read.iter().filter(|e| e["event"] == "interrupted").count();
    assert_eq!(interrupted, 1, "{lines}");
    let last = read.last().unwrap();
    assert_eq!(last["event"], "finished", "{lines}");
    assert_eq!(last["tally"]["runs"], made, "{lines}");
    assert_eq!(
        files_with_suffix(&store.join("campaigns"), ".json").len(),
        1
    );
}
