//! When each call began on the run's clock, as its events tell it: the
//! clock before the call. An event records when its answer was ready; from
//! rules 5 an answer to a guest's HTTP request is ready after its latency
//! while the run goes on from the request (decision 0425), so such an
//! event's time can be later than the events after it, and the clock
//! after it is the one before it.

use super::call::Call;
use super::payload::Transport;
use super::rules;

/// The run's clock, moved event by event.
pub struct RunClock {
    /// Whether HTTP answers are ready after their latency (rules 5).
    ready_later: bool,
    now: u64,
}

impl RunClock {
    /// The clock at a run's start, for a run recorded under `rules`.
    pub fn new(rules: u32) -> Self {
        RunClock {
            ready_later: rules >= rules::HTTP_LATENCY_IS_READY_TIME,
            now: 0,
        }
    }

    /// When the next event of the run (at `vtime_ns`, its call read as
    /// `call`, which the reader has typed already) began; the clock moves
    /// past it.
    pub fn began(&mut self, vtime_ns: u64, call: &Call) -> u64 {
        let began = self.now.min(vtime_ns);
        let over_http = matches!(call.transport(), Some(Transport::Http(_)));
        if !(self.ready_later && over_http) {
            self.now = vtime_ns;
        }
        began
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Event;
    use serde_json::json;

    fn event(call: &str, request: serde_json::Value, vtime_ns: u64) -> Event {
        serde_json::from_value(json!({
            "seq": 0, "call": call, "request": request, "response": {"ok": null},
            "effect": "read", "fuel": 0, "vtime_ns": vtime_ns, "hash": "",
        }))
        .unwrap()
    }

    #[test]
    fn an_http_answer_ready_later_leaves_the_clock_where_it_was_from_rules_5() {
        let http = json!({"provider": "scripted", "request": {"messages": []}, "transport": {"http": {"api": "openai.chat", "method": "POST", "stream": false, "url": "https://api.openai.com/v1/chat/completions"}}});
        let model = "worldline:agent/model.complete";
        let events = [
            event("wasi:clocks/monotonic-clock.now", json!({}), 10),
            event(model, http.clone(), 1_010),
            event(model, http, 1_020),
            event(
                "wasi:io/poll.poll",
                json!({"deadlines": [1_010, 1_020]}),
                1_010,
            ),
        ];
        let began = |rules| {
            let mut clock = RunClock::new(rules);
            (events.iter())
                .map(|e| clock.began(e.vtime_ns, &e.typed()))
                .collect::<Vec<_>>()
        };
        // Both requests began at 10, in flight together.
        assert_eq!(began(5), [0, 10, 10, 10]);
        // Under 4 the clock was at each answer.
        assert_eq!(began(4), [0, 10, 1_010, 1_010]);
    }
}
