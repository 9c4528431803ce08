//! Hardening: what a user names or leaves in a store that is not what it
//! seems. A FIFO where a bundle, the index's mark or a lease is expected
//! is refused without waiting; bytes after a finished run's footer are
//! damage, not a torn line; counts and `--jobs` past their bounds are
//! refused before anything is listed; a report on a whole store that is
//! not there makes none; a recording, a project file or a case that
//! cannot be read is named as what it is, a case's environment holds no
//! NUL byte, and an output killed while written leaves nothing. The real
//! binary on the
//! caller-agent guest.

use crate::common;

use common::{
    copy_dir, files_with_suffix, guest, mkfifo, passing_demo_case as demo_case, prompt, temp_dir,
    test_suite, worldline_at, worlds_dir, write_case,
};
use std::path::{Path, PathBuf};

/// `worldline test CASES --worlds WORLDS --agent caller-agent MORE...`
/// (`--list` in MORE: no agent), in `store`.
fn test_caller(store: &Path, cases: &Path, more: &[&str]) -> common::CliOutput {
    let (worlds, agent) = (worlds_dir(), guest("caller-agent"));
    let mut args = vec![
        "test",
        cases.to_str().unwrap(),
        "--worlds",
        worlds.to_str().unwrap(),
    ];
    if !more.contains(&"--list") {
        args.extend(["--agent", agent.to_str().unwrap()]);
    }
    args.extend(more);
    prompt(store, &args)
}

/// `worldline check CASE --worlds WORLDS`, in `store`.
fn check_on_worlds(store: &Path, case: &Path, worlds: &Path) -> common::CliOutput {
    let (case, worlds) = (case.to_str().unwrap(), worlds.to_str().unwrap());
    prompt(store, &["check", case, "--worlds", worlds])
}

/// `worldline run CASE --agent caller-agent --worlds WORLDS`, in `store`.
fn run_caller(store: &Path, case: &Path, worlds: &Path) -> common::CliOutput {
    let agent = guest("caller-agent");
    let (case, worlds) = (case.to_str().unwrap(), worlds.to_str().unwrap());
    prompt(
        store,
        &[
            "run",
            case,
            "--agent",
            agent.to_str().unwrap(),
            "--worlds",
            worlds,
        ],
    )
}

/// A store at `<dir>/store` holding two passing runs, and their ids.
fn store_with_runs(dir: &Path) -> (PathBuf, Vec<String>) {
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for seed in 1..=2 {
        write_case(&cases, &format!("c{seed}"), &demo_case(seed));
    }
    let store = dir.join("store");
    test_suite(&store, &cases, &guest("caller-agent"), &[]).expect_code(0);
    let ids = worldline_store::store::StoreDir::open(&store)
        .unwrap()
        .run_ids()
        .unwrap();
    assert_eq!(ids.len(), 2);
    (store, ids)
}

#[test]
fn a_fifo_in_a_store_is_refused_without_waiting_for_a_writer() {
    let dir = temp_dir();
    let (store, _) = store_with_runs(dir.path());
    // A FIFO named as a run: `verify` once waited on it forever, its
    // read-ahead hint opening it as a file.
    let fifo = mkfifo(&store.join("runs/20261203-000000-eeeeeeee.jsonl"));
    let out = prompt(&store, &["verify"]);
    out.expect_code(1);
    assert!(
        out.stdout.contains("is a FIFO, not a regular file"),
        "{out}"
    );
    assert!(out.stdout.contains("2 identical or verified"), "{out}");
    std::fs::remove_file(fifo).unwrap();
    // The index's mark, written after a read: `runs` waited for a reader.
    std::fs::remove_file(store.join("index.checked")).unwrap();
    mkfifo(&store.join("index.checked"));
    prompt(&store, &["runs"]).expect_code(0);
    // A lease of another process: `gc` read it as a file and waited.
    mkfifo(&store.join("leases/zz.lease"));
    prompt(&store, &["gc", "--dry-run"]).expect_code(0);
}

#[test]
fn a_file_in_runs_named_as_no_run_is_said_to_be_none() {
    use std::os::unix::ffi::OsStrExt;
    let dir = temp_dir();
    let (store, _) = store_with_runs(dir.path());
    let runs = store.join("runs");
    std::fs::write(runs.join("my copy.jsonl"), "x").unwrap();
    let bad = std::ffi::OsStr::from_bytes(b"bad\xffname.jsonl");
    std::fs::write(runs.join(bad), "x").unwrap();
    // Once "no run `bad\u{fffd}name` in this store" of files that are
    // there, and an import looked for the one not UTF-8 under the name
    // with its byte replaced: "No such file or directory".
    let out = prompt(&store, &["verify"]);
    out.expect_code(1);
    assert_eq!(out.stdout.matches("not a run's bundle").count(), 2, "{out}");
    assert!(
        out.stdout.contains("runs/my copy.jsonl: not a run"),
        "{out}"
    );
    assert!(!out.stdout.contains("no run `"), "{out}");
    assert!(out.stdout.contains("2 identical or verified"), "{out}");
    let other = dir.path().join("other");
    let out = prompt(&other, &["import", store.to_str().unwrap()]);
    out.expect_code(1);
    assert!(out.stdout.contains("2 run(s) imported"), "{out}");
    assert_eq!(out.stderr.matches("not a run's bundle").count(), 2, "{out}");
    assert!(!out.stderr.contains("No such file"), "{out}");
}

