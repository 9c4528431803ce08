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
//! the agent went on without it, at its next step, or at the end of the
//! first wait after it when all the agent did before that wait was read
//! its clocks and set its timer (the Agents SDK's MCP client, whose 5 s
//! timeout read as going on at the clock read that began it): the end of
//! the wait a timer ended. An agent that leaves a pending answer aside, waits
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
    // Of those, the ones the agent has only set a timer since: the end of
    // its next wait is when it went on, if that is before they were ready.
    let mut timing: Vec<(u64, u64)> = Vec::new();
    for e in events {
        if over_http(e) {
            fresh.push((e.seq, e.vtime_ns));
            continue;
        }
        let step = Step::of(e);
        for (seq, ready) in fresh.drain(..) {
            if ready > e.vtime_ns {
                pending.push((seq, ready));
                gone.insert(seq, e.vtime_ns);
                if step == Step::Timer {
                    timing.push((seq, ready));
                }
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
        match step {
            Step::Timer => {}
            Step::Wait => {
                for (seq, ready) in timing.drain(..) {
                    if let Some(at) = gone.get_mut(&seq)
                        && e.vtime_ns < ready
                    {
                        *at = e.vtime_ns;
                    }
                }
            }
            Step::Other => timing.clear(),
        }
    }
    gone
}

/// What a step of the agent's (a host call not answered over HTTP) is
/// to an answer it has not received.
#[derive(Clone, Copy, PartialEq)]
enum Step {
    /// A clock read, a timer set, a readiness check: the agent has not
    /// gone on yet.
    Timer,
    /// A poll or a block: its time is when it ended.
    Wait,
    /// Anything else: the agent went on.
    Other,
}

impl Step {
    fn of(e: &Event) -> Step {
        match e.call.as_str() {
            "wasi:io/poll.poll" | "wasi:io/poll.pollable.block" => Step::Wait,
            "wasi:io/poll.pollable.ready" => Step::Timer,
            call if call.starts_with("wasi:clocks/") => Step::Timer,
            _ => Step::Other,
        }
    }
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

    fn clock(seq: u64, call: &str, vtime_ns: u64) -> Event {
        event(seq, call, json!({}), json!(vtime_ns), vtime_ns)
    }

    fn poll(seq: u64, deadlines: Value, ready: Value, vtime_ns: u64) -> Event {
        event(
            seq,
            "wasi:io/poll.poll",
            json!({ "deadlines": deadlines }),
            ready,
            vtime_ns,
        )
    }

    /// The Agents SDK's MCP client in the sandbox (a tool call over HTTP
    /// ready at 11.772 s): it reads the clock, sets its 5 s timer, and
    /// polls the answer and the timer; the timer ends the wait at 6.768 s.
    /// That is when it went on (it read 1.773 s, the clock read).
    #[test]
    fn an_agent_that_only_set_its_timer_went_on_when_the_timer_ended_its_wait() {
        let (ready, timer) = (11_772, 6_768);
        let events = |between: &[Event]| {
            let mut events = vec![model(0, ready)];
            events.extend_from_slice(between);
            let n = events.len() as u64;
            events.push(poll(n, json!([ready, timer]), json!([1]), timer));
            events.push(clock(n + 1, "wasi:clocks/monotonic-clock.now", timer + 1));
            events
        };
        let timer_set = [
            clock(1, "wasi:clocks/monotonic-clock.now", 1_773),
            clock(2, "wasi:clocks/monotonic-clock.subscribe-duration", 1_774),
        ];
        assert_eq!(
            undelivered(&events(&timer_set), 5),
            BTreeMap::from([(0, timer)])
        );
        // A step that is not a timer's: the agent went on there.
        let went_on = [
            clock(1, "wasi:clocks/monotonic-clock.now", 1_773),
            event(
                2,
                "wasi:filesystem/types.descriptor.write",
                json!({}),
                json!(null),
                1_774,
            ),
            clock(3, "wasi:clocks/monotonic-clock.subscribe-duration", 1_775),
        ];
        assert_eq!(
            undelivered(&events(&went_on), 5),
            BTreeMap::from([(0, 1_773)])
        );
        // A wait that ended after the answer was ready, on something else:
        // it went on without it before then, at the clock read.
        let late = vec![
            model(0, 100),
            clock(1, "wasi:clocks/monotonic-clock.now", 10),
            poll(2, json!([150]), json!([0]), 150),
        ];
        assert_eq!(undelivered(&late, 5), BTreeMap::from([(0, 10)]));
    }
}
