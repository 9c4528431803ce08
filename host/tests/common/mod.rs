//! Helpers the end-to-end tests (and the sandbox benchmark) share: build a
//! test guest from source for `wasm32-wasip2`, run the real `worldline`
//! binary, and read what it left behind.
//!
//! Use from a test file with `mod common;`. Every test file uses only some
//! of the helpers, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod agree;
pub mod bench;
pub mod chat;
pub mod crm;
pub mod long;
pub mod native;
pub mod pg;
pub mod workers;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

/// The workspace root (the folder holding `host/`, `tests/`, `wit/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ has a parent folder")
        .to_path_buf()
}

/// `tests/` at the workspace root.
pub fn tests_dir() -> PathBuf {
    workspace_root().join("tests")
}

/// `tests/cases/<name>.toml`.
pub fn case(name: &str) -> PathBuf {
    tests_dir().join("cases").join(format!("{name}.toml"))
}

/// `tests/worlds`, for cases written outside the tree (pass as `--worlds`).
pub fn worlds_dir() -> PathBuf {
    tests_dir().join("worlds")
}

/// The target folder guests are built in: separate from the one the
/// running `cargo test` uses, so building never waits on its lock.
pub fn guest_target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("guests")
}

/// Build the workspace package `package` with
/// `cargo build --release --target wasm32-wasip2 -p <package>` and return
/// the path of the `.wasm` it produced. Each package is built at most once
/// per test process; tests asking for it meanwhile wait for that build.
pub fn guest(package: &str) -> PathBuf {
    static BUILDS: Mutex<BTreeMap<String, Arc<OnceLock<PathBuf>>>> = Mutex::new(BTreeMap::new());
    let cell = BUILDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(package.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| build_guest(package)).clone()
}

/// The guest named by environment variable `var` when it is set (a
/// prebuilt .wasm), else `package` built from source.
pub fn guest_or_env(var: &str, package: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_file(),
                "{var}={} is not a file; unset it to build {package} from source",
                p.display()
            );
            p
        }
        None => guest(package),
    }
}

fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Fail with what to do when the standard library for wasm32-wasip2 is not
/// installed.
fn require_wasm_target() {
    static CHECKED: OnceLock<()> = OnceLock::new();
    CHECKED.get_or_init(|| {
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let out = Command::new(&rustc)
            .args(["--print", "target-libdir", "--target", "wasm32-wasip2"])
            .current_dir(workspace_root())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {rustc:?}: {e}"));
        let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || libdir.is_empty() || !Path::new(&libdir).is_dir() {
            panic!(
                "the wasm32-wasip2 target is not installed, and the tests build their guests for it.\n\
                 Run `rustup target add wasm32-wasip2` and test again.\n\
                 (rustc said: {}{})",
                libdir,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
    });
}

fn build_guest(package: &str) -> PathBuf {
    require_wasm_target();
    let out = Command::new(cargo())
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "-p",
            package,
        ])
        .args(["--message-format", "json-render-diagnostics"])
        .env("CARGO_TARGET_DIR", guest_target_dir())
        // `tests/run` builds the harness with clippy's driver (its lints
        // ride on the build); a guest is built as its user builds it.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .current_dir(workspace_root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to build guest `{package}`: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if stderr.contains("wasm32-wasip2") && stderr.contains("not installed") {
            panic!(
                "the wasm32-wasip2 target is not installed; run `rustup target add wasm32-wasip2`\n{stderr}"
            );
        }
        panic!("building guest `{package}` failed:\n{stderr}");
    }
    // The requested package is the only artifact that is a .wasm file (its
    // dependencies are rlibs).
    let wasm: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .flat_map(|m| {
            m["filenames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|f| f.as_str().map(PathBuf::from))
        })
        .filter(|f| f.extension() == Some(OsStr::new("wasm")))
        .collect();
    match wasm.as_slice() {
        [one] => one.clone(),
        other => panic!(
            "building guest `{package}` produced {} .wasm files, expected one: {other:?}",
            other.len()
        ),
    }
}

/// What one `worldline` invocation did.
#[derive(Debug)]
pub struct CliOutput {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// stdout parsed as JSON, when it is one JSON document.
    pub json: Option<Value>,
}

impl CliOutput {
    /// The `--json` document (panics with the output when there is none).
    pub fn json(&self) -> &Value {
        self.json
            .as_ref()
            .unwrap_or_else(|| panic!("stdout is not one JSON document:\n{self}"))
    }

    /// Assert the exit code, showing everything the process said otherwise.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, code, "unexpected exit code:\n{self}");
        self
    }

    /// The run's output, parsed as JSON (panics with the output otherwise).
    pub fn output(&self) -> Value {
        serde_json::from_str(self.json()["output"].as_str().unwrap_or("null"))
            .unwrap_or_else(|e| panic!("output is not JSON ({e}):\n{self}"))
    }

    /// The bundle the run wrote, from the `--json` document.
    pub fn bundle(&self) -> PathBuf {
        PathBuf::from(
            self.json()["bundle"]
                .as_str()
                .unwrap_or_else(|| panic!("no bundle in the run summary:\n{self}")),
        )
    }
}

