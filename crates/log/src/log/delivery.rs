//! Which answers the agent never received. From rules 5 an answer to a
//! guest's `wasi:http` request is ready after its latency while the run
//! goes on from the request (decision 0425); an agent that stops waiting
//! first (its SDK's timeout, an `AbortSignal`, `asyncio.timeout`, a
//! first-byte timeout) goes on without it. The call stays recorded, as a
//! provider bills a request a client abandons, and replays as it ran; the
//! readers (`history`, `show`, traces, the UI, the trajectory exports) ask
//! here which answers to mark as never delivered, from the events' times
//! alone (nothing new is recorded).
//!
//! An answer was delivered when it was ready by the agent's next step
//! after it (a host call not itself answered over HTTP), or when a later
//! wait reached the time it was ready: a poll that returned it among the
//! ready (`wasi:io/poll.poll`, its `deadlines` and the indices it
//! answered), a block on it, a readiness check that said yes. Otherwise
//! the agent went on without it: its next step is when (the end of the
//! wait a timer ended). An agent that leaves a pending answer aside, waits
//! for something else past its time and then takes it without waiting on
//! it is read as having gone on without it; the host's own waits for
//! answers (the SDKs' transports, the JavaScript engine) all wait on the
//! answer itself.

use super::Event;
use super::Kind;
use super::rules;
use std::collections::BTreeMap;

/// The answers of `events` (a run recorded under `rules`) the agent never
/// received: each event's seq, and when the agent went on without it (its
/// next step's time, before the answer's). None before rules 5, when an
/// answer was ready as the agent first waited for it.
pub fn undelivered(events: &[Event], rules: u32) -> BTreeMap<u64, u64> {
    let mut gone = BTreeMap::new();
    if rules < rules::HTTP_LATENCY_IS_READY_TIME {
        return gone;
    }
    // Answers since the agent's last step, as (seq, ready time).
    let mut fresh: Vec<(u64, u64)> = Vec::new();
    // Answers ready after the agent's next step, not yet waited for.
    let mut pending: Vec<(u64, u64)> = Vec::new();
    for e in events {
        if over_http(e) {
            fresh.push((e.seq, e.vtime_ns));
            continue;
        }
        for (seq, ready) in fresh.drain(..) {
            if ready > e.vtime_ns {
                pending.push((seq, ready));
                gone.insert(seq, e.vtime_ns);
            }
        }
        for reached in reached(e) {
            pending.retain(|&(seq, ready)| {
                let waited = ready == reached;
                if waited {
                    gone.remove(&seq);
                }
                !waited
            });
        }
    }
    gone
}

/// Whether `e` was answered over `wasi:http` (its transport, as
/// [`super::Call::transport`] reads it, without typing the event): an
/// answer [`undelivered`] may find the agent never received.
pub fn over_http(e: &Event) -> bool {
    let transport = match Kind::of(&e.call) {
        Some(Kind::ProtocolAnswer) => Some(&e.request),
        Some(_) => e.request.get("transport"),
        None => None,
    };
    transport.is_some_and(|t| t.get("http").is_some())
}

/// The deadlines a wait of the agent's reached: a poll's that it answered
/// ready, a block's, a readiness check's that said yes.
fn reached(e: &Event) -> Vec<u64> {
    let deadline = || e.request["deadline"].as_u64();
    match e.call.as_str() {
        "wasi:io/poll.poll" => {
            let deadlines = e.request["deadlines"].as_array();
            let ready = e.response.as_array().into_iter().flatten();
            ready
                .filter_map(|i| deadlines?.get(usize::try_from(i.as_u64()?).ok()?)?.as_u64())
                .collect()
        }
        "wasi:io/poll.pollable.block" => deadline().into_iter().collect(),
        "wasi:io/poll.pollable.ready" if e.response == true => deadline().into_iter().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn event(seq: u64, call: &str, request: Value, response: Value, vtime_ns: u64) -> Event {
        serde_json::from_value(json!({
            "seq": seq, "call": call, "request": request, "response": response,
            "effect": "read", "fuel": 0, "vtime_ns": vtime_ns, "hash": "",
        }))
        .unwrap()
    }

    fn model(seq: u64, vtime_ns: u64) -> Event {
        let http = json!({"provider": "scripted", "request": {"messages": []}, "transport": {"http": {"api": "openai.chat", "method": "POST", "stream": false, "url": "https://api.openai.com/v1/chat/completions"}}});
        event(
            seq,
            "worldline:agent/model.complete",
            http,
            json!({"ok": null}),
            vtime_ns,
        )
    }

    fn block(seq: u64, deadline: u64, vtime_ns: u64) -> Event {
        let call = "wasi:io/poll.pollable.block";
        event(
            seq,
            call,
            json!({"deadline": deadline}),
            Value::Null,
            vtime_ns,
        )
    }

    #[test]
    fn an_answer_a_timer_ended_the_wait_for_is_never_delivered_one_waited_for_is() {
        let events = [
            // Ready at 120, the agent's timeout ends its wait at 60.
            model(0, 120),
            block(1, 60, 60),
            // Ready at 61, waited for.
            model(2, 61),
            block(3, 61, 61),
            // Two at once, both taken by polls.
            model(4, 70),
            model(5, 80),
            event(
                6,
                "wasi:io/poll.poll",
                json!({"deadlines": [70, 80]}),
                json!([0]),
                70,
            ),
            event(
                7,
                "wasi:io/poll.poll",
                json!({"deadlines": [80]}),
                json!([0]),
                80,
            ),
            // The agent went on past 120, never waiting on event 0's.
            event(
                8,
                "wasi:clocks/monotonic-clock.now",
                json!({}),
                json!(200),
                200,
            ),
        ];
        assert_eq!(undelivered(&events, 5), BTreeMap::from([(0, 60)]));
        // Under rules 4 every answer was ready as the agent waited.
        assert!(undelivered(&events, 4).is_empty());
    }
}
