//! The process's exit code, which only the CLI decides: 0 passed or done,
//! 1 failed, 2 an input error, 3 an agent fault, 4 anything else.

use worldline_case::error::is_input;
use worldline_engine::grade::verdict::{self, Ending};
use worldline_log::log::Status;

/// What a command's outcome means for its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    Ok = 0,
    Failed = 1,
    Input = 2,
    AgentFault = 3,
    Internal = 4,
}

impl From<Ending> for ExitCode {
    fn from(e: Ending) -> Self {
        match e {
            Ending::Passed => ExitCode::Ok,
            Ending::Failed => ExitCode::Failed,
            Ending::AgentFault => ExitCode::AgentFault,
        }
    }
}

/// The exit code for an error: input errors are 2, anything else 4.
pub fn exit_code_of(err: &anyhow::Error) -> ExitCode {
    if is_input(err) {
        ExitCode::Input
    } else {
        ExitCode::Internal
    }
}

/// The exit code of a run that ended with `status` and `grade`: 0 passed or
/// completed, 1 failed or errored (or the scripted model ran out), 3 an
/// agent fault.
pub fn exit_code(status: Status, grade: Option<&worldline_engine::grade::Grade>) -> ExitCode {
    verdict::ending(status, grade).into()
}