impl std::fmt::Display for CliOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit code {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl CliOutput {
    /// What a finished process said.
    pub fn of(out: std::process::Output) -> Self {
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        CliOutput {
            code: out.status.code().unwrap_or(-1),
            json: serde_json::from_str(&stdout).ok(),
            stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// The one way the tests start the `worldline` binary: a `Command` for it
/// that runs in `CARGO_TARGET_TMPDIR` (a command without `--store` leaves
/// its default `.worldline/` there, not in the source tree: pass absolute
/// paths) and keeps database stores' working folders, Python builds and
/// compiled agents in the tests' own caches ([`store_cache`],
/// [`build_cache`], [`compile_cache`]), never the user's. Callers add
/// arguments, environment, pipes and a folder of their own over these.
pub fn cli() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_worldline"));
    cmd.env("WORLDLINE_STORE_CACHE", store_cache())
        .env("WORLDLINE_BUILD_CACHE", build_cache())
        .env(OWN_COMPILE_CACHE.0, compile_cache())
        .current_dir(env!("CARGO_TARGET_TMPDIR"));
    cmd
}

/// Where the tests' stores keep compiled agents: one folder under the
/// target folder that every store shares (`WORLDLINE_COMPILE_CACHE`,
/// decision 0408), so that a Python or JavaScript component, or a world
/// service, is compiled once per target folder rather than once per test
/// store.
pub fn compile_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-cache")
}

/// The environment that gives a run its store's own compile cache
/// (`<store>/cache`) instead of [`compile_cache`]: for the tests of the
/// compile cache itself, of its notices and of `gc`, which look into the
/// store's folder or damage what is cached there.
pub const OWN_COMPILE_CACHE: (&str, &str) = ("WORLDLINE_COMPILE_CACHE", "");

/// [`worldline`], killed if it runs longer than `limit`: `None` then (a
/// hang). Its output is drained as it comes, so a chatty process cannot
/// block on a full pipe.
pub fn worldline_within<I, S>(
    limit: std::time::Duration,
    store: &Path,
    args: I,
) -> Option<CliOutput>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    child_within(limit, worldline_spawn(store, args))
}

/// The `worldline` binary with exactly `args` (no `--store` added: for
/// `--exec -- CMD`, whose last arguments are CMD's), killed if it runs
/// longer than `limit`, as [`worldline_within`].
pub fn worldline_raw_within<I, S>(limit: std::time::Duration, args: I) -> Option<CliOutput>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let child = cli()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cannot start the worldline binary");
    child_within(limit, child)
}

/// What `child` (its stdout and stderr piped) said, or `None` when it ran
/// longer than `limit` (it is killed then).
pub fn child_within(
    limit: std::time::Duration,
    mut child: std::process::Child,
) -> Option<CliOutput> {
    use std::io::Read as _;
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for worldline") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    Some(CliOutput::of(std::process::Output {
        status,
        stdout: stdout.join().expect("reading stdout"),
        stderr: stderr.join().expect("reading stderr"),
    }))
}

/// `command` (a [`cli`] one) started in a process group of its own and
/// sent `signal` once its stdout holds `said`: to its process group when
/// `group` (a terminal's Ctrl-C, its workers included), else to it alone
/// (a CI runner's). The signal that ended it, if one did, and what it said.
pub fn signalled_once_said(
    command: Command,
    said: &str,
    signal: libc::c_int,
    group: bool,
) -> (Option<i32>, CliOutput) {
    signalled_once(command, |_, out| out.contains(said), signal, group)
}

/// Whether process `pid` catches `signal` (its handler is set: the
/// command is ready for it).
pub fn catches(pid: u32, signal: libc::c_int) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    (status.lines())
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

/// [`signalled_once_said`], sent once `ready(pid, stdout so far)`.
pub fn signalled_once(
    mut command: Command,
    ready: impl Fn(u32, &str) -> bool,
    signal: libc::c_int,
    group: bool,
) -> (Option<i32>, CliOutput) {
    use std::io::Read as _;
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    use std::time::{Duration, Instant};
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("cannot start the worldline binary");
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        let got = Arc::new(Mutex::new(Vec::new()));
        let into = got.clone();
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                into.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        (got, reader)
    };
    let (stdout, out_reader) = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let (stderr, err_reader) = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let until = Instant::now() + Duration::from_secs(120);
    while !ready(
        child.id(),
        &String::from_utf8_lossy(&stdout.lock().unwrap()),
    ) {
        if Instant::now() > until || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "it was never ready for the signal: {}{}",
                String::from_utf8_lossy(&stdout.lock().unwrap()),
                String::from_utf8_lossy(&stderr.lock().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = child.id() as libc::pid_t;
    // SAFETY: a signal to the child this test started, or to the process
    // group it leads.
    unsafe {
        match group {
            true => libc::killpg(pid, signal),
            false => libc::kill(pid, signal),
        }
    };
    let until = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("it did not end within 120 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    out_reader.join().unwrap();
    err_reader.join().unwrap();
    let take = |got: Arc<Mutex<Vec<u8>>>| std::mem::take(&mut *got.lock().unwrap());
    let out = CliOutput::of(std::process::Output {
        status,
        stdout: take(stdout),
        stderr: take(stderr),
    });
    (status.signal(), out)
}

/// Run the `worldline` binary with `args` (nothing added), as [`cli`] starts it.
pub fn worldline_raw<I, S>(args: I) -> CliOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    worldline_env(args, &[])
}

/// [`worldline_raw`] with extra environment variables.
pub fn worldline_env<I, S>(args: I, env: &[(&str, &str)]) -> CliOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    worldline_at(Path::new(env!("CARGO_TARGET_TMPDIR")), args, env)
}

