//! `worldline bench import agentdojo/SUITE`: an AgentDojo suite from the
//! pinned `agentdojo` in a Python the user names
//! (`$WORLDLINE_AGENTDOJO_PYTHON`). The converter (`agentdojo.py`) reads
//! the suite's environment, tools and tasks, renders the package's own
//! attack text per (user task, injection task) pair and writes each
//! task's `utility` and `security` as the checks they make; the world
//! service is a port of the suite's tools (`agentdojo_banking.py`,
//! `agentdojo_slack.py`, `agentdojo_travel.py`, `agentdojo_workspace.py`,
//! the last two importing `agentdojo_mail.py`, written beside them;
//! decisions 0374, 0375, 0378).

use super::{ImportArgs, Known, convert, imported, pinned_python, write_folder};
use crate::cli::exit::ExitCode;
use anyhow::Result;
use worldline_case::error::InputError;

pub const PACKAGE: &str = "agentdojo==0.1.35";
const CONVERTER: &str = include_str!("agentdojo.py");
/// The ported services, by suite.
const SERVICES: &[(&str, &str)] = &[
    ("banking", include_str!("agentdojo_banking.py")),
    ("slack", include_str!("agentdojo_slack.py")),
    ("travel", include_str!("agentdojo_travel.py")),
    ("workspace", include_str!("agentdojo_workspace.py")),
];
/// The email and calendar helpers the travel and workspace services
/// import, written beside them.
const MAIL: &str = include_str!("agentdojo_mail.py");

pub fn import(args: &ImportArgs, known: &Known, suite: &str) -> Result<ExitCode> {
    let Some((_, service)) = SERVICES.iter().find(|s| s.0 == suite) else {
        return Err(InputError::new("NAME", format!("{}: {}", known.name, known.note)).into());
    };
    worldline_case::output::check_new(&args.output, "bench import's folder")?;
    let python = pinned_python(args, PACKAGE, PACKAGE, "WORLDLINE_AGENTDOJO_PYTHON")?;
    let mut converted = convert(&python, CONVERTER, &[suite], PACKAGE)?;
    if matches!(suite, "travel" | "workspace") {
        converted
            .files
            .insert("service/agentdojo_mail.py".into(), MAIL.into());
    }
    let service_name = format!("{suite}.py");
    let world = format!("agentdojo-{suite}");
    super::with_build_step(&mut converted.files, &service_name, &world);
    write_folder(&args.output, &converted.files, &service_name, service)?;
    let build = super::service_build(&args.output, &service_name, &world, None);
    imported(args, known, &converted, &build)
}