#[test]
fn bytes_after_a_footer_are_damage_not_a_torn_line() {
    let dir = temp_dir();
    let (store, ids) = store_with_runs(dir.path());
    let bundle = common::bundle_in(&store, &ids[0]);
    let mut bytes = std::fs::read(&bundle).unwrap();
    bytes.extend_from_slice(b"junk without a newline");
    std::fs::write(&bundle, bytes).unwrap();
    // Once `identical`: the tail was dropped as a line torn by a kill.
    let out = prompt(&store, &["verify", &ids[0]]);
    out.expect_code(1);
    assert!(out.stdout.contains("data after the footer"), "{out}");
    let out = prompt(&store, &["replay", &ids[0]]);
    out.expect_code(2);
    assert!(out.stderr.contains("data after the footer"), "{out}");
    // A fork reads the footer from the file's end: the same.
    let out = prompt(&store, &["fork", &ids[0], "--at", "0"]);
    out.expect_code(2);
    assert!(out.stderr.contains("data after the footer"), "{out}");
    // An empty bundle is an input error to a fork as to every reader
    // (it once exited 4, an internal error).
    std::fs::write(&bundle, b"").unwrap();
    let out = prompt(&store, &["fork", &ids[0], "--at", "0"]);
    out.expect_code(2);
    assert!(out.stderr.contains(&format!("{}.jsonl", ids[0])), "{out}");
}

