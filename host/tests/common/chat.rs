//! A loopback OpenAI-compatible chat server answering each request with
//! the next of a list of assistant messages (content or tool calls), as a
//! model playing the user would; it keeps the request bodies and serves no
//! more than it was given.

use serde_json::{Value, json};
use std::io::Write as _;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// Serve `messages` one per request on loopback; the base URL (`…/v1`)
/// and the request bodies received so far.
pub fn serve(messages: Vec<Value>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let answers = messages.into_iter().map(|message| {
        let finish = if message.get("tool_calls").is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        json!({
            "id": "chatcmpl-user", "object": "chat.completion", "created": 1,
            "model": "local-user-sim",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
        })
    });
    serve_answers(answers.collect())
}

/// Serve `answers` (whole response bodies) one per request on loopback;
/// the base URL (`…/v1`) and the request bodies received so far.
pub fn serve_answers(answers: Vec<Value>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for (conn, answer) in listener.incoming().zip(answers) {
            let Ok(mut conn) = conn else { return };
            let Some((_, body)) = super::native::read_request(&mut conn) else {
                return;
            };
            kept.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap());
            let answer = answer.to_string();
            write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
        }
    });
    (url, seen)
}

/// An assistant message saying `text`.
pub fn said(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}
