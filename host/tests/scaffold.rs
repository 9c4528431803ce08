//! A new user's first commands, on the real binary: `init` for each
//! language, then `check`, `./build.sh` and `test` from the new project's
//! folder (the project file supplies the agent, cases, worlds and store);
//! `check` listing every problem of broken cases and worlds with its
//! place; the project file's defaults, overridden by flags and reported by
//! `--json`.

use crate::common;

use common::*;
use std::path::Path;

/// `./build.sh` in `project`, with this build's `worldline` and a target
/// folder shared with the other guest builds.
fn build(project: &Path) {
    let out = std::process::Command::new("sh")
        .arg("build.sh")
        .current_dir(project)
        .env("WORLDLINE", env!("CARGO_BIN_EXE_worldline"))
        .env("CARGO_TARGET_DIR", guest_target_dir())
        .output()
        .expect("running build.sh");
    assert!(
        out.status.success(),
        "build.sh failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `init`, `check`, build, `test`: the first case passes, the second fails
/// on T-3 for the reason the agent's source states. `builders` are the
/// worldline commands the project's build.sh runs (named here too, so that
/// tests/needs.py sees what each language's test needs installed).
fn first_hour(lang: &str, builders: &[&str]) {
    let dir = temp_dir();
    let project = dir.path().join(format!("tasks-{lang}"));
    let init = worldline_raw([
        "init".as_ref(),
        project.as_os_str(),
        "--lang".as_ref(),
        lang.as_ref(),
    ]);
    init.expect_code(0);
    assert!(project.join("README.md").is_file(), "{init}");
    let script = std::fs::read_to_string(project.join("build.sh")).unwrap();
    for builder in builders {
        assert!(
            script.contains(&format!("\"$worldline\" {builder} ")),
            "{script}"
        );
    }
    // What a build writes beside the sources is ignored, Python's
    // bytecode caches included.
    let ignored = std::fs::read_to_string(project.join(".gitignore")).unwrap();
    assert!(ignored.lines().any(|l| l == "__pycache__/"), "{ignored}");
    if lang == "ts" {
        // tsc and editors in the agent's folder resolve `worldline`.
        assert!(project.join("agent/tsconfig.json").is_file());
        assert!(project.join("agent/.worldline-sdk/index.ts").is_file());
    }
    let again = worldline_raw([
        "init".as_ref(),
        project.as_os_str(),
        "--lang".as_ref(),
        lang.as_ref(),
    ]);
    again.expect_code(2);
    assert!(again.stderr.contains("overwrites nothing"), "{again}");

    let check = worldline_at(&project, ["check", "--json"], &[]);
    check.expect_code(0);
    let doc = check.json();
    assert_eq!(doc["cases"], 2, "{check}");
    assert_eq!(doc["worlds"], 1, "{check}");
    assert_eq!(doc["projects"], 1, "{check}");
    // The service once, under the shorter spelling of its path, though
    // the world's own check and each case's reach it by two; the agent the
    // project file names, not built yet either, at its line.
    let agent = match lang {
        "rust" => "target/wasm32-wasip2/release/agent.wasm",
        _ => "build/agent.wasm",
    };
    assert_eq!(
        doc["notes"],
        serde_json::json!([
            "./worlds/tasks/v1/service.wasm: the [service] component is not built yet; build it before a run",
            format!(
                "./worldline.toml:5:9: agent ./{agent} is not built yet; build it before a run"
            ),
        ]),
        "{check}"
    );

    if lang == "rust" {
        // The workspace's lock file: the same dependency versions as the
        // other guests, so their compiled dependencies are reused.
        std::fs::copy(
            workspace_root().join("Cargo.lock"),
            project.join("Cargo.lock"),
        )
        .unwrap();
    }
    build(&project);
    let mut args = vec!["test".to_string(), "--json".to_string()];
    if lang == "rust" {
        let agent = guest_target_dir().join("wasm32-wasip2/release/agent.wasm");
        args.extend(["--agent".to_string(), agent.display().to_string()]);
    }
    let test = worldline_at(&project, &args, &[]);
    test.expect_code(1);
    let doc = test.json();
    assert_eq!(doc["passed"], 1, "{test}");
    assert_eq!(doc["cases"][0]["case"], "complete-one", "{test}");
    assert_eq!(doc["cases"][0]["passed"], true, "{test}");
    let failure = &doc["cases"][1];
    assert_eq!(failure["case"], "complete-overdue", "{test}");
    assert!(
        failure["reason"].as_str().unwrap().contains("T-3"),
        "fails on the task it left open: {test}"
    );
    let settings = &doc["settings"];
    assert_eq!(
        settings["file"],
        project.join("worldline.toml").display().to_string(),
        "{test}"
    );
    assert!(settings["supplied"]["cases"][0].is_string(), "{test}");
    assert!(settings["supplied"]["store"].is_string(), "{test}");
    if lang == "rust" {
        assert_eq!(settings["overridden"][0], "agent", "{test}");
    } else {
        assert!(settings["supplied"]["agent"].is_string(), "{test}");
    }
    assert!(
        project.join(".worldline/runs").is_dir(),
        "the project's store"
    );
}

#[test]
fn init_check_build_test_in_rust() {
    first_hour("rust", &[]);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn init_check_build_test_in_python() {
    first_hour("python", &["build-python"]);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages, componentize-py: run tests/run, which installs it"
)]
fn init_check_build_test_in_typescript() {
    first_hour("ts", &["build-python", "build-js"]);
}

#[test]
fn check_lists_every_problem_with_its_place() {
    let dir = temp_dir();
    let root = dir.path();
    let init = worldline_raw([
        "init".as_ref(),
        root.join("p").as_os_str(),
        "--lang".as_ref(),
        "python".as_ref(),
    ]);
    init.expect_code(0);
    // `--sdk` names a Rust agent's sources: a Python project's was
    // accepted and ignored.
    let sdk = worldline_raw([
        "init".as_ref(),
        root.join("q").as_os_str(),
        "--lang".as_ref(),
        "python".as_ref(),
        "--sdk".as_ref(),
        workspace_root().as_os_str(),
    ]);
    sdk.expect_code(2);
    assert!(
        sdk.stderr
            .contains("--sdk: names the worldline sources a Rust agent"),
        "{sdk}"
    );
    assert!(!root.join("q").exists());
    let p = root.join("p");
    // A world with two bad tools, a case with two bad sections, a case
    // that is not TOML, and a project file with an unknown key.
    // The case with two problems names a copy of the world that has none
    // (a case is checked against its world only when the world loads).
    let v2 = p.join("worlds/tasks/v2");
    std::fs::create_dir_all(v2.join("data")).unwrap();
    let world = p.join("worlds/tasks/v1/world.toml");
    let text = std::fs::read_to_string(&world).unwrap();
    std::fs::write(
        v2.join("world.toml"),
        text.replace("version = 1", "version = 2")
            .replace("[service]\n# Built by ./build.sh; its bytes are part of the world's hash.\ncomponent = \"service.wasm\"\n", "")
            .replace("op = \"service\"", "op = \"update\"\ntable = \"tasks\"\nset = { status = \"done\" }"),
    )
    .unwrap();
    std::fs::copy(
        p.join("worlds/tasks/v1/data/tasks.jsonl"),
        v2.join("data/tasks.jsonl"),
    )
    .unwrap();
    let text = text.replace("table = \"tasks\"\nfilters", "table = \"taskz\"\nfilters")
        + "\n[[tools]]\nname = \"complete_task\"\nop = \"get\"\ntable = \"tasks\"\n";
    std::fs::write(&world, text).unwrap();
    std::fs::write(
        p.join("cases/two-problems.toml"),
        "world = \"tasks@v2\"\nseed = 1\nclock = 1960-01-01T00:00:00Z\ntask = {}\n\n[[inject]]\ntool = \"nope\"\ndeny = true\n",
    )
    .unwrap();
    // A case naming the broken world still has its own problems listed
    // (a price that is no price among them).
    std::fs::write(
        p.join("cases/late.toml"),
        "world = \"tasks@v1\"\nseed = 1\nclock = 1960-01-01T00:00:00Z\ntask = {}\n\n[prices.\"gpt-4o\"]\ninput_per_mtok = -1\noutput_per_mtok = 10\n",
    )
    .unwrap();
    std::fs::write(
        p.join("cases/broken.toml"),
        "world = \"tasks@v1\"\nseed = \n",
    )
    .unwrap();
    std::fs::write(p.join("worldline.toml"), "agent = \"a.wasm\"\njobz = 2\n").unwrap();

    let out = worldline_at(&p, ["check"], &[]);
    out.expect_code(2);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let has = |file: &str, place: &str, text: &str| {
        // Relative to the project's folder, where check runs.
        let wanted = format!("./{file}:{place}: ");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&wanted) && l.contains(text)),
            "no `{wanted}...{text}` in:\n{out}"
        );
    };
    has("worlds/tasks/v1/world.toml", "19:1", "taskz");
    has("worlds/tasks/v1/world.toml", "35:1", "declared twice");
    has("cases/two-problems.toml", "3:9", "clock");
    has("cases/two-problems.toml", "6:1", "nope");
    has("cases/broken.toml", "2:8", "");
    has("cases/late.toml", "3:9", "clock");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("./cases/late.toml:7:18:")
                && l.contains("[prices.\"gpt-4o\"] input_per_mtok = -1")),
        "{out}"
    );
    has("worldline.toml", "2:1", "jobz");
    let json = worldline_at(&p, ["check", "--json"], &[]);
    json.expect_code(2);
    assert_eq!(json.json()["ok"], false);
    let problems = json.json()["problems"].as_array().unwrap();
    assert!(problems.len() >= 6, "{json}");
    assert!(problems.iter().all(|p| p["file"].is_string()), "{json}");
    // A broken project file stops other commands, at its place.
    let test = worldline_at(&p, ["test"], &[]);
    test.expect_code(2);
    assert!(test.stderr.contains("worldline.toml:2:1"), "{test}");
}

