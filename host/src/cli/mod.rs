//! The `worldline` command line: parsing, dispatch, and exit codes
//! (0 success/pass, 1 graded failure or divergence, 2 usage or input error,
//! 3 agent fault, 4 internal error).

/// `println!` that returns the write's error instead of panicking: a
/// command's output to a stdout that fails (a full disk, `> /dev/full`)
/// ends it with an error (exit 4), where `println!` aborted the process
/// with a panic and a backtrace.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)
    }};
}

mod agent_choice;
mod audit_cmd;
mod bench_cmd;
mod build_js_cmd;
mod build_python_cmd;
mod case_cmd;
mod check_cmd;
mod compile_progress;
pub(crate) mod exit;
mod export_cmd;
mod fork_cmd;
mod fuzz_cmd;
mod gc_cmd;
mod grade_cmd;
mod init_cmd;
mod inspect_cmd;
mod mcp_cmd;
mod merge_cmd;
mod migrate_cmd;
mod otel_cmd;
mod preload;
mod project_args;
mod redact_opts;
mod redaction_cmd;
mod replay_cmd;
mod repro_cmd;
mod rerun_cmd;
mod resume_cmd;
mod retention_cmd;
mod run_cmd;
mod runs_cmd;
mod serve_cmd;
mod stopping;
mod store_failed;
mod test_cmd;
mod ui_cmd;
mod validate_cmd;
mod warnings;
mod workers;

use crate::cli::exit::{ExitCode, exit_code_of};
use clap::{Args, CommandFactory, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "worldline",
    version,
    about = "Run AI agents as WebAssembly components inside a deterministic, simulated world"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// How the agent's model calls are answered, beyond the case's `[model]`.
// (Not a doc comment: clap would make it the line of help of each
// subcommand that flattens these; see `Command`.)
#[derive(Args, Clone, Default)]
pub struct ModelArgs {
    /// Override a key of the case's [model], e.g. `--model-set provider=openai
    /// --model-set base_url=http://127.0.0.1:11434/v1 --model-set model=llama3.1`
    /// (repeatable; recorded in the bundle).
    #[arg(long = "model-set", value_name = "KEY=VALUE",
          value_parser = worldline_case::case::model::check_override)]
    pub set: Vec<String>,
    /// Configure the model that plays a model-played user (`[user]
    /// played_by = "model"`), a key of its [user.model], e.g.
    /// `--user-model-set provider=openai --user-model-set
    /// base_url=http://127.0.0.1:11434/v1 --user-model-set model=llama3.1`
    /// (repeatable; recorded in the bundle). Without one, a user whose case
    /// has no [user.model] is played by its scripted stand-in; a scripted
    /// user ignores it (decision 0386).
    #[arg(long = "user-model-set", value_name = "KEY=VALUE",
          value_parser = worldline_case::case::model::check_override)]
    pub user_set: Vec<String>,
    /// Seed of the scripted model's weighted alternatives (default: the case seed).
    #[arg(long)]
    pub model_seed: Option<u64>,
}

/// An error of the model settings applied to a case: theirs, named by
/// where they came from (the project file, when it supplied any of
/// `[table]`, else the flag), the case it was applied to said after. It
/// named the case file, which may have no `[model]` at all, and `check`
/// of the project passed.
fn settings_error(
    e: worldline_case::error::InputError,
    table: &str,
    flag: &str,
) -> worldline_case::error::InputError {
    let supplied = project_args::supplied();
    let from_file = (supplied.file.as_ref())
        .filter(|_| (supplied.supplied.keys()).any(|k| k.starts_with(&format!("{table}."))));
    let source = from_file.map_or_else(|| std::path::PathBuf::from(flag), Clone::clone);
    let said = e
        .message
        .strip_prefix(&format!("{flag} "))
        .unwrap_or(&e.message);
    worldline_case::error::InputError::new(
        source,
        format!(
            "{said} (the settings applied to the case {})",
            e.file.display()
        ),
    )
}

impl ModelArgs {
    /// SHA-256 of what shards of one suite or campaign must share beside
    /// the agent (`merge` compares it): each case, by its place, its
    /// file's hash and its world's (shards run with `--worlds` of other
    /// contents merged), and these flags.
    pub fn inputs_hash<'a>(
        &self,
        cases: impl IntoIterator<Item = (usize, &'a worldline_case::case::Case)>,
    ) -> String {
        let mut text = String::new();
        for (index, case) in cases {
            text.push_str(&format!(
                "case {index} {} world {}\n",
                case.hash, case.world.hash
            ));
        }
        for (flag, values) in [
            ("--model-set", &self.set),
            ("--user-model-set", &self.user_set),
        ] {
            for v in values {
                text.push_str(&format!("{flag} {v}\n"));
            }
        }
        if let Some(seed) = self.model_seed {
            text.push_str(&format!("--model-seed {seed}\n"));
        }
        worldline_case::canon::sha256_hex(text)
    }