/// A finished run whose footer lost its newline (a copy or an editor
/// dropped it) is still finished: every reader (a whole read, a fork's
/// read from the end, the index) takes the footer, whose hashes check
/// it. It was read as a run killed while writing its footer: incomplete,
/// `verified`, ungraded. A footer cut inside its JSON stays a torn line.
#[test]
fn a_footer_without_its_newline_is_the_run_s_footer() {
    let dir = temp_dir();
    let (store, ids) = store_with_runs(dir.path());
    let bundle = common::bundle_in(&store, &ids[0]);
    let bytes = std::fs::read(&bundle).unwrap();
    std::fs::write(&bundle, &bytes[..bytes.len() - 1]).unwrap();
    std::fs::remove_file(store.join("index.sqlite")).unwrap();
    let out = prompt(&store, &["replay", &ids[0], "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["verdict"], "identical", "{out}");
    let out = prompt(&store, &["history", &ids[0], "--json"]);
    assert_eq!(out.json()["status"], "completed", "{out}");
    prompt(&store, &["fork", &ids[0], "--at", "1"]).expect_code(0);
    let out = prompt(&store, &["runs", "--json"]);
    let row = (out.json().as_array().unwrap().iter())
        .find(|r| r["run_id"] == ids[0].as_str())
        .cloned()
        .unwrap();
    assert_eq!(row["status"], "completed", "{out}");
    // Cut inside the footer: a run killed while writing it.
    std::fs::write(&bundle, &bytes[..bytes.len() - 10]).unwrap();
    let out = prompt(&store, &["replay", &ids[0], "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["verdict"], "verified_prefix", "{out}");
}

#[test]
fn counts_and_jobs_past_their_bounds_are_refused_before_anything_runs() {
    let dir = temp_dir();
    let (store, ids) = store_with_runs(dir.path());
    let case = dir.path().join("cases/c1.toml");
    let agent = guest("caller-agent");
    let worlds = worlds_dir();
    let faults = dir.path().join("faults.toml");
    std::fs::write(
        &faults,
        "[[tools]]\ntool = \"get_ticket\"\nlatency_ms = { p = 0.5, ms = [1, 2] }\n",
    )
    .unwrap();
    let fuzz = |extra: &[&str]| {
        let mut args = vec![
            "fuzz",
            case.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
            "--worlds",
            worlds.to_str().unwrap(),
            "--faults",
            faults.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        prompt(&store, &args)
    };
    // Each once listed its runs before the first (gigabytes), or made
    // a thread per job (a million of them).
    for (extra, said) in [
        (&["--runs", "1000000000000"][..], "--runs times --repeat"),
        (
            &["--runs", "4000000", "--repeat", "4000000000000"][..],
            "--runs times --repeat",
        ),
        (&["--runs", "2", "--jobs", "1000000"][..], "--jobs"),
        (&["--runs", "2", "--jobs", "0"][..], "--jobs"),
    ] {
        let out = fuzz(extra);
        out.expect_code(2);
        assert!(out.stderr.contains(said), "{extra:?}: {out}");
    }
    let out = prompt(&store, &["repro", &ids[0], "--times", "1000000000000"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("--times: asks for 1000000000000 runs"),
        "{out}"
    );
    let out = prompt(
        &store,
        &["fork", &ids[0], "--at", "0", "--samples", "1000000000000"],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("--samples"), "{out}");
    let out = prompt(&store, &["verify", "--jobs", "0"]);
    out.expect_code(2);
    assert!(out.stderr.contains("from 1 to 1024"), "{out}");
    // More jobs than runs: as many as there are runs.
    fuzz(&["--runs", "3", "--jobs", "1024"]).expect_code(0);
}

#[test]
fn a_report_on_a_store_that_is_not_there_makes_none() {
    let dir = temp_dir();
    let typo = dir.path().join("stroe");
    for args in [
        &["verify"][..],
        &["verify", "--sample", "1"][..],
        &["runs"][..],
        &["index", "--check"][..],
    ] {
        let out = prompt(&typo, args);
        out.expect_code(2);
        assert!(out.stderr.contains("no store is there"), "{args:?}: {out}");
        assert!(!typo.exists(), "{args:?} made a store: {out}");
    }
    // A folder that is not a store gets no store's folders.
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let out = prompt(&plain, &["verify"]);
    out.expect_code(2);
    assert!(out.stderr.contains("is not a store"), "{out}");
    assert_eq!(std::fs::read_dir(&plain).unwrap().count(), 0, "{out}");
}

#[test]
fn an_unpin_or_a_status_that_names_nothing_is_an_error() {
    let dir = temp_dir();
    let (store, _) = store_with_runs(dir.path());
    let out = prompt(&store, &["unpin", "nope"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no run `nope`"), "{out}");
    let out = prompt(&store, &["unpin", "2026"]);
    out.expect_code(2);
    assert!(out.stderr.contains("matches 2 runs"), "{out}");
    let out = prompt(&store, &["runs", "--status", "complete"]);
    out.expect_code(2);
    assert!(out.stderr.contains("possible values"), "{out}");
    prompt(&store, &["runs", "--status", "step_limit,faulted"]).expect_code(0);
}

#[test]
fn what_cannot_be_read_is_named_as_what_it_is() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = guest("caller-agent");
    let worlds = worlds_dir();
    // A recording that is not there: once every model call's miss, the
    // run failing as the agent's fault.
    let case = write_case(
        dir.path(),
        "recorded",
        &format!(
            "{}[model]\nprovider = \"recorded\"\nrecording = \"no-such-runs/\"\n",
            demo_case(1)
        ),
    );
    let out = prompt(
        &store,
        &[
            "run",
            case.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
            "--worlds",
            worlds.to_str().unwrap(),
        ],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("recording `no-such-runs/`"), "{out}");
    assert!(out.stderr.contains("does not exist"), "{out}");
    // A FIFO named as a case: once "no such file or folder".
    let fifo = mkfifo(&dir.path().join("fifo.toml"));
    let out = prompt(&store, &["check", fifo.to_str().unwrap()]);
    out.expect_code(2);
    assert!(out.stdout.contains("is a FIFO"), "{out}");
    // A project file that is a FIFO stops the command; it once was
    // passed over for none (or for one further up).
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    mkfifo(&project.join("worldline.toml"));
    let out = common::worldline_at(&project, ["runs"], &[]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("worldline.toml: cannot read: is a FIFO"),
        "{out}"
    );
    // A seed past 2^63 - 1, which `run` takes: `check` takes it too.
    let big = write_case(
        dir.path(),
        "big-seed",
        &demo_case(1).replace("seed = 1\n", "seed = 18446744073709551615\n"),
    );
    let out = check_on_worlds(&store, &big, &worlds);
    out.expect_code(0);
    // A NUL byte no process environment holds: once passed by `check`,
    // then blamed on `--exec` when a native agent started.
    let nul = write_case(
        dir.path(),
        "nul-env",
        &format!("{}[env]\nvars = {{ A = \"c\\u0000d\" }}\n", demo_case(1)),
    );
    let out = check_on_worlds(&store, &nul, &worlds);
    out.expect_code(2);
    assert!(
        out.stdout
            .contains("nul-env.toml:10:1: [env] vars.A contains a NUL byte"),
        "{out}"
    );
}

/// An output whose writing stops part way leaves nothing beside where it
/// was to go: the bytes go to a file without a name. The stop is the file
/// size limit, met once the export has written 8 KiB of its ~30 KiB: its
/// signal killed worldline (exit by SIGXFSZ), which now ignores it and
/// says the write failed.
#[test]
fn an_output_killed_while_written_leaves_nothing_behind() {
    use std::os::unix::process::CommandExt as _;
    let dir = temp_dir();
    let (store, ids) = store_with_runs(dir.path());
    // The index brought up to date first, so that the export writes only
    // its output.
    prompt(&store, &["runs"]).expect_code(0);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let mut export = common::cli();
    export
        .args(["export", &ids[0], "--store"])
        .arg(&store)
        .arg("-o")
        .arg(out_dir.join("run.json"));
    // SAFETY: `setrlimit` only, between fork and exec.
    unsafe {
        export.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 8192,
                rlim_max: 8192,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let cut = common::CliOutput::of(export.output().unwrap());
    cut.expect_code(2);
    assert!(cut.stderr.contains("File too large"), "{cut}");
    let left: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Unkilled, the same export writes its output.
    let out = common::wl(
        &store,
        &[&"export", &ids[0], &"-o", &out_dir.join("run.json")],
    );
    out.expect_code(0);
    assert!(out_dir.join("run.json").is_file(), "{out}");
}

/// A bundle cut short in place leaves the `runs/` folder's time as it was,
/// so listing trusts its row; `index --check` names it and `index` reads
/// it again.
#[test]
fn index_reads_again_a_bundle_changed_in_place() {
    let dir = temp_dir();
    let (store, ids) = store_with_runs(dir.path());
    prompt(&store, &["runs"]).expect_code(0);
    let bundle = store.join(format!("runs/{}.jsonl", ids[0]));
    let text = std::fs::read(&bundle).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&bundle)
        .unwrap()
        .set_len(text.len() as u64 / 2)
        .unwrap();
    let check = prompt(&store, &["index", "--check"]);
    check.expect_code(1);
    assert!(
        check.stdout.contains(&format!("stale: {}", ids[0]))
            && check.stdout.contains("run `worldline index --rebuild`"),
        "{check}"
    );
    let index = prompt(&store, &["index"]);
    index.expect_code(0);
    assert!(index.stdout.contains("1 read from bundles"), "{index}");
    let incomplete = prompt(&store, &["runs", "--status", "incomplete", "--json"]);
    incomplete.expect_code(0);
    assert_eq!(
        incomplete.json()[0]["run_id"],
        ids[0].as_str(),
        "{incomplete}"
    );
    prompt(&store, &["index", "--check"]).expect_code(0);
    // A bundle the index lacks (a run killed before its row was written)
    // is what `index` reads: `--check` says so (it said `--rebuild`,
    // which reads every bundle again).
    let copy = store.join("runs/20260101-000000-00012345.jsonl");
    std::fs::copy(store.join(format!("runs/{}.jsonl", ids[0])), &copy).unwrap();
    let check = prompt(&store, &["index", "--check"]);
    check.expect_code(1);
    assert!(
        check.stdout.contains("missing: 20260101-000000-00012345")
            && check.stdout.contains("run `worldline index` to read")
            && !check.stdout.contains("--rebuild"),
        "{check}"
    );
    prompt(&store, &["index"]).expect_code(0);
    prompt(&store, &["index", "--check"]).expect_code(0);
    std::fs::remove_file(&copy).unwrap();
    prompt(&store, &["index"]).expect_code(0);
    // Edited in place at the same size: `--check` reads each bundle and
    // names its row (it compared sizes only, and said all was
    // consistent); `--rebuild` repairs it.
    let bundle = store.join(format!("runs/{}.jsonl", ids[1]));
    let text = std::fs::read_to_string(&bundle).unwrap();
    let at = text.find("\"seq\":1,").expect("an event with seq 1");
    let edited = format!("{}\"seq\":7,{}", &text[..at], &text[at + 8..]);
    assert_eq!(edited.len(), text.len());
    std::fs::write(&bundle, edited).unwrap();
    let check = prompt(&store, &["index", "--check", "--json"]);
    check.expect_code(1);
    assert_eq!(
        check.json()["stale"],
        serde_json::json!([ids[1]]),
        "{check}"
    );
    prompt(&store, &["index", "--rebuild"]).expect_code(0);
    prompt(&store, &["index", "--check"]).expect_code(0);
}

/// A project file that does not load is listed by `check` whatever paths
/// it is given, and its cases are checked against the worlds it names:
/// each case was told that no `worlds/` folder was found (pass --worlds),
/// and `check cases/c.toml` never named the project file's mistake.
#[test]
fn check_names_a_broken_project_file_and_still_uses_its_worlds() {
    let dir = temp_dir();
    let project = dir.path();
    let cases = project.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    write_case(&cases, "c", &demo_case(1));
    let worlds = worlds_dir();
    let file = format!("worlds = \"{}\"\nbogus = 1\n", worlds.display());
    std::fs::write(project.join("worldline.toml"), file).unwrap();
    for args in [vec!["check"], vec!["check", "cases/c.toml"]] {
        let out = common::worldline_at(project, &args, &[]);
        out.expect_code(2);
        assert!(
            out.stdout
                .contains("worldline.toml:2:1: unknown field `bogus`"),
            "{args:?}: {out}"
        );
        assert!(
            !out.stdout.contains("no `worlds/` folder"),
            "{args:?}: {out}"
        );
        assert!(
            out.stdout.contains(": 1 problem(s) in 1 file(s)"),
            "{args:?}: {out}"
        );
    }
}

/// A `cases` entry of worldline.toml that names nothing is an error at
/// its line in the project file, for `test` (`--list` too) and
/// `validate`: they said only "{path}: no such case file or folder", and
/// the user looked for the path among their arguments.
#[test]
fn a_project_s_case_path_that_names_nothing_is_placed_in_the_project_file() {
    let dir = temp_dir();
    let project = dir.path();
    let cases = project.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    write_case(&cases, "c", &demo_case(1));
    let file = format!(
        "worlds = \"{}\"\ncases = [\"cases\",\n  \"nope/\"]\n",
        worlds_dir().display()
    );
    std::fs::write(project.join("worldline.toml"), file).unwrap();
    for args in [vec!["test", "--list"], vec!["validate"]] {
        let out = common::worldline_at(project, &args, &[]);
        out.expect_code(2);
        assert!(
            out.stderr.contains("worldline.toml:3:3: cases: ")
                && out.stderr.contains("nope/ does not exist"),
            "{args:?}: {out}"
        );
    }
}

/// `import` of a file that is not there is an input error that makes no
/// store (it made an empty one first).
#[test]
fn importing_nothing_makes_no_store() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let gone = dir.path().join("gone.json");
    let out = prompt(&store, &["import", gone.to_str().unwrap()]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("gone.json: no such file or folder"),
        "{out}"
    );
    assert!(!store.exists(), "a store was made");
}

/// `import` of a folder that is not a store (the project's, or a shard's
/// folder holding `.worldline/`) is refused and writes nothing into it: it
/// made runs/, objects/ and cache/ there, and `check` then took the folder
/// for a store and passed over its worlds.
#[test]
fn importing_a_folder_that_is_not_a_store_writes_nothing_into_it() {
    let dir = temp_dir();
    let (runs, _) = store_with_runs(dir.path());
    let shard = dir.path().join("shard-1");
    std::fs::create_dir(&shard).unwrap();
    std::fs::rename(&runs, shard.join(".worldline")).unwrap();
    let into = dir.path().join("merged");
    let out = prompt(&into, &["import", shard.to_str().unwrap()]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("is not a store") && out.stderr.contains(".worldline: import that"),
        "{out}"
    );
    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    prompt(&into, &["import", plain.to_str().unwrap()]).expect_code(2);
    assert_eq!(std::fs::read_dir(&plain).unwrap().count(), 0);
    let left: Vec<_> = std::fs::read_dir(&shard).unwrap().collect();
    assert_eq!(left.len(), 1, "only .worldline: {left:?}");
    assert!(!into.exists(), "a store was made");
    // The store inside it imports.
    let inside = shard.join(".worldline");
    prompt(&into, &["import", inside.to_str().unwrap()]).expect_code(0);
}

/// A bundle copied out of its store is read with `--store` only when that
/// is a store: an empty one was made in the working folder and the read
/// failed on a missing object (`verify`: exit 1, drift 100%).
#[test]
fn a_bundle_outside_any_store_makes_no_store_where_none_is() {
    let dir = temp_dir();
    let (store, ids) = store_with_runs(dir.path());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let copy = elsewhere.join(format!("{}.jsonl", ids[0]));
    std::fs::copy(common::bundle_in(&store, &ids[0]), &copy).unwrap();
    let nowhere = dir.path().join("nowhere");
    let copy = copy.to_str().unwrap();
    for args in [
        &["replay", copy][..],
        &["show", copy, "--at", "1"][..],
        &["fork", copy, "--at", "1"][..],
        &["verify", copy][..],
    ] {
        let out = prompt(&nowhere, args);
        out.expect_code(2);
        assert!(
            out.stderr.contains("is not in a store's runs/ folder"),
            "{args:?}: {out}"
        );
        assert!(!nowhere.exists(), "{args:?} made a store: {out}");
    }
    // Another store, which does not hold its objects, is said to be that
    // (it said `objects/5c85…: object missing from the store`).
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join("runs")).unwrap();
    for args in [
        &["replay", copy][..],
        &["show", copy, "--at", "1"][..],
        &["fork", copy, "--at", "1"][..],
        &["resume", copy][..],
    ] {
        let out = prompt(&other, args);
        out.expect_code(2);
        assert!(
            out.stderr.contains("does not hold its agent")
                && out
                    .stderr
                    .contains("Pass --store with the store it was recorded in"),
            "{args:?}: {out}"
        );
    }
    // With the store it came from, it reads.
    let out = prompt(&store, &["replay", copy]);
    out.expect_code(0);
}

/// A run killed before its footer exports as `incomplete` (its status
/// was null, beside the null verdict and reward of a case without
/// `[expect]`), in both training formats.
#[test]
fn a_killed_run_exports_as_incomplete() {
    let dir = temp_dir();
    let (store, ids) = store_with_runs(dir.path());
    let bundle = common::bundle_in(&store, &ids[0]);
    let text = std::fs::read_to_string(&bundle).unwrap();
    let body = text.trim_end().rsplit_once('\n').unwrap().0;
    std::fs::write(&bundle, format!("{body}\n")).unwrap();
    for (format, status) in [("trajectories", "/status"), ("atif", "/extra/status")] {
        let file = dir.path().join(format!("{format}.jsonl"));
        let out = prompt(
            &store,
            &[
                "export",
                &ids[0],
                "--format",
                format,
                "-o",
                file.to_str().unwrap(),
            ],
        );
        out.expect_code(0);
        let line: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            line.pointer(status).unwrap(),
            "incomplete",
            "{format}: {line}"
        );
    }
}

/// `export --format atif|trajectories -o -` writes its lines to stdout
/// and what it exported to stderr (it wrote a file named `-`); a portable
/// export, a file to import, refuses `-`.
#[test]
fn an_export_to_dash_goes_to_stdout() {
    let dir = temp_dir();
    let (store, ids) = store_with_runs(dir.path());
    let cwd = dir.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let run = |format: &str| {
        let out = crate::common::cli()
            .current_dir(&cwd)
            .args(["export", &ids[0], "--format", format, "-o", "-", "--store"])
            .arg(&store)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    for format in ["atif", "trajectories"] {
        let (code, stdout, stderr) = run(format);
        assert_eq!(code, Some(0), "{stderr}");
        let line: serde_json::Value = serde_json::from_str(stdout.trim_end()).unwrap();
        assert!(line.is_object(), "{format}: {stdout}");
        assert!(stderr.contains("to stdout"), "{format}: {stderr}");
    }
    let (code, _, stderr) = run("worldline");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("a portable export is a bundle file"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "nothing written in the working folder"
    );
}

#[test]
fn a_case_named_with_control_characters_reaches_no_terminal_as_them() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    write_case(&cases, "a\u{1b}[31mred\u{7}", &demo_case(1));
    let store = dir.path().join("store");
    // Once written raw by `test` and `test --list`, which `history` and
    // `runs` escape (decision 0314).
    for more in [&[][..], &["--list"]] {
        let out = test_caller(&store, &cases, more);
        out.expect_code(0);
        assert!(out.stdout.contains("a\\u{1b}[31mred\\u{7}"), "{out}");
        assert!(!out.stdout.contains('\u{1b}') && !out.stdout.contains('\u{7}'));
    }
}

#[test]
fn a_port_in_use_is_the_flag_s_input_error_not_an_internal_one() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "c", &demo_case(1));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let (port, case) = (port.to_string(), case.to_str().unwrap());
    let w = worlds_dir();
    let worlds = w.to_str().unwrap();
    let store = dir.path().join("store");
    // `ui` serves a store that is there (a missing one, or a folder that
    // is no store, is refused first).
    std::fs::create_dir_all(store.join("runs")).unwrap();
    // Once exit 4, `kind: internal`: a worldline bug to a CI wrapper.
    for (flag, args) in [
        ("--port", vec!["ui", "--port", &port]),
        (
            "--addr",
            vec!["serve", case, "--worlds", worlds, "--addr", &addr],
        ),
        (
            "--http",
            vec!["mcp", case, "--worlds", worlds, "--http", &addr],
        ),
    ] {
        let out = prompt(&store, &args);
        out.expect_code(2);
        let said =
            format!("error: {flag}: cannot listen on 127.0.0.1:{port}: Address already in use");
        assert!(out.stderr.starts_with(&said), "{out}");
    }
}

#[test]
fn a_fault_profile_beside_the_cases_is_no_case_of_the_suite() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    write_case(&cases, "c", &demo_case(1));
    let profile = "[[tools]]\ntool = \"get_ticket\"\nerror = { unavailable = 0.1 }\n";
    std::fs::write(cases.join("faults.toml"), profile).unwrap();
    let (c, w) = (cases.to_str().unwrap(), worlds_dir());
    let store = dir.path().join("store");
    let checked = prompt(&store, &["check", c, "--worlds", w.to_str().unwrap()]);
    checked.expect_code(0);
    assert!(checked.stdout.contains("1 fault profile(s)"), "{checked}");
    // Once a collection error of the suite `check` passed (exit 2).
    let out = test_caller(&store, &cases, &[]);
    out.expect_code(0);
    assert!(out.stdout.contains("1 passed, 0 failed"), "{out}");
    // Named as a case, it is refused as one.
    let named = cases.join("faults.toml");
    let out = prompt(
        &store,
        &[
            "test",
            named.to_str().unwrap(),
            "--worlds",
            w.to_str().unwrap(),
        ],
    );
    out.expect_code(2);
}

#[test]
fn a_case_named_as_test_names_it_finds_its_runs() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(cases.join("sub")).unwrap();
    write_case(&cases.join("sub"), "c1", &demo_case(1));
    let store = dir.path().join("store");
    let out = test_caller(&store, &cases, &[]);
    out.expect_code(0);
    assert!(out.stdout.contains("sub/c1"), "{out}");
    // Once an empty list, exit 0: a run knows its case as `c1`.
    let listed = prompt(&store, &["runs", "--case", "sub/c1", "--json"]);
    listed.expect_code(0);
    assert_eq!(listed.json().as_array().map(Vec::len), Some(1), "{listed}");
    assert!(
        listed
            .stderr
            .contains("a run knows its case by the file's name without `.toml`, `c1`"),
        "{listed}"
    );
    // Its file, by path or name, finds it too (an empty list under a
    // note that said its runs were listed).
    for file in ["cases/sub/c1.toml", "c1.toml"] {
        let listed = prompt(&store, &["runs", "--case", file, "--json"]);
        listed.expect_code(0);
        assert_eq!(listed.json().as_array().map(Vec::len), Some(1), "{listed}");
    }
    // A folder's wildcard would list every run (it listed them all,
    // under a note that said only runs of cases so named were listed).
    let folder = prompt(&store, &["runs", "--case", "other/*", "--json"]);
    folder.expect_code(2);
    assert!(folder.stderr.contains("not its folder"), "{folder}");
    assert_eq!(folder.json()["error"]["file"], "--case", "{folder}");
}