#[test]
fn the_project_file_supplies_defaults_and_flags_override_it() {
    let dir = temp_dir();
    let p = dir.path();
    let agent = guest("probe-agent");
    std::fs::create_dir_all(p.join("cases/sub")).unwrap();
    std::fs::copy(case("probe"), p.join("cases/probe.toml")).unwrap();
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "store = \"runs-here\"\nagent = \"{}\"\nworlds = \"{}\"\ncases = [\"cases\"]\njobs = 1\n",
            agent.display(),
            worlds_dir().display()
        ),
    )
    .unwrap();
    // Found from a folder below the project, as Cargo finds Cargo.toml.
    let below = p.join("cases/sub");
    let out = worldline_at(&below, ["test", "--json"], &[]);
    out.expect_code(0);
    let s = &out.json()["settings"];
    assert_eq!(s["file"], p.join("worldline.toml").display().to_string());
    assert_eq!(s["supplied"]["agent"], agent.display().to_string());
    // As the file types them: a number (it was the text "1").
    assert_eq!(s["supplied"]["jobs"], 1);
    assert!(p.join("runs-here/runs").is_dir(), "the project's store");

    let other = dir.path().join("other-store");
    let out = worldline_at(
        &below,
        ["test", "--json", "--store", other.to_str().unwrap()],
        &[],
    );
    out.expect_code(0);
    assert_eq!(out.json()["settings"]["overridden"][0], "store", "{out}");
    assert!(other.join("runs").is_dir(), "the flag's store");

    let run = worldline_at(p, ["run", "cases/probe.toml", "--json"], &[]);
    run.expect_code(0);
    assert_eq!(
        run.json()["settings"]["supplied"]["agent"],
        agent.display().to_string()
    );

    // Model settings that do not fit a case are theirs, not the case's
    // (which has no [model]): named by where they came from.
    let on_case = "(the settings applied to the case cases/probe.toml)";
    let flag = worldline_at(
        p,
        ["run", "cases/probe.toml", "--model-set", "provider=openai"],
        &[],
    );
    flag.expect_code(2);
    assert!(
        flag.stderr
            .starts_with("error: --model-set: [model] provider `openai` needs `base_url`"),
        "{flag}"
    );
    assert!(flag.stderr.contains(on_case), "{flag}");
    let file = p.join("worldline.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}\n[model]\nprovider = \"openai\"\n")).unwrap();
    let project = worldline_at(p, ["run", "cases/probe.toml"], &[]);
    project.expect_code(2);
    assert!(
        project
            .stderr
            .starts_with(&format!("error: {}: [model] provider", file.display())),
        "{project}"
    );
    std::fs::write(&file, text).unwrap();

    // A mistake on the command line is told as typed: the usage line
    // shows no flag the project file added, as if it were required.
    let typo = worldline_at(p, ["fork", "--at", "1"], &[]);
    typo.expect_code(2);
    assert!(typo.stderr.contains("<RUN>"), "{typo}");
    assert!(
        typo.stderr
            .contains("Usage: worldline fork --at <AT> <RUN>"),
        "{typo}"
    );
}

