//! Test guest: a generic tool loop over the model, for long-horizon runs.
//! Task: `{"prompt": text, "max_turns": n, "clock_reads": k}`. Before
//! each model call it reads the monotonic clock `k` times and the wall
//! clock twice (default 0: no reads), as a JS engine's timers do between
//! calls. The model sees the whole
//! conversation at every call (system, user, each reply and each tool
//! result), as a real agent sends it; the loop ends when the model answers
//! without a tool call (the answer is the output) or after `max_turns`
//! model calls (default 10,000). With `"talk": true` the first user
//! message is the task's JSON and an answer without a tool call is said to
//! the user: their reply is the next user message, and the loop ends when
//! they leave (the output then names the ending).

use serde_json::{Value, json};
use worldline_guest::model::{self, ChatRequest, Message};
use worldline_guest::user::{self, Turn};
use worldline_guest::{Error, tools};

fn run(task: Value) -> Result<Value, Error> {
    let prompt = task["prompt"].as_str().unwrap_or("Read the documents.");
    let max_turns = task["max_turns"].as_u64().unwrap_or(10_000);
    let clock_reads = task["clock_reads"].as_u64().unwrap_or(0);
    let talk = task["talk"] == true;
    let first = if talk {
        task.to_string()
    } else {
        prompt.to_string()
    };
    let mut request = ChatRequest::new(vec![
        Message::system("You read documents one by one and summarise them."),
        Message::user(first),
    ]);
    request.tools = model::tool_defs(&tools::specs());
    for turn in 1..=max_turns {
        read_clocks(clock_reads);
        let message = model::chat(&request)?.message();
        request.messages.push(message.clone());
        if message.tool_calls.is_empty() {
            let answer = message.content.unwrap_or_default();
            if !talk {
                return Ok(json!({"answer": answer, "turns": turn}));
            }
            match user::say(&answer) {
                Turn::Reply(reply) => {
                    request.messages.push(Message::user(reply));
                    continue;
                }
                Turn::Ended { reason, satisfied } => {
                    return Ok(json!({
                        "answer": answer,
                        "ended": reason,
                        "satisfied": satisfied,
                        "turns": turn,
                    }));
                }
            }
        }
        for call in &message.tool_calls {
            let content = match tools::call_json(&call.function.name, &call.function.arguments) {
                Ok(text) => text,
                Err(e) => {
                    json!({"error": {"kind": e.kind_name(), "message": e.message}}).to_string()
                }
            };
            request
                .messages
                .push(Message::tool(call.id.clone(), content));
        }
    }
    Err(Error::failed(format!(
        "no answer after {max_turns} model turns"
    )))
}

/// Read the monotonic clock `k` times, then the wall clock twice.
fn read_clocks(k: u64) {
    if k == 0 {
        return;
    }
    for _ in 0..k {
        std::hint::black_box(std::time::Instant::now());
    }
    for _ in 0..2 {
        std::hint::black_box(std::time::SystemTime::now());
    }
}

worldline_guest::agent!(run);
