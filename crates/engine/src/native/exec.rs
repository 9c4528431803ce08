//! `--exec -- CMD ARGS...`: one run of a native process. A loopback server
//! for the run (model APIs and MCP, [`super::loopback`]) is started, then
//! CMD in a process group of its own, under a keeper that ends everything
//! it starts with the run ([`super::tree`]), in a fresh working directory, with a
//! scrubbed environment ([`PASSED`] and what `--pass-env` names, plus the
//! run's [`variables`]), the task as JSON on stdin and in
//! `WORLDLINE_TASK` (over 128 KiB, in the file `WORLDLINE_TASK_FILE`
//! names); the case's `[env] vars` and the telemetry switches
//! of [`super::environment`] too. Its stdout and stderr are captured under the case's
//! `stdout_bytes`; its output is the last JSON line of stdout (or a
//! declared file). The case's `timeout_ms` (wall clock) kills the process
//! and everything it started, as does a stop by the mediator; whatever is
//! left is killed when the run ends, and the run reads its pipes only to
//! what they hold then. With `--isolate-net` the process runs in
//! a network namespace of its own, where only the run's server is
//! reachable ([`super::netns`]).

use super::capture::{self, Captured};
use super::loopback::{self, Loopback};
use super::session::{self, Exit, Handle};
use super::signals;
use crate::run::{RunOptions, RunOutcome};
use anyhow::{Context, Result};
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use worldline_case::bounded;
use worldline_case::case::Case;
use worldline_log::log::Status;
use worldline_log::log::bundle::NativeAgent;
use worldline_runtime::mediate::stdio::with_tail;
use worldline_runtime::sandbox::Sandbox;

pub use super::environment::PASSED;

/// How often the run looks at the process, the clock and the signal flag.
const POLL: Duration = Duration::from_millis(2);

/// How long the keeper gets to report the agent's end once the tree was
/// killed (the time limit, a signal) before the run ends without it.
const KEEPER_REPORTS_WITHIN: Duration = Duration::from_secs(2);

/// The process to run and how.
#[derive(Debug, Clone, Default)]
pub struct Exec {
    /// CMD and its arguments.
    pub command: Vec<String>,
    /// Further variables to pass through from worldline's environment.
    pub pass_env: Vec<String>,
    /// Read the output from this file (relative to the working directory)
    /// instead of the last JSON line of stdout.
    pub output_file: Option<PathBuf>,
    /// Run the process in a network namespace of its own ([`super::netns`]).
    pub isolate_net: bool,
    /// What gave the command, which an error starting it names: `--exec`,
    /// the case or project file whose `exec` it is, a run's bundle (a
    /// project's `exec` that could not start was blamed on `--exec`, a
    /// flag no one gave).
    pub given_by: PathBuf,
    /// The line of `exec` in `given_by` (0: none, as for `--exec`).
    pub given_at: usize,
}

impl Exec {
    /// Why the command cannot start, at what gave it (its `exec` line).
    fn refusal(&self, problem: impl Into<String>) -> worldline_case::error::InputError {
        worldline_case::error::InputError::new(&self.given_by, problem).with_line(self.given_at)
    }

    /// How the run's header records this process.
    pub fn agent(&self) -> NativeAgent {
        NativeAgent {
            transport: "exec".into(),
            command: self.command.clone(),
            pass_env: self.pass_env.clone(),
            output_file: self.output_file.clone(),
            network: Some(
                if self.isolate_net {
                    "isolated"
                } else {
                    "proxy"
                }
                .into(),
            ),
        }
    }

    /// The process a native run recorded; a run that has none (a served
    /// episode, an MCP session) is an error naming its `bundle` and what
    /// there is no process `to` do.
    pub fn recorded(
        agent: &NativeAgent,
        bundle: &Path,
        to: &str,
    ) -> Result<Self, worldline_case::error::InputError> {
        if agent.transport != "exec" {
            let kind = super::rederive::session_kind(agent);
            return Err(worldline_case::error::InputError::new(
                bundle,
                format!("was {kind}: there is no process to {to}"),
            ));
        }
        Ok(Exec {
            command: agent.command.clone(),
            pass_env: agent.pass_env.clone(),
            output_file: agent.output_file.clone(),
            isolate_net: agent.network.as_deref() == Some("isolated"),
            given_by: bundle.to_path_buf(),
            given_at: 0,
        })
    }
}