/// `init` writes over nothing, the SDK's sources included: a TypeScript
/// project's `agent/.worldline-sdk/index.ts` of the user's was written
/// over and their `agent/tsconfig.json` kept, without a word, exit 0; and
/// its `files` list the project's `tsconfig.json`.
/// A file or a symlink (dangling, or to a folder) where `init` must make a
/// folder is refused up front, named, and nothing is written: `init` made
/// half a project (`.gitignore`, `Cargo.toml`, …) before it failed on the
/// folder, named the dangling link's target's folder instead of the link,
/// and a second `init` then failed on its own leftovers.
#[test]
fn init_refuses_a_file_or_a_link_where_a_folder_goes_and_writes_nothing() {
    let dir = temp_dir();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let cases = [
        ("agent", "is a file where `init` makes a folder"),
        ("worlds", "is a symbolic link where `init` makes a folder"),
        ("cases", "is a symbolic link where `init` makes a folder"),
    ];
    for (name, said) in cases {
        let project = dir.path().join(name);
        std::fs::create_dir(&project).unwrap();
        let culprit = project.join(name);
        match name {
            "agent" => std::fs::write(&culprit, "mine\n").unwrap(),
            // Dangling, and to a folder.
            "worlds" => std::os::unix::fs::symlink(dir.path().join("missing"), &culprit).unwrap(),
            _ => std::os::unix::fs::symlink(&elsewhere, &culprit).unwrap(),
        }
        let init = |json: bool| {
            let mut args = vec![
                "init".as_ref(),
                project.as_os_str(),
                "--lang".as_ref(),
                "rust".as_ref(),
            ];
            if json {
                args.push("--json".as_ref());
            }
            worldline_raw(args)
        };
        let out = init(false);
        out.expect_code(2);
        assert!(
            out.stderr
                .starts_with(&format!("error: {}: {said}", culprit.display()))
                && out.stderr.contains("overwrites nothing")
                && out.stderr.lines().count() == 1,
            "{out}"
        );
        let left: Vec<_> = std::fs::read_dir(&project)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, [name], "nothing written beside it: {out}");
        assert_eq!(
            std::fs::read_dir(&elsewhere).unwrap().count(),
            0,
            "nothing written through the link"
        );
        let out = init(true);
        out.expect_code(2);
        assert_eq!(
            out.json()["error"]["file"],
            culprit.display().to_string(),
            "{out}"
        );
    }
}