    /// Apply the overrides to a case and check that its provider can run
    /// here (an API key it names is set).
    pub fn apply(&self, case: &mut worldline_case::case::Case) -> anyhow::Result<()> {
        let overrides = worldline_case::case::model::parse_overrides(&self.set)
            .map_err(|m| worldline_case::error::InputError::new(&case.path, m))?;
        case.override_model(overrides)
            .map_err(|e| settings_error(e, "model", "--model-set"))?;
        let user = worldline_case::case::model::parse_overrides(&self.user_set)
            .map_err(|m| m.replace("--model-set", "--user-model-set"))
            .map_err(|m| worldline_case::error::InputError::new(&case.path, m))?;
        case.override_user_model(user)
            .map_err(|e| settings_error(e, "user_model", "--user-model-set"))?;
        let models = case.models();
        let [_, (_, user_model), (_, judge)] = models;
        let unset = |table: &str, var: &str| {
            let (file, line) = given_in(&case.path, table, "api_key_env");
            let table = match line {
                Some(_) => table.replace("user.model", "user_model"),
                None => table.to_string(),
            };
            worldline_case::error::InputError {
                file,
                line,
                message: format!(
                    "[{table}] api_key_env names `{var}`, which is not set; export {var}=... before the run (the key is never recorded)"
                ),
                store: false,
            }
        };
        if let Some(var) = user_model.and_then(|m| m.missing_key()) {
            return Err(unset("user.model", var).into());
        }
        // The judge's too: it is asked once the run has ended, which then
        // failed its checks for the missing key.
        if let Some(var) = judge.and_then(|m| m.missing_key()) {
            return Err(unset("expect.judge_model", var).into());
        }
        let case_dir = case.path.parent().unwrap_or(std::path::Path::new("."));
        for (table, model) in models {
            let Some(model) = model else { continue };
            let (file, line) = given_in(&case.path, table, "recording");
            let (relative_to, shown, line) = match line {
                Some(_) => ("this file", table.replace("user.model", "user_model"), line),
                // The case's own, at its line, as `check` names it.
                None => (
                    "the case file",
                    table.to_string(),
                    (model.recording.as_deref()).and_then(|r| case.recording_at(table, r)),
                ),
            };
            if let Some(why) = model.unreadable_recording(case_dir, relative_to) {
                let message = why.replacen("[model]", &format!("[{shown}]"), 1);
                return Err(worldline_case::error::InputError {
                    file,
                    line,
                    message,
                    store: false,
                }
                .into());
            }
        }
        if let Some(var) = case.model.missing_key() {
            return Err(unset("model", var).into());
        }
        Ok(())
    }
}

/// Where the value of the case's `[table] key` (`model` or `user.model`)
/// was given: the project file, at the value's line, when that file gave
/// it to this command; else the case (`recording = "recs"` in
/// worldline.toml was said to be the case's, relative to the case file).
fn given_in(
    case: &std::path::Path,
    table: &str,
    key: &str,
) -> (std::path::PathBuf, Option<(usize, usize)>) {
    let table = table.replace("user.model", "user_model");
    let given = (project_args::supplied().supplied).contains_key(&format!("{table}.{key}"));
    let written = (project_args::project().filter(|_| given)).and_then(|p| {
        let s = (p.settings.iter()).find(|s| s.table == table && s.key == key)?;
        Some((p.file.clone(), Some(s.value_at)))
    });
    written.unwrap_or_else(|| (case.to_path_buf(), None))
}

// A native agent instead of a WebAssembly one: `--exec -- CMD ARGS...`
// (or `exec` in worldline.toml or the case; see `agent_choice`). Not a
// doc comment, as `ModelArgs`.
#[derive(Args, Clone, Default)]
pub struct ExecArgs {
    /// Run a native process as the agent, outside the sandbox: `--exec --
    /// CMD ARGS...` (the model APIs and the world's tools reach it over a
    /// loopback server; see docs/native.md). Wins over `exec` in the case
    /// or worldline.toml.
    #[arg(long, requires = "command")]
    pub exec: bool,
    /// The native agent's command and arguments, after `--`.
    #[arg(last = true, value_name = "CMD", requires = "exec")]
    pub command: Vec<String>,
    /// Pass this variable of worldline's environment through to the
    /// process (repeatable; PATH, LANG, LC_ALL, LC_CTYPE, TERM and TZ
    /// always are; wins over `pass_env` in the case or worldline.toml).
    /// Its name and the SHA-256 of its value are recorded, never the value.
    #[arg(long = "pass-env", value_name = "NAME", value_parser = pass_env_arg)]
    pub pass_env: Vec<String>,
    /// Read the output from this file in the process's working directory
    /// (a relative path without `..`, which must not lead out of it)
    /// instead of the last JSON line of its stdout.
    #[arg(long = "output-file", value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Run the process in a network namespace of its own, where only the
    /// run's server is reachable (Linux, CAP_SYS_ADMIN; exit 2 saying why
    /// when it cannot be made).
    #[arg(long = "isolate-net")]
    pub isolate_net: bool,
}

