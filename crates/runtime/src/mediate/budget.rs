//! The case's step and tool-error limits (`[limits] max_steps`, `steps`,
//! `max_errors`): counted from the calls as they are recorded, so a replay
//! or a fork counts the same and stops at the same call. A step past the
//! limit is refused before it is served or recorded; the tool error past
//! the limit is recorded (the agent made it) and then ends the run.
//!
//! Why step and error limits end a run with their own status, `step_limit` or
//! `error_limit` (was decision 0146): τ-bench ends runs at both limits;
//! counting in the guest SDKs could not be enforced, and reusing `trapped`
//! would not say why the run ended. They are not agent faults: the run is
//! graded, so `[expect] status = "step_limit"` can assert one.

use super::Stop;
use serde_json::Value;
use worldline_case::case::limits::{Limits, Steps};
use worldline_log::log::Kind;

/// Steps taken and tool errors got so far, against the limits.
#[derive(Debug, Clone, Default)]
pub(crate) struct Budget {
    max_steps: Option<u64>,
    steps_are: Steps,
    max_errors: Option<u64>,
    steps: u64,
    errors: u64,
}

impl Budget {
    pub(crate) fn new(limits: &Limits) -> Self {
        Budget {
            max_steps: limits.max_steps,
            steps_are: limits.steps,
            max_errors: limits.max_errors,
            ..Budget::default()
        }
    }

    fn is_step(&self, call: &str) -> bool {
        let kind = Kind::of(call);
        match self.steps_are {
            Steps::Model => kind == Some(Kind::ModelComplete),
            Steps::Tools => kind == Some(Kind::ToolsCall),
            Steps::Both => matches!(kind, Some(Kind::ModelComplete | Kind::ToolsCall)),
        }
    }

    /// Before `call` is served: a step past `max_steps` ends the run.
    pub(crate) fn admit(&mut self, call: &str) -> Result<(), Stop> {
        if !self.is_step(call) {
            return Ok(());
        }
        if let Some(max) = self.max_steps
            && self.steps >= max
        {
            return Err(Stop::StepLimit {
                max,
                steps: self.steps_are.as_str(),
            });
        }
        self.steps += 1;
        Ok(())
    }

    /// After `call` was answered with `response` and recorded: the tool
    /// error past `max_errors` ends the run.
    pub(crate) fn count(&mut self, call: &str, response: &Value) -> Result<(), Stop> {
        if Kind::of(call) != Some(Kind::ToolsCall) || response.get("error").is_none() {
            return Ok(());
        }
        self.errors += 1;
        match self.max_errors {
            Some(max) if self.errors > max => Err(Stop::ErrorLimit(max)),
            _ => Ok(()),
        }
    }
}