/// A database store's password is never written into `worldline.toml`:
/// `init --store` refuses an address holding one (exit 2 naming
/// `--store`, nothing written), and `check` reports a `store` holding one
/// at its line, as it does a `[model] base_url` with credentials; neither
/// repeats the password. `init` wrote it in plain text, and `check`
/// passed it.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_store_s_password_is_refused_by_init_and_a_problem_to_check() {
    let dir = temp_dir();
    let d = dir.path();
    for (name, address) in [
        ("p1", "postgres://u:PWSECRET42@h/db"),
        ("p2", "postgresql://u@h/db?password=PWSECRET42"),
    ] {
        let args = [
            "init", name, "--lang", "python", "--store", address, "--json",
        ];
        let out = worldline_at(d, args, &[]);
        out.expect_code(2);
        let e = &out.json()["error"];
        assert_eq!(e["file"], "--store", "{out}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("PGPASSWORD") && message.contains("drop it"),
            "{out}"
        );
        assert!(
            !out.stdout.contains("PWSECRET42") && !out.stderr.contains("PWSECRET42"),
            "{out}"
        );
        assert!(!d.join(name).exists(), "{out}");
    }
    let project = d.join("p3");
    worldline_at(d, ["init", "p3", "--lang", "python"], &[]).expect_code(0);
    let file = project.join("worldline.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let text = text.replacen(
        "store = \".worldline\"",
        "store = \"postgres://u:PWSECRET42@h/db\"",
        1,
    );
    let line = text
        .lines()
        .position(|l| l.starts_with("store = "))
        .unwrap()
        + 1;
    std::fs::write(&file, text).unwrap();
    let out = worldline_at(&project, ["check", "--json"], &[]);
    out.expect_code(2);
    let problems = out.json()["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["line"] == line
            && p["message"]
                .as_str()
                .unwrap()
                .starts_with("store holds a password")),
        "{out}"
    );
    assert!(
        !out.stdout.contains("PWSECRET42") && !out.stderr.contains("PWSECRET42"),
        "{out}"
    );
    // Without one, the address is no problem.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("u:PWSECRET42@", "u@");
    std::fs::write(&file, text).unwrap();
    let out = worldline_at(&project, ["check", "--json"], &[]);
    let problems = out.json()["problems"].as_array().unwrap();
    assert!(
        !problems
            .iter()
            .any(|p| p["message"].as_str().unwrap().contains("password")),
        "{out}"
    );
}

#[test]
fn init_writes_over_no_sdk_source_and_lists_the_tsconfig() {
    let dir = temp_dir();
    for (folder, mine) in [
        ("sdk", "agent/.worldline-sdk/index.ts"),
        ("config", "agent/tsconfig.json"),
    ] {
        let project = dir.path().join(folder);
        let file = project.join(mine);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "// mine\n").unwrap();
        let init = worldline_raw([
            "init".as_ref(),
            project.as_os_str(),
            "--lang".as_ref(),
            "ts".as_ref(),
        ]);
        init.expect_code(2);
        assert!(
            init.stderr.contains(mine) && init.stderr.contains("exists already"),
            "{init}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "// mine\n");
    }
    let project = dir.path().join("new");
    let init = worldline_raw([
        "init".as_ref(),
        project.as_os_str(),
        "--lang".as_ref(),
        "ts".as_ref(),
        "--json".as_ref(),
    ]);
    init.expect_code(0);
    let files: Vec<&str> = (init.json()["files"].as_array().unwrap().iter())
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(files.contains(&"agent/tsconfig.json"), "{files:?}");
    assert!(
        !files.iter().any(|f| f.contains(".worldline-sdk")),
        "{files:?}"
    );
    assert!(project.join("agent/.worldline-sdk/index.ts").is_file());
    // Its service is Python: editors resolve `worldline_service` as in a
    // Python project (it had no `.sdk/python` nor pyright settings).
    assert!(files.contains(&"pyrightconfig.json"), "{files:?}");
    assert!(!files.iter().any(|f| f.starts_with(".sdk")), "{files:?}");
    assert!(
        project
            .join(".sdk/python/worldline_service/__init__.py")
            .is_file()
    );
    let settings = std::fs::read_to_string(project.join(".vscode/settings.json")).unwrap();
    assert!(
        settings.contains("\"python.analysis.extraPaths\": [\".sdk/python\"]"),
        "{settings}"
    );
}

/// A project whose cases sit at its root (`cases = ["."]`): `test` passes
/// over the project file, a nested project's, and other tools' manifests
/// as `check` does. It collected `worldline.toml` as a broken case (exit
/// 2) while `check` said there was no problem.
#[test]
fn cases_at_the_project_s_root_leave_its_files_alone() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::copy(case("probe"), p.join("probe.toml")).unwrap();
    let project = format!(
        "store = \"st\"\nagent = \"{}\"\nworlds = \"{}\"\ncases = [\".\"]\n",
        guest("probe-agent").display(),
        worlds_dir().display()
    );
    std::fs::write(p.join("worldline.toml"), &project).unwrap();
    std::fs::create_dir_all(p.join("inner")).unwrap();
    std::fs::write(p.join("inner/worldline.toml"), &project).unwrap();
    std::fs::write(p.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    std::fs::create_dir_all(p.join("target/debug")).unwrap();
    std::fs::write(p.join("target/debug/stray.toml"), "x = 1\n").unwrap();
    worldline_at(p, ["check"], &[]).expect_code(0);
    for args in [vec!["test"], vec!["test", "."]] {
        let out = worldline_at(p, &args, &[]);
        out.expect_code(0);
        assert!(out.stdout.contains("1 passed"), "{args:?}: {out}");
    }
}