/// `--pass-env NAME`, checked as `pass_env` in a file is: `FOO=bar` or
/// an empty name was taken, and nothing passed.
fn pass_env_arg(text: &str) -> Result<String, String> {
    match worldline_case::native_agent::is_variable_name(text) {
        true => Ok(text.to_string()),
        false => Err(format!(
            "`{text}` is not a variable's name: give the name alone (its value is read from worldline's environment)"
        )),
    }
}

/// `arg` as an absolute path when it names a file or folder here: a
/// native process starts in a fresh working directory, so `python
/// agent.py` must name the script by where it is.
fn absolute_if_here(arg: &str) -> String {
    let path = std::path::Path::new(arg);
    match path.is_relative() && path.exists() {
        true => {
            std::path::absolute(path).map_or_else(|_| arg.to_string(), |p| p.display().to_string())
        }
        false => arg.to_string(),
    }
}

/// `--jobs`, or the machine's cores when it is not given; at least 1.
pub fn jobs(given: Option<usize>) -> usize {
    given
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

/// `--jobs N`, parsed: 1 to [`MAX_JOBS`](worldline_case::project::MAX_JOBS)
/// (each job is a thread; more would be threads by the million, made
/// before the first run starts).
pub fn jobs_arg(text: &str) -> Result<usize, String> {
    let max = worldline_case::project::MAX_JOBS;
    match text.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not a number of jobs from 1 to {max}")),
    }
}

/// `--at N`: an event's number, from 0. A negative one is taken as the
/// flag's value and refused naming it (it was read as an unknown flag,
/// with a tip to write `-- -1`, which failed the same way).
pub fn event_arg(text: &str) -> Result<u64, String> {
    text.parse::<u64>().map_err(|_| {
        format!("`{text}` is not an event's number: events are numbered from 0 (`history RUN` lists them)")
    })
}

/// The most runs one command makes ([`worldline_case::bounded::RUNS`]).
pub const MAX_RUNS: u64 = worldline_case::bounded::RUNS;

/// `count` checked to be 1 to [`MAX_RUNS`], or an error naming `flag`.
pub fn runs_at_most(flag: &str, count: u64) -> Result<(), worldline_case::error::InputError> {
    match count {
        0 => Err(worldline_case::error::InputError::new(
            flag,
            "must be at least 1",
        )),
        n if n > MAX_RUNS => Err(worldline_case::error::InputError::new(
            flag,
            format!("asks for {n} runs, more than one command makes ({MAX_RUNS}); ask for fewer"),
        )),
        _ => Ok(()),
    }
}

/// `--partition i/n`, parsed (`None` when not given).
pub fn partition_arg(
    text: Option<&str>,
) -> Result<Option<worldline_case::partition::Partition>, worldline_case::error::InputError> {
    text.map(worldline_case::partition::Partition::parse)
        .transpose()
        .map_err(|m| worldline_case::error::InputError::new("--partition", m))
}

