//! `worldline build-python AGENT.py [-o agent.wasm]`: build a Python agent
//! (or, with `--service`, a world service) into a WebAssembly component with
//! componentize-py, in one command; the build itself is
//! `worldline_build::python`, whose progress is said here on stderr.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use worldline_build::python;

#[derive(Args)]
pub struct BuildPythonArgs {
    /// The agent's Python file; it defines its `run(task)` with `@worldline_guest.agent`
    /// (with --service: a world service's file, its tools marked `@worldline_service.tool`).
    pub agent: PathBuf,
    /// Build a world service (`worldline:service/service`) instead of an agent.
    #[arg(long)]
    pub service: bool,
    /// Where to write the component (default: AGENT with a `.wasm` extension).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The componentize-py executable.
    #[arg(long, default_value = "componentize-py")]
    pub componentize_py: PathBuf,
    /// Bundle the pure-Python packages of this virtual environment (its
    /// site-packages, less pip and setuptools).
    #[arg(long, value_name = "DIR")]
    pub venv: Option<PathBuf>,
    /// Bundle these pure-Python requirements, installed with pip for the
    /// sandbox's Python (pure-Python wheels only).
    #[arg(short = 'r', long, value_name = "FILE")]
    pub requirements: Option<PathBuf>,
    /// A folder of wheels built for the sandbox's Python (tagged
    /// `cp314-cp314-wasi_0_0_0_wasm32`, as `tests/python-wasi-wheels.sh`
    /// builds jiter and pydantic-core) that `--requirements` may use
    /// besides pure-Python wheels.
    #[arg(long, value_name = "DIR", requires = "requirements")]
    pub wasi_wheels: Option<PathBuf>,
    /// Install exactly the packages `--requirements` lists, not the
    /// dependencies they declare (pip's `--no-deps`): for a package whose
    /// declared dependencies include ones the agent never imports, such as
    /// `mcp`'s `pyjwt[crypto]`, which needs `cryptography`.
    #[arg(long, requires = "requirements")]
    pub no_deps: bool,
    /// The Python whose pip installs `--requirements` (default: the one
    /// beside componentize-py, else `python3`).
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: BuildPythonArgs) -> Result<ExitCode> {
    let job = python::PythonBuild {
        agent: args.agent,
        service: args.service,
        output: args.output,
        componentize_py: args.componentize_py,
        venv: args.venv,
        requirements: args.requirements,
        wasi_wheels: args.wasi_wheels,
        no_deps: args.no_deps,
        python: args.python,
        stopped: worldline_engine::native::Interrupt::noted,
    };
    // SIGINT or SIGTERM stops the build: its helper (componentize-py,
    // pip) is killed and its temporary folder removed, then the process
    // ends by the signal (componentize-py ignored SIGINT and ran on).
    let interrupt = worldline_engine::native::Interrupt::start();
    let built = python::build(&job, &mut |progress| eprintln!("{progress}"));
    interrupt.end();
    let built = built?;
    if args.common.json {
        let doc = json!({
            "agent": built.output.display().to_string(),
            "bytes": built.bytes,
            "sha256": built.sha256,
            "componentize_py": built.componentize_py,
            "reused": built.reused,
        });
        out!("{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        let how = match built.reused {
            true => ": the bytes of an earlier build of the same sources",
            false => "",
        };
        out!(
            "built {} ({:.1} MB, sha256 {}){how} with componentize-py {}",
            built.output.display(),
            built.bytes as f64 / 1e6,
            &built.sha256[..16],
            built.componentize_py
        )?;
    }
    Ok(ExitCode::Ok)
}
