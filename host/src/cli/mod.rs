//! The `worldline` command line: parsing, dispatch, and exit codes
//! (0 success/pass, 1 graded failure or divergence, 2 usage or input error,
//! 3 agent fault, 4 internal error).

mod grade_cmd;
mod report;
mod run_cmd;
mod test_cmd;

use crate::error::{ExitCode, exit_code_of};
use clap::{Args, Parser, Subcommand};
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

/// Options every command takes.
#[derive(Args, Clone)]
pub struct Common {
    /// Store directory for bundles, objects and the compile cache.
    #[arg(long, global = true, default_value = ".worldline")]
    pub store: PathBuf,
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run an agent on one case and record the run.
    Run(run_cmd::RunArgs),
    /// Run an agent on a suite of cases; exit 1 when any fails.
    Test(test_cmd::TestArgs),
    /// Re-grade a recorded run against the same or a newer case.
    Grade(grade_cmd::GradeArgs),
}

/// Run the CLI and return the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::Input
            } else {
                ExitCode::Ok
            };
            let _ = e.print();
            return code as i32;
        }
    };
    let result = match cli.command {
        Command::Run(args) => run_cmd::exec(args),
        Command::Test(args) => test_cmd::exec(args),
        Command::Grade(args) => grade_cmd::exec(args),
    };
    match result {
        Ok(code) => code as i32,
        Err(err) => {
            eprintln!("error: {err:#}");
            exit_code_of(&err) as i32
        }
    }
}