#[test]
fn a_report_never_replaces_a_case_of_its_suite() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "c", &demo_case(1));
    let before = std::fs::read(&case).unwrap();
    let store = dir.path().join("store");
    // Once the case replaced by the JUnit report, `1 passed`, exit 0.
    for flag in ["--junit", "--events"] {
        let out = test_caller(&store, &case, &[flag, case.to_str().unwrap()]);
        out.expect_code(2);
        assert!(
            out.stderr
                .contains("a case of the suite, its agent, or the project file"),
            "{flag}: {out}"
        );
        assert_eq!(std::fs::read(&case).unwrap(), before, "{flag}");
    }
}

/// Nor the project file, a file of a world the suite runs on (the rows
/// were replaced by the events), or the other report of the same suite.
#[test]
fn a_report_never_replaces_the_project_file_a_world_s_data_or_the_other_report() {
    let dir = temp_dir();
    let root = dir.path();
    copy_dir(&worlds_dir().join("demo"), &root.join("worlds/demo"));
    std::fs::create_dir_all(root.join("cases")).unwrap();
    write_case(&root.join("cases"), "c", &demo_case(1));
    let agent = guest("caller-agent");
    std::fs::write(
        root.join("worldline.toml"),
        format!(
            "store = \"st\"\nagent = {:?}\ncases = [\"cases\"]\n",
            agent.to_str().unwrap()
        ),
    )
    .unwrap();
    let rows = files_with_suffix(&root.join("worlds/demo"), ".jsonl").remove(0);
    let kept: Vec<Vec<u8>> = [root.join("worldline.toml"), rows.clone()]
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    let rows = rows.to_str().unwrap();
    for (args, said) in [
        (vec!["--junit", "worldline.toml"], "or the project file"),
        (
            vec!["--events", rows],
            "the folder of a world the suite runs on",
        ),
        (
            vec!["--junit", "worlds/demo/v1/data/new.xml"],
            "the folder of a world the suite runs on",
        ),
        (
            vec!["--junit", "r.x", "--events", "./r.x"],
            "is named by both --junit and --events",
        ),
    ] {
        let out = worldline_at(root, [&["test"][..], &args].concat(), &[]);
        assert_eq!(out.code, 2, "{args:?}: {out}");
        assert!(out.stderr.contains(said), "{args:?}: {out}");
    }
    let now: Vec<Vec<u8>> = [root.join("worldline.toml"), rows.into()]
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect();
    assert_eq!(now, kept);
    assert!(!root.join("worlds/demo/v1/data/new.xml").exists() && !root.join("r.x").exists());
}

