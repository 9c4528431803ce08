//! The case's step and tool-error limits (`[limits] max_steps`, `steps`,
//! `max_errors`): counted from the calls as they are recorded, so a replay
//! or a fork counts the same and stops at the same call. A step past the
//! limit is refused before it is served or recorded; the tool error past
//! the limit is recorded (the agent made it) and then ends the run.

use super::Stop;
use super::model;
use crate::case::limits::{Limits, Steps};
use serde_json::Value;

/// The tool-call interface function.
const TOOL_CALL: &str = "worldline:agent/tools.call";

/// Steps taken and tool errors got so far, against the limits.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    max_steps: Option<u64>,
    steps_are: Steps,
    max_errors: Option<u64>,
    steps: u64,
    errors: u64,
}

impl Budget {
    pub fn new(limits: &Limits) -> Self {
        Budget {
            max_steps: limits.max_steps,
            steps_are: limits.steps,
            max_errors: limits.max_errors,
            ..Budget::default()
        }
    }

    fn is_step(&self, call: &str) -> bool {
        match self.steps_are {
            Steps::Model => call == model::CALL,
            Steps::Tools => call == TOOL_CALL,
            Steps::Both => call == model::CALL || call == TOOL_CALL,
        }
    }

    /// Before `call` is served: a step past `max_steps` ends the run.
    pub fn admit(&mut self, call: &str) -> Result<(), Stop> {
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
    pub fn count(&mut self, call: &str, response: &Value) -> Result<(), Stop> {
        if call != TOOL_CALL || response.get("error").is_none() {
            return Ok(());
        }
        self.errors += 1;
        match self.max_errors {
            Some(max) if self.errors > max => Err(Stop::ErrorLimit(max)),
            _ => Ok(()),
        }
    }
}
