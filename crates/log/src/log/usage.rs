//! Model calls of runs, counted: how many, the tokens the providers
//! reported, and the real time the live ones took (metadata, never seen by
//! an agent). A suite counts each run's as it finishes, so its report
//! needs none of the runs' events.

use super::event::Event;
use super::{Call, Kind};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Default, Clone, PartialEq, Debug)]
pub struct ModelTotals {
    pub calls: u64,
    pub completion_tokens: u64,
    pub prompt_tokens: u64,
    pub real_latency_ms: u64,
    pub total_tokens: u64,
}

impl ModelTotals {
    /// Those of one run's events.
    pub fn of_run(events: &[Event]) -> Self {
        let mut t = ModelTotals::default();
        for e in events {
            // Typed only when it is one: typing every event of every run
            // was 5% of a durable suite's CPU (decision 0394).
            if e.call != Kind::ModelComplete.name() {
                continue;
            }
            let Call::ModelComplete { response, .. } = e.typed() else {
                continue;
            };
            let record = response.model_call;
            let usage = record.as_ref().and_then(|r| r.usage.as_ref());
            let n = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_u64()).unwrap_or(0);
            let count = |field: &str| n(usage.and_then(|u| u.get(field)));
            t.calls += 1;
            t.prompt_tokens += count("prompt_tokens");
            t.completion_tokens += count("completion_tokens");
            t.total_tokens += count("total_tokens");
            t.real_latency_ms += n(record.as_ref().and_then(|r| r.real_latency_ms.as_ref()));
        }
        t
    }

    /// Those of a recorded grade's judged checks ([`judges`]).
    pub fn of_judges_in(grade: Option<&serde_json::Value>) -> Self {
        Self::of_judges(judges(grade))
    }

    /// Those of a grade's judged checks (`[[expect.judge]]`): each check's
    /// `judge` record, whose answer holds the call as its provider
    /// recorded it (`response.model_call`).
    pub fn of_judges<'a>(judges: impl Iterator<Item = &'a serde_json::Value>) -> Self {
        let mut t = ModelTotals::default();
        for judge in judges {
            let record = &judge["response"]["model_call"];
            let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
            t.calls += 1;
            t.prompt_tokens += n(&record["usage"]["prompt_tokens"]);
            t.completion_tokens += n(&record["usage"]["completion_tokens"]);
            t.total_tokens += n(&record["usage"]["total_tokens"]);
            t.real_latency_ms += n(&record["real_latency_ms"]);
        }
        t
    }

    pub fn add(&mut self, other: &ModelTotals) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
        self.real_latency_ms += other.real_latency_ms;
    }
}

/// The `judge` records of a recorded grade's judged checks
/// (`[[expect.judge]]`), in the order of its assertions.
pub fn judges(grade: Option<&serde_json::Value>) -> impl Iterator<Item = &serde_json::Value> {
    (grade.and_then(|g| g["assertions"].as_array()))
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("judge"))
}