/// A world file's path is read as a file system reads it under rules 1
/// (decision 0423): `./notes/report.md` written is `notes/report.md` read,
/// by `files.*` and by the world's `file_read`/`file_write` tools alike,
/// the case's file checks pass, and a path above the world's files is
/// refused. A run recorded before (rules 0, `tests/bundles/before-rules`),
/// where each spelling was another file and the same case failed, replays
/// as it ran.
#[test]
fn a_world_file_s_path_names_the_file_a_file_system_would() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let old = common::imported_fixture(&store, "before-rules", "dot-paths.json");
    let recorded = common::read_bundle(&common::bundle_in(&store, &old));
    assert_eq!(recorded.footer.unwrap()["grade"]["passed"], false);

    let fixture = common::workspace_root().join("tests/bundles/before-rules");
    let (case, worlds) = (fixture.join("dot-paths.toml"), fixture.join("worlds"));
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let answers = out.output();
    assert_eq!(answers[1]["ok"], "db saturation", "{answers}");
    assert_eq!(answers[2]["ok"], "Restart the replica.\n", "{answers}");
    assert_eq!(answers[3]["ok"]["path"], "notes/tool.md", "{answers}");
    assert_eq!(answers[4]["ok"]["content"], "rolled back", "{answers}");
    assert_eq!(answers[5]["ok"]["path"], "runbooks/db.md", "{answers}");
    assert_eq!(answers[6]["error"]["kind"], "invalid-args", "{answers}");
    assert!(
        answers[6]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("climbs above the world's files")),
        "{answers}"
    );
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(&store, &run);

    // A case's file check names the file as the world does: another
    // spelling is refused at its line, saying which file it names.
    let text = std::fs::read_to_string(&case).unwrap();
    let dotted = text.replace("file = \"notes/report.md\"", "file = \"./notes/report.md\"");
    let dotted = common::write_case(dir.path(), "dotted", &dotted);
    let checked = check_on_worlds(&store, &dotted, &worlds);
    checked.expect_code(2);
    assert!(
        checked.stdout.contains(
            "dotted.toml:14:1: [[expect.state]] #1: file = \"./notes/report.md\" names the world file `notes/report.md`: write it so"
        ),
        "{checked}"
    );
}