/// `grade RUN` finds the recorded case under the project file's `cases`
/// from any folder of the project, as `test` found it: it looked in
/// `./cases` alone and said the case had changed.
#[test]
fn grade_finds_the_case_under_the_project_s_cases() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::create_dir_all(p.join("suite")).unwrap();
    std::fs::create_dir_all(p.join("sub")).unwrap();
    let text = std::fs::read_to_string(case("probe")).unwrap();
    std::fs::write(
        p.join("suite/probe.toml"),
        format!("{text}\n[expect]\nstatus = \"completed\"\n"),
    )
    .unwrap();
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "store = \"st\"\nagent = \"{}\"\nworlds = \"{}\"\ncases = [\"suite\"]\n",
            guest("probe-agent").display(),
            worlds_dir().display()
        ),
    )
    .unwrap();
    let ran = worldline_at(p, ["test", "--json"], &[]);
    ran.expect_code(0);
    let id = ran.json()["cases"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    for at in [p.to_path_buf(), p.join("sub")] {
        let graded = worldline_at(&at, ["grade", id.as_str(), "--json"], &[]);
        graded.expect_code(0);
        assert!(
            graded.json()["case"]
                .as_str()
                .unwrap()
                .ends_with("suite/probe.toml"),
            "{graded}"
        );
    }
}

/// `check` without paths checks the project's `cases` outside its folder
/// too, as `test` runs them: it said "no problems" of a case `test`
/// refused.
#[test]
fn check_without_paths_checks_the_project_s_cases_outside_its_folder() {
    let dir = temp_dir();
    let p = dir.path().join("proj");
    let external = dir.path().join("external");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::create_dir_all(&external).unwrap();
    let text = std::fs::read_to_string(case("probe")).unwrap();
    std::fs::write(
        external.join("bad.toml"),
        format!("{text}\n[limits]\nfuel = 0\n"),
    )
    .unwrap();
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "store = \"st\"\nagent = \"{}\"\nworlds = \"{}\"\ncases = [\"../external\"]\n",
            guest("probe-agent").display(),
            worlds_dir().display()
        ),
    )
    .unwrap();
    let checked = worldline_at(&p, ["check"], &[]);
    checked.expect_code(2);
    assert!(checked.stdout.contains("bad.toml"), "{checked}");
    worldline_at(&p, ["test"], &[]).expect_code(2);

    // A `.toml` there that is no case at all (empty, a misspelt `world`)
    // is a problem too, as `test` collects it: `check` said "no problems".
    std::fs::remove_file(external.join("bad.toml")).unwrap();
    std::fs::write(external.join("good.toml"), &text).unwrap();
    std::fs::write(external.join("empty.toml"), "").unwrap();
    let checked = worldline_at(&p, ["check"], &[]);
    checked.expect_code(2);
    assert!(
        checked.stdout.contains("empty.toml: not a case"),
        "{checked}"
    );
    let test = worldline_at(&p, ["test"], &[]);
    test.expect_code(2);
    assert!(test.stdout.contains("ERROR collecting"), "{test}");
}

/// `mcp` and `serve` read their cases against the project file's
/// `worlds`, as `run` and `test` do: both stopped on "no 'worlds/' folder
/// found above the case; pass --worlds DIR".
#[test]
fn mcp_and_serve_take_the_project_s_worlds() {
    use std::io::Write as _;
    let dir = temp_dir();
    let p = dir.path();
    std::fs::create_dir_all(p.join("cases")).unwrap();
    std::fs::copy(case("probe"), p.join("cases/probe.toml")).unwrap();
    let file = format!("store = \"st\"\nworlds = \"{}\"\n", worlds_dir().display());
    std::fs::write(p.join("worldline.toml"), file).unwrap();
    let mut mcp = cli()
        .args(["mcp", "cases/probe.toml"])
        .current_dir(p)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (mcp.stdin.take().unwrap())
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
        .unwrap();
    let mcp = CliOutput::of(mcp.wait_with_output().unwrap());
    assert!(mcp.stdout.contains("\"id\":7"), "{mcp}");
    assert!(!mcp.stderr.contains("worlds"), "{mcp}");
    // Its case loaded, `serve` meets the address taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let serve = worldline_at(p, ["serve", "cases/probe.toml", "--addr", &addr], &[]);
    serve.expect_code(2);
    assert!(
        serve.stderr.starts_with("error: --addr: cannot listen"),
        "{serve}"
    );
}