// Options every command takes. Not a doc comment, as `ModelArgs`.
#[derive(Args, Clone)]
pub struct Common {
    /// Store: a folder for bundles, objects and the compile cache, or a
    /// `postgres://user@host/db[?schema=NAME]` address of a shared one
    /// (default: `store` in worldline.toml, else `.worldline` beside that
    /// file, else `.worldline` in the working folder).
    #[arg(
        long,
        global = true,
        default_value = ".worldline",
        hide_default_value = true
    )]
    pub store: PathBuf,
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Each subcommand's arguments are built only when it is the one parsed
/// (or shown in help): building all of them took ~0.2 ms of every process.
#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// A new project: a world, two cases, an agent in Rust, Python or TypeScript.
    Init(init_cmd::InitArgs),
    /// Validate cases, worlds, fault profiles and worldline.toml without running anything.
    Check(check_cmd::CheckArgs),
    /// Public benchmarks as worldline projects: `bench list`, `bench import tau2/airline -o DIR`.
    Bench(bench_cmd::BenchArgs),
    /// Check every case without an agent: its gold calls pass, doing nothing fails, grades repeat, nothing leaks.
    Validate(validate_cmd::ValidateArgs),
    /// Run an agent on one case and record the run.
    Run(run_cmd::RunCommand),
    /// Run an agent on a suite of cases; exit 1 when any fails.
    Test(test_cmd::TestArgs),
    /// Re-grade a recorded run against the same or a newer case.
    Grade(grade_cmd::GradeCommand),
    /// Re-execute a recorded run strictly; report identical or the first divergence.
    Replay(replay_cmd::ReplayArgs),
    /// The recorded case against another agent build; how outcome and grade differ.
    Rerun(rerun_cmd::RerunCommand),
    /// Run many seeded variations of a case under a fault profile; failure rate and reproducers.
    Fuzz(fuzz_cmd::FuzzArgs),
    /// Run a recorded run's case and seed again N times; how often it ends the same way.
    Repro(repro_cmd::ReproArgs),
    /// Serve a case's world to one MCP client (stdio, or --http ADDR); record and grade the run.
    Mcp(mcp_cmd::McpArgs),
    /// Serve cases as OpenEnv environments over WebSocket: reset, step (a tool call), state; every episode a run.
    Serve(serve_cmd::ServeArgs),
    /// Combine the --json reports of a partitioned `test` or `fuzz` (or a suite's shards kept in a database store: --suite) into one.
    Merge(merge_cmd::MergeArgs),
    /// Replay every run in the store (or those named); report the drift rate.
    Verify(replay_cmd::VerifyArgs),
    /// A new run: replay a recorded one up to event N, change something there, run on live.
    Fork(fork_cmd::ForkCommand),
    /// A killed run, or one stopped at a limit (--fuel, --max-steps, ...), goes on from where its recording ends.
    Resume(resume_cmd::ResumeArgs),
    /// The timeline of a run.
    History(inspect_cmd::HistoryArgs),
    /// One event in full, and the world as it was after it.
    Show(inspect_cmd::ShowArgs),
    /// Two runs side by side: the first difference and the final-state diff.
    Diff(inspect_cmd::DiffArgs),
    /// The runs in the store, newest first, from the run index (filters: --status, --case, --since, ...).
    Runs(runs_cmd::RunsArgs),
    /// Bring the run index up to date, rebuild it (--rebuild) or compare it with the bundles (--check).
    Index(runs_cmd::IndexArgs),
    /// Remove runs past their retention (policy.toml or flags), then what no kept run needs.
    Gc(gc_cmd::GcArgs),
    /// The store's retention policy (what gc keeps); --set makes a policy.toml the store's.
    Retention(retention_cmd::RetentionArgs),
    /// Keep a run whatever its age, until unpinned.
    Pin(gc_cmd::PinArgs),
    /// Let gc treat a pinned run by its age again.
    Unpin(gc_cmd::UnpinArgs),
    /// Runs as OpenTelemetry traces (GenAI conventions) to an OTLP/HTTP endpoint or a file.
    Otel(otel_cmd::OtelArgs),
    /// Make cases from what happened: `case from-run RUN -o FILE`.
    Case(case_cmd::CaseArgs),
    /// Write a run with its agent, case and world to one portable file.
    Export(export_cmd::ExportArgs),
    /// Bring an exported run into this store.
    Import(export_cmd::ImportArgs),
    /// Bring a PostgreSQL store's schema up to this worldline's version.
    Migrate(migrate_cmd::MigrateArgs),
    /// A database store's unredacted reads: who, when, which run, which command (responders only).
    Audit(audit_cmd::AuditArgs),
    /// A database store's shared redaction policy; --set replaces it and makes every redacted copy again.
    Redaction(redaction_cmd::RedactionArgs),
    /// Build a Python agent (AGENT.py) into a component with componentize-py.
    BuildPython(build_python_cmd::BuildPythonArgs),
    /// A local web app over the store: runs, timelines, state at any event, fork, diff, replay, campaigns.
    Ui(ui_cmd::UiArgs),
    /// Build a JavaScript or TypeScript agent (AGENT.js, AGENT.ts) into a component with ComponentizeJS.
    BuildJs(build_js_cmd::BuildJsArgs),
}

/// Components from this size up carry an interpreter (CPython, a JS
/// engine) and take seconds to compile; smaller ones compile in well under
/// a second and are loaded quietly.
const COMPILE_NOTICE_BYTES: usize = 4_000_000;