/// A check's value no JSON holds (`equals = inf`, `contains = [nan]`, a
/// gold call's `args = { id = inf }`) is refused at it by `check` and
/// `run`: each became `null`, so `check` said no problems and a check
/// against a null field passed.
#[test]
fn a_check_value_no_json_holds_is_refused_at_it() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = worlds_dir();
    let state = "[[expect.state]]\ntable = \"tickets\"\nkey = \"T-1\"\nfield = \"status\"\n";
    for (name, body, at) in [
        ("equals", format!("{state}equals = inf\n"), "14:10"),
        ("contains", format!("{state}contains = [nan]\n"), "14:13"),
        (
            "gold",
            "[[expect.gold]]\ntool = \"get_ticket\"\nargs = { id = -inf }\n".to_string(),
            "12:15",
        ),
    ] {
        let case = write_case(dir.path(), name, &format!("{}{body}", demo_case(1)));
        let said = format!(
            "{name}.toml:{at}: `nan` and the infinities are no JSON number (this one would be `null`)"
        );
        let check = check_on_worlds(&store, &case, &worlds);
        check.expect_code(2);
        assert!(check.stdout.contains(&said), "{check}");
        let run = run_caller(&store, &case, &worlds);
        run.expect_code(2);
        assert!(run.stderr.contains(&said), "{run}");
    }
}

