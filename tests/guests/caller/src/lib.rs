//! Test guest: makes the tool calls its task lists, in order, and returns
//! every answer (`{"ok": value}` or `{"error": {"kind", "message"}}`), so a
//! test can see exactly what the host answered. Also reads world files when
//! a call names the tool `files.read`, says `args.message` to the user when
//! it names `user.say` (answering with the user's reply), and writes a
//! trace note per call.
//! A call may take an argument from an earlier answer:
//! `"from": {"answer": 0, "path": "deploys.0.id", "arg": "id"}`.
//! A task with `"output"` answers that value instead of the answers (a
//! benchmark trajectory's final message). A task with `"work": n`
//! computes `n` rounds of arithmetic before each call (a prefix that costs
//! compute, as an interpreter's does).

use serde_json::{Value, json};
use worldline_guest::{Error, files, tools, trace, user};

fn answer(result: Result<Value, Error>) -> Value {
    match result {
        Ok(v) => json!({"ok": v}),
        Err(e) => json!({"error": {"kind": e.kind_name(), "message": e.message}}),
    }
}

/// `n` rounds of xorshift, kept from being optimised away.
fn work(n: u64) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = std::hint::black_box(x);
    }
}

fn run(mut task: Value) -> Result<Value, Error> {
    let mut answers: Vec<Value> = Vec::new();
    let rounds = task["work"].as_u64().unwrap_or(0);
    let calls = match task.get_mut("calls").map(Value::take) {
        Some(Value::Array(calls)) => calls,
        _ => Vec::new(),
    };
    for mut call in calls {
        work(rounds);
        let tool = call["tool"].as_str().unwrap_or_default().to_string();
        if let Some(from) = call.get("from").cloned() {
            let earlier: &Value = &answers[from["answer"].as_u64().unwrap_or(0) as usize]["ok"];
            let value = from["path"]
                .as_str()
                .unwrap_or("")
                .split('.')
                .fold(earlier, |v, part| match part.parse::<usize>() {
                    Ok(i) => &v[i],
                    Err(_) => &v[part],
                });
            call["args"][from["arg"].as_str().unwrap_or("id")] = value.clone();
        }
        trace::note("call", &tool);
        let result = match tool.as_str() {
            "files.read" => {
                files::read_to_string(call["args"]["path"].as_str().unwrap_or_default())
                    .map(Value::String)
            }
            "files.write" => files::write(
                call["args"]["path"].as_str().unwrap_or_default(),
                call["args"]["content"].as_str().unwrap_or_default(),
            )
            .map(|()| Value::Null),
            "user.say" => Ok(
                match user::say(call["args"]["message"].as_str().unwrap_or_default()) {
                    user::Turn::Reply(r) => json!({"reply": r}),
                    user::Turn::Ended { reason, satisfied } => {
                        json!({"ended": reason, "satisfied": satisfied})
                    }
                },
            ),
            _ => tools::call::<Value>(&tool, &call["args"]),
        };
        answers.push(answer(result));
    }
    if let Some(output) = task.get("output") {
        return Ok(output.clone());
    }
    Ok(Value::Array(answers))
}

worldline_guest::agent!(run);