/// A project file without `store` keeps the project's runs in one store,
/// `.worldline/` beside it, from any folder of the project: each folder a
/// command ran in made a store of its own.
#[test]
fn a_project_without_a_store_key_has_one_store_beside_its_file() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::create_dir_all(p.join("cases")).unwrap();
    std::fs::copy(case("probe"), p.join("cases/probe.toml")).unwrap();
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "agent = \"{}\"\nworlds = \"{}\"\ncases = [\"cases\"]\n",
            guest("probe-agent").display(),
            worlds_dir().display()
        ),
    )
    .unwrap();
    worldline_at(p, ["run", "cases/probe.toml"], &[]).expect_code(0);
    worldline_at(&p.join("cases"), ["run", "probe.toml"], &[]).expect_code(0);
    assert!(!p.join("cases/.worldline").exists(), "a second store");
    let runs = worldline_at(&p.join("cases"), ["runs", "--json"], &[]);
    runs.expect_code(0);
    assert_eq!(runs.json().as_array().map(Vec::len), Some(2), "{runs}");
}

/// The project file's `[model]` takes a list (`responses`) as
/// `--model-set 'responses=[...]'` does: it was refused, the error
/// saying the flag refused it too.
#[test]
fn the_project_s_model_table_takes_lists_as_the_flag_does() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::create_dir_all(p.join("cases")).unwrap();
    std::fs::write(
        p.join("cases/ask.toml"),
        "world = \"demo@v1\"\nclock = 2026-03-01T12:00:00Z\nseed = 11\n\
         task = { requests = [{ messages = [{ role = \"user\", content = \"hi\" }] }] }\n\
         [model]\nresponses = [\"from the case\"]\n",
    )
    .unwrap();
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "store = \"st\"\nagent = \"{}\"\nworlds = \"{}\"\n\n[model]\nresponses = [\"from the project\"]\n",
            guest("asker-agent").display(),
            worlds_dir().display()
        ),
    )
    .unwrap();
    worldline_at(p, ["check"], &[]).expect_code(0);
    let out = worldline_at(p, ["run", "cases/ask.toml", "--json"], &[]);
    out.expect_code(0);
    assert!(
        out.json()["output"]
            .as_str()
            .unwrap()
            .contains("from the project"),
        "{out}"
    );
}

/// `case from-run` into a project whose `worlds` is outside it says
/// nothing of `run` not finding the world there: they find it through
/// the project file (the note said to pass `--worlds`).
#[test]
fn a_case_from_a_run_finds_its_world_through_the_project_file() {
    let dir = temp_dir();
    let p = dir.path().join("proj");
    std::fs::create_dir_all(p.join("cases")).unwrap();
    std::fs::copy(case("probe"), p.join("cases/probe.toml")).unwrap();
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "store = \"st\"\nagent = \"{}\"\nworlds = \"{}\"\ncases = [\"cases\"]\n",
            guest("probe-agent").display(),
            worlds_dir().display()
        ),
    )
    .unwrap();
    let ran = worldline_at(&p, ["run", "cases/probe.toml", "--json"], &[]);
    ran.expect_code(0);
    let id = ran.json()["run_id"].as_str().unwrap().to_string();
    let made = worldline_at(
        &p,
        ["case", "from-run", id.as_str(), "-o", "cases/again.toml"],
        &[],
    );
    made.expect_code(0);
    assert!(!made.stderr.contains("will not find"), "{made}");
    worldline_at(&p, ["run", "cases/again.toml"], &[]).expect_code(0);
}

/// `check` lists every problem of the project file, each key checked on
/// its own: an unknown `[model]` key, or `jobs = 0`, hid the `cases` and
/// `worlds` that name nothing (told only once the first was fixed).
#[test]
fn check_lists_every_problem_of_the_project_file() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::write(
        p.join("worldline.toml"),
        "cases = [\"nope\"]\nworlds = \"worldz\"\njobs = 0\n\n[model]\nprovder = \"openai\"\n",
    )
    .unwrap();
    let out = worldline_at(p, ["check"], &[]);
    out.expect_code(2);
    for (place, text) in [
        ("1:10", "cases names"),
        ("2:10", "worlds names"),
        ("3:8", "jobs must be"),
        ("6:1", "[model] provder: unknown field"),
    ] {
        let wanted = format!("./worldline.toml:{place}: ");
        assert!(
            out.stdout
                .lines()
                .any(|l| l.starts_with(&wanted) && l.contains(text)),
            "no `{wanted}...{text}` in:\n{out}"
        );
    }
    // An unknown key at the top is one problem among the others too.
    std::fs::write(p.join("worldline.toml"), "jobz = 2\nworlds = \"worldz\"\n").unwrap();
    let out = worldline_at(p, ["check"], &[]);
    out.expect_code(2);
    assert!(out.stdout.contains("./worldline.toml:1:1: "), "{out}");
    assert!(
        out.stdout.contains("./worldline.toml:2:10: worlds names"),
        "{out}"
    );
    // A `cases` entry that is not there is said once, at its line (it was
    // said again as a path named to check).
    std::fs::write(p.join("worldline.toml"), "cases = [\"nope\"]\n").unwrap();
    let out = worldline_at(p, ["check"], &[]);
    out.expect_code(2);
    assert!(
        out.stdout
            .contains("./worldline.toml:1:10: cases names ./nope, which is not there"),
        "{out}"
    );
    assert!(!out.stdout.contains("no such file"), "{out}");
    assert!(out.stdout.contains("1 problem(s) in 1 file(s)"), "{out}");
    // A `jobs` past TOML's integers is said as any other `jobs` out of
    // range (it said "as i128, expected any valid TOML value", then
    // TOML's integer limits).
    std::fs::write(p.join("worldline.toml"), "jobs = 99999999999999999999\n").unwrap();
    let out = worldline_at(p, ["check"], &[]);
    out.expect_code(2);
    assert!(
        out.stdout.contains(
            "./worldline.toml:1:8: jobs must be a whole number from 1 to 1024, not 99999999999999999999"
        ),
        "{out}"
    );
}

