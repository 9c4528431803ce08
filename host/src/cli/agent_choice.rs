//! Which agent runs a case. The command line's wins (`--exec -- CMD`, or
//! `--agent FILE` given there); then the case's own `exec`; then the
//! project file's `exec` or `agent`. `pass_env` likewise: the command
//! line's `--pass-env`, else the case's, else the project's. With none of
//! them, the error says what to pass.

use super::ExecArgs;
use anyhow::Result;
use std::path::{Path, PathBuf};
use worldline_case::case::Case;
use worldline_case::error::InputError;
use worldline_case::native_agent::ExecSetting;
use worldline_engine::native::exec::Exec;
use worldline_engine::run::{RunOptions, RunOutcome, Runner};
use worldline_runtime::sandbox::{Agent, Sandbox};

/// What the error says when nothing names an agent.
pub const NO_AGENT: &str = "no agent to run: pass --agent FILE or --exec -- CMD (or set `agent` or `exec` in worldline.toml, or `exec` in the case)";

/// The agent one case runs with.
pub enum Chosen {
    Native(Exec),
    Component(PathBuf),
}

/// Everything that may name the agent, gathered once per command.
pub struct Choice {
    /// `--exec -- CMD`, as given.
    cli_exec: Option<Vec<String>>,
    /// `--agent FILE` given on the command line.
    cli_agent: Option<PathBuf>,
    /// `--pass-env`, when given.
    cli_pass_env: Option<Vec<String>>,
    output_file: Option<PathBuf>,
    isolate_net: bool,
    /// The project file's `exec` and `pass_env`.
    project_exec: ExecSetting,
    /// The project file's `agent`.
    project_agent: Option<PathBuf>,
}

impl Choice {
    /// Gather the command line's flags (`agent` is the `--agent` the
    /// arguments hold, the project file's default included) and the
    /// project file's settings.
    pub fn of(exec: &ExecArgs, agent: Option<&Path>) -> Result<Choice, InputError> {
        let from_project = super::project_args::supplied()
            .supplied
            .contains_key("agent");
        let (cli_agent, project_agent) = match from_project {
            true => (None, agent.map(Path::to_path_buf)),
            false => (agent.map(Path::to_path_buf), None),
        };
        if exec.exec && cli_agent.is_some() {
            return Err(InputError::new(
                "--exec",
                "--agent and --exec both name the agent; give one",
            ));
        }
        if let Some(problem) = exec
            .output_file
            .as_deref()
            .and_then(worldline_engine::native::exec::output_file_problem)
        {
            return Err(InputError::new("--output-file", problem));
        }
        let project_exec = super::project_args::project()
            .map(|p| p.exec.clone())
            .unwrap_or_default();
        Ok(Choice {
            cli_exec: exec.exec.then(|| {
                exec.command
                    .iter()
                    .map(|a| super::absolute_if_here(a))
                    .collect()
            }),
            cli_agent,
            cli_pass_env: (!exec.pass_env.is_empty()).then(|| exec.pass_env.clone()),
            output_file: exec.output_file.clone(),
            isolate_net: exec.isolate_net,
            project_exec,
            project_agent,
        })
    }

    /// Whether the command line or the project file names an agent (else
    /// only a case's own `exec` can).
    pub fn names_an_agent(&self) -> bool {
        self.cli_exec.is_some()
            || self.cli_agent.is_some()
            || !self.project_exec.command.is_empty()
            || self.project_agent.is_some()
    }

    /// The component every case runs with, when the command line names
    /// one (`--agent`): known before any case is read.
    pub fn every_case_component(&self) -> Option<&Path> {
        match (&self.cli_exec, &self.cli_agent) {
            (None, Some(agent)) => Some(agent),
            _ => None,
        }
    }

    /// The agent `case` runs with, or why there is none.
    pub fn for_case(&self, case: &Case) -> Result<Chosen, InputError> {
        let pass_env = |case_setting: &Option<Vec<String>>| {
            self.cli_pass_env
                .clone()
                .or_else(|| case_setting.clone())
                .or_else(|| self.project_exec.pass_env.clone())
                .unwrap_or_default()
        };
        let native = |command: Vec<String>, (given_by, given_at): (&Path, usize)| {
            Chosen::Native(Exec {
                command,
                pass_env: pass_env(&case.exec.pass_env),
                output_file: self.output_file.clone(),
                isolate_net: self.isolate_net,
                given_by: given_by.to_path_buf(),
                given_at,
            })
        };
        let project_file = super::project_args::project().map(|p| p.file.clone());
        let chosen = if let Some(command) = &self.cli_exec {
            native(command.clone(), (Path::new("--exec"), 0))
        } else if let Some(agent) = &self.cli_agent {
            Chosen::Component(agent.clone())
        } else if !case.exec.command.is_empty() {
            native(case.exec.command.clone(), (&case.path, case.exec.line))
        } else if !self.project_exec.command.is_empty() {
            let file = project_file.unwrap_or_else(|| "worldline.toml".into());
            native(
                self.project_exec.command.clone(),
                (&file, self.project_exec.line),
            )
        } else if let Some(agent) = &self.project_agent {
            Chosen::Component(agent.clone())
        } else {
            return Err(InputError::new(&case.path, NO_AGENT));
        };
        if let Chosen::Component(agent) = &chosen {
            let native_only = [
                ("--pass-env", self.cli_pass_env.is_some()),
                ("--output-file", self.output_file.is_some()),
                ("--isolate-net", self.isolate_net),
            ];
            if let Some((flag, _)) = native_only.iter().find(|(_, given)| *given) {
                return Err(InputError::new(
                    flag,
                    format!(
                        "is for a native agent, and {} runs the component {}",
                        case.name,
                        agent.display()
                    ),
                ));
            }
        }
        Ok(chosen)
    }
}

/// A suite's agent when each case may name its own: a case that chooses
/// a component runs `component`, one that chooses a process runs it.
pub struct PerCase<'a> {
    pub choice: &'a Choice,
    pub component: Option<&'a Agent>,
}

impl Runner for PerCase<'_> {
    fn run(&self, sandbox: &Sandbox, case: &Case, opts: RunOptions) -> Result<RunOutcome> {
        match self.choice.for_case(case)? {
            Chosen::Native(exec) => exec.run(sandbox, case, opts),
            Chosen::Component(path) => {
                let agent = self.component.ok_or_else(|| {
                    anyhow::anyhow!("the component {} was not loaded", path.display())
                })?;
                agent.run(sandbox, case, opts)
            }
        }
    }

    /// The component's identity (a native process's is its runs' own).
    fn sha256(&self) -> String {
        self.component.map(|a| a.sha256.clone()).unwrap_or_default()
    }
}