/// A `recording` naming a file that is no run's bundle (notes, an empty
/// file) is refused by `check` and `run` at its line: `check` said no
/// problems, and the run failed as if no answer had been recorded
/// ("set [model] cassette = \"once\"").
#[test]
fn a_recording_that_is_no_bundle_is_refused_at_its_line() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = worlds_dir();
    std::fs::write(dir.path().join("notes.jsonl"), "my notes\n").unwrap();
    std::fs::write(dir.path().join("empty.jsonl"), "").unwrap();
    for (file, said) in [
        ("notes.jsonl", "is not a run's bundle"),
        ("empty.jsonl", "is empty, no run's bundle"),
    ] {
        let case = write_case(
            dir.path(),
            "recorded",
            &format!(
                "{}[model]\nprovider = \"recorded\"\nrecording = \"{file}\"\n",
                demo_case(1)
            ),
        );
        let check = check_on_worlds(&store, &case, &worlds);
        check.expect_code(2);
        assert!(
            check
                .stdout
                .contains(&format!("recorded.toml:12:13: [model] recording `{file}`")),
            "{check}"
        );
        assert!(check.stdout.contains(said), "{check}");
        let run = run_caller(&store, &case, &worlds);
        run.expect_code(2);
        assert!(run.stderr.contains(said), "{run}");
    }
}

/// A case's own `recording` that cannot be read (not there, a file of
/// another kind, a device) is named at its line by `run` and `test` as by
/// `check`, in text and in `--json`: a run gave `"line": null`.
#[test]
fn a_case_s_recording_is_refused_at_its_line_by_run_as_by_check() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = worlds_dir();
    let agent = guest("caller-agent");
    for file in ["nope.jsonl", "/etc/passwd", "/dev/zero"] {
        let case = write_case(
            dir.path(),
            "recorded",
            &format!(
                "{}[model]\nprovider = \"recorded\"\nrecording = \"{file}\"\n",
                demo_case(1)
            ),
        );
        let said = format!("recorded.toml:12:13: [model] recording `{file}`");
        let check = check_on_worlds(&store, &case, &worlds);
        check.expect_code(2);
        assert!(check.stdout.contains(&said), "{check}");
        let run = run_caller(&store, &case, &worlds);
        run.expect_code(2);
        assert!(run.stderr.contains(&said), "{run}");
        let (case, worlds) = (case.to_str().unwrap(), worlds.to_str().unwrap());
        let agent = agent.to_str().unwrap();
        let run = prompt(
            &store,
            &["run", case, "--agent", agent, "--worlds", worlds, "--json"],
        );
        run.expect_code(2);
        let e = &run.json()["error"];
        assert_eq!(
            (&e["file"], &e["line"], &e["column"]),
            (&case.into(), &12.into(), &13.into()),
            "{run}"
        );
        let test = prompt(
            &store,
            &["test", case, "--agent", agent, "--worlds", worlds],
        );
        assert!(
            test.stdout.contains(&said) || test.stderr.contains(&said),
            "{test}"
        );
    }
}