/// A negative price is a problem at its value's line, in the project file
/// and in a case: it was placed at the first `[prices]` header.
#[test]
fn a_negative_price_is_placed_at_its_value() {
    let dir = temp_dir();
    let p = dir.path();
    let prices = "[prices.\"gpt-4o\"]\ninput_per_mtok = 2.5\noutput_per_mtok = 10.0\n\n[prices.\"gpt-4o*\"]\ninput_per_mtok = 1.0\noutput_per_mtok = -10.00\n";
    std::fs::write(
        p.join("worldline.toml"),
        format!("store = \"st\"\n\n{prices}"),
    )
    .unwrap();
    let text = std::fs::read_to_string(case("probe")).unwrap();
    std::fs::create_dir_all(p.join("cases")).unwrap();
    let case_text = format!("{text}\n{prices}");
    let line = case_text.lines().count();
    std::fs::write(p.join("cases/priced.toml"), &case_text).unwrap();
    let out = worldline_at(
        p,
        ["check", "--worlds", worlds_dir().to_str().unwrap()],
        &[],
    );
    out.expect_code(2);
    for wanted in [
        "./worldline.toml:9:19: [prices.\"gpt-4o*\"] output_per_mtok = -10".to_string(),
        format!("./cases/priced.toml:{line}:19: [prices.\"gpt-4o*\"] output_per_mtok = -10"),
    ] {
        assert!(out.stdout.contains(&wanted), "no `{wanted}` in:\n{out}");
    }
}

/// What the project file gives is blamed on it, at the key's line: a
/// `worlds` that is no folder (to every command that reads cases against
/// it), an `api_key_env` not set and a `recording` not there were each
/// said to be the case's (`cases/c.toml:1:9: world not found`, "relative
/// to the case file"), and `check` said nothing of the recording.
#[test]
fn what_the_project_file_gives_is_blamed_on_it() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::create_dir_all(p.join("cases")).unwrap();
    std::fs::copy(case("probe"), p.join("cases/probe.toml")).unwrap();
    let file = p.join("worldline.toml");
    let head = format!(
        "store = \"st\"\nagent = \"{}\"\n",
        guest("probe-agent").display()
    );
    std::fs::write(&file, format!("{head}worlds = \"world\"\n")).unwrap();
    let at = |line: &str| format!("error: {}:{line}: ", file.display());
    for args in [
        vec!["run", "cases/probe.toml"],
        vec!["test", "cases"],
        vec!["fuzz", "cases/probe.toml", "--json"],
        // Those that read cases against it too (each case was told its
        // world is not there; `grade` first said the run was not).
        vec!["validate", "cases"],
        vec![
            "grade",
            "20260101-000000-00000000",
            "--case",
            "cases/probe.toml",
        ],
    ] {
        let out = worldline_at(p, &args, &[]);
        out.expect_code(2);
        assert!(
            out.stderr
                .starts_with(&format!("{}worlds names", at("3:10"))),
            "{args:?}: {out}"
        );
    }
    let fuzz = worldline_at(p, ["fuzz", "cases/probe.toml", "--json"], &[]);
    assert_eq!(
        fuzz.json()["error"]["file"],
        file.display().to_string(),
        "{fuzz}"
    );

    let worlds = format!("worlds = \"{}\"\n", worlds_dir().display());
    std::fs::write(
        &file,
        format!("{head}{worlds}\n[model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"NOPE_KEY_XYZ\"\n"),
    )
    .unwrap();
    let out = worldline_at(p, ["run", "cases/probe.toml"], &[]);
    out.expect_code(2);
    assert!(
        out.stderr.starts_with(&format!(
            "{}[model] api_key_env names `NOPE_KEY_XYZ`",
            at("9:15")
        )),
        "{out}"
    );
    // `check` passes (another machine may set it), noting it at its line:
    // it said nothing.
    let checked = worldline_at(p, ["check"], &[]);
    checked.expect_code(0);
    assert!(
        checked.stdout.contains(
            "note: ./worldline.toml:9:15: [model] api_key_env names `NOPE_KEY_XYZ`, which is not set here"
        ),
        "{checked}"
    );

    std::fs::write(
        &file,
        format!("{head}{worlds}\n[model]\nprovider = \"recorded\"\nrecording = \"recs\"\n"),
    )
    .unwrap();
    let out = worldline_at(p, ["run", "cases/probe.toml"], &[]);
    out.expect_code(2);
    assert!(
        out.stderr.starts_with(&format!(
            "{}[model] recording `{}` does not exist",
            at("7:13"),
            p.join("recs").display()
        )),
        "{out}"
    );
    assert!(out.stderr.contains("relative to this file"), "{out}");
    let check = worldline_at(p, ["check"], &[]);
    check.expect_code(2);
    assert!(
        check
            .stdout
            .contains("./worldline.toml:7:13: [model] recording"),
        "{check}"
    );
}