/// Report a large agent's first compile on stderr, so a first run that
/// takes seconds is not silent: on a terminal a spinner with the time
/// so far, then how long it took.
fn compile_notice() -> worldline_runtime::sandbox::CompileNotice {
    Box::new(|origin, bytes| {
        if bytes < COMPILE_NOTICE_BYTES {
            return None;
        }
        Some(Box::new(compile_progress::CompileProgress::start(
            compiling(origin, bytes),
        )))
    })
}

/// What a first compile says: the component, its size, where it is kept.
fn compiling(origin: &std::path::Path, bytes: usize) -> String {
    format!(
        "compiling {} ({:.1} MB) for this machine; later runs load it from the compile cache",
        origin.display(),
        bytes as f64 / 1e6
    )
}

/// Commit the row of the run this command made before its report is
/// printed: a reader that stops reading (`| head`) ends the process with
/// SIGPIPE at the first line it does not read, which came before the
/// command's end committed the row (the index lacked the run until a
/// `runs` found it).
fn indexed(store: &worldline_store::store::StoreDir) {
    worldline_store::index::flush(store);
}

/// Print a `--json` document, with what the project file supplied under
/// `settings` when there is one.
fn print_json_with_settings(doc: &impl serde::Serialize) -> anyhow::Result<()> {
    print_json_supplied(doc, project_args::supplied())
}

/// [`print_json_with_settings`] for settings a command completed itself.
fn print_json_supplied(
    doc: &impl serde::Serialize,
    supplied: project_args::Supplied,
) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(doc)?;
    if supplied.file.is_some()
        && let Some(map) = value.as_object_mut()
    {
        map.insert("settings".into(), serde_json::to_value(&supplied)?);
    }
    print_json(&value)
}

/// Standard output for a report a person reads: what a run or an input
/// holds (an agent's error, a case's name, a reason) reaches the
/// terminal with its control characters escaped, as `history` and `runs`
/// write them (decision 0314), however the report builds its lines.
fn human_out() -> worldline_case::shown::Escaped<std::io::StdoutLock<'static>> {
    worldline_case::shown::Escaped::new(std::io::stdout().lock())
}

/// [`worldline_report::write_json`] on stdout.
fn print_json(doc: &impl serde::Serialize) -> anyhow::Result<()> {
    worldline_report::write_json(&mut std::io::stdout().lock(), doc)
}

/// The store a command on one run opens. For a run named by its
/// bundle's path inside a store (`STORE/runs/ID.jsonl`), that store, whose
/// objects it needs (a database store named by `--store` excepted: its
/// working folder is no store of its own); otherwise `--store` when it
/// is a store, never made where a mistyped one points (`history ID
/// --store typo` made an empty store there, and a bundle's path read from
/// another folder made `.worldline/` in it); a bundle outside any store
/// with `--store` when it is a store, whose objects it may hold.
fn store_of_run(
    store: &std::path::Path,
    run: &str,
) -> anyhow::Result<worldline_store::store::StoreDir> {
    use worldline_store::store::StoreDir;
    match store_path_of_run(store, run) {
        None => StoreDir::open_existing(store),
        Some(holding) => open_holding(store, run, holding),
    }
}

/// The store `holding` the bundle `run` names (from
/// [`store_path_of_run`]): when the bundle is outside any store, that is
/// `--store`, refused unless it is a store already (its objects are what
/// the bundle is read with; an empty one made there holds none).
fn open_holding(
    store: &std::path::Path,
    run: &str,
    holding: &std::path::Path,
) -> anyhow::Result<worldline_store::store::StoreDir> {
    if holding == store && !store.join("runs").is_dir() {
        // The bundle's own faults first (a torn line, a broken chain),
        // named at their line as a read with a store names them.
        let bundle = std::path::Path::new(run);
        worldline_log::log::bundle::read_held(bundle)
            .map_err(worldline_case::error::InputError::from)?;
        return Err(worldline_case::error::InputError::new(
            run,
            format!(
                "is not in a store's runs/ folder, and --store {} is no store: a bundle is read with the store holding its agent, case and world. Pass --store with the store it was recorded in, or `worldline import` a file `worldline export` wrote and name its run",
                store.display()
            ),
        )
        .into());
    }
    let opened = worldline_store::store::StoreDir::open(holding)?;
    // A bundle outside any store read with a store that is not the one it
    // was recorded in: said as that, not as the first object the read
    // misses (`objects/5c85…: object missing from the store`).
    if holding == store
        && let Ok(header) = worldline_log::log::bundle::read_header(std::path::Path::new(run))
    {
        let lacks = [
            ("agent", &header.agent_sha256),
            ("case", &header.case_hash),
            ("world", &header.world_hash),
        ]
        .into_iter()
        .find(|(_, sha)| !opened.has_object(sha));
        if let Some((what, sha)) = lacks {
            return Err(worldline_case::error::InputError::new(
                run,
                format!(
                    "is not in a store's runs/ folder, and --store {} does not hold its {what} (object {}…): a bundle is read with the store holding its agent, case and world. Pass --store with the store it was recorded in, or `worldline import` a file `worldline export` wrote and name its run",
                    store.display(),
                    &sha[..sha.len().min(12)]
                ),
            )
            .into());
        }
    }
    Ok(opened)
}