/// Run the `worldline` binary with `args` in the folder `dir` (where it
/// finds a project's `worldline.toml`), with extra environment variables.
pub fn worldline_at<I, S>(dir: &Path, args: I, env: &[(&str, &str)]) -> CliOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    CliOutput::of(
        cli()
            .args(args)
            .envs(env.iter().copied())
            .current_dir(dir)
            .output()
            .expect("cannot start the worldline binary"),
    )
}

/// Where `build-python` keeps its builds for the tests (never the user's
/// cache).
pub fn build_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("build-python-cache")
}

/// `worldline test CASES --agent AGENT --worlds tests/worlds` in `store`,
/// with `extra` arguments (`--jobs 2` unless they give `--jobs`).
pub fn test_suite(store: &Path, cases: &Path, agent: &Path, extra: &[&str]) -> CliOutput {
    test_suite_with(store, cases, agent, extra, &[])
}

/// [`test_suite`] with extra environment variables.
pub fn test_suite_with(
    store: &Path,
    cases: &Path,
    agent: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> CliOutput {
    let worlds = worlds_dir();
    let mut args: Vec<&OsStr> = vec![
        "test".as_ref(),
        cases.as_os_str(),
        "--agent".as_ref(),
        agent.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
    ];
    if !extra.contains(&"--jobs") {
        args.extend([OsStr::new("--jobs"), OsStr::new("2")]);
    }
    args.extend(extra.iter().map(OsStr::new));
    worldline_with(store, args, env)
}

/// `worldline replay RUN --json` on `store` exits 0 with verdict
/// `identical`.
#[track_caller]
pub fn replays_identical(store: &Path, run: &str) {
    let out = worldline(store, ["replay", run, "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["verdict"], "identical", "{out}");
}

/// Run the `worldline` binary with `args` and `--store <store>`.
pub fn worldline<I, S>(store: &Path, args: I) -> CliOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    worldline_with(store, args, &[])
}

/// [`worldline`] with extra environment variables.
pub fn worldline_with<I, S>(store: &Path, args: I, env: &[(&str, &str)]) -> CliOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut all: Vec<std::ffi::OsString> =
        args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    all.push("--store".into());
    all.push(store.into());
    worldline_env(all, env)
}

/// `worldline ARGS --store STORE` on another machine: with working
/// folders of its own, under `cache` (a database store's reader then has
/// only the database to read from).
pub fn on_machine(store: &Path, cache: &Path, args: &[&str]) -> CliOutput {
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.extend([OsStr::new("--store"), store.as_os_str()]);
    worldline_env(all, &[("WORLDLINE_STORE_CACHE", &cache.to_string_lossy())])
}

/// [`worldline`] with arguments of mixed types (`&"fork"`, a `String`
/// id, a `PathBuf`): `wl(store, &[&"fork", &id, &"--at", &"3"])`.
pub fn wl(store: &Path, args: &[&dyn AsRef<OsStr>]) -> CliOutput {
    worldline(store, args.iter().map(|a| a.as_ref()))
}

/// Start the `worldline` binary with `args` and `--store <store>` in the
/// background, its output piped; read it with [`CliOutput::of`] on
/// `wait_with_output`.
pub fn worldline_spawn<I, S>(store: &Path, args: I) -> std::process::Child
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    cli()
        .args(args)
        .arg("--store")
        .arg(store)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cannot start the worldline binary")
}

/// Reap `child` with `wait4` and return its CPU time (user + system),
/// read from its own resource usage (not `RUSAGE_CHILDREN`, which would
/// count the other tests' processes too); it counts the processes it
/// forked and reaped, a fork server's branches included. `what` names it
/// when it did not exit 0.
pub fn reaped_cpu(child: std::process::Child, what: &str) -> std::time::Duration {
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child by its pid; `status` and `usage`
    // outlive the call.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(
        pid,
        child.id() as i32,
        "wait4: {}",
        std::io::Error::last_os_error()
    );
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{what} ended {status}"
    );
    let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Where the `worldline` processes of the tests keep the working folders
/// of database stores (one per store address, so per test).
pub fn store_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("store-cache")
}

/// A demo-world case that passes (it only reads ticket T-1).
pub const DEMO_PASSES: &str = r#"world = "demo@v1"
seed = 3
clock = 2026-03-01T12:00:00Z
task = { calls = [{ tool = "get_ticket", args = { id = "T-1" } }] }
[[expect.state]]
table = "tickets"
key = "T-1"
field = "status"
equals = "open"
"#;

/// The kinds of store a parameterised test runs on.
#[derive(Clone, Copy, Debug)]
pub enum StoreKind {
    Folder,
    Postgres,
}

/// A fresh store of `kind`: the folder `dir/store`, or a fresh schema of
/// the test cluster (as a `--store` value).
pub fn fresh_store(kind: StoreKind, dir: &Path) -> PathBuf {
    match kind {
        StoreKind::Folder => dir.join("store"),
        StoreKind::Postgres => pg::cluster().fresh_store(),
    }
}