/// `init`'s next command quotes the folder for a POSIX shell when it needs
/// it: `cd my proj && ...` was two words, `cd it's && ...` an open quote.
#[test]
fn init_s_next_command_quotes_the_folder() {
    let dir = temp_dir();
    for name in ["my proj", "it's"] {
        let out = worldline_at(dir.path(), ["init", name, "--lang", "python"], &[]);
        out.expect_code(0);
        let next = (out.stdout.lines())
            .find_map(|l| l.strip_prefix("next: "))
            .unwrap_or_else(|| panic!("no next command in:\n{out}"));
        let cd = next.split(" && ").next().unwrap();
        let words = shlex::split(cd).unwrap_or_default();
        assert_eq!(words, ["cd", name], "{out}");
    }
}

/// `init --store S` writes S as the project's store (a folder inside the
/// project relative to it, one outside absolute; an address of another
/// scheme refused, naming the flag); a command that uses no store
/// (`bench list`, `check`) says it ignores `--store`, and `check --json`
/// in a project does not say the file supplied a store. `init --store`
/// was taken and ignored (the file said `.worldline`), as `bench list
/// --store /nonexistent` was, unsaid.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn init_writes_its_store_and_a_command_without_one_says_it_ignores_it() {
    let dir = temp_dir();
    let d = dir.path();
    let outside = d.join("elsewhere");
    let at = |name: &str, store: &std::ffi::OsStr| {
        let args = [
            "init".as_ref(),
            name.as_ref(),
            "--lang".as_ref(),
            "python".as_ref(),
            "--store".as_ref(),
            store,
            "--json".as_ref(),
        ];
        worldline_at(d, args, &[])
    };
    for (name, store, written) in [
        ("p1", outside.as_os_str(), outside.display().to_string()),
        ("p2", "p2/runs".as_ref(), "runs".into()),
        (
            "p3",
            "postgres://u@h/db".as_ref(),
            "postgres://u@h/db".into(),
        ),
    ] {
        at(name, store).expect_code(0);
        let file = std::fs::read_to_string(d.join(name).join("worldline.toml")).unwrap();
        let line = format!("store = {}", toml::Value::String(written));
        assert!(file.lines().any(|l| l == line), "{name}: {file}");
    }
    let out = at("p4", "ftp://h/x".as_ref());
    out.expect_code(2);
    assert!(out.json()["error"]["file"] == "--store", "{out}");
    assert!(!d.join("p4").exists(), "{out}");
    for args in [&["bench", "list"][..], &["check"]] {
        let mut args = args.to_vec();
        args.extend(["--store", "/nonexistent", "--json"]);
        let out = worldline_at(&d.join("p1"), &args, &[]);
        assert!(out.json().get("error").is_none(), "{out}");
        assert!(
            (out.stderr).contains(
                "note: --store: `worldline {}` uses no store; it is ignored"
                    .replace("{}", args[0])
                    .as_str()
            ),
            "{out}"
        );
    }
    let out = worldline_at(&d.join("p1"), ["check", "--json"], &[]);
    let settings = &out.json()["settings"];
    assert!(settings["supplied"].get("store").is_none(), "{out}");
}

/// The TOML block of docs/formats.md that begins at the line `first`
/// (the block's own first line, not its fence).
fn formats_block(first: &str) -> String {
    let doc = std::fs::read_to_string(workspace_root().join("docs/formats.md")).unwrap();
    let start = doc.find(&format!("```toml\n{first}")).unwrap() + "```toml\n".len();
    let len = doc[start..].find("\n```").unwrap();
    doc[start..start + len + 1].to_string()
}

/// docs/formats.md's world and `[fuzz]` examples, copied as they are,
/// pass `check`: a user who copied them was stopped at once (permissions
/// naming no tool of the world, a `limit_arg` its params did not declare,
/// a `partial` on a query, an injection at a vector the world lacks).
#[test]
fn the_formats_doc_s_world_and_fuzz_examples_pass_check() {
    let dir = temp_dir();
    let world = dir.path().join("worlds/incident/v4");
    std::fs::create_dir_all(world.join("data")).unwrap();
    std::fs::create_dir_all(world.join("files")).unwrap();
    let ours = workspace_root().join("worlds/incident/v4/data/deploys.jsonl");
    std::fs::copy(ours, world.join("data/deploys.jsonl")).unwrap();
    std::fs::write(
        world.join("world.toml"),
        formats_block("name = \"incident\""),
    )
    .unwrap();
    let checked = worldline_at(dir.path(), ["check", "worlds"], &[]);
    checked.expect_code(0);

    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let case = format!(
        "world = \"incident@v4\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = {{ alert = \"ALERT-7\" }}\n\n{}",
        formats_block("[fuzz]")
    );
    std::fs::write(cases.join("fuzz.toml"), case).unwrap();
    let worlds = workspace_root().join("worlds");
    let checked = worldline_at(
        dir.path(),
        ["check", "cases", "--worlds", worlds.to_str().unwrap()],
        &[],
    );
    checked.expect_code(0);
}