/// The store holding `run` when it is a bundle path (else `--store`,
/// `store`, once it is a bundle path outside any store); `None` for a run
/// id or a database store.
fn store_path_of_run<'a>(store: &'a std::path::Path, run: &'a str) -> Option<&'a std::path::Path> {
    let bundle = std::path::Path::new(run);
    // Whatever is there (a FIFO, a folder, a looping link is named by its
    // reading, not taken for an id of `--store`).
    let by_path = worldline_store::store::names_a_path(run) && bundle.symlink_metadata().is_ok();
    let database = store
        .to_str()
        .is_some_and(worldline_pgstore::url::is_postgres);
    (by_path && !database).then(|| worldline_case::output::store_holding(bundle).unwrap_or(store))
}

/// The edits of a fork's lineage that change what its run met (an
/// answer, a permission, the world), each as its flag and event: none
/// for a run that is no fork, or a branch that only drew other model
/// answers (`--samples`). `repro` and `rerun` run a case from its start,
/// without them.
fn fork_edits(rec: &worldline_engine::replay::RecordedRun) -> Vec<String> {
    use worldline_log::log::bundle::Edit;
    let Some(parent) = &rec.bundle.header.parent else {
        return Vec::new();
    };
    parent
        .fork_points()
        .iter()
        .flat_map(|p| {
            p.edits
                .iter()
                .filter(|e| !matches!(e, Edit::Reseed { .. }))
                .map(move |e| match e {
                    // The response itself may be long: the flag and event say which.
                    Edit::Respond { .. } => format!("--respond at event {}", p.event),
                    e => format!(
                        "{} at event {}",
                        worldline_engine::fork::check::describe(e),
                        p.event
                    ),
                })
        })
        .collect()
}

/// The store `gc`, `pin`, `unpin` and `retention` tend: one that is there
/// (a folder holding only its `policy.toml` is), never one made where a
/// mistyped `--store` points (`gc` "removed 0 runs" from an empty store it
/// made there), nor in a folder that is no store (`gc --dry-run` and
/// `retention` made `runs/`, `objects/` and an index in any folder named).
fn store_there(root: &std::path::Path) -> anyhow::Result<worldline_store::store::StoreDir> {
    use worldline_store::store::StoreDir;
    // Whatever its policy file is: one that is no file is refused where
    // it is read, naming it.
    let policy = root.join("policy.toml").symlink_metadata().is_ok();
    let policy_only = policy && !root.join("runs").exists();
    match policy_only {
        true => StoreDir::open(root),
        false => StoreDir::open_existing(root),
    }
}

/// A command's error on stderr. Messages quote inputs (names from
/// reports, traces, files): no control character of theirs reaches the
/// terminal.
fn print_error(err: &anyhow::Error) {
    eprintln!(
        "error: {}",
        worldline_case::shown::message(&format!("{err:#}"))
    );
}

/// A command whose `--json` document was begun when `err` ended it: the
/// document is ended by `fail` with the `error` object, so that stdout
/// stays one JSON document; the error goes to stderr, and the command
/// exits as the error says.
fn ended_with(
    err: &anyhow::Error,
    fail: impl FnOnce(&serde_json::Value) -> std::io::Result<()>,
) -> anyhow::Result<ExitCode> {
    let code = exit_code_of(err);
    fail(&error_json(code, err)["error"])?;
    print_error(err);
    Ok(code)
}

/// An error as the one JSON document `--json` promises on stdout.
fn error_json(code: ExitCode, err: &anyhow::Error) -> serde_json::Value {
    use worldline_case::error::{input_of, is_store};
    let input = input_of(err);
    let kind = match code {
        _ if is_store(err) => "store",
        ExitCode::Input => "input",
        _ => "internal",
    };
    serde_json::json!({"error": {
        "kind": kind,
        "exit_code": code as i32,
        "message": format!("{err:#}"),
        "file": input.map(|e| e.file.display().to_string()),
        "line": input.and_then(|e| e.line).map(|(l, _)| l),
        "column": input.and_then(|e| e.line).map(|(_, c)| c),
    }})
}