/// The folder of store `store`: itself, or a database store's working
/// folder (as `store/sync.rs` names it: by the hash of the address
/// without its password).
pub fn store_folder(store: &Path) -> PathBuf {
    let text = store.to_string_lossy();
    if !text.starts_with("postgres://") {
        return store.to_path_buf();
    }
    let shown = text.replace(&format!(":{}@", pg::PASSWORD), "@");
    let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(shown.as_bytes()));
    store_cache().join(format!("pg-{}", &hash[..16]))
}

/// `#[test]`s `NAME::folder` and `NAME::postgres`, each calling the
/// function `NAME(kind)` on a store of that kind: one suite, two stores.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn folder() {
                super::$name(super::common::StoreKind::Folder)
            }
            #[test]
            fn postgres() {
                super::$name(super::common::StoreKind::Postgres)
            }
        }
    )*};
}

/// A fresh, empty temporary folder (removed when dropped).
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("worldline-test-")
        .tempdir()
        .expect("creating a temporary folder")
}

/// Folders this test process removes as it exits.
static REMOVED_AT_EXIT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A fresh temporary folder for the rest of the test process, removed as
/// it exits: a static holding a `TempDir` is never dropped, and would
/// leave its folder (hundreds of MB of compiled guests) behind.
pub fn process_temp_dir() -> PathBuf {
    static HOOK: std::sync::Once = std::sync::Once::new();
    extern "C" fn remove_all() {
        let folders = REMOVED_AT_EXIT.lock().unwrap_or_else(|e| e.into_inner());
        for folder in folders.iter() {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
    // SAFETY: `remove_all` is a plain function that only removes folders.
    HOOK.call_once(|| unsafe {
        libc::atexit(remove_all);
    });
    let path = temp_dir().keep();
    (REMOVED_AT_EXIT.lock().unwrap_or_else(|e| e.into_inner())).push(path.clone());
    path
}

/// A store shared by the tests of one test process. Sharing it shares the
/// compile cache, so each guest is compiled once per process rather than
/// once per test; every run still gets its own bundle.
pub fn shared_store() -> &'static Path {
    static STORE: OnceLock<PathBuf> = OnceLock::new();
    STORE.get_or_init(process_temp_dir)
}

/// `worldline run <case> --agent <agent> --json` in `store`.
pub fn run_json(store: &Path, case: &Path, agent: &Path) -> CliOutput {
    run_json_with(store, case, agent, &[])
}

/// [`run_json`] with extra environment variables.
pub fn run_json_with(store: &Path, case: &Path, agent: &Path, env: &[(&str, &str)]) -> CliOutput {
    worldline_with(
        store,
        [
            OsStr::new("run"),
            case.as_os_str(),
            OsStr::new("--agent"),
            agent.as_os_str(),
            OsStr::new("--json"),
        ],
        env,
    )
}

/// The run `tests/bundles/FOLDER/FILE` (an export) imported into `store`
/// and replayed `identical`: its run id.
pub fn imported_fixture(store: &Path, folder: &str, file: &str) -> String {
    let fixture = workspace_root()
        .join("tests/bundles")
        .join(folder)
        .join(file);
    let imported = wl(store, &[&"import", &fixture, &"--json"]);
    imported.expect_code(0);
    let run = imported.json()["run_id"].as_str().unwrap().to_string();
    replays_identical(store, &run);
    run
}

/// `worldline run CASE --agent A --worlds W --json` on `store`.
pub fn run_in(store: &Path, case: &Path, agent: &Path, worlds: &Path) -> CliOutput {
    worldline(
        store,
        [
            OsStr::new("run"),
            case.as_os_str(),
            OsStr::new("--agent"),
            agent.as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
            OsStr::new("--json"),
        ],
    )
}

/// A bundle's lines, parsed: header, events, and footer (if written).
#[derive(Debug)]
pub struct BundleLines {
    pub header: Value,
    pub events: Vec<Value>,
    pub footer: Option<Value>,
}

/// The events of `bundle` that are calls of `call`, in order.
pub fn calls_of(bundle: &Path, call: &str) -> Vec<Value> {
    read_bundle(bundle)
        .events
        .into_iter()
        .filter(|e| e["call"] == call)
        .collect()
}

/// The bundle of run `id` in the folder store `store`.
pub fn bundle_in(store: &Path, id: &str) -> PathBuf {
    store.join("runs").join(format!("{id}.jsonl"))
}

/// A bundle's `text` with its header's JSON edited by `header` and its
/// footer by `footer`, the footer sealed again for the header as a forger
/// would (`bundle::seal`, decision 0414): none of the bundle's own hashes
/// tells the result from a run.
pub fn resealed(
    text: &str,
    header: impl FnOnce(&mut Value),
    footer: impl FnOnce(&mut worldline_log::log::bundle::Footer),
) -> String {
    use worldline_log::log::bundle::{self, Footer};
    let (first, rest) = text.split_once('\n').unwrap();
    let mut first: Value = serde_json::from_str(first).unwrap();
    header(&mut first["header"]);
    let h: worldline_log::log::Header = serde_json::from_value(first["header"].take()).unwrap();
    let body = rest.strip_suffix('\n').unwrap();
    // The events' lines (none for a run that made no call), then the footer.
    let (events, last) = match body.rsplit_once('\n') {
        Some((events, last)) => (format!("{events}\n"), last),
        None => (String::new(), body),
    };
    let mut last: Value = serde_json::from_str(last).unwrap();
    let mut f: Footer = serde_json::from_value(last["footer"].take()).unwrap();
    footer(&mut f);
    bundle::seal(&mut f, &h);
    format!(
        "{}{events}{}",
        bundle::header_line(&h),
        bundle::footer_line(&f)
    )
}

/// `bundle` written to `to` with its footer's grade edited by `edit`,
/// [`resealed`].
pub fn forge_grade(bundle: &Path, to: &Path, edit: impl FnOnce(&mut Value)) {
    let text = std::fs::read_to_string(bundle).unwrap();
    let forged = resealed(
        &text,
        |_| {},
        |f| edit(f.grade.as_mut().expect("a graded run")),
    );
    std::fs::write(to, forged).unwrap();
}

/// `bundle` written to `to` with its header's `rules` set to `rules`,
/// [`resealed`]: the run as a release of those rules recorded it, so a
/// fork of it runs under them and `grade` grades it by them.
pub fn under_rules(bundle: &Path, rules: u32, to: &Path) {
    let text = std::fs::read_to_string(bundle).unwrap();
    std::fs::write(to, resealed(&text, |h| h["rules"] = rules.into(), |_| {})).unwrap();
}

/// Read a bundle file line by line (no chain check; the library does that).
pub fn read_bundle(path: &Path) -> BundleLines {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read bundle {}: {e}", path.display()));
    let mut lines = text.lines().map(|l| {
        serde_json::from_str::<Value>(l)
            .unwrap_or_else(|e| panic!("{}: a line is not JSON ({e}): {l}", path.display()))
    });
    let header = lines.next().expect("bundle has a header line");
    assert!(
        header.get("header").is_some(),
        "first line is not a header: {header}"
    );
    let mut events = Vec::new();
    let mut footer = None;
    for line in lines {
        assert!(
            footer.is_none(),
            "{}: a line after the footer",
            path.display()
        );
        match line.get("footer") {
            Some(f) => footer = Some(f.clone()),
            // A call's intent, written before it is answered: not an event.
            None if line.get("intent").is_some() => {}
            None if line.get("fold").is_some() => {
                for mut e in unfolded_clock_reads(&line) {
                    let prev = events.last().map_or("0".repeat(64), |p: &Value| {
                        p["hash"].as_str().unwrap().to_string()
                    });
                    let hash = worldline_case::canon::sha256_hex(format!(
                        "{prev}\n{}",
                        worldline_case::canon::to_string(&e)
                    ));
                    e["hash"] = hash.into();
                    events.push(e);
                }
                let last = &events.last().unwrap()["hash"];
                assert_eq!(
                    *last,
                    line["fold"]["hash"],
                    "{}: a fold's chain",
                    path.display()
                );
            }
            None => {
                let whole = whole_model_request(line, &events);
                events.push(whole);
            }
        }
    }
    BundleLines {
        header: header["header"].clone(),
        events,
        footer,
    }
}

/// A compact model call (`extends`, docs/formats.md) with its whole
/// request put back from the event it extends, read independently of the
/// library's reader; any other line as it is.
fn whole_model_request(mut line: Value, earlier: &[Value]) -> Value {
    let Some(extends) = line.as_object_mut().unwrap().remove("extends") else {
        return line;
    };
    let base = &earlier[extends["event"].as_u64().unwrap() as usize]["request"]["request"];
    let keep = extends["messages"].as_u64().unwrap() as usize;
    let chat = &mut line["request"]["request"];
    let mut messages = base["messages"].as_array().unwrap()[..keep].to_vec();
    messages.extend(chat["messages"].as_array().unwrap().iter().cloned());
    chat["messages"] = Value::Array(messages);
    for key in extends["same"].as_array().into_iter().flatten() {
        let key = key.as_str().unwrap();
        chat[key] = base[key].clone();
    }
    line
}

/// A line of folded clock reads (`fold`, docs/formats.md) as one event
/// per read without its hash (the caller chains them), read independently
/// of the library's reader.
fn unfolded_clock_reads(line: &Value) -> Vec<Value> {
    let f = &line["fold"];
    let call = f["call"].as_str().unwrap();
    let count = f["count"].as_u64().unwrap();
    let (seq, vtime, tick) = (
        f["seq"].as_u64().unwrap(),
        f["vtime_ns"].as_u64().unwrap(),
        f["tick_ns"].as_u64().unwrap(),
    );
    let steps = f["fuel"].as_array().unwrap();
    assert_eq!(steps.len() as u64, count, "a fold's fuel per read: {line}");
    let mut fuel = 0;
    (0..count)
        .map(|i| {
            fuel += steps[i as usize].as_u64().unwrap();
            let t = vtime + i * tick;
            let response = match f.get("wall_offset_ns").and_then(Value::as_i64) {
                None => serde_json::json!(t),
                Some(offset) => {
                    let ns = t as i128 + offset as i128;
                    serde_json::json!({"seconds": (ns / 1_000_000_000) as u64, "nanoseconds": (ns % 1_000_000_000) as u32})
                }
            };
            serde_json::json!({"call": call, "effect": "read", "fuel": fuel,
                "request": {}, "response": response, "seq": seq + i, "vtime_ns": t})
        })
        .collect()
}

/// Every file under `dir` (recursively) whose name ends with `suffix`,
/// leaving out build outputs and installed packages (`target`,
/// `node_modules`, `.venv`, `__pycache__` folders).
pub fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let name = entry.file_name();
            if !matches!(
                name.to_str(),
                Some("target" | "node_modules" | ".venv" | "__pycache__")
            ) {
                found.extend(files_with_suffix(&path, suffix));
            }
        } else if path.to_string_lossy().ends_with(suffix) {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// A file's modification time.
pub fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("cannot stat {}: {e}", path.display()))
}