/// The longest task `WORLDLINE_TASK` holds: Linux caps one variable (its
/// name, `=` and value) at 128 KiB (`MAX_ARG_STRLEN`), past which the
/// process did not start ("Argument list too long", naming the program).
/// A longer task is in the file `WORLDLINE_TASK_FILE` names, in the run's
/// working folder (and on stdin, as every task is).
const TASK_IN_VARIABLE: usize = 128 * 1024 - "WORLDLINE_TASK=".len() - 1;

/// The variables a run's process gets besides the passed-through ones;
/// `task` the task's variable and its value.
fn variables(port: u16, token: &str, task: (&str, String), home: &Path) -> Vec<(String, String)> {
    let base = format!("http://127.0.0.1:{port}");
    let proxy = format!("http://worldline:{token}@127.0.0.1:{port}");
    [
        ("OPENAI_BASE_URL", format!("{base}/v1")),
        ("OPENAI_API_KEY", token.to_string()),
        ("ANTHROPIC_BASE_URL", base.clone()),
        ("ANTHROPIC_API_KEY", token.to_string()),
        ("WORLDLINE_MCP_URL", format!("{base}/k/{token}/mcp")),
        task,
        ("HOME", home.display().to_string()),
        ("PYTHONHASHSEED", "0".to_string()),
        ("NO_PROXY", "127.0.0.1,localhost".to_string()),
        ("no_proxy", "127.0.0.1,localhost".to_string()),
        ("HTTP_PROXY", proxy.clone()),
        ("HTTPS_PROXY", proxy.clone()),
        ("ALL_PROXY", proxy.clone()),
        ("http_proxy", proxy.clone()),
        ("https_proxy", proxy.clone()),
        ("all_proxy", proxy),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Run `exec` on `case` and return the run.
pub fn run(sandbox: &Sandbox, case: &Case, opts: RunOptions, exec: &Exec) -> Result<RunOutcome> {
    if let Some(problem) = exec.output_file.as_deref().and_then(output_file_problem) {
        return Err(worldline_case::error::InputError::new("--output-file", problem).into());
    }
    if exec.isolate_net {
        // Tried on a thread that then ends, so a machine that cannot is an
        // input error before the run (and its bundle) begins.
        std::thread::spawn(super::netns::isolate_this_thread)
            .join()
            .map_err(|_| anyhow::anyhow!("the namespace check panicked"))?
            .map_err(|m| worldline_case::error::InputError::new("--isolate-net", m))?;
    }
    // A command that cannot start is refused before its run begins, so
    // that nothing is recorded for it (a `completed` run was).
    if let Some(problem) = exec
        .command
        .first()
        .and_then(|p| worldline_case::native_agent::unstartable(p))
    {
        return Err(exec.refusal(problem).into());
    }
    super::load_service(sandbox, case)?;
    let mut header = super::header(sandbox, case, exec.agent());
    header.env = super::environment::record(&exec.pass_env, case);
    let (handle, receiver) = session::channel();
    let _running = signals::Running::start();
    if signals::received() {
        // Stopped before it began: nothing is recorded, and the signal
        // ends the process once the runs under way are done.
        return Err(anyhow::anyhow!("interrupted before the run began"));
    }
    // This thread waits on the process (its own CPU is the system's to
    // share out) while the mediator answers it: without this thread's CPU
    // slot, so `test --jobs` above the cores runs that many agents at once
    // (two ran at a time on two cores, each waiting on a model endpoint).
    worldline_case::parallel::waiting(|| {
        std::thread::scope(|s| {
            let mediator = s.spawn(|| session::mediate(sandbox, case, header, opts, receiver));
            let exit = serve_and_run(&handle, case, exec);
            let exit = match exit {
                Ok(exit) => exit,
                Err(e) => {
                    handle.end(Exit::disconnected());
                    let _ = mediator.join();
                    return Err(e);
                }
            };
            handle.end(exit);
            mediator
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the mediator thread panicked")))
        })
    })
}

/// Start the loopback server, run the process under it, and say how it
/// ended. The socket is bound, and the process started, on a thread of
/// their own, which `--isolate-net` first moves into a network namespace.
fn serve_and_run(handle: &Handle, case: &Case, exec: &Exec) -> Result<Exit> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()?;
    let token = super::random_token()?;
    let workdir = super::workdir::Workdir::make()?;
    let (dir, key) = (workdir.path(), token.as_str());
    let exit = std::thread::scope(|s| {
        let (bound, listener) = std::sync::mpsc::channel();
        let worker = s.spawn(move || -> Result<Exit> {
            if exec.isolate_net {
                super::netns::isolate_this_thread()
                    .map_err(|m| worldline_case::error::InputError::new("--isolate-net", m))?;
            }
            let socket = std::net::TcpListener::bind(("127.0.0.1", 0))
                .context("cannot listen on 127.0.0.1")?;
            let port = socket.local_addr()?.port();
            bound
                .send(socket)
                .map_err(|_| anyhow::anyhow!("the server did not start"))?;
            run_process(handle, case, exec, port, key, dir)
        });
        if let Ok(socket) = listener.recv() {
            let served = socket.set_nonblocking(true).and_then(|()| {
                let port = socket.local_addr()?.port();
                let _entered = rt.enter();
                let listener = tokio::net::TcpListener::from_std(socket)?;
                let lb = Loopback::new(handle.clone(), port, Some(token.clone()));
                rt.spawn(super::listen::serve(
                    listener,
                    loopback::router(lb),
                    std::future::pending(),
                ));
                Ok(())
            });
            if let Err(e) = served {
                // The process then finds no server and fails as it would.
                ::log::warn!("the run's server did not start: {e}");
            }
        }
        worker
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the process thread panicked")))
    });
    rt.shutdown_background();
    exit
}

fn run_process(
    handle: &Handle,
    case: &Case,
    exec: &Exec,
    port: u16,
    token: &str,
    workdir: &Path,
) -> Result<Exit> {
    let task_json = case.task.text().to_string();
    let (program, args) = exec
        .command
        .split_first()
        .context("--exec needs a command")?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .current_dir(workdir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.envs(super::environment::given(&exec.pass_env, case));
    let task = if task_json.len() > TASK_IN_VARIABLE {
        let file = workdir.join("worldline-task.json");
        std::fs::write(&file, &task_json)
            .with_context(|| format!("writing the task to {}", file.display()))?;
        ("WORLDLINE_TASK_FILE", file.display().to_string())
    } else {
        ("WORLDLINE_TASK", task_json.clone())
    };
    cmd.envs(variables(port, token, task, workdir));
    let started = Instant::now();
    let mut tree = super::tree::spawn(&mut cmd)
        .map_err(|e| exec.refusal(format!("cannot start `{program}`: {e}")))?;
    let limit = case.limits.stdout_bytes;
    let stdio = tree.stdio();
    let (stdout, stderr) = (
        stdio.stdout.expect("piped stdout"),
        stdio.stderr.expect("piped stderr"),
    );
    let ended = Arc::new(AtomicBool::new(false));
    let readers = [OwnedFd::from(stdout), OwnedFd::from(stderr)].map(|pipe| {
        let ended = ended.clone();
        std::thread::spawn(move || capture::read_until(pipe, limit, &ended))
    });
    let mut stdin = stdio.stdin.expect("piped stdin");
    std::thread::spawn(move || {
        use std::io::Write;
        // A process that exits without reading its task is not an error.
        signals::hold_sigpipe_on_this_thread();
        let _ = stdin.write_all(task_json.as_bytes());
    });
    let waited = tree.watch();
    let deadline = Duration::from_millis(case.limits.timeout_ms);
    let mut ended_by: Option<(Status, std::time::Instant)> = None;
    let status = loop {
        match waited.recv_timeout(POLL) {
            Ok(status) => break status,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        // Killed, and the keeper says nothing of it: it is stopped or gone
        // (an agent's `kill -STOP 0` stopped it, and the run waited with no
        // end past its time limit); the tree is ended below all the same.
        if ended_by.is_some_and(|(_, at)| at.elapsed() > KEEPER_REPORTS_WITHIN) {
            break None;
        }
        let why = if started.elapsed() > deadline {
            Some(Status::Timeout)
        } else if handle.stopped() || signals::received() {
            Some(Status::Trapped)
        } else {
            None
        };
        if let Some(why) = why
            && ended_by.is_none()
        {
            ended_by = Some((why, std::time::Instant::now()));
            tree.kill_all();
        }
    };
    let ended_by = ended_by.map(|(why, _)| why);
    // Whatever the process started, in its group or not, ends with the
    // run; then what its pipes hold is read, and nothing more is waited for.
    tree.end();
    ended.store(true, Ordering::SeqCst);
    let [out, err] = readers.map(|r| r.join().unwrap_or_default());
    Ok(exit_of(case, exec, workdir, status, ended_by, out, err))
}

/// How the run ended, from how the process did.
fn exit_of(
    case: &Case,
    exec: &Exec,
    workdir: &Path,
    status: Option<std::process::ExitStatus>,
    ended_by: Option<Status>,
    out: Captured,
    err: Captured,
) -> Exit {
    let mut exit = Exit {
        status: Status::Completed,
        output: None,
        error: None,
        stdout: out.kept,
        // What a process that dies printed last, its traceback, is kept
        // past a flood of logs before it.
        stderr: with_tail(&err.kept, err.dropped, err.tail.bytes()).into_bytes(),
        dropped: out.dropped + err.dropped,
        signalled: false,
        truncated: None,
    };
    match (ended_by, status) {
        (Some(Status::Timeout), _) => {
            exit.status = Status::Timeout;
            exit.error = Some(format!(
                "the process ran past limits.timeout_ms ({} ms of wall-clock time); it and every process it started were killed",
                case.limits.timeout_ms
            ));
        }
        (Some(_), _) => {
            exit.status = Status::Trapped;
            exit.signalled = signals::received();
            exit.error = Some(
                "the run was stopped; the process and every process it started were killed".into(),
            );
        }
        (None, Some(s)) if s.success() => {
            let output = match &exec.output_file {
                Some(file) => read_output(workdir, file, case.limits.stdout_bytes),
                // An answer too long to read is not replaced by an earlier
                // JSON line (a progress log) unsaid.
                None if out.last_line_too_long => Err(format!(
                    "the last line of stdout is longer than limits.stdout_bytes ({} bytes), so it was not read as the output: raise limits.stdout_bytes, or write the output with --output-file",
                    case.limits.stdout_bytes
                )),
                None => Ok(out.last_json),
            };
            match output {
                Ok(o) => exit.output = o,
                Err(e) => {
                    exit.status = Status::Errored;
                    exit.error = Some(e);
                }
            }
        }
        (None, Some(s)) => {
            // An agent fault, as a guest's exit or trap is (exit code 3).
            let how = match (s.code(), s.signal()) {
                (Some(code), _) => {
                    exit.status = Status::Exited;
                    format!("the process exited with status {code}")
                }
                (None, Some(sig)) => {
                    exit.status = Status::Trapped;
                    format!("the process was killed by signal {sig}")
                }
                _ => {
                    exit.status = Status::Trapped;
                    "the process ended abnormally".to_string()
                }
            };
            exit.error = Some(crate::traceback::process_error(
                how,
                &String::from_utf8_lossy(&exit.stderr),
            ));
        }
        (None, None) => {
            exit.status = Status::Trapped;
            exit.error = Some(
                "the process could not be waited for: the keeper of its process tree (a worldline process) was killed, by the agent or another process; what it started was ended".into(),
            );
        }
    }
    exit
}

/// The declared output file, bounded, when it is inside `workdir` once
/// symlinks are resolved (the process could point it anywhere).
fn read_output(workdir: &Path, file: &Path, limit: usize) -> Result<Option<String>, String> {
    let path = workdir.join(file);
    let named = file.display();
    let resolved = std::fs::canonicalize(&path)
        .map_err(|e| format!("the declared output file {named} (--output-file): {e}"))?;
    let folder = std::fs::canonicalize(workdir)
        .map_err(|e| format!("the run's working folder {}: {e}", workdir.display()))?;
    if !resolved.starts_with(&folder) {
        return Err(format!(
            "the declared output file {named} (--output-file) leads to {}, outside the run's working folder: refused, nothing was read",
            resolved.display()
        ));
    }
    bounded::read_text(&resolved, limit as u64)
        .map(|text| Some(text.trim().to_string()))
        .map_err(|e| format!("the declared output file {named} (--output-file): {e}"))
}

/// Why `file` cannot be a run's output file: it must name a file in the
/// run's working folder (relative, no `..`).
pub fn output_file_problem(file: &Path) -> Option<String> {
    use std::path::Component;
    let inside = !file.as_os_str().is_empty()
        && file
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && file.components().any(|c| matches!(c, Component::Normal(_)));
    (!inside).then(|| {
        format!(
            "{} is not a file in the run's working folder: give a relative path without `..` (the process writes it in its current directory, e.g. --output-file out.json)",
            file.display()
        )
    })
}

impl crate::run::Runner for Exec {
    fn run(&self, sandbox: &Sandbox, case: &Case, opts: RunOptions) -> Result<RunOutcome> {
        run(sandbox, case, opts, self)
    }

    fn sha256(&self) -> String {
        worldline_case::canon::hash_json(&self.agent())
    }

    fn may_differ(&self) -> bool {
        true
    }
}