/// The command line, its project settings applied; a usage error (or
/// `--help`) is reported here, with the exit code to end with.
fn parse(json: bool) -> Result<Cli, ExitCode> {
    let tree = Cli::command();
    let commands: Vec<String> = tree
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let given: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv = match project_args::apply(given.clone(), &commands) {
        Ok(argv) => argv,
        Err(e) => {
            let err = anyhow::Error::from(e);
            eprintln!("error: {err:#}");
            if json {
                let _ = out!("{}", error_json(ExitCode::Input, &err));
            }
            return Err(ExitCode::Input);
        }
    };
    // The tree built once: for the names above and for the parse.
    let added = argv != given;
    match tree
        .try_get_matches_from(argv)
        .and_then(|mut m| <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut m))
    {
        Ok(cli) => Ok(cli),
        Err(e) => {
            // The same mistake in the command as typed is told as typed:
            // its usage line then shows no flag the project file added
            // (`--store <STORE>` as if the user had to give it).
            let mut e = match added {
                true => Cli::command()
                    .try_get_matches_from(given)
                    .err()
                    .filter(|typed| typed.kind() == e.kind())
                    .unwrap_or(e),
                false => e,
            };
            without_credentials(&mut e);
            let code = if e.use_stderr() {
                ExitCode::Input
            } else {
                ExitCode::Ok
            };
            if json && code == ExitCode::Input {
                // One line, as every input error's message (clap's usage
                // and its `--help` advice follow on stderr).
                let rendered = e.render().to_string();
                // The message's lines up to the blank line before the
                // usage: a missing argument is named on the line after
                // "the following required arguments were not provided:".
                let said = (rendered.lines())
                    .take_while(|l| !l.trim().is_empty())
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join(" ");
                // Without clap's `error: `, which stderr says (it was
                // said twice where no flag is at fault: an unknown command).
                let said = said.strip_prefix("error: ").unwrap_or(&said);
                // The flag or argument at fault is the error's `file`, as
                // the checks after parsing name it (`"file": "--sample"`).
                let err = match flag_of(&e) {
                    Some(flag) => {
                        anyhow::Error::from(worldline_case::error::InputError::new(flag, said))
                    }
                    None => anyhow::anyhow!("{said}"),
                };
                let _ = out!("{}", error_json(code, &err));
            }
            let _ = e.print();
            Err(code)
        }
    }
}

/// A refused value shown without what an address in it carries before
/// its host (`--model-set base_url=https://user:secret@host` is refused for
/// that, and clap quoted the value whole, secret and all, into logs).
fn without_credentials(e: &mut clap::Error) {
    use clap::error::{ContextKind, ContextValue};
    if let Some(ContextValue::String(value)) = e.get(ContextKind::InvalidValue)
        && let Some(hidden) = hide_userinfo(value)
    {
        e.insert(ContextKind::InvalidValue, ContextValue::String(hidden));
    }
}

/// `text` with the `user:password` of each `scheme://user:password@host`
/// in it shown as `***`, when it has any.
fn hide_userinfo(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut hid = false;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let authority = after.find(['/', '?', '#']).unwrap_or(after.len());
        match after[..authority].rfind('@') {
            Some(userinfo) => {
                out.push_str("***");
                rest = &after[userinfo..];
                hid = true;
            }
            None => rest = after,
        }
    }
    out.push_str(rest);
    hid.then_some(out)
}

/// The flag (`--at`) or argument (`<RUN>`) a parse error is about, as
/// clap names it without its value's name.
fn flag_of(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    match e.get(ContextKind::InvalidArg)? {
        ContextValue::String(arg) => arg.split_whitespace().next().map(String::from),
        ContextValue::Strings(args) => args.first()?.split_whitespace().next().map(String::from),
        _ => None,
    }
}