/// A `--worlds` that is no folder is the flag's mistake, once, exit 2
/// naming `--worlds` (its `file` in `--json`), for every command that
/// reads cases against it: each case was told at its `world` line that
/// its world is not there (`test`: an ERROR per case).
#[test]
fn a_worlds_flag_that_is_no_folder_is_named_once() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "c", &demo_case(1));
    let other = write_case(dir.path(), "d", &demo_case(2));
    let nowhere = dir.path().join("nowhere");
    let agent = guest("caller-agent");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (c, d, a, w) = (s(&case), s(&other), s(&agent), s(&nowhere));
    let (c, d, a, w) = (c.as_str(), d.as_str(), a.as_str(), w.as_str());
    let with_equals = format!("--worlds={w}");
    for args in [
        vec!["run", c, "--agent", a, "--worlds", w, "--json"],
        vec!["test", c, d, "--agent", a, "--worlds", w, "--json"],
        vec!["validate", c, d, &with_equals, "--json"],
        vec!["check", c, d, "--worlds", w, "--json"],
    ] {
        let out = prompt(&store, &args);
        out.expect_code(2);
        let e = &out.json()["error"];
        assert_eq!(e["file"], "--worlds", "{args:?}: {out}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("--worlds: {w} is no folder")),
            "{args:?}: {out}"
        );
    }
    let out = prompt(&store, &["test", c, d, "--agent", a, "--worlds", w]);
    out.expect_code(2);
    assert_eq!(
        out.stderr.trim_end(),
        format!(
            "error: --worlds: {w} is no folder: name the folder that holds the worlds (`NAME/vN/world.toml`)"
        ),
        "{out}"
    );
}

/// A project file's `store` naming a file is a problem `check` reports at
/// its line, and a run's refusal of it is blamed there too: `check` said
/// no problems, and `run` named the file alone, `"line": null`.
#[test]
fn a_project_store_that_is_a_file_is_blamed_at_its_line() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::write(p.join("runs.db"), "").unwrap();
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "store = \"runs.db\"\nworlds = \"{}\"\n",
            worlds_dir().display()
        ),
    )
    .unwrap();
    write_case(p, "c", &demo_case(1));
    let check = worldline_at(p, ["check", "worldline.toml"], &[]);
    check.expect_code(2);
    assert!(
        check.stdout.contains("worldline.toml:1:9: store names"),
        "{check}"
    );
    assert!(check.stdout.contains("which is no folder"), "{check}");
    let agent = guest("caller-agent");
    let run = worldline_at(
        p,
        [
            "run",
            "c.toml",
            "--agent",
            agent.to_str().unwrap(),
            "--json",
        ],
        &[],
    );
    run.expect_code(2);
    let error = &run.json()["error"];
    assert!(
        (error["file"].as_str().unwrap()).ends_with("worldline.toml"),
        "{run}"
    );
    assert_eq!(error["line"], 1, "{run}");
    assert!(
        (error["message"].as_str().unwrap()).contains("give `store` a folder"),
        "{run}"
    );
}

/// A case file whose name holds a line break is named on one line in
/// `check`'s problems and `run`'s error (`bad\nPASS  x.toml`): the raw
/// break printed a second line of the name's own, a forged `PASS` line.
#[test]
fn a_line_break_in_a_case_s_name_is_written_escaped() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "bad\nPASS  x", "seed = 1\n");
    let check = check_on_worlds(&store, &case, &worlds_dir());
    check.expect_code(2);
    let agent = guest("caller-agent");
    let run = prompt(
        &store,
        &[
            "run",
            case.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
        ],
    );
    run.expect_code(2);
    for said in [&check.stdout, &run.stderr] {
        assert!(said.contains("bad\\nPASS  x.toml:"), "{check}\n{run}");
        assert!(
            !said.lines().any(|l| l.starts_with("PASS")),
            "{check}\n{run}"
        );
    }
}

/// A case whose name holds a line break is one row of the `runs` and
/// `validate` tables (`ok\nPASS  forged`): its raw break began a row of
/// the name's own, a forged `PASS` line.
#[test]
fn a_line_break_in_a_case_s_name_is_one_row_of_the_tables() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = worlds_dir();
    let case = write_case(dir.path(), "ok\nPASS  forged", &demo_case(1));
    let run = run_caller(&store, &case, &worlds);
    let (case, worlds) = (case.to_str().unwrap(), worlds.to_str().unwrap());
    run.expect_code(0);
    let runs = prompt(&store, &["runs"]);
    runs.expect_code(0);
    let validate = prompt(&store, &["validate", case, "--worlds", worlds]);
    for said in [&runs.stdout, &validate.stdout] {
        assert!(said.contains("ok\\nPASS  forged"), "{runs}\n{validate}");
        assert!(
            !said.lines().any(|l| l.starts_with("PASS")),
            "{runs}\n{validate}"
        );
    }
    // Each command on the run that names its case writes it on one line
    // (`history`'s head and `grade`'s first line wrote it raw).
    let id = worldline_store::store::StoreDir::open(&store)
        .unwrap()
        .run_ids()
        .unwrap()
        .remove(0);
    let on_run: [&[&str]; 7] = [
        &["history", &id],
        &["grade", &id, "--case", case, "--worlds", worlds],
        &["replay", &id],
        &["verify"],
        &["show", &id, "--at", "1"],
        &["diff", &id, &id],
        &["fork", &id, "--at", "1"],
    ];
    for args in on_run {
        let out = prompt(&store, args);
        assert!(
            !out.stdout
                .lines()
                .chain(out.stderr.lines())
                .any(|l| l.starts_with("PASS")),
            "{args:?}: {out}"
        );
    }
    assert!(!run.stdout.lines().any(|l| l.starts_with("PASS")), "{run}");
}