/// A world `crm` of customers (`data/customers.jsonl`, keyed by `id`)
/// with a `get_customer` tool: the redaction tests' data.
pub const CRM_WORLD: &str = r#"name = "crm"
version = 1
description = "Customers with personal data"

[tables.customers]
key = "id"
rows = "data/customers.jsonl"

[permissions]
default = "allow"

[[tools]]
name = "get_customer"
description = "Fetch one customer by id"
params = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
op = "get"
table = "customers"
"#;

/// Write world `name` version 1 under `<root>/worlds/` (its `world.toml`
/// and `files`, paths relative to its folder) and return `<root>/worlds`.
pub fn write_world(root: &Path, name: &str, toml: &str, files: &[(&str, &str)]) -> PathBuf {
    let world = root.join("worlds").join(name).join("v1");
    for (path, text) in std::iter::once(&("world.toml", toml)).chain(files) {
        let path = world.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
    root.join("worlds")
}

/// Write a case file into `dir` from `text` and return its path.
pub fn write_case(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// Build the Python agent at `agent_py` (relative to the workspace root)
/// with `worldline build-python`, at most once per test process, and return
/// the `.wasm`. Fails, saying how to install it, when componentize-py is
/// missing: the Python tests never pass without running.
pub fn python_guest(agent_py: &str) -> PathBuf {
    built_once(agent_py, || build_python(agent_py, false))
}

/// Build the Python world service at `source` (relative to the workspace
/// root) with `worldline build-python --service`, at most once per test
/// process, and return the `.wasm`.
pub fn python_service(source: &str) -> PathBuf {
    built_once(&format!("{source} --service"), || {
        build_python(source, true)
    })
}

/// `build()`, at most once per test process and `key`; tests asking for
/// it meanwhile wait for that build.
fn built_once(key: &str, build: impl FnOnce() -> PathBuf) -> PathBuf {
    static BUILDS: Mutex<BTreeMap<String, Arc<OnceLock<PathBuf>>>> = Mutex::new(BTreeMap::new());
    let cell = BUILDS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key.to_string())
        .or_default()
        .clone();
    cell.get_or_init(build).clone()
}

/// `worldline build-python` of `source`: an agent, or with `service` a
/// world service (`--service`).
fn build_python(source: &str, service: bool) -> PathBuf {
    let what = if service { "service" } else { "agent" };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-guests");
    std::fs::create_dir_all(&dir).expect("creating the Python guest folder");
    let wasm = dir.join(format!("{}.wasm", source.replace(['/', '.'], "-")));
    let mut args = vec![OsStr::new("build-python")];
    if service {
        args.push(OsStr::new("--service"));
    }
    let path = workspace_root().join(source);
    args.extend([path.as_os_str(), OsStr::new("-o"), wasm.as_os_str()]);
    let out = worldline_raw(args);
    if out.code != 0 {
        if out.stderr.contains("pip install componentize-py") {
            panic!(
                "componentize-py is not installed, and the Python tests build real Python {what}s with it.\n\
                 Run `pip install componentize-py==0.25.1` (Python 3.9 or later; tested with 3.11) and test again.\n{out}"
            );
        }
        panic!("building the Python {what} {source} failed:\n{out}");
    }
    wasm
}

/// Build the JavaScript or TypeScript agent at `agent` (relative to the
/// workspace root) with `worldline build-js`, at most once per test
/// process, and return the `.wasm`. Fails, saying how to install them, when
/// Node.js or the pinned npm packages are missing: the JS tests never pass
/// without running.
pub fn js_guest(agent: &str) -> PathBuf {
    built_once(agent, || build_js_guest(agent))
}

fn build_js_guest(agent: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("js-guests");
    std::fs::create_dir_all(&dir).expect("creating the JS guest folder");
    let wasm = dir.join(format!("{}.wasm", agent.replace(['/', '.'], "-")));
    let root = workspace_root().join(agent);
    let out = worldline_raw([
        OsStr::new("build-js"),
        root.as_os_str(),
        OsStr::new("-o"),
        wasm.as_os_str(),
    ]);
    if out.code != 0 {
        if out.stderr.contains("npm install") || out.stderr.contains("Node.js") {
            panic!(
                "Node.js or the pinned npm packages are missing, and the JS tests build real JavaScript agents with them.\n\
                 Run the install command below (tests/run does) and test again.\n{out}"
            );
        }
        panic!("building the JS agent {agent} failed:\n{out}");
    }
    wasm
}

/// `worldline ARGS` (a build) stopped by Ctrl-C: started in a process
/// group of its own with its temporary folders in `tmp`, SIGINT sent to
/// the group once a process of it has an argument `helper` accepts (the
/// build's helper at work); then checks that worldline ended by the
/// signal, the helper with it, and nothing is left in `tmp`.
pub fn stopped_build(args: &[&OsStr], tmp: &Path, helper: fn(&[u8]) -> bool) {
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    std::fs::create_dir_all(tmp).unwrap();
    let mut build = cli()
        .args(args)
        .env("TMPDIR", tmp)
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pgid = build.id() as i32;
    let helpers = || -> Vec<u32> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            // SAFETY: getpgid(2) of a pid read from /proc.
            let group = unsafe { libc::getpgid(pid as i32) };
            if group == pgid && cmd.split(|&b| b == 0).any(helper) {
                found.push(pid);
            }
        }
        found
    };
    let t0 = std::time::Instant::now();
    while helpers().is_empty() {
        assert!(
            t0.elapsed().as_secs() < 120,
            "the build's helper never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill(2) of the process group this test started.
    unsafe { libc::kill(-pgid, libc::SIGINT) };
    let status = build.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}");
    let t0 = std::time::Instant::now();
    while !helpers().is_empty() {
        assert!(t0.elapsed().as_secs() < 10, "the build's helper ran on");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The replay-and-fork scenario every agent language must pass: run the
/// careful example `agent` on `cases/incident/baseline.toml`, replay it
/// (identical), fork it where it closes the ticket with `close_ticket`
/// denied from there on (the fork keeps the parent's prefix, completes with
/// the ticket open, and replays identical too).
pub fn replays_and_forks_at_the_close(store: &Path, agent: &Path) {
    const TOOL_CALL: &str = "worldline:agent/tools.call";
    let wl = |args: &[&str]| worldline(store, args.iter().map(OsStr::new));
    let baseline = workspace_root().join("cases/incident/baseline.toml");
    let run = run_json(store, &baseline, agent);
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();

    let replay = wl(&["replay", &id, "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");

    let events = read_bundle(&run.bundle()).events;
    let at = events
        .iter()
        .position(|e| e["call"] == TOOL_CALL && e["request"]["name"] == "close_ticket")
        .expect("the run closes the ticket");
    let fork = wl(&[
        "fork",
        &id,
        "--at",
        &at.to_string(),
        "--deny",
        "close_ticket",
        "--json",
    ]);
    fork.expect_code(1); // the case expects the ticket closed
    let doc = fork.json();
    assert_eq!(doc["run_status"], "completed", "{fork}");
    let output: Value = serde_json::from_str(doc["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["ticket_status"], "open", "{fork}");
    let forked = read_bundle(&fork.bundle());
    assert_eq!(
        forked.events[..at],
        events[..at],
        "the prefix is the parent's"
    );
    assert_eq!(forked.events[at]["effect"], "denied");

    let fork_id = doc["run_id"].as_str().unwrap();
    let again = wl(&["replay", fork_id, "--json"]);
    again.expect_code(0);
    assert_eq!(again.json()["verdict"], "identical", "{again}");
}

/// The naive agent on the quiet-day incident where every call meets a
/// fault but only one of them can make it fail: the deploy list stale by
/// more than 15 minutes (it then hides D-42). The rest (latencies, clock
/// skew) change nothing the naive agent looks at.
pub const ONE_FAULT_MATTERS: &str = r#"
world = "incident@v4"
seed = 9
clock = 2026-03-01T12:05:00Z
task = { alert = "ALERT-7", ticket = "T-100" }

[fuzz]
clock_skew_s = [-600, 600]

[[fuzz.tools]]
tool = "list_deploys"
stale = { p = 1.0, age_s = [1000, 3000], field = "at" }
latency_ms = { p = 1.0, ms = [100, 9000] }

[[fuzz.tools]]
tool = "*"
latency_ms = { p = 1.0, ms = [100, 9000] }

[[expect.state]]
table = "deploys"
key = "D-42"
field = "status"
equals = "rolled_back"
"#;

/// A `test --json` document without what differs between invocations:
/// timings, what this machine compiled first, run ids and bundle paths.
pub fn suite_without_run_specifics(mut doc: Value) -> Value {
    doc["elapsed_ms"] = Value::Null;
    doc.as_object_mut().unwrap().remove("compiles");
    for c in doc["cases"].as_array_mut().unwrap() {
        for f in ["elapsed_ms", "run_id", "run_ids", "bundle"] {
            c[f] = Value::Null;
        }
    }
    doc
}

/// Copy a world folder (`from`, holding `world.toml`) to
/// `<root>/worlds/<name>/v1/` with `service` as its `service.wasm`.
pub fn world_with_service(root: &Path, from: &Path, name: &str, service: &Path) -> PathBuf {
    let dest = root.join("worlds").join(name).join("v1");
    copy_dir(from, &dest);
    std::fs::copy(service, dest.join("service.wasm")).unwrap();
    root.join("worlds")
}

/// Copy a folder recursively, leaving out any `service.wasm`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else if e.file_name() != "service.wasm" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// [`counters`] with fuel enough that the service's `spin` runs until
/// the watchdog stops it (`[limits] timeout_ms` of the case).
pub fn counters_until_the_watchdog(root: &Path) -> PathBuf {
    let worlds = counters(root);
    let world = worlds.join("counters/v1/world.toml");
    let text = std::fs::read_to_string(&world).unwrap();
    let more = text.replace("fuel = 50_000_000", "fuel = 100_000_000_000");
    assert_ne!(more, text, "the counters world's fuel");
    std::fs::write(&world, more).unwrap();
    worlds
}

/// `<root>/worlds/counters/v1` (tests/worlds/counters) with the
/// counter-service guest as its service; returns `<root>/worlds`.
pub fn counters(root: &Path) -> PathBuf {
    world_with_service(
        root,
        &workspace_root().join("tests/worlds/counters/v1"),
        "counters",
        &guest("counter-service"),
    )
}

/// A case on the counters world that makes `calls` (the caller agent's task).
pub fn counters_case(root: &Path, calls: Value, extra: &str) -> PathBuf {
    let path = root.join("case.toml");
    let task = format!("task = {}", toml_inline(&json!({"calls": calls})));
    std::fs::write(
        &path,
        format!("world = \"counters@v1\"\nseed = 7\nclock = 2026-03-02T12:00:00Z\n{task}\n{extra}"),
    )
    .unwrap();
    path
}

/// A JSON value as a TOML inline value (for tasks and arguments in cases
/// written by tests).
pub fn toml_inline(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let fields: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k} = {}", toml_inline(v)))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(toml_inline).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// Write a world `w@v1` under `root/worlds` with the given world.toml and
/// files; the `worlds` folder.
pub fn make_world(root: &Path, toml_text: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = root.join("worlds/w/v1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("world.toml"), toml_text).unwrap();
    for (rel, text) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    root.join("worlds")
}

/// Write `case_text` as `root/case.toml` and run it, expecting an input
/// error of one line before any agent is needed (exit 2).
pub fn load_error(root: &Path, case_text: &str) -> CliOutput {
    let case = write_case(root, "case", case_text);
    let agent = root.join("missing.wasm");
    let out = worldline(
        root,
        [
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
        ],
    );
    out.expect_code(2);
    assert_eq!(out.stderr.lines().count(), 1, "one line of cause: {out}");
    out
}

/// Set a file's (or a folder's and its files') access and modification
/// times back by `by`.
pub fn age(path: &Path, by: std::time::Duration) {
    let t = SystemTime::now() - by;
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            age(&e.unwrap().path(), by);
        }
    }
    let f = std::fs::File::open(path).unwrap();
    f.set_times(std::fs::FileTimes::new().set_accessed(t).set_modified(t))
        .unwrap();
}

/// The hostile test agent (`tests/guests/hostile-agent`).
pub fn hostile() -> PathBuf {
    guest("hostile-agent")
}

/// Run the binary, failing if it takes longer than `limit` (a hang).
pub fn within(limit: std::time::Duration, store: &Path, args: &[&OsStr]) -> CliOutput {
    worldline_within(limit, store, args)
        .unwrap_or_else(|| panic!("worldline {args:?} still ran after {limit:?} (a hang)"))
}

/// `run CASE --agent AGENT --worlds tests/worlds --json` in the shared store.
pub fn run_in_demo(case: &Path, agent: &Path) -> CliOutput {
    worldline(
        shared_store(),
        [
            os("run"),
            case.as_os_str(),
            os("--agent"),
            agent.as_os_str(),
            os("--worlds"),
            worlds_dir().as_os_str(),
            os("--json"),
        ],
    )
}

/// A `&str` as an `OsStr`, for argument lists of mixed types.
pub fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// The Python interpreter of the virtual environment holding the pinned
/// `mcp` and `openai` packages native agents are tested with
/// (`WORLDLINE_NATIVE_PYTHON`, which tests/run sets, else
/// `target/native-python`). Fails, saying how to install it, when it is
/// missing: the native tests never pass without running.
pub fn native_python() -> PathBuf {
    let python = std::env::var_os("WORLDLINE_NATIVE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/native-python/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: the native-agent tests drive real Python clients.\n\
         Run `. tests/native-python.sh && ensure_native_python target` (tests/run does) and test again.",
        python.display()
    );
    python
}

/// Long enough for any refusal, far shorter than a hang.
pub const PROMPT: std::time::Duration = std::time::Duration::from_secs(30);

/// A FIFO made at `path` (by `mkfifo`); its path.
pub fn mkfifo(path: &Path) -> PathBuf {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
    path.to_path_buf()
}

/// `worldline ARGS --store STORE` within [`PROMPT`], or a panic naming the
/// hang.
#[track_caller]
pub fn prompt(store: &Path, args: &[&str]) -> CliOutput {
    worldline_within(PROMPT, store, args).unwrap_or_else(|| {
        panic!(
            "`worldline {}` hung (killed after {PROMPT:?})",
            args.join(" ")
        )
    })
}

/// A passing demo case with `seed`.
pub fn passing_demo_case(seed: u32) -> String {
    format!(
        r#"world = "demo@v1"
seed = {seed}
clock = 2026-03-01T12:00:00Z
task = {{ calls = [{{ tool = "get_ticket", args = {{ id = "T-1" }} }}] }}
[[expect.state]]
table = "tickets"
key = "T-1"
field = "status"
equals = "open"
"#
    )
}

/// Send `signal` to `child` once `ready` holds (polled every 20 ms), then
/// its exit status once it ends; past 90 s from the call, for either, the
/// child is killed and the test fails naming `what`.
pub fn signal_when(
    child: &mut std::process::Child,
    signal: libc::c_int,
    ready: impl Fn() -> bool,
    what: &str,
) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    let within = || start.elapsed() < std::time::Duration::from_secs(90);
    while !ready() {
        if !within() {
            let _ = child.kill();
            panic!("{what}: never ready to be signalled");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling a child the test started.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if !within() {
            let _ = child.kill();
            panic!("{what}: did not end after the signal");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