/// Run the command parsed.
fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Init(args) => init_cmd::exec(args),
        Command::Check(args) => check_cmd::exec(args),
        Command::Bench(args) => bench_cmd::exec(args),
        Command::Validate(args) => validate_cmd::exec(args),
        Command::Run(args) => run_cmd::exec(args),
        Command::Test(args) => test_cmd::exec(args),
        Command::Grade(args) => grade_cmd::exec(args),
        Command::Replay(args) => replay_cmd::exec_replay(args),
        Command::Verify(args) => replay_cmd::exec_verify(args),
        Command::Fuzz(args) => fuzz_cmd::exec(args),
        Command::Repro(args) => repro_cmd::exec(args),
        Command::Mcp(args) => mcp_cmd::exec(args),
        Command::Serve(args) => serve_cmd::exec(args),
        Command::Merge(args) => merge_cmd::exec(args),
        Command::Rerun(args) => rerun_cmd::exec(args),
        Command::Fork(args) => fork_cmd::exec(args),
        Command::Resume(args) => resume_cmd::exec(args),
        Command::History(args) => inspect_cmd::exec_history(args),
        Command::Show(args) => inspect_cmd::exec_show(args),
        Command::Diff(args) => inspect_cmd::exec_diff(args),
        Command::Runs(args) => runs_cmd::exec_runs(args),
        Command::Index(args) => runs_cmd::exec_index(args),
        Command::Gc(args) => gc_cmd::exec_gc(args),
        Command::Retention(args) => retention_cmd::exec(args),
        Command::Pin(args) => gc_cmd::exec_pin(args),
        Command::Unpin(args) => gc_cmd::exec_unpin(args),
        Command::Otel(args) => otel_cmd::exec(args),
        Command::Case(args) => case_cmd::exec(args),
        Command::Export(args) => export_cmd::exec_export(args),
        Command::Import(args) => export_cmd::exec_import(args),
        Command::Migrate(args) => migrate_cmd::exec(args),
        Command::Audit(args) => audit_cmd::exec(args),
        Command::Redaction(args) => redaction_cmd::exec(args),
        Command::BuildPython(args) => build_python_cmd::exec(args),
        Command::Ui(args) => ui_cmd::exec(args),
        Command::BuildJs(args) => build_js_cmd::exec(args),
    }
}

/// Run the CLI and return the process exit code.
pub fn main() -> i32 {
    warnings::to_stderr();
    // Known before parsing, so that even a usage error answers in JSON.
    // `--json=true`, which clap refuses, asks for it too (its error was
    // the one not in JSON).
    // Not past `--`: what follows is a native agent's own command line
    // (`--exec -- agent --json` answered worldline's errors in JSON).
    let json = std::env::args_os()
        .take_while(|a| a != "--")
        .any(|a| a == "--json" || a.to_string_lossy().starts_with("--json="));
    let cli = match parse(json) {
        Ok(cli) => cli,
        Err(code) => return code as i32,
    };
    let result = dispatch(cli.command);
    // Close the run index's kept writer, bringing its damage mark up to
    // date (decisions 0321, 0388: the close does not checkpoint the log).
    worldline_store::index::close_writers();
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            print_error(&err);
            let code = exit_code_of(&err);
            if json {
                let _ = out!("{}", error_json(code, &err));
            }
            code
        }
    };
    // A store this command made for nothing (its input refused first) is
    // not left behind to pass as an empty store.
    if code == ExitCode::Input {
        worldline_store::store::made::take_away_unused();
    }
    code as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ui --help` lists no `--json` (it listed it, and `ui --json` is
    /// refused: the UI serves pages); `run --help` does, and `ui --json`
    /// still parses, to be refused saying why.
    #[test]
    fn ui_s_help_lists_no_json() {
        let help = |name: &str| {
            let mut sub = Cli::command().find_subcommand(name).unwrap().clone();
            sub.build();
            sub.render_help().to_string()
        };
        assert!(!help("ui").contains("--json"), "{}", help("ui"));
        assert!(help("run").contains("--json"));
        let cli = Cli::command().try_get_matches_from(["worldline", "ui", "--json"]);
        assert!(cli.is_ok(), "{cli:?}");
    }

    /// `test --list` with `--junit` or `--events` is refused (it wrote
    /// neither, and said nothing).
    #[test]
    fn test_s_list_refuses_the_reports_it_would_not_write() {
        for flag in ["--junit", "--events"] {
            let parsed =
                Cli::command().try_get_matches_from(["worldline", "test", "--list", flag, "f"]);
            let e = parsed.err().map(|e| e.kind());
            assert_eq!(e, Some(clap::error::ErrorKind::ArgumentConflict), "{flag}");
        }
    }

    /// A subcommand's arguments are added when it is built (`defer`),
    /// after its own line of help: an `Args` struct with a doc comment,
    /// flattened or not, would replace that line with its own.
    #[test]
    fn each_subcommand_keeps_its_own_line_of_help_once_built() {
        let tree = Cli::command();
        for sub in tree.get_subcommands() {
            let about = sub.get_about().map(ToString::to_string);
            assert!(about.is_some(), "`{}` has no line of help", sub.get_name());
            let mut built = sub.clone();
            built.build();
            assert_eq!(
                built.get_about().map(ToString::to_string),
                about,
                "`{}`",
                sub.get_name()
            );
        }
    }
}
